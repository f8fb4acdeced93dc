"""The ``deltalog`` data source for Spark (PySpark's Python Data Source API, Spark 4).

Reading: the driver opens the snapshot and plans the scan once (partition pruning and file
skipping with the filters Spark pushes, PySpark 4.1+), then packs the files into input
partitions balanced by bytes (Spark's own rule for file sources: files sorted by size, a
partition closed when the next file would take it past the split size; a file is never split).
Each executor reads its files with deltalog's native reader (deletion vectors, column mapping,
partition values, type widening applied) and yields Arrow record batches.

Writing: every task writes its rows as data files of the table's version read by the driver
(``write_files``: statistics, partitioning, column mapping, constraints) and returns their
``add`` actions; the driver commits all of them as one new version (conflict-checked like any
commit). An aborted job deletes its tasks' files and commits nothing. A table that does not
exist yet is created by that one commit: the tasks write against the version 0 it will have.

Options (case-insensitive, as Spark passes them):

- read: ``path`` (``load(uri)``), ``versionAsOf``, ``timestampAsOf``, ``readChangeFeed`` with
  ``startingVersion``/``endingVersion`` or ``startingTimestamp``/``endingTimestamp``,
  ``columns`` (comma-separated: read only these; Spark does not tell Python data sources
  which columns a query uses), ``maxPartitionBytes`` (default 128 MiB), ``openCostInBytes``
  (4 MiB), ``parallelism`` (the number of partitions to spread a small table over;
  ``read_table`` sets Spark's default parallelism);
- write: ``path`` (``save(uri)``), ``partitionBy`` (comma-separated; Spark does not pass
  ``DataFrameWriter.partitionBy`` to Python data sources), ``configuration`` (JSON object of
  table properties for a new table), ``targetFileSize``, ``txnAppId`` + ``txnVersion``
  (idempotent writes: "Transaction Identifiers"), ``userMetadata``;
- both: ``storageOptions`` (a JSON object, as ``storage_options``).

Spark refuses save modes ``error`` and ``ignore`` for Python data sources before the source
is called; :func:`deltalog.spark.write_table` provides them.

The source and its reader are here; the writers are :mod:`deltalog.spark.write.source_writer`'s, the
options and the table they name :mod:`deltalog.spark.options`'s, and what tasks open and write
:mod:`deltalog.spark.tasks`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)

from deltalog.spark.options import (
    DEFAULT_CATALOG_OPTION,
    _flag,
    _int,
    _open,
    _storage_options,
    looks_like_a_name as looks_like_a_name,
)
from deltalog.spark.read import filters as spark_filters
from deltalog.spark.tasks import (
    Held as Held,
    held_commits as held_commits,
    task_snapshot as task_snapshot,
    write_to_files as write_to_files,
)
from deltalog.spark.types import conform, exchange_schema, spark_schema
from deltalog.spark.write.source_writer import (
    DeltaStreamWriter,
    DeltaWriter,
    WrittenFiles as WrittenFiles,
)

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from deltalog.table.delta_table import DeltaTable
    from deltalog.table.scan import ScanTask

NAME = "deltalog"
MAX_PARTITION_BYTES = 128 * 1024 * 1024
OPEN_COST_BYTES = 4 * 1024 * 1024
DEFAULT_PARALLELISM = 8


class DeltaDataSource(DataSource):
    """``spark.read.format("deltalog")`` / ``df.write.format("deltalog")``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    #: The default catalog's configuration (JSON) of a source registered with one.
    default_catalog: str | None = None

    def _options(self) -> dict[str, str]:
        options = {str(k).lower(): str(v) for k, v in self.options.items()}
        if self.default_catalog is not None:
            options.setdefault(DEFAULT_CATALOG_OPTION, self.default_catalog)
        return options

    def _table(self) -> DeltaTable:
        options = self._options()
        version = _int(options, "versionAsOf")
        timestamp = options.get("timestampasof")
        if version is not None and timestamp is not None:
            raise ValueError("pass versionAsOf or timestampAsOf, not both")
        return _open(options, version, timestamp)

    def _columns(self) -> list[str] | None:
        """The ``columns`` option: the table columns to read (comma-separated). PySpark's
        Python data sources are not told which columns a query uses, so this is how a reader
        reads fewer."""
        text = self._options().get("columns")
        if text is None:
            return None
        columns = [c.strip() for c in text.split(",") if c.strip()]
        if not columns:
            raise ValueError("option 'columns' names no column")
        return columns

    def _plan(self, table: DeltaTable, predicate: Any = None) -> Any:
        options = self._options()
        if not _flag(options, "readChangeFeed"):
            return table.scan(columns=self._columns(), filter=predicate)
        start = _int(options, "startingVersion")
        start_ts = options.get("startingtimestamp")
        if start is None and start_ts is None:
            raise ValueError("readChangeFeed needs startingVersion or startingTimestamp")
        return table.scan_cdf(
            starting_version=start or 0,
            ending_version=_int(options, "endingVersion"),
            starting_timestamp=start_ts,
            ending_timestamp=options.get("endingtimestamp"),
            columns=self._columns(),
            filter=predicate,
        )

    def schema(self) -> StructType:
        table = self._table()
        if _flag(self._options(), "readChangeFeed"):
            # The change feed's columns do not depend on its range (a stream's
            # startingVersion may be "latest", which no batch plan takes).
            cdf = table.scan_cdf(starting_version=table.version(), columns=self._columns())
            return spark_schema(cdf.schema)
        if self._columns() is not None:
            return spark_schema(self._plan(table).schema)
        return spark_schema(table.schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        return DeltaReader(self._options(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DeltaWriter:
        return DeltaWriter(self._options(), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DeltaStreamWriter:
        return DeltaStreamWriter(self._options(), schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream.format("deltalog")`` (:mod:`deltalog.spark.streaming`)."""
        from deltalog.spark.streaming import DeltaStreamReader

        return DeltaStreamReader(self._options(), schema)


class DeltaPushdownDataSource(DeltaDataSource):
    """The same source, taking Spark's pushed filters to prune partitions and skip files.
    PySpark refuses a reader with ``pushFilters`` unless ``spark.sql.python.filterPushdown.
    enabled`` is true, so this variant is the one :func:`deltalog.spark.register` installs
    together with that setting; the automatically registered source is the plain one."""

    def reader(self, schema: StructType) -> DataSourceReader:
        return DeltaPushdownReader(self._options(), schema)


@dataclass
class FilesPartition(InputPartition):
    """Files of one scan read by one Spark task: the scan's read spec and the files' tasks
    (JSON, as :class:`deltalog.ScanTask` holds them)."""

    spec: str
    tasks: list[str]
    size: int = 0

    def __post_init__(self) -> None:
        super().__init__(None)

    def batches(
        self, target: pa.Schema, storage_options: dict[str, str] | None
    ) -> Iterator[pa.RecordBatch]:
        """The files' rows, read by the native reader, in Spark's layout ``target``."""
        from deltalog import _native

        raw = _native.RawScan.from_json(self.spec, self.tasks, storage_options)
        for batch in raw.to_stream():
            if batch.num_rows:
                yield conform(batch, target)

    def tagged_batches(
        self,
        target: pa.Schema,
        storage_options: dict[str, str] | None,
        lineage: tuple[str, str] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The files' rows in the layout ``target`` whose last two columns are each row's data
        file (the task's path) and its index in that file: the identity of a row of one
        snapshot, and where a deletion vector takes it away (MERGE, DELETE and UPDATE through
        Spark). With ``lineage`` (a table tracking rows: its materialized column names) a
        third last column is each row's ``_row_id``."""
        from deltalog import _native

        spec_text = every_row_spec(self.spec, lineage)
        tags = 3 if lineage is not None else 2
        width = len(target) - tags
        columns = pa.schema(list(target)[:width])
        for task in self.tasks:
            path = json.loads(task)["path"]
            raw = _native.RawScan.from_json(spec_text, [task], storage_options)
            for batch in raw.to_stream():
                n = batch.num_rows
                if not n:
                    continue
                index = batch.column(batch.num_columns - 1)
                data = conform(
                    pa.RecordBatch.from_arrays(
                        [batch.column(i) for i in range(width)],
                        schema=pa.schema([batch.schema.field(i) for i in range(width)]),
                    ),
                    columns,
                )
                arrays = [
                    *data.columns,
                    pa.array([path] * n, target.field(width).type),
                    index.cast(pa.int64()),
                ]
                if lineage is not None:
                    arrays.append(batch.column("_row_id").cast(pa.int64()))
                yield pa.RecordBatch.from_arrays(arrays, schema=target)


def every_row_spec(spec: str, lineage: tuple[str, str] | None = None) -> str:
    """A scan's read spec (JSON) that yields every live row of its files with the row's index
    in the file last: the scan's predicate, which only chose the files, filters no row. With
    ``lineage`` (the materialized row ID and row commit version columns of a table tracking
    rows) ``_row_id`` and ``_row_commit_version`` come before the index ("Row Tracking")."""
    parsed = json.loads(spec)
    parsed["metadataColumns"]["rowIndex"] = True
    if lineage is not None:
        parsed["metadataColumns"]["rowTracking"] = {
            "materializedRowIdColumn": lineage[0],
            "materializedRowCommitVersionColumn": lineage[1],
        }
    parsed["predicate"] = None
    return json.dumps(parsed)


def partitions_of(
    tasks: Sequence[ScanTask],
    max_bytes: int = MAX_PARTITION_BYTES,
    open_cost: int = OPEN_COST_BYTES,
    parallelism: int = DEFAULT_PARALLELISM,
) -> list[FilesPartition]:
    """A scan's tasks packed into partitions (:func:`pack`)."""
    if not tasks:
        return []
    spec = tasks[0].to_json()[0]
    sizes = [t.size or 0 for t in tasks]
    return [
        FilesPartition(spec, [tasks[i].to_json()[1] for i in group], sum(sizes[i] for i in group))
        for group in pack(sizes, max_bytes, open_cost, parallelism)
    ]


def pack(sizes: Sequence[int], max_bytes: int, open_cost: int, parallelism: int) -> list[list[int]]:
    """Indexes of files packed into partitions, Spark's way for file sources: the split size
    is ``min(max_bytes, max(open_cost, total / parallelism))``, files are taken largest first
    and a partition is closed when the next file would take it past the split size (each file
    counting its size plus ``open_cost``)."""
    total = sum(s + open_cost for s in sizes)
    split = min(max_bytes, max(open_cost, total // max(1, parallelism)))
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    out: list[list[int]] = []
    current: list[int] = []
    current_bytes = 0
    for i in order:
        cost = sizes[i] + open_cost
        if current and current_bytes + cost > split:
            out.append(current)
            current, current_bytes = [], 0
        current.append(i)
        current_bytes += cost
    if current:
        out.append(current)
    return out


class DeltaReader(DataSourceReader):
    """Plans on the driver, reads on the executors."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self._options = options
        self._schema = schema
        self._filters: list[Any] = []

    def partitions(self) -> list[InputPartition]:
        source = DeltaDataSource(self._options)
        table = source._table()
        columns = set(self._schema.fieldNames())
        predicate = spark_filters.to_predicate(self._filters, columns)
        scan = source._plan(table, predicate)
        parts: list[InputPartition] = list(
            partitions_of(
                scan.tasks(),
                _int(self._options, "maxPartitionBytes", MAX_PARTITION_BYTES)
                or MAX_PARTITION_BYTES,
                _int(self._options, "openCostInBytes", OPEN_COST_BYTES) or 0,
                _int(self._options, "parallelism", DEFAULT_PARALLELISM) or 1,
            )
        )
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FilesPartition):
            return  # a scan with no files: Spark still runs one empty partition
        target = exchange_schema(self._schema)
        yield from partition.batches(target, _storage_options(self._options))


class DeltaPushdownReader(DeltaReader):
    """:class:`DeltaReader` that plans with the filters Spark pushes (PySpark 4.1+)."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # Spark's method name
        # Used to prune and skip files; every filter goes back to Spark, which still applies
        # it to the rows (module docs of deltalog.spark.read.filters).
        self._filters = list(filters)
        yield from filters
