"""``DeltaTable.update_schema()``: pyiceberg's ``UpdateSchema`` on deltalog's ALTER TABLE.

>>> with table.update_schema() as update:
...     update.add_column("note", pa.string(), doc="free text")
...     update.rename_column("v", "value")
...     update.update_column("id", required=False)

The verbs that map onto Delta are kept in call order and applied to the schema together when
the block exits: one commit (a ``metaData`` action, and a ``protocol`` upgrade where a change
needs a feature), nothing at all when the block raises. The rules are the ALTER TABLE ones of
:mod:`deltalog.table.alter`: renaming and deleting a column need column mapping (protocol
"Column Mapping"), a type changes only by a widening with ``delta.enableTypeWidening``
("Type Widening"), a column becomes optional but never required, and new columns are
nullable and top-level.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._lazy import lazy_module
from deltalog.exceptions import InvalidArgumentError
from deltalog.protocol import features

if TYPE_CHECKING:
    from types import TracebackType

    import pyarrow as pa

    from deltalog.table.alter.alterer import TableAlterer
    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import CommitProperties
else:
    pa = lazy_module("pyarrow")

#: Delta Spark's operation name of each kind of change; several kinds in one commit are a
#: ``REPLACE COLUMNS``.
_OPERATIONS = {
    "add": "ADD COLUMNS",
    "rename": "RENAME COLUMN",
    "update": "CHANGE COLUMN",
    "delete": "DROP COLUMNS",
}


def _path(path: str | tuple[str, ...]) -> str:
    """pyiceberg takes a dotted name or a tuple of names."""
    if isinstance(path, tuple):
        return ".".join(f"`{p}`" if "." in p else p for p in path)
    return path


class UpdateSchema:
    """Schema changes committed together (see the module docs). Use it as a context manager,
    or call :meth:`commit`."""

    def __init__(
        self,
        table: DeltaTable,
        commit_properties: CommitProperties | None = None,
        case_sensitive: bool = True,
    ) -> None:
        del case_sensitive  # Delta column names are case-insensitive (as Delta Spark's)
        self._table = table
        self._commit_properties = commit_properties
        self._changes: list[tuple[str, tuple[Any, ...]]] = []
        self._committed: int | None = None

    # -- pyiceberg's verbs ---------------------------------------------------------------

    def add_column(
        self,
        path: str | tuple[str, ...],
        field_type: pa.DataType,
        doc: str | None = None,
        required: bool = False,
    ) -> UpdateSchema:
        """Adds a nullable top-level column (existing rows read null); ``doc`` is its
        ``comment``. A required new column is refused (existing rows have no value)."""
        if required:
            raise InvalidArgumentError(
                f"cannot add required column {_path(path)!r}: existing rows have no value "
                "for it (add it optional)"
            )
        name = _path(path)
        if (isinstance(path, tuple) and len(path) > 1) or (isinstance(path, str) and "." in path):
            raise InvalidArgumentError(
                f"update_schema adds top-level columns only, not {name!r} (add a struct "
                "column, or use union_by_name with the whole struct)"
            )
        if not isinstance(field_type, pa.DataType):
            raise TypeError(f"field_type must be a pyarrow.DataType, not {type(field_type)}")
        self._changes.append(("add", (name, field_type, doc)))
        return self

    def rename_column(self, path_from: str | tuple[str, ...], new_name: str) -> UpdateSchema:
        """Renames a column (nested: a dotted path); needs column mapping."""
        self._changes.append(("rename", (_path(path_from), new_name)))
        return self

    def update_column(
        self,
        path: str | tuple[str, ...],
        field_type: pa.DataType | None = None,
        required: bool | None = None,
        doc: str | None = None,
    ) -> UpdateSchema:
        """Widens a column's type (``delta.enableTypeWidening`` must be true), makes it
        optional (``required=False``; making it required is refused) or sets its ``doc``
        (the field's ``comment``)."""
        if required:
            raise InvalidArgumentError(
                f"cannot make column {_path(path)!r} required: existing rows may be null "
                "(a column only becomes optional)"
            )
        self._changes.append(("update", (_path(path), field_type, required, doc)))
        return self

    def update_column_doc(self, path: str | tuple[str, ...], doc: str) -> UpdateSchema:
        """Sets a column's ``comment``."""
        return self.update_column(path, doc=doc)

    def make_column_optional(self, path: str | tuple[str, ...]) -> UpdateSchema:
        """The column accepts nulls (DROP NOT NULL)."""
        return self.update_column(path, required=False)

    def delete_column(self, path: str | tuple[str, ...]) -> UpdateSchema:
        """Drops a column; needs column mapping."""
        self._changes.append(("delete", (_path(path),)))
        return self

    def union_by_name(self, new_schema: Any) -> UpdateSchema:
        """Makes the table's schema hold ``new_schema`` (a ``pyarrow.Schema`` or anything with
        ``__arrow_c_schema__``): its top-level columns the table lacks are added, columns of
        a wider type widened, columns it has optional made optional. Columns it lacks stay."""
        schema = new_schema if isinstance(new_schema, pa.Schema) else pa.schema(new_schema)
        current = {f.name.lower(): f for f in self._table.schema()}
        for field in schema:
            have = current.get(field.name.lower())
            if have is None:
                self.add_column(field.name, field.type)
                continue
            if have.type != field.type:
                self._changes.append(("update", (have.name, field.type, None, None)))
            if field.nullable and not have.nullable:
                self._changes.append(("update", (have.name, None, False, None)))
        return self

    # -- commit ----------------------------------------------------------------------------

    def __enter__(self) -> UpdateSchema:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None:
            self.commit()

    def commit(self) -> int | None:
        """Applies the changes in one commit; returns its version (None: nothing to do)."""
        from deltalog.table.alter.alterer import TableAlterer

        if self._committed is not None:
            raise InvalidArgumentError(f"already committed as version {self._committed}")
        if not self._changes:
            return None
        alterer = TableAlterer(self._table)
        schema = alterer._schema()
        partitions = list(self._table.metadata().partition_columns)
        config = dict(self._table.metadata().configuration)
        new_features: set[str] = set()
        added: list[tuple[str, pa.DataType, str | None]] = []
        for kind, args in self._changes:
            if kind == "add":
                added.append(args)
                continue
            if kind == "rename":
                partitions = _rename(alterer, schema, partitions, *args)
            elif kind == "delete":
                _delete(alterer, schema, *args)
            else:
                _update(alterer, schema, config, new_features, *args)
        if added:
            _add(self._table, schema, config, new_features, added)
        kinds = {kind for kind, _ in self._changes}
        operation = _OPERATIONS[kinds.pop()] if len(kinds) == 1 else "REPLACE COLUMNS"
        version = alterer._commit(
            operation,
            {"changes": json.dumps([[k, [str(a) for a in args]] for k, args in self._changes])},
            config,
            sorted(new_features),
            self._commit_properties,
            schema_string=json.dumps(schema, separators=(",", ":")),
            partition_columns=partitions,
        )
        self._committed = version
        return version


def _rename(
    alterer: TableAlterer,
    schema: dict[str, Any],
    partitions: list[str],
    column: str,
    new_name: str,
) -> list[str]:
    from deltalog.table.alter.columns import _split_path

    alterer._require_column_mapping("renaming a column")
    if not new_name or "." in new_name:
        raise InvalidArgumentError(f"{new_name!r} is not a column name (no dots, not empty)")
    fields, index = alterer._field(schema, column)
    old = fields[index]["name"]
    if any(f["name"].lower() == new_name.lower() for i, f in enumerate(fields) if i != index):
        raise InvalidArgumentError(f"the table already has a column {new_name!r} there")
    alterer._check_unreferenced([old], "rename")
    fields[index]["name"] = new_name
    if len(_split_path(column)) == 1:
        return [new_name if p == old else p for p in partitions]
    return partitions


def _delete(alterer: TableAlterer, schema: dict[str, Any], column: str) -> None:
    from deltalog.table.alter.columns import _split_path

    alterer._require_column_mapping("dropping a column")
    fields, index = alterer._field(schema, column)
    real = fields[index]["name"]
    top = len(_split_path(column)) == 1
    if top and real.lower() in {p.lower() for p in alterer._table.metadata().partition_columns}:
        raise InvalidArgumentError(f"cannot delete partition column {real!r}")
    if top and real.lower() in {c.lower() for c in alterer._table._clustering_columns()}:
        raise InvalidArgumentError(f"cannot delete clustering column {real!r}")
    if len(fields) == 1:
        raise InvalidArgumentError(f"cannot delete {column!r}: a struct needs a column")
    alterer._check_unreferenced([real], "drop")
    del fields[index]


def _update(
    alterer: TableAlterer,
    schema: dict[str, Any],
    config: dict[str, str],
    new_features: set[str],
    column: str,
    field_type: pa.DataType | None,
    required: bool | None,
    doc: str | None,
) -> None:
    from deltalog.table.alter.columns import (
        _delta_type_name,
        _set_type,
        _type_target,
        _widening_allowed,
    )

    fields, index = alterer._field(schema, column)
    field = fields[index]
    if required is False:
        field["nullable"] = True
    if doc is not None:
        field.setdefault("metadata", {})["comment"] = doc
    if field_type is None:
        return
    to_type = _delta_type_name(field_type)
    target, steps, from_type = _type_target(schema, column)
    if from_type == to_type:
        return
    if not features._is_true(config.get("delta.enableTypeWidening")):
        raise InvalidArgumentError(
            f"changing column {column!r} from {from_type} to {to_type} needs type widening: "
            "set the table property delta.enableTypeWidening to true first"
        )
    if not isinstance(from_type, str) or not _widening_allowed(from_type, to_type):
        raise InvalidArgumentError(
            f"cannot change column {column!r} from {from_type} to {to_type}: not a type "
            'widening Delta allows (upstream Delta protocol, "Supported Type Changes")'
        )
    meta = target.setdefault("metadata", {})
    if any(k.startswith("delta.identity.") for k in meta) or meta.get("delta.generationExpression"):
        raise InvalidArgumentError(f"cannot change the type of identity/generated {column!r}")
    alterer._check_unreferenced([target["name"]], "change the type of")
    # "Type Change Metadata": appended to the nearest struct field's metadata.
    change: dict[str, Any] = {"toType": to_type, "fromType": from_type}
    if steps:
        change["fieldPath"] = ".".join(steps)
    history = meta.get("delta.typeChanges") or []
    if isinstance(history, str):
        history = json.loads(history)
    meta["delta.typeChanges"] = [*history, change]
    _set_type(target, steps, to_type)
    new_features.add("typeWidening")
    if to_type == "timestamp_ntz":
        new_features.add("timestampNtz")


def _add(
    table: DeltaTable,
    schema: dict[str, Any],
    config: dict[str, str],
    new_features: set[str],
    added: list[tuple[str, pa.DataType, str | None]],
) -> None:
    """Appends the new columns, given ids and physical names under column mapping by the
    native core (as ``alter.add_columns``)."""
    from deltalog.write.writer import _has_timestamp_ntz

    have = {f["name"].lower() for f in schema["fields"]}
    fields = []
    for name, type_, doc in added:
        if name.lower() in have:
            raise InvalidArgumentError(f"the table already has a column {name!r}")
        have.add(name.lower())
        metadata = {"comment": doc} if doc is not None else None
        fields.append(pa.field(name, type_, nullable=True, metadata=metadata))
        if _has_timestamp_ntz(type_):
            new_features.add("timestampNtz")
    # The core assigns the ids after the table's current maximum; the new fields are the last
    # ones of the schema it returns.
    schema_string, new_config = _native.add_columns(table._raw, pa.schema(fields))
    appended = json.loads(schema_string)["fields"][-len(fields) :]
    for field, (_name, _type, doc) in zip(appended, added, strict=True):
        if doc is not None:
            field.setdefault("metadata", {})["comment"] = doc
    schema["fields"].extend(appended)
    config.update({k: v for k, v in new_config.items() if k == "delta.columnMapping.maxColumnId"})
