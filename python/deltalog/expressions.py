"""Filters: predicates over top-level columns, built with :func:`col` or given as DNF lists.

>>> from deltalog import col
>>> (col("year") >= 2024) & col("country").is_in(["NL", "BE"])
>>> [("year", ">=", 2024), ("country", "in", ["NL", "BE"])]          # the same, as a list
>>> [[("a", "=", 1)], [("b", "is", None)]]                           # a = 1 OR b IS NULL

Comparisons follow SQL: a comparison with null is unknown and unknown rows are not returned.
Literals are converted to the column's type: ints, floats, ``Decimal``, ``str`` (also the text
form of dates, timestamps and numbers), ``bool``, ``bytes``, ``datetime.date`` and
``datetime.datetime`` (naive means UTC, or the wall-clock time of a ``timestamp_ntz`` column).
The same predicate prunes partitions, skips files by their statistics and filters rows.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
from collections.abc import Iterable, Sequence
from typing import Any

from deltalog.exceptions import InvalidArgumentError

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _literal(value: Any) -> Any:
    """The JSON form of a literal (see `deltalog_core::predicate::Literal`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"integer literal out of the 64-bit range: {value}")
        return {"int": int(value)}
    if isinstance(value, float):
        return {"float": value}
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"binary": list(bytes(value))}
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
        return {"timestamp": (aware - _EPOCH) // _dt.timedelta(microseconds=1)}
    if isinstance(value, _dt.date):
        return {"date": (value - _EPOCH_DATE).days}
    # numpy and pandas scalars
    item = getattr(value, "item", None)
    if callable(item):
        return _literal(item())
    raise TypeError(f"unsupported literal type {type(value).__name__}: {value!r}")


def _sql_identifier(name: str) -> str:
    """A column name as Spark SQL writes it (backquoted unless a plain identifier)."""
    if name.isidentifier() and name.isascii():
        return name
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: Any) -> str:
    """A Python value as a Spark SQL literal, for display (``history()``)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "CAST('NaN' AS DOUBLE)"
        if value in (float("inf"), float("-inf")):
            return f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return f"{value}BD"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "X'" + bytes(value).hex().upper() + "'"
    if isinstance(value, _dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    item = getattr(value, "item", None)
    if callable(item):
        return sql_literal(item())
    return repr(value)


def _json_literal_sql(value: Any) -> str:
    """The SQL text of a literal in its JSON form (see :func:`_literal`)."""
    if value == "null" or value is None:
        return "NULL"
    ((kind, v),) = value.items()
    if kind == "bool":
        return "true" if v else "false"
    if kind in ("int", "float"):
        return sql_literal(v)
    if kind == "decimal":
        return f"{v}BD"
    if kind == "string":
        return sql_literal(v)
    if kind == "binary":
        return sql_literal(bytes(v))
    if kind == "date":
        return sql_literal(_EPOCH_DATE + _dt.timedelta(days=v))
    if kind == "timestamp":
        return sql_literal(_EPOCH + _dt.timedelta(microseconds=v))
    return json.dumps(value)


def _node_sql(node: Any) -> str:
    ((kind, body),) = node.items()
    if kind == "compare":
        op = {"!=": "<>"}.get(body["op"], body["op"])
        value = _json_literal_sql(body["value"])
        return f"{_sql_identifier(body['column'])} {op} {value}"
    if kind == "is_null":
        return f"{_sql_identifier(body['column'])} IS NULL"
    if kind == "in":
        values = ", ".join(_json_literal_sql(v) for v in body["values"])
        return f"{_sql_identifier(body['column'])} IN ({values})"
    if kind in ("and", "or"):
        return "(" + f" {kind.upper()} ".join(_node_sql(n) for n in body) + ")"
    if kind == "not":
        return f"NOT ({_node_sql(body)})"
    raise ValueError(f"unknown predicate node {kind!r}")


class Expr:
    """A predicate. Combine with ``&`` (and), ``|`` (or) and ``~`` (not)."""

    __slots__ = ("_node",)

    def __init__(self, node: Any) -> None:
        self._node = node

    # `a & b & c ...` stays one flat list (however long, it nests one level), and `~~x` is
    # `x` (NOT NOT is the identity in three-valued logic), so generated predicates do not
    # nest deeper than the JSON parser allows.
    def _joined(self, op: str, other: Any) -> Expr:
        parts: list[Any] = []
        for node in (self._node, _as_expr(other)._node):
            if isinstance(node, dict) and len(node) == 1 and op in node:
                parts.extend(node[op])
            else:
                parts.append(node)
        return Expr({op: parts})

    def __and__(self, other: Expr) -> Expr:
        return self._joined("and", other)

    def __or__(self, other: Expr) -> Expr:
        return self._joined("or", other)

    def __invert__(self) -> Expr:
        node = self._node
        if isinstance(node, dict) and len(node) == 1 and "not" in node:
            return Expr(node["not"])
        return Expr({"not": node})

    def __bool__(self) -> bool:
        raise TypeError("a deltalog predicate has no truth value; combine with & | ~")

    def to_json(self) -> str:
        """The JSON form the native core parses."""
        try:
            return json.dumps(self._node, separators=(",", ":"))
        except RecursionError:
            raise InvalidArgumentError(
                "the predicate nests too deeply to encode (Python's recursion limit); the core "
                "accepts at most 128 levels of JSON"
            ) from None

    def to_sql(self) -> str:
        """The predicate as Spark SQL text (for display: ``history()`` shows it)."""
        return _node_sql(self._node)

    def __repr__(self) -> str:
        return f"Expr({self.to_json()})"


class Column:
    """A reference to a top-level column; comparisons build :class:`Expr` predicates."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError("a column name must be a string")
        self.name = name

    def _cmp(self, op: str, value: Any) -> Expr:
        return Expr({"compare": {"column": self.name, "op": op, "value": _literal(value)}})

    def __eq__(self, value: Any) -> Expr:  # type: ignore[override]
        return self._cmp("=", value)

    def __ne__(self, value: Any) -> Expr:  # type: ignore[override]
        return self._cmp("!=", value)

    def __lt__(self, value: Any) -> Expr:
        return self._cmp("<", value)

    def __le__(self, value: Any) -> Expr:
        return self._cmp("<=", value)

    def __gt__(self, value: Any) -> Expr:
        return self._cmp(">", value)

    def __ge__(self, value: Any) -> Expr:
        return self._cmp(">=", value)

    __hash__ = None  # type: ignore[assignment]

    def is_null(self) -> Expr:
        return Expr({"is_null": {"column": self.name}})

    def is_not_null(self) -> Expr:
        return ~self.is_null()

    def is_in(self, values: Iterable[Any]) -> Expr:
        if isinstance(values, (str, bytes)):
            raise TypeError("is_in takes a collection of values, not a string")
        return Expr({"in": {"column": self.name, "values": [_literal(v) for v in values]}})

    def __repr__(self) -> str:
        return f"col({self.name!r})"


def col(name: str) -> Column:
    """A column reference: ``col("x") > 3``."""
    return Column(name)


DnfTerm = tuple[str, str, Any]
FilterLike = Expr | Sequence[DnfTerm] | Sequence[Sequence[DnfTerm]]


def _term(term: Sequence[Any]) -> Expr:
    if not isinstance(term, (tuple, list)) or len(term) != 3:
        raise ValueError(f"a filter term is (column, op, value), not {term!r}")
    column, op, value = term
    c = Column(column)
    op = str(op).strip().lower()
    if op in _OPS:
        if value is None and op in ("=", "=="):
            return c.is_null()
        if value is None and op in ("!=", "<>"):
            return c.is_not_null()
        return c._cmp(_OPS[op], value)
    if op == "in":
        return c.is_in(value)
    if op in ("not in", "not_in"):
        return ~c.is_in(value)
    if op == "is" and value is None:
        return c.is_null()
    if op in ("is not", "is_not") and value is None:
        return c.is_not_null()
    raise ValueError(f"unknown filter operator {op!r} in {term!r}")


def _all(exprs: list[Expr]) -> Expr:
    return Expr({"and": [e._node for e in exprs]})


def _as_expr(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    raise TypeError(f"expected a deltalog predicate, not {type(value).__name__}")


def to_predicate(filter: FilterLike | None) -> Expr | None:
    """A filter given as an :class:`Expr` or as pyarrow/deltalake-style DNF as one predicate.

    A list of ``(column, op, value)`` tuples is their conjunction; a list of such lists is the
    disjunction of the conjunctions. Operators: ``= == != < <= > >= in not in``, and
    ``= None`` / ``is None`` for IS NULL.
    """
    if filter is None:
        return None
    if isinstance(filter, Expr):
        return filter
    if isinstance(filter, Column):
        raise TypeError("a column is not a predicate; compare it: col('x') == 1")
    if not isinstance(filter, (list, tuple)) or isinstance(filter, str):
        raise TypeError(f"a filter is a deltalog predicate or a list of tuples, not {filter!r}")
    if not filter:
        raise ValueError("an empty filter list")
    if all(isinstance(t, tuple) for t in filter):
        return _all([_term(t) for t in filter])
    if all(isinstance(t, list) for t in filter):
        groups = []
        for group in filter:
            if not group or not all(isinstance(t, tuple) for t in group):
                raise ValueError(f"each disjunct is a non-empty list of tuples: {group!r}")
            groups.append(_all([_term(t) for t in group])._node)
        return Expr({"or": groups})
    raise ValueError("a filter is a list of tuples (AND) or a list of lists of tuples (OR of ANDs)")
