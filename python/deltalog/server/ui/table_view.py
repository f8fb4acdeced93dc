"""A table for the pages: its columns, partitioning or clustering, properties, protocol and
unpublished commits (:func:`detail`), its history with the catalog principal of each version
(:func:`history`), and what changed in its schema, properties and protocol between two
versions (:func:`diff`).

Columns come from the ``metaData`` action's ``schemaString`` (spec "Schema Serialization
Format"), with what the field metadata says of each: its comment, column mapping id and
physical name ("Column Mapping"), generation expression ("Generated Columns"), identity
("Identity Columns") and default ("Default Columns").
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from deltalog.catalog.clients.rest import protocol as p
from deltalog.exceptions import VersionNotFoundError
from deltalog.server.lance.service import RestError

if TYPE_CHECKING:
    from deltalog.catalog.stores.records import TableRecord
    from deltalog.server.lance.service import CatalogService
    from deltalog.table.delta_table import DeltaTable

#: The most history entries one answer carries.
MAX_HISTORY = 1000
#: The deepest nesting of struct fields listed as columns of their own.
MAX_DEPTH = 8


def type_text(kind: Any) -> str:
    """A Delta schema type as Spark SQL writes it (``catalogString``: ``array<struct<a:int>>``,
    as Unity Catalog's ``type_text``); a type deltalog does not know is shown as it is."""
    from deltalog.catalog.clients.unity.columns import type_text as catalog_string
    from deltalog.exceptions import InvalidArgumentError

    try:
        return catalog_string(kind)
    except (InvalidArgumentError, KeyError, TypeError):
        return json.dumps(kind) if not isinstance(kind, str) else kind


def columns(schema_string: str | None) -> list[dict[str, Any]]:
    """The schema's fields, nested struct fields after their parent (``path``: the dotted
    names; ``depth``: the nesting)."""
    if not schema_string:
        return []
    schema = json.loads(schema_string)
    out: list[dict[str, Any]] = []

    def walk(fields: list[Any], prefix: list[str], depth: int) -> None:
        for field in fields:
            if not isinstance(field, dict):
                continue
            meta = field.get("metadata") or {}
            kind = field.get("type")
            identity = None
            if "delta.identity.start" in meta or "delta.identity.step" in meta:
                identity = {
                    "start": meta.get("delta.identity.start"),
                    "step": meta.get("delta.identity.step"),
                    "allow_explicit_insert": meta.get("delta.identity.allowExplicitInsert"),
                    "high_water_mark": meta.get("delta.identity.highWaterMark"),
                }
            path = [*prefix, str(field.get("name"))]
            out.append(
                {
                    "path": path,
                    "depth": depth,
                    "type": type_text(kind),
                    "nullable": bool(field.get("nullable", True)),
                    "comment": meta.get("comment"),
                    "column_id": meta.get("delta.columnMapping.id"),
                    "physical_name": meta.get("delta.columnMapping.physicalName"),
                    "generated": meta.get("delta.generationExpression"),
                    "identity": identity,
                    "default": meta.get("CURRENT_DEFAULT"),
                }
            )
            if isinstance(kind, dict) and kind.get("type") == "struct" and depth < MAX_DEPTH:
                walk(kind.get("fields", []), path, depth + 1)

    walk(schema.get("fields", []), [], 0)
    return out


def _state(table: DeltaTable) -> dict[str, Any]:
    reader, writer, reader_features, writer_features = table._raw.protocol()
    meta = table._raw.metadata()
    return {
        "protocol": {
            "min_reader_version": reader,
            "min_writer_version": writer,
            "reader_features": sorted(reader_features) if reader_features is not None else None,
            "writer_features": sorted(writer_features) if writer_features is not None else None,
        },
        "metadata": {
            "id": meta["id"],
            "name": meta["name"],
            "description": meta["description"],
            "partition_columns": list(meta["partition_columns"]),
            "configuration": dict(meta["configuration"]),
            "created_time": meta["created_time"],
            "schema_string": meta["schema_string"],
        },
    }


def detail(
    service: CatalogService, record: TableRecord, table: DeltaTable, name: list[str]
) -> dict[str, Any]:
    """Everything the table's page shows but its history and health."""
    state = _state(table)
    meta = state["metadata"]
    unpublished: list[dict[str, Any]] = []
    if record.managed:
        held = service.store.commits(record.id, None, None)
        unpublished = [
            {
                "version": c.version,
                "timestamp": c.timestamp,
                "inline": c.is_inline,
                "staged_path": c.path,
            }
            for c in held.commits
        ]
    return {
        "name": name,
        "location": record.location,
        "format": "delta",
        "catalog_managed": record.managed,
        "version": table.version(),
        "timestamp": table.timestamp(),
        "created_ms": record.created_ms,
        "created_by": record.created_by,
        "columns": columns(meta["schema_string"]),
        "partition_columns": meta["partition_columns"],
        "clustering_columns": table.clustering_columns(),
        "column_mapping": table.column_mapping_mode(),
        "description": meta["description"],
        "table_id": meta["id"],
        "properties": meta["configuration"],
        "catalog_properties": dict(record.properties or {}),
        "protocol": state["protocol"],
        "unpublished": unpublished,
    }


def history(
    service: CatalogService, record: TableRecord, table: DeltaTable, limit: int
) -> list[dict[str, Any]]:
    """The newest ``limit`` versions: the commitInfo's operation, parameters and metrics, the
    writer's own names (``engineInfo``, ``userName``), and the principal the catalog recorded
    as ratifying the version (catalog-managed tables; ``None`` where it recorded none)."""
    limit = max(1, min(limit, MAX_HISTORY))
    entries = table.history(limit)
    principals: dict[int, str | None] = {}
    if record.managed and entries:
        versions = [e["version"] for e in entries]
        for commit in service.store.commit_records(record.id, min(versions), max(versions)):
            principals[commit.version] = getattr(commit, "principal", None)
    out = []
    for e in entries:
        out.append(
            {
                "version": e["version"],
                "timestamp": e["timestamp"],
                "operation": e.get("operation"),
                "parameters": e.get("operationParameters") or {},
                "metrics": e.get("operationMetrics") or {},
                "engine": e.get("engineInfo"),
                "user": e.get("userName"),
                "principal": principals.get(e["version"]),
                "blind_append": e.get("isBlindAppend"),
                "txn_id": e.get("txnId"),
            }
        )
    return out


def _diff_maps(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key in sorted(set(old) | set(new)):
        if key not in new:
            out.append({"key": key, "change": "removed", "old": old[key], "new": None})
        elif key not in old:
            out.append({"key": key, "change": "added", "old": None, "new": new[key]})
        elif old[key] != new[key]:
            out.append({"key": key, "change": "changed", "old": old[key], "new": new[key]})
    return out


def _column_key(column: dict[str, Any]) -> str:
    return ".".join(column["path"])


def diff(
    service: CatalogService, record: TableRecord, name: list[str], old: int, new: int
) -> dict[str, Any]:
    """What changed from version ``old`` to version ``new``: columns (added, removed, or with
    another type, nullability, comment or generation), properties, partitioning and protocol.

    Raises:
        RestError: code 11 (404) for a version the table no longer (or never) has.
    """
    try:
        before = _state(service.open_table(record, old))
        after = _state(service.open_table(record, new))
    except VersionNotFoundError as e:
        raise RestError(p.TABLE_VERSION_NOT_FOUND, str(e)) from e
    fields = ("type", "nullable", "comment", "generated", "default", "physical_name")
    cols_old = {_column_key(c): c for c in columns(before["metadata"]["schema_string"])}
    cols_new = {_column_key(c): c for c in columns(after["metadata"]["schema_string"])}
    column_changes = _diff_maps(
        {k: {f: c[f] for f in fields} for k, c in cols_old.items()},
        {k: {f: c[f] for f in fields} for k, c in cols_new.items()},
    )
    for change in column_changes:
        # Only what changed of a changed column; an added or removed one by its type.
        if change["change"] == "changed":
            changed = [f for f in fields if change["old"][f] != change["new"][f]]
            change["old"] = {f: change["old"][f] for f in changed}
            change["new"] = {f: change["new"][f] for f in changed}
        for side in ("old", "new"):
            if change["change"] != "changed" and change[side] is not None:
                change[side] = {"type": change[side]["type"], "nullable": change[side]["nullable"]}
    b, a = before["metadata"], after["metadata"]
    other = _diff_maps(
        {
            "partition columns": b["partition_columns"],
            "description": b["description"],
            "name": b["name"],
            **{k: v for k, v in before["protocol"].items()},
        },
        {
            "partition columns": a["partition_columns"],
            "description": a["description"],
            "name": a["name"],
            **{k: v for k, v in after["protocol"].items()},
        },
    )
    return {
        "name": name,
        "from": old,
        "to": new,
        "columns": column_changes,
        "properties": _diff_maps(b["configuration"], a["configuration"]),
        "other": other,
    }
