"""MERGE computed by Spark (:func:`deltalog.spark.merge`): :class:`SparkMerger`, its clauses,
the join of the source with the target's rows that classifies them, and the target's files
pruned by the range of the source's join keys. Semantics and limits:
:mod:`deltalog.spark.dml.operations`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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
        from pyspark.sql import functions as F

        table = self._table
        _check_rewritable(table)
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
        # A target read natively is a file relation Spark sizes, so it broadcasts a small
        # source instead of shuffling the target (as Delta Spark's MERGE does); a target read
        # through the data source carries the sort-merge hint (target_frame).
        frame, key = target_frame(spark, table, files)
        target = frame.alias(target_alias)
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
                        f"(in {key(row['f'])}) and a MATCHED clause would modify it"
                    )
                if row["modified"] > 0:
                    touched.append(row["f"])
        every = bool(by_source)  # every unmatched row may be acted on: every file is read
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
        if touched or (every and files):
            scope = target if every else target.filter(file_col.isin(touched))
            rewritten = scope.join(source, on, "left_outer")
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
            lineage = (
                [F.col(f"`{target_alias}`.`{ROW_ID_COLUMN}`")]
                if rewrite.lineage is not None
                else []
            )
            parts.append(
                classified.select(
                    *values.values(),
                    F.col(ACTION_COLUMN),
                    F.col(FILE_COLUMN),
                    F.col(ROW_COLUMN),
                    *lineage,
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
            [t.path for t in files] if every else [key(t) for t in touched],
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
