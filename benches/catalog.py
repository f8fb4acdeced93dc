"""Catalog benchmark: the cost of committing through a catalog.

1. 1-row append latency (p50/p99 over ``--appends``), one process, through one ``DeltaTable``
   object per mode, the modes interleaved (one append of each in turn, so that machine noise
   falls on all of them alike):
   - ``filesystem``: a filesystem table (put-if-absent of ``<v>.json``);
   - ``staged``: a catalog-managed table of the embedded SQLite catalog, commits staged as
     ``_delta_log/_staged_commits/<v>.<uuid>.json``, ratified, then published;
   - ``inline``: the same with the commit held inline by the catalog until published;
   - ``pg-staged`` / ``pg-inline``: the same through the PostgreSQL store.
   Target (issue #16): a catalog-managed 1-row append within 2x of a filesystem one.
2. Throughput: ``--writers`` processes each making ``--commits`` 1-row appends to one
   catalog-managed table, on SQLite and on PostgreSQL; commits per second over the run.

PostgreSQL: ``--postgresql URI`` (a database the benchmark may fill), else a throwaway server
started like the tests' (tests/postgres_server.py; Debian's ``postgresql`` package), else
skipped with a note. deltalog only (deltalake cannot write catalog-managed tables). Usage::

    python benches/catalog.py [--appends 300] [--writers 8] [--commits 25] [--postgresql URI]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

import deltalog as dl
from deltalog.catalog import ManagedCatalog


def row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64())})


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def append_latencies(tables: dict[str, dl.DeltaTable], appends: int) -> dict[str, list[float]]:
    """Milliseconds of each append, the modes taking turns."""
    out: dict[str, list[float]] = {mode: [] for mode in tables}
    for i in range(appends):
        for mode, table in tables.items():
            began = time.perf_counter()
            dl.write_table(table, row(i), mode="append")
            out[mode].append((time.perf_counter() - began) * 1000)
    return out


def _writer(config: dict[str, str], k: int, commits: int, start: Any) -> None:
    cat = dl.connect_catalog(config)
    start.wait()
    t = cat.load_table("shared")
    for i in range(commits):
        dl.write_table(t, row(k * 1_000_000 + i), mode="append")


def throughput(config: dict[str, str], writers: int, commits: int) -> tuple[float, int]:
    """Seconds for ``writers`` processes to make ``commits`` appends each, and the version."""
    cat = dl.connect_catalog(config)
    cat.create_table("shared", pa.schema({"id": pa.int64()}))
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    workers = [
        ctx.Process(target=_writer, args=(config, k, commits, start)) for k in range(writers)
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
        raise RuntimeError("a writer failed")
    version = cat.load_table("shared").version()
    assert version == writers * commits, (version, writers * commits)
    return elapsed, version


@contextlib.contextmanager
def postgresql(uri: str | None) -> Iterator[str | None]:
    """The PostgreSQL database to use: the given one, a throwaway server's, or None."""
    if uri:
        yield uri
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from postgres_server import postgres_server
    except ImportError:
        yield None
        return
    try:
        with postgres_server() as server:
            yield server
    except RuntimeError as e:  # PostgreSQL not installed
        print(f"(PostgreSQL skipped: {e})")
        yield None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--appends", type=int, default=300)
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--commits", type=int, default=25)
    p.add_argument("--postgresql", help="a PostgreSQL URI (default: a throwaway server)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, postgresql(args.postgresql) as pg:
        root = Path(tmp)
        configs = {
            "sqlite": {
                "type": "sqlite",
                "path": str(root / "catalog.db"),
                "warehouse": str(root / "wh"),
            }
        }
        if pg is not None:
            configs["postgresql"] = {"type": "postgresql", "uri": pg, "warehouse": str(root / "pg")}
        schema = pa.schema({"id": pa.int64()})
        dl.write_table(str(root / "fs"), row(-1))
        tables = {"filesystem": dl.DeltaTable(str(root / "fs"))}
        for kind, config in configs.items():
            prefix = "" if kind == "sqlite" else "pg-"
            cat = dl.connect_catalog(config)
            assert isinstance(cat, ManagedCatalog)
            cat.create_table("staged", schema)
            staged = cat.catalog_client("staged")
            staged.max_inline_commit_bytes = 0
            location = cat.load_table("staged").table_uri
            tables[prefix + "staged"] = dl.DeltaTable(location, catalog_client=staged)
            cat.create_table("inline", schema)
            tables[prefix + "inline"] = cat.load_table("inline")
        results = append_latencies(tables, args.appends)

        print(f"1-row append latency, {args.appends} appends per mode, interleaved (ms)")
        print(f"{'mode':<12}{'p50':>8}{'p99':>8}{'mean':>8}{'p50 / filesystem':>20}")
        base = statistics.median(results["filesystem"])
        for mode, values in results.items():
            p50 = statistics.median(values)
            print(
                f"{mode:<12}{p50:8.2f}{percentile(values, 99):8.2f}"
                f"{statistics.fmean(values):8.2f}{p50 / base:19.2f}x"
            )
        worst = max(statistics.median(results[m]) for m in ("staged", "inline")) / base
        print(
            f"target (issue #16): SQLite catalog-managed within 2x: "
            f"{'met' if worst <= 2 else 'MISSED'} ({worst:.2f}x)"
        )

        for kind, config in configs.items():
            shared = dict(config)
            shared["warehouse"] = str(root / f"shared-{kind}")
            elapsed, version = throughput(shared, args.writers, args.commits)
            total = args.writers * args.commits
            print(
                f"{args.writers} writers x {args.commits} commits on {kind}: {total} commits "
                f"in {elapsed:.2f} s = {total / elapsed:.0f} commits/s (version {version})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
