"""The SQL functions of DELETE / UPDATE / MERGE / CHECK / generated columns (issue #19), each
checked against Spark SQL itself: every expression is computed by Spark (``SELECT expr FROM
view``) and by deltalog (an UPDATE that stores it in a column of the expression's type), row by
row, over the same rows. docs/sql.md lists the functions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from deltalog.exceptions import DeltaError

UTC = dt.timezone.utc

ROWS = pa.table(
    {
        "id": pa.array(range(8), pa.int64()),
        "s": pa.array(["  Ab c ", "hello", None, "x-1", "Straße", "", "a.b.c", "2026-02-28"]),
        "n": pa.array([1, -2, None, 15, 0, 7, 250, -349], pa.int64()),
        "f": pa.array([1.25, -2.5, None, 2.675, 0.5, -0.5, 1e10, 3.14159]),
        "d": pa.array(
            [
                dt.date(2026, 1, 31),
                dt.date(2024, 2, 29),
                None,
                dt.date(1999, 12, 31),
                dt.date(2026, 11, 25),
                dt.date(1970, 1, 1),
                dt.date(2000, 3, 1),
                dt.date(2026, 5, 15),
            ]
        ),
        "ts": pa.array(
            [
                dt.datetime(2026, 1, 31, 23, 59, 58, 123456, tzinfo=UTC),
                dt.datetime(2024, 2, 29, 12, 0, tzinfo=UTC),
                None,
                dt.datetime(1999, 12, 31, 0, 30, 15, tzinfo=UTC),
                dt.datetime(2026, 11, 25, 8, 5, 3, tzinfo=UTC),
                dt.datetime(1970, 1, 1, tzinfo=UTC),
                dt.datetime(2000, 3, 1, 1, 2, 3, tzinfo=UTC),
                dt.datetime(2026, 5, 15, 18, 45, tzinfo=UTC),
            ],
            pa.timestamp("us", "UTC"),
        ),
    }
)

# (expression, result column type)
CASES: list[tuple[str, pa.DataType]] = [
    ("date_add(d, 3)", pa.date32()),
    ("date_sub(d, 40)", pa.date32()),
    ("datediff(d, DATE '2000-01-01')", pa.int32()),
    ("datediff(ts, d)", pa.int32()),
    ("to_date(ts)", pa.date32()),
    ("to_date(CAST(d AS STRING), 'yyyy-MM-dd')", pa.date32()),
    (
        "to_date(concat(substring(CAST(d AS STRING), 9, 2), '/', "
        "substring(CAST(d AS STRING), 6, 2), '/', substring(CAST(d AS STRING), 1, 4)), "
        "'dd/MM/yyyy')",
        pa.date32(),
    ),
    ("date_trunc('month', ts)", pa.timestamp("us", "UTC")),
    ("date_trunc('year', ts)", pa.timestamp("us", "UTC")),
    ("date_trunc('quarter', ts)", pa.timestamp("us", "UTC")),
    ("date_trunc('week', ts)", pa.timestamp("us", "UTC")),
    ("date_trunc('hour', ts)", pa.timestamp("us", "UTC")),
    ("year(d) * 10000 + month(d) * 100 + day(d)", pa.int32()),
    ("hour(ts) * 3600 + minute(ts) * 60 + second(ts)", pa.int32()),
    ("substring(s, 2, 3)", pa.string()),
    ("substring(s, -3)", pa.string()),
    ("substr(s, 0, 2)", pa.string()),
    ("substring(s, 3)", pa.string()),
    ("trim(s)", pa.string()),
    ("ltrim(s)", pa.string()),
    ("rtrim(s)", pa.string()),
    ("lower(s)", pa.string()),
    ("upper(s)", pa.string()),
    ("concat(s, '!', s)", pa.string()),
    ("coalesce(s, 'none')", pa.string()),
    ("round(f, 2)", pa.float64()),
    ("round(f)", pa.float64()),
    ("round(n, -1)", pa.int64()),
    ("round(n, -2)", pa.int64()),
    ("abs(n)", pa.int64()),
    ("abs(f)", pa.float64()),
    ("s <=> 'hello'", pa.bool_()),
    ("n <=> NULL", pa.bool_()),
    ("s LIKE 'a%'", pa.bool_()),
    ("s RLIKE '^[a-z]+$'", pa.bool_()),
    ("s REGEXP '[0-9]'", pa.bool_()),
    ("s NOT RLIKE 'l+'", pa.bool_()),
    ("d + INTERVAL 1 MONTH", pa.date32()),
    ("d - INTERVAL '1' YEAR", pa.date32()),
    ("d + INTERVAL 10 DAYS", pa.date32()),
    ("ts + INTERVAL 2 HOURS", pa.timestamp("us", "UTC")),
    ("ts - INTERVAL '90' MINUTES", pa.timestamp("us", "UTC")),
    ("ts + INTERVAL 1 WEEK", pa.timestamp("us", "UTC")),
]


def spark_values(spark: Any, view: str, expr: str) -> list[Any]:
    rows = spark.sql(f"SELECT id, {expr} AS r FROM {view} ORDER BY id").collect()
    return [r["r"] for r in rows]


def deltalog_values(path: Path, expr: str, type_: pa.DataType) -> list[Any]:
    data = ROWS.append_column("r", pa.nulls(ROWS.num_rows, type_))
    dl.write_table(str(path), data, mode="overwrite", schema_mode="overwrite")
    dl.DeltaTable(str(path)).update({"r": expr})
    out = dl.DeltaTable(str(path)).to_pyarrow_table().sort_by("id")
    return out.column("r").to_pylist()


def normalized(values: list[Any]) -> list[Any]:
    out = []
    for v in values:
        if isinstance(v, dt.datetime):
            v = (
                v.replace(tzinfo=None)
                if v.tzinfo is None
                else v.astimezone(UTC).replace(tzinfo=None)
            )
        if isinstance(v, float):
            v = round(v, 9)
        out.append(v)
    return out


def test_functions_agree_with_spark_sql(spark: Any, tmp_path: Path) -> None:
    frame = spark.createDataFrame(ROWS.to_pandas())
    frame.createOrReplaceTempView("sqlfn")
    mismatches = []
    for i, (expr, type_) in enumerate(CASES):
        theirs = normalized(spark_values(spark, "sqlfn", expr))
        ours = normalized(deltalog_values(tmp_path / f"t{i}", expr, type_))
        if theirs != ours:
            mismatches.append((expr, theirs, ours))
    assert not mismatches, "\n".join(f"{e}: spark {t} deltalog {o}" for e, t, o in mismatches)


def test_current_date_and_timestamp(tmp_path: Path) -> None:
    path = tmp_path / "now"
    data = pa.table(
        {"id": [1, 2], "d": pa.nulls(2, pa.date32()), "t": pa.nulls(2, pa.timestamp("us", "UTC"))}
    )
    dl.write_table(str(path), data)
    before = dt.datetime.now(UTC)
    dl.DeltaTable(str(path)).update({"d": "current_date()", "t": "current_timestamp"})
    after = dt.datetime.now(UTC)
    out = dl.DeltaTable(str(path)).to_pyarrow_table()
    assert set(out.column("d").to_pylist()) <= {before.date(), after.date()}
    for t in out.column("t").to_pylist():
        assert before - dt.timedelta(seconds=1) <= t <= after + dt.timedelta(seconds=1)
    # In a predicate: rows older than a week.
    t = dl.DeltaTable(str(path))
    assert t.delete("t < current_timestamp() - INTERVAL 7 DAYS")["num_deleted_rows"] == 0
    assert t.delete("d <= current_date")["num_deleted_rows"] == 2


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("date_add(d)", "takes 2"),
        ("round(f, n)", "integer literal"),
        ("date_trunc('fortnight', ts)", "date_trunc unit"),
        ("to_date(s, 'yyyy-QQ')", "pattern letter"),
        ("s RLIKE '('", "regular expression"),
        ("d + INTERVAL 1 DAY TO HOUR", "not supported"),
        ("substring(s, 'x')", "integer"),
    ],
)
def test_bad_calls_are_errors(tmp_path: Path, expr: str, message: str) -> None:
    path = tmp_path / "bad"
    dl.write_table(str(path), ROWS.append_column("r", pa.nulls(ROWS.num_rows, pa.string())))
    t = dl.DeltaTable(str(path))
    with pytest.raises(DeltaError, match=message):
        t.update({"r": f"CAST({expr} AS STRING)"})
    assert t.version() == 0


def test_functions_in_check_constraints_and_generated_columns(tmp_path: Path) -> None:
    path = tmp_path / "rules"
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("s", pa.string()),
            pa.field(
                "key",
                pa.string(),
                metadata={"delta.generationExpression": "upper(substring(trim(s), 1, 2))"},
            ),
        ]
    )
    dl.write_table(
        str(path),
        pa.table({"id": [1], "s": ["  abc"]})
        .cast(schema.remove(2))
        .append_column(schema.field(2), pa.array(["AB"])),
    )
    t = dl.DeltaTable(str(path))
    t.alter.add_constraint({"short": "length(trim(s)) <= 5"})
    dl.write_table(str(path), pa.table({"id": [2], "s": ["xyz "]}), mode="append")
    rows = sorted(dl.DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [r["key"] for r in rows] == ["AB", "XY"]
    with pytest.raises(DeltaError, match="short"):
        dl.write_table(str(path), pa.table({"id": [3], "s": ["toolong"]}), mode="append")
