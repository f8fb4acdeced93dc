"""Maintenance of a Delta table's log and files, methods of :class:`deltalog.DeltaTable`:
checkpoints, log compaction files ("Log Compaction Files"), version checksums, metadata
cleanup ("Metadata Cleanup") and VACUUM ("Writer Requirements for Vacuum Protocol Check").

None of them imports pyarrow: a maintenance job never pays its import.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from deltalog import _args, _native
from deltalog.table.timestamps import TimestampLike, _timestamp_ms
from deltalog.write.writer import check_snapshot_writable


class VacuumResult(list[str]):
    """The files VACUUM deleted (or would delete), with their count and total size."""

    def __init__(self, paths: list[str], bytes: int) -> None:
        super().__init__(paths)
        self.bytes = bytes

    @property
    def num_files(self) -> int:
        return len(self)


class TableMaintenance:
    """The maintenance methods of :class:`deltalog.DeltaTable`, which inherits this class."""

    if TYPE_CHECKING:
        # DeltaTable's.
        @property
        def _raw(self) -> _native.RawSnapshot: ...

        _storage_options: dict[str, str] | None

        @property
        def table_uri(self) -> str: ...

        def update_incremental(self) -> None: ...

    # -- maintenance -----------------------------------------------------------------------

    def create_checkpoint(
        self,
        kind: str | None = None,
        sidecars: int | None = None,
        *,
        classic_copy: bool = True,
    ) -> dict[str, Any]:
        """Writes a checkpoint of the loaded version and points ``_last_checkpoint`` at it.

        Args:
            kind: ``"classic"`` (``<v>.checkpoint.parquet``; V2 spec with
                ``checkpointMetadata`` on tables with the ``v2Checkpoint`` feature),
                ``"v2"``/``"v2-parquet"`` or ``"v2-json"`` (UUID-named V2 checkpoints, which
                need the ``v2Checkpoint`` feature), or ``None`` to follow the table property
                ``delta.checkpointPolicy`` (``classic`` by default).
            sidecars: how many sidecar files under ``_delta_log/_sidecars`` hold the file
                actions of a V2-spec checkpoint; ``0`` keeps them in the checkpoint itself;
                ``None`` decides by size (UUID-named checkpoints of 100,000 actions or more
                get one sidecar per million).
            classic_copy: a UUID-named checkpoint is also written under the classic name for
                readers that do not know UUID-named checkpoints (as the protocol recommends).

        Statistics are written as JSON (``delta.checkpoint.writeStatsAsJson``, default true)
        and as structs with ``partitionValues_parsed`` when
        ``delta.checkpoint.writeStatsAsStruct`` is true. Tombstones older than
        ``delta.deletedFileRetentionDuration`` are dropped.

        Returns:
            ``version``, ``files`` (table-relative paths written), ``num_actions``,
            ``num_add_files``, ``size_in_bytes``.
        """
        sidecars = _args.optional_integer("sidecars", sidecars, maximum=2**32 - 1)
        check_snapshot_writable(self._raw)
        result: dict[str, Any] = _native.create_checkpoint(
            self._raw, kind, sidecars, None, classic_copy
        )
        return result

    def compact_logs(
        self,
        start: int | None = None,
        end: int | None = None,
        *,
        starting_version: int | None = None,
        ending_version: int | None = None,
    ) -> str:
        """Writes a log compaction file, ``<start>.<end>.compacted.json``: the reconciled
        actions of commits ``start..=end`` ("Log Compaction Files"), which readers use instead
        of those commits. The commits stay (time travel into the range still reads them).

        Args:
            start: the first commit (default: the one after the loaded version's checkpoint).
            end: the last commit (default: the loaded version).
            starting_version, ending_version: deltalake's names of ``start`` and ``end``.

        Returns:
            The table-relative path of the file written.

        Raises:
            VersionNotFoundError: a commit of the range does not exist (e.g. cleaned up).
        """
        if starting_version is not None:
            if start is not None:
                raise TypeError("pass start or its alias starting_version, not both")
            start = starting_version
        if ending_version is not None:
            if end is not None:
                raise TypeError("pass end or its alias ending_version, not both")
            end = ending_version
        start = _args.optional_integer("start", start)
        end = _args.optional_integer("end", end)
        check_snapshot_writable(self._raw)
        return _native.compact_logs(self._raw, start, end)

    def validate_checksum(self) -> bool:
        """Checks the loaded version against its version checksum file (``<v>.crc``, written
        by deltalog after each commit): file count, table size, table id, schema and protocol
        versions must agree.

        Returns:
            True when a checksum file exists and agrees, False when there is none.

        Raises:
            CorruptLogError: the checksum and the log disagree (names the field).
        """
        return _native.validate_checksum(self._raw)

    def cleanup_metadata(self, *, now: TimestampLike | None = None) -> list[str]:
        """Deletes log files no version inside ``delta.logRetentionDuration`` (default 30
        days) needs ("Metadata Cleanup"): commits, checkpoints, version checksums and
        compaction files older than the newest checkpoint before the cutoff, staged commits,
        and unreferenced sidecars a day old. Time travel inside the window keeps working.

        Args:
            now: the current time (for tests; default: the clock).

        Returns:
            The ``_delta_log``-relative names deleted.
        """
        latest = self._raw.load_version(None)
        check_snapshot_writable(latest)
        now_ms = None if now is None else _timestamp_ms(now)
        return _native.cleanup_metadata(latest, now_ms)

    def vacuum(
        self,
        retention_hours: int | None = None,
        dry_run: bool = True,
        enforce_retention_duration: bool = True,
        *,
        now: TimestampLike | None = None,
        progress: bool | None = None,
        full: bool | None = None,
        keep_versions: list[int] | None = None,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> VacuumResult:
        """Deletes files under the table root that no version inside the retention window
        references and that are older than it: data files, deletion vector files and change
        data files. ``_delta_log`` is never touched.

        Args:
            retention_hours: the retention; default ``delta.deletedFileRetentionDuration``
                (7 days). A shorter one is refused while ``enforce_retention_duration`` is true.
            dry_run: only list the files (the default, as in ``deltalake``).
            now: the current time (for tests; default: the clock).
            progress: show a progress bar on stderr (default: when stderr is a terminal and
                more than 1,000 files go).
            full: deltalake's mode. deltalog's VACUUM lists the whole table root, as Delta
                Spark's does: that is ``full=True`` and the default here (deltalake's default
                is ``False``). ``full=False`` ("lite") only deletes files that remove actions
                in the commits still in ``_delta_log`` name (and their deletion vector
                files), never files the log never knew.
            keep_versions: versions whose files (and deletion vector files) are kept whatever
                the retention says (deltalake's).
            commit_properties: extra commitInfo fields of the VACUUM START / END commits
                (no application transaction: VACUUM changes no data).
            post_commithook_properties: as for OPTIMIZE (deltalake's).

        The latest version is vacuumed, after a full writer-protocol check (always: this is
        what the ``vacuumProtocolCheck`` feature asks of every VACUUM).

        Returns:
            The table-relative paths deleted (or, with ``dry_run``, to be deleted), as a list
            that also carries ``num_files`` and ``bytes``.
        """
        latest = self._raw.load_version(None)
        # "Writer Requirements for Vacuum Protocol Check": an unconditional write-protocol
        # check, so that files of writer features deltalog does not know are never deleted.
        check_snapshot_writable(latest)
        retention_ms = (
            None
            if retention_hours is None
            else _args.hours_to_ms("retention_hours", retention_hours)
        )
        now_ms = None if now is None else _timestamp_ms(now)
        from deltalog.table import optimize_args
        from deltalog.table.interop import arguments as compat_args

        props = optimize_args.commit_properties(commit_properties)
        cleanup = compat_args.check_hooks(post_commithook_properties)
        plan = _native.vacuum_plan(latest, retention_ms, enforce_retention_duration, now_ms)
        if full is False:
            named = _tombstoned_paths(self.table_uri, latest, self._storage_options)
            plan = [(p, size) for p, size in plan if p in named]
        if keep_versions:
            kept = _paths_of_versions(latest, keep_versions)
            plan = [(p, size) for p, size in plan if p not in kept]
        result = VacuumResult([p for p, _ in plan], bytes=sum(size for _, size in plan))
        if dry_run or not plan:
            return result
        # Like Delta Spark and ``deltalake``, a VACUUM that deletes files is recorded in the
        # table's history: a "VACUUM START" commit before the first deletion and a "VACUUM END"
        # commit after the last (commitInfo only; neither changes the table's state).
        default_ms = _native.duration_property_ms(latest, "delta.deletedFileRetentionDuration")
        # Parameter values as JSON text, as Delta Spark writes them.
        start_parameters = {
            "retentionCheckEnabled": json.dumps(enforce_retention_duration),
            "defaultRetentionMillis": str(default_ms),
        }
        if retention_ms is not None:
            start_parameters["specifiedRetentionMillis"] = str(retention_ms)
        custom = dict(props.custom_metadata)
        started = self._log_vacuum(
            latest,
            "VACUUM START",
            start_parameters,
            {"numFilesToDelete": len(result), "sizeOfDataToDelete": result.bytes},
            custom,
        )
        show = progress if progress is not None else (sys.stderr.isatty() and len(plan) > 1000)
        done = 0
        step = 1000
        status = "FAILED"
        try:
            for i in range(0, len(plan), step):
                done += _native.delete_files(latest, result[i : i + step])
                if show:
                    print(
                        f"\rVACUUM {self.table_uri}: {done:,}/{len(plan):,} files",
                        end="",
                        file=sys.stderr,
                        flush=True,
                    )
            status = "COMPLETED"
        finally:
            if show:
                print(file=sys.stderr)
            directories = {p.rpartition("/")[0] for p in result[:done]}
            ended = self._log_vacuum(
                latest.advance(started),
                "VACUUM END",
                {"status": status},
                {"numDeletedFiles": done, "numVacuumedDirectories": len(directories)},
                custom,
            )
            self.update_incremental()
        compat_args.run_hooks(self, cleanup, ended)
        return result

    def _log_vacuum(
        self,
        read: _native.RawSnapshot,
        operation: str,
        parameters: dict[str, str],
        metrics: dict[str, int],
        custom: dict[str, Any] | None = None,
    ) -> int:
        """Commits a commitInfo-only version recording a VACUUM step; returns its version."""
        info = {**(custom or {}), "operationMetrics": {k: str(v) for k, v in metrics.items()}}
        return _native.commit_actions(
            self.table_uri,
            read.version(),
            operation,
            [],
            json.dumps(parameters),
            True,
            None,
            None,
            json.dumps(info),
            self._storage_options,
            read,
        )


def _tombstoned_paths(
    uri: str, snapshot: _native.RawSnapshot, storage_options: dict[str, str] | None
) -> set[str]:
    """Table-relative paths (URI-decoded) of the files ``remove`` actions name in the commits
    still in ``_delta_log`` ("Add File and Remove File"), with their deletion vector files:
    what a lite VACUUM may delete."""
    from urllib.parse import unquote

    from deltalog.table.interop.deletion_vectors import relative_dv_path

    named: set[str] = set()
    for version, _ts, _info in snapshot.history(None):
        data = _native.read_log_file(uri, f"{version:020d}.json", storage_options)
        for line in (data or b"").splitlines():
            if b'"remove"' not in line:
                continue
            remove = json.loads(line).get("remove")
            if not remove:
                continue
            named.add(unquote(remove["path"]))
            dv = remove.get("deletionVector")
            if dv:
                path = relative_dv_path(
                    {"storage_type": dv["storageType"], "path_or_inline_dv": dv["pathOrInlineDv"]}
                )
                if path is not None:
                    named.add(path)
    return named


def _paths_of_versions(snapshot: _native.RawSnapshot, versions: list[int]) -> set[str]:
    """The files (and deletion vector files) the given versions read."""
    from deltalog.table.interop.deletion_vectors import relative_dv_path

    kept: set[str] = set()
    for version in versions:
        old = snapshot.load_version(_args.version("keep_versions", version))
        adds = old.add_actions().read_all()
        kept.update(adds.column("path").to_pylist())
        for dv in adds.column("deletion_vector").to_pylist():
            if dv is not None and dv["storage_type"] is not None:
                path = relative_dv_path(dv)
                if path is not None:
                    kept.add(path)
    return kept
