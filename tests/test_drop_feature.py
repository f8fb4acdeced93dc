"""DROP FEATURE (``alter.drop_feature``): the features Delta Spark can drop, with its history
rules. ``deltalake`` reads every table after the drop (it refuses tables that list a feature it
does not know, so its reading them is also evidence that the protocol changed as intended)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from deltalog.exceptions import (
    FeatureDropWaitError,
    InvalidArgumentError,
    VersionNotFoundError,
)

NO_WAIT = {"delta.dropFeatureTruncateHistory.retentionDuration": "interval 0 seconds"}


def rows() -> pa.Table:
    return pa.table({"id": pa.array(range(10), pa.int64()), "v": [f"r{i}" for i in range(10)]})


def theirs(path: Path) -> list[dict[str, Any]]:
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    return pa.table(query.execute("SELECT * FROM t ORDER BY id").read_all()).to_pylist()


def ours(path: Path) -> list[dict[str, Any]]:
    return dl.DeltaTable(str(path)).to_pyarrow_table().sort_by("id").to_pylist()


def all_features(t: dl.DeltaTable) -> set[str]:
    p = t.protocol()
    return set(p.reader_features or []) | set(p.writer_features or [])


def log_names(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "_delta_log").iterdir() if p.is_file())


def backdate_log(path: Path, days: int) -> None:
    """Makes every log file look ``days`` old (commit times are file times here)."""
    old = time.time() - days * 86_400
    for i, p in enumerate(sorted((path / "_delta_log").iterdir())):
        if p.is_file():
            os.utime(p, (old + i, old + i))


def test_writer_features_go_in_one_commit(tmp_path: Path) -> None:
    dl.write_table(str(tmp_path), rows(), configuration={"delta.enableInCommitTimestamps": "true"})
    t = dl.DeltaTable(str(tmp_path))
    t.alter.add_constraint({"small": "id < 100"})
    assert {"checkConstraints", "inCommitTimestamp"} <= all_features(t)
    with pytest.raises(InvalidArgumentError, match=r"CHECK constraints \['small'\]"):
        t.alter.drop_feature("checkConstraints")
    t.alter.drop_constraint("small")
    before = t.version()
    version = t.alter.drop_feature("checkConstraints")
    assert version == before + 1
    t = dl.DeltaTable(str(tmp_path))
    assert "checkConstraints" not in all_features(t)
    entry = t.history(1)[0]
    assert entry["operation"] == "DROP FEATURE"
    assert entry["operationParameters"]["featureName"] == "checkConstraints"

    version = t.alter.drop_feature("inCommitTimestamp")
    t = dl.DeltaTable(str(tmp_path))
    assert not {"inCommitTimestamp", "inCommitTimestamps"} & all_features(t)
    assert not any("InCommitTimestamp" in k for k in t.metadata().configuration)
    # The history stays (a writer feature asks nothing of readers of older versions).
    assert (tmp_path / "_delta_log" / f"{0:020}.json").exists()
    dl.write_table(str(tmp_path), rows(), mode="append")
    assert theirs(tmp_path) == ours(tmp_path)
    assert len(ours(tmp_path)) == 20


def test_deletion_vectors_purge_wait_then_truncate(tmp_path: Path) -> None:
    dl.write_table(str(tmp_path), rows(), configuration={"delta.enableDeletionVectors": "true"})
    t = dl.DeltaTable(str(tmp_path))
    t.delete("id % 3 = 0")
    assert t.get_add_actions(flatten=True).column("deletion_vector.storage_type").null_count == 0
    expected = ours(tmp_path)

    with pytest.raises(FeatureDropWaitError) as wait:
        t.alter.drop_feature("deletionVectors", truncate_history=True)
    t = dl.DeltaTable(str(tmp_path))
    # Step 1 landed: no deletion vector left, none to be written, the feature still listed.
    assert [h["operation"] for h in t.history(2)] == ["REORG", "SET TBLPROPERTIES"]
    assert wait.value.version == t.version()  # the purge removed files with DVs
    assert wait.value.retry_after_ms > time.time() * 1000 + 23 * 3_600_000
    adds = t.get_add_actions(flatten=True)
    assert adds.column("deletion_vector.storage_type").null_count == adds.num_rows
    assert t.metadata().configuration["delta.enableDeletionVectors"] == "false"
    assert "deletionVectors" in all_features(t)
    assert ours(tmp_path) == expected

    t.alter.set_properties(NO_WAIT)
    version = t.alter.drop_feature("deletionVectors", truncate_history=True)
    t = dl.DeltaTable(str(tmp_path))
    assert "deletionVectors" not in all_features(t)
    assert log_names(tmp_path) == [
        f"{version:020}.checkpoint.parquet",
        f"{version:020}.crc",
        f"{version:020}.json",
        "_last_checkpoint",
    ]
    with pytest.raises(VersionNotFoundError):
        dl.DeltaTable(str(tmp_path), version=version - 1)
    assert ours(tmp_path) == expected
    assert theirs(tmp_path) == expected
    # deltalake's own pyarrow reader too (it refuses tables with deletion vectors).
    assert deltalake.DeltaTable(str(tmp_path)).to_pyarrow_table().sort_by("id").to_pylist() == (
        expected
    )


def test_without_truncation_the_drop_waits_for_metadata_cleanup(tmp_path: Path) -> None:
    dl.write_table(str(tmp_path), rows(), configuration={"delta.enableDeletionVectors": "true"})
    t = dl.DeltaTable(str(tmp_path))
    t.delete("id < 2")
    with pytest.raises(FeatureDropWaitError, match=r"delta\.logRetentionDuration"):
        t.alter.drop_feature("deletionVectors")
    # A later checkpoint, and a month and more passes: cleanup forgets the versions with DVs.
    t = dl.DeltaTable(str(tmp_path))
    t.create_checkpoint()
    backdate_log(tmp_path, 40)
    dl.write_table(str(tmp_path), rows().slice(0, 1), mode="append")
    t = dl.DeltaTable(str(tmp_path))
    version = t.alter.drop_feature("deletionVectors")
    t = dl.DeltaTable(str(tmp_path))
    assert "deletionVectors" not in all_features(t)
    assert t.history(1)[0]["operationParameters"]["truncateHistory"] is False
    names = log_names(tmp_path)
    assert f"{0:020}.json" not in names  # cleaned up by the retention rule ...
    assert f"{version - 1:020}.json" in names  # ... not truncated
    assert theirs(tmp_path) == ours(tmp_path)
    assert len(ours(tmp_path)) == 9


def test_v2_checkpoints_and_the_vacuum_protocol_check(tmp_path: Path) -> None:
    dl.write_table(
        str(tmp_path),
        rows(),
        configuration={"delta.checkpointPolicy": "v2", **NO_WAIT},
    )
    t = dl.DeltaTable(str(tmp_path))
    t.alter.add_feature("vacuumProtocolCheck")
    t.create_checkpoint()
    # A UUID-named V2 checkpoint, with its classic-named copy.
    checkpoints = [n for n in log_names(tmp_path) if ".checkpoint." in n]
    assert len(checkpoints) == 2 and any(n.count(".") == 3 for n in checkpoints)
    assert {"v2Checkpoint", "vacuumProtocolCheck"} <= all_features(t)

    version = t.alter.drop_feature("v2Checkpoint", truncate_history=True)
    t = dl.DeltaTable(str(tmp_path))
    assert "v2Checkpoint" not in all_features(t)
    assert t.metadata().configuration["delta.checkpointPolicy"] == "classic"
    checkpoints = [n for n in log_names(tmp_path) if ".checkpoint." in n]
    assert checkpoints == [f"{version:020}.checkpoint.parquet"]
    # A V1 checkpoint: no checkpointMetadata action.
    assert (
        "checkpointMetadata" not in pq.read_schema(tmp_path / "_delta_log" / checkpoints[0]).names
    )
    assert json.loads((tmp_path / "_delta_log" / "_last_checkpoint").read_text())["version"] == (
        version
    )

    t.alter.drop_feature("vacuumProtocolCheck", truncate_history=True)
    t = dl.DeltaTable(str(tmp_path))
    assert all_features(t) <= {"appendOnly", "invariants"}
    assert t.protocol().min_reader_version == 1
    assert theirs(tmp_path) == ours(tmp_path) == rows().to_pylist()


def test_refusals(tmp_path: Path) -> None:
    dl.write_table(
        str(tmp_path),
        rows(),
        configuration={"delta.enableRowTracking": "true", "delta.columnMapping.mode": "name"},
    )
    t = dl.DeltaTable(str(tmp_path))
    version = t.version()
    with pytest.raises(InvalidArgumentError, match="does not support the feature 'changeDataFeed'"):
        t.alter.drop_feature("changeDataFeed")
    with pytest.raises(InvalidArgumentError, match="rowTracking"):
        t.alter.drop_feature("domainMetadata")  # row tracking needs it
    with pytest.raises(InvalidArgumentError, match="does not support 'rowTracking'"):
        t.alter.drop_feature("rowTracking")
    assert dl.DeltaTable(str(tmp_path)).version() == version


def mapped(path: Path) -> dl.DeltaTable:
    """A column-mapped, partitioned table whose logical names differ from the physical ones
    (a renamed column and a nested field), with a dropped column still in the files and a
    deletion vector."""
    data = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "info": pa.array([{"a": i, "b": f"x{i}"} for i in range(6)]),
            "gone": [f"g{i}" for i in range(6)],
            "part": ["p", "q"] * 3,
        }
    )
    dl.write_table(
        str(path),
        data,
        partition_by=["part"],
        configuration={"delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true"},
    )
    t = dl.DeltaTable(str(path))
    t.alter.rename_column("info.b", "label")
    t.alter.rename_column("part", "region")
    t.alter.drop_columns("gone")
    t.delete("id = 4")
    return dl.DeltaTable(str(path))


def test_column_mapping_is_removed_by_rewriting_every_file(tmp_path: Path) -> None:
    t = mapped(tmp_path)
    expected = ours(tmp_path)
    assert [r["info"] for r in expected][:2] == [{"a": 0, "label": "x0"}, {"a": 1, "label": "x1"}]
    with pytest.raises(FeatureDropWaitError, match=r"columnMapping\.mode is name"):
        t.alter.drop_feature("columnMapping")
    t = dl.DeltaTable(str(tmp_path))
    assert t.column_mapping_mode() == "none"
    assert t.history(1)[0]["operation"] == "REMOVE COLUMN MAPPING"
    schema = t._raw.metadata()["schema_string"]
    assert "columnMapping" not in schema
    assert "delta.columnMapping.maxColumnId" not in t.metadata().configuration
    assert ours(tmp_path) == expected
    # The files now hold the logical names (read directly with pyarrow), without the dropped
    # column, and the partition values are keyed by the logical name.
    adds = t.get_add_actions()
    paths = adds.column("path").to_pylist()
    for path, values in zip(paths, adds.column("partition_values").to_pylist(), strict=True):
        assert pq.read_schema(tmp_path / path).names == ["id", "info"]
        assert [k for k, _ in values] == ["region"]
    assert pq.read_schema(tmp_path / adds.column("path")[0].as_py()).field("info").type == (
        pa.struct([("a", pa.int64()), ("label", pa.string())])
    )

    t.alter.set_properties(NO_WAIT)
    t.alter.drop_feature("columnMapping", truncate_history=True)
    t = dl.DeltaTable(str(tmp_path))
    assert "columnMapping" not in all_features(t)
    assert ours(tmp_path) == expected
    assert theirs(tmp_path) == expected
    # deltalake's pyarrow reader reads column-mapped tables as nulls (and refuses deletion
    # vectors); this one it reads right.
    t.alter.drop_feature("deletionVectors", truncate_history=True)
    assert all_features(dl.DeltaTable(str(tmp_path))) <= {"appendOnly", "invariants"}
    their_rows = deltalake.DeltaTable(str(tmp_path)).to_pyarrow_table().sort_by("id").to_pylist()
    assert their_rows == expected


def test_unsetting_column_mapping_conflicts_with_a_concurrent_write(tmp_path: Path) -> None:
    t = mapped(tmp_path)
    version = t.version()
    dl.write_table(
        str(tmp_path),
        pa.table({"id": [10], "info": [{"a": 10, "label": "new"}], "region": ["p"]}),
        mode="append",
    )
    with pytest.raises(dl.CommitConflictError):
        t.alter.set_properties({"delta.columnMapping.mode": "none"})
    t = dl.DeltaTable(str(tmp_path))
    assert t.version() == version + 1
    assert t.column_mapping_mode() == "name"
    # Retried on the new version, it lands, and keeps every row.
    t.alter.set_properties({"delta.columnMapping.mode": "none"})
    t = dl.DeltaTable(str(tmp_path))
    assert t.column_mapping_mode() == "none"
    assert [r["id"] for r in ours(tmp_path)] == [0, 1, 2, 3, 5, 10]
    assert theirs(tmp_path) == ours(tmp_path)


def test_an_empty_table_loses_column_mapping_too(tmp_path: Path) -> None:
    dl.write_table(
        str(tmp_path), rows().slice(0, 0), configuration={"delta.columnMapping.mode": "name"}
    )
    t = dl.DeltaTable(str(tmp_path))
    t.alter.set_properties({"delta.columnMapping.mode": "none"})
    t = dl.DeltaTable(str(tmp_path))
    assert t.column_mapping_mode() == "none"
    dl.write_table(str(tmp_path), rows(), mode="append")
    assert theirs(tmp_path) == ours(tmp_path) == rows().to_pylist()


def test_a_clustered_table_keeps_its_clustering_columns_without_column_mapping(
    tmp_path: Path,
) -> None:
    dl.write_table(
        str(tmp_path),
        pa.table({"id": list(range(20)), "k": [i % 5 for i in range(20)]}),
        configuration={"delta.columnMapping.mode": "name"},
    )
    t = dl.DeltaTable(str(tmp_path))
    t.alter.cluster_by(["k"])
    t.alter.rename_column("k", "kind")
    # The clustering domain names the physical column, not "k" or "kind".
    assert "kind" not in t.domain_metadata()["delta.clustering"]
    t.alter.set_properties({"delta.columnMapping.mode": "none"})
    t = dl.DeltaTable(str(tmp_path))
    assert json.loads(t.domain_metadata()["delta.clustering"]) == {"clusteringColumns": [["kind"]]}
    assert t.clustering_columns() == ["kind"]
    t.optimize.compact(full=True)
    assert theirs(tmp_path) == ours(tmp_path)
    assert len(ours(tmp_path)) == 20
