"""Z-order, liquid clustering and REORG PURGE (issue #19): ``t.optimize.z_order``,
``clustering_columns`` / ``alter.cluster_by`` with ``t.optimize.compact`` clustering, and
``t.optimize.purge_deletion_vectors``. Tables come from the ``deltalake`` package where it can
write them (an independent writer), results are read back by ``deltalake`` too, and the
layouts are judged by the files a point filter reads according to the files' statistics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import numpy as np
import pyarrow as pa
import pytest

import deltalog as dl
from deltalog.exceptions import InvalidArgumentError


def random_rows(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "x": pa.array(rng.integers(0, 1000, n), pa.int64()),
            "y": pa.array(rng.random(n) * 1000, pa.float64()),
            "s": pa.array([f"s-{v:04}" for v in rng.integers(0, 5000, n)]),
        }
    )


def content(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [table.column(c).to_pylist() for c in ("x", "y", "s")]
    return sorted(zip(*cols, strict=True))


def log_actions(path: Path, version: int) -> list[dict[str, Any]]:
    text = (path / "_delta_log" / f"{version:020}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def commit_info(path: Path, version: int) -> dict[str, Any]:
    return next(a["commitInfo"] for a in log_actions(path, version) if "commitInfo" in a)


def files_read(t: dl.DeltaTable, column: str, values: list[float]) -> float:
    """The mean fraction of the table's files whose [min, max] of ``column`` holds a value:
    what a point filter on it reads after data skipping."""
    adds = t.get_add_actions(flatten=True).to_pylist()
    hits = [sum(1 for a in adds if a[f"min.{column}"] <= v <= a[f"max.{column}"]) for v in values]
    return sum(hits) / len(hits) / len(adds)


def small_random_files(path: Path, files: int = 16, per_file: int = 4000) -> pa.Table:
    """A table of random rows in many small files, written by deltalake."""
    parts = [random_rows(i, per_file) for i in range(files)]
    for part in parts:
        deltalake.write_deltalake(str(path), part, mode="append")
    return pa.concat_tables(parts)


def test_z_order_clusters_both_columns_and_prunes_files(tmp_path: Path) -> None:
    path = tmp_path / "z"
    data = small_random_files(path)
    t = dl.DeltaTable(str(path))
    probes_x = list(range(5, 1000, 37))
    probes_y = [v + 0.5 for v in range(5, 1000, 37)]
    assert files_read(t, "x", probes_x) > 0.9  # random layout: nearly every file
    metrics = t.optimize.z_order(["x", "y"], target_size=40_000)
    assert metrics["numFilesRemoved"] == 16 and metrics["numRows"] == data.num_rows
    assert metrics["numFilesAdded"] >= 8
    assert metrics["spilledBytes"] == 0
    # The same rows, read by deltalog and deltalake.
    expected = content(data)
    assert content(t.to_pyarrow_table()) == expected
    assert content(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == expected
    # Both columns narrow down: a point filter reads a fraction of the files.
    assert files_read(t, "x", probes_x) < 0.45
    assert files_read(t, "y", probes_y) < 0.6
    # One OPTIMIZE commit that changes no data, naming the columns.
    info = commit_info(path, t.version())
    assert info["operation"] == "OPTIMIZE"
    assert json.loads(info["operationParameters"]["zOrderBy"]) == ["x", "y"]
    changes = [a.get("add") or a.get("remove") for a in log_actions(path, t.version())]
    assert all(c["dataChange"] is False for c in changes if c)


def test_z_order_gives_the_rows_deltalakes_z_order_gives(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    small_random_files(ours, files=6, per_file=1000)
    small_random_files(theirs, files=6, per_file=1000)
    dl.DeltaTable(str(ours)).optimize.z_order(["s"])
    deltalake.DeltaTable(str(theirs)).optimize.z_order(["s"])
    a = content(deltalake.DeltaTable(str(ours)).to_pyarrow_table())
    b = content(dl.DeltaTable(str(theirs)).to_pyarrow_table())
    assert a == b and len(a) == 6000


def test_z_order_spills_beyond_its_memory_limit(tmp_path: Path) -> None:
    path = tmp_path / "spill"
    data = small_random_files(path, files=12, per_file=20_000)
    t = dl.DeltaTable(str(path))
    metrics = t.optimize.z_order(["x", "y"], target_size=200_000, memory_limit=1 << 20)
    assert metrics["spilledBytes"] > 0
    assert content(t.to_pyarrow_table()) == content(data)
    assert content(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == content(data)
    assert files_read(t, "x", list(range(5, 1000, 37))) < 0.5


def test_z_order_per_partition_with_deletion_vectors_and_row_tracking(tmp_path: Path) -> None:
    path = tmp_path / "p"
    config = {"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"}
    for i in range(6):
        part = random_rows(i, 500).append_column("p", pa.array(["a" if i % 2 else "b"] * 500))
        dl.write_table(
            str(path),
            part,
            mode="append",
            partition_by=["p"] if i == 0 else None,
            configuration=config if i == 0 else None,
        )
    t = dl.DeltaTable(str(path))
    t.delete("x < 100")
    lineage_before = t.to_pyarrow_table(with_row_tracking=True)
    before = sorted(
        zip(*(lineage_before.column(c).to_pylist() for c in ("x", "y", "_row_id")), strict=True)
    )
    metrics = t.optimize.z_order("y", partition_filters=[("p", "=", "a")])
    assert metrics["partitionsOptimized"] == 1 and metrics["numFilesRemoved"] == 3
    after_table = t.to_pyarrow_table(with_row_tracking=True)
    after = sorted(
        zip(*(after_table.column(c).to_pylist() for c in ("x", "y", "_row_id")), strict=True)
    )
    assert after == before  # deleted rows stay deleted, row IDs are kept
    adds = t.get_add_actions(flatten=True).to_pylist()
    rewritten = [a for a in adds if dict(a["partition_values"])["p"] == "a"]
    assert all(a["deletion_vector.storage_type"] is None for a in rewritten)
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    n = query.execute("SELECT count(*) AS n FROM t").read_all().column("n")[0].as_py()
    assert n == len(before)


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (["p"], "partition column"),
        (["nope"], "not a top-level column"),
        (["x", "X"], "twice"),
        ([], "1 to 64"),
    ],
)
def test_z_order_refuses_bad_columns(tmp_path: Path, columns: list[str], message: str) -> None:
    path = tmp_path / "bad"
    dl.write_table(
        str(path), random_rows(1, 10).append_column("p", pa.array(["a"] * 10)), partition_by=["p"]
    )
    t = dl.DeltaTable(str(path))
    with pytest.raises(InvalidArgumentError, match=message):
        t.optimize.z_order(columns)
    assert t.version() == 0


def clustering_provider(t: dl.DeltaTable) -> list[str | None]:
    return t.get_add_actions().column("clustering_provider").to_pylist()


def test_optimize_clusters_a_clustered_table_incrementally(tmp_path: Path) -> None:
    path = tmp_path / "liquid"
    dl.write_table(str(path), random_rows(0, 3000), clustering_columns=["x", "y"])
    for i in range(1, 8):
        dl.write_table(str(path), random_rows(i, 3000), mode="append")
    t = dl.DeltaTable(str(path))
    assert t.clustering_columns() == ["x", "y"]
    expected = content(t.to_pyarrow_table())
    metrics = t.optimize.compact(target_size=30_000)
    assert metrics["numFilesRemoved"] == 8
    assert set(clustering_provider(t)) == {"liquid"}
    info = commit_info(path, t.version())
    assert info["operation"] == "OPTIMIZE"
    assert json.loads(info["operationParameters"]["clusterBy"]) == ["x", "y"]
    assert content(t.to_pyarrow_table()) == expected
    assert content(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == expected
    assert files_read(t, "x", list(range(5, 1000, 37))) < 0.6
    # Nothing new to cluster: no commit.
    version = t.version()
    assert t.optimize.compact()["version"] is None and t.version() == version
    # New files are clustered by the next OPTIMIZE, the clustered ones stay.
    clustered = set(t.files())
    dl.write_table(str(path), random_rows(9, 3000), mode="append")
    dl.write_table(str(path), random_rows(10, 3000), mode="append")
    t.update_incremental()
    metrics = t.optimize.compact(target_size=30_000)
    assert metrics["numFilesRemoved"] == 2
    assert clustered <= set(t.files())
    assert set(clustering_provider(t)) == {"liquid"}
    # FULL reclusters everything.
    n = len(t.files())
    assert t.optimize.compact(full=True, target_size=30_000)["numFilesRemoved"] == n
    with pytest.raises(InvalidArgumentError, match="clustered table"):
        t.optimize.z_order(["x"])


def test_cluster_by_changes_the_clustering_columns(tmp_path: Path) -> None:
    path = tmp_path / "alter"
    config = {"delta.columnMapping.mode": "name"}
    dl.write_table(str(path), random_rows(0, 2000), configuration=config)
    dl.write_table(str(path), random_rows(1, 2000), mode="append")
    t = dl.DeltaTable(str(path))
    assert t.clustering_columns() == []
    t.alter.cluster_by(["Y"])
    assert t.clustering_columns() == ["y"]
    protocol = t.protocol()
    assert {"clustering", "domainMetadata"} <= set(protocol.writer_features or [])
    # The domain names the physical column (spec "Clustered Table").
    domain = json.loads(t.domain_metadata()["delta.clustering"])
    schema = json.loads(t._raw.metadata()["schema_string"])
    y = next(f for f in schema["fields"] if f["name"] == "y")
    physical = y["metadata"]["delta.columnMapping.physicalName"]
    assert domain == {"clusteringColumns": [[physical]]}
    assert physical != "y"
    info = commit_info(path, t.version())
    assert info["operation"] == "CLUSTER BY"
    assert info["operationParameters"]["newClusteringColumns"] == "y"
    # The old files are clustered by the new column; deltalake reads the result.
    expected = content(t.to_pyarrow_table())
    metrics = t.optimize.compact(target_size=20_000)
    assert metrics["numFilesRemoved"] == 2
    assert json.loads(commit_info(path, t.version())["operationParameters"]["clusterBy"]) == ["y"]
    adds = t.get_add_actions(flatten=True).to_pylist()
    assert all(a["min.y"] is not None for a in adds)  # statistics for the clustering column
    # (deltalake's pyarrow reader reads column-mapped tables as nulls; its SQL engine does not)
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    assert content(pa.table(query.execute("SELECT x, y, s FROM t").read_all())) == expected
    # CLUSTER BY NONE: OPTIMIZE compacts again.
    t.alter.cluster_by(None)
    assert t.clustering_columns() == []
    dl.write_table(str(path), random_rows(2, 10), mode="append")
    t.update_incremental()
    metrics = t.optimize.compact()
    assert "clusterBy" not in commit_info(path, t.version())["operationParameters"]
    assert content(t.to_pyarrow_table()) == content(
        pa.concat_tables([random_rows(0, 2000), random_rows(1, 2000), random_rows(2, 10)])
    )


def test_cluster_by_refuses_what_cannot_be_clustered(tmp_path: Path) -> None:
    path = tmp_path / "parted"
    dl.write_table(
        str(path), random_rows(0, 10).append_column("p", pa.array(["a"] * 10)), partition_by=["p"]
    )
    t = dl.DeltaTable(str(path))
    with pytest.raises(InvalidArgumentError, match="partitioned"):
        t.alter.cluster_by(["x"])
    other = tmp_path / "plain"
    dl.write_table(str(other), random_rows(0, 10))
    t = dl.DeltaTable(str(other))
    with pytest.raises(InvalidArgumentError, match="not a top-level column"):
        t.alter.cluster_by(["nope"])
    with pytest.raises(InvalidArgumentError, match="at most 4"):
        t.alter.cluster_by(["x", "y", "s", "x", "y"])
    with pytest.raises(InvalidArgumentError, match="not clustered"):
        t.optimize.compact(full=True)
    assert t.version() == 0


def test_purge_rewrites_only_the_files_with_deletion_vectors(tmp_path: Path) -> None:
    path = tmp_path / "purge"
    config = {"delta.enableDeletionVectors": "true"}
    dl.write_table(str(path), random_rows(0, 2000), configuration=config)
    for i in range(1, 4):
        dl.write_table(str(path), random_rows(i, 2000), mode="append")
    t = dl.DeltaTable(str(path))
    first = set(t.files())
    t.delete("x < 50")
    with_dv = {
        a["path"]
        for a in t.get_add_actions(flatten=True).to_pylist()
        if a["deletion_vector.storage_type"] is not None
    }
    assert len(with_dv) == 4
    expected = content(t.to_pyarrow_table())
    # A fifth file without a deletion vector stays as it is.
    dl.write_table(str(path), random_rows(9, 100), mode="append")
    t.update_incremental()
    untouched = set(t.files()) - first
    metrics = t.optimize.purge_deletion_vectors()
    assert metrics["numFilesRemoved"] == 4
    assert untouched <= set(t.files())
    adds = t.get_add_actions(flatten=True).to_pylist()
    assert all(a["deletion_vector.storage_type"] is None for a in adds)
    info = commit_info(path, t.version())
    assert info["operation"] == "REORG" and info["operationParameters"]["applyPurge"] is True
    total = sorted(expected + content(random_rows(9, 100)))
    assert content(t.to_pyarrow_table()) == total
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    theirs = pa.table(query.execute("SELECT x, y, s FROM t").read_all())
    assert content(theirs) == total
    # Nothing left to purge.
    assert t.optimize.purge_deletion_vectors()["version"] is None


def test_progress_reports_each_unit_and_gives_the_same_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    ours, plain = tmp_path / "progress", tmp_path / "plain"
    for i in range(6):
        part = random_rows(i, 500).append_column("p", pa.array(["a" if i % 2 else "b"] * 500))
        dl.write_table(str(ours), part, mode="append", partition_by=["p"] if i == 0 else None)
    shutil.copytree(ours, plain)
    calls: list[tuple[int, int, int, int]] = []
    metrics = dl.DeltaTable(str(ours)).optimize.z_order(["x"], progress=lambda *a: calls.append(a))
    expected = dl.DeltaTable(str(plain)).optimize.z_order(["x"])
    for key in ("numFilesRemoved", "numFilesAdded", "partitionsOptimized", "numRows"):
        assert metrics[key] == expected[key], key
    assert calls[0][0] == 0 and calls[-1][0] == calls[-1][1] == 2  # two partitions
    assert calls[-1][2] == calls[-1][3] > 0
    assert [c[0] for c in calls] == [0, 1, 2]
    assert content(dl.DeltaTable(str(ours)).to_pyarrow_table()) == content(
        dl.DeltaTable(str(plain)).to_pyarrow_table()
    )
    # progress=True draws a bar on stderr.
    t = dl.DeltaTable(str(ours))
    dl.write_table(
        str(ours), random_rows(9, 10).append_column("p", pa.array(["a"] * 10)), mode="append"
    )
    t.update_incremental()
    t.optimize.compact(progress=True)
    assert "OPTIMIZE" in capsys.readouterr().err
