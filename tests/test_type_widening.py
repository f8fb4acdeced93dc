"""Type widening writes: ``alter.change_column_type`` (upstream Delta protocol, "Type
Widening"), and removing the feature again with ``alter.drop_feature``.

The evidence is independent of deltalog's own reader where it can be: the tables start as
``deltalake`` writes them, the data files written before a change are read back with pyarrow to
show they were not rewritten, the log is checked against the upstream format of
``delta.typeChanges``, and once the feature is dropped ``deltalake`` (which cannot read
``typeWidening`` tables) reads the same rows as deltalog.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from deltalog.exceptions import FeatureDropWaitError, InvalidArgumentError
from deltalog.table.alter.alterer import _widening_allowed

D = decimal.Decimal


def initial() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "f": pa.array([1.5, 2.5], pa.float32()),
            "d": pa.array([D("1.25"), None], pa.decimal128(5, 2)),
            "day": pa.array([dt.date(2024, 1, 2), dt.date(2024, 1, 3)], pa.date32()),
            "tags": pa.array([[1, 2], []], pa.list_(pa.int16())),
            "m": pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int8())),
            "s": pa.array([{"x": 1}, {"x": 2}], pa.struct([("x", pa.int16())])),
        }
    )


def widened(path: Path) -> dl.DeltaTable:
    if not (path / "_delta_log").exists():
        deltalake.write_deltalake(str(path), initial())
    t = dl.DeltaTable(str(path))
    t.alter.set_properties({"delta.enableTypeWidening": "true"})
    t.alter.change_column_type("id", "long")
    t.alter.change_column_type("f", pa.float64())
    t.alter.change_column_type("d", "decimal(10,4)")
    t.alter.change_column_type("day", "timestamp_ntz")
    t.alter.change_column_type("tags.element", "integer")
    t.alter.change_column_type("m.value", "short")
    t.alter.change_column_type("s.x", "long")
    t.alter.change_column_type("id", "decimal(22,2)")
    return t


def theirs(path: Path) -> list[dict[str, Any]]:
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    return pa.table(query.execute("SELECT * FROM t ORDER BY id").read_all()).to_pylist()


def test_changes_are_recorded_as_delta_spark_records_them_and_no_file_is_rewritten(
    tmp_path: Path,
) -> None:
    deltalake.write_deltalake(str(tmp_path), initial())
    files_before = sorted(p.name for p in tmp_path.glob("*.parquet"))
    t = widened(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.parquet")) == files_before
    assert "typeWidening" in (t.protocol().reader_features or [])
    assert "typeWidening" in (t.protocol().writer_features or [])
    assert "timestampNtz" in (t.protocol().writer_features or [])
    # The log: the schema of the last commit, in the upstream "Type Change Metadata" form.
    last = (tmp_path / "_delta_log" / f"{t.version():020}.json").read_text().splitlines()
    meta = next(json.loads(line)["metaData"] for line in last if "metaData" in line)
    fields = {f["name"]: f for f in json.loads(meta["schemaString"])["fields"]}
    assert fields["id"]["type"] == "decimal(22,2)"
    assert fields["id"]["metadata"]["delta.typeChanges"] == [
        {"toType": "long", "fromType": "integer"},
        {"toType": "decimal(22,2)", "fromType": "long"},
    ]
    assert fields["tags"]["type"]["elementType"] == "integer"
    assert fields["tags"]["metadata"]["delta.typeChanges"] == [
        {"toType": "integer", "fromType": "short", "fieldPath": "element"}
    ]
    assert fields["m"]["metadata"]["delta.typeChanges"] == [
        {"toType": "short", "fromType": "byte", "fieldPath": "value"}
    ]
    nested = fields["s"]["type"]["fields"][0]
    assert nested["type"] == "long"
    assert nested["metadata"]["delta.typeChanges"] == [{"toType": "long", "fromType": "short"}]
    assert "delta.typeChanges" not in fields["s"]["metadata"]
    assert fields["day"]["type"] == "timestamp_ntz"
    # The old file still holds the narrow types (pyarrow reads it directly) ...
    (old,) = tmp_path.glob("*.parquet")
    assert pq.read_schema(old).field("id").type == pa.int32()
    # ... and deltalog reads them as the wide ones.
    rows = t.to_pyarrow_table()
    assert rows.schema.field("id").type == pa.decimal128(22, 2)
    assert rows.schema.field("day").type == pa.timestamp("us")
    assert rows.to_pylist()[0] == {
        "id": D("1.00"),
        "f": 1.5,
        "d": D("1.2500"),
        "day": dt.datetime(2024, 1, 2),
        "tags": [1, 2],
        "m": [("a", 1)],
        "s": {"x": 1},
    }


def test_wide_values_are_written_and_old_files_stay_readable_through_dml(tmp_path: Path) -> None:
    t = widened(tmp_path)
    dl.write_table(
        str(tmp_path),
        pa.table(
            {
                "id": pa.array([D("12345678901234567890.12")], pa.decimal128(22, 2)),
                "f": [1e300],
                "d": pa.array([D("123456.1234")], pa.decimal128(10, 4)),
                "day": pa.array([dt.datetime(2024, 5, 1, 12, 30)], pa.timestamp("us")),
                "tags": pa.array([[2**20]], pa.list_(pa.int32())),
                "m": pa.array([[("z", 300)]], pa.map_(pa.string(), pa.int16())),
                "s": pa.array([{"x": 2**40}], pa.struct([("x", pa.int64())])),
            }
        ),
        mode="append",
    )
    t = dl.DeltaTable(str(tmp_path))
    assert t.to_pyarrow_table(filter=dl.col("f") > 1e299).column("tags").to_pylist() == [[2**20]]
    t.update({"f": "f * 2"}, "id = 2")
    t.delete("id = 1")
    rows = sorted(dl.DeltaTable(str(tmp_path)).to_pyarrow_table().to_pylist(), key=str)
    assert [(r["id"], r["f"], r["s"]) for r in rows] == [
        (D("12345678901234567890.12"), 1e300, {"x": 2**40}),
        (D("2.00"), 5.0, {"x": 2}),
    ]


def test_refusals(tmp_path: Path) -> None:
    deltalake.write_deltalake(str(tmp_path / "a"), initial())
    t = dl.DeltaTable(str(tmp_path / "a"))
    with pytest.raises(InvalidArgumentError, match=r"delta\.enableTypeWidening"):
        t.alter.change_column_type("id", "long")
    t.alter.set_properties({"delta.enableTypeWidening": "true"})
    version = t.version()
    for column, to, match in [
        ("id", "short", "not a type widening"),
        ("f", "decimal(20,2)", "not a type widening"),
        ("d", "decimal(6,4)", "not a type widening"),
        ("id", "string", "not a type a column can widen to"),
        ("id", "integer", "already of type"),
        ("tags", "long", "only the types of primitive"),
        ("nope", "long", "no column"),
        ("tags.key", "long", "does not name a field"),
    ]:
        with pytest.raises(InvalidArgumentError, match=match):
            t.alter.change_column_type(column, to)
    t.alter.add_constraint({"positive": "id > 0"})
    with pytest.raises(InvalidArgumentError, match=r"id > 0"):
        t.alter.change_column_type("id", "long")
    assert t.version() == version + 1  # only the constraint was committed
    # A date partition column keeps its type: its stored values are dates.
    dl.write_table(
        str(tmp_path / "p"),
        pa.table({"day": pa.array([dt.date(2024, 1, 1)]), "v": pa.array([1], pa.int32())}),
        partition_by=["day"],
        configuration={"delta.enableTypeWidening": "true"},
    )
    p = dl.DeltaTable(str(tmp_path / "p"))
    with pytest.raises(InvalidArgumentError, match="partition"):
        p.alter.change_column_type("day", "timestamp_ntz")
    p.alter.change_column_type("v", "long")
    assert p.to_pyarrow_table().to_pylist() == [{"day": dt.date(2024, 1, 1), "v": 1}]


_CANDIDATES = [
    "byte",
    "short",
    "integer",
    "long",
    "float",
    "double",
    "date",
    "timestamp_ntz",
    "string",
    "decimal(9,0)",
    "decimal(10,0)",
    "decimal(11,1)",
    "decimal(11,2)",
    "decimal(12,2)",
    "decimal(12,3)",
    "decimal(19,0)",
    "decimal(20,0)",
    "decimal(21,2)",
    "decimal(22,2)",
]
# Integers widen to decimals with at least 10 integer digits (long: 20).
_INT_DECIMALS = {"decimal(10,0)", "decimal(11,1)", "decimal(12,2)", "decimal(19,0)"} | {
    "decimal(20,0)",
    "decimal(21,2)",
    "decimal(22,2)",
}


@pytest.mark.parametrize(
    ("source", "allowed"),
    [
        # Delta 4.0's table ("Supported type changes" of the type widening documentation).
        ("byte", {"short", "integer", "long", "double"} | _INT_DECIMALS),
        ("short", {"integer", "long", "double"} | _INT_DECIMALS),
        ("integer", {"long", "double"} | _INT_DECIMALS),
        ("long", {"decimal(20,0)", "decimal(22,2)"}),
        ("float", {"double"}),
        ("double", set()),
        # decimal(p, s) -> decimal(p + k1, s + k2) with k1 >= k2 >= 0.
        (
            "decimal(10,1)",
            {"decimal(11,1)", "decimal(11,2)", "decimal(12,2)", "decimal(12,3)"}
            | {"decimal(21,2)", "decimal(22,2)"},
        ),
        ("date", {"timestamp_ntz"}),
        ("timestamp_ntz", set()),
        ("string", set()),
    ],
)
def test_the_widenings_allowed_are_delta_4_0s(source: str, allowed: set[str]) -> None:
    got = {c for c in _CANDIDATES if c != source and _widening_allowed(source, c)}
    assert got == allowed


def test_dropping_the_feature_rewrites_the_narrow_files_and_deltalake_then_reads_it(
    tmp_path: Path,
) -> None:
    t = widened(tmp_path)
    dl.write_table(
        str(tmp_path),
        pa.table(
            {
                "id": pa.array([D("3.50")], pa.decimal128(22, 2)),
                "f": [0.1],
                "d": pa.array([D("99999.9999")], pa.decimal128(10, 4)),
                "day": pa.array([dt.datetime(2024, 5, 1, 12, 30)], pa.timestamp("us")),
                "tags": pa.array([[2**20]], pa.list_(pa.int32())),
                "m": pa.array([[("z", 300)]], pa.map_(pa.string(), pa.int16())),
                "s": pa.array([{"x": 2**40}], pa.struct([("x", pa.int64())])),
            }
        ),
        mode="append",
    )
    expected = sorted(dl.DeltaTable(str(tmp_path)).to_pyarrow_table().to_pylist(), key=str)
    new_file = max(tmp_path.glob("*.parquet"), key=lambda p: p.stat().st_mtime_ns).name
    t = dl.DeltaTable(str(tmp_path))
    with pytest.raises(FeatureDropWaitError) as wait:
        t.alter.drop_feature("typeWidening")
    assert wait.value.feature == "typeWidening"
    # The uses are gone from the current version: the old file was rewritten in the wide
    # types, the file written after the changes was left alone, the metadata is clean.
    t = dl.DeltaTable(str(tmp_path))
    assert "typeWidening" in (t.protocol().reader_features or [])
    assert t.metadata().configuration["delta.enableTypeWidening"] == "false"
    assert "typeChanges" not in t._raw.metadata()["schema_string"]
    assert new_file in t.files()
    (rewritten,) = [f for f in t.files() if f != new_file]
    assert pq.read_schema(tmp_path / rewritten).field("id").type == pa.decimal128(22, 2)
    assert [h["operation"] for h in t.history(3)] == ["SET TBLPROPERTIES", "REORG", "WRITE"]
    # Truncating the history finishes the drop.
    t.alter.set_properties(
        {"delta.dropFeatureTruncateHistory.retentionDuration": "interval 0 seconds"}
    )
    version = t.alter.drop_feature("typeWidening", truncate_history=True)
    t = dl.DeltaTable(str(tmp_path))
    assert t.version() == version
    features = set(t.protocol().reader_features or []) | set(t.protocol().writer_features or [])
    assert "typeWidening" not in features
    assert sorted(p.name for p in (tmp_path / "_delta_log").glob("*.json")) == [
        f"{version:020}.json"
    ]
    assert sorted(t.to_pyarrow_table().to_pylist(), key=str) == expected
    assert sorted(theirs(tmp_path), key=str) == expected


def test_later_schema_changes_keep_the_type_changes_an_array(tmp_path: Path) -> None:
    """Schema changes made in the core (ADD COLUMNS, MERGE schema evolution) rewrite the schema
    through Arrow; ``delta.typeChanges`` must stay a JSON array of objects, as readers parse it."""
    t = widened(tmp_path)
    t.alter.add_columns(pa.field("extra", pa.string()))
    dl.write_table(
        str(tmp_path),
        t.to_pyarrow_table().slice(0, 1).append_column("more", pa.array([1])),
        mode="append",
        schema_mode="merge",
    )
    t = dl.DeltaTable(str(tmp_path))
    last = (tmp_path / "_delta_log" / f"{t.version():020}.json").read_text().splitlines()
    meta = next(json.loads(line)["metaData"] for line in last if "metaData" in line)
    fields = {f["name"]: f for f in json.loads(meta["schemaString"])["fields"]}
    assert fields["id"]["metadata"]["delta.typeChanges"] == [
        {"toType": "long", "fromType": "integer"},
        {"toType": "decimal(22,2)", "fromType": "long"},
    ]
    assert fields["tags"]["metadata"]["delta.typeChanges"][0]["fieldPath"] == "element"
    assert list(fields)[-2:] == ["extra", "more"]


def test_schema_evolution_widens_columns_automatically(tmp_path: Path) -> None:
    """With ``schema_mode="merge"`` on a table that enables type widening, a column the data
    holds in a wider type takes it (Delta Spark's automatic widenings: integers, float to
    double, decimals; not integers to decimal or double, and dates to timestamps only where
    the protocol supports them). Without it, such data is refused."""
    dl.write_table(
        str(tmp_path),
        pa.table(
            {
                "i": pa.array([1], pa.int16()),
                "f": pa.array([1.5], pa.float32()),
                "d": pa.array([D("1.5")], pa.decimal128(4, 1)),
                "n": pa.array([7], pa.int32()),
                "day": pa.array([dt.date(2024, 1, 1)]),
            }
        ),
        configuration={"delta.enableTypeWidening": "true"},
    )
    wide = pa.table(
        {
            "i": pa.array([2**40], pa.int64()),
            "f": [1e300],
            "d": pa.array([D("12345.25")], pa.decimal128(8, 2)),
            "n": pa.array([8], pa.int32()),
            "day": pa.array([dt.date(2024, 1, 2)]),
        }
    )
    with pytest.raises(InvalidArgumentError, match="do not fit"):
        dl.write_table(str(tmp_path), wide, mode="append")
    dl.write_table(str(tmp_path), wide, mode="append", schema_mode="merge")
    t = dl.DeltaTable(str(tmp_path))
    fields = {f["name"]: f for f in json.loads(t._raw.metadata()["schema_string"])["fields"]}
    assert fields["i"]["type"] == "long"
    assert fields["i"]["metadata"]["delta.typeChanges"] == [{"toType": "long", "fromType": "short"}]
    assert fields["f"]["type"] == "double"
    assert fields["d"]["type"] == "decimal(8,2)"
    assert "delta.typeChanges" not in fields["n"]["metadata"]
    rows = sorted(t.to_pyarrow_table().to_pylist(), key=lambda r: r["n"])
    assert [(r["i"], r["f"], r["d"]) for r in rows] == [
        (1, 1.5, D("1.50")),
        (2**40, 1e300, D("12345.25")),
    ]
    # Not automatically: an integer to double (an explicit change_column_type does it).
    with pytest.raises(InvalidArgumentError, match="does not fit"):
        dl.write_table(
            str(tmp_path),
            wide.set_column(3, "n", pa.array([1.5])),
            mode="append",
            schema_mode="merge",
        )
    # The feature removed again, deltalake reads what was written.
    t.alter.set_properties(
        {"delta.dropFeatureTruncateHistory.retentionDuration": "interval 0 seconds"}
    )
    with pytest.raises(FeatureDropWaitError):
        t.alter.drop_feature("typeWidening")
    t.alter.drop_feature("typeWidening", truncate_history=True)
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(tmp_path)))
    theirs_rows = pa.table(query.execute("SELECT * FROM t ORDER BY n").read_all()).to_pylist()
    assert theirs_rows == sorted(
        dl.DeltaTable(str(tmp_path)).to_pyarrow_table().to_pylist(), key=lambda r: r["n"]
    )


def test_schema_evolution_widens_dates_where_the_protocol_has_timestamp_ntz(
    tmp_path: Path,
) -> None:
    first = pa.table(
        {"day": pa.array([dt.date(2024, 1, 1)]), "at": pa.array([dt.datetime(2024, 1, 1)])}
    )
    dl.write_table(str(tmp_path), first, configuration={"delta.enableTypeWidening": "true"})
    assert "timestampNtz" in (dl.DeltaTable(str(tmp_path)).protocol().writer_features or [])
    later = pa.table(
        {
            "day": pa.array([dt.datetime(2024, 5, 1, 12, 30)], pa.timestamp("ns")),
            "at": pa.array([dt.datetime(2024, 5, 1)], pa.timestamp("us")),
        }
    )
    dl.write_table(str(tmp_path), later, mode="append", schema_mode="merge")
    t = dl.DeltaTable(str(tmp_path))
    fields = {f["name"]: f for f in json.loads(t._raw.metadata()["schema_string"])["fields"]}
    assert fields["day"]["type"] == "timestamp_ntz"
    assert fields["day"]["metadata"]["delta.typeChanges"] == [
        {"toType": "timestamp_ntz", "fromType": "date"}
    ]
    # Stored in microseconds, as Delta's timestamp_ntz (pyarrow reads the new file directly).
    newest = max(tmp_path.glob("*.parquet"), key=lambda p: p.stat().st_mtime_ns)
    assert pq.read_schema(newest).field("day").type == pa.timestamp("us")
    assert sorted(r["day"] for r in t.to_pyarrow_table().to_pylist()) == [
        dt.datetime(2024, 1, 1),
        dt.datetime(2024, 5, 1, 12, 30),
    ]
