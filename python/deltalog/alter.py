"""ALTER TABLE: properties, CHECK constraints and table features (``DeltaTable.alter``).

Each change is one commit with a new ``metaData`` and, where a feature needs it, a ``protocol``
upgraded to the smallest protocol supporting the table's features plus the new ones (spec
"Protocol Evolution"; never downgraded). A metadata change conflicts with any concurrent data
change or metadata change (``CommitConflictError``), as in Delta Spark: concurrent writers did
not see the new rules.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog import _native, features
from deltalog.exceptions import ConstraintViolationError, InvalidArgumentError
from deltalog.writer import check_snapshot_writable

if TYPE_CHECKING:
    from deltalog.table import DeltaTable
    from deltalog.writer import CommitProperties

_CONSTRAINT_PREFIX = "delta.constraints."
_ICT = "delta.enableInCommitTimestamps"


class TableAlterer:
    """Schema-level changes of one table; ``DeltaTable(...).alter``."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table

    # -- helpers -------------------------------------------------------------------------

    def _metadata_action(
        self,
        configuration: Mapping[str, str],
        schema_string: str | None = None,
        **changes: Any,
    ) -> dict[str, Any]:
        m = self._table._raw.metadata()
        action = {
            "id": m["id"],
            "name": m["name"],
            "description": m["description"],
            "format": {
                "provider": m["format_provider"] or "parquet",
                "options": dict(m["format_options"]),
            },
            "schemaString": schema_string or m["schema_string"],
            "partitionColumns": list(m["partition_columns"]),
            "configuration": dict(configuration),
            "createdTime": m["created_time"],
        }
        action.update(changes)
        return {"metaData": action}

    def _schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = json.loads(self._table._raw.metadata()["schema_string"])
        return schema

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

    def _protocol_action(self, new_features: Iterable[str]) -> dict[str, Any] | None:
        """The protocol supporting the table's features plus ``new_features``; None when the
        current one already does."""
        current = self._table.protocol()
        have = features.reader_features_of(current) | features.writer_features_of(current)
        wanted = have | frozenset(new_features)
        if wanted == have:
            return None
        reader, writer, reader_list, writer_list = features.min_protocol_for(wanted)
        reader = max(reader, current.min_reader_version)
        writer = max(writer, current.min_writer_version)
        if writer >= features.TABLE_FEATURES_WRITER_VERSION and writer_list is None:
            writer_list = sorted(wanted)
        if reader >= features.TABLE_FEATURES_READER_VERSION and reader_list is None:
            reader_list = sorted(n for n in wanted if features.FEATURES[n].is_reader_feature)
        action: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
        if reader_list is not None:
            action["readerFeatures"] = reader_list
        if writer_list is not None:
            action["writerFeatures"] = writer_list
        from deltalog.table import Protocol

        features.check_writable(
            Protocol(reader, writer, reader_list, writer_list),
            through_catalog=self._table._catalog_client is not None,
        )
        return {"protocol": action}

    def _commit(
        self,
        operation: str,
        parameters: Mapping[str, Any],
        configuration: Mapping[str, str] | None,
        new_features: Iterable[str] = (),
        commit_properties: CommitProperties | None = None,
        extra_actions: Iterable[dict[str, Any]] = (),
        schema_string: str | None = None,
    ) -> int:
        from deltalog.writer import CommitProperties

        table = self._table
        meta = table._raw.metadata()
        check_snapshot_writable(table._raw)
        actions = []
        protocol = self._protocol_action(new_features)
        if protocol is not None:
            actions.append(json.dumps(protocol))
        enabling_ict = False
        if configuration is not None:
            actions.append(json.dumps(self._metadata_action(configuration, schema_string)))
            # "In-Commit Timestamps": enabling it on an existing table records the version and
            # timestamp it starts from (the core fills them in at commit).
            was = features._is_true(meta["configuration"].get(_ICT))
            enabling_ict = features._is_true(configuration.get(_ICT)) and not was
        actions.extend(json.dumps(a) for a in extra_actions)
        props = commit_properties or CommitProperties()
        app = props.app_transaction()
        version = _native.commit_actions(
            table.table_uri,
            table.version(),
            operation,
            actions,
            json.dumps(dict(parameters), default=str),
            False,
            None,
            app,
            props.commit_info_json(),
            table._storage_options,
            table._raw,
            enabling_ict,
        )
        table.update_incremental()
        return version

    # -- operations ----------------------------------------------------------------------

    def set_properties(
        self,
        properties: Mapping[str, str],
        commit_properties: CommitProperties | None = None,
    ) -> int:
        """Sets table properties (``SET TBLPROPERTIES``). Properties that enable a feature
        (``delta.enableDeletionVectors``, ``delta.enableChangeDataFeed``, ...) and
        ``delta.feature.<name> = supported`` upgrade the protocol with it. Returns the version.
        """
        wanted, stored = features.features_for_configuration(properties)
        if any(k.startswith(_CONSTRAINT_PREFIX) for k in stored):
            raise ValueError("add CHECK constraints with add_constraint, which checks the rows")
        config = dict(self._table.metadata().configuration)
        schema_string = None
        current_mode = self._table.column_mapping_mode()
        new_mode = str(stored.get("delta.columnMapping.mode", current_mode)).strip().lower()
        if new_mode != current_mode:
            if current_mode != "none" or new_mode != "name":
                raise InvalidArgumentError(
                    f"column mapping mode cannot change from {current_mode!r} to {new_mode!r} "
                    "(an existing table can only go from 'none' to 'name', as in Delta Spark)"
                )
            # "Column Mapping": every column gets an id and a physical name; existing columns
            # keep their names as physical names, so the files need no rewrite.
            schema = self._schema()
            top = _assign_column_ids(schema["fields"], 0)
            stored["delta.columnMapping.maxColumnId"] = str(top)
            schema_string = json.dumps(schema, separators=(",", ":"))
        rt = "delta.enableRowTracking"
        if features._is_true(stored.get(rt)) and not features._is_true(config.get(rt)):
            # "Writer Requirements for Row Tracking": every active add must have baseRowId and
            # defaultRowCommitVersion when enabled; deltalog does not backfill them.
            adds = self._table.get_add_actions(flatten=True)
            if adds.num_rows and adds.column("base_row_id").null_count > 0:
                raise InvalidArgumentError(
                    "row tracking cannot be enabled: the table has data files without "
                    'baseRowId, which deltalog does not backfill (spec: "Writer Requirements '
                    'for Row Tracking")'
                )
            for key, prefix in (
                ("delta.rowTracking.materializedRowIdColumnName", "_row-id-col-"),
                (
                    "delta.rowTracking.materializedRowCommitVersionColumnName",
                    "_row-commit-version-col-",
                ),
            ):
                if key not in config:
                    stored.setdefault(key, f"{prefix}{uuid.uuid4()}")
        config.update(stored)
        return self._commit(
            "SET TBLPROPERTIES",
            {"properties": json.dumps(dict(properties))},
            config,
            wanted,
            commit_properties,
            schema_string=schema_string,
        )

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
    ) -> int:
        """Merges ``metadata`` into the column's field metadata (``comment`` and other user
        keys; deltalake's ``set_column_metadata``). Keys Delta itself owns (column mapping,
        identity, generation expressions, invariants, type changes) are refused."""
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

    def drop_not_null(self, column: str, commit_properties: CommitProperties | None = None) -> int:
        """ALTER TABLE ... ALTER COLUMN ... DROP NOT NULL: the column accepts nulls."""
        schema = self._schema()
        fields, index = self._field(schema, column)
        if fields[index].get("nullable", True):
            raise InvalidArgumentError(f"column {column!r} accepts nulls already")
        fields[index]["nullable"] = True
        return self._commit_schema(
            "CHANGE COLUMN", {"column": column, "nullable": True}, schema, commit_properties
        )

    def set_table_name(self, name: str, commit_properties: CommitProperties | None = None) -> int:
        """Sets the table's ``name`` (the ``metaData`` field)."""
        return self._commit_metadata_fields({"name": name}, commit_properties)

    def set_table_description(
        self, description: str, commit_properties: CommitProperties | None = None
    ) -> int:
        """Sets the table's ``description`` (the ``metaData`` field)."""
        return self._commit_metadata_fields({"description": description}, commit_properties)

    def _commit_metadata_fields(
        self, fields: dict[str, Any], commit_properties: CommitProperties | None
    ) -> int:
        config = self._table.metadata().configuration
        action = self._metadata_action(config, None, **fields)
        return self._commit(
            "UPDATE TABLE METADATA",
            {k: json.dumps(v) for k, v in fields.items()},
            None,
            (),
            commit_properties,
            [action],
        )

    def _commit_schema(
        self,
        operation: str,
        parameters: Mapping[str, Any],
        schema: dict[str, Any],
        commit_properties: CommitProperties | None,
        **changes: Any,
    ) -> int:
        config = self._table.metadata().configuration
        schema_string = json.dumps(schema, separators=(",", ":"))
        action = self._metadata_action(config, schema_string, **changes)
        return self._commit(operation, parameters, None, (), commit_properties, [action])

    def add_columns(
        self,
        fields: pa.Field | Iterable[pa.Field] | pa.Schema,
        commit_properties: CommitProperties | None = None,
    ) -> int:
        """Adds nullable columns at the end of the schema (``ALTER TABLE ADD COLUMNS``);
        existing rows read them as null. Under column mapping they get ids and physical names.
        Returns the version.

        Raises:
            InvalidArgumentError: a name the table already has (case-insensitively), or a
                column that is not nullable.
        """
        if isinstance(fields, pa.Field):
            fields = [fields]
        schema = fields if isinstance(fields, pa.Schema) else pa.schema(list(fields))
        schema_string, config = _native.add_columns(self._table._raw, schema)
        from deltalog.writer import _has_timestamp_ntz

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

    def unset_properties(
        self, keys: Iterable[str], commit_properties: CommitProperties | None = None
    ) -> int:
        """Removes table properties (``UNSET TBLPROPERTIES``); absent keys are ignored."""
        keys = list(keys)
        if any(k.startswith(_CONSTRAINT_PREFIX) for k in keys):
            raise ValueError("drop CHECK constraints with drop_constraint")
        config = {k: v for k, v in self._table.metadata().configuration.items() if k not in keys}
        return self._commit(
            "UNSET TBLPROPERTIES", {"properties": json.dumps(keys)}, config, (), commit_properties
        )

    def add_feature(
        self, names: str | Iterable[str], commit_properties: CommitProperties | None = None
    ) -> int:
        """Adds table features to the protocol (``delta.feature.<name> = supported``)."""
        names = [names] if isinstance(names, str) else list(names)
        features.features_for_configuration({}, names)  # unknown names raise
        return self._commit(
            "SET TBLPROPERTIES",
            {"properties": json.dumps({f"delta.feature.{n}": "supported" for n in names})},
            self._table.metadata().configuration,
            names,
            commit_properties,
        )

    def add_constraint(
        self, constraints: Mapping[str, str], commit_properties: CommitProperties | None = None
    ) -> int:
        """Adds CHECK constraints (name -> SQL boolean expression; spec "CHECK Constraints").
        Every existing row must satisfy them (false or unknown violates):
        ``ConstraintViolationError`` otherwise, and nothing is committed."""
        if len(constraints) != 1:
            raise ValueError("add one constraint at a time (as ALTER TABLE ADD CONSTRAINT)")
        ((name, sql),) = constraints.items()
        config = dict(self._table.metadata().configuration)
        key = _CONSTRAINT_PREFIX + name.lower()
        if key in config:
            raise ValueError(f"the table already has a constraint {name!r}: {config[key]}")
        _native.parse_expression(sql)
        bad = _native.count_violations(self._table._raw, sql)
        if bad:
            raise ConstraintViolationError(
                f"CHECK constraint {name} ({sql}) violated by {bad} existing row(s)",
                constraint=f"CHECK constraint {name}",
                expression=sql,
            )
        config[key] = sql
        return self._commit(
            "ADD CONSTRAINT",
            {"name": name, "expr": sql},
            config,
            ["checkConstraints"],
            commit_properties,
        )

    def drop_constraint(
        self,
        name: str,
        raise_if_not_exists: bool = True,
        commit_properties: CommitProperties | None = None,
    ) -> int | None:
        """Drops a CHECK constraint; returns the version, or None when there was none to drop
        and ``raise_if_not_exists`` is false."""
        config = dict(self._table.metadata().configuration)
        key = _CONSTRAINT_PREFIX + name.lower()
        if key not in config:
            if raise_if_not_exists:
                raise ValueError(f"the table has no constraint {name!r}")
            return None
        del config[key]
        return self._commit("DROP CONSTRAINT", {"name": name}, config, (), commit_properties)

    def cluster_by(
        self,
        columns: Iterable[str] | None,
        commit_properties: CommitProperties | None = None,
    ) -> int:
        """ALTER TABLE ... CLUSTER BY: makes ``columns`` (top-level, at most 4) the table's
        clustering columns, or with ``None`` / ``[]`` stops clustering (CLUSTER BY NONE).

        The columns are recorded (physical names) in the ``delta.clustering`` domain, with the
        ``clustering`` and ``domainMetadata`` features (spec "Clustered Table"); a partitioned
        table cannot be clustered. Files already written keep their layout: the next OPTIMIZE
        (``optimize.compact()``) clusters files not clustered yet, and
        ``optimize.compact(full=True)`` reclusters every file by the new columns.
        """
        names = list(columns or [])
        table = self._table
        meta = table._raw.metadata()
        if meta["partition_columns"]:
            raise InvalidArgumentError(
                'a partitioned table cannot be clustered (spec "Clustered Table": a clustered '
                f"table has no partition columns; this one has {list(meta['partition_columns'])})"
            )
        if len(names) > 4:
            raise InvalidArgumentError(
                f"at most 4 clustering columns (as Delta Spark), not {len(names)}"
            )
        fields = json.loads(meta["schema_string"]).get("fields", [])
        physical: list[str] = []
        resolved: list[str] = []
        for name in names:
            field = next((f for f in fields if f["name"] == name), None) or next(
                (f for f in fields if f["name"].lower() == str(name).lower()), None
            )
            if field is None:
                raise InvalidArgumentError(
                    f"clustering column {name!r} is not a top-level column of the table"
                )
            if isinstance(field["type"], dict):
                raise InvalidArgumentError(
                    f"clustering column {name!r} is a {field['type'].get('type')}: clustering "
                    "needs a column with min/max statistics"
                )
            if field["name"] in resolved:
                raise InvalidArgumentError(f"clustering column {name!r} is named twice")
            resolved.append(field["name"])
            physical.append(
                (field.get("metadata") or {}).get("delta.columnMapping.physicalName", field["name"])
            )
        old = table._clustering_columns()
        action = {
            "domainMetadata": {
                "domain": "delta.clustering",
                "configuration": json.dumps({"clusteringColumns": physical}),
                "removed": False,
            }
        }
        return self._commit(
            "CLUSTER BY",
            {
                "oldClusteringColumns": ",".join(old),
                "newClusteringColumns": ",".join(resolved),
            },
            None,
            ["clustering", "domainMetadata"],
            commit_properties,
            [action],
        )

    def set_domain_metadata(
        self,
        domain: str,
        configuration: str,
        commit_properties: CommitProperties | None = None,
    ) -> int:
        """Sets the configuration (any string, often JSON) of a user metadata domain (spec
        "Domain Metadata"); adds the ``domainMetadata`` feature when the table lacks it.
        Domains starting with ``delta.`` belong to Delta itself and are refused. A concurrent
        commit changing the same domain conflicts."""
        self._check_domain(domain)
        action = {
            "domainMetadata": {"domain": domain, "configuration": configuration, "removed": False}
        }
        return self._commit(
            "SET DOMAIN METADATA",
            {"domain": domain},
            None,
            ["domainMetadata"],
            commit_properties,
            [action],
        )

    def remove_domain_metadata(
        self, domain: str, commit_properties: CommitProperties | None = None
    ) -> int:
        """Removes a user metadata domain (a tombstone, spec "Domain Metadata")."""
        self._check_domain(domain)
        current = self._table.domain_metadata()
        if domain not in current:
            raise ValueError(f"the table has no metadata domain {domain!r}")
        action = {
            "domainMetadata": {"domain": domain, "configuration": current[domain], "removed": True}
        }
        return self._commit(
            "REMOVE DOMAIN METADATA", {"domain": domain}, None, (), commit_properties, [action]
        )

    @staticmethod
    def _check_domain(domain: str) -> None:
        if not domain or domain.lower().startswith("delta."):
            raise ValueError(
                f"{domain!r} is not a user domain: domains starting with 'delta.' are Delta's "
                'own (spec "Domain Metadata")'
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


def _assign_column_ids(fields: list[dict[str, Any]], last: int) -> int:
    """Gives every struct field (at any depth, through arrays and maps) a column mapping id
    and its own name as physical name; returns the largest id."""

    def visit_type(t: Any, last: int) -> int:
        if isinstance(t, dict):
            kind = t.get("type")
            if kind == "struct":
                return _assign_column_ids(t["fields"], last)
            if kind == "array":
                return visit_type(t.get("elementType"), last)
            if kind == "map":
                return visit_type(t.get("valueType"), visit_type(t.get("keyType"), last))
        return last

    for f in fields:
        last += 1
        meta = f.setdefault("metadata", {})
        meta["delta.columnMapping.id"] = last
        meta["delta.columnMapping.physicalName"] = f["name"]
        last = visit_type(f["type"], last)
    return last


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
