"""Writing catalog-managed tables through a catalog client (catalogManaged RFC: "Commit
Protocol", "Publishing Commits", "Writer Requirements for Catalog-managed tables").

The catalog here is a small in-memory implementation of :class:`deltalog.catalog.CatalogClient`
(ratification at most once and strictly in order, under a lock); the table is created by hand
(a catalog-managed protocol with in-commit timestamps), and every commit deltalog makes goes
through the catalog's ``commit``.
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from conftest import BASE_MS, LogWriter, metadata, protocol
from deltalog.catalog import CatalogClient, RatifiedCommit, RatifiedCommits

# Hand-written with the stored spec's name for in-commit timestamps (deltalog writes
# `inCommitTimestamp`; tests/test_ict_feature_name.py): these tables prove the alias is read.
CM_PROTOCOL = protocol(3, 7, ["catalogManaged"], ["catalogManaged", "inCommitTimestamps"])
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)
CONFIG = {
    "delta.enableInCommitTimestamps": "true",
    "delta.inCommitTimestampEnablementVersion": "0",
    "delta.inCommitTimestampEnablementTimestamp": str(BASE_MS),
}


class MemoryCatalog:
    """Ratified commits of one table, in memory."""

    def __init__(self, latest: int, max_inline_commit_bytes: int = 0) -> None:
        self.lock = threading.Lock()
        self.held: dict[int, RatifiedCommit] = {}
        self.latest = latest
        self.max_inline_commit_bytes = max_inline_commit_bytes
        self.proposals: list[tuple[int, str]] = []
        self.published_up_to = latest

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        with self.lock:
            chosen = [
                c
                for v, c in sorted(self.held.items())
                if (start_version is None or v >= start_version)
                and (end_version is None or v <= end_version)
            ]
            return RatifiedCommits(chosen, self.latest)

    def commit(
        self, version: int, path: str | None = None, content: bytes | None = None, **_: Any
    ) -> None:
        with self.lock:
            self.proposals.append((version, "inline" if content is not None else "staged"))
            if version != self.latest + 1:
                latest = RatifiedCommits(
                    [c for v, c in sorted(self.held.items()) if v >= version], self.latest
                )
                raise dl.CommitConflictError(
                    f"version {version} is taken", version=version, ratified=latest
                )
            self.held[version] = RatifiedCommit(version, path=path, content=content)
            self.latest = version

    def published(self, version: int) -> None:
        with self.lock:
            for v in [v for v in self.held if v <= version]:
                del self.held[v]
            self.published_up_to = max(self.published_up_to, version)


def create(root: Path) -> MemoryCatalog:
    """Version 0 of a catalog-managed table, published, with no data."""
    log = LogWriter(root)
    log.commit(
        0,
        [
            {"commitInfo": {"inCommitTimestamp": BASE_MS, "timestamp": BASE_MS, "txnId": "t0"}},
            CM_PROTOCOL,
            metadata(configuration=CONFIG, schema_string=SCHEMA),
        ],
    )
    return MemoryCatalog(latest=0)


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def commit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_appends_are_staged_ratified_and_published(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = create(root)
    assert isinstance(catalog, CatalogClient)
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    dl.write_table(t, rows(3), mode="append")
    assert t.version() == 1
    assert catalog.proposals == [(1, "staged")]
    log = root / "_delta_log"
    staged = list((log / "_staged_commits").glob("00000000000000000001.*.json"))
    assert len(staged) == 1
    # Published right after ratification, byte for byte; the catalog forgot it.
    assert (log / f"{1:020}.json").read_bytes() == staged[0].read_bytes()
    assert catalog.held == {} and catalog.published_up_to == 1
    info = commit_lines(log / f"{1:020}.json")[0]["commitInfo"]
    assert info["txnId"] and info["inCommitTimestamp"] > BASE_MS
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [0, 1, 2]
    dl.write_table(t, rows(2, 10), mode="append")
    t.delete("id = 1")
    assert t.version() == 3
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [0, 2, 10, 11]
    # A filesystem write (by path) is still refused, before anything is written.
    before = sorted(p.name for p in log.iterdir())
    with pytest.raises(dl.CatalogRequiredError):
        dl.write_table(str(root), rows(1), mode="append")
    assert sorted(p.name for p in log.iterdir()) == before


def test_small_commits_go_inline(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = create(root)
    catalog.max_inline_commit_bytes = 1 << 20
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    dl.write_table(t, rows(2), mode="append")
    assert catalog.proposals == [(1, "inline")]
    assert not (root / "_delta_log" / "_staged_commits").exists()
    assert (root / "_delta_log" / f"{1:020}.json").exists()
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [0, 1]


def test_unpublished_commits_are_published_by_the_next_writer(tmp_path: Path) -> None:
    """A writer that died between ratification and publishing loses nothing: readers see the
    commit through the catalog, and the next writer publishes it before its own."""
    root = tmp_path / "t"
    catalog = create(root)
    log = root / "_delta_log"
    (log / "_staged_commits").mkdir()
    name = f"{1:020}.{uuid.uuid4()}.json"
    t0 = dl.DeltaTable(str(root), catalog_client=catalog)
    # Commit 1 made by another writer that never published it: an add of a file it wrote.
    dl.write_table(str(tmp_path / "scratch"), rows(1, 100))
    scratch = next((tmp_path / "scratch").glob("*.parquet"))
    (root / scratch.name).write_bytes(scratch.read_bytes())
    add = {
        "add": {
            "path": scratch.name,
            "partitionValues": {},
            "size": scratch.stat().st_size,
            "modificationTime": BASE_MS,
            "dataChange": True,
            "stats": json.dumps({"numRecords": 1}),
        }
    }
    info = {"commitInfo": {"inCommitTimestamp": BASE_MS + 5, "timestamp": BASE_MS, "txnId": "x"}}
    (log / "_staged_commits" / name).write_text(json.dumps(info) + "\n" + json.dumps(add) + "\n")
    catalog.commit(1, path=name)
    assert not (log / f"{1:020}.json").exists()
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [100]
    # t0 read version 0: its blind append rebases past 1 and publishes 1 and then 2.
    dl.write_table(t0, rows(1), mode="append")
    assert t0.version() == 2
    assert (log / f"{1:020}.json").exists() and (log / f"{2:020}.json").exists()
    assert catalog.held == {}
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [0, 100]
    with pytest.warns(UserWarning, match="only published commits"):
        assert ids(dl.DeltaTable(str(root), published_only=True)) == [0, 100]


def test_conflicts_are_checked_against_the_catalogs_winners(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = create(root)
    dl.write_table(dl.DeltaTable(str(root), catalog_client=catalog), rows(4), mode="append")
    a = dl.DeltaTable(str(root), catalog_client=catalog)
    b = dl.DeltaTable(str(root), catalog_client=catalog)
    a.delete("id = 0")
    # b read version 1 too: a DELETE conflicts with a's DELETE of the same data.
    with pytest.raises(dl.CommitConflictError):
        b.delete("id = 1")
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [1, 2, 3]
    # A blind append from the stale object is rebased onto the winner.
    c = dl.DeltaTable(str(root), version=1, catalog_client=catalog)
    dl.write_table(c, rows(1, 50), mode="append")
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [1, 2, 3, 50]
    # Every version was ratified once, in order.
    assert [v for v, _ in catalog.proposals if v == catalog.latest] == [catalog.latest]


def test_concurrent_writers_through_one_catalog(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = create(root)
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(5):
                t = dl.DeltaTable(str(root), catalog_client=catalog)
                dl.write_table(t, rows(1, k * 100 + i), mode="append")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    assert t.version() == 20
    assert ids(t) == sorted(k * 100 + i for k in range(4) for i in range(5))
    log = root / "_delta_log"
    assert all((log / f"{v:020}.json").exists() for v in range(21))


def test_catalog_errors_are_typed(tmp_path: Path) -> None:
    root = tmp_path / "t"
    catalog = create(root)

    class Down(MemoryCatalog):
        def commit(
            self, version: int, path: str | None = None, content: bytes | None = None, **_: Any
        ) -> None:
            raise ConnectionError("catalog unreachable")

    down = Down(latest=0)
    t = dl.DeltaTable(str(root), catalog_client=down)
    with pytest.raises(dl.CatalogError, match="catalog unreachable") as e:
        dl.write_table(t, rows(1), mode="append")
    assert e.value.table
    # Nothing was ratified or published; the staged attempt is a stray file readers ignore.
    assert not (root / "_delta_log" / f"{1:020}.json").exists()
    assert dl.DeltaTable(str(root), catalog_client=catalog).version() == 0


def test_in_commit_timestamps_are_mandatory(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = LogWriter(root)
    log.commit(
        0,
        [
            {"commitInfo": {"timestamp": BASE_MS, "txnId": "t0"}},
            CM_PROTOCOL,
            metadata(schema_string=SCHEMA),
        ],
    )
    catalog = MemoryCatalog(latest=0)
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    with pytest.raises(dl.CorruptLogError, match="in-commit timestamps"):
        dl.write_table(t, rows(1), mode="append")
    assert catalog.proposals == []


def test_creating_a_catalog_managed_table_through_its_catalog(tmp_path: Path) -> None:
    """Version 0 is ratified by the catalog (which registers the table in that step) and
    published; the protocol is catalog-managed with in-commit timestamps."""
    root = tmp_path / "new"
    catalog = MemoryCatalog(latest=-1)
    version = dl.write_table(str(root), rows(3), catalog_client=catalog)
    assert version == 0
    assert catalog.proposals == [(0, "staged")] and catalog.latest == 0
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    p = t.protocol()
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert "catalogManaged" in p.reader_features
    assert {"catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"} <= set(p.writer_features)
    assert "inCommitTimestamps" not in p.writer_features  # the name other writers understand
    assert t.metadata().configuration["delta.enableInCommitTimestamps"] == "true"
    assert ids(t) == [0, 1, 2]
    first = commit_lines(root / "_delta_log" / f"{0:020}.json")[0]["commitInfo"]
    assert first["txnId"] and first["inCommitTimestamp"] > 0
    # Writing again through the catalog with a location appends to it.
    assert dl.write_table(str(root), rows(1, 9), mode="append", catalog_client=catalog) == 1
    with pytest.raises(dl.CatalogRequiredError):
        dl.DeltaTable(str(root))
    # A table the catalog already holds is not created again.
    with pytest.raises(ValueError):
        dl.write_table(str(root), rows(1), catalog_client=catalog)


def test_a_catalog_managed_table_is_not_created_by_path(tmp_path: Path) -> None:
    with pytest.raises(dl.InvalidArgumentError, match="through its catalog"):
        dl.write_table(str(tmp_path / "t"), rows(1), table_features=["catalogManaged"])
    assert not (tmp_path / "t" / "_delta_log").exists()


def test_a_stale_writer_rebases_past_all_winners_with_one_answer(tmp_path: Path) -> None:
    """The conflict answer carries every commit ratified since: the writer checks them all
    and retries once, at the next free version."""
    root = tmp_path / "t"
    catalog = create(root)
    dl.write_table(dl.DeltaTable(str(root), catalog_client=catalog), rows(1), mode="append")
    stale = dl.DeltaTable(str(root), catalog_client=catalog)
    for i in range(4):
        fresh = dl.DeltaTable(str(root), catalog_client=catalog)
        dl.write_table(fresh, rows(1, 10 + i), mode="append")
    assert catalog.latest == 5
    catalog.proposals.clear()
    adds = dl.write_files(stale, rows(1, 77))
    version = stale.transaction(operation="WRITE").add_actions(adds).commit()
    assert version == 6
    assert [v for v, _ in catalog.proposals] == [2, 6]
    assert ids(dl.DeltaTable(str(root), catalog_client=catalog)) == [0, 10, 11, 12, 13, 77]


def test_a_table_the_catalog_has_no_version_of_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(dl.TableNotFoundError, match="has not ratified any version"):
        dl.DeltaTable(str(tmp_path / "t"), catalog_client=MemoryCatalog(latest=-1))
