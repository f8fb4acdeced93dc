"""Writing tables with column mapping ("Column Mapping", "Writer Requirements for Column
Mapping"): ids and physical names for every column, physical names and field ids in the data
files, and deltalake reading what deltalog writes."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl


def table(ids: list[int], parts: list[str]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(parts),
            "s": pa.array([{"x": i, "y": f"y{i}"} for i in ids]),
        }
    )


def peer_rows(path: Path) -> list[dict]:
    dt = deltalake.DeltaTable(str(path))
    got = deltalake.QueryBuilder().register("t", dt).execute("SELECT id, part, s FROM t")
    return sorted(pa.table(got.read_all()).to_pylist(), key=lambda r: r["id"])


def our_rows(path: Path) -> list[dict]:
    got = dl.DeltaTable(path).to_pyarrow_table(columns=["id", "part", "s"])
    return sorted(got.to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("mode", ["name", "id"])
@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_column_mapped_tables_written_and_read_by_both(tmp_path: Path, mode: str, dv: bool) -> None:
    path = tmp_path / "t"
    config = {"delta.columnMapping.mode": mode}
    if dv:
        config["delta.enableDeletionVectors"] = "true"
    dl.write_table(
        path, table([1, 2, 3], ["a", "b", "a"]), partition_by=["part"], configuration=config
    )
    t = dl.DeltaTable(path)
    p = t.protocol()
    if dv:
        assert (p.min_reader_version, p.min_writer_version) == (3, 7)
        assert p.reader_features == ["columnMapping", "deletionVectors"]
    else:
        assert (p.min_reader_version, p.min_writer_version) == (2, 5)
    config_out = t.metadata().configuration
    assert config_out["delta.columnMapping.maxColumnId"] == "5"  # id, part, s, s.x, s.y
    fields = json.loads(t.metadata().schema_string)["fields"]
    ids = [f["metadata"]["delta.columnMapping.id"] for f in fields]
    assert sorted(ids) == [1, 2, 3]
    physical = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in fields}
    assert all(v.startswith("col-") for v in physical.values())
    # The files hold physical names (and field ids); the partition directory is physical too.
    files = t.file_uris()
    assert all(f"{physical['part']}=" in f for f in files)
    stored = pq.read_schema(files[0].removeprefix("file://"))
    assert stored.names == [physical["id"], physical["s"]]
    assert (
        stored.field(0).metadata[b"PARQUET:field_id"]
        == str(fields[0]["metadata"]["delta.columnMapping.id"]).encode()
    )
    adds = [
        json.loads(a["add"]["stats"])
        for a in map(
            json.loads, (path / "_delta_log" / "00000000000000000000.json").read_text().splitlines()
        )
        if "add" in a
    ]
    assert all(physical["id"] in s["minValues"] for s in adds)

    t.delete("id = 2")
    t.update({"id": "id * 10"}, "s.x = 3")
    dl.write_table(path, table([4], ["c"]), mode="append")
    want = [
        {"id": 1, "part": "a", "s": {"x": 1, "y": "y1"}},
        {"id": 4, "part": "c", "s": {"x": 4, "y": "y4"}},
        {"id": 30, "part": "a", "s": {"x": 3, "y": "y3"}},
    ]
    assert our_rows(path) == want
    assert peer_rows(path) == want


def test_schema_merge_gives_new_columns_new_ids(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, table([1], ["a"]), configuration={"delta.columnMapping.mode": "name"})
    extra = table([2], ["b"]).append_column("new", pa.array([1.5]))
    dl.write_table(path, extra, mode="append", schema_mode="merge")
    t = dl.DeltaTable(path)
    assert t.metadata().configuration["delta.columnMapping.maxColumnId"] == "6"
    field = json.loads(t.metadata().schema_string)["fields"][-1]
    assert field["name"] == "new" and field["metadata"]["delta.columnMapping.id"] == 6
    rows = sorted(t.to_pyarrow_table(columns=["id", "new"]).to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "new": None}, {"id": 2, "new": 1.5}]
