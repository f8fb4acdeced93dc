"""A table's page in the catalog server's web UI (issue #47), on a 1M-file table.

Builds once (cached under ``--dir``) a Delta table of 1,000,000 active files: log files only, a
classic parquet checkpoint written with pyarrow plus a few JSON commits after it; the data
files the adds point at do not exist (nothing here reads them). Registers it in a SQLite
catalog, starts ``python -m deltalog catalog serve`` on it (with a tokens file) and times
loading the table's page as a browser does: the HTML shell ``GET /ui/``, its static files,
then the page's three JSON calls at once (``/ui/api/table``, ``/ui/api/health``,
``/ui/api/history?limit=50``). The first load is cold (the server has not read the table),
the next ``--loads`` are warm (the same version again), then one load follows each of
``--commits`` new commits (a new version: the server catches up and computes the page's
figures again; the table the server sees is a hard-linked copy, so the cache stays as
built). Beside it, the peers: what a script does to get the same facts
in-process, with ``deltalake`` and with deltalog's own Python API (open the table, its add
actions, a size histogram and per-partition aggregation, schema, protocol, 50 history
entries), in a fresh process each.

Target (issue #47): the warm page load of a 1M-file table under 1 s.

Usage::

    python benches/ui_table_page.py [--files 1000000] [--loads 10] [--commits 3]
                                    [--peer-runs 3] [--dir /tmp/deltalog-bench]
                                    [--out results.json] [--skip-peers | --skip-page]
    python benches/ui_table_page.py --generate-only

See ``benches/README.md`` for what is measured and how the table is built
(``ui_table_fixture.py``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot as snap  # benches/ is not a package: found through sys.path
from ui_table_fixture import (  # the generated 1M-file table
    PARTITION_COLUMN,
    SEED,
    TAIL,
    _tail_commit,
    ensure_table,
    make_adds,
    table_path,
)

#: The page's static files when its shell names none (otherwise those it names under /ui/).
DEFAULT_STATIC = ("/ui/static/app.js", "/ui/static/app.css")
API_CALLS = ("table", "health", "history")
TARGET_S = 1.0
COMMIT_FILES = 10  # files each new commit (--commits) appends


# --------------------------------------------------------------------------------------
# Peers: the same facts by a script, in a fresh process (child)
# --------------------------------------------------------------------------------------

#: log2 of the size-histogram bucket edges: 1 KiB, 64 KiB, 1 MiB, 8, 32, 128, 256 MiB.
SIZE_EDGES_LOG2 = (10, 16, 20, 23, 25, 27, 28.0001)


def facts(sizes: Any, parts: Any, records: Any, dvs: int, n: int) -> dict[str, Any]:
    """What the health and detail calls report, from the add actions' columns: file count,
    bytes, records, a size histogram, small-file share, per-partition files and bytes, the
    deletion-vector share."""
    import numpy as np
    import pyarrow as pa

    s = np.asarray(sizes, dtype=np.int64)
    hist, _ = np.histogram(np.log2(np.maximum(s, 1)), bins=SIZE_EDGES_LOG2)
    by_part = (
        pa.table({"p": parts, "s": pa.array(s)})
        .group_by("p")
        .aggregate([("s", "sum"), ("s", "count")])
        .sort_by([("s_sum", "descending")])
    )
    return {
        "files": n,
        "bytes": int(s.sum()),
        "records": int(np.asarray(records, dtype=np.float64).sum()),
        "histogram": hist.tolist(),
        "small_share": float((s < 8 * 2**20).mean()) if n else 0.0,
        "partitions": by_part.num_rows,
        "top_partition": by_part.column("p")[0].as_py() if n else None,
        "dv_share": dvs / n if n else 0.0,
    }


def _load(
    path: str,
    open_table: Callable[[str], Any],
    add_actions: Callable[[Any], Any],
    add_columns: Callable[[Any], tuple[Any, Any, int]],
    schema_of: Callable[[Any], Any],
) -> dict[str, Any]:
    """One load by a script, timed: open the table (``open_table``), read its add actions
    (``add_actions``), their ``facts`` (``add_columns``: sizes, partition values and
    deletion-vector count), then the schema (``schema_of``), protocol, properties and 50
    history entries. The library-specific parts are the callables: ``_load_deltalake``,
    ``_load_deltalog``."""
    import pyarrow.compute as pc

    t0 = time.perf_counter()
    table = open_table(path)
    t_open = time.perf_counter()
    adds = add_actions(table)
    t_adds = time.perf_counter()
    sizes, parts, dvs = add_columns(adds)
    out = facts(sizes, parts, pc.fill_null(adds.column("num_records"), 0), dvs, adds.num_rows)
    schema = schema_of(table)
    protocol = table.protocol()
    md = table.metadata()
    history = table.history(50)
    t1 = time.perf_counter()
    out.update(
        version=table.version(),
        columns=len(schema),
        protocol=[protocol.min_reader_version, protocol.min_writer_version],
        properties=len(md.configuration),
        history=len(history),
        stats_nulls=adds.column("num_records").null_count,
    )
    return {"open_s": t_open - t0, "adds_s": t_adds - t_open, "total_s": t1 - t0, **out}


def _load_deltalake(path: str) -> dict[str, Any]:
    import pyarrow as pa
    from deltalake import DeltaTable

    def add_columns(adds: Any) -> tuple[Any, Any, int]:
        dv_cols = [c for c in adds.column_names if c.startswith("deletionVector")]
        dvs = adds.num_rows - adds.column(dv_cols[0]).null_count if dv_cols else 0
        return adds.column("size_bytes"), adds.column(f"partition.{PARTITION_COLUMN}"), dvs

    return _load(
        path,
        DeltaTable,
        lambda dt: pa.table(dt.get_add_actions(flatten=True)),  # zero-copy wrap: arro3 table
        add_columns,
        lambda dt: dt.schema().to_arrow(),
    )


def _partition(pv: Any) -> Any:
    """The partition column's values from deltalog's ``partition_values`` (a map).

    A table partitioned by one column has exactly one entry per map: its values are then the
    map's items as they are (pyarrow's ``map_lookup`` takes 0.3-0.6 s over 1M rows, most of
    what the aggregation costs otherwise)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_map(pv.type):
        return pc.struct_field(pv, PARTITION_COLUMN)
    offsets = pv.offsets.to_numpy()
    if pv.null_count == 0 and bool(np.all(np.diff(offsets) == 1)):
        keys = pc.unique(pv.keys.slice(offsets[0], len(pv)))
        if keys.to_pylist() == [PARTITION_COLUMN]:
            return pv.items.slice(offsets[0], len(pv))
    return pc.map_lookup(pv, PARTITION_COLUMN, "first")


def _load_deltalog(path: str) -> dict[str, Any]:
    import deltalog as dl

    def add_columns(adds: Any) -> tuple[Any, Any, int]:
        dvs = adds.num_rows - adds.column("deletion_vector").null_count
        parts = _partition(adds.column("partition_values").combine_chunks())
        return adds.column("size"), parts, dvs

    return _load(
        path, dl.DeltaTable, lambda t: t.get_add_actions(), add_columns, lambda t: t.schema()
    )


def child_main(impl: str, path: str, opts: dict[str, Any]) -> dict[str, Any]:
    """``opts["runs"]`` loads in this process (the first is the process's first; the library
    is imported before, untimed); or, with ``verify``, one load's counts."""
    import pyarrow  # noqa: F401  (every child imports pyarrow: comparable baselines)

    try:
        if impl == "deltalog":
            import deltalog as lib
        else:
            import deltalake as lib
    except ImportError as e:
        return {"impl": impl, "error": f"ImportError: {e}", "unavailable": True}
    load = _load_deltalog if impl == "deltalog" else _load_deltalake
    runs = []
    for _ in range(1 if opts.get("verify") else opts["runs"]):
        runs.append(load(path))
    out = {
        "impl": impl,
        "lib_version": getattr(lib, "__version__", None),
        "runs": runs,
        "rss_peak_mb": snap._maxrss_mb(),
    }
    if opts.get("verify"):
        out.update({k: v for k, v in runs[0].items() if not k.endswith("_s")})
    return out


def run_child(impl: str, root: Path, opts: dict[str, Any], timeout: float = 1800) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", impl, str(root), json.dumps(opts)]
    return snap.run_json_child(cmd, impl, timeout)


# --------------------------------------------------------------------------------------
# The page, through the catalog server
# --------------------------------------------------------------------------------------


class Browser:
    """Loads a page as a browser does: the shell, then its static files at once, then the
    page's API calls at once, over at most ``connections`` keep-alive connections."""

    def __init__(self, url: str, token: str, connections: int = 3) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"Authorization": f"Bearer {token}", "Accept-Encoding": "gzip"}
        self.pool = ThreadPoolExecutor(connections)
        self.local = threading.local()

    def close(self) -> None:
        self.pool.shutdown()

    def get(self, path: str) -> tuple[str, int, int, float, bytes]:
        """(path, status, bytes, seconds, body) of one GET on this thread's connection."""
        import http.client

        for attempt in (0, 1):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
                self.local.conn = conn
            began = time.perf_counter()
            try:
                conn.request("GET", path, headers=self.headers)
                answer = conn.getresponse()
                body = answer.read()
            except (http.client.HTTPException, ConnectionError):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise
                continue  # the server closed an idle keep-alive connection: a new one
            return path, answer.status, len(body), time.perf_counter() - began, body
        raise AssertionError("unreachable")

    def load(self, api_paths: dict[str, str]) -> dict[str, Any]:
        """One page load: total seconds, each request's seconds, statuses."""
        began = time.perf_counter()
        shell = self.get("/ui/")
        statics = list(self.pool.map(self.get, static_paths(shell[4])))
        apis = dict(zip(api_paths, self.pool.map(self.get, api_paths.values()), strict=True))
        total = time.perf_counter() - began
        requests = {"shell": shell, **{r[0]: r for r in statics}, **apis}
        return {
            "total_s": total,
            "shell_s": shell[3],
            "static_s": max((r[3] for r in statics), default=0.0),
            "calls_s": {name: r[3] for name, r in apis.items()},
            "bytes": sum(r[2] for r in requests.values()),
            "failed": {
                name: f"{r[1]} {r[4][:300].decode(errors='replace')}"
                for name, r in requests.items()
                if r[1] != 200
            },
            "bodies": {name: r[4] for name, r in apis.items()},
        }


def static_paths(shell: bytes) -> list[str]:
    """The shell's scripts and stylesheets under /ui/ (DEFAULT_STATIC when it names none)."""
    found = []
    for ref in re.findall(rb'(?:src|href)\s*=\s*["\']([^"\'#?]+)', shell):
        path = ref.decode(errors="replace")
        if path.startswith("static/"):
            path = "/ui/" + path
        if path.startswith("/ui/") and path.endswith((".js", ".css")) and path not in found:
            found.append(path)
    return found or list(DEFAULT_STATIC)


def api_paths(namespace: list[str], table: str) -> dict[str, str]:
    query = [("ns", part) for part in namespace] + [("t", table)]
    return {
        "table": "/ui/api/table?" + urlencode(query),
        "health": "/ui/api/health?" + urlencode(query),
        "history": "/ui/api/history?" + urlencode([*query, ("limit", "50")]),
    }


def _server_rss_mb(pid: int) -> tuple[float | None, float | None]:
    """(current, peak) resident MB of the server process, from /proc."""
    out: dict[str, float] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out.get("VmRSS"), out.get("VmHWM")


def linked_copy(root: Path, dest: Path) -> Path:
    """The table's log in ``dest``, each file a hard link to the cached one (a copy where
    links are not possible): new commits go to the copy and the cache stays as built."""
    log = dest / "_delta_log"
    log.mkdir(parents=True)
    for f in (root / "_delta_log").iterdir():
        try:
            os.link(f, log / f.name)
        except OSError:
            shutil.copy2(f, log / f.name)
    return dest


def append_commit(location: Path, version: int, files: int) -> None:
    """A new version: a blind append of ``files`` files (as the tail commits are written)."""
    import numpy as np

    rng = np.random.default_rng(SEED + version)
    adds = make_adds(rng, files, 10_000_000 + version * files, int(time.time() * 1000))
    text = _tail_commit(rng, version, "WRITE", adds, [], True)
    (location / "_delta_log" / f"{version:020d}.json").write_text(text)


def measure_page(
    root: Path, info: dict[str, Any], work: Path, loads: int, commits: int
) -> dict[str, Any]:
    """Registers (a linked copy of) the table, starts the server, loads the page once cold,
    ``loads`` times warm, then once after each of ``commits`` new commits (a new version:
    the server brings its snapshot up to date and computes the page's figures again).
    Returns the figures, or ``{"error": ...}`` when the server has no UI (yet)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import catalog_server
    from deltalog.catalog import connect_catalog
    from deltalog.server.auth import add_token

    db, wh, tokens = work / "catalog.db", work / "wh", work / "tokens.json"
    wh.mkdir(parents=True, exist_ok=True)
    catalog = connect_catalog({"type": "sqlite", "path": str(db), "warehouse": str(wh)})
    catalog.create_namespace("bench")
    location = linked_copy(root, work / "table")
    t0 = time.perf_counter()
    catalog.register_table("bench.big", str(location))
    register_s = time.perf_counter() - t0
    token = add_token(tokens, "bench-ui", "reader")
    del catalog
    out: dict[str, Any] = {"register_s": register_s}
    t0 = time.perf_counter()
    try:
        server = catalog_server.start(
            work / "server", db=f"sqlite://{db}", warehouse=str(wh), tokens=tokens
        )
    except RuntimeError as e:  # e.g. a UI half-written: its static files not there yet
        last = (str(e).strip().splitlines() or ["?"])[-1]
        out["error"] = f"the catalog server did not start: {last}"
        return out
    out["server_start_s"] = time.perf_counter() - t0
    browser = Browser(server.url, token)
    paths = api_paths(["bench"], "big")
    try:
        out["server_rss_before_mb"] = _server_rss_mb(server.proc.pid)[0]
        cold = browser.load(paths)
        out["cold"] = _strip(cold)
        if cold["failed"]:
            statuses = {name: text.split()[0] for name, text in cold["failed"].items()}
            short = ", ".join(f"{name} {status}" for name, status in statuses.items())
            if all(s in ("404", "406") for s in statuses.values()):
                out["error"] = f"the server has no UI (yet): {short}"
            else:
                out["error"] = f"requests failed on the cold load: {cold['failed']}"
                out["server_log_tail"] = _log_tail(server.log_text())
            return out
        out["answers"] = _answers(cold["bodies"])
        warm = []
        for _ in range(loads):
            page = browser.load(paths)
            if page["failed"]:
                out["error"] = f"requests failed on a warm load: {page['failed']}"
                out["server_log_tail"] = _log_tail(server.log_text())
                return out
            warm.append(_strip(page))
        out["warm"] = warm
        out["server_rss_mb"], out["server_peak_mb"] = _server_rss_mb(server.proc.pid)
        after = []
        for i in range(commits):
            append_commit(location, info["version"] + 1 + i, COMMIT_FILES)
            page = browser.load(paths)
            if page["failed"]:
                out["error"] = f"requests failed after a commit: {page['failed']}"
                out["server_log_tail"] = _log_tail(server.log_text())
                return out
            files = _answers(page["bodies"]).get("table.files")
            want = info["expected_files"] + COMMIT_FILES * (i + 1)
            if isinstance(files, int) and files != want:
                print(f"!!!!! MISMATCH: after commit {i + 1} the page shows {files:,} files !!!!!")
            after.append(_strip(page))
        out["after_commit"] = after
    finally:
        browser.close()
        out["server_exit"] = server.stop()
    return out


def _log_tail(text: str, lines: int = 25) -> list[str]:
    """The server log's last lines that are not request lines (a traceback, an error)."""
    kept = [line for line in text.splitlines() if not line.startswith('{"method"')]
    return kept[-lines:]


def _strip(page: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in page.items() if k != "bodies"}


def _answers(bodies: dict[str, bytes]) -> dict[str, Any]:
    """A few facts from the API answers, to check them against the peers': the file count
    and size wherever the answers give them (by key name, whatever the nesting)."""
    found: dict[str, Any] = {}

    def walk(obj: Any, where: str) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                key = k.lower()
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    if key in ("num_files", "numfiles", "file_count", "files", "count_files"):
                        found.setdefault(f"{where}.files", v)
                    if key in ("size", "size_bytes", "total_size", "total_bytes", "bytes"):
                        found.setdefault(f"{where}.bytes", v)
                walk(v, where)
        elif isinstance(obj, list):
            for v in obj[:3]:
                walk(v, where)

    for name, body in bodies.items():
        try:
            doc = json.loads(body)
        except ValueError:
            found[f"{name}.json"] = "not JSON"
            continue
        found[f"{name}.bytes_on_wire"] = len(body)
        if isinstance(doc, dict) and isinstance(doc.get(name), list):
            found[f"{name}.entries"] = len(doc[name])  # {"history": [...]}
        walk(doc, name)
    return found


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def _med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _x(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or not b else f"{a / b:.2f}x"


def summarise_peer(res: dict[str, Any]) -> dict[str, Any]:
    if "error" in res:
        return res
    runs = res["runs"]
    warm = runs[1:] or runs
    return {
        **res,
        "first_s": runs[0]["total_s"],
        "warm_s": _med([r["total_s"] for r in warm]),
        "warm_max_s": max(r["total_s"] for r in warm),
        "open_s": _med([r["open_s"] for r in warm]),
        "adds_s": _med([r["adds_s"] for r in warm]),
        "files": runs[0]["files"],
        "bytes": runs[0]["bytes"],
    }


def print_results(info: dict[str, Any], page: dict[str, Any], peers: dict[str, Any]) -> None:
    n = info["expected_files"]
    warm = page.get("warm") or []
    after = page.get("after_commit") or []
    cold = page.get("cold")
    page_cold = cold["total_s"] if cold and not cold["failed"] else None
    page_warm = _med([p["total_s"] for p in warm])
    page_after = _med([p["total_s"] for p in after])
    print(f"\n== a table's page, {n:,} active files ==")
    print(
        "page: the shell, its static files, then the three API calls at once (3 keep-alive "
        "connections);\n  cold = the server's first look at the table, warm = the same "
        f"version again (median and max of {len(warm)}),\n  new version = the first load "
        f"after a commit of {COMMIT_FILES} files (median of {len(after)})\n"
        "peers: a script getting the same facts (open, add actions, size histogram, "
        "per-partition\n  files and bytes, schema, protocol, 50 history entries) in a fresh "
        "process, imports untimed;\n  first = its first load, warm = median of the later "
        "ones (no cache: each load replays the log)\n"
    )
    hdr = ["what", "cold/first s", "warm s", "warm max s", "new version s", "files"]
    rows = [
        [
            "page /ui/ (server)",
            _s(page_cold),
            _s(page_warm),
            _s(max((p["total_s"] for p in warm), default=None)),
            _s(page_after),
            _count(page.get("answers", {}).get("table.files")),
        ]
    ]
    ratio_rows = []
    labels = {"deltalog": "deltalog in-process", "deltalake": "deltalake in-process"}
    for impl, res in peers.items():
        if "error" in res:
            state = "n/a" if res.get("unavailable") else "error"
            rows.append([labels[impl], state, "-", "-", "-", "-"])
            continue
        rows.append(
            [
                labels[impl],
                _s(res["first_s"]),
                _s(res["warm_s"]),
                _s(res["warm_max_s"]),
                _s(res["warm_s"]),  # a script has no cache: a new version costs a warm load
                f"{res['files']:,}",
            ]
        )
        ratio_rows.append(
            [
                f"{impl} / page",
                _x(res["first_s"], page_cold),
                _x(res["warm_s"], page_warm),
                "",
                _x(res["warm_s"], page_after),
                "",
            ]
        )
    _print_table(hdr, rows + ratio_rows)

    if warm:
        print("\nthe page's requests (seconds): cold, warm median, new version median")
        columns = [[cold], warm, after]
        for label, key in (("shell", "shell_s"), ("static (slowest)", "static_s")):
            cells = [_s(_med([p[key] for p in loads])) for loads in columns]
            print(f"  {label:<18}" + "".join(f"{c:>9}" for c in cells))
        for name in API_CALLS:
            cells = [_s(_med([p["calls_s"][name] for p in loads])) for loads in columns]
            print(f"  api/{name:<14}" + "".join(f"{c:>9}" for c in cells))
        print(f"  bytes per page load: {warm[0]['bytes']:,}")
    for impl, res in peers.items():
        if "error" not in res:
            print(
                f"{impl}: open {_s(res['open_s'])} s + add actions {_s(res['adds_s'])} s "
                f"(warm medians), peak RSS {res['rss_peak_mb']:.0f} MB"
            )
    if "register_s" in page:
        print(
            f"catalog: register_table {page['register_s']:.2f} s; server start "
            f"{page.get('server_start_s', 0):.2f} s; server RSS "
            f"{_mb(page.get('server_rss_before_mb'))} before the first load, "
            f"{_mb(page.get('server_rss_mb'))} after the warm loads "
            f"(peak {_mb(page.get('server_peak_mb'))})"
        )
    if page.get("answers"):
        answers = page["answers"]
        print("API answers (facts found by key name): " + json.dumps(answers))
        wrong = [
            f"{key} = {answers[key]}, expected {want}"
            for key, want in (
                ("table.files", n),
                ("health.files", n),
                ("table.bytes", info.get("expected_bytes")),
                ("health.bytes", info.get("expected_bytes")),
                ("history.entries", len(TAIL)),
            )
            if key in answers and want is not None and answers[key] != want
        ]
        for line in wrong:
            print(f"!!!!! MISMATCH: the page's {line} !!!!!")
        if not wrong:
            print("the page's file count, size and history agree with the table")
    if "error" in page:
        if page.get("server_log_tail"):
            print("\nthe server's log ends with:\n  " + "\n  ".join(page["server_log_tail"]))
        print(f"\npage load: NOT MEASURED: {page['error']}")
    if page_warm is None:
        print(f"target (issue #47): warm page load < {TARGET_S:g} s: not measured")
        return
    verdict = "met" if page_warm < TARGET_S else "MISSED"
    print(
        f"\ntarget (issue #47): warm page load of a {n:,}-file table < {TARGET_S:g} s: "
        f"{verdict} ({page_warm:.3f} s median, "
        f"{max(p['total_s'] for p in warm):.3f} s max over {len(warm)} loads)"
    )
    if page_after is not None:
        print(
            f"(not the target, for the record: a new version's first load "
            f"{page_after:.3f} s median, {max(p['total_s'] for p in after):.3f} s max; "
            f"the cold load {page_cold:.3f} s)"
        )


def _print_table(hdr: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(hdr)]
    for r in [hdr, *rows]:
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        print("  ".join(cells).rstrip())


def _count(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else "-"


def _mb(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f} MB"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--files", type=int, default=1_000_000, help="active files (default 1M)")
    p.add_argument("--loads", type=int, default=10, help="warm page loads (default 10)")
    p.add_argument(
        "--commits",
        type=int,
        default=3,
        help=f"page loads each after a new commit of {COMMIT_FILES} files (default 3)",
    )
    p.add_argument(
        "--peer-runs",
        type=int,
        default=3,
        help="loads per peer, in one fresh process: the first, then warm ones (default 3)",
    )
    snap.add_dir_argument(p)
    p.add_argument(
        "--out", type=Path, help="results JSON (default <dir>/results/ui_table_page-<time>.json)"
    )
    p.add_argument("--regenerate", action="store_true", help="rebuild the table even if cached")
    p.add_argument("--generate-only", action="store_true", help="build the table and exit")
    p.add_argument("--skip-peers", action="store_true", help="time the page only")
    p.add_argument("--skip-page", action="store_true", help="time the peers only")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    started = _dt.datetime.now()
    print(f"bench dir: {args.dir}   python {platform.python_version()}   cpus {os.cpu_count()}")
    try:
        import deltalog

        native = Path(deltalog.__file__).parent / "_native.abi3.so"
        when = _dt.datetime.fromtimestamp(native.stat().st_mtime) if native.exists() else None
        print(f"deltalog: {Path(deltalog.__file__).parent} (extension built {when:%Y-%m-%d %H:%M})")
    except ImportError as e:
        print(f"deltalog cannot be imported ({e}): the page cannot be measured")
    info = ensure_table(args.dir, args.files, args.regenerate, run_child)
    if args.generate_only:
        return 0
    root = table_path(args.dir, args.files)
    snap.warm_cache(root)  # nobody pays for a cold disk: the page cache is warm for all

    busy0, own0, wall0 = snap._cpu_busy_s(), snap._own_cpu_s(), time.perf_counter()
    peers: dict[str, Any] = {}
    if not args.skip_peers:
        for impl in ("deltalog", "deltalake"):
            res = summarise_peer(run_child(impl, root, {"runs": args.peer_runs}))
            peers[impl] = res
            if "error" in res:
                print(f"{impl}: ERROR {res['error']}", flush=True)
                continue
            print(
                f"{impl}: first {res['first_s']:.3f} s, warm {res['warm_s']:.3f} s "
                f"({res['files']:,} files)",
                flush=True,
            )
            if res["files"] != info["expected_files"]:
                print(f"!!!!! MISMATCH: {impl} sees {res['files']:,} files !!!!!")
    page: dict[str, Any] = {"error": "skipped (--skip-page)"}
    if not args.skip_page:
        work = Path(tempfile.mkdtemp(prefix="ui-page-", dir=args.dir))
        try:
            page = measure_page(root, info, work, args.loads, args.commits)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    share = snap._other_share(busy0, own0, wall0)
    print_results(info, page, peers)
    if share is not None and share > 0.05:
        print(
            f"note: other processes used {share:.0%} of the machine's CPU meanwhile: "
            "timings are noisy"
        )
    report = {
        "benchmark": "ui_table_page",
        "started": started.isoformat(timespec="seconds"),
        "host": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "table": info,
        "page": page,
        "peers": peers,
        "other_cpu_share": share,
    }
    out = snap.write_results(report, args, "ui_table_page", started)
    print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    # A child ends at once: deltalake's threads occasionally abort the process at teardown.
    snap.script_main(child_main, main, exit_child=os._exit)
