"""CHECK constraints, invariants and generated columns on every write; ALTER (properties,
features, constraints); distributed writes (write_files + transaction); RESTORE; and racing
metadata changes."""

from __future__ import annotations

import itertools
import json
import pickle
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl
import processes


def ids(path: Path) -> list[int]:
    return sorted(dl.DeltaTable(path).to_pyarrow_table(columns=["id"]).column("id").to_pylist())


def table(values: list[int], part: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64()), "part": [part] * len(values)})


def test_check_constraints_are_validated_and_enforced(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, table([1, 2, 3]))
    t = dl.DeltaTable(path)
    with pytest.raises(dl.ConstraintViolationError) as err:
        t.alter.add_constraint({"small": "id < 3"})
    assert "1 existing row" in str(err.value)
    assert t.version() == 0
    t.alter.add_constraint({"positive": "id > 0"})
    p = t.protocol()
    assert (p.min_reader_version, p.min_writer_version) == (1, 3)
    assert t.metadata().configuration["delta.constraints.positive"] == "id > 0"
    # Appends, updates and deletes that keep the rule pass; violations change nothing.
    dl.write_table(path, table([4]), mode="append")
    with pytest.raises(dl.ConstraintViolationError) as err:
        dl.write_table(path, table([5, -1]), mode="append")
    assert err.value.constraint == "CHECK constraint positive"
    assert "id = -1" in str(err.value)
    with pytest.raises(dl.ConstraintViolationError):
        t.update({"id": "id - 10"}, "id = 2")
    # NULL makes the check unknown, which violates it (as in Delta Spark).
    with pytest.raises(dl.ConstraintViolationError):
        dl.write_table(
            path, pa.table({"id": pa.array([None], pa.int64()), "part": ["a"]}), mode="append"
        )
    assert ids(path) == [1, 2, 3, 4]
    t.update_incremental()  # statements act on the loaded version
    # deltalake honours deltalog's constraint too.
    with pytest.raises(Exception, match=r"(?i)constraint|invariant|violat|validation"):
        deltalake.write_deltalake(str(path), table([-5]), mode="append")
    t.alter.drop_constraint("positive")
    dl.write_table(path, table([-7]), mode="append")
    assert ids(path) == [-7, 1, 2, 3, 4]
    assert t.alter.drop_constraint("positive", raise_if_not_exists=False) is None


def test_deltalake_constraints_are_enforced(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), table([1]))
    deltalake.DeltaTable(str(path)).alter.add_constraint({"c": "id < 100"})
    with pytest.raises(dl.ConstraintViolationError):
        dl.write_table(path, table([100]), mode="append")
    dl.write_table(path, table([99]), mode="append")
    assert ids(path) == [1, 99]


def test_generated_columns_are_computed_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("double", pa.int64(), metadata={"delta.generationExpression": "id * 2"}),
        ]
    )
    dl.DeltaTable.create(path, schema)
    t = dl.DeltaTable(path)
    assert t.protocol().min_writer_version == 4
    dl.write_table(path, pa.table({"id": [1, 2]}), mode="append")  # computed
    dl.write_table(path, pa.table({"id": [3], "double": [6]}), mode="append")  # checked
    with pytest.raises(dl.ConstraintViolationError, match="generated column double"):
        dl.write_table(path, pa.table({"id": [4], "double": [7]}), mode="append")
    # Statements act on the loaded version (as deltalake's do): reload first.
    t.update_incremental()
    t.update({"id": "id + 10"}, "id = 1")  # the generated column follows
    rows = sorted(dl.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 2, "double": 4},
        {"id": 3, "double": 6},
        {"id": 11, "double": 22},
    ]
    # deltalake reads the generated values.
    peer = deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted(r["double"] for r in peer) == [4, 6, 22]


def test_invariants_are_enforced(tmp_path: Path) -> None:
    path = tmp_path / "t"
    invariant = json.dumps({"expression": {"expression": "id < 10"}})
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"delta.invariants": invariant})])
    dl.DeltaTable.create(path, schema)
    dl.write_table(path, pa.table({"id": [9]}), mode="append")
    with pytest.raises(dl.ConstraintViolationError, match="invariant of column id"):
        dl.write_table(path, pa.table({"id": [10]}), mode="append")
    assert ids(path) == [9]


def test_set_properties_and_features_upgrade_the_protocol(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, table([1, 2, 3]))
    t = dl.DeltaTable(path)
    t.alter.set_properties({"delta.enableChangeDataFeed": "true", "owner": "me"})
    assert (t.protocol().min_reader_version, t.protocol().min_writer_version) == (1, 4)
    assert t.metadata().configuration["owner"] == "me"
    t.alter.set_properties({"delta.enableDeletionVectors": "true"})
    p = t.protocol()
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert p.reader_features == ["deletionVectors"]
    # The legacy features writer version 4 implied stay supported, listed.
    assert {"appendOnly", "invariants", "checkConstraints", "changeDataFeed"} <= set(
        p.writer_features or []
    )
    # Now deletes write deletion vectors, and change data files.
    m = t.delete("id = 2")
    assert m["num_deletion_vectors_added"] == 1
    assert [
        r["_change_type"] for r in t.load_cdf(starting_version=t.version()).read_all().to_pylist()
    ] == ["delete"]
    t.alter.add_feature("timestampNtz")
    assert "timestampNtz" in (t.protocol().writer_features or [])
    t.alter.unset_properties(["owner"])
    assert "owner" not in t.metadata().configuration
    with pytest.raises(dl.UnsupportedFeatureError):
        t.alter.add_feature("noSuchFeature")
    history = [h["operation"] for h in t.history()]
    assert history[:2] == ["UNSET TBLPROPERTIES", "SET TBLPROPERTIES"]


def test_racing_metadata_changes_conflict(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, table([1]))
    first, second = dl.DeltaTable(path), dl.DeltaTable(path)
    first.alter.set_properties({"a": "1"})
    with pytest.raises(dl.CommitConflictError) as err:
        second.alter.set_properties({"b": "2"})
    assert "metadata" in str(err.value)
    assert dl.DeltaTable(path).metadata().configuration == {"a": "1"}
    # A metadata change also conflicts with a concurrent append (its rows were not checked).
    third = dl.DeltaTable(path)
    dl.write_table(path, table([-1]), mode="append")
    with pytest.raises(dl.CommitConflictError):
        third.alter.add_constraint({"positive": "id > 0"})


def _worker_write(path: str, values: list[int]) -> bytes:
    t = dl.DeltaTable(path)
    return pickle.dumps(dl.write_files(t, table(values, "w")))


def test_files_written_by_workers_committed_once(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, table([0]), partition_by=["part"])
    ctx = processes.context()
    with ctx.Pool(2) as pool:
        results = pool.starmap(_worker_write, [(str(path), [1, 2]), (str(path), [3])])
    adds = [a for r in results for a in pickle.loads(r)]
    assert all(a["add"]["path"].startswith("part=w/") for a in adds)
    assert json.loads(adds[0]["add"]["stats"])["numRecords"] >= 1
    t = dl.DeltaTable(path)
    assert ids(path) == [0]  # nothing committed yet
    version = (
        t.transaction(operation="WRITE", mode="Append")
        .add_actions(adds)
        .commit(dl.CommitProperties(app_id="job", app_version=1))
    )
    assert version == 1
    assert ids(path) == [0, 1, 2, 3]
    assert t.transactions() == {"job": 1}
    info = t.history(1)[0]
    assert info["operation"] == "WRITE" and info["isBlindAppend"] is True
    # A transaction replacing a file: remove + add.
    old = [f for f in t.files() if f.startswith("part=a")]
    txn = t.transaction(operation="DELETE")
    txn.remove_files(old)
    assert txn.commit() == 2
    assert ids(path) == [1, 2, 3]
    with pytest.raises(ValueError):
        t.transaction().add_actions([{"bogus": {}}])
    with pytest.raises(dl.DeltaError):
        dl.write_files(t, pa.table({"nope": [1]}))


def test_restore_brings_back_files_and_deletion_vectors(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, table([1, 2, 3]), configuration={"delta.enableDeletionVectors": "true"})
    dl.write_table(path, table([4]), mode="append")
    t = dl.DeltaTable(path)
    t.delete("id = 2")  # version 2: a DV
    dl.write_table(path, table([9]), mode="overwrite")  # version 3
    t.update_incremental()
    m = t.restore(2)
    assert m["version"] == 4
    assert m["num_restored_files"] == 2 and m["num_removed_files"] == 1
    assert ids(path) == [1, 3, 4]
    t.restore(0)
    assert ids(path) == [1, 2, 3]
    assert t.history(1)[0]["operation"] == "RESTORE"
    with pytest.raises(ValueError):
        t.restore(t.version())


def _commit_infos(path: Path) -> list[dict]:
    out = []
    for f in sorted((path / "_delta_log").glob("*.json")):
        first = json.loads(f.read_text().splitlines()[0])
        out.append(first)
    return out


def test_in_commit_timestamps_on_a_new_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    config = {"delta.enableInCommitTimestamps": "true"}
    dl.write_table(path, table([1]), configuration=config)
    for i in range(3):
        dl.write_table(path, table([i]), mode="append")
    t = dl.DeltaTable(path)
    # Written as other writers spell it (deltalog.protocol.features.IN_COMMIT_TIMESTAMP).
    assert "inCommitTimestamp" in (t.protocol().writer_features or [])
    assert "inCommitTimestamps" not in (t.protocol().writer_features or [])
    firsts = _commit_infos(path)
    # commitInfo is the first action of every commit and carries a strictly increasing ICT.
    icts = [f["commitInfo"]["inCommitTimestamp"] for f in firsts]
    assert all(b > a for a, b in itertools.pairwise(icts))
    assert [h["timestamp"] for h in reversed(t.history())] == icts
    t.delete("id = 0")
    assert _commit_infos(path)[-1]["commitInfo"]["inCommitTimestamp"] > icts[-1]


def test_enabling_in_commit_timestamps_records_where_they_start(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, table([1]))
    t = dl.DeltaTable(path)
    version = t.alter.set_properties({"delta.enableInCommitTimestamps": "true"})
    config = t.metadata().configuration
    assert config["delta.inCommitTimestampEnablementVersion"] == str(version)
    ict = _commit_infos(path)[version]["commitInfo"]["inCommitTimestamp"]
    assert config["delta.inCommitTimestampEnablementTimestamp"] == str(ict)
    dl.write_table(path, table([2]), mode="append")
    assert _commit_infos(path)[-1]["commitInfo"]["inCommitTimestamp"] > ict


def test_user_metadata_domains(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, table([1]))
    t = dl.DeltaTable(path)
    t.alter.set_domain_metadata("app.settings", '{"owner": "etl"}')
    assert t.domain_metadata() == {"app.settings": '{"owner": "etl"}'}
    assert "domainMetadata" in (t.protocol().writer_features or [])
    dl.write_table(path, table([2]), mode="append")  # writers keep domains
    t.update_incremental()
    assert t.domain_metadata() == {"app.settings": '{"owner": "etl"}'}
    with pytest.raises(ValueError, match="delta"):
        t.alter.set_domain_metadata("delta.rowTracking", "{}")
    # Two commits changing one domain conflict.
    other = dl.DeltaTable(path)
    t.alter.set_domain_metadata("app.settings", "v2")
    with pytest.raises(dl.CommitConflictError, match="domain"):
        other.alter.set_domain_metadata("app.settings", "v3")
    t.alter.remove_domain_metadata("app.settings")
    assert t.domain_metadata() == {}


def identity_schema(explicit: bool = False) -> pa.Schema:
    meta = {
        "delta.identity.start": "100",
        "delta.identity.step": "10",
        "delta.identity.allowExplicitInsert": "true" if explicit else "false",
    }
    return pa.schema([pa.field("id", pa.int64(), metadata=meta), pa.field("v", pa.string())])


def test_identity_columns_generate_values(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.DeltaTable.create(path, identity_schema())
    t = dl.DeltaTable(path)
    assert t.protocol().min_writer_version == 6
    dl.write_table(path, pa.table({"v": ["a", "b"]}), mode="append")
    dl.write_table(path, pa.table({"v": ["c"]}), mode="append")
    got = sorted(dl.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": 100, "v": "a"}, {"id": 110, "v": "b"}, {"id": 120, "v": "c"}]
    field = json.loads(dl.DeltaTable(path).metadata().schema_string)["fields"][0]
    assert field["metadata"]["delta.identity.highWaterMark"] == 120
    # Explicit values are refused without allowExplicitInsert; the table is unchanged.
    with pytest.raises(dl.InvalidArgumentError, match="identity"):
        dl.write_table(path, pa.table({"id": [5], "v": ["x"]}), mode="append")
    t.update_incremental()
    with pytest.raises(dl.InvalidArgumentError, match="identity"):
        t.update({"id": "0"})
    # MERGE inserts get generated values too.
    (
        t.merge(pa.table({"v": ["c", "d"]}), "target.v = source.v")
        .when_not_matched_insert({"v": "source.v"})
        .execute()
    )
    got = sorted(dl.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert got[-1] == {"id": 130, "v": "d"}
    # deltalake reads the generated values.
    peer = deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted(r["id"] for r in peer) == [100, 110, 120, 130]


def test_identity_overflow_and_explicit_inserts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.DeltaTable.create(path, identity_schema(explicit=True))
    dl.write_table(path, pa.table({"id": [7], "v": ["mine"]}), mode="append")
    assert dl.DeltaTable(path).to_pyarrow_table().column("id").to_pylist() == [7]
    meta = {"delta.identity.start": str(2**63 - 2), "delta.identity.step": "1"}
    schema = pa.schema([pa.field("id", pa.int64(), metadata=meta), pa.field("v", pa.string())])
    big = tmp_path / "big"
    dl.DeltaTable.create(big, schema)
    with pytest.raises(dl.InvalidArgumentError, match="overflow"):
        dl.write_table(big, pa.table({"v": ["a", "b", "c"]}), mode="append")
    assert dl.DeltaTable(big).version() == 0


def test_column_defaults_fill_left_out_columns(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("status", pa.string(), metadata={"CURRENT_DEFAULT": "'new'"}),
            pa.field("n", pa.int32(), metadata={"CURRENT_DEFAULT": "40 + 2"}),
        ]
    )
    t = dl.DeltaTable.create(path, schema)
    assert "allowColumnDefaults" in (t.protocol().writer_features or [])
    dl.write_table(path, pa.table({"id": [1]}), mode="append")
    dl.write_table(path, pa.table({"id": [2], "status": ["old"]}), mode="append")
    t.update_incremental()
    (
        t.merge(pa.table({"id": [3]}), "target.id = source.id")
        .when_not_matched_insert({"id": "source.id"})
        .execute()
    )
    got = sorted(dl.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"id": 1, "status": "new", "n": 42},
        {"id": 2, "status": "old", "n": 42},
        {"id": 3, "status": "new", "n": 42},
    ]


def test_clustered_tables_record_columns_and_keep_their_statistics(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = pa.table({"a": [1, 2], "b": ["x", "y"], "c": pa.array([10, 20], pa.int64())})
    config = {"delta.dataSkippingNumIndexedCols": "1", "delta.columnMapping.mode": "name"}
    dl.write_table(path, data, configuration=config, clustering_columns=["c"])
    t = dl.DeltaTable(path)
    assert {"clustering", "domainMetadata"} <= set(t.protocol().writer_features or [])
    physical = {
        f["name"]: f["metadata"]["delta.columnMapping.physicalName"]
        for f in json.loads(t.metadata().schema_string)["fields"]
    }
    domain = json.loads(t.domain_metadata()["delta.clustering"])
    assert domain == {"clusteringColumns": [[physical["c"]]]}
    dl.write_table(path, data, mode="append")
    t.update_incremental()
    t.update({"b": "'z'"}, "a = 1")
    # Every file has statistics for the clustering column, beyond the one indexed column (the
    # writer then collects them for every column, which the spec allows).
    stats = t.get_add_actions(flatten=True)
    # Both files hold a = 1: their rows are rewritten together into one file (one file per
    # partition at a time).
    assert stats.num_rows == 1
    assert sum(stats.column("num_records").to_pylist()) == 4
    assert stats.column("min.c").null_count == 0
    with pytest.raises(dl.InvalidArgumentError, match="partitioned"):
        dl.write_table(tmp_path / "u", data, partition_by=["a"], clustering_columns=["c"])


def _append_tracked(path: str, worker: int, count: int) -> None:
    for i in range(count):
        dl.write_table(path, pa.table({"id": [worker * 100 + i, -1]}), mode="append")


def test_row_tracking_assigns_fresh_row_ids(tmp_path: Path) -> None:
    path = tmp_path / "t"
    config = {"delta.enableRowTracking": "true"}
    dl.write_table(path, pa.table({"id": pa.array([1, 2, 3], pa.int64())}), configuration=config)
    t = dl.DeltaTable(path)
    assert {"rowTracking", "domainMetadata"} <= set(t.protocol().writer_features or [])
    assert "delta.rowTracking.materializedRowIdColumnName" in t.metadata().configuration
    ctx = processes.context()
    procs = [ctx.Process(target=_append_tracked, args=(str(path), w, 5)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    t.update_incremental()
    rows = t.to_pyarrow_table(with_row_tracking=True).to_pylist()
    assert len(rows) == 3 + 2 * 5 * 2
    row_ids = sorted(r["_row_id"] for r in rows)
    assert row_ids == list(range(len(rows)))  # unique, dense, from 0
    versions = {a["version"] for a in t.history()}
    assert {r["_row_commit_version"] for r in rows} == versions
    mark = json.loads(t.domain_metadata()["delta.rowTracking"])["highWaterMark"]
    assert mark == len(rows) - 1


def _lineage(t: dl.DeltaTable) -> dict[int, tuple[int, int]]:
    rows = t.to_pyarrow_table(with_row_tracking=True).to_pylist()
    ids = [r["_row_id"] for r in rows]
    assert len(ids) == len(set(ids)), "row IDs must be unique in a version"
    return {r["id"]: (r["_row_id"], r["_row_commit_version"]) for r in rows}


@pytest.mark.parametrize("dvs", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_row_ids_survive_delete_update_and_merge(tmp_path: Path, dvs: bool) -> None:
    # "Writer Requirements for Row Tracking": copied rows keep their stable row IDs and commit
    # versions, updated rows keep their row IDs and take the commit's version, inserted rows
    # get fresh IDs.
    path = tmp_path / "t"
    config = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": str(dvs).lower()}
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    first = pa.table({"id": list(range(5)), "v": [0] * 5}, schema=schema)
    dl.write_table(path, first, configuration=config)
    dl.write_table(
        path, pa.table({"id": list(range(5, 10)), "v": [0] * 5}, schema=schema), mode="append"
    )
    t = dl.DeltaTable(path)
    before = _lineage(t)

    t.delete("id = 1")
    after_delete = _lineage(t)
    assert set(after_delete) == set(before) - {1}
    assert all(after_delete[k] == before[k] for k in after_delete)

    t.update({"v": "v + 1"}, predicate="id = 2")
    update_version = t.version()
    after_update = _lineage(t)
    assert after_update[2] == (before[2][0], update_version)
    assert all(after_update[k] == before[k] for k in after_update if k != 2)

    source = pa.table({"id": [3, 100], "v": [7, 7]}, schema=schema)
    (
        t.merge(source, "target.id = source.id", source_alias="source", target_alias="target")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    merge_version = t.version()
    after_merge = _lineage(t)
    assert after_merge[3] == (before[3][0], merge_version)
    assert after_merge[100][1] == merge_version
    assert after_merge[100][0] > max(i for i, _ in before.values())
    assert all(after_merge[k] == before[k] for k in after_merge if k not in (2, 3, 100))
    assert after_merge[2] == after_update[2]
    for entry in t.history()[:3]:
        assert entry["tags"]["delta.rowTracking.preserved"] == "true"
    # The hidden columns stay hidden: a peer reads the table's own columns only.
    peer = deltalake.DeltaTable(str(path))
    peer_rows = (
        deltalake.QueryBuilder().register("t", peer).execute("SELECT id, v FROM t").read_all()
    )
    assert peer_rows.schema.names == ["id", "v"]
    assert sorted(peer_rows.column("id").to_pylist()) == sorted(after_merge)
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == sorted(after_merge)
    assert t.to_pyarrow_table().schema.names == ["id", "v"]


def test_row_tracking_supported_but_not_enabled_takes_fresh_ids(tmp_path: Path) -> None:
    # Supported only: writers assign fresh IDs and "cannot preserve" them.
    path = tmp_path / "t"
    dl.write_table(
        path,
        pa.table({"id": pa.array([1, 2, 3], pa.int64())}),
        configuration={"delta.feature.rowTracking": "supported"},
    )
    t = dl.DeltaTable(path)
    t.update({"id": "id + 10"}, predicate="id = 2")
    adds = t.get_add_actions(flatten=True).to_pylist()
    assert all(a["base_row_id"] is not None for a in adds)
    assert t.history()[0]["tags"]["delta.rowTracking.preserved"] == "false"
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [1, 3, 12]


def test_enabling_row_tracking_later(tmp_path: Path) -> None:
    # Files without baseRowId cannot be tracked without a backfill: refused, nothing written.
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    t = dl.DeltaTable(path)
    with pytest.raises(dl.InvalidArgumentError, match="baseRowId"):
        t.alter.set_properties({"delta.enableRowTracking": "true"})
    assert dl.DeltaTable(path).version() == 0
    # With the feature supported from the start every file has baseRowId: enabling works and
    # assigns the materialized column names.
    other = tmp_path / "u"
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    dl.write_table(other, data, configuration={"delta.feature.rowTracking": "supported"})
    u = dl.DeltaTable(other)
    u.alter.set_properties({"delta.enableRowTracking": "true"})
    config = u.metadata().configuration
    assert config["delta.rowTracking.materializedRowIdColumnName"].startswith("_row-id-col-")
    u.update({"id": "id + 10"}, predicate="id = 1")
    rows = u.to_pyarrow_table(with_row_tracking=True).to_pylist()
    assert sorted((r["id"], r["_row_id"]) for r in rows) == [(2, 1), (11, 0)]
