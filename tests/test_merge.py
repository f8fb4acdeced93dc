"""MERGE: clauses against the deltalake package's MERGE on identical tables (a hypothesis
property), deletion vectors and copy-on-write, pruning, change data, and bad statements."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import deltalog as dl

DV = {"delta.enableDeletionVectors": "true"}


def target_table(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(["a" if i % 2 else "b" for i in ids], pa.string()),
            "v": pa.array([i * 10 for i in ids], pa.int64()),
        }
    )


def source_table(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(["a" if i % 2 else "b" for i in ids], pa.string()),
            "v": pa.array([i * 100 + 1 for i in ids], pa.int64()),
        }
    )


def rows(table: Any) -> list[tuple]:
    t = pa.table(table)
    return sorted((r["id"], r["part"], r["v"]) for r in t.to_pylist())


def peer_rows(path: Path) -> list[tuple]:
    dt = deltalake.DeltaTable(str(path))
    got = deltalake.QueryBuilder().register("t", dt).execute("SELECT id, part, v FROM t")
    return rows(got.read_all())


# Clause sets in the builder vocabulary both libraries share.
CLAUSES: dict[str, list[tuple[str, tuple]]] = {
    "upsert": [("when_matched_update_all", ()), ("when_not_matched_insert_all", ())],
    "update-some": [
        ("when_matched_update", ({"v": "source.v + target.v"}, "target.v > 20")),
        ("when_matched_delete", ()),
    ],
    "insert-some": [("when_not_matched_insert", ({"id": "source.id", "v": "source.v * 2"},))],
    "by-source": [
        ("when_not_matched_by_source_delete", ("target.id > 3",)),
        ("when_not_matched_by_source_update", ({"v": "0"},)),
        ("when_matched_update", ({"part": "'z'"},)),
    ],
    "delete-insert": [
        ("when_matched_delete", ("source.v > 300",)),
        ("when_not_matched_insert_all", ()),
    ],
}


def run(merger: Any, clauses: list[tuple[str, tuple]]) -> Any:
    for name, args in clauses:
        merger = getattr(merger, name)(*args)
    return merger.execute()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    target=st.lists(st.integers(0, 12), min_size=0, max_size=10, unique=True),
    source=st.lists(st.integers(0, 15), min_size=0, max_size=8, unique=True),
    clauses=st.sampled_from(sorted(CLAUSES)),
    dv=st.booleans(),
)
def test_merge_matches_deltalake(
    tmp_path: Path, target: list[int], source: list[int], clauses: str, dv: bool
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for p in (ours, theirs):
        shutil.rmtree(p, ignore_errors=True)
    dl.write_table(
        ours, target_table(target), partition_by=["part"], configuration=DV if dv else None
    )
    deltalake.write_deltalake(str(theirs), target_table(target), partition_by=["part"])
    src = source_table(source)
    run(dl.DeltaTable(ours).merge(src, "target.id = source.id"), CLAUSES[clauses])
    run(
        deltalake.DeltaTable(str(theirs)).merge(
            src, "target.id = source.id", source_alias="source", target_alias="target"
        ),
        CLAUSES[clauses],
    )
    want = rows(deltalake.DeltaTable(str(theirs)).to_pyarrow_table())
    assert rows(dl.DeltaTable(ours).to_pyarrow_table()) == want
    assert peer_rows(ours) == want


def test_merge_metrics_pruning_and_change_data(tmp_path: Path) -> None:
    path = tmp_path / "t"
    config = {**DV, "delta.enableChangeDataFeed": "true"}
    for chunk in ([1, 2, 3], [11, 12, 13], [21, 22, 23]):
        dl.write_table(path, target_table(chunk), mode="append", configuration=config)
    t = dl.DeltaTable(path)
    m = (
        t.merge(source_table([12, 14]), "target.id = source.id")
        .when_matched_update({"v": "source.v"})
        .when_not_matched_insert_all()
        .execute()
    )
    assert m["num_target_rows_updated"] == 1 and m["num_target_rows_inserted"] == 1
    # The source's keys (12..14) only overlap the second append's files.
    assert m["num_target_files_scanned"] < len(dl.DeltaTable(path).files())
    assert m["num_deletion_vectors_added"] == 1
    changes = sorted(
        (r["id"], r["_change_type"])
        for r in t.load_cdf(starting_version=m["version"]).read_all().to_pylist()
    )
    assert changes == [(12, "update_postimage"), (12, "update_preimage"), (14, "insert")]
    info = t.history(1)[0]
    assert info["operation"] == "MERGE"
    assert info["operationMetrics"]["numTargetRowsUpdated"] == "1"
    # A merge that changes nothing commits nothing.
    none = t.merge(source_table([99]), "target.id = source.id").when_matched_delete().execute()
    assert none["version"] is None


def test_merge_into_deltalake_table_read_back(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), target_table([1, 2, 3, 4]))
    t = dl.DeltaTable(path)
    (
        t.merge(source_table([3, 4, 5]), "t.id = s.id AND t.part = s.part", "s", "t")
        .when_matched_update({"v": "s.v"}, "s.id = 3")
        .when_matched_delete()
        .when_not_matched_insert({"id": "s.id", "part": "s.part", "v": "0"})
        .execute()
    )
    want = [(1, "a", 10), (2, "b", 20), (3, "a", 301), (5, "a", 0)]
    assert rows(t.to_pyarrow_table()) == want == peer_rows(path)


def test_bad_merges_change_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, target_table([1, 2]))
    t = dl.DeltaTable(path)
    with pytest.raises(dl.UnsupportedFeatureError, match="equality"):
        t.merge(source_table([1]), "target.id < source.id").when_matched_delete().execute()
    with pytest.raises(dl.InvalidArgumentError, match="ambiguous"):
        (
            t.merge(source_table([1, 1]), "target.id = source.id")
            .when_matched_update({"v": "source.v"})
            .execute()
        )
    with pytest.raises(dl.InvalidArgumentError):
        t.merge(source_table([1]), "target.id = source.nope").when_matched_delete().execute()
    with pytest.raises(dl.InvalidArgumentError):
        (
            t.merge(source_table([9]), "target.id = source.id")
            .when_not_matched_insert({"v": "target.v"})
            .execute()
        )
    with pytest.raises(dl.InvalidArgumentError):
        t.merge(source_table([1]), "target.id = source.id").execute()
    assert t.version() == 0
    assert rows(t.to_pyarrow_table()) == rows(target_table([1, 2]))


def evolving_source() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([2, 3, 9], pa.int64()),
            "v": pa.array(["two", "three", "nine"]),
            "extra": pa.array([20.0, None, 90.0]),
        }
    )


def test_merge_schema_adds_the_sources_new_columns_in_one_commit(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    start = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["a", "b", "c"])})
    for path in (ours, theirs):
        deltalake.write_deltalake(str(path), start)
    t = dl.DeltaTable(str(ours))
    metrics = (
        t.merge(evolving_source(), "target.id = source.id", merge_schema=True)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert metrics["version"] == 1
    (
        deltalake.DeltaTable(str(theirs))
        .merge(
            evolving_source(),
            "target.id = source.id",
            source_alias="source",
            target_alias="target",
            merge_schema=True,
        )
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert t.schema().names == ["id", "v", "extra"]
    expected = [
        {"id": 1, "v": "a", "extra": None},
        {"id": 2, "v": "two", "extra": 20.0},
        {"id": 3, "v": "three", "extra": None},
        {"id": 9, "v": "nine", "extra": 90.0},
    ]
    assert t.to_pyarrow_table().sort_by("id").to_pylist() == expected
    assert deltalake.DeltaTable(str(ours)).to_pyarrow_table().sort_by("id").to_pylist() == expected
    assert dl.DeltaTable(str(theirs)).to_pyarrow_table().sort_by("id").to_pylist() == expected
    # The new schema came with the MERGE itself: one commit with both.
    log = (ours / "_delta_log" / f"{1:020}.json").read_text()
    assert '"metaData"' in log and '"operation":"MERGE"' in log.replace(" ", "")


def test_without_schema_evolution_new_columns_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(str(path), pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    t = dl.DeltaTable(str(path))
    # Explicit clauses over known columns: merge_schema changes nothing.
    (
        t.merge(evolving_source(), "target.id = source.id", merge_schema=True)
        .when_matched_update({"v": "source.v"})
        .execute()
    )
    assert t.schema().names == ["id", "v"]
    # INSERT * without merge_schema: the source's extra columns are ignored (Delta's schema
    # validation for merge).
    (t.merge(evolving_source(), "target.id = source.id").when_not_matched_insert_all().execute())
    assert t.schema().names == ["id", "v"]
    assert t.to_pyarrow_table().sort_by("id").column("id").to_pylist() == [1, 2, 3, 9]
