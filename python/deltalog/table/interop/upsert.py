"""``DeltaTable.upsert``: pyiceberg's ``Table.upsert`` on deltalog's MERGE.

Rows of ``df`` whose ``join_cols`` match a row of the table update it (only where some other
column's value differs, as pyiceberg: an unchanged row is neither rewritten nor counted), and
the other rows are inserted; one MERGE commit does both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog._lazy import lazy_module
from deltalog.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import CommitProperties
else:
    pa = lazy_module("pyarrow")


@dataclass(frozen=True)
class UpsertResult:
    """What an upsert did, as pyiceberg's ``UpsertResult``; ``version`` is the commit (None
    when nothing changed)."""

    rows_updated: int = 0
    rows_inserted: int = 0
    version: int | None = None


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def upsert(
    table: DeltaTable,
    df: Any,
    join_cols: list[str] | None,
    when_matched_update_all: bool = True,
    when_not_matched_insert_all: bool = True,
    case_sensitive: bool = True,
    commit_properties: CommitProperties | None = None,
) -> UpsertResult:
    """See :meth:`deltalog.DeltaTable.upsert`."""
    from deltalog.write.writer import _reader

    if not join_cols:
        raise InvalidArgumentError(
            "upsert needs join_cols: a Delta table has no identifier fields to default to"
        )
    if isinstance(join_cols, str):
        raise TypeError("join_cols must be a list of column names, not a string")
    if not when_matched_update_all and not when_not_matched_insert_all:
        raise InvalidArgumentError(
            "no upsert options selected: when_matched_update_all and "
            "when_not_matched_insert_all are both false"
        )
    source = _reader(df).read_all()
    table_names = table.schema().names

    def resolve(name: str, names: list[str], where: str) -> str:
        if name in names:
            return name
        if not case_sensitive:
            found = [n for n in names if n.lower() == name.lower()]
            if len(found) == 1:
                return found[0]
        raise InvalidArgumentError(f"join column {name!r} is not a column of the {where}")

    keys = [resolve(c, source.schema.names, "data") for c in join_cols]
    for c in join_cols:
        resolve(c, table_names, "table")
    if source.num_rows:
        # pyiceberg refuses duplicate keys in the data: the update would be ambiguous.
        counts = source.group_by(keys).aggregate([([], "count_all")])
        if pa.compute.max(counts.column("count_all")).as_py() > 1:
            raise InvalidArgumentError(
                f"duplicate rows found in the data for the join columns {keys}"
            )
    if source.num_rows == 0:
        return UpsertResult()
    predicate = " AND ".join(f"target.{_quoted(k)} = source.{_quoted(k)}" for k in keys)
    lower_keys = {k.lower() for k in keys}
    have = {n.lower() for n in table_names}
    others = [n for n in source.schema.names if n.lower() not in lower_keys and n.lower() in have]
    merger = table.merge(source, predicate, commit_properties=commit_properties)
    if when_matched_update_all and others:
        # Only rows whose values differ (null-safe: null to null is no change).
        changed = " OR ".join(f"NOT (target.{_quoted(n)} <=> source.{_quoted(n)})" for n in others)
        merger = merger.when_matched_update_all(changed)
    if when_not_matched_insert_all:
        merger = merger.when_not_matched_insert_all()
    if not merger._clauses:
        return UpsertResult()
    metrics = merger.execute()
    return UpsertResult(
        rows_updated=int(metrics.get("num_target_rows_updated", 0)),
        rows_inserted=int(metrics.get("num_target_rows_inserted", 0)),
        version=metrics.get("version"),
    )
