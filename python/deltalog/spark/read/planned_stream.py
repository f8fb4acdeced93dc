"""Streams whose micro-batches are plans like any read (issue #45):
:func:`deltalog.spark.read_stream`.

The JVM companion's ``PlannedStream`` (a Spark streaming source, ``jvm/``) asks a
:class:`StreamPlanner` in the driver's Python process (through py4j's callback server) for
each trigger's end offset and for each batch. Offsets, the files of a batch and every rule
(the starting snapshot or version, ``dataChange``, ``ignoreChanges``/``skipChangeCommits``,
schema changes, ``maxFilesPerTrigger``/``maxBytesPerTrigger``, ``Trigger.AvailableNow``) are
:class:`deltalog.spark.streaming.DeltaStreamReader`'s, so its offsets (the same JSON) and
module docs hold here too. A batch is the DataFrame :func:`~deltalog.spark.read.native.
plan_native_read` makes of exactly its files: Spark's parquet scan, deletion vectors dropped
in the vectorised reader, any partitioning, column mapping in both modes. The rows never pass
through Python.

The change feed (``readChangeFeed``), and every stream when the companion is unavailable,
stays on the ``deltalog`` Python data source (``spark.readStream.format("deltalog")``).
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, ReadMaxFiles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.spark.streaming import DeltaStreamReader
    from deltalog.table.delta_table import DeltaTable

#: The companion's streaming source provider and the interface a planner implements.
PROVIDER = "dev.deltalog.spark.PlannedStreamProvider"
PLANNER = "dev.deltalog.spark.StreamPlanner"


def _text(offset: dict[str, Any]) -> str:
    """An offset's JSON as Spark keeps and compares it (one spelling per offset)."""
    return json.dumps(offset, sort_keys=True, separators=(",", ":"))


class StreamPlanner:
    """The Python side of a ``PlannedStream`` (py4j calls these methods from the JVM's stream
    thread; see the module docs)."""

    def __init__(
        self,
        spark: SparkSession,
        reader: DeltaStreamReader,
        table: DeltaTable,
        empty: DataFrame,
        provider: Any,
        stream_id: str,
    ) -> None:
        self._spark = spark
        self._reader = reader
        self._table = table
        self._empty = empty
        self._provider = provider
        self._id = stream_id
        # Spark calls a source from one stream thread; the lock keeps a planner honest if a
        # caller shares one anyway.
        self._lock = threading.Lock()

    class Java:
        implements: ClassVar[list[str]] = [PLANNER]

    def defaultReadLimit(self) -> str:  # (the Java interface's names)
        limit = self._reader.getDefaultReadLimit()
        if isinstance(limit, ReadMaxBytes):
            return f"bytes:{limit.max_bytes}"
        assert isinstance(limit, ReadMaxFiles)
        return f"files:{limit.max_files}"

    def latestOffset(self, start: str | None, kind: str, amount: int) -> str | None:
        with self._lock:
            begin = json.loads(start) if start is not None else self._reader.initialOffset()
            limit = (
                ReadMaxFiles(int(amount))
                if kind == "files"
                else ReadMaxBytes(int(amount))
                if kind == "bytes"
                else ReadAllAvailable()
            )
            end = self._reader.latestOffset(begin, limit)
            if start is None and end == begin:
                return None  # nothing from the stream's start yet: no batch 0 to run
            return _text(end)

    def prepareForTriggerAvailableNow(self) -> None:
        with self._lock:
            self._reader.prepareForTriggerAvailableNow()

    def batch(self, start: str | None, end: str) -> Any:
        with self._lock:
            from deltalog.spark.read.native import plan_native_read

            begin = json.loads(start) if start is not None else self._reader.initialOffset()
            tasks = self._reader.batch_tasks(begin, json.loads(end))
            frame = plan_native_read(self._spark, self._table, None, tasks) if tasks else None
            return (frame if frame is not None else self._empty)._jdf

    def commit(self, end: str) -> None:
        with self._lock:
            self._reader.commit(json.loads(end))

    def stop(self) -> None:
        with self._lock:
            self._reader.stop()
            self._provider.unregister(self._id)


def planned_stream(spark: SparkSession, options: dict[str, str]) -> DataFrame:
    """The streaming DataFrame of the stream ``options`` describe (the data source's options,
    keys in lower case) on the companion's ``PlannedStream``. Raises
    :class:`~deltalog.spark.jvm.CompanionUnavailable` or
    :class:`~deltalog.spark.read.common.NativeReadUnsupported` naming why it cannot."""
    from pyspark.java_gateway import ensure_callback_server_started

    from deltalog.spark.jvm import companion
    from deltalog.spark.options import _open
    from deltalog.spark.read.common import NativeReadUnsupported
    from deltalog.spark.read.native import plan_native_read
    from deltalog.spark.streaming import DeltaStreamReader

    if options.get("readchangefeed", "false").lower() == "true":
        raise NativeReadUnsupported("the change feed (its rows are not a plan of data files)")
    provider = companion(spark, PROVIDER)
    table = _open(options)
    empty = plan_native_read(spark, table, None, [])  # the batches' schema, and a check
    reader = DeltaStreamReader(options, empty.schema)
    reader._table = table
    reader._schema_string = table.metadata().schema_string
    ensure_callback_server_started(spark.sparkContext._gateway)  # type: ignore[no-untyped-call]
    stream_id = str(uuid.uuid4())
    planner = StreamPlanner(spark, reader, table, empty, provider, stream_id)
    provider.register(stream_id, planner, empty.schema.json())
    return spark.readStream.format(PROVIDER).option("deltalog.stream", stream_id).load()


__all__ = ["PLANNER", "PROVIDER", "StreamPlanner", "planned_stream"]
