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

import json
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._args import optional_integer
from deltalog._interrupts import after_commit
from deltalog.exceptions import InterruptedAfterCommit, InvalidArgumentError
from deltalog.expressions import FilterLike, to_predicate

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable
    from deltalog.table.optimize_args import PostCommitHookProperties
    from deltalog.write.properties import WriterProperties
    from deltalog.write.writer import CommitProperties

#: ``progress=``: ``True`` for a bar on stderr, or a callable getting ``(units done, units,
#: bytes done, bytes)``.
Progress = bool | Callable[[int, int, int, int], None]

#: The default memory limit of Z-order and clustering (the core's
#: ``write::optimize::MEMORY_LIMIT``), split among the units a progress run rewrites at once.
_MEMORY_LIMIT = 128 * 1024 * 1024


class TableOptimizer:
    """``DeltaTable.optimize``: the layout of a table's files. ``compact`` and ``z_order``
    take deltalake 1.6's parameters in its order (positionally or by keyword) and its argument
    objects (:mod:`deltalog.table.optimize_args`), then deltalog's own keyword-only options."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table

    def _run(
        self,
        layout: str,
        partition_filters: str | FilterLike | None,
        target_size: int | None,
        max_concurrent_tasks: int | None,
        commit_properties: Any,
        columns: list[str] | None = None,
        full: bool = False,
        memory_limit: int | None = None,
        progress: Progress = False,
        writer_properties: Any = None,
        min_commit_interval: Any = None,
        post_commithook_properties: Any = None,
        max_temp_directory_size: int | None = None,
    ) -> dict[str, Any]:
        from deltalog.table import optimize_args
        from deltalog.write.writer import check_snapshot_writable

        table = self._table
        check_snapshot_writable(table._raw)
        if isinstance(partition_filters, str):
            sql: str | None = partition_filters
        else:
            predicate = to_predicate(partition_filters)
            sql = predicate.to_sql() if predicate is not None else None
        props = optimize_args.commit_properties(commit_properties)
        target_size = optional_integer("target_size", target_size, minimum=1)
        tasks = optional_integer("max_concurrent_tasks", max_concurrent_tasks, minimum=1)
        memory_limit = optional_integer("memory_limit", memory_limit, minimum=1)
        if max_temp_directory_size is not None:
            raise InvalidArgumentError(
                "max_temp_directory_size is not supported: deltalog spills Z-order and "
                "clustering rows to TMPDIR without a disk limit (memory_limit / max_spill_size "
                "bounds what is held in memory)"
            )
        interval = optimize_args.commit_interval(min_commit_interval)
        cleanup = optimize_args.cleans_up_after(post_commithook_properties)
        writer_properties = optimize_args.writer_properties(writer_properties)
        parquet = writer_properties.to_json() if writer_properties is not None else None
        reorders = layout != "purge" and (layout != "compact" or bool(table._clustering_columns()))
        if progress or interval is not None:
            report = None if not progress else progress if callable(progress) else _Bar()
            native, span = _run_units(
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
                interval,
            )
        else:
            # The plan alone for deltalake's maxBinSpanFiles (the run plans the same units).
            units = _native.optimize_plan(table._raw, layout, columns, full, sql, target_size)[1]
            span = max((len(u) for u in units), default=0)
            native = _native.optimize(
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
        with after_commit(native["version"]):
            table.update_incremental()
            if cleanup and native["version"] is not None:
                # deltalake's cleanup_expired_logs=True: "Metadata Cleanup" after the commit.
                table.cleanup_metadata()
        return optimize_args.deltalake_metrics(native, reorders=reorders, max_bin_span_files=span)

    def compact(
        self,
        partition_filters: str | FilterLike | None = None,
        target_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        max_spill_size: int | None = None,
        max_temp_directory_size: int | None = None,
        min_commit_interval: int | float | timedelta | None = None,
        writer_properties: WriterProperties | Any | None = None,
        *args: Any,
        commit_properties: CommitProperties | Any | None = None,
        post_commithook_properties: PostCommitHookProperties | Any | None = None,
        full: bool = False,
        memory_limit: int | None = None,
        progress: Progress = False,
    ) -> dict[str, Any]:
        """Compacts small files (bin-packing) and reloads the table at the latest version.

        On a clustered table (``clustering_columns``, ``alter.cluster_by``) this clusters
        instead, as Delta Spark's OPTIMIZE does: the files not yet clustered (``full=True``:
        every file, Delta Spark's OPTIMIZE FULL, after the clustering columns changed) are
        rewritten along the Z-order curve of the clustering columns, and the new files say
        ``clusteringProvider: liquid``.

        The parameters up to ``post_commithook_properties`` are deltalake 1.6's, in its order
        (``commit_properties`` and ``post_commithook_properties`` may also come positionally
        after ``writer_properties``, as deltalake still takes them); deltalake's own
        ``CommitProperties``, ``WriterProperties`` and ``PostCommitHookProperties`` objects
        are accepted (:mod:`deltalog.table.optimize_args`).

        Args:
            partition_filters: only these partitions: ``[("day", "=", "2026-11-01")]``
                (deltalake's form, or a list of such lists for OR), a deltalog predicate, or
                SQL over partition columns. All partitions when ``None``.
            target_size: the size in bytes new files are closed at (default: the table's
                ``delta.targetFileSize``, else 100 MiB). Smaller files are compacted; files
                with deletion vectors are rewritten whatever their size.
            max_concurrent_tasks: partitions rewritten at once (default: the number of cores).
            max_spill_size: bytes of rows held in memory before spilling (deltalog's
                ``memory_limit``; compaction streams and holds no rows, clustering does).
            max_temp_directory_size: not supported (an ``InvalidArgumentError`` unless None):
                spill files have no disk limit.
            min_commit_interval: seconds (or a timedelta): commit the work done so far as its
                own version whenever this long has passed since the last commit, as deltalake
                does for long runs (``0``: one commit per bin, or per partition for
                clustering). The metrics are the sum over the commits; ``version`` the last.
            writer_properties: how the new files are encoded (compression and level, row
                groups, statistics, bloom filters: :class:`deltalog.WriterProperties` or
                deltalake's, as deltalake's ``compact`` takes them). Default: snappy and
                1Mi-row groups. Unless the properties set dictionaries
                (``dictionary_enabled``, ``dictionary_page_size_limit``), a column whose
                dictionary overflows in one row group is written without one in the later
                row groups.
            commit_properties: extra commitInfo fields (``custom_metadata``); application
                transactions and ``max_commit_retries`` are refused.
            post_commithook_properties: ``cleanup_expired_logs=True`` cleans up expired log
                files after the commit
                (:class:`deltalog.table.optimize_args.PostCommitHookProperties`).
            full: clustered tables only: recluster every file.
            memory_limit: clustered tables only: see ``z_order``.
            progress: report progress on long runs: ``True`` draws a bar on stderr (tqdm's
                when it is installed), a callable gets ``(units done, units, bytes done,
                bytes)`` after each unit of work (a bin, or a partition for clustering).

        Returns:
            deltalake's metrics, with its keys and value types: ``numFilesAdded``,
            ``numFilesRemoved``, ``filesAdded`` and ``filesRemoved`` (JSON text, as deltalake
            gives them: ``avg``, ``max``, ``min``, ``totalFiles``, ``totalSize``),
            ``partitionsOptimized``, ``numBatches`` (record batches passed to the
            writer, as deltalake counts them; deltalog's batches hold up to 64Ki rows,
            deltalake's 8Ki), ``totalConsideredFiles``,
            ``totalFilesSkipped``, ``preserveInsertionOrder`` (False when clustering),
            ``plannerStrategy``, ``preservedStableOrder``, ``maxBinSpanFiles`` (most files in
            one bin); plus ``version`` (None when nothing needed rewriting), ``numRows`` (rows
            rewritten) and ``spilledBytes``.

        Raises:
            InvalidArgumentError: a filter over a column that is not a partition column,
                ``full`` on a table that is not clustered, or a setting deltalog cannot honour.
            CommitConflictError: a concurrent commit removed a file being compacted.
        """
        from deltalog.table.optimize_args import memory_limit as limit_of, split_commit_args

        commit_properties, post_commithook_properties = split_commit_args(
            "compact", args, commit_properties, post_commithook_properties
        )
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
            memory_limit=limit_of(max_spill_size, memory_limit),
            progress=progress,
            writer_properties=writer_properties,
            min_commit_interval=min_commit_interval,
            post_commithook_properties=post_commithook_properties,
            max_temp_directory_size=max_temp_directory_size,
        )

    def z_order(
        self,
        columns: str | Iterable[str],
        partition_filters: str | FilterLike | None = None,
        target_size: int | None = None,
        max_concurrent_tasks: int | None = None,
        max_spill_size: int | None = None,
        max_temp_directory_size: int | None = None,
        min_commit_interval: int | float | timedelta | None = None,
        writer_properties: WriterProperties | Any | None = None,
        *args: Any,
        commit_properties: CommitProperties | Any | None = None,
        post_commithook_properties: PostCommitHookProperties | Any | None = None,
        memory_limit: int | None = None,
        progress: Progress = False,
    ) -> dict[str, Any]:
        """Z-orders the table by ``columns`` and reloads it at the latest version.

        Every file of each selected partition is rewritten with its rows sorted along the
        Z-order curve of the columns (interleaved bits of each column's rank, the ranks from a
        sample), in files of about ``target_size``; the new files get statistics for the
        columns. A filter on any of them then reads few files. The number of new files is
        the partition's bytes over ``target_size``: a target smaller than the files rewritten
        makes more files than before (deltalake's ``z_order`` too).

        Args:
            columns: top-level, non-partition columns (1 to 64; more than 4 helps little).
            partition_filters, target_size, max_temp_directory_size, min_commit_interval
                (a unit is a partition), writer_properties, commit_properties,
                post_commithook_properties: as for ``compact`` (deltalake's parameters in its
                order).
            max_concurrent_tasks: partitions rewritten at once (default: the number of cores).
            max_spill_size, memory_limit: the same limit (give one): bytes of rows held in
                memory, over all partitions (default 128 MiB); beyond it rows spill to Arrow
                files in the temporary directory (``TMPDIR``). The parquet writer's row groups
                come on top.
            progress: as for ``compact`` (a unit is a partition).

        Returns:
            the metrics of ``compact`` (``preserveInsertionOrder`` False).

        Raises:
            InvalidArgumentError: unknown, nested, repeated or partition columns; a clustered
                table (``compact`` clusters it); a setting deltalog cannot honour.
            CommitConflictError: a concurrent commit removed a file being rewritten.
        """
        from deltalog.table.optimize_args import memory_limit as limit_of, split_commit_args

        commit_properties, post_commithook_properties = split_commit_args(
            "z_order", args, commit_properties, post_commithook_properties
        )
        names = [columns] if isinstance(columns, str) else list(columns)
        return self._run(
            "zorder",
            partition_filters,
            target_size,
            max_concurrent_tasks,
            commit_properties,
            columns=names,
            memory_limit=limit_of(max_spill_size, memory_limit),
            progress=progress,
            writer_properties=writer_properties,
            min_commit_interval=min_commit_interval,
            post_commithook_properties=post_commithook_properties,
            max_temp_directory_size=max_temp_directory_size,
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


def _run_units(
    table: DeltaTable,
    layout: str,
    columns: list[str] | None,
    full: bool,
    sql: str | None,
    target_size: int | None,
    tasks: int | None,
    memory_limit: int | None,
    props: CommitProperties,
    report: Callable[[int, int, int, int], None] | None,
    parquet: str | None = None,
    interval: float | None = None,
) -> tuple[dict[str, Any], int]:
    """The OPTIMIZE of ``_native.optimize`` driven unit by unit (the same plan, rewrites and
    commit as the distributed one): reporting after each unit, and with ``interval``
    committing the units done whenever that many seconds passed since the last commit (each
    such commit removes files no other one touches, so they never conflict with each other).
    Returns the native metrics summed over the commits and the most files in one unit."""
    import os
    import time

    from deltalog.table.optimize_args import merged_sizes

    plan = _native.optimize_plan(table._raw, layout, columns, full, sql, target_size)
    target, units, considered, partitions = plan
    sizes = {a["path"]: a["size"] for a in table.get_add_actions().to_pylist()}
    unit_bytes = [sum(sizes.get(p, 0) for p in unit) for unit in units]
    total = sum(unit_bytes)
    workers = max(1, min(tasks or os.cpu_count() or 2, len(units) or 1))
    # The limit covers every unit running at once, as in the native run.
    per_task = max(1, (memory_limit or _MEMORY_LIMIT) // workers)
    info = props.commit_info_json()
    pending: list[tuple[int, tuple[list[str], int, int, int]]] = []
    commits: list[dict[str, Any]] = []
    committed: set[int] = set()  # the results (by identity) of committed units
    last = time.monotonic()

    def commit() -> None:
        nonlocal last
        done_units = [units[i] for i, _ in pending]
        part = (target, done_units, considered, partitions)
        results = [r for _, r in pending]
        try:
            commits.append(
                _native.optimize_commit(table._raw, layout, part, results, columns, full, sql, info)
            )
        except InterruptedAfterCommit:
            committed.update(id(r) for r in results)
            raise
        committed.update(id(r) for r in results)
        pending.clear()
        last = time.monotonic()

    done = done_bytes = 0
    if report is not None:
        report(0, len(units), 0, total)
    pool = ThreadPoolExecutor(max_workers=workers)
    futures: dict[Any, int] = {}
    try:
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
            pending.append((futures[future], future.result()))
            done += 1
            done_bytes += unit_bytes[futures[future]]
            if report is not None:
                report(done, len(units), done_bytes, total)
            if interval is not None and time.monotonic() - last >= interval:
                commit()
        if pending or not commits:
            commit()  # the rest (with no units at all: the metrics, and no commit)
    except KeyboardInterrupt as e:
        # Ctrl-C: no unit starts any more, the running ones (native calls on the pool's
        # threads, which signals do not reach) finish, and the files of every unit not
        # committed are removed; units committed before stand (deltalog._interrupts).
        pool.shutdown(wait=True, cancel_futures=True)
        written = [
            f.result() for f in futures if f.done() and not f.cancelled() and f.exception() is None
        ]
        _remove_written(table, [r for r in written if id(r) not in committed])
        versions = [c["version"] for c in commits if c["version"] is not None]
        if versions and not isinstance(e, InterruptedAfterCommit):
            raise InterruptedAfterCommit(versions[-1]) from e
        raise
    finally:
        pool.shutdown(wait=True)
    rewritten = sum(len(u) for u in units)
    added = merged_sizes([c["filesAdded"] for c in commits])
    removed = merged_sizes([c["filesRemoved"] for c in commits])
    versions = [c["version"] for c in commits if c["version"] is not None]
    metrics: dict[str, Any] = {
        "version": versions[-1] if versions else None,
        "numFilesAdded": added["totalFiles"],
        "numFilesRemoved": removed["totalFiles"],
        "filesAdded": added,
        "filesRemoved": removed,
        "partitionsOptimized": partitions,
        "numBatches": sum(c["numBatches"] for c in commits),
        "totalConsideredFiles": considered,
        "totalFilesSkipped": max(0, considered - rewritten),
        "numRows": sum(c["numRows"] for c in commits),
        "spilledBytes": sum(c["spilledBytes"] for c in commits),
    }
    return metrics, max((len(u) for u in units), default=0)


def _remove_written(table: DeltaTable, results: list[tuple[list[str], int, int, int]]) -> None:
    """Deletes the new files of rewritten units that were not committed (best effort:
    files no version references are never read, and VACUUM removes what stays)."""
    actions = [json.loads(a) for result in results for a in result[0]]
    paths = [a["add"]["path"] for a in actions if "add" in a]
    if paths:
        try:
            _native.delete_files(table._raw, paths)
        except Exception:
            pass


class _Bar:
    """A progress bar on stderr: tqdm's when it is installed, else a plain line."""

    def __init__(self) -> None:
        self._tqdm: Any = None

    def __call__(self, done: int, units: int, done_bytes: int, total: int) -> None:
        try:
            from tqdm import tqdm
        except ImportError:
            has_tqdm = False
        else:
            has_tqdm = True
        if has_tqdm:
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
