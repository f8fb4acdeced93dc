"""Where DuckDB's delta extension (1.5.5, delta-kernel-rs inside) and deltalog disagree, and
what the protocol (spec 002) says. In each case DuckDB is wrong; the tests assert its exact wrong
answer, so they fail (and must be updated) when DuckDB is fixed.

1. Column-mapped partition columns. "Writer Requirements for Column Mapping": writers "Track
   partition values and column level statistics with the physical name of the column in the
   transaction log"; "Reader Requirements for Column Mapping": in `id` and `name` mode
   "Partition values ... must be resolved by their *physical names* for each `add` entry", and
   nothing ties a partition column to a position in the schema. deltalog writes and reads this
   way, as Delta Spark's golden tables do. DuckDB does not place the partition values of a
   column-mapped table by column when a partition column is not among the schema's first
   columns: that column reads NULL, and with two partition columns the first takes the other's
   value (as a string); the same layouts without column mapping read right.
2. Absolute paths spelled two ways (golden tables ``canonicalized-paths-*``): "Add File and
   Remove File": `path` "is a URI ... which needs to be decoded to get the data file path", so
   ``/x`` and ``file:/x`` (or ``file:///x``) are one file and, by "Action Reconciliation", the
   later `remove` removes the `add`: no file is active. DuckDB keeps the file and fails to open it.
3. Spark's legacy Parquet lists (golden table ``parquet-all-types-legacy-format``: ``repeated
   group bag { optional int32 array; }``, not ``list``/``element``): "Delta Data Type to Parquet
   Type Mappings" stores arrays and maps "either as `2-level` or `3-level` representation" as
   Parquet's documentation defines them, whose backward-compatibility rules read this layout as
   a list of ``array``. DuckDB fails with an internal error that invalidates its database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from conftest import CORPUS
from duckdb_delta import as_rows, connect, duck_table, our_table, sort_rows


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    c = connect()
    yield c
    c.close()


def _move_partition_to_null(column: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda row: {**row, column: None}


def _first_takes_second(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "part": None if row["n"] is None else str(row["n"]), "n": None}


# name -> (columns in schema order, partition columns, DuckDB 1.5.5's answer from the right row)
LAYOUTS: dict[str, tuple[list[str], list[str], Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "partition-first": (["part", "id", "v"], ["part"], lambda row: row),
    "partition-middle": (["id", "part", "v"], ["part"], _move_partition_to_null("part")),
    "partition-last": (["id", "v", "part"], ["part"], _move_partition_to_null("part")),
    "two-partitions-first-and-third": (
        ["part", "id", "n", "v"],
        ["part", "n"],
        _first_takes_second,
    ),
}
LAYOUT_ROWS = [
    {"part": "a b", "id": 1, "n": 10, "v": 0.5},
    {"part": "ü", "id": 2, "n": 20, "v": 1.5},
    {"part": None, "id": 3, "n": None, "v": 2.5},
    {"part": "a b", "id": 4, "n": 20, "v": None},
]
LAYOUT_TYPES = {"part": pa.string(), "id": pa.int64(), "n": pa.int64(), "v": pa.float64()}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("mode", ["none", "name", "id", "icebergCompatV2"])
def test_column_mapped_partition_columns_by_position(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, mode: str, layout: str
) -> None:
    columns, partitions, duckdb_answer = LAYOUTS[layout]
    want = sort_rows([{c: row[c] for c in columns} for row in LAYOUT_ROWS])
    data = pa.table({c: pa.array([r[c] for r in want], LAYOUT_TYPES[c]) for c in columns})
    path = tmp_path / "t"
    config = {"delta.columnMapping.mode": mode}
    if mode == "icebergCompatV2":  # name mapping, partition values in the data files too
        config = {"delta.columnMapping.mode": "name", "delta.enableIcebergCompatV2": "true"}
    dl.write_table(path, data, partition_by=partitions, configuration=config)
    t = dl.DeltaTable(path)
    fields = json.loads(t.metadata().schema_string)["fields"]
    physical = {
        f["name"]: f["metadata"].get("delta.columnMapping.physicalName", f["name"]) for f in fields
    }
    # deltalog follows the protocol: partition values keyed by physical name, and the data
    # files hold the other columns (with icebergCompatV2 all of them: "Writer Requirements for
    # IcebergCompatV2"), under their physical names.
    log = (path / "_delta_log" / f"{0:020}.json").read_text(encoding="utf-8").splitlines()
    adds = [a["add"] for a in map(json.loads, log) if "add" in a]
    assert adds and all(
        set(a["partitionValues"]) == {physical[p] for p in partitions} for a in adds
    )
    stored = pq.read_schema(path / unquote(adds[0]["path"]))
    in_files = [c for c in columns if mode == "icebergCompatV2" or c not in partitions]
    assert sorted(stored.names) == sorted(physical[c] for c in in_files)
    assert as_rows(our_table(path)) == want
    theirs = as_rows(duck_table(con, path))
    if mode == "none":
        assert theirs == want  # without column mapping DuckDB places every layout right
    else:
        assert theirs == sort_rows([duckdb_answer(row) for row in want])
        assert (theirs == want) == (layout == "partition-first")


@pytest.mark.parametrize(
    "root", ["data-reader-timestamp_ntz-name-mode", "data-reader-timestamp_ntz-id-mode"]
)
def test_golden_column_mapped_partition_column_last(
    con: duckdb.DuckDBPyConnection, root: str
) -> None:
    """Delta Spark's own tables (schema ``id, tsNtz, tsNtzPartition``, partitioned by the last
    column, partition values keyed by physical name): deltalog reads the expected rows, DuckDB
    1.5.5 reads ``tsNtzPartition`` as NULL (DuckDB is wrong: see the module docstring)."""
    table = CORPUS / root / "delta"
    want = as_rows(pq.read_table(CORPUS / root / "expected"))
    assert [r["tsNtzPartition"] for r in want].count(None) < len(want)
    commit = (table / "_delta_log" / f"{0:020}.json").read_text(encoding="utf-8").splitlines()
    meta = next(a["metaData"] for a in map(json.loads, commit) if "metaData" in a)
    last = json.loads(meta["schemaString"])["fields"][-1]
    assert meta["partitionColumns"] == [last["name"]] == ["tsNtzPartition"]
    assert as_rows(our_table(table)) == want
    theirs = as_rows(duck_table(con, table))
    assert theirs == sort_rows([{**r, "tsNtzPartition": None} for r in want])


@pytest.mark.parametrize(
    "root",
    [
        "canonicalized-paths-normal-a",
        "canonicalized-paths-normal-b",
        "canonicalized-paths-special-a",
        "canonicalized-paths-special-b",
    ],
)
def test_golden_absolute_paths_spelled_two_ways(con: duckdb.DuckDBPyConnection, root: str) -> None:
    """An ``add`` and a later ``remove`` of one absolute path, one spelled with ``file:``: no
    file is active at version 1 (the corpus's expectation; no data files exist)."""
    table = CORPUS / root / "delta"
    paths = []
    for version in (0, 1):
        commit = (table / "_delta_log" / f"{version:020}.json").read_text(encoding="utf-8")
        for action in map(json.loads, commit.splitlines()):
            paths += [unquote(a["path"]) for a in (action.get("add"), action.get("remove")) if a]
    added, removed = paths
    assert added != removed and removed.split(":", 1)[1].lstrip("/") == added.lstrip("/")
    t = dl.DeltaTable(table)
    assert t.version() == 1 and t.files() == [] and t.to_pyarrow_table().num_rows == 0
    with pytest.raises(duckdb.IOException, match=f'Cannot open file "{re.escape(added)}"'):
        duck_table(con, table)


def test_golden_legacy_parquet_lists() -> None:
    root = "parquet-all-types-legacy-format"
    want = as_rows(pq.read_table(CORPUS / root / "expected"))
    assert as_rows(our_table(CORPUS / root / "delta")) == want
    # Spark's legacy layout: `repeated group bag { optional int32 array; }`, not list/element.
    (data,) = (CORPUS / root / "delta").glob("*.parquet")
    assert "array_of_prims.bag.array" in [c.path for c in pq.ParquetFile(data).schema]
    own = connect()  # the error invalidates the database: not the shared connection
    try:
        with pytest.raises(duckdb.InternalException, match="Vector::Reference used on vector"):
            duck_table(own, CORPUS / root / "delta")
    finally:
        own.close()
