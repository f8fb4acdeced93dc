"""OPTIMIZE and REORG: ``DeltaTable.optimize`` (named as deltalake names it).

``compact`` bin-packs each partition's small files into files of about the target size;
``z_order`` rewrites each partition's files with the rows sorted along the Z-order curve of some
columns, so each file covers a narrow range of every one of them and a filter on any of them
skips most files; on a clustered table ``compact`` clusters the files not yet clustered by the
clustering columns (liquid clustering); ``purge_deletion_vectors`` (REORG ... APPLY (PURGE))
rewrites the files with deletion vectors. Each is one commit whose adds and removes say
``dataChange: false`` (the rows are only rearranged). Deletion vectors are applied while
rewriting, statistics are recomputed, and with row tracking enabled the rows keep their row IDs
and commit versions. Appends committed meanwhile land; only a concurrent removal of a rewritten
file conflicts (Delta Spark's rule). The work is the native core's (``write::optimize``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._args import optional_integer
from deltalog.exceptions import InvalidArgumentError
from deltalog.expressions import FilterLike, to_predicate

if TYPE_CHECKING:
    from deltalog.table import DeltaTable
    from deltalog.writer import CommitProperties


class TableOptimizer:
    """``DeltaTable.optimize``: the layout of a table's files."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table

    def _run(
        self,
        layout: str,
        partition_filters: str | FilterLike | None,
        target_size: int | None,
        max_concurrent_tasks: int | None,
        commit_properties: CommitProperties | None,
        columns: list[str] | None = None,
        full: bool = False,
        memory_limit: int | None = None,
    ) -> dict[str, Any]:
        from deltalog.writer import CommitProperties, check_snapshot_writable

        table = self._table
        check_snapshot_writable(table._raw)
        if isinstance(partition_filters, str):
            sql: str | None = partition_filters
        else:
            predicate = to_predicate(partition_filters)
            sql = predicate.to_sql() if predicate is not None else None
        props = commit_properties or CommitProperties()
        metrics: dict[str, Any] = _native.optimize(
            table._raw,
            layout,
            columns,
            full,
            sql,
            optional_integer("target_size", target_size, minimum=1),
            optional_integer("max_concurrent_tasks", max_concurrent_tasks, minimum=1),
            optional_integer("memory_limit", memory_limit, minimum=1),
            props.commit_info_json(),
        )
        table.update_incremental()
        return metrics

    def compact(
        self,
        partition_filters: str | FilterLike | None = None,
        target_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        commit_properties: CommitProperties | None = None,
        full: bool = False,
        memory_limit: int | None = None,
    ) -> dict[str, Any]:
        """Compacts small files (bin-packing) and reloads the table at the latest version.

        On a clustered table (``clustering_columns``, ``alter.cluster_by``) this clusters
        instead, as Delta Spark's OPTIMIZE does: the files not yet clustered (``full=True``:
        every file, Delta Spark's OPTIMIZE FULL, after the clustering columns changed) are
        rewritten along the Z-order curve of the clustering columns, and the new files say
        ``clusteringProvider: liquid``.

        Args:
            partition_filters: only these partitions: ``[("day", "=", "2026-11-01")]``
                (deltalake's form, or a list of such lists for OR), a deltalog predicate, or
                SQL over partition columns. All partitions when ``None``.
            target_size: the size in bytes new files are closed at (default: the table's
                ``delta.targetFileSize``, else 100 MiB). Smaller files are compacted; files
                with deletion vectors are rewritten whatever their size.
            max_concurrent_tasks: partitions rewritten at once (default: the number of cores).
            commit_properties: extra commitInfo fields.
            full: clustered tables only: recluster every file.
            memory_limit: clustered tables only: see ``z_order``.

        Returns:
            deltalake's metrics: ``numFilesAdded``, ``numFilesRemoved``, ``filesAdded`` and
            ``filesRemoved`` (``min``, ``max``, ``avg``, ``totalFiles``, ``totalSize``),
            ``partitionsOptimized``, ``numBatches``, ``totalConsideredFiles``,
            ``totalFilesSkipped``, ``preserveInsertionOrder``; plus ``version`` (None when
            nothing needed rewriting), ``numRows`` (rows rewritten) and ``spilledBytes``.

        Raises:
            InvalidArgumentError: a filter over a column that is not a partition column, or
                ``full`` on a table that is not clustered.
            CommitConflictError: a concurrent commit removed a file being compacted.
        """
        if full:
            if not self._table._clustering_columns():
                raise InvalidArgumentError(
                    "OPTIMIZE FULL reclusters a clustered table; this table is not clustered"
                )
            layout = "cluster"
        else:
            layout = "compact"
        return self._run(
            layout,
            partition_filters,
            target_size,
            max_concurrent_tasks,
            commit_properties,
            full=full,
            memory_limit=memory_limit,
        )

    def z_order(
        self,
        columns: str | Iterable[str],
        partition_filters: str | FilterLike | None = None,
        target_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        memory_limit: int | None = None,
        commit_properties: CommitProperties | None = None,
    ) -> dict[str, Any]:
        """Z-orders the table by ``columns`` and reloads it at the latest version.

        Every file of each selected partition is rewritten with its rows sorted along the
        Z-order curve of the columns (interleaved bits of each column's rank, the ranks from a
        sample), in files of about ``target_size``; the new files get statistics for the
        columns. A filter on any of them then reads few files.

        Args:
            columns: top-level, non-partition columns (1 to 64; more than 4 helps little).
            partition_filters: as for ``compact``.
            target_size: as for ``compact``.
            max_concurrent_tasks: partitions rewritten at once (default: the number of cores).
            memory_limit: bytes of rows held in memory, over all partitions (default 256 MiB);
                beyond it rows spill to Arrow files in the temporary directory (``TMPDIR``).
                The parquet writer's row groups come on top.
            commit_properties: extra commitInfo fields.

        Returns:
            the metrics of ``compact``.

        Raises:
            InvalidArgumentError: unknown, nested, repeated or partition columns; a clustered
                table (``compact`` clusters it).
            CommitConflictError: a concurrent commit removed a file being rewritten.
        """
        names = [columns] if isinstance(columns, str) else list(columns)
        return self._run(
            "zorder",
            partition_filters,
            target_size,
            max_concurrent_tasks,
            commit_properties,
            columns=names,
            memory_limit=memory_limit,
        )

    def purge_deletion_vectors(
        self,
        partition_filters: str | FilterLike | None = None,
        target_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        commit_properties: CommitProperties | None = None,
    ) -> dict[str, Any]:
        """REORG TABLE ... APPLY (PURGE): rewrites every file that has a deletion vector
        (whatever its size; several small ones together up to ``target_size``) so that its
        deleted rows are physically gone, in one ``REORG`` commit. Files without deletion
        vectors are left alone. Needed before dropping the ``deletionVectors`` feature.

        Returns:
            the metrics of ``compact``.
        """
        return self._run(
            "purge", partition_filters, target_size, max_concurrent_tasks, commit_properties
        )
