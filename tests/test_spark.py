"""The ``deltalog`` Spark data source on a real local Spark (``local[2]``, PySpark from PyPI,
Java 17): reads of the golden tables, pruning, writes read back by deltalog and by the
``deltalake`` package, failed and concurrent jobs, types both ways."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl
from conftest import corpus_table
from test_read_golden import CONTENT_ROOTS, rows

pyspark = pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")


def read(spark: Any, uri: str | Path, **options: Any) -> Any:
    reader = spark.read.format("deltalog")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(uri))


def arrow(df: Any) -> pa.Table:
    return df.toArrow()


def ids(table: pa.Table, column: str = "id") -> list[Any]:
    return sorted(table.column(column).to_pylist())


# -- reading ---------------------------------------------------------------------------------


def test_golden_tables_read_through_spark_as_deltalog_reads_them(spark: Any) -> None:
    """Every golden table with expected content: the same rows through Spark (deletion
    vectors, column mapping, partitions, checkpoints of every kind)."""
    failures = []
    for root in CONTENT_ROOTS:
        reference = dl.DeltaTable(corpus_table(root)).to_pyarrow_table()
        got = arrow(read(spark, corpus_table(root)))
        columns = reference.column_names
        try:
            assert got.column_names == columns
            assert rows(got.cast(reference.schema), columns) == rows(reference, columns)
        except Exception as e:  # collected: one report for all tables
            failures.append(f"{root}: {e!r}"[:300])
    assert not failures, "\n".join(failures)


def partitioned(root: Path, n: int = 40) -> Path:
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "part": [f"p{i % 4}" for i in range(n)],
            "value": [float(i) for i in range(n)],
        }
    )
    for chunk in range(4):  # several files per partition
        dl.write_table(
            str(root), data.slice(chunk * n // 4, n // 4), mode="append", partition_by=["part"]
        )
    return root


def test_filters_prune_files_and_give_the_same_rows(spark: Any, tmp_path: Path) -> None:
    table = partitioned(tmp_path / "t")
    one_file_each = {"maxPartitionBytes": "1", "openCostInBytes": "0"}
    everything = read(spark, table, **one_file_each)
    files = len(dl.DeltaTable(str(table)).files())
    assert everything.rdd.getNumPartitions() == files == 16
    by_partition = everything.filter("part = 'p1'")
    assert by_partition.rdd.getNumPartitions() == 4
    assert ids(arrow(by_partition)) == list(range(1, 40, 4))
    # File skipping by statistics (id ranges of the files) and a conjunction.
    by_stats = everything.filter("id >= 30 AND part IN ('p2', 'p3')")
    assert by_stats.rdd.getNumPartitions() == 2
    assert ids(arrow(by_stats)) == [30, 31, 34, 35, 38, 39]
    # Spark keeps the filters: a file that only may match gives only the matching rows.
    assert ids(arrow(everything.filter("id = 7"))) == [7]
    assert ids(arrow(everything.filter("NOT (id < 38)"))) == [38, 39]
    assert arrow(everything.filter("part IS NULL")).num_rows == 0


def test_time_travel_and_the_change_feed(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    config = {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"}
    dl.write_table(uri, pa.table({"id": pa.array(range(10), pa.int64())}), configuration=config)
    t = dl.DeltaTable(uri)
    t.delete("id < 3")  # a deletion vector, made by deltalog
    dl.write_table(uri, pa.table({"id": pa.array([100], pa.int64())}), mode="append")
    assert ids(arrow(read(spark, uri))) == [*range(3, 10), 100]
    assert ids(arrow(read(spark, uri, versionAsOf=0))) == list(range(10))
    ts = dl.DeltaTable(uri).history()[-2]["timestamp"]  # version 1
    stamp = dt.datetime.fromtimestamp(ts / 1000, tz=dt.timezone.utc).isoformat()
    assert ids(arrow(read(spark, uri, timestampAsOf=stamp))) == list(range(3, 10))
    changes = arrow(read(spark, uri, readChangeFeed="true", startingVersion=1))
    expected = dl.DeltaTable(uri).load_cdf(starting_version=1).read_all()
    columns = expected.column_names
    assert changes.column_names == columns
    assert rows(changes.cast(expected.schema), columns) == rows(expected, columns)


# -- writing ---------------------------------------------------------------------------------


def sdf(spark: Any, data: list[tuple[Any, ...]], schema: str) -> Any:
    return spark.createDataFrame(data, schema).repartition(2)


def both_read(uri: str) -> tuple[pa.Table, pa.Table]:
    ours = dl.DeltaTable(uri).to_pyarrow_table()
    theirs = deltalake.DeltaTable(uri).to_pyarrow_table()
    return ours, theirs


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    columns = sorted(a.column_names)
    return sorted(b.column_names) == columns and rows(
        b.select(columns).cast(a.select(columns).schema), columns
    ) == rows(a, columns)


def test_sparks_own_partition_by(spark: Any, tmp_path: Path) -> None:
    """``df.write.format("deltalog").partitionBy("day").save(uri)``: Spark never hands
    DataFrameWriter.partitionBy to a Python data source (it fails in the JVM comparing it with
    the source's table); after ``register`` it reaches the source as its ``partitionBy`` option
    and partitions the new table. Other formats are untouched."""
    uri = str(tmp_path / "t")
    df = sdf(spark, [(i, f"d{i % 2}") for i in range(6)], "id long, day string")
    df.write.format("deltalog").mode("append").partitionBy("day").save(uri)
    assert dl.DeltaTable(uri).metadata().partition_columns == ["day"]
    assert deltalake.DeltaTable(uri).metadata().partition_columns == ["day"]
    assert {f.split("/")[0] for f in dl.DeltaTable(uri).files()} == {"day=d0", "day=d1"}
    df.write.mode("append").save(uri, format="deltalog", partitionBy=["day"])
    ours, theirs = both_read(uri)
    assert ids(ours) == sorted([*range(6), *range(6)]) and same_rows(ours, theirs)
    df.write.format("parquet").partitionBy("day").save(str(tmp_path / "p"))
    assert sorted(p.name for p in (tmp_path / "p").glob("day=*")) == ["day=d0", "day=d1"]


def test_saving_to_a_regular_file_says_so(spark: Any, tmp_path: Path) -> None:
    """A location that is a regular file: refused before any task runs, naming it a file
    (a typed InvalidArgumentError from ``deltalog.spark.write_table``); the file is kept."""
    import deltalog.spark as dls

    path = tmp_path / "notes.txt"
    path.write_text("keep me")
    df = sdf(spark, [(1, "a")], "id long, day string")
    with pytest.raises(Exception, match="the location is a file, not a table directory"):
        df.write.format("deltalog").mode("append").save(str(path))
    with pytest.raises(dl.InvalidArgumentError, match="the location is a file"):
        dls.write_table(df, str(path), mode="append")
    assert path.read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_register_takes_the_catalog_as_docs_spark_shows(spark: Any, tmp_path: Path) -> None:
    """docs/spark.md: ``register(spark, catalog=config)`` with the configuration dict (or the
    JSON text the ``catalog`` option takes); a name then reads that catalog's table."""
    import deltalog.spark as dls

    config = {"type": "dir", "path": str(tmp_path / "wh")}
    catalog = dl.connect_catalog(config)
    catalog.write_table("orders", pa.table({"id": pa.array([1, 2], pa.int64())}))
    by_option = spark.read.format("deltalog").option("catalog", json.dumps(config))
    assert ids(arrow(by_option.load("orders"))) == [1, 2]
    try:
        for given in (config, json.dumps(config)):
            dls.register(spark, catalog=given)
            assert ids(arrow(spark.read.format("deltalog").load("orders"))) == [1, 2]
        with pytest.raises(TypeError, match="catalog configuration"):
            dls.register(spark, catalog="sales")
    finally:
        dls.register(spark)  # the session's default source again (no catalog)


def test_partitioned_append_and_overwrite(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    data = [(i, f"d{i % 3}", float(i)) for i in range(30)]
    df = sdf(spark, data, "id long, day string, amount double")
    df.write.format("deltalog").mode("append").option("partitionBy", "day").save(uri)
    t = dl.DeltaTable(uri)
    assert t.version() == 0 and t.metadata().partition_columns == ["day"]
    assert {f.split("/")[0] for f in t.files()} == {"day=d0", "day=d1", "day=d2"}
    ours, theirs = both_read(uri)
    assert ids(ours) == list(range(30)) and same_rows(ours, theirs)
    # Append: one commit for both tasks' files.
    sdf(
        spark, [(100, "d9", 1.0), (101, "d0", 2.0)], "id long, day string, amount double"
    ).write.format("deltalog").mode("append").save(uri)
    t = dl.DeltaTable(uri)
    assert t.version() == 1
    assert t.history()[0]["operation"] == "WRITE"
    ours, theirs = both_read(uri)
    assert ids(ours) == [*range(30), 100, 101] and same_rows(ours, theirs)
    # Overwrite.
    sdf(spark, [(7, "d1", 7.0)], "id long, day string, amount double").write.format(
        "deltalog"
    ).mode("overwrite").save(uri)
    ours, theirs = both_read(uri)
    assert ours.to_pylist() == [{"id": 7, "day": "d1", "amount": 7.0}]
    assert same_rows(ours, theirs)
    assert ids(arrow(read(spark, uri, versionAsOf=1))) == [*range(30), 100, 101]


def test_write_helper_modes_and_idempotent_writes(spark: Any, tmp_path: Path) -> None:
    import deltalog.spark as dls

    uri = str(tmp_path / "t")
    df = sdf(spark, [(1, "a"), (2, "b")], "id long, s string")
    dls.write_table(df, uri, partition_by=["s"], configuration={"delta.appendOnly": "true"})
    assert dl.DeltaTable(uri).metadata().configuration["delta.appendOnly"] == "true"
    with pytest.raises(dl.InvalidArgumentError, match="already exists"):
        dls.write_table(df, uri)
    dls.write_table(df, uri, mode="ignore")
    assert dl.DeltaTable(uri).version() == 0
    # txnAppId/txnVersion: a retried job writes once.
    for _ in range(2):
        dls.write_table(df, uri, mode="append", app_id="job", app_version=5)
    assert dl.DeltaTable(uri).version() == 1
    assert ids(dl.DeltaTable(uri).to_pyarrow_table()) == [1, 1, 2, 2]
    # Options that replace data need the overwrite mode, refused before anything is written.
    with pytest.raises(Exception, match="need mode"):
        df.write.format("deltalog").mode("append").option("replaceWhere", "s = 'a'").save(uri)
    assert dl.DeltaTable(uri).version() == 1


def test_replace_where_from_spark(spark: Any, tmp_path: Path) -> None:
    """replaceWhere on the partition column (whole files go) and on a data column (files
    rewritten), read back by deltalog and deltalake; rows outside the predicate are refused
    and nothing is committed; with the change feed on, CDF shows the replaced and new rows."""
    uri = str(tmp_path / "t")
    schema = "id long, day string, amount double"
    data = [(i, f"d{i % 3}", float(i)) for i in range(30)]
    dl.write_table(
        uri,
        pa.Table.from_pylist(
            [{"id": i, "day": d, "amount": a} for i, d, a in data],
            pa.schema([("id", pa.int64()), ("day", pa.string()), ("amount", pa.float64())]),
        ),
        partition_by=["day"],
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    new = sdf(spark, [(100, "d1", 1.0), (101, "d1", 2.0)], schema)
    new.write.format("deltalog").mode("overwrite").option("replaceWhere", "day = 'd1'").save(uri)
    t = dl.DeltaTable(uri)
    assert t.version() == 1
    assert t.history(1)[0]["operationParameters"]["predicate"] == "day = 'd1'"
    expected = sorted([i for i in range(30) if i % 3 != 1] + [100, 101])
    ours, theirs = both_read(uri)
    assert ids(ours) == expected and same_rows(ours, theirs)
    # A data-column predicate: the matching rows of every partition are replaced.
    sdf(spark, [(200, "d0", 500.0)], schema).write.format("deltalog").mode("overwrite").option(
        "replaceWhere", "amount >= 20"
    ).save(uri)
    expected = sorted([i for i in range(20) if i % 3 != 1] + [100, 101, 200])
    ours, theirs = both_read(uri)
    assert ids(ours) == expected and same_rows(ours, theirs)
    # The change feed of the second overwrite: the replaced rows deleted, the new one inserted.
    cdf = dl.DeltaTable(uri).load_cdf(starting_version=2, ending_version=2).read_all()
    changes = sorted(
        zip(cdf.column("_change_type").to_pylist(), cdf.column("id").to_pylist(), strict=True)
    )
    assert changes == sorted(
        [("delete", i) for i in range(20, 30) if i % 3 != 1] + [("insert", 200)]
    )
    # A row outside the predicate fails the job: nothing is committed.
    with pytest.raises(Exception, match="do not match the overwrite's predicate"):
        sdf(spark, [(300, "d2", 1.0)], schema).write.format("deltalog").mode("overwrite").option(
            "replaceWhere", "day = 'd1'"
        ).save(uri)
    assert dl.DeltaTable(uri).version() == 2


def test_merge_schema_and_overwrite_schema_from_spark(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    sdf(spark, [(1, "a"), (2, "b")], "id long, s string").write.format("deltalog").mode(
        "append"
    ).option("partitionBy", "s").save(uri)
    wider = sdf(spark, [(3, "a", 3.5)], "id long, s string, x double")
    # Without mergeSchema a new column is deltalog's error, and nothing changes.
    with pytest.raises(Exception, match="columns the table does not have"):
        wider.write.format("deltalog").mode("append").save(uri)
    assert dl.DeltaTable(uri).version() == 0
    wider.write.format("deltalog").mode("append").option("mergeSchema", "true").save(uri)
    t = dl.DeltaTable(uri)
    assert t.version() == 1 and t.schema().names == ["id", "s", "x"]
    assert t.history(1)[0]["operationParameters"]["mergeSchema"] is True
    ours, theirs = both_read(uri)
    assert same_rows(ours, theirs)
    assert sorted(ours.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "s": "a", "x": None},
        {"id": 2, "s": "b", "x": None},
        {"id": 3, "s": "a", "x": 3.5},
    ]
    # overwriteSchema: new columns, types and partitioning (partitionBy "" = none).
    sdf(spark, [(10, "z")], "k int, name string").write.format("deltalog").mode("overwrite").option(
        "overwriteSchema", "true"
    ).option("partitionBy", "").save(uri)
    t = dl.DeltaTable(uri)
    assert t.schema().names == ["k", "name"] and t.metadata().partition_columns == []
    ours, theirs = both_read(uri)
    assert ours.to_pylist() == [{"k": 10, "name": "z"}] and same_rows(ours, theirs)
    assert ids(arrow(read(spark, uri, versionAsOf=1))) == [1, 2, 3]
    # A column-mapped table: the added column gets the next id and a physical name.
    cm = str(tmp_path / "cm")
    dl.write_table(
        cm,
        pa.table({"id": pa.array([1], pa.int64())}),
        configuration={"delta.columnMapping.mode": "name"},
    )
    sdf(spark, [(2, "n")], "id long, note string").write.format("deltalog").mode("append").option(
        "mergeSchema", "true"
    ).save(cm)
    t = dl.DeltaTable(cm)
    assert t.metadata().configuration["delta.columnMapping.maxColumnId"] == "2"
    ours = dl.DeltaTable(cm).to_pyarrow_table()
    assert sorted(ours.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "note": None},
        {"id": 2, "note": "n"},
    ]
    # (deltalake 1.6 does not apply column mapping when reading.) The new file holds the
    # physical names the schema gives, read with pyarrow.
    import pyarrow.parquet as pq

    fields = json.loads(t.metadata().schema_string)["fields"]
    physical = [f["metadata"]["delta.columnMapping.physicalName"] for f in fields]
    newest = [p for p in t.files() if p not in dl.DeltaTable(cm, version=0).files()]
    assert len(newest) == 1
    assert pq.read_table(Path(cm) / newest[0]).column_names == physical


def test_streaming_writes_commit_once_per_micro_batch(spark: Any, tmp_path: Path) -> None:
    import time

    from pyspark.sql.types import LongType, StructField, StructType

    from deltalog.spark.read.source import DeltaStreamWriter

    uri = str(tmp_path / "s")
    checkpoint = str(tmp_path / "checkpoint")
    stream = spark.readStream.format("rate").option("rowsPerSecond", 50).load()
    query = (
        stream.selectExpr("value AS id")
        .writeStream.format("deltalog")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start(uri)
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            progress = query.recentProgress
            if sum(1 for p in progress if p["numInputRows"]) >= 3:
                break
            time.sleep(0.5)
    finally:
        query.stop()
    t = dl.DeltaTable(uri)
    history = t.history()
    assert t.version() >= 2
    assert {h["operation"] for h in history} == {"STREAMING UPDATE"}
    (app, last), *_ = t.transactions().items()
    assert app.startswith("deltalog-stream-") and last == max(
        h["operationParameters"]["epochId"] for h in history
    )
    ours, theirs = both_read(uri)
    got = ids(ours)
    assert got == list(range(len(got))) and same_rows(ours, theirs)  # none lost or doubled
    # A micro-batch Spark replays (same id) is not committed twice.
    schema = StructType([StructField("id", LongType())])
    options = {"path": uri, "checkpointlocation": checkpoint}
    writer = DeltaStreamWriter(options, schema, False)
    batch = pa.record_batch({"id": pa.array([10_000], pa.int64())})
    message = writer.write(iter([batch]))
    writer.commit([message], last + 1)
    version = dl.DeltaTable(uri).version()
    again = DeltaStreamWriter(options, schema, False)
    again.commit([again.write(iter([batch]))], last + 1)
    t = dl.DeltaTable(uri)
    assert t.version() == version and ids(t.to_pyarrow_table()).count(10_000) == 1
    with pytest.raises(ValueError, match="checkpointLocation"):
        DeltaStreamWriter({"path": uri}, schema, False)


def test_a_failed_job_commits_nothing(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.functions import col, udf

    uri = str(tmp_path / "t")
    dl.write_table(uri, pa.table({"id": pa.array([0], pa.int64())}))
    files_before = {p.name for p in Path(uri).glob("*.parquet")}

    @udf("long")
    def explode_on_13(x: int) -> int:
        if x == 13:
            # Late, so that the other task has finished and reported its files: a task still
            # running when the job fails is cancelled, and a file its Python worker still
            # writes is an orphan like a failed task's own (never in the log; VACUUM removes
            # it). A fresh-clone run on a loaded machine saw one.
            import time

            time.sleep(5)
            raise ValueError("task failure on purpose")
        return x

    df = spark.range(0, 20, numPartitions=2).select(explode_on_13(col("id")).alias("id"))
    with pytest.raises(Exception, match="task failure on purpose"):
        df.write.format("deltalog").mode("append").save(uri)
    t = dl.DeltaTable(uri)
    assert t.version() == 0 and ids(t.to_pyarrow_table()) == [0]
    # The finished task's files were deleted by abort (the failed one wrote none).
    assert {p.name for p in Path(uri).glob("*.parquet")} == files_before


def test_concurrent_jobs_both_land(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    dl.write_table(uri, pa.table({"id": pa.array([-1], pa.int64())}))
    errors: list[BaseException] = []

    def job(k: int) -> None:
        import deltalog.spark as dls

        try:
            dls.register(spark)  # the thread's active session (Spark's lookup for writes)
            df = spark.range(k * 100, k * 100 + 50, numPartitions=2)
            df.write.format("deltalog").mode("append").save(uri)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=job, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    t = dl.DeltaTable(uri)
    assert t.version() == 2
    assert ids(t.to_pyarrow_table()) == [-1, *range(0, 50), *range(100, 150)]


def test_types_round_trip(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    utc = dt.timezone.utc
    table = pa.table(
        {
            "d": pa.array([decimal.Decimal("12.34"), None], pa.decimal128(10, 2)),
            "ts": pa.array(
                [dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc), None], pa.timestamp("us", "UTC")
            ),
            "ntz": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5), None], pa.timestamp("us")),
            "day": pa.array([dt.date(2024, 1, 2), None], pa.date32()),
            "b": pa.array([b"\x00\x01", None], pa.binary()),
            "s": pa.array(
                [{"x": 1, "y": ["a", None]}, None],
                pa.struct({"x": pa.int32(), "y": pa.list_(pa.string())}),
            ),
            "m": pa.array([[("k", 1.5)], None], pa.map_(pa.string(), pa.float64())),
            "small": pa.array([1, None], pa.int16()),
            "flag": pa.array([True, None], pa.bool_()),
        }
    )
    dl.write_table(uri, table)
    df = read(spark, uri)
    names = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert names == {
        "d": "decimal(10,2)",
        "ts": "timestamp",
        "ntz": "timestamp_ntz",
        "day": "date",
        "b": "binary",
        "s": "struct<x:int,y:array<string>>",
        "m": "map<string,double>",
        "small": "smallint",
        "flag": "boolean",
    }
    got = arrow(df)
    assert rows(got.cast(table.schema), table.column_names) == rows(table, table.column_names)
    # Written back by Spark into a new table: the same Delta types, read by deltalake too.
    out = str(tmp_path / "copy")
    df.write.format("deltalog").mode("append").save(out)
    ours, theirs = both_read(out)
    assert ours.schema == dl.DeltaTable(uri).to_pyarrow_table().schema
    assert rows(ours, table.column_names) == rows(table, table.column_names)
    assert same_rows(ours, theirs)


def test_types_spark_cannot_take_are_clear_errors() -> None:
    from deltalog.spark.types import spark_type

    with pytest.raises(TypeError, match="'u'"):
        spark_type(pa.uint32(), "u")
    with pytest.raises(TypeError, match=r"'t\.x'"):
        spark_type(pa.struct({"x": pa.time64("us")}), "t")


def test_pack_balances_files_by_bytes() -> None:
    from deltalog.spark.read.source import pack

    sizes = [100, 90, 10, 10, 10, 50, 50]
    groups = pack(sizes, max_bytes=1000, open_cost=0, parallelism=3)
    assert sorted(i for g in groups for i in g) == list(range(7))
    # split = 320 / 3 = 106: the largest files alone, the small ones together.
    loads = sorted(sum(sizes[i] for i in g) for g in groups)
    assert max(loads) <= 110 and len(groups) == 4
    assert pack([], 10, 1, 2) == []
    assert pack([5, 5], max_bytes=1, open_cost=0, parallelism=1) == [[0], [1]]


def test_to_spark_reads_a_planned_scan(spark: Any, tmp_path: Path) -> None:
    import deltalog.spark as dls

    table = partitioned(tmp_path / "t")
    scan = dl.DeltaTable(str(table)).scan(filter=dl.col("part") == "p3", columns=["id", "part"])
    df = dls.to_spark(scan, spark)
    assert df.columns == ["id", "part"]
    assert ids(arrow(df)) == list(range(3, 40, 4))


def test_automatic_registration(spark: Any, tmp_path: Path) -> None:
    """PySpark registers installed `pyspark_*` modules' DefaultSource: a new session finds the
    format without deltalog.spark.register."""
    from deltalog.spark import DeltaDataSource
    from pyspark_deltalog import DefaultSource

    assert DefaultSource is DeltaDataSource and DefaultSource.name() == "deltalog"
    uri = str(tmp_path / "t")
    dl.write_table(uri, pa.table({"id": pa.array([1, 2], pa.int64())}))
    # A session where nothing was registered and filter pushdown is off.
    other = spark.newSession()
    other.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    assert ids(arrow(other.read.format("deltalog").load(uri).filter("id > 1"))) == [2]


def test_tables_by_catalog_name(spark: Any, tmp_path: Path) -> None:
    """``.option("catalog", <config>)`` with the table's name: a catalog-managed table of the
    SQLite catalog is read and written through its catalog (the tasks open the version the
    driver read from the commits it got); a directory catalog's table likewise by name."""
    config = {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    cat = dl.connect_catalog(config)
    cat.create_namespace("db")
    cat.write_table("db.t", pa.table({"id": pa.array([1, 2], pa.int64())}))
    options = {"catalog": json.dumps(config)}
    assert ids(arrow(read(spark, "db.t", **options))) == [1, 2]
    df = sdf(spark, [(3,), (4,)], "id long")
    df.write.format("deltalog").mode("append").options(**options).save("db.t")
    t = cat.load_table("db.t")
    assert t.version() == 1 and ids(t.to_pyarrow_table()) == [1, 2, 3, 4]
    assert "catalogManaged" in t.protocol().reader_features
    assert ids(arrow(read(spark, "db.t", versionAsOf=0, **options))) == [1, 2]
    # A new table, created by the job's one commit: the catalog ratifies its version 0 (with
    # the tasks' files) and registers it; a failed job registers nothing.
    pairs = sdf(spark, [(3, "a"), (4, "b")], "id long, s string")
    pairs.write.format("deltalog").mode("append").options(**options).option(
        "partitionBy", "s"
    ).save("db.new")
    new = cat.load_table("db.new")
    assert new.version() == 0 and ids(new.to_pyarrow_table()) == [3, 4]
    assert "catalogManaged" in new.protocol().reader_features
    assert new.metadata().partition_columns == ["s"]
    assert cat.describe_table("db.new").latest_version == 0
    from pyspark.sql.functions import col, udf

    @udf("long")
    def fail_on_1(x: int) -> int:
        if x == 1:
            raise ValueError("task failure on purpose")
        return x

    failing = spark.range(0, 4, numPartitions=2).select(fail_on_1(col("id")).alias("id"))
    with pytest.raises(Exception, match="task failure on purpose"):
        failing.write.format("deltalog").mode("append").options(**options).save("db.failed")
    assert not cat.table_exists("db.failed")
    with pytest.raises(Exception, match="columns the table does not have"):
        sdf(spark, [(1, "x", 2.0)], "id long, s string, z double").write.format("deltalog").mode(
            "append"
        ).options(**options).save("db.new")
    directory = {"type": "dir", "path": str(tmp_path / "dir")}
    dl.connect_catalog(directory).write_table("plain", pa.table({"id": pa.array([5], pa.int64())}))
    assert ids(arrow(read(spark, "plain", catalog=json.dumps(directory)))) == [5]
    df.write.format("deltalog").mode("append").option("catalog", json.dumps(directory)).save(
        "fresh"
    )
    assert ids(dl.connect_catalog(directory).load_table("fresh").to_pyarrow_table()) == [3, 4]
    # A default catalog: identifiers name its tables, locations stay locations.
    import deltalog.spark as dls

    dls.register(spark, catalog=config)
    try:
        assert ids(arrow(spark.read.format("deltalog").load("db.t"))) == [1, 2, 3, 4]
        sdf(spark, [(5,)], "id long").write.format("deltalog").mode("append").save("db.t")
        assert ids(cat.load_table("db.t").to_pyarrow_table()) == [1, 2, 3, 4, 5]
        assert ids(dls.read_table(spark, "db.t", version=1).toArrow()) == [1, 2, 3, 4]
        located = str(tmp_path / "located")
        dl.write_table(located, pa.table({"id": pa.array([9], pa.int64())}))
        assert ids(arrow(read(spark, located))) == [9]
    finally:
        dls.register(spark)
    with pytest.raises(Exception, match=r"db\.t|not a Delta table|TableNotFound|No such"):
        arrow(read(spark, "db.t"))  # no default catalog any more: a (missing) location


def test_tables_of_a_rest_catalog_through_spark(spark: Any, tmp_path: Path) -> None:
    """The same through the REST catalog (a real ``deltalog catalog serve`` process): the
    driver and the tasks reach the catalog over HTTP; a new table is declared, then created by
    the job's one commit."""
    import catalog_server

    with catalog_server.running(tmp_path / "server") as server:
        config = {"type": "rest", "uri": server.url}
        cat = dl.connect_catalog(config)
        cat.create_namespace("db")
        cat.write_table("db.t", pa.table({"id": pa.array([1, 2], pa.int64())}))
        options = {"catalog": json.dumps(config)}
        assert ids(arrow(read(spark, "db.t", **options))) == [1, 2]
        sdf(spark, [(3,), (4,)], "id long").write.format("deltalog").mode("append").options(
            **options
        ).save("db.t")
        t = cat.load_table("db.t")
        assert t.version() == 1 and ids(t.to_pyarrow_table()) == [1, 2, 3, 4]
        sdf(spark, [(5,)], "id long").write.format("deltalog").mode("append").options(
            **options
        ).save("db.new")
        assert cat.list_tables("db") == ["new", "t"]
        assert ids(cat.load_table("db.new").to_pyarrow_table()) == [5]
        assert cat.describe_table("db.new").catalog_managed
        assert '"path": "/v1/table/db%24new/version/create", "status": 200' in server.log_text()


def test_the_columns_option_reads_only_those_columns(spark: Any, tmp_path: Path) -> None:
    """PySpark does not tell Python data sources which columns a query needs; the ``columns``
    option (``read_table(columns=...)``) reads only those, pruning and filters included."""
    import deltalog.spark as dls

    uri = str(partitioned(tmp_path / "t"))
    df = read(spark, uri, columns="value, id")
    assert df.columns == ["value", "id"]
    got = arrow(df.filter("id >= 30"))
    reference = dl.DeltaTable(uri).to_pyarrow_table(columns=["value", "id"])
    assert sorted(got.column("id").to_pylist()) == [
        i for i in sorted(reference.column("id").to_pylist()) if i >= 30
    ]
    assert dls.read_table(spark, uri, columns=["id"]).columns == ["id"]
    cdf_uri = str(tmp_path / "cdf")
    dl.write_table(
        cdf_uri,
        pa.table({"id": pa.array([1], pa.int64()), "s": ["a"]}),
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    changes = read(spark, cdf_uri, readChangeFeed="true", startingVersion=0, columns="id")
    assert changes.columns[0] == "id" and "s" not in changes.columns
    with pytest.raises(Exception, match="nope"):
        arrow(read(spark, uri, columns="nope"))


def test_bad_input_is_deltalogs_error_and_commits_nothing(spark: Any, tmp_path: Path) -> None:
    """A schema mismatch on write and a table deltalog refuses to read surface as Spark errors
    carrying deltalog's message; nothing is committed."""
    uri = str(tmp_path / "t")
    dl.write_table(uri, pa.table({"id": pa.array([1], pa.int64())}))
    extra = sdf(spark, [(2, "x")], "id long, surprise string")
    with pytest.raises(Exception, match="surprise"):
        extra.write.format("deltalog").mode("append").save(uri)
    assert dl.DeltaTable(uri).version() == 0
    assert ids(dl.DeltaTable(uri).to_pyarrow_table()) == [1]
    # A CHECK constraint violated by a task's rows: deltalog's error, nothing committed.
    dl.DeltaTable(uri).alter.add_constraint({"positive": "id > 0"})
    version = dl.DeltaTable(uri).version()
    with pytest.raises(Exception, match=r"ConstraintViolationError.*positive"):
        sdf(spark, [(5,), (-5,)], "id long").write.format("deltalog").mode("append").save(uri)
    assert dl.DeltaTable(uri).version() == version
    # A commit conflict: a task deletes rows (a concurrent writer) while the job overwrites
    # from the version the driver read; the driver's commit is refused.
    target = uri

    def delete_meanwhile(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import deltalog

        deltalog.DeltaTable(target).delete("id = 1")
        yield from batches

    racing = spark.range(3, 5, numPartitions=1).mapInArrow(delete_meanwhile, "id long")
    with pytest.raises(Exception, match="CommitConflictError"):
        racing.write.format("deltalog").mode("overwrite").save(uri)
    t = dl.DeltaTable(uri)
    assert t.version() == version + 1 and t.history(1)[0]["operation"] == "DELETE"
    assert ids(t.to_pyarrow_table()) == []
    with pytest.raises(Exception, match="versions are not contiguous: commit 1 is missing"):
        read(spark, corpus_table("versions-not-contiguous/delta")).collect()
    with pytest.raises(Exception, match="no Delta table at"):
        read(spark, tmp_path / "nothing").collect()
