"""ALTER TABLE: properties, CHECK constraints and table features (``DeltaTable.alter``).

Each change is one commit with a new ``metaData`` and, where a feature needs it, a ``protocol``
upgraded to the smallest protocol supporting the table's features plus the new ones (spec
"Protocol Evolution"; never downgraded). A metadata change conflicts with any concurrent data
change or metadata change (``CommitConflictError``), as in Delta Spark: concurrent writers did
not see the new rules.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _native, features
from deltalog._lazy import lazy_module
from deltalog.exceptions import (
    ConstraintViolationError,
    FeatureDropWaitError,
    InvalidArgumentError,
)
from deltalog.writer import check_snapshot_writable

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table import DeltaTable
    from deltalog.writer import CommitProperties
else:
    pa = lazy_module("pyarrow")

_CONSTRAINT_PREFIX = "delta.constraints."
_ICT = "delta.enableInCommitTimestamps"
_ICT_PROVENANCE = (
    "delta.inCommitTimestampEnablementVersion",
    "delta.inCommitTimestampEnablementTimestamp",
)
#: The features ``drop_feature`` removes.
_DROPPABLE = frozenset(
    {
        "checkConstraints",
        "inCommitTimestamps",
        "deletionVectors",
        "v2Checkpoint",
        "typeWidening",
        "vacuumProtocolCheck",
        "columnMapping",
    }
)
_TRUNCATE_RETENTION = "delta.dropFeatureTruncateHistory.retentionDuration"
_DAY_MS = 86_400_000


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
        if new_mode != current_mode and new_mode == "none":
            if len(stored) != 1 or wanted - {"columnMapping"}:
                raise InvalidArgumentError(
                    "removing column mapping rewrites every file: set delta.columnMapping.mode "
                    "to none on its own"
                )
            # As in Delta Spark: every file is rewritten with the logical column names, in one
            # commit with the metadata (the feature stays; drop_feature removes it).
            metrics = self._table.optimize._run("unmap", None, None, None, commit_properties)
            version: int = metrics["version"]
            return version
        if new_mode != current_mode:
            if current_mode != "none" or new_mode != "name":
                raise InvalidArgumentError(
                    f"column mapping mode cannot change from {current_mode!r} to {new_mode!r} "
                    "(an existing table can go from 'none' to 'name' and from either to "
                    "'none', as in Delta Spark)"
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

    def drop_feature(
        self,
        name: str,
        truncate_history: bool = False,
        commit_properties: CommitProperties | None = None,
    ) -> int:
        """ALTER TABLE ... DROP FEATURE: removes a table feature from the protocol, after
        removing what the table has of it, as Delta Spark does.

        The stored protocol says clients must not remove a supported feature ("Table
        Features"); this is the exception Delta Spark makes on explicit request, and it is only
        taken once no version a reader can reach still uses the feature.

        Writer features (``checkConstraints``, ``inCommitTimestamps``) go in one commit:
        CHECK constraints must be dropped first; in-commit timestamps are disabled in the same
        commit. Reader-writer features take two steps:

        1. Their uses in the current version are removed, in commits of their own:
           ``deletionVectors``: ``delta.enableDeletionVectors`` set to false and every
           deletion vector purged (REORG PURGE); ``v2Checkpoint``: ``delta.checkpointPolicy``
           set to ``classic``; ``columnMapping``: every file rewritten with the logical
           column names, committed with the metadata without column mapping (mode ``none``);
           ``typeWidening``: the files written before a type change
           rewritten (REORG), then the ``delta.typeChanges`` metadata removed and
           ``delta.enableTypeWidening`` set to false; ``vacuumProtocolCheck`` has none.
        2. The protocol loses the feature once the history no longer uses it. Without
           ``truncate_history`` the history is the one metadata cleanup keeps
           (``delta.logRetentionDuration``, 30 days; cleanup runs first). With it, the uses
           must be older than ``delta.dropFeatureTruncateHistory.retentionDuration`` (24
           hours); the protocol change is then checkpointed and every version before it is
           deleted from the log (time travel to them ends).

        When step 2 cannot happen yet, :class:`FeatureDropWaitError` says until when; step 1
        has then been committed, and a later call finishes the drop.

        Returns the version of the protocol change.

        Raises:
            InvalidArgumentError: the table does not have the feature, another feature needs
                it (``icebergCompatV2`` needs ``columnMapping``), DROP FEATURE does not support
                it (``rowTracking``, ``domainMetadata`` and the others), a
                CHECK constraint remains, or the table is catalog-managed.
            FeatureDropWaitError: the history still uses the feature (see above).
        """
        table = self._table
        check_snapshot_writable(table._raw)
        if table._catalog_client is not None:
            raise InvalidArgumentError(
                "DROP FEATURE on a catalog-managed table is not supported (its log history "
                "belongs to the catalog)"
            )
        current = table.protocol()
        have = features.reader_features_of(current) | features.writer_features_of(current)
        if name not in have:
            raise InvalidArgumentError(
                f"the table does not support the feature {name!r} (its features: "
                f"{', '.join(sorted(have)) or 'none'})"
            )
        needed_by = sorted(n for n in have if name in features.FEATURES[n].requires)
        if needed_by:
            raise InvalidArgumentError(
                f"cannot drop {name!r}: the table's features {needed_by} need it"
            )
        if name not in _DROPPABLE:
            raise InvalidArgumentError(
                f"DROP FEATURE does not support {name!r}; deltalog can drop "
                f"{', '.join(sorted(_DROPPABLE))}"
            )
        config = dict(table.metadata().configuration)
        parameters = {"featureName": name, "truncateHistory": truncate_history}
        if name == "checkConstraints":
            constraints = sorted(
                k[len(_CONSTRAINT_PREFIX) :] for k in config if k.startswith(_CONSTRAINT_PREFIX)
            )
            if constraints:
                raise InvalidArgumentError(
                    "cannot drop checkConstraints while the table has CHECK constraints "
                    f"{constraints}: drop them first (alter.drop_constraint)"
                )
            return self._commit_protocol_without(name, config, parameters, commit_properties)
        if name == "inCommitTimestamps":
            for key in (_ICT, *_ICT_PROVENANCE):
                config.pop(key, None)
            return self._commit_protocol_without(name, config, parameters, commit_properties)

        self._remove_uses(name, commit_properties)
        now_ms = _now_ms()
        if truncate_history:
            retention = _interval_property_ms(
                table.metadata().configuration, _TRUNCATE_RETENTION, _DAY_MS
            )
            trace = _native.feature_trace(table._raw, name)
            if trace is not None and trace[1] > now_ms - retention:
                version, at, why = trace
                raise FeatureDropWaitError(
                    f"cannot drop {name!r} yet: version {version} uses it ({why}). Its uses "
                    "are gone from the current version, but the history is truncated only "
                    f"once they are older than {_TRUNCATE_RETENTION} (default 24 hours): "
                    f"call drop_feature again with truncate_history=True from "
                    f"{_iso(at + retention)} on",
                    feature=name,
                    version=version,
                    retry_after_ms=at + retention,
                )
            config = table.metadata().configuration
            version = self._commit_protocol_without(name, config, parameters, commit_properties)
            table.create_checkpoint("classic")
            _native.truncate_history(table._raw, version)
            return version
        _native.cleanup_metadata(table._raw.load_version(None), now_ms)
        trace = _native.feature_trace(table._raw, name)
        if trace is not None:
            version, at, why = trace
            retention = _native.duration_property_ms(table._raw, "delta.logRetentionDuration")
            truncate = _interval_property_ms(
                table.metadata().configuration, _TRUNCATE_RETENTION, _DAY_MS
            )
            raise FeatureDropWaitError(
                f"cannot drop {name!r} yet: version {version} uses it ({why}), and the log "
                "keeps that version for time travel. Its uses are gone from the current "
                "version; call drop_feature again after delta.logRetentionDuration has passed "
                f"({_iso(at + retention)}), or with truncate_history=True from "
                f"{_iso(at + truncate)} on",
                feature=name,
                version=version,
                retry_after_ms=at + truncate,
            )
        config = table.metadata().configuration
        return self._commit_protocol_without(name, config, parameters, commit_properties)

    def _remove_uses(self, name: str, commit_properties: CommitProperties | None) -> None:
        """DROP FEATURE's first step: the commits that leave the current version without uses
        of the reader-writer feature ``name``."""
        table = self._table
        config = table.metadata().configuration
        if name == "deletionVectors":
            if features._is_true(config.get("delta.enableDeletionVectors")):
                self.set_properties({"delta.enableDeletionVectors": "false"}, commit_properties)
            adds = table.get_add_actions(flatten=True)
            if adds.column("deletion_vector.storage_type").null_count < adds.num_rows:
                table.optimize.purge_deletion_vectors(commit_properties=commit_properties)
        elif name == "columnMapping":
            if table.column_mapping_mode() != "none":
                table.optimize._run("unmap", None, None, None, commit_properties)
        elif name == "v2Checkpoint":
            if str(config.get("delta.checkpointPolicy", "classic")).strip().lower() == "v2":
                self.set_properties({"delta.checkpointPolicy": "classic"}, commit_properties)
        elif name == "typeWidening":
            narrow = _native.files_with_narrower_types(table._raw)
            if narrow:
                table.optimize._run("rewrite", None, None, None, commit_properties, narrow)
            schema = self._schema()
            changed = _drop_type_changes(schema["fields"])
            enabled = features._is_true(config.get("delta.enableTypeWidening"))
            if changed or enabled:
                new_config = dict(table.metadata().configuration)
                new_config["delta.enableTypeWidening"] = "false"
                self._commit(
                    "SET TBLPROPERTIES",
                    {"properties": json.dumps({"delta.enableTypeWidening": "false"})},
                    new_config,
                    (),
                    commit_properties,
                    schema_string=json.dumps(schema, separators=(",", ":")),
                )

    def _commit_protocol_without(
        self,
        name: str,
        configuration: Mapping[str, str],
        parameters: Mapping[str, Any],
        commit_properties: CommitProperties | None,
    ) -> int:
        """Commits the protocol without ``name`` (the smallest one supporting the table's other
        features, so legacy versions where they suffice) and ``configuration`` without its
        ``delta.feature.<name>`` key."""
        from deltalog.table import Protocol

        configuration = {k: v for k, v in configuration.items() if k != f"delta.feature.{name}"}

        current = self._table.protocol()
        have = features.reader_features_of(current) | features.writer_features_of(current)
        reader, writer, reader_list, writer_list = features.min_protocol_for(have - {name})
        action: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
        if reader_list is not None:
            action["readerFeatures"] = reader_list
        if writer_list is not None:
            action["writerFeatures"] = writer_list
        features.check_writable(
            Protocol(reader, writer, reader_list, writer_list),
            through_catalog=self._table._catalog_client is not None,
            table=self._table.table_uri,
        )
        return self._commit(
            "DROP FEATURE",
            parameters,
            None,
            (),
            commit_properties,
            [{"protocol": action}, self._metadata_action(configuration)],
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


def _drop_type_changes(fields: list[dict[str, Any]]) -> bool:
    """Removes ``delta.typeChanges`` from every field (at any depth); whether any had it."""
    changed = False

    def visit_type(t: Any) -> None:
        nonlocal changed
        if isinstance(t, dict):
            kind = t.get("type")
            if kind == "struct":
                changed = _drop_type_changes(t["fields"]) or changed
            elif kind == "array":
                visit_type(t.get("elementType"))
            elif kind == "map":
                visit_type(t.get("keyType"))
                visit_type(t.get("valueType"))

    for f in fields:
        meta = f.get("metadata") or {}
        if "delta.typeChanges" in meta:
            del meta["delta.typeChanges"]
            changed = True
        visit_type(f.get("type"))
    return changed


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="seconds")


def _interval_property_ms(config: Mapping[str, str], key: str, default: int) -> int:
    value = config.get(key)
    if value is None:
        return default
    try:
        return _native.interval_ms(value)
    except ValueError as e:
        raise InvalidArgumentError(f"table property {key} = {value!r}: {e}") from None
