"""Reads of a Delta table on Spark's own parquet source: deltalog plans, Spark reads.

Issue #33, item 1 (first slice). The driver opens the snapshot with deltalog (time travel and
catalogs included) and plans the scan; the DataFrame is Spark's built-in parquet scan of
exactly the planned files, so Spark prunes columns, pushes filters into parquet, splits files
by row group and vectorises, and no row crosses between the JVM and Python. Protocol sections
this follows:

- "Add File and Remove File": the files are the scan's tasks (paths relative to the table
  root, URI-decoded by deltalog), never a directory listing;
- "Partition Value Serialization": partition values come from each file's ``partitionValues``
  in the log, never from directory names (Delta does not promise Hive-style paths). Files
  whose relative path is ``k1=v1/…/file`` with each directory spelling exactly the logged
  value as Spark's partition discovery parses it (types Spark parses independently of the
  session: strings, integers, booleans, dates, decimals) are read by one scan with discovery
  relative to the table root; the rest are grouped by their tuple of values, each group one
  parquet scan with the values attached as typed literals, unioned by name (no join). The
  texts are parsed as deltalog's core parses them (``rust/core/src/scan/partition_values.rs``):
  an empty text is null, a timestamp without a zone is UTC, binary is the text's UTF-8 bytes;
- "Column Mapping": in ``name`` mode the files are read by physical name and the columns
  renamed to the logical names (nested fields by a cast to the logical struct, which renames
  by position); ``id`` mode is left to the data source path;
- "Schema Serialization Format": the DataFrame's types are :func:`deltalog.spark.types.
  spark_schema` of the table's schema, as the data source path gives them.

Where the session can attach deltalog's JVM companion (:mod:`deltalog.spark.jvm`, issue #45),
:func:`plan_native_read` hands the plan to it instead (:mod:`deltalog.spark.read.planned`):
one scan for any partitioning, deletion vectors dropped inside Spark's vectorised reader,
column mapping in ``id`` mode by parquet field id, type widening by Spark's readers. The scans
below are the path without it.

What the native path cannot express falls back to the Python Data Source
(:mod:`deltalog.spark.read.source`), which reads with deltalog's native reader on the executors:
types Spark has no equivalent for; without the companion also deletion vectors, column mapping
``id`` mode, type widening (``delta.typeChanges``), files outside the local file system and
more than :data:`MAX_GROUPS` partition-value groups. :func:`plan_native_read` returns either
a DataFrame or the reason it cannot build one.

Hadoop globs every path Spark's file sources are given (``p=a[1]`` would read ``p=a1``), so
the characters ``\\ [ ] { } * ?`` are escaped; the grouped scans turn partition discovery off
(``recursiveFileLookup``) so that directory names never become columns there.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import pyarrow as pa

from deltalog.protocol.actions import schema_text
from deltalog.spark.read.common import (
    NativeReadUnsupported,
    check_type_widening,
    nullable,
    quoted,
    table_schemas,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

    from deltalog.table.delta_table import DeltaTable
    from deltalog.table.scan import ScanTask

log = logging.getLogger("deltalog.spark")

#: Names the DataFrame is aliased with: ``df.explain(True)`` shows which path a read took.
NATIVE = "deltalog_native_scan"
SOURCE = "deltalog_source_scan"

#: Partition-value groups beyond which a read falls back (one parquet scan per group).
MAX_GROUPS = 200

_PHYSICAL = "delta.columnMapping.physicalName"
_GLOB = str.maketrans({c: "\\" + c for c in "\\[]{}*?"})


@dataclass(frozen=True)
class ReadPath:
    """Which path a read took (``native`` or ``source``) and, for ``source``, why; for
    ``native``, ``scan`` describes the scan (files, deletion vectors, scans; not compared)."""

    path: str
    reason: str | None = None
    scan: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        text = self.path if self.reason is None else f"{self.path} ({self.reason})"
        return text if self.scan is None else f"{text}: {self.scan}"


def plan_native_read(
    spark: SparkSession,
    table: DeltaTable,
    columns: Sequence[str] | None = None,
    tasks: Sequence[ScanTask] | None = None,
    row_ids: tuple[str, str] | None = None,
    hidden: Sequence[tuple[str, str]] = (),
) -> DataFrame:
    """The loaded version of ``table`` (only ``columns``, in that order, when given; only the
    files of ``tasks`` when given) as a DataFrame over Spark's parquet source. With
    ``row_ids`` (two column names) each row also carries its file as Spark names it
    (``_metadata.file_path``, a URI: :func:`file_key` maps it back to the task's path) and its
    index in the file (``_metadata.row_index``), which identify a row of a file without a
    deletion vector. ``hidden`` adds long columns the files may hold beside the table's
    (``(physical name, alias)``: materialized row tracking columns; null where a file lacks
    one). Raises :class:`NativeReadUnsupported` naming the reason when this path cannot
    express the read.

    Through deltalog's JVM companion (:mod:`deltalog.spark.read.planned`) where the session
    can attach it: one scan for any partitioning, deletion vectors and column mapping in id
    mode included. Without it, Spark's parquet source as it is (below), which cannot drop
    deleted rows."""
    from pyspark.sql import functions as F

    from deltalog.spark.jvm import CompanionUnavailable, companion

    try:
        entry = companion(spark)
    except CompanionUnavailable as e:
        without = e.reason
    else:
        from deltalog.spark.read.planned import plan_companion_read

        df, described, key = plan_companion_read(
            spark, entry, table, columns, tasks, row_ids, hidden, NATIVE
        )
        out = _described(df, described)
        out._deltalog_file_key = key  # type: ignore[attr-defined]
        return out

    mode = table.column_mapping_mode()
    if mode == "id":
        raise NativeReadUnsupported(f"column mapping in id mode ({without})")
    check_type_widening(schema_text(table.metadata()))
    logical, physical, logical_spark, physical_spark = table_schemas(table, columns)
    if tasks is None:
        tasks = table.scan().tasks()
    partition_columns = list(table.metadata().partition_columns)
    with_dv = sum(1 for t in tasks if t.deletion_vector is not None)
    if with_dv:
        raise NativeReadUnsupported(
            f"deletion vectors on {with_dv} of {len(tasks)} files ({without})"
        )
    root = _local_root(table.table_uri)
    physical_of = {lf.name: pf.name for lf, pf in zip(logical, physical, strict=True)}
    keys = [physical_of[c] for c in partition_columns]
    part_types_all = {
        c: f.dataType for c, f in zip(logical.names, logical_spark.fields, strict=True)
    }
    discoverable = _discoverable_keys(partition_columns, keys, part_types_all)
    hive: list[str] = []  # files whose directories spell their logged values (one scan)
    groups: dict[tuple[str | None, ...], list[str]] = {}
    for task in tasks:
        values = task.partition_values
        group = tuple(values.get(k) or None for k in keys)  # "" is null, as deltalog reads it
        if (
            keys
            and discoverable
            and _hive_agrees(task.path, keys, group, part_types_all, partition_columns)
        ):
            hive.append(_hadoop_path(root, task))
        else:
            groups.setdefault(group, []).append(_hadoop_path(root, task))
    if len(groups) > MAX_GROUPS:
        raise NativeReadUnsupported(
            f"{len(groups)} partition-value groups whose directories do not spell their "
            f"values (more than {MAX_GROUPS} parquet scans)"
        )
    parts = set(partition_columns)
    data_fields = [
        (lf, ls, ps)
        for lf, ls, ps in zip(logical, logical_spark.fields, physical_spark.fields, strict=True)
        if lf.name not in parts
    ]
    if not data_fields and (groups or hive):
        raise NativeReadUnsupported("no data columns (every column is a partition column)")
    from pyspark.sql.types import LongType, StructField, StructType

    read_schema = StructType(
        [ps for _, _, ps in data_fields] + [StructField(p, LongType()) for p, _ in hidden]
    )
    wanted = list(columns) if columns is not None else logical.names
    spark_fields = {f.name: f for f in logical_spark.fields}
    by_name = {lf.name: (ls, ps) for lf, ls, ps in data_fields}
    part_types = {c: spark_fields[c].dataType for c in partition_columns}
    part_arrow = {c: logical.field(c).type for c in partition_columns}

    ids: list[Column] = [F.col(quoted(p)).alias(a) for p, a in hidden]
    id_fields: list[StructField] = [StructField(a, LongType()) for _, a in hidden]
    if row_ids is not None:
        from pyspark.sql.types import StringType

        ids = [
            F.col("_metadata.file_path").alias(row_ids[0]),
            F.col("_metadata.row_index").alias(row_ids[1]),
            *ids,
        ]
        id_fields = [
            StructField(row_ids[0], StringType()),
            StructField(row_ids[1], LongType()),
            *id_fields,
        ]
    if not groups and not hive:
        empty = StructType([spark_fields[c] for c in wanted] + id_fields)
        return _described(spark.createDataFrame([], empty).alias(NATIVE), "no files")

    def data_column(name: str) -> Column:
        ls, ps = by_name[name]
        column = F.col(quoted(ps.name))
        if ps.dataType != ls.dataType:  # nested physical names: renamed by position
            column = column.cast(nullable(ls.dataType))
        return column.alias(name)

    frames = []
    if hive:
        # Spark's partition discovery, relative to the table root, with the partition
        # columns' types given: every file here was checked to spell its logged values.
        schema = StructType(
            [*read_schema.fields]
            + [
                StructField(k, part_types[c], True)
                for c, k in zip(partition_columns, keys, strict=True)
            ]
        )
        files = spark.read.schema(schema).option("basePath", "file:" + root).parquet(*hive)
        key_of = dict(zip(partition_columns, keys, strict=True))
        frames.append(
            files.select(
                *[
                    F.col(quoted(key_of[n])).alias(n) if n in key_of else data_column(n)
                    for n in wanted
                ],
                *ids,
            )
        )
    for group, paths in groups.items():
        typed = dict(zip(partition_columns, group, strict=True))
        files = spark.read.schema(read_schema).option("recursiveFileLookup", "true").parquet(*paths)
        exprs: list[Column] = []
        for name in wanted:
            if name in typed:
                exprs.append(
                    _literal(typed[name], part_arrow[name], part_types[name], name).alias(name)
                )
                continue
            exprs.append(data_column(name))
        frames.append(files.select(*exprs, *ids))
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return _described(
        out.alias(NATIVE),
        f"{len(tasks)} files, {len(frames)} parquet scans (Spark's parquet source without the "
        f"JVM companion: {without})",
    )


def _described(df: DataFrame, scan: str) -> DataFrame:
    """``df`` carrying the description :class:`ReadPath` gives (``read_table`` reads it)."""
    df._deltalog_scan = scan  # type: ignore[attr-defined]
    return df


#: Spark's name for a null partition directory (``ExternalCatalogUtils.DEFAULT_PARTITION_NAME``).
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_CANONICAL = {
    "int": re.compile(r"-?(0|[1-9][0-9]{0,18})"),
    "date": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
    "decimal": re.compile(r"-?[0-9]+(\.[0-9]+)?"),
    "bool": re.compile(r"true|false"),
}


def _discoverable_keys(
    partition_columns: Sequence[str], keys: Sequence[str], types: dict[str, DataType]
) -> bool:
    """Whether Spark's partition discovery can produce these columns' values exactly: types
    whose text Spark parses independently of the session (not timestamps, which it reads in
    the session time zone, nor binary or floating point), and directory keys Spark keeps as
    they are."""
    from pyspark.sql import types as T

    exact = (
        T.StringType,
        T.ByteType,
        T.ShortType,
        T.IntegerType,
        T.LongType,
        T.DateType,
        T.DecimalType,
        T.BooleanType,
    )
    if len(set(k.lower() for k in keys)) != len(keys):
        return False
    return all(
        isinstance(types[c], exact) and "%" not in k and "=" not in k and "/" not in k
        for c, k in zip(partition_columns, keys, strict=True)
    )


def _spark_unescape(segment: str) -> str:
    """Spark's ``ExternalCatalogUtils.unescapePathName``: each ``%XX`` becomes the one
    character ``chr(0xXX)`` (so multi-byte UTF-8 escapes do not round-trip, which the
    comparison with the logged text then catches)."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "%" and _is_hex(segment[i + 1 : i + 3]):
            out.append(chr(int(segment[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


def _hive_agrees(
    path: str,
    keys: Sequence[str],
    values: tuple[str | None, ...],
    types: dict[str, DataType],
    partition_columns: Sequence[str],
) -> bool:
    """Whether ``path`` (relative, decoded) is ``k1=v1/…/kn=vn/file`` with each ``vi`` what
    Spark's discovery turns into exactly the logged value ("Partition Value Serialization":
    the log is the truth, the directories only a layout some writers use)."""
    from pyspark.sql import types as T

    if "://" in path or path.startswith("/") or path.startswith("file:"):
        return False
    segments = path.split("/")
    if len(segments) != len(keys) + 1:
        return False
    for segment, key, value, column in zip(
        segments[:-1], keys, values, partition_columns, strict=True
    ):
        name, eq, raw = segment.partition("=")
        if not eq or name != key:
            return False
        if raw == _HIVE_NULL:
            if value is not None:
                return False
            continue
        if value is None or raw == "" or _spark_unescape(raw) != value:
            return False
        t = types[column]
        if isinstance(t, T.StringType):
            continue
        if isinstance(t, T.BooleanType):
            kind = "bool"
        elif isinstance(t, T.DateType):
            kind = "date"
        elif isinstance(t, T.DecimalType):
            kind = "decimal"
        else:
            kind = "int"
        if not _CANONICAL[kind].fullmatch(value):
            return False
    return True


def file_key(
    table: DeltaTable, tasks: Sequence[ScanTask], df: DataFrame | None = None
) -> Callable[[str], str]:
    """Maps a ``_metadata.file_path`` of a native read of ``tasks`` (Spark's URI of the file)
    back to the task's ``path``: by the plan's URIs for a read through the JVM companion
    (``df``, the DataFrame :func:`plan_native_read` made), else by the local file each
    names."""
    planned = getattr(df, "_deltalog_file_key", None)
    if planned is not None:
        return planned  # type: ignore[no-any-return]
    root = _local_root(table.table_uri)
    by_file = {}
    for task in tasks:
        hadoop = _hadoop_path(root, task)[len("file:") :]
        by_file[_unglob(hadoop)] = task.path

    def key(spark_path: str) -> str:
        local = unquote(urlparse(spark_path).path)
        found = by_file.get(local)
        if found is None:
            raise RuntimeError(f"Spark read a file deltalog did not plan: {spark_path}")
        return found

    return key


def _unglob(path: str) -> str:
    return re.sub(r"\\(.)", r"\1", path)


def _local_root(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        raise NativeReadUnsupported(
            f"the table is not on the local file system ({parsed.scheme}:); storage_options "
            "are deltalog's, Spark's parquet source would need its own Hadoop configuration"
        )
    return unquote(parsed.path).rstrip("/")


def _hadoop_path(root: str, task: ScanTask) -> str:
    """The file as a ``file:`` path Hadoop takes literally: decoded, glob characters escaped
    (Hadoop's ``Path`` does not decode ``%``; its globbing would read ``p=a[1]`` as
    ``p=a1``)."""
    path = task.path
    if "://" in path or path.startswith("file:"):
        parsed = urlparse(path)
        if parsed.scheme != "file":
            raise NativeReadUnsupported(f"a file outside the local file system: {path[:120]}")
        full = parsed.path
    elif path.startswith("/"):
        full = path
    else:
        full = f"{root}/{path}"
    return "file:" + full.translate(_GLOB)


def _literal(text: str | None, arrow: pa.DataType, t: DataType, name: str) -> Column:
    """A partition value's text as a typed Spark literal ("Partition Value Serialization", as
    deltalog's core parses it), independent of the session's time zone."""
    from pyspark.sql import functions as F, types as T

    if text is None or text == "":
        return F.lit(None).cast(t)
    try:
        if isinstance(t, T.StringType):
            return F.lit(text)
        if isinstance(t, T.BinaryType):
            return F.lit(bytearray(text.encode("utf-8")))
        if isinstance(t, T.BooleanType):
            low = text.lower()
            if low not in ("true", "false"):
                raise ValueError("expected true or false")
            return F.lit(low == "true")
        if isinstance(t, T.DateType):
            day = dt.datetime.strptime(text.strip(), "%Y-%m-%d").date()
            return F.date_from_unix_date(F.lit((day - dt.date(1970, 1, 1)).days))
        if isinstance(t, T.TimestampType):
            return F.timestamp_micros(F.lit(_micros(text.strip(), True)))
        if isinstance(t, T.TimestampNTZType):
            micros = _micros(text.strip(), False)
            wall = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
            return F.lit(wall.isoformat(sep=" ")).cast(t)
        if isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            return F.lit(int(text.strip())).cast(t)
        if isinstance(t, (T.FloatType, T.DoubleType)):
            return F.lit(float(text.strip())).cast(t)
        if isinstance(t, T.DecimalType):
            value = decimal.Decimal(text.strip())
            return F.lit(str(value)).cast(t)
    except (ValueError, decimal.InvalidOperation) as e:
        raise NativeReadUnsupported(
            f"partition value {text!r} of column {name!r} is not a valid {arrow}: {e}"
        ) from None
    raise NativeReadUnsupported(f"partition column {name!r} of type {arrow}")


def _micros(text: str, with_zone: bool) -> int:
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    if with_zone and ("Z" in text or "+" in text[10:] or "-" in text[10:]):
        try:
            aware = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            if aware.tzinfo is not None:
                return (aware - epoch) // dt.timedelta(microseconds=1)
        except ValueError:
            pass
    for fmt in (
        "%Y-%m-%d %H:%M:%S.%f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S.%f",
        "%Y-%m-%dT%H:%M:%S",
    ):
        try:
            naive = dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return (naive.replace(tzinfo=dt.timezone.utc) - epoch) // dt.timedelta(microseconds=1)
    if not with_zone:  # a date partition column widened to timestamp_ntz keeps its dates
        day = dt.datetime.strptime(text, "%Y-%m-%d")
        return (day.replace(tzinfo=dt.timezone.utc) - epoch) // dt.timedelta(microseconds=1)
    raise ValueError("expected yyyy-MM-dd HH:mm:ss[.SSSSSS] or ISO-8601 in UTC")


__all__ = [
    "MAX_GROUPS",
    "NATIVE",
    "SOURCE",
    "NativeReadUnsupported",
    "ReadPath",
    "file_key",
    "plan_native_read",
]
