"""``deltalog.spark.write_table`` by Spark's own parquet writer (issue #33, item 2): Spark writes
the files, deltalog builds their ``add`` actions from the footers and commits once.

The evidence is independent of deltalog's writer: the rows are what Spark had; ``deltalake``
and DuckDB's delta extension (delta-kernel-rs) read the same rows; every ``add`` has
statistics, checked against pyarrow's reading of the same footers; the table's rules are
enforced by Spark, and a failed job leaves neither a commit nor a file."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl

pyspark = pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")

import deltalog.spark as dls  # noqa: E402
from deltalog.spark.write.native import NativeWriteUnsupported  # noqa: E402

UTC = dt.timezone.utc


def adds(uri: Path | str, version: int | None = None) -> list[dict[str, Any]]:
    """The ``add`` actions of one commit (the latest when ``version`` is None)."""
    log = Path(uri) / "_delta_log"
    if version is None:
        version = dl.DeltaTable(str(uri)).version()
    lines = (log / f"{version:020}.json").read_text().splitlines()
    return [json.loads(line)["add"] for line in lines if line.startswith('{"add"')]


def parquet_files(root: Path) -> set[str]:
    return {
        str(p.relative_to(root)) for p in root.rglob("*.parquet") if "_delta_log" not in p.parts
    }


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    out = [tuple(r[c] for c in sorted(r)) for r in table.to_pylist()]
    return sorted(out, key=repr)


def spark_rows(df: Any) -> list[tuple[Any, ...]]:
    return rows(df.toArrow())


def test_types_partitions_and_independent_readers(spark: Any, tmp_path: Path) -> None:
    """Every type Delta has, partitioned by a string (null, space, ``%``, ``=``, ``/`` and
    non-ASCII values), an int, a date and a timestamp written in a session whose time zone is
    not UTC: deltalog, deltalake and DuckDB read Spark's rows; the partition values are the
    protocol's texts (timestamps in UTC); every ``add`` has statistics equal to pyarrow's
    reading of the footer."""
    import deltalake

    from duckdb_delta import as_rows, connect, duck_table

    session = spark.newSession()
    session.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    df = session.sql(
        """
        SELECT id, CAST(id * 1.5 AS DOUBLE) AS amount,
               CAST(id AS DECIMAL(12, 2)) / 4 AS price,
               CASE WHEN id % 5 = 0 THEN NULL ELSE concat('s', id) END AS s,
               CAST(concat('b', id) AS BINARY) AS bin, id % 2 = 0 AS flag,
               date_add(DATE'1969-12-25', CAST(id AS INT)) AS day,
               timestamp_micros(id * 3600000123) AS ts,
               CAST(timestamp_micros(id * 1000) AS TIMESTAMP_NTZ) AS ntz,
               named_struct('a', id, 'b', concat('q', id % 3)) AS st,
               array(id, NULL) AS arr, map('k', id) AS m,
               element_at(array('a', 'b c', '50%', 'é', NULL, 'x=y', 'p/q'),
                          CAST(id % 7 + 1 AS INT)) AS p,
               CAST(id % 3 AS INT) AS n,
               date_add(DATE'2026-01-01', CAST(id % 2 AS INT)) AS pd,
               timestamp_micros((id % 2) * 1800000000 + 1774747800000000) AS pts
        FROM range(42)
        """
    ).repartition(2)
    uri = tmp_path / "t"
    dls.write_table(df, str(uri), partition_by=["p", "n", "pd", "pts"], path="native")
    table = dl.DeltaTable(str(uri))
    assert table.version() == 0
    ours = table.to_pyarrow_table()
    assert rows(ours) == spark_rows(df)
    assert rows(deltalake.DeltaTable(str(uri)).to_pyarrow_table()) == rows(ours)
    con = connect()
    theirs = duck_table(con, uri)
    assert as_rows(theirs) == as_rows(ours)

    actions = adds(uri)
    assert len(actions) == len(parquet_files(uri)) >= 14
    texts = {tuple(sorted(a["partitionValues"].items())) for a in actions}
    assert any(("pts", "2026-03-29T01:30:00.000000Z") in t for t in texts)
    assert any(("p", "é") in t for t in texts) and any(("p", "p/q") in t for t in texts)
    assert any(("p", None) in t for t in texts)
    for add in actions:
        stats = json.loads(add["stats"])
        footer = pq.ParquetFile(uri / dl_path(add["path"]))
        assert "p" not in footer.schema_arrow.names  # partition columns are not in files
        assert stats["numRecords"] == footer.metadata.num_rows > 0
        for column in ("id", "amount", "s", "day"):
            mins, maxs, nulls = footer_stats(footer, column)
            assert stats["nullCount"][column] == nulls, (add["path"], column)
            if mins is not None:
                assert stats["minValues"][column] == mins, (add["path"], column)
                assert stats["maxValues"][column] == maxs, (add["path"], column)


def dl_path(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path)


def footer_stats(footer: pq.ParquetFile, column: str) -> tuple[Any, Any, int]:
    """min, max (as the stats JSON spells them) and null count of ``column`` by pyarrow."""
    index = footer.schema_arrow.names.index(column)
    mins, maxs, nulls = [], [], 0
    for g in range(footer.metadata.num_row_groups):
        s = footer.metadata.row_group(g).column(index).statistics
        nulls += s.null_count
        if s.has_min_max:
            mins.append(s.min)
            maxs.append(s.max)
    if not mins:
        return None, None, nulls
    lo, hi = min(mins), max(maxs)
    if isinstance(lo, dt.date):
        lo, hi = lo.isoformat(), hi.isoformat()
    return lo, hi, nulls


def test_append_overwrite_and_idempotent_transactions(spark: Any, tmp_path: Path) -> None:
    """Appends to a table deltalog wrote; an overwrite removes every file it read; a replayed
    application transaction commits nothing and leaves no file behind."""
    uri = tmp_path / "t"
    dl.write_table(str(uri), pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    df = spark.sql("SELECT id, concat('x', id) AS s FROM range(10, 20)")
    dls.write_table(df, str(uri), mode="append", path="native", app_id="job", app_version=1)
    t = dl.DeltaTable(str(uri))
    assert t.version() == 1 and t.to_pyarrow_table().num_rows == 12
    before = parquet_files(uri)
    dls.write_table(df, str(uri), mode="append", path="native", app_id="job", app_version=1)
    assert dl.DeltaTable(str(uri)).version() == 1 and parquet_files(uri) == before
    assert not [p for p in os.listdir(uri) if p.startswith("_deltalog_staging")]
    dls.write_table(df.limit(3), str(uri), mode="overwrite", path="native")
    t = dl.DeltaTable(str(uri))
    assert t.version() == 2 and sorted(t.to_pyarrow_table().column("id").to_pylist()) == [
        10,
        11,
        12,
    ]
    history = t.history()
    assert history[0]["operationParameters"]["mode"] == "Overwrite"
    # An empty DataFrame: Spark writes one file without rows, which is not committed.
    before = parquet_files(uri)
    dls.write_table(df.limit(0), str(uri), mode="append", path="native")
    assert adds(uri) == [] and parquet_files(uri) == before
    assert len(dl.DeltaTable(str(uri)).files()) == 1


def test_row_rules_are_enforced_by_spark(spark: Any, tmp_path: Path) -> None:
    """NOT NULL, CHECK constraints, invariants and generated columns (computed when left out,
    checked when given): a violating row fails the job with ConstraintViolationError, and the
    table keeps its version and its files."""
    uri = tmp_path / "t"
    invariant = json.dumps({"expression": {"expression": "v < 1000"}})
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("v", pa.int64(), metadata={"delta.invariants": invariant}),
            pa.field("twice", pa.int64(), metadata={"delta.generationExpression": "id * 2"}),
        ]
    )
    dl.write_table(str(uri), pa.table({"id": [1], "v": [1], "twice": [2]}, schema=schema))
    dl.DeltaTable(str(uri)).alter.add_constraint({"positive": "id > 0"})
    version = dl.DeltaTable(str(uri)).version()
    files = parquet_files(uri)

    good = spark.sql("SELECT id, id + 1 AS v FROM range(1, 30)")
    dls.write_table(good, str(uri), mode="append", path="native")
    t = dl.DeltaTable(str(uri))
    got = t.to_pyarrow_table().sort_by("id")
    assert got.column("twice").to_pylist() == [i * 2 for i in got.column("id").to_pylist()]
    version, files = t.version(), parquet_files(uri)

    bad = {
        "CHECK constraint positive": "SELECT id - 5 AS id, 1 AS v FROM range(10)",
        "invariant of column v": "SELECT id + 1 AS id, id * 100 AS v FROM range(20)",
        "generated column twice": "SELECT id + 1 AS id, 1 AS v, id AS twice FROM range(5)",
        "NOT NULL column id": "SELECT CASE WHEN id = 3 THEN NULL ELSE id + 1 END AS id, "
        "1 AS v FROM range(5)",
    }
    for what, sql in bad.items():
        with pytest.raises(dl.ConstraintViolationError, match=what):
            dls.write_table(spark.sql(sql), str(uri), mode="append", path="native")
        assert dl.DeltaTable(str(uri)).version() == version
        assert parquet_files(uri) == files, what
    assert not [p for p in os.listdir(uri) if p.startswith("_deltalog_staging")]


def test_a_failed_job_leaves_no_commit_and_no_file(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    dl.write_table(
        str(uri), pa.table({"id": pa.array([1], pa.int64()), "p": ["a"]}), partition_by=["p"]
    )
    files = parquet_files(uri)
    df = spark.sql(
        "SELECT CASE WHEN id = 150 THEN raise_error('boom') ELSE id END AS id, "
        "concat('p', id % 4) AS p FROM range(200)"
    ).repartition(4)
    with pytest.raises(Exception, match="boom"):
        dls.write_table(df, str(uri), mode="append", path="native")
    assert dl.DeltaTable(str(uri)).version() == 0 and parquet_files(uri) == files
    assert sorted(os.listdir(uri)) == ["_delta_log", "p=a"]
    # A new table: its directory goes too.
    with pytest.raises(Exception, match="boom"):
        dls.write_table(df, str(tmp_path / "new"), partition_by=["p"], path="native")
    assert not (tmp_path / "new").exists()


def test_column_mapping_and_row_tracking(spark: Any, tmp_path: Path) -> None:
    """A column-mapped table (name mode, after a rename) with row tracking: Spark's files use
    the physical names and field ids, the new files get ``baseRowId``; deltalake and DuckDB
    read the logical rows."""
    from duckdb_delta import assert_same_rows, connect

    uri = tmp_path / "t"
    dl.write_table(
        str(uri),
        # The partition column first: DuckDB 1.5.5 reads a column-mapped partition column
        # elsewhere as NULL (test_duckdb_disagreements.py, item 1).
        pa.table({"p": ["x", "y"], "id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}),
        partition_by=["p"],
        configuration={"delta.columnMapping.mode": "name", "delta.enableRowTracking": "true"},
    )
    dl.DeltaTable(str(uri)).alter.rename_column("name", "label")
    df = spark.sql("SELECT id, concat('l', id) AS label, 'x' AS p FROM range(10, 15)")
    dls.write_table(df, str(uri), mode="append", path="native")
    t = dl.DeltaTable(str(uri))
    assert sorted(t.to_pyarrow_table().column("label").to_pylist()) == [
        "a",
        "b",
        "l10",
        "l11",
        "l12",
        "l13",
        "l14",
    ]
    physical = t.physical_schema()
    new = adds(uri)
    assert new and all("baseRowId" in a for a in new)
    footer = pq.read_schema(uri / dl_path(new[0]["path"]))
    assert footer.names == [physical.field(1).name, physical.field(2).name]
    ids = {f.name: f.metadata[b"PARQUET:field_id"] for f in footer}
    assert all(ids.values())
    assert_same_rows(connect(), uri)


def test_what_the_native_path_cannot_write_falls_back(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A floating-point partition column: ``path="native"`` names the reason, ``"auto"``
    writes through the data source and says so."""
    uri = tmp_path / "t"
    df = spark.sql("SELECT id, CAST(id % 2 AS DOUBLE) AS f FROM range(4)")
    with pytest.raises(NativeWriteUnsupported, match="partition column 'f' of type double"):
        dls.write_table(df, str(uri), partition_by=["f"], path="native")
    assert not uri.exists() or not (uri / "_delta_log").exists()
    with caplog.at_level(logging.INFO, logger="deltalog.spark"):
        dls.write_table(df, str(uri), partition_by=["f"])
    assert "data source (partition column 'f' of type double" in caplog.text
    assert dl.DeltaTable(str(uri)).to_pyarrow_table().num_rows == 4


def test_catalog_managed_tables(spark: Any, tmp_path: Path) -> None:
    """A catalog-managed table of the SQLite catalog, named through the default catalog given
    to ``register``: appended by one catalog commit; a new table is created by the catalog
    ratifying its version 0."""
    config = {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    cat = dl.connect_catalog(config)
    cat.create_namespace("db")
    cat.write_table("db.t", pa.table({"id": pa.array([1, 2], pa.int64())}))
    try:
        dls.register(spark, catalog=config)
        df = spark.sql("SELECT id FROM range(3, 6)")
        dls.write_table(df, "db.t", mode="append", path="native")
        dls.write_table(df, "db.fresh", path="native")
    finally:
        dls.register(spark)
    t = cat.load_table("db.t")
    assert t.version() == 1 and "catalogManaged" in t.protocol().reader_features
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    fresh = cat.load_table("db.fresh")
    assert fresh.version() == 0 and fresh.to_pyarrow_table().num_rows == 3


def test_decimal_partition_values(spark: Any, tmp_path: Path) -> None:
    uri = tmp_path / "t"
    df = spark.sql("SELECT id, CAST(id AS DECIMAL(6, 2)) / 8 AS d, id % 2 = 0 AS b FROM range(6)")
    dls.write_table(df, str(uri), partition_by=["d", "b"], path="native")
    values = {a["partitionValues"]["d"] for a in adds(uri)}
    assert values == {str(r["d"]) for r in df.collect()}  # plain decimal texts, full scale
    got = dl.DeltaTable(str(uri)).to_pyarrow_table().sort_by("id").column("d").to_pylist()
    assert got == [r["d"] for r in sorted(df.collect(), key=lambda r: r["id"])]
    assert all(isinstance(v, decimal.Decimal) for v in got)


def test_a_column_of_the_wrong_type_is_refused_before_the_job(spark: Any, tmp_path: Path) -> None:
    """Issue #42: a string column where the table has int is refused on the driver with a
    ``SchemaMismatchError`` naming the column, both types and the table, through
    ``write_table`` and ``df.write``, and no Spark job runs; what deltalog's writer converts
    without loss (a bigint whose values fit, a new column with ``mergeSchema``) still writes."""
    uri = tmp_path / "t"
    dl.write_table(str(uri), pa.table({"id": pa.array([1], pa.int32()), "s": ["a"]}))
    wrong = spark.sql("SELECT CAST(id AS STRING) AS id, 'x' AS s FROM range(3)")
    sc = spark.sparkContext
    sc.setJobGroup("deltalog-schema-check", "the schema check runs no job")
    try:
        with pytest.raises(dl.SchemaMismatchError) as caught:
            dls.write_table(wrong, str(uri), mode="append")
        with pytest.raises(Exception, match="column 'id' is string in the DataFrame, int"):
            wrong.write.format("deltalog").mode("append").save(str(uri))
        assert list(sc.statusTracker().getJobIdsForGroup("deltalog-schema-check")) == []
    finally:
        sc.setJobGroup("", "")
    e = caught.value
    assert e.column == "id" and e.table is not None and str(uri) in e.table
    assert "column 'id' is string in the DataFrame, int in the table" in str(e)
    assert str(uri) in str(e)
    assert dl.DeltaTable(str(uri)).version() == 0
    fits = spark.sql("SELECT id, 'y' AS s FROM range(2)")  # bigint: deltalog casts, checked
    dls.write_table(fits, str(uri), mode="append")
    more = spark.sql("SELECT CAST(7 AS INT) AS id, 'z' AS s, true AS extra")
    more.write.format("deltalog").mode("append").option("mergeSchema", "true").save(str(uri))
    t = dl.DeltaTable(str(uri))
    assert t.schema().names == ["id", "s", "extra"]
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 1, 7]
