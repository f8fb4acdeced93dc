"""Checkpoint-writing benchmark: deltalog vs deltalake on tables of many files.

Times, in a fresh subprocess per run, opening a table and writing a classic checkpoint of its
latest version (``t.create_checkpoint()`` in deltalog, ``dt.create_checkpoint()`` in
deltalake), and records the child's peak RSS. The tables are those of ``snapshot.py`` (log files
only, generated once and cached); between runs the checkpoint just written is deleted and
``_last_checkpoint`` restored, so every run starts from the same log. After each deltalog run
the new checkpoint is checked: deltalake and deltalog open the table from it alone (it is the
latest version, so no commit is read) and must see every file.

Usage::

    python benches/checkpoint.py [--sizes 1000000] [--runs 3] [--shapes ckpt]

Issue #5's target at 1M files: deltalog >= 5x faster than deltalake, <= 0.5x its peak memory.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot as snap

IMPLS = ("deltalog", "deltalake")
TARGET_SPEEDUP = 5.0
TARGET_MEMORY = 0.5


def child_main(impl: str, path: str) -> dict[str, Any]:
    """One measurement; interpreter start-up and imports are outside the timed region."""
    import pyarrow  # noqa: F401  (both children import pyarrow: comparable baselines)

    out: dict[str, Any] = {"impl": impl}
    if impl == "deltalog":
        import deltalog as dl

        out["rss_imports_mb"] = snap._maxrss_mb()
        t0 = time.perf_counter()
        t = dl.DeltaTable(path)
        t_open = time.perf_counter()
        written = t.create_checkpoint("classic")
        t1 = time.perf_counter()
        out["files_written"] = written["files"]
    elif impl == "deltalake":
        import deltalake

        out["rss_imports_mb"] = snap._maxrss_mb()
        t0 = time.perf_counter()
        dt = deltalake.DeltaTable(path)
        t_open = time.perf_counter()
        dt.create_checkpoint()
        t1 = time.perf_counter()
    elif impl in ("verify-deltalake", "verify-deltalog"):
        t0 = t_open = t1 = time.perf_counter()
        if impl == "verify-deltalake":
            import deltalake

            out["rows"] = len(deltalake.DeltaTable(path).file_uris())
        else:
            import deltalog as dl

            out["rows"] = dl.DeltaTable(path)._raw.num_files()
    else:
        raise SystemExit(f"unknown impl {impl}")
    out.update(open_s=t_open - t0, total_s=t1 - t0, rss_peak_mb=snap._maxrss_mb())
    return out


def run_child(impl: str, root: Path, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", impl, str(root)]
    return snap.run_json_child(cmd, impl, timeout)


class LogState:
    """The log as generated: what a run may add is removed again afterwards."""

    def __init__(self, root: Path) -> None:
        self.log = root / "_delta_log"
        self.names = {p.name for p in self.log.iterdir()}
        hint = self.log / "_last_checkpoint"
        self.hint = hint.read_bytes() if hint.exists() else None

    def restore(self) -> list[str]:
        added = sorted(p.name for p in self.log.iterdir() if p.name not in self.names)
        for name in added:
            p = self.log / name
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        hint = self.log / "_last_checkpoint"
        if self.hint is None:
            hint.unlink(missing_ok=True)
        else:
            hint.write_bytes(self.hint)
        return added


def bench_table(root: Path, info: dict[str, Any], runs: int, timeout: float) -> dict[str, Any]:
    state = LogState(root)
    results: dict[str, list[dict[str, Any]]] = {impl: [] for impl in IMPLS}
    errors: list[str] = []
    for run in range(runs):
        for impl in IMPLS:
            snap.warm_cache(root)
            res = run_child(impl, root, timeout)
            if "error" not in res and impl == "deltalog" and run == 0:
                for checker in ("verify-deltalake", "verify-deltalog"):
                    got = run_child(checker, root, timeout).get("rows")
                    if got != info["expected_files"]:
                        errors.append(
                            f"{checker} reads {got} files from deltalog's checkpoint, "
                            f"expected {info['expected_files']}"
                        )
            res["added"] = state.restore()
            if "error" in res:
                errors.append(f"{impl}: {res['error']}")
            results[impl].append(res)
            print(
                f"    run {run + 1} {impl:<10} "
                + (
                    f"{res['total_s']:.2f}s (open {res['open_s']:.2f}s), "
                    f"peak RSS {res['rss_peak_mb']:.0f} MB"
                    if "error" not in res
                    else f"ERROR {res['error']}"
                ),
                flush=True,
            )
    summary: dict[str, Any] = {"errors": errors, "runs": results}
    for impl, rs in results.items():
        ok = [r for r in rs if "error" not in r]
        if ok:
            summary[impl] = {
                "median_s": statistics.median(r["total_s"] for r in ok),
                "median_open_s": statistics.median(r["open_s"] for r in ok),
                "peak_rss_mb": max(r["rss_peak_mb"] for r in ok),
                "rss_imports_mb": max(r["rss_imports_mb"] for r in ok),
            }
    return summary


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes", default="1000000", help="comma-separated active-file counts")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--shapes", default="ckpt", help="comma-separated subset of ckpt,json")
    p.add_argument(
        "--dir",
        type=Path,
        default=Path(os.environ.get("DELTALOG_BENCH_DIR", "/tmp/deltalog-bench")),
    )
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--child", nargs=2, metavar=("IMPL", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child_main(*args.child)))
        return 0
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    shapes = [s for s in args.shapes.split(",") if s]
    report: dict[str, Any] = {"date": _dt.datetime.now().isoformat(), "tables": []}
    failed = False
    for shape in shapes:
        for n in sizes:
            print(f"\n== {shape}-{n}: open + classic checkpoint ==", flush=True)
            info = snap.ensure_table(args.dir, shape, n, force=False, verify=True)
            root = snap.table_path(args.dir, shape, n)
            summary = bench_table(root, info, args.runs, args.timeout)
            summary.update(shape=shape, size=n)
            report["tables"].append(summary)
            failed |= bool(summary["errors"])
    print("\nCheckpoint of the latest version, median wall time (open + write) and peak RSS")
    print(
        f"{'table':<14}{'deltalog s':>11}{'deltalake s':>12}{'speed-up':>10}"
        f"{'RSS dlog MB':>13}{'RSS dlake MB':>14}{'RSS ratio':>11}"
    )
    for s in report["tables"]:
        a, b = s.get("deltalog"), s.get("deltalake")
        name = f"{s['shape']}-{s['size']}"
        if not (a and b):
            print(f"{name:<14} errors: {s['errors']}")
            continue
        speed = b["median_s"] / a["median_s"]
        mem = a["peak_rss_mb"] / b["peak_rss_mb"]
        s["speedup"], s["rss_ratio"] = speed, mem
        print(
            f"{name:<14}{a['median_s']:>11.2f}{b['median_s']:>12.2f}{speed:>9.2f}x"
            f"{a['peak_rss_mb']:>13.0f}{b['peak_rss_mb']:>14.0f}{mem:>10.2f}x"
        )
        if s["size"] >= 1_000_000:
            verdict = speed >= TARGET_SPEEDUP and mem <= TARGET_MEMORY
            s["target_met"] = verdict
            print(
                f"  target (issue #5): >= {TARGET_SPEEDUP:.0f}x faster and <= "
                f"{TARGET_MEMORY}x memory: {'met' if verdict else 'NOT MET'}"
            )
        for e in s["errors"]:
            print(f"  !!!!! {e}")
    out = args.out or args.dir / "results" / f"checkpoint-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nresults: {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
