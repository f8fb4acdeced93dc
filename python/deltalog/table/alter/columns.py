"""Column changes of ALTER TABLE (:mod:`deltalog.table.alter.alterer`): ADD, RENAME and DROP
COLUMNS,
column metadata, DROP NOT NULL, and ALTER COLUMN ... TYPE.

Renaming and dropping a column need "Column Mapping" (the files keep the physical names, so
nothing is rewritten); a type change is upstream Delta's "Type Widening" ("Supported Type
Changes", "Type Change Metadata").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._lazy import lazy_module
from deltalog.exceptions import InvalidArgumentError
from deltalog.protocol import features
from deltalog.table.alter.commit import _CONSTRAINT_PREFIX, AlterCommitter

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.write.writer import CommitProperties
else:
    pa = lazy_module("pyarrow")


class ColumnAlterer(AlterCommitter):
    """The column changes of :class:`deltalog.table.alter.alterer.TableAlterer`."""

    # -- helpers -------------------------------------------------------------------------

    def _field(self, schema: dict[str, Any], path: str) -> tuple[list[dict[str, Any]], int]:
        """The struct field list holding the column ``path`` (dotted for nested struct fields,
        case-insensitive) and its index there."""
        fields: list[dict[str, Any]] = schema["fields"]
        parts = _split_path(path)
        for depth, part in enumerate(parts):
            index = next(
                (i for i, f in enumerate(fields) if f["name"] == part),
                next((i for i, f in enumerate(fields) if f["name"].lower() == part.lower()), None),
            )
            if index is None:
                raise InvalidArgumentError(f"the table has no column {path!r}")
            if depth == len(parts) - 1:
                return fields, index
            child = fields[index]["type"]
            if not (isinstance(child, dict) and child.get("type") == "struct"):
                raise InvalidArgumentError(f"{'.'.join(parts[: depth + 1])!r} is not a struct")
            fields = child["fields"]
        raise InvalidArgumentError("a column path cannot be empty")

    def _require_column_mapping(self, what: str) -> None:
        if self._table.column_mapping_mode() == "none":
            raise InvalidArgumentError(
                f'{what} needs column mapping (spec "Column Mapping": files keep the old '
                "physical names); enable it first with "
                'alter.set_properties({"delta.columnMapping.mode": "name"})'
            )

    def _check_unreferenced(self, names: Iterable[str], what: str) -> None:
        """Refuses when a CHECK constraint or a generation expression names one of ``names``
        (Delta Spark refuses too: the expression would name a column that is gone)."""
        config = self._table.metadata().configuration
        texts = [v for k, v in config.items() if k.startswith(_CONSTRAINT_PREFIX)]
        texts += _generation_expressions(self._schema()["fields"])
        for name in names:
            pattern = re.compile(rf"(?<![\w.`])`?{re.escape(name)}`?(?![\w`])", re.IGNORECASE)
            for text in texts:
                if pattern.search(text):
                    raise InvalidArgumentError(
                        f"cannot {what} column {name!r}: the expression {text!r} uses it "
                        "(drop the constraint or generated column first)"
                    )

    # -- operations ----------------------------------------------------------------------

    def rename_column(
        self, column: str, new_name: str, commit_properties: CommitProperties | None = None
    ) -> int:
        """ALTER TABLE ... RENAME COLUMN: ``column`` (dotted for a nested struct field) takes
        the name ``new_name``. Needs column mapping: the files keep the physical name, so
        nothing is rewritten. A partition column is renamed in the partitioning too. Refused
        when a CHECK constraint or generated column uses the column, or the name is taken."""
        self._require_column_mapping("renaming a column")
        if not new_name or "." in new_name:
            raise InvalidArgumentError(f"{new_name!r} is not a column name (no dots, not empty)")
        schema = self._schema()
        fields, index = self._field(schema, column)
        old = fields[index]["name"]
        if any(f["name"].lower() == new_name.lower() for i, f in enumerate(fields) if i != index):
            raise InvalidArgumentError(f"the table already has a column {new_name!r} there")
        self._check_unreferenced([old], "rename")
        fields[index]["name"] = new_name
        partitions = list(self._table.metadata().partition_columns)
        top = len(_split_path(column)) == 1
        if top:
            partitions = [new_name if p == old else p for p in partitions]
        return self._commit_schema(
            "RENAME COLUMN",
            {"oldColumnPath": column, "newColumnPath": new_name},
            schema,
            commit_properties,
            partitionColumns=partitions,
        )

    def drop_columns(
        self, columns: str | Iterable[str], commit_properties: CommitProperties | None = None
    ) -> int:
        """ALTER TABLE ... DROP COLUMNS: the columns (dotted for nested struct fields) leave the
        schema. Needs column mapping: the data stays in the files, unread, until they are
        rewritten. Partition columns, clustering columns, the last column and columns a CHECK
        constraint or generated column uses cannot be dropped."""
        self._require_column_mapping("dropping a column")
        names = [columns] if isinstance(columns, str) else list(columns)
        if not names:
            raise InvalidArgumentError("name at least one column to drop")
        schema = self._schema()
        partitions = {p.lower() for p in self._table.metadata().partition_columns}
        clustering = {c.lower() for c in self._table._clustering_columns()}
        dropped = []
        for name in names:
            fields, index = self._field(schema, name)
            real = fields[index]["name"]
            if len(_split_path(name)) == 1 and real.lower() in partitions:
                raise InvalidArgumentError(f"cannot drop partition column {real!r}")
            if len(_split_path(name)) == 1 and real.lower() in clustering:
                raise InvalidArgumentError(
                    f"cannot drop clustering column {real!r} (change the clustering first)"
                )
            if len(fields) == 1:
                raise InvalidArgumentError(
                    f"cannot drop {name!r}: a table (or struct) needs at least one column"
                )
            dropped.append(real)
            del fields[index]
        self._check_unreferenced(dropped, "drop")
        return self._commit_schema(
            "DROP COLUMNS", {"columns": json.dumps(names)}, schema, commit_properties
        )

    def set_column_metadata(
        self,
        column: str,
        metadata: Mapping[str, Any],
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int:
        """Merges ``metadata`` into the column's field metadata (``comment`` and other user
        keys; deltalake's ``set_column_metadata``). Keys Delta itself owns (column mapping,
        identity, generation expressions, invariants, type changes) are refused."""
        self._hooks(post_commithook_properties)
        reserved = [k for k in metadata if _reserved_field_key(k)]
        if reserved:
            raise InvalidArgumentError(
                f"field metadata keys {reserved} belong to Delta itself and cannot be set"
            )
        schema = self._schema()
        fields, index = self._field(schema, column)
        meta = dict(fields[index].get("metadata") or {})
        meta.update(metadata)
        fields[index]["metadata"] = meta
        return self._commit_schema("CHANGE COLUMN", {"column": column}, schema, commit_properties)

    def drop_not_null(
        self,
        column: str,
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int:
        """ALTER TABLE ... ALTER COLUMN ... DROP NOT NULL: the column accepts nulls."""
        self._hooks(post_commithook_properties)
        schema = self._schema()
        fields, index = self._field(schema, column)
        if fields[index].get("nullable", True):
            raise InvalidArgumentError(f"column {column!r} accepts nulls already")
        fields[index]["nullable"] = True
        return self._commit_schema(
            "CHANGE COLUMN", {"column": column, "nullable": True}, schema, commit_properties
        )

    def drop_column_not_null(
        self,
        column_name: str,
        commit_properties: CommitProperties | None = None,
        post_commithook_properties: Any = None,
    ) -> int:
        """deltalake's name of :meth:`drop_not_null`."""
        return self.drop_not_null(
            column_name, commit_properties, post_commithook_properties=post_commithook_properties
        )

    def change_column_type(
        self,
        column: str,
        new_type: str | pa.DataType,
        commit_properties: CommitProperties | None = None,
    ) -> int:
        """ALTER TABLE ... ALTER COLUMN ... TYPE: widens the type of ``column`` without rewriting
        any file (the ``typeWidening`` feature; upstream Delta protocol, "Type Widening").

        ``column`` is dotted for a nested struct field; ``element``, ``key`` and ``value`` step
        into an array's elements and a map's keys and values (``tags.element``, ``m.value``).
        ``new_type`` is a Delta type name (``"long"``, ``"decimal(12,3)"``) or a pyarrow type.
        The widenings are Delta 4.0's: ``byte`` → ``short`` → ``integer`` → ``long``; ``float``
        → ``double``; ``byte``/``short``/``integer`` → ``double``; any integer → a decimal with
        at least 10 (``long``: 20) integer digits; ``decimal(p, s)`` → ``decimal(p + k1, s + k2)``
        with ``k1 >= k2 >= 0``; ``date`` → ``timestamp_ntz``.

        The table property ``delta.enableTypeWidening`` must be ``true`` (as in Delta Spark). The
        change is recorded in the field's ``delta.typeChanges`` metadata (``fromType``,
        ``toType``, and ``fieldPath`` inside arrays and maps), and files written before it are
        read as the wider type. Refused for identity and generated columns, columns a CHECK
        constraint or generation expression uses, and ``date`` partition columns (their stored
        values are not timestamps). Returns the version.
        """
        config = self._table.metadata().configuration
        if not features._is_true(config.get("delta.enableTypeWidening")):
            raise InvalidArgumentError(
                "changing a column's type needs type widening: set the table property "
                "delta.enableTypeWidening to true first "
                '(alter.set_properties({"delta.enableTypeWidening": "true"}))'
            )
        to_type = _delta_type_name(new_type)
        schema = self._schema()
        field, steps, from_type = _type_target(schema, column)
        if not isinstance(from_type, str):
            raise InvalidArgumentError(
                f"{column!r} is of type {from_type.get('type')}: only the types of primitive "
                "columns widen (name the nested field, element, key or value)"
            )
        if from_type == to_type:
            raise InvalidArgumentError(f"column {column!r} is already of type {to_type}")
        if not _widening_allowed(from_type, to_type):
            raise InvalidArgumentError(
                f"cannot change column {column!r} from {from_type} to {to_type}: not a type "
                'widening Delta allows (upstream Delta protocol, "Supported Type Changes")'
            )
        meta = field.setdefault("metadata", {})
        if any(k.startswith("delta.identity.") for k in meta):
            raise InvalidArgumentError(f"cannot change the type of identity column {column!r}")
        if meta.get("delta.generationExpression"):
            raise InvalidArgumentError(f"cannot change the type of generated column {column!r}")
        top = len(_split_path(column)) == 1
        partitions = {p.lower() for p in self._table.metadata().partition_columns}
        if top and field["name"].lower() in partitions and from_type == "date":
            raise InvalidArgumentError(
                f"cannot change partition column {column!r} from date to {to_type}: its "
                "partition values are dates, not timestamps"
            )
        self._check_unreferenced([field["name"]], "change the type of")
        # "Type Change Metadata": the change is appended (oldest first) to the metadata of the
        # nearest struct field, with the path from it to an array element or map key/value.
        change: dict[str, Any] = {"toType": to_type, "fromType": from_type}
        if steps:
            change["fieldPath"] = ".".join(steps)
        history = meta.get("delta.typeChanges") or []
        if isinstance(history, str):  # some writers store the array as a JSON string
            history = json.loads(history)
        meta["delta.typeChanges"] = [*history, change]
        _set_type(field, steps, to_type)
        schema_string = json.dumps(schema, separators=(",", ":"))
        new_features = ["timestampNtz"] if to_type == "timestamp_ntz" else []
        return self._commit(
            "CHANGE COLUMN",
            {"column": column, "fromType": from_type, "toType": to_type},
            config,
            ["typeWidening", *new_features],
            commit_properties,
            schema_string=schema_string,
        )

    def add_columns(
        self,
        fields: pa.Field | Iterable[pa.Field] | pa.Schema,
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int:
        """Adds nullable columns at the end of the schema (``ALTER TABLE ADD COLUMNS``);
        existing rows read them as null. Under column mapping they get ids and physical names.
        Returns the version.

        Raises:
            InvalidArgumentError: a name the table already has (case-insensitively), or a
                column that is not nullable.
        """
        self._hooks(post_commithook_properties)
        if isinstance(fields, pa.Field):
            fields = [fields]
        schema = fields if isinstance(fields, pa.Schema) else pa.schema(list(fields))
        schema_string, config = _native.add_columns(self._table._raw, schema)
        from deltalog.write.writer import _has_timestamp_ntz

        # A timestamp without a time zone needs its feature ("Timestamp without timezone").
        needed = ["timestampNtz"] if any(_has_timestamp_ntz(f.type) for f in schema) else []
        return self._commit(
            "ADD COLUMNS",
            {"columns": json.dumps([f.name for f in schema])},
            config,
            needed,
            commit_properties,
            schema_string=schema_string,
        )


def _split_path(path: str) -> list[str]:
    """``a.b`` → ``["a", "b"]``; backticks quote names with dots (```a.b`.c``)."""
    parts: list[str] = []
    current = ""
    quoted = False
    for ch in path:
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    if any(not p for p in parts):
        raise InvalidArgumentError(f"{path!r} is not a column path")
    return parts


def _generation_expressions(fields: list[dict[str, Any]]) -> list[str]:
    out = []
    for f in fields:
        expr = (f.get("metadata") or {}).get("delta.generationExpression")
        if expr:
            out.append(str(expr))
        t = f.get("type")
        if isinstance(t, dict) and t.get("type") == "struct":
            out += _generation_expressions(t["fields"])
    return out


def _reserved_field_key(key: str) -> bool:
    return key.startswith(
        (
            "delta.columnMapping.",
            "delta.identity.",
            "delta.generationExpression",
            "delta.invariants",
            "delta.typeChanges",
            "parquet.field",
        )
    )


_INTEGERS = ("byte", "short", "integer", "long")
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


def _widening_allowed(from_type: str, to_type: str) -> bool:
    """Whether ``from_type`` may widen to ``to_type`` (upstream Delta protocol, "Supported Type
    Changes", as of Delta 4.0)."""
    if from_type in _INTEGERS and to_type in _INTEGERS:
        return _INTEGERS.index(to_type) > _INTEGERS.index(from_type)
    if to_type == "double":
        return from_type in ("byte", "short", "integer", "float")
    if from_type == "date":
        return to_type == "timestamp_ntz"
    to_decimal = _DECIMAL.match(to_type)
    if to_decimal is None:
        return False
    p2, s2 = int(to_decimal.group(1)), int(to_decimal.group(2))
    if from_type in _INTEGERS:
        # An integer is a decimal(10, 0) (long: decimal(20, 0)) for this rule.
        p1, s1 = (20, 0) if from_type == "long" else (10, 0)
    else:
        from_decimal = _DECIMAL.match(from_type)
        if from_decimal is None:
            return False
        p1, s1 = int(from_decimal.group(1)), int(from_decimal.group(2))
    # decimal(p, s) -> decimal(p + k1, s + k2) with k1 >= k2 >= 0.
    return s2 >= s1 and p2 - p1 >= s2 - s1 and p2 <= 38


def _delta_type_name(new_type: str | pa.DataType) -> str:
    """The Delta name of a primitive type given by name or as a pyarrow type."""
    if isinstance(new_type, pa.DataType):
        names = {
            pa.int8(): "byte",
            pa.int16(): "short",
            pa.int32(): "integer",
            pa.int64(): "long",
            pa.float32(): "float",
            pa.float64(): "double",
            pa.date32(): "date",
        }
        if new_type in names:
            return names[new_type]
        if pa.types.is_decimal128(new_type):
            return f"decimal({new_type.precision},{new_type.scale})"
        if pa.types.is_timestamp(new_type) and new_type.tz is None:
            return "timestamp_ntz"
        raise InvalidArgumentError(f"{new_type} is not a type a column can widen to")
    name = str(new_type).strip().lower().replace(" ", "")
    aliases = {"int": "integer", "bigint": "long", "smallint": "short", "tinyint": "byte"}
    name = aliases.get(name, name)
    if name in (*_INTEGERS, "float", "double", "date", "timestamp_ntz") or _DECIMAL.match(name):
        return name
    raise InvalidArgumentError(f"{new_type!r} is not a type a column can widen to")


def _type_target(schema: dict[str, Any], column: str) -> tuple[dict[str, Any], list[str], Any]:
    """The struct field ``column`` names (or whose array element / map key / value it names),
    the steps from that field to the type changed, and that type."""
    parts = _split_path(column)
    # Struct fields by name; `element`, `key` and `value` step into arrays and maps (the steps
    # restart at each struct field, which then holds the metadata).
    fields: list[dict[str, Any]] = schema["fields"]
    field: dict[str, Any] | None = None
    steps: list[str] = []
    current: Any = None
    for part in parts:
        if isinstance(current, dict) and current.get("type") == "array" and part == "element":
            steps.append(part)
            current = current["elementType"]
            continue
        if isinstance(current, dict) and current.get("type") == "map" and part in ("key", "value"):
            steps.append(part)
            current = current[f"{part}Type"]
            continue
        if current is not None:
            if not (isinstance(current, dict) and current.get("type") == "struct"):
                raise InvalidArgumentError(f"{column!r} does not name a field of the table")
            fields = current["fields"]
        index = next(
            (i for i, f in enumerate(fields) if f["name"] == part),
            next((i for i, f in enumerate(fields) if f["name"].lower() == part.lower()), None),
        )
        if index is None:
            raise InvalidArgumentError(f"the table has no column {column!r}")
        field = fields[index]
        steps = []
        current = field["type"]
    if field is None:  # pragma: no cover - _split_path refuses empty paths
        raise InvalidArgumentError("a column path cannot be empty")
    return field, steps, current


def _set_type(field: dict[str, Any], steps: list[str], to_type: str) -> None:
    if not steps:
        field["type"] = to_type
        return
    holder: dict[str, Any] = field["type"]
    for step in steps[:-1]:
        holder = holder["elementType" if step == "element" else f"{step}Type"]
    last = steps[-1]
    holder["elementType" if last == "element" else f"{last}Type"] = to_type
