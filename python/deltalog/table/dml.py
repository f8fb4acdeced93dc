"""DELETE and UPDATE of a Delta table, methods of :class:`deltalog.DeltaTable`: the native
core runs the statement against the loaded version and commits it (deletion vectors or
rewritten files, change data files when the change data feed is on); MERGE is
:class:`deltalog.table.merge.TableMerger`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._interrupts import after_commit
from deltalog.expressions import FilterLike, to_predicate
from deltalog.write.writer import CommitProperties, _target_file_size, check_snapshot_writable


class TableDML:
    """DELETE and UPDATE of :class:`deltalog.DeltaTable`, which inherits this class."""

    if TYPE_CHECKING:
        # DeltaTable's.
        @property
        def _raw(self) -> _native.RawSnapshot: ...

        def update_incremental(self) -> None: ...

        def cleanup_metadata(self, *, now: Any = None) -> list[str]: ...

    def delete(
        self,
        predicate: str | FilterLike | None = None,
        commit_properties: CommitProperties | None = None,
        target_file_size: int | None = None,
        *,
        writer_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> dict[str, Any]:
        """Deletes the rows matching ``predicate`` (every row when ``None``) and reloads this
        object at the latest version. The rows are those of the loaded version; commits made
        since are checked for conflicts.

        Args:
            predicate: a SQL boolean expression (``"id < 100 AND part = 'a'"``), or a filter as
                :meth:`scan` takes it. Rows where it is true are deleted (unknown is kept).
            commit_properties: an application transaction and extra commitInfo fields.
            target_file_size: size in bytes files written are closed at, as for
                :func:`deltalog.write_table`.
            writer_properties: how the files the statement writes are encoded (deltalake's
                or deltalog's ``WriterProperties``), as for :func:`deltalog.write_table`.
            post_commithook_properties: deltalake's, as for OPTIMIZE.

        With ``delta.enableDeletionVectors=true`` on a table that supports the feature, rows
        are marked deleted in deletion vectors; otherwise the files holding them are
        rewritten without them. With ``delta.enableChangeDataFeed=true`` the deleted rows are
        written to change data files.

        Returns:
            Metrics: ``version`` (``None`` when nothing matched and nothing was committed),
            ``num_deleted_rows``, ``num_copied_rows``, ``num_removed_files``,
            ``num_added_files``, ``num_deletion_vectors_added``, ``num_added_change_files``,
            ``num_files_scanned``.

        Raises:
            CommitConflictError: a concurrent commit removed a file this one read, or changed
                the metadata; nothing was committed.
            ValueError: a malformed predicate or unknown column.
        """
        return self._dml(
            predicate,
            None,
            commit_properties,
            target_file_size=target_file_size,
            writer_properties=writer_properties,
            hooks=post_commithook_properties,
        )

    def update(
        self,
        set: Mapping[str, str] | None = None,
        predicate: str | FilterLike | None = None,
        *,
        updates: Mapping[str, str] | None = None,
        new_values: Mapping[str, Any] | None = None,
        commit_properties: CommitProperties | None = None,
        target_file_size: int | None = None,
        writer_properties: Any = None,
        error_on_type_mismatch: bool = True,
        post_commithook_properties: Any = None,
    ) -> dict[str, Any]:
        """Sets columns of the rows matching ``predicate`` (every row when ``None``).

        Args:
            set: column name -> SQL expression over the row's old values
                (``{"v": "v * 2", "status": "'done'"}``); ``updates`` is the same (the
                ``deltalake`` name).
            new_values: column name -> Python value (``{"status": "done", "n": None}``).
            predicate: as for :meth:`delete`.
            writer_properties, post_commithook_properties: as for :meth:`delete`.
            error_on_type_mismatch: deltalake's; deltalog raises on a value that does not
                cast to its column's type, so ``False`` (write null instead) is refused.

        With deletion vectors the updated rows are deleted from their files by a DV and
        written to new files; otherwise the files are rewritten. Change data files carry
        ``update_preimage`` and ``update_postimage`` rows when the change feed is enabled.

        Returns:
            Metrics as for :meth:`delete`, with ``num_updated_rows``.
        """
        from deltalog.expressions import _literal, sql_literal

        assignments: list[tuple[str, str, bool]] = []
        shown: list[tuple[str, str]] = []
        for source in (set, updates):
            for column, value in (source or {}).items():
                if not isinstance(value, str):
                    raise TypeError(
                        f"the value of {column!r} must be a SQL expression string; pass "
                        "Python values in new_values"
                    )
                assignments.append((column, value, True))
                shown.append((column, value))
        for column, value in (new_values or {}).items():
            assignments.append((column, json.dumps({"literal": _literal(value)}), False))
            shown.append((column, sql_literal(value)))
        if not assignments:
            raise ValueError("update needs set/updates or new_values")
        from deltalog.table.interop import arguments as compat_args

        compat_args.refuse_lenient_casts(error_on_type_mismatch, "update")
        return self._dml(
            predicate,
            assignments,
            commit_properties,
            shown,
            target_file_size,
            writer_properties,
            post_commithook_properties,
        )

    def _dml(
        self,
        predicate: str | FilterLike | None,
        assignments: list[tuple[str, str, bool]] | None,
        commit_properties: CommitProperties | None,
        shown: list[tuple[str, str]] | None = None,
        target_file_size: int | None = None,
        writer_properties: Any = None,
        hooks: Any = None,
    ) -> dict[str, Any]:
        from deltalog.table.interop import arguments as compat_args

        parquet = compat_args.writer_properties_json(writer_properties)
        cleanup = compat_args.check_hooks(hooks)
        # The statement reads the loaded version; commits since are checked as concurrent
        # winners (blind appends commute, a change to a file it read conflicts).
        check_snapshot_writable(self._raw)
        raw = self._raw
        if isinstance(predicate, str):
            sql, as_filter = predicate, None
        else:
            sql, as_filter = None, to_predicate(predicate)
        # What history() shows: the SQL the user wrote, or the filter rendered as SQL.
        predicate_text = sql
        if as_filter is not None:
            try:
                predicate_text = as_filter.to_sql()
            except RecursionError:
                predicate_text = None
        props = compat_args.commit_props(commit_properties)
        app = props.app_transaction()
        metrics: dict[str, Any] = _native.dml(
            raw,
            sql,
            as_filter.to_json() if as_filter is not None else None,
            assignments,
            app,
            props.commit_info_json(),
            predicate_text,
            shown,
            _target_file_size(target_file_size),
            parquet,
        )
        with after_commit(metrics.get("version")):
            self.update_incremental()
        compat_args.run_hooks(self, cleanup, metrics.get("version"))
        return metrics
