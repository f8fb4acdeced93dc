"""Spark's own ``DataFrameWriter.partitionBy`` for the ``deltalog`` format.

Spark (4.x) never hands ``.partitionBy(...)`` to a Python data source: its writer compares the
columns with the partitioning the source's table reports, and a Python data source cannot
report any (PySpark's ``DataSource`` has no such hook), so
``df.write.format("deltalog").partitionBy("day").save(uri)`` fails in the JVM before the source
is called ("The provided partitioning or clustering columns do not match the existing
table's"). :func:`install` (run by :func:`deltalog.spark.register`) wraps PySpark's
``DataFrameWriter`` so that, for the ``deltalog`` format, the columns travel as the source's
``partitionBy`` option instead: the same table as
``.option("partitionBy", "day")``. Other formats are left exactly as they were. Spark Connect's
writer is not wrapped (use the option there).
"""

from __future__ import annotations

from typing import Any

from deltalog.spark.read.source import NAME

#: Attributes the wrapped writer keeps: the format and the ``partitionBy`` columns given.
_FORMAT = "_deltalog_format"
_COLUMNS = "_deltalog_partition_by"


def _names(cols: tuple[Any, ...]) -> list[str]:
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    return [str(c) for c in cols]


def install() -> None:
    """Wraps PySpark's classic ``DataFrameWriter`` once (later calls do nothing)."""
    from pyspark.sql.readwriter import DataFrameWriter

    if getattr(DataFrameWriter, "_deltalog_partitioning", False):
        return
    original_format = DataFrameWriter.format
    original_partition_by = DataFrameWriter.partitionBy
    original_save = DataFrameWriter.save

    def format(self: Any, source: str) -> Any:
        setattr(self, _FORMAT, source)
        return original_format(self, source)

    def partitionBy(self: Any, *cols: Any) -> Any:
        setattr(self, _COLUMNS, _names(cols))
        return original_partition_by(self, *cols)

    def save(
        self: Any,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        **options: Any,
    ) -> None:
        if format is not None:
            self.format(format)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        source = getattr(self, _FORMAT, None)
        columns = getattr(self, _COLUMNS, None)
        if columns and isinstance(source, str) and source.lower() == NAME:
            from pyspark.sql.classic.column import _to_seq

            # No partitioning for Spark to check; the source gets it as its option.
            self._jwrite = self._jwrite.partitionBy(_to_seq(self._spark._sc, []))
            setattr(self, _COLUMNS, None)
            self.option("partitionBy", ",".join(columns))
        original_save(self, path, None, mode, None, **options)

    format.__doc__ = original_format.__doc__
    partitionBy.__doc__ = original_partition_by.__doc__
    save.__doc__ = original_save.__doc__
    DataFrameWriter.format = format  # type: ignore[method-assign]
    DataFrameWriter.partitionBy = partitionBy  # type: ignore[method-assign]
    DataFrameWriter.save = save  # type: ignore[method-assign]
    DataFrameWriter._deltalog_partitioning = True  # type: ignore[attr-defined]
