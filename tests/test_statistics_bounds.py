"""Statistics that bound what files hold (issue #15): truncated string maxima (item 11), the
two float zeros and NaN (item 12), and parquet float statistics other readers use (item 6).

Tables written by deltalog are read back with `deltalake` and compared; files written by
deltalake exercise statistics deltalog did not write."""

from __future__ import annotations

import json
import math
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl

TOP = "\U0010ffff"
NASTY = [TOP * 40, "a" * 31 + TOP * 9, "b" * 32 + TOP * 3 + "c"]


def peer(path: Path) -> pa.Table:
    return deltalake.DeltaTable(str(path)).to_pyarrow_table()


def file_stats(path: Path) -> list[dict]:
    """The `stats` of the active adds, in log order."""
    out = []
    for f in sorted((path / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                out.append(json.loads(action["add"]["stats"]))
    return out


# -- item 11: string maxima --------------------------------------------------------------


@pytest.mark.parametrize("value", NASTY)
def test_filter_and_delete_find_values_above_a_truncated_maximum(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "t"
    # One file per value (each alone: its maximum is the value itself), plus an ordinary one.
    dl.write_table(path, pa.table({"id": [1], "s": [value], "n": [{"s": value}]}))
    dl.write_table(path, pa.table({"id": [2], "s": ["x"], "n": [{"s": "x"}]}), mode="append")
    stats = file_stats(path)[0]
    # The maximum, when written, is an upper bound in UTF-8 byte order; the minimum a lower.
    for key in ("s",):
        if key in stats["maxValues"]:
            assert stats["maxValues"][key].encode() >= value.encode()
        assert stats["minValues"][key].encode() <= value.encode()
    if "s" in stats["maxValues"].get("n", {}):
        assert stats["maxValues"]["n"]["s"].encode() >= value.encode()

    t = dl.DeltaTable(path)
    assert t.to_pyarrow_table(filter=dl.col("s") == value)["id"].to_pylist() == [1]
    at_least = sorted(i for i, v in [(1, value), (2, "x")] if v >= value)
    assert sorted(t.to_pyarrow_table(filter=[("s", ">=", value)])["id"].to_pylist()) == at_least
    assert t.delete(f"s = '{value}'")["num_deleted_rows"] == 1
    assert peer(path)["id"].to_pylist() == [2]
    assert dl.DeltaTable(path).to_pyarrow_table()["id"].to_pylist() == [2]


def test_a_maximum_without_a_valid_bound_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"s": [TOP * 40, "a"]}))
    stats = file_stats(path)[0]
    assert "s" not in stats["maxValues"]
    assert stats["minValues"]["s"] == "a"
    dl.write_table(path, pa.table({"s": ["a" * 31 + TOP * 9]}), mode="overwrite")
    stats = file_stats(path)[-1]
    assert stats["maxValues"]["s"] == "a" * 30 + TOP
    assert peer(path)["s"].to_pylist() == ["a" * 31 + TOP * 9]


# -- item 12: -0.0, 0.0 and NaN ------------------------------------------------------------


def zeros_table(path: Path) -> None:
    """Files holding only -0.0, only 0.0, a mix with NaN, and ordinary values."""
    for values in ([-0.0], [0.0], [1.0, math.nan], [-2.0, 3.0]):
        dl.write_table(path, pa.table({"f": pa.array(values, pa.float64())}), mode="append")


def test_the_zeros_are_equal_in_filters_and_statements(tmp_path: Path) -> None:
    path = tmp_path / "t"
    zeros_table(path)
    t = dl.DeltaTable(path)
    got = t.to_pyarrow_table(filter=dl.col("f") == 0.0)["f"].to_pylist()
    assert sorted(str(v) for v in got) == ["-0.0", "0.0"]
    assert len(t.to_pyarrow_table(filter=dl.col("f") == -0.0)) == 2
    assert len(t.to_pyarrow_table(filter=[("f", "in", [0.0])])) == 2
    assert len(t.to_pyarrow_table(filter=dl.col("f") != 0.0)) == 4
    assert len(t.to_pyarrow_table(filter=dl.col("f") >= 0.0)) == 5  # NaN is above all
    assert len(t.to_pyarrow_table(filter=dl.col("f") < 0.0)) == 1
    # Zero bounds are written as [-0.0, 0.0].
    stats = file_stats(path)
    assert str(stats[1]["minValues"]["f"]) == "-0.0"
    assert str(stats[0]["maxValues"]["f"]) == "0.0"
    assert t.delete("f = 0")["num_deleted_rows"] == 2
    remaining = sorted(peer(path)["f"].to_pylist(), key=str)
    assert len(remaining) == 4 and 0.0 not in remaining


def test_nan_rows_are_never_skipped(tmp_path: Path) -> None:
    """deltalake writes bounds that leave NaN out; Spark SQL's order puts NaN above every
    number, so `f > 5` keeps a NaN row and the file must be read."""
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), pa.table({"f": pa.array([1.0, math.nan, 2.0])}))
    deltalake.write_deltalake(str(path), pa.table({"f": pa.array([7.0, 8.0])}), mode="append")
    # The premise: the first file's maximum leaves its NaN out.
    assert file_stats(path)[0]["maxValues"]["f"] == 2.0
    t = dl.DeltaTable(path)
    full = t.to_pyarrow_table()["f"].to_pylist()
    for f, expected in [
        (dl.col("f") > 5.0, [v for v in full if math.isnan(v) or v > 5]),
        (dl.col("f") >= 2.0, [v for v in full if math.isnan(v) or v >= 2]),
        (dl.col("f") != 1.0, [v for v in full if v != 1.0]),
        (dl.col("f") < 1.5, [1.0]),
    ]:
        got = t.to_pyarrow_table(filter=f)["f"].to_pylist()
        assert sorted(map(str, got)) == sorted(map(str, expected)), f
    assert t.delete("f > 5")["num_deleted_rows"] == 3
    assert sorted(dl.DeltaTable(path).to_pyarrow_table()["f"].to_pylist()) == [1.0, 2.0]
    assert sorted(peer(path)["f"].to_pylist()) == [1.0, 2.0]


def test_merge_matches_the_zeros(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"f": pa.array([-0.0, 1.0]), "v": ["neg", "one"]}))
    m = (
        dl.DeltaTable(path)
        .merge(pa.table({"f": pa.array([0.0]), "v": ["zero"]}), "target.f = source.f")
        .when_matched_update({"v": "source.v"})
        .when_not_matched_insert_all()
        .execute()
    )
    assert (m["num_target_rows_updated"], m["num_target_rows_inserted"]) == (1, 0)
    assert sorted(peer(path)["v"].to_pylist()) == ["one", "zero"]


# -- item 6: parquet float statistics --------------------------------------------------------


def test_float_statistics_are_visible_to_pyarrow(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = pa.table(
        {
            "d": pa.array([1.5, math.nan, -3.0, None], pa.float64()),
            "f": pa.array([2.5, 0.0, 7.0, 1.0], pa.float32()),
            "nan": pa.array([math.nan] * 4, pa.float64()),
            "z": pa.array([0.0, -0.0, 0.5, 0.0], pa.float64()),
            "s": pa.array([{"x": 1.0}, {"x": -1.0}, None, {"x": 4.0}]),
            "i": pa.array([1, 2, 3, 4], pa.int64()),
        }
    )
    dl.write_table(path, table)
    (name,) = [p for p in path.glob("*.parquet")]
    meta = pq.ParquetFile(name).metadata
    columns = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).statistics
        for i in range(meta.num_columns)
    }
    d = columns["d"]
    assert d.has_min_max and (d.min, d.max) == (-3.0, 1.5) and d.null_count == 1
    f = columns["f"]
    assert f.has_min_max and math.copysign(1, f.min) == -1 and f.min == 0.0 and f.max == 7.0
    assert not columns["nan"].has_min_max
    z = columns["z"]
    assert z.has_min_max and str(z.min) == "-0.0" and z.max == 0.5
    x = columns["s.x"]
    assert x.has_min_max and (x.min, x.max) == (-1.0, 4.0)
    assert columns["i"].has_min_max
    # The file reads back the same everywhere.
    back = pq.read_table(name)
    assert back.column("d").to_pylist()[2] == -3.0
    assert peer(path).num_rows == 4
    assert dl.DeltaTable(path).to_pyarrow_table().num_rows == 4


def test_a_maximum_cut_by_another_writer_does_not_skip(tmp_path: Path) -> None:
    """Another writer's maximum cut to 32 characters plus U+FFFF (an older tie-breaker, below
    supplementary characters) is widened before files are skipped."""
    path = tmp_path / "t"
    value = "a" * 32 + "\U0001f600tail"
    deltalake.write_deltalake(str(path), pa.table({"id": [1], "s": [value]}))
    deltalake.write_deltalake(str(path), pa.table({"id": [2], "s": ["b"]}), mode="append")
    commit = path / "_delta_log" / f"{0:020}.json"
    lines = []
    for line in commit.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            stats = json.loads(action["add"]["stats"])
            stats["minValues"]["s"] = "a" * 32
            stats["maxValues"]["s"] = "a" * 32 + "\uffff"
            action["add"]["stats"] = json.dumps(stats)
        lines.append(json.dumps(action))
    commit.write_text("\n".join(lines) + "\n")
    t = dl.DeltaTable(path)
    assert t.to_pyarrow_table(filter=dl.col("s") == value)["id"].to_pylist() == [1]
    assert sorted(t.to_pyarrow_table(filter=dl.col("s") > "a" * 33)["id"].to_pylist()) == [1, 2]
    assert t.delete(f"s = '{value}'")["num_deleted_rows"] == 1
    assert peer(path)["id"].to_pylist() == [2]
