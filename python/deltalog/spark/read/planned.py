"""Reads on Spark's parquet source through deltalog's JVM companion (issue #45).

The driver plans with deltalog (:meth:`RawScan.file_plan`: the files' URIs and sizes, their
typed partition values and their decoded deletion vectors, as Arrow IPC bytes) and hands the
plan to the companion (:mod:`deltalog.spark.jvm`), which makes one Spark relation of it: a
file index over exactly those files and Spark's parquet format, extended to drop each file's
deleted rows inside the vectorised reader. Protocol sections this follows:

- "Add File and Remove File": the files are the plan's, never a listing;
- "Partition Value Serialization": partition values are the core's parse of the log's
  strings, whatever the directories are called, so any partitioning is one scan;
- "Deletion Vectors": a row whose index is in its file's vector is not read. The relation's
  data schema has a boolean column :data:`DELETED` the files lack; the companion fills it from
  the bitmaps and the DataFrame keeps the rows where it is false;
- "Type Widening": Spark's parquet readers widen a file's narrower type as they read;
- "Column Mapping": files are read by physical name and renamed to the logical names; in
  ``id`` mode by parquet field id (Spark's ``spark.sql.parquet.fieldId.read.enabled``, which
  only affects reads whose schema carries ids);
- "Schema Serialization Format": the DataFrame's types are :func:`deltalog.spark.types.
  spark_schema` of the table's schema, as on every other path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from deltalog.spark.hadoop import hadoop_options
from deltalog.spark.read.common import NativeReadUnsupported, nullable, quoted, table_schemas

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

    from deltalog.table.delta_table import DeltaTable
    from deltalog.table.scan import ScanTask

#: The companion's column marking deleted rows (``DeletionVectorParquetFormat.DELETED``).
DELETED = "__deltalog_deleted"

#: Spark's parquet field id metadata key ("Column Mapping" in id mode).
_FIELD_ID = "parquet.field.id"
_ARROW_FIELD_ID = b"PARQUET:field_id"


def plan_companion_read(
    spark: SparkSession,
    entry: Any,
    table: DeltaTable,
    columns: Sequence[str] | None,
    tasks: Sequence[ScanTask] | None,
    row_ids: tuple[str, str] | None,
    hidden: Sequence[tuple[str, str]],
    alias: str,
) -> tuple[DataFrame, str, Callable[[str], str] | None]:
    """:func:`deltalog.spark.read.native.plan_native_read` through the companion ``entry``;
    returns the DataFrame (the table's logical columns, aliased ``alias``), a description of
    the scan and, when
    ``tasks`` are given, the function mapping a row's ``_metadata.file_path`` (Spark's URI of
    its file) back to its task's ``path``."""
    from pyspark.sql import DataFrame, functions as F
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    from deltalog import _native

    mode = table.column_mapping_mode()
    # "Type Widening": files may hold a column's narrower type. Spark's parquet readers (4.2
    # and later, vectorised and row-based) widen every change Delta 4.0 allows as they read,
    # as Delta Spark relies on; tests/test_spark_companion.py checks each on both readers.
    logical, physical, logical_spark, physical_spark = table_schemas(table, columns)
    if mode == "id":
        physical_spark = _with_field_ids(physical_spark, physical)
        spark.conf.set("spark.sql.parquet.fieldId.read.enabled", "true")
    root = _root_uri(table.table_uri)
    if tasks is None:
        raw = table.scan()._raw
        count = raw.num_tasks()
        tasks_with_dv = None
    else:
        raw = _native.RawScan.from_json(
            tasks[0]._spec if tasks else table.scan()._raw.spec_json(),
            [t._task for t in tasks],
            table._storage_options,
        )
        count = len(tasks)
        tasks_with_dv = sum(1 for t in tasks if t.deletion_vector is not None)
    plan = raw.file_plan()
    planned = pa.ipc.open_stream(plan).read_all()  # decoded once, for the counts and keys
    if tasks_with_dv is None:
        deleted = planned.column("deleted_rows")
        tasks_with_dv = len(deleted) - int(deleted.null_count)
    key = None if tasks is None else _file_key(planned, [t.path for t in tasks])

    partition_columns = list(table.metadata().partition_columns)
    parts = set(partition_columns)
    data_fields = [
        (lf, ls, ps)
        for lf, ls, ps in zip(logical, logical_spark.fields, physical_spark.fields, strict=True)
        if lf.name not in parts
    ]
    spark_fields = {f.name: f for f in logical_spark.fields}
    data_schema = StructType(
        [ps for _, _, ps in data_fields]
        + [StructField(p, LongType()) for p, _ in hidden]
        + ([StructField(DELETED, BooleanType())] if tasks_with_dv else [])
    )
    partition_schema = StructType(
        [StructField(c, spark_fields[c].dataType, True) for c in partition_columns]
    )
    jdf = entry.dataFrame(
        spark._jsparkSession,
        root,
        bytearray(plan),
        data_schema.json(),
        partition_schema.json(),
        hadoop_options(table.table_uri, table._storage_options),
    )
    described = (
        f"{count} files, {tasks_with_dv} with deletion vectors, one parquet scan "
        "(deltalog's JVM companion)"
    )
    by_name = {lf.name: (ls, ps) for lf, ls, ps in data_fields}
    wanted = list(columns) if columns is not None else logical.names
    sql = _output_sql(wanted, parts, by_name, row_ids, hidden)
    if sql is not None:  # the usual case: shaped in the JVM in one call
        out = entry.shaped(jdf, bool(tasks_with_dv), "\0".join(sql), alias)
        return DataFrame(out, spark), described, key
    files = DataFrame(jdf, spark)
    if tasks_with_dv:
        files = files.where(~F.col(DELETED))

    def output(name: str) -> Column:
        if name in parts:
            return F.col(quoted(name))
        ls, ps = by_name[name]
        column = F.col(quoted(ps.name))
        if ps.dataType != ls.dataType:  # nested physical names: renamed by position
            column = column.cast(nullable(ls.dataType))
        return column.alias(name)

    ids: list[Column] = [F.col(quoted(p)).alias(a) for p, a in hidden]
    if row_ids is not None:
        ids = [
            F.col("_metadata.file_path").cast(StringType()).alias(row_ids[0]),
            F.col("_metadata.row_index").alias(row_ids[1]),
            *ids,
        ]
    return files.select(*[output(n) for n in wanted], *ids).alias(alias), described, key


def _output_sql(
    wanted: Sequence[str],
    parts: set[str],
    by_name: Mapping[str, tuple[Any, Any]],
    row_ids: tuple[str, str] | None,
    hidden: Sequence[tuple[str, str]],
) -> list[str] | None:
    """The read's output columns as Spark SQL expressions (physical names renamed to logical
    ones), or None when one needs a cast (nested physical names, renamed by position) or a
    name holds a NUL (the separator :meth:`PlannedScan.shaped` splits on)."""
    out: list[str] = []
    for name in wanted:
        if name in parts:
            out.append(quoted(name))
            continue
        ls, ps = by_name[name]
        if ps.dataType != ls.dataType:
            return None
        out.append(f"{quoted(ps.name)} AS {quoted(name)}")
    if row_ids is not None:
        out.append(f"CAST(_metadata.file_path AS STRING) AS {quoted(row_ids[0])}")
        out.append(f"_metadata.row_index AS {quoted(row_ids[1])}")
    out += [f"{quoted(p)} AS {quoted(a)}" for p, a in hidden]
    return None if any("\0" in e for e in out) else out


def _file_key(plan: pa.Table, paths: list[str]) -> Callable[[str], str]:
    """Spark's URI of a planned file (``_metadata.file_path``: Hadoop's ``Path`` of the plan's
    URI, ``s3`` as ``s3a``) → the task's path; URIs compare by scheme, authority and decoded
    path, as Hadoop normalizes them."""
    uris = plan.column("path").to_pylist()
    by_uri = {_uri_key(u): p for u, p in zip(uris, paths, strict=True)}

    def key(spark_path: str) -> str:
        found = by_uri.get(_uri_key(spark_path))
        if found is None:
            raise RuntimeError(f"Spark read a file deltalog did not plan: {spark_path}")
        return found

    return key


def _uri_key(uri: str) -> tuple[str, str, str]:
    parsed = urlparse(uri)
    scheme = {"s3": "s3a", "s3n": "s3a"}.get(parsed.scheme, parsed.scheme)
    netloc = "" if parsed.netloc == "localhost" else parsed.netloc
    return scheme, netloc, unquote(parsed.path)


#: Stores Spark reads through Hadoop file systems of these schemes (``s3`` is S3A's).
_HADOOP_SCHEMES = ("s3", "s3a", "s3n", "gs", "abfs", "abfss", "hdfs")


def _root_uri(uri: str) -> str:
    """The table root as the URI Hadoop's ``Path`` takes."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        local = parsed.path if parsed.scheme else uri
        return Path(local).resolve().as_uri()
    if parsed.scheme in _HADOOP_SCHEMES:
        return uri
    raise NativeReadUnsupported(
        f"the table is on a store Spark's Hadoop file systems do not name ({parsed.scheme}:)"
    )


def _with_field_ids(schema: StructType, physical: pa.Schema) -> StructType:
    """``schema`` with each struct field's parquet field id from the physical Arrow schema
    (``PARQUET:field_id``), as Spark's reader matches fields by id."""
    from pyspark.sql.types import StructField, StructType

    def field_id(f: pa.Field) -> int | None:
        raw = (f.metadata or {}).get(_ARROW_FIELD_ID)
        return int(raw) if raw is not None else None

    def walk_type(t: DataType, a: pa.DataType) -> DataType:
        from pyspark.sql import types as T

        if isinstance(t, T.StructType) and pa.types.is_struct(a):
            return walk_struct(t, [a.field(i) for i in range(a.num_fields)])
        if isinstance(t, T.ArrayType) and (pa.types.is_list(a) or pa.types.is_large_list(a)):
            return T.ArrayType(walk_type(t.elementType, a.value_type), t.containsNull)
        if isinstance(t, T.MapType) and pa.types.is_map(a):
            return T.MapType(
                walk_type(t.keyType, a.key_type),
                walk_type(t.valueType, a.item_type),
                t.valueContainsNull,
            )
        return t

    def walk_struct(t: StructType, arrow_fields: list[pa.Field]) -> StructType:
        out = []
        for sf, af in zip(t.fields, arrow_fields, strict=True):
            metadata = dict(sf.metadata or {})
            fid = field_id(af)
            if fid is not None:
                metadata[_FIELD_ID] = fid
            out.append(StructField(sf.name, walk_type(sf.dataType, af.type), sf.nullable, metadata))
        return StructType(out)

    return walk_struct(schema, list(physical))


__all__ = ["DELETED", "plan_companion_read"]
