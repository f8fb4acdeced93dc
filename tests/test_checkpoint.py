"""Checkpoint writing: every kind, on golden tables and on tables deltalog writes.

A checkpoint must not change the snapshot: for each kind, the table reopened from the new
checkpoint has the same version, protocol, metadata, transactions, domain metadata, active files
(with their statistics) and rows as before ("Checkpoints": "the complete replay of all
actions"). The `deltalake` package, an independent reader, must agree.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from conftest import CORPUS, load_expectations
from deltalog import _native
from deltalog.exceptions import DeltaError

EXPECT = load_expectations()
READABLE = sorted(k for k, v in EXPECT.items() if not v["must_fail"])


def state(t: dl.DeltaTable) -> dict[str, Any]:
    """Everything a snapshot is, in comparable form."""
    adds = t.get_add_actions(flatten=True)
    adds = adds.sort_by([("path", "ascending")])
    return {
        "version": t.version(),
        "protocol": t.protocol(),
        "metadata": t.metadata(),
        "txns": t.transactions(),
        "domains": t.domain_metadata(),
        "adds": adds.to_pylist(),
    }


def content_rows(t: dl.DeltaTable) -> int | str:
    """The row count, or the error reading the rows gives (tables whose data files are gone)."""
    try:
        return t.to_pyarrow_table().num_rows
    except DeltaError as e:
        return type(e).__name__


def log_files(root: Path) -> set[str]:
    log = root / "_delta_log"
    out = {p.name for p in log.iterdir() if p.is_file()}
    if (log / "_sidecars").exists():
        out |= {"_sidecars/" + p.name for p in (log / "_sidecars").iterdir()}
    return out


def remove_checkpoints(root: Path, version: int) -> None:
    """Drops the checkpoints of `version` (and their sidecars) so that another can be tried."""
    log = root / "_delta_log"
    for p in log.glob(f"{version:020}.checkpoint*"):
        p.unlink()
    shutil.rmtree(log / "_sidecars", ignore_errors=True)


def peer_files(peer: deltalake.DeltaTable) -> list[str]:
    """The peer's active files as table-relative paths."""
    root = peer.table_uri.removeprefix("file://").rstrip("/") + "/"
    return sorted(u.removeprefix("file://").removeprefix(root) for u in peer.file_uris())


def check_hint(root: Path, written: dict[str, Any]) -> None:
    """`_last_checkpoint` names the checkpoint and its checksum validates ("JSON checksum")."""
    text = (root / "_delta_log" / "_last_checkpoint").read_text()
    hint = json.loads(text)
    assert hint["version"] == written["version"]
    assert hint["size"] == written["num_actions"]
    assert hint["numOfAddFiles"] == written["num_add_files"]
    assert hint["sizeInBytes"] == written["size_in_bytes"]
    assert hint["checkpointSchema"]["type"] == "struct"
    assert _native.json_checksum(text) == hint["checksum"]


# ---------------------------------------------------------------------------------------------
# Golden tables


@pytest.mark.parametrize("root", READABLE, ids=READABLE)
def test_golden_checkpoints_keep_the_snapshot(root: str, tmp_path: Path) -> None:
    table_root = tmp_path / "t"
    shutil.copytree(CORPUS / root, table_root)
    try:
        t = dl.DeltaTable(table_root)
    except DeltaError as e:  # pragma: no cover - every readable table opens (test_corpus)
        pytest.fail(f"golden table does not open: {e}")
    try:
        t.metadata()
    except dl.CorruptLogError:
        # A legacy log without metaData: no checkpoint can hold what it lacks ("Checkpoints").
        with pytest.raises(dl.CorruptLogError, match="metaData"):
            t.create_checkpoint("classic")
        assert not list((table_root / "_delta_log").glob("*.checkpoint*"))
        return
    before = state(t)
    rows = content_rows(t)
    try:
        written = t.create_checkpoint("classic")
    except dl.UnsupportedFeatureError as e:
        pytest.skip(f"not writable by deltalog: {e}")
    check_hint(table_root, written)
    assert written["files"] == [f"_delta_log/{t.version():020}.checkpoint.parquet"]
    again = dl.DeltaTable(table_root)
    assert state(again) == before
    assert content_rows(again) == rows

    # V2 kinds need the v2Checkpoint feature: enable it (a commit), then each kind in turn,
    # alone at the new version.
    t.alter.add_feature("v2Checkpoint")
    t = dl.DeltaTable(table_root)
    before = state(t)
    v = t.version()
    for kind, sidecars in [("v2-json", 2), ("v2-parquet", 3), ("v2-parquet", 0), ("classic", 1)]:
        remove_checkpoints(table_root, v)
        written = t.create_checkpoint(kind, sidecars=sidecars, classic_copy=False)
        check_hint(table_root, written)
        n_sidecars = sum(f.startswith("_delta_log/_sidecars/") for f in written["files"])
        assert n_sidecars <= sidecars
        if sidecars and before["adds"]:
            assert n_sidecars >= 1
        again = dl.DeltaTable(table_root)
        assert state(again) == before, (kind, sidecars)
        assert content_rows(again) == rows


# ---------------------------------------------------------------------------------------------
# Tables deltalog writes


def _partitioned(tmp_path: Path, configuration: dict[str, str] | None = None) -> Path:
    uri = tmp_path / "t"
    data = pa.table(
        {
            "id": pa.array(range(100), pa.int64()),
            "name": [f"n{i}" for i in range(100)],
            "ts": pa.array(
                [1_700_000_000_000_000 + i for i in range(100)], pa.timestamp("us", "UTC")
            ),
            "day": pa.array([i % 3 for i in range(100)], pa.int32()),
        }
    )
    dl.write_table(uri, data.slice(0, 50), partition_by=["day"], configuration=configuration)
    dl.write_table(uri, data.slice(50), mode="append")
    dl.DeltaTable(uri).delete("id < 10")
    return uri


def test_classic_checkpoint_layout(tmp_path: Path) -> None:
    uri = _partitioned(
        tmp_path,
        {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpointInterval": "1000"},
    )
    t = dl.DeltaTable(uri)
    written = t.create_checkpoint()
    path = uri / written["files"][0]
    schema = pq.read_schema(path)
    assert set(schema.names) == {"txn", "add", "remove", "metaData", "protocol", "domainMetadata"}
    add = schema.field("add").type
    add_fields = {add.field(i).name for i in range(add.num_fields)}
    assert {"stats", "stats_parsed", "partitionValues_parsed"} <= add_fields
    assert add.field("partitionValues_parsed").type == pa.struct([("day", pa.int32())])
    remove = schema.field("remove").type
    remove_fields = {remove.field(i).name for i in range(remove.num_fields)}
    assert "stats" not in remove_fields and "tags" not in remove_fields
    table = pq.read_table(path)
    protocol = [p for p in table.column("protocol").to_pylist() if p]
    assert protocol == [
        {
            "minReaderVersion": 1,
            "minWriterVersion": 2,
            "readerFeatures": None,
            "writerFeatures": None,
        }
    ]
    adds = [a for a in table.column("add").to_pylist() if a]
    assert len(adds) == written["num_add_files"] == t.get_add_actions().num_rows
    for a in adds:
        stats = json.loads(a["stats"])
        assert stats["numRecords"] == a["stats_parsed"]["numRecords"]
        assert a["partitionValues_parsed"]["day"] == int(a["partitionValues"][0][1])
        assert stats["minValues"]["ts"].endswith("Z")
    removes = [r for r in table.column("remove").to_pylist() if r]
    assert removes, "the DELETE's tombstones are kept"

    # Structs only: readers take stats_parsed.
    t.alter.set_properties({"delta.checkpoint.writeStatsAsJson": "false"})
    t = dl.DeltaTable(uri)
    before = state(t)
    written = t.create_checkpoint()
    add = pq.read_schema(uri / written["files"][0]).field("add").type
    assert "stats" not in {add.field(i).name for i in range(add.num_fields)}
    assert state(dl.DeltaTable(uri)) == before
    assert dl.DeltaTable(uri).to_pyarrow_table(filter=dl.col("id") > 95).num_rows == 4


def test_expired_tombstones_are_dropped(tmp_path: Path) -> None:
    uri = _partitioned(tmp_path)
    t = dl.DeltaTable(uri)
    now = _native.create_checkpoint(t._raw, "classic")
    path = uri / now["files"][0]
    assert pq.read_table(path).column("remove").drop_null().length() > 0
    later = _native.create_checkpoint(t._raw, "classic", None, 2_000_000_000_000 + 8 * 86_400_000)
    assert pq.read_table(uri / later["files"][0]).column("remove").drop_null().length() == 0
    assert later["num_actions"] < now["num_actions"]


def test_v2_checkpoints_need_the_feature(tmp_path: Path) -> None:
    uri = _partitioned(tmp_path)
    t = dl.DeltaTable(uri)
    with pytest.raises(ValueError, match="v2Checkpoint"):
        t.create_checkpoint("v2")
    with pytest.raises(ValueError, match="v2Checkpoint"):
        t.create_checkpoint("classic", sidecars=2)
    with pytest.raises(ValueError, match="unknown checkpoint kind"):
        t.create_checkpoint("v3")
    with pytest.raises(ValueError, match="sidecars must not be negative"):
        t.create_checkpoint("v2", sidecars=-1)
    assert not list((uri / "_delta_log").glob("*.checkpoint*"))


def test_v2_checkpoint_files(tmp_path: Path) -> None:
    uri = _partitioned(tmp_path)
    t = dl.DeltaTable(uri)
    t.alter.add_feature("v2Checkpoint")
    t = dl.DeltaTable(uri)
    v = t.version()
    written = t.create_checkpoint("v2-json", sidecars=2)
    names = [f.removeprefix("_delta_log/") for f in written["files"]]
    sidecars = [n for n in names if n.startswith("_sidecars/")]
    assert len(sidecars) == 2
    main = [n for n in names if n.startswith(f"{v:020}.checkpoint.") and n.endswith(".json")]
    assert len(main) == 1 and len(main[0].split(".")) == 4  # n.checkpoint.<uuid>.json
    assert names[-1] == f"{v:020}.checkpoint.parquet"  # the classic copy, last
    lines = [json.loads(x) for x in (uri / "_delta_log" / main[0]).read_text().splitlines()]
    assert lines[0] == {"checkpointMetadata": {"version": v}}
    refs = [x["sidecar"] for x in lines if "sidecar" in x]
    assert sorted(r["path"] for r in refs) == sorted(s.removeprefix("_sidecars/") for s in sidecars)
    for r in refs:
        assert r["sizeInBytes"] == (uri / "_delta_log" / "_sidecars" / r["path"]).stat().st_size
        side = pq.read_table(uri / "_delta_log" / "_sidecars" / r["path"])
        assert side.column_names == ["add", "remove"]
    assert not any("add" in x or "remove" in x for x in lines)
    # The classic copy holds the same rows.
    copy = pq.read_table(uri / "_delta_log" / f"{v:020}.checkpoint.parquet")
    assert copy.column("sidecar").drop_null().length() == 2
    assert copy.column("checkpointMetadata").drop_null().to_pylist() == [
        {"version": v, "tags": None}
    ]


def _same_as_peer(t: dl.DeltaTable, peer: deltalake.DeltaTable) -> None:
    """Version, protocol, metadata and application transactions agree with the peer's view."""
    assert peer.version() == t.version()
    p, mine = peer.protocol(), t.protocol()
    assert (p.min_reader_version, p.min_writer_version) == (
        mine.min_reader_version,
        mine.min_writer_version,
    )
    assert sorted(p.reader_features or []) == sorted(mine.reader_features or [])
    assert sorted(p.writer_features or []) == sorted(mine.writer_features or [])
    m, own = peer.metadata(), t.metadata()
    assert (m.id, m.partition_columns, m.configuration) == (
        own.id,
        own.partition_columns,
        own.configuration,
    )
    for app, version in t.transactions().items():
        assert peer.transaction_version(app) == version


def test_peer_reads_our_checkpoints(tmp_path: Path) -> None:
    uri = _partitioned(tmp_path, {"delta.checkpoint.writeStatsAsStruct": "true"})
    dl.write_table(
        uri,
        pa.table({"id": pa.array([7], pa.int64()), "day": pa.array([1], pa.int32())}),
        mode="append",
        commit_properties=dl.CommitProperties(app_id="nightly", app_version=42),
    )
    t = dl.DeltaTable(uri)
    expected = sorted(t.to_pyarrow_table().column("id").to_pylist())
    files = sorted(t.files())
    t.create_checkpoint()
    # Hide the commits the checkpoint covers: the peer must use the checkpoint.
    for p in (uri / "_delta_log").glob("*.json"):
        p.unlink()
    peer = deltalake.DeltaTable(str(uri))
    _same_as_peer(t, peer)
    assert peer_files(peer) == files
    assert sorted(peer.to_pyarrow_table().column("id").to_pylist()) == expected
    assert dl.DeltaTable(uri).version() == t.version()


@pytest.mark.parametrize("kind", ["v2-json", "v2-parquet"])
def test_peer_reads_our_v2_checkpoints(tmp_path: Path, kind: str) -> None:
    uri = _partitioned(tmp_path)
    t = dl.DeltaTable(uri)
    t.alter.add_feature("v2Checkpoint")
    t = dl.DeltaTable(uri)
    expected = sorted(t.to_pyarrow_table().column("id").to_pylist())
    t.create_checkpoint(kind, sidecars=2, classic_copy=False)
    for p in (uri / "_delta_log").glob("*.json"):
        if ".checkpoint." not in p.name:
            p.unlink()
    peer = deltalake.DeltaTable(str(uri))
    _same_as_peer(t, peer)
    assert peer_files(peer) == sorted(t.files())
    # The peer's pyarrow path refuses the v2Checkpoint reader feature; its query engine reads.
    got = pa.table(
        deltalake.QueryBuilder().register("t", peer).execute("SELECT id FROM t").read_all()
    )
    assert sorted(got.column("id").to_pylist()) == expected


def test_automatic_checkpoints(tmp_path: Path) -> None:
    uri = tmp_path / "t"
    one = pa.table({"id": pa.array([1], pa.int64())})
    dl.write_table(uri, one)
    for _ in range(11):
        dl.write_table(uri, one, mode="append")
    log = uri / "_delta_log"
    assert (log / f"{10:020}.checkpoint.parquet").exists()
    assert not (log / f"{11:020}.checkpoint.parquet").exists()
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 10
    t = dl.DeltaTable(uri)
    assert t.to_pyarrow_table().num_rows == 12

    # A shorter interval, and the v2 policy.
    t.alter.add_feature("v2Checkpoint")
    t = dl.DeltaTable(uri)
    t.alter.set_properties({"delta.checkpointInterval": "3", "delta.checkpointPolicy": "v2"})
    # v12 (feature), v13 (properties), v14, v15: the next multiple of 3.
    dl.write_table(uri, one, mode="append")
    assert not list(log.glob(f"{14:020}.checkpoint*"))
    dl.write_table(uri, one, mode="append")
    assert list(log.glob(f"{15:020}.checkpoint.*-*.parquet")), sorted(log_files(uri))
    assert (log / f"{15:020}.checkpoint.parquet").exists()
    assert dl.DeltaTable(uri).to_pyarrow_table().num_rows == 14


def test_failed_automatic_checkpoint_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The commit stands when its automatic checkpoint cannot be written; the failure is
    logged on the ``deltalog`` logger, and the next due checkpoint is written."""
    uri = tmp_path / "t"
    one = pa.table({"id": pa.array([1], pa.int64())})
    dl.write_table(uri, one, configuration={"delta.checkpointInterval": "2"})
    log = uri / "_delta_log"
    # A directory where the checkpoint of version 2 would go: the rename onto it fails.
    (log / f"{2:020}.checkpoint.parquet").mkdir()
    dl.write_table(uri, one, mode="append")
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        dl.write_table(uri, one, mode="append")
    warned = [r for r in caplog.records if r.name == "deltalog"]
    assert len(warned) == 1, caplog.text
    assert "automatic checkpoint of version 2 failed" in warned[0].getMessage()
    assert str(uri) in warned[0].getMessage()
    assert warned[0].levelno == logging.WARNING
    assert not (log / "_last_checkpoint").exists()
    t = dl.DeltaTable(uri)
    assert t.version() == 2 and t.to_pyarrow_table().num_rows == 3
    # Nothing left behind but the obstacle; the next checkpoint is written as usual.
    assert [p.name for p in log.iterdir() if p.name.startswith(".")] == []
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="deltalog"):
        dl.write_table(uri, one, mode="append")
        dl.write_table(uri, one, mode="append")
    assert [r for r in caplog.records if r.name == "deltalog"] == []
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 4


def test_partial_files_are_invisible(tmp_path: Path) -> None:
    """A checkpoint writer that died leaves a hidden temporary file; readers ignore it."""
    uri = _partitioned(tmp_path)
    t = dl.DeltaTable(uri)
    before = state(t)
    log = uri / "_delta_log"
    (log / f".{t.version():020}.checkpoint.parquet.0e9c.tmp").write_bytes(b"PAR1 partial")
    (log / f"{t.version():020}.checkpoint.0000000001.0000000002.parquet").write_bytes(b"junk")
    assert state(dl.DeltaTable(uri)) == before
    t.create_checkpoint()
    assert state(dl.DeltaTable(uri)) == before


# ---------------------------------------------------------------------------------------------
# Version checksum files


def test_every_commit_writes_a_version_checksum(tmp_path: Path) -> None:
    uri = _partitioned(tmp_path, {"delta.enableDeletionVectors": "true"})
    t = dl.DeltaTable(uri)
    t.update(set={"name": "'x'"}, predicate="id > 90")
    t.alter.set_domain_metadata("team.a", "{}")
    dl.write_table(
        uri,
        pa.table({"id": pa.array([1000], pa.int64())}),
        mode="append",
        schema_mode="merge",
        commit_properties=dl.CommitProperties(app_id="job", app_version=3),
    )
    latest = dl.DeltaTable(uri).version()
    for v in range(latest + 1):
        crc = json.loads((uri / "_delta_log" / f"{v:020}.crc").read_text())
        table = dl.DeltaTable(uri, version=v)
        assert table.validate_checksum() is True
        assert crc["numFiles"] == len(table.files())
        sizes = table.get_add_actions().column("size").to_pylist()
        assert crc["tableSizeBytes"] == sum(sizes)
        assert sum(crc["fileSizeHistogram"]["fileCounts"]) == crc["numFiles"]
        assert sum(crc["fileSizeHistogram"]["totalBytes"]) == crc["tableSizeBytes"]
        assert crc["metadata"]["id"] == table.metadata().id
    crc = json.loads((uri / "_delta_log" / f"{latest:020}.crc").read_text())
    assert {t["appId"]: t["version"] for t in crc["setTransactions"]} == {"job": 3}
    assert [d["domain"] for d in crc["domainMetadata"]] == ["team.a"]

    # A checksum that disagrees with the log is reported.
    path = uri / "_delta_log" / f"{latest:020}.crc"
    crc["numFiles"] += 1
    path.write_text(json.dumps(crc))
    with pytest.raises(dl.CorruptLogError, match="numFiles"):
        dl.DeltaTable(uri).validate_checksum()
    path.unlink()
    assert dl.DeltaTable(uri).validate_checksum() is False


def test_version_checksums_after_lost_races(tmp_path: Path) -> None:
    """A commit retried past winners still gets its `.crc`: the read version's state plus the
    winners' actions plus its own."""
    uri = tmp_path / "t"
    dl.write_table(uri, pa.table({"id": pa.array([0], pa.int64())}))
    stale = dl.DeltaTable(uri)
    for i in (1, 2):  # winners: an append and a DELETE that removes a file
        dl.write_table(uri, pa.table({"id": pa.array([i], pa.int64())}), mode="append")
    dl.DeltaTable(uri).delete("id = 1")
    version = dl.write_table(stale, pa.table({"id": pa.array([9], pa.int64())}), mode="append")
    assert version == 4
    t = dl.DeltaTable(uri)
    assert (uri / "_delta_log" / f"{version:020}.crc").exists()
    assert t.validate_checksum() is True
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [0, 2, 9]


def test_snapshot_uses_and_survives_version_checksums(tmp_path: Path) -> None:
    """Opening a version with a `.crc` takes the protocol and metadata from it instead of a
    first pass over the commits; a checksum that lies or is garbage never changes the result."""
    uri = _partitioned(tmp_path)
    t = dl.DeltaTable(uri)
    before = state(t)
    stats = t.get_add_actions(flatten=True).sort_by("path").to_pylist()
    path = uri / "_delta_log" / f"{t.version():020}.crc"
    crc = json.loads(path.read_text())
    assert state(dl.DeltaTable(uri)) == before

    lying = json.loads(json.dumps(crc))
    schema = json.loads(lying["metadata"]["schemaString"])
    for f in schema["fields"]:
        if f["name"] == "id":
            f["type"] = "string"
    lying["metadata"]["schemaString"] = json.dumps(schema)
    path.write_text(json.dumps(lying))
    again = dl.DeltaTable(uri)
    assert state(again) == before
    assert again.get_add_actions(flatten=True).sort_by("path").to_pylist() == stats
    with pytest.raises(dl.CorruptLogError, match="schemaString"):
        again.validate_checksum()

    path.write_text("{not json")
    assert state(dl.DeltaTable(uri)) == before
