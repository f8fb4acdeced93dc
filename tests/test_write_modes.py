"""Overwrite variants: replaceWhere (``predicate=``) and ``schema_mode="overwrite"``."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl


def data(ids: list[int], part: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "part": pa.array([part] * len(ids))})


def rows(path: Path) -> list[tuple]:
    t = dl.DeltaTable(path).to_pyarrow_table()
    return sorted((r["id"], r["part"]) for r in t.to_pylist())


def peer(path: Path) -> list[tuple]:
    dt = deltalake.DeltaTable(str(path))
    got = deltalake.QueryBuilder().register("t", dt).execute("SELECT id, part FROM t")
    return sorted((r["id"], r["part"]) for r in pa.table(got.read_all()).to_pylist())


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_replace_where_replaces_only_matching_rows(tmp_path: Path, dv: bool) -> None:
    path = tmp_path / "t"
    config = {"delta.enableDeletionVectors": "true"} if dv else None
    dl.write_table(path, data([1, 2], "a"), partition_by=["part"], configuration=config)
    dl.write_table(path, data([3, 4], "b"), mode="append")
    # A partition predicate: whole files go.
    dl.write_table(path, data([10], "a"), mode="overwrite", predicate="part = 'a'")
    assert rows(path) == [(3, "b"), (4, "b"), (10, "a")] == peer(path)
    # A data predicate: rows of a file go (DVs or a rewrite).
    dl.write_table(path, data([40], "b"), mode="overwrite", predicate="part = 'b' AND id >= 4")
    assert rows(path) == [(3, "b"), (10, "a"), (40, "b")] == peer(path)
    info = dl.DeltaTable(path).history(1)[0]
    assert info["operation"] == "WRITE"
    assert info["operationParameters"]["predicate"] == "part = 'b' AND id >= 4"
    if dv:
        log = (path / "_delta_log" / f"{3:020}.json").read_text().splitlines()
        adds = [json.loads(x)["add"] for x in log if '"add"' in x]
        assert any("deletionVector" in a for a in adds)


def test_replace_where_refuses_rows_outside_the_predicate(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, data([1], "a"), partition_by=["part"])
    with pytest.raises(dl.InvalidArgumentError, match="do not match"):
        dl.write_table(path, data([2], "b"), mode="overwrite", predicate="part = 'a'")
    with pytest.raises(ValueError):
        dl.write_table(path, data([2], "a"), mode="append", predicate="part = 'a'")
    assert rows(path) == [(1, "a")]
    assert dl.DeltaTable(path).version() == 0


def test_schema_overwrite_replaces_schema_and_partitioning(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, data([1, 2], "a"), partition_by=["part"])
    new = pa.table({"key": ["x", "y"], "n": pa.array([1.5, 2.5])})
    with pytest.raises(dl.InvalidArgumentError):
        dl.write_table(path, new, mode="overwrite")  # unknown columns without schema_mode
    dl.write_table(path, new, mode="overwrite", schema_mode="overwrite", partition_by=["key"])
    t = dl.DeltaTable(path)
    assert t.schema().names == ["key", "n"]
    assert t.metadata().partition_columns == ["key"]
    assert sorted(t.to_pyarrow_table().to_pylist(), key=lambda r: r["key"]) == [
        {"key": "x", "n": 1.5},
        {"key": "y", "n": 2.5},
    ]
    peer_rows = deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted(r["n"] for r in peer_rows) == [1.5, 2.5]
    assert t.history(1)[0]["operationParameters"]["overwriteSchema"] is True


def test_alter_add_columns(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    t = dl.DeltaTable(path)
    version = t.alter.add_columns(
        [pa.field("name", pa.string()), pa.field("at", pa.timestamp("us"))]
    )
    assert version == 1 and t.version() == 1
    assert t.schema().names == ["id", "name", "at"]
    assert "timestampNtz" in (t.protocol().writer_features or [])
    assert t.to_pyarrow_table().column("name").to_pylist() == [None, None]
    assert t.history()[0]["operation"] == "ADD COLUMNS"
    dl.write_table(path, pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}), mode="append")
    peer = deltalake.DeltaTable(str(path)).to_pyarrow_table().sort_by("id")
    assert peer.column("name").to_pylist() == [None, None, "c"]
    with pytest.raises(dl.InvalidArgumentError, match="already has a column"):
        t.alter.add_columns(pa.field("ID", pa.int32()))
    with pytest.raises(dl.InvalidArgumentError, match="nullable"):
        t.alter.add_columns(pa.field("x", pa.int32(), nullable=False))
    assert dl.DeltaTable(path).version() == 2


def test_alter_add_columns_under_column_mapping(tmp_path: Path) -> None:
    path = tmp_path / "t"
    config = {"delta.columnMapping.mode": "id"}
    dl.write_table(path, pa.table({"id": pa.array([1], pa.int64())}), configuration=config)
    t = dl.DeltaTable(path)
    t.alter.add_columns(pa.schema([("s", pa.struct([("a", pa.int64())]))]))
    fields = json.loads(t.metadata().schema_string or "{}")["fields"]
    ids = [
        fields[1]["metadata"]["delta.columnMapping.id"],
        fields[1]["type"]["fields"][0]["metadata"]["delta.columnMapping.id"],
    ]
    assert ids == [2, 3]
    assert t.metadata().configuration["delta.columnMapping.maxColumnId"] == "3"
    assert fields[1]["metadata"]["delta.columnMapping.physicalName"].startswith("col-")
    dl.write_table(
        path, pa.table({"id": pa.array([2], pa.int64()), "s": [{"a": 5}]}), mode="append"
    )
    rows = sorted(dl.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "s": None}, {"id": 2, "s": {"a": 5}}]


# --- a directory of plain parquet files (issue #42) -------------------------------------------


def parquet_directory(root: Path) -> Path:
    """Parquet files without a ``_delta_log``, partitioned Hive-style, with hidden files."""
    (root / "part=a").mkdir(parents=True)
    pq.write_table(data([1, 2], "a").drop_columns(["part"]), root / "part=a" / "f0.parquet")
    pq.write_table(data([3], "b"), root / "loose.parquet")
    return root


@pytest.mark.parametrize("mode", ["append", "overwrite", "error", "ignore"])
def test_parquet_directory_is_not_silently_a_new_table(tmp_path: Path, mode: str) -> None:
    """``write_table`` into a directory of parquet files without a log refuses, whatever the
    mode, naming the files and ``convert_to_deltalake``; nothing is written. With
    ``allow_unconverted_files=True`` it creates the table beside them, as before."""
    root = parquet_directory(tmp_path / "pq")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    with pytest.raises(dl.NotADeltaTableError, match="convert_to_deltalake") as caught:
        dl.write_table(str(root), data([9], "z"), mode=mode)  # type: ignore[arg-type]
    assert caught.value.files == ["loose.parquet", "part=a/f0.parquet"]
    assert caught.value.table == str(root)
    assert "not a Delta table" in str(caught.value) and "allow_unconverted_files" in str(
        caught.value
    )
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    dl.write_table(str(root), data([9], "z"), mode=mode, allow_unconverted_files=True)  # type: ignore[arg-type]
    assert rows(root) == [(9, "z")]


def test_hidden_parquet_files_and_converted_directories(tmp_path: Path) -> None:
    """Files and directories named ``_...`` or ``.…`` are hidden and do not count, nor do
    orphans of deltalog's own failed first write; a converted
    directory is a table and takes appends; a new catalog-managed table whose location holds
    parquet files is refused too."""
    hidden = tmp_path / "hidden"
    (hidden / "_staging").mkdir(parents=True)
    pq.write_table(data([1], "a"), hidden / "_staging" / "x.parquet")
    pq.write_table(data([1], "a"), hidden / ".tmp.parquet")
    pq.write_table(data([1], "a"), hidden / "_SUCCESS.parquet")
    dl.write_table(str(hidden), data([2], "b"), mode="append")
    assert rows(hidden) == [(2, "b")]
    # What a failed first write of deltalog leaves (its own file names, no log) is no parquet
    # directory: the write is retried.
    retried = tmp_path / "retried"
    retried.mkdir()
    for f in hidden.glob("part-*.parquet"):
        (retried / f.name).write_bytes(f.read_bytes())
    dl.write_table(str(retried), data([3], "c"), mode="append")
    assert rows(retried) == [(3, "c")]

    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(data([1, 3], "b"), plain / "f0.parquet")
    dl.convert_to_deltalake(str(plain))
    dl.write_table(str(plain), data([4], "a"), mode="append")
    assert rows(plain) == [(1, "b"), (3, "b"), (4, "a")]

    warehouse = tmp_path / "wh"
    config = {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(warehouse)}
    catalog = dl.connect_catalog(config)
    catalog.create_namespace("db")
    location, _ = catalog.new_table_target("db.t")
    parquet_directory(Path(location.removeprefix("file://")))
    with pytest.raises(dl.NotADeltaTableError):
        catalog.write_table("db.t", data([5], "c"))
    assert not catalog.table_exists("db.t")
