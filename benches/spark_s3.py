"""S3 benchmark of deltalog's Spark companion (issue #45, item 2): the same table read from an
S3 API on loopback (moto's server, in this process) by ``deltalog.spark.read_table`` (deltalog
plans, Spark's parquet source reads through Hadoop's S3A) and by ``spark.read.parquet`` of the
same ``s3a://`` files, on ``local[2]``. Target (issue #45): <= 1.1x.

A table of ``--rows`` rows (``id`` long, ``value`` double, ``category`` string) in ~16 MiB
files, written by deltalog to S3; with ``--deletion-vectors`` 1% of the rows deleted by
deletion vectors first (the parquet side then reads them too). moto serves every request from
Python, so both sides' absolute times are moto's more than S3's; the ratio is the point.
hadoop-aws and the AWS SDK modules come from ``tests/hadoop_aws.py`` (Maven, cached).
Each figure is the median of ``--runs`` runs after a warm-up, the sides interleaved.

    python benches/spark_s3.py [--rows 2000000] [--runs 5] [--deletion-vectors]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--deletion-vectors", action="store_true")
    args = p.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import logging

    import boto3
    from moto.server import ThreadedMotoServer
    from pyspark.sql import SparkSession

    import deltalog as dl
    import deltalog.spark as dls
    from hadoop_aws import jars

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    options = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
    }
    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="testing",
        aws_secret_access_key="testing", region_name="us-east-1",
    ).create_bucket(Bucket="bench")  # fmt: skip
    uri = "s3://bench/table"
    ids = pa.array(range(args.rows), pa.int64())
    data = pa.table(
        {
            "id": ids,
            "value": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
            "category": pc.binary_join_element_wise(
                "c", pc.cast(pc.bit_wise_and(ids, 15), pa.string()), ""
            ),
        }
    )
    config = {"delta.enableDeletionVectors": "true"} if args.deletion_vectors else None
    dl.write_table(
        uri, data, target_file_size=16 * 1024 * 1024, storage_options=options,
        configuration=config,
    )  # fmt: skip
    if args.deletion_vectors:
        dl.DeltaTable(uri, storage_options=options).delete("id % 100 = 7")
    table = dl.DeltaTable(uri, storage_options=options)
    files = ["s3a://bench/table/" + f for f in table.files()]
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.jars", ",".join(str(j) for j in jars()))
        # The parquet side's credentials and endpoint, session-wide (deltalog's are scoped to
        # its scans from storage_options).
        .config("spark.hadoop.fs.s3a.endpoint", endpoint)
        .config("spark.hadoop.fs.s3a.path.style.access", "true")
        .config("spark.hadoop.fs.s3a.connection.ssl.enabled", "false")
        .config("spark.hadoop.fs.s3a.access.key", "testing")
        .config("spark.hadoop.fs.s3a.secret.key", "testing")
        .config("spark.hadoop.fs.s3a.endpoint.region", "us-east-1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(
        f"{args.rows:,} rows in {len(files)} files on moto's S3;",
        dls.read_path(dls.read_table(spark, uri, storage_options=options)),
    )
    agg = ["count(*)", "sum(id)", "sum(value)", "max(category)"]
    cases = [
        ("full read", None, agg),
        ("2-column projection", None, agg[:3]),
        (f"selective filter (id < {args.rows // 100})", f"id < {args.rows // 100}", agg),
    ]
    print(f"{'read':<34}{'native':>9}{'parquet':>9}{'ratio':>8}  target")
    for name, where, exprs in cases:

        def native(where: str | None = where, exprs: list[str] = exprs) -> object:
            df = dls.read_table(spark, uri, storage_options=options)
            return (df.filter(where) if where else df).selectExpr(*exprs).collect()

        def parquet(where: str | None = where, exprs: list[str] = exprs) -> object:
            df = spark.read.parquet(*files)
            return (df.filter(where) if where else df).selectExpr(*exprs).collect()

        times: dict[str, list[float]] = {"native": [], "parquet": []}
        for run in range(args.runs + 1):
            for side, fn in (("native", native), ("parquet", parquet)):
                start = time.perf_counter()
                fn()
                if run:  # the first run warms up
                    times[side].append(time.perf_counter() - start)
        a, b = statistics.median(times["native"]), statistics.median(times["parquet"])
        verdict = "met" if a / b <= 1.1 else "MISSED"
        print(f"{name:<34}{a:8.2f}s{b:8.2f}s{a / b:7.2f}x  <= 1.1x {verdict}", flush=True)
    spark.stop()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
