"""Spark's pushed filters (``pyspark.sql.datasource.Filter``, PySpark 4.1+) as deltalog
predicates, for partition pruning and file skipping.

Skipping by statistics keeps every file that *may* hold a matching row, so the predicate
narrows the files read but not the rows: the data source hands every filter back to Spark,
which still evaluates it on the rows ("pushed for pruning, not for exactness").
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable
from typing import Any

from deltalog.expressions import Expr, col

_VALUE_TYPES = (bool, int, float, str, bytes, decimal.Decimal, dt.date, dt.datetime)


def to_predicate(filters: Iterable[Any], columns: set[str]) -> Expr | None:
    """The conjunction of the filters deltalog can express (on top-level ``columns``), or
    ``None`` when there are none. The others are left out: a predicate may only be weaker
    than the filters, never stronger."""
    parts = [e for e in (_expr(f, columns) for f in filters) if e is not None]
    if not parts:
        return None
    out = parts[0]
    for part in parts[1:]:
        out = out & part
    return out


def _column(f: Any, columns: set[str]) -> str | None:
    attribute = getattr(f, "attribute", None)
    if not isinstance(attribute, tuple) or len(attribute) != 1:
        return None  # a nested field: not pushed
    name = attribute[0]
    return name if name in columns else None


def _value_ok(value: Any) -> bool:
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        # Which zone a naive value is in depends on the column and session: not pushed (a
        # wrong guess would skip files holding matching rows).
        return False
    return value is not None and isinstance(value, _VALUE_TYPES)


def _expr(f: Any, columns: set[str]) -> Expr | None:
    from pyspark.sql import datasource as ds

    if isinstance(f, ds.Not):
        inner = _expr(f.child, columns)
        return ~inner if inner is not None else None
    name = _column(f, columns)
    if name is None:
        return None
    c = col(name)
    if isinstance(f, ds.IsNull):
        return c.is_null()
    if isinstance(f, ds.IsNotNull):
        return c.is_not_null()
    if isinstance(f, ds.In):
        values = list(f.value)
        if not values or not all(_value_ok(v) for v in values):
            return None
        return c.is_in(values)
    value = getattr(f, "value", None)
    if not _value_ok(value):
        return None
    comparisons = {
        ds.EqualTo: c.__eq__,
        ds.GreaterThan: c.__gt__,
        ds.GreaterThanOrEqual: c.__ge__,
        ds.LessThan: c.__lt__,
        ds.LessThanOrEqual: c.__le__,
    }
    for kind, make in comparisons.items():
        if type(f) is kind:
            return make(value)
    return None  # null-safe equality, string matches: not pushed
