"""``deltalog.spark.read_table`` on Spark's own parquet source (issue #33, item 1): deltalog
plans, Spark reads exactly the planned files; what that path cannot express falls back to the
``deltalog`` data source, visibly. Every result is compared with deltalog's own reader."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from conftest import corpus_table
from test_read_golden import CONTENT_ROOTS, rows

pyspark = pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")

import deltalog.spark as dls  # noqa: E402
from deltalog.spark.read.native import NativeReadUnsupported, ReadPath  # noqa: E402


def same(got: pa.Table, reference: pa.Table) -> bool:
    columns = reference.column_names
    assert got.column_names == columns
    return rows(got.cast(reference.schema), columns) == rows(reference, columns)


def plan_text(df: Any) -> str:
    return df._jdf.queryExecution().toString()  # what df.explain(True) prints


#: Tables of the corpus Spark's parquet source as it is (without deltalog's JVM companion)
#: cannot read, and why.
FALLBACKS = ("deletion vectors", "column mapping in id mode")


@pytest.fixture
def without_companion(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads as an installation without deltalog's JVM companion makes them (no jar)."""
    import deltalog.spark.jvm as jvm

    monkeypatch.setattr(jvm, "JAR", jvm.JAR.with_name("missing.jar"))
    monkeypatch.setattr(jvm, "_sessions", {})  # (a session is checked when first attached)


def test_golden_tables_through_the_native_path(spark: Any) -> None:
    """Every golden table with expected content, ``path="auto"``, through deltalog's JVM
    companion: all native (deletion vectors, column mapping in id mode, any partitioning),
    with the same rows as deltalog's reader."""
    taken: dict[str, ReadPath | None] = {}
    failures = []
    for root in CONTENT_ROOTS:
        reference = dl.DeltaTable(corpus_table(root)).to_pyarrow_table()
        try:
            df = dls.read_table(spark, str(corpus_table(root)), path="auto")
            taken[root] = dls.read_path(df)
            assert same(df.toArrow(), reference)
        except Exception as e:  # collected: one report for all tables
            failures.append(f"{root}: {e!r}"[:300])
    assert not failures, "\n".join(failures)
    native = sorted(r for r, p in taken.items() if p == ReadPath("native"))
    fallen = {r: p.reason for r, p in taken.items() if p is not None and p.path == "source"}
    print(f"\nnative: {len(native)} of {len(taken)}; fell back: {json.dumps(fallen, indent=1)}")
    assert len(native) + len(fallen) == len(CONTENT_ROOTS)
    assert not fallen and len(native) == len(CONTENT_ROOTS) >= 60
    assert "dv-with-columnmapping/delta" in native


def test_golden_tables_without_the_companion(spark: Any, without_companion: None) -> None:
    """Without the JVM companion: the golden tables Spark's parquet source cannot read as it
    is fall back to the data source with their reason, the others (a sample of every third,
    to keep the suite's time) read natively; all give the same rows."""

    def needs_companion(root: str) -> bool:
        table = dl.DeltaTable(corpus_table(root))
        return table.column_mapping_mode() == "id" or any(
            t.deletion_vector is not None for t in table.scan().tasks()
        )

    dv_or_id = {r for r in CONTENT_ROOTS if needs_companion(r)}
    sample = sorted(dv_or_id | set(CONTENT_ROOTS[::3]))
    taken: dict[str, ReadPath | None] = {}
    for root in sample:
        reference = dl.DeltaTable(corpus_table(root)).to_pyarrow_table()
        df = dls.read_table(spark, str(corpus_table(root)), path="auto")
        taken[root] = dls.read_path(df)
        assert same(df.toArrow(), reference), root
    native = sorted(r for r, p in taken.items() if p == ReadPath("native"))
    fallen = {r: p.reason for r, p in taken.items() if p is not None and p.path == "source"}
    assert len(native) + len(fallen) == len(sample)
    assert len(native) >= 20, native
    assert all(reason and reason.startswith(FALLBACKS) for reason in fallen.values()), fallen
    assert all("companion is not built" in str(reason) for reason in fallen.values()), fallen
    assert set(fallen) == dv_or_id and len(fallen) == 6, fallen


# -- partitions ------------------------------------------------------------------------------

#: Partition values Hadoop's globbing, URI escaping or partition discovery would mangle.
AWKWARD = ["a[1]", "a1", "{a,b}", "50%", "é x", "*", "?q", "back\\s", "_x", ".y", "c:d", "h#x", ""]


def awkward_table(root: Path) -> Path:
    n = len(AWKWARD) * 2
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "p": [AWKWARD[i % len(AWKWARD)] for i in range(n)],
            "n": pa.array([None if i % 5 == 0 else i % 3 for i in range(n)], pa.int32()),
            "d": pa.array([dt.date(2026, 1, 1 + i % 2) if i % 7 else None for i in range(n)]),
            "v": [float(i) for i in range(n)],
        }
    )
    dl.write_table(str(root), data, partition_by=["p", "n", "d"])
    return root


def test_partition_values_come_from_the_log(spark: Any, tmp_path: Path) -> None:
    """String, int, date and null partition values, values with glob, URI and non-ASCII
    characters: as deltalog reads them, in the schema's column order."""
    uri = str(awkward_table(tmp_path / "t"))
    df = dls.read_table(spark, uri)
    assert dls.read_path(df) == ReadPath("native")
    assert df.columns == ["id", "p", "n", "d", "v"]
    reference = dl.DeltaTable(uri).to_pyarrow_table()
    assert same(df.toArrow(), reference)
    got = df.filter("p = 'a[1]'").select("id").toArrow().column("id").to_pylist()
    assert sorted(got) == [i for i in range(26) if i % 13 == 0]
    # Spark folds each group's literals: a partition filter leaves the other scans out.
    assert df.filter("p = '50%' AND n IS NULL").count() == 0
    assert df.filter("p = 'é x'").count() == 2


def test_typed_partition_values_whatever_the_session_time_zone(spark: Any, tmp_path: Path) -> None:
    """Timestamp (UTC instants), timestamp_ntz, boolean, decimal, binary, double and byte
    partition values, read in a session whose time zone is not UTC: as deltalog reads them."""
    import decimal

    uri = str(tmp_path / "t")
    utc = dt.timezone.utc
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "ts": pa.array(
                [
                    dt.datetime(2026, 3, 29, 1, 30, 0, 123456, tzinfo=utc),
                    None,
                    dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=utc),
                ],
                pa.timestamp("us", "UTC"),
            ),
            "ntz": pa.array(
                [dt.datetime(2026, 1, 1, 12, 0), dt.datetime(2026, 1, 2, 0, 0, 0, 5), None],
                pa.timestamp("us"),
            ),
            "b": [True, False, None],
            "dec": pa.array(
                [decimal.Decimal("1.50"), decimal.Decimal("-0.01"), None], pa.decimal128(5, 2)
            ),
            "bin": pa.array([b"\x01\x02", b"ab", None], pa.binary()),
            "f": [0.5, float("-inf"), None],
            "i8": pa.array([-128, 0, None], pa.int8()),
        }
    )
    dl.write_table(uri, data, partition_by=["ts", "ntz", "b", "dec", "bin", "f", "i8"])
    other = spark.newSession()
    other.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    df = dls.read_table(other, uri)
    assert dls.read_path(df) == ReadPath("native")
    reference = dl.DeltaTable(uri).to_pyarrow_table()
    assert same(df.toArrow(), reference)
    assert df.filter("ts = TIMESTAMP'2026-03-29 01:30:00.123456Z'").count() == 1


def test_glob_characters_in_file_paths_are_taken_literally(spark: Any, tmp_path: Path) -> None:
    """A data file in a directory literally named ``p=a[1]`` (Delta promises no path layout),
    next to ``p=a1``, which Hadoop's globbing of an unescaped path would read instead."""
    root = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "p": ["a[1]", "a1"]})
    dl.write_table(str(root), data, partition_by=["p"])
    (root / "p=a%5B1%5D").rename(root / "p=a[1]")
    log = root / "_delta_log" / "00000000000000000000.json"
    log.write_text(log.read_text().replace("p=a%255B1%255D", "p=a%5B1%5D"))
    df = dls.read_table(spark, str(root))
    assert dls.read_path(df) == ReadPath("native")
    assert sorted(map(tuple, df.collect())) == [(1, "a[1]"), (2, "a1")]
    assert same(df.toArrow(), dl.DeltaTable(str(root)).to_pyarrow_table())


def test_values_from_the_log_not_from_directory_names(spark: Any, tmp_path: Path) -> None:
    """Files moved out of Hive-style directories keep the partition values the log gives."""
    root = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x", "y", None]})
    dl.write_table(str(root), data, partition_by=["p"])
    log = root / "_delta_log" / "00000000000000000000.json"
    text = log.read_text()
    for i, directory in enumerate(sorted(d for d in os.listdir(root) if d.startswith("p="))):
        (root / f"other={i}").mkdir()
        for f in os.listdir(root / directory):
            shutil.move(root / directory / f, root / f"other={i}" / f)
        text = text.replace(f'"path":"{directory}/', f'"path":"other={i}/')
    log.write_text(text)
    df = dls.read_table(spark, str(root))
    assert dls.read_path(df) == ReadPath("native") and df.columns == ["id", "p"]
    assert sorted(map(tuple, df.collect()), key=str) == [(1, "x"), (2, "y"), (3, None)]


def scans(df: Any) -> int:
    """Parquet scans in the physical plan."""
    return df._jdf.queryExecution().executedPlan().toString().count("FileScan parquet")


@pytest.mark.parametrize("companion", [True, False], ids=["companion", "without"])
def test_hive_style_directories_are_one_scan(
    spark: Any, tmp_path: Path, companion: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the JVM companion any layout is one scan: the partition values are the plan's.
    Without it, where every directory spells its file's logged values (deltalog's own layout,
    with a null, a space, ``%`` and ``=``), the files are one scan with Spark's partition
    discovery, not one scan per value. deltalog escapes ``é`` as its UTF-8 bytes
    (``p=%C3%A9``), which Spark's discovery decodes byte by byte (``Ã©``): that value is a
    scan of its own with the log's value. So is a file whose directory lies about its value."""
    if not companion:
        import deltalog.spark.jvm as jvm

        monkeypatch.setattr(jvm, "JAR", jvm.JAR.with_name("missing.jar"))
        monkeypatch.setattr(jvm, "_sessions", {})
    root = tmp_path / "t"
    values = ["a", "b c", "50%", "é", None, "x=y"]
    data = pa.table(
        {
            "id": pa.array(range(60), pa.int64()),
            "p": [values[i % len(values)] for i in range(60)],
            "n": pa.array([i % 3 for i in range(60)], pa.int32()),
            "d": [dt.date(2026, 1, 1 + i % 2) for i in range(60)],
        }
    )
    dl.write_table(str(root), data, partition_by=["p", "n", "d"])
    df = dls.read_table(spark, str(root))
    assert dls.read_path(df) == ReadPath("native")
    assert same(df.toArrow(), dl.DeltaTable(str(root)).to_pyarrow_table())
    assert scans(df) == (1 if companion else 2)
    assert df.filter("p = 'é'").count() == 10 and df.filter("p IS NULL").count() == 10

    # One file's log entry now says p=zz while its directory still says p=a.
    log = root / "_delta_log" / "00000000000000000000.json"
    lines = log.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        add = action.get("add")
        if add and add["partitionValues"]["p"] == "a":
            add["partitionValues"]["p"] = "zz"
            lines[i] = json.dumps(action)
            break
    log.write_text("\n".join(lines) + "\n")
    df = dls.read_table(spark, str(root))
    assert scans(df) == (1 if companion else 3)
    reference = dl.DeltaTable(str(root)).to_pyarrow_table()
    assert same(df.toArrow(), reference)
    assert (
        df.filter("p = 'zz'").count()
        == reference.filter(pa.compute.field("p") == "zz").num_rows
        > 0
    )


# -- column mapping, time travel, projection -------------------------------------------------


def test_column_mapping_name_mode_after_a_rename(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "s": pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": None}]),
            "part": ["p", "q"],
        }
    )
    dl.write_table(
        uri, data, partition_by=["part"], configuration={"delta.columnMapping.mode": "name"}
    )
    t = dl.DeltaTable(uri)
    t.alter.rename_column("id", "key")
    t.alter.rename_column("s.a", "alpha")
    t.alter.rename_column("part", "region")
    df = dls.read_table(spark, uri)
    assert dls.read_path(df) == ReadPath("native")
    assert df.columns == ["key", "s", "region"]
    assert df.schema["s"].dataType.fieldNames() == ["alpha", "b"]
    assert same(df.toArrow(), dl.DeltaTable(uri).to_pyarrow_table())
    assert df.filter("s.alpha = 2").select("key").collect()[0][0] == 2
    # Time travel to before the renames: the old names over the same files.
    old = dls.read_table(spark, uri, version=0)
    assert old.columns == ["id", "s", "part"]
    assert same(old.toArrow(), dl.DeltaTable(uri, version=0).to_pyarrow_table())


def test_time_travel_and_columns(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    for i in range(3):
        part = pa.table({"id": pa.array([i], pa.int64()), "s": [f"v{i}"], "x": [float(i)]})
        dl.write_table(uri, part, mode="append")
    df = dls.read_table(spark, uri, version=1)
    assert dls.read_path(df) == ReadPath("native")
    assert sorted(r.id for r in df.collect()) == [0, 1]
    stamp = dl.DeltaTable(uri).history()[-1]["timestamp"]  # version 0
    at = dt.datetime.fromtimestamp(stamp / 1000, tz=dt.timezone.utc).isoformat()
    assert [r.id for r in dls.read_table(spark, uri, timestamp=at).collect()] == [0]
    projected = dls.read_table(spark, uri, columns=["x", "id"])
    assert projected.columns == ["x", "id"]
    assert "ReadSchema: struct<id:bigint,x:double>" in plan_text(projected)  # no s
    assert sorted(map(tuple, projected.collect())) == [(0.0, 0), (1.0, 1), (2.0, 2)]
    with pytest.raises(NativeReadUnsupported, match="no column 'nope'"):
        dls.read_table(spark, uri, columns=["nope"], path="native")
    # A table without data files is native too.
    empty = str(tmp_path / "empty")
    dl.write_table(empty, pa.table({"id": pa.array([], pa.int64())}))
    assert dls.read_table(spark, empty).count() == 0


def test_explain_and_read_path_show_which_path(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    dl.write_table(uri, pa.table({"id": pa.array(range(10), pa.int64())}))
    native = dls.read_table(spark, uri)
    assert "deltalog_native_scan" in plan_text(native)
    assert "FileScan parquet" in plan_text(native)
    derived = native.filter("id > 3").select("id")
    assert dls.read_path(derived) == ReadPath("native")
    assert "PushedFilters: [IsNotNull(id), GreaterThan(id,3)]" in plan_text(derived)
    source = dls.read_table(spark, uri, path="source")
    assert dls.read_path(source) == ReadPath("source", "path='source'")
    assert "deltalog_source_scan" in plan_text(source)
    assert dls.read_path(source.filter("id > 3")) == ReadPath("source")
    assert sorted(r.id for r in source.collect()) == list(range(10))
    with pytest.raises(ValueError, match="path must be"):
        dls.read_table(spark, uri, path="fast")


def test_deletion_vectors_fall_back_with_the_same_rows(
    spark: Any, tmp_path: Path, without_companion: None
) -> None:
    """Without the JVM companion a table with deletion vectors reads through the data source,
    saying why."""
    uri = str(tmp_path / "t")
    config = {"delta.enableDeletionVectors": "true"}
    dl.write_table(uri, pa.table({"id": pa.array(range(20), pa.int64())}), configuration=config)
    dl.DeltaTable(uri).delete("id % 3 = 0")
    df = dls.read_table(spark, uri, path="auto")
    taken = dls.read_path(df)
    assert taken is not None and taken.path == "source"
    assert taken.reason is not None
    assert taken.reason.startswith("deletion vectors on 1 of 1 files (the deltalog JVM companion")
    assert "deltalog_source_scan" in plan_text(df)
    assert same(df.toArrow(), dl.DeltaTable(uri).to_pyarrow_table())
    with pytest.raises(NativeReadUnsupported, match=r"on Spark's parquet source: deletion vec"):
        dls.read_table(spark, uri, path="native")
    # Before the delete there was no deletion vector: that version reads natively.
    assert dls.read_path(dls.read_table(spark, uri, version=0)) == ReadPath("native")


def test_catalog_tables(spark: Any, tmp_path: Path) -> None:
    """A catalog-managed table (SQLite catalog) by name through the session's default catalog,
    and as a DeltaTable loaded from its catalog: native, at the catalog's versions."""
    config = {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    cat = dl.connect_catalog(config)
    cat.create_namespace("db")
    cat.write_table("db.t", pa.table({"id": pa.array([1, 2], pa.int64())}))
    cat.write_table("db.t", pa.table({"id": pa.array([3], pa.int64())}), mode="append")
    t = cat.load_table("db.t")
    assert "catalogManaged" in t.protocol().reader_features
    df = dls.read_table(spark, t)
    assert dls.read_path(df) == ReadPath("native")
    assert sorted(r.id for r in df.collect()) == [1, 2, 3]
    dls.register(spark, catalog=config)
    try:
        named = dls.read_table(spark, "db.t", version=0)
        assert dls.read_path(named) == ReadPath("native")
        assert sorted(r.id for r in named.collect()) == [1, 2]
    finally:
        dls.register(spark)
    # Deletion vectors: native through the JVM companion, at the catalog's version.
    config_dv = {"delta.enableDeletionVectors": "true"}
    cat.write_table(
        "db.dv", pa.table({"id": pa.array(range(6), pa.int64())}), configuration=config_dv
    )
    dv = cat.load_table("db.dv")
    dv.delete("id < 2")
    read = dls.read_table(spark, cat.load_table("db.dv"))
    assert dls.read_path(read) == ReadPath("native")
    assert sorted(r.id for r in read.collect()) == [2, 3, 4, 5]
