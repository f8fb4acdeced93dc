"""Iceberg compatibility (icebergCompatV1/V2): the writer requirements hold on every commit.

Spec: "Writer Requirements for IcebergCompatV1", "Writer Requirements for IcebergCompatV2".
"""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl

V2 = {"delta.enableIcebergCompatV2": "true"}


def _data() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "tags": pa.array([["a"], ["b", "c"], []], pa.list_(pa.string())),
            "attrs": pa.array([[("k", 1)], [], [("x", 2)]], pa.map_(pa.string(), pa.int32())),
            "p": pa.array(["x", "y", "x"]),
        }
    )


def _fields(t: dl.DeltaTable) -> dict[str, dict]:
    schema = json.loads(t.metadata().schema_string or "{}")
    return {f["name"]: f for f in schema["fields"]}


def _data_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts)


def test_v2_table_materializes_partitions_and_nested_ids(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, _data(), partition_by=["p"], configuration=V2)
    t = dl.DeltaTable(path)
    protocol = t.protocol()
    assert {"icebergCompatV2", "columnMapping"} <= set(protocol.writer_features or [])
    # Column mapping was switched on for it (name mode, as Delta Spark does).
    assert t.metadata().configuration["delta.columnMapping.mode"] == "name"
    fields = _fields(t)
    tags_ids = fields["tags"]["metadata"]["parquet.field.nested.ids"]
    attrs_ids = fields["attrs"]["metadata"]["parquet.field.nested.ids"]
    tags_phys = fields["tags"]["metadata"]["delta.columnMapping.physicalName"]
    attrs_phys = fields["attrs"]["metadata"]["delta.columnMapping.physicalName"]
    assert list(tags_ids) == [f"{tags_phys}.element"]
    assert sorted(attrs_ids) == [f"{attrs_phys}.key", f"{attrs_phys}.value"]
    column_ids = [f["metadata"]["delta.columnMapping.id"] for f in fields.values()]
    all_ids = column_ids + list(tags_ids.values()) + list(attrs_ids.values())
    assert len(all_ids) == len(set(all_ids)), "nested ids differ from column ids"
    assert int(t.metadata().configuration["delta.columnMapping.maxColumnId"]) == max(all_ids)

    p_phys = fields["p"]["metadata"]["delta.columnMapping.physicalName"]
    for file in _data_files(path):
        schema = pq.read_schema(file)
        # The partition column is in the file, after the data columns.
        assert schema.names[-1] == p_phys
        values = pq.read_table(file).column(p_phys).unique().to_pylist()
        assert len(values) == 1 and f"={values[0]}" in str(file.parent)
        # Nested ids are the parquet field ids of list elements and map keys and values.
        element = schema.field(tags_phys).type.value_field
        assert int(element.metadata[b"PARQUET:field_id"]) == tags_ids[f"{tags_phys}.element"]
        key = schema.field(attrs_phys).type.key_field
        assert int(key.metadata[b"PARQUET:field_id"]) == attrs_ids[f"{attrs_phys}.key"]

    expected = _data().sort_by("id").to_pylist()
    assert t.to_pyarrow_table().sort_by("id").select(["id", "tags", "attrs", "p"]).to_pylist() == [
        {**r, "attrs": list(r["attrs"])} for r in expected
    ]
    # deltalake's pyarrow path cannot map physical names; its query engine can.
    query = "SELECT id, CAST(p AS VARCHAR) AS p FROM t ORDER BY id"
    peer = pa.table(
        deltalake.QueryBuilder()
        .register("t", deltalake.DeltaTable(str(path)))
        .execute(query)
        .read_all()
    )
    assert peer.column("id").to_pylist() == [1, 2, 3]
    assert peer.column("p").to_pylist() == ["x", "y", "x"]

    # DELETE rewrites files (no deletion vectors under V2) with the partition values in them.
    t.delete("id = 1")
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [2, 3]
    for add in t.get_add_actions(flatten=True).to_pylist():
        file = pq.read_schema(path / add["path"])
        assert file.names[-1] == p_phys


def test_v1_refuses_arrays_and_maps(tmp_path: Path) -> None:
    with pytest.raises(dl.InvalidArgumentError, match=r"icebergCompatV1.*array"):
        dl.write_table(
            tmp_path / "t", _data(), configuration={"delta.enableIcebergCompatV1": "true"}
        )
    assert not (tmp_path / "t" / "_delta_log").exists() or not list(
        (tmp_path / "t" / "_delta_log").glob("*.json")
    )
    flat = _data().select(["id", "p"])
    dl.write_table(tmp_path / "u", flat, configuration={"delta.enableIcebergCompatV1": "true"})
    assert "icebergCompatV1" in (dl.DeltaTable(tmp_path / "u").protocol().writer_features or [])


def test_rules_hold_for_later_commits(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, _data(), partition_by=["p"], configuration=V2)
    t = dl.DeltaTable(path)
    version = t.version()
    # Deletion vectors cannot be turned on.
    with pytest.raises(dl.InvalidArgumentError, match="deletion vectors"):
        t.alter.set_properties({"delta.enableDeletionVectors": "true"})
    # No partition evolution.
    with pytest.raises(dl.InvalidArgumentError, match="partition columns"):
        dl.write_table(
            path, _data(), mode="overwrite", schema_mode="overwrite", partition_by=["id"]
        )
    # Adding a column gets nested ids too; appends keep working.
    extra = _data().append_column("more", pa.array([[1], [2], [3]], pa.list_(pa.int64())))
    dl.write_table(path, extra, mode="append", schema_mode="merge")
    t = dl.DeltaTable(path)
    assert version + 1 == t.version()
    more = _fields(t)["more"]["metadata"]
    assert len(more["parquet.field.nested.ids"]) == 1
    assert t.to_pyarrow_table().num_rows == 6


def test_enabling_on_a_table_with_files_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(
        path, _data().select(["id", "p"]), configuration={"delta.columnMapping.mode": "name"}
    )
    t = dl.DeltaTable(path)
    with pytest.raises(dl.InvalidArgumentError, match="already has data files"):
        t.alter.set_properties(V2)
    assert dl.DeltaTable(path).version() == 0
    # An empty table can turn it on.
    empty = tmp_path / "e"
    dl.DeltaTable.create(
        empty, pa.schema([("id", pa.int64())]), configuration={"delta.columnMapping.mode": "name"}
    )
    e = dl.DeltaTable(empty)
    e.alter.set_properties(V2)
    dl.write_table(empty, pa.table({"id": pa.array([1], pa.int64())}), mode="append")
    assert dl.DeltaTable(empty).to_pyarrow_table().num_rows == 1
