"""Write benchmark: bulk append, 1-row append latency and DELETE, deltalog vs deltalake.

Three measurements, each comparing ``deltalog`` with the ``deltalake`` package (delta-rs) in
the same run, on a local disk, in a temporary directory removed at the end:

1. Bulk append: ``--rows`` (10M) rows of a 6-column table (``id`` int64, ``qty`` int64,
   ``value`` float64, ``name`` string, ``ts`` timestamp[us, UTC], ``day`` date32; seeded
   numpy data) appended to a new table by ``deltalog.write_table(path, data, mode="append")``
   and ``deltalake.write_deltalake(path, data, mode="append")``. Each run is a fresh process
   (this script with ``--child``) that builds the data, then times the one write call; runs
   of the two libraries are interleaved; the median of ``--runs`` is reported with the
   deltalake/deltalog ratio and each child's peak RSS. The row count is read back (untimed).

2. 1-row append latency: one process per library creates a table (1 row, untimed), then
   makes ``--appends`` (200) sequential 1-row appends, each timed on its own; p50 and p99
   (nearest rank) in ms. Target (issue #4): deltalog p50 <= 5 ms. Then as many appends again
   through one table object (``write_table(table, ...)`` / ``write_deltalake(table, ...)``),
   which each append moves forward instead of opening the table by path.

3. DELETE of 1% of the rows: a table of ``--delete-rows`` (2M) rows written by each library
   in 10 writes (~10 files), deltalog's with ``delta.enableDeletionVectors=true``, deltalake's
   plainly; a fresh process then opens it and runs ``DeltaTable(path).delete("id % 100 = 0")``
   (deletion vectors for deltalog, copy-on-write for deltalake). Only the delete call is
   timed; fresh table per run; median of ``--runs``. Afterwards each library reads its table
   back with ``to_pyarrow_table()``: exactly 99% of the rows must remain, else the run fails.

Usage::

    python benches/write.py [--rows 10000000] [--runs 3] [--appends 200]
                            [--delete-rows 2000000] [--skip-delete] [--dir /tmp/deltalog-bench]

See ``benches/README.md`` for details and caveats.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

IMPLS = ("deltalog", "deltalake")
SEED = 20261122
NAMES = 100_000  # distinct values of the string column
APPEND_P50_TARGET_MS = 5.0  # issue #4
DELETE_PREDICATE = "id % 100 = 0"
DELETE_WRITES = 10  # the DELETE table is written in this many writes (one file each)
DV_CONFIG = {"delta.enableDeletionVectors": "true"}


# --------------------------------------------------------------------------------------
# Data and library adapters (used by the children)
# --------------------------------------------------------------------------------------


def make_data(rows: int) -> pa.Table:
    """The benchmark table: ids 0..rows-1 and seeded random values in 5 more columns."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(SEED)
    names = pa.array([f"name-{i:05}" for i in range(NAMES)])
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "qty": rng.integers(0, 1_000_000, size=rows, dtype=np.int64),
            "value": rng.normal(size=rows),
            "name": names.take(pa.array(rng.integers(0, NAMES, size=rows))),
            "ts": pa.array(
                1_700_000_000_000_000 + rng.integers(0, 365 * 86_400 * 10**6, size=rows),
                type=pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array(rng.integers(19_000, 20_000, size=rows, dtype=np.int32), pa.date32()),
        }
    )


def writer(impl: str) -> Callable[..., Any]:
    """``write(path, data, mode, configuration=None)`` for the library."""
    if impl == "deltalog":
        import deltalog

        def write_dlog(
            path: str, data: pa.Table, mode: str, configuration: dict[str, str] | None = None
        ) -> Any:
            return deltalog.write_table(path, data, mode=mode, configuration=configuration)

        return write_dlog
    if impl == "deltalake":
        import deltalake

        def write_dlake(
            path: str, data: pa.Table, mode: str, configuration: dict[str, str] | None = None
        ) -> Any:
            return deltalake.write_deltalake(path, data, mode=mode, configuration=configuration)

        return write_dlake
    raise ValueError(impl)


def open_table(impl: str, path: str) -> Any:
    if impl == "deltalog":
        import deltalog

        return deltalog.DeltaTable(path)
    import deltalake

    return deltalake.DeltaTable(path)


def library_version(impl: str) -> str | None:
    module = __import__(impl)
    return getattr(module, "__version__", None)


def maxrss_mb() -> float:
    """Peak RSS of this process in MiB: ``VmHWM`` on Linux (``ru_maxrss`` survives ``execve``,
    so a child would report its parent's peak), else ``getrusage``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def dir_files(root: Path) -> dict[str, int]:
    """Relative path -> size of every file under ``root``."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = p.stat().st_size
    return out


def data_files(root: Path) -> tuple[int, int]:
    """(number, total bytes) of the parquet files under ``root`` (outside ``_delta_log``)."""
    sizes = [
        s
        for p, s in dir_files(root).items()
        if p.endswith(".parquet") and not p.startswith("_delta_log")
    ]
    return len(sizes), sum(sizes)


def checkpoints(root: Path) -> int:
    return sum(1 for p in (root / "_delta_log").glob("*.checkpoint*.parquet"))


# --------------------------------------------------------------------------------------
# Children: one measurement each, in a fresh process
# --------------------------------------------------------------------------------------


def child_append(impl: str, path: str, rows: int) -> dict[str, Any]:
    import pyarrow  # noqa: F401  (every child imports pyarrow and its library before timing)

    write = writer(impl)
    data = make_data(rows)
    rss_data = maxrss_mb()
    t0 = time.perf_counter()
    write(path, data, "append")
    seconds = time.perf_counter() - t0
    rss_peak = maxrss_mb()
    del data
    read_rows = open_table(impl, path).to_pyarrow_table(columns=["id"]).num_rows
    return {
        "seconds": seconds,
        "rss_data_mb": rss_data,
        "rss_peak_mb": rss_peak,
        "rows": read_rows,
        "version": library_version(impl),
    }


def child_latency(impl: str, path: str, appends: int) -> dict[str, Any]:
    write = writer(impl)
    data = make_data(2 * appends + 1)
    write(path, data.slice(0, 1), "error")  # creates the table and warms the library up
    one_rows = [data.slice(i, 1) for i in range(1, appends + 1)]
    ms = []
    for one in one_rows:
        t0 = time.perf_counter()
        write(path, one, "append")
        ms.append((time.perf_counter() - t0) * 1000)
    # The same through one table object, which each append moves forward.
    table = open_table(impl, path)
    object_ms = []
    for i in range(appends + 1, 2 * appends + 1):
        one = data.slice(i, 1)
        t0 = time.perf_counter()
        if impl == "deltalog":
            import deltalog

            deltalog.write_table(table, one, mode="append")
        else:
            import deltalake

            deltalake.write_deltalake(table, one, mode="append")
        object_ms.append((time.perf_counter() - t0) * 1000)
    read_rows = open_table(impl, path).to_pyarrow_table().num_rows
    return {
        "ms": ms,
        "object_ms": object_ms,
        "rows": read_rows,
        "checkpoints": checkpoints(Path(path)),
        "version": library_version(impl),
    }


def child_delete_setup(impl: str, path: str, rows: int) -> dict[str, Any]:
    write = writer(impl)
    data = make_data(rows)
    config = DV_CONFIG if impl == "deltalog" else None
    step = math.ceil(rows / DELETE_WRITES)
    for i, start in enumerate(range(0, rows, step)):
        if i == 0:
            write(path, data.slice(start, step), "error", configuration=config)
        else:
            write(path, data.slice(start, step), "append")
    files, size = data_files(Path(path))
    out: dict[str, Any] = {"files": files, "bytes": size}
    if impl == "deltalog":
        proto = open_table(impl, path).protocol()
        out["protocol"] = repr(proto)
        out["dv_feature"] = all(
            "deletionVectors" in (features or [])
            for features in (proto.reader_features, proto.writer_features)
        )
    return out


def child_delete(impl: str, path: str, rows: int) -> dict[str, Any]:
    import numpy as np

    root = Path(path)
    version = library_version(impl)  # imports the library before the baseline RSS
    before = dir_files(root)
    rss_before = maxrss_mb()
    t0 = time.perf_counter()
    table = open_table(impl, path)
    t_open = time.perf_counter()
    try:
        delete = table.delete
    except AttributeError as e:
        raise RuntimeError(
            f"{impl}.DeltaTable has no delete() method ({e}): the DELETE benchmark needs "
            "DeltaTable.delete(predicate). Run with --skip-delete to measure appends only."
        ) from e
    t_call = time.perf_counter()
    metrics = delete(DELETE_PREDICATE)
    t1 = time.perf_counter()
    rss_peak = maxrss_mb()
    after = dir_files(root)
    new = {p: s for p, s in after.items() if p not in before}
    result = open_table(impl, path).to_pyarrow_table()
    ids = result.column("id").to_numpy()
    return {
        "seconds": t1 - t_call,
        "open_s": t_open - t0,
        "rows": result.num_rows,
        "deleted_ids_left": int(np.count_nonzero(ids % 100 == 0)),
        "metrics": json.loads(json.dumps(metrics, default=str)) if metrics is not None else None,
        "new_files": len(new),
        "new_bytes": sum(new.values()),
        "new_dv_files": sum(1 for p in new if p.endswith(".bin")),
        "new_data_files": sum(
            1 for p in new if p.endswith(".parquet") and not p.startswith("_delta_log")
        ),
        "rss_before_mb": rss_before,
        "rss_peak_mb": rss_peak,
        "version": version,
    }


CHILDREN: dict[str, Callable[[str, str, int], dict[str, Any]]] = {
    "append": child_append,
    "latency": child_latency,
    "delete-setup": child_delete_setup,
    "delete": child_delete,
}


def child_main(spec: dict[str, Any]) -> None:
    """Runs one child task and prints its result as one JSON line (``error`` on failure)."""
    try:
        out = CHILDREN[spec["task"]](spec["impl"], spec["path"], spec["n"])
    except BaseException as e:
        out = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    print(json.dumps(out), flush=True)
    # Skip interpreter teardown: deltalake's threads sometimes abort the process on exit
    # ("terminate called without an active exception") after the result is printed.
    os._exit(0)


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def run_child(task: str, impl: str, path: Path, n: int, timeout: float) -> dict[str, Any]:
    spec = json.dumps({"task": task, "impl": impl, "path": str(path), "n": n})
    cmd = [sys.executable, os.path.abspath(__file__), "--child", spec]
    try:
        p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    for line in reversed(p.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {p.returncode}: {err}"}


def _cpu_busy_s() -> float | None:
    """Busy CPU seconds of the whole machine so far (None without psutil)."""
    try:
        import psutil
    except ImportError:
        return None
    t = psutil.cpu_times()
    return t.user + t.system + sum(getattr(t, k, 0.0) for k in ("nice", "irq", "softirq", "steal"))


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Noise:
    """Share of the machine's CPU used by other processes while a section ran."""

    def __init__(self) -> None:
        self.busy0, self.own0, self.wall0 = _cpu_busy_s(), _own_cpu_s(), time.perf_counter()

    def share(self) -> float | None:
        busy1 = _cpu_busy_s()
        if self.busy0 is None or busy1 is None:
            return None
        other = (busy1 - self.busy0) - (_own_cpu_s() - self.own0)
        capacity = (time.perf_counter() - self.wall0) * (os.cpu_count() or 1)
        return round(max(0.0, other) / capacity, 3) if capacity > 0 else None

    def report(self, section: dict[str, Any]) -> None:
        share = section["other_cpu_share"] = self.share()
        if share is not None and share > 0.05:
            print(
                f"note: other processes used {share:.0%} of the machine's CPU during this "
                "section: timings are noisy",
                flush=True,
            )


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (the smallest value with at least q% of values <= it)."""
    s = sorted(values)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def filesystem(path: Path) -> str:
    """Type of the filesystem holding ``path`` (from /proc/mounts; "?" elsewhere)."""
    best, fstype = "", "?"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                mount = parts[1]
                inside = str(path).startswith(mount.rstrip("/") + "/") or str(path) == mount
                if inside and len(mount) > len(best):
                    best, fstype = mount, parts[2]
    except OSError:
        pass
    return fstype


def fail(errors: list[str], section: str, impl: str, res: dict[str, Any]) -> None:
    msg = f"{section}: {impl}: {res['error']}"
    errors.append(msg)
    print(f"!!!!! FAILED {msg} !!!!!", flush=True)
    if "traceback" in res:
        print(res["traceback"].rstrip(), flush=True)


def settle() -> None:
    """Flush dirty pages of earlier writes so they do not compete with the next run."""
    if hasattr(os, "sync"):
        os.sync()


def bench_append(
    tmp: Path, rows: int, runs: int, timeout: float, errors: list[str]
) -> dict[str, Any]:
    print(
        f"\n== 1. append {rows:,} rows to a new table, {runs} fresh-process run(s) ==", flush=True
    )
    noise = Noise()
    results: dict[str, list[dict[str, Any]]] = {impl: [] for impl in IMPLS}
    for r in range(runs):
        for impl in IMPLS:  # interleaved, so drift affects both alike
            path = tmp / f"append-{impl}-{r}"
            settle()
            res = run_child("append", impl, path, rows, timeout)
            if "error" not in res:
                res["files"], res["bytes"] = data_files(path)
            shutil.rmtree(path, ignore_errors=True)
            results[impl].append(res)
            if "error" in res:
                fail(errors, "append", impl, res)
            elif res["rows"] != rows:
                res["error"] = f"read back {res['rows']:,} rows, expected {rows:,}"
                fail(errors, "append", impl, res)
            else:
                print(
                    f"  run {r + 1} {impl:<9}: {res['seconds']:7.3f} s  rss "
                    f"{res['rss_peak_mb']:5.0f} MB  {res['files']} file(s), "
                    f"{res['bytes'] / 2**20:.0f} MiB",
                    flush=True,
                )
    section: dict[str, Any] = {"rows": rows, "runs": results, "median": {}}
    for impl, rs in results.items():
        ok = [x for x in rs if "error" not in x]
        if ok:
            section["median"][impl] = {
                k: statistics.median(x[k] for x in ok)
                for k in ("seconds", "rss_peak_mb", "rss_data_mb", "files", "bytes")
            }
    med = section["median"]
    print(f"\nAppend {rows:,} rows, 6 columns (medians of {runs} fresh-process runs)")
    print(
        f"{'writer':<11}{'seconds':>9}{'Mrows/s':>9}{'deltalake / this':>18}"
        f"{'peak RSS MB (after data)':>26}{'files':>7}{'MiB':>7}"
    )
    for impl in IMPLS:
        if impl not in med:
            print(f"{impl:<11}{'error':>9}")
            continue
        m = med[impl]
        ratio = (
            f"{med['deltalake']['seconds'] / m['seconds']:.2f}x" if "deltalake" in med else "n/a"
        )
        rss = f"{m['rss_peak_mb']:.0f} ({m['rss_data_mb']:.0f})"
        print(
            f"{impl:<11}{m['seconds']:>9.3f}{rows / m['seconds'] / 1e6:>9.2f}{ratio:>18}"
            f"{rss:>26}{m['files']:>7.0f}{m['bytes'] / 2**20:>7.0f}"
        )
    if len(med) == 2:
        print(
            "RSS deltalog / deltalake: "
            f"{med['deltalog']['rss_peak_mb'] / med['deltalake']['rss_peak_mb']:.2f}x"
        )
    noise.report(section)
    return section


def bench_latency(tmp: Path, appends: int, timeout: float, errors: list[str]) -> dict[str, Any]:
    print(f"\n== 2. {appends} sequential 1-row appends, one process per library ==", flush=True)
    noise = Noise()
    section: dict[str, Any] = {"appends": appends, "impls": {}}
    for impl in IMPLS:
        path = tmp / f"latency-{impl}"
        settle()
        res = run_child("latency", impl, path, appends, timeout)
        shutil.rmtree(path, ignore_errors=True)
        if "error" not in res and res["rows"] != 2 * appends + 1:
            res["error"] = f"read back {res['rows']:,} rows, expected {2 * appends + 1:,}"
        if "error" in res:
            fail(errors, "latency", impl, res)
        else:
            ms = res["ms"]
            tenth = max(1, len(ms) // 10)
            res.update(
                p50_ms=percentile(ms, 50),
                p90_ms=percentile(ms, 90),
                p99_ms=percentile(ms, 99),
                max_ms=max(ms),
                mean_ms=statistics.fmean(ms),
                first_tenth_p50_ms=statistics.median(ms[:tenth]),
                last_tenth_p50_ms=statistics.median(ms[-tenth:]),
                object_p50_ms=percentile(res["object_ms"], 50),
                object_p99_ms=percentile(res["object_ms"], 99),
            )
        section["impls"][impl] = res
    ok = {impl: r for impl, r in section["impls"].items() if "error" not in r}
    print(f"\n1-row append latency, {appends} appends to one table ({filesystem(tmp)} disk)")
    print(
        f"{'writer':<11}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        f"{'first/last 10% p50':>21}{'checkpoints':>13}{'p50 deltalake / this':>22}"
    )
    for impl in IMPLS:
        if impl not in ok:
            print(f"{impl:<11}{'error':>9}")
            continue
        r = ok[impl]
        drift = f"{r['first_tenth_p50_ms']:.2f} / {r['last_tenth_p50_ms']:.2f}"
        ratio = f"{ok['deltalake']['p50_ms'] / r['p50_ms']:.2f}x" if "deltalake" in ok else "n/a"
        print(
            f"{impl:<11}{r['p50_ms']:>9.2f}{r['p90_ms']:>9.2f}{r['p99_ms']:>9.2f}"
            f"{r['max_ms']:>9.2f}{drift:>21}{r['checkpoints']:>13}{ratio:>22}"
        )
    print(f"the same, {appends} more appends through one table object (write(table, ...))")
    for impl in IMPLS:
        if impl in ok:
            r = ok[impl]
            ratio = (
                f"{ok['deltalake']['object_p50_ms'] / r['object_p50_ms']:.2f}x"
                if "deltalake" in ok
                else "n/a"
            )
            print(
                f"{impl:<11}{r['object_p50_ms']:>9.2f}{'':>9}{r['object_p99_ms']:>9.2f}"
                f"{'':>9}{'':>21}{'':>13}{ratio:>22}"
            )
    if "deltalog" in ok:
        p50 = ok["deltalog"]["p50_ms"]
        verdict = "met" if p50 <= APPEND_P50_TARGET_MS else "NOT MET"
        section["target_met"] = p50 <= APPEND_P50_TARGET_MS
        print(
            f"target (issue #4): deltalog p50 <= {APPEND_P50_TARGET_MS:.0f} ms: "
            f"{verdict} ({p50:.2f} ms)"
        )
    noise.report(section)
    return section


def bench_delete(
    tmp: Path, rows: int, runs: int, timeout: float, errors: list[str]
) -> dict[str, Any]:
    expected = rows - len(range(0, rows, 100))
    print(
        f"\n== 3. DELETE WHERE {DELETE_PREDICATE} from {rows:,} rows "
        f"({rows - expected:,} rows), {runs} run(s) ==",
        flush=True,
    )
    noise = Noise()
    results: dict[str, list[dict[str, Any]]] = {impl: [] for impl in IMPLS}
    failed: set[str] = set()
    for r in range(runs):
        for impl in IMPLS:
            if impl in failed:  # one failure is enough; the other library still runs
                continue
            path = tmp / f"delete-{impl}-{r}"
            setup = run_child("delete-setup", impl, path, rows, timeout)
            if "error" in setup:
                res = {"error": f"creating the table: {setup['error']}"}
                res.update({k: v for k, v in setup.items() if k == "traceback"})
            else:
                if setup.get("dv_feature") is False and r == 0:
                    print(
                        "  !!!!! WARNING: deltalog wrote the table with "
                        f"{DV_CONFIG} but its protocol has no deletionVectors feature: "
                        f"{setup['protocol']} !!!!!",
                        flush=True,
                    )
                settle()
                res = run_child("delete", impl, path, rows, timeout)
                res["dv_feature"] = setup.get("dv_feature")
                res["table_files"], res["table_bytes"] = setup["files"], setup["bytes"]
                if "error" not in res and (res["rows"] != expected or res["deleted_ids_left"]):
                    res["error"] = (
                        f"after the delete {impl} reads {res['rows']:,} rows "
                        f"({res['deleted_ids_left']:,} matching the predicate), expected "
                        f"{expected:,} (99%): the delete did not do its job"
                    )
            shutil.rmtree(path, ignore_errors=True)
            results[impl].append(res)
            if "error" in res:
                fail(errors, "delete", impl, res)
                failed.add(impl)
                continue
            print(
                f"  run {r + 1} {impl:<9}: {res['seconds']:7.3f} s  (open {res['open_s']:.3f} s)"
                f"  rss {res['rss_peak_mb']:5.0f} MB  table {res['table_files']} files; "
                f"delete wrote {res['new_files']} file(s) ({res['new_data_files']} data, "
                f"{res['new_dv_files']} DV), {res['new_bytes'] / 2**20:.2f} MiB",
                flush=True,
            )
    section: dict[str, Any] = {"rows": rows, "expected_rows": expected, "runs": results}
    med = section["median"] = {
        impl: {
            k: statistics.median(x[k] for x in rs)
            for k in ("seconds", "open_s", "rss_peak_mb", "rss_before_mb", "new_bytes")
        }
        for impl, rs in results.items()
        if impl not in failed
    }
    print(f"\nDELETE 1% of {rows:,} rows (medians of {runs} runs; the delete call only)")
    print(
        f"{'library':<11}{'seconds':>9}{'deltalake / this':>18}{'peak RSS MB (before)':>22}"
        f"{'MiB written':>13}  new data files / DV files"
    )
    for impl in IMPLS:
        if impl not in med:
            print(f"{impl:<11}{'FAILED':>9}")
            continue
        m = med[impl]
        ratio = (
            f"{med['deltalake']['seconds'] / m['seconds']:.2f}x" if "deltalake" in med else "n/a"
        )
        rss = f"{m['rss_peak_mb']:.0f} ({m['rss_before_mb']:.0f})"
        print(
            f"{impl:<11}{m['seconds']:>9.3f}{ratio:>18}{rss:>22}"
            f"{m['new_bytes'] / 2**20:>13.2f}  {results[impl][-1]['new_data_files']} / "
            f"{results[impl][-1]['new_dv_files']}"
        )
    if failed:
        section["failed"] = sorted(failed)
        print(
            f"\n!!!!! DELETE benchmark FAILED for {', '.join(sorted(failed))}: see the error "
            "above. deltalog needs DeltaTable.delete(predicate) and tables with deletion "
            "vectors; use --skip-delete to run parts 1 and 2 alone. !!!!!",
            flush=True,
        )
    noise.report(section)
    return section


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", type=int, default=10_000_000, help="rows of the bulk append")
    p.add_argument("--runs", type=int, default=3, help="fresh-process runs (parts 1 and 3)")
    p.add_argument("--appends", type=int, default=200, help="1-row appends (part 2)")
    p.add_argument(
        "--delete-rows", type=int, default=2_000_000, help="rows of the DELETE table (part 3)"
    )
    p.add_argument("--skip-delete", action="store_true", help="run parts 1 and 2 only")
    p.add_argument(
        "--dir",
        type=Path,
        default=Path(os.environ.get("DELTALOG_BENCH_DIR", "/tmp/deltalog-bench")),
        help="tables go to a temporary directory under it, removed at the end "
        "(default $DELTALOG_BENCH_DIR or /tmp/deltalog-bench)",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="results JSON (default <dir>/results/write-*.json)"
    )
    p.add_argument("--timeout", type=float, default=1800, help="seconds per child process")
    args = p.parse_args(argv)
    for name in ("rows", "runs", "appends", "delete_rows"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child_main(json.loads(argv[1]))
    args = parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    started = _dt.datetime.now()
    errors: list[str] = []
    report: dict[str, Any] = {
        "benchmark": "write",
        "started": started.isoformat(timespec="seconds"),
        "host": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }
    with tempfile.TemporaryDirectory(prefix="write-", dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        report["host"]["filesystem"] = filesystem(tmp.resolve())
        print(
            f"tables in {tmp} ({report['host']['filesystem']})   python "
            f"{platform.python_version()}   cpus {os.cpu_count()}",
            flush=True,
        )
        report["append"] = bench_append(tmp, args.rows, args.runs, args.timeout, errors)
        report["latency"] = bench_latency(tmp, args.appends, args.timeout, errors)
        if args.skip_delete:
            print("\n(DELETE skipped: --skip-delete)")
        else:
            report["delete"] = bench_delete(tmp, args.delete_rows, args.runs, args.timeout, errors)
    report["errors"] = errors
    report["elapsed_s"] = round((_dt.datetime.now() - started).total_seconds(), 1)
    out = args.out or args.dir / "results" / f"write-{started:%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nresults written to {out} (elapsed {report['elapsed_s']:.0f} s)")
    if errors:
        print(f"!!!!! {len(errors)} FAILURE(S):", *errors, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
