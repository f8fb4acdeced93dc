"""What "deltalog reads exactly what Delta Spark reads" means, checked field by field.

Rows are compared as multisets under the logical column names, values normalised the same way
the DuckDB checks do (``duckdb_delta.as_rows``); types are compared after the spellings that
mean the same Arrow type are made one (a UTC zone's names, list and map children's names,
large and small offsets). History is compared on what the protocol fixes: each version, its
commit timestamp (the in-commit timestamp, or the commit file's modification time: "Commit
Provenance Information" and "In-Commit Timestamps") and the operation its commitInfo names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

import deltalog as dl
from duckdb_delta import as_rows

from .client import DeltaSpark, DeltaSparkError

UTC_NAMES = {"UTC", "Etc/UTC", "+00:00", "Z", "GMT"}


def type_name(t: pa.DataType) -> str:
    """One spelling per Arrow type as both engines hand it over."""
    if pa.types.is_timestamp(t):
        tz = "UTC" if t.tz in UTC_NAMES else t.tz
        return f"timestamp[{t.unit}, {tz}]"
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_map(t):
        return f"map<{type_name(t.key_type)}, {type_name(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{type_name(t.value_type)}>"
    if pa.types.is_struct(t):
        inner = ", ".join(f"{f.name}: {type_name(f.type)}" for f in t)
        return f"struct<{inner}>"
    return str(t)


def assert_same_rows(ours: pa.Table, theirs: pa.Table) -> list[dict[str, Any]]:
    """Same column names in the same order, same types, same rows; returns the rows."""
    assert theirs.column_names == ours.column_names
    assert [type_name(t) for t in theirs.schema.types] == [type_name(t) for t in ours.schema.types]
    rows = as_rows(ours)
    assert as_rows(theirs) == rows
    return rows


def our_history(path: Path) -> list[dict[str, Any]]:
    entries = dl.DeltaTable(path).history()
    return sorted(
        ({"version": e["version"], "timestamp": e["timestamp"], "operation": e.get("operation")}
         for e in entries),
        key=lambda e: e["version"],
    )  # fmt: skip


def assert_same_history(engine: DeltaSpark, path: Path) -> list[dict[str, Any]]:
    ours = our_history(path)
    assert engine.history(path) == ours
    return ours


def assert_same_protocol(engine: DeltaSpark, path: Path) -> dict[str, Any]:
    """DESCRIBE DETAIL's protocol versions and features are deltalog's; for a table-features
    protocol (writer 7) the features listed are the union of the reader and writer features
    ("Table Features")."""
    detail = engine.detail(path)
    p = dl.DeltaTable(path).protocol()
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (
        p.min_reader_version,
        p.min_writer_version,
    )
    if p.min_writer_version == 7:
        ours = set(p.reader_features or []) | set(p.writer_features or [])
        assert set(detail["tableFeatures"]) == ours
    return detail


def assert_same_version(engine: DeltaSpark, path: Path, version: int | None = None) -> None:
    """Both engines read ``version`` alike, or both find a data file missing (a version whose
    files VACUUM deleted: "Data Files" of older versions are not kept)."""
    try:
        theirs = engine.read(path, version)
    except DeltaSparkError as e:
        if "FILE_NOT_EXIST" not in e.message and "FileNotFoundException" not in e.message:
            raise
        try:
            dl.DeltaTable(path, version=version).to_pyarrow_table()
        except dl.DataFileNotFoundError:
            return
        raise AssertionError(f"deltalog read version {version}; Delta Spark: {e}") from e
    assert_same_rows(dl.DeltaTable(path, version=version).to_pyarrow_table(), theirs)


def assert_same_changes(engine: DeltaSpark, path: Path, start: int, end: int) -> None:
    """The change data feed from ``start`` to ``end``: the same change rows ("Change Data
    Files", "Reader Requirements for Change Data Feed"), timestamps aside (compared by
    version)."""
    ours = dl.DeltaTable(path).load_cdf(starting_version=start, ending_version=end).read_all()
    theirs = engine.cdf(path, start, end)
    drop = [c for c in ("_commit_timestamp",) if c in ours.column_names]
    ours, theirs = ours.drop_columns(drop), theirs.drop_columns(drop)
    assert sorted(theirs.column_names) == sorted(ours.column_names)
    assert as_rows(theirs.select(ours.column_names)) == as_rows(ours)
