"""The part MERGE, DELETE and UPDATE computed by Spark (:mod:`deltalog.spark.dml.operations`)
share: the
target's rows read on the executors, each tagged with its data file and its index there
(:func:`target_frame`); the new rows written by the executors and the one commit
(:class:`_Rewrite`: deletion vectors or copy on write, spec "Deletion Vectors"; change data
files, "Add CDC File"); the check of what this path cannot do, and the columns the frames carry.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.exceptions import InvalidArgumentError, UnsupportedFeatureError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.table.delta_table import DeltaTable

#: Columns the target frame carries besides the table's: the data file of each row and the
#: row's ordinal among the file's (live) rows, which together identify a target row.
FILE_COLUMN = "_deltalog_file"
ROW_COLUMN = "_deltalog_row"
#: A target row's stable row ID where the table tracks rows ("Row Tracking"): its
#: materialized value, or null where the row's ID is its file's ``baseRowId`` plus its index.
ROW_ID_COLUMN = "_deltalog_row_id"
#: The clause that acts on each output row.
ACTION_COLUMN = "_deltalog_action"
#: Marks the source side of the join (not null: the target row has a match).
SOURCE_MARK = "_deltalog_source"
KEEP = "keep"
#: Prefix of the columns holding a target row's values before an update (the change feed's
#: `update_preimage` rows), carried when the table's change feed is on.
PRE = "_deltalog_pre_"


def _check_rewritable(table: DeltaTable) -> None:
    """What this path cannot do correctly is refused up front."""
    from deltalog.write.writer import check_snapshot_writable

    check_snapshot_writable(table._raw)


def lineage_columns(table: DeltaTable) -> tuple[str, str] | None:
    """The materialized row ID and row commit version columns of a table whose rows keep
    their lineage (``delta.enableRowTracking`` with the ``rowTracking`` feature: "Writer
    Requirements for Row Tracking"), else None."""
    config = table.metadata().configuration
    features = set(table.protocol().writer_features or ())
    if "rowTracking" not in features or str(config.get("delta.enableRowTracking", "")) != "true":
        return None
    ids = config.get("delta.rowTracking.materializedRowIdColumnName")
    versions = config.get("delta.rowTracking.materializedRowCommitVersionColumnName")
    if not ids or not versions:
        raise UnsupportedFeatureError(
            f"the table {table.table_uri} tracks rows but names no materialized row tracking "
            'columns (spec "Writer Requirements for Row Tracking")'
        )
    return str(ids), str(versions)


def target_frame(
    spark: SparkSession, table: DeltaTable, files: Sequence[Any]
) -> tuple[DataFrame, Callable[[str], str]]:
    """The rows of ``files`` (scan tasks of ``table``) as a DataFrame with the table's columns
    plus :data:`FILE_COLUMN` and :data:`ROW_COLUMN`, and the function mapping a
    :data:`FILE_COLUMN` value to the task's path.

    On Spark's own parquet scan where :func:`deltalog.spark.read.native.plan_native_read` can
    express the read (Spark prunes the columns the join does not need; a row is its file's
    ``_metadata.file_path`` and ``row_index``, its index in the file, deleted rows counted, as
    "Deletion Vector Format" counts them; files with deletion vectors through the JVM
    companion, which drops their deleted rows); else read on the executors by
    deltalog's reader (:func:`_source_target_frame`). Either way an INFO line on the
    ``deltalog.spark`` logger says which (:func:`log_target`)."""
    from deltalog.spark.read import native as nr

    lineage = lineage_columns(table)
    if not files:
        reason = "no file to read"
    else:
        try:
            hidden = [(lineage[0], ROW_ID_COLUMN)] if lineage is not None else []
            frame = nr.plan_native_read(
                spark, table, None, files, (FILE_COLUMN, ROW_COLUMN), hidden
            )
            key = nr.file_key(table, files, frame)
        except nr.NativeReadUnsupported as e:
            reason = e.reason
        else:
            log_target(table, "native parquet scan")
            return frame, key
    log_target(table, f"data source ({reason})")
    # Spark cannot size a Python source's output (it sees a handful of task rows), so it
    # would take the target for small and broadcast it: the sort-merge hint keeps the target
    # a streamed, shuffled side of every join it is in.
    return _source_target_frame(spark, table, files, lineage).hint("merge"), _same


def log_target(table: DeltaTable, how: str) -> None:
    """The INFO line of how a DML statement reads its target (docs/spark.md)."""
    from deltalog.spark.read.native import log

    log.info("DML target of %s: %s", table.table_uri, how)


def _same(path: str) -> str:
    return path


def _source_target_frame(
    spark: SparkSession,
    table: DeltaTable,
    files: Sequence[Any],
    lineage: tuple[str, str] | None,
) -> DataFrame:
    """:func:`target_frame` read on the executors by deltalog's native reader (with
    :data:`ROW_ID_COLUMN` last when the table tracks rows)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from deltalog.spark.read.source import partitions_of
    from deltalog.spark.tasks import _storage_options_of
    from deltalog.spark.types import exchange_schema, spark_schema

    schema = StructType(
        [
            *spark_schema(table.schema()).fields,
            StructField(FILE_COLUMN, StringType(), False),
            StructField(ROW_COLUMN, LongType(), False),
            *([StructField(ROW_ID_COLUMN, LongType())] if lineage is not None else []),
        ]
    )
    partitions = partitions_of(files, parallelism=spark.sparkContext.defaultParallelism)
    if not partitions:
        return spark.createDataFrame([], schema)
    target = exchange_schema(schema)
    storage = _storage_options_of(table)

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for index in b.column(0).to_pylist():
                yield from partitions[index].tagged_batches(target, storage, lineage)

    indexes = spark.createDataFrame([(i,) for i in range(len(partitions))], "i int")
    return indexes.repartition(len(partitions)).mapInArrow(read, schema)


class _Rewrite:
    """The shared second half of MERGE, DELETE and UPDATE: rows (the table's columns, then
    :data:`ACTION_COLUMN`, :data:`FILE_COLUMN` and :data:`ROW_COLUMN`) written by the
    executors, then one commit.

    The rows that stay in a touched file never pass through Spark: the executors write only
    new rows (updated and inserted ones) and report the indexes of the rows that go, per file.
    Those rows are then taken away as Delta Spark would: masked by deletion vectors when the
    table writes them (``delta.enableDeletionVectors``; spec "Deletion Vectors"), else by copy
    on write, the touched files read again natively on the executors, their remaining rows
    written to new files, and the files removed."""

    def __init__(
        self, spark: SparkSession, table: DeltaTable, target_file_size: int | None
    ) -> None:
        from deltalog.write.writer import _target_file_size

        self.spark = spark
        self.table = table
        #: Rows copied into new files by copy on write, and every action added (data and
        #: change files; both set by :meth:`commit`).
        self.copied = 0
        self.added: list[str] = []
        self.target_file_size = _target_file_size(target_file_size)
        config = table.metadata().configuration
        features = set(table.protocol().writer_features or ())
        self.use_dv = (
            str(config.get("delta.enableDeletionVectors", "")).lower() == "true"
            and "deletionVectors" in features
        )
        #: The change feed is on: the executors also write change data files ("Add CDC
        #: File"), and the rows carry their values before an update (:data:`PRE` columns).
        self.cdf = str(config.get("delta.enableChangeDataFeed", "")).lower() == "true"
        #: The table tracks rows: updated rows keep their row IDs and copied rows their IDs
        #: and commit versions ("Writer Requirements for Row Tracking"); the rows carry
        #: :data:`ROW_ID_COLUMN`.
        self.lineage = lineage_columns(table)

    def write(
        self,
        rows: DataFrame,
        deleted: set[str],
        updated: set[str],
        inserted: set[str],
        file_key: Callable[[str], str] = _same,
        files: Sequence[Any] = (),
    ) -> tuple[list[str], dict[str, int], dict[str, list[int]]]:
        """Writes the new rows of ``rows`` on the executors (updated and inserted ones; deleted
        and unchanged rows are not written). Returns the ``add`` (and ``cdc``) actions, the
        row counts, and the indexes of the rows that go (deleted or updated) per file (by the
        task's path: ``file_key`` maps the frame's :data:`FILE_COLUMN` values to it). On a
        table tracking rows, updated rows are written with their row IDs (the materialized
        value, else the ``baseRowId`` of their file among ``files`` plus their index)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        from deltalog.spark.tasks import _storage_options_of, held_commits

        table = self.table
        uri, version = table.table_uri, table.version()
        storage = _storage_options_of(table)
        held = held_commits(table)
        size = self.target_file_size
        columns = [f.name for f in table.schema()]
        cdf = self.cdf
        masked_codes = sorted(deleted | updated)
        dropped = sorted(deleted | {KEEP})
        rows = rows.filter(F.col(ACTION_COLUMN) != KEEP)
        lineage = self.lineage is not None
        updated_codes = pa.array(sorted(updated), pa.string())
        bases = {t.path: _base_row_id(t) for t in files} if lineage else {}

        def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from deltalog import _native
            from deltalog.spark.tasks import task_snapshot, write_to_files

            counts = {"deleted": 0, "updated": 0, "inserted": 0, "copied": 0}
            masks: dict[str, list[int]] = {}
            changes: list[pa.RecordBatch] = []
            keeping: list[pa.RecordBatch] = []  # updated rows with their row IDs

            def record_changes(batch: pa.RecordBatch, action: pa.Array) -> None:
                """The change feed's rows of ``batch`` ("Add CDC File")."""
                kinds = [
                    (deleted, "delete", columns),
                    (inserted, "insert", columns),
                    (updated, "update_preimage", [PRE + c for c in columns]),
                    (updated, "update_postimage", columns),
                ]
                for codes, kind, source in kinds:
                    if not codes:
                        continue
                    rows = batch.filter(pc.is_in(action, pa.array(sorted(codes), pa.string())))
                    if not rows.num_rows:
                        continue
                    data = rows.select(source).rename_columns(columns)
                    changes.append(
                        data.append_column(
                            "_change_type", pa.array([kind] * rows.num_rows, pa.string())
                        )
                    )

            def kept() -> Iterator[pa.RecordBatch]:
                for batch in batches:
                    action = batch.column(ACTION_COLUMN)
                    if cdf:
                        record_changes(batch, action)
                    for value, n in zip(*_value_counts(action), strict=True):
                        kind = (
                            "deleted"
                            if value in deleted
                            else "updated"
                            if value in updated
                            else "inserted"
                            if value in inserted
                            else "copied"
                        )
                        counts[kind] += n
                    gone = batch.filter(pc.is_in(action, pa.array(masked_codes, pa.string())))
                    for path, index in zip(
                        gone.column(FILE_COLUMN).to_pylist(),
                        gone.column(ROW_COLUMN).to_pylist(),
                        strict=True,
                    ):
                        masks.setdefault(path, []).append(index)
                    keep = pc.invert(pc.is_in(action, pa.array(dropped, pa.string())))
                    if lineage:
                        is_update = pc.is_in(action, updated_codes)
                        changed = batch.filter(is_update)
                        if changed.num_rows:
                            keeping.append(_with_row_ids(changed, columns, bases, file_key))
                        keep = pc.and_(keep, pc.invert(is_update))
                    out = batch.filter(keep).select(columns)
                    if out.num_rows:
                        yield out

            def snapshot() -> Any:
                return task_snapshot(uri, version, storage, held)

            # (An empty stream has counted and masked every row by the time it ends.)
            actions = write_to_files(snapshot, kept(), size)
            if keeping:
                reader = pa.RecordBatchReader.from_batches(keeping[0].schema, keeping)
                actions.extend(_native.write_rows_with_lineage(snapshot(), reader, size))
            if changes:
                reader = pa.RecordBatchReader.from_batches(changes[0].schema, changes)
                actions.extend(_native.write_change_files(snapshot(), reader, size))
            yield pa.record_batch(
                {
                    "actions": pa.array([json.dumps(actions)], pa.string()),
                    "counts": pa.array([json.dumps(counts)], pa.string()),
                    "masks": pa.array([json.dumps(masks)], pa.string()),
                }
            )

        out = StructType(
            [
                StructField("actions", StringType(), False),
                StructField("counts", StringType()),
                StructField("masks", StringType()),
            ]
        )
        adds: list[str] = []
        totals = {"deleted": 0, "updated": 0, "inserted": 0, "copied": 0}
        masks: dict[str, list[int]] = {}
        for row in rows.mapInArrow(write, out).collect():
            adds.extend(json.loads(row["actions"]))
            for k, v in json.loads(row["counts"]).items():
                totals[k] += v
            for path, indexes in json.loads(row["masks"]).items():
                masks.setdefault(file_key(path), []).extend(indexes)
        return adds, totals, masks

    def commit(
        self,
        operation: str,
        parameters: Mapping[str, Any],
        adds: list[str],
        masks: Mapping[str, list[int]],
        files: Sequence[Any],
        commit_properties: Any = None,
    ) -> tuple[int | None, int, int]:
        """One commit: with deletion vectors the ``masks`` (rows that go per file), else the
        files with rows in ``masks`` removed and their other rows copied; ``adds`` added;
        every file of ``files`` (the scan's tasks) in the read set. Returns the version (None
        when nothing changed), the files removed and the deletion vectors added."""
        from deltalog import _native

        removals: list[str] = []
        removed = vectors = 0
        gone: list[str] = []
        if self.use_dv:
            live = {t.path: _live_rows(t) for t in files}
            if masks:
                removals, vectors, whole = _native.mask_rows(
                    self.table._raw,
                    [(p, live[p], sorted(set(rows))) for p, rows in sorted(masks.items())],
                )
                removed = vectors + whole
        elif masks:
            copies, self.copied = self._copy_remaining(masks, files)
            adds = [*adds, *copies]
            gone = sorted(masks)
            removed = len(gone)
        self.added = list(adds)
        if not adds and not gone and not removals:
            return None, 0, 0
        tx = self.table.transaction(operation, **parameters)
        tx.add_actions([*removals, *adds])
        tx.remove_files(gone)
        tx.read_files(t.path for t in files)
        return tx.commit(commit_properties), removed, vectors

    def _copy_remaining(
        self, masks: Mapping[str, list[int]], files: Sequence[Any]
    ) -> tuple[list[str], int]:
        """Copy on write: each file with rows that go is read again on an executor (natively,
        every live row with its index), and its other rows are written to new files. Returns
        their ``add`` actions and the rows copied."""
        from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

        from deltalog.spark.read.source import every_row_spec
        from deltalog.spark.tasks import _storage_options_of, held_commits

        by_path = {t.path: t for t in files}
        lineage = self.lineage
        work = []
        for path, rows in sorted(masks.items()):
            spec, task = by_path[path].to_json()
            work.append((every_row_spec(spec, lineage), task, sorted(set(rows))))
        table = self.table
        uri, version = table.table_uri, table.version()
        storage = _storage_options_of(table)
        held = held_commits(table)
        size = self.target_file_size

        def copy(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from deltalog import _native
            from deltalog.spark.tasks import task_snapshot, write_to_files

            copied = 0

            def remaining() -> Iterator[pa.RecordBatch]:
                nonlocal copied
                for b in batches:
                    for spec, task, rows in zip(
                        b.column("spec").to_pylist(),
                        b.column("task").to_pylist(),
                        b.column("rows").to_pylist(),
                        strict=True,
                    ):
                        raw = _native.RawScan.from_json(spec, [task], storage)
                        gone = pa.array(rows, pa.int64())
                        for batch in raw.to_stream():
                            index = batch.column(batch.num_columns - 1).cast(pa.int64())
                            kept = batch.filter(pc.invert(pc.is_in(index, gone)))
                            # (with lineage, _row_id and _row_commit_version stay: copied
                            # rows keep both)
                            kept = kept.select(list(range(batch.num_columns - 1)))
                            if kept.num_rows:
                                copied += kept.num_rows
                                yield kept

            def snapshot() -> Any:
                return task_snapshot(uri, version, storage, held)

            if lineage is None:
                actions = write_to_files(snapshot, remaining(), size)
            else:
                stream = remaining()
                first = next(stream, None)
                actions = []
                if first is not None:
                    reader = pa.RecordBatchReader.from_batches(
                        first.schema, itertools.chain([first], stream)
                    )
                    actions = list(_native.write_rows_with_lineage(snapshot(), reader, size))
            yield pa.record_batch(
                {
                    "actions": pa.array([json.dumps(actions)], pa.string()),
                    "copied": pa.array([copied], pa.int64()),
                }
            )

        spark = self.spark
        frame = spark.createDataFrame(
            work,
            StructType(
                [
                    StructField("spec", StringType(), False),
                    StructField("task", StringType(), False),
                    StructField("rows", ArrayType(LongType()), False),
                ]
            ),
        )
        parallelism = max(1, min(len(work), spark.sparkContext.defaultParallelism))
        out = StructType(
            [StructField("actions", StringType(), False), StructField("copied", LongType())]
        )
        adds: list[str] = []
        copied = 0
        for row in frame.repartition(parallelism).mapInArrow(copy, out).collect():
            adds.extend(json.loads(row["actions"]))
            copied += row["copied"]
        return adds, copied


def _base_row_id(task: Any) -> int | None:
    """A file's ``baseRowId`` ("Row IDs"), from its scan task."""
    value = json.loads(task.to_json()[1]).get("baseRowId")
    return None if value is None else int(value)


def _with_row_ids(
    batch: pa.RecordBatch,
    columns: Sequence[str],
    bases: Mapping[str, int | None],
    file_key: Callable[[str], str],
) -> pa.RecordBatch:
    """``batch``'s table columns with ``_row_id`` (the materialized value, else the file's
    ``baseRowId`` plus the row's index: "Row IDs") and a null ``_row_commit_version`` (an
    updated row takes the commit's version)."""
    files = batch.column(FILE_COLUMN)
    distinct = pc.unique(files)
    base = pa.array([bases.get(file_key(f)) for f in distinct.to_pylist()], pa.int64())
    computed = pc.add(base.take(pc.index_in(files, value_set=distinct)), batch.column(ROW_COLUMN))
    ids = pc.coalesce(batch.column(ROW_ID_COLUMN).cast(pa.int64()), computed)
    if ids.null_count:
        raise RuntimeError("a file without baseRowId holds rows without a materialized row ID")
    arrays = [batch.column(c) for c in columns]
    arrays += [ids, pa.nulls(batch.num_rows, pa.int64())]
    return pa.RecordBatch.from_arrays(arrays, names=[*columns, "_row_id", "_row_commit_version"])


def _live_rows(task: Any) -> int:
    """A file's live rows (physical rows less its deletion vector's), as its log entry says;
    unknown without statistics (then never taken for empty)."""
    if task.num_records is None:
        return 2**63 - 1
    dv = task.deletion_vector or {}
    return int(task.num_records) - int(dv.get("cardinality") or 0)


def _value_counts(array: pa.Array) -> tuple[list[str], list[int]]:
    counted = pc.value_counts(array)
    return counted.field("values").to_pylist(), counted.field("counts").to_pylist()


def _kinds(actions: Sequence[str]) -> tuple[int, int]:
    """How many of the executors' actions add data files, and how many change data files."""
    changes = sum(1 for a in actions if "cdc" in json.loads(a))
    return len(actions) - changes, changes


def _column_key(name: str) -> str:
    return name.lower()  # Delta column names are case-insensitive


def _target_column(name: str, columns: Sequence[str], target_alias: str) -> str:
    """The table's column ``name`` names (``target.c`` or ``c``, case-insensitive)."""
    bare = name
    prefix = f"{target_alias}."
    if bare.lower().startswith(prefix.lower()):
        bare = bare[len(prefix) :]
    bare = bare.strip("`")
    for c in columns:
        if _column_key(c) == _column_key(bare):
            return c
    raise InvalidArgumentError(f"{name!r} is not a column of the target table {list(columns)}")


def _spark_fields(table: DeltaTable) -> list[Any]:
    from deltalog.spark.types import spark_schema

    return list(spark_schema(table.schema()).fields)
