"""deltalog's Spark companion on S3 (issue #45, item 2): tables in a real S3 API on loopback
(moto's server) read on the native path through Hadoop's S3A (hadoop-aws and the AWS SDK from
Maven Central, cached outside the clone), with the credentials and endpoint from the table's
``storage_options`` scoped to the scan. The Spark driver runs in a process of its own (S3A's
jars are on its classpath from the start); every answer is compared with deltalog's own
reader, which reads the same objects through ``object_store``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from conftest import S3_BUCKET, corpus_table, upload_table
from hadoop_aws import jars

pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")

#: The start of each driver program: a session with S3A's jars, deltalog imported, its log
#: lines kept in ``messages``.
SESSION = """
import json, os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
args = json.loads(sys.argv[1])
spark = (SparkSession.builder.master("local[2]")
         .config("spark.ui.enabled", "false")
         .config("spark.jars", ",".join(args["jars"]))
         .config("spark.sql.session.timeZone", "UTC")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
import deltalog as dl
import deltalog.spark as dls
# deltalog.spark's INFO lines (which path each read, write and DML target took)
import logging
messages = []
class Keep(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())
logging.getLogger("deltalog.spark").addHandler(Keep())
logging.getLogger("deltalog.spark").setLevel(logging.INFO)
"""

DRIVER = (
    SESSION
    + """
options = args["options"]

def sorted_rows(table):
    names = sorted(table.column_names)
    return sorted(zip(*[table.column(n).to_pylist() for n in names]), key=repr)

out = {}
for name, uri in args["tables"].items():
    df = dls.read_table(spark, uri, storage_options=options)
    got = df.toArrow()
    reference = dl.DeltaTable(uri, storage_options=options).to_pyarrow_table()
    plan = df._jdf.queryExecution().executedPlan().toString()
    out[name] = {"path": dls.read_path(df).path, "same": sorted_rows(got) == sorted_rows(reference),
                 "rows": got.num_rows, "s3a": "s3a://" in plan}
# A MERGE whose target (with deletion vectors) is read on the native path, rows addressed by
# the plan's URIs (s3a), new rows and deletion vectors written by deltalog to the same store.
source = spark.createDataFrame([(i, "merged", -1.0) for i in range(2900, 3100)],
                               "id long, p string, v double")
(dls.merge(args["merge"], source, "target.id = source.id", storage_options=options)
    .when_matched_update_all().when_not_matched_insert_all().execute())
out["merge_log"] = [m for m in messages if m.startswith("DML target")]
# Writes by Spark's parquet writer straight into the bucket (deltalog's commit protocol): a new
# partitioned table, an append, and an append that breaks a NOT NULL column and commits nothing.
rows = spark.createDataFrame(
    [(i, ["a", "b c", "50%", None][i % 4], float(i)) for i in range(500)],
    "id long, p string, v double")
dls.write_table(rows, args["write"], partition_by=["p"], storage_options=options)
dls.write_table(rows.where("id < 100"), args["write"], mode="append", storage_options=options)
dl.DeltaTable(args["write"], storage_options=options).alter.add_constraint({"small": "id < 1000"})
try:
    dls.write_table(spark.sql("SELECT id * 10 AS id, 'x' AS p, 1.0D AS v FROM range(200)"),
                    args["write"], mode="append", storage_options=options)
    out["violation"] = None
except dl.ConstraintViolationError as e:
    out["violation"] = str(e)
out["write_log"] = [m for m in messages if m.startswith("deltalog write of")]
# The written table as a stream of planned micro-batches (its snapshot, two files a batch).
stream = dls.read_stream(spark, args["write"], storage_options=options, path="native",
                         maxFilesPerTrigger="2")
query = (stream.writeStream.format("memory").queryName("from_s3")
         .trigger(availableNow=True).start())
query.awaitTermination(300)
out["stream"] = sorted(tuple(r) for r in spark.sql("SELECT id, p, v FROM from_s3").collect())
out["stream_batches"] = len([p for p in query.recentProgress if p["numInputRows"] > 0])
# The session's Hadoop configuration holds no endpoint or key for the bucket: the reads above
# found moto only through the storage_options scoped to their scans (S3A's default is AWS).
conf = spark._jsc.hadoopConfiguration()
out["session"] = [conf.get(k) for k in (
    "fs.s3a.endpoint", "fs.s3a.bucket.tables.endpoint", "fs.s3a.bucket.tables.access.key")]
print("RESULT " + json.dumps(out), flush=True)
"""
)


def run_driver(code: str, args: dict[str, Any], env: dict[str, str]) -> Any:
    """Runs a Spark driver program (``code``, given ``args`` as JSON) in a process of its own
    with ``env``; returns what it printed after ``RESULT``."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), json.dumps(args)],
        env={**env, "PYSPARK_PYTHON": sys.executable},
        capture_output=True,
        timeout=600,
    )
    stderr = done.stderr.decode(errors="replace")
    causes = [x for x in stderr.splitlines() if "Exception" in x or "Caused by" in x]
    assert done.returncode == 0, "\n".join(causes[:20]) + stderr[-2000:]
    line = [x for x in done.stdout.decode().splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line.removeprefix("RESULT "))


def test_native_reads_on_s3(s3_server: tuple[dict[str, str], Any], tmp_path: Path) -> None:
    options, client = s3_server
    prefix = f"s3://{S3_BUCKET}/spark-{tmp_path.name}"
    tables = {}
    data = pa.table(
        {
            "id": pa.array(range(3000), pa.int64()),
            "p": [["a", "b c", "50%", None][i % 4] for i in range(3000)],
            "v": pa.array([float(i) for i in range(3000)]),
        }
    )
    tables["partitioned"] = f"{prefix}/partitioned"
    dl.write_table(tables["partitioned"], data, partition_by=["p"], storage_options=options)
    tables["dv"] = f"{prefix}/dv"
    for i in range(3):
        dl.write_table(
            tables["dv"], data.slice(i * 1000, 1000), storage_options=options,
            configuration={"delta.enableDeletionVectors": "true"},
            mode="append" if i else "error",
        )  # fmt: skip
    dl.DeltaTable(tables["dv"], storage_options=options).delete("id % 7 = 3")
    # A table another implementation wrote (the corpus), deletion vectors and checkpoint.
    golden = "dv-partitioned-with-checkpoint/delta"
    upload_table(client, corpus_table(golden), f"spark-{tmp_path.name}/golden")
    tables["golden"] = f"{prefix}/golden"

    written = f"{prefix}/written"
    merge, reference = f"{prefix}/merge", f"{prefix}/merge-reference"
    for uri in (merge, reference):
        for i in range(3):
            dl.write_table(
                uri, data.slice(i * 1000, 1000), storage_options=options,
                configuration={"delta.enableDeletionVectors": "true"},
                mode="append" if i else "error",
            )  # fmt: skip
        dl.DeltaTable(uri, storage_options=options).delete("id % 7 = 3")

    args = {
        "jars": [str(j) for j in jars()],
        "options": options,
        "tables": tables,
        "merge": merge,
        "write": written,
    }
    out = run_driver(DRIVER, args, {**os.environ})
    for name in tables:
        assert out[name]["path"] == "native", (name, out[name])
        assert out[name]["s3a"], name  # read by Spark's S3A, not by deltalog
        assert out[name]["same"], name
        assert out[name]["rows"] > 0
    assert out["session"] == [None, None, None]

    # The same MERGE by deltalog alone on an identical table.
    source = pa.table(
        {
            "id": pa.array(range(2900, 3100), pa.int64()),
            "p": ["merged"] * 200,
            "v": pa.array([-1.0] * 200),
        }
    )
    (
        dl.DeltaTable(reference, storage_options=options)
        .merge(source, "target.id = source.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    (line,) = out["merge_log"]
    assert line.startswith(f"DML target of {merge}") and line.endswith(": native parquet scan")
    got = dl.DeltaTable(merge, storage_options=options).to_pyarrow_table()
    expected = dl.DeltaTable(reference, storage_options=options).to_pyarrow_table()
    assert sorted(got.to_pylist(), key=repr) == sorted(expected.to_pylist(), key=repr)

    # The writes: Spark's parquet writer each time, the rows as written, every data object in
    # the table's prefix a file of the table (nothing staged, no _temporary, no _SUCCESS).
    assert out["write_log"] == [f"deltalog write of {written}: Spark's parquet writer"] * 2
    assert "NOT NULL" not in (out["violation"] or "") and "small" in (out["violation"] or "")
    table = dl.DeltaTable(written, storage_options=options)
    assert table.version() == 2  # two writes and the constraint; the failed append: nothing
    got = table.to_pyarrow_table()
    expected_rows = [(i, ["a", "b c", "50%", None][i % 4], float(i)) for i in range(500)]
    expected_rows += [r for r in expected_rows if r[0] < 100]
    rows = list(zip(*[got.column(c).to_pylist() for c in ("id", "p", "v")], strict=True))
    assert sorted(rows, key=repr) == sorted(expected_rows, key=repr)
    assert deltalake_reads(written, options) == sorted(expected_rows, key=repr)
    streamed = [tuple(r) for r in out["stream"]]
    assert sorted(streamed, key=repr) == sorted(expected_rows, key=repr)
    assert out["stream_batches"] >= len(table.files()) // 2
    key = f"spark-{tmp_path.name}/written/"
    objects = [
        o["Key"][len(key) :]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=S3_BUCKET, Prefix=key)
        for o in page.get("Contents", [])
    ]
    data_objects = {o for o in objects if not o.startswith("_delta_log/")}
    committed = set(table.files())  # (relative keys as stored)
    assert committed <= data_objects and len(committed) >= 4  # partitions of both writes
    leftover = data_objects - committed
    # (the failed append's tasks that finished after its job failed may leave files no commit
    # names, for VACUUM, as Delta Spark's do; nothing else may be there)
    assert all(o.startswith("p=x/part-") for o in leftover), leftover


def deltalake_reads(uri: str, options: dict[str, str]) -> list[tuple[Any, ...]]:
    """The table's rows as the deltalake package reads them (an independent reader)."""
    import deltalake

    got = deltalake.DeltaTable(uri, storage_options=options).to_pyarrow_table()
    rows = zip(*[got.column(c).to_pylist() for c in ("id", "p", "v")], strict=True)
    return sorted(rows, key=repr)


def test_storage_options_become_bucket_scoped_hadoop_settings() -> None:
    """object_store's S3 option names (any case, with or without ``aws_``) as S3A's keys for
    the table's bucket only; other stores and tables without options add nothing."""
    from deltalog.spark.hadoop import hadoop_options

    got = hadoop_options(
        "s3://data/sales/orders",
        {
            "AWS_ACCESS_KEY_ID": "key",
            "aws_secret_access_key": "secret",
            "session_token": "token",
            "AWS_REGION": "eu-west-1",
            "endpoint": "http://127.0.0.1:9000",
            "AWS_ALLOW_HTTP": "true",
        },
    )
    prefix = "fs.s3a.bucket.data."
    assert got == {
        prefix + "access.key": "key",
        prefix + "secret.key": "secret",
        prefix + "session.token": "token",
        prefix + "aws.credentials.provider": (
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        ),
        prefix + "endpoint.region": "eu-west-1",
        prefix + "endpoint": "http://127.0.0.1:9000",
        prefix + "connection.ssl.enabled": "false",
        prefix + "path.style.access": "true",
    }
    assert hadoop_options(
        "s3://data/t",
        {"virtual_hosted_style_request": "true", "aws_endpoint": "https://s3.example"},
    ) == {
        prefix + "endpoint": "https://s3.example",
        prefix + "path.style.access": "false",
    }
    assert hadoop_options("s3://data/t", None) == {}
    assert hadoop_options("/local/t", {"AWS_REGION": "x"}) == {}
    assert hadoop_options("gs://bucket/t", {"google_service_account": "x"}) == {}


VENDED = (
    SESSION
    + """
base = args["base"]  # the endpoint only: the keys are the catalog's to vend
dls.register(spark, catalog=args["catalog"])
out = {}
df = dls.read_table(spark, "sales.orders", storage_options=base)
out["read"] = [str(dls.read_path(df)), sorted(r.id for r in df.collect())]
more = spark.createDataFrame([(i,) for i in range(10, 15)], "id long")
dls.write_table(more, "sales.orders", mode="append", storage_options=base)
again = dls.read_table(spark, "sales.orders", storage_options=base)
out["after"] = [str(dls.read_path(again).path), sorted(r.id for r in again.collect())]
out["writes"] = [m for m in messages if m.startswith("deltalog write of")]
print("RESULT " + json.dumps(out), flush=True)
"""
)


def test_unity_catalog_tables_with_vended_credentials(
    s3_server: tuple[dict[str, str], Any], tmp_path: Path
) -> None:
    """A table of deltalog's catalog server whose warehouse is on moto's S3, the server vending
    STS credentials scoped to the table (``temporary-table-credentials``): Spark reads it on the
    native path and appends to it with Spark's parquet writer, with no credentials of its own
    (no AWS variables in the driver's environment, none in the session, the endpoint alone in
    ``storage_options``): only the vended ones reach S3A, scoped to the scan and the write."""
    import catalog_server
    from deltalog.server.auth import add_token

    options, client = s3_server
    bucket = "vended-spark"
    if bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
        client.create_bucket(Bucket=bucket)
    tokens = tmp_path / "tokens.json"
    keys = {role: add_token(tokens, role, role) for role in ("reader", "writer", "admin")}
    endpoint = options["AWS_ENDPOINT_URL"]
    flags = [f"--storage-option={k}={v}" for k, v in options.items()]
    flags += ["--s3-role-arn", "arn:aws:iam::123456789012:role/deltalog-vended"]
    flags += ["--sts-endpoint", endpoint, "--s3-region", "us-east-1"]
    server = catalog_server.start(
        tmp_path / "server", warehouse=f"s3://{bucket}/wh", tokens=tokens, args=flags
    )
    try:
        admin = dl.connect_catalog(
            {"type": "rest", "uri": server.url, "token": keys["admin"]}, storage_options=options
        )
        admin.create_namespace(["main"])
        admin.create_namespace(["main", "sales"])
        admin.write_table(["main", "sales", "orders"], pa.table({"id": pa.array([1, 2, 3])}))
        base = {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
        args = {
            "jars": [str(j) for j in jars()],
            "base": base,
            "catalog": {
                "type": "unity", "uri": server.url, "catalog": "main", "token": keys["writer"],
            },
        }  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        out = run_driver(VENDED, args, env)
        path, ids = out["read"]
        assert path.startswith("native") and ids == [1, 2, 3], out
        assert out["after"] == ["native", [1, 2, 3, 10, 11, 12, 13, 14]]
        # The append is Spark's write, committed through the catalog (a new version).
        table = admin.load_table(["main", "sales", "orders"])
        assert table.version() == 1
        [write] = out["writes"]
        assert write.endswith(": Spark's parquet writer"), write
    finally:
        server.stop()
