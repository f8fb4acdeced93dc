"""Reading catalog-managed tables (catalogManaged RFC, "Reading Catalog-managed Tables").

The logs here are hand-written (commits, a pyarrow-written checkpoint, a compaction file,
staged commits); data files are parquet written by pyarrow; the catalog is a plain in-test
implementation of :class:`deltalog.catalog.CatalogClient` holding ratified commits.
"""

from __future__ import annotations

import json
import uuid
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from conftest import BASE_MS, LogWriter, metadata, protocol
from deltalog.catalog import CatalogClient, RatifiedCommit, RatifiedCommits

# Hand-written with the stored spec's name for in-commit timestamps (deltalog writes
# `inCommitTimestamp`; tests/test_ict_feature_name.py): these tables prove the alias is read.
CM_PROTOCOL = protocol(3, 7, ["catalogManaged"], ["catalogManaged", "inCommitTimestamps"])
CONFIG = {"delta.enableInCommitTimestamps": "true"}


def ict(version: int) -> int:
    return BASE_MS + version * 1000


def commit_info(version: int) -> dict[str, Any]:
    return {
        "commitInfo": {
            "inCommitTimestamp": ict(version),
            "timestamp": ict(version),
            "operation": "WRITE",
            "txnId": str(uuid.uuid4()),
        }
    }


def data_file(root: Path, name: str, value: int) -> dict[str, Any]:
    """A one-row parquet file (``id = value``) and its add action."""
    pq.write_table(pa.table({"id": pa.array([value], pa.int64())}), root / name)
    return {
        "add": {
            "path": name,
            "partitionValues": {},
            "size": (root / name).stat().st_size,
            "modificationTime": BASE_MS,
            "dataChange": True,
            "stats": json.dumps({"numRecords": 1}),
        }
    }


def ndjson(actions: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(a) + "\n" for a in actions).encode()


class Catalog:
    """A catalog client holding ratified commits in memory."""

    def __init__(self, commits: list[RatifiedCommit], latest: int) -> None:
        self.commits = commits
        self.latest = latest
        self.calls = 0

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        self.calls += 1
        chosen = [
            c
            for c in self.commits
            if (start_version is None or c.version >= start_version)
            and (end_version is None or c.version <= end_version)
        ]
        return RatifiedCommits(chosen, self.latest)


def rfc_example(root: Path) -> Catalog:
    """The RFC's reading example: published 0-7, a checkpoint at 2, a compaction of 3-5; the
    catalog holds 7 (staged, also published), 8 (staged) and 9 (inline); stray staged files
    for 8 (rejected) and 10 (not ratified, and a partial one)."""
    root.mkdir(parents=True)
    log = LogWriter(root)
    staged_dir = log.log / "_staged_commits"
    staged_dir.mkdir()
    commits: dict[int, list[dict[str, Any]]] = {}
    commits[0] = [
        commit_info(0),
        CM_PROTOCOL,
        metadata(configuration=CONFIG),
        data_file(root, "f0.parquet", 0),
    ]
    for v in range(1, 8):
        commits[v] = [commit_info(v), data_file(root, f"f{v}.parquet", v)]
    for v, actions in commits.items():
        if v == 7:
            # The published copy of 7 is not what the catalog ratified: readers must take the
            # catalog's ("treat the catalog's version as authoritative").
            log.commit(7, [commit_info(7), data_file(root, "p7.parquet", 70)])
        else:
            log.commit(v, actions)
    log.checkpoint(
        2, [CM_PROTOCOL, metadata(configuration=CONFIG)] + [commits[v][-1] for v in range(3)]
    )
    log.compaction(3, 5, [commits[v][-1] for v in range(3, 6)])

    def stage(version: int, content: bytes) -> str:
        name = f"{version:020}.{uuid.uuid4()}.json"
        (staged_dir / name).write_bytes(content)
        return name

    s7 = stage(7, ndjson(commits[7]))
    s8 = stage(8, ndjson([commit_info(8), data_file(root, "f8.parquet", 8)]))
    stage(8, ndjson([commit_info(8), data_file(root, "rejected8.parquet", 800)]))
    stage(10, ndjson([commit_info(10), data_file(root, "f10.parquet", 10)]))
    stage(10, b'{"commitInfo":{"inCommitTimestamp":')  # a partial file
    inline9 = ndjson([commit_info(9), data_file(root, "f9.parquet", 9)])
    return Catalog(
        [
            RatifiedCommit(7, path=s7, timestamp=ict(7)),
            RatifiedCommit(8, path=s8, timestamp=ict(8)),
            RatifiedCommit(9, content=inline9, timestamp=ict(9)),
        ],
        latest=9,
    )


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def test_rfc_reading_example(tmp_path: Path) -> None:
    catalog = rfc_example(tmp_path / "t")
    # A read-only client (no commit/published) is enough to read.
    assert not isinstance(catalog, CatalogClient)
    t = dl.DeltaTable(str(tmp_path / "t"), catalog_client=catalog)
    assert t.version() == 9
    assert ids(t) == list(range(10))
    assert t.timestamp() == ict(9)
    # Time travel inside the catalog's commits and before them.
    assert ids(dl.DeltaTable(str(tmp_path / "t"), version=8, catalog_client=catalog)) == list(
        range(9)
    )
    assert ids(dl.DeltaTable(str(tmp_path / "t"), version=7, catalog_client=catalog)) == list(
        range(8)
    )
    assert ids(dl.DeltaTable(str(tmp_path / "t"), version=4, catalog_client=catalog)) == list(
        range(5)
    )
    with pytest.raises(dl.VersionNotFoundError, match="latest ratified version is 9"):
        dl.DeltaTable(str(tmp_path / "t"), version=10, catalog_client=catalog)
    t.load_as_version(8)
    assert t.version() == 8
    t.update_incremental()
    assert t.version() == 9


def test_no_catalog_is_refused_and_published_only_warns(tmp_path: Path) -> None:
    rfc_example(tmp_path / "t")
    with pytest.raises(dl.CatalogRequiredError) as e:
        dl.DeltaTable(str(tmp_path / "t"))
    assert e.value.table == str(tmp_path / "t")
    with pytest.warns(UserWarning, match="only published commits"):
        t = dl.DeltaTable(str(tmp_path / "t"), published_only=True)
    # The published log alone: version 7 as published, staged files never read.
    assert t.version() == 7
    assert ids(t) == [*range(7), 70]


def test_files_past_the_latest_ratified_version_are_ignored(tmp_path: Path) -> None:
    catalog = rfc_example(tmp_path / "t")
    root = tmp_path / "t"
    log = LogWriter(root)
    # A published 10 (and a checkpoint of it) the catalog has not ratified yet.
    log.commit(10, [commit_info(10), data_file(root, "late10.parquet", 1000)])
    log.checkpoint(
        10, [CM_PROTOCOL, metadata(configuration=CONFIG), data_file(root, "x.parquet", 5)]
    )
    log.last_checkpoint({"version": 10, "size": 3})
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    assert t.version() == 9
    assert ids(t) == list(range(10))


def test_a_table_whose_commits_are_all_unpublished(tmp_path: Path) -> None:
    """A new table: version 0 inline, 1 staged; nothing in _delta_log but the staging area."""
    root = tmp_path / "t"
    (root / "_delta_log" / "_staged_commits").mkdir(parents=True)
    c0 = ndjson(
        [
            commit_info(0),
            CM_PROTOCOL,
            metadata(configuration=CONFIG),
            data_file(root, "a.parquet", 1),
        ]
    )
    name = f"{1:020}.{uuid.uuid4()}.json"
    (root / "_delta_log" / "_staged_commits" / name).write_bytes(
        ndjson([commit_info(1), data_file(root, "b.parquet", 2)])
    )
    catalog = Catalog([RatifiedCommit(0, content=c0), RatifiedCommit(1, path=name)], latest=1)
    t = dl.DeltaTable(str(root), catalog_client=catalog)
    assert (t.version(), ids(t)) == (1, [1, 2])
    assert t.timestamp() == ict(1)


def test_malformed_catalog_answers_are_typed_errors(tmp_path: Path) -> None:
    catalog = rfc_example(tmp_path / "t")
    root = str(tmp_path / "t")
    gap = Catalog([catalog.commits[0], catalog.commits[2]], latest=9)
    with pytest.raises(dl.CorruptLogError, match="contiguous") as e:
        dl.DeltaTable(root, catalog_client=gap)
    assert e.value.version == 9
    # 8 is neither published nor held by the catalog any more.
    dropped = Catalog([catalog.commits[2]], latest=9)
    with pytest.raises(dl.CorruptLogError, match="commit 8 is missing") as e:
        dl.DeltaTable(root, catalog_client=dropped)
    missing = Catalog(
        [*catalog.commits[:2], RatifiedCommit(9, path=f"{9:020}.{uuid.uuid4()}.json")], latest=9
    )
    with pytest.raises(dl.CorruptLogError, match="ratified this staged commit") as e:
        dl.DeltaTable(root, catalog_client=missing)
    assert e.value.version == 9
    partial = next((tmp_path / "t" / "_delta_log" / "_staged_commits").glob("*10.*.json"))
    not_json = Catalog(
        [*catalog.commits, RatifiedCommit(10, content=b'{"add": {"path": \n')], latest=10
    )
    with pytest.raises(dl.CorruptLogError) as e:
        dl.DeltaTable(root, catalog_client=not_json)
    assert e.value.version == 10
    assert partial.exists()
    wrong_version = Catalog([RatifiedCommit(9, path=catalog.commits[1].path)], latest=9)
    with pytest.raises(dl.CorruptLogError, match="authoritative"):
        dl.DeltaTable(root, catalog_client=wrong_version)
    with pytest.raises(dl.InvalidArgumentError, match="RatifiedCommits"):

        class Bad:
            def get_ratified_commits(self, start_version=None, end_version=None):  # type: ignore[no-untyped-def]
                return [(9, None)]

        dl.DeltaTable(root, catalog_client=Bad())  # type: ignore[arg-type]
    with pytest.raises(dl.InvalidArgumentError, match="exactly one"):
        RatifiedCommit(3)


def test_a_catalog_client_on_a_filesystem_table_is_refused(tmp_path: Path) -> None:
    dl.write_table(str(tmp_path / "fs"), pa.table({"id": [1]}))
    with pytest.raises(dl.InvalidArgumentError, match="not catalog-managed"):
        dl.DeltaTable(str(tmp_path / "fs"), catalog_client=Catalog([], latest=0))


def test_writes_by_path_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    rfc_example(tmp_path / "t")
    before = sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir())
    with pytest.raises(dl.CatalogRequiredError, match="catalogManaged"):
        dl.write_table(
            str(tmp_path / "t"), pa.table({"id": pa.array([1], pa.int64())}), mode="append"
        )
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir()) == before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert dl.DeltaTable(str(tmp_path / "t"), published_only=True).version() == 7


# -- every golden table as a catalog-managed table with unpublished commits --------------------

from conftest import copy_corpus_table, corpus_table, load_expectations  # noqa: E402
from deltalog import features  # noqa: E402

EXPECT = load_expectations()
GOLDEN = sorted(k for k, v in EXPECT.items() if v["expected_content"] and not v["must_fail"])


def rows_of(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, default=repr, sort_keys=True) for r in table.to_pylist())


@pytest.mark.parametrize("root", GOLDEN, ids=GOLDEN)
def test_golden_tables_read_the_same_through_a_catalog(tmp_path: Path, root: str) -> None:
    """The table gets one more commit that makes it catalog-managed (protocol 3/7 with its
    features plus catalogManaged and inCommitTimestamp, metadata with in-commit timestamps
    enabled). That commit stays inline in the catalog and the table's last published commit is
    moved to the staging area, ratified by the catalog; the copy then reads as the original."""
    original = dl.DeltaTable(corpus_table(root))
    expected = rows_of(original.to_pyarrow_table())
    latest = original.version()
    copy = copy_corpus_table(root, tmp_path / "t")
    p = original.protocol()
    reader = sorted(features.reader_features_of(p) | {"catalogManaged"})
    writer = sorted(
        features.with_features(
            features.reader_features_of(p) | features.writer_features_of(p),
            ["catalogManaged", features.IN_COMMIT_TIMESTAMP],
        )
    )
    m = original.metadata()
    config = {
        **m.configuration,
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": str(latest + 1),
        "delta.inCommitTimestampEnablementTimestamp": str(ict(latest + 1)),
    }
    meta = {
        "metaData": {
            "id": m.id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": m.schema_string,
            "partitionColumns": m.partition_columns,
            "configuration": config,
            "createdTime": m.created_time,
        }
    }
    upgrade = ndjson([commit_info(latest + 1), protocol(3, 7, reader, writer), meta])
    commits = [RatifiedCommit(latest + 1, content=upgrade)]
    log = copy / "_delta_log"
    published = log / f"{latest:020}.json"
    if published.exists():
        (log / "_staged_commits").mkdir(exist_ok=True)
        name = f"{latest:020}.{uuid.uuid4()}.json"
        published.rename(log / "_staged_commits" / name)
        commits.insert(0, RatifiedCommit(latest, path=name))
    catalog = Catalog(commits, latest=latest + 1)
    t = dl.DeltaTable(str(copy), catalog_client=catalog)
    assert t.version() == latest + 1
    assert t.timestamp() == ict(latest + 1)
    assert rows_of(t.to_pyarrow_table()) == expected
