"""deltalake's and pyiceberg's table verbs on deltalog (issue #46): real tables on disk,
cross-checked with deltalake where it reads the same thing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl


def dv_table(path: Path) -> dl.DeltaTable:
    dl.write_table(
        path,
        pa.table({"id": list(range(10)), "p": ["a"] * 5 + ["b"] * 5}),
        partition_by=["p"],
        configuration={"delta.enableDeletionVectors": "true"},
    )
    t = dl.DeltaTable(path)
    t.delete("id IN (1, 3, 7)")
    return t


def test_count_subtracts_deleted_rows_and_deletion_vectors_match_deltalake(tmp_path: Path) -> None:
    t = dv_table(tmp_path / "t")
    assert t.count() == 7 == t.to_pyarrow_table().num_rows
    ours = pa.table(t.deletion_vectors())
    theirs = pa.table(deltalake.DeltaTable(str(tmp_path / "t")).deletion_vectors())
    assert ours.schema == theirs.schema
    assert sorted(ours.to_pylist(), key=str) == sorted(theirs.to_pylist(), key=str)


def test_partitions_and_transaction_version(tmp_path: Path) -> None:
    t = dv_table(tmp_path / "t")
    theirs = deltalake.DeltaTable(str(tmp_path / "t")).partitions()
    assert sorted(t.partitions(), key=str) == sorted(theirs, key=str)
    assert t.partitions([("p", "=", "b")]) == [{"p": "b"}]
    assert t.transaction_version("job") is None
    dl.write_table(
        t,
        pa.table({"id": [99], "p": ["c"]}),
        mode="append",
        commit_properties=dl.CommitProperties(app_transactions=[deltalake.Transaction("job", 4)]),
    )
    assert t.transaction_version("job") == 4
    assert deltalake.DeltaTable(str(tmp_path / "t")).transaction_version("job") == 4


def test_generate_refuses_deletion_vectors_and_writes_partition_manifests(tmp_path: Path) -> None:
    t = dv_table(tmp_path / "t")
    with pytest.raises(dl.UnsupportedFeatureError, match="deletion vector"):
        t.generate()
    dl.write_table(
        tmp_path / "u", pa.table({"id": [1, 2, 3], "p": ["a", "b", None]}), partition_by=["p"]
    )
    u = dl.DeltaTable(tmp_path / "u")
    u.generate()
    root = tmp_path / "u" / "_symlink_format_manifest"
    found = {
        str(p.parent.relative_to(root)): p.read_text().splitlines() for p in root.rglob("manifest")
    }
    assert set(found) == {"p=a", "p=b", "p=__HIVE_DEFAULT_PARTITION__"}
    assert all(os.path.exists(line) for lines in found.values() for line in lines)
    u.delete("p = 'b'")
    u.generate()
    assert not (root / "p=b").exists()


def test_create_write_transaction_commits_the_callers_files(tmp_path: Path) -> None:
    dl.write_table(tmp_path / "t", pa.table({"id": [1]}))
    t = dl.DeltaTable(tmp_path / "t")
    adds = dl.write_files(t, pa.table({"id": [2, 3]}))
    a = adds[0]["add"]
    action = dl.AddAction(a["path"], a["size"], {}, a["modificationTime"], True, a["stats"])
    t.create_write_transaction([action], "append", t.schema())
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]
    t.create_write_transaction([], "overwrite", t.schema())
    assert t.to_pyarrow_table().num_rows == 0
    assert deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table().num_rows == 0
    with pytest.raises(dl.SchemaMismatchError):
        t.create_write_transaction([], "append", pa.schema({"other": pa.string()}))


def test_refused_parameters_raise_and_commit_nothing(tmp_path: Path) -> None:
    t = dv_table(tmp_path / "t")
    version = t.version()
    with pytest.raises(dl.InvalidArgumentError, match="error_on_type_mismatch"):
        t.update({"id": "0"}, error_on_type_mismatch=False)
    with pytest.raises(dl.InvalidArgumentError, match="max_commit_retries"):
        dl.CommitProperties(max_commit_retries=3)
    with pytest.raises(dl.InvalidArgumentError, match="create_checkpoint"):
        t.delete(
            "id = 0",
            post_commithook_properties=dl.PostCommitHookProperties(create_checkpoint=False),
        )
    assert dl.DeltaTable(tmp_path / "t").version() == version


def test_post_commithook_cleanup_runs_after_the_commit(tmp_path: Path) -> None:
    dl.write_table(
        tmp_path / "t",
        pa.table({"id": [1]}),
        configuration={
            "delta.logRetentionDuration": "interval 1 days",
            "delta.enableExpiredLogCleanup": "false",
        },
    )
    t = dl.DeltaTable(tmp_path / "t")
    for i in range(3):
        dl.write_table(t, pa.table({"id": [i]}), mode="append")
    t.create_checkpoint()
    log = tmp_path / "t" / "_delta_log"
    old = time.time() - 3 * 86400  # the log so far, three days old
    for f in log.iterdir():
        os.utime(f, (old, old))
    t = dl.DeltaTable(tmp_path / "t")  # the commits' file times changed: opened afresh
    assert (log / f"{0:020}.json").exists()
    t.delete("id = 1")  # no hook: nothing cleaned (delta.enableExpiredLogCleanup is false)
    assert (log / f"{0:020}.json").exists()
    t.delete(
        "id = 0", post_commithook_properties=dl.PostCommitHookProperties(cleanup_expired_logs=True)
    )
    assert not (log / f"{0:020}.json").exists()


def test_vacuum_lite_keep_versions_and_restore_checks(tmp_path: Path) -> None:
    dl.write_table(tmp_path / "t", pa.table({"id": [1]}))
    t = dl.DeltaTable(tmp_path / "t")
    dl.write_table(t, pa.table({"id": [2]}), mode="overwrite")
    stray = tmp_path / "t" / "stray.parquet"
    stray.write_bytes(b"x")
    os.utime(stray, (time.time() - 60, time.time() - 60))
    full = t.vacuum(retention_hours=0, enforce_retention_duration=False)
    lite = t.vacuum(retention_hours=0, enforce_retention_duration=False, full=False)
    assert "stray.parquet" in full and "stray.parquet" not in lite and len(lite) == 1
    kept = t.vacuum(retention_hours=0, enforce_retention_duration=False, keep_versions=[0])
    assert kept == ["stray.parquet"]
    t.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, full=False)
    with pytest.raises(dl.DataFileNotFoundError):
        t.restore(0)
    with pytest.raises(dl.InvalidArgumentError, match="ignore_missing_files"):
        t.restore(0, ignore_missing_files=True)
    assert stray.exists()


def test_reads_with_types_mapper_filesystem_and_cdf_out_of_range(tmp_path: Path) -> None:
    import pandas as pd
    import pyarrow.fs as pafs

    dl.write_table(
        tmp_path / "t",
        pa.table({"id": [1, 2], "s": ["a", "b"]}),
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    t = dl.DeltaTable(tmp_path / "t")
    frame = t.to_pandas(types_mapper=pd.ArrowDtype)
    assert isinstance(frame.dtypes["s"], pd.ArrowDtype)
    got = t.to_pyarrow_table(filesystem=pafs.LocalFileSystem(), filters=[("id", ">", 1)])
    assert got.to_pylist() == [{"id": 2, "s": "b"}]
    with pytest.raises(dl.DeltaError, match="version 5"):
        t.load_cdf(starting_version=5).read_all()
    assert t.load_cdf(starting_version=5, allow_out_of_range=True).read_all().num_rows == 0
    assert t.load_cdf(0, ending_version=9, allow_out_of_range=True).read_all().num_rows == 2


def test_alter_names_of_deltalake(tmp_path: Path) -> None:
    dl.write_table(
        tmp_path / "t",
        pa.table(
            {"id": pa.array([1], pa.int64())},
            schema=pa.schema([pa.field("id", pa.int64(), nullable=False)]),
        ),
    )
    t = dl.DeltaTable(tmp_path / "t")
    t.alter.drop_column_not_null("id")
    assert t.schema().field("id").nullable
    with pytest.raises(dl.InvalidArgumentError, match="not Delta table properties"):
        t.alter.set_table_properties({"my.key": "1"})
    t.alter.set_table_properties({"my.key": "1"}, raise_if_not_exists=False)
    assert t.metadata().configuration["my.key"] == "1"
    with pytest.raises(dl.InvalidArgumentError, match="allow_protocol_versions_increase"):
        t.alter.add_feature(
            dl.TableFeatures.DeletionVectors, allow_protocol_versions_increase=False
        )
    t.alter.add_feature(deltalake.TableFeatures.DeletionVectors, True)
    assert "deletionVectors" in (t.protocol().writer_features or [])


def test_query_builder_self_join_and_missing_table(tmp_path: Path) -> None:
    t = dv_table(tmp_path / "t")
    qb = dl.QueryBuilder().register("t", t)
    rows = qb.execute(
        "SELECT a.p, count(*) AS n FROM t a JOIN t b ON a.id = b.id GROUP BY a.p ORDER BY 1"
    ).read_all()
    assert rows.to_pylist() == [{"p": "a", "n": 3}, {"p": "b", "n": 4}]
    theirs = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(tmp_path / "t")))
    assert (
        pa.table(theirs.execute("SELECT count(*) AS n FROM t").read_all()).to_pylist()
        == qb.execute("SELECT count(*) AS n FROM t").read_all().to_pylist()
    )
    with pytest.raises(Exception, match=r"(?i)nope"):
        qb.execute("SELECT * FROM nope")


def test_inspect_tables(tmp_path: Path) -> None:
    t = dv_table(tmp_path / "t")
    t.create_checkpoint()
    i = t.inspect
    assert i.history().column("operation").to_pylist() == ["DELETE", "CREATE TABLE AS SELECT"]
    assert i.versions().column("version").to_pylist() == [0, 1]
    files = i.files()
    assert sum(files.column("num_live_records").to_pylist()) == 7
    parts = {tuple(r["partition"]): r for r in i.partitions().to_pylist()}
    assert parts[(("p", "a"),)]["record_count"] == 3 and parts[(("p", "b"),)]["record_count"] == 4
    assert parts[(("p", "a"),)]["file_count"] == 1
    cps = i.checkpoints().to_pylist()
    assert [(c["version"], c["kind"], c["is_last_checkpoint"]) for c in cps] == [
        (1, "classic", True)
    ]
    assert sorted(i.deletion_vectors().column("cardinality").to_pylist()) == [1, 2]


def test_upsert_updates_only_changed_rows(tmp_path: Path) -> None:
    dl.write_table(tmp_path / "t", pa.table({"id": [1, 2, 3], "v": [10, None, 30]}))
    t = dl.DeltaTable(tmp_path / "t")
    result = t.upsert(pa.table({"id": [1, 2, 3, 4], "v": [10, None, 31, 40]}), join_cols=["id"])
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    assert sorted(t.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": 10},
        {"id": 2, "v": None},
        {"id": 3, "v": 31},
        {"id": 4, "v": 40},
    ]
    with pytest.raises(dl.InvalidArgumentError, match="duplicate"):
        t.upsert(pa.table({"id": [5, 5], "v": [1, 2]}), join_cols=["id"])
    nothing = t.upsert(pa.table({"id": [4], "v": [40]}), join_cols=["id"])
    assert (nothing.rows_updated, nothing.rows_inserted, nothing.version) == (0, 0, None)
    assert deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table().num_rows == 4


def test_update_schema_commits_once_or_not_at_all(tmp_path: Path) -> None:
    dl.write_table(
        tmp_path / "t",
        pa.table({"id": pa.array([1], pa.int32()), "v": [1]}),
        configuration={"delta.enableTypeWidening": "true"},
    )
    t = dl.DeltaTable(tmp_path / "t")
    with pytest.raises(dl.InvalidArgumentError, match="column mapping"):
        with t.update_schema() as u:
            u.rename_column("v", "value")
    assert t.version() == 0
    with pytest.raises(RuntimeError):
        with t.update_schema() as u:
            u.add_column("note", pa.string())
            raise RuntimeError("abandon")
    assert t.version() == 0 and "note" not in t.schema().names
    t.alter.set_properties({"delta.columnMapping.mode": "name"})
    with t.update_schema() as u:
        u.add_column("note", pa.string(), doc="free text")
        u.rename_column("v", "value")
        u.update_column("id", field_type=pa.int64(), doc="key")
        u.union_by_name(pa.schema({"extra": pa.bool_()}))
    assert t.version() == 2
    schema = t.schema()
    assert schema.names == ["id", "value", "note", "extra"]
    assert schema.field("id").type == pa.int64()
    assert schema.field("note").metadata[b"comment"] == b"free text"
    with t.update_schema() as u:
        u.delete_column("note")
    assert t.schema().names == ["id", "value", "extra"]
    # (deltalake 1.6.6 reads no table with typeWidening: deltalog reads it afresh.)
    assert dl.DeltaTable(tmp_path / "t").to_pyarrow_table().column_names == ["id", "value", "extra"]


def test_write_deltalake_signature_and_missing_duckdb_message(tmp_path: Path) -> None:
    assert dl.write_deltalake(tmp_path / "t", pa.table({"id": [1]}), mode="append") is None
    with pytest.raises(TypeError):
        dl.write_deltalake(tmp_path / "t", pa.table({"id": [1]}), "append")  # type: ignore[misc]
    with pytest.raises(dl.InvalidArgumentError, match="None"):
        dl.write_deltalake(
            tmp_path / "u", pa.table({"id": [1]}), configuration={"delta.appendOnly": None}
        )
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['duckdb'] = None\n"
        "import deltalog\n"
        "try:\n    deltalog.QueryBuilder()\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "deltalog[sql]" in out.stdout


def _codecs(t: dl.DeltaTable, paths: set[str]) -> set[str]:
    import pyarrow.parquet as pq

    root = t.table_uri.removeprefix("file://")
    return {
        pq.ParquetFile(f"{root}/{path}").metadata.row_group(0).column(0).compression
        for path in paths
    }


@pytest.mark.parametrize("flavour", ["deltalog", "deltalake"])
def test_dml_and_merge_write_with_writer_properties(tmp_path: Path, flavour: str) -> None:
    """DELETE, UPDATE and MERGE encode the files they write with the writer properties
    given (deltalake's class or deltalog's), as a write does; deltalake reads the result."""
    props = (
        dl.WriterProperties(compression="ZSTD")
        if flavour == "deltalog"
        else deltalake.WriterProperties(compression="ZSTD")
    )
    uri = str(tmp_path / "t")
    dl.write_table(uri, pa.table({"id": list(range(10)), "v": ["x"] * 10}))
    t = dl.DeltaTable(uri)
    assert _codecs(t, set(t.files())) == {"SNAPPY"}
    for step in (
        lambda: t.delete("id = 0", writer_properties=props),
        lambda: t.update({"v": "'y'"}, "id = 1", writer_properties=props),
        lambda: (
            t.merge(
                pa.table({"id": [2, 42], "v": ["m", "n"]}),
                "target.id = source.id",
                writer_properties=props,
                streamed_exec=True,
            )
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        ),
    ):
        before = set(t.files())
        step()
        written = set(t.files()) - before
        assert written and _codecs(t, written) == {"ZSTD"}
    got = deltalake.DeltaTable(uri).to_pyarrow_table().sort_by("id").to_pydict()
    assert got["id"] == [*range(1, 10), 42]
    assert got["v"][:2] == ["y", "m"] and got["v"][-1] == "n"
