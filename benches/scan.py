"""Scan benchmark: reading a whole table into Arrow, and decoding deletion vectors.

1. Table read: a 10M-row, 6-column table partitioned by one column, written by the
   `deltalake` package, read into one `pyarrow.Table` by

   * ``deltalog``: ``deltalog.DeltaTable(path).to_pyarrow_table()``
   * ``deltalake``: ``deltalake.DeltaTable(path).to_pyarrow_table()``
   * ``pyarrow.dataset``: ``pyarrow.dataset.dataset(<the table's active files>,
     partitioning=hive).to_table()`` (the lower bound: the same files, no Delta log)

   Each run is a fresh process; runs of the three are interleaved; the page cache is warm.
   Medians are reported with ratios against pyarrow.dataset and deltalake.

2. Deletion-vector decode: 1M scattered rows (random 40-bit row numbers) and 1M dense rows
   (rows 0..999,999) serialized in the portable 64-bit RoaringBitmap format; time to decode
   with deltalog (magic check, deserialize, bucket-key check, cardinality) vs
   ``pyroaring.BitMap64.deserialize`` (+ ``len``), in-process: per-call time, best of repeats
   of enough calls to last ~0.2 s.

Usage::

    python benches/scan.py [--rows 10000000] [--runs 5] [--dir /tmp/deltalog-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import time
import timeit
from pathlib import Path
from typing import Any

GENERATOR_VERSION = 1
MARKER = "_bench_complete.json"
PARTITIONS = 10
IMPLS = ("deltalog", "deltalake", "pyarrow.dataset")


def table_path(base: Path, rows: int) -> Path:
    return base / f"scan-{rows}"


def generate(root: Path, rows: int) -> None:
    """Writes the table with deltalake in 10 appends of rows/10 rows each."""
    import shutil

    import deltalake
    import numpy as np
    import pyarrow as pa

    marker = root / MARKER
    if marker.exists() and json.loads(marker.read_text()).get("version") == GENERATOR_VERSION:
        return
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(7)
    chunk = rows // 10
    for i in range(10):
        ids = np.arange(i * chunk, (i + 1) * chunk, dtype=np.int64)
        table = pa.table(
            {
                "id": ids,
                "value": rng.normal(size=chunk),
                "name": pa.array([f"name-{v % 100_000:05}" for v in ids.tolist()]),
                "ts": pa.array(
                    1_700_000_000_000_000 + ids * 1_000_000, type=pa.timestamp("us", tz="UTC")
                ),
                "qty": rng.integers(0, 1000, size=chunk, dtype=np.int32),
                "part": pa.array([f"p{v % PARTITIONS}" for v in ids.tolist()]),
            }
        )
        deltalake.write_deltalake(str(root), table, partition_by=["part"], mode="append")
    marker.write_text(json.dumps({"version": GENERATOR_VERSION, "rows": rows}))


def child(impl: str, path: str) -> dict[str, Any]:
    start = time.perf_counter()
    if impl == "deltalog":
        import deltalog

        table = deltalog.DeltaTable(path).to_pyarrow_table()
    elif impl == "deltalake":
        import deltalake

        table = deltalake.DeltaTable(path).to_pyarrow_table()
    elif impl == "pyarrow.dataset":
        import pyarrow.dataset as ds

        files = json.loads((Path(path) / "_bench_files.json").read_text())
        dataset = ds.dataset(files, format="parquet", partitioning="hive", partition_base_dir=path)
        table = dataset.to_table()
    else:
        raise ValueError(impl)
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "rows": table.num_rows}


def run_child(impl: str, path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", impl, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_table(base: Path, rows: int, runs: int) -> dict[str, Any]:
    root = table_path(base, rows)
    t0 = time.perf_counter()
    generate(root, rows)
    print(f"table ready in {time.perf_counter() - t0:.1f} s: {root}", file=sys.stderr)
    import deltalake

    files = deltalake.DeltaTable(str(root)).file_uris()
    (root / "_bench_files.json").write_text(json.dumps([f.removeprefix("file://") for f in files]))
    for f in root.rglob("*.parquet"):  # warm the page cache
        f.read_bytes()
    times: dict[str, list[float]] = {impl: [] for impl in IMPLS}
    for _ in range(runs):
        for impl in IMPLS:
            result = run_child(impl, root)
            if result["rows"] != rows:
                raise SystemExit(f"{impl} read {result['rows']} rows, expected {rows}")
            times[impl].append(result["seconds"])
    med = {impl: statistics.median(v) for impl, v in times.items()}
    return {"rows": rows, "files": len(files), "runs": times, "median": med}


def bench_dv(repeats: int) -> dict[str, Any]:
    from pyroaring import BitMap64

    import deltalog._native as native

    magic = struct.pack("<I", 1681511377)
    rng = random.Random(11)
    shapes = {
        "scattered": BitMap64(rng.sample(range(1 << 40), 1_000_000)),
        "dense": BitMap64(range(1_000_000)),
    }
    out: dict[str, Any] = {}
    for name, bitmap in shapes.items():
        data = bitmap.serialize()
        ours = magic + data
        assert native.dv_cardinality(ours) == len(bitmap) == 1_000_000

        def best(f: Any) -> float:
            """Seconds per call: the best of `repeats` timings of enough calls for ~0.2 s."""
            timer = timeit.Timer(f)
            number, _ = timer.autorange()
            return min(timer.repeat(repeat=repeats, number=number)) / number

        out[name] = {
            "bytes": len(data),
            "deltalog": best(lambda ours=ours: native.dv_cardinality(ours)),
            "pyroaring": best(lambda data=data: len(BitMap64.deserialize(data))),
        }
    return out


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        print(json.dumps(child(argv[1], argv[2])), flush=True)
        # Skip interpreter teardown: deltalake's threads sometimes abort the process on exit
        # ("terminate called without an active exception") after the result is printed.
        os._exit(0)
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--dv-repeats", type=int, default=5)
    p.add_argument("--dir", default=os.environ.get("DELTALOG_BENCH_DIR", "/tmp/deltalog-bench"))
    p.add_argument("--out", default=None, help="results JSON (default: <dir>/results/scan-*.json)")
    args = p.parse_args(argv)
    base = Path(args.dir)
    base.mkdir(parents=True, exist_ok=True)
    table = bench_table(base, args.rows, args.runs)
    dv = bench_dv(args.dv_repeats)
    m = table["median"]
    print(
        f"\nTable read: {table['rows']:,} rows, 6 columns, {table['files']} files "
        f"(medians of {args.runs} fresh-process runs)"
    )
    print(f"{'reader':<18}{'seconds':>10}{'vs pyarrow.dataset':>22}{'deltalake / this':>20}")
    for impl in IMPLS:
        print(
            f"{impl:<18}{m[impl]:>10.3f}{m[impl] / m['pyarrow.dataset']:>21.2f}x"
            f"{m['deltalake'] / m[impl]:>19.2f}x"
        )
    print("\nDeletion-vector decode, 1M rows (best of repeats)")
    print(
        f"{'shape':<12}{'bytes':>12}{'deltalog µs':>14}{'pyroaring µs':>15}"
        f"{'pyroaring / deltalog':>23}"
    )
    for name, r in dv.items():
        print(
            f"{name:<12}{r['bytes']:>12,}{r['deltalog'] * 1e6:>14.2f}{r['pyroaring'] * 1e6:>15.2f}"
            f"{r['pyroaring'] / r['deltalog']:>22.2f}x"
        )
    out = (
        Path(args.out)
        if args.out
        else base / "results" / f"scan-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"table": table, "dv": dv}, indent=2))
    print(f"\nresults: {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
