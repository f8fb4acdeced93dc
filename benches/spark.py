"""Spark benchmark: deltalog's Spark integration against Spark's own parquet source and against
Delta Spark (the Delta protocol's reference implementation) on the same tables, on ``local[2]``.

1. Reads, three ways on the same files of a table of ``--rows`` rows (``id`` long, ``value``
   double, ``category`` string) written by deltalog in ~16 MiB files: ``deltalog.spark.
   read_table`` on its native path (deltalog plans, Spark's parquet source reads; issue #33),
   the ``deltalog`` Python data source (``spark.read.format("deltalog")``, the old path), and
   ``spark.read.parquet`` on the table's data files:

   - full read: an aggregate over every column (targets, issue #33: native <= 1.1x);
   - 2-column projection: an aggregate over ``id`` and ``value`` (native <= 1.15x);
   - selective filter: the full aggregate over ``id < rows / 100`` (native <= 1.1x; the data
     source skips files by their statistics, Spark's parquet reader skips row groups).

   With ``--partitioned`` the table is partitioned by ``category`` (16 values): the native
   path reads the files whose Hive-style directories spell their logged values with one scan
   and Spark's partition discovery, as ``spark.read.parquet`` does. With
   ``--deletion-vectors`` 1% of the rows (``id % 100 = 7``, in every file) are deleted by
   deletion vectors first (targets: full read <= 1.3x, projection <= 1.5x); the parquet side
   then reads the deleted rows too (it cannot know them), so only the two deltalog sides (and
   Delta Spark) are checked against each other.
2. Write: ``spark.range(rows)`` with the same columns written by ``deltalog.spark.
   write_table`` on its native path (Spark's parquet writer, one deltalog commit), through the
   data source (the old path) and by ``df.write.parquet``. Target (native): <= 1.15x.
3. DML, each run on a fresh copy of the table (``shutil.copytree``, not timed), once with
   ``delta.enableDeletionVectors`` false (copy on write) and once true (deletion vectors), set
   on the copy before the runs: an upsert MERGE of ``--merge-rows`` source rows (half updating
   existing ids spread over the whole table, half new; read by the Spark sides from one
   parquet file), DELETE of 1% (``id % 100 = 3``) and UPDATE of 1% (``SET value = -value
   WHERE id % 100 = 5``), computed by Spark (``deltalog.spark.merge`` / ``delete`` /
   ``update``: column ``spark``) and by deltalog alone (``DeltaTable.merge`` / ``delete`` /
   ``update``: column ``single``).
4. Streaming: a table made by ``deltalog.write_table`` then 100 appends of 1,000 rows, read
   from version 1 (the 100 appends) to completion by ``deltalog.spark.read_stream`` (each
   micro-batch a plan read by Spark's parquet scan through the JVM companion: column
   ``planned``) and by ``spark.readStream.format("deltalog")`` (the Python data source:
   column ``source``) with ``Trigger.AvailableNow`` into the ``noop`` sink, with the default
   admission (one batch) and with ``maxFilesPerTrigger`` 10 (ten batches).
   ``--streaming-only`` runs this part alone.

Delta Spark, the anchor (``--delta-spark``, the default; ``--no-delta-spark`` leaves it out):
every operation above is also done by Delta Spark 4.4 on the same table (a fresh copy of it
for DML): ``spark.read.format("delta").load`` with the same filter and aggregates; ``spark.
range(rows, numPartitions=2)`` with the same columns written by ``write.format("delta")``
(partitioned alike); ``MERGE INTO ... USING <the same parquet file> ON t.id = s.id WHEN
MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``, SQL ``DELETE`` and ``UPDATE``;
``spark.readStream.format("delta")`` the same way. Its answers (aggregates, rows written,
rows changed, rows streamed) must equal deltalog's. It runs in a JVM of its own (``tests/
reference_engine``: pyspark 4.2 in a separate Python environment, as Delta Spark 4.4 does not
run on Spark 4.3), ``local[2]`` with 4 GiB of driver memory like deltalog's session, and is
timed inside that process (the round trip to it is not counted) over what deltalog's side is
timed over (a read from the ``load``, the snapshot, to the collected answer); the two sides
never run at the same time. Column ``delta`` holds its seconds, ``.../delta`` deltalog's
over them, and a last table lists every operation with deltalog's seconds, Delta Spark's and
the ratio (deltalog / Delta Spark: below 1 deltalog is faster). Delta Spark is installed outside the
clone (pyspark from PyPI, Delta's jars from Maven Central by ``mvn``, under ``~/.cache/
deltalog-reference``) by ``python tests/reference_engine/env.py``, which the first run of
this benchmark does by itself (minutes; needs ``mvn`` and the network then).

Each measurement is the median of ``--runs`` runs after a warm-up run, the sides interleaved.
Usage::

    python benches/spark.py [--rows 10000000] [--runs 5] [--merge-rows 100000] [--reads-only]
                            [--partitioned] [--deletion-vectors] [--no-delta-spark]
                            [--streaming-only]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import deltalog as dl

# The tests' handle on Delta Spark (tests/reference_engine), the anchor of every comparison.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from reference_engine.client import table_ref

#: A side of a measurement: one run, answering its seconds and its answer (checked).
Side = Callable[[], tuple[float, Any]]

COLUMNS = ["id", "id * 0.5 AS value", "concat('c', CAST(id & 15 AS STRING)) AS category"]
DELETE_WHERE = "id % 100 = 3"
UPDATE_WHERE = "id % 100 = 5"
APPENDS, APPEND_ROWS = 100, 1000
WIDE = 48  # the DML and streaming tables' first column

# Code run in the Delta Spark worker (``spark`` and the keyword values in scope); each answers
# ``(seconds, answer)``, the seconds taken there around the operation alone.
DS_READ = """
import time
began = time.perf_counter()
df = spark.read.format('delta').load(path)
rows = (df.filter(where) if where else df).selectExpr(*exprs).collect()
result = (time.perf_counter() - began, [tuple(r) for r in rows])
"""
DS_WRITE = """
import time
writer = spark.range(n, numPartitions=2).selectExpr(*columns).write.format('delta')
writer = writer.mode('append').partitionBy(*parts) if parts else writer.mode('append')
began = time.perf_counter()
writer.save(path)
took = time.perf_counter() - began
result = (took, spark.read.format('delta').load(path).count())
"""
DS_DML = """
import time
if source is not None:
    spark.read.parquet(source).repartition(2).createOrReplaceTempView('bench_source')
began = time.perf_counter()
row = spark.sql(statement).collect()[0].asDict()
took = time.perf_counter() - began
if source is not None:
    answer = (row['num_updated_rows'], row['num_inserted_rows'])
else:
    answer = (row['num_affected_rows'],)
result = (took, answer)
"""
DS_STREAM = """
import time
began = time.perf_counter()
reader = spark.readStream.format('delta').option('startingVersion', 1)
if per_batch:
    reader = reader.option('maxFilesPerTrigger', per_batch)
query = (
    reader.load(path).writeStream.format('noop').option('checkpointLocation', checkpoint)
    .trigger(availableNow=True).start()
)
query.awaitTermination()
took = time.perf_counter() - began
result = (took, sum(p['numInputRows'] for p in query.recentProgress))
"""


def clocked(f: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    answer = f()
    return time.perf_counter() - began, answer


def measure(sides: list[Side], runs: int) -> tuple[list[Any], list[float]]:
    """A warm-up run of every side (JIT, Python workers; its answers are returned to be
    checked), then ``runs`` rounds with the sides interleaved: the answers and each side's
    median seconds."""
    answers = [side()[1] for side in sides]
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(runs):
        for side, into in zip(sides, times, strict=True):
            into.append(side()[0])
    return answers, [statistics.median(t) for t in times]


def same(a: Any, b: Any) -> bool:
    """Equal answers, floats to 1e-9 relative (sums in another order)."""
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def timing(act: Callable[[str], Any]) -> Callable[[str], tuple[float, Any]]:
    """``act`` on a path, clocked."""
    return lambda path: clocked(lambda: act(path))


def remote(ds: Any, code: str, **values: Any) -> tuple[float, Any]:
    """Runs ``code`` in the Delta Spark worker: its ``(seconds, answer)``."""
    took, answer = ds.run(code, **values)
    return took, answer


def rows_of(collected: list[Any]) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in collected]


def start_delta_spark() -> Any:
    """Delta Spark in its own process, installing it first when the cache lacks it."""
    from reference_engine.client import DeltaSpark
    from reference_engine.env import ReferenceEngineUnavailable, ensure

    try:
        env = ensure(log=True)
    except ReferenceEngineUnavailable as e:
        raise SystemExit(f"Delta Spark is unavailable ({e}); run with --no-delta-spark") from e
    ds = DeltaSpark(extra={"spark.driver.memory": "4g"})
    print(f"Delta Spark {env.delta_version} on Spark {ds.spark_version} (its own JVM)")
    return ds


def ratio(a: float, b: float | None) -> str:
    return f"{a / b:10.2f}x" if b else f"{'-':>11}"


def secs(s: float | None) -> str:
    return f"{s:8.2f}s" if s is not None else f"{'-':>9}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--merge-rows", type=int, default=100_000)
    p.add_argument(
        "--reads-only", action="store_true", help="skip the write, the DML and the streaming"
    )
    p.add_argument("--streaming-only", action="store_true", help="only the streaming reads")
    p.add_argument(
        "--partitioned",
        action="store_true",
        help="partition the table by category (16 values; parquet's side discovers them)",
    )
    p.add_argument(
        "--deletion-vectors",
        action="store_true",
        help="delete 1%% of the rows (every file) by deletion vectors before the reads",
    )
    p.add_argument(
        "--delta-spark",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="do every operation with Delta Spark too (its own JVM), the anchor",
    )
    args = p.parse_args(argv)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import deltalog.spark as dls

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    dls.register(spark)
    tmp = Path(tempfile.mkdtemp(prefix="deltalog-spark-bench-"))
    ds: Any = None
    #: The last table: operation, deltalog's seconds, Delta Spark's.
    anchor: list[tuple[str, float, float]] = []
    serial = itertools.count()

    def fresh(base: str | None = None) -> str:
        """A new path under ``tmp`` (a copy of ``base`` when given), never used before: Delta
        Spark caches a table's log by its path."""
        path = str(tmp / f"run-{next(serial)}")
        if base is not None:
            shutil.copytree(base, path)
        return path

    def on_copy(base: str | None, act: Callable[[str], tuple[float, Any]]) -> Side:
        """A side acting on a fresh copy of ``base`` (a new path when None), removed after."""

        def side() -> tuple[float, Any]:
            path = fresh(base)
            try:
                return act(path)
            finally:
                shutil.rmtree(path, ignore_errors=True)

        return side

    try:
        if args.streaming_only:
            if args.delta_spark:
                ds = start_delta_spark()
            stream(spark, ds, tmp, fresh, args.runs, anchor)
            return 0
        uri = str(tmp / "table")
        n = args.rows
        ids = pa.array(range(n), pa.int64())
        data = pa.table(
            {
                "id": ids,
                "value": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
                "category": pc.binary_join_element_wise(
                    "c", pc.cast(pc.bit_wise_and(ids, 15), pa.string()), ""
                ),
            }
        )
        parts = ["category"] if args.partitioned else None
        configuration = {"delta.enableDeletionVectors": "true"} if args.deletion_vectors else None
        dl.write_table(
            uri,
            data,
            target_file_size=16 * 1024 * 1024,
            partition_by=parts,
            configuration=configuration,
        )
        del data, ids
        if args.deletion_vectors:
            dl.DeltaTable(uri).delete("id % 100 = 7")
        files = [f"{uri}/{f}" for f in dl.DeltaTable(uri).files()]
        print(f"{n:,} rows in {len(files)} files")
        taken = dls.read_path(dls.read_table(spark, uri))
        print("native read path:", taken)
        if args.delta_spark:
            ds = start_delta_spark()
        agg = ["count(*)", "sum(id)", "sum(value)", "max(category)"]
        two = ["count(*)", "sum(id)", "sum(value)"]

        def via_native(where: str | None, exprs: list[str]) -> Side:
            def run() -> object:
                df = dls.read_table(spark, uri)  # native, or the fallback it reports
                return rows_of((df.filter(where) if where else df).selectExpr(*exprs).collect())

            return lambda: clocked(run)

        def via_deltalog(where: str | None, exprs: list[str]) -> Side:
            def run() -> object:
                df = spark.read.format("deltalog").option("parallelism", 2).load(uri)
                return rows_of((df.filter(where) if where else df).selectExpr(*exprs).collect())

            return lambda: clocked(run)

        def via_parquet(where: str | None, exprs: list[str]) -> Side:
            def run() -> object:
                df = spark.read.option("basePath", uri).parquet(*files)
                return rows_of((df.filter(where) if where else df).selectExpr(*exprs).collect())

            return lambda: clocked(run)

        def via_delta_spark(where: str | None, exprs: list[str]) -> Side:
            return lambda: remote(ds, DS_READ, path=uri, where=where, exprs=exprs)

        delta_head = f"{'delta':>9}{'nat/delta':>11}" if ds else ""
        cut = f"id < {n // 100}"
        reads = [
            ("full read", None, agg, 1.3 if args.deletion_vectors else 1.1),
            ("2-column projection", None, two, 1.5 if args.deletion_vectors else 1.15),
            (f"selective filter ({cut})", cut, agg, 1.1),
        ]
        print(
            f"{'read':<32}{'native':>9}{'source':>9}{'parquet':>9}"
            f"{'native/pq':>11}{'source/pq':>11}{delta_head}  target (native)"
        )
        for name, where, exprs, target in reads:
            sides = [
                via_native(where, exprs),
                via_deltalog(where, exprs),
                via_parquet(where, exprs),
            ]
            if ds:
                sides.append(via_delta_spark(where, exprs))
            answers, medians = measure(sides, args.runs)
            assert same(answers[0], answers[1]), answers
            assert args.deletion_vectors or same(answers[1], answers[2]), answers
            assert not ds or same(answers[0], answers[3]), answers
            mn, ms, mp = medians[:3]
            md = medians[3] if ds else None
            verdict = "met" if mn / mp <= target else "MISSED"
            delta_cols = f"{secs(md)}{ratio(mn, md)}" if ds else ""
            print(
                f"{name:<32}{mn:8.2f}s{ms:8.2f}s{mp:8.2f}s{mn / mp:10.2f}x{ms / mp:10.2f}x"
                f"{delta_cols}  <= {target}x {verdict}"
            )
            if md is not None:
                anchor.append((f"{name} (read_table, {taken.path if taken else '?'})", mn, md))
        if args.reads_only:
            return 0

        source = spark.range(n, numPartitions=2).selectExpr(*COLUMNS)
        out_parquet = str(tmp / "out-parquet")
        written: list[str] = []

        def write_native(path: str) -> tuple[float, Any]:
            took, _ = clocked(
                lambda: dls.write_table(
                    source, path, mode="append", partition_by=parts, path="native"
                )
            )
            if not written:  # checked once (warm-up)
                table = dl.DeltaTable(path)
                rows = table.to_pyarrow_table(columns=["id"]).num_rows
                written.append(f"version {table.version()} with {len(table.files())} files")
                return took, rows
            return took, n

        def write_source(path: str) -> tuple[float, Any]:
            writer = source.write.format("deltalog").mode("append")
            if parts:
                writer = writer.option("partitionBy", ",".join(parts))
            return clocked(lambda: writer.save(path))[0], None

        def write_parquet() -> tuple[float, Any]:
            writer = source.write.mode("overwrite").partitionBy(*(parts or []))
            return clocked(lambda: writer.parquet(out_parquet))[0], None

        def write_delta_spark(path: str) -> tuple[float, Any]:
            return remote(ds, DS_WRITE, path=path, n=n, columns=COLUMNS, parts=parts)

        print(
            f"{'write':<32}{'native':>9}{'source':>9}{'parquet':>9}"
            f"{'native/pq':>11}{'source/pq':>11}{delta_head}  target (native)"
        )
        sides = [on_copy(None, write_native), on_copy(None, write_source), write_parquet]
        if ds:
            sides.append(on_copy(None, write_delta_spark))
        answers, medians = measure(sides, args.runs)
        assert answers[0] == n, answers
        assert not ds or answers[3] == n, answers
        wn, ws, wp = medians[:3]
        wd = medians[3] if ds else None
        verdict = "met" if wn / wp <= 1.15 else "MISSED"
        label = f"write ({n:,} rows)"
        print(
            f"{label:<32}{wn:8.2f}s{ws:8.2f}s{wp:8.2f}s{wn / wp:10.2f}x{ws / wp:10.2f}x"
            f"{secs(wd) + ratio(wn, wd) if ds else ''}  <= 1.15x {verdict}"
        )
        print(f"native write made {written[0]}")
        if wd is not None:
            anchor.append((f"{label} (write_table)", wn, wd))
        shutil.rmtree(out_parquet, ignore_errors=True)

        dml(args, spark, ds, uri, tmp, fresh, on_copy, anchor)
        stream(spark, ds, tmp, fresh, args.runs, anchor)
    finally:
        if anchor:
            print_anchor(anchor, args, ds)
        if ds is not None:
            ds.close()
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def dml(
    args: argparse.Namespace,
    spark: Any,
    ds: Any,
    uri: str,
    tmp: Path,
    fresh: Callable[[str | None], str],
    on_copy: Callable[[str | None, Callable[[str], tuple[float, Any]]], Side],
    anchor: list[tuple[str, float, float]],
) -> None:
    """MERGE, DELETE and UPDATE by deltalog on Spark, deltalog alone and Delta Spark, each run on
    a fresh copy of the table, without and with deletion vectors."""
    import deltalog.spark as dls

    n, m = args.rows, args.merge_rows
    step = max(1, 2 * n // m)
    upsert = pa.table(
        {
            "id": pa.array(
                [*list(range(0, n, step))[: m // 2], *range(n, n + m - m // 2)], pa.int64()
            ),
            "value": pa.array([-1.0] * m),
            "category": pa.array(["merged"] * m),
        }
    )
    source_file = str(tmp / "upsert.parquet")
    pq.write_table(upsert, source_file)
    source_df = spark.read.parquet(source_file).repartition(2)
    merged = (m // 2, m - m // 2)
    # The live rows each predicate matches (the --deletion-vectors rows, id % 100 = 7, are not
    # among them).
    deleted, updated = (len(range(3, n, 100)),), (len(range(5, n, 100)),)

    def on_spark_merge(path: str) -> tuple[int, int]:
        merger = dls.merge(path, source_df, "target.id = source.id")
        r = merger.when_matched_update_all().when_not_matched_insert_all().execute()
        return r["num_target_rows_updated"], r["num_target_rows_inserted"]

    def alone_merge(path: str) -> tuple[int, int]:
        merger = dl.DeltaTable(path).merge(upsert, "target.id = source.id")
        r = merger.when_matched_update_all().when_not_matched_insert_all().execute()
        return r["num_target_rows_updated"], r["num_target_rows_inserted"]

    ops: list[tuple[str, Callable[[str], Any], Callable[[str], Any], str, Any]] = [
        (
            f"MERGE {m:,} rows (upsert)",
            on_spark_merge,
            alone_merge,
            "MERGE INTO {t} t USING bench_source s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
            merged,
        ),
        (
            "DELETE 1%",
            lambda path: (dls.delete(spark, path, DELETE_WHERE)["num_deleted_rows"],),
            lambda path: (dl.DeltaTable(path).delete(DELETE_WHERE)["num_deleted_rows"],),
            "DELETE FROM {t} WHERE " + DELETE_WHERE,
            deleted,
        ),
        (
            "UPDATE 1%",
            lambda path: (
                dls.update(spark, path, {"value": "-value"}, UPDATE_WHERE)["num_updated_rows"],
            ),
            lambda path: (
                dl.DeltaTable(path).update({"value": "-value"}, UPDATE_WHERE)["num_updated_rows"],
            ),
            "UPDATE {t} SET value = -value WHERE " + UPDATE_WHERE,
            updated,
        ),
    ]
    print(
        f"{'DML (a fresh copy each run)':<{WIDE}}{'spark':>9}{'single':>9}"
        + (f"{'delta':>9}{'spark/delta':>13}{'single/delta':>14}" if ds else "")
    )
    for dv in (False, True):
        mode = "deletion vectors" if dv else "copy on write"
        base = fresh(uri)
        dl.DeltaTable(base).alter.set_properties(
            {"delta.enableDeletionVectors": "true" if dv else "false"}
        )
        for name, on_spark, alone, statement, expected in ops:

            def delta_spark(path: str, statement: str = statement) -> tuple[float, Any]:
                source = source_file if statement.startswith("MERGE") else None
                sql = statement.format(t=table_ref(path))
                return remote(ds, DS_DML, statement=sql, source=source)

            sides = [on_copy(base, timing(on_spark)), on_copy(base, timing(alone))]
            if ds:
                sides.append(on_copy(base, delta_spark))
            answers, medians = measure(sides, args.runs)
            assert all(tuple(a) == expected for a in answers), (name, answers, expected)
            label = f"{name}, {mode}"
            line = f"{label:<{WIDE}}{medians[0]:8.2f}s{medians[1]:8.2f}s"
            if ds:
                md = medians[2]
                line += f"{md:8.2f}s{ratio(medians[0], md):>13}{ratio(medians[1], md):>14}"
                anchor.append((f"{label} (deltalog.spark)", medians[0], md))
                anchor.append((f"{label} (DeltaTable)", medians[1], md))
            print(line)
        shutil.rmtree(base, ignore_errors=True)


def stream(
    spark: Any,
    ds: Any,
    tmp: Path,
    fresh: Callable[[str | None], str],
    runs: int,
    anchor: list[tuple[str, float, float]],
) -> None:
    """A streaming read of 100 appends to completion (``Trigger.AvailableNow``, ``noop`` sink)
    by deltalog's streaming source and by Delta Spark's."""
    path = str(tmp / "appended")
    for i in range(APPENDS + 1):  # version 0 then the appends, versions 1 to 100
        ids = pa.array(range(i * APPEND_ROWS, (i + 1) * APPEND_ROWS), pa.int64())
        rows = pa.table({"id": ids, "value": pc.multiply(pc.cast(ids, pa.float64()), 0.5)})
        dl.write_table(path, rows, mode="append")
    import deltalog.spark as dls

    print(
        f"{'streaming read':<{WIDE}}{'planned':>9}{'source':>9}"
        + (f"{'delta':>9}{'plan/delta':>11}{'src/delta':>11}" if ds else "")
    )
    for per_batch in (None, 10):

        def deltalog_side(
            per_batch: int | None = per_batch, planned: bool = True
        ) -> tuple[float, Any]:
            checkpoint = fresh(None)
            began = time.perf_counter()
            options = {"startingVersion": "1"}
            if per_batch:
                options["maxFilesPerTrigger"] = str(per_batch)
            if planned:
                frame = dls.read_stream(spark, path, path="native", **options)
            else:
                frame = spark.readStream.format("deltalog").options(**options).load(path)
            query = (
                frame.writeStream.format("noop")
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            took = time.perf_counter() - began
            shutil.rmtree(checkpoint, ignore_errors=True)
            return took, sum(p["numInputRows"] for p in query.recentProgress)

        def delta_spark_side(per_batch: int | None = per_batch) -> tuple[float, Any]:
            checkpoint = fresh(None)
            answer = remote(ds, DS_STREAM, path=path, checkpoint=checkpoint, per_batch=per_batch)
            shutil.rmtree(checkpoint, ignore_errors=True)
            return answer

        def source_side(per_batch: int | None = per_batch) -> tuple[float, Any]:
            return deltalog_side(per_batch, planned=False)

        sides: list[Side] = [deltalog_side, source_side] + ([delta_spark_side] if ds else [])
        answers, medians = measure(sides, runs)
        assert all(a == APPENDS * APPEND_ROWS for a in answers), answers
        label = f"{APPENDS} appends of {APPEND_ROWS:,} rows, " + (
            f"{per_batch} files a batch" if per_batch else "one batch"
        )
        line = f"{label:<{WIDE}}{medians[0]:8.2f}s{medians[1]:8.2f}s"
        if ds:
            line += f"{medians[2]:8.2f}s{ratio(medians[0], medians[2])}"
            line += ratio(medians[1], medians[2])
            anchor.append((f"stream {label} (read_stream)", medians[0], medians[2]))
        print(line)


def print_anchor(anchor: list[tuple[str, float, float]], args: argparse.Namespace, ds: Any) -> None:
    table = ", ".join(
        [f"{args.rows:,} rows" if not args.streaming_only else "the streaming table only"]
        + (["partitioned"] if args.partitioned else [])
        + (["1% deleted by deletion vectors"] if args.deletion_vectors else [])
    )
    print(f"\ndeltalog against Delta Spark {ds.env.delta_version} ({table}; median of {args.runs})")
    width = max(len(op) for op, _, _ in anchor) + 2
    print(f"{'operation':<{width}}{'deltalog':>10}{'Delta Spark':>13}{'ratio':>9}")
    for op, ours, theirs in anchor:
        print(f"{op:<{width}}{ours:9.2f}s{theirs:12.2f}s{ours / theirs:8.2f}x")


if __name__ == "__main__":
    sys.exit(main())
