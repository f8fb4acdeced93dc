"""DROP FEATURE of ALTER TABLE (:mod:`deltalog.table.alter.alterer`): a table feature is removed
from the
protocol once neither the table nor the history readers can reach uses it, as Delta Spark
does: the one exception to the rule that clients do not remove a supported feature ("Table
Features"; "Protocol Evolution").
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog.exceptions import FeatureDropWaitError, InvalidArgumentError
from deltalog.protocol import features
from deltalog.table.alter.commit import _CONSTRAINT_PREFIX, _ICT
from deltalog.table.alter.properties import PropertyAlterer
from deltalog.write.writer import check_snapshot_writable

if TYPE_CHECKING:
    from deltalog.write.writer import CommitProperties

_ICT_PROVENANCE = (
    "delta.inCommitTimestampEnablementVersion",
    "delta.inCommitTimestampEnablementTimestamp",
)
#: The features ``drop_feature`` removes.
_DROPPABLE = frozenset(
    {
        "checkConstraints",
        features.IN_COMMIT_TIMESTAMP,  # by either name (features.ALIASES)
        "deletionVectors",
        "v2Checkpoint",
        "typeWidening",
        "vacuumProtocolCheck",
        "columnMapping",
    }
)
_TRUNCATE_RETENTION = "delta.dropFeatureTruncateHistory.retentionDuration"
_DAY_MS = 86_400_000


class FeatureDropper(PropertyAlterer):
    """DROP FEATURE of :class:`deltalog.table.alter.alterer.TableAlterer`; it takes away some
    features' uses
    with property changes (``delta.enableDeletionVectors``, ``delta.checkpointPolicy``)."""

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

        Writer features (``checkConstraints``, ``inCommitTimestamp``) go in one commit:
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

        A feature of two names is dropped by either (``inCommitTimestamp`` and
        ``inCommitTimestamps``, :data:`deltalog.protocol.features.ALIASES`), and whichever the
        protocol
        lists goes.

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
        if not features.supports(have, name):
            raise InvalidArgumentError(
                f"the table does not support the feature {name!r} (its features: "
                f"{', '.join(sorted(have)) or 'none'})"
            )
        names = features.names_of(name)
        needed_by = sorted(n for n in have if not names.isdisjoint(features.FEATURES[n].requires))
        if needed_by:
            raise InvalidArgumentError(
                f"cannot drop {name!r}: the table's features {needed_by} need it"
            )
        if features.canonical_name(name) not in _DROPPABLE:
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
        if name in features.IN_COMMIT_TIMESTAMP_NAMES:
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
        """Commits the protocol without ``name``, under any of its names (the smallest one
        supporting the table's other features, so legacy versions where they suffice) and
        ``configuration`` without its ``delta.feature.<name>`` keys."""
        names = features.names_of(name)
        dropped = {f"delta.feature.{n}" for n in names}
        configuration = {k: v for k, v in configuration.items() if k not in dropped}

        current = self._table.protocol()
        have = features.reader_features_of(current) | features.writer_features_of(current)
        reader, writer, reader_list, writer_list = features.min_protocol_for(have - names)
        protocol = self._checked_protocol(
            reader, writer, reader_list, writer_list, table=self._table.table_uri
        )
        return self._commit(
            "DROP FEATURE",
            parameters,
            None,
            (),
            commit_properties,
            [protocol, self._metadata_action(configuration)],
        )


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
