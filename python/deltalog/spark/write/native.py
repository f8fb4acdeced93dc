"""Writes of a Delta table by Spark's own parquet writer: Spark writes, deltalog commits once.

Issue #33, item 2. The driver reads the table (or plans its version 0) exactly as the data
source path does (:class:`deltalog.spark.write.source_writer.DeltaWriter`: save modes,
``mergeSchema``/``overwriteSchema``, catalogs, the application transaction), then:

1. **Rows to files, by Spark.** The DataFrame is projected onto the table's schema and written
   by Spark's parquet writer, partitioned by ``partitionBy``: on a local disk into a hidden
   staging directory of the table (``_deltalog_staging-<uuid>``; "Delta Table
   Specification": files beginning with ``_`` are not data), the files then renamed into
   place; on an object store (``s3://`` as S3A, any store Hadoop opens; the table's
   ``storage_options`` as Hadoop settings of this write only) straight to their places by
   the JVM companion's commit protocol (``DirectCommitProtocol``), which hands the job's
   files to the commit, as Delta Spark's delayed commit does: no rename, which there would
   copy every byte. Each partition column is first replaced by its text as
   "Partition Value Serialization" spells it, computed by Spark expressions independent of
   the session's time zone, so the directory Spark names is ``<physical name>=<escaped
   text>`` and the files hold no partition column. Timestamps are written as INT64
   microseconds ("Primitive Types": Delta's timestamp is microseconds; Spark's default INT96
   carries no statistics), dates and timestamps without calendar rebasing (proleptic
   Gregorian). Column mapping: every column is written by its physical name with its field id
   (``parquet.field.id``), as "Column Mapping" requires of writers in both modes.
2. **The rules rows must follow, in Spark expressions.** NOT NULL columns ("Schema
   Serialization Format"), CHECK constraints ("CHECK Constraints"), column invariants
   ("Column Invariants"), generated columns ("Generated Columns": computed when the
   DataFrame leaves them out, checked with ``<=>`` otherwise) and default values ("Default
   Columns") are evaluated per row by Spark (a false or null check is a violation, as
   deltalog's own writer and Delta Spark decide); a violation fails the job and raises
   :class:`~deltalog.exceptions.ConstraintViolationError`. Row tracking needs no row work: the
   commit gives the new files their ``baseRowId`` ("Row Tracking").
3. **Files to actions, by deltalog.** The files are moved from staging to their final places
   (``<partition dirs>/<Spark's file name>``), and deltalog's core builds their ``add``
   actions with statistics from the footers alone
   (:func:`deltalog._native.add_actions_from_footers`: the table's indexed columns,
   truncation and NaN rules).
4. **One commit.** The data source path's commit (conflict rules, idempotent transactions,
   catalog-managed commits, the first commit of a new table). A failed job or commit deletes
   every file this write made (on an object store: every file of a task the job saw commit;
   a task that finishes after its job failed leaves a file no commit names, which VACUUM
   removes, as with Delta Spark); when a catalog cannot say whether the commit landed
   (:class:`~deltalog.exceptions.CommitOutcomeUnknownError`) the files stay.

What this path cannot express raises :class:`NativeWriteUnsupported` before any file is
written, and :func:`deltalog.spark.write_table` falls back to the data source: identity
columns, nested types in column-mapped tables, partition columns of floating-point or binary
type, a DataFrame whose column types differ from the table's, ``replaceWhere``, tables on an
object store when the JVM companion is unavailable.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from deltalog.spark.jvm import CompanionUnavailable, companion
from deltalog.spark.read.common import nullable, quoted
from deltalog.spark.read.native import _HIVE_NULL, _spark_unescape

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

log = logging.getLogger("deltalog.spark")

_MARK = "deltalog-violation: "
_GENERATED = "delta.generationExpression"
_DEFAULT = "CURRENT_DEFAULT"
_INVARIANTS = "delta.invariants"
_CONSTRAINT = "delta.constraints."
_PHYSICAL = "delta.columnMapping.physicalName"
_FIELD_ID = "delta.columnMapping.id"
#: Spark's settings for the write: Delta's microsecond timestamps, no calendar rebasing.
_WRITE_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.fieldId.write.enabled": "true",
}


class NativeWriteUnsupported(Exception):
    """The native path cannot write this table; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def native_write(df: DataFrame, overwrite: bool, options: Mapping[str, str]) -> list[str]:
    """Writes ``df`` to the table ``options['path']`` names (the data source's options, keys
    in lower case) by Spark's parquet writer and commits its files once; returns the relative
    paths of the files committed. Raises :class:`NativeWriteUnsupported` (nothing written)
    when this path cannot express the write."""
    from deltalog import _native
    from deltalog.exceptions import CommitOutcomeUnknownError
    from deltalog.spark.write.source_writer import DeltaWriter, WrittenFiles

    if options.get("replacewhere"):
        raise NativeWriteUnsupported("replaceWhere (every written row must match it)")
    writer = DeltaWriter(dict(options), df.schema, overwrite)
    spark = df.sparkSession
    # On a local disk the files are staged and renamed into place (a rename is cheap there,
    # and a failed job's files all go with its staging directory); on an object store they
    # are written in place by deltalog's commit protocol (a rename would copy every byte).
    local = _local_directory(writer._uri)
    created = local is not None and not os.path.exists(local)  # a new table's directory
    protocol: Any = None
    if local is None:
        try:
            protocol = companion(spark, COMMIT_PROTOCOL)
        except CompanionUnavailable as e:
            raise NativeWriteUnsupported(
                f"the table is on an object store ({urlparse(writer._uri).scheme}:) and the "
                f"JVM companion that writes there is unavailable: {e.reason}"
            ) from None
    snapshot = writer._snapshot()
    physical_df, partition_keys = prepare(spark, df, snapshot)
    written: list[str] = []  # the files this write made (relative paths), until committed

    def forget(paths: list[str]) -> None:
        if local is not None:
            for path in paths:
                _remove(local, path)
        elif paths:
            _native.delete_files(snapshot, paths)

    try:
        if local is None:
            files = _write_in_place(physical_df, partition_keys, writer, protocol, written)
        else:
            files = _write_staged(physical_df, partition_keys, local, written)
        adds = list(_native.add_actions_from_footers(snapshot, files)) if files else []
        kept, empty = [], []
        for (path, _), add in zip(files, adds, strict=True):
            if json.loads(json.loads(add)["add"]["stats"])["numRecords"] == 0:
                empty.append(path)  # Spark writes one file for a DataFrame without rows
            else:
                kept.append(add)
        forget(empty)
        dropped = set(empty)
        written = [p for p in written if p not in dropped]
        writer.commit([WrittenFiles(kept)])
    except CommitOutcomeUnknownError:
        raise  # the commit may have landed: its files must stay
    except BaseException:
        forget(written)
        if created and local is not None:
            _remove_empty(local)
        raise
    return list(written)


#: deltalog's commit protocol (``jvm/``): Spark's tasks write each file in its place, the job
#: hands the list to deltalog's commit.
COMMIT_PROTOCOL = "dev.deltalog.spark.DirectCommitProtocol"
_PROTOCOL_CONF = "spark.sql.sources.commitProtocolClass"


def _write_in_place(
    frame: DataFrame,
    partition_keys: list[str],
    writer: Any,
    protocol: Any,
    written: list[str],
) -> list[tuple[str, dict[str, str | None]]]:
    """Spark's parquet writer under deltalog's commit protocol (the JVM companion's
    ``DirectCommitProtocol``): every file straight to its place in the table, on any store
    Hadoop opens, no staging and no rename (on an object store a rename copies every byte).
    The output path Spark is given names the write (its last segment; the files go to the
    table root); the protocol, set for this write only, reports the files the job wrote, and
    a failed job deletes them itself. Their paths go to ``written`` as soon as they are
    known."""
    from deltalog.spark.hadoop import hadoop_options

    mark = f"_deltalog_write-{uuid.uuid4()}"
    uri = writer._uri
    settings = hadoop_options(uri, writer._storage)
    try:
        with _session_conf(frame.sparkSession, {**_WRITE_CONF, _PROTOCOL_CONF: COMMIT_PROTOCOL}):
            (
                frame.write.partitionBy(*partition_keys)
                .mode("append")
                .options(**settings)
                .option("compression", "snappy")
                .parquet(f"{_hadoop_root(uri)}/{mark}")
            )
    except Exception as e:
        raise _violation(e) or e from None
    files = protocol.takeWritten(mark)
    if files is None:
        raise RuntimeError(
            f"Spark's write of {uri} finished without deltalog's commit protocol reporting its "
            "files (spark.sql.sources.commitProtocolClass was changed during the write?)"
        )
    paths = sorted(str(f) for f in files)
    written.extend(paths)
    return [(path, _partition_values(path.split("/")[:-1])) for path in paths]


def _hadoop_root(uri: str) -> str:
    """The table root as Hadoop's ``Path`` takes it literally (decoded; ``s3`` is S3A)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return "file:" + unquote(parsed.path if parsed.scheme else uri).rstrip("/")
    scheme = {"s3": "s3a", "s3n": "s3a"}.get(parsed.scheme, parsed.scheme)
    return f"{scheme}://{parsed.netloc}{unquote(parsed.path)}".rstrip("/")


def _local_directory(uri: str) -> str | None:
    """The table's directory when it is on the local file system, else None."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None
    return unquote(parsed.path if parsed.scheme else uri).rstrip("/")


def _write_staged(
    frame: DataFrame, partition_keys: list[str], root: str, written: list[str]
) -> list[tuple[str, dict[str, str | None]]]:
    """Without the JVM companion, on a local disk: Spark's parquet writer into a hidden
    staging directory of the table (``_deltalog_staging-<uuid>``; "Delta Table
    Specification": files beginning with ``_`` are not data), the files then moved to their
    places (each added to ``written`` as it moves)."""
    staging = f"{root}/_deltalog_staging-{uuid.uuid4()}"
    try:
        try:
            with _session_conf(frame.sparkSession, _WRITE_CONF):
                (
                    frame.write.partitionBy(*partition_keys)
                    .mode("errorifexists")
                    .option("compression", "snappy")
                    .parquet("file:" + staging)
                )
        except Exception as e:
            raise _violation(e) or e from None
        return _move_into_place(staging, root, written)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def prepare(spark: SparkSession, df: DataFrame, snapshot: Any) -> tuple[DataFrame, list[str]]:
    """``df`` as the files hold it (physical names and field ids, the partition columns as
    their serialized texts, every row rule checked) and the partition columns' physical
    names, in the table's order."""
    from pyspark.sql import functions as F

    from deltalog.spark.types import spark_schema

    metadata = snapshot.metadata()
    fields = json.loads(str(metadata["schema_string"]))["fields"]
    partition_columns = list(metadata["partition_columns"])
    configuration = dict(metadata["configuration"])
    mapped = snapshot.column_mapping_mode() != "none"
    try:
        table_spark = spark_schema(snapshot.schema())
    except TypeError as e:
        raise NativeWriteUnsupported(str(e)) from None
    given: dict[str, Any] = {}
    for f in df.schema.fields:
        if f.name.lower() in given:
            raise NativeWriteUnsupported(f"the DataFrame has two columns named {f.name!r}")
        given[f.name.lower()] = f
    known = {f["name"].lower() for f in fields}
    extra = [f.name for f in df.schema.fields if f.name.lower() not in known]
    if extra:
        raise NativeWriteUnsupported(f"column {extra[0]!r} is not in the table's schema")

    logical: list[Column] = []
    checks: list[tuple[Column, str]] = []
    for field, target in zip(fields, table_spark.fields, strict=True):
        name = field["name"]
        meta = field.get("metadata") or {}
        t = target.dataType
        if any(str(k).startswith("delta.identity.") for k in meta):
            raise NativeWriteUnsupported(f"identity column {name!r} (values need a sequence)")
        if mapped and _nested(t):
            raise NativeWriteUnsupported(f"nested column {name!r} of a column-mapped table")
        source = given.get(name.lower())
        if source is None:
            if _GENERATED in meta:
                column = F.expr(meta[_GENERATED]).cast(t)
            elif _DEFAULT in meta:
                column = F.expr(meta[_DEFAULT]).cast(t)
            elif target.nullable:
                column = F.lit(None).cast(t)
            else:
                raise NativeWriteUnsupported(f"non-nullable column {name!r} is not given")
        else:
            widened = _widens(source.dataType, t)
            if nullable(source.dataType) != nullable(t) and not widened:
                raise NativeWriteUnsupported(
                    f"column {name!r} is {source.dataType.simpleString()}, the table's "
                    f"{t.simpleString()}"
                )
            if source.dataType != t and nullable(t) != t:
                raise NativeWriteUnsupported(
                    f"column {name!r} has non-nullable nested fields the DataFrame may break"
                )
            column = F.col(quoted(source.name))
            if widened:  # exact: every value of the narrower type is one of the wider
                column = column.cast(t)
        logical.append(column.alias(name))
        if _GENERATED in meta and source is not None:
            checks.append(
                (
                    F.col(quoted(name)).eqNullSafe(F.expr(meta[_GENERATED]).cast(t)),
                    f"generated column {name} = {meta[_GENERATED]}",
                )
            )
        if not target.nullable and (source is None or source.nullable):
            checks.append((F.col(quoted(name)).isNotNull(), f"NOT NULL column {name}"))
        if _INVARIANTS in meta:
            sql = _invariant(meta[_INVARIANTS], name)
            checks.append((F.expr(sql), f"invariant of column {name} ({sql})"))
    for key, sql in sorted(configuration.items()):
        if key.startswith(_CONSTRAINT):
            checks.append((F.expr(sql), f"CHECK constraint {key[len(_CONSTRAINT) :]} ({sql})"))

    rows = df.select(*logical)
    parts = {c.lower() for c in partition_columns}
    out: list[Column] = []
    guard: Column | None = None
    for cond, what in checks:
        bad = ~F.coalesce(cond, F.lit(False))
        failure = F.raise_error(F.lit(f"{_MARK}{what}"))
        guard = F.when(bad, failure) if guard is None else guard.when(bad, failure)
    for field, target in zip(fields, table_spark.fields, strict=True):
        name = field["name"]
        meta = field.get("metadata") or {}
        physical = str(meta.get(_PHYSICAL, name)) if mapped else name
        column = F.col(quoted(name))
        if name.lower() in parts:
            column = _partition_text(spark, column, target.dataType, name)
        if guard is not None:  # every rule, evaluated in the first written column
            column = guard.otherwise(column)
            guard = None
        if mapped and _FIELD_ID in meta and name.lower() not in parts:
            out.append(column.alias(physical, metadata={"parquet.field.id": int(meta[_FIELD_ID])}))
        else:
            out.append(column.alias(physical))
    return rows.select(*out), _partition_order(partition_columns, fields, mapped)


def _partition_order(
    partition_columns: list[str], fields: list[dict[str, Any]], mapped: bool
) -> list[str]:
    """The partition columns' physical names in ``partitionColumns`` order (the directory
    nesting other writers use)."""
    by_name = {f["name"].lower(): f for f in fields}
    out = []
    for c in partition_columns:
        f = by_name[c.lower()]
        meta = f.get("metadata") or {}
        out.append(str(meta.get(_PHYSICAL, f["name"])) if mapped else f["name"])
    return out


def _widens(given: DataType, target: DataType) -> bool:
    """Whether ``given`` casts to ``target`` without loss (an integer to a wider integer, a
    float to a double), as deltalog's writer accepts such columns."""
    from pyspark.sql import types as T

    ranks = [T.ByteType, T.ShortType, T.IntegerType, T.LongType]
    rank = {cls: i for i, cls in enumerate(ranks)}
    a, b = type(given), type(target)
    if a in rank and b in rank:
        return rank[a] < rank[b]
    return a is T.FloatType and b is T.DoubleType


def _nested(t: DataType) -> bool:
    from pyspark.sql import types as T

    return isinstance(t, (T.StructType, T.ArrayType, T.MapType))


def _invariant(text: Any, column: str) -> str:
    """The SQL of a ``delta.invariants`` value (``{"expression": {"expression": "..."}}``)."""
    try:
        value = json.loads(text) if isinstance(text, str) else text
        return str(value["expression"]["expression"])
    except (ValueError, KeyError, TypeError):
        raise NativeWriteUnsupported(f"unreadable invariant of column {column!r}") from None


def _partition_text(spark: SparkSession, column: Column, t: DataType, name: str) -> Column:
    """The partition value's text ("Partition Value Serialization") as deltalog's own writer
    spells it, by expressions that do not depend on the session's time zone."""
    from pyspark.sql import functions as F, types as T

    if isinstance(t, T.StringType):
        return column
    if isinstance(
        t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType, T.DecimalType)
    ):
        return column.cast("string")
    if isinstance(t, T.DateType):
        return column.cast("string")
    if isinstance(t, T.TimestampNTZType):
        return F.date_format(column, "yyyy-MM-dd HH:mm:ss.SSSSSS")
    if isinstance(t, T.TimestampType):
        # yyyy-MM-ddTHH:mm:ss.SSSSSSZ in UTC, from the instant's microseconds.
        us = F.unix_micros(column)
        day = F.floor(us / F.lit(86_400_000_000)).cast("long")
        rest = us - day * F.lit(86_400_000_000)
        return F.when(column.isNull(), F.lit(None).cast("string")).otherwise(
            F.format_string(
                "%sT%02d:%02d:%02d.%06dZ",
                F.date_from_unix_date(day.cast("int")).cast("string"),
                (rest / 3_600_000_000).cast("int"),
                ((rest / 60_000_000) % 60).cast("int"),
                ((rest / 1_000_000) % 60).cast("int"),
                (rest % 1_000_000).cast("int"),
            )
        )
    raise NativeWriteUnsupported(
        f"partition column {name!r} of type {t.simpleString()} (Spark's directory text is "
        "not the protocol's)"
    )


@contextmanager
def _session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` on the session for the duration of the write, then restored."""
    before = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def _violation(e: BaseException) -> BaseException | None:
    """A :class:`ConstraintViolationError` for a job that failed on one of the row rules."""
    from deltalog.exceptions import ConstraintViolationError

    text = str(e)
    at = text.find(_MARK)
    if at < 0:
        return None
    what = text[at + len(_MARK) :].splitlines()[0].strip().rstrip(".\"'")
    return ConstraintViolationError(f"a written row violates the {what}")


def _move_into_place(
    staging: str, root: str, moved: list[str]
) -> list[tuple[str, dict[str, str | None]]]:
    """Moves each data file Spark wrote under ``staging`` to the same relative place under
    ``root`` (recording it in ``moved`` as it goes); ``(relative path, partition values)``
    for :func:`deltalog._native.add_actions_from_footers`, the values unescaped from the
    directory names Spark made of their texts."""
    out: list[tuple[str, dict[str, str | None]]] = []
    for directory, _, names in sorted(os.walk(staging)):
        relative = os.path.relpath(directory, staging)
        segments = [] if relative == "." else relative.split(os.sep)
        values = _partition_values(segments)
        for name in sorted(names):
            if name.startswith((".", "_")) or not name.endswith(".parquet"):
                continue  # checksums, _SUCCESS
            path = "/".join([*segments, name])
            os.makedirs(os.path.join(root, *segments), exist_ok=True)
            os.rename(os.path.join(directory, name), os.path.join(root, path))
            moved.append(path)
            out.append((path, values))
    return out


def _partition_values(segments: list[str]) -> dict[str, str | None]:
    """The partition values of a file in the directories ``segments`` Spark named (``<physical
    name>=<escaped text>``), unescaped."""
    values: dict[str, str | None] = {}
    for segment in segments:
        key, eq, raw = segment.partition("=")
        if not eq:
            raise RuntimeError(f"Spark wrote an unexpected directory {segment!r}")
        values[_spark_unescape(key)] = None if raw == _HIVE_NULL else _spark_unescape(raw)
    return values


def _remove_empty(directory: str) -> None:
    """Removes ``directory`` and the empty directories under it (a failed write's new table
    directory, which holds nothing else)."""
    for parent, _, _ in sorted(os.walk(directory), key=lambda w: -len(w[0])):
        try:
            os.rmdir(parent)
        except OSError:
            return


def _remove(root: str, path: str) -> None:
    """Deletes a file this write made, and the partition directories it leaves empty."""
    try:
        os.remove(os.path.join(root, path))
    except FileNotFoundError:
        return
    parent = os.path.dirname(path)
    while parent:
        try:
            os.rmdir(os.path.join(root, parent))
        except OSError:
            break
        parent = os.path.dirname(parent)


__all__ = ["NativeWriteUnsupported", "native_write", "prepare"]
