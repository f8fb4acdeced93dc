"""Log compaction files written independently of deltalog's writer ("Log Compaction Files").

Two kinds of compaction are written here in plain Python:

- reconciled ("Action Reconciliation": newest action per logical file `(path,
  deletionVector.uniqueId)`, so `remove` tombstones stay; newest protocol, metadata, txn per
  app, domain per name), in the spec's order, Spark's order or shuffled, carrying the range's
  `cdc` actions as Databricks Runtime's files do (they are no snapshot state);
- "databricks": the layout measured on a Databricks-written table (issue #30, section 5): the
  range's commits newest first, each commit's actions in their original order, `commitInfo`
  dropped, nothing reconciled (an `add` and a `remove` of one file both present, a file added
  and removed inside the range, re-added with a new DV). Replayed line by line with first seen
  wins, as a newest-to-oldest log replay does, it gives the state of the commits it covers.

Data files are parquet written by pyarrow; deletion vectors are serialized by pyroaring and
Z85-encoded here. Every compaction a test writes is checked: each version at or past its end is
read with the compactions and compared with the same log without its compaction files (plain
JSON replay) and with the independent oracle (`oracle.py`, which reads only the commits).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pyroaring import BitMap64

import deltalog as dl
import oracle
from conftest import BASE_MS, LogWriter, commit_info, domain, metadata, protocol, txn

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
DV_MAGIC = struct.pack("<I", 1681511377)
DV_PROTOCOL = protocol(3, 7, ["deletionVectors"], ["deletionVectors", "changeDataFeed"])
CONFIG = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
ROWS_PER_FILE = 5


def z85(data: bytes) -> str:
    """Z85 of `data` zero-padded to a multiple of 4 bytes (inline DVs, "Deletion Vectors")."""
    data = data + b"\0" * (-len(data) % 4)
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        chunk = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk.append(Z85[digit])
        out.extend(reversed(chunk))
    return "".join(out)


def dv_bytes(rows: set[int]) -> bytes:
    return DV_MAGIC + BitMap64(sorted(rows)).serialize()


def inline_dv(rows: set[int]) -> dict[str, Any]:
    data = dv_bytes(rows)
    return {
        "storageType": "i",
        "pathOrInlineDv": z85(data),
        "sizeInBytes": len(data),
        "cardinality": len(rows),
    }


def stored_dv(root: Path, rows: set[int], seq: int) -> dict[str, Any]:
    """A DV in its own file next to the data ("Deletion Vector File Storage Format": version
    byte, then big-endian size, the vector and its big-endian CRC-32), relative storage `u`
    with a random prefix, as Databricks writes them."""
    data = dv_bytes(rows)
    u = uuid.UUID(int=seq + 1)
    prefix = "ab"
    (root / prefix).mkdir(exist_ok=True)
    body = struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    (root / prefix / f"deletion_vector_{u}.bin").write_bytes(b"\x01" + body)
    return {
        "storageType": "u",
        "pathOrInlineDv": prefix + z85(u.bytes),
        "offset": 1,
        "sizeInBytes": len(data),
        "cardinality": len(rows),
    }


@dataclass
class Table:
    """A log built commit by commit, with the data files it names."""

    root: Path
    commits: list[list[dict[str, Any]]] = field(default_factory=list)
    # path -> deleted row positions (None when the file is not active)
    live: dict[str, set[int] | None] = field(default_factory=dict)
    next_file: int = 0
    next_cdc: int = 0
    stored_dvs: bool = False
    # (path, deleted rows) -> descriptor: a remove names the DV its add had
    dvs: dict[tuple[str, frozenset[int]], dict[str, Any]] = field(default_factory=dict)
    # (start, end) of every compaction written, for `check_compactions`
    compactions: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.log = LogWriter(self.root)

    def data_file(self) -> tuple[str, dict[str, Any]]:
        name = f"part-{self.next_file:05}.parquet"
        first = self.next_file * ROWS_PER_FILE
        self.next_file += 1
        ids = pa.array(range(first, first + ROWS_PER_FILE), pa.int64())
        pq.write_table(pa.table({"id": ids}), self.root / name)
        stats = json.dumps({"numRecords": ROWS_PER_FILE, "minValues": {"id": first}})
        return name, {
            "path": name,
            "partitionValues": {},
            "size": (self.root / name).stat().st_size,
            "modificationTime": BASE_MS,
            "dataChange": True,
            "stats": stats,
        }

    def cdc(self) -> dict[str, Any]:
        name = f"_change_data/cdc-{self.next_cdc:05}.parquet"
        self.next_cdc += 1
        (self.root / "_change_data").mkdir(exist_ok=True)
        pq.write_table(pa.table({"id": pa.array([0], pa.int64())}), self.root / name)
        return {
            "cdc": {
                "path": name,
                "partitionValues": {},
                "size": (self.root / name).stat().st_size,
                "dataChange": False,
            }
        }

    def file_action(self, kind: str, path: str, deleted: set[int] | None) -> dict[str, Any]:
        action: dict[str, Any] = {"path": path, "dataChange": True}
        if kind == "add":
            action.update(
                partitionValues={},
                size=(self.root / path).stat().st_size,
                modificationTime=BASE_MS,
                stats=json.dumps({"numRecords": ROWS_PER_FILE}),
            )
        else:
            action.update(deletionTimestamp=BASE_MS, extendedFileMetadata=True, size=1)
        if deleted:
            key = (path, frozenset(deleted))
            if key not in self.dvs:
                self.dvs[key] = (
                    stored_dv(self.root, deleted, len(self.dvs))
                    if self.stored_dvs
                    else inline_dv(deleted)
                )
            action["deletionVector"] = self.dvs[key]
        return {kind: action}

    def commit(self, actions: list[dict[str, Any]]) -> int:
        version = len(self.commits)
        actions = [commit_info(timestamp=BASE_MS + version * 1000), *actions]
        self.commits.append(actions)
        self.log.commit(version, actions, mtime_ms=BASE_MS + version * 1000)
        return version

    # -- operations ----------------------------------------------------------------------

    def create(self, files: int) -> None:
        actions: list[dict[str, Any]] = [DV_PROTOCOL, metadata(configuration=CONFIG)]
        for _ in range(files):
            path, add = self.data_file()
            self.live[path] = set()
            actions.append({"add": add})
        self.commit(actions)

    def append(self, files: int = 1) -> None:
        actions = []
        for _ in range(files):
            path, add = self.data_file()
            self.live[path] = set()
            actions.append({"add": add})
        self.commit(actions)

    def active(self) -> list[str]:
        return sorted(p for p, d in self.live.items() if d is not None)

    def dv_delete(self, path: str, rows: set[int], cdc: bool = True) -> None:
        """Deletes rows of `path` with a deletion vector: the old file (old DV) is removed and
        re-added with the grown DV, as DELETE does with deletion vectors."""
        old = self.live[path]
        assert old is not None
        new = old | rows
        actions = [self.file_action("remove", path, old), self.file_action("add", path, new)]
        if cdc:
            actions.append(self.cdc())
        self.live[path] = new
        self.commit(actions)

    def remove(self, path: str, cdc: bool = True) -> None:
        old = self.live[path]
        actions = [self.file_action("remove", path, old)]
        if cdc:
            actions.append(self.cdc())
        self.live[path] = None
        self.commit(actions)

    def re_add(self, path: str) -> None:
        """Adds a removed file back (as RESTORE does), without a deletion vector."""
        assert self.live[path] is None
        self.live[path] = set()
        self.commit([self.file_action("add", path, set())])

    def other(self, actions: list[dict[str, Any]]) -> None:
        self.commit(actions)

    # -- compactions ---------------------------------------------------------------------

    def compaction(
        self, start: int, end: int, shuffle: random.Random | None = None, layout: str = "spec"
    ) -> Path:
        """`<start>.<end>.compacted.json` for the commits of the range.

        Layouts: "databricks", the measured layout (not reconciled: every action of the range
        but `commitInfo`, commits newest first, each commit's actions in their order, so one
        logical file, txn or domain may appear several times and its first line is the
        newest); reconciled ones: "spec" (adds, removes, then the other actions, as the spec's
        example), "spark" (protocol, metadata, txns, domains, then adds and removes sorted by
        path with dataChange false, then the cdc actions), or shuffled lines."""
        self.compactions.append((start, end))
        if layout == "databricks":
            newest_first = [
                a
                for version in range(end, start - 1, -1)
                for a in self.commits[version]
                if "commitInfo" not in a
            ]
            return self.log.compaction(start, end, newest_first)
        assert layout in ("spec", "spark"), layout
        seen: set[tuple[str, str | None]] = set()
        files: list[dict[str, Any]] = []
        singles: dict[str, dict[str, Any]] = {}
        txns: dict[str, dict[str, Any]] = {}
        domains: dict[str, dict[str, Any]] = {}
        cdcs: list[dict[str, Any]] = []
        for version in range(end, start - 1, -1):
            for a in self.commits[version]:
                ((kind, body),) = a.items()
                if kind in ("add", "remove"):
                    key = oracle.file_key(body)
                    if key not in seen:
                        seen.add(key)
                        files.append(a)
                elif kind in ("protocol", "metaData"):
                    singles.setdefault(kind, a)
                elif kind == "txn":
                    txns.setdefault(body["appId"], a)
                elif kind == "domainMetadata":
                    domains.setdefault(body["domain"], a)
                elif kind == "cdc":
                    cdcs.append(a)
        lines = [*files, *singles.values(), *txns.values(), *domains.values(), *cdcs]
        if layout == "spark":
            files = sorted(
                ({k: {**v, "dataChange": False}} for a in files for k, v in a.items()),
                key=lambda a: next(iter(a.values()))["path"],
            )
            lines = [*singles.values(), *txns.values(), *domains.values(), *files, *cdcs]
        if shuffle is not None:
            shuffle.shuffle(lines)
        return self.log.compaction(start, end, lines)


# -- comparing reads ---------------------------------------------------------------------------


def sort_key(row: tuple[Any, ...]) -> tuple[str, ...]:
    """Orders file tuples whose DV may be None (no DV)."""
    return tuple("" if x is None else str(x) for x in row)


def state(t: dl.DeltaTable) -> dict[str, Any]:
    """What a snapshot is: version, active logical files, rows, txns, domains, protocol."""
    actions = t.get_add_actions(flatten=True).to_pylist()
    files = sorted(
        (
            (a["path"], a["deletion_vector.path_or_inline_dv"], a["num_records"], a["size"])
            for a in actions
        ),
        key=sort_key,
    )
    rows = sorted(t.to_pyarrow_table().column("id").to_pylist())
    return {
        "version": t.version(),
        "files": files,
        "rows": rows,
        "txns": t.transactions(),
        "domains": t.domain_metadata(),
        "protocol": (t.protocol().min_reader_version, t.protocol().min_writer_version),
        "configuration": t.metadata().configuration,
    }


def oracle_files(root: Path, version: int) -> list[tuple[str, str | None]]:
    snap = oracle.replay(root, version)
    return sorted(
        (
            (a["path"], (a.get("deletionVector") or {}).get("pathOrInlineDv"))
            for a in snap.adds.values()
        ),
        key=sort_key,
    )


def plain_copy(root: Path, dest: Path) -> Path:
    """The same table without its compaction files."""
    shutil.copytree(root, dest)
    for f in (dest / "_delta_log").glob("*.compacted.json"):
        f.unlink()
    return dest


def oracle_state(root: Path, version: int) -> dict[str, Any]:
    """The oracle's snapshot (it reads the commits only), in the terms of `state`."""
    snap = oracle.replay(root, version)
    assert snap.protocol is not None and snap.metadata is not None
    return {
        "files": oracle_files(root, version),
        "txns": snap.txns,
        "domains": snap.domains,
        "protocol": (snap.protocol["minReaderVersion"], snap.protocol["minWriterVersion"]),
        "configuration": snap.metadata.get("configuration", {}),
    }


def assert_same_reads(root: Path, plain: Path, versions: list[int]) -> None:
    for v in versions:
        got = state(dl.DeltaTable(str(root), version=v))
        want = state(dl.DeltaTable(str(plain), version=v))
        assert got == want, f"version {v}"
        independent = oracle_state(plain, v)
        assert [f[:2] for f in got["files"]] == independent["files"], f"version {v}"
        for key in ("txns", "domains", "protocol", "configuration"):
            assert got[key] == independent[key], f"version {v}: {key}"


def check_compactions(t: Table, plain: Path) -> None:
    """Every compaction `t` wrote: the versions from its end to the latest read the same with
    the compactions as without them and as the oracle."""
    assert t.compactions, "no compaction written"
    first_end = min(end for _, end in t.compactions)
    assert_same_reads(t.root, plain, list(range(first_end, len(t.commits))))


def databricks_like(root: Path, layout: str = "spec", stored_dvs: bool = False) -> Table:
    """26 commits (0..25) with deletion vectors, full removes, a re-added file, txns, domains
    and cdc files; 2 active files and 5 rows at the end. Compactions 0-5, 6-10, 6-15 and 16-24
    in `layout`, the reconciled ones holding their range's cdc actions. In the "databricks"
    layout 6-15 holds `part-5` added (7), removed and re-added with a DV (11), `part-2`
    re-added (10) and given a DV (13); 16-24 holds `part-7` added, given a DV and removed."""
    t = Table(root, stored_dvs=stored_dvs)
    t.create(3)  # 0: part-0..2
    t.append(2)  # 1: part-3, part-4
    t.dv_delete("part-00000.parquet", {0, 1})  # 2
    t.other([txn("app", 1)])  # 3
    t.dv_delete("part-00001.parquet", {4})  # 4
    t.remove("part-00002.parquet")  # 5
    t.dv_delete("part-00000.parquet", {2})  # 6: second DV on the same file
    t.append(1)  # 7: part-5
    t.other([domain("team.x", '{"a":1}'), txn("app", 2)])  # 8
    t.remove("part-00003.parquet")  # 9
    t.re_add("part-00002.parquet")  # 10: removed in 5, restored
    t.dv_delete("part-00005.parquet", {0, 1, 2})  # 11
    t.remove("part-00004.parquet")  # 12
    t.dv_delete("part-00002.parquet", {3})  # 13
    t.append(1)  # 14: part-6
    t.other([domain("team.x", '{"a":1}', removed=True), txn("other", 7)])  # 15
    t.remove("part-00000.parquet")  # 16
    t.dv_delete("part-00006.parquet", {0})  # 17
    t.remove("part-00005.parquet")  # 18
    t.append(1)  # 19: part-7
    t.dv_delete("part-00007.parquet", {0, 1, 2, 3})  # 20
    t.remove("part-00002.parquet")  # 21
    t.dv_delete("part-00001.parquet", {0, 1})  # 22: part-1 keeps rows 2, 3
    t.other([txn("app", 3)])  # 23
    t.remove("part-00007.parquet")  # 24
    t.dv_delete("part-00006.parquet", {1})  # 25: part-6 keeps rows 2, 3, 4
    assert len(t.commits) == 26
    for start, end in [(0, 5), (6, 10), (6, 15), (16, 24)]:
        t.compaction(start, end, layout=layout)
    return t


@pytest.mark.parametrize(
    ("layout", "stored_dvs"),
    [("spec", False), ("spark", False), ("databricks", False), ("databricks", True)],
)
def test_databricks_like_compactions(tmp_path: Path, layout: str, stored_dvs: bool) -> None:
    t = databricks_like(tmp_path / "t", layout, stored_dvs)
    plain = plain_copy(t.root, tmp_path / "plain")
    latest = state(dl.DeltaTable(str(t.root)))
    assert len(latest["files"]) == 2
    assert len(latest["rows"]) == 5
    assert latest["rows"] == [7, 8, 32, 33, 34]
    assert latest == state(dl.DeltaTable(str(plain)))
    assert latest["txns"] == {"app": 3, "other": 7}
    assert latest["domains"] == {}
    check_compactions(t, plain)
    # Versions inside the ranges (read from their commits) too.
    assert_same_reads(t.root, plain, list(range(5)))


def test_databricks_layout_is_newest_first(tmp_path: Path) -> None:
    """The measured layout itself: in 6-15 the first action naming `part-5` without a DV is
    its removal (11), the add of 7 comes later in the file; the last txn line is the oldest."""
    t = databricks_like(tmp_path / "t", "databricks")
    lines = [
        json.loads(x)
        for x in (t.log.root / "_delta_log" / f"{6:020}.{15:020}.compacted.json")
        .read_text()
        .splitlines()
    ]
    part5 = [
        next(iter(a))
        for a in lines
        if next(iter(a.values())).get("path") == "part-00005.parquet"
        and not next(iter(a.values())).get("deletionVector")
    ]
    assert part5 == ["remove", "add"]
    assert [a["txn"] for a in lines if "txn" in a] == [
        {"appId": "other", "version": 7},
        {"appId": "app", "version": 2},
    ]
    assert not any("commitInfo" in a for a in lines)
    assert any("cdc" in a for a in lines)


@pytest.mark.parametrize("layout", ["spec", "databricks"])
def test_compaction_in_use_replaces_its_commits(tmp_path: Path, layout: str) -> None:
    """With the commits inside 6..15 and 16..24 damaged, versions from 15 on still read (from
    the compactions 6-15 and 16-24); versions inside the ranges need their commits and say
    so."""
    t = databricks_like(tmp_path / "t", layout)
    plain = plain_copy(t.root, tmp_path / "plain")
    for v in [*range(11, 15), *range(17, 24)]:
        t.log.raw(v, "{not json\n")
    assert_same_reads(t.root, plain, [15, 16, 24, 25])
    for v in (12, 20):
        with pytest.raises(dl.CorruptLogError):
            dl.DeltaTable(str(t.root), version=v)


@pytest.mark.parametrize("layout", ["spec", "databricks"])
def test_update_incremental_across_compactions(tmp_path: Path, layout: str) -> None:
    t = databricks_like(tmp_path / "t", layout)
    plain = plain_copy(t.root, tmp_path / "plain")
    cases = [(0, 25), (3, 8), (5, 6), (7, 15), (10, 16), (15, 25), (4, 20), (16, 24), (18, 25)]
    for start, stop in cases:
        table = dl.DeltaTable(str(t.root), version=start)
        table.load_as_version(stop) if stop < 25 else table.update_incremental()
        assert state(table) == state(dl.DeltaTable(str(plain), version=stop)), (start, stop)


# -- property: random logs, random compactions -----------------------------------------------


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[tuple[str, Any]], list[tuple[int, int]], int]:
    ops = draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("append"), st.integers(1, 2)),
                st.tuples(st.just("dv"), st.integers(0, 50)),
                st.tuples(st.just("remove"), st.integers(0, 50)),
                st.tuples(st.just("re_add"), st.integers(0, 50)),
                st.tuples(st.just("txn"), st.integers(0, 2)),
                st.tuples(st.just("domain"), st.integers(0, 3)),
                st.tuples(st.just("metadata"), st.integers(0, 3)),
            ),
            min_size=2,
            max_size=18,
        )
    )
    n = len(ops) + 1
    ranges = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).map(sorted).map(tuple),
            max_size=5,
        )
    )
    seed = draw(st.integers(0, 2**16))
    return ops, ranges, seed


def build_random(root: Path, ops: list[tuple[str, Any]], seed: int) -> Table:
    rnd = random.Random(seed)
    t = Table(root)
    t.create(2)
    for kind, arg in ops:
        active = t.active()
        removed = sorted(p for p, d in t.live.items() if d is None)
        if kind == "append" or (kind in ("dv", "remove") and not active):
            t.append(arg if kind == "append" else 1)
        elif kind == "dv":
            path = active[arg % len(active)]
            left = sorted(set(range(ROWS_PER_FILE)) - (t.live[path] or set()))
            if len(left) > 1:  # the DV must change: a new logical file
                t.dv_delete(path, {rnd.choice(left)}, cdc=rnd.random() < 0.7)
            else:
                t.remove(path)
        elif kind == "remove":
            t.remove(active[arg % len(active)], cdc=rnd.random() < 0.5)
        elif kind == "re_add" and removed:
            t.re_add(removed[arg % len(removed)])
        elif kind == "txn":
            t.other([txn(f"app{arg}", len(t.commits))])
        elif kind == "metadata":
            # A table property change: the newest metadata must win inside a compaction too.
            t.other([metadata(configuration={**CONFIG, "user.step": f"{len(t.commits)}.{arg}"})])
        elif kind == "domain":
            t.other([domain(f"d{arg % 2}", f'{{"v":{len(t.commits)}}}', removed=arg >= 2)])
        else:
            t.other([])
    return t


@settings(
    max_examples=int(os.environ.get("COMPACTION_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=logs())
def test_random_compactions_match_plain_replay(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[list[tuple[str, Any]], list[tuple[int, int]], int],
) -> None:
    ops, ranges, seed = case
    base = tmp_path_factory.mktemp("prop")
    t = build_random(base / "t", ops, seed)
    plain = plain_copy(t.root, base / "plain")
    rnd = random.Random(seed)
    for start, end in ranges:
        if rnd.random() < 0.4:
            # Not reconciled: the range's commits newest first (the measured layout).
            t.compaction(start, end, layout="databricks")
        else:
            t.compaction(start, end, shuffle=rnd)
    latest = len(t.commits) - 1
    ends = {e for _, e in ranges} | {s for s, _ in ranges} | {latest}
    versions = sorted(ends | {v + 1 for v in ends if v < latest} | {rnd.randrange(latest + 1)})
    assert_same_reads(t.root, plain, versions)
    # Moving a loaded snapshot forward across the compactions.
    start = rnd.randrange(latest + 1)
    table = dl.DeltaTable(str(t.root), version=start)
    table.update_incremental()
    assert state(table) == state(dl.DeltaTable(str(plain)))


def test_in_commit_timestamp_of_a_version_inside_a_compaction(tmp_path: Path) -> None:
    """A compaction ending at the loaded version has no `commitInfo`: the version's in-commit
    timestamp still comes from its commit, not from the file's modification time."""
    uri = str(tmp_path / "t")
    dl.write_table(
        uri, pa.table({"x": [0]}), configuration={"delta.enableInCommitTimestamps": "true"}
    )
    for i in range(1, 4):
        dl.write_table(uri, pa.table({"x": [i]}), mode="append")
    log = tmp_path / "t" / "_delta_log"
    commit = log / f"{3:020}.json"
    ict = next(
        json.loads(line)["commitInfo"]["inCommitTimestamp"]
        for line in commit.read_text().splitlines()
        if line.startswith('{"commitInfo"')
    )
    dl.DeltaTable(uri).compact_logs(1, 3)
    os.utime(commit, (0, 0))  # the modification time says 1970
    t = dl.DeltaTable(uri)
    assert t.timestamp() == ict
    # The next commit's in-commit timestamp is later than this one ("In-Commit Timestamps").
    dl.write_table(uri, pa.table({"x": [4]}), mode="append")
    newest = json.loads((log / f"{4:020}.json").read_text().splitlines()[0])
    assert newest["commitInfo"]["inCommitTimestamp"] > ict
