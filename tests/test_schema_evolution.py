"""Schema evolution beyond ADD COLUMNS (issue #19): column mapping enabled on an existing table,
RENAME COLUMN and DROP COLUMNS (which need it, as in Delta Spark), column metadata, DROP NOT
NULL, and the table's name and description. Tables start as written by the ``deltalake``
package where it can write them, and every result is read back by deltalake's SQL engine (its
pyarrow reader does not apply column mapping)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl
from deltalog.exceptions import CommitConflictError, InvalidArgumentError


def initial() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "info": pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": 3, "b": "z"}]),
            "v": ["p", "q", "r"],
            "part": ["x", "y", "x"],
        }
    )


def theirs(path: Path, sql: str = "SELECT * FROM t ORDER BY id") -> list[dict[str, Any]]:
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    rows: list[dict[str, Any]] = pa.table(query.execute(sql).read_all()).to_pylist()
    return rows


def ours(path: Path) -> list[dict[str, Any]]:
    return sorted(dl.DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def mapped_table(path: Path) -> dl.DeltaTable:
    """A partitioned table written by deltalake, then column mapping enabled by deltalog."""
    deltalake.write_deltalake(str(path), initial(), partition_by=["part"])
    t = dl.DeltaTable(str(path))
    t.alter.set_properties({"delta.columnMapping.mode": "name"})
    return t


def test_enabling_column_mapping_keeps_every_file_readable(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mapped_table(path)
    assert t.column_mapping_mode() == "name"
    protocol = t.protocol()
    assert protocol.min_reader_version >= 2 and protocol.min_writer_version >= 5
    schema = json.loads(t._raw.metadata()["schema_string"])
    ids = []

    def walk(fields: list[dict[str, Any]]) -> None:
        for f in fields:
            meta = f["metadata"]
            assert meta["delta.columnMapping.physicalName"] == f["name"]
            ids.append(meta["delta.columnMapping.id"])
            if isinstance(f["type"], dict) and f["type"].get("type") == "struct":
                walk(f["type"]["fields"])

    walk(schema["fields"])
    assert sorted(ids) == list(range(1, 7))
    assert t.metadata().configuration["delta.columnMapping.maxColumnId"] == "6"
    assert ours(path) == initial().to_pylist()
    assert theirs(path) == initial().to_pylist()
    with pytest.raises(InvalidArgumentError, match="cannot change"):
        t.alter.set_properties({"delta.columnMapping.mode": "id"})


def test_rename_and_drop_columns_without_rewriting_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mapped_table(path)
    files = set(t.files())
    t.alter.rename_column("v", "value")
    t.alter.rename_column("info.a", "alpha")
    t.alter.rename_column("part", "region")
    assert t.metadata().partition_columns == ["region"]
    assert t.schema().names == ["id", "info", "value", "region"]
    assert t.history()[0]["operation"] == "RENAME COLUMN"
    # New rows go under the new names, old files are read through their physical names.
    new = pa.table(
        {
            "id": pa.array([4], pa.int64()),
            "info": pa.array([{"alpha": 4, "b": "w"}]),
            "value": ["s"],
            "region": ["z"],
        }
    )
    dl.write_table(str(path), new, mode="append")
    expected = [
        {"id": 1, "info": {"alpha": 1, "b": "x"}, "value": "p", "region": "x"},
        {"id": 2, "info": {"alpha": 2, "b": "y"}, "value": "q", "region": "y"},
        {"id": 3, "info": {"alpha": 3, "b": "z"}, "value": "r", "region": "x"},
        {"id": 4, "info": {"alpha": 4, "b": "w"}, "value": "s", "region": "z"},
    ]
    assert ours(path) == expected
    assert theirs(path) == expected
    t.update_incremental()
    t.alter.drop_columns(["info.b", "value"])
    assert files <= set(t.files())  # nothing rewritten
    dropped = [
        {"id": r["id"], "info": {"alpha": r["info"]["alpha"]}, "region": r["region"]}
        for r in expected
    ]
    assert ours(path) == dropped
    assert theirs(path) == dropped
    # A re-added column of an old name is a new column: old files do not fill it.
    t.alter.add_columns(pa.field("value", pa.string()))
    assert {r["value"] for r in ours(path)} == {None}
    assert t.scan(filter=dl.col("region") == "x").to_pyarrow_table().num_rows == 2


def test_rename_and_drop_refusals(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    deltalake.write_deltalake(str(plain), initial())
    with pytest.raises(InvalidArgumentError, match="needs column mapping"):
        dl.DeltaTable(str(plain)).alter.rename_column("v", "w")
    with pytest.raises(InvalidArgumentError, match="needs column mapping"):
        dl.DeltaTable(str(plain)).alter.drop_columns("v")
    path = tmp_path / "t"
    t = mapped_table(path)
    t.alter.add_constraint({"positive": "id > 0"})
    version = t.version()
    with pytest.raises(InvalidArgumentError, match="already has a column"):
        t.alter.rename_column("v", "ID")
    with pytest.raises(InvalidArgumentError, match="uses it"):
        t.alter.rename_column("id", "key")
    with pytest.raises(InvalidArgumentError, match="uses it"):
        t.alter.drop_columns("id")
    with pytest.raises(InvalidArgumentError, match="partition column"):
        t.alter.drop_columns("part")
    with pytest.raises(InvalidArgumentError, match="no column"):
        t.alter.drop_columns("nope")
    with pytest.raises(InvalidArgumentError, match="at least one column"):
        t.alter.drop_columns(["info.a", "info.b"])
    with pytest.raises(InvalidArgumentError, match="not a column name"):
        t.alter.rename_column("v", "a.b")
    assert t.version() == version


def test_a_schema_change_conflicts_with_a_concurrent_write(tmp_path: Path) -> None:
    path = tmp_path / "t"
    stale = mapped_table(path)
    dl.write_table(str(path), initial().slice(0, 1), mode="append")
    with pytest.raises(CommitConflictError):
        stale.alter.drop_columns("v")
    assert "v" in dl.DeltaTable(str(path)).schema().names


def test_column_metadata_not_null_name_and_description(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    dl.write_table(str(path), pa.table({"id": [1], "v": ["a"]}, schema=schema))
    t = dl.DeltaTable(str(path))
    t.alter.set_column_metadata("v", {"comment": "a value"})
    field = json.loads(t._raw.metadata()["schema_string"])["fields"][1]
    assert field["metadata"] == {"comment": "a value"}
    with pytest.raises(InvalidArgumentError, match="belong to Delta"):
        t.alter.set_column_metadata("v", {"delta.columnMapping.id": 9})
    with pytest.raises(Exception, match="null"):
        dl.write_table(
            str(path), pa.table({"id": pa.array([None], pa.int64()), "v": ["b"]}), mode="append"
        )
    t.alter.drop_not_null("id")
    assert t.schema().field("id").nullable
    dl.write_table(
        str(path), pa.table({"id": pa.array([None], pa.int64()), "v": ["b"]}), mode="append"
    )
    with pytest.raises(InvalidArgumentError, match="accepts nulls already"):
        dl.DeltaTable(str(path)).alter.drop_not_null("id")
    t = dl.DeltaTable(str(path))
    t.alter.set_table_name("orders")
    t.alter.set_table_description("one row per order")
    assert (t.metadata().name, t.metadata().description) == ("orders", "one row per order")
    theirs_meta = deltalake.DeltaTable(str(path)).metadata()
    assert (theirs_meta.name, theirs_meta.description) == ("orders", "one row per order")
    assert t.history()[0]["operation"] == "UPDATE TABLE METADATA"
    assert sorted(deltalake.DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist()) == [
        "a",
        "b",
    ]
