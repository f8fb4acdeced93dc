"""What ``deltalog.spark`` checks on the driver before a job runs (issue #42): Python workers
that cannot import deltalog, and a write to a directory of parquet files that is not a Delta
table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl

pyspark = pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")

import deltalog.spark as dls  # noqa: E402


def test_workers_without_deltalog_are_named(spark: Any, tmp_path: Path) -> None:
    """Workers running a fresh virtual environment's Python (no site packages, so no
    deltalog): ``register``, ``read_table`` and ``write_table`` raise
    ``SparkWorkerPythonError`` naming that interpreter and what to set, instead of a
    ``ModuleNotFoundError`` in a worker's traceback."""
    venv = tmp_path / "venv"
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            check=True,
            capture_output=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError) as e:
        pytest.skip(f"cannot create a virtual environment: {e}")
    python = str(venv / "bin" / "python")
    uri = tmp_path / "t"
    dl.write_table(str(uri), pa.table({"id": [1, 2]}))
    sc = spark.sparkContext
    before = sc.pythonExec  # what PySpark took from PYSPARK_PYTHON when the context started
    sc.pythonExec = python
    try:
        with pytest.raises(dl.SparkWorkerPythonError) as caught:
            dls.register(spark)
        with pytest.raises(dl.SparkWorkerPythonError, match="PYSPARK_PYTHON"):
            dls.read_table(spark, str(uri))
        with pytest.raises(dl.SparkWorkerPythonError, match="PYSPARK_PYTHON"):
            dls.write_table(spark.range(2), str(tmp_path / "new"), mode="append")
    finally:
        sc.pythonExec = before
        dls.register(spark)
    e = caught.value
    assert e.worker_python == python
    text = str(e)
    assert python in text and "No module named 'deltalog'" in text
    assert "PYSPARK_PYTHON" in text and "spark.pyspark.python" in text
    assert not (tmp_path / "new").exists()
    assert sorted(r.id for r in dls.read_table(spark, str(uri)).collect()) == [1, 2]


def test_parquet_directory_is_refused_by_the_spark_writers(spark: Any, tmp_path: Path) -> None:
    """``write_table`` and ``df.write`` into a directory of parquet files without a log refuse
    before any job, naming ``convert_to_deltalake``; ``allow_unconverted_files`` (option
    ``allowUnconvertedFiles``) creates the table beside the files."""
    root = tmp_path / "pq"
    root.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), root / "f0.parquet")
    df = spark.sql("SELECT id FROM range(3)")
    for mode in ("append", "overwrite", "ignore"):
        with pytest.raises(dl.NotADeltaTableError, match="convert_to_deltalake"):
            dls.write_table(df, str(root), mode=mode)
    with pytest.raises(Exception, match="holds parquet files that are not a Delta table"):
        df.write.format("deltalog").mode("append").save(str(root))
    assert sorted(p.name for p in root.iterdir()) == ["f0.parquet"]
    dls.write_table(df, str(root), mode="append", allow_unconverted_files=True)
    assert sorted(dl.DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2]
