"""A Delta table's schema in Unity Catalog's two forms, and back:

* the UC API's ``columns`` (``unitycatalog-api-2026-08.yaml``, ``ColumnInfo``): one entry per
  top-level field with ``type_text`` (the SQL / catalog-string type, e.g. ``bigint``,
  ``decimal(10,2)``, ``array<struct<a:int>>``), ``type_name`` (``ColumnTypeName``),
  ``type_json`` (the field as Delta's schema serialises it: "Schema Serialization Format"),
  ``position``, ``nullable``, ``type_precision`` / ``type_scale`` for decimals, ``comment`` and
  ``partition_index``;
* the Delta API's ``DeltaStructType`` (``unitycatalog-delta-api-2026-08.yaml``): Delta's
  schema JSON with kebab-case keys for arrays and maps (``element-type``, ``contains-null``,
  ``key-type``, ``value-type``, ``value-contains-null``).

Delta's own schema (``schemaString``) is the source of both; :func:`delta_schema` turns either
back into it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from deltalog.exceptions import InvalidArgumentError

#: Delta primitive type -> (UC ``type_text``, UC ``type_name``).
_PRIMITIVES = {
    "string": ("string", "STRING"),
    "long": ("bigint", "LONG"),
    "integer": ("int", "INT"),
    "short": ("smallint", "SHORT"),
    "byte": ("tinyint", "BYTE"),
    "float": ("float", "FLOAT"),
    "double": ("double", "DOUBLE"),
    "boolean": ("boolean", "BOOLEAN"),
    "binary": ("binary", "BINARY"),
    "date": ("date", "DATE"),
    "timestamp": ("timestamp", "TIMESTAMP"),
    "timestamp_ntz": ("timestamp_ntz", "TIMESTAMP_NTZ"),
    "variant": ("variant", "VARIANT"),
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")

#: Delta schema keys -> the Delta API's kebab-case keys.
_KEBAB = {
    "elementType": "element-type",
    "containsNull": "contains-null",
    "keyType": "key-type",
    "valueType": "value-type",
    "valueContainsNull": "value-contains-null",
}
_CAMEL = {v: k for k, v in _KEBAB.items()}


def type_text(t: Any) -> str:
    """The SQL (catalog string) text of a Delta type, as Spark's ``catalogString`` writes it."""
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t][0]
        if _DECIMAL.fullmatch(t):
            return t.replace(" ", "")
        raise InvalidArgumentError(f"not a Delta type: {t!r}")
    if not isinstance(t, dict):
        raise InvalidArgumentError(f"not a Delta type: {t!r}")
    kind = t.get("type")
    if kind == "array":
        return f"array<{type_text(t['elementType'])}>"
    if kind == "map":
        return f"map<{type_text(t['keyType'])},{type_text(t['valueType'])}>"
    if kind == "struct":
        return (
            "struct<"
            + ",".join(f"{f['name']}:{type_text(f['type'])}" for f in t.get("fields", []))
            + ">"
        )
    raise InvalidArgumentError(f"not a Delta type: {t!r}")


def type_name(t: Any) -> str:
    """UC's ``ColumnTypeName`` of a Delta type."""
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t][1]
        if _DECIMAL.fullmatch(t):
            return "DECIMAL"
    elif isinstance(t, dict) and t.get("type") in ("array", "map", "struct"):
        return str(t["type"]).upper()
    raise InvalidArgumentError(f"not a Delta type: {t!r}")


def column_infos(schema: dict[str, Any], partition_columns: list[str]) -> list[dict[str, Any]]:
    """The UC ``ColumnInfo`` entries (as JSON objects) of a Delta schema (a ``struct``)."""
    columns = []
    for position, field in enumerate(schema.get("fields", [])):
        t = field["type"]
        info: dict[str, Any] = {
            "name": field["name"],
            "type_text": type_text(t),
            "type_name": type_name(t),
            "type_json": json.dumps(field, separators=(",", ":")),
            "position": position,
            "nullable": bool(field.get("nullable", True)),
        }
        decimal = _DECIMAL.fullmatch(t) if isinstance(t, str) else None
        if decimal:
            info["type_precision"] = int(decimal.group(1))
            info["type_scale"] = int(decimal.group(2))
        else:
            info["type_precision"] = 0
            info["type_scale"] = 0
        comment = (field.get("metadata") or {}).get("comment")
        if isinstance(comment, str):
            info["comment"] = comment
        if field["name"] in partition_columns:
            info["partition_index"] = partition_columns.index(field["name"])
        columns.append(info)
    return columns


def to_delta_api(t: Any) -> Any:
    """A Delta type (a schema is a ``struct``) in the Delta API's form (``DeltaDataType``)."""
    if isinstance(t, dict):
        out: dict[str, Any] = {}
        node: dict[str, Any] = t
        for key, value in node.items():
            if key in ("elementType", "keyType", "valueType"):
                out[_KEBAB[key]] = to_delta_api(value)
            elif key == "fields":
                out["fields"] = [
                    {
                        "name": f["name"],
                        "type": to_delta_api(f["type"]),
                        "nullable": bool(f.get("nullable", True)),
                        "metadata": dict(f.get("metadata") or {}),
                    }
                    for f in value
                ]
            else:
                out[_KEBAB.get(key, key)] = value
        return out
    return t


def from_delta_api(t: Any) -> Any:
    """A Delta API ``DeltaDataType`` (JSON) as Delta's schema serialises it."""
    if isinstance(t, dict):
        out: dict[str, Any] = {}
        node: dict[str, Any] = t
        for key, value in node.items():
            if key in ("element-type", "key-type", "value-type"):
                out[_CAMEL[key]] = from_delta_api(value)
            elif key == "fields":
                out["fields"] = [
                    {
                        "name": f["name"],
                        "type": from_delta_api(f["type"]),
                        "nullable": bool(f.get("nullable", True)),
                        "metadata": dict(f.get("metadata") or {}),
                    }
                    for f in value
                ]
            else:
                out[_CAMEL.get(key, key)] = value
        return out
    return t


def delta_schema_from_columns(columns: list[dict[str, Any]]) -> dict[str, Any]:
    """A Delta schema (``struct``) from UC ``ColumnInfo`` entries, by their ``type_json`` (the
    field as Delta serialises it), in ``position`` order.

    Raises:
        InvalidArgumentError: a column without a readable ``type_json``.
    """
    ordered = sorted(columns, key=lambda c: c.get("position") or 0)
    fields = []
    for c in ordered:
        try:
            field = json.loads(c["type_json"])
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidArgumentError(
                f"column {c.get('name')!r} has no readable type_json: {e}"
            ) from e
        if not isinstance(field, dict) or "type" not in field:
            raise InvalidArgumentError(f"column {c.get('name')!r}: type_json is not a field")
        field.setdefault("name", c.get("name"))
        field.setdefault("nullable", c.get("nullable", True))
        field.setdefault("metadata", {})
        fields.append(field)
    return {"type": "struct", "fields": fields}
