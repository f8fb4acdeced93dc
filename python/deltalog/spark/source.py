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
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    InputPartition,
    WriterCommitMessage,
)

from deltalog.spark import filters as spark_filters
from deltalog.spark.types import conform, exchange_schema, spark_schema

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from deltalog.scan import ScanTask
    from deltalog.table import DeltaTable

NAME = "deltalog"
MAX_PARTITION_BYTES = 128 * 1024 * 1024
OPEN_COST_BYTES = 4 * 1024 * 1024
DEFAULT_PARALLELISM = 8
#: Where a source registered with a default catalog finds it among its options.
DEFAULT_CATALOG_OPTION = "deltalog.defaultcatalog"


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key.lower())
    if value is None:
        return False
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"option {key!r} must be true or false, not {value!r}")


def _int(options: Mapping[str, str], key: str, default: int | None = None) -> int | None:
    value = options.get(key.lower())
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"option {key!r} must be an integer, not {value!r}") from None


def _storage_options(options: Mapping[str, str]) -> dict[str, str] | None:
    text = options.get("storageoptions")
    if not text:
        return None
    parsed = json.loads(text)
    if not isinstance(parsed, dict):
        raise ValueError("option 'storageOptions' must be a JSON object")
    return {str(k): str(v) for k, v in parsed.items()}


def looks_like_a_name(text: str) -> bool:
    """Whether ``load(text)``/``save(text)`` names a catalog table (``ns.table``) rather than a
    location: no path separator and no URI scheme."""
    return "/" not in text and "\\" not in text and ":" not in text


def _catalog_table(options: Mapping[str, str]) -> tuple[Any, str] | None:
    """The catalog (``catalog``: its configuration as JSON, as ``dl.connect_catalog`` takes
    it; else the default catalog given to :func:`deltalog.spark.register` when the path is a
    table identifier) and the table's name in it (``load(name)`` / ``save(name)``, or
    ``table``)."""
    config = options.get("catalog")
    if not config:
        default = options.get(DEFAULT_CATALOG_OPTION)
        name = options.get("table") or options.get("path") or ""
        if not default or not looks_like_a_name(name):
            return None
        config = default
    from deltalog.catalog import connect_catalog

    parsed = json.loads(config)
    if not isinstance(parsed, dict):
        raise ValueError("option 'catalog' must be a JSON object (a catalog configuration)")
    name = options.get("table") or options.get("path")
    if not name:
        raise ValueError("name the catalog's table: .load(name) / .save(name) or 'table'")
    return connect_catalog(parsed, _storage_options(options)), name


def _open(
    options: Mapping[str, str], version: int | None = None, timestamp: str | None = None
) -> DeltaTable:
    """The table the options name: by location, or by name in a catalog (through its catalog
    when it is catalog-managed)."""
    from deltalog.table import DeltaTable

    named = _catalog_table(options)
    if named is None:
        return DeltaTable(
            _path(options),
            version=version,
            timestamp=timestamp,
            storage_options=_storage_options(options),
        )
    catalog, name = named
    table = catalog.load_table(name, version=version)
    if timestamp is not None:
        table.load_as_version(timestamp)
    return table


def _exists(options: Mapping[str, str]) -> bool:
    from deltalog.table import DeltaTable

    named = _catalog_table(options)
    if named is None:
        return DeltaTable.is_deltatable(_path(options), _storage_options(options))
    catalog, name = named
    return bool(catalog.table_exists(name))


def _path(options: Mapping[str, str]) -> str:
    path = options.get("path")
    if not path:
        raise ValueError(
            "the deltalog data source needs the table's location: .load(uri) / .save(uri)"
        )
    return path


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
        if _flag(self._options(), "readChangeFeed") or self._columns() is not None:
            return spark_schema(self._plan(table).schema)
        return spark_schema(table.schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        return DeltaReader(self._options(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DeltaWriter:
        return DeltaWriter(self._options(), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DeltaStreamWriter:
        return DeltaStreamWriter(self._options(), schema, overwrite)


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
        self, target: pa.Schema, storage_options: dict[str, str] | None
    ) -> Iterator[pa.RecordBatch]:
        """The files' rows in the layout ``target`` whose last two columns are each row's data
        file (the task's path) and its index in that file: the identity of a row of one
        snapshot, and where a deletion vector takes it away (MERGE, DELETE and UPDATE through
        Spark)."""
        from deltalog import _native

        spec_text = every_row_spec(self.spec)
        width = len(target) - 2
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
                yield pa.RecordBatch.from_arrays(arrays, schema=target)


def _storage_options_of(table: DeltaTable) -> dict[str, str] | None:
    return dict(table._storage_options) if table._storage_options else None


def every_row_spec(spec: str) -> str:
    """A scan's read spec (JSON) that yields every live row of its files with the row's index
    in the file last: the scan's predicate, which only chose the files, filters no row."""
    parsed = json.loads(spec)
    parsed["metadataColumns"]["rowIndex"] = True
    parsed["predicate"] = None
    return json.dumps(parsed)


#: Ratified commits a task reads a version with: ``(version, staged path, inline content)``.
Held = list[tuple[int, str | None, bytes | None]]


def held_commits(table: DeltaTable) -> Held | None:
    """A catalog-managed table's ratified commits up to the loaded version (possibly none),
    from which tasks open that version without reaching the catalog (:class:`_HeldCommits`);
    None for a table without a catalog."""
    client = table._catalog_client
    if client is None:
        return None
    held = client.get_ratified_commits(None, table.version())
    return [(c.version, c.path, c.content) for c in held.commits]


def task_snapshot(uri: str, version: int, storage: dict[str, str] | None, held: Held | None) -> Any:
    """The table's ``version`` as a task opens it: through :class:`_HeldCommits` when commits
    are held (a catalog-managed table, or commits that exist only in the job), else from
    storage alone."""
    from deltalog import _native

    client = _HeldCommits(held, version) if held is not None else None
    return _native.RawSnapshot.open(uri, version, storage, client)


def write_to_files(
    snapshot: Callable[[], Any],
    batches: Iterator[pa.RecordBatch],
    target_file_size: int | None,
    replace_where: str | None = None,
) -> list[str]:
    """Writes ``batches`` as data files of the snapshot ``snapshot()`` opens (only when there
    is a row to write) with ``write_files``; their ``add`` actions (JSON), none for no rows."""
    from deltalog import _native

    first = next(batches, None)
    if first is None:
        return []

    def chained() -> Iterator[pa.RecordBatch]:
        yield first
        yield from batches

    reader = pa.RecordBatchReader.from_batches(first.schema, chained())
    return list(_native.write_files(snapshot(), reader, target_file_size, replace_where))


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
        # it to the rows (module docs of deltalog.spark.filters).
        self._filters = list(filters)
        yield from filters


@dataclass
class WrittenFiles(WriterCommitMessage):
    """What one task wrote: the ``add`` actions of its files (JSON)."""

    actions: list[str] = field(default_factory=list)


class DeltaWriter(DataSourceArrowWriter):
    """Tasks write data files; the driver commits them as one version."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        self._options = options
        self._overwrite = overwrite
        self._uri = _path(options)
        #: For a catalog-managed table, the catalog's commits up to the version read, which
        #: the tasks open that version from.
        self._held: Held | None = None
        #: The ``metaData`` action (JSON) of a schema change the commit carries: the tasks
        #: write against the version read with it applied.
        self._evolved: str | None = None
        #: A new catalog-managed table, whose version 0 the catalog ratifies.
        self._creates_in_catalog = False
        #: The commit's operation and extra operationParameters (streaming writes set them).
        self._operation = "WRITE"
        self._parameters: dict[str, Any] = {}
        self._partition_by = [
            c.strip() for c in options.get("partitionby", "").split(",") if c.strip()
        ]
        merge_schema = _flag(options, "mergeSchema")
        overwrite_schema = _flag(options, "overwriteSchema")
        self._replace_where: str | None = options.get("replacewhere") or None
        if (overwrite_schema or self._replace_where) and not overwrite:
            raise ValueError(
                "overwriteSchema and replaceWhere need mode('overwrite') (they replace data)"
            )
        if overwrite_schema and self._replace_where:
            raise ValueError("replaceWhere keeps the table's schema: not with overwriteSchema")
        if _exists(options):
            table = _open(options)
            self._uri = table.table_uri
            self._read_version: int | None = table.version()
            self._held = held_commits(table)
            existing = table.metadata().partition_columns
            if (
                self._partition_by
                and not overwrite_schema
                and [c.lower() for c in self._partition_by] != [c.lower() for c in existing]
            ):
                raise ValueError(
                    f"partitionBy {self._partition_by} differs from the table's partition "
                    f"columns {existing} (overwriteSchema replaces them)"
                )
            if merge_schema or overwrite_schema:
                self._evolved = _evolved_metadata(
                    table,
                    schema,
                    merge_schema,
                    overwrite_schema,
                    # overwriteSchema: partitionBy="" unpartitions; absent keeps the table's
                    self._partition_by if "partitionby" in options else None,
                )
            self._first_commit: str | None = None
        else:
            self._read_version = None
            self._replace_where = None  # a new table: every row is written
            named = _catalog_table(options)
            managed = False
            if named is None:
                from deltalog.writer import check_not_a_file

                check_not_a_file(self._uri)
            else:
                # A new table of a catalog: at the location the catalog gives it; a
                # catalog-managed one is registered by the catalog ratifying version 0.
                catalog, name = named
                self._uri, client = catalog.new_table_target(name)
                managed = client is not None
            self._first_commit = _first_commit(
                schema, self._partition_by, options, catalog_managed=managed
            )
            self._creates_in_catalog = managed

    def _snapshot(self) -> Any:
        storage = _storage_options(self._options)
        if self._first_commit is not None:
            # The version 0 this write creates, read from its content (no log yet).
            return task_snapshot(self._uri, 0, storage, [(0, None, self._first_commit.encode())])
        version = self._read_version
        held = self._held
        if self._evolved is not None and version is not None:
            # The version read with the schema change applied: a commit of its metaData
            # that exists only here (the driver commits it with the files).
            version += 1
            now = int(time.time() * 1000)
            info = json.dumps({"commitInfo": {"timestamp": now, "inCommitTimestamp": now}})
            held = [*(held or []), (version, None, f"{info}\n{self._evolved}\n".encode())]
        if version is None:
            raise RuntimeError("the table's version read is unknown")
        return task_snapshot(self._uri, version, storage, held)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenFiles:
        from deltalog.writer import _target_file_size

        size = _target_file_size(_int(self._options, "targetFileSize"))
        return WrittenFiles(
            write_to_files(self._snapshot, iter(iterator), size, self._replace_where)
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from deltalog import _native
        from deltalog.writer import CommitProperties, _target_file_size

        actions = [a for m in messages if isinstance(m, WrittenFiles) for a in m.actions]
        storage = _storage_options(self._options)
        app = _app_transaction(self._options)
        props = CommitProperties(
            app_id=app[0] if app else None,
            app_version=app[1] if app else None,
            custom_metadata=(
                {"userMetadata": self._options["usermetadata"]}
                if "usermetadata" in self._options
                else {}
            ),
        )
        if self._first_commit is not None:
            lines = [line for line in self._first_commit.splitlines() if line.strip()]
            client = None
            if self._creates_in_catalog:
                named = _catalog_table(self._options)
                if named is None:
                    raise RuntimeError("the catalog of the new table is gone from the options")
                catalog, name = named
                location, client = catalog.new_table_target(name)
                if location.rstrip("/") != self._uri.rstrip("/"):
                    raise RuntimeError(
                        f"the catalog moved the new table {name!r}: {location}, not {self._uri}"
                    )
            _native.commit_actions(
                self._uri,
                None,
                "CREATE TABLE AS SELECT" if self._operation == "WRITE" else self._operation,
                [line for line in lines if '"commitInfo"' not in line[:16]] + actions,
                json.dumps(
                    {"mode": "ErrorIfExists", "partitionBy": self._partition_by, **self._parameters}
                ),
                False,
                None,
                props.app_transaction(),
                props.commit_info_json(),
                storage,
                None,
                '"delta.enableInCommitTimestamps":"true"' in self._first_commit.replace(" ", ""),
                client,
            )
            return
        if app is not None:
            # "Transaction Identifiers": a retried job whose version the table already
            # holds for the app writes nothing.
            latest = _open(self._options)
            held = latest._raw.transactions().get(app[0])
            if held is not None and held[0] >= app[1]:
                self.abort(list(messages))
                return
        # Through the table's catalog when it has one.
        table = _open(self._options, self._read_version)
        parameters: dict[str, Any] = {"mode": "Overwrite" if self._overwrite else "Append"}
        if self._evolved is not None:
            parameters[
                "overwriteSchema" if _flag(self._options, "overwriteSchema") else "mergeSchema"
            ] = True
        if self._replace_where is not None:
            parameters["predicate"] = self._replace_where
        parameters.update(self._parameters)
        tx = table.transaction(self._operation, **parameters)
        if self._evolved is not None:
            # "Change Metadata": the new schema in the same commit as the files written to it.
            tx.add_actions([self._evolved])
        if self._replace_where is not None:
            # replaceWhere: the matching rows go (deletion vectors or rewritten files); the
            # tasks checked that every written row matches.
            removals, read = _native.replace_where_actions(
                table._raw,
                self._replace_where,
                _target_file_size(_int(self._options, "targetFileSize")),
            )
            tx.add_actions(removals)
            tx.read_files(read)
        elif self._overwrite:
            tx.remove_files(table.files())
        tx.add_actions(actions)
        tx.commit(props)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Deletes the files the finished tasks wrote (a failed task's own files are orphans a
        later VACUUM removes); nothing is committed."""
        from deltalog import _native

        paths = [
            json.loads(a)["add"]["path"]
            for m in messages
            if isinstance(m, WrittenFiles)
            for a in m.actions
        ]
        if not paths:
            return
        try:
            _native.delete_files(self._snapshot(), paths)
        except Exception:  # best effort: orphans are never read
            pass


class DeltaStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("deltalog")``: each micro-batch is one commit, made idempotent by
    an application transaction ("Transaction Identifiers") whose version is the batch id, so
    a batch Spark replays after a restart is not written twice. The application id is
    ``txnAppId`` when given, else derived from the query's ``checkpointLocation`` (stable
    across restarts of the query). Output mode ``complete`` overwrites the table per batch."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        unsupported = sorted(
            k
            for k in ("replacewhere", "mergeschema", "overwriteschema", "txnversion")
            if options.get(k)
        )
        if unsupported:
            raise ValueError(f"a streaming write does not take {', '.join(unsupported)}")
        self._app = options.get("txnappid") or _stream_app_id(options)
        self._files = DeltaWriter(options, schema, overwrite)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenFiles:
        return self._files.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        batch = self._files
        options = {**batch._options, "txnappid": self._app, "txnversion": str(batchId)}
        if batch._first_commit is not None and _exists(options):
            # An earlier batch created the table (with the version 0 these files were
            # written against): this one appends to it.
            batch = _copy_writer(batch, options, first_commit=None)
        else:
            batch = _copy_writer(batch, options, first_commit=batch._first_commit)
        batch._operation = "STREAMING UPDATE"
        batch._parameters = {
            "outputMode": "Complete" if batch._overwrite else "Append",
            "epochId": batchId,
        }
        if batch._first_commit is None:
            # The files commute with every commit since the writer started (a blind append);
            # an overwrite replaces what the table holds now.
            batch._read_version = _open(options).version()
            batch._held = None
        batch.commit(messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._files.abort(messages)


def _copy_writer(writer: DeltaWriter, options: dict[str, str], first_commit: str | None) -> Any:
    import copy

    out = copy.copy(writer)
    out._options = options
    out._first_commit = first_commit
    return out


def _stream_app_id(options: Mapping[str, str]) -> str:
    location = options.get("checkpointlocation")
    if not location:
        raise ValueError(
            "a streaming write needs checkpointLocation (or txnAppId) to make its commits "
            "idempotent"
        )
    import hashlib

    digest = hashlib.sha256(location.rstrip("/").encode()).hexdigest()[:16]
    return f"deltalog-stream-{digest}"


def _app_transaction(options: Mapping[str, str]) -> tuple[str, int] | None:
    app, version = options.get("txnappid"), _int(options, "txnVersion")
    if (app is None) != (version is None):
        raise ValueError("txnAppId and txnVersion go together")
    return (app, version) if app is not None and version is not None else None


class _HeldCommits:
    """A stand-in catalog client answering with fixed ratified commits, so that tasks open a
    version without reaching a catalog: the commits the driver saw of a catalog-managed table,
    or the version 0 a write will create for a table whose log does not exist yet."""

    max_inline_commit_bytes = 0

    def __init__(self, held: list[tuple[int, str | None, bytes | None]], latest: int) -> None:
        self._held = held
        self._latest = latest

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> Any:
        from deltalog.catalog import RatifiedCommit, RatifiedCommits

        commits = [RatifiedCommit(v, path=p, content=c) for v, p, c in self._held]
        return RatifiedCommits(commits, self._latest)

    def commit(self, version: int, **_: Any) -> None:
        raise RuntimeError("tasks take no commits: the driver commits")

    def published(self, version: int) -> None:
        pass


def _evolved_metadata(
    table: DeltaTable,
    schema: StructType,
    merge_schema: bool,
    overwrite_schema: bool,
    partition_by: list[str] | None,
) -> str | None:
    """The ``metaData`` action (JSON) that changes ``table``'s schema for data of Spark's
    ``schema`` (``mergeSchema``: new columns added; ``overwriteSchema``: replaced, with
    ``partitionBy``), or None when it stays."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from deltalog import _native

    metadata = _native.evolved_metadata(
        table._raw,
        to_arrow_schema(schema, timezone="UTC"),
        merge_schema,
        overwrite_schema,
        partition_by,
    )
    return metadata


def _first_commit(
    schema: StructType,
    partition_by: list[str],
    options: Mapping[str, str],
    catalog_managed: bool = False,
) -> str:
    """The version 0 (protocol and metadata) deltalog would write for a new table of Spark's
    ``schema`` (a catalog-managed one with ``catalog_managed``): made in a scratch directory
    by deltalog's own write, whose rules it follows."""
    import tempfile

    from pyspark.sql.pandas.types import to_arrow_schema

    from deltalog.writer import write_table

    configuration = json.loads(options.get("configuration", "{}") or "{}")
    arrow = to_arrow_schema(schema, timezone="UTC")
    recorder = _FirstCommitRecorder() if catalog_managed else None
    with tempfile.TemporaryDirectory() as scratch:
        write_table(
            scratch,
            arrow.empty_table(),
            partition_by=partition_by or None,
            configuration=configuration or None,
            catalog_client=recorder,
        )
        if recorder is not None and recorder.content is not None:
            return recorder.content.decode()
        with open(f"{scratch}/_delta_log/{0:020}.json", encoding="utf-8") as f:
            return f.read()


class _FirstCommitRecorder:
    """A catalog client that keeps the version 0 a new catalog-managed table would have (its
    content inline), so that Spark's tasks write against it before the real catalog ratifies
    it with their files."""

    max_inline_commit_bytes = 1 << 30

    def __init__(self) -> None:
        self.content: bytes | None = None

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> Any:
        from deltalog.catalog import RatifiedCommits

        return RatifiedCommits((), -1)

    def commit(self, version: int, content: bytes | None = None, **_: Any) -> None:
        self.content = content

    def published(self, version: int) -> None:
        pass
