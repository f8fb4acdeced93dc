"""``DeltaTable.to_pyarrow_dataset`` (issue #19): a version as a pyarrow dataset that engines
push filters into; checked on tables deltalake writes, against deltalake's own reading, with
DuckDB and pyarrow as the engines."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import deltalake
import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import deltalog as dl
from deltalog.exceptions import UnsupportedFeatureError


def data(n: int = 60) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "v": pa.array([i * 0.5 for i in range(n)]),
            "day": pa.array([dt.date(2026, 11, 1 + i % 3) for i in range(n)]),
            "tag": pa.array([None if i % 4 == 0 else f"t{i % 2}" for i in range(n)]),
        }
    )


def test_a_partitioned_table_as_a_dataset(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), data(), partition_by=["day", "tag"])
    deltalake.write_deltalake(str(path), data(6), mode="append")
    t = dl.DeltaTable(str(path))
    dataset = t.to_pyarrow_dataset()
    assert dataset.schema.names == ["id", "v", "day", "tag"]
    expected = deltalake.DeltaTable(str(path)).to_pyarrow_table().sort_by("id").to_pylist()
    assert dataset.to_table().sort_by("id").to_pylist() == expected
    # A filter on partition columns prunes whole files.
    wanted = (ds.field("day") == dt.date(2026, 11, 2)) & ds.field("tag").is_null()
    fragments = list(dataset.get_fragments(filter=wanted))
    assert 0 < len(fragments) < len(t.files())
    got = dataset.to_table(filter=wanted).sort_by("id").to_pylist()
    assert got == [r for r in expected if r["day"] == dt.date(2026, 11, 2) and r["tag"] is None]
    # DuckDB reads it as a table.
    (total,) = duckdb.sql("SELECT count(*), sum(id) FROM dataset WHERE v > 10").fetchall()
    assert total == (
        sum(1 for r in expected if r["v"] > 10),
        sum(r["id"] for r in expected if r["v"] > 10),
    )


def test_timestamp_and_numeric_partitions(tmp_path: Path) -> None:
    path = tmp_path / "ts"
    utc = dt.timezone.utc
    table = pa.table(
        {
            "id": pa.array(range(4), pa.int64()),
            "at": pa.array(
                [dt.datetime(2026, 11, 25, 8, i % 2, 0, 500 * i, tzinfo=utc) for i in range(4)],
                pa.timestamp("us", "UTC"),
            ),
            "n": pa.array([1, 2, 1, 2], pa.int32()),
        }
    )
    dl.write_table(str(path), table, partition_by=["at", "n"])
    dataset = dl.DeltaTable(str(path)).to_pyarrow_dataset()
    assert dataset.to_table().sort_by("id") == table
    first = ds.field("at") == pa.scalar(table.column("at")[0].as_py(), pa.timestamp("us", "UTC"))
    assert dataset.to_table(filter=first).column("id").to_pylist() == [0]


def test_files_by_absolute_path_are_read(tmp_path: Path) -> None:
    source = tmp_path / "source"
    dl.write_table(str(source), data(10))
    clone = dl.DeltaTable(str(source)).clone(str(tmp_path / "clone"))
    assert clone.to_pyarrow_dataset().to_table().num_rows == 10


def test_tables_a_dataset_would_misread_are_refused(tmp_path: Path) -> None:
    dv = tmp_path / "dv"
    dl.write_table(str(dv), data(), configuration={"delta.enableDeletionVectors": "true"})
    t = dl.DeltaTable(str(dv))
    t.delete("id < 5")
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors"):
        t.to_pyarrow_dataset()
    t.optimize.purge_deletion_vectors()
    assert t.to_pyarrow_dataset().to_table().num_rows == 55
    mapped = tmp_path / "mapped"
    dl.write_table(str(mapped), data(), configuration={"delta.columnMapping.mode": "name"})
    with pytest.raises(UnsupportedFeatureError, match="column mapping"):
        dl.DeltaTable(str(mapped)).to_pyarrow_dataset()
