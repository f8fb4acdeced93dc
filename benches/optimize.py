"""OPTIMIZE benchmark: compaction of many small files, deltalog vs deltalake, side by side.

A table of ``--rows`` (10M) rows in ``--files`` (1,000) small files is written once (by
deltalog, one commit, files rolled at the size that gives that count; 4 columns: ``id`` int64,
``value`` float64, ``name`` string, ``day`` date32; seeded numpy data, ``id`` shuffled so that
files overlap). Each run copies it to a fresh directory, then a fresh process (this script with
``--child``) opens the copy and runs ``t.optimize.compact()`` (deltalog) or
``DeltaTable(path).optimize.compact()`` (deltalake); only that call is timed, and the child's
peak RSS is reported. Runs alternate between the libraries; the median of ``--runs`` is
reported with the ratios. Afterwards each copy is read back by the other library and must hold
every row once.

Target (issue #19): deltalog >= 2x faster, <= 0.5x peak memory. Z-order is not implemented
yet, so only compaction is measured.

Usage::

    python benches/optimize.py [--rows 10000000] [--files 1000] [--runs 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SEED = 20261125


def make_table(path: Path, rows: int, files: int) -> None:
    import numpy as np
    import pyarrow as pa

    import deltalog as dl

    rng = np.random.default_rng(SEED)
    ids = rng.permutation(rows).astype(np.int64)
    data = pa.table(
        {
            "id": ids,
            "value": rng.random(rows),
            "name": pa.array([f"name-{i % 100_000}" for i in ids]),
            "day": pa.array((ids % 365).astype("int32"), pa.int32()).cast(pa.date32()),
        }
    )
    # Probe the encoded size of a slice to pick the file size that gives ~`files` files.
    probe = path.parent / "probe"
    dl.write_table(str(probe), data.slice(0, rows // files))
    per_file = sum(a["size"] for a in dl.DeltaTable(str(probe)).get_add_actions().to_pylist())
    shutil.rmtree(probe)
    dl.write_table(str(path), data, target_file_size=max(per_file, 1024))


def child(impl: str, path: str) -> dict[str, Any]:
    if impl == "deltalog":
        import deltalog as dl

        t = dl.DeltaTable(path)
        began = time.perf_counter()
        metrics = t.optimize.compact()
    else:
        import deltalake

        t = deltalake.DeltaTable(path)
        began = time.perf_counter()
        metrics = t.optimize.compact()
    elapsed = time.perf_counter() - began
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "seconds": elapsed,
        "rss_mb": rss_mb,
        "removed": metrics["numFilesRemoved"],
        "added": metrics["numFilesAdded"],
    }


def count(impl: str, path: str) -> tuple[int, int]:
    """Rows and distinct ids, read by ``impl``."""
    if impl == "deltalog":
        import deltalog as dl

        ids = dl.DeltaTable(path).to_pyarrow_table(columns=["id"]).column("id")
    else:
        import deltalake

        ids = deltalake.DeltaTable(path).to_pyarrow_table(columns=["id"]).column("id")
    import pyarrow.compute as pc

    return len(ids), pc.count_distinct(ids).as_py()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--dir", help="work directory (default: a temporary one)")
    p.add_argument("--child", nargs=2, metavar=("IMPL", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    root = Path(args.dir or tempfile.mkdtemp(prefix="deltalog-optimize-"))
    try:
        source = root / "source"
        began = time.perf_counter()
        make_table(source, args.rows, args.files)
        import deltalog as dl

        n_files = len(dl.DeltaTable(str(source)).files())
        print(
            f"table: {args.rows:,} rows in {n_files} files "
            f"(written in {time.perf_counter() - began:.1f} s)"
        )
        results: dict[str, list[dict[str, Any]]] = {"deltalog": [], "deltalake": []}
        for run in range(args.runs):
            for impl in results:
                copy = root / f"{impl}-{run}"
                shutil.copytree(source, copy)
                out = subprocess.run(
                    [sys.executable, __file__, "--child", impl, str(copy)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                res = json.loads(out.stdout.strip().splitlines()[-1])
                results[impl].append(res)
                other = "deltalake" if impl == "deltalog" else "deltalog"
                rows, distinct = count(other, str(copy))
                if rows != args.rows or distinct != args.rows:
                    raise RuntimeError(f"{impl}'s result read by {other}: {rows} rows")
                print(
                    f"run {run + 1} {impl:<10} {res['seconds']:7.2f} s  "
                    f"peak RSS {res['rss_mb']:7.0f} MB  files {res['removed']} -> {res['added']}"
                )
                shutil.rmtree(copy)
        ours, theirs = results["deltalog"], results["deltalake"]
        t_ours = statistics.median(r["seconds"] for r in ours)
        t_theirs = statistics.median(r["seconds"] for r in theirs)
        m_ours = statistics.median(r["rss_mb"] for r in ours)
        m_theirs = statistics.median(r["rss_mb"] for r in theirs)
        print(f"\ncompaction of {n_files} files ({args.rows:,} rows), median of {args.runs}")
        print(f"{'':<12}{'deltalog':>10}{'deltalake':>11}{'ratio':>9}")
        print(f"{'time (s)':<12}{t_ours:10.2f}{t_theirs:11.2f}{t_theirs / t_ours:8.2f}x faster")
        print(f"{'peak RSS MB':<12}{m_ours:10.0f}{m_theirs:11.0f}{m_ours / m_theirs:8.2f}x")
        speed = "met" if t_theirs / t_ours >= 2 else "MISSED"
        memory = "met" if m_ours / m_theirs <= 0.5 else "MISSED"
        print(f"targets (issue #19): >= 2x faster: {speed}; <= 0.5x peak memory: {memory}")
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
