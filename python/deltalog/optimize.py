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

import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._args import optional_integer
from deltalog.exceptions import InvalidArgumentError
from deltalog.expressions import FilterLike, to_predicate

if TYPE_CHECKING:
    from deltalog.table import DeltaTable
    from deltalog.writer import CommitProperties
    from deltalog.writer_properties import WriterProperties

#: ``progress=``: ``True`` for a bar on stderr, or a callable getting ``(units done, units,
#: bytes done, bytes)``.
Progress = bool | Callable[[int, int, int, int], None]

#: The default memory limit of Z-order and clustering (the core's
#: ``write::optimize::MEMORY_LIMIT``), split among the units a progress run rewrites at once.
_MEMORY_LIMIT = 128 * 1024 * 1024


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
        progress: Progress = False,
        writer_properties: WriterProperties | None = None,
    ) -> dict[str, Any]:
        from deltalog.writer import CommitProperties, check_snapshot_writable
        from deltalog.writer_properties import WriterProperties

        table = self._table
        check_snapshot_writable(table._raw)
        if isinstance(partition_filters, str):
            sql: str | None = partition_filters
        else:
            predicate = to_predicate(partition_filters)
            sql = predicate.to_sql() if predicate is not None else None
        props = commit_properties or CommitProperties()
        target_size = optional_integer("target_size", target_size, minimum=1)
        tasks = optional_integer("max_concurrent_tasks", max_concurrent_tasks, minimum=1)
        memory_limit = optional_integer("memory_limit", memory_limit, minimum=1)
        if writer_properties is not None and not isinstance(writer_properties, WriterProperties):
            raise InvalidArgumentError(
                "writer_properties must be a deltalog.WriterProperties, not "
                f"{type(writer_properties).__name__}"
            )
        parquet = writer_properties.to_json() if writer_properties is not None else None
        if progress:
            report = progress if callable(progress) else _Bar()
            metrics = _run_with_progress(
                table,
                layout,
                columns,
                full,
                sql,
                target_size,
                tasks,
                memory_limit,
                props,
                report,
                parquet,
            )
        else:
            metrics = _native.optimize(
                table._raw,
                layout,
                columns,
                full,
                sql,
                target_size,
                tasks,
                memory_limit,
                props.commit_info_json(),
                writer_properties=parquet,
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
        progress: Progress = False,
        writer_properties: WriterProperties | None = None,
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
            progress: report progress on long runs: ``True`` draws a bar on stderr (tqdm's
                when it is installed), a callable gets ``(units done, units, bytes done,
                bytes)`` after each unit of work (a bin, or a partition for clustering).
            writer_properties: how the new files are encoded (compression and level, row
                groups, statistics, bloom filters: :class:`deltalog.WriterProperties`, as
                deltalake's ``compact`` takes them). Default: snappy and 1Mi-row groups.
                Unless the properties set dictionaries (``dictionary_enabled``,
                ``dictionary_page_size_limit``), a column whose dictionary overflows in one
                row group is written without one in the later row groups.

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
            progress=progress,
            writer_properties=writer_properties,
        )

    def z_order(
        self,
        columns: str | Iterable[str],
        partition_filters: str | FilterLike | None = None,
        target_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        memory_limit: int | None = None,
        commit_properties: CommitProperties | None = None,
        progress: Progress = False,
        writer_properties: WriterProperties | None = None,
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
            memory_limit: bytes of rows held in memory, over all partitions (default 128 MiB);
                beyond it rows spill to Arrow files in the temporary directory (``TMPDIR``).
                The parquet writer's row groups come on top.
            commit_properties: extra commitInfo fields.
            progress: as for ``compact`` (a unit is a partition).
            writer_properties: as for ``compact``.

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
            progress=progress,
            writer_properties=writer_properties,
        )

    def purge_deletion_vectors(
        self,
        partition_filters: str | FilterLike | None = None,
        target_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        commit_properties: CommitProperties | None = None,
        progress: Progress = False,
        writer_properties: WriterProperties | None = None,
    ) -> dict[str, Any]:
        """REORG TABLE ... APPLY (PURGE): rewrites every file that has a deletion vector
        (whatever its size; several small ones together up to ``target_size``) so that its
        deleted rows are physically gone, in one ``REORG`` commit. Files without deletion
        vectors are left alone. Needed before dropping the ``deletionVectors`` feature.
        ``writer_properties``: as for ``compact``.

        Returns:
            the metrics of ``compact``.
        """
        return self._run(
            "purge",
            partition_filters,
            target_size,
            max_concurrent_tasks,
            commit_properties,
            progress=progress,
            writer_properties=writer_properties,
        )


def _run_with_progress(
    table: DeltaTable,
    layout: str,
    columns: list[str] | None,
    full: bool,
    sql: str | None,
    target_size: int | None,
    tasks: int | None,
    memory_limit: int | None,
    props: CommitProperties,
    report: Callable[[int, int, int, int], None],
    parquet: str | None = None,
) -> dict[str, Any]:
    """The OPTIMIZE of ``_native.optimize`` driven unit by unit (the same plan, rewrites and
    commit as the distributed one), reporting after each unit."""
    import os

    plan = _native.optimize_plan(table._raw, layout, columns, full, sql, target_size)
    target, units, _considered, _partitions = plan
    sizes = {a["path"]: a["size"] for a in table.get_add_actions().to_pylist()}
    unit_bytes = [sum(sizes.get(p, 0) for p in unit) for unit in units]
    total = sum(unit_bytes)
    workers = max(1, min(tasks or os.cpu_count() or 2, len(units) or 1))
    # The limit covers every unit running at once, as in the native run.
    per_task = max(1, (memory_limit or _MEMORY_LIMIT) // workers)
    results: list[tuple[list[str], int, int]] = []
    done = done_bytes = 0
    report(0, len(units), 0, total)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {
            pool.submit(
                _native.optimize_rewrite,
                table._raw,
                layout,
                unit,
                columns,
                full,
                target,
                per_task,
                parquet,
            ): i
            for i, unit in enumerate(units)
        }
        for future in as_completed(futures):
            results.append(future.result())
            done += 1
            done_bytes += unit_bytes[futures[future]]
            report(done, len(units), done_bytes, total)
    metrics: dict[str, Any] = _native.optimize_commit(
        table._raw, layout, plan, results, columns, full, sql, props.commit_info_json()
    )
    return metrics


class _Bar:
    """A progress bar on stderr: tqdm's when it is installed, else a plain line."""

    def __init__(self) -> None:
        self._tqdm: Any = None

    def __call__(self, done: int, units: int, done_bytes: int, total: int) -> None:
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            if self._tqdm is None:
                self._tqdm = tqdm(total=total, unit="B", unit_scale=True, desc="OPTIMIZE")
            self._tqdm.update(done_bytes - self._tqdm.n)
            if done == units:
                self._tqdm.close()
            return
        share = done_bytes / total if total else 1.0
        line = f"\rOPTIMIZE {done}/{units} units, {share:6.1%} of {total / 2**20:,.0f} MiB"
        sys.stderr.write(line + ("\n" if done == units else ""))
        sys.stderr.flush()
