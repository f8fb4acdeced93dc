"""MERGE, DELETE and UPDATE computed by Spark (``deltalog.spark.merge``/``delete``/``update``)
on a real local Spark: the same rows as deltalog's own single-machine MERGE/DELETE/UPDATE on a
copy of the table, read back by the ``deltalake`` package, one commit each."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl

pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")

import deltalog.spark as dls  # (needs pyspark)

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("g", pa.string())])


def make_table(uri: str, n: int, partitioned: bool = True, **kwargs: Any) -> None:
    """A table written by deltalake (an independent writer), in two commits."""
    for lo, hi in ((0, n // 2), (n // 2, n)):
        data = pa.table(
            {
                "id": pa.array(range(lo, hi), pa.int64()),
                "v": pa.array([float(i) for i in range(lo, hi)]),
                "g": pa.array([f"g{i % 4}" for i in range(lo, hi)]),
            }
        )
        deltalake.write_deltalake(
            uri,
            data,
            mode="append",
            partition_by=["g"] if partitioned else None,
            **kwargs,
        )


def sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    ordered = table.select(["id", "v", "g"]).cast(SCHEMA)
    return ordered.sort_by([("id", "ascending"), ("v", "ascending")]).to_pylist()


def read_by_deltalake(uri: str) -> list[dict[str, Any]]:
    """The table as the deltalake package reads it (its DataFusion reader, which applies
    deletion vectors; its pyarrow reader refuses them)."""
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
    return sorted_rows(pa.table(query.execute("SELECT * FROM t")))


CLAUSES = [
    # (description, apply to a merge builder)
    (
        "upsert",
        lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
    ),
    (
        "conditional update, delete, conditional insert",
        lambda m: (
            m.when_matched_update({"v": "source.v + target.v"}, "target.id % 2 = 0")
            .when_matched_delete("target.id % 3 = 0")
            .when_not_matched_insert({"id": "source.id", "g": "'new'"}, "source.id % 5 <> 0")
        ),
    ),
    (
        "not matched by source",
        lambda m: (
            m.when_matched_update({"v": "source.v"})
            .when_not_matched_by_source_delete("target.v > 150")
            .when_not_matched_by_source_update({"v": "target.v * -1"})
        ),
    ),
]


@pytest.mark.parametrize("clauses", CLAUSES, ids=[c[0] for c in CLAUSES])
def test_merge_matches_deltalogs_own_merge(spark: Any, tmp_path: Path, clauses: Any) -> None:
    _, apply = clauses
    uri, copy = str(tmp_path / "t"), str(tmp_path / "copy")
    make_table(uri, 200)
    shutil.copytree(uri, copy)
    rows = [(i, -float(i), "g0") for i in range(0, 260, 7)]
    source = spark.createDataFrame(rows, "id long, v double, g string").repartition(2)
    ours = apply(dls.merge(uri, source, "target.id = source.id")).execute()
    reference = apply(
        dl.DeltaTable(copy).merge(
            pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA),
            "target.id = source.id",
        )
    ).execute()
    for key in (
        "num_source_rows",
        "num_target_rows_inserted",
        "num_target_rows_updated",
        "num_target_rows_deleted",
    ):
        assert ours[key] == reference[key], key
    t = dl.DeltaTable(uri)
    assert t.version() == 2 and ours["version"] == 2
    assert t.history(1)[0]["operation"] == "MERGE"
    expected = sorted_rows(dl.DeltaTable(copy).to_pyarrow_table())
    assert sorted_rows(t.to_pyarrow_table()) == expected
    assert read_by_deltalake(uri) == expected


def test_merge_into_a_million_rows_read_back_by_deltalake(spark: Any, tmp_path: Path) -> None:
    """The acceptance case: a Spark MERGE into a 1M-row table (written by deltalake) updates
    and inserts; deltalake reads the result."""
    uri = str(tmp_path / "big")
    n = 1_000_000
    make_table(uri, n, partitioned=False)
    updates = spark.range(0, n + 20_000, 50).selectExpr(
        "id", "CAST(-id AS DOUBLE) AS v", "'up' AS g"
    )
    metrics = (
        dls.merge(uri, updates, "target.id = source.id")
        .when_matched_update({"v": "source.v"})
        .when_not_matched_insert_all()
        .execute()
    )
    assert metrics["num_target_rows_updated"] == n // 50
    assert metrics["num_target_rows_inserted"] == 20_000 // 50
    assert metrics["num_target_rows_deleted"] == 0
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
    got = pa.table(query.execute("SELECT id, v FROM t"))
    assert got.num_rows == n + 400
    ids = got.column("id").to_numpy()
    values = got.column("v").to_numpy()
    assert len(set(ids.tolist())) == n + 400
    hit = ids % 50 == 0
    assert hit.sum() == n // 50 + 400
    assert (values[hit] == -ids[hit]).all()  # updated (or inserted) from the source
    assert (values[~hit] == ids[~hit]).all()  # untouched rows keep their values
    assert dl.DeltaTable(uri).version() == 2


def test_merge_reads_only_files_that_may_hold_the_source_keys(spark: Any, tmp_path: Path) -> None:
    """The target is pruned by the range of the source's join keys (as Delta Spark prunes a
    MERGE's target): fewer files scanned, the same rows as deltalog's own MERGE."""
    uri, copy = str(tmp_path / "t"), str(tmp_path / "copy")
    for lo in range(0, 1000, 100):  # ten files with disjoint id ranges
        data = pa.table(
            {
                "id": pa.array(range(lo, lo + 100), pa.int64()),
                "v": pa.array([float(i) for i in range(lo, lo + 100)]),
                "g": pa.array(["x"] * 100),
            }
        )
        dl.write_table(uri, data, mode="append")
    shutil.copytree(uri, copy)
    for rows, scanned in (
        ([(i, -1.0, "y") for i in (250, 255, 299, 260)], 1),
        ([(None, 5.0, "null key"), (None, 6.0, "null key")], 0),
    ):
        source = spark.createDataFrame(rows, "id long, v double, g string")
        ours = (
            dls.merge(uri, source, "target.id = source.id AND source.v < 0")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        dl.DeltaTable(copy).merge(
            pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA),
            "target.id = source.id AND source.v < 0",
        ).when_matched_update_all().when_not_matched_insert_all().execute()
        assert ours["num_target_files_scanned"] == scanned
        expected = sorted_rows(dl.DeltaTable(copy).to_pyarrow_table())
        assert sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()) == expected


def test_an_ambiguous_merge_is_an_error_and_commits_nothing(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    make_table(uri, 20)
    twice = spark.createDataFrame([(1, 1.0, "a"), (1, 2.0, "b")], "id long, v double, g string")
    with pytest.raises(dl.InvalidArgumentError, match="ambiguous"):
        dls.merge(uri, twice, "target.id = source.id").when_matched_update_all().execute()
    # Matched twice but modified by no clause: allowed, and the row stays once.
    metrics = (
        dls.merge(uri, twice, "target.id = source.id").when_matched_delete("source.v > 5").execute()
    )
    assert metrics["version"] is None
    assert dl.DeltaTable(uri).version() == 1
    assert len(read_by_deltalake(uri)) == 20


def test_a_nondeterministic_source_is_read_once(spark: Any, tmp_path: Path) -> None:
    """A source that gives other rows each time it is computed (a random sample with random
    values) is materialized once, as Delta Spark's MERGE materializes it: every one of its rows
    either updates its target row or is inserted, exactly once, with the same value both
    ways, and the metrics count the same rows. Computed afresh in each step (the key range,
    the join, the rows to insert), rows would be inserted beside rows they also updated, or
    lost."""
    import random

    from pyspark.sql import functions as F

    uri = str(tmp_path / "t")
    make_table(uri, 200, partitioned=False)
    # (Spark's rand() is seeded once per plan, so it gives the same rows each time; a Python
    # function's random numbers do not.)
    coin = F.udf(lambda _: random.random(), "double").asNondeterministic()
    source = (
        spark.range(0, 400, numPartitions=4)
        .filter(coin("id") < 0.5)
        .select("id", coin("id").alias("v"), F.lit("new").alias("g"))
    )
    metrics = (
        dls.merge(uri, source, "target.id = source.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    rows = read_by_deltalake(uri)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))  # no row both updated and inserted
    assert set(range(200)) <= set(ids)
    changed = [r for r in rows if r["g"] == "new"]
    assert metrics["num_source_rows"] == len(changed)
    assert metrics["num_target_rows_updated"] == sum(1 for r in changed if r["id"] < 200)
    assert metrics["num_target_rows_inserted"] == sum(1 for r in changed if r["id"] >= 200)
    assert 0 < metrics["num_target_rows_inserted"] < 200


def test_delete_and_update_match_deltalogs_own(spark: Any, tmp_path: Path) -> None:
    uri, copy = str(tmp_path / "t"), str(tmp_path / "copy")
    make_table(uri, 300)
    shutil.copytree(uri, copy)
    got = dls.delete(spark, uri, "id % 7 = 3 AND g <> 'g2'")
    ref = dl.DeltaTable(copy).delete("id % 7 = 3 AND g <> 'g2'")
    assert got["num_deleted_rows"] == ref["num_deleted_rows"] > 0
    got = dls.update(spark, uri, {"v": "v * 10", "g": "upper(g)"}, "id < 40")
    ref = dl.DeltaTable(copy).update({"v": "v * 10", "g": "upper(g)"}, "id < 40")
    assert got["num_updated_rows"] == ref["num_updated_rows"] > 0
    expected = sorted_rows(dl.DeltaTable(copy).to_pyarrow_table())
    assert sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()) == expected
    assert read_by_deltalake(uri) == expected
    # A predicate deltalog can plan with skips files (another partition's here); the rows of
    # a scanned file that the skipping predicate rules out are kept, not lost.
    files = len(dl.DeltaTable(uri).files())
    only = dls.delete(spark, uri, "g = 'g1' AND id > 250")
    dl.DeltaTable(copy).delete("g = 'g1' AND id > 250")
    assert only["num_files_scanned"] < files
    assert only["num_removed_files"] == 1
    expected = sorted_rows(dl.DeltaTable(copy).to_pyarrow_table())
    assert sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()) == expected
    # Nothing matches: no commit.
    version = dl.DeltaTable(uri).version()
    assert dls.delete(spark, uri, "id < 0")["version"] is None
    assert dl.DeltaTable(uri).version() == version
    # Every row: the files go whole, without reading them.
    live = dl.DeltaTable(uri).to_pyarrow_table().num_rows
    everything = dls.delete(spark, uri)
    assert everything["num_deleted_rows"] == live and everything["num_files_scanned"] == 0
    assert dl.DeltaTable(uri).to_pyarrow_table().num_rows == 0 == len(read_by_deltalake(uri))


def change_rows(uri: str, version: int) -> list[tuple[Any, ...]]:
    cdf = dl.DeltaTable(uri).load_cdf(starting_version=version, ending_version=version).read_all()
    return sorted(
        zip(
            cdf.column("_change_type").to_pylist(),
            cdf.column("id").to_pylist(),
            cdf.column("v").to_pylist(),
            strict=True,
        )
    )


@pytest.mark.parametrize("vectors", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_the_change_feed_shows_what_spark_changed(
    spark: Any, tmp_path: Path, vectors: bool
) -> None:
    """With the change feed on, MERGE/DELETE/UPDATE through Spark write change data files:
    the feed of each version equals the one deltalog's own operation records on a copy."""
    uri, copy = str(tmp_path / "t"), str(tmp_path / "copy")
    configuration = {"delta.enableChangeDataFeed": "true"}
    if vectors:
        configuration["delta.enableDeletionVectors"] = "true"
    rows = [{"id": i, "v": float(i), "g": f"g{i % 4}"} for i in range(120)]
    dl.write_table(
        uri, pa.Table.from_pylist(rows, SCHEMA), partition_by=["g"], configuration=configuration
    )
    shutil.copytree(uri, copy)
    source_rows = [(i, -float(i), "g0") for i in range(0, 150, 7)]
    source = spark.createDataFrame(source_rows, "id long, v double, g string")

    def clauses(m: Any) -> Any:
        return (
            m.when_matched_update({"v": "source.v"}, "target.id % 2 = 0")
            .when_matched_delete()
            .when_not_matched_insert_all()
        )

    ours = clauses(dls.merge(uri, source, "target.id = source.id")).execute()
    clauses(
        dl.DeltaTable(copy).merge(
            pa.Table.from_pylist(
                [dict(zip(SCHEMA.names, r, strict=True)) for r in source_rows], SCHEMA
            ),
            "target.id = source.id",
        )
    ).execute()
    assert ours["num_added_change_files"] > 0
    assert change_rows(uri, 1) == change_rows(copy, 1)
    assert {k for k, _, _ in change_rows(uri, 1)} == {
        "insert",
        "delete",
        "update_preimage",
        "update_postimage",
    }
    dls.delete(spark, uri, "id % 10 = 1")
    dl.DeltaTable(copy).delete("id % 10 = 1")
    assert change_rows(uri, 2) == change_rows(copy, 2)
    dls.update(spark, uri, {"v": "v + 0.5"}, "id > 100")
    dl.DeltaTable(copy).update({"v": "v + 0.5"}, "id > 100")
    assert change_rows(uri, 3) == change_rows(copy, 3)
    expected = sorted_rows(dl.DeltaTable(copy).to_pyarrow_table())
    assert sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()) == expected
    assert read_by_deltalake(uri) == expected


def test_what_this_path_cannot_do_is_refused(spark: Any, tmp_path: Path) -> None:
    plain = str(tmp_path / "plain")
    make_table(plain, 10)
    with pytest.raises(dl.InvalidArgumentError, match="not a column"):
        dls.update(spark, plain, {"nope": "1"}, "id = 1")
    assert dl.DeltaTable(plain).version() == 1


def lineage(uri: str) -> dict[int, tuple[int, int]]:
    """``id`` -> (``_row_id``, ``_row_commit_version``) as deltalog reads them."""
    t = dl.DeltaTable(uri).to_pyarrow_table(with_row_tracking=True)
    return {
        i: (r, v)
        for i, r, v in zip(
            t.column("id").to_pylist(),
            t.column("_row_id").to_pylist(),
            t.column("_row_commit_version").to_pylist(),
            strict=True,
        )
    }


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_row_tracking_keeps_row_ids(spark: Any, tmp_path: Path, dv: bool) -> None:
    """A table tracking rows ("Row Tracking"): UPDATE, DELETE and MERGE through Spark keep
    every surviving row's ID, updated rows take the commit's version, copied rows keep theirs,
    inserted rows get fresh IDs above every earlier one; the same lineage as deltalog's own
    operations on a copy give, and the same rows."""
    uri, copy = str(tmp_path / "t"), str(tmp_path / "copy")
    config = {"delta.enableRowTracking": "true"}
    if dv:
        config["delta.enableDeletionVectors"] = "true"
    data = pa.table(
        {
            "id": pa.array(range(40), pa.int64()),
            "v": pa.array([float(i) for i in range(40)]),
            "g": pa.array([f"g{i % 2}" for i in range(40)]),
        }
    )
    dl.write_table(uri, data.slice(0, 20), partition_by=["g"], configuration=config)
    dl.write_table(uri, data.slice(20), mode="append")
    shutil.copytree(uri, copy)
    before = lineage(uri)
    assert len({r for r, _ in before.values()}) == 40

    dls.update(spark, uri, {"v": "v + 100"}, "id % 3 = 0")
    dl.DeltaTable(copy).update({"v": "v + 100"}, "id % 3 = 0")
    dls.delete(spark, uri, "id % 7 = 1")
    dl.DeltaTable(copy).delete("id % 7 = 1")
    rows = [(i, -1.0, f"g{i % 2}") for i in (2, 4, 50, 51)]
    source = spark.createDataFrame(rows, "id long, v double, g string")
    (
        dls.merge(uri, source, "target.id = source.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    (
        dl.DeltaTable(copy)
        .merge(
            pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA),
            "target.id = source.id",
        )
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    after, reference = lineage(uri), lineage(copy)
    assert sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()) == sorted_rows(
        dl.DeltaTable(copy).to_pyarrow_table()
    )
    updated_at, merged_at = 2, 4  # (version 3 is the DELETE)
    for i, (row_id, version) in after.items():
        if i >= 40:  # inserted: a fresh ID above every earlier one
            assert row_id >= 40 and version == merged_at
            continue
        assert row_id == before[i][0], i  # every surviving row keeps its ID
        assert (row_id, version) == reference[i], i
        if i in (2, 4):
            assert version == merged_at
        elif i % 3 == 0:
            assert version == updated_at
        else:  # untouched or copied: the version that wrote it
            assert version == before[i][1]
    assert not any(i % 7 == 1 for i in after if i < 40)
    assert len({r for r, _ in after.values()}) == len(after)
    assert read_by_deltalake(uri) == sorted_rows(dl.DeltaTable(copy).to_pyarrow_table())


def test_deletion_vectors_mask_rows_instead_of_copying(spark: Any, tmp_path: Path) -> None:
    """A table that writes deletion vectors: MERGE, DELETE and UPDATE through Spark mask the
    rows that go and copy nothing; the same rows as deltalog's own operations (which use
    vectors too) and as the deltalake package reads them."""
    uri, copy = str(tmp_path / "t"), str(tmp_path / "copy")
    dl.write_table(
        uri,
        pa.table(
            {
                "id": pa.array(range(400), pa.int64()),
                "v": pa.array([float(i) for i in range(400)]),
                "g": pa.array([f"g{i % 4}" for i in range(400)]),
            }
        ),
        partition_by=["g"],
        configuration={"delta.enableDeletionVectors": "true"},
    )
    shutil.copytree(uri, copy)
    rows = [(i, -float(i), "g0") for i in range(0, 450, 9)]
    source = spark.createDataFrame(rows, "id long, v double, g string")
    ours = (
        dls.merge(uri, source, "target.id = source.id")
        .when_matched_update({"v": "source.v"}, "target.id % 2 = 0")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .execute()
    )
    dl.DeltaTable(copy).merge(
        pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA),
        "target.id = source.id",
    ).when_matched_update(
        {"v": "source.v"}, "target.id % 2 = 0"
    ).when_matched_delete().when_not_matched_insert_all().execute()
    assert ours["num_deletion_vectors_added"] == 4 and ours["num_target_rows_copied"] == 0
    assert sum(1 for t in dl.DeltaTable(uri).scan().tasks() if t.deletion_vector) == 4
    got = dls.delete(spark, uri, "id % 10 = 1")
    dl.DeltaTable(copy).delete("id % 10 = 1")
    assert got["num_deletion_vectors_added"] > 0 and got["num_copied_rows"] == 0
    got = dls.update(spark, uri, {"v": "v + 0.5"}, "id > 300")
    dl.DeltaTable(copy).update({"v": "v + 0.5"}, "id > 300")
    assert got["num_copied_rows"] == 0
    expected = sorted_rows(dl.DeltaTable(copy).to_pyarrow_table())
    assert sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()) == expected
    assert read_by_deltalake(uri) == expected
    assert sorted_rows(spark.read.format("deltalog").load(uri).toArrow()) == expected


CONDITIONS = [None, "source.v > 10", "target.v < 20", "target.id % 2 = 0"]


def _clause_strategy() -> Any:
    from hypothesis import strategies as st

    condition = st.sampled_from(CONDITIONS)
    target_only = st.sampled_from([None, "target.v < 20", "target.id % 3 = 0"])
    return st.one_of(
        st.tuples(st.just("when_matched_update"), condition),
        st.tuples(st.just("when_matched_update_all"), condition),
        st.tuples(st.just("when_matched_delete"), condition),
        st.tuples(st.just("when_not_matched_insert"), st.sampled_from([None, "source.v > 10"])),
        st.tuples(st.just("when_not_matched_insert_all"), st.sampled_from([None, "source.v > 10"])),
        st.tuples(st.just("when_not_matched_by_source_update"), target_only),
        st.tuples(st.just("when_not_matched_by_source_delete"), target_only),
    )


def _apply(merger: Any, clauses: list[tuple[str, str | None]]) -> Any:
    for method, condition in clauses:
        if method == "when_matched_update":
            merger = merger.when_matched_update({"v": "source.v + target.v"}, condition)
        elif method == "when_not_matched_insert":
            merger = merger.when_not_matched_insert({"id": "source.id", "v": "source.v"}, condition)
        elif method == "when_not_matched_by_source_update":
            merger = merger.when_not_matched_by_source_update({"v": "target.v - 1"}, condition)
        else:
            merger = getattr(merger, method)(condition)
    return merger


def test_random_merges_match_deltalogs_own(spark: Any, tmp_path_factory: Any) -> None:
    """Differential: random targets, sources (duplicate keys included) and clause lists, with
    and without deletion vectors; Spark's evaluation of the clauses and deltalog's own MERGE
    give the same rows, or both refuse the MERGE as ambiguous."""
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=12, deadline=None, derandomize=True)
    @given(
        target_ids=st.sets(st.integers(0, 40), min_size=0, max_size=25),
        source=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 30)), min_size=0, max_size=12),
        clauses=st.lists(_clause_strategy(), min_size=1, max_size=4),
        vectors=st.booleans(),
    )
    def check(
        target_ids: set[int],
        source: list[tuple[int, int]],
        clauses: list[tuple[str, str | None]],
        vectors: bool,
    ) -> None:
        root = tmp_path_factory.mktemp("merge")
        uri, copy = str(root / "t"), str(root / "copy")
        ids = sorted(target_ids)
        dl.write_table(
            uri,
            pa.Table.from_pylist([{"id": i, "v": float(i), "g": f"g{i % 3}"} for i in ids], SCHEMA),
            configuration={"delta.enableDeletionVectors": str(vectors).lower()},
        )
        shutil.copytree(uri, copy)
        rows = [{"id": i, "v": float(v), "g": "s"} for i, v in source]
        outcomes = []
        for run in ("spark", "deltalog"):
            try:
                if run == "spark":
                    frame = spark.createDataFrame(
                        [(r["id"], r["v"], r["g"]) for r in rows], "id long, v double, g string"
                    )
                    merger = dls.merge(uri, frame, "target.id = source.id")
                else:
                    merger = dl.DeltaTable(copy).merge(
                        pa.Table.from_pylist(rows, SCHEMA), "target.id = source.id"
                    )
                _apply(merger, clauses).execute()
                outcomes.append("ok")
            except dl.InvalidArgumentError as e:
                assert "ambiguous" in str(e), e
                outcomes.append("ambiguous")
        assert outcomes[0] == outcomes[1], (outcomes, clauses, source)
        assert sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()) == sorted_rows(
            dl.DeltaTable(copy).to_pyarrow_table()
        ), (clauses, source)

    check()


def test_dml_on_a_catalog_managed_table(spark: Any, tmp_path: Path) -> None:
    """A catalog-managed table (SQLite catalog): the executors open its version from the
    commits the driver got, and the one commit goes through the catalog."""
    cat = dl.connect_catalog(
        {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    )
    cat.create_namespace("db")
    cat.write_table(
        "db.t",
        pa.Table.from_pylist(
            [{"id": i, "v": float(i), "g": f"g{i % 2}"} for i in range(20)], SCHEMA
        ),
    )
    got = dls.delete(spark, cat.load_table("db.t"), "id < 5")
    assert got["num_deleted_rows"] == 5
    source = spark.createDataFrame(
        [(7, -7.0, "g1"), (99, 1.0, "g1")], "id long, v double, g string"
    )
    dls.merge(
        cat.load_table("db.t"), source, "target.id = source.id"
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    t = cat.load_table("db.t")
    assert t.version() == 2 and cat.describe_table("db.t").latest_version == 2
    rows = {r["id"]: r["v"] for r in t.to_pyarrow_table().to_pylist()}
    assert sorted(rows) == [*range(5, 20), 99] and rows[7] == -7.0


def test_the_target_is_read_on_sparks_parquet_scan(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Without deletion vectors the target is Spark's own parquet scan (issue #33, item 4): a
    row is its file's ``_metadata.file_path`` and ``row_index``, mapped back to the log's
    paths, here with a space, ``%``, ``[`` and non-ASCII characters in them. DELETE, UPDATE
    and a MERGE with every clause kind give deltalog's own results, read back by deltalake."""
    import logging

    uri, copy = str(tmp_path / "t a[1]%é"), str(tmp_path / "copy")
    groups = ["a b", "50%", "é", "x[1]"]
    data = pa.table(
        {
            "id": pa.array(range(120), pa.int64()),
            "v": pa.array([float(i) for i in range(120)]),
            "g": pa.array([groups[i % 4] for i in range(120)]),
        }
    )
    dl.write_table(uri, data, partition_by=["g"])
    shutil.copytree(uri, copy)
    with caplog.at_level(logging.INFO, logger="deltalog.spark"):
        dls.delete(spark, uri, "id % 5 = 1")
        dls.update(spark, uri, {"v": "v + 1000"}, "g = 'é' OR id > 100")
        rows = [(i, -float(i), groups[i % 4]) for i in range(0, 140, 9)]
        source = spark.createDataFrame(rows, "id long, v double, g string").repartition(2)
        (
            dls.merge(uri, source, "target.id = source.id")
            .when_matched_update_all("source.id % 2 = 0")
            .when_matched_delete()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_update({"v": "target.v * 2"}, "target.id < 30")
            .execute()
        )
    assert caplog.text.count("native parquet scan") == 3, caplog.text
    reference = dl.DeltaTable(copy)
    reference.delete("id % 5 = 1")
    reference.update({"v": "v + 1000"}, "g = 'é' OR id > 100")
    source_table = pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA
    )
    (
        dl.DeltaTable(copy)
        .merge(source_table, "target.id = source.id")
        .when_matched_update_all("source.id % 2 = 0")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_update({"v": "target.v * 2"}, "target.id < 30")
        .execute()
    )
    expected = sorted_rows(dl.DeltaTable(copy).to_pyarrow_table())
    assert sorted_rows(dl.DeltaTable(uri).to_pyarrow_table()) == expected
    assert read_by_deltalake(uri) == expected


@pytest.mark.parametrize("dv", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_every_dml_logs_how_it_reads_its_target(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, dv: bool
) -> None:
    """Issue #42: DELETE, UPDATE and MERGE each log one ``DML target`` line (docs/spark.md),
    on a table whose files carry deletion vectors as on one without (both Spark's parquet
    scan, the vectors through deltalog's JVM companion, issue #45); a DELETE of every row,
    which reads nothing, says so."""
    import logging

    uri = str(tmp_path / "t")
    data = pa.table({"id": pa.array(range(40), pa.int64()), "v": [float(i) for i in range(40)]})
    dl.write_table(uri, data, configuration={"delta.enableDeletionVectors": str(dv).lower()})
    if dv:
        dl.DeltaTable(uri).delete("id = 0")  # a deletion vector on the table's one file
    source = spark.createDataFrame([(i, -1.0) for i in range(30, 50)], "id long, v double")
    with caplog.at_level(logging.INFO, logger="deltalog.spark"):
        dls.delete(spark, uri, "id % 5 = 1")
        dls.update(spark, uri, {"v": "v + 100"}, "id > 20")
        (
            dls.merge(uri, source, "target.id = source.id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        dls.delete(spark, uri)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("DML target")]
    assert len(lines) == 4, lines
    uri_text = dl.DeltaTable(uri).table_uri
    assert all(line.startswith(f"DML target of {uri_text}: ") for line in lines)
    for line in lines[:3]:
        assert line.endswith("native parquet scan"), line
    assert lines[3].endswith("no rows read (every file is removed whole)")
    assert dl.DeltaTable(uri).to_pyarrow_table().num_rows == 0
