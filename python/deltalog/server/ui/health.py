"""A table's health, as figures the page draws (issue #47): file sizes against the target,
files and rows per partition, the deletion-vector share, versions since the last checkpoint,
commits over time and the table's size over its versions; and the command that mends each
problem found (text to copy: the pages change nothing).

Everything comes from what the snapshot already holds (its add actions, as Arrow, aggregated
by pyarrow's compute kernels: no loop over files in Python) and from the recent commits' own
sums (``RawSnapshot.version_changes``, in the Rust core): no data file is read.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable

#: The target file size when the table does not set ``delta.targetFileSize`` (what deltalog's
#: writer and OPTIMIZE aim for, as deltalake's do).
DEFAULT_TARGET_FILE_SIZE = 100 * 1024 * 1024
#: ``delta.checkpointInterval``'s default in deltalog's (and Delta Spark's) writers.
DEFAULT_CHECKPOINT_INTERVAL = 10
#: The size histogram's buckets: powers of two from 1 KiB (everything smaller in the first)
#: to 16 GiB (everything larger in the last).
SMALLEST_BUCKET, LARGEST_BUCKET = 10, 34
#: Partitions listed one by one (the largest by file count); the rest are summed up.
TOP_PARTITIONS = 50
#: Versions charted (the newest).
RECENT_VERSIONS = 200


def _positive_int(text: str | None, default: int) -> int:
    try:
        value = int(text) if text is not None else default
    except ValueError:
        return default
    return value if value > 0 else default


def size_histogram(sizes: pa.ChunkedArray | pa.Array) -> dict[str, list[int]]:
    """Counts and bytes of files per power-of-two size bucket: ``edges[i]`` is bucket ``i``'s
    lower bound (bucket 0 also holds everything smaller, the last everything larger)."""
    edges = [1 << b for b in range(SMALLEST_BUCKET, LARGEST_BUCKET + 1)]
    counts = [0] * len(edges)
    totals = [0] * len(edges)
    if len(sizes):
        clean = pc.fill_null(sizes, 0)
        log2 = pc.floor(pc.log2(pc.max_element_wise(pc.cast(clean, pa.float64()), 1.0)))
        bucket = pc.cast(
            pc.min_element_wise(
                pc.max_element_wise(pc.subtract(log2, float(SMALLEST_BUCKET)), 0.0),
                float(LARGEST_BUCKET - SMALLEST_BUCKET),
            ),
            pa.int64(),
        )
        grouped = pa.table({"b": bucket, "s": pc.cast(clean, pa.int64())}).group_by("b")
        for row in grouped.aggregate([("s", "count"), ("s", "sum")]).to_pylist():
            counts[row["b"]] = row["s_count"]
            totals[row["b"]] = row["s_sum"]
    return {"edges": edges, "counts": counts, "bytes": totals}


def partitions(adds: pa.Table, columns: list[str]) -> dict[str, Any]:
    """Files, rows and bytes per partition: the :data:`TOP_PARTITIONS` with the most files,
    and the sum of the others."""
    if not columns or adds.num_rows == 0 or "partition_values" not in adds.column_names:
        return {"columns": columns, "count": 0, "top": [], "others": None}
    values = adds.column("partition_values")
    keys: dict[str, Any] = {}
    for i, name in enumerate(columns):
        keys[f"p{i}"] = (
            pc.struct_field(values, [name])
            if pa.types.is_struct(values.type)
            else pc.map_lookup(values, name, "first")
        )
    frame = pa.table(
        {
            **keys,
            "size": pc.fill_null(adds.column("size"), 0),
            "rows": adds.column("num_records"),
        }
    )
    grouped = frame.group_by(list(keys)).aggregate(
        [("size", "count"), ("size", "sum"), ("rows", "sum")]
    )
    grouped = grouped.sort_by([("size_count", "descending")])
    top = grouped.slice(0, TOP_PARTITIONS).to_pylist()
    rest = grouped.slice(TOP_PARTITIONS)
    others = None
    if rest.num_rows:
        others = {
            "partitions": rest.num_rows,
            "files": pc.sum(rest.column("size_count")).as_py(),
            "bytes": pc.sum(rest.column("size_sum")).as_py(),
            "rows": pc.sum(rest.column("rows_sum")).as_py(),
        }
    return {
        "columns": columns,
        "count": grouped.num_rows,
        "top": [
            {
                "values": [_text(row[k]) for k in keys],
                "files": row["size_count"],
                "bytes": row["size_sum"],
                "rows": row["rows_sum"],
            }
            for row in top
        ],
        "others": others,
    }


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def deletion_vectors(adds: pa.Table) -> dict[str, Any]:
    """Files with a deletion vector, and rows they delete, against all rows."""
    rows = pc.sum(adds.column("num_records")).as_py() if adds.num_rows else 0
    files = deleted = 0
    if adds.num_rows and "deletion_vector" in adds.column_names:
        dv = adds.column("deletion_vector")
        files = pc.sum(pc.cast(pc.is_valid(dv), pa.int64())).as_py() or 0
        if files:
            deleted = pc.sum(pc.struct_field(dv, ["cardinality"])).as_py() or 0
    rows = rows or 0
    return {
        "files": files,
        "deleted_rows": deleted,
        "rows": rows,
        "share": (deleted / rows) if rows else 0.0,
    }


def versions(table: DeltaTable, total_bytes: int, total_files: int) -> list[dict[str, Any]]:
    """The newest :data:`RECENT_VERSIONS` versions, oldest first: each one's time, operation,
    principal-free commit facts and the table's bytes and files after it (walked back from the
    snapshot's totals by each commit's adds and removes; unknown before a commit whose
    ``remove`` actions carry no size, spec "Remove File": ``size`` is optional)."""
    out = []
    size: int | None = total_bytes
    files: int | None = total_files
    for entry in table._raw.version_changes(RECENT_VERSIONS):
        (version, ts, info, f_add, b_add, f_rm, b_rm, rm_unsized, dvs, meta, proto) = entry
        commit: dict[str, Any] = json.loads(info) if info else {}
        out.append(
            {
                "version": version,
                "timestamp": ts,
                "operation": commit.get("operation"),
                "bytes": size,
                "files": files,
                "files_added": f_add,
                "files_removed": f_rm,
                "bytes_added": b_add,
                "bytes_removed": b_rm,
                "deletion_vectors_added": dvs,
                "metadata_changed": meta,
                "protocol_changed": proto,
            }
        )
        if size is not None:
            size = None if rm_unsized else size - b_add + b_rm
        if files is not None:
            files = files - f_add + f_rm
    out.reverse()
    return out


def health(table: DeltaTable, name: list[str]) -> dict[str, Any]:
    """The health figures of ``table``'s loaded version (see the module docs); ``name`` is
    the table's catalog name, for the commands."""
    adds = table.get_add_actions()
    metadata = table.metadata()
    config = metadata.configuration
    target = _positive_int(config.get("delta.targetFileSize"), DEFAULT_TARGET_FILE_SIZE)
    interval = _positive_int(config.get("delta.checkpointInterval"), DEFAULT_CHECKPOINT_INTERVAL)
    sizes = adds.column("size")
    total_bytes = (pc.sum(sizes).as_py() or 0) if adds.num_rows else 0
    small = (
        pc.sum(pc.cast(pc.less(pc.fill_null(sizes, 0), target // 4), pa.int64())).as_py() or 0
        if adds.num_rows
        else 0
    )
    checkpoint = table._raw.checkpoint_version()
    version = table.version()
    since = version - checkpoint if checkpoint is not None else version + 1
    dv = deletion_vectors(adds)
    figures: dict[str, Any] = {
        "version": version,
        "files": adds.num_rows,
        "bytes": total_bytes,
        "rows": dv["rows"],
        "target_file_size": target,
        "small_files": small,
        "histogram": size_histogram(sizes),
        "partitions": partitions(adds, list(metadata.partition_columns)),
        "deletion_vectors": dv,
        "checkpoint": {"version": checkpoint, "since": since, "interval": interval},
        "versions": versions(table, total_bytes, adds.num_rows),
    }
    figures["advice"] = advice(figures, name, config)
    return figures


def advice(
    figures: dict[str, Any], name: list[str], config: dict[str, str]
) -> list[dict[str, str]]:
    """What to run, and why, for each problem the figures show (commands as text)."""
    quoted = shlex.quote(".".join(name))
    sql_name = ".".join(f"`{part.replace('`', '``')}`" for part in name)
    out = []
    files, small = figures["files"], figures["small_files"]
    if small >= 4 and small * 4 >= files:
        out.append(
            {
                "problem": "small files",
                "why": f"{small} of {files} files are under a quarter of the "
                f"{figures['target_file_size']}-byte target size",
                "command": f"deltalog optimize --catalog CATALOG {quoted}",
                "sql": f"OPTIMIZE {sql_name}",
            }
        )
    dv = figures["deletion_vectors"]
    if dv["files"] and dv["share"] >= 0.1:
        out.append(
            {
                "problem": "deleted rows kept in files",
                "why": f"deletion vectors mark {dv['deleted_rows']} of {dv['rows']} rows "
                f"({dv['share']:.0%}) deleted in {dv['files']} files: reads still scan them",
                "command": f"deltalog optimize --catalog CATALOG {quoted}",
                "sql": f"REORG TABLE {sql_name} APPLY (PURGE)",
            }
        )
    cp = figures["checkpoint"]
    if cp["since"] > 2 * cp["interval"]:
        out.append(
            {
                "problem": "no recent checkpoint",
                "why": f"{cp['since']} versions since the last checkpoint (interval "
                f"{cp['interval']}): every load replays them",
                "command": f"deltalog checkpoint --catalog CATALOG {quoted}",
                "sql": "",
            }
        )
    removed = sum(v["files_removed"] for v in figures["versions"])
    if removed >= max(16, files):
        out.append(
            {
                "problem": "files no version needs",
                "why": f"the last {len(figures['versions'])} versions removed {removed} files; "
                "VACUUM deletes those older than the retention "
                f"({config.get('delta.deletedFileRetentionDuration', 'interval 7 days')})",
                "command": f"deltalog vacuum --catalog CATALOG {quoted} --apply",
                "sql": f"VACUUM {sql_name}",
            }
        )
    return out
