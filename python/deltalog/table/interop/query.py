"""``QueryBuilder``: SQL over Delta tables, deltalake's API on DuckDB.

deltalake's ``QueryBuilder`` runs DataFusion; deltalog's hands the SQL to DuckDB (the
optional extra ``deltalog[sql]``), which reads each registered table through deltalog's own
scan: the Arrow C stream of :class:`deltalog.DeltaScan` (deletion vectors, column mapping and
the rest applied by deltalog's reader). Each ``execute`` plans fresh scans of the registered
versions, so a table may appear several times in one query (self-joins), and the result is
what the tables held at the versions they were registered with. The SQL dialect is DuckDB's.

>>> qb = QueryBuilder().register("orders", dl.DeltaTable("path/to/orders"))
>>> qb.execute("SELECT day, sum(v) FROM orders GROUP BY day").read_all()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from deltalog.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table.delta_table import DeltaTable

#: The lowest DuckDB that reads a registered Arrow C stream object more than once in a query
#: (a self-join): 1.1 to 1.4 scan it once and fail ("ArrowArrayStream was already released").
_DUCKDB_MINIMUM = (1, 5)


def _duckdb() -> Any:
    try:
        duckdb = importlib.import_module("duckdb")
    except ImportError as e:
        raise ImportError(
            "deltalog.QueryBuilder runs SQL on DuckDB, which is not installed: "
            "pip install 'deltalog[sql]'"
        ) from e
    version = tuple(int(p) for p in duckdb.__version__.split(".")[:2] if p.isdigit())
    if version < _DUCKDB_MINIMUM:
        raise ImportError(
            f"deltalog.QueryBuilder needs duckdb>=1.5, found {duckdb.__version__}: "
            "pip install 'deltalog[sql]'"
        )
    return duckdb


class QueryBuilder:
    """SQL over registered Delta tables (deltalake's ``QueryBuilder``).

    Args:
        session_config: DuckDB settings (``{"threads": "2"}``), where deltalake takes
            DataFusion's; applied to the connection as ``SET key = value``.
    """

    def __init__(self, session_config: dict[str, str] | None = None) -> None:
        duckdb = _duckdb()
        self._connection = duckdb.connect()
        self._tables: dict[str, DeltaTable] = {}
        for key, value in (session_config or {}).items():
            if not key.replace("_", "").replace(".", "").isalnum():
                raise InvalidArgumentError(f"{key!r} is not a DuckDB setting name")
            self._connection.execute(f"SET {key} = ?", [value])

    def register(self, table_name: str, delta_table: DeltaTable) -> QueryBuilder:
        """Makes ``delta_table`` (at its loaded version) available to SQL as
        ``table_name``; returns this builder."""
        from deltalog.table.delta_table import DeltaTable

        if not isinstance(delta_table, DeltaTable):
            raise TypeError(f"register takes a deltalog.DeltaTable, not {type(delta_table)}")
        if not table_name:
            raise InvalidArgumentError("a table name cannot be empty")
        self._tables[table_name] = delta_table
        return self

    def execute(self, sql: str) -> pa.RecordBatchReader:
        """Runs ``sql`` and returns its result as a ``pyarrow.RecordBatchReader`` (deltalake
        returns an arro3 one; both have ``read_all()`` and export ``__arrow_c_stream__``).
        The registered tables are scanned afresh for this query."""
        connection = self._connection
        registered = []
        try:
            for name, table in self._tables.items():
                connection.register(name, table.scan())
                registered.append(name)
            result = connection.execute(sql)
            reader = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
            table_out = reader().read_all()
        finally:
            for name in registered:
                connection.unregister(name)
        return table_out.to_reader()
