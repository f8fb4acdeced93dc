"""Timestamps whose Arrow/parquet type names a time zone ("UTC", "America/New_York", ...) or
none at all, wherever they occur: a checkpoint's `add.stats_parsed` and
`add.partitionValues_parsed` (checkpoints written with struct statistics, as delta-rs writes
them), and data files. A Delta `timestamp` is an instant ("Primitive Types": microseconds since
the epoch, UTC); the zone of the physical type only says how the writer labelled it.

Checkpoints are written here by pyarrow in the spec's "Checkpoint Schema" layout; data files by
pyarrow; tables deltalog writes are read back by the `deltalake` package too.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from conftest import LogWriter, commit_info, metadata, protocol

UTC = dt.timezone.utc
TS = [
    dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC),
    dt.datetime(2024, 6, 1, 8, 30, 15, 250_000, tzinfo=UTC),
    dt.datetime(2024, 11, 3, 6, 30, tzinfo=UTC),  # 01:30 in New York, an ambiguous hour
]
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
            {"name": "p", "type": "timestamp", "nullable": True, "metadata": {}},
        ],
    }
)
FLAT_SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        ],
    }
)
ZONES = [None, "UTC", "Etc/UTC", "+00:00", "America/New_York", "Asia/Kolkata"]
STR_MAP = pa.map_(pa.string(), pa.string())


def ts_array(values: list[dt.datetime], tz: str | None, unit: str = "us") -> pa.Array:
    """`values` (instants) as a timestamp array labelled `tz`; without a zone, the UTC wall
    clock (how naive writers store Delta timestamps)."""
    if tz is None:
        values = [v.astimezone(UTC).replace(tzinfo=None) for v in values]
    return pa.array(values, pa.timestamp(unit, tz=tz))


def checkpoint_with_struct_stats(root: Path, tz: str | None, unit: str) -> list[int]:
    """Version 0 as a classic checkpoint only (no commit file), statistics only as
    `stats_parsed` and partition values also as `partitionValues_parsed`, timestamps in the
    zone `tz`. Two data files; returns the ids in the table."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    files = [("p1/a.parquet", [1, 2], TS[:2]), ("b.parquet", [3], TS[2:])]
    adds = []
    for path, ids, ts in files:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.table({"id": pa.array(ids, pa.int64()), "ts": ts_array(ts, tz)}), root / path
        )
        adds.append((path, ids, ts))
    ts_type = pa.timestamp(unit, tz=tz)
    stats_type = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", pa.struct([("id", pa.int64()), ("ts", ts_type)])),
            ("maxValues", pa.struct([("id", pa.int64()), ("ts", ts_type)])),
            ("nullCount", pa.struct([("id", pa.int64()), ("ts", pa.int64())])),
        ]
    )
    add_type = pa.struct(
        [
            ("path", pa.string()),
            ("partitionValues", STR_MAP),
            ("size", pa.int64()),
            ("modificationTime", pa.int64()),
            ("dataChange", pa.bool_()),
            ("stats_parsed", stats_type),
            ("partitionValues_parsed", pa.struct([("p", ts_type)])),
        ]
    )
    protocol_type = pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())])
    metadata_type = pa.struct(
        [
            ("id", pa.string()),
            ("format", pa.struct([("provider", pa.string()), ("options", STR_MAP)])),
            ("schemaString", pa.string()),
            ("partitionColumns", pa.list_(pa.string())),
            ("configuration", STR_MAP),
            ("createdTime", pa.int64()),
        ]
    )
    p_value = dt.datetime(2024, 1, 1, tzinfo=UTC)
    rows: list[dict[str, Any]] = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "00000000-0000-4000-8000-000000000007",
                "format": {"provider": "parquet", "options": []},
                "schemaString": SCHEMA,
                "partitionColumns": ["p"],
                "configuration": [
                    ("delta.checkpoint.writeStatsAsJson", "false"),
                    ("delta.checkpoint.writeStatsAsStruct", "true"),
                ],
                "createdTime": 1,
            }
        },
    ]
    for path, ids, ts in adds:
        partitioned = path.startswith("p1/")
        p = p_value if partitioned else None
        if p is not None and tz is None:
            p = p.replace(tzinfo=None)
        rows.append(
            {
                "add": {
                    "path": path,
                    "partitionValues": [("p", "2024-01-01 00:00:00" if partitioned else None)],
                    "size": (root / path).stat().st_size,
                    "modificationTime": 1_700_000_000_000,
                    "dataChange": False,
                    "stats_parsed": {
                        "numRecords": len(ids),
                        "minValues": {"id": min(ids), "ts": _label(min(ts), tz)},
                        "maxValues": {"id": max(ids), "ts": _label(max(ts), tz)},
                        "nullCount": {"id": 0, "ts": 0},
                    },
                    "partitionValues_parsed": {"p": p},
                }
            }
        )
    schema = pa.schema(
        [("protocol", protocol_type), ("metaData", metadata_type), ("add", add_type)]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, log / f"{0:020}.checkpoint.parquet")
    (log / "_last_checkpoint").write_text(json.dumps({"version": 0, "size": len(rows)}))
    return [1, 2, 3]


def _label(v: dt.datetime, tz: str | None) -> dt.datetime:
    return v.astimezone(UTC).replace(tzinfo=None) if tz is None else v


def instants(values: list[Any]) -> list[dt.datetime]:
    return [v.astimezone(UTC) for v in values]


@pytest.mark.parametrize("unit", ["us", "ms"])
@pytest.mark.parametrize("tz", ZONES)
def test_checkpoint_struct_statistics_in_any_zone(
    tmp_path: Path, tz: str | None, unit: str
) -> None:
    root = tmp_path / "t"
    ids = checkpoint_with_struct_stats(root, tz, unit)
    t = dl.DeltaTable(str(root))
    assert t.version() == 0
    actions = {a["path"]: a for a in t.get_add_actions(flatten=True).to_pylist()}
    a, b = actions["p1/a.parquet"], actions["b.parquet"]
    precision = 1000 if unit == "ms" else 1
    assert instants([a["min.ts"], a["max.ts"]]) == [
        TS[0],
        TS[1].replace(microsecond=TS[1].microsecond // precision * precision),
    ]
    assert instants([b["min.ts"], b["max.ts"]]) == [TS[2], TS[2]]
    data = t.to_pyarrow_table()
    assert sorted(data.column("id").to_pylist()) == ids
    assert sorted(instants(data.column("ts").to_pylist())) == TS
    # File skipping by the statistics: only b.parquet can hold rows after October.
    late = t.scan(filter=dl.col("ts") > dt.datetime(2024, 10, 1, tzinfo=UTC))
    assert late.to_pyarrow_table().column("id").to_pylist() == [3]
    assert [task.path for task in late.tasks()] == ["b.parquet"]
    # A checkpoint of this state written by deltalog keeps the statistics.
    t.create_checkpoint()
    again = {
        a["path"]: a for a in dl.DeltaTable(str(root)).get_add_actions(flatten=True).to_pylist()
    }
    assert instants([again["b.parquet"]["min.ts"]]) == [TS[2]]


@pytest.mark.parametrize("tz", ZONES)
def test_data_files_in_any_zone(tmp_path: Path, tz: str | None) -> None:
    """Data files written by other tools label their timestamps with any zone."""
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "ts": ts_array(TS, tz)}),
        root / "a.parquet",
    )
    stats = {
        "numRecords": 3,
        "minValues": {"id": 1, "ts": "2024-01-01T12:00:00.000Z"},
        "maxValues": {"id": 3, "ts": "2024-11-03T06:30:00.000Z"},
        "nullCount": {"id": 0, "ts": 0},
    }
    LogWriter(root).commit(
        0,
        [
            commit_info(),
            protocol(),
            metadata(schema_string=FLAT_SCHEMA),
            {
                "add": {
                    "path": "a.parquet",
                    "partitionValues": {},
                    "size": (root / "a.parquet").stat().st_size,
                    "modificationTime": 1_700_000_000_000,
                    "dataChange": True,
                    "stats": json.dumps(stats),
                }
            },
        ],
    )
    t = dl.DeltaTable(str(root))
    data = t.to_pyarrow_table(columns=["id", "ts"])
    assert data.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert instants(data.column("ts").to_pylist()) == TS
    hits = t.to_pyarrow_table(
        columns=["id"],
        filter=dl.col("ts") >= dt.datetime(2024, 6, 1, 8, 30, 15, 250_000, tzinfo=UTC),
    )
    assert sorted(hits.column("id").to_pylist()) == [2, 3]
    assert instants(data.column("ts").to_pylist()) == instants(
        deltalake.DeltaTable(str(root)).to_pyarrow_table().column("ts").to_pylist()
    )


@pytest.mark.parametrize("tz", ["America/New_York", "Asia/Kolkata", "UTC"])
def test_writing_named_zone_timestamps(tmp_path: Path, tz: str) -> None:
    """deltalog writes data labelled with a named zone as Delta timestamps (instants), with
    statistics, and a struct-statistics checkpoint of them; deltalake reads the same rows."""
    uri = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "ts": ts_array(TS, tz)})
    dl.write_table(
        uri,
        data,
        configuration={"delta.checkpoint.writeStatsAsStruct": "true"},
    )
    dl.write_table(uri, data.slice(0, 1), mode="append")
    t = dl.DeltaTable(uri)
    t.create_checkpoint()
    t = dl.DeltaTable(uri)
    got = t.to_pyarrow_table()
    assert sorted(instants(got.column("ts").to_pylist())) == sorted(TS + TS[:1])
    mins = sorted(instants(t.get_add_actions(flatten=True).column("min.ts").to_pylist()))
    assert mins == [TS[0], TS[0]]
    peer = deltalake.DeltaTable(str(uri)).to_pyarrow_table()
    ours = zip(got.column("id").to_pylist(), instants(got.column("ts").to_pylist()), strict=True)
    theirs = zip(
        peer.column("id").to_pylist(), instants(peer.column("ts").to_pylist()), strict=True
    )
    assert sorted(ours) == sorted(theirs)
