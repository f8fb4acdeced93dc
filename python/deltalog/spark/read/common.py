"""What the Spark read paths share: the reason a read cannot take the native path, and the
column helpers both native planners use (:mod:`deltalog.spark.read.native`, Spark's parquet
source as it is; :mod:`deltalog.spark.read.planned`, through deltalog's JVM companion)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import DataType, StructType

    from deltalog.table.delta_table import DeltaTable


def table_schemas(
    table: DeltaTable, columns: Sequence[str] | None
) -> tuple[pa.Schema, pa.Schema, StructType, StructType]:
    """The table's logical and physical schemas, in Arrow and as Spark types; raises
    :class:`NativeReadUnsupported` for a type Spark lacks or a column the table lacks."""
    from deltalog.spark.types import spark_schema

    logical = table.schema()
    physical = table.physical_schema()
    try:
        logical_spark = spark_schema(logical)
        physical_spark = spark_schema(physical)
    except TypeError as e:
        raise NativeReadUnsupported(str(e)) from None
    if columns is not None:
        missing = [c for c in columns if c not in logical.names]
        if missing:
            raise NativeReadUnsupported(f"no column {missing[0]!r} in the table")
    return logical, physical, logical_spark, physical_spark


class NativeReadUnsupported(Exception):
    """The native path cannot read this table; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_type_widening(schema_string: str) -> None:
    """Fields whose type changed ("Type Widening"): their files may hold the narrower type,
    which Spark's parquet reader does not widen in every case deltalog does."""

    def walk(node: Any) -> bool:
        if isinstance(node, dict):
            metadata = node.get("metadata")
            if isinstance(metadata, dict) and metadata.get("delta.typeChanges"):
                return True
            return any(walk(v) for v in node.values())
        if isinstance(node, list):
            return any(walk(v) for v in node)
        return False

    if walk(json.loads(schema_string)):
        raise NativeReadUnsupported("type widening: some files hold a column's narrower type")


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def nullable(t: DataType) -> DataType:
    """``t`` with every nested field nullable: Spark's file sources read every field as
    nullable, and a cast may not narrow nullability."""
    from pyspark.sql import types as T

    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, nullable(f.dataType), True) for f in t])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(nullable(t.elementType), True)
    if isinstance(t, T.MapType):
        return T.MapType(nullable(t.keyType), nullable(t.valueType), True)
    return t


__all__ = ["NativeReadUnsupported", "check_type_widening", "nullable", "quoted", "table_schemas"]
