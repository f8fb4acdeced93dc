"""The Arrow side of a classic V1 Delta checkpoint, as the benches' generators write one.

The struct types of the checkpoint's action columns (the Delta spec's "Checkpoint Schema",
with the fields Spark writes) and builders of their arrays, shared by ``snapshot.py`` and
``ui_table_fixture.py``: one action per row, every top-level column a nullable struct that
is null on the rows holding another action (``one_action_per_row``). The ``add`` rows carry
``dataChange`` false, as Spark writes them in checkpoints, and no tags, deletion vectors or
row ids; the ``remove`` rows are tombstones (``dataChange`` false, extended file metadata).

``write_checkpoint`` writes the table as the checkpoint's parquet file.

Not a script: imported by the generators (benches/ is not a package: found through
sys.path), inside the functions that write a checkpoint, so that a bench's driver and its
children load pyarrow only when they did before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

STR_MAP = pa.map_(pa.string(), pa.string())

PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", STR_MAP),
        ("createdTime", pa.int64()),
    ]
)
TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
    ]
)
DELETION_VECTOR = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
ADD = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STR_MAP),
        ("deletionVector", DELETION_VECTOR),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)


def _struct(type_: pa.StructType, columns: Sequence[Any]) -> pa.StructArray:
    """A struct array of ``type_`` from one column per field (Arrow arrays, or Python
    sequences converted to the field's type)."""
    fields = list(type_)
    arrays = [
        col if isinstance(col, pa.Array) else pa.array(col, f.type)
        for col, f in zip(columns, fields, strict=True)
    ]
    return pa.StructArray.from_arrays(arrays, fields=fields)


def one_entry_maps(key: str, values: Any) -> pa.MapArray:
    """A ``map<string,string>`` array of one entry per row, ``{key: value}`` (partition
    values of a table partitioned by one column); ``values`` a string array or sequence."""
    if not isinstance(values, pa.Array):
        values = pa.array(values, pa.string())
    n = len(values)
    offsets = pa.array(range(n + 1), pa.int32())
    return pa.MapArray.from_arrays(offsets, pa.repeat(key, n), values, type=STR_MAP)


def protocol_array(min_reader: int = 1, min_writer: int = 2) -> pa.StructArray:
    """The one-row ``protocol`` column (no table features)."""
    return pa.array([{"minReaderVersion": min_reader, "minWriterVersion": min_writer}], PROTOCOL)


def metadata_array(metadata: Mapping[str, Any]) -> pa.StructArray:
    """The one-row ``metaData`` column of a commit's ``metaData`` action (its maps, format
    options and configuration, as JSON objects)."""
    row = dict(metadata)
    row["format"] = dict(metadata["format"], options=list(metadata["format"]["options"].items()))
    row["configuration"] = list(metadata["configuration"].items())
    return pa.array([row], METADATA)


def txn_array(app_id: str, version: int, last_updated: int) -> pa.StructArray:
    """The one-row ``txn`` column of a streaming writer's transaction."""
    return pa.array([{"appId": app_id, "version": version, "lastUpdated": last_updated}], TXN)


def remove_array(
    path: Any, deletion_timestamp: int, partition_values: pa.MapArray, size: Any
) -> pa.StructArray:
    """``remove`` tombstones, all deleted at ``deletion_timestamp``."""
    n = len(path)
    flags = [pa.repeat(False, n), pa.repeat(True, n)]  # dataChange, extendedFileMetadata
    return _struct(REMOVE, [path, pa.repeat(deletion_timestamp, n), *flags, partition_values, size])


def add_array(
    path: Any, partition_values: pa.MapArray, size: Any, modification_time: Any, stats: Any
) -> pa.StructArray:
    """``add`` rows of a checkpoint: ``dataChange`` false, no tags, deletion vectors or row
    ids."""
    n = len(path)
    absent = [
        pa.nulls(n, ADD.field(name).type)
        for name in ("tags", "deletionVector", "baseRowId", "defaultRowCommitVersion")
    ]
    return _struct(
        ADD,
        [path, partition_values, size, modification_time, pa.repeat(False, n), stats, *absent],
    )


def one_action_per_row(columns: Mapping[str, tuple[pa.Array, int]]) -> pa.Table:
    """The checkpoint's table: each column (in the order given) its array from row ``start``
    on, null on every other row; the rows end where the last array ends."""
    total = max(start + len(arr) for arr, start in columns.values())
    return pa.table(
        {
            name: pa.concat_arrays(
                [pa.nulls(start, arr.type), arr, pa.nulls(total - start - len(arr), arr.type)]
            )
            for name, (arr, start) in columns.items()
        }
    )


def write_checkpoint(
    log: Path, version: int, table: pa.Table, num_adds: int, row_group_size: int
) -> tuple[str, dict[str, Any]]:
    """Writes ``table`` as the checkpoint of ``version`` in ``log`` (snappy parquet, row
    groups of ``row_group_size`` rows); returns its file name and what ``_last_checkpoint``
    says of it."""
    import pyarrow.parquet as pq

    name = f"{version:020d}.checkpoint.parquet"
    pq.write_table(table, log / name, row_group_size=row_group_size, compression="snappy")
    last = {
        "version": version,
        "size": table.num_rows,
        "sizeInBytes": (log / name).stat().st_size,
        "numOfAddFiles": num_adds,
    }
    return name, last
