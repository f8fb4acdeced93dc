"""Metadata cleanup and VACUUM, with an injected clock.

Cleanup ("Metadata Cleanup"): exactly the log files before the newest checkpoint older than
the retention cutoff go (commits, checkpoints, checksums, compactions, unreferenced sidecars a
day old, dead temporary files); every version from that checkpoint on still loads.

VACUUM: exactly the files that are unreferenced by the latest version and by tombstones inside
the retention, and older than it, go; a dry run changes nothing; short retentions are refused
unless forced; a table whose writer protocol deltalog does not support is refused
("VACUUM Protocol Check").
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl
from conftest import LogWriter, add, commit_info, metadata, protocol, set_mtime
from test_checkpoint import state

DAY = 86_400_000
NOW = int(time.time() * 1000)


def one(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64())})


def age_commits(log: Path, versions: range, ms: int) -> None:
    for v in versions:
        set_mtime(log / f"{v:020}.json", ms)


# ---------------------------------------------------------------------------------------------
# Metadata cleanup


def test_cleanup_keeps_everything_from_the_cutoff_checkpoint(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    for i in range(25):  # v0..v24, automatic checkpoints at 10 and 20
        dl.write_table(uri, one(i), mode="append" if i else "error")
    log = uri / "_delta_log"
    dl.DeltaTable(uri).compact_logs(3, 6)
    dl.DeltaTable(uri).compact_logs(12, 14)
    age_commits(log, range(0, 15), NOW - 40 * DAY)  # older than 30 days
    age_commits(log, range(15, 25), NOW - DAY)
    stale_tmp = log / ".00000000000000000007.checkpoint.parquet.x.tmp"
    stale_tmp.write_bytes(b"partial")
    set_mtime(stale_tmp, NOW - 3 * DAY)
    fresh_tmp = log / ".00000000000000000024.checkpoint.parquet.y.tmp"
    fresh_tmp.write_bytes(b"partial")
    before = state(dl.DeltaTable(uri))

    deleted = dl.DeltaTable(uri).cleanup_metadata()
    expected = {f"{v:020}.{ext}" for v in range(10) for ext in ("json", "crc")} | {
        f"{3:020}.{6:020}.compacted.json",
        stale_tmp.name,
    }
    assert set(deleted) == expected
    assert not stale_tmp.exists() and fresh_tmp.exists()
    assert (log / f"{12:020}.{14:020}.compacted.json").exists()
    assert (log / f"{10:020}.checkpoint.parquet").exists()
    assert state(dl.DeltaTable(uri)) == before
    for v in range(10, 25):
        assert dl.DeltaTable(uri, version=v).to_pyarrow_table().num_rows == v + 1
    with pytest.raises(dl.VersionNotFoundError):
        dl.DeltaTable(uri, version=9)
    # Nothing more to do.
    assert dl.DeltaTable(uri).cleanup_metadata() == []


def test_cleanup_needs_a_checkpoint_before_the_cutoff(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    for i in range(8):
        dl.write_table(uri, one(i), mode="append" if i else "error")
    age_commits(uri / "_delta_log", range(8), NOW - 40 * DAY)
    assert dl.DeltaTable(uri).cleanup_metadata() == []
    # An injected clock far ahead changes nothing without a checkpoint either.
    assert dl.DeltaTable(uri).cleanup_metadata(now=NOW + 400 * DAY) == []
    assert dl.DeltaTable(uri, version=0).version() == 0


def test_cleanup_removes_stale_staging_files_of_killed_writers(tmp_path: Path) -> None:
    """object_store stages a local write as `<name>#<n>` before linking or renaming it into
    place; a killed writer leaves it behind (hidden from listings). Cleanup removes those older
    than the retention cutoff, with or without a cutoff checkpoint, and nothing else."""
    uri = tmp_path / "t"
    for i in range(4):
        dl.write_table(uri, one(i), mode="append" if i else "error")
    log = uri / "_delta_log"
    before = state(dl.DeltaTable(uri))
    stale = [
        "00000000000000000004.json#1",  # a commit that never got linked
        "00000000000000000002.json#2",  # linked, staging file not unlinked
        "00000000000000000003.crc#1",
        "_last_checkpoint#1",
        "00000000000000000003.checkpoint.parquet#1",
    ]
    fresh = ["00000000000000000005.json#1"]  # a writer may still be linking it
    foreign = ["notes.txt#1", "00000000000000000004.json#x", "00000000000000000004.json#"]
    for name in stale + fresh + foreign:
        (log / name).write_bytes(b'{"commitInfo":{}}\n')
    for name in stale + foreign:
        set_mtime(log / name, NOW - 40 * DAY)
    # Older than a day but inside the 30-day retention: kept too.
    set_mtime(log / fresh[0], NOW - 3 * DAY)

    deleted = dl.DeltaTable(uri).cleanup_metadata()
    assert sorted(deleted) == sorted(stale)
    for name in stale:
        assert not (log / name).exists(), name
    for name in fresh + foreign:
        assert (log / name).exists(), name
    after = dl.DeltaTable(uri)
    assert state(after) == before
    assert after.version() == 3
    # The table is untouched for another reader as well.
    peer = deltalake.DeltaTable(str(uri))
    assert peer.version() == 3
    assert sorted(peer.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2, 3]
    # With a shorter retention the fresher one goes too, a day after it was written.
    dl.DeltaTable(uri).alter.set_properties({"delta.logRetentionDuration": "interval 1 days"})
    assert fresh[0] in dl.DeltaTable(uri).cleanup_metadata()


def test_cleanup_honours_the_retention_property(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    dl.write_table(uri, one(0), configuration={"delta.logRetentionDuration": "interval 2 days"})
    for i in range(1, 12):
        dl.write_table(uri, one(i), mode="append")
    log = uri / "_delta_log"
    age_commits(log, range(0, 12), NOW - 3 * DAY - 1000)
    assert set(dl.DeltaTable(uri).cleanup_metadata()) == {
        f"{v:020}.{ext}" for v in range(10) for ext in ("json", "crc")
    }


def test_cleanup_sidecars(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    for i in range(4):
        dl.write_table(uri, one(i), mode="append" if i else "error")
    t = dl.DeltaTable(uri)
    t.alter.add_feature("v2Checkpoint")
    t = dl.DeltaTable(uri)
    old = t.create_checkpoint("v2-parquet", sidecars=2)  # at v4
    for i in range(4, 8):
        dl.write_table(uri, one(i), mode="append")
    new = dl.DeltaTable(uri).create_checkpoint("v2-json", sidecars=1)  # at v8
    log = uri / "_delta_log"
    side = log / "_sidecars"
    orphan_old = side / "0e2cb2a9-0000-4000-8000-000000000001.parquet"
    orphan_old.write_bytes(b"x")
    orphan_new = side / "0e2cb2a9-0000-4000-8000-000000000002.parquet"
    orphan_new.write_bytes(b"x")
    for p in side.iterdir():
        if p != orphan_new:
            set_mtime(p, NOW - 5 * DAY)
    age_commits(log, range(0, 9), NOW - 40 * DAY)
    deleted = set(dl.DeltaTable(uri).cleanup_metadata())
    old_sidecars = {f.removeprefix("_delta_log/") for f in old["files"] if "_sidecars/" in f}
    new_sidecars = {f.removeprefix("_delta_log/") for f in new["files"] if "_sidecars/" in f}
    assert {f"{v:020}.json" for v in range(8)} <= deleted
    assert old_sidecars <= deleted, "the v4 checkpoint went, and its sidecars with it"
    assert f"_sidecars/{orphan_old.name}" in deleted
    assert not (new_sidecars & deleted)
    assert orphan_new.exists()
    assert dl.DeltaTable(uri).to_pyarrow_table().num_rows == 8


# ---------------------------------------------------------------------------------------------
# VACUUM


def data_files(uri: Path) -> set[str]:
    out = set()
    for root, _dirs, files in os.walk(uri):
        rel_root = Path(root).relative_to(uri)
        if rel_root.parts and rel_root.parts[0] == "_delta_log":
            continue
        out |= {str(rel_root / f) if rel_root.parts else f for f in files}
    return out


def build_vacuum_table(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    uri = tmp_path / "t"
    config = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    data = pa.table({"id": pa.array(range(100), pa.int64())})
    dl.write_table(uri, data, configuration=config)  # v0: file A
    first = set(data_files(uri))
    dl.write_table(uri, data, mode="overwrite")  # v1: A removed, B added
    second = data_files(uri) - first
    dl.DeltaTable(uri).delete("id % 3 = 0")  # v2: B gets a DV (in a DV file: not tiny)
    dl.DeltaTable(uri).update(set={"id": "id + 1000"}, predicate="id = 50")  # v3: cdc + C
    names = {
        "A": next(iter(first)),
        "B": next(f for f in second if f.endswith(".parquet")),
        "orphan": "part-00000-orphan.snappy.parquet",
        "fresh": "part-00001-fresh.snappy.parquet",
        "hidden": "_tmp/x.parquet",
        "dot": ".hidden.parquet",
    }
    for key in ("orphan", "fresh", "hidden", "dot"):
        p = uri / names[key]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"junk")
    # Every file is old, except the fresh orphan.
    for f in data_files(uri):
        set_mtime(uri / f, NOW - 30 * DAY)
    set_mtime(uri / names["fresh"], NOW + 9 * DAY - 3_600_000)
    return uri, names


def test_vacuum_deletes_exactly_the_expired_unreferenced_files(tmp_path: Path) -> None:
    uri, names = build_vacuum_table(tmp_path)
    t = dl.DeltaTable(uri)
    before_files = data_files(uri)
    content = sorted(t.to_pyarrow_table().column("id").to_pylist())
    active = set(t.files())
    dv_files = {f for f in before_files if f.startswith("deletion_vector_")}
    cdc = {f for f in before_files if f.startswith("_change_data/")}
    assert dv_files and cdc

    # Now: A's tombstone is young, so only the orphan goes (old, never referenced) and the
    # change data files (never part of a snapshot).
    plan = t.vacuum()
    assert set(plan) == {names["orphan"]} | cdc
    assert plan.num_files == len(plan) and plan.bytes > 0
    assert data_files(uri) == before_files, "a dry run deletes nothing"

    # Nine days on: A's tombstone has expired too, and so has the DV file the UPDATE
    # superseded; the active files, the DV they use, the fresh orphan and hidden paths stay.
    later = NOW + 9 * DAY
    plan = t.vacuum(now=later)
    must = {names["orphan"], names["A"]} | cdc
    assert must <= set(plan)
    assert not set(plan) & (active | {names["fresh"], names["hidden"], names["dot"]})
    superseded = set(plan) - must
    assert len(superseded) == 1 and superseded <= dv_files
    version = t.version()
    deleted = t.vacuum(now=later, dry_run=False)
    assert set(deleted) == set(plan)
    # Recorded in the history as Delta Spark does: VACUUM START, then VACUUM END.
    assert t.version() == version + 2
    end, start = t.history(2)
    assert start["operation"] == "VACUUM START" and end["operation"] == "VACUUM END"
    assert start["operationParameters"] == {
        "retentionCheckEnabled": "true",
        "defaultRetentionMillis": str(7 * DAY),
    }
    assert start["operationMetrics"] == {
        "numFilesToDelete": str(len(plan)),
        "sizeOfDataToDelete": str(plan.bytes),
    }
    assert end["operationParameters"] == {"status": "COMPLETED"}
    assert end["operationMetrics"]["numDeletedFiles"] == str(len(plan))
    assert start["isBlindAppend"] and end["readVersion"] == version + 1
    peer = deltalake.DeltaTable(str(uri))
    assert [h["operation"] for h in peer.history(2)] == ["VACUUM END", "VACUUM START"]
    assert peer.version() == version + 2
    after = data_files(uri)
    assert after == before_files - set(plan)
    assert active <= after and dv_files - superseded <= after
    assert {names["fresh"], names["hidden"], names["dot"]} <= after
    assert sorted(dl.DeltaTable(uri).to_pyarrow_table().column("id").to_pylist()) == content
    with pytest.raises(dl.DataFileNotFoundError):
        dl.DeltaTable(uri, version=0).to_pyarrow_table()
    assert t.vacuum(now=later, dry_run=False) == []


def test_vacuum_retention_is_enforced(tmp_path: Path) -> None:
    uri, names = build_vacuum_table(tmp_path)
    t = dl.DeltaTable(uri)
    with pytest.raises(dl.InvalidArgumentError, match="deletedFileRetentionDuration"):
        t.vacuum(retention_hours=0)
    forced = t.vacuum(retention_hours=0, enforce_retention_duration=False)
    assert names["A"] in forced, "with no retention the removed file A goes at once"
    assert names["fresh"] not in forced, "a file from the future is not older than now"
    longer = t.vacuum(retention_hours=24 * 60)
    assert longer == [], "nothing is 60 days old"


def test_vacuum_protocol_check_refuses_unknown_writer_features(tmp_path: Path) -> None:
    log = LogWriter(tmp_path / "t")
    log.commit(
        0,
        [
            commit_info(),
            protocol(3, 7, ["vacuumProtocolCheck"], ["vacuumProtocolCheck", "someFutureFeature"]),
            metadata(),
            add("a.parquet"),
        ],
    )
    (tmp_path / "t" / "orphan.parquet").write_bytes(b"x")
    set_mtime(tmp_path / "t" / "orphan.parquet", NOW - 30 * DAY)
    t = dl.DeltaTable(tmp_path / "t")  # readable: only reader features matter
    with pytest.raises(dl.UnsupportedFeatureError, match="someFutureFeature"):
        t.vacuum(dry_run=False)
    assert (tmp_path / "t" / "orphan.parquet").exists()


def test_vacuum_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri, _ = build_vacuum_table(tmp_path)
    dl.DeltaTable(uri).vacuum(dry_run=False, progress=True)
    err = capsys.readouterr().err
    assert "VACUUM" in err and "files" in err
    assert json.dumps(err)  # printable


def test_command_line_maintenance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltalog.cli.main import main

    uri, names = build_vacuum_table(tmp_path)
    assert main(["checkpoint", str(uri)]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == [
        f"_delta_log/{dl.DeltaTable(uri).version():020}.checkpoint.parquet"
    ]
    assert main(["compact-log", str(uri), "--start", "1", "--end", "3"]) == 0
    assert capsys.readouterr().out.strip().endswith(".compacted.json")
    assert main(["cleanup", str(uri)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["vacuum", str(uri)]) == 0
    out = capsys.readouterr()
    assert names["orphan"] in out.out.split() and "dry run" in out.err
    assert (uri / names["orphan"]).exists()
    assert main(["vacuum", str(uri), "--retention-hours", "1"]) == 1
    assert "deletedFileRetentionDuration" in capsys.readouterr().err
    assert main(["vacuum", str(uri), "--apply"]) == 0
    capsys.readouterr()
    assert not (uri / names["orphan"]).exists()


def test_vacuum_keeps_files_named_by_absolute_uris(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = LogWriter(root)
    log.commit(
        0,
        [
            commit_info(),
            protocol(),
            metadata(),
            add(f"file://{root}/abs%20one.parquet"),
            add(f"{root}/abs-two.parquet"),
            add("rel.parquet"),
        ],
    )
    for name in ("abs one.parquet", "abs-two.parquet", "rel.parquet", "orphan.parquet"):
        (root / name).write_bytes(b"x")
        set_mtime(root / name, NOW - 30 * DAY)
    assert dl.DeltaTable(root).vacuum() == ["orphan.parquet"]
