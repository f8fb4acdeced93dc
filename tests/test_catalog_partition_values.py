"""Partition values with special characters in catalog-managed tables (issue #42, C).

An ``add`` action's ``path`` is a URI ("Add File and Remove File"): the Hive-escaped directory
``region=a b%2Fc`` is logged as ``region=a%20b%252Fc``. The catalog's check that every added
file exists decoded it one level too few, so a catalog-managed table refused every file under
a value holding ``%``, ``/``, a space, ``=`` or a non-ASCII letter, on create and on append,
while path tables took the same values; and a refused creation left its data files in the
warehouse. Every partition column type, on every catalog, read back and cross-checked with
independent readers: deltalake (the path table and the directory catalog's table) and DuckDB
(through the Unity Catalog routes).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl
from catalog_configs import Config, new_catalog

#: Values a partition directory must escape or encode: `%`, `/`, space, `=`, non-ASCII, the
#: escape sequences themselves, an empty string, null.
STRINGS = ["a b/c", "50%", "k=v", "Zürich", "", None, "%2F", "東京 1", "a:b#c?d", "x%25y"]
UTC = dt.timezone.utc

SCHEMA = pa.schema(
    {
        "id": pa.int64(),
        "s": pa.string(),
        "i": pa.int64(),
        "d": pa.date32(),
        "ts": pa.timestamp("us", tz="UTC"),
        "b": pa.bool_(),
        "dec": pa.decimal128(10, 2),
        "f": pa.float64(),
        "ntz": pa.timestamp("us"),
        "bin": pa.binary(),
    }
)
PARTITIONS = ["s", "i", "d", "ts", "b", "dec", "f", "ntz", "bin"]


def data(start: int, stop: int) -> pa.Table:
    n = len(STRINGS)
    rows = range(start, stop)
    return pa.table(
        {
            "id": [r for r in rows],
            "s": [STRINGS[r % n] for r in rows],
            "i": [None if r % 7 == 3 else (-1) ** r * (r * 2**33 + r) for r in rows],
            "d": [None if r % 5 == 4 else dt.date(1969 + r, 2, 28) for r in rows],
            "ts": [
                None if r % 6 == 5 else dt.datetime(2020, 1, 1, 8, 9, 10, r * 1001, tzinfo=UTC)
                for r in rows
            ],
            "b": [None if r % 4 == 2 else r % 2 == 0 for r in rows],
            # Not negative: deltalake 1.6.6 reads the partition value -1.15 as "-1.-15".
            "dec": [None if r % 8 == 6 else decimal.Decimal(r * 37) / 100 for r in rows],
            "f": [
                None if r % 9 == 7 else (-1.5) ** (r % 20) * 10.0 ** ((r % 20) * 15 - 150)
                for r in rows
            ],
            "ntz": [
                None if r % 6 == 1 else dt.datetime(1999, 12, 31, 23, 59, r % 60, r) for r in rows
            ],
            "bin": [
                None if r % 5 == 0 else (STRINGS[r % len(STRINGS)] or "").encode() for r in rows
            ],
        },
        schema=SCHEMA,
    )


def sorted_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    table = table.select(SCHEMA.names).cast(SCHEMA)
    return sorted(zip(*(table.column(c).to_pylist() for c in SCHEMA.names), strict=True))


@pytest.fixture(params=["dir", "sqlite", "postgresql", "rest", "unity"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Config]:
    with new_catalog(request.param, request, tmp_path) as config:
        yield config


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Any, ...]]:
    """What a path table holds after the same create and append, read by deltalog and by
    deltalake (which agree)."""
    path = str(tmp_path_factory.mktemp("path") / "t")
    dl.write_table(path, data(0, 10), partition_by=PARTITIONS)
    dl.write_table(path, data(10, 20), mode="append")
    ours = sorted_rows(dl.DeltaTable(path).to_pyarrow_table())
    assert sorted_rows(deltalake.DeltaTable(path).to_pyarrow_table()) == ours
    assert len(ours) == 20
    return ours


def test_special_partition_values(
    config: Config, expected: list[tuple[Any, ...]], tmp_path: Path
) -> None:
    """Created and appended to through the catalog, the table holds what the path table
    holds; the directory catalog's (a path table) also reads the same in deltalake, and the
    Unity Catalog table in DuckDB."""
    cat = dl.connect_catalog(config)
    cat.write_table("t", data(0, 10), partition_by=PARTITIONS)
    assert cat.write_table("t", data(10, 20), mode="append") == 1
    t = cat.load_table("t")
    assert sorted_rows(t.to_pyarrow_table()) == expected
    # One file per row, each under the directories of its nine values.
    assert len(t.files()) == 20
    if config["type"] == "dir":
        assert sorted_rows(deltalake.DeltaTable(t.table_uri).to_pyarrow_table()) == expected
    if config["type"] == "unity":
        from unity_helpers import duckdb_attached

        # DuckDB's delta extension has no timestamp_ntz (nor attaches a schema holding one):
        # a table of the other columns, alone in its schema.
        cat.drop_table("t")
        names = [n for n in SCHEMA.names if n != "ntz"]
        cat.write_table("k", data(0, 20).drop_columns(["ntz"]), partition_by=PARTITIONS[:-2])
        ours = cat.load_table("k").to_pyarrow_table()
        con = duckdb_attached(config["uri"], "main", "default")
        read = con.execute(f"SELECT {', '.join(names)} FROM uc.default.k").fetch_arrow_table()

        def listed(table: pa.Table) -> list[tuple[Any, ...]]:
            return sorted(zip(*(table.column(n).to_pylist() for n in names), strict=True))

        assert listed(read) == listed(ours)
        assert len(listed(ours)) == 20


def test_a_refused_creation_leaves_no_files(config: Config, tmp_path: Path) -> None:
    """A creation the catalog refuses deletes the files it wrote: another creator took the name
    while this one was writing (the winner's table untouched), or (Unity Catalog, whose
    staging table has one creator) version 0 was written through a linked ``_delta_log``."""
    if config["type"] == "dir":
        pytest.skip("no catalog ratifies a directory catalog's tables")
    cat = dl.connect_catalog(config)
    if config["type"] == "unity":
        location, client = cat.new_table_target("t")
        outside = tmp_path / "outside"
        outside.mkdir()
        (Path(location) / "_delta_log").parent.mkdir(parents=True)
        (Path(location) / "_delta_log").symlink_to(outside)
        with pytest.raises(dl.InvalidArgumentError, match="symbolic link"):
            dl.write_table(
                location,
                data(0, 10),
                partition_by=PARTITIONS,
                catalog_client=client,
                storage_options=client.storage_options,
            )
        assert not list(Path(location).rglob("*.parquet"))
        assert not list(outside.rglob("*.json"))
        return
    other = dl.connect_catalog(config)

    def batches() -> Iterator[pa.RecordBatch]:
        yield from data(0, 5).to_batches()
        # Meanwhile, another writer creates the table.
        other.write_table("t", data(100, 101), partition_by=PARTITIONS)
        yield from data(5, 10).to_batches()

    reader = pa.RecordBatchReader.from_batches(SCHEMA, batches())
    with pytest.raises(dl.CommitConflictError):
        cat.write_table("t", reader, partition_by=PARTITIONS)
    winner = other.load_table("t")
    assert sorted(winner.to_pyarrow_table().column("id").to_pylist()) == [100]
    root = Path(winner.table_uri.removeprefix("file://"))
    assert len(list(root.rglob("*.parquet"))) == 1  # the winner's; none of the loser's
    assert not list(root.glob("_delta_log/_staged_commits/*"))
