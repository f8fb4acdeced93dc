"""deltalog's Spark integration on a Spark standalone cluster on loopback (issue #45, item 3):
a master and a worker in JVMs of their own, executors in theirs, the driver in a process of
its own. Reads (plain, partitioned, deletion vectors, column mapping id mode) take the native
path through the JVM companion, which the executors fetch from the driver; a write and a
MERGE commit once; a streaming query SIGKILLed and restarted delivers every row exactly once.
Every answer is checked against deltalog's own reader, which runs without Spark."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from spark_cluster import StandaloneCluster, session_lines

pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")

DV = {"delta.enableDeletionVectors": "true"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("cluster")) as c:
        yield c


def sorted_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    names = sorted(table.column_names)
    return sorted(zip(*[table.column(n).to_pylist() for n in names], strict=True), key=repr)


def make_tables(root: Path) -> dict[str, str]:
    n = 4000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "p": [["a", "b c", "50%", "é", None][i % 5] for i in range(n)],
            "v": pa.array([float(i) for i in range(n)]),
        }
    )
    tables = {}
    tables["plain"] = str(root / "plain")
    dl.write_table(tables["plain"], data, target_file_size=16 * 1024)
    tables["partitioned"] = str(root / "partitioned")
    dl.write_table(tables["partitioned"], data, partition_by=["p"])
    tables["dv"] = str(root / "dv")
    for i in range(4):  # several files, every one with a deletion vector
        dl.write_table(
            tables["dv"], data.slice(i * 1000, 1000), configuration=DV,
            mode="append" if i else "error",
        )  # fmt: skip
    dl.DeltaTable(tables["dv"]).delete("id % 9 = 4")
    tables["cm_id"] = str(root / "cm_id")
    dl.write_table(tables["cm_id"], data, configuration={**DV, "delta.columnMapping.mode": "id"})
    dl.DeltaTable(tables["cm_id"]).alter.rename_column("v", "value")
    dl.DeltaTable(tables["cm_id"]).delete("id < 100")
    return tables


DRIVER = """
import json, sys
import pyarrow as pa
import deltalog as dl
import deltalog.spark as dls
args = json.loads(sys.argv[1])
out = {}

def sorted_rows(table):
    names = sorted(table.column_names)
    return sorted(zip(*[table.column(n).to_pylist() for n in names]), key=repr)

for name, uri in args["reads"].items():
    df = dls.read_table(spark, uri)
    got = df.toArrow()
    out[name] = {
        "path": dls.read_path(df).path, "scan": str(dls.read_path(df)),
        "same": sorted_rows(got) == sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()),
        "rows": got.num_rows,
    }

written = spark.range(20000, numPartitions=4).selectExpr(
    "id", "id * 2 AS v", "CAST(id % 4 AS STRING) AS p")
dls.write_table(written, args["write"], partition_by=["p"])
t = dl.DeltaTable(args["write"])
back = t.to_pyarrow_table()
out["write"] = {"version": t.version(), "rows": back.num_rows,
                "sum": sum(back.column("id").to_pylist())}

rows = [(i, "merged", -1.0) for i in range(3900, 4100)]
source = spark.createDataFrame(rows, "id long, p string, v double").repartition(2)
(dls.merge(args["merge"], source, "target.id = source.id")
    .when_matched_update_all().when_not_matched_insert_all().execute())
out["merge"] = {"version": dl.DeltaTable(args["merge"]).version()}
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
out["executors"] = int(executors)
print("RESULT " + json.dumps(out), flush=True)
"""


def run_driver(cluster: StandaloneCluster, script: str, *args: str, timeout: int = 600) -> Any:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    code = session_lines(cluster.master_url) + textwrap.dedent(script)
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    line = [x for x in done.stdout.decode().splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line.removeprefix("RESULT "))


def test_reads_write_and_merge_on_the_cluster(cluster: StandaloneCluster, tmp_path: Path) -> None:
    tables = make_tables(tmp_path)
    merge = str(tmp_path / "merge")
    shutil.copytree(tables["dv"], merge)
    reference = str(tmp_path / "merge-reference")
    shutil.copytree(tables["dv"], reference)
    args = {"reads": tables, "write": str(tmp_path / "written"), "merge": merge}
    out = run_driver(cluster, DRIVER, json.dumps(args))

    assert out["executors"] >= 2  # the driver's block manager and the worker's executor
    for name in tables:
        assert out[name]["path"] == "native", (name, out[name])
        assert out[name]["same"], name
        assert out[name]["rows"] == dl.DeltaTable(tables[name]).to_pyarrow_table().num_rows
    assert out["write"] == {"version": 0, "rows": 20000, "sum": sum(range(20000))}

    # The same MERGE by deltalog alone on a copy of the table.
    source = pa.table(
        {
            "id": pa.array(range(3900, 4100), pa.int64()),
            "p": ["merged"] * 200,
            "v": pa.array([-1.0] * 200),
        }
    )
    (
        dl.DeltaTable(reference)
        .merge(source, "target.id = source.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert out["merge"]["version"] == dl.DeltaTable(reference).version()
    assert sorted_rows(dl.DeltaTable(merge).to_pyarrow_table()) == sorted_rows(
        dl.DeltaTable(reference).to_pyarrow_table()
    )


QUERY = """
import json, sys
table, out, checkpoint, mode = sys.argv[1:5]
import deltalog.spark as dls
# Micro-batches as plans (the JVM companion's stream source; the data source's stream is
# tests/test_spark_streaming.py's too).
stream = dls.read_stream(spark, table, path="native", maxFilesPerTrigger="2")
writer = (stream.writeStream.format("parquet").option("path", out)
          .option("checkpointLocation", checkpoint))
if mode == "forever":
    query = writer.trigger(processingTime="200 milliseconds").start()
    print("started", flush=True)
    query.awaitTermination()
else:
    writer.trigger(availableNow=True).start().awaitTermination(300)
    # Spark's file sink: the files its log (_spark_metadata) committed, not those a killed
    # batch left behind.
    ids = sorted(r.id for r in spark.read.parquet(out).collect())
    print("RESULT " + json.dumps(ids), flush=True)
"""


def test_streaming_query_killed_and_restarted_on_the_cluster(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """The query's driver is SIGKILLed mid-stream (its executors on the worker go with its
    application) and restarted from its checkpoint, twice, while another process appends;
    drained with AvailableNow, the sink holds every row of the table exactly once."""
    table, out, checkpoint = tmp_path / "t", tmp_path / "out", tmp_path / "ck"
    dl.write_table(str(table), pa.table({"id": pa.array([0], pa.int64())}))
    appender = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, pyarrow as pa, deltalog as dl\n"
            "for i in range(1, 41):\n"
            "    dl.write_table(sys.argv[1], pa.table({'id': pa.array([i], pa.int64())}),"
            " mode='append')\n"
            "    time.sleep(0.1)\n",
            str(table),
        ]
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    code = session_lines(cluster.master_url) + textwrap.dedent(QUERY)
    args = [sys.executable, "-c", code, str(table), str(out), str(checkpoint)]
    try:
        for _ in range(2):
            query = subprocess.Popen(
                [*args, "forever"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
            assert query.stdout is not None
            assert query.stdout.readline().strip() == b"started"
            time.sleep(5)  # a few micro-batches on the executors
            query.send_signal(signal.SIGKILL)
            query.wait()
        assert appender.wait(300) == 0
    finally:
        if appender.poll() is None:
            appender.kill()
    ids = run_driver(cluster, QUERY, str(table), str(out), str(checkpoint), "once")
    assert ids == list(range(41))  # every row once, none lost
