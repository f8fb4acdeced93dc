"""MERGE computed by Spark (:func:`deltalog.spark.merge`): :class:`SparkMerger`, its clauses,
the join of the source with the target's rows that classifies them, and the target's files
pruned by the range of the source's join keys. Semantics and limits:
:mod:`deltalog.spark.dml.operations`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.exceptions import InvalidArgumentError
from deltalog.spark.dml.rewrite import (
    ACTION_COLUMN,
    FILE_COLUMN,
    KEEP,
    PRE,
    ROW_COLUMN,
    ROW_ID_COLUMN,
    SOURCE_MARK,
    _check_rewritable,
    _column_key,
    _kinds,
    _Rewrite,
    _spark_fields,
    _target_column,
    target_frame,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from deltalog.table.delta_table import DeltaTable


@dataclass
class _Clause:
    kind: str  # matched | not_matched | not_matched_by_source
    action: str  # update | update_all | delete | insert | insert_all
    predicate: str | None
    updates: dict[str, str]


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
        table = self._table
        _check_rewritable(table)
        if not self._clauses:
            raise InvalidArgumentError("a MERGE needs at least one when_* clause")
        with ExitStack() as cleanup:
            return self._execute(cleanup)

    def _execute(self, cleanup: ExitStack) -> dict[str, Any]:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        table = self._table
        source_alias, target_alias = self._aliases
        spark = self._source.sparkSession
        # The source is read more than once (its key range, the join, the rows to insert), so
        # it is materialized first, as Delta Spark's MERGE materializes it: every step sees
        # the same rows, each with the id that tells the inserted ones apart.
        materialized = _materialize(self._source, cleanup)
        source_rows = materialized.count()
        columns = [f.name for f in table.schema()]
        by_source = self._codes("not_matched_by_source")
        # Every target row can be acted on by NOT MATCHED BY SOURCE; otherwise only files that
        # may hold the source's join keys need reading.
        keys = (
            None
            if by_source
            else _key_ranges(self._predicate, materialized, source_alias, target_alias, columns)
        )
        files = table.scan(filter=keys).tasks()
        types = {f.name: f.dataType for f in _spark_fields(table)}
        source_columns = self._source.columns
        # A target read natively is a file relation Spark sizes, so it broadcasts a small
        # source instead of shuffling the target (as Delta Spark's MERGE does); a target read
        # through the data source carries the sort-merge hint (target_frame).
        frame, key = target_frame(spark, table, files)
        target = frame.alias(target_alias)
        source = materialized.alias(source_alias)
        on = F.expr(self._predicate)
        matched = self._codes("matched")
        not_matched = self._codes("not_matched")

        def condition(clause: _Clause) -> Column:
            return F.expr(clause.predicate) if clause.predicate else F.lit(True)

        # 1. The target rows a clause may act on, each classified by the clause that acts
        # (KEEP: none): the join's pairs when only matched rows can change, kept for the steps
        # below (the target is read once; a MERGE's pairs are few), else every target row,
        # paired or not.
        is_matched = F.col(f"`{source_alias}`.`{SOURCE_MARK}`").isNotNull()
        action = F.lit(KEEP)
        for code, clause in reversed(by_source):
            action = F.when(~is_matched & condition(clause), F.lit(code)).otherwise(action)
        for code, clause in reversed(matched):
            action = F.when(is_matched & condition(clause), F.lit(code)).otherwise(action)
        file_col = F.col(f"`{target_alias}`.`{FILE_COLUMN}`")
        row_col = F.col(f"`{target_alias}`.`{ROW_COLUMN}`")
        classified = target.join(source, on, "left_outer" if by_source else "inner").select(
            "*", action.alias(ACTION_COLUMN)
        )
        if not by_source:
            classified = classified.persist(StorageLevel.MEMORY_AND_DISK)
            cleanup.callback(classified.unpersist)
        if matched or by_source:
            per_row = (
                classified.filter(is_matched)
                .groupBy(file_col.alias("f"), row_col.alias("r"))
                .agg(
                    F.count(F.lit(1)).alias("n"),
                    F.sum(F.when(F.col(ACTION_COLUMN) != KEEP, 1).otherwise(0)).alias("m"),
                )
            )
            for row in per_row.filter("n > 1 AND m > 0").limit(1).collect():
                raise InvalidArgumentError(
                    "MERGE is ambiguous: several source rows match the same target row "
                    f"(in {key(row['f'])}) and a MATCHED clause would modify it"
                )

        rewrite = _Rewrite(spark, table, self._target_file_size)
        # 2. The rows to write: the classified target rows with their clause's values (a
        # KEEP row is not written; a target row matched twice is one, the check above made
        # sure), and the source rows that match no target row.
        parts = []
        deleted: set[str] = set()
        updated: set[str] = set()
        inserted: set[str] = set()
        for code, clause in matched + by_source:
            (deleted if clause.action == "delete" else updated).add(code)
        if matched or by_source:
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
            before = (
                [F.col(f"`{target_alias}`.`{c}`").cast(types[c]).alias(PRE + c) for c in columns]
                if rewrite.cdf
                else []
            )
            lineage = (
                [F.col(f"`{target_alias}`.`{ROW_ID_COLUMN}`")]
                if rewrite.lineage is not None
                else []
            )
            parts.append(
                classified.filter(F.col(ACTION_COLUMN) != KEEP).select(
                    *values.values(),
                    F.col(ACTION_COLUMN),
                    file_col.alias(FILE_COLUMN),
                    row_col.alias(ROW_COLUMN),
                    *lineage,
                    *before,
                )
            )
        if not_matched:
            # The source rows in no pair: told apart by their ids, so the target is not read
            # again (an anti-join of the source with the target would shuffle all of it).
            paired = classified.filter(is_matched).select(
                F.col(f"`{source_alias}`.`{SOURCE_ID}`").alias(SOURCE_ID)
            )
            unmatched = source.join(paired, SOURCE_ID, "left_anti").alias(source_alias)
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
                        [F.lit(None).cast("long").alias(ROW_ID_COLUMN)]
                        if rewrite.lineage is not None
                        else []
                    ),
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
            adds, counts, masks = rewrite.write(rows, deleted, updated, inserted, key, files)
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
            source_rows=source_rows,
        )


#: The id of each source row in the materialized source (:func:`_materialize`).
SOURCE_ID = "_deltalog_source_id"


def _materialize(source: DataFrame, cleanup: ExitStack) -> DataFrame:
    """``source`` with :data:`SOURCE_MARK` and :data:`SOURCE_ID`, computed once and kept on
    the executors (a local checkpoint, as Delta Spark's MERGE materializes its source: a lost
    block fails the MERGE rather than recompute a source that may not give the same rows
    twice), released by ``cleanup``."""
    from pyspark.sql import functions as F

    marked = source.select(
        "*", F.lit(True).alias(SOURCE_MARK), F.monotonically_increasing_id().alias(SOURCE_ID)
    )
    kept = marked.localCheckpoint(eager=True)
    cleanup.callback(_release, kept)
    return kept


def _release(checkpointed: DataFrame) -> None:
    """Frees a local checkpoint's blocks now (Spark's cleaner would only once the driver's
    garbage collector runs); where the plan is not reachable (Spark Connect) that is left to
    the cleaner."""
    try:
        checkpointed._jdf.queryExecution().logical().rdd().unpersist(False)
    except Exception:  # best effort: the cleaner frees them later
        pass


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
