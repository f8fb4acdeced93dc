"""OPTIMIZE benchmark: compaction and Z-order of many small files, deltalog vs deltalake.

A table of ``--rows`` (10M) rows in ``--files`` (1,000) small files is written once (by
deltalog, one commit, files rolled at the size that gives that count; 4 columns: ``id`` int64,
``value`` float64, ``name`` string, ``day`` date32; seeded numpy data, ``id`` shuffled so that
files overlap). Each run copies it to a fresh directory, then a fresh process (this script with
``--child``) opens the copy and runs ``t.optimize.compact()`` (deltalog) or
``DeltaTable(path).optimize.compact()`` (deltalake); only that call is timed, and the child's
peak RSS is reported. Z-order is measured the same way: ``t.optimize.z_order(["id",
"value"], target_size=...)`` on both, with the target size that gives about ``--zorder-files``
(160) files, so that data skipping has files to skip. Runs alternate between the libraries;
the median of ``--runs`` is reported with the ratios. Afterwards each copy is read back by the
other library and must hold every row once.

The layout is then judged by the files' statistics: for 50 point filters on each Z-order
column (``id = v``, ``value = v``), the share of files whose [min, max] holds the value, after
each library's Z-order and on a random layout of the same data (the same number of files,
compacted by deltalog without sorting). Target: Z-order reads <= 20% of the files the random
layout reads.

Each library compacts with its own defaults: deltalake's OPTIMIZE writes ZSTD (level 4),
deltalog's snappy (Delta Spark's default codec), so deltalake's files are smaller. A third
measurement gives both ``WriterProperties(compression="ZSTD", compression_level=4)``: the
like-for-like ratio, printed without a target.

Targets (issue #19): deltalog >= 2x faster, <= 0.5x peak memory, for both operations.

Usage::

    python benches/optimize.py [--rows 10000000] [--files 1000] [--runs 3]
                               [--zorder-files 160] [--dir DIR]
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


def peak_rss_mb() -> float:
    """This process's peak RSS. ``VmHWM`` where Linux has it: ``ru_maxrss`` survives ``fork``
    and ``exec``, so a child would report its parent's peak when that was higher (the parent
    reads whole tables back to check them)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(impl: str, path: str, op: str, target: int) -> dict[str, Any]:
    if impl == "deltalog":
        import deltalog as dl

        t: Any = dl.DeltaTable(path)
    else:
        import deltalake

        t = deltalake.DeltaTable(path)
    began = time.perf_counter()
    if op == "compact":
        metrics = t.optimize.compact()
    elif op == "compact-zstd":
        # Like for like: the codec deltalake's OPTIMIZE writes by default (ZSTD level 4),
        # given to both explicitly.
        if impl == "deltalog":
            props: Any = dl.WriterProperties(compression="ZSTD", compression_level=4)
        else:
            props = deltalake.WriterProperties(compression="ZSTD", compression_level=4)
        metrics = t.optimize.compact(writer_properties=props)
    else:
        metrics = t.optimize.z_order(["id", "value"], target_size=target)
    elapsed = time.perf_counter() - began
    added = metrics["filesAdded"]
    return {
        "seconds": elapsed,
        "rss_mb": peak_rss_mb(),
        "removed": metrics["numFilesRemoved"],
        "added": metrics["numFilesAdded"],
        # deltalake gives the sizes as a JSON string, deltalog as a dict.
        "bytes": json.loads(added)["totalSize"] if isinstance(added, str) else added["totalSize"],
    }


def files_read(path: str, column: str, values: list[float]) -> float:
    """The mean share of the table's files whose [min, max] of ``column`` holds a value."""
    import deltalog as dl

    adds = dl.DeltaTable(path).get_add_actions(flatten=True).to_pylist()
    hits = [sum(1 for a in adds if a[f"min.{column}"] <= v <= a[f"max.{column}"]) for v in values]
    return sum(hits) / len(hits) / len(adds)


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


def run_pair(
    root: Path, source: Path, op: str, target: int, runs: int, rows: int
) -> dict[str, list[dict[str, Any]]]:
    """``runs`` alternating runs of ``op`` by each library on fresh copies of ``source``; the
    last copy of each is kept as ``<root>/<impl>-<op>``."""
    results: dict[str, list[dict[str, Any]]] = {"deltalog": [], "deltalake": []}
    for run in range(runs):
        for impl in results:
            copy = root / f"{impl}-{op}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy)
            out = subprocess.run(
                [sys.executable, __file__, "--child", impl, str(copy), op, str(target)],
                check=True,
                capture_output=True,
                text=True,
            )
            res = json.loads(out.stdout.strip().splitlines()[-1])
            results[impl].append(res)
            other = "deltalake" if impl == "deltalog" else "deltalog"
            got, distinct = count(other, str(copy))
            if got != rows or distinct != rows:
                raise RuntimeError(f"{impl}'s {op} read by {other}: {got} rows")
            print(
                f"{op:<8} run {run + 1} {impl:<10} {res['seconds']:7.2f} s  "
                f"peak RSS {res['rss_mb']:7.0f} MB  files {res['removed']} -> {res['added']} "
                f"({res['bytes'] / 2**20:.0f} MiB)"
            )
    return results


def report(
    title: str, results: dict[str, list[dict[str, Any]]], targets: bool = True
) -> tuple[float, float]:
    ours, theirs = results["deltalog"], results["deltalake"]
    t_ours = statistics.median(r["seconds"] for r in ours)
    t_theirs = statistics.median(r["seconds"] for r in theirs)
    m_ours = statistics.median(r["rss_mb"] for r in ours)
    m_theirs = statistics.median(r["rss_mb"] for r in theirs)
    print(f"\n{title}, median of {len(ours)}")
    print(f"{'':<12}{'deltalog':>10}{'deltalake':>11}{'ratio':>9}")
    print(f"{'time (s)':<12}{t_ours:10.2f}{t_theirs:11.2f}{t_theirs / t_ours:8.2f}x faster")
    print(f"{'peak RSS MB':<12}{m_ours:10.0f}{m_theirs:11.0f}{m_ours / m_theirs:8.2f}x")
    b_ours, b_theirs = (results[i][-1]["bytes"] / 2**20 for i in ("deltalog", "deltalake"))
    print(f"{'files MiB':<12}{b_ours:10.0f}{b_theirs:11.0f}{b_ours / b_theirs:8.2f}x")
    if not targets:
        return t_theirs / t_ours, m_ours / m_theirs
    speed = "met" if t_theirs / t_ours >= 2 else "MISSED"
    memory = "met" if m_ours / m_theirs <= 0.5 else "MISSED"
    print(f"targets (issue #19): >= 2x faster: {speed}; <= 0.5x peak memory: {memory}")
    return t_theirs / t_ours, m_ours / m_theirs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--zorder-files", type=int, default=160)
    p.add_argument("--dir", help="work directory (default: a temporary one)")
    p.add_argument(
        "--child", nargs=4, metavar=("IMPL", "PATH", "OP", "TARGET"), help=argparse.SUPPRESS
    )
    args = p.parse_args(argv)
    if args.child:
        impl, path, op, target = args.child
        print(json.dumps(child(impl, path, op, int(target))))
        return 0
    root = Path(args.dir or tempfile.mkdtemp(prefix="deltalog-optimize-"))
    try:
        source = root / "source"
        began = time.perf_counter()
        if not (source / "_delta_log").exists():
            make_table(source, args.rows, args.files)
        import deltalog as dl

        src = dl.DeltaTable(str(source))
        n_files = len(src.files())
        total = sum(a["size"] for a in src.get_add_actions().to_pylist())
        target = max(total // args.zorder_files, 1024)
        print(
            f"table: {args.rows:,} rows in {n_files} files, {total / 2**20:.0f} MiB "
            f"(ready in {time.perf_counter() - began:.1f} s); Z-order target size {target:,} B"
        )
        compaction = run_pair(root, source, "compact", 0, args.runs, args.rows)
        zstd = run_pair(root, source, "compact-zstd", 0, args.runs, args.rows)
        zorder = run_pair(root, source, "zorder", target, args.runs, args.rows)
        report(f"compaction of {n_files} files ({args.rows:,} rows)", compaction)
        report(
            "compaction, both writing ZSTD level 4 (deltalake's default codec for OPTIMIZE; "
            "deltalog's is snappy, as Delta Spark's), no target",
            zstd,
            targets=False,
        )
        report(f"Z-order by (id, value) of {n_files} files", zorder)

        # The layouts, judged by the files a point filter reads.
        random_layout = root / "random"
        shutil.rmtree(random_layout, ignore_errors=True)
        shutil.copytree(source, random_layout)
        dl.DeltaTable(str(random_layout)).optimize.compact(target_size=target)
        probes = {
            "id": [int(args.rows * (i + 0.5) / 50) for i in range(50)],
            "value": [(i + 0.5) / 50 for i in range(50)],
        }
        layouts = {
            "random": str(random_layout),
            "deltalog Z-order": str(root / "deltalog-zorder"),
            "deltalake Z-order": str(root / "deltalake-zorder"),
        }
        print("\nshare of files a point filter reads (50 values per column)")
        print(f"{'layout':<20}{'files':>7}{'id':>9}{'value':>9}")
        shares: dict[str, dict[str, float]] = {}
        for name, path in layouts.items():
            shares[name] = {c: files_read(path, c, v) for c, v in probes.items()}
            files = len(dl.DeltaTable(path).files())
            print(f"{name:<20}{files:7d}{shares[name]['id']:9.1%}{shares[name]['value']:9.1%}")
        worst = max(shares["deltalog Z-order"][c] / max(shares["random"][c], 1e-9) for c in probes)
        verdict = "met" if worst <= 0.2 else "MISSED"
        print(
            f"deltalog Z-order / random layout, worse column: {worst:.1%} "
            f"(target <= 20%: {verdict})"
        )
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
