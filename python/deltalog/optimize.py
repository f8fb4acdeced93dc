"""OPTIMIZE: ``DeltaTable.optimize`` (named as deltalake names it).

``compact`` bin-packs each partition's small files into files of about the target size, in one
commit whose adds and removes say ``dataChange: false`` (the rows are only rearranged).
Deletion vectors are applied while rewriting, statistics are recomputed, and with row tracking
enabled the rows keep their row IDs and commit versions. Appends committed while OPTIMIZE runs
land; only a concurrent removal of a compacted file conflicts (Delta Spark's rule). The work
is the native core's (``write::optimize``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._args import optional_integer
from deltalog.expressions import FilterLike, to_predicate

if TYPE_CHECKING:
    from deltalog.table import DeltaTable
    from deltalog.writer import CommitProperties


class TableOptimizer:
    """``DeltaTable.optimize``: compaction of a table's files."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table

    def compact(
        self,
        partition_filters: str | FilterLike | None = None,
        target_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        commit_properties: CommitProperties | None = None,
    ) -> dict[str, Any]:
        """Compacts small files (bin-packing) and reloads the table at the latest version.

        Args:
            partition_filters: only these partitions: ``[("day", "=", "2026-11-01")]``
                (deltalake's form, or a list of such lists for OR), a deltalog predicate, or
                SQL over partition columns. All partitions when ``None``.
            target_size: the size in bytes new files are closed at (default: the table's
                ``delta.targetFileSize``, else 100 MiB). Smaller files are compacted; files
                with deletion vectors are rewritten whatever their size.
            max_concurrent_tasks: partitions rewritten at once (default: the number of cores).
            commit_properties: extra commitInfo fields.

        Returns:
            deltalake's metrics: ``numFilesAdded``, ``numFilesRemoved``, ``filesAdded`` and
            ``filesRemoved`` (``min``, ``max``, ``avg``, ``totalFiles``, ``totalSize``),
            ``partitionsOptimized``, ``numBatches``, ``totalConsideredFiles``,
            ``totalFilesSkipped``, ``preserveInsertionOrder``; plus ``version`` (None when
            nothing needed compacting) and ``numRows`` (rows rewritten).

        Raises:
            InvalidArgumentError: a filter over a column that is not a partition column.
            CommitConflictError: a concurrent commit removed a file being compacted.
        """
        from deltalog.writer import CommitProperties, check_snapshot_writable

        table = self._table
        check_snapshot_writable(table._raw)
        if isinstance(partition_filters, str):
            sql: str | None = partition_filters
        else:
            predicate = to_predicate(partition_filters)
            sql = predicate.to_sql() if predicate is not None else None
        props = commit_properties or CommitProperties()
        metrics: dict[str, Any] = _native.optimize_compact(
            table._raw,
            sql,
            optional_integer("target_size", target_size, minimum=1),
            optional_integer("max_concurrent_tasks", max_concurrent_tasks, minimum=1),
            props.commit_info_json(),
        )
        table.update_incremental()
        return metrics
