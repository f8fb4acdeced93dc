"""MERGE, DELETE and UPDATE of a Delta table computed by Spark, committed once by deltalog.

For tables too big for one machine: Spark reads the target on its executors (deltalog's
native reader, each row tagged with its data file and its index in that file), evaluates the
join and the clauses (Spark SQL, over the aliases of :func:`merge`), and the executors write
the new rows with deltalog (``write_files``: statistics, partitioning, column mapping,
constraints). The driver then makes one commit under the conflict rules of any deltalog
transaction (every file read is in the transaction's read set). The rows that go leave their
files as Delta Spark takes them away: masked by deletion vectors when the table writes them
(``delta.enableDeletionVectors``), else by copy on write (the touched files removed, their
rows that stay copied into the new files). With the change data feed on, the executors also
write the change rows (``delete``, ``insert``, ``update_preimage``, ``update_postimage``) as
change data files ("Add CDC File"), so the feed shows exactly the rows the operation changed.

Semantics follow Delta Spark's ``MERGE INTO`` as :meth:`deltalog.DeltaTable.merge` does:
within each kind of clause (matched, not matched, not matched by source) the first clause
whose condition holds acts; a target row matched by several source rows is an error when a
MATCHED clause would modify it.

Not supported here (each a clear error, use :meth:`deltalog.DeltaTable.merge` /
``delete`` / ``update``): tables with row tracking (moved rows would lose their row IDs),
and identity columns the operation would have to generate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.exceptions import InvalidArgumentError, UnsupportedFeatureError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from deltalog.table import DeltaTable

#: Columns the target frame carries besides the table's: the data file of each row and the
#: row's ordinal among the file's (live) rows, which together identify a target row.
FILE_COLUMN = "_deltalog_file"
ROW_COLUMN = "_deltalog_row"
#: The clause that acts on each output row.
ACTION_COLUMN = "_deltalog_action"
#: Marks the source side of the join (not null: the target row has a match).
SOURCE_MARK = "_deltalog_source"
KEEP = "keep"
#: Prefix of the columns holding a target row's values before an update (the change feed's
#: `update_preimage` rows), carried when the table's change feed is on.
PRE = "_deltalog_pre_"


@dataclass
class _Clause:
    kind: str  # matched | not_matched | not_matched_by_source
    action: str  # update | update_all | delete | insert | insert_all
    predicate: str | None
    updates: dict[str, str]


def _check_rewritable(table: DeltaTable, operation: str) -> None:
    """What this path cannot do correctly is refused up front."""
    from deltalog.writer import check_snapshot_writable

    check_snapshot_writable(table._raw)
    config = table.metadata().configuration
    features = set(table.protocol().writer_features or ())
    if "rowTracking" in features or str(config.get("delta.enableRowTracking", "")) == "true":
        raise UnsupportedFeatureError(
            f"{operation} through Spark does not keep row IDs of copied rows, and the table "
            f'{table.table_uri} tracks rows (spec "Row Tracking"): use deltalog\'s own '
            f"{operation}"
        )


def target_frame(spark: SparkSession, table: DeltaTable, files: Sequence[Any]) -> DataFrame:
    """The rows of ``files`` (scan tasks of ``table``) as a DataFrame with the table's columns
    plus :data:`FILE_COLUMN` and :data:`ROW_COLUMN`, read on the executors."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from deltalog.spark.source import _storage_options_of, partitions_of
    from deltalog.spark.types import exchange_schema, spark_schema

    schema = StructType(
        [
            *spark_schema(table.schema()).fields,
            StructField(FILE_COLUMN, StringType(), False),
            StructField(ROW_COLUMN, LongType(), False),
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
                yield from partitions[index].tagged_batches(target, storage)

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
        from deltalog.writer import _target_file_size

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

    def write(
        self, rows: DataFrame, deleted: set[str], updated: set[str], inserted: set[str]
    ) -> tuple[list[str], dict[str, int], dict[str, list[int]]]:
        """Writes the new rows of ``rows`` on the executors (updated and inserted ones; deleted
        and unchanged rows are not written). Returns the ``add`` (and ``cdc``) actions, the
        row counts, and the indexes of the rows that go (deleted or updated) per file."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        from deltalog.spark.source import _storage_options_of, held_commits

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

        def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from deltalog import _native
            from deltalog.spark.source import task_snapshot, write_to_files

            counts = {"deleted": 0, "updated": 0, "inserted": 0, "copied": 0}
            masks: dict[str, list[int]] = {}
            changes: list[pa.RecordBatch] = []

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
                    out = batch.filter(keep).select(columns)
                    if out.num_rows:
                        yield out

            def snapshot() -> Any:
                return task_snapshot(uri, version, storage, held)

            # (An empty stream has counted and masked every row by the time it ends.)
            actions = write_to_files(snapshot, kept(), size)
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
                masks.setdefault(path, []).extend(indexes)
        return adds, totals, masks

    def commit(
        self,
        operation: str,
        parameters: Mapping[str, Any],
        adds: list[str],
        touched: Sequence[str],
        masks: Mapping[str, list[int]],
        files: Sequence[Any],
        commit_properties: Any = None,
    ) -> tuple[int | None, int, int]:
        """One commit: with deletion vectors the ``masks`` (rows that go per file), else the
        ``touched`` files removed; ``adds`` added; every file of ``files`` (the scan's tasks)
        in the read set. Returns the version (None when nothing changed), the files removed
        and the deletion vectors added."""
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

        from deltalog.spark.source import _storage_options_of, every_row_spec, held_commits

        by_path = {t.path: t for t in files}
        work = []
        for path, rows in sorted(masks.items()):
            spec, task = by_path[path].to_json()
            work.append((every_row_spec(spec), task, sorted(set(rows))))
        table = self.table
        uri, version = table.table_uri, table.version()
        storage = _storage_options_of(table)
        held = held_commits(table)
        size = self.target_file_size

        def copy(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from deltalog import _native
            from deltalog.spark.source import task_snapshot, write_to_files

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
                            kept = kept.select(list(range(batch.num_columns - 1)))
                            if kept.num_rows:
                                copied += kept.num_rows
                                yield kept

            actions = write_to_files(
                lambda: task_snapshot(uri, version, storage, held), remaining(), size
            )
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


def _metrics(
    version: int | None,
    counts: Mapping[str, int],
    scanned: int,
    added: int,
    removed: int,
    vectors: int,
    change_files: int,
    source_rows: int | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"version": version}
    if source_rows is not None:
        out["num_source_rows"] = source_rows
    out.update(
        {
            "num_target_rows_inserted": counts["inserted"],
            "num_target_rows_updated": counts["updated"],
            "num_target_rows_deleted": counts["deleted"],
            "num_target_rows_copied": counts["copied"],
            "num_target_files_scanned": scanned,
            "num_target_files_added": added,
            "num_target_files_removed": removed,
            "num_deletion_vectors_added": vectors,
            "num_added_change_files": change_files,
        }
    )
    return out


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


class SparkMerger:
    """A MERGE computed by Spark (:func:`merge`); the clauses as :class:`deltalog.TableMerger`'s,
    with conditions and values in Spark SQL over ``source_alias`` and ``target_alias``."""

    def __init__(
        self,
        table: DeltaTable,
        source: DataFrame,
        predicate: str,
        source_alias: str,
        target_alias: str,
        commit_properties: Any,
        target_file_size: int | None,
    ) -> None:
        self._table = table
        self._source = source
        self._predicate = predicate
        self._aliases = (source_alias, target_alias)
        self._clauses: list[_Clause] = []
        self._commit_properties = commit_properties
        self._target_file_size = target_file_size

    def _add(
        self, kind: str, action: str, predicate: str | None, updates: Mapping[str, str] | None
    ) -> SparkMerger:
        for column, value in (updates or {}).items():
            if not isinstance(value, str):
                raise TypeError(f"the value of {column!r} must be a SQL expression string")
        self._clauses.append(_Clause(kind, action, predicate, dict(updates or {})))
        return self

    def when_matched_update(
        self, updates: Mapping[str, str], predicate: str | None = None
    ) -> SparkMerger:
        """Matched target rows get ``updates`` (target column -> Spark SQL over both sides)."""
        return self._add("matched", "update", predicate, updates)

    def when_matched_update_all(self, predicate: str | None = None) -> SparkMerger:
        """Matched target rows take every column from the source row (``UPDATE SET *``)."""
        return self._add("matched", "update_all", predicate, None)

    def when_matched_delete(self, predicate: str | None = None) -> SparkMerger:
        """Matched target rows are deleted."""
        return self._add("matched", "delete", predicate, None)

    def when_not_matched_insert(
        self, updates: Mapping[str, str], predicate: str | None = None
    ) -> SparkMerger:
        """Source rows that match no target row are inserted with ``updates``; the other
        columns are null."""
        return self._add("not_matched", "insert", predicate, updates)

    def when_not_matched_insert_all(self, predicate: str | None = None) -> SparkMerger:
        """Source rows that match no target row are inserted as they are (``INSERT *``)."""
        return self._add("not_matched", "insert_all", predicate, None)

    def when_not_matched_by_source_update(
        self, updates: Mapping[str, str], predicate: str | None = None
    ) -> SparkMerger:
        """Target rows no source row matches get ``updates`` (Spark SQL over the target)."""
        return self._add("not_matched_by_source", "update", predicate, updates)

    def when_not_matched_by_source_delete(self, predicate: str | None = None) -> SparkMerger:
        """Target rows no source row matches are deleted."""
        return self._add("not_matched_by_source", "delete", predicate, None)

    def _codes(self, kind: str) -> list[tuple[str, _Clause]]:
        return [(f"{kind}:{i}", c) for i, c in enumerate(self._clauses) if c.kind == kind]

    def _values(
        self, clause: _Clause, columns: Sequence[str], source_columns: Sequence[str]
    ) -> dict[str, Column]:
        """The new value of each table column the clause sets (Spark columns)."""
        from pyspark.sql import functions as F

        source_alias, target_alias = self._aliases
        if clause.action in ("update_all", "insert_all"):
            by_key = {_column_key(c): c for c in source_columns}
            out = {}
            for c in columns:
                s = by_key.get(_column_key(c))
                if s is None:
                    if clause.action == "update_all":
                        raise InvalidArgumentError(
                            f"UPDATE SET * needs every target column in the source; it lacks {c!r}"
                        )
                    continue
                out[c] = F.col(f"`{source_alias}`.`{s}`")
            return out
        out = {}
        for name, value in clause.updates.items():
            column = _target_column(name, columns, target_alias)
            if column in out:
                raise InvalidArgumentError(f"MERGE sets column {column!r} twice")
            out[column] = F.expr(value)
        return out

    def execute(self) -> dict[str, Any]:
        """Runs the MERGE (Spark jobs, then one commit) and reloads the table at the latest
        version. Returns the metrics of :meth:`deltalog.TableMerger.execute`."""
        from pyspark.sql import functions as F

        table = self._table
        _check_rewritable(table, "MERGE")
        if not self._clauses:
            raise InvalidArgumentError("a MERGE needs at least one when_* clause")
        source_alias, target_alias = self._aliases
        spark = self._source.sparkSession
        columns = [f.name for f in table.schema()]
        by_source = self._codes("not_matched_by_source")
        # Every target row can be acted on by NOT MATCHED BY SOURCE; otherwise only files that
        # may hold the source's join keys need reading.
        keys = (
            None
            if by_source
            else _key_ranges(self._predicate, self._source, source_alias, target_alias, columns)
        )
        files = table.scan(filter=keys).tasks()
        types = {f.name: f.dataType for f in _spark_fields(table)}
        source_columns = self._source.columns
        # Spark cannot size a Python source's output (it sees a handful of task rows), so it
        # would take the target for small and broadcast it: the sort-merge hint keeps the
        # target a streamed, shuffled side of every join.
        target = target_frame(spark, table, files).alias(target_alias).hint("merge")
        source = self._source.withColumn(SOURCE_MARK, F.lit(True)).alias(source_alias)
        on = F.expr(self._predicate)
        matched = self._codes("matched")
        not_matched = self._codes("not_matched")

        def condition(clause: _Clause) -> Column:
            return F.expr(clause.predicate) if clause.predicate else F.lit(True)

        # 1. Which target rows a clause modifies: the join's pairs, classified.
        is_matched = F.col(f"`{source_alias}`.`{SOURCE_MARK}`").isNotNull()
        action = F.lit(KEEP)
        for code, clause in reversed(by_source):
            action = F.when(~is_matched & condition(clause), F.lit(code)).otherwise(action)
        for code, clause in reversed(matched):
            action = F.when(is_matched & condition(clause), F.lit(code)).otherwise(action)
        file_col = F.col(f"`{target_alias}`.`{FILE_COLUMN}`")
        row_col = F.col(f"`{target_alias}`.`{ROW_COLUMN}`")
        touched: list[str] = []
        if matched or by_source:
            pairs = target.join(source, on, "inner").select(
                file_col.alias("f"), row_col.alias("r"), action.alias("a")
            )
            per_row = pairs.groupBy("f", "r").agg(
                F.count(F.lit(1)).alias("n"),
                F.sum(F.when(F.col("a") != KEEP, 1).otherwise(0)).alias("m"),
            )
            per_file = (
                per_row.groupBy("f")
                .agg(
                    F.sum("m").alias("modified"),
                    F.max(F.when(F.col("m") > 0, F.col("n")).otherwise(0)).alias("ambiguous"),
                )
                .filter("modified > 0")
                .collect()
            )
            for row in per_file:
                if row["ambiguous"] > 1:
                    raise InvalidArgumentError(
                        "MERGE is ambiguous: several source rows match the same target row "
                        f"(in {row['f']}) and a MATCHED clause would modify it"
                    )
                if row["modified"] > 0:
                    touched.append(row["f"])
        if by_source:
            touched = [t.path for t in files]  # every unmatched row may be acted on
        touched = sorted(set(touched))

        rewrite = _Rewrite(spark, table, self._target_file_size)
        # 2. The rows to write: the touched files' rows with their clause's values, and the
        # source rows that match no target row.
        parts = []
        deleted: set[str] = set()
        updated: set[str] = set()
        inserted: set[str] = set()
        for code, clause in matched + by_source:
            (deleted if clause.action == "delete" else updated).add(code)
        if touched:
            rewritten = target.filter(file_col.isin(touched)).join(source, on, "left_outer")
            values: dict[str, Column] = {}
            for c in columns:
                value = F.col(f"`{target_alias}`.`{c}`")
                for code, clause in matched + by_source:
                    if clause.action == "delete":
                        continue
                    new = self._values(clause, columns, source_columns).get(c)
                    if new is not None:
                        value = F.when(F.col(ACTION_COLUMN) == code, new).otherwise(value)
                values[c] = value.cast(types[c]).alias(c)
            # (A target row matched twice is left alone by every clause, the ambiguity check
            # made sure: as a :data:`KEEP` row it is not written, however many times it joined.)
            classified = rewritten.select("*", action.alias(ACTION_COLUMN))
            before = (
                [F.col(f"`{target_alias}`.`{c}`").cast(types[c]).alias(PRE + c) for c in columns]
                if rewrite.cdf
                else []
            )
            parts.append(
                classified.select(
                    *values.values(),
                    F.col(ACTION_COLUMN),
                    F.col(FILE_COLUMN),
                    F.col(ROW_COLUMN),
                    *before,
                )
            )
        if not_matched:
            unmatched = source.join(target, on, "left_anti")
            insert_action = F.lit(None).cast("string")
            for code, clause in reversed(not_matched):
                insert_action = F.when(condition(clause), F.lit(code)).otherwise(insert_action)
            for code, _ in not_matched:
                inserted.add(code)
            staged = unmatched.select("*", insert_action.alias(ACTION_COLUMN)).filter(
                F.col(ACTION_COLUMN).isNotNull()
            )
            values = {}
            for c in columns:
                value = F.lit(None)
                for code, clause in not_matched:
                    new = self._values(clause, columns, source_columns).get(c)
                    if new is not None:
                        value = F.when(F.col(ACTION_COLUMN) == code, new).otherwise(value)
                values[c] = value.cast(types[c]).alias(c)
            parts.append(
                staged.select(
                    *values.values(),
                    F.col(ACTION_COLUMN),
                    F.lit(None).cast("string").alias(FILE_COLUMN),
                    F.lit(None).cast("long").alias(ROW_COLUMN),
                    *(
                        [F.lit(None).cast(types[c]).alias(PRE + c) for c in columns]
                        if rewrite.cdf
                        else []
                    ),
                )
            )
        counts = {"deleted": 0, "updated": 0, "inserted": 0, "copied": 0}
        adds: list[str] = []
        masks: dict[str, list[int]] = {}
        if parts:
            rows = parts[0]
            for p in parts[1:]:
                rows = rows.unionByName(p)
            adds, counts, masks = rewrite.write(rows, deleted, updated, inserted)
        version, removed, vectors = rewrite.commit(
            "MERGE",
            {
                "predicate": self._predicate,
                "matchedPredicates": [_describe(c) for c in self._clauses if c.kind == "matched"],
                "notMatchedPredicates": [
                    _describe(c) for c in self._clauses if c.kind == "not_matched"
                ],
                "notMatchedBySourcePredicates": [
                    _describe(c) for c in self._clauses if c.kind == "not_matched_by_source"
                ],
            },
            adds,
            touched,
            masks,
            files,
            self._commit_properties,
        )
        counts = {**counts, "copied": rewrite.copied}
        data, changes = _kinds(rewrite.added)
        return _metrics(
            version,
            counts,
            len(files),
            data + vectors,
            removed,
            vectors,
            changes,
            source_rows=self._source.count(),
        )


_PAIR = re.compile(r"^\s*`?(\w+)`?\s*\.\s*`?(\w+)`?\s*=\s*`?(\w+)`?\s*\.\s*`?(\w+)`?\s*$")


def _key_ranges(
    predicate: str,
    source: DataFrame,
    source_alias: str,
    target_alias: str,
    columns: Sequence[str],
) -> Any:
    """A deltalog predicate that every target row a source row can match satisfies: for each
    equality ``target.k = source.j`` the MERGE condition requires (a top-level conjunct), ``k``
    within the range of the source's ``j`` values. The target's files are pruned and skipped
    with it, as Delta Spark prunes a MERGE's target. None when the condition is not a plain
    conjunction or has no such equality."""
    import datetime as dt
    import decimal

    from pyspark.sql import functions as F

    import deltalog as dl

    if re.search(r"\bOR\b|\(|\bNOT\b", predicate, flags=re.IGNORECASE):
        return None  # only a plain conjunction is split safely
    pairs: list[tuple[str, str]] = []
    for part in re.split(r"\bAND\b", predicate, flags=re.IGNORECASE):
        found = _PAIR.match(part)
        if found is None:
            continue
        a_alias, a_col, b_alias, b_col = found.groups()
        sides = {a_alias.lower(): a_col, b_alias.lower(): b_col}
        if set(sides) != {source_alias.lower(), target_alias.lower()}:
            continue
        wanted_target = sides[target_alias.lower()].lower()
        wanted_source = sides[source_alias.lower()].lower()
        target_col = next((c for c in columns if c.lower() == wanted_target), None)
        source_col = next((c for c in source.columns if c.lower() == wanted_source), None)
        if target_col is not None and source_col is not None:
            pairs.append((target_col, source_col))
    if not pairs:
        return None
    aggregates = []
    for _, s in pairs:
        aggregates += [F.min(F.col(f"`{s}`")), F.max(F.col(f"`{s}`"))]
    bounds = source.agg(*aggregates).collect()[0]
    usable = (int, float, str, decimal.Decimal, dt.date)
    out = None
    for i, (t, _) in enumerate(pairs):
        low, high = bounds[2 * i], bounds[2 * i + 1]
        if low is None or high is None:
            # No non-null key: no target row can match; an impossible range prunes all.
            term = dl.col(t).is_null() & dl.col(t).is_not_null()
        elif (
            type(low) is not type(high)
            or not isinstance(low, usable)
            or isinstance(low, (bool, dt.datetime))
            or (isinstance(low, float) and (low != low or high != high))
        ):
            continue  # a type whose range deltalog might read differently (time zones, NaN)
        else:
            term = (dl.col(t) >= low) & (dl.col(t) <= high)
        out = term if out is None else out & term
    return out


def _describe(clause: _Clause) -> dict[str, Any]:
    out: dict[str, Any] = {"actionType": clause.action}
    if clause.predicate:
        out["predicate"] = clause.predicate
    return out


def _spark_fields(table: DeltaTable) -> list[Any]:
    from deltalog.spark.types import spark_schema

    return list(spark_schema(table.schema()).fields)


def _candidate_files(table: DeltaTable, predicate: str | None) -> list[Any]:
    """The files a predicate may touch: pruned and skipped by deltalog (the predicate's
    skipping form, ``Expr::skipping_predicate``) when its SQL parser takes the predicate, else
    every file. Spark evaluates the predicate on the rows either way."""
    from deltalog import _native
    from deltalog.exceptions import DeltaError
    from deltalog.expressions import Expr

    if predicate is None:
        return table.scan().tasks()
    try:
        text = _native.skipping_predicate(table._raw, predicate)
    except DeltaError:  # Spark SQL beyond deltalog's parser: no skipping
        return table.scan().tasks()
    return table.scan(filter=Expr(json.loads(text)) if text else None).tasks()


def _predicate_rewrite(
    spark: SparkSession,
    table: DeltaTable,
    operation: str,
    predicate: str | None,
    updates: Mapping[str, str] | None,
    commit_properties: Any,
    target_file_size: int | None,
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    _check_rewritable(table, operation)
    files = _candidate_files(table, predicate)
    if predicate is None and updates is None:
        # DELETE of every row: the files go whole, nothing to read ("Remove File"; a change
        # feed reads removed files as deleted rows).
        version = None
        if files:
            tx = table.transaction(operation, predicate=None)
            tx.remove_files(t.path for t in files)
            version = tx.commit(commit_properties)
        return {
            "version": version,
            "num_deleted_rows": sum(_live_rows(t) for t in files if t.num_records is not None),
            "num_copied_rows": 0,
            "num_removed_files": len(files),
            "num_added_files": 0,
            "num_added_change_files": 0,
            "num_deletion_vectors_added": 0,
            "num_files_scanned": 0,
        }
    columns = [f.name for f in table.schema()]
    types = {f.name: f.dataType for f in _spark_fields(table)}
    frame = target_frame(spark, table, files)
    condition = F.expr(predicate) if predicate else F.lit(True)
    hit = frame.filter(condition).select(FILE_COLUMN).distinct().collect()
    touched = sorted({r[FILE_COLUMN] for r in hit})
    counts = {"deleted": 0, "updated": 0, "inserted": 0, "copied": 0}
    adds: list[str] = []
    masks: dict[str, list[int]] = {}
    rewrite = _Rewrite(spark, table, target_file_size)
    if touched:
        code = "delete" if updates is None else "update"
        action = F.when(F.coalesce(condition, F.lit(False)), F.lit(code)).otherwise(F.lit(KEEP))
        staged = frame.filter(F.col(FILE_COLUMN).isin(touched)).select(
            "*", action.alias(ACTION_COLUMN)
        )
        sets = {_target_column(k, columns, "target"): F.expr(v) for k, v in (updates or {}).items()}
        values = []
        for c in columns:
            value = F.col(f"`{c}`")
            if c in sets:
                value = F.when(F.col(ACTION_COLUMN) == code, sets[c]).otherwise(value)
            values.append(value.cast(types[c]).alias(c))
        before = [F.col(f"`{c}`").alias(PRE + c) for c in columns] if rewrite.cdf else []
        rows = staged.select(
            *values, F.col(ACTION_COLUMN), F.col(FILE_COLUMN), F.col(ROW_COLUMN), *before
        )
        adds, counts, masks = rewrite.write(
            rows,
            {code} if updates is None else set(),
            {code} if updates is not None else set(),
            set(),
        )
    version, removed, vectors = rewrite.commit(
        operation, {"predicate": predicate}, adds, touched, masks, files, commit_properties
    )
    counts = {**counts, "copied": rewrite.copied}
    data, changes = _kinds(rewrite.added)
    return {
        "version": version,
        ("num_deleted_rows" if updates is None else "num_updated_rows"): counts[
            "deleted" if updates is None else "updated"
        ],
        "num_copied_rows": counts["copied"],
        "num_removed_files": removed,
        "num_added_files": data + vectors,
        "num_added_change_files": changes,
        "num_deletion_vectors_added": vectors,
        "num_files_scanned": len(files),
    }


def delete(
    spark: SparkSession,
    table: DeltaTable,
    predicate: str | None = None,
    commit_properties: Any = None,
    target_file_size: int | None = None,
) -> dict[str, Any]:
    """DELETE FROM the table WHERE ``predicate`` (Spark SQL over its columns; every row when
    None), computed by Spark: files deltalog's statistics cannot rule out are read on the
    executors, the touched ones rewritten without the deleted rows, one commit."""
    return _predicate_rewrite(
        spark, table, "DELETE", predicate, None, commit_properties, target_file_size
    )


def update(
    spark: SparkSession,
    table: DeltaTable,
    updates: Mapping[str, str],
    predicate: str | None = None,
    commit_properties: Any = None,
    target_file_size: int | None = None,
) -> dict[str, Any]:
    """UPDATE the table SET ``updates`` (column -> Spark SQL) WHERE ``predicate``, computed by
    Spark as :func:`delete` is."""
    if not updates:
        raise InvalidArgumentError("an UPDATE needs at least one column to set")
    return _predicate_rewrite(
        spark, table, "UPDATE", predicate, dict(updates), commit_properties, target_file_size
    )
