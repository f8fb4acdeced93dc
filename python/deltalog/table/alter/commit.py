"""How an ALTER TABLE change (:mod:`deltalog.table.alter.alterer`) is committed: its ``metaData``
action,
the ``protocol`` its features need, upgraded to the smallest protocol supporting the table's
features plus the new ones (spec "Protocol Evolution"; never downgraded), and the one commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._interrupts import after_commit
from deltalog.protocol import features
from deltalog.protocol.actions import schema_text
from deltalog.write.writer import check_snapshot_writable

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import CommitProperties

_CONSTRAINT_PREFIX = "delta.constraints."
_ICT = "delta.enableInCommitTimestamps"


class AlterCommitter:
    """The commit of each change of :class:`deltalog.table.alter.alterer.TableAlterer`, which
    inherits this
    class (with the changes of :mod:`deltalog.table.alter.columns`,
    :mod:`deltalog.table.alter.properties`
    and :mod:`deltalog.table.alter.drop_feature`)."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table
        #: Clean up expired log files after the next commit (deltalake's
        #: ``post_commithook_properties``; see :meth:`_hooks`).
        self._cleanup = False

    def _hooks(self, post_commithook_properties: Any) -> None:
        """Checks deltalake's ``post_commithook_properties`` of the change about to commit
        (:func:`deltalog.table.interop.arguments.check_hooks`); :meth:`_commit` runs them."""
        from deltalog.table.interop import arguments as compat_args

        self._cleanup = compat_args.check_hooks(post_commithook_properties)

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
        schema: dict[str, Any] = json.loads(schema_text(self._table._raw.metadata()))
        return schema

    def _protocol_action(self, new_features: Iterable[str]) -> dict[str, Any] | None:
        """The protocol supporting the table's features plus ``new_features``; None when the
        current one already does."""
        current = self._table.protocol()
        have = features.reader_features_of(current) | features.writer_features_of(current)
        # A feature the table lists under another name keeps it (inCommitTimestamps).
        wanted = features.with_features(have, new_features)
        if wanted == have:
            return None
        reader, writer, reader_list, writer_list = features.min_protocol_for(wanted)
        reader = max(reader, current.min_reader_version)
        writer = max(writer, current.min_writer_version)
        if writer >= features.TABLE_FEATURES_WRITER_VERSION and writer_list is None:
            writer_list = sorted(wanted)
        if reader >= features.TABLE_FEATURES_READER_VERSION and reader_list is None:
            reader_list = sorted(n for n in wanted if features.FEATURES[n].is_reader_feature)
        return self._checked_protocol(reader, writer, reader_list, writer_list)

    def _checked_protocol(
        self,
        reader: int,
        writer: int,
        reader_list: list[str] | None,
        writer_list: list[str] | None,
        table: str | None = None,
    ) -> dict[str, Any]:
        """The ``protocol`` action of these versions and feature lists, once deltalog has
        checked that it can write a table with it (``table`` names the table in the error)."""
        from deltalog.protocol.actions import Protocol

        action: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
        if reader_list is not None:
            action["readerFeatures"] = reader_list
        if writer_list is not None:
            action["writerFeatures"] = writer_list
        features.check_writable(
            Protocol(reader, writer, reader_list, writer_list),
            through_catalog=self._table._catalog_client is not None,
            table=table,
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
        partition_columns: list[str] | None = None,
    ) -> int:

        table = self._table
        meta = table._raw.metadata()
        check_snapshot_writable(table._raw)
        actions = []
        protocol = self._protocol_action(new_features)
        if protocol is not None:
            actions.append(json.dumps(protocol))
        enabling_ict = False
        if configuration is not None:
            changes = {} if partition_columns is None else {"partitionColumns": partition_columns}
            actions.append(
                json.dumps(self._metadata_action(configuration, schema_string, **changes))
            )
            # "In-Commit Timestamps": enabling it on an existing table records the version and
            # timestamp it starts from (the core fills them in at commit).
            was = features._is_true(meta["configuration"].get(_ICT))
            enabling_ict = features._is_true(configuration.get(_ICT)) and not was
        actions.extend(json.dumps(a) for a in extra_actions)
        from deltalog.table.interop import arguments as compat_args

        props = compat_args.commit_props(commit_properties)
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
        with after_commit(version):
            table.update_incremental()
        from deltalog.table.interop import arguments as compat_args

        cleanup, self._cleanup = self._cleanup, False
        compat_args.run_hooks(table, cleanup, version)
        return version

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
