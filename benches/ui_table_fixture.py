"""The generated table of ``ui_table_page.py``: the Delta log of a 1,000,000-file table.

Builds, caches and verifies the table the page benchmark loads (numpy / pyarrow compute, no
per-file Python loop): log files only, a classic V1 parquet checkpoint at version
CKPT_VERSION (the adds and a few remove tombstones), ``_last_checkpoint``, then the JSON
commits of TAIL; the data files the adds point at do not exist. ``ensure_table`` keeps it
under the bench's ``--dir`` as ``ui-table-<n>/`` and reuses it while its marker (MARKER)
records this GENERATOR_VERSION; a new table is first opened by deltalake and by deltalog,
each in a fresh process started by the ``run_child`` the caller passes (``ui_table_page.py``'s
own, whose child is ``ui_table_page.py --child``), and must count every file.

Not a script: imported by ``benches/ui_table_page.py`` (benches/ is not a package: found
through sys.path). The checkpoint's Arrow types and arrays are ``checkpoint_arrow.py``'s
(shared with ``snapshot.py``). See ``benches/README.md``, "The generated table".
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Bump whenever the generated table changes: a cached table of another version is rebuilt.
GENERATOR_VERSION = 1
MARKER = "_bench_complete.json"  # written last; a table without it is regenerated
SEED = 47

PARTITIONS = 100
CKPT_VERSION = 1000  # the checkpoint's version; no commit files up to it (as after cleanup)
CKPT_ROW_GROUP = 262_144
TOMBSTONES = 500  # remove tombstones kept in the checkpoint
BASE_MS = 1_767_225_600_000  # 2026-01-01: modificationTime / commit timestamps start here
MIN_SIZE, MAX_SIZE = 1024, 256 * 2**20  # file sizes: lognormal, clipped to 1 KiB .. 256 MiB
MEDIAN_SIZE, SIZE_SIGMA = 24 * 2**20, 1.6
BYTES_PER_RECORD = 38  # numRecords = size / this

#: JSON commits after the checkpoint: (operation, adds, removes of checkpoint files, removes
#: of files added by the first tail commit, dataChange). Net +50 files.
TAIL = (
    ("WRITE", 100, 0, 0, True),
    ("MERGE", 40, 40, 0, True),
    ("DELETE", 0, 25, 0, True),
    ("OPTIMIZE", 5, 60, 20, False),
    ("WRITE", 50, 0, 0, True),
)
TAIL_NET = sum(a - r - r2 for _, a, r, r2, _ in TAIL)

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "double", "nullable": True, "metadata": {}},
        {"name": "customer", "type": "string", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "region", "type": "string", "nullable": True, "metadata": {}},
    ],
}
PARTITION_COLUMN = "region"
PROPERTIES = {
    "delta.logRetentionDuration": "interval 30 days",
    "delta.deletedFileRetentionDuration": "interval 7 days",
}


#: How ``verify`` runs a library in a fresh process: (impl, table root, options) -> the
#: child's JSON answer (``ui_table_page.run_child``).
ChildRunner = Callable[[str, Path, dict[str, Any]], dict[str, Any]]


# --------------------------------------------------------------------------------------
# Generation (numpy / pyarrow compute, no per-file Python loop)
# --------------------------------------------------------------------------------------


def _region_names() -> list[str]:
    return [f"region-{i:03d}" for i in range(PARTITIONS)]


def _str(values: Any) -> Any:
    """An int64 numpy array as an Arrow string array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.cast(pa.array(values, pa.int64()), pa.string())


def _padded(values: Any, width: int) -> Any:
    import pyarrow.compute as pc

    return pc.utf8_lpad(_str(values), width=width, padding="0")


def _join(*parts: Any) -> Any:
    """Element-wise concatenation of Arrow string arrays and str scalars."""
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(*parts, "")


def _uuids(rng: Any, n: int) -> Any:
    """``n`` random version-4-looking UUID strings."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    hexes = rng.bytes(16 * n).hex().encode()
    offsets = np.arange(0, 32 * n + 1, 32, dtype=np.int32)
    h = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(hexes))

    def cut(a: int, b: int) -> Any:
        return pc.utf8_slice_codeunits(h, a, b)

    return _join(cut(0, 8), "-", cut(8, 12), "-4", cut(13, 16), "-a", cut(17, 20), "-", cut(20, 32))


def make_adds(rng: Any, n: int, first_seq: int, mtime0: int) -> dict[str, Any]:
    """``n`` add actions as Arrow arrays: path, region, partitionValues, size,
    modificationTime, stats (what Spark writes: numRecords, minValues / maxValues / nullCount
    of the four data columns)."""
    import checkpoint_arrow as ca  # benches/ is not a package: found through sys.path
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    weights = 1.0 / np.arange(1, PARTITIONS + 1) ** 0.8  # a few big partitions, a long tail
    region_idx = rng.choice(PARTITIONS, size=n, p=weights / weights.sum())
    regions = pa.array(_region_names()).take(pa.array(region_idx))
    sizes = np.exp(rng.normal(np.log(MEDIAN_SIZE), SIZE_SIGMA, n))
    sizes = np.clip(sizes, MIN_SIZE, MAX_SIZE).astype(np.int64)
    records = np.maximum(1, sizes // BYTES_PER_RECORD)
    seq = np.arange(first_seq, first_seq + n, dtype=np.int64)
    paths = _join(
        f"{PARTITION_COLUMN}=",
        regions,
        "/part-",
        _padded(seq % 100_000, 5),
        "-",
        _uuids(rng, n),
        "-c000.snappy.parquet",
    )
    id_min = rng.integers(0, 10**12, n)
    cents_min = rng.integers(0, 10_000, n)
    cents_max = cents_min + rng.integers(0, 1_000_000, n)
    cust = np.sort(rng.integers(0, 10_000_000, (n, 2)), axis=1)
    ts0 = (BASE_MS // 1000 - 86_400 * 365) + rng.integers(0, 86_400 * 365, n)
    ts_span = rng.integers(1, 86_400 * 7, n)
    ts_type = pa.timestamp("ms")
    fmt = "%Y-%m-%dT%H:%M:%SZ"  # %S of a ms timestamp has the milliseconds: 05.123
    ts_min = pc.strftime(pa.array(ts0 * 1000 + rng.integers(0, 1000, n)).cast(ts_type), format=fmt)
    ts_max = pc.strftime(pa.array((ts0 + ts_span) * 1000).cast(ts_type), format=fmt)
    null_amount = np.where(rng.random(n) < 0.2, rng.integers(0, 50, n), 0)
    null_customer = np.where(rng.random(n) < 0.05, rng.integers(0, 5, n), 0)

    def money(cents: Any) -> Any:
        return _join(_str(cents // 100), ".", _padded(cents % 100, 2))

    def customer(i: Any) -> Any:
        return _join("cust-", _padded(i, 7))

    stats = _join(
        '{"numRecords":',
        _str(records),
        ',"minValues":{"id":',
        _str(id_min),
        ',"amount":',
        money(cents_min),
        ',"customer":"',
        customer(cust[:, 0]),
        '","ts":"',
        ts_min,
        '"},"maxValues":{"id":',
        _str(id_min + records - 1),
        ',"amount":',
        money(cents_max),
        ',"customer":"',
        customer(cust[:, 1]),
        '","ts":"',
        ts_max,
        '"},"nullCount":{"id":0,"amount":',
        _str(null_amount),
        ',"customer":',
        _str(null_customer),
        ',"ts":0}}',
    )
    return {
        "path": paths,
        "region": regions,
        "partitionValues": ca.one_entry_maps(PARTITION_COLUMN, regions),
        "size": pa.array(sizes),
        "modificationTime": pa.array(mtime0 + np.sort(rng.integers(0, 3_600_000, n))),
        "stats": stats,
    }


def _metadata() -> dict[str, Any]:
    """The table's metaData action."""
    return {
        "id": "6f1e4a1c-0047-4b1d-9c47-5e1ec7ab1e47",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(SCHEMA, separators=(",", ":")),
        "partitionColumns": [PARTITION_COLUMN],
        "configuration": PROPERTIES,
        "createdTime": BASE_MS,
    }


def checkpoint_table(adds: dict[str, Any], tombstones: dict[str, Any]) -> Any:
    """A classic V1 checkpoint (spec "Checkpoint Schema"), one action per row: protocol,
    metaData, the remove tombstones, then the adds."""
    import checkpoint_arrow as ca

    remove = ca.remove_array(
        tombstones["path"],
        BASE_MS + CKPT_VERSION * 60_000,
        tombstones["partitionValues"],
        tombstones["size"],
    )
    add = ca.add_array(
        adds["path"], adds["partitionValues"], adds["size"], adds["modificationTime"], adds["stats"]
    )
    return ca.one_action_per_row(
        {
            "add": (add, 2 + len(tombstones["path"])),
            "remove": (remove, 2),
            "metaData": (ca.metadata_array(_metadata()), 1),
            "protocol": (ca.protocol_array(), 0),
        }
    )


def _json_line(action: str, body: dict[str, Any]) -> str:
    return json.dumps({action: body}, separators=(",", ":")) + "\n"


def _tail_commit(
    rng: Any,
    version: int,
    operation: str,
    adds: dict[str, Any],
    removed: list[dict[str, Any]],
    data_change: bool,
) -> str:
    """One JSON commit: commitInfo, its removes, its adds."""
    ts = BASE_MS + version * 60_000
    n_add = len(adds["path"])
    params: dict[str, str] = {
        "WRITE": {"mode": "Append", "partitionBy": json.dumps([PARTITION_COLUMN])},
        "MERGE": {"predicate": '["(t.id = s.id)"]'},
        "DELETE": {"predicate": "[\"(ts < TIMESTAMP '2025-02-01')\"]"},
        "OPTIMIZE": {"predicate": "[]", "zOrderBy": "[]"},
    }[operation]
    lines = [
        _json_line(
            "commitInfo",
            {
                "timestamp": ts,
                "operation": operation,
                "operationParameters": params,
                "isolationLevel": "Serializable",
                "isBlindAppend": operation == "WRITE",
                "operationMetrics": {
                    "numFiles": str(n_add),
                    "numAddedFiles": str(n_add),
                    "numRemovedFiles": str(len(removed)),
                },
                "engineInfo": f"deltalog-bench-ui/{GENERATOR_VERSION}",
                "txnId": str(_uuids(rng, 1)[0]),
            },
        )
    ]
    for r in removed:
        lines.append(
            _json_line(
                "remove",
                {
                    "path": r["path"],
                    "deletionTimestamp": ts,
                    "dataChange": data_change,
                    "extendedFileMetadata": True,
                    "partitionValues": {PARTITION_COLUMN: r["region"]},
                    "size": r["size"],
                },
            )
        )
    cols = {k: adds[k].to_pylist() for k in ("path", "region", "size", "modificationTime", "stats")}
    for i in range(n_add):
        lines.append(
            _json_line(
                "add",
                {
                    "path": cols["path"][i],
                    "partitionValues": {PARTITION_COLUMN: cols["region"][i]},
                    "size": cols["size"][i],
                    "modificationTime": cols["modificationTime"][i],
                    "dataChange": data_change,
                    "stats": cols["stats"][i],
                },
            )
        )
    return "".join(lines)


def _rows(adds: dict[str, Any], index: Any) -> list[dict[str, Any]]:
    """The path, region and size of the adds at ``index`` (for removes)."""
    import pyarrow as pa

    idx = pa.array(index)
    return [
        {"path": p, "region": r, "size": s}
        for p, r, s in zip(
            adds["path"].take(idx).to_pylist(),
            adds["region"].take(idx).to_pylist(),
            adds["size"].take(idx).to_pylist(),
            strict=True,
        )
    ]


def generate(root: Path, n: int) -> dict[str, Any]:
    """The table: a checkpoint at version CKPT_VERSION of ``n - TAIL_NET`` adds (and a few
    tombstones), then the JSON commits of TAIL; ``n`` active files in all."""
    import checkpoint_arrow as ca
    import numpy as np

    rng = np.random.default_rng(SEED)
    log = root / "_delta_log"
    log.mkdir(parents=True)
    in_ckpt = n - TAIL_NET
    mtime = BASE_MS + CKPT_VERSION * 60_000 - 3_600_000
    adds = make_adds(rng, in_ckpt, 0, mtime)
    tombstones = make_adds(rng, TOMBSTONES, in_ckpt, mtime)
    table = checkpoint_table(adds, tombstones)
    ckpt_name, last = ca.write_checkpoint(log, CKPT_VERSION, table, in_ckpt, CKPT_ROW_GROUP)
    del table
    # Removes: distinct checkpoint files, and files of the first tail commit.
    ckpt_pick = rng.choice(in_ckpt, size=sum(r for _, _, r, _, _ in TAIL), replace=False)
    seq = in_ckpt + TOMBSTONES
    first_tail: dict[str, Any] | None = None
    taken = 0
    for i, (operation, n_add, n_rm, n_rm_tail, data_change) in enumerate(TAIL):
        version = CKPT_VERSION + 1 + i
        new = make_adds(rng, n_add, seq, BASE_MS + version * 60_000 - 1000)
        seq += n_add
        removed = _rows(adds, ckpt_pick[taken : taken + n_rm])
        taken += n_rm
        if n_rm_tail:
            assert first_tail is not None
            removed += _rows(first_tail, np.arange(n_rm_tail))
        text = _tail_commit(rng, version, operation, new, removed, data_change)
        (log / f"{version:020d}.json").write_text(text)
        if first_tail is None:
            first_tail = new
    (log / "_last_checkpoint").write_text(json.dumps(last) + "\n")
    return {
        "version": CKPT_VERSION + len(TAIL),
        "checkpoint": ckpt_name,
        "expected_files": n,
        "expected_bytes": None,  # filled in by the verification
    }


def table_path(base: Path, n: int) -> Path:
    return base / f"ui-table-{n}"


def ensure_table(base: Path, n: int, force: bool, run_child: ChildRunner) -> dict[str, Any]:
    """The table's manifest, generating (and verifying) the table if missing or stale."""
    root = table_path(base, n)
    marker = root / MARKER
    if marker.exists() and not force:
        try:
            info = json.loads(marker.read_text())
            if info.get("generator_version") == GENERATOR_VERSION:
                print(
                    f"table: {root} (cached: {info['expected_files']:,} files, "
                    f"{info['log_bytes'] / 2**20:.0f} MiB of log, built in "
                    f"{info['generate_s']:.1f}s)",
                    flush=True,
                )
                return info
        except (OSError, ValueError, KeyError):
            pass
    if root.exists():
        shutil.rmtree(root)
    print(f"generating {root} ...", end="", flush=True)
    t0 = time.perf_counter()
    info = generate(root, n)
    gen_s = time.perf_counter() - t0
    files = list((root / "_delta_log").iterdir())
    info.update(
        generator_version=GENERATOR_VERSION,
        size=n,
        log_files=len(files),
        log_bytes=sum(f.stat().st_size for f in files),
        generate_s=round(gen_s, 2),
    )
    print(f" {gen_s:.1f}s, {info['log_bytes'] / 2**20:.0f} MiB", flush=True)
    verify(root, info, run_child)
    marker.write_text(json.dumps(info, indent=1) + "\n")
    return info


def verify(root: Path, info: dict[str, Any], run_child: ChildRunner) -> None:
    """Both libraries, each in a fresh process, must see every file, the same total size,
    and (deltalake) every add's statistics parsed."""
    results = {impl: run_child(impl, root, {"verify": True}) for impl in ("deltalake", "deltalog")}
    bad = []
    for impl, res in results.items():
        if "error" in res:
            if impl == "deltalog" and res.get("unavailable"):
                print(f"  (deltalog cannot be imported, not verified with it: {res['error']})")
                continue
            bad.append(f"{impl}: {res['error']}")
            continue
        if res["files"] != info["expected_files"]:
            bad.append(f"{impl} sees {res['files']:,} files, expected {info['expected_files']:,}")
        if res.get("stats_nulls"):
            bad.append(f"{impl}: {res['stats_nulls']:,} files whose stats did not parse")
        print(
            f"  verified with {impl}: {res['files']:,} files, {res['bytes'] / 2**40:.2f} TiB, "
            f"{res['partitions']} partitions, version {res['version']}",
            flush=True,
        )
    sizes = {res["bytes"] for res in results.values() if "bytes" in res}
    if len(sizes) > 1:
        bad.append(f"the libraries disagree on the table's size: {sorted(sizes)}")
    if bad:
        raise SystemExit("GENERATOR BUG in " + str(root) + ":\n  " + "\n  ".join(bad))
    info["expected_bytes"] = sizes.pop() if sizes else None
