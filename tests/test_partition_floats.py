"""Float and double partition values (issue #15, item 13) are serialized as Delta Spark does,
with Java's ``Double.toString`` / ``Float.toString`` (``1.0E-300``, ``-1.5E300``, ``1.0``,
``0.001``, ``1.0E7``, ``NaN``, ``Infinity``): extreme values make short directory names, and
both deltalog and the ``deltalake`` package read them back exactly. Values written in plain
decimal form (as other writers do) still read."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl

DOUBLES = [
    (1e-300, "1.0E-300"),
    (-1.5e300, "-1.5E300"),
    (1.0, "1.0"),
    (0.001, "0.001"),
    (1e7, "1.0E7"),
    (123456.789, "123456.789"),
    (5e-324, "4.9E-324"),
    (-0.0, "-0.0"),
    (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"),
    (float("nan"), "NaN"),
]


def _partition_values(path: Path) -> list[str | None]:
    out = []
    for line in (path / "_delta_log" / f"{0:020}.json").read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            out.append(action["add"]["partitionValues"]["p"])
    return out


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a):
        return math.isnan(b)
    return struct.pack("<d", a) == struct.pack("<d", b)


def _by_id(table: Any) -> dict[int, float | None]:
    return {r["id"]: r["p"] for r in pa.table(table).to_pylist()}


def test_double_partition_values_as_java_prints_them(tmp_path: Path) -> None:
    path = tmp_path / "t"
    values = [v for v, _ in DOUBLES] + [None]
    data = pa.table({"id": list(range(len(values))), "p": pa.array(values, pa.float64())})
    dl.write_table(path, data, partition_by=["p"])
    written = set(_partition_values(path))
    assert written == {text for _, text in DOUBLES} | {None}
    assert all(len(d.name) < 40 for d in path.iterdir() if d.name.startswith("p="))
    ours = _by_id(dl.DeltaTable(path).to_pyarrow_table())
    theirs = _by_id(deltalake.DeltaTable(str(path)).to_pyarrow_table())
    for i, v in enumerate(values):
        assert _same(ours[i], v), (i, ours[i], v)
        assert _same(theirs[i], v), (i, theirs[i], v)
    # Partition pruning compares the parsed values.
    got = dl.DeltaTable(path).to_pyarrow_table(filter=dl.col("p") < -1e299)
    assert sorted(got.column("id").to_pylist()) == [1, 9]  # -1.5E300 and -Infinity


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (1e-30, "1.0E-30"),
        (-3.4028235e38, "-3.4028235E38"),
        (16777216.0, "1.6777216E7"),
    ],
)
def test_float_partition_values_print_their_own_digits(
    tmp_path: Path, value: float, text: str
) -> None:
    path = tmp_path / "t"
    data = pa.table({"id": [0], "p": pa.array([value], pa.float32())})
    dl.write_table(path, data, partition_by=["p"])
    assert _partition_values(path) == [text]
    expected = pa.array([value], pa.float32())[0].as_py()
    assert _by_id(dl.DeltaTable(path).to_pyarrow_table()) == {0: expected}
    assert _by_id(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == {0: expected}


def test_plain_forms_written_by_others_read(tmp_path: Path) -> None:
    # deltalake writes plain decimals (`10000000`, `inf`); deltalog reads them too.
    path = tmp_path / "t"
    values = [0.5, 1e7, 123456.789, 0.001, float("inf"), float("nan")]
    data = pa.table({"id": list(range(len(values))), "p": pa.array(values, pa.float64())})
    deltalake.write_deltalake(str(path), data, partition_by=["p"])
    ours = _by_id(dl.DeltaTable(path).to_pyarrow_table())
    assert all(_same(ours[i], v) for i, v in enumerate(values)), ours
    # A long plain decimal (what deltalog wrote before) reads as the same double.
    plain = tmp_path / "plain"
    dl.write_table(plain, pa.table({"id": [0], "p": [1e-300]}), partition_by=["p"])
    commit = plain / "_delta_log" / f"{0:020}.json"
    long_form = format(1e-300, ".400f").rstrip("0")
    commit.write_text(commit.read_text().replace('"1.0E-300"', json.dumps(long_form)))
    assert _same(_by_id(dl.DeltaTable(plain).to_pyarrow_table())[0], 1e-300)
