"""Overwrite variants: replaceWhere (``predicate=``) and ``schema_mode="overwrite"``."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow as pa
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
