"""DELETE and UPDATE: deletion vectors and copy-on-write, change data files, SQL predicates,
conflicts with concurrent writers, and `deltalake` as the independent reader and writer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import deltalog as dl
from conftest import CORPUS

DV = {"delta.enableDeletionVectors": "true"}
CDF = {"delta.enableChangeDataFeed": "true"}


def data(ids: range | list[int], parts: list[str] | None = None) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(parts or [("a" if i % 2 else "b") for i in ids], pa.string()),
            "v": pa.array([float(i) for i in ids], pa.float64()),
            "s": pa.array([f"s{i}" for i in ids], pa.string()),
        }
    )


def make(path: Path, configuration: dict[str, str] | None = None, files: int = 3) -> None:
    """A table of ids 0..29 in `files` appends, partitioned by part."""
    per = 30 // files
    for k in range(files):
        dl.write_table(
            path,
            data(range(k * per, (k + 1) * per)),
            mode="append",
            partition_by=["part"],
            configuration=configuration,
        )


def rows(table: Any, columns: tuple[str, ...] = ("id", "part", "v", "s")) -> list[tuple]:
    t = pa.table(table)
    return sorted(tuple(r[c] for c in columns) for r in t.to_pylist())


def ours(path: Path) -> list[tuple]:
    return rows(dl.DeltaTable(path).to_pyarrow_table())


def peer_table(path: Path) -> pa.Table:
    """The table as deltalake reads it, through its query engine (which applies deletion
    vectors; its pyarrow path refuses tables with them)."""
    dt = deltalake.DeltaTable(str(path))
    result = deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()
    table = pa.table(result)
    fields = [
        pa.field(f.name, pa.string()) if pa.types.is_string_view(f.type) else f
        for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def theirs(path: Path) -> list[tuple]:
    return rows(peer_table(path))


def log_actions(path: Path, version: int) -> list[dict[str, Any]]:
    text = (path / "_delta_log" / f"{version:020}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def expected(ids: list[int]) -> list[tuple]:
    return rows(data(ids))


@pytest.mark.parametrize("config", [DV, {}], ids=["deletion-vectors", "copy-on-write"])
def test_delete_read_back_by_both(tmp_path: Path, config: dict[str, str]) -> None:
    path = tmp_path / "t"
    make(path, config)
    t = dl.DeltaTable(path)
    if config:
        p = t.protocol()
        assert (p.min_reader_version, p.min_writer_version) == (3, 7)
        assert p.reader_features == ["deletionVectors"]
        assert p.writer_features == ["deletionVectors"]
    before = t.version()
    metrics = t.delete("id % 7 = 0 OR s = 's11'")
    deleted = [i for i in range(30) if i % 7 == 0 or i == 11]
    assert metrics["num_deleted_rows"] == len(deleted)
    assert metrics["version"] == before + 1 == t.version()
    keep = [i for i in range(30) if i not in deleted]
    assert ours(path) == expected(keep)
    assert theirs(path) == expected(keep)
    actions = log_actions(path, t.version())
    info = actions[0]["commitInfo"]
    assert info["operation"] == "DELETE"
    assert info["operationParameters"]["predicate"] == "id % 7 = 0 OR s = 's11'"
    assert info["operationMetrics"]["numDeletedRows"] == str(len(deleted))
    adds = [a["add"] for a in actions if "add" in a]
    if config:
        # Files stay; their few deleted rows are small vectors, stored inline in the log
        # (larger ones share one DV file per commit).
        assert metrics["num_deletion_vectors_added"] == len(adds) > 0
        assert metrics["num_copied_rows"] == 0
        assert all(a["deletionVector"]["storageType"] == "i" for a in adds)
        assert all(json.loads(a["stats"])["tightBounds"] is False for a in adds)
        assert not list(path.glob("deletion_vector_*.bin"))
        dvs = dl.DeltaTable(path).get_add_actions().column("deletion_vector")
        assert sum(1 for d in dvs.to_pylist() if d) == len(adds)
    else:
        assert metrics["num_deletion_vectors_added"] == 0
        assert metrics["num_copied_rows"] == len(keep)
        assert not any("deletionVector" in a for a in adds)
    # A second delete on top of existing deletion vectors.
    t.delete("id < 5")
    keep = [i for i in keep if i >= 5]
    assert ours(path) == expected(keep)
    assert theirs(path) == expected(keep)


def test_delete_whole_files_partitions_and_everything(tmp_path: Path) -> None:
    path = tmp_path / "t"
    make(path, DV)
    t = dl.DeltaTable(path)
    files = len(t.files())
    m = t.delete("part = 'a'")
    # Every row of the 'a' files matched: they are removed, no DVs written.
    assert m["num_deletion_vectors_added"] == 0
    assert m["num_removed_files"] == files // 2
    assert m["num_files_scanned"] == files // 2  # the 'b' files were pruned
    assert ours(path) == expected([i for i in range(30) if i % 2 == 0])
    none = t.delete("id > 1000")
    assert none["version"] is None and none["num_deleted_rows"] == 0
    assert t.delete()["num_deleted_rows"] == 15
    assert ours(path) == [] == theirs(path)


@pytest.mark.parametrize("config", [DV, {}], ids=["deletion-vectors", "copy-on-write"])
def test_update_read_back_by_both(tmp_path: Path, config: dict[str, str]) -> None:
    path = tmp_path / "t"
    make(path, config)
    t = dl.DeltaTable(path)
    m = t.update({"v": "v * 10 + 1", "s": "upper(s) || '!'"}, "id BETWEEN 3 AND 6")
    assert m["num_updated_rows"] == 4
    m = t.update(new_values={"part": "c", "s": None}, predicate=dl.col("id") == 20)
    assert m["num_updated_rows"] == 1

    def row(i: int) -> tuple:
        if 3 <= i <= 6:
            return (i, "a" if i % 2 else "b", i * 10.0 + 1, f"S{i}!")
        if i == 20:
            return (i, "c", 20.0, None)
        return (i, "a" if i % 2 else "b", float(i), f"s{i}")

    want = sorted(row(i) for i in range(30))
    assert ours(path) == want
    assert theirs(path) == want
    # The moved row lives in a new partition directory.
    assert any("part=c" in f for f in dl.DeltaTable(path).files())
    info = log_actions(path, t.version())[0]["commitInfo"]
    assert info["operation"] == "UPDATE"


def test_change_data_files_for_delete_and_update(tmp_path: Path) -> None:
    path = tmp_path / "t"
    make(path, {**DV, **CDF})
    t = dl.DeltaTable(path)
    start = t.version() + 1
    t.delete("id IN (1, 2)")
    t.update({"v": "-v"}, "id = 3")
    changes = t.load_cdf(starting_version=start).read_all()
    got = sorted(
        (r["_commit_version"], r["_change_type"], r["id"], r["v"]) for r in changes.to_pylist()
    )
    assert got == [
        (start, "delete", 1, 1.0),
        (start, "delete", 2, 2.0),
        (start + 1, "update_postimage", 3, -3.0),
        (start + 1, "update_preimage", 3, 3.0),
    ]
    cdc = [a for a in log_actions(path, start) if "cdc" in a]
    assert cdc and all(a["cdc"]["path"].startswith("_change_data/") for a in cdc)
    # deltalake reads the same feed.
    peer = pa.table(deltalake.DeltaTable(str(path)).load_cdf(starting_version=start).read_all())
    peer_rows = sorted(
        (r["_commit_version"], r["_change_type"], r["id"], r["v"]) for r in peer.to_pylist()
    )
    assert peer_rows == got


def test_deltalake_written_tables_are_deleted_from_and_updated(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), data(range(20)), partition_by=["part"])
    deltalake.write_deltalake(str(path), data(range(20, 40)), mode="append")
    t = dl.DeltaTable(path)
    t.delete("v >= 35")
    t.update({"s": "'x'"}, "id < 2")
    want = sorted(
        (i, "a" if i % 2 else "b", float(i), "x" if i < 2 else f"s{i}") for i in range(35)
    )
    assert ours(path) == want == theirs(path)
    # deltalake appends and deletes on top of deltalog's commits.
    dt = deltalake.DeltaTable(str(path))
    dt.delete("id = 0")
    assert ours(path) == want[1:] == theirs(path)


def golden_copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(CORPUS / name / "delta", target)
    return target


@pytest.mark.parametrize("name", ["dv-partitioned-with-checkpoint", "dv-with-columnmapping"])
def test_golden_dv_tables_take_further_deletes(tmp_path: Path, name: str) -> None:
    path = golden_copy(tmp_path, name)
    t = dl.DeltaTable(path)
    assert t.protocol().writer_features and "deletionVectors" in t.protocol().writer_features
    before = t.to_pyarrow_table()
    column = next(f.name for f in before.schema if pa.types.is_integer(f.type) and f.name != "part")
    values = sorted(v for v in before.column(column).to_pylist() if v is not None)
    cut = values[len(values) // 3]
    m = t.delete(f"`{column}` < {cut}")
    assert m["num_deleted_rows"] == sum(1 for v in values if v < cut) > 0
    after = dl.DeltaTable(path).to_pyarrow_table()
    want = before.filter(pc.invert(pc.fill_null(pc.less(before.column(column), cut), False)))
    assert rows(after, tuple(before.column_names)) == rows(want, tuple(before.column_names))


@pytest.mark.parametrize("name", ["dv-partitioned-with-checkpoint", "dv-with-columnmapping"])
def test_golden_dv_table_takes_updates(tmp_path: Path, name: str) -> None:
    path = golden_copy(tmp_path, name)
    t = dl.DeltaTable(path)
    before = t.to_pyarrow_table()
    column = next(f.name for f in before.schema if pa.types.is_integer(f.type))
    m = t.update({column: f"`{column}` + 1000"}, f"`{column}` % 3 = 0")
    hits = [v for v in before.column(column).to_pylist() if v is not None and v % 3 == 0]
    assert m["num_updated_rows"] == len(hits) > 0
    after = dl.DeltaTable(path).to_pyarrow_table()
    got = sorted(v for v in after.column(column).to_pylist() if v is not None)
    want = sorted(
        (v + 1000 if v % 3 == 0 else v) for v in before.column(column).to_pylist() if v is not None
    )
    assert got == want
    assert after.num_rows == before.num_rows


def test_bad_statements_leave_the_table_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "t"
    make(path, DV)
    t = dl.DeltaTable(path)
    version = t.version()
    for bad in ["id <", "nosuch = 1", "max(id) > 1", "s + 1 > 2", "id = 'x' AND"]:
        with pytest.raises(dl.DeltaError):
            t.delete(bad)
    with pytest.raises(dl.DeltaError):
        t.update({"nosuch": "1"})
    with pytest.raises(dl.DeltaError):
        t.update({"id": "id + 9223372036854775807"}, "id > 3")
    with pytest.raises(TypeError):
        t.update({"v": 3})  # type: ignore[dict-item]
    assert dl.DeltaTable(path).version() == version
    assert ours(path) == expected(list(range(30)))


def test_append_only_and_not_null_rules(tmp_path: Path) -> None:
    path = tmp_path / "t"
    make(path, {"delta.appendOnly": "true"}, files=1)
    t = dl.DeltaTable(path)
    with pytest.raises(dl.DeltaError, match="append-only"):
        t.delete("id = 1")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    strict = dl.DeltaTable.create(tmp_path / "n", schema)
    dl.write_table(strict, pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema), mode="append")
    with pytest.raises(dl.DeltaError, match="NOT NULL"):
        strict.update(new_values={"id": None}, predicate="id = 1")
    assert rows(strict.to_pyarrow_table(), ("id", "v")) == [(1, "a"), (2, "b")]


def test_delete_racing_an_append_to_the_same_partition(tmp_path: Path) -> None:
    path = tmp_path / "t"
    make(path, DV)
    t = dl.DeltaTable(path)  # reads version v
    # A blind append lands first, into the partition the delete reads.
    dl.write_table(path, data([100, 101], ["a", "a"]), mode="append")
    m = t.delete("part = 'a' AND id < 10")
    # WriteSerializable: the append commutes; its rows (id >= 100) stay.
    assert m["version"] == t.version()
    want = [i for i in range(30) if not (i % 2 and i < 10)]
    assert ours(path) == rows(pa.concat_tables([data(want), data([100, 101], ["a", "a"])]))


def test_deletes_racing_on_the_same_file_conflict(tmp_path: Path) -> None:
    path = tmp_path / "t"
    make(path, DV, files=1)
    first = dl.DeltaTable(path)
    second = dl.DeltaTable(path)
    first.delete("id = 1")
    with pytest.raises(dl.CommitConflictError) as info:
        second.delete("id = 3")
    assert info.value.version == first.version()
    assert "read" in str(info.value)
    # Nothing of the loser was committed.
    assert ours(path) == expected([i for i in range(30) if i != 1])


def test_sql_predicates_on_dates_timestamps_and_decimals(tmp_path: Path) -> None:
    import datetime as dt
    import decimal

    path = tmp_path / "t"
    table = pa.table(
        {
            "d": pa.array([dt.date(2024, 1, i) for i in range(1, 6)]),
            "ts": pa.array(
                [dt.datetime(2024, 1, i, 12, tzinfo=dt.timezone.utc) for i in range(1, 6)],
                pa.timestamp("us", tz="UTC"),
            ),
            "m": pa.array([decimal.Decimal(f"{i}.25") for i in range(1, 6)], pa.decimal128(10, 2)),
        }
    )
    dl.write_table(path, table, configuration=DV)
    t = dl.DeltaTable(path)
    assert t.delete("d >= '2024-01-04'")["num_deleted_rows"] == 2
    assert t.delete("ts < TIMESTAMP '2024-01-02 00:00:00'")["num_deleted_rows"] == 1
    assert t.delete("m = 2.25")["num_deleted_rows"] == 1
    assert t.to_pyarrow_table().column("d").to_pylist() == [dt.date(2024, 1, 3)]


def test_large_deletion_vectors_go_to_a_file_small_ones_inline(tmp_path: Path) -> None:
    path = tmp_path / "t"
    config = {"delta.enableDeletionVectors": "true"}
    dl.write_table(path, pa.table({"id": pa.array(range(1000), pa.int64())}), configuration=config)
    t = dl.DeltaTable(path)
    t.delete("id % 2 = 0")  # 500 scattered rows: too large to inline
    add = log_actions(path, t.version())
    dv = next(a["add"]["deletionVector"] for a in add if "add" in a)
    assert dv["storageType"] == "u" and dv["cardinality"] == 500
    assert len(list(path.glob("deletion_vector_*.bin"))) == 1
    t.delete("id = 1")  # one more row joins the vector: still large
    live = sorted(t.to_pyarrow_table().column("id").to_pylist())
    assert live == [i for i in range(3, 1000, 2)]
    peer = deltalake.DeltaTable(str(path))
    got = deltalake.QueryBuilder().register("t", peer).execute("SELECT id FROM t").read_all()
    assert sorted(pa.table(got).column("id").to_pylist()) == live
