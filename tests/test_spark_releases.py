"""The JVM companion on each Spark release it is built for (issue #45: "Versions of Spark it
supports are tested"). The suite's own session runs the newest (pyspark 4.3); this module runs
the release the jar is compiled against, 4.2.0, in the Python environment the Delta Spark
tests install (tests/reference_engine), with deltalog's package on its path: a table with
deletion vectors, partitions, column mapping in id mode and a widened column reads natively,
with deltalog's rows."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog as dl
import deltalog.spark.jvm as jvm
from reference_engine import env as reference

DRIVER = """
import json, os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
import deltalog as dl
import deltalog.spark as dls
uri = sys.argv[1]
df = dls.read_table(spark, uri, path="native")
got = df.toArrow()
ref = dl.DeltaTable(uri).to_pyarrow_table()
key = lambda t: sorted(zip(*[t.column(n).to_pylist() for n in sorted(t.column_names)]), key=repr)
print("RESULT " + json.dumps({"spark": spark.version, "path": str(dls.read_path(df)),
                              "same": key(got.cast(ref.schema)) == key(ref), "rows": got.num_rows}))
"""


def test_the_release_the_jar_is_compiled_against(tmp_path: Path) -> None:
    try:
        engine = reference.ensure()
    except reference.ReferenceEngineUnavailable as e:
        pytest.fail(f"the Spark 4.2 environment could not be installed: {e}")
    assert ".".join(engine.spark_version.split(".")[:2]) in jvm.SUPPORTED_SPARK
    uri = str(tmp_path / "t")
    config = {
        "delta.enableDeletionVectors": "true",
        "delta.columnMapping.mode": "id",
        "delta.enableTypeWidening": "true",
    }
    data = pa.table(
        {
            "id": pa.array(range(2000), pa.int64()),
            "p": [["a", "b c", None][i % 3] for i in range(2000)],
            "n": pa.array([i % 100 for i in range(2000)], pa.int32()),
        }
    )
    dl.write_table(uri, data, partition_by=["p"], configuration=config)
    table = dl.DeltaTable(uri)
    table.alter.change_column_type("n", "long")
    dl.DeltaTable(uri).alter.rename_column("n", "number")
    dl.DeltaTable(uri).delete("id % 11 = 2")
    package = Path(dl.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(package), "PYSPARK_PYTHON": str(engine.python)}
    done = subprocess.run(
        [str(engine.python), "-c", textwrap.dedent(DRIVER), uri],
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    line = [x for x in done.stdout.decode().splitlines() if x.startswith("RESULT ")][-1]
    out = json.loads(line.removeprefix("RESULT "))
    assert out["spark"] == engine.spark_version
    assert out["path"].startswith("native: "), out
    assert out["same"] and out["rows"] == dl.DeltaTable(uri).to_pyarrow_table().num_rows
