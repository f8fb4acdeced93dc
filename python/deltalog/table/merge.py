"""MERGE: ``DeltaTable.merge(source, predicate)`` and its ``when_*`` clauses.

>>> (
...     t.merge(updates, "target.id = source.id")
...     .when_matched_update({"v": "source.v"})
...     .when_not_matched_insert_all()
...     .execute()
... )

The builder mirrors the ``deltalake`` package's (``source_alias``/``target_alias``,
``when_matched_update(updates, predicate)``, ``..._all()`` variants, ``execute()``); the work is
done by the native core (see ``deltalog_core::write::merge``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._interrupts import after_commit
from deltalog.exceptions import InvalidArgumentError
from deltalog.write.writer import check_snapshot_writable

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import CommitProperties


class TableMerger:
    """A MERGE being built; run it with :meth:`execute`. Within each kind (matched, not
    matched, not matched by source) the first clause whose predicate holds acts."""

    def __init__(
        self,
        table: DeltaTable,
        source: Any,
        predicate: str,
        source_alias: str,
        target_alias: str,
        commit_properties: CommitProperties | None,
        target_file_size: int | None = None,
        merge_schema: bool = False,
        cleanup: bool = False,
        writer_properties: str | None = None,
    ) -> None:
        from deltalog.write.writer import _reader, _target_file_size

        self._table = table
        self._source = _reader(source)
        self._predicate = predicate
        self._aliases = (source_alias, target_alias)
        self._clauses: list[dict[str, Any]] = []
        self._commit_properties = commit_properties
        self._target_file_size = _target_file_size(target_file_size)
        self._merge_schema = bool(merge_schema)
        self._cleanup = cleanup
        self._writer_properties = writer_properties

    def _add(
        self,
        kind: str,
        action: str,
        predicate: str | None,
        updates: Mapping[str, str] | None = None,
    ) -> TableMerger:
        pairs = []
        for column, value in (updates or {}).items():
            if not isinstance(value, str):
                raise TypeError(f"the value of {column!r} must be a SQL expression string")
            pairs.append([column, value])
        self._clauses.append({"kind": kind, "action": action, "predicate": predicate, "set": pairs})
        return self

    def when_matched_update(
        self, updates: Mapping[str, str], predicate: str | None = None
    ) -> TableMerger:
        """Matched target rows get ``updates`` (target column -> SQL over both sides)."""
        return self._add("matched", "update", predicate, updates)

    def when_matched_update_all(
        self, predicate: str | None = None, except_cols: list[str] | None = None
    ) -> TableMerger:
        """Matched target rows take every column from the source row (``UPDATE SET *``);
        with ``except_cols`` (deltalake's), every source column the table has except those."""
        if except_cols:
            return self.when_matched_update(self._all_but(except_cols), predicate)
        return self._add("matched", "update_all", predicate)

    def _all_but(self, except_cols: list[str]) -> dict[str, str]:
        """``{column: "<source>.column"}`` for the source's columns that the table has, less
        ``except_cols`` (names compared case-insensitively, as Delta's column names are)."""
        if isinstance(except_cols, str):
            raise TypeError("except_cols must be a list of column names, not a string")
        if self._merge_schema:
            raise InvalidArgumentError(
                "except_cols with merge_schema=True is not supported: name the columns to set "
                "(when_matched_update / when_not_matched_insert)"
            )
        skip = {c.lower() for c in except_cols}
        have = {f.name.lower() for f in self._table.schema()}
        source_alias = self._aliases[0]
        return {
            name: f"{source_alias}.`{name}`"
            for name in self._source.schema.names
            if name.lower() in have and name.lower() not in skip
        }

    def when_matched_delete(self, predicate: str | None = None) -> TableMerger:
        """Matched target rows are deleted."""
        return self._add("matched", "delete", predicate)

    def when_not_matched_insert(
        self, updates: Mapping[str, str], predicate: str | None = None
    ) -> TableMerger:
        """Source rows that match no target row are inserted with ``updates`` (target column
        -> SQL over the source); other columns are null (or computed when generated)."""
        return self._add("not_matched", "insert", predicate, updates)

    def when_not_matched_insert_all(
        self, predicate: str | None = None, except_cols: list[str] | None = None
    ) -> TableMerger:
        """Source rows that match no target row are inserted as they are (``INSERT *``);
        with ``except_cols`` (deltalake's), those columns are left null (or computed)."""
        if except_cols:
            return self.when_not_matched_insert(self._all_but(except_cols), predicate)
        return self._add("not_matched", "insert_all", predicate)

    def when_not_matched_by_source_update(
        self, updates: Mapping[str, str], predicate: str | None = None
    ) -> TableMerger:
        """Target rows no source row matches get ``updates`` (SQL over the target)."""
        return self._add("not_matched_by_source", "update", predicate, updates)

    def when_not_matched_by_source_delete(self, predicate: str | None = None) -> TableMerger:
        """Target rows no source row matches are deleted."""
        return self._add("not_matched_by_source", "delete", predicate)

    def execute(self) -> dict[str, Any]:
        """Runs the MERGE as one commit and reloads the table at the latest version.

        Returns the metrics: ``version`` (``None`` when nothing changed),
        ``num_source_rows``, ``num_target_rows_inserted``/``_updated``/``_deleted``/``_copied``,
        ``num_target_files_scanned``/``_added``/``_removed``, ``num_deletion_vectors_added``,
        ``num_added_change_files``.
        """
        from deltalog.write.writer import CommitProperties

        table = self._table
        check_snapshot_writable(table._raw)
        props = self._commit_properties or CommitProperties()
        app = props.app_transaction()
        source_alias, target_alias = self._aliases
        metrics: dict[str, Any] = _native.merge(
            table._raw,
            self._source,
            self._predicate,
            source_alias,
            target_alias,
            json.dumps(self._clauses),
            app,
            props.commit_info_json(),
            self._target_file_size,
            self._merge_schema,
            self._writer_properties,
        )
        with after_commit(metrics.get("version")):
            table.update_incremental()
        from deltalog.table.interop import arguments as compat_args

        compat_args.run_hooks(table, self._cleanup, metrics.get("version"))
        return metrics
