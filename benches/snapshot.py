"""Snapshot-open benchmark: deltalog vs deltalake vs a raw decode lower bound.

Generates synthetic Delta logs (log files only, no data files) of N active files in two
shapes, then times, in a fresh subprocess per run, how long it takes to open the table and
materialise its add actions as an Arrow table, and records the child's peak RSS.

Usage::

    python benches/snapshot.py [--sizes 10000,100000,1000000] [--runs 3]
                               [--dir /tmp/deltalog-bench] [--out results.json]

See ``benches/README.md`` for what is measured and how the tables are built.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Bump whenever the generated tables change: cached tables with another version are rebuilt.
GENERATOR_VERSION = 2
MARKER = "_bench_complete.json"  # written last; a table without it is regenerated

SHAPES = ("ckpt", "ckpt100", "json")
IMPLS = ("deltalog", "deltalake", "raw")

ADDS_PER_COMMIT = 1000  # json shape: N / 1000 commits of 1000 adds
# json shape: every commit from v2 on removes this many files of earlier commits
REMOVES_PER_COMMIT = 5
TAIL_COMMITS = 10  # ckpt shape: JSON commits after the checkpoint
TAIL_ADDS = 300  # ... each adding this many files
# ... and removing this many (checkpoint files and files of earlier tail commits)
TAIL_REMOVES = 50
# ckpt100 shape: a checkpoint of 90% of the files, then 100 JSON commits of N/1000 adds (and
# 5 removes) each, as a writer with the default checkpoint interval of 100 leaves the log
# just before its next checkpoint.
LONG_TAIL_COMMITS = 100
LONG_TAIL_REMOVES = 5
READDS = 5  # last commit re-adds this many paths removed earlier (add after remove)
TOMBSTONES_PER_1000 = 5  # remove tombstones kept in the checkpoint, per 1000 adds
PARTITIONS = 100
CKPT_ROW_GROUP = 262_144  # ~ what a 128 MiB Spark parquet block holds for these rows
BASE_MS = 1_700_000_000_000  # modificationTime / commit timestamps start here

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "value", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "part", "type": "integer", "nullable": True, "metadata": {}},
    ],
}

# One entry per data file: (path, partition value, size in bytes).
FileEntry = tuple[str, int, int]


# --------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------


@dataclass
class AddBatch:
    """Column-oriented add actions (one list per field)."""

    paths: list[str] = field(default_factory=list)
    parts: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    mtimes: list[int] = field(default_factory=list)
    stats: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.paths)

    def entries(self) -> list[FileEntry]:
        return list(zip(self.paths, self.parts, self.sizes, strict=True))


class Gen:
    """Deterministic generator of realistic add actions and commit lines."""

    _STATS = (
        '{"numRecords":%d,'
        '"minValues":{"id":%d,"value":%d,"name":"%s","ts":"%s"},'
        '"maxValues":{"id":%d,"value":%d,"name":"%s","ts":"%s"},'
        '"nullCount":{"id":0,"value":%d,"name":%d,"ts":0}}'
    )
    _ADD = (
        '{"add":{"path":"%s","partitionValues":{"part":"%d"},"size":%d,'
        '"modificationTime":%d,"dataChange":true,"stats":"%s"}}\n'
    )
    _REMOVE = (
        '{"remove":{"path":"%s","deletionTimestamp":%d,"dataChange":true,'
        '"extendedFileMetadata":true,"partitionValues":{"part":"%d"},"size":%d}}\n'
    )

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        # Pools of pre-formatted values: formatting timestamps per row would dominate.
        self.ts_pool = [
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_704_067_200 + i * 3607))
            + f".{i % 1000:03d}Z"
            for i in range(4096)
        ]
        self.name_pool = [f"name-{i * 37:06d}" for i in range(4096)]
        self.seq = 0

    def uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def adds(self, count: int, version: int) -> AddBatch:
        b = AddBatch()
        rng = self.rng
        ts, names = self.ts_pool, self.name_pool
        stats_fmt = self._STATS
        mtime0 = BASE_MS + version * 60_000
        for _ in range(count):
            r = rng.getrandbits(64)
            part = r % PARTITIONS
            t1, t2 = (r >> 8) & 4095, (r >> 20) & 4095
            n1, n2 = (r >> 32) & 4095, (r >> 44) & 4095
            rows = 50_000 + (r >> 7) % 150_000
            id0 = (r >> 11) % 2_000_000_000  # "id" is an int32 column: stay in range
            v0 = (r >> 3) % 10_000_000_000
            b.paths.append(
                f"part={part}/part-{self.seq % 100000:05d}-{self.uuid()}-c000.snappy.parquet"
            )
            b.parts.append(part)
            b.sizes.append(1_000_000 + rows * 17 + (r & 0xFFFF))
            b.mtimes.append(mtime0 + (r & 0xFFF))
            b.stats.append(
                stats_fmt
                % (
                    rows,
                    id0,
                    v0,
                    names[min(n1, n2)],
                    ts[min(t1, t2)],
                    id0 + rows - 1,
                    v0 + rows * 1000,
                    names[max(n1, n2)],
                    ts[max(t1, t2)],
                    0,
                    (r >> 56) % 7,
                )
            )
            self.seq += 1
        return b

    def add_lines(self, b: AddBatch) -> list[str]:
        fmt = self._ADD
        return [
            fmt % (p, pv, s, m, st.replace('"', '\\"'))
            for p, pv, s, m, st in zip(b.paths, b.parts, b.sizes, b.mtimes, b.stats, strict=True)
        ]

    def remove_lines(self, entries: list[FileEntry], version: int) -> list[str]:
        ts = BASE_MS + version * 60_000
        return [self._REMOVE % (p, ts, pv, s) for p, pv, s in entries]

    def commit_info(self, version: int, operation: str, n_add: int, n_remove: int) -> str:
        info = {
            "timestamp": BASE_MS + version * 60_000,
            "operation": operation,
            "operationParameters": {"mode": "Append", "partitionBy": '["part"]'},
            "isolationLevel": "Serializable",
            "isBlindAppend": n_remove == 0,
            "operationMetrics": {
                "numFiles": str(n_add),
                "numRemovedFiles": str(n_remove),
            },
            "engineInfo": f"deltalog-bench/{GENERATOR_VERSION}",
            "txnId": self.uuid(),
        }
        return json.dumps({"commitInfo": info}, separators=(",", ":")) + "\n"

    def metadata(self) -> dict[str, Any]:
        return {
            "id": self.uuid(),
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(SCHEMA, separators=(",", ":")),
            "partitionColumns": ["part"],
            "configuration": {},
            "createdTime": BASE_MS,
        }


class LiveSet:
    """Files currently in the table, with O(1) random removal."""

    def __init__(self) -> None:
        self.files: list[FileEntry] = []

    def extend(self, entries: list[FileEntry]) -> None:
        self.files.extend(entries)

    def pop_random(self, rng: random.Random, count: int) -> list[FileEntry]:
        """Remove and return ``count`` random files."""
        out = []
        for _ in range(count):
            i = rng.randrange(len(self.files))
            self.files[i], self.files[-1] = self.files[-1], self.files[i]
            out.append(self.files.pop())
        return out


def _write_commit(log: Path, version: int, lines: list[str]) -> None:
    (log / f"{version:020d}.json").write_text("".join(lines))


def _v0_lines(g: Gen, metadata: dict[str, Any]) -> list[str]:
    return [
        g.commit_info(0, "CREATE TABLE", 0, 0),
        '{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}\n',
        json.dumps({"metaData": metadata}, separators=(",", ":")) + "\n",
    ]


def generate_json(root: Path, n: int) -> dict[str, Any]:
    """No checkpoint: v0 = protocol + metaData + commitInfo, then n/1000 commits of 1000 adds.

    Every commit from v2 on also removes a few random files of earlier commits; the last one
    re-adds a few of the removed paths (an add after a remove makes the file live again).
    """
    log = root / "_delta_log"
    log.mkdir(parents=True)
    g = Gen(seed=n * 2 + 1)
    _write_commit(log, 0, _v0_lines(g, g.metadata()))
    live = LiveSet()
    removed: list[FileEntry] = []
    n_commits = max(1, n // ADDS_PER_COMMIT)
    for v in range(1, n_commits + 1):
        b = g.adds(
            ADDS_PER_COMMIT if v < n_commits else n - ADDS_PER_COMMIT * (n_commits - 1),
            v,
        )
        rm = live.pop_random(g.rng, REMOVES_PER_COMMIT) if v >= 2 else []
        removed.extend(rm)
        lines = [g.commit_info(v, "WRITE", len(b), len(rm))]
        lines += g.add_lines(b)
        lines += g.remove_lines(rm, v)
        readded: list[FileEntry] = []
        if v == n_commits:
            readd_lines, readded = _readd(g, removed[:READDS], v)
            lines += readd_lines
        _write_commit(log, v, lines)
        live.extend(b.entries())
        live.extend(readded)
    return {"version": n_commits, "expected_files": len(live.files), "checkpoint": None}


def _readd(g: Gen, entries: list[FileEntry], version: int) -> tuple[list[str], list[FileEntry]]:
    """Add actions for paths that were removed earlier (same path, fresh size and stats)."""
    if not entries:
        return [], []
    b = g.adds(len(entries), version)
    b.paths = [p for p, _, _ in entries]
    b.parts = [pv for _, pv, _ in entries]
    return g.add_lines(b), b.entries()


def _checkpoint_table(
    metadata: dict[str, Any],
    adds: AddBatch,
    tombstones: list[FileEntry],
    version: int,
) -> Any:
    """A classic V1 checkpoint (spec "Checkpoint Schema"): one action per row.

    Row order: protocol, metaData, txn, remove tombstones, adds. Every top-level column is a
    nullable struct that is null on the rows holding another action.
    """
    import checkpoint_arrow as ca  # benches/ is not a package: found through sys.path

    def part_map(parts: list[int]) -> Any:
        return ca.one_entry_maps("part", [str(p) for p in parts])

    remove = ca.remove_array(
        [p for p, _, _ in tombstones],
        BASE_MS + version * 60_000,
        part_map([pv for _, pv, _ in tombstones]),
        [s for _, _, s in tombstones],
    )
    add = ca.add_array(adds.paths, part_map(adds.parts), adds.sizes, adds.mtimes, adds.stats)
    n_rm = len(tombstones)
    return ca.one_action_per_row(
        {
            "txn": (ca.txn_array("bench-stream-0", version, BASE_MS), 2),
            "add": (add, 3 + n_rm),
            "remove": (remove, 3),
            "metaData": (ca.metadata_array(metadata), 1),
            "protocol": (ca.protocol_array(), 0),
        }
    )


def generate_ckpt(root: Path, n: int) -> dict[str, Any]:
    """A V1 parquet checkpoint at version c = n/1000 holding n adds, then 10 JSON commits.

    (``ckpt100``: see :func:`generate_ckpt100`.)

    The log looks like one after metadata cleanup: no commit files up to the checkpoint
    version (the checkpoint alone describes that state), ``_last_checkpoint`` points at it.
    Each tail commit adds 300 files and removes 50 (checkpoint files and files of earlier tail
    commits); the last one re-adds a few removed paths.
    """
    g = Gen(seed=n * 2)
    c = max(1, n // ADDS_PER_COMMIT)
    return _generate_ckpt_tail(root, g, c, n, TAIL_COMMITS, TAIL_ADDS, TAIL_REMOVES)


def generate_ckpt100(root: Path, n: int) -> dict[str, Any]:
    """A V1 parquet checkpoint holding 0.9 n adds at version c = 0.9 n/1000 - 1, then 100 JSON
    commits each adding n/1000 files and removing 5 (checkpoint files and files of earlier
    commits); the last one re-adds a few removed paths. For n = 1M: 900,000 files at version
    899, then versions 900..999 of 1,000 adds each (delta-rs's default checkpoint interval)."""
    g = Gen(seed=n * 2 + 7)
    in_ckpt = n * 9 // 10
    c = max(1, in_ckpt // ADDS_PER_COMMIT - 1)
    per_commit = max(1, n // ADDS_PER_COMMIT)
    return _generate_ckpt_tail(
        root, g, c, in_ckpt, LONG_TAIL_COMMITS, per_commit, LONG_TAIL_REMOVES
    )


def _generate_ckpt_tail(
    root: Path,
    g: Gen,
    c: int,
    n: int,
    tail_commits: int,
    tail_adds: int,
    tail_removes: int,
) -> dict[str, Any]:
    """A checkpoint at version c holding n adds, then `tail_commits` JSON commits."""
    import checkpoint_arrow as ca

    log = root / "_delta_log"
    log.mkdir(parents=True)
    metadata = g.metadata()
    adds = g.adds(n, c)
    tombstones = g.adds(max(1, n * TOMBSTONES_PER_1000 // 1000), c).entries()
    table = _checkpoint_table(metadata, adds, tombstones, c)
    ckpt_name, last = ca.write_checkpoint(log, c, table, n, CKPT_ROW_GROUP)
    del table
    ckpt_live, tail_live = LiveSet(), LiveSet()
    ckpt_live.extend(adds.entries())
    del adds
    removed: list[FileEntry] = []
    readded: list[FileEntry] = []
    for i in range(1, tail_commits + 1):
        v = c + i
        from_tail = min(tail_removes // 5, len(tail_live.files))
        rm = ckpt_live.pop_random(g.rng, tail_removes - from_tail) + tail_live.pop_random(
            g.rng, from_tail
        )
        removed.extend(rm)
        b = g.adds(tail_adds, v)
        lines = [g.commit_info(v, "MERGE", len(b), len(rm))]
        lines += g.add_lines(b)
        lines += g.remove_lines(rm, v)
        if i == tail_commits:
            readd_lines, readded = _readd(g, removed[:READDS], v)
            lines += readd_lines
        _write_commit(log, v, lines)
        tail_live.extend(b.entries())
    tail_live.extend(readded)
    (log / "_last_checkpoint").write_text(json.dumps(last) + "\n")
    return {
        "version": c + tail_commits,
        "expected_files": len(ckpt_live.files) + len(tail_live.files),
        "checkpoint": ckpt_name,
    }


def table_path(base: Path, shape: str, n: int) -> Path:
    return base / f"{shape}-{n}"


def ensure_table(base: Path, shape: str, n: int, force: bool, verify: bool) -> dict[str, Any]:
    """Return the table's manifest, generating the table if it is missing or stale."""
    root = table_path(base, shape, n)
    marker = root / MARKER
    if marker.exists() and not force:
        try:
            info = json.loads(marker.read_text())
            if info.get("generator_version") == GENERATOR_VERSION:
                return info
        except (OSError, ValueError):
            pass
    if root.exists():
        shutil.rmtree(root)
    print(f"  generating {shape}-{n} in {root} ...", end="", flush=True)
    t0 = time.perf_counter()
    generate = {"ckpt": generate_ckpt, "ckpt100": generate_ckpt100, "json": generate_json}
    info = generate[shape](root, n)
    gen_s = time.perf_counter() - t0
    log_bytes = sum(f.stat().st_size for f in (root / "_delta_log").iterdir())
    info.update(
        generator_version=GENERATOR_VERSION,
        shape=shape,
        size=n,
        log_files=len(list((root / "_delta_log").iterdir())),
        log_bytes=log_bytes,
        generate_s=round(gen_s, 2),
    )
    print(f" {gen_s:.1f}s, {log_bytes / 2**20:.0f} MiB", flush=True)
    if verify:
        res = run_child("verify", root, info, timeout=3600)
        got = res.get("rows")
        if got != info["expected_files"] or res.get("stats_nulls") != 0:
            raise SystemExit(
                f"GENERATOR BUG: deltalake sees {got} files in {root}, expected "
                f"{info['expected_files']}; files whose stats did not parse: "
                f"{res.get('stats_nulls')} {res.get('error', '')}"
            )
        print(f"  verified with deltalake: {got} files, all stats parse", flush=True)
    marker.write_text(json.dumps(info, indent=1) + "\n")
    return info


# --------------------------------------------------------------------------------------
# Child process: one measurement
# --------------------------------------------------------------------------------------


def _maxrss_mb() -> float:
    """Peak resident set size of this process, in MiB.

    On Linux this is ``VmHWM`` of ``/proc/self/status``, not ``getrusage().ru_maxrss``: the
    latter survives ``execve``, so a child started by a parent that had a larger RSS reports
    the parent's peak (observed here: every child "peaked" at the generator's 150 MB).
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    import resource

    # KiB on Linux, bytes on macOS
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def _rows(obj: Any) -> int:
    n = getattr(obj, "num_rows", None)
    if isinstance(n, int):
        return n
    import pyarrow as pa

    return pa.table(obj).num_rows


def child_main(impl: str, path: str, info: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement; the timed region excludes interpreter start-up and imports."""
    import pyarrow as pa  # every child imports pyarrow, so the baselines are comparable

    out: dict[str, Any] = {"impl": impl}
    if impl == "deltalog":
        try:
            import deltalog as dl
        except ImportError as e:
            return {"impl": impl, "error": f"ImportError: {e}", "unavailable": True}
        out["version"] = getattr(dl, "__version__", None)
        out["rss_imports_mb"] = _maxrss_mb()
        cpu0 = os.times()
        t0 = time.perf_counter()
        t = dl.DeltaTable(path)
        t_open = time.perf_counter()
        tbl = t.get_add_actions()
        rows = _rows(tbl)
        t1 = time.perf_counter()
        cpu1 = os.times()
    elif impl in ("deltalake", "verify"):
        import deltalake
        from deltalake import DeltaTable

        out["version"] = deltalake.__version__
        out["rss_imports_mb"] = _maxrss_mb()
        cpu0 = os.times()
        t0 = time.perf_counter()
        dt = DeltaTable(path)
        t_open = time.perf_counter()
        if impl == "verify":
            rows = len(dt.file_uris())  # 1.x: files() is gone
            # Stats that do not parse against the schema come back as nulls: catch that too.
            out["stats_nulls"] = pa.table(dt.get_add_actions()).column("num_records").null_count
        else:
            # get_add_actions returns an arro3 table; pa.table() wraps it without copying
            tbl = pa.table(dt.get_add_actions(flatten=True))
            rows = tbl.num_rows
        t1 = time.perf_counter()
        cpu1 = os.times()
    elif impl == "raw":
        import pyarrow.dataset  # noqa: F401  (read_table imports it lazily: keep it untimed)
        import pyarrow.json as pj
        import pyarrow.parquet as pq

        log = Path(path) / "_delta_log"
        ckpt = info.get("checkpoint")
        first = int(ckpt.split(".")[0]) + 1 if ckpt else 0
        commits = [log / f"{v:020d}.json" for v in range(first, info["version"] + 1)]
        out["rss_imports_mb"] = _maxrss_mb()
        cpu0 = os.times()
        t0 = time.perf_counter()
        keep = []
        rows = 0
        if ckpt:
            c = pq.read_table(log / ckpt)
            keep.append(c)
            rows = c.num_rows
        t_open = time.perf_counter()  # raw: "open" = checkpoint decoded
        for f in commits:
            j = pj.read_json(f)
            keep.append(j)
            rows += j.num_rows
        t1 = time.perf_counter()
        cpu1 = os.times()
        out["commits_s"] = t1 - t_open
    else:
        raise SystemExit(f"unknown impl {impl}")
    out.update(
        open_s=t_open - t0,
        total_s=t1 - t0,
        # CPU seconds of the timed region, all threads: user > wall means parallelism;
        # a large sys share is page-fault / allocation cost.
        cpu_user_s=cpu1.user - cpu0.user,
        cpu_sys_s=cpu1.system - cpu0.system,
        rows=rows,
        rss_peak_mb=_maxrss_mb(),
    )
    return out


def run_child(impl: str, root: Path, info: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        impl,
        str(root),
        json.dumps(info),
    ]
    return run_json_child(cmd, impl, timeout)


def run_json_child(cmd: list[str], impl: str, timeout: float) -> dict[str, Any]:
    """Runs a child that prints its result as a JSON line last; errors become `error`."""
    try:
        p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"impl": impl, "error": f"timeout after {timeout:.0f}s"}
    for line in reversed(p.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"impl": impl, "error": f"exit {p.returncode}: {err}"}


def script_main(
    child: Callable[[str, str, Any], dict[str, Any]],
    main: Callable[[list[str]], int],
    exit_child: Callable[[int], Any] = sys.exit,
) -> None:
    """A bench's entry point: ``--child <impl> <path> <json>`` (a ``run_child``) runs
    ``child`` and prints its result as the last line, a JSON one (what ``run_json_child``
    reads), then calls ``exit_child(0)``; other arguments are ``main``'s."""
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        result = child(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
        print(json.dumps(result), flush=True)
        exit_child(0)
    sys.exit(main(sys.argv[1:]))


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def warm_cache(root: Path) -> None:
    """Read every log file once so that no implementation pays for a cold page cache."""
    for f in (root / "_delta_log").iterdir():
        with open(f, "rb") as fh:
            while fh.read(1 << 22):
                pass


def _cpu_busy_s() -> float | None:
    """Busy CPU seconds of the whole machine so far (None without psutil)."""
    try:
        import psutil
    except ImportError:
        return None
    t = psutil.cpu_times()
    return t.user + t.system + sum(getattr(t, k, 0.0) for k in ("nice", "irq", "softirq", "steal"))


def _own_cpu_s() -> float:
    """CPU seconds used by this process and its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _other_share(busy0: float | None, own0: float, wall0: float) -> float | None:
    """Fraction of the machine's CPU used by other processes since the given start."""
    busy1 = _cpu_busy_s()
    if busy0 is None or busy1 is None:
        return None
    other = (busy1 - busy0) - (_own_cpu_s() - own0)
    capacity = (time.perf_counter() - wall0) * (os.cpu_count() or 1)
    return round(max(0.0, other) / capacity, 3) if capacity > 0 else None


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    s: dict[str, Any] = {"runs": runs, "n_ok": len(ok)}
    if not ok:
        s["error"] = runs[0]["error"] if runs else "not run"
        return s
    for k in (
        "total_s",
        "open_s",
        "cpu_user_s",
        "cpu_sys_s",
        "rss_peak_mb",
        "rss_imports_mb",
    ):
        vals = [r[k] for r in ok if k in r]
        if vals:
            s[k] = statistics.median(vals)
    tot = [r["total_s"] for r in ok]
    s["min_s"], s["max_s"] = min(tot), max(tot)
    s["rows"] = ok[0]["rows"]
    return s


def _fmt_s(s: dict[str, Any] | None) -> str:
    if s is None:
        return "-"
    if "total_s" not in s:
        return "n/a" if s.get("unavailable") or "ImportError" in s.get("error", "") else "error"
    return f"{s['total_s']:.3f}"


def _fmt_rss(s: dict[str, Any] | None) -> str:
    if s is None or "rss_peak_mb" not in s:
        return "n/a"
    return f"{s['rss_peak_mb']:.0f} ({s.get('rss_imports_mb', 0):.0f})"


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None, key: str) -> str:
    if not a or not b or key not in a or key not in b or not b[key]:
        return "n/a"
    return f"{a[key] / b[key]:.2f}x"


def print_table(shape: str, results: list[dict[str, Any]]) -> None:
    title = {
        "ckpt": "V1 parquet checkpoint + 10 JSON commits",
        "ckpt100": "V1 parquet checkpoint (90% of the files) + 100 JSON commits",
        "json": "JSON commits only (1000 adds per commit)",
    }[shape]
    print(f"\n== shape {shape}: {title} ==")
    print("times: median wall seconds of open + get_add_actions inside a fresh process")
    print("RSS: peak MB of the child, in parentheses the peak after imports\n")
    hdr = [
        "size",
        "files",
        "deltalog s",
        "deltalake s",
        "raw s",
        "dlake/dlog",
        "dlog/raw",
        "RSS dlog",
        "RSS dlake",
        "RSS raw",
        "RSS dlog/dlake",
        "rows",
    ]
    rows = []
    for r in results:
        m = r["impls"]
        dlog, dlake, raw = m.get("deltalog"), m.get("deltalake"), m.get("raw")
        rows.append(
            [
                f"{r['size']:,}",
                f"{r['expected_files']:,}",
                _fmt_s(dlog),
                _fmt_s(dlake),
                _fmt_s(raw),
                _ratio(dlake, dlog, "total_s"),
                _ratio(dlog, raw, "total_s"),
                _fmt_rss(dlog),
                _fmt_rss(dlake),
                _fmt_rss(raw),
                _ratio(dlog, dlake, "rss_peak_mb"),
                "MISMATCH " + ",".join(r["mismatch"]) if r["mismatch"] else "ok",
            ]
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(hdr)]
    print("  ".join(h.rjust(w) for h, w in zip(hdr, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def add_dir_argument(p: argparse.ArgumentParser) -> None:
    """``--dir``, the benches' table cache (also ``ui_table_page.py``'s)."""
    p.add_argument(
        "--dir",
        type=Path,
        default=Path(os.environ.get("DELTALOG_BENCH_DIR", "/tmp/deltalog-bench")),
        help="table cache (default $DELTALOG_BENCH_DIR or /tmp/deltalog-bench)",
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--sizes",
        default="10000,100000,1000000",
        help="comma-separated active-file counts",
    )
    p.add_argument("--runs", type=int, default=3, help="fresh-process runs per measurement")
    p.add_argument(
        "--max-runs-1m",
        type=int,
        default=3,
        help="cap on --runs for sizes >= 1,000,000",
    )
    add_dir_argument(p)
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results JSON (default <dir>/results/snapshot-<time>.json)",
    )
    p.add_argument(
        "--shapes", default=",".join(SHAPES), help="comma-separated subset of ckpt,ckpt100,json"
    )
    p.add_argument(
        "--impls",
        default=",".join(IMPLS),
        help="comma-separated subset of deltalog,deltalake,raw",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=900,
        help="seconds before a child run is abandoned",
    )
    p.add_argument("--regenerate", action="store_true", help="rebuild the tables even if cached")
    p.add_argument(
        "--no-verify",
        action="store_true",
        help="skip the deltalake check of freshly generated tables",
    )
    p.add_argument("--generate-only", action="store_true", help="build the tables and exit")
    args = p.parse_args(argv)
    args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    args.shapes = [s for s in args.shapes.split(",") if s]
    args.impls = [s for s in args.impls.split(",") if s]
    for s in args.shapes:
        if s not in SHAPES:
            p.error(f"unknown shape {s}")
    for s in args.impls:
        if s not in IMPLS:
            p.error(f"unknown impl {s}")
    return args


def write_results(
    report: dict[str, Any], args: argparse.Namespace, bench: str, started: _dt.datetime
) -> Path:
    """Writes the results JSON to ``args.out``, by default to
    ``<args.dir>/results/<bench>-<started>.json``; returns the file."""
    out: Path = args.out or args.dir / "results" / f"{bench}-{started:%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    return out


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    started = _dt.datetime.now()
    print(f"bench dir: {args.dir}   python {platform.python_version()}   cpus {os.cpu_count()}")

    manifests: dict[tuple[str, int], dict[str, Any]] = {}
    for shape in args.shapes:
        for n in args.sizes:
            manifests[shape, n] = ensure_table(
                args.dir, shape, n, args.regenerate, not args.no_verify
            )
    if args.generate_only:
        return 0

    unavailable: set[str] = set()
    report: dict[str, Any] = {
        "benchmark": "snapshot",
        "started": started.isoformat(timespec="seconds"),
        "host": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "results": [],
    }
    mismatches = 0
    for shape in args.shapes:
        shape_results = []
        for n in args.sizes:
            info = manifests[shape, n]
            root = table_path(args.dir, shape, n)
            runs = min(args.runs, args.max_runs_1m) if n >= 1_000_000 else args.runs
            print(
                f"\n{shape}-{n}: {info['expected_files']:,} files, {info['log_files']} log files, "
                f"{info['log_bytes'] / 2**20:.0f} MiB; {runs} run(s)",
                flush=True,
            )
            warm_cache(root)
            busy0, own0, wall0 = _cpu_busy_s(), _own_cpu_s(), time.perf_counter()
            raw_runs: dict[str, list[dict[str, Any]]] = {i: [] for i in args.impls}
            mismatched: set[str] = set()
            for r in range(runs):
                for impl in args.impls:  # interleaved, so drift affects every impl alike
                    if impl in unavailable:
                        continue
                    res = run_child(impl, root, info, args.timeout)
                    raw_runs[impl].append(res)
                    if res.get("unavailable"):
                        unavailable.add(impl)
                        print(f"  {impl}: n/a ({res['error']})", flush=True)
                        continue
                    if "error" in res:
                        print(f"  run {r + 1} {impl}: ERROR {res['error']}", flush=True)
                        continue
                    print(
                        f"  run {r + 1} {impl:9s}: {res['total_s']:8.3f}s "
                        f"(open {res['open_s']:.3f}s)  "
                        f"rss {res['rss_peak_mb']:6.0f} MB  rows {res['rows']:,}",
                        flush=True,
                    )
                    if impl != "raw" and res["rows"] != info["expected_files"]:
                        mismatches += 1
                        mismatched.add(impl)
                        print(
                            f"  !!!!! MISMATCH: {impl} returned {res['rows']:,} add actions for "
                            f"{shape}-{n}, expected {info['expected_files']:,} !!!!!",
                            flush=True,
                        )
            entry = {
                "shape": shape,
                "size": n,
                "expected_files": info["expected_files"],
                "log_files": info["log_files"],
                "log_bytes": info["log_bytes"],
                "impls": {impl: summarise(rs) for impl, rs in raw_runs.items()},
                "other_cpu_share": _other_share(busy0, own0, wall0),
                "mismatch": sorted(mismatched),
            }
            for impl in unavailable & set(raw_runs):
                entry["impls"][impl]["unavailable"] = True
            share = entry["other_cpu_share"]
            if share is not None and share > 0.05:
                print(
                    f"  note: other processes used {share:.0%} of the machine's CPU while "
                    "this table was measured: timings are noisy",
                    flush=True,
                )
            shape_results.append(entry)
            report["results"].append(entry)
        print_table(shape, shape_results)

    report["mismatches"] = mismatches
    report["elapsed_s"] = round((_dt.datetime.now() - started).total_seconds(), 1)
    out = write_results(report, args, "snapshot", started)
    print(f"\nresults written to {out} (elapsed {report['elapsed_s']:.0f}s)")
    if mismatches:
        print(f"!!!!! {mismatches} MISMATCH(ES): see above !!!!!")
    return 0


if __name__ == "__main__":
    script_main(child_main, main)
