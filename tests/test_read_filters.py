"""Filters: partition pruning, file skipping by statistics, and exact row filtering.

Tables are written by the `deltalake` package (an independent writer) in several appends, so
that files have distinct partitions and statistics. Results are checked against pyarrow
evaluating the same predicate over the whole table (pyarrow's Kleene `&`/`|`/`~` and null
comparisons are SQL's), and skipping is checked by counting the files a scan reads.
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import deltalog as dl
from deltalog import col

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        ("part", pa.string()),
        ("x", pa.int64()),
        ("y", pa.float64()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("s", pa.string()),
        ("dec", pa.decimal128(10, 2)),
    ]
)


def _chunk(i: int) -> pa.Table:
    """Rows 10*i .. 10*i+9: x rises with i, so each append's file has its own x range."""
    rows = []
    for j in range(10):
        n = 10 * i + j
        rows.append(
            {
                "part": ["a", "b", None][i % 3],
                "x": n if j != 3 else None,
                "y": float(n) / 2 if j != 5 else None,
                "d": dt.date(2024, 1, 1) + dt.timedelta(days=n),
                "ts": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=n, microseconds=n),
                "s": f"s{n:03}" if j != 7 else None,
                "dec": decimal.Decimal(n) / 4,
            }
        )
    return pa.Table.from_pylist(rows, schema=SCHEMA)


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("filters") / "t"
    for i in range(6):
        deltalake.write_deltalake(str(path), _chunk(i), partition_by=["part"], mode="append")
    return path


@pytest.fixture(scope="module")
def everything(table_path: Path) -> pa.Table:
    return dl.DeltaTable(table_path).to_pyarrow_table()


def _sorted(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: (r["x"] is None, r["x"] or 0, r["s"] or ""))


def _reference(everything: pa.Table, expression: pc.Expression) -> pa.Table:
    return everything.filter(expression)


CASES: list[tuple[Any, pc.Expression]] = [
    (col("x") > 25, pc.field("x") > 25),
    (col("x") == 7, pc.field("x") == 7),
    (col("x") != 7, pc.field("x") != 7),
    (col("part") == "a", pc.field("part") == "a"),
    (col("part").is_null(), pc.field("part").is_null()),
    (
        col("part").is_not_null() & (col("y") <= 3.0),
        ~pc.field("part").is_null() & (pc.field("y") <= 3.0),
    ),
    (col("d") >= dt.date(2024, 2, 1), pc.field("d") >= pa.scalar(dt.date(2024, 2, 1))),
    (col("d") < "2024-01-05", pc.field("d") < pa.scalar(dt.date(2024, 1, 5))),
    (
        col("ts") > dt.datetime(2024, 1, 3, 1, tzinfo=UTC),
        pc.field("ts")
        > pa.scalar(dt.datetime(2024, 1, 3, 1, tzinfo=UTC), pa.timestamp("us", "UTC")),
    ),
    (col("s").is_in(["s001", "s052", "zzz"]), pc.field("s").isin(["s001", "s052", "zzz"])),
    (
        ~col("x").is_in([1, 2, 3]),
        ~((pc.field("x") == 1) | (pc.field("x") == 2) | (pc.field("x") == 3)),
    ),
    (
        col("dec") >= decimal.Decimal("12.5"),
        pc.field("dec") >= pa.scalar(decimal.Decimal("12.5"), pa.decimal128(10, 2)),
    ),
    ((col("x") < 5) | (col("part") == "b"), (pc.field("x") < 5) | (pc.field("part") == "b")),
    (col("x") == None, pc.field("x") == pa.scalar(None, pa.int64())),  # noqa: E711
]


@pytest.mark.parametrize(("predicate", "expected"), CASES, ids=[repr(c[0]) for c in CASES])
def test_filters_match_pyarrow(
    table_path: Path, everything: pa.Table, predicate: Any, expected: pc.Expression
) -> None:
    got = dl.DeltaTable(table_path).to_pyarrow_table(filter=predicate)
    assert got.schema == everything.schema
    assert _sorted(got) == _sorted(_reference(everything, expected))


def test_partition_pruning_and_file_skipping(table_path: Path) -> None:
    t = dl.DeltaTable(table_path)
    assert t.scan().num_files == 6
    # part = 'a' lives in appends 0 and 3.
    scan = t.scan(filter=col("part") == "a")
    assert (scan.num_files, scan.files_considered) == (2, 6)
    # x > 45 only in appends 4 and 5 (x in [40, 49] and [50, 59]); x = 45 only in append 4.
    assert t.scan(filter=col("x") > 45).num_files == 2
    assert t.scan(filter=col("x") == 45).num_files == 1
    assert t.scan(filter=col("x") > 1000).num_files == 0
    assert t.to_pyarrow_table(filter=col("x") > 1000).num_rows == 0
    # Every file has a null in x, none is all-null.
    assert t.scan(filter=col("x").is_null()).num_files == 6
    # OR of a partition and a data condition: the union of both.
    assert t.scan(filter=(col("part") == "b") | (col("x") >= 50)).num_files == 3


def test_dnf_lists_equal_expressions(table_path: Path) -> None:
    t = dl.DeltaTable(table_path)
    conj = t.to_pyarrow_table(filter=[("part", "=", "a"), ("x", ">=", 5)])
    expr = t.to_pyarrow_table(filter=(col("part") == "a") & (col("x") >= 5))
    assert _sorted(conj) == _sorted(expr)
    disj = t.to_pyarrow_table(filter=[[("part", "=", "a")], [("x", "in", [52, 53])]])
    expr = t.to_pyarrow_table(filter=(col("part") == "a") | col("x").is_in([52, 53]))
    assert _sorted(disj) == _sorted(expr)
    nulls = t.to_pyarrow_table(filter=[("part", "=", None)])
    assert set(nulls.column("part").to_pylist()) == {None}
    not_in = t.to_pyarrow_table(filter=[("part", "not in", ["a"])])
    assert set(not_in.column("part").to_pylist()) == {"b"}


def test_filter_columns_need_not_be_selected(table_path: Path, everything: pa.Table) -> None:
    t = dl.DeltaTable(table_path)
    got = t.to_pyarrow_table(columns=["s"], filter=(col("x") > 30) & (col("part") == "a"))
    assert got.column_names == ["s"]
    ref = everything.filter((pc.field("x") > 30) & (pc.field("part") == "a")).select(["s"])
    assert sorted(got.column("s").to_pylist(), key=str) == sorted(
        ref.column("s").to_pylist(), key=str
    )


def test_bad_filters_are_clear_errors(table_path: Path) -> None:
    t = dl.DeltaTable(table_path)
    with pytest.raises(ValueError, match="unknown column"):
        t.to_pyarrow_table(filter=col("nope") == 1)
    with pytest.raises(ValueError, match="cannot be compared"):
        t.to_pyarrow_table(filter=col("x") == True)  # noqa: E712
    with pytest.raises(ValueError, match=r"column \"d\": the text \"yesterday\" is not a Date32"):
        t.to_pyarrow_table(filter=col("d") == "yesterday")
    with pytest.raises(ValueError, match="operator"):
        t.to_pyarrow_table(filter=[("x", "~", 1)])
    with pytest.raises(TypeError):
        t.to_pyarrow_table(filter="x > 1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        bool(col("x") == 1)


# -- property: random predicates agree with pyarrow ------------------------------------------

_COLUMNS = {
    "x": st.integers(-5, 65),
    "y": st.floats(-1, 31, allow_nan=False),
    "part": st.sampled_from(["a", "b", "c"]),
    "s": st.sampled_from(["s000", "s013", "s040", "s599", "t"]),
}
_OPS = ["=", "!=", "<", "<=", ">", ">="]


def _leaf() -> st.SearchStrategy[tuple[Any, pc.Expression]]:
    def build(column: str, op: str, value: Any, kind: int) -> tuple[Any, pc.Expression]:
        if kind == 0:
            return col(column).is_null(), pc.field(column).is_null()
        if kind == 1:
            values = [value]
            ref = pc.field(column) == value
            return col(column).is_in(values), ref
        ours = col(column)._cmp(op, value)
        f = pc.field(column)
        ref = {
            "=": f == value,
            "!=": f != value,
            "<": f < value,
            "<=": f <= value,
            ">": f > value,
            ">=": f >= value,
        }[op]
        return ours, ref

    return st.sampled_from(sorted(_COLUMNS)).flatmap(
        lambda c: st.builds(
            build,
            st.just(c),
            st.sampled_from(_OPS),
            _COLUMNS[c],
            st.integers(0, 5),
        )
    )


def _combine(children: st.SearchStrategy[tuple[Any, pc.Expression]]) -> Any:
    pair = st.tuples(children, children)
    return st.one_of(
        pair.map(lambda p: (p[0][0] & p[1][0], p[0][1] & p[1][1])),
        pair.map(lambda p: (p[0][0] | p[1][0], p[0][1] | p[1][1])),
        children.map(lambda c: (~c[0], ~c[1])),
    )


PREDICATES = st.recursive(_leaf(), _combine, max_leaves=5)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(case=PREDICATES)
def test_random_predicates_agree_with_pyarrow(
    table_path: Path, everything: pa.Table, case: tuple[Any, pc.Expression]
) -> None:
    ours, reference = case
    got = dl.DeltaTable(table_path).to_pyarrow_table(filter=ours)
    assert _sorted(got) == _sorted(everything.filter(reference))


def test_checkpoint_stats_parsed_drive_skipping(tmp_path: Path) -> None:
    """A checkpoint written with `delta.checkpoint.writeStatsAsJson=false` keeps statistics
    only in `add.stats_parsed` ("Checkpoint Schema"); skipping and get_add_actions use them."""
    import json

    import pyarrow.parquet as pq

    from conftest import CHECKPOINT_SCHEMA, _for_checkpoint, metadata, protocol

    root = tmp_path / "t"
    (root / "_delta_log").mkdir(parents=True)
    sizes = []
    for i in range(3):
        path = root / f"f{i}.parquet"
        pq.write_table(pa.table({"x": pa.array(range(10 * i, 10 * i + 10), pa.int64())}), path)
        sizes.append(path.stat().st_size)
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": "x", "type": "long", "nullable": True, "metadata": {}}],
        }
    )
    x = pa.struct([("x", pa.int64())])
    stats = pa.struct(
        [("numRecords", pa.int64()), ("minValues", x), ("maxValues", x), ("nullCount", x)]
    )
    add_type = pa.struct(
        [
            ("path", pa.string()),
            ("partitionValues", pa.map_(pa.string(), pa.string())),
            ("size", pa.int64()),
            ("modificationTime", pa.int64()),
            ("dataChange", pa.bool_()),
            ("stats_parsed", stats),
        ]
    )
    checkpoint_schema = pa.schema(
        [
            ("protocol", CHECKPOINT_SCHEMA.field("protocol").type),
            ("metaData", CHECKPOINT_SCHEMA.field("metaData").type),
            ("add", add_type),
        ]
    )
    rows: list[dict[str, Any]] = [
        {**_for_checkpoint(protocol()), "metaData": None, "add": None},
        {"protocol": None, **_for_checkpoint(metadata(schema_string=schema)), "add": None},
    ]
    for i in range(3):
        add = {
            "path": f"f{i}.parquet",
            "partitionValues": [],
            "size": sizes[i],
            "modificationTime": 1_700_000_000_000,
            "dataChange": True,
            "stats_parsed": {
                "numRecords": 10,
                "minValues": {"x": 10 * i},
                "maxValues": {"x": 10 * i + 9},
                "nullCount": {"x": 0},
            },
        }
        rows.append({"protocol": None, "metaData": None, "add": add})
    log = root / "_delta_log"
    pq.write_table(
        pa.Table.from_pylist(rows, schema=checkpoint_schema),
        log / "00000000000000000000.checkpoint.parquet",
    )
    (log / "_last_checkpoint").write_text(json.dumps({"version": 0, "size": 5}))
    t = dl.DeltaTable(root)
    adds = t.get_add_actions(flatten=True).sort_by("path")
    assert adds.column("min.x").to_pylist() == [0, 10, 20]
    assert adds.column("num_records").to_pylist() == [10, 10, 10]
    assert t.scan(filter=col("x") >= 25).num_files == 1
    assert t.scan(filter=col("x").is_null()).num_files == 0
    got = t.to_pyarrow_table(filter=(col("x") >= 8) & (col("x") < 12))
    assert sorted(got.column("x").to_pylist()) == [8, 9, 10, 11]
