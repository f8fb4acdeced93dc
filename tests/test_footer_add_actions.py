"""`_native.add_actions_from_footers`: `add` actions, statistics from parquet footers only, for
files another writer (pyarrow, Spark's native parquet writer) put into a table's directory.

The statistics must equal those deltalog's own writer gives the same rows, except where a
footer does not have them (statistics off, INT96 timestamps, arrays' null counts); the
committed table must read back the same rows in deltalog, deltalake and pyarrow."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from deltalog import _native

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("s", pa.string()),
        ("f", pa.float64()),
        ("d", pa.decimal128(10, 2)),
        ("dt", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("b", pa.bool_()),
        ("bin", pa.binary()),
        ("st", pa.struct([("x", pa.int64()), ("y", pa.string())])),
        ("arr", pa.list_(pa.int32())),
    ]
)


def rows(start: int, n: int) -> pa.Table:
    """`n` rows of every type, nulls and long strings among them."""
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    out: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    for k in range(start, start + n):
        none = k % 5 == 3
        out["id"].append(k)
        out["i"].append(None if none else (k * 7919) % 1000 - 500)
        out["s"].append(None if none else ("ž" * 35 + str(k) if k % 4 == 0 else f"v{k:05}"))
        out["f"].append(None if none else (-0.0 if k % 6 == 0 else k / 3 - 10))
        out["d"].append(None if none else decimal.Decimal(k * 37 - 900) / 100)
        out["dt"].append(None if none else dt.date(2020, 1, 1) + dt.timedelta(days=k * 3))
        out["ts"].append(None if none else base + dt.timedelta(seconds=k * 61, microseconds=k))
        out["ntz"].append(None if k % 7 == 1 else dt.datetime(2001, 2, 3) + dt.timedelta(hours=k))
        out["b"].append(None if none else k % 2 == 0)
        out["bin"].append(None if none else bytes([k % 256]))
        out["st"].append(None if k % 9 == 4 else {"x": None if none else -k, "y": f"y{k % 13}"})
        out["arr"].append(None if k % 4 == 1 else [k, None])
    return pa.table(out, schema=SCHEMA)


def footer_adds(
    table: dl.DeltaTable, files: list[tuple[str, dict[str, str | None]]]
) -> list[dict[str, Any]]:
    return [json.loads(a) for a in _native.add_actions_from_footers(table._raw, files)]


def stats(add: dict[str, Any]) -> dict[str, Any]:
    return json.loads(add["add"]["stats"])


def writer_stats(tmp_path: Path, data: pa.Table, **create: Any) -> dict[str, Any]:
    """The statistics deltalog's writer gives `data` written as one file."""
    other = dl.DeltaTable.create(
        str(tmp_path / f"writer-{uuid.uuid4().hex}"), data.schema, **create
    )
    (add,) = dl.write_files(other, data)
    return stats(add)


def without(doc: dict[str, Any], *paths: str) -> dict[str, Any]:
    """`doc` without the dotted `paths` (e.g. "nullCount.arr")."""
    doc = json.loads(json.dumps(doc))
    for path in paths:
        *parents, last = path.split(".")
        node = doc
        for p in parents:
            node = node[p]
        node.pop(last, None)
    return doc


def sort(table: pa.Table) -> pa.Table:
    return table.sort_by("id")


def test_pyarrow_files_commit_with_the_writers_statistics(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = dl.DeltaTable.create(str(root), SCHEMA)
    chunks = [rows(0, 40), rows(40, 25), rows(65, 30)]
    # Several row groups; the last file without statistics.
    pq.write_table(chunks[0], root / "part-00000-a.snappy.parquet", row_group_size=7)
    pq.write_table(chunks[1], root / "part-00001-b.snappy.parquet", row_group_size=10)
    pq.write_table(
        chunks[2], root / "part-00002-c.snappy.parquet", row_group_size=8, write_statistics=False
    )
    names = [f"part-0000{k}-{c}.snappy.parquet" for k, c in enumerate("abc")]
    adds = footer_adds(t, [(n, {}) for n in names])
    assert [a["add"]["path"] for a in adds] == names
    for add, name in zip(adds, names, strict=True):
        assert add["add"]["size"] == (root / name).stat().st_size
        assert add["add"]["dataChange"] is True
        assert add["add"]["partitionValues"] == {}
        assert abs(add["add"]["modificationTime"] - (root / name).stat().st_mtime * 1000) < 1000

    # Equal to deltalog's writer's, but for the null count of the array column.
    for k in (0, 1):
        want = writer_stats(tmp_path, chunks[k])
        assert want["nullCount"]["arr"] > 0
        assert stats(adds[k]) == without(want, "nullCount.arr")
    first = stats(adds[0])
    assert len(first["maxValues"]["s"]) == 33 and first["maxValues"]["s"].endswith("\U0010ffff")
    assert first["minValues"]["ts"] == "2024-01-01T00:00:00.000Z"
    assert first["maxValues"]["st"]["x"] == 0
    # No statistics in the footer: the row count only.
    assert stats(adds[2]) == {"numRecords": 30, "minValues": {}, "maxValues": {}, "nullCount": {}}

    assert t.transaction(operation="WRITE").add_actions(adds).commit() == 1
    expected = sort(pa.concat_tables(chunks))
    assert sort(dl.DeltaTable(str(root)).to_pyarrow_table()).equals(expected)
    theirs = sort(deltalake.DeltaTable(str(root)).to_pyarrow_table())
    assert theirs.select(["id", "s", "d", "dt", "st"]).equals(
        expected.select(["id", "s", "d", "dt", "st"])
    )
    assert pc.equal(
        theirs["ts"].cast(pa.timestamp("us", tz="UTC")), expected["ts"]
    ).to_pylist().count(True) == (expected.num_rows - expected["ts"].null_count)
    direct = sort(pa.concat_tables([pq.read_table(root / n) for n in names]))
    assert direct.equals(expected)
    # Statistics are there for readers: get_add_actions and file skipping.
    actions = dl.DeltaTable(str(root)).get_add_actions(flatten=True).to_pylist()
    assert sorted(a["num_records"] for a in actions) == [25, 30, 40]
    skipped = dl.DeltaTable(str(root)).to_pyarrow_table(filters=[("id", ">=", 40), ("id", "<", 65)])
    assert sorted(skipped["id"].to_pylist()) == list(range(40, 65))


def test_nanosecond_and_int32_files_fit_long_and_microsecond_columns(tmp_path: Path) -> None:
    schema = pa.schema(
        [("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("f", pa.float64())]
    )
    t = dl.DeltaTable.create(str(tmp_path / "t"), schema)
    ts = [
        dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=dt.timezone.utc),
        dt.datetime(2030, 5, 6, 7, 8, 9, 123_456, tzinfo=dt.timezone.utc),
    ]
    data = pa.table(
        {
            "id": pa.array([3, 1], pa.int32()),
            "ts": pa.array(ts, pa.timestamp("ns", tz="UTC")),
            "f": [float("nan"), 2.0],
        }
    )
    pq.write_table(data, tmp_path / "t" / "ns.parquet")
    (add,) = footer_adds(t, [("ns.parquet", {})])
    want = writer_stats(tmp_path, data.cast(schema))
    got = stats(add)
    assert got["minValues"]["ts"] == "1969-12-31T23:59:59.999Z"
    # pyarrow leaves NaN out of float statistics and does not count it: the footer's bounds
    # are those of the numbers (deltalog's writer, seeing the NaN, writes none; deltalog's
    # skipping never trusts a float maximum to exclude NaN).
    assert "f" not in want["minValues"]
    assert (got["minValues"]["f"], got["maxValues"]["f"]) == (2.0, 2.0)
    assert without(got, "minValues.f", "maxValues.f") == want
    t.transaction(operation="WRITE").add_actions([add]).commit()
    assert (
        dl.DeltaTable(str(tmp_path / "t")).to_pyarrow_table().sort_by("id")["ts"].to_pylist()
        == ts[::-1]
    )


def test_partitioned_files_get_the_callers_values(tmp_path: Path) -> None:
    schema = pa.schema(
        [("id", pa.int64()), ("v", pa.string()), ("p", pa.string()), ("n", pa.int32())]
    )
    root = tmp_path / "t"
    t = dl.DeltaTable.create(str(root), schema, partition_by=["p", "n"])
    layout = {
        ("a b", "1"): pa.table({"id": [1, 2], "v": ["x", "y"]}),
        ("a b", "2"): pa.table(
            {"id": [3], "v": [None]}, schema=pa.schema([("id", pa.int64()), ("v", pa.string())])
        ),
        (None, "1"): pa.table({"id": [4, 5, 6], "v": ["q", "r", "s"]}),
    }
    files = []
    for (p, n), data in layout.items():
        directory = root / f"p={p if p is not None else '__HIVE_DEFAULT_PARTITION__'}" / f"n={n}"
        directory.mkdir(parents=True)
        pq.write_table(data, directory / "part-0.parquet")
        files.append((str((directory / "part-0.parquet").relative_to(root)), {"p": p, "n": n}))
    adds = footer_adds(t, files)
    assert adds[0]["add"]["path"] == "p=a%20b/n=1/part-0.parquet"
    assert adds[0]["add"]["partitionValues"] == {"p": "a b", "n": "1"}
    assert adds[2]["add"]["partitionValues"] == {"p": None, "n": "1"}
    assert stats(adds[1]) == {
        "numRecords": 1,
        "minValues": {"id": 3},
        "maxValues": {"id": 3},
        "nullCount": {"id": 0, "v": 1},
    }
    t.transaction(operation="WRITE").add_actions(adds).commit()
    ours = dl.DeltaTable(str(root)).to_pyarrow_table().sort_by("id")
    assert ours.to_pydict() == {
        "id": [1, 2, 3, 4, 5, 6],
        "v": ["x", "y", None, "q", "r", "s"],
        "p": ["a b", "a b", "a b", None, None, None],
        "n": [1, 1, 2, 1, 1, 1],
    }
    theirs = deltalake.DeltaTable(str(root)).to_pyarrow_table().sort_by("id")
    assert theirs.select(["id", "v", "p"]).to_pydict() == ours.select(["id", "v", "p"]).to_pydict()
    assert theirs["n"].to_pylist() == ours["n"].to_pylist()
    assert sorted(
        dl.DeltaTable(str(root)).to_pyarrow_table(filters=[("p", "=", "a b")])["id"].to_pylist()
    ) == [1, 2, 3]
    # A value of the wrong type, a missing column: errors naming the file.
    with pytest.raises(dl.InvalidArgumentError, match=r"p=a b/n=1/part-0\.parquet.*not a valid"):
        footer_adds(t, [(files[0][0], {"p": "a b", "n": "one"})])
    with pytest.raises(dl.InvalidArgumentError, match=r"no value for partition column"):
        footer_adds(t, [(files[0][0], {"p": "a b"})])


def test_bad_files_are_named_in_typed_errors(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = dl.DeltaTable.create(str(root), pa.schema([("id", pa.int64()), ("s", pa.string())]))
    pq.write_table(pa.table({"id": [1], "s": ["a"]}), root / "good.parquet")
    (root / "data.parquet").write_text("id,s\n1,a\n")
    pq.write_table(pa.table({"id": ["1"], "s": ["a"]}), root / "typed.parquet")
    with pytest.raises(dl.DataFileNotFoundError) as missing:
        footer_adds(t, [("good.parquet", {}), ("gone.parquet", {})])
    assert missing.value.file == "gone.parquet"
    with pytest.raises(dl.CorruptDataFileError, match="not a readable parquet file") as csv:
        footer_adds(t, [("data.parquet", {})])
    assert csv.value.file == "data.parquet"
    with pytest.raises(dl.CorruptDataFileError, match='column "id" does not fit') as typed:
        footer_adds(t, [("typed.parquet", {})])
    assert typed.value.file == "typed.parquet"
    with pytest.raises(dl.InvalidArgumentError, match="relative"):
        footer_adds(t, [(str(root / "good.parquet"), {})])
    # Nothing was committed by any of this.
    assert dl.DeltaTable(str(root)).version() == 0


def test_column_mapped_table_takes_files_with_physical_names(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    root = tmp_path / "t"
    t = dl.DeltaTable.create(str(root), schema, configuration={"delta.columnMapping.mode": "name"})
    physical = t.physical_schema()
    data = pa.table({"id": [5, 6], "name": ["e", None]})
    pq.write_table(data.rename_columns(physical.names), root / "m.parquet")
    (add,) = footer_adds(t, [("m.parquet", {})])
    assert set(stats(add)["minValues"]) == set(physical.names)
    t.transaction(operation="WRITE").add_actions([add]).commit()
    assert dl.DeltaTable(str(root)).to_pyarrow_table().sort_by("id").equals(data)
    # A file with the logical names holds none of the table's columns.
    pq.write_table(data, root / "logical.parquet")
    with pytest.raises(dl.CorruptDataFileError, match="not a data column"):
        footer_adds(t, [("logical.parquet", {})])


def test_spark_written_files(spark: Any, tmp_path: Path) -> None:
    """Spark's native writer: INT96 timestamps by default (no timestamp bounds, still read
    right), int64 microseconds when asked (bounds equal deltalog's writer's)."""
    from pyspark.sql import functions as F

    df = spark.range(0, 50).select(
        F.col("id"),
        F.when(F.col("id") % 7 == 3, None)
        .otherwise(F.concat(F.lit("s"), F.col("id").cast("string")))
        .alias("s"),
        F.when(F.col("id") % 5 == 1, None)
        .otherwise(F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 1_000_001))
        .alias("ts"),
        (F.col("id") / 4).cast("decimal(10,2)").alias("d"),
        F.date_add(F.lit("2024-02-28").cast("date"), F.col("id").cast("int")).alias("day"),
        F.struct((-F.col("id")).alias("x"), F.col("id").cast("string").alias("y")).alias("st"),
    )
    arrow_schema = pa.schema(
        [
            ("id", pa.int64()),
            ("s", pa.string()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("d", pa.decimal128(10, 2)),
            ("day", pa.date32()),
            ("st", pa.struct([("x", pa.int64()), ("y", pa.string())])),
        ]
    )
    for output, bounded in (("INT96", False), ("TIMESTAMP_MICROS", True)):
        root = tmp_path / output
        t = dl.DeltaTable.create(str(root), arrow_schema)
        spark.conf.set("spark.sql.parquet.outputTimestampType", output)
        try:
            df.coalesce(1).write.mode("append").parquet(str(root))
        finally:
            spark.conf.unset("spark.sql.parquet.outputTimestampType")
        names = sorted(p.name for p in root.glob("part-*.parquet"))
        assert len(names) == 1
        ts_type = pq.ParquetFile(root / names[0]).schema.column(2).physical_type
        assert ts_type == ("INT64" if bounded else "INT96")
        (add,) = footer_adds(t, [(n, {}) for n in names])
        got = stats(add)
        t.transaction(operation="WRITE").add_actions([add]).commit()
        ours = dl.DeltaTable(str(root)).to_pyarrow_table().sort_by("id")
        expected = pa.Table.from_pylist(df.toArrow().to_pylist(), schema=arrow_schema).sort_by("id")
        assert ours.equals(expected), output
        want = writer_stats(tmp_path, expected)
        if bounded:
            assert got == want
        else:
            assert got == without(want, "minValues.ts", "maxValues.ts")
            assert got["nullCount"]["ts"] == 10
