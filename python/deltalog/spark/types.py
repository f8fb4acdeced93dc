"""Spark SQL types for deltalog's Arrow types, and the Arrow schema Spark exchanges batches in.

deltalog reads and writes Arrow whose types follow the Delta schema ("Schema Serialization
Format" of the protocol): a Delta ``timestamp`` is an Arrow timestamp with a time zone and a
``timestamp_ntz`` one without, ``decimal(p, s)`` is ``decimal128``, and so on. Spark has the same
types under other names. Whatever one side cannot represent (unsigned integers, time of day,
intervals, nanosecond timestamps as Delta types, ...) is a :class:`TypeError` naming the
column, never a silent change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType


def _unsupported(path: str, t: object) -> TypeError:
    return TypeError(f"column {path!r}: the type {t} has no Spark SQL equivalent in Delta")


def spark_type(t: pa.DataType, path: str = "") -> DataType:
    """The Spark SQL type of a deltalog Arrow type."""
    from pyspark.sql import types as T

    simple: list[tuple[object, DataType]] = [
        (pa.types.is_boolean, T.BooleanType()),
        (pa.types.is_int8, T.ByteType()),
        (pa.types.is_int16, T.ShortType()),
        (pa.types.is_int32, T.IntegerType()),
        (pa.types.is_int64, T.LongType()),
        (pa.types.is_float32, T.FloatType()),
        (pa.types.is_float64, T.DoubleType()),
        (pa.types.is_date32, T.DateType()),
    ]
    for check, spark in simple:
        if check(t):  # type: ignore[operator]
            return spark
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return T.BinaryType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise _unsupported(path, t)
        return T.DecimalType(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_struct(t):
        return T.StructType(
            [
                T.StructField(
                    f.name, spark_type(f.type, f"{path}.{f.name}" if path else f.name), f.nullable
                )
                for f in t
            ]
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        element = t.value_field
        return T.ArrayType(spark_type(element.type, f"{path}[]"), element.nullable)
    if pa.types.is_map(t):
        return T.MapType(
            spark_type(t.key_type, f"{path}.key"),
            spark_type(t.item_type, f"{path}.value"),
            t.item_field.nullable,
        )
    raise _unsupported(path, t)


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of a deltalog Arrow schema (nullability kept)."""
    from pyspark.sql import types as T

    return T.StructType(
        [T.StructField(f.name, spark_type(f.type, f.name), f.nullable) for f in schema]
    )


def exchange_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark takes record batches of ``schema`` in from a Python data source
    (timestamps in UTC, the JVM's default string and binary layouts): batches are cast to it."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``target``'s schema (same columns; types cast losslessly, e.g.
    large to regular strings, or a time zone relabelled to UTC, which is the same instant)."""
    if batch.schema.equals(target):
        return batch
    columns = [batch.column(i) for i in range(batch.num_columns)]
    cast = [_cast(c, f.type) for c, f in zip(columns, target, strict=True)]
    return pa.RecordBatch.from_arrays(cast, schema=target)


def _cast(array: pa.Array, t: pa.DataType) -> pa.Array:
    if array.type.equals(t):
        return array
    return array.cast(t, safe=True)
