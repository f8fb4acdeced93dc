"""Spark benchmark: the ``deltalog`` data source against Spark's own parquet source, on the
same files, in one Spark session (``local[2]``).

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
   then reads the deleted rows too (it cannot know them), so only the two deltalog sides are
   checked against each other.
3. Write: ``spark.range(rows)`` with the same columns written by ``deltalog.spark.
   write_table`` on its native path (Spark's parquet writer, one deltalog commit), through the
   data source (the old path) and by ``df.write.parquet``. Target (native): <= 1.15x.
4. MERGE (informational, one run each on a fresh copy of the table): an upsert of
   ``--merge-rows`` source rows (half updating existing ids spread over the whole table, half
   new) computed by Spark (``deltalog.spark.merge``) vs deltalog's single-machine
   ``DeltaTable.merge``. Spark has no MERGE of its own without the Delta jars.

Each measurement is the median of ``--runs`` runs, the sides interleaved. Usage::

    python benches/spark.py [--rows 10000000] [--runs 5] [--merge-rows 100000] [--reads-only]
                            [--partitioned] [--deletion-vectors]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import deltalog as dl


def timed(f: Callable[[], object]) -> float:
    began = time.perf_counter()
    f()
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--merge-rows", type=int, default=100_000)
    p.add_argument("--reads-only", action="store_true", help="skip the write and MERGE")
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
    try:
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
        if args.deletion_vectors:
            dl.DeltaTable(uri).delete("id % 100 = 7")
        files = [f"{uri}/{f}" for f in dl.DeltaTable(uri).files()]
        print(f"{n:,} rows in {len(files)} files")
        print("native read path:", dls.read_path(dls.read_table(spark, uri)))
        agg = ["count(*)", "sum(id)", "sum(value)", "max(category)"]

        two = ["count(*)", "sum(id)", "sum(value)"]

        def via_native(where: str | None, exprs: list[str]) -> Callable[[], object]:
            def run() -> object:
                df = dls.read_table(spark, uri)  # native, or the fallback it reports
                return (df.filter(where) if where else df).selectExpr(*exprs).collect()

            return run

        def via_deltalog(where: str | None, exprs: list[str] = agg) -> Callable[[], object]:
            def run() -> object:
                df = spark.read.format("deltalog").option("parallelism", 2).load(uri)
                return (df.filter(where) if where else df).selectExpr(*exprs).collect()

            return run

        def via_parquet(where: str | None, exprs: list[str] = agg) -> Callable[[], object]:
            def run() -> object:
                df = spark.read.option("basePath", uri).parquet(*files)
                return (df.filter(where) if where else df).selectExpr(*exprs).collect()

            return run

        out_parquet = str(tmp / "out-parquet")
        out_delta = str(tmp / "out-delta")
        source = spark.range(n, numPartitions=2).selectExpr(
            "id", "id * 0.5 AS value", "concat('c', CAST(id & 15 AS STRING)) AS category"
        )

        def write_native() -> object:
            shutil.rmtree(out_delta, ignore_errors=True)
            return dls.write_table(
                source, out_delta, mode="append", partition_by=parts, path="native"
            )

        def write_delta() -> object:
            shutil.rmtree(out_delta, ignore_errors=True)
            writer = source.write.format("deltalog").mode("append")
            if parts:
                writer = writer.option("partitionBy", ",".join(parts))
            return writer.save(out_delta)

        def write_parquet() -> object:
            return source.write.mode("overwrite").partitionBy(*(parts or [])).parquet(out_parquet)

        cut = f"id < {n // 100}"
        reads = [
            ("full read", None, agg, 1.3 if args.deletion_vectors else 1.1),
            ("2-column projection", None, two, 1.5 if args.deletion_vectors else 1.15),
            (f"selective filter ({cut})", cut, agg, 1.1),
        ]
        print(
            f"{'read':<32}{'native':>9}{'source':>9}{'parquet':>9}"
            f"{'native/pq':>11}{'source/pq':>11}  target (native)"
        )
        for name, where, exprs, target in reads:
            sides = [
                via_native(where, exprs),
                via_deltalog(where, exprs),
                via_parquet(where, exprs),
            ]
            answers = [side() for side in sides]  # warm-up: JIT, Python workers; and a check
            assert answers[0] == answers[1], answers
            assert args.deletion_vectors or answers[1] == answers[2], answers
            times: list[list[float]] = [[], [], []]
            for _ in range(args.runs):
                for side, into in zip(sides, times, strict=True):
                    into.append(timed(side))
            mn, ms, mp = (statistics.median(t) for t in times)
            verdict = "met" if mn / mp <= target else "MISSED"
            print(
                f"{name:<32}{mn:8.2f}s{ms:8.2f}s{mp:8.2f}s{mn / mp:10.2f}x{ms / mp:10.2f}x"
                f"  <= {target}x {verdict}"
            )
        if args.reads_only:
            return 0
        print(
            f"{'write':<32}{'native':>9}{'source':>9}{'parquet':>9}"
            f"{'native/pq':>11}{'source/pq':>11}  target (native)"
        )
        sides = [write_native, write_delta, write_parquet]
        for side in sides:
            side()  # warm-up: JIT, Python workers
        times = [[], [], []]
        for _ in range(args.runs):
            for side, into in zip(sides, times, strict=True):
                into.append(timed(side))
        wn, ws, wp = (statistics.median(t) for t in times)
        verdict = "met" if wn / wp <= 1.15 else "MISSED"
        print(
            f"{'write (' + format(n, ',') + ' rows)':<32}{wn:8.2f}s{ws:8.2f}s{wp:8.2f}s"
            f"{wn / wp:10.2f}x{ws / wp:10.2f}x  <= 1.15x {verdict}"
        )
        write_native()
        written = dl.DeltaTable(out_delta)
        assert written.to_pyarrow_table(columns=["id"]).num_rows == n
        print(f"native write made version {written.version()} with {len(written.files())} files")

        # MERGE: the same upsert by Spark and by deltalog alone, each on a fresh copy.
        m = args.merge_rows
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
        source_df = spark.createDataFrame(upsert).repartition(2)
        timings = {}
        for name in ("spark", "deltalog"):
            copy = str(tmp / f"merge-{name}")
            shutil.copytree(uri, copy)
            began = time.perf_counter()
            if name == "spark":
                metrics = (
                    dls.merge(copy, source_df, "target.id = source.id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute()
                )
            else:
                metrics = (
                    dl.DeltaTable(copy)
                    .merge(upsert, "target.id = source.id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute()
                )
            timings[name] = time.perf_counter() - began
            assert metrics["num_target_rows_inserted"] == m - m // 2, metrics
            assert metrics["num_target_rows_updated"] == m // 2, metrics
        print(
            f"{'MERGE ' + format(m, ',') + ' rows (upsert)':<32}"
            f"{timings['spark']:9.2f}s (deltalog.spark.merge) vs "
            f"{timings['deltalog']:.2f}s (DeltaTable.merge): "
            f"{timings['spark'] / timings['deltalog']:.2f}x"
        )
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
