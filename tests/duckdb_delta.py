"""DuckDB's ``delta`` extension (delta-kernel-rs) as a reader for the tests: loading the file the
``duckdb-extension-delta`` package ships, and comparing its rows with deltalog's.

Used by ``test_duckdb_reader.py`` (every table feature deltalog writes) and
``test_duckdb_disagreements.py`` (where DuckDB and deltalog disagree, adjudicated by the
protocol).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

import deltalog as dl
from deltalog.protocol.features import reader_features_of, writer_features_of

UTC = dt.timezone.utc


def extension_file() -> Path:
    """The delta extension the ``duckdb-extension-delta`` package ships for this DuckDB."""
    spec = importlib.util.find_spec("duckdb_extension_delta")
    assert spec is not None and spec.submodule_search_locations, "duckdb-extension-delta missing"
    root = Path(next(iter(spec.submodule_search_locations))) / "extensions"
    path = root / f"v{duckdb.__version__}" / "delta.duckdb_extension"
    assert path.is_file(), (
        f"no delta extension for DuckDB {duckdb.__version__} (the package has "
        f"{sorted(p.name for p in root.iterdir())}): pin duckdb to the extension's version"
    )
    return path


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the packaged extension loaded and UTC as its zone. ``LOAD`` of
    the file, never ``INSTALL`` (no download); unsigned extensions are allowed so that a locally
    built extension file loads too (the package's 1.5.5 build loads either way)."""
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute("LOAD '{}'".format(str(extension_file()).replace("'", "''")))
    con.execute("SET TimeZone = 'UTC'")
    return con


def normalise(value: Any) -> Any:
    """One spelling of a value for both readers: aware datetimes in UTC (DuckDB returns
    ``timestamp with time zone`` in the session's zone), containers recursively."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, tuple):  # a map entry
        return tuple(normalise(v) for v in value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    return value


def sort_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in one order (a multiset, compared as a list)."""
    return sorted(rows, key=lambda r: json.dumps(r, default=repr, sort_keys=True))


def as_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows as a sorted list of ``{column name: value}``."""
    return sort_rows([normalise(r) for r in table.to_pylist()])


def duck_table(con: duckdb.DuckDBPyConnection, path: Path, version: int | None = None) -> pa.Table:
    if version is None:
        return con.execute("SELECT * FROM delta_scan(?)", [str(path)]).to_arrow_table()
    query = "SELECT * FROM delta_scan(?, version := ?)"
    return con.execute(query, [str(path), version]).to_arrow_table()


def our_table(path: Path, version: int | None = None) -> pa.Table:
    return dl.DeltaTable(path, version=version).to_pyarrow_table()


def assert_same_rows(
    con: duckdb.DuckDBPyConnection, path: Path, version: int | None = None
) -> list[dict[str, Any]]:
    """DuckDB returns deltalog's rows, under the logical column names; returns the rows."""
    ours = our_table(path, version)
    theirs = duck_table(con, path, version)
    assert theirs.column_names == ours.column_names
    assert theirs.schema.types == ours.schema.types  # widened types, decimals, time zones
    rows = as_rows(ours)
    assert as_rows(theirs) == rows
    return rows


def ids_of(rows: list[dict[str, Any]]) -> list[int]:
    return sorted(r["id"] for r in rows)


def features_of(path: Path) -> set[str]:
    protocol = dl.DeltaTable(path).protocol()
    return set(reader_features_of(protocol)) | set(writer_features_of(protocol))


def dv_storage_types(path: Path) -> set[str]:
    """Storage types ("Deletion Vector Descriptor Schema") of the active files' DVs."""
    adds = dl.DeltaTable(path).get_add_actions(flatten=True)
    return {s for s in adds.column("deletion_vector.storage_type").to_pylist() if s is not None}


def drop_commits_through(path: Path, version: int) -> None:
    """Deletes commits 0..=version (as metadata cleanup does after a checkpoint at
    ``version``): both readers must then start from the checkpoint ("Checkpoints")."""
    for v in range(version + 1):
        (path / "_delta_log" / f"{v:020}.json").unlink()


def _comparable(t: pa.DataType) -> bool:
    """Types whose Python values order as SQL orders them (nested and binary left out)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
    )


def _holds(op: str, value: Any, pivot: Any) -> bool:
    """``value op pivot`` as SQL has it (``None`` is NULL: is NULL, or a comparison not true)."""
    if op == "IS NULL":
        return value is None
    if value is None:
        return False
    return bool(value >= pivot) if op == ">=" else bool(value <= pivot)


def assert_filters_agree(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """For every comparable column, ``col >= pivot`` and ``col <= pivot`` (its least, median and
    greatest values: a file's bounds set too tight hide rows at the extremes) and ``col IS NULL``
    through DuckDB (which prunes partitions and skips files by the statistics deltalog wrote,
    "Per-file Statistics") return the rows deltalog's unfiltered read has there, filtered here
    in Python. Returns how many predicates were checked."""
    ours = our_table(path)
    rows = [normalise(r) for r in ours.to_pylist()]
    checked = 0
    for field in ours.schema:
        if not _comparable(field.type):
            continue
        name = field.name
        values = sorted(r[name] for r in rows if r[name] is not None)
        pivots = sorted({values[0], values[len(values) // 2], values[-1]}) if values else []
        checks = [("IS NULL", None)] + [(op, p) for p in pivots for op in (">=", "<=")]
        column = '"{}"'.format(name.replace('"', '""'))
        for op, pivot in checks:
            where = f"{column} {op}" + ("" if pivot is None else " ?")
            params = [str(path)] + ([] if pivot is None else [pivot])
            query = f"SELECT * FROM delta_scan(?) WHERE {where}"
            theirs = as_rows(con.execute(query, params).to_arrow_table())
            want = sort_rows([r for r in rows if _holds(op, r[name], pivot)])
            assert theirs == want, f"{where} ({pivot!r})"
            checked += 1
    return checked
