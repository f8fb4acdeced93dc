"""`RawSnapshot.version_changes()` and `RawSnapshot.checkpoint_version()` (issue #47: the web
UI's chart of a table's history) on real tables.

What each version added and removed must add up to the snapshot: the bytes added less the
bytes removed over all versions are the active files' sizes, the files added less the files
removed their count. The versions and timestamps are those of `history()`. A table written by
the `deltalake` package, another implementation, must add up to deltalake's own view of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl

DV = {"delta.enableDeletionVectors": "true"}

FIELDS = (
    "version",
    "timestamp",
    "commit_info",
    "files_added",
    "bytes_added",
    "files_removed",
    "bytes_removed",
    "removed_without_size",
    "deletion_vectors_added",
    "metadata_changed",
    "protocol_changed",
)


def rows(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([f"p{i % 3}" for i in ids], pa.string()),
            "s": pa.array([f"value {i}" for i in ids], pa.string()),
        }
    )


def changes(table: dl.DeltaTable, limit: int | None = None) -> list[dict[str, Any]]:
    """`version_changes()` as dicts of the named fields, `commit_info` parsed."""
    out = []
    for entry in table._raw.version_changes(limit):
        change = dict(zip(FIELDS, entry, strict=True))
        info = change["commit_info"]
        change["commit_info"] = json.loads(info) if info is not None else None
        out.append(change)
    return out


def assert_adds_up(table: dl.DeltaTable, entries: list[dict[str, Any]]) -> None:
    """The entries' sums are the snapshot's active files (their count and sizes)."""
    sizes = table.get_add_actions().column("size").to_pylist()
    assert sum(e["bytes_added"] - e["bytes_removed"] for e in entries) == sum(sizes)
    assert sum(e["files_added"] - e["files_removed"] for e in entries) == len(sizes)
    assert len(sizes) == len(table.files())


def assert_matches_history(table: dl.DeltaTable, entries: list[dict[str, Any]]) -> None:
    """The versions, timestamps and commitInfo of `history()` (on the same snapshot)."""
    history = table._raw.history(None)
    assert [(e["version"], e["timestamp"]) for e in entries] == [(v, ts) for v, ts, _ in history]
    assert [e["commit_info"] for e in entries] == [
        json.loads(info) if info is not None else None for _, _, info in history
    ]
    # The public history() shows the same versions and timestamps.
    assert [(h["version"], h["timestamp"]) for h in table.history()] == [
        (e["version"], e["timestamp"]) for e in entries
    ]


def test_a_table_written_deleted_and_altered_adds_up(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    dl.write_deltalake(uri, rows(60), partition_by=["part"], configuration=DV)  # v0
    dl.write_deltalake(uri, rows(30, start=60), mode="append")  # v1
    dl.DeltaTable(uri).delete("id % 7 = 0")  # v2: deletion vectors on every file
    dl.DeltaTable(uri).delete("part = 'p1'")  # v3: whole files removed
    dl.write_deltalake(uri, rows(10, start=100), mode="overwrite")  # v4
    retention = {"delta.logRetentionDuration": "interval 60 days"}
    dl.DeltaTable(uri).alter.set_table_properties(retention)  # v5

    table = dl.DeltaTable(uri)
    assert table.version() == 5
    entries = changes(table)
    assert [e["version"] for e in entries] == [5, 4, 3, 2, 1, 0]
    assert_adds_up(table, entries)
    assert_matches_history(table, entries)
    by_version = {e["version"]: e for e in entries}

    # The first commit: a protocol with deletion vectors, the metadata, one file a partition.
    first = by_version[0]
    assert first["protocol_changed"] and first["metadata_changed"]
    assert (first["files_added"], first["files_removed"]) == (3, 0)
    assert first["commit_info"]["operation"] == "CREATE TABLE AS SELECT"

    # A DELETE with deletion vectors re-adds each file it touches with one, removing the old.
    dv = by_version[2]
    assert dv["deletion_vectors_added"] > 0
    assert dv["deletion_vectors_added"] == dv["files_added"] == dv["files_removed"]
    assert dv["bytes_added"] == dv["bytes_removed"]  # the same data files
    assert dv["removed_without_size"] == 0
    assert not dv["metadata_changed"] and not dv["protocol_changed"]
    at_2 = dl.DeltaTable(uri, version=2)
    with_dv = [d for d in at_2.get_add_actions().column("deletion_vector").to_pylist() if d]
    assert len(with_dv) == dv["deletion_vectors_added"]
    assert_adds_up(at_2, changes(at_2))

    # A DELETE of whole partitions removes their files and adds none.
    whole = by_version[3]
    assert whole["files_removed"] > 0 and whole["files_added"] == 0
    assert whole["bytes_removed"] > 0 and whole["deletion_vectors_added"] == 0

    # The overwrite removes every file then active.
    at_3 = dl.DeltaTable(uri, version=3)
    assert by_version[4]["files_removed"] == len(at_3.files())
    assert by_version[4]["bytes_removed"] == sum(at_3.get_add_actions().column("size").to_pylist())

    # Setting a property changes the metadata only.
    last = by_version[5]
    assert last["metadata_changed"] and not last["protocol_changed"]
    assert (last["files_added"], last["files_removed"]) == (0, 0)

    # Every version's snapshot adds up to its own entries.
    for v in range(6):
        older = dl.DeltaTable(uri, version=v)
        older_entries = changes(older)
        assert older_entries == entries[5 - v :]
        assert_adds_up(older, older_entries)

    # `limit` keeps the newest.
    assert changes(table, 2) == entries[:2]
    assert changes(table, 0) == []
    assert changes(table, 100) == entries
    assert len(table._raw.version_changes()) == 6


def test_checkpoint_version(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    dl.write_deltalake(uri, rows(20))
    dl.write_deltalake(uri, rows(20, start=20), mode="append")
    dl.DeltaTable(uri).delete("id < 5")
    table = dl.DeltaTable(uri)
    assert table.version() == 2
    assert table._raw.checkpoint_version() is None

    written = table.create_checkpoint()
    assert written["version"] == 2
    # The snapshot already loaded was replayed from commits; a reload starts at the checkpoint.
    assert table._raw.checkpoint_version() is None
    reloaded = dl.DeltaTable(uri)
    assert reloaded._raw.checkpoint_version() == 2

    # The history still lists every commit, and still adds up.
    entries = changes(reloaded)
    assert [e["version"] for e in entries] == [2, 1, 0]
    assert entries == changes(table)
    assert_adds_up(reloaded, entries)
    assert_matches_history(reloaded, entries)

    # A later commit: the segment starts at the checkpoint still, with one commit after it.
    dl.write_deltalake(uri, rows(5, start=100), mode="append")
    later = dl.DeltaTable(uri)
    assert later.version() == 3
    assert later._raw.checkpoint_version() == 2
    entries = changes(later)
    assert [e["version"] for e in entries] == [3, 2, 1, 0]
    assert_adds_up(later, entries)
    assert_matches_history(later, entries)
    # Versions before the checkpoint are replayed from commits only.
    assert dl.DeltaTable(uri, version=1)._raw.checkpoint_version() is None


def test_a_table_written_by_deltalake(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    path = str(tmp_path / "peer")
    deltalake.write_deltalake(path, rows(40), partition_by=["part"])
    deltalake.write_deltalake(path, rows(40, start=40), mode="append")
    deltalake.DeltaTable(path).delete("id < 30")
    deltalake.write_deltalake(path, rows(10, start=200), mode="append")

    peer = deltalake.DeltaTable(path)
    assert peer.version() == 3
    table = dl.DeltaTable(path)
    entries = changes(table)
    assert [e["version"] for e in entries] == [3, 2, 1, 0]
    assert_adds_up(table, entries)
    assert_matches_history(table, entries)

    # Each version's active files, as deltalake sees them, are what the entries up to it sum to.
    for v in range(4):
        theirs = pa.table(deltalake.DeltaTable(path, version=v).get_add_actions(flatten=True))
        upto = [e for e in entries if e["version"] <= v]
        sizes = theirs.column("size_bytes").to_pylist()  # deltalake's name of add.size
        assert sum(e["bytes_added"] - e["bytes_removed"] for e in upto) == sum(sizes)
        assert sum(e["files_added"] - e["files_removed"] for e in upto) == len(sizes)
    by_version = {e["version"]: e for e in entries}
    assert by_version[0]["protocol_changed"] and by_version[0]["metadata_changed"]
    assert by_version[2]["files_removed"] > 0
    assert all(e["deletion_vectors_added"] == 0 for e in entries)
    operations = [e["commit_info"]["operation"] for e in entries]
    assert operations[1] == "DELETE"


def test_unpublished_commits_of_a_catalog_managed_table(tmp_path: Path) -> None:
    """The commits a catalog holds and the log lacks are in the history, timed by their
    in-commit timestamps, as `history()` has them."""
    from test_catalog_maintenance import append, ict_of, new_table, unpublished

    root = tmp_path / "t"
    catalog = new_table(root)
    ids = pa.table({"id": pa.array(range(4), pa.int64())})  # new_table's schema
    dl.write_table(dl.DeltaTable(str(root), catalog_client=catalog), ids, mode="append")
    held = unpublished(root, catalog, [append(2, 10), append(3, 20)])
    assert held == [2, 3]
    table = dl.DeltaTable(str(root), catalog_client=catalog)
    entries = changes(table)
    assert [e["version"] for e in entries] == [3, 2, 1, 0]
    assert [e["timestamp"] for e in entries] == [ict_of(root, catalog, v) for v in (3, 2, 1, 0)]
    assert [e["files_added"] > 0 for e in entries] == [True, True, True, False]
    assert_adds_up(table, entries)
    assert_matches_history(table, entries)
