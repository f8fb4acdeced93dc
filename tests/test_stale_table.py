"""A ``DeltaTable`` loaded before its table was deleted and created again at the same
location (issue #15, item 10): its commits are refused instead of landing next to the new
table's versions, and ``update_incremental()`` loads the new table instead of replaying its
commits onto the old state."""

from __future__ import annotations

import shutil
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl


def _log(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "_delta_log").glob("*.json"))


def _old_table(path: Path, versions: int) -> dl.DeltaTable:
    dl.write_table(path, pa.table({"id": [0]}))
    for i in range(1, versions):
        dl.write_table(path, pa.table({"id": [i]}), mode="append")
    t = dl.DeltaTable(path)
    assert t.version() == versions - 1
    return t


def _recreate(path: Path, versions: int, column: str = "id") -> None:
    shutil.rmtree(path)
    dl.write_table(path, pa.table({column: [100]}))
    for i in range(1, versions):
        dl.write_table(path, pa.table({column: [100 + i]}), mode="append")


@pytest.mark.parametrize("new_versions", [1, 4, 6], ids=["fewer", "same", "more"])
def test_statements_of_a_stale_object_are_refused(tmp_path: Path, new_versions: int) -> None:
    path = tmp_path / "t"
    old = _old_table(path, 4)  # versions 0..3
    _recreate(path, new_versions)
    before = _log(path)
    # Statements act on the loaded version: against another table, refused (DELETE, UPDATE
    # and MERGE before they read the old table's data files, gone with it).
    stale = "not the one this transaction read"
    with pytest.raises(dl.CommitConflictError, match=stale):
        old.alter.set_properties({"owner": "x"})
    with pytest.raises(dl.CommitConflictError, match=stale):
        old.delete("id = 0")
    with pytest.raises(dl.CommitConflictError, match=stale):
        old.update({"id": "id + 1"})
    with pytest.raises(dl.CommitConflictError, match=stale):
        old.merge(pa.table({"id": [0]}), "target.id = source.id").when_matched_delete().execute()
    # Nothing was committed: the new table is intact and opens with both readers.
    assert _log(path) == before
    expected = [{"id": 100 + i} for i in range(new_versions)]
    got = sorted(dl.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert got == expected
    theirs = deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted(theirs, key=lambda r: r["id"]) == expected


def test_a_transaction_of_a_stale_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    old = _old_table(path, 4)
    _recreate(path, 1)
    files = dl.write_files(dl.DeltaTable(path), pa.table({"id": [7]}))
    txn = old.transaction().add_actions(files)
    with pytest.raises(dl.CommitConflictError, match="version 3"):
        txn.commit()
    assert _log(path) == [f"{0:020}.json"]


def test_update_incremental_loads_the_new_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    old = _old_table(path, 4)
    # Fewer versions than loaded, as many, and more: never the old state plus new commits.
    for new_versions in (1, 4, 6):
        _recreate(path, new_versions, column="other")
        old.update_incremental()
        assert old.version() == new_versions - 1
        assert old.schema().names == ["other"]
        got = sorted(r["other"] for r in old.to_pyarrow_table().to_pylist())
        assert got == [100 + i for i in range(new_versions)]
        old = _old_table(tmp_path / f"again{new_versions}", 4)
        path = tmp_path / f"again{new_versions}"


def test_appending_through_a_stale_object_writes_to_the_current_table(tmp_path: Path) -> None:
    # `write_table(table, ...)` writes to the latest version of the table at that location
    # (it loads it first), so after the table was replaced it appends to the new one, at its
    # next version, and never leaves a log with a gap.
    path = tmp_path / "t"
    old = _old_table(path, 4)
    _recreate(path, 1)
    assert dl.write_table(old, pa.table({"id": [5]}), mode="append") == 1
    assert _log(path) == [f"{0:020}.json", f"{1:020}.json"]
    assert old.version() == 1
    expected = [{"id": 5}, {"id": 100}]
    assert sorted(old.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == expected
    theirs = deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted(theirs, key=lambda r: r["id"]) == expected


def test_a_stale_object_after_the_table_was_deleted(tmp_path: Path) -> None:
    path = tmp_path / "t"
    old = _old_table(path, 2)
    shutil.rmtree(path)
    with pytest.raises(dl.CommitConflictError, match="no longer exists"):
        old.alter.set_properties({"owner": "x"})
    # No `_delta_log` holding only the stale commit.
    assert not (path / "_delta_log").exists() or _log(path) == []
    with pytest.raises(dl.TableNotFoundError):
        old.update_incremental()


def test_an_ordinary_object_still_commits_after_others_did(tmp_path: Path) -> None:
    # The check costs one HEAD of the read version's commit; concurrent commits to the same
    # table are still rebased or conflict as before.
    path = tmp_path / "t"
    old = _old_table(path, 2)
    other = dl.DeltaTable(path)
    dl.write_table(other, pa.table({"id": [9]}), mode="append")
    assert old.delete("id = 0")["version"] == 3
    assert sorted(r["id"] for r in dl.DeltaTable(path).to_pyarrow_table().to_pylist()) == [1, 9]


@pytest.mark.parametrize("new_versions", [1, 4], ids=["fewer", "same"])
def test_a_stale_object_writes_no_checkpoint_into_the_new_table(
    tmp_path: Path, new_versions: int
) -> None:
    path = tmp_path / "t"
    old = _old_table(path, 4)
    _recreate(path, new_versions)
    with pytest.raises(dl.CommitConflictError, match="no checkpoint written"):
        old.create_checkpoint()
    assert not list((path / "_delta_log").glob("*checkpoint*"))
    expected = [{"id": 100 + i} for i in range(new_versions)]
    for table in (dl.DeltaTable(path), deltalake.DeltaTable(str(path))):
        assert sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == expected
    # The same object, moved to the new table, checkpoints it.
    old.update_incremental()
    old.create_checkpoint()
    assert dl.DeltaTable(path).to_pyarrow_table().num_rows == new_versions
