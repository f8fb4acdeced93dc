"""Data file layout (issue #15, item 8): the rows of one input go to one file per partition at
a time, in input order, until `target_file_size`; parallel encoding never interleaves rows
across files. `deltalake` reads every table written here and gets the same rows."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from deltalog.exceptions import InvalidArgumentError


def adds(path: Path, version: int | None = None) -> list[dict]:
    """The `add` actions of one commit (the latest when None), in log order."""
    log = sorted((path / "_delta_log").glob("*.json"))
    f = log[-1] if version is None else path / "_delta_log" / f"{version:020}.json"
    out = []
    for line in f.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            add = action["add"]
            add["stats"] = json.loads(add["stats"])
            out.append(add)
    return out


def peer_sorted(path: Path, key: str = "id") -> pa.Table:
    return deltalake.DeltaTable(str(path)).to_pyarrow_table().sort_by(key)


def test_sorted_input_gives_disjoint_file_ranges_in_order(tmp_path: Path) -> None:
    n = 1_000_000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.float64())})
    # A small target forces several files; a default one keeps a single file.
    dl.write_table(tmp_path / "one", data)
    (only,) = adds(tmp_path / "one")
    assert (only["stats"]["minValues"]["id"], only["stats"]["maxValues"]["id"]) == (0, n - 1)

    path = tmp_path / "t"
    dl.write_table(path, data, target_file_size=2 * 1024 * 1024)
    files = adds(path)
    assert len(files) >= 3
    ranges = [(a["stats"]["minValues"]["id"], a["stats"]["maxValues"]["id"]) for a in files]
    # In input order: each file's rows follow the previous file's, without overlap or gaps.
    assert ranges[0][0] == 0 and ranges[-1][1] == n - 1
    for (_, hi), (lo, _) in itertools.pairwise(ranges):
        assert lo == hi + 1, ranges
    assert sum(a["stats"]["numRecords"] for a in files) == n
    # Within each file the rows are in input order too.
    for a in files:
        ids = pq.read_table(path / a["path"])["id"].to_pylist()
        assert ids == list(range(ids[0], ids[0] + len(ids)))
    assert peer_sorted(path).equals(data)
    # File skipping on the sort key now reads one file.
    t = dl.DeltaTable(path)
    assert len(t.scan(filter=dl.col("id") == 123_456).tasks()) == 1


def test_small_partitions_give_one_file_each(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = pa.table(
        {
            "id": pa.array(range(80), pa.int64()),
            "p": pa.array([f"p{i % 5}" for i in range(80)]),
        }
    )
    dl.write_table(path, data, partition_by=["p"])
    files = adds(path)
    assert len(files) == 5
    assert sorted(a["partitionValues"]["p"] for a in files) == [f"p{k}" for k in range(5)]
    for a in files:
        k = int(a["partitionValues"]["p"][1:])
        ids = pq.read_table(path / a["path"])["id"].to_pylist()
        assert ids == list(range(k, 80, 5))  # input order within the partition
    assert peer_sorted(path).select(["id", "p"]).equals(data)


def test_files_stay_near_the_target_size(tmp_path: Path) -> None:
    path = tmp_path / "t"
    n = 400_000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": pa.array([f"row-{i * 7919 % 100003:08d}" for i in range(n)]),
        }
    )
    target = 1024 * 1024
    dl.write_table(path, data, target_file_size=target)
    files = adds(path)
    assert len(files) >= 3
    sizes = [a["size"] for a in files]
    # A file closes once it reaches the target; a row group never takes it far past it.
    assert all(s <= 1.5 * target for s in sizes), sizes
    assert all(s >= target / 4 for s in sizes[:-1]), sizes
    starts = [a["stats"]["minValues"]["id"] for a in files]
    assert starts == sorted(starts)
    assert peer_sorted(path).equals(data)


def test_table_property_and_statements_take_the_target(tmp_path: Path) -> None:
    path = tmp_path / "t"
    n = 300_000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.int64())})
    dl.write_table(path, data, configuration={"delta.targetFileSize": str(1024 * 1024)})
    assert len(adds(path)) >= 2
    t = dl.DeltaTable(path)
    # UPDATE rewrites every file; with a small target the new rows span several files.
    before = len(t.get_add_actions())
    m = t.update({"v": "v + 1"}, target_file_size=512 * 1024)
    assert m["num_updated_rows"] == n
    assert len(adds(path)) > before
    got = peer_sorted(path)
    assert got["v"].to_pylist() == [i + 1 for i in range(n)]
    # write_files and MERGE take it too.
    files = dl.write_files(dl.DeltaTable(path), data.slice(0, 200_000), target_file_size=256 * 1024)
    assert len(files) >= 2
    merged = (
        dl.DeltaTable(path)
        .merge(data.slice(0, 10), "target.id = source.id", target_file_size=1024 * 1024)
        .when_matched_update_all()
        .execute()
    )
    assert merged["num_target_rows_updated"] == 10
    assert peer_sorted(path)["v"].to_pylist()[:12] == [*range(10), 11, 12]
    for bad in (0, -5, 1.5, True):
        with pytest.raises(InvalidArgumentError):
            dl.write_table(path, data.slice(0, 1), mode="append", target_file_size=bad)
