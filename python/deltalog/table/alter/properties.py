"""Table properties of ALTER TABLE (:mod:`deltalog.table.alter.alterer`): SET and UNSET
TBLPROPERTIES, and
table features added by name. A property may enable a feature (the protocol is upgraded with
it), enable "Column Mapping" on an existing table (every column gets an id and its name as
physical name, no file is rewritten) or remove it (every file rewritten), or enable "Row
Tracking".
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from deltalog.exceptions import InvalidArgumentError
from deltalog.protocol import features
from deltalog.table.alter.commit import _CONSTRAINT_PREFIX, AlterCommitter

if TYPE_CHECKING:
    from deltalog.write.writer import CommitProperties


class PropertyAlterer(AlterCommitter):
    """The table property changes of :class:`deltalog.table.alter.alterer.TableAlterer`."""

    def set_table_properties(
        self,
        properties: Mapping[str, str],
        raise_if_not_exists: bool = True,
        *,
        commit_properties: CommitProperties | None = None,
        post_commithook_properties: Any = None,
    ) -> int:
        """deltalake's name of :meth:`set_properties`. ``raise_if_not_exists=True`` (its
        default) refuses keys that are not Delta table properties, as deltalake does;
        ``False`` stores other keys too. Unknown ``delta.*`` keys are refused either way
        (deltalog's rule, as Delta Spark's)."""
        if raise_if_not_exists:
            from deltalog.protocol import properties as known

            unknown = sorted(
                k
                for k in properties
                if k.lower() not in known._BY_LOWER_KEY
                and k.lower() not in known._PROTOCOL_VERSIONS_LOWER
                and not k.lower().startswith(known.FEATURE_PREFIX)
            )
            if unknown:
                raise InvalidArgumentError(
                    f"{unknown} are not Delta table properties (pass raise_if_not_exists=False "
                    "to store them)"
                )
        return self.set_properties(
            properties, commit_properties, post_commithook_properties=post_commithook_properties
        )

    def set_properties(
        self,
        properties: Mapping[str, str],
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int:
        """Sets table properties (``SET TBLPROPERTIES``). Properties that enable a feature
        (``delta.enableDeletionVectors``, ``delta.enableChangeDataFeed``, ...) and
        ``delta.feature.<name> = supported`` upgrade the protocol with it. Returns the version.
        """
        self._hooks(post_commithook_properties)
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
        self,
        feature: Any,
        allow_protocol_versions_increase: bool | None = None,
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int:
        """Adds table features to the protocol (``delta.feature.<name> = supported``):
        ``feature`` is a name, a :class:`deltalog.TableFeatures` (deltalake's enum too) or a
        list of them. ``allow_protocol_versions_increase=False`` (deltalake's) refuses a
        change that raises the protocol's reader or writer version (e.g. a legacy protocol to
        reader 3 / writer 7); unset, deltalog raises them as needed ("Protocol Evolution")."""
        from deltalog.table.interop.compat import feature_name
        from deltalog.write.writer import CommitProperties as _Props

        if isinstance(allow_protocol_versions_increase, _Props):
            # deltalog's older order: add_feature(names, commit_properties).
            commit_properties, allow_protocol_versions_increase = (
                allow_protocol_versions_increase,
                None,
            )
        self._hooks(post_commithook_properties)
        listed = feature if isinstance(feature, (list, tuple, set)) else [feature]
        names = [feature_name(f) for f in listed]
        features.features_for_configuration({}, names)  # unknown names raise
        if allow_protocol_versions_increase is False:
            action = self._protocol_action(names)
            current = self._table.protocol()
            if action is not None and (
                action["protocol"]["minReaderVersion"] > current.min_reader_version
                or action["protocol"]["minWriterVersion"] > current.min_writer_version
            ):
                raise InvalidArgumentError(
                    f"adding {names} raises the protocol from reader "
                    f"{current.min_reader_version} / writer {current.min_writer_version} to "
                    f"{action['protocol']['minReaderVersion']} / "
                    f"{action['protocol']['minWriterVersion']}: pass "
                    "allow_protocol_versions_increase=True"
                )
        return self._commit(
            "SET TBLPROPERTIES",
            {"properties": json.dumps({f"delta.feature.{n}": "supported" for n in names})},
            self._table.metadata().configuration,
            names,
            commit_properties,
        )


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
