"""MERGE, DELETE and UPDATE of a Delta table computed by Spark, committed once by deltalog.

For tables too big for one machine: Spark reads the target (its own parquet scan where the
native read path can, else deltalog's native reader on the executors; each row tagged with
its data file and its index in that file), evaluates the
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

Tables tracking rows keep every row's lineage ("Writer Requirements for Row Tracking"):
updated rows their row IDs, copied rows their IDs and commit versions
(:mod:`deltalog.spark.dml.rewrite`). Not supported here (a clear error, use
:meth:`deltalog.DeltaTable.merge` / ``delete`` / ``update``): identity columns the operation
would have to generate.

MERGE is :mod:`deltalog.spark.dml.merger`'s (:class:`SparkMerger`), and what the three share (the
target's rows read on the executors, the new rows written, the commit) is
:mod:`deltalog.spark.dml.rewrite`'s; DELETE and UPDATE are here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.exceptions import InvalidArgumentError
from deltalog.spark.dml.merger import SparkMerger as SparkMerger
from deltalog.spark.dml.rewrite import (
    ACTION_COLUMN,
    FILE_COLUMN,
    KEEP,
    PRE,
    ROW_COLUMN,
    ROW_ID_COLUMN,
    SOURCE_MARK as SOURCE_MARK,
    _check_rewritable,
    _kinds,
    _live_rows,
    _Rewrite,
    _spark_fields,
    _target_column,
    log_target,
    target_frame,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.table.delta_table import DeltaTable


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

    _check_rewritable(table)
    files = _candidate_files(table, predicate)
    if predicate is None and updates is None:
        # DELETE of every row: the files go whole, nothing to read ("Remove File"; a change
        # feed reads removed files as deleted rows).
        log_target(table, "no rows read (every file is removed whole)")
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
    frame, key = target_frame(spark, table, files)
    condition = F.expr(predicate) if predicate else F.lit(True)
    hit = frame.filter(condition).select(FILE_COLUMN).distinct().collect()
    touched = sorted({r[FILE_COLUMN] for r in hit})  # as the frame names files
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
        lineage = [F.col(ROW_ID_COLUMN)] if rewrite.lineage is not None else []
        rows = staged.select(
            *values,
            F.col(ACTION_COLUMN),
            F.col(FILE_COLUMN),
            F.col(ROW_COLUMN),
            *lineage,
            *before,
        )
        adds, counts, masks = rewrite.write(
            rows,
            {code} if updates is None else set(),
            {code} if updates is not None else set(),
            set(),
            key,
            files,
        )
    version, removed, vectors = rewrite.commit(
        operation,
        {"predicate": predicate},
        adds,
        masks,
        files,
        commit_properties,
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
