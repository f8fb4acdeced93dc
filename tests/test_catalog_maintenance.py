"""Catalog-managed tables with unpublished commits: history, the change data feed and time
travel by timestamp see them (catalogManaged RFC, "Reading Catalog-managed Tables"; timestamps
from in-commit timestamps only), and maintenance is cleared with the catalog and covers
published versions only ("Maintenance Operations on Catalog-managed Tables")."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from test_catalog_write import MemoryCatalog, ids, rows


def new_table(root: Path, **configuration: str) -> MemoryCatalog:
    """A catalog-managed table created through an in-memory catalog (version 0, no rows)."""
    catalog = MemoryCatalog(latest=-1, max_inline_commit_bytes=1 << 20)
    dl.write_table(
        str(root),
        pa.table({"id": pa.array([], pa.int64())}),
        catalog_client=catalog,
        configuration=configuration or None,
    )
    return catalog


def unpublished(root: Path, catalog: MemoryCatalog, writes: list[Any]) -> list[int]:
    """Runs `writes` (callables taking the table) as a writer that dies after each
    ratification: the catalog holds the commits and no `<v>.json` exists for them."""
    publish = catalog.published
    catalog.published = lambda version: None  # type: ignore[method-assign]
    versions = []
    try:
        for write in writes:
            t = dl.DeltaTable(str(root), catalog_client=catalog)
            write(t)
            versions.append(t.version())
    finally:
        catalog.published = publish  # type: ignore[method-assign]
    # (Each writer published the versions before its own, as writers do: undone.)
    for version in versions:
        (root / "_delta_log" / f"{version:020}.json").unlink()
    assert sorted(catalog.held) == versions
    return versions


def append(n: int, start: int) -> Any:
    return lambda t: dl.write_table(t, rows(n, start), mode="append")


def ict_of(root: Path, catalog: MemoryCatalog, version: int) -> int:
    commit = catalog.held.get(version)
    if commit is not None and commit.content is not None:
        text = commit.content.decode()
    elif commit is not None:
        text = (root / "_delta_log" / "_staged_commits" / str(commit.path)).read_text()
    else:
        text = (root / "_delta_log" / f"{version:020}.json").read_text()
    return json.loads(text.splitlines()[0])["commitInfo"]["inCommitTimestamp"]


def test_history_and_timestamps_include_unpublished_commits(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = new_table(root)
    for i in range(2):
        dl.write_table(dl.DeltaTable(str(root), catalog_client=catalog), rows(1, i), mode="append")
    held = unpublished(root, catalog, [append(1, 10), append(1, 20), append(1, 30)])
    assert held == [3, 4, 5]
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    history = t.history()
    assert [h["version"] for h in history] == [5, 4, 3, 2, 1, 0]
    for h in history:
        assert h["timestamp"] == ict_of(root, catalog, h["version"])
    # Time travel by timestamp lands on unpublished versions too.
    for version in range(6):
        ts = ict_of(root, catalog, version)
        at = dl.DeltaTable(str(root), catalog_client=catalog, timestamp=ts)
        assert at.version() == version
        moved = dl.DeltaTable(str(root), catalog_client=catalog)
        moved.load_as_version(dt.datetime.fromtimestamp(ts / 1000, tz=dt.timezone.utc))
        assert moved.version() == version
    with pytest.raises(dl.VersionNotFoundError):
        dl.DeltaTable(str(root), catalog_client=catalog, timestamp=ict_of(root, catalog, 0) - 1)
    # Published only: the held versions do not exist.
    with pytest.warns(UserWarning):
        assert [h["version"] for h in dl.DeltaTable(str(root), published_only=True).history()] == [
            2,
            1,
            0,
        ]


def test_change_feed_includes_unpublished_commits(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = new_table(root, **{"delta.enableChangeDataFeed": "true"})
    dl.write_table(dl.DeltaTable(str(root), catalog_client=catalog), rows(4), mode="append")
    unpublished(
        root,
        catalog,
        [
            append(2, 10),
            lambda t: t.delete("id = 1"),
            lambda t: t.update({"id": "id + 100"}, "id = 2"),
        ],
    )
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    assert t.version() == 4
    changes = t.load_cdf(starting_version=1).read_all()
    got = sorted(
        zip(
            changes.column("id").to_pylist(),
            changes.column("_change_type").to_pylist(),
            changes.column("_commit_version").to_pylist(),
            strict=True,
        )
    )
    assert got == sorted(
        [(i, "insert", 1) for i in range(4)]
        + [(10, "insert", 2), (11, "insert", 2)]
        + [(1, "delete", 3)]
        + [(2, "update_preimage", 4), (102, "update_postimage", 4)]
    )
    # By timestamp: from the first unpublished commit on.
    since = dt.datetime.fromtimestamp(ict_of(root, catalog, 2) / 1000, tz=dt.timezone.utc)
    later = t.load_cdf(starting_timestamp=since).read_all()
    assert set(later.column("_commit_version").to_pylist()) == {2, 3, 4}


class Policy(MemoryCatalog):
    """An in-memory catalog with a maintenance policy; it records what it was asked."""

    def __init__(self, latest: int, refuse: set[str]) -> None:
        super().__init__(latest, max_inline_commit_bytes=1 << 20)
        self.refuse = refuse
        self.asked: list[tuple[str, int]] = []

    def allow_maintenance(self, operation: str, version: int) -> bool:
        self.asked.append((operation, version))
        return operation not in self.refuse


def policy_table(root: Path, refuse: set[str], **configuration: str) -> Policy:
    catalog = Policy(latest=-1, refuse=refuse)
    dl.write_table(
        str(root),
        pa.table({"id": pa.array([], pa.int64())}),
        catalog_client=catalog,
        configuration=configuration or None,
    )
    return catalog


def test_checkpoints_publish_first_and_cover_published_versions(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = new_table(root)
    dl.write_table(dl.DeltaTable(str(root), catalog_client=catalog), rows(2), mode="append")
    unpublished(root, catalog, [append(1, 10), append(1, 20)])
    log = root / "_delta_log"
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    written = t.create_checkpoint()
    # Versions 2 and 3 were published before the checkpoint of 3 was written.
    assert written["version"] == 3
    assert catalog.held == {}
    assert all((log / f"{v:020}.json").exists() for v in range(4))
    assert (log / f"{3:020}.checkpoint.parquet").exists()
    again = dl.DeltaTable(str(root), catalog_client=catalog)
    assert again.version() == 3 and ids(again) == [0, 1, 10, 20]
    # Log compaction likewise.
    unpublished(root, catalog, [append(1, 30), append(1, 40)])
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    name = t.compact_logs(4, 5)
    assert (root / name).exists() and catalog.held == {}
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [0, 1, 10, 20, 30, 40]


def test_maintenance_asks_the_catalog_first(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = policy_table(
        root,
        refuse={"checkpoint", "checksum", "vacuum", "log_compaction", "metadata_cleanup"},
        **{"delta.checkpointInterval": "2"},
    )
    log = root / "_delta_log"
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    for i in range(4):
        dl.write_table(t, rows(1, i), mode="append")
    # Automatic checkpoints (every 2 versions here) and checksum files were asked for and
    # refused: none was written.
    assert ("checkpoint", 2) in catalog.asked and ("checkpoint", 4) in catalog.asked
    assert {("checksum", v) for v in range(1, 5)} <= set(catalog.asked)
    assert not list(log.glob("*.checkpoint*")) and not list(log.glob("*.crc"))
    before = sorted(p.name for p in log.iterdir())
    refusals = [
        (t.create_checkpoint, "checkpoint"),
        (lambda: t.compact_logs(1, 2), "log_compaction"),
        (lambda: t.cleanup_metadata(), "metadata_cleanup"),
        (lambda: t.vacuum(retention_hours=0, enforce_retention_duration=False), "vacuum"),
    ]
    for call, operation in refusals:
        with pytest.raises(dl.CatalogError, match=f"does not allow {operation}"):
            call()
    assert sorted(p.name for p in log.iterdir()) == before
    # Once the catalog allows them, they run.
    catalog.refuse = set()
    assert t.create_checkpoint()["version"] == 4
    dl.write_table(t, rows(1, 9), mode="append")
    assert (log / f"{5:020}.crc").exists()


def test_cleanup_and_vacuum_through_the_catalog(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = new_table(root)
    catalog.max_inline_commit_bytes = 0  # every commit staged
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    for i in range(3):
        dl.write_table(t, rows(1, i), mode="append")
    t.delete("id = 0")
    staged = root / "_delta_log" / "_staged_commits"
    assert len(list(staged.iterdir())) == 4
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    t.create_checkpoint()
    # Far in the future every version is expired: versions before the checkpoint and the
    # staged commits up to it go ("Metadata Cleanup", catalogManaged RFC).
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=365)
    deleted = t.cleanup_metadata(now=future)
    assert any(name.startswith("_staged_commits/") for name in deleted), deleted
    assert not list(staged.iterdir())
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [1, 2]
    # VACUUM removes the file the delete dropped.
    removed = t.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert len(removed) == 1
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [1, 2]
