"""Incremental snapshot updates (`Snapshot::advance`, `DeltaTable.update_incremental`).

A snapshot moved forward by replaying only the newer commits onto it must be the snapshot a
fresh load of that version gives ("Action Reconciliation"): the same files with the same
statistics, protocol, metadata, transactions, domain metadata, commit timestamp, and, written
into a checkpoint, the same tombstones (VACUUM relies on them).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from conftest import CORPUS, load_expectations
from test_checkpoint import state

EXPECT = load_expectations()
READABLE = sorted(k for k, v in EXPECT.items() if not v["must_fail"])


def full_state(t: dl.DeltaTable) -> dict[str, Any]:
    out = state(t)
    # `dataChange` says what the commit that added a file did; a checkpoint writes false
    # (Delta Spark's convention), so it depends on where replay found the action.
    for add in out["adds"]:
        add.pop("data_change", None)
    out["timestamp"] = t._raw.timestamp()
    return out


@pytest.mark.parametrize("root", READABLE, ids=READABLE)
def test_golden_tables_advance_to_the_fresh_snapshot(root: str) -> None:
    table_root = CORPUS / root
    latest = dl.DeltaTable(table_root)
    try:
        latest.metadata()
    except dl.CorruptLogError:
        # A legacy log without metaData: compare what such a snapshot has.
        t = dl.DeltaTable(table_root, version=0)
        t.update_incremental()
        assert (t.version(), sorted(t.files())) == (latest.version(), sorted(latest.files()))
        return
    fresh = full_state(latest)
    last = latest.version()
    tried = 0
    for start in sorted({0, last // 2, last - 1, last}):
        try:
            t = dl.DeltaTable(table_root, version=start)
        except dl.DeltaError:
            continue  # cleaned-up versions cannot be loaded at all
        tried += 1
        t.update_incremental()
        assert full_state(t) == fresh, f"from version {start}"
    assert tried


def commits_only(uri: Path, tmp: Path) -> dl.DeltaTable:
    """A copy of the table without checkpoints, checksums or `_last_checkpoint` (modification
    times kept): a replay of the JSON commits alone, independent of any checkpoint deltalog
    wrote from an incrementally advanced snapshot."""
    copy = tmp / f"commits-only-{random.random()}"
    shutil.copytree(
        uri,
        copy,
        ignore=shutil.ignore_patterns("*.checkpoint*", "_last_checkpoint", "*.crc", "_sidecars"),
    )
    return dl.DeltaTable(copy)


def checkpoint_tombstones(t: dl.DeltaTable) -> list[str]:
    """The remove paths of a classic checkpoint of `t`'s snapshot; the table is left as it was."""
    log = Path(t.table_uri.removeprefix("file://")) / "_delta_log"
    name = log / f"{t.version():020}.checkpoint.parquet"
    saved = {p: p.read_bytes() for p in (name, log / "_last_checkpoint") if p.exists()}
    t.create_checkpoint("classic")
    removes = pq.read_table(name).column("remove").to_pylist()
    name.unlink()
    for p, data in saved.items():
        p.write_bytes(data)
    return sorted(r["path"] for r in removes if r)


@pytest.mark.parametrize("seed", [7, 11, 23])
def test_statements_on_one_table_object_match_fresh_loads(tmp_path: Path, seed: int) -> None:
    """Appends, deletes with and without deletion vectors, updates, merges, application
    transactions and property changes through one `DeltaTable`, which each statement moves
    forward incrementally; after each, it equals a fresh load."""
    uri = tmp_path / "t"
    rng = random.Random(seed)

    def batch(ids: list[int]) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "part": pa.array([i % 3 for i in ids], pa.int64()),
                "v": pa.array([f"v{i}" for i in ids]),
            }
        )

    dl.write_table(uri, batch(list(range(20))), partition_by="part")
    t = dl.DeltaTable(uri)
    next_id = 20
    for step in range(40):
        op = rng.choice(
            ["append", "append", "delete", "update", "merge", "txn", "props", "restore"]
        )
        if op == "append":
            ids = list(range(next_id, next_id + rng.randint(1, 5)))
            next_id += len(ids)
            dl.write_table(t, batch(ids), mode="append")
        elif op == "delete":
            t.delete(f"id % {rng.randint(3, 9)} = {rng.randint(0, 2)}")
        elif op == "update":
            t.update({"v": "'u'"}, predicate=f"id < {rng.randint(0, next_id)}")
        elif op == "merge":
            ids = [rng.randint(0, next_id + 3) for _ in range(4)]
            (
                t.merge(batch(sorted(set(ids))), "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )
            next_id += 4
        elif op == "txn":
            dl.write_table(
                t,
                batch([next_id]),
                mode="append",
                commit_properties=dl.CommitProperties(app_id=f"app{step % 2}", app_version=step),
            )
            next_id += 1
        elif op == "restore" and t.version() > 0:
            # Re-adds files earlier commits removed: their tombstones must go.
            t.restore(rng.randint(max(0, t.version() - 6), t.version() - 1))
        elif op == "props":
            enable = step % 2 == 0
            t.alter.set_properties({"delta.enableDeletionVectors": str(enable).lower()})
        assert full_state(t) == full_state(dl.DeltaTable(uri)), (step, op)
        if step % 10 == 9 or op == "restore":
            # The automatic checkpoints came from advanced snapshots too: check against the
            # commits alone.
            replayed = commits_only(uri, tmp_path)
            assert full_state(t) == full_state(replayed), (step, op)
            assert checkpoint_tombstones(t) == checkpoint_tombstones(replayed)
    assert t.version() >= 30  # statements that match no row commit nothing
    assert list((uri / "_delta_log").glob("*.checkpoint.parquet"))
    assert checkpoint_tombstones(t)


def test_only_the_new_commits_are_read(tmp_path: Path) -> None:
    """Proof of incrementality: with an old commit made unreadable, a fresh load fails while
    moving a loaded snapshot forward does not touch it."""
    uri = tmp_path / "t"
    one = pa.table({"id": pa.array([1], pa.int64())})
    dl.write_table(uri, one)
    dl.write_table(uri, one, mode="append")
    t = dl.DeltaTable(uri)
    dl.write_table(uri, one, mode="append")
    (uri / "_delta_log" / f"{0:020}.json").write_text("garbage\n")
    with pytest.raises(dl.CorruptLogError):
        dl.DeltaTable(uri)
    t.update_incremental()
    assert t.version() == 2 and t.to_pyarrow_table().num_rows == 3


def test_advance_edge_cases(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    one = pa.table({"id": pa.array([1], pa.int64())})
    dl.write_table(uri, one)
    t = dl.DeltaTable(uri)
    t.update_incremental()  # nothing new
    assert t.version() == 0
    for _ in range(3):
        dl.write_table(uri, one, mode="append")
    # Older versions are reachable through the same call.
    raw = t._raw.advance(2)
    assert raw.version() == 2 and raw.num_files() == 3
    assert t._raw.advance(1).num_files() == 2
    with pytest.raises(dl.VersionNotFoundError):
        t._raw.advance(9)
    # A checkpoint past the loaded version, and the commits it covers cleaned up: the
    # newer state still arrives (from the checkpoint).
    for _ in range(12):
        dl.write_table(uri, one, mode="append")
    log = uri / "_delta_log"
    for v in range(1, 10):
        (log / f"{v:020}.json").unlink()
    t.update_incremental()
    assert t.version() == 15 and t.to_pyarrow_table().num_rows == 16
    assert full_state(t) == full_state(dl.DeltaTable(uri))
