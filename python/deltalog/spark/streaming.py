"""``spark.readStream.format("deltalog")``: a Delta table as a streaming source (issue #33,
item 3), on PySpark's Python streaming data source API (``DataSourceStreamReader`` with
admission control and ``Trigger.AvailableNow``, PySpark 4.2+).

What a query reads, as Delta's own streaming source does:

* without ``startingVersion`` / ``startingTimestamp``: the table's snapshot when the query
  started (its files, by path), then every later version's data;
* with them: the data every version from there on adds;
* a version's data: its ``add`` actions with ``dataChange`` true, in the commit's order
  (protocol: "Add File and Remove File": ``dataChange = false`` marks a rearrangement, e.g.
  OPTIMIZE, which a stream skips); each file read as of the version that added it (with its
  deletion vector then).

A version that removes data (``remove`` with ``dataChange`` true: DELETE, UPDATE, MERGE,
overwrite) is not an append: the query fails naming it, unless ``skipChangeCommits`` (such
versions are skipped whole) or ``ignoreChanges`` (their added files are delivered: rewritten
rows again) is set. A schema change fails the query too (restart it to take the new schema).

Offsets are ``{"version", "index", "snapshot"}``: everything up to and including file
``index`` of ``version`` (of the initial snapshot when ``snapshot``) is delivered. A version's
files and a snapshot's order are fixed, so a restarted query (Spark keeps the offsets in its
checkpoint) plans exactly the batches it planned before: nothing lost, nothing twice.

The initial offset is the one offset Spark does not keep: it asks the source for it again
whenever it needs the start of batch 0 (when planning it, when running it, and after a restart
before batch 0 committed), and a table that was appended to in between would give another
answer (the stream's starting snapshot, or ``startingVersion=latest``, would move). So the
initial offset is a marker (``"initial": true``) whose position this reader decides once (the
first call's), and batch 0 never leaves that first unit (the starting snapshot, or the
starting version): its end offset, which Spark writes to the checkpoint's offset log before
running it, names the unit, and :meth:`DeltaStreamReader.partitions` reads batch 0's start
from it. Every plan is then a function of logged offsets alone.
``maxFilesPerTrigger`` (default 1000) and ``maxBytesPerTrigger`` bound a batch (at least one
file); ``Trigger.AvailableNow`` reads what exists when the query starts, in such batches.

``readChangeFeed``: the change data feed of each version from ``startingVersion`` on (whole
versions per batch), the rows :meth:`deltalog.DeltaTable.load_cdf` gives.

A version the query needs whose commit is gone (metadata cleanup) or whose data files were
vacuumed fails the query with a message naming the version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)

from deltalog.exceptions import DeltaError, VersionNotFoundError
from deltalog.protocol.actions import schema_text

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from deltalog.table.delta_table import DeltaTable
    from deltalog.table.scan import ScanTask

#: ``maxFilesPerTrigger``'s default (Delta's).
MAX_FILES_PER_TRIGGER = 1000


class StreamError(DeltaError):
    """A streaming query cannot continue: a version that is not an append (without
    ``ignoreChanges`` / ``skipChangeCommits``), a schema change, or a version that is gone."""


@dataclass
class StreamPartition(InputPartition):
    """Files of one micro-batch read by one Spark task (their tasks' JSON)."""

    spec: str
    tasks: list[str]

    def __post_init__(self) -> None:
        super().__init__(None)


def _commit_lines(table: DeltaTable, version: int) -> list[dict[str, Any]]:
    """The actions of ``version``: the catalog's ratified commit when it still holds it
    (catalog-managed tables), else ``_delta_log/<version>.json``."""
    from deltalog import _native

    content: bytes | None = None
    client = table._catalog_client
    if client is not None:
        held = client.get_ratified_commits(version, version)
        if held.commits:
            c = held.commits[0]
            content = c.content
            if content is None and c.path is not None:
                name = c.path.rsplit("/", 1)[-1]
                content = _native.read_log_file(
                    table.table_uri, f"_staged_commits/{name}", table._storage_options
                )
    if content is None:
        content = _native.read_log_file(
            table.table_uri, f"{version:020d}.json", table._storage_options
        )
    if content is None:
        raise StreamError(
            f"version {version} of {table.table_uri} is no longer in the log (its commit was "
            "cleaned up): the stream cannot continue from there; restart it from a later "
            "startingVersion"
        )
    return [json.loads(line) for line in bytes(content).splitlines() if line.strip()]


class Changes:
    """What a version adds, and whether it is an append (the driver's reading of the log)."""

    def __init__(self, options: dict[str, str]) -> None:
        self.ignore = options.get("ignorechanges", "false").lower() == "true"
        self.skip = options.get("skipchangecommits", "false").lower() == "true"

    def added(self, table: DeltaTable, version: int, schema: str) -> list[dict[str, Any]]:
        """The ``add`` actions ``version`` makes with ``dataChange`` true, in commit order."""
        adds, removes, metadata = [], False, None
        for action in _commit_lines(table, version):
            if action.get("add") is not None:
                if action["add"].get("dataChange", True):
                    adds.append(action["add"])
            elif action.get("remove") is not None:
                removes = removes or bool(action["remove"].get("dataChange", True))
            elif action.get("metaData") is not None:
                metadata = action["metaData"]
        if metadata is not None and metadata.get("schemaString") != schema:
            raise StreamError(
                f"version {version} of {table.table_uri} changes the table's schema: restart "
                "the query to read it with the new schema"
            )
        if removes and not self.ignore:
            if self.skip:
                return []
            raise StreamError(
                f"version {version} of {table.table_uri} removes or rewrites data (a DELETE, "
                "UPDATE, MERGE or overwrite): a stream reads appends only; set "
                "skipChangeCommits (skip such versions) or ignoreChanges (read their new files)"
            )
        return adds


class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The streaming reader (see the module docs)."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self._options = options
        self._schema = schema
        self._changes = Changes(options)
        self._cdf = options.get("readchangefeed", "false").lower() == "true"
        self._until: int | None = None  # AvailableNow: the last version to read
        self._table: DeltaTable | None = None
        self._schema_string: str | None = None
        #: version -> (tasks of the files it adds, in commit order) (driver cache).
        self._version_tasks: dict[int, list[ScanTask]] = {}
        self._snapshot_tasks: tuple[int, list[ScanTask]] | None = None
        self._spec: str | None = None
        #: The initial offset, decided once (:meth:`initialOffset`).
        self._initial: dict[str, Any] | None = None

    # -- the table -------------------------------------------------------------------------

    def _latest(self) -> DeltaTable:
        from deltalog.spark.options import _open

        if self._table is None:
            self._table = _open(self._options)
            self._schema_string = self._table.metadata().schema_string
        else:
            self._table.update_incremental()
        return self._table

    def _at(self, version: int) -> DeltaTable:
        from deltalog.spark.options import _open

        try:
            return _open(self._options, version=version)
        except VersionNotFoundError as e:
            raise StreamError(
                f"version {version} is no longer available (its log was cleaned up): {e}"
            ) from e

    def _files(self, version: int) -> list[ScanTask]:
        """The tasks of the files ``version`` adds (an append's), in commit order: built from
        that commit's ``add`` actions alone ("Add File and Remove File"), with the read spec
        of the stream's schema, so a version costs one commit file, not a snapshot."""
        found = self._version_tasks.get(version)
        if found is None:
            table = self._table if self._table is not None else self._latest()
            schema = self._schema_string or schema_text(table.metadata())
            adds = self._changes.added(table, version, schema)
            if any("://" in str(a.get("path", "")) for a in adds):
                # Absolute URIs: the version's own scan decodes them as the core does.
                from urllib.parse import unquote

                wanted = {unquote(a["path"]): i for i, a in enumerate(adds)}
                tasks = [t for t in self._at(version).scan().tasks() if t.path in wanted]
                found = sorted(tasks, key=lambda t: wanted[t.path])
            else:
                from deltalog.table.scan import ScanTask

                spec = self._read_spec(table)
                found = [ScanTask(spec, json.dumps(_task_of(add))) for add in adds]
            self._version_tasks[version] = found
        return found

    def _read_spec(self, table: DeltaTable) -> str:
        """The read spec (JSON) of every file of the stream (one schema: a schema change
        stops the stream)."""
        if self._spec is None:
            self._spec = table.scan()._raw.spec_json()
        return self._spec

    def _snapshot(self, version: int) -> list[ScanTask]:
        if self._snapshot_tasks is None or self._snapshot_tasks[0] != version:
            tasks = sorted(self._at(version).scan().tasks(), key=lambda t: t.path)
            self._snapshot_tasks = (version, tasks)
        return self._snapshot_tasks[1]

    # -- offsets ---------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        """Where the stream starts: decided on the first call and the same on every later one
        (see the module docs), with the ``initial`` marker."""
        if self._initial is None:
            table = self._latest()
            start = self._starting_version(table)
            if start is not None:
                self._initial = _initial(start, snapshot=False)
            elif self._cdf:
                raise ValueError("readChangeFeed needs startingVersion or startingTimestamp")
            else:
                self._initial = _initial(table.version(), snapshot=True)
        return dict(self._initial)

    def _start_of(self, start: dict[str, Any], end: dict[str, Any] | None = None) -> dict[str, Any]:
        """The position ``start`` stands for. An initial offset names no position Spark kept:
        batch 0's end does (its unit is where the stream started), else (planning batch 0)
        this reader's own first answer."""
        if not start.get("initial"):
            return start
        if end is not None and not end.get("initial"):
            return {"version": end["version"], "index": -1, "snapshot": bool(end["snapshot"])}
        first = self.initialOffset()
        return {"version": first["version"], "index": -1, "snapshot": first["snapshot"]}

    def _starting_version(self, table: DeltaTable) -> int | None:
        text = self._options.get("startingversion")
        if text is not None:
            return table.version() + 1 if text.lower() == "latest" else int(text)
        stamp = self._options.get("startingtimestamp")
        if stamp is not None:
            from deltalog.table.timestamps import _timestamp_ms

            # The first version committed at or after the timestamp (Delta's rule).
            wanted = int(stamp) if stamp.strip().isdigit() else _timestamp_ms(stamp)
            later = [v for v, ts, _ in table._raw.history() if ts >= wanted]
            return min(later) if later else table.version() + 1
        return None

    def getDefaultReadLimit(self) -> ReadLimit:
        files = self._options.get("maxfilespertrigger")
        size = self._options.get("maxbytespertrigger")
        if size is not None:
            return ReadMaxBytes(_bytes(size))
        return ReadMaxFiles(int(files) if files else MAX_FILES_PER_TRIGGER)

    def prepareForTriggerAvailableNow(self) -> None:
        self._until = self._latest().version()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        latest = self._latest().version()
        if self._until is not None:
            latest = min(latest, self._until)
        # Batch 0 (from the initial offset) stays in the stream's first unit, so that its end
        # offset alone says where the stream started (module docs).
        first_batch = bool(start.get("initial"))
        position = self._start_of(start)
        if self._cdf:
            return self._latest_cdf(start, position, latest, limit, first_batch)
        max_files = limit.max_files if isinstance(limit, ReadMaxFiles) else None
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        taken, size = 0, 0
        end = dict(start)
        version, index, snapshot = position["version"], position["index"], position["snapshot"]
        while snapshot or version <= latest:
            files = self._snapshot(version) if snapshot else self._files(version)
            for i in range(index + 1, len(files)):
                full = max_files is not None and taken >= max_files
                full = full or (
                    max_bytes is not None and taken > 0 and size + (files[i].size or 0) > max_bytes
                )
                if full:
                    return end
                taken += 1
                size += files[i].size or 0
                end = {"version": version, "index": i, "snapshot": snapshot}
            # This version (or the snapshot) is delivered whole by this batch.
            end = {"version": version, "index": len(files) - 1, "snapshot": snapshot}
            if first_batch:
                return end
            # After the snapshot of v0 comes version v0 + 1; after version v, v + 1.
            version, index, snapshot = version + 1, -1, False
        return end

    def _latest_cdf(
        self,
        start: dict[str, Any],
        position: dict[str, Any],
        latest: int,
        limit: ReadLimit,
        first_batch: bool,
    ) -> dict[str, Any]:
        first = position["version"] if position["index"] == -1 else position["version"] + 1
        if first > latest:
            return start
        max_versions = limit.max_files if isinstance(limit, ReadMaxFiles) else None
        last = latest if max_versions is None else min(latest, first + max_versions - 1)
        if first_batch:
            last = first  # batch 0: the starting version alone (module docs)
        return {"version": last, "index": 0, "snapshot": False}

    # -- batches ---------------------------------------------------------------------------

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        if self._cdf:
            return self._cdf_partitions(start, end)
        return _packed(self.batch_tasks(start, end))

    def batch_tasks(self, start: dict[str, Any], end: dict[str, Any]) -> list[ScanTask]:
        """The files of the batch from ``start`` (exclusive) to ``end``, in stream order."""
        tasks: list[ScanTask] = []
        if start == end:
            return []
        start = self._start_of(start, end)
        version, index, snapshot = start["version"], start["index"], start["snapshot"]
        last_unit = (end["version"], end["snapshot"])
        while snapshot or version <= end["version"]:
            files = self._snapshot(version) if snapshot else self._files(version)
            stop = end["index"] if (version, snapshot) == last_unit else len(files) - 1
            tasks.extend(files[index + 1 : stop + 1])
            if (version, snapshot) == last_unit:
                break
            # After the snapshot of v0 comes version v0 + 1; after version v, v + 1.
            version, index, snapshot = version + 1, -1, False
        return tasks

    def _cdf_partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        if start == end:
            return []
        start = self._start_of(start, end)
        first = start["version"] if start["index"] == -1 else start["version"] + 1
        if first > end["version"]:
            return []
        table = self._at(end["version"])
        scan = table.scan_cdf(starting_version=first, ending_version=end["version"])
        return _packed(scan.tasks())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from deltalog import _native
        from deltalog.spark.options import _storage_options
        from deltalog.spark.types import conform, exchange_schema

        if not isinstance(partition, StreamPartition):
            return
        target = exchange_schema(self._schema)
        raw = _native.RawScan.from_json(
            partition.spec, partition.tasks, _storage_options(self._options)
        )
        for batch in raw.to_stream():
            if batch.num_rows:
                yield conform(batch, target)

    def commit(self, end: dict[str, Any]) -> None:
        # Forget what the delivered versions cost to plan.
        done = end["version"] if not end["snapshot"] else -1
        for v in [v for v in self._version_tasks if v < done]:
            del self._version_tasks[v]

    def stop(self) -> None:
        self._version_tasks.clear()
        self._snapshot_tasks = None


def _initial(version: int, snapshot: bool) -> dict[str, Any]:
    """An initial offset: the stream's first unit, nothing of it delivered."""
    return {"version": version, "index": -1, "snapshot": snapshot, "initial": True}


def _task_of(add: dict[str, Any]) -> dict[str, Any]:
    """A scan task's description of a file from its ``add`` action (a relative path): the
    path URI-decoded,
    ``numRecords`` from the statistics ("Per-file Statistics"), the row tracking fields."""
    from urllib.parse import unquote

    records = None
    stats = add.get("stats")
    if isinstance(stats, str) and stats:
        try:
            value = json.loads(stats).get("numRecords")
        except ValueError:
            value = None
        records = int(value) if isinstance(value, int) else None
    return {
        "path": unquote(str(add["path"])),
        "size": add.get("size"),
        "partitionValues": add.get("partitionValues") or {},
        "deletionVector": add.get("deletionVector"),
        "baseRowId": add.get("baseRowId"),
        "defaultRowCommitVersion": add.get("defaultRowCommitVersion"),
        "numRecords": records,
    }


def _packed(tasks: list[ScanTask], per_partition: int = 64) -> list[InputPartition]:
    """A batch's tasks in partitions of at most ``per_partition`` files (one read spec each)."""
    parts: list[InputPartition] = []
    by_spec: dict[str, list[str]] = {}
    for t in tasks:
        spec, task = t.to_json()
        by_spec.setdefault(spec, []).append(task)
    for spec, jsons in by_spec.items():
        for i in range(0, len(jsons), per_partition):
            parts.append(StreamPartition(spec, jsons[i : i + per_partition]))
    return parts


def _bytes(text: str) -> int:
    """``maxBytesPerTrigger``: a number of bytes, or with a unit (``10m``, ``1g``, ``512k``)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    text = text.strip().lower().removesuffix("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)
