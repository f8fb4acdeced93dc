"""deltalog's JVM companion (issue #45): Spark's parquet source reads exactly the files the
Rust core planned, deletion vectors included, dropped inside Spark's vectorised reader.

Every result is compared with deltalog's own reader (which decodes the same deletion vectors
independently of the JVM side) or with the rows pyarrow reads from the files themselves."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from deltalog.exceptions import CorruptDeletionVectorError

pyspark = pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")

import deltalog.spark as dls  # noqa: E402
import deltalog.spark.jvm as jvm  # noqa: E402
from deltalog.spark.read.native import NativeReadUnsupported, ReadPath  # noqa: E402
from deltalog.spark.write.native import _session_conf  # noqa: E402

DV = {"delta.enableDeletionVectors": "true"}


def rows(table: pa.Table, key: str = "id") -> list[tuple[Any, ...]]:
    return sorted(
        zip(*[table.column(c).to_pylist() for c in table.column_names], strict=True),
        key=lambda r: r[table.column_names.index(key)],
    )


def dv_table(root: Path, n: int = 3000) -> str:
    """A table partitioned by ``part`` (3 values, several files each) with rows deleted from
    every file by deletion vectors (twice, so that vectors are merged)."""
    uri = str(root)
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "part": [f"p{i % 3}" for i in range(n)],
            "v": pa.array([float(i) for i in range(n)]),
            "s": [None if i % 11 == 0 else f"s{i}" for i in range(n)],
        }
    )
    for chunk in range(3):
        dl.write_table(
            uri,
            data.slice(chunk * n // 3, n // 3),
            partition_by=["part"],
            configuration=DV,
            mode="append" if chunk else "error",
        )
    table = dl.DeltaTable(uri)
    table.delete("id % 7 = 0")
    table.delete("id % 13 = 5")
    return uri


def plan_text(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def test_the_companion_is_built_and_attaches(spark: Any) -> None:
    """The jar is in the package (scripts/build_jvm.sh ran), attaches to the session by
    itself, and was compiled against a Spark release the session's is compatible with."""
    assert jvm.JAR.is_file(), f"{jvm.JAR} is missing: scripts/build_jvm.sh builds it"
    entry = jvm.companion(spark)
    compiled = str(entry.compiledSparkVersion())
    assert ".".join(compiled.split(".")[:2]) in jvm.SUPPORTED_SPARK
    assert ".".join(spark.version.split(".")[:2]) in jvm.SUPPORTED_SPARK
    # Attached once, found again: the same class answers.
    assert str(jvm.companion(spark).compiledSparkVersion()) == compiled


@pytest.mark.parametrize(
    "conf",
    [
        {},
        {"spark.sql.parquet.enableVectorizedReader": "false"},
        {"spark.sql.columnVector.offheap.enabled": "true"},
        {"spark.sql.codegen.wholeStage": "false"},
        {"spark.sql.files.maxPartitionBytes": "2048"},
    ],
    ids=["vectorised", "row-reader", "off-heap", "no-codegen", "split-files"],
)
def test_deletion_vectors_read_natively(spark: Any, tmp_path: Path, conf: dict[str, str]) -> None:
    """A DV table on the native path: full read, projection, selective filter, partition
    filter and count all give deltalog's rows, whichever reader Spark picks (vectorised
    batches, its row reader, off-heap vectors, no generated code, files split in parts)."""
    uri = dv_table(tmp_path / "t")
    reference = dl.DeltaTable(uri).to_pyarrow_table()
    assert reference.num_rows < 3000
    with _session_conf(spark, conf):
        df = dls.read_table(spark, uri, path="native")
        assert dls.read_path(df) == ReadPath("native")
        assert rows(df.toArrow()) == rows(reference)
        assert df.count() == reference.num_rows
        assert rows(df.select("id", "s").toArrow()) == rows(reference.select(["id", "s"]))
        selective = df.filter("v > 2500.0 AND part = 'p1'").toArrow()
        expected = reference.filter(
            pc.and_(pc.greater(reference["v"], 2500.0), pc.equal(reference["part"], "p1"))
        )
        assert rows(selective) == rows(expected) and expected.num_rows > 0
        assert df.filter("s IS NULL").count() == reference["s"].null_count


def test_explain_shows_the_planned_scan(spark: Any, tmp_path: Path) -> None:
    """One parquet scan over deltalog's plan, its deletion vectors named; partition filters
    prune files in the file index (Spark reads only the files of the partition asked for)."""
    uri = dv_table(tmp_path / "t")
    df = dls.read_table(spark, uri)
    files = len(dl.DeltaTable(uri).files())
    assert str(dls.read_path(df)) == (
        f"native: {files} files, {files} with deletion vectors, one parquet scan "
        "(deltalog's JVM companion)"
    )
    text = plan_text(df)
    assert text.count("FileScan parquet") == 1
    assert "DeltalogParquet(" in text and "deletion vectors)" in text
    assert "PlannedFileIndex" in text
    one = df.filter("part = 'p2'")
    one.collect()
    scan = one._jdf.queryExecution().executedPlan().collectLeaves().head()
    read = int(scan.metrics().apply("numFiles").value())
    p2 = [t for t in dl.DeltaTable(uri).scan().tasks() if t.partition_values["part"] == "p2"]
    assert read == len(p2) < files


def test_row_index_counts_deleted_rows(spark: Any, tmp_path: Path) -> None:
    """``_metadata.row_index`` of the rows read is their index in the file, deleted rows
    counted ("Deletion Vector Format"): the rows pyarrow reads from the file at those
    indexes are the rows Spark returns."""
    uri = dv_table(tmp_path / "t", n=600)
    df = dls.read_table(spark, uri).select("id", "_metadata.file_path", "_metadata.row_index")
    got = df.collect()
    assert len(got) == dl.DeltaTable(uri).to_pyarrow_table().num_rows
    by_file: dict[str, list[tuple[int, int]]] = {}
    for r in got:
        by_file.setdefault(r.file_path, []).append((r.row_index, r.id))
    for path, pairs in by_file.items():
        ids = pq.read_table(path.removeprefix("file:")).column("id").to_pylist()
        assert all(ids[index] == value for index, value in pairs), path


def test_column_mapping_id_mode_reads_by_field_id(spark: Any, tmp_path: Path) -> None:
    """Column mapping in id mode: parquet field ids, not names, say which column is which (a
    renamed column keeps its id), with deletion vectors on top."""
    uri = str(tmp_path / "t")
    config = {**DV, "delta.columnMapping.mode": "id"}
    data = pa.table({"id": pa.array(range(50), pa.int64()), "name": [f"n{i}" for i in range(50)]})
    dl.write_table(uri, data, configuration=config)
    table = dl.DeltaTable(uri)
    table.alter.rename_column("name", "label")
    dl.DeltaTable(uri).delete("id < 5")
    df = dls.read_table(spark, uri, path="native")
    assert df.columns == ["id", "label"]
    assert rows(df.toArrow()) == rows(dl.DeltaTable(uri).to_pyarrow_table())
    assert df.filter("label = 'n7'").count() == 1


def test_a_damaged_deletion_vector_is_a_typed_error(spark: Any, tmp_path: Path) -> None:
    """The Rust core decodes the vectors on the driver: a damaged one is deltalog's typed
    error naming the file, before Spark runs a task."""
    uri = dv_table(tmp_path / "t", n=300)
    # A descriptor whose cardinality disagrees with its (inline) bitmap.
    last = sorted(Path(uri, "_delta_log").glob("*.json"))[-1]
    lines = last.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        if action.get("add", {}).get("deletionVector"):
            action["add"]["deletionVector"]["cardinality"] += 1
            lines[i] = json.dumps(action)
            damaged = action["add"]["path"]
            break
    last.write_text("\n".join(lines) + "\n")
    with pytest.raises(CorruptDeletionVectorError, match="cardinality") as e:
        dls.read_table(spark, uri, path="native")
    assert damaged in str(e.value) or unquote(damaged) in str(e.value)


def test_spark_releases_the_jar_is_not_built_for(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Spark release outside the jar's is a clear reason, never a NoSuchMethodError."""
    uri = dv_table(tmp_path / "t", n=300)
    monkeypatch.setattr(jvm, "SUPPORTED_SPARK", ("3.5",))
    monkeypatch.setattr(jvm, "_sessions", {})  # (a session is checked when first attached)
    df = dls.read_table(spark, uri)
    taken = dls.read_path(df)
    assert taken is not None and taken.path == "source"
    assert f"Spark {spark.version} is not a release" in str(taken.reason)
    assert rows(df.toArrow()) == rows(dl.DeltaTable(uri).to_pyarrow_table())
    with pytest.raises(NativeReadUnsupported, match="is not a release the deltalog JVM"):
        dls.read_table(spark, uri, path="native")


def test_dml_reads_a_dv_target_natively(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Spark-side DELETE, UPDATE and MERGE read a target with deletion vectors on the native
    path (its rows addressed by file and physical row index) and give deltalog's results."""
    uri = dv_table(tmp_path / "t", n=600)
    expected = {r["id"]: r for r in dl.DeltaTable(uri).to_pyarrow_table().to_pylist()}
    caplog.set_level(logging.INFO, logger="deltalog.spark")
    dls.delete(spark, uri, "id < 100")
    dls.update(spark, uri, {"s": "'updated'"}, "id >= 500")
    source = spark.createDataFrame(
        [(i, "p0", -1.0, "merged") for i in range(590, 610)],
        "id long, part string, v double, s string",
    )
    (
        dls.merge(uri, source, "target.id = source.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    targets = [r.getMessage() for r in caplog.records if "DML target" in r.getMessage()]
    assert len(targets) == 3 and all("native parquet scan" in m for m in targets), targets
    for i in list(expected):
        if i < 100:
            del expected[i]
        elif i >= 500:
            expected[i] = {**expected[i], "s": "updated"}
    for i in range(590, 610):  # matched rows updated, the rest (deleted ones too) inserted
        expected[i] = {"id": i, "part": "p0", "v": -1.0, "s": "merged"}
    got = {r["id"]: r for r in dl.DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert got == expected
    spark_read = dls.read_table(spark, uri).toArrow()
    assert rows(spark_read) == rows(dl.DeltaTable(uri).to_pyarrow_table())


FRESH_SESSION = """
import json, os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
import deltalog, deltalog as dl, deltalog.spark as dls
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
df = dls.read_table(spark, sys.argv[1])
print("RESULT " + json.dumps({
    "module": deltalog.__file__, "path": str(dls.read_path(df)),
    "rows": df.count(), "expected": dl.DeltaTable(sys.argv[1]).to_pyarrow_table().num_rows,
}), flush=True)
"""


def test_the_wheel_holds_the_jar(tmp_path: Path) -> None:
    """The wheel maturin builds from this checkout (the README's commands build the jar
    first) carries the companion where :data:`deltalog.spark.jvm.JAR` looks for it, and
    installed into a fresh venv (PySpark from the system's site packages) a Spark session
    made with no configuration at all reads a table with deletion vectors natively."""
    import shutil
    import subprocess
    import zipfile

    root = Path(__file__).resolve().parent.parent
    maturin = shutil.which("maturin")
    if maturin is None:
        pytest.fail("maturin is not installed (scripts/test.sh installs it)")
    subprocess.run(
        [maturin, "build", "--profile", "ci", "-q", "-o", str(tmp_path)],
        cwd=root,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("deltalog-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "deltalog/spark/jars/deltalog-spark.jar" in names

    import json
    import sys

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    uri = dv_table(tmp_path / "t", n=600)
    done = subprocess.run(
        [python, "-c", FRESH_SESSION, uri], capture_output=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    line = [x for x in done.stdout.decode().splitlines() if x.startswith("RESULT ")][-1]
    out = json.loads(line.removeprefix("RESULT "))
    assert out["module"].startswith(str(venv))  # the wheel's deltalog, not this checkout's
    assert out["path"].startswith("native: ") and "with deletion vectors" in out["path"], out
    assert out["rows"] == out["expected"] > 0


#: Every widening Delta 4.0 allows (tests/test_type_widening.py holds the rule), one column
#: each: (the type written first, its value, the type it is widened to).
WIDENINGS = [
    ("byte", pa.int8(), 5, "short"),
    ("byte", pa.int8(), -5, "double"),
    ("short", pa.int16(), 300, "long"),
    ("short", pa.int16(), 7, "decimal(12,2)"),
    ("integer", pa.int32(), 70000, "long"),
    ("integer", pa.int32(), -3, "double"),
    ("integer", pa.int32(), 123, "decimal(10,0)"),
    ("long", pa.int64(), 2**40, "decimal(20,0)"),
    ("float", pa.float32(), 1.5, "double"),
    ("decimal(10,1)", pa.decimal128(10, 1), "1.5", "decimal(12,3)"),
    ("date", pa.date32(), "2026-01-02", "timestamp_ntz"),
]


@pytest.mark.parametrize("vectorised", ["true", "false"])
def test_type_widening_reads_natively(spark: Any, tmp_path: Path, vectorised: str) -> None:
    """A table whose columns were widened ("Type Widening") after files were written, then
    appended with wide values: Spark's parquet readers (vectorised and row-based) widen the
    old files' narrow values as they read, giving deltalog's rows."""
    import datetime as dt
    import decimal

    def value(t: pa.DataType, v: Any) -> Any:
        if pa.types.is_decimal(t):
            return decimal.Decimal(v)
        if pa.types.is_date(t):
            return dt.date.fromisoformat(v)
        return v

    uri = str(tmp_path / "t")
    columns = {f"c{i}": pa.array([value(t, v)], t) for i, (_, t, v, _) in enumerate(WIDENINGS)}
    first = pa.table({"id": pa.array([1], pa.int64()), **columns})
    dl.write_table(uri, first, configuration={"delta.enableTypeWidening": "true", **DV})
    dl.write_table(uri, first.set_column(0, "id", pa.array([2], pa.int64())), mode="append")
    table = dl.DeltaTable(uri)
    for i, (_, _, _, wide) in enumerate(WIDENINGS):
        table.alter.change_column_type(f"c{i}", wide)
        table = dl.DeltaTable(uri)
    wide_row = {
        k: v for k, v in table.to_pyarrow_table().filter(pc.field("id") == 1).to_pylist()[0].items()
    }
    table.delete("id = 2")  # a deletion vector on a narrow file
    wide = pa.Table.from_pylist([{**wide_row, "id": 3}], table.schema())
    dl.write_table(uri, wide, mode="append")
    with _session_conf(spark, {"spark.sql.parquet.enableVectorizedReader": vectorised}):
        df = dls.read_table(spark, uri, path="native")
        assert dls.read_path(df) == ReadPath("native")
        reference = dl.DeltaTable(uri).to_pyarrow_table()
        assert rows(df.toArrow().cast(reference.schema)) == rows(reference)
        assert df.count() == 2
