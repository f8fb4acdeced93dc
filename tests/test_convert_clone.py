"""CONVERT TO DELTA (``dl.convert_to_deltalake``) and CLONE (``DeltaTable.clone``), issue #19.

Conversions start from parquet directories pyarrow writes (Hive partitions, hidden files, files
whose schemas differ), and clones from tables the ``deltalake`` package writes; every result is
read back by ``deltalake`` as well as by deltalog."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from deltalog.exceptions import CorruptDataFileError, InvalidArgumentError


def rows(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"n{i:05}" for i in ids]),
            "day": pa.array([f"2026-11-{1 + i % 3:02}" for i in ids]),
            "k": pa.array([i % 2 for i in ids], pa.int64()),
        }
    )


def ordered(table: Any, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    table = pa.table(table)
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def sql_rows(path: Path, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    return ordered(query.execute(f"SELECT {', '.join(columns)} FROM t").read_all(), columns)


def hive_directory(path: Path, data: pa.Table) -> None:
    partitioning = ds.partitioning(
        pa.schema([("day", pa.string()), ("k", pa.int64())]), flavor="hive"
    )
    ds.write_dataset(data, path, format="parquet", partitioning=partitioning)
    (path / "_SUCCESS").write_text("")
    (path / ".hidden.crc").write_text("not data")


def test_a_hive_directory_becomes_a_table_in_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "hive"
    data = rows(300)
    hive_directory(path, data)
    version = dl.convert_to_deltalake(
        str(path), partition_by=pa.schema([("day", pa.date32()), ("k", pa.int32())])
    )
    assert version == 0
    t = dl.DeltaTable(str(path))
    assert t.metadata().partition_columns == ["day", "k"]
    schema = t.schema()
    assert schema.field("day").type == pa.date32() and schema.field("k").type == pa.int32()
    info = t.history()[0]
    assert info["operation"] == "CONVERT"
    assert info["operationParameters"]["numFiles"] == 6
    assert info["operationParameters"]["collectStats"] is True
    columns = ("id", "name")
    assert ordered(t.to_pyarrow_table(), columns) == ordered(data, columns)
    assert ordered(deltalake.DeltaTable(str(path)).to_pyarrow_table(), columns) == ordered(
        data, columns
    )
    # Statistics come from reading the files: exact counts and bounds.
    adds = t.get_add_actions(flatten=True).to_pylist()
    assert sum(a["num_records"] for a in adds) == 300
    for a in adds:
        file_ids = pq.read_table(path / a["path"]).column("id").to_pylist()
        assert (a["min.id"], a["max.id"]) == (min(file_ids), max(file_ids))
    # The hidden files are not data; the table reads and skips by statistics.
    assert all(not Path(a["path"]).name.startswith(("_", ".")) for a in adds)
    scan = t.scan(filter=dl.col("id") == 299)  # only one file reaches 299
    assert len(scan.tasks()) == 1
    assert scan.to_pyarrow_table().column("id").to_pylist() == [299]


def test_partition_types_are_inferred_from_names(tmp_path: Path) -> None:
    path = tmp_path / "names"
    hive_directory(path, rows(40))
    dl.convert_to_deltalake(str(path), partition_by=["day", "k"])
    schema = dl.DeltaTable(str(path)).schema()
    assert schema.field("day").type == pa.date32()
    assert schema.field("k").type == pa.int64()
    got = ordered(deltalake.DeltaTable(str(path)).to_pyarrow_table(), ("id", "k"))
    assert got == [(i, i % 2) for i in range(40)]


def test_files_with_different_columns_merge(tmp_path: Path) -> None:
    path = tmp_path / "merge"
    path.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), path / "a.parquet")
    pq.write_table(pa.table({"id": [3], "extra": ["x"]}), path / "b.parquet")
    dl.convert_to_deltalake(str(path), collect_stats=False)
    t = dl.DeltaTable(str(path))
    assert t.schema().names == ["id", "extra"]
    assert ordered(t.to_pyarrow_table(), ("id", "extra"))[-1] == (3, "x")
    assert ordered(deltalake.DeltaTable(str(path)).to_pyarrow_table(), ("id", "extra")) == [
        (1, None),
        (2, None),
        (3, "x"),
    ]
    assert t.history()[0]["operationParameters"]["collectStats"] is False
    assert all(a["num_records"] is None for a in t.get_add_actions(flatten=True).to_pylist())


def test_conversion_refuses_what_it_cannot_convert(tmp_path: Path) -> None:
    hive = tmp_path / "hive"
    hive_directory(hive, rows(10))
    with pytest.raises(InvalidArgumentError, match="pass partition_by"):
        dl.convert_to_deltalake(str(hive))
    with pytest.raises(InvalidArgumentError, match="partitioned by"):
        dl.convert_to_deltalake(str(hive), partition_by=["k", "day"])
    with pytest.raises(InvalidArgumentError, match="not of type"):
        dl.convert_to_deltalake(str(hive), partition_by={"day": pa.int64(), "k": pa.int64()})
    assert not (hive / "_delta_log").exists()

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidArgumentError, match="no parquet files"):
        dl.convert_to_deltalake(str(empty))

    junk = tmp_path / "junk"
    junk.mkdir()
    pq.write_table(pa.table({"id": [1]}), junk / "a.parquet")
    (junk / "b.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(CorruptDataFileError, match=r"b\.parquet"):
        dl.convert_to_deltalake(str(junk))

    clash = tmp_path / "clash"
    clash.mkdir()
    pq.write_table(pa.table({"id": [1]}), clash / "a.parquet")
    pq.write_table(pa.table({"id": ["one"]}), clash / "b.parquet")
    with pytest.raises(InvalidArgumentError, match="does not fit"):
        dl.convert_to_deltalake(str(clash))
    assert not (clash / "_delta_log").exists()

    done = tmp_path / "done"
    dl.write_table(str(done), rows(3))
    with pytest.raises(InvalidArgumentError, match="already"):
        dl.convert_to_deltalake(str(done))
    assert dl.convert_to_deltalake(str(done), mode="ignore") == 0


def deltalake_table(path: Path) -> None:
    """Three versions written by deltalake."""
    for i in range(3):
        deltalake.write_deltalake(str(path), rows(50, start=i * 50), mode="append")


def test_a_shallow_clone_points_at_the_source_at_a_version(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "clone"
    deltalake_table(source)
    at_1 = dl.DeltaTable(str(source), version=1)
    clone = at_1.clone(str(target))
    assert clone.version() == 0
    expected = ordered(at_1.to_pyarrow_table(), ("id", "name"))
    assert len(expected) == 100
    assert ordered(clone.to_pyarrow_table(), ("id", "name")) == expected
    # (deltalake's pyarrow reader takes no absolute paths; its SQL engine does)
    assert sql_rows(target, ("id", "name")) == expected
    adds = clone.get_add_actions().to_pylist()
    assert all(a["path"].startswith("file://") for a in adds)
    assert not list(target.glob("*.parquet"))  # nothing copied
    params = clone.history()[0]["operationParameters"]
    assert params["sourceVersion"] == 1 and params["isShallow"] is True
    assert clone.metadata().id != at_1.metadata().id
    # The clone lives on by itself: appends to either do not reach the other.
    dl.write_table(str(target), rows(1, start=1000), mode="append")
    deltalake.write_deltalake(str(source), rows(1, start=2000), mode="append")
    assert dl.DeltaTable(str(target)).to_pyarrow_table().num_rows == 101
    assert dl.DeltaTable(str(source)).to_pyarrow_table().num_rows == 151


def dv_table(path: Path) -> dl.DeltaTable:
    """A table whose deletion vectors live in a DV file (too large to be inline)."""
    dl.write_table(str(path), rows(5000), configuration={"delta.enableDeletionVectors": "true"})
    t = dl.DeltaTable(str(path))
    t.delete("id % 3 = 0")
    storage = t.get_add_actions(flatten=True).column("deletion_vector.storage_type")
    assert storage.to_pylist() == ["u"]
    return t


def test_a_shallow_clone_keeps_deletion_vectors_by_absolute_path(tmp_path: Path) -> None:
    source = dv_table(tmp_path / "source")
    clone = source.clone(str(tmp_path / "clone"))
    add = clone.get_add_actions(flatten=True).to_pylist()[0]
    assert add["deletion_vector.storage_type"] == "p"
    assert add["deletion_vector.path_or_inline_dv"].startswith("file://")
    expected = ordered(source.to_pyarrow_table(), ("id", "name"))
    assert len(expected) == 3333
    assert ordered(clone.to_pyarrow_table(), ("id", "name")) == expected
    assert sql_rows(tmp_path / "clone", ("id", "name")) == expected


def test_a_deep_clone_copies_files_and_survives_the_source(tmp_path: Path) -> None:
    source_path, target = tmp_path / "source", tmp_path / "deep"
    source = dv_table(source_path)
    expected = ordered(source.to_pyarrow_table(), ("id", "name"))
    clone = source.clone(str(target), shallow=False)
    add = clone.get_add_actions(flatten=True).to_pylist()[0]
    assert add["deletion_vector.storage_type"] == "u" and not add["path"].startswith("file:")
    assert clone.history()[0]["operationParameters"]["isShallow"] is False
    shutil.rmtree(source_path)
    again = dl.DeltaTable(str(target))
    assert ordered(again.to_pyarrow_table(), ("id", "name")) == expected
    assert sql_rows(target, ("id", "name")) == expected


def test_a_clone_keeps_features_and_domains_and_refuses_an_existing_target(
    tmp_path: Path,
) -> None:
    source_path = tmp_path / "clustered"
    dl.write_table(
        str(source_path),
        rows(20),
        clustering_columns=["id"],
        configuration={"delta.enableRowTracking": "true"},
    )
    source = dl.DeltaTable(str(source_path))
    clone = source.clone(str(tmp_path / "c"), shallow=False, name="copy")
    assert clone.clustering_columns() == ["id"]
    assert clone.metadata().name == "copy"
    assert set(clone.protocol().writer_features or []) == set(
        source.protocol().writer_features or []
    )
    lineage = ("id", "_row_id")
    assert ordered(clone.to_pyarrow_table(with_row_tracking=True), lineage) == ordered(
        source.to_pyarrow_table(with_row_tracking=True), lineage
    )
    with pytest.raises(InvalidArgumentError, match="already exists"):
        source.clone(str(tmp_path / "c"))
    log = (tmp_path / "c" / "_delta_log" / f"{0:020}.json").read_text().splitlines()
    assert sum(1 for line in log if "commitInfo" in json.loads(line)) == 1
