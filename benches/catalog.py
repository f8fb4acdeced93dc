"""Catalog benchmark: the cost of committing through a catalog.

1. 1-row append latency (p50/p99 over ``--appends``), one process, through one ``DeltaTable``
   object per mode:
   - ``filesystem``: a filesystem table (put-if-absent of ``<v>.json``);
   - ``staged``: a catalog-managed table of the embedded SQLite catalog, commits staged as
     ``_delta_log/_staged_commits/<v>.<uuid>.json``, ratified, then published;
   - ``inline``: the same with the commit held inline by the catalog until published.
   Target (issue #16): a catalog-managed 1-row append within 2x of a filesystem one.
2. Throughput: ``--writers`` processes each making ``--commits`` 1-row appends to one
   catalog-managed table of the SQLite catalog; commits per second over the whole run.

deltalog only (deltalake cannot write catalog-managed tables). Usage::

    python benches/catalog.py [--appends 200] [--writers 8] [--commits 25]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

import deltalog as dl


def row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64())})


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def latencies(table: dl.DeltaTable, appends: int) -> list[float]:
    out = []
    for i in range(appends):
        start = time.perf_counter()
        dl.write_table(table, row(i), mode="append")
        out.append((time.perf_counter() - start) * 1000)
    return out


def _writer(db: str, warehouse: str, k: int, commits: int, start: Any) -> None:
    cat = dl.connect_catalog({"type": "sqlite", "path": db, "warehouse": warehouse})
    start.wait()
    t = cat.load_table("shared")
    for i in range(commits):
        dl.write_table(t, row(k * 1_000_000 + i), mode="append")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--appends", type=int, default=200)
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--commits", type=int, default=25)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cat = dl.connect_catalog(
            {"type": "sqlite", "path": str(root / "catalog.db"), "warehouse": str(root / "wh")}
        )
        schema = pa.schema({"id": pa.int64()})
        results: dict[str, list[float]] = {}
        dl.write_table(str(root / "fs"), row(-1))
        results["filesystem"] = latencies(dl.DeltaTable(str(root / "fs")), args.appends)
        cat.create_table("staged", schema)
        staged = cat.catalog_client("staged")
        staged.max_inline_commit_bytes = 0
        table = dl.DeltaTable(str(root / "wh" / "staged"), catalog_client=staged)
        results["staged"] = latencies(table, args.appends)
        cat.create_table("inline", schema)
        results["inline"] = latencies(cat.load_table("inline"), args.appends)

        print(f"1-row append latency, {args.appends} appends through one DeltaTable (ms)")
        print(f"{'mode':<12}{'p50':>8}{'p99':>8}{'mean':>8}{'p50 / filesystem':>20}")
        base = statistics.median(results["filesystem"])
        for mode, values in results.items():
            p50 = statistics.median(values)
            print(
                f"{mode:<12}{p50:8.2f}{percentile(values, 99):8.2f}"
                f"{statistics.fmean(values):8.2f}{p50 / base:19.2f}x"
            )
        worst = max(statistics.median(results[m]) for m in ("staged", "inline")) / base
        print(f"target (issue #16): catalog-managed within 2x: {'met' if worst <= 2 else 'MISSED'}")

        cat.create_table("shared", schema)
        ctx = multiprocessing.get_context("spawn")
        start = ctx.Event()
        workers = [
            ctx.Process(
                target=_writer,
                args=(str(root / "catalog.db"), str(root / "wh"), k, args.commits, start),
            )
            for k in range(args.writers)
        ]
        for w in workers:
            w.start()
        time.sleep(3)  # let every writer import and connect
        began = time.perf_counter()
        start.set()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - began
        if any(w.exitcode != 0 for w in workers):
            print("a writer failed", file=sys.stderr)
            return 1
        total = args.writers * args.commits
        version = cat.load_table("shared").version()
        assert version == total, (version, total)
        print(
            f"\n{args.writers} writers x {args.commits} commits on SQLite: {total} commits in "
            f"{elapsed:.2f} s = {total / elapsed:.0f} commits/s (version {version})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
