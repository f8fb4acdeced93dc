"""``DeltaTable.inspect``: metadata tables as ``pyarrow.Table``\\ s, pyiceberg's
``table.inspect`` for a Delta table.

- ``history()``: one row per commit still in the log (``commitInfo``, protocol "Commit
  Provenance Information"), newest first.
- ``versions()``: the snapshots: each version, its commit timestamp, the version it was read
  from, its operation and metrics.
- ``files()``: the active ``add`` actions of the loaded version with their statistics and
  deletion vectors ("Add File and Remove File", "Per-file Statistics").
- ``partitions()``: per partition, its files, live rows and bytes.
- ``checkpoints()``: the checkpoint files in ``_delta_log`` ("Checkpoints").
- ``deletion_vectors()``: the deletion vector descriptors of the active files ("Deletion
  Vector Descriptor Schema").
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from deltalog._lazy import lazy_module

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table.delta_table import DeltaTable
else:
    pa = lazy_module("pyarrow")

#: Checkpoint file names ("Checkpoints": classic, multi-part, UUID-named V2).
_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?(?:\.([0-9a-fA-F-]{36}))?\.(parquet|json)$"
)


def _texts(value: Any) -> dict[str, str] | None:
    """A commitInfo map (operationParameters, operationMetrics) as strings."""
    if not isinstance(value, dict):
        return None
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


class InspectTable:
    """Metadata tables of one loaded version (see the module docs)."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table

    def history(self, limit: int | None = None) -> pa.Table:
        """``version``, ``timestamp`` (the commit time time travel uses), ``operation``,
        ``operation_parameters``, ``operation_metrics``, ``read_version``,
        ``is_blind_append``, ``engine_info``, ``user_metadata`` (the commit's other fields as
        JSON text)."""
        known = {
            "version",
            "timestamp",
            "operation",
            "operationParameters",
            "operationMetrics",
            "readVersion",
            "isBlindAppend",
            "engineInfo",
        }
        rows = []
        for entry in self._table.history(limit):
            rest = {k: v for k, v in entry.items() if k not in known}
            rows.append(
                {
                    "version": entry["version"],
                    "timestamp": entry["timestamp"],
                    "operation": entry.get("operation"),
                    "operation_parameters": _texts(entry.get("operationParameters")),
                    "operation_metrics": _texts(entry.get("operationMetrics")),
                    "read_version": entry.get("readVersion"),
                    "is_blind_append": entry.get("isBlindAppend"),
                    "engine_info": entry.get("engineInfo"),
                    "user_metadata": json.dumps(rest, sort_keys=True) if rest else None,
                }
            )
        strings = pa.map_(pa.string(), pa.string())
        schema = pa.schema(
            [
                pa.field("version", pa.int64(), nullable=False),
                pa.field("timestamp", pa.timestamp("ms", tz="UTC")),
                pa.field("operation", pa.string()),
                pa.field("operation_parameters", strings),
                pa.field("operation_metrics", strings),
                pa.field("read_version", pa.int64()),
                pa.field("is_blind_append", pa.bool_()),
                pa.field("engine_info", pa.string()),
                pa.field("user_metadata", pa.string()),
            ]
        )
        return pa.Table.from_pylist(rows, schema=schema)

    def versions(self) -> pa.Table:
        """The snapshots (pyiceberg's ``snapshots()``): ``version``, ``timestamp``,
        ``parent_version`` (the version the commit read, null for the first), ``operation``
        and ``summary`` (its metrics), oldest first."""
        history = self.history()
        rows = history.to_pylist()[::-1]
        out = [
            {
                "version": r["version"],
                "timestamp": r["timestamp"],
                "parent_version": r["read_version"]
                if r["read_version"] is not None
                else (r["version"] - 1 if r["version"] > 0 else None),
                "operation": r["operation"],
                "summary": r["operation_metrics"],
            }
            for r in rows
        ]
        schema = pa.schema(
            [
                pa.field("version", pa.int64(), nullable=False),
                pa.field("timestamp", pa.timestamp("ms", tz="UTC")),
                pa.field("parent_version", pa.int64()),
                pa.field("operation", pa.string()),
                pa.field("summary", pa.map_(pa.string(), pa.string())),
            ]
        )
        return pa.Table.from_pylist(out, schema=schema)

    def files(self) -> pa.Table:
        """The active files: ``get_add_actions()``'s columns (path, size, modification time,
        partition values, statistics, deletion vector, row tracking, tags), then
        ``num_deleted_records`` (the deletion vector's cardinality, 0 without one) and
        ``num_live_records``."""
        adds = self._table.get_add_actions()
        dv = adds.column("deletion_vector").to_pylist()
        deleted = [0 if d is None or d["cardinality"] is None else d["cardinality"] for d in dv]
        records = adds.column("num_records").to_pylist()
        live = [None if n is None else n - d for n, d in zip(records, deleted, strict=True)]
        adds = adds.append_column("num_deleted_records", pa.array(deleted, pa.int64()))
        return adds.append_column("num_live_records", pa.array(live, pa.int64()))

    def partitions(self) -> pa.Table:
        """One row per partition: ``partition`` (logical column -> value text, "Partition
        Value Serialization"; empty for an unpartitioned table), ``file_count``, ``record_count``
        (live rows), ``deleted_record_count``, ``total_size_in_bytes`` and
        ``last_modified``."""
        from deltalog.table.interop.compat import logical_partition_names

        names = logical_partition_names(self._table)
        files = self.files().to_pylist()
        groups: dict[tuple[Any, ...], dict[str, Any]] = {}
        for f in files:
            values = [(names.get(k, k), v) for k, v in f["partition_values"] or []]
            key = tuple(values)
            group = groups.setdefault(
                key,
                {
                    "partition": list(values),
                    "file_count": 0,
                    "record_count": 0,
                    "deleted_record_count": 0,
                    "total_size_in_bytes": 0,
                    "last_modified": None,
                },
            )
            group["file_count"] += 1
            group["record_count"] += f["num_live_records"] or 0
            group["deleted_record_count"] += f["num_deleted_records"]
            group["total_size_in_bytes"] += f["size"] or 0
            when = f["modification_time"]
            if when is not None and (
                group["last_modified"] is None or when > group["last_modified"]
            ):
                group["last_modified"] = when
        schema = pa.schema(
            [
                pa.field("partition", pa.map_(pa.string(), pa.string())),
                pa.field("file_count", pa.int64()),
                pa.field("record_count", pa.int64()),
                pa.field("deleted_record_count", pa.int64()),
                pa.field("total_size_in_bytes", pa.int64()),
                pa.field("last_modified", pa.timestamp("ms", tz="UTC")),
            ]
        )
        return pa.Table.from_pylist(list(groups.values()), schema=schema)

    def deletion_vectors(self) -> pa.Table:
        """The deletion vectors of the active files: ``path`` (the data file),
        ``storage_type``, ``path_or_inline_dv``, ``offset``, ``size_in_bytes``,
        ``cardinality``, ``num_records`` and ``dv_file`` (the table-relative DV file of a
        ``u`` vector, null for inline ones)."""
        from deltalog.table.interop.deletion_vectors import relative_dv_path

        rows = []
        adds = self._table.get_add_actions()
        for path, records, dv in zip(
            adds.column("path").to_pylist(),
            adds.column("num_records").to_pylist(),
            adds.column("deletion_vector").to_pylist(),
            strict=True,
        ):
            if dv is None or dv["storage_type"] is None:
                continue
            rows.append(
                {
                    "path": path,
                    **dv,
                    "num_records": records,
                    "dv_file": relative_dv_path(dv),
                }
            )
        schema = pa.schema(
            [
                pa.field("path", pa.string(), nullable=False),
                pa.field("storage_type", pa.string()),
                pa.field("path_or_inline_dv", pa.string()),
                pa.field("offset", pa.int32()),
                pa.field("size_in_bytes", pa.int32()),
                pa.field("cardinality", pa.int64()),
                pa.field("num_records", pa.int64()),
                pa.field("dv_file", pa.string()),
            ]
        )
        return pa.Table.from_pylist(rows, schema=schema)

    def checkpoints(self) -> pa.Table:
        """The checkpoint files in ``_delta_log``: ``version``, ``path`` (relative to
        ``_delta_log``), ``kind`` (``classic``, ``multi-part`` or ``v2``), ``format``
        (``parquet`` / ``json``), ``part`` and ``parts`` (multi-part), ``size_in_bytes``,
        ``modification_time``, and ``is_last_checkpoint`` (the one ``_last_checkpoint``
        names), by version."""
        from deltalog import _native

        table = self._table
        listed = _list_log(table.table_uri, table._storage_options)
        last = _native.read_log_file(table.table_uri, "_last_checkpoint", table._storage_options)
        last_version = json.loads(last).get("version") if last else None
        rows = []
        for name, size, mtime in listed:
            match = _CHECKPOINT.match(name)
            if match is None:
                continue
            version = int(match.group(1))
            kind = "v2" if match.group(4) else "multi-part" if match.group(2) else "classic"
            rows.append(
                {
                    "version": version,
                    "path": name,
                    "kind": kind,
                    "format": match.group(5),
                    "part": int(match.group(2)) if match.group(2) else None,
                    "parts": int(match.group(3)) if match.group(3) else None,
                    "size_in_bytes": size,
                    "modification_time": mtime,
                    "is_last_checkpoint": version == last_version,
                }
            )
        rows.sort(key=lambda r: (r["version"], r["path"]))
        schema = pa.schema(
            [
                pa.field("version", pa.int64(), nullable=False),
                pa.field("path", pa.string(), nullable=False),
                pa.field("kind", pa.string()),
                pa.field("format", pa.string()),
                pa.field("part", pa.int64()),
                pa.field("parts", pa.int64()),
                pa.field("size_in_bytes", pa.int64()),
                pa.field("modification_time", pa.timestamp("ms", tz="UTC")),
                pa.field("is_last_checkpoint", pa.bool_()),
            ]
        )
        return pa.Table.from_pylist(rows, schema=schema)


def _list_log(uri: str, storage_options: dict[str, str] | None) -> list[tuple[str, int, int]]:
    """``(name, size, mtime ms)`` of the files directly in ``_delta_log``: listed locally,
    through pyarrow's file system for object stores (its credentials from the environment:
    ``storage_options`` are not pyarrow's)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        log = os.path.join(unquote(parsed.path) if parsed.scheme else uri, "_delta_log")
        out = []
        with os.scandir(log) as entries:
            for entry in entries:
                if entry.is_file():
                    st = entry.stat()
                    out.append((entry.name, st.st_size, int(st.st_mtime * 1000)))
        return out
    import pyarrow.fs as pafs

    del storage_options
    filesystem, path = pafs.FileSystem.from_uri(uri.rstrip("/") + "/_delta_log")
    infos = filesystem.get_file_info(pafs.FileSelector(path))
    return [
        (
            info.base_name,
            int(info.size or 0),
            int(info.mtime.timestamp() * 1000) if info.mtime else 0,
        )
        for info in infos
        if info.type == pafs.FileType.File
    ]
