"""pyiceberg's table verbs on a Delta table, methods of :class:`deltalog.DeltaTable` (which
inherits :class:`TableIcebergVerbs`): ``inspect`` (:mod:`deltalog.table.interop.inspect`),
``upsert`` (:mod:`deltalog.table.interop.upsert`) and ``update_schema``
(:mod:`deltalog.table.interop.schema_update`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable
    from deltalog.table.interop.inspect import InspectTable
    from deltalog.table.interop.schema_update import UpdateSchema
    from deltalog.table.interop.upsert import UpsertResult
    from deltalog.write.writer import CommitProperties


class TableIcebergVerbs:
    """pyiceberg's ``inspect``, ``upsert`` and ``update_schema``."""

    @property
    def inspect(self) -> InspectTable:
        """Metadata tables of the loaded version as ``pyarrow.Table``\\ s: ``history()``,
        ``versions()``, ``files()``, ``partitions()``, ``checkpoints()``,
        ``deletion_vectors()`` (see :mod:`deltalog.table.interop.inspect`)."""
        from deltalog.table.interop.inspect import InspectTable

        return InspectTable(cast("DeltaTable", self))

    def upsert(
        self,
        df: Any,
        join_cols: list[str] | None = None,
        when_matched_update_all: bool = True,
        when_not_matched_insert_all: bool = True,
        case_sensitive: bool = True,
        *,
        commit_properties: CommitProperties | None = None,
    ) -> UpsertResult:
        """pyiceberg's ``upsert``, as one MERGE: rows of ``df`` (any Arrow data, pandas,
        polars) matching a row of the table on ``join_cols`` update it where another column's
        value differs (null-safe), the others are inserted. Duplicate keys in ``df`` are
        refused. Returns ``rows_updated`` and ``rows_inserted`` (and the ``version``), then
        this object shows the latest version."""
        from deltalog.table.interop.upsert import upsert

        return upsert(
            cast("DeltaTable", self),
            df,
            join_cols,
            when_matched_update_all,
            when_not_matched_insert_all,
            case_sensitive,
            commit_properties,
        )

    def update_schema(
        self,
        allow_incompatible_changes: bool = False,
        case_sensitive: bool = True,
        *,
        commit_properties: CommitProperties | None = None,
    ) -> UpdateSchema:
        """pyiceberg's ``update_schema()``: ``with t.update_schema() as u: u.add_column(...)``
        commits the changes once when the block exits, nothing when it raises (see
        :mod:`deltalog.table.interop.schema_update`). ``allow_incompatible_changes=True`` is
        refused: Delta's schema changes are the compatible ones only."""
        from deltalog.exceptions import InvalidArgumentError
        from deltalog.table.interop.schema_update import UpdateSchema

        if allow_incompatible_changes:
            raise InvalidArgumentError(
                "update_schema(allow_incompatible_changes=True) is not supported: a Delta "
                "table's schema changes compatibly only (rewrite it with "
                'write_table(..., mode="overwrite", schema_mode="overwrite"))'
            )
        return UpdateSchema(cast("DeltaTable", self), commit_properties, case_sensitive)
