"""deltalog for Spark: the ``deltalog`` data source (PySpark's Python Data Source API, Spark
4) and helpers around it. No Delta jars: deltalog's native core reads and writes on every
executor, and the driver makes the commits.

::

    import deltalog.spark

    deltalog.spark.register(spark)
    df = spark.read.format("deltalog").option("versionAsOf", 3).load("s3://bucket/table")
    df.write.format("deltalog").mode("append").save("s3://bucket/table")

    deltalog.spark.read_table(spark, uri, columns=[...])       # Spark's own parquet scan
    deltalog.spark.read_path(df)                               # which path a read took
    deltalog.spark.read_stream(spark, uri, startingVersion=5)  # micro-batches as plans
    deltalog.spark.write_table(df, uri, mode="error", partition_by=["day"])
    deltalog.spark.to_spark(dl.DeltaTable(uri).scan(...), spark)

    # MERGE / DELETE / UPDATE computed by Spark, committed once by deltalog
    deltalog.spark.merge(uri, updates_df, "target.id = source.id") \
        .when_matched_update_all().when_not_matched_insert_all().execute()
    deltalog.spark.delete(spark, uri, "day < '2026-01-01'")
    deltalog.spark.update(spark, uri, {"status": "'closed'"}, "age > 30")

    # OPTIMIZE rewritten on the executors, committed once by deltalog
    deltalog.spark.optimize(spark, uri, z_order_by=["user_id", "ts"])

PySpark is imported only when this package is (it is not a dependency of deltalog).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.spark.read.source import NAME, DeltaDataSource, DeltaPushdownDataSource
from deltalog.spark.types import spark_schema, spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.spark.dml.operations import SparkMerger
    from deltalog.spark.read.native import ReadPath
    from deltalog.table.delta_table import DeltaTable
    from deltalog.table.scan import DeltaScan
    from deltalog.write.properties import WriterProperties
    from deltalog.write.writer import CommitProperties

__all__ = [
    "NAME",
    "DeltaDataSource",
    "DeltaPushdownDataSource",
    "delete",
    "merge",
    "optimize",
    "read_path",
    "read_stream",
    "read_table",
    "register",
    "spark_schema",
    "spark_type",
    "to_spark",
    "update",
    "write_table",
]


def register(spark: SparkSession, catalog: Mapping[str, Any] | str | None = None) -> None:
    """Registers the ``deltalog`` format with ``spark``, with filter pushdown for Python data
    sources turned on (``spark.sql.python.filterPushdown.enabled``), which deltalog uses to
    prune partitions and skip files. Without it the format still works (PySpark registers it
    from the installed ``pyspark_deltalog`` module), reading every file.

    It also makes ``spark`` the calling thread's active session: Spark looks Python data
    sources up for writes in the thread's active session, which a new thread lacks (call
    ``register`` in each thread that writes).

    With ``catalog`` (a catalog configuration, as :func:`deltalog.connect_catalog` takes it:
    a dict, or the same as a JSON object, as the ``catalog`` option takes it), a table
    identifier names a table of that catalog: ``load("sales.orders")``,
    ``save("sales.orders")``; anything with a ``/`` or a URI scheme stays a location.

    It also makes Spark's own ``df.write.format("deltalog").partitionBy(...)`` work, which
    Spark otherwise refuses before the source is called
    (:mod:`deltalog.spark.write.partitioning`)."""
    from deltalog.spark.workers import check_workers
    from deltalog.spark.write.partitioning import install

    check_workers(spark)  # the executors run deltalog: a clear error now, not in every task
    config: dict[str, Any] | None = None
    if isinstance(catalog, str):
        try:
            parsed = json.loads(catalog)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise TypeError(
                "catalog must be a catalog configuration: a dict, or a JSON object such as "
                '\'{"type": "dir", "path": "/warehouse"}\', not ' + repr(catalog)[:80]
            )
        config = parsed
    elif catalog is not None:
        if not isinstance(catalog, Mapping):
            raise TypeError(
                f"catalog must be a catalog configuration (a dict), not {type(catalog).__name__}"
            )
        config = dict(catalog)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    install()
    source: type[DeltaPushdownDataSource] = DeltaPushdownDataSource
    if config is not None:
        # A subclass carrying the catalog: Spark's Python workers get the class pickled by
        # value, so the default travels with it.
        source = type(
            "DeltaCatalogDataSource",
            (DeltaPushdownDataSource,),
            {"default_catalog": json.dumps(config), "__module__": __name__},
        )
    spark.dataSource.register(source)
    _REGISTERED.add(id(spark))
    if config is None:
        _CATALOGS.pop(id(spark), None)
    else:
        _CATALOGS[id(spark)] = json.dumps(config)
    _activate(spark)


#: Sessions (by id) :func:`register` has run for: the helpers register only where it has not,
#: keeping a default catalog given to it.
_REGISTERED: set[int] = set()

#: The default catalog (JSON) given to :func:`register`, by session id: ``read_table``'s
#: native path opens names in it as the data source does.
_CATALOGS: dict[int, str] = {}


def _ensure_registered(spark: SparkSession) -> None:
    if id(spark) in _REGISTERED:
        from deltalog.spark.workers import check_workers

        check_workers(spark)  # cached per SparkContext
        _activate(spark)
    else:
        register(spark)


def _activate(spark: SparkSession) -> None:
    """Makes ``spark`` the active session of the calling thread (JVM side)."""
    jvm = getattr(spark, "_jvm", None)
    session = getattr(spark, "_jsparkSession", None)
    if jvm is None or session is None:
        return  # Spark Connect: no JVM here, the server resolves sources
    found = _SESSION_CLASS.get(id(jvm))
    if found is None:  # (each step of the package path is a py4j round trip: resolved once)
        found = _SESSION_CLASS[id(jvm)] = jvm.org.apache.spark.sql.SparkSession
    found.setActiveSession(session)


#: Spark's ``SparkSession`` class, by the gateway's JVM view (id).
_SESSION_CLASS: dict[int, Any] = {}


def _options(**options: Any) -> dict[str, str]:
    out = {}
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            out[key] = json.dumps(dict(value))
        elif isinstance(value, (list, tuple)):
            out[key] = ",".join(str(v) for v in value)
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = str(value)
    return out


def read_table(
    spark: SparkSession,
    uri: str | DeltaTable,
    version: int | None = None,
    timestamp: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    columns: list[str] | None = None,
    path: str = "auto",
) -> DataFrame:
    """The table at ``uri`` (at ``version`` or ``timestamp``; only ``columns`` when given) as
    a DataFrame. ``uri`` is a location, a table name of the catalog given to
    :func:`register`, or a loaded :class:`deltalog.DeltaTable` (its loaded version; catalog
    tables included).

    ``path`` chooses how the rows are read (:mod:`deltalog.spark.read.native`):

    - ``"native"``: deltalog plans on the driver and Spark's own parquet source reads exactly
      the planned files (column pruning, filter pushdown, vectorised reads); raises
      :class:`~deltalog.spark.read.native.NativeReadUnsupported` naming the reason when the
      table needs what that path does not express (deletion vectors, column mapping id mode,
      type widening, files off the local file system, ...);
    - ``"source"``: the ``deltalog`` Python data source (deltalog's reader on the executors,
      rows handed to Spark as Arrow), its files spread over Spark's default parallelism;
    - ``"auto"`` (default): native where it can, else the data source.

    The DataFrame is aliased ``deltalog_native_scan`` or ``deltalog_source_scan`` (visible in
    ``df.explain(True)``); :func:`read_path` tells which path it took and why, and an INFO
    line on the ``deltalog.spark`` logger says so too."""
    from deltalog.spark.read import native as nr
    from deltalog.table.delta_table import DeltaTable

    if path not in ("auto", "native", "source"):
        raise ValueError(f"path must be 'auto', 'native' or 'source', not {path!r}")
    if version is not None and timestamp is not None:
        raise ValueError("pass version or timestamp, not both")
    if isinstance(uri, DeltaTable) and (version is not None or timestamp is not None):
        raise ValueError("a DeltaTable is read at its loaded version: load the one to read")
    _ensure_registered(spark)
    reason: str | None = "path='source'"
    if path != "source":
        try:
            table = (
                uri
                if isinstance(uri, DeltaTable)
                else _open_for_read(spark, uri, version, timestamp, storage_options)
            )
            df = nr.plan_native_read(spark, table, columns)
        except nr.NativeReadUnsupported as e:
            if path == "native":
                raise nr.NativeReadUnsupported(
                    f"deltalog cannot read {_label(uri)} on Spark's parquet source: {e.reason}"
                ) from None
            reason = e.reason
        else:
            taken = nr.ReadPath("native", scan=getattr(df, "_deltalog_scan", None))
            nr.log.info("deltalog read of %s: %s", _label(uri), taken)
            return _tagged(df, taken)
    nr.log.info("deltalog read of %s: data source (%s)", _label(uri), reason)
    if isinstance(uri, DeltaTable):
        df = to_spark(uri.scan(columns=columns), spark)
    else:
        reader = spark.read.format(NAME).options(
            **_options(
                columns=columns,
                versionAsOf=version,
                timestampAsOf=timestamp,
                storageOptions=storage_options,
                parallelism=spark.sparkContext.defaultParallelism,
            )
        )
        df = reader.load(uri)
    return _tagged(df.alias(nr.SOURCE), nr.ReadPath("source", reason))


def read_stream(
    spark: SparkSession,
    uri: str,
    storage_options: Mapping[str, str] | None = None,
    path: str = "auto",
    **options: Any,
) -> DataFrame:
    """The table at ``uri`` (a location, or a name of the catalog given to :func:`register`) as
    a streaming DataFrame: its snapshot then every append, or from ``startingVersion`` /
    ``startingTimestamp``, with ``maxFilesPerTrigger``, ``maxBytesPerTrigger``,
    ``ignoreChanges``, ``skipChangeCommits`` and ``readChangeFeed`` as the ``deltalog``
    streaming source takes them (:mod:`deltalog.spark.streaming`, whose offsets both paths
    share).

    ``path="auto"`` (default) reads each micro-batch as a plan through deltalog's JVM
    companion: Spark's parquet scan of exactly the batch's files
    (:mod:`deltalog.spark.read.planned_stream`); the change feed, and any stream the
    companion cannot serve, take the data source (``path="source"`` always does;
    ``path="native"`` raises instead). An INFO line on ``deltalog.spark`` says which."""
    from deltalog.spark.jvm import CompanionUnavailable
    from deltalog.spark.read import native as nr

    if path not in ("auto", "native", "source"):
        raise ValueError(f"path must be 'auto', 'native' or 'source', not {path!r}")
    _ensure_registered(spark)
    given = _options(storageOptions=storage_options, **options)
    reason = "path='source'"
    if path != "source":
        from deltalog.spark.read.planned_stream import planned_stream

        try:
            df = planned_stream(spark, _source_options(spark, given, uri))
        except (CompanionUnavailable, nr.NativeReadUnsupported) as e:
            if path == "native":
                raise nr.NativeReadUnsupported(
                    f"deltalog cannot stream {uri} as plans: {e.reason}"
                ) from None
            reason = e.reason
        else:
            nr.log.info("deltalog stream of %s: planned micro-batches (JVM companion)", uri)
            return _tagged(df, nr.ReadPath("native", scan="planned micro-batches"))
    nr.log.info("deltalog stream of %s: data source (%s)", uri, reason)
    df = spark.readStream.format(NAME).options(**given).load(uri)
    return _tagged(df, nr.ReadPath("source", reason))


def read_path(df: DataFrame) -> ReadPath | None:
    """Which path :func:`read_table` took for ``df`` (``ReadPath("native")``, or
    ``ReadPath("source", reason)``); for a DataFrame derived from one (filtered, projected),
    the path found in its plan (without the reason); ``None`` when neither shows."""
    from deltalog.spark.read import native as nr

    found = getattr(df, "_deltalog_read_path", None)
    if isinstance(found, nr.ReadPath):
        return found
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    plan = jdf.queryExecution().analyzed().toString()
    if nr.NATIVE in plan:
        return nr.ReadPath("native")
    if nr.SOURCE in plan:
        return nr.ReadPath("source")
    return None


def _tagged(df: DataFrame, taken: ReadPath) -> DataFrame:
    df._deltalog_read_path = taken  # type: ignore[attr-defined]
    return df


def _label(uri: Any) -> str:
    return str(getattr(uri, "table_uri", uri))


def _open_for_read(
    spark: SparkSession,
    uri: str,
    version: int | None,
    timestamp: str | None,
    storage_options: Mapping[str, str] | None,
) -> DeltaTable:
    """The table ``read_table`` names, opened as the data source opens it (a location, or a
    name in the session's default catalog)."""
    from deltalog.spark.options import _open

    options = _source_options(spark, _options(storageOptions=storage_options), uri)
    return _open(options, version, timestamp)


def _source_options(spark: SparkSession, options: Mapping[str, str], uri: str) -> dict[str, str]:
    """``options`` for the table ``uri`` as the data source sees them: keys in lower case, and
    the session's default catalog (given to :func:`register`), so names resolve as there."""
    from deltalog.spark.options import DEFAULT_CATALOG_OPTION

    out = {k.lower(): v for k, v in {**options, "path": uri}.items()}
    catalog = _CATALOGS.get(id(spark))
    if catalog is not None:
        out[DEFAULT_CATALOG_OPTION] = catalog
    return out


def write_table(
    df: DataFrame,
    uri: str,
    mode: str = "error",
    partition_by: list[str] | None = None,
    configuration: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    target_file_size: int | None = None,
    path: str = "auto",
    allow_unconverted_files: bool = False,
) -> None:
    """Writes ``df`` to the Delta table at ``uri`` with one commit (``mode``: ``error``,
    ``append``, ``overwrite`` or ``ignore``, as ``deltalog.write_table``). ``error`` and
    ``ignore`` are decided on the driver before the job runs, since Spark does not pass those
    save modes to Python data sources.

    ``path`` chooses how the rows become files (:mod:`deltalog.spark.write.native`):

    - ``"native"``: Spark's own parquet writer writes the files (partitioned by
      ``partition_by``; every row rule of the table checked by Spark expressions), deltalog
      builds their ``add`` actions from the footers and commits once; raises
      :class:`~deltalog.spark.write.native.NativeWriteUnsupported` naming the reason when the
      table needs what that path does not express (identity columns, nested columns of a
      column-mapped table, floating-point or binary partition columns, a column whose type
      differs from the table's, a table off the local file system). ``target_file_size`` does
      not apply: Spark writes a file per task and partition value;
    - ``"source"``: the ``deltalog`` Python data source (deltalog's writer on the executors);
    - ``"auto"`` (default): native where it can, else the data source.

    An INFO line on the ``deltalog.spark`` logger says which path a write took.

    A local directory of parquet files without a ``_delta_log`` is refused in every ``mode``
    (:class:`~deltalog.exceptions.NotADeltaTableError`: convert it with
    :func:`deltalog.convert_to_deltalake`) unless ``allow_unconverted_files`` (the data
    source's ``allowUnconvertedFiles`` option) creates a table beside its files."""
    from deltalog.table.delta_table import DeltaTable

    if mode not in ("error", "append", "overwrite", "ignore"):
        raise ValueError(f"mode must be error, append, overwrite or ignore, not {mode!r}")
    if path not in ("auto", "native", "source"):
        raise ValueError(f"path must be 'auto', 'native' or 'source', not {path!r}")
    from deltalog.spark.read.source import looks_like_a_name
    from deltalog.write.writer import check_not_a_file

    if not looks_like_a_name(uri):
        check_not_a_file(uri)  # a typed error here, before the job (the source checks too)
    if mode in ("error", "ignore") and DeltaTable.is_deltatable(uri, storage_options):
        if mode == "ignore":
            return
        from deltalog.exceptions import InvalidArgumentError

        raise InvalidArgumentError(f"a Delta table already exists at {uri} (mode='error')")
    _ensure_registered(df.sparkSession)
    options = _options(
        partitionBy=partition_by,
        configuration=configuration,
        storageOptions=storage_options,
        txnAppId=app_id,
        txnVersion=app_version,
        targetFileSize=target_file_size,
        allowUnconvertedFiles=allow_unconverted_files or None,
    )
    reason = "path='source'"
    if path != "source":
        from deltalog.spark.write import native as nw

        try:
            source = _source_options(df.sparkSession, options, uri)
            nw.native_write(df, mode == "overwrite", source)
        except nw.NativeWriteUnsupported as e:
            if path == "native":
                raise nw.NativeWriteUnsupported(
                    f"deltalog cannot write {uri} with Spark's parquet writer: {e.reason}"
                ) from None
            reason = e.reason
        else:
            nw.log.info("deltalog write of %s: Spark's parquet writer", uri)
            return
    from deltalog.spark.read.native import log

    log.info("deltalog write of %s: data source (%s)", uri, reason)
    writer = df.write.format(NAME).mode("overwrite" if mode == "overwrite" else "append")
    writer.options(**options).save(uri)


def to_spark(scan: DeltaScan, spark: SparkSession) -> DataFrame:
    """A planned :class:`deltalog.DeltaScan` as a DataFrame: its files (already pruned and
    skipped) read on the executors, packed into partitions as the data source packs them."""
    from deltalog.spark.read.source import partitions_of
    from deltalog.spark.types import exchange_schema

    schema = spark_schema(scan.schema)
    partitions = partitions_of(scan.tasks(), parallelism=spark.sparkContext.defaultParallelism)
    if not partitions:
        return spark.createDataFrame([], schema)
    target = exchange_schema(schema)

    def read(batches: Any) -> Any:
        for b in batches:
            for index in b.column(0).to_pylist():
                yield from partitions[index].batches(target, None)

    indexes = spark.createDataFrame([(i,) for i in range(len(partitions))], "i int")
    return indexes.repartition(len(partitions)).mapInArrow(read, schema)


def _table(target: DeltaTable | str, storage_options: Mapping[str, str] | None) -> DeltaTable:
    from deltalog.table.delta_table import DeltaTable

    if isinstance(target, DeltaTable):
        return target
    return DeltaTable(str(target), storage_options=dict(storage_options or {}) or None)


def merge(
    target: DeltaTable | str,
    source: DataFrame,
    predicate: str,
    source_alias: str = "source",
    target_alias: str = "target",
    commit_properties: CommitProperties | None = None,
    target_file_size: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> SparkMerger:
    """MERGE of the DataFrame ``source`` into the Delta table ``target`` (a
    :class:`deltalog.DeltaTable` at the version to merge into, or its URI), computed by Spark:
    the join and the clauses run on the executors, the touched files are rewritten there with
    deltalog, and the driver makes one commit. Add clauses as with
    :meth:`deltalog.DeltaTable.merge` (``when_matched_update``, ``..._all``, ``when_not_
    matched_insert``, ``when_not_matched_by_source_delete``, ...), in Spark SQL over the two
    aliases, then ``execute()``. See :mod:`deltalog.spark.dml.operations`."""
    from deltalog.spark.dml.operations import SparkMerger

    _ensure_registered(source.sparkSession)
    return SparkMerger(
        _table(target, storage_options),
        source,
        predicate,
        source_alias,
        target_alias,
        commit_properties,
        target_file_size,
    )


def delete(
    spark: SparkSession,
    target: DeltaTable | str,
    predicate: str | None = None,
    commit_properties: CommitProperties | None = None,
    target_file_size: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Deletes the rows of ``target`` matching ``predicate`` (Spark SQL; all rows when None),
    computed by Spark with one deltalog commit. Returns the metrics of
    :meth:`deltalog.DeltaTable.delete`."""
    from deltalog.spark.dml import operations as dml
    from deltalog.spark.workers import check_workers

    check_workers(spark)
    table = _table(target, storage_options)
    result = dml.delete(spark, table, predicate, commit_properties, target_file_size)
    table.update_incremental()
    return result


def optimize(
    spark: SparkSession,
    target: DeltaTable | str,
    z_order_by: str | list[str] | None = None,
    partition_filters: Any = None,
    target_size: int | None = None,
    memory_limit: int | None = None,
    commit_properties: CommitProperties | None = None,
    storage_options: Mapping[str, str] | None = None,
    writer_properties: WriterProperties | None = None,
) -> dict[str, Any]:
    """OPTIMIZE of ``target`` with the rewrite on Spark's executors and one deltalog commit:
    compaction (clustering on a clustered table), or Z-order by ``z_order_by``. Arguments and
    metrics as :meth:`deltalog.DeltaTable.optimize`'s ``compact`` / ``z_order``."""
    from deltalog.spark.maintenance import optimize as run
    from deltalog.spark.workers import check_workers

    check_workers(spark)
    table = _table(target, storage_options)
    return run(
        spark,
        table,
        z_order_by,
        partition_filters,
        target_size,
        memory_limit,
        commit_properties,
        writer_properties,
    )


def update(
    spark: SparkSession,
    target: DeltaTable | str,
    updates: Mapping[str, str],
    predicate: str | None = None,
    commit_properties: CommitProperties | None = None,
    target_file_size: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Sets ``updates`` (column -> Spark SQL) on the rows of ``target`` matching ``predicate``,
    computed by Spark with one deltalog commit. Returns the metrics of
    :meth:`deltalog.DeltaTable.update`."""
    from deltalog.spark.dml import operations as dml
    from deltalog.spark.workers import check_workers

    check_workers(spark)
    table = _table(target, storage_options)
    result = dml.update(spark, table, updates, predicate, commit_properties, target_file_size)
    table.update_incremental()
    return result
