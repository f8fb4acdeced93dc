"""Reading data files: deletion vectors of every storage type, row tracking, file tasks, and
bad input (missing or damaged data and DV files, unreconcilable schemas, bad partition values).

Tables are built by hand: parquet files written with pyarrow, commits written as JSON, deletion
vectors serialized by deltalog and checked against pyroaring (an independent implementation of
the same 64-bit RoaringBitmap format).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import pickle
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st
from pyroaring import BitMap64

import deltalog as dl
from conftest import LogWriter, add, commit_info, metadata, protocol
from deltalog import _native

DV_MAGIC = struct.pack("<I", 1681511377)
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
DV_PROTOCOL = protocol(3, 7, ["deletionVectors"], ["deletionVectors"])


def write_data(root: Path, name: str, ids: list[int], **columns: list[Any]) -> int:
    """A parquet file of `ids` (and extra columns); returns its size."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), **columns}), path)
    return path.stat().st_size


def z85_uuid(u: uuid.UUID) -> str:
    return _native.z85_encode(u.bytes)


def dv_descriptor(kind: str, rows: list[int], root: Path, prefix: str = "") -> dict[str, Any]:
    """A deletion vector of `rows` stored inline ('i'), next to the data ('u') or at an
    absolute path ('p')."""
    data = _native.dv_serialize(rows)
    if kind == "i":
        return {
            "storageType": "i",
            "pathOrInlineDv": _native.z85_encode(data),
            "sizeInBytes": len(data),
            "cardinality": len(rows),
        }
    u = uuid.uuid4()
    directory = root / prefix if prefix else root
    directory.mkdir(parents=True, exist_ok=True)
    file = directory / f"deletion_vector_{u}.bin"
    file.write_bytes(_native.dv_file(rows))
    path = prefix + z85_uuid(u) if kind == "u" else file.as_uri()
    return {
        "storageType": kind,
        "pathOrInlineDv": path,
        "offset": 1,
        "sizeInBytes": len(data),
        "cardinality": len(rows),
    }


def dv_table(root: Path, kind: str, deleted: list[int], prefix: str = "ab") -> Path:
    size = write_data(root, "part-0.parquet", list(range(10)))
    dv = dv_descriptor(kind, deleted, root, prefix)
    stats = json.dumps({"numRecords": 10})
    log = LogWriter(root)
    log.commit(
        0,
        [
            commit_info(),
            DV_PROTOCOL,
            metadata(schema_string=SCHEMA),
            add("part-0.parquet", size=size, stats=stats, deletionVector=dv),
        ],
    )
    return root


# -- deletion vectors -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["i", "u", "p"])
def test_deletion_vectors_of_every_storage_type(tmp_path: Path, kind: str) -> None:
    root = dv_table(tmp_path / "t", kind, [0, 3, 4, 9])
    t = dl.DeltaTable(root)
    got = sorted(t.to_pyarrow_table().column("id").to_pylist())
    assert got == [1, 2, 5, 6, 7, 8]
    (task,) = t.scan().tasks()
    assert task.deletion_vector is not None
    assert task.deletion_vector["storageType"] == kind
    assert task.deletion_vector["cardinality"] == 4


def test_relative_deletion_vector_without_prefix(tmp_path: Path) -> None:
    root = dv_table(tmp_path / "t", "u", [1], prefix="")
    assert sorted(dl.DeltaTable(root).to_pyarrow_table().column("id").to_pylist()) == [
        0,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
    ]


def test_a_vector_deleting_every_row_reads_no_rows(tmp_path: Path) -> None:
    root = dv_table(tmp_path / "t", "i", list(range(10)))
    table = dl.DeltaTable(root).to_pyarrow_table()
    assert table.num_rows == 0
    assert table.column_names == ["id", "part"]


def _stored_vector(root: Path) -> Path:
    (file,) = root.glob("ab/deletion_vector_*.bin")
    return file


def test_dv_checksum_mismatch_is_a_typed_error(tmp_path: Path) -> None:
    root = dv_table(tmp_path / "t", "u", [2, 5])
    file = _stored_vector(root)
    data = bytearray(file.read_bytes())
    data[-1] ^= 0xFF  # the CRC-32
    file.write_bytes(bytes(data))
    with pytest.raises(dl.CorruptDeletionVectorError, match="CRC") as info:
        dl.DeltaTable(root).to_pyarrow_table()
    assert info.value.file is not None and "deletion_vector_" in info.value.file


def test_dv_cardinality_mismatch_is_a_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    size = write_data(root, "part-0.parquet", list(range(10)))
    dv = dv_descriptor("i", [1, 2], root)
    dv["cardinality"] = 3
    LogWriter(root).commit(
        0,
        [
            DV_PROTOCOL,
            metadata(schema_string=SCHEMA),
            add("part-0.parquet", size=size, deletionVector=dv),
        ],
    )
    with pytest.raises(dl.CorruptDeletionVectorError, match="cardinality") as info:
        dl.DeltaTable(root).to_pyarrow_table()
    assert info.value.file == "inline deletion vector of part-0.parquet"


def test_missing_dv_file_is_a_typed_error(tmp_path: Path) -> None:
    root = dv_table(tmp_path / "t", "u", [2])
    _stored_vector(root).unlink()
    with pytest.raises(dl.CorruptDeletionVectorError, match="does not exist"):
        dl.DeltaTable(root).to_pyarrow_table()


@pytest.mark.parametrize("damage", ["empty", "truncated", "no-checksum", "offset-past-end"])
def test_short_dv_file_is_a_typed_error(tmp_path: Path, damage: str) -> None:
    """A DV file shorter than its descriptor says (zero bytes, cut inside the vector or its
    checksum, or an offset past the end) is a CorruptDeletionVectorError naming the DV file,
    the data file and the rule, never a storage error."""
    root = dv_table(tmp_path / "t", "u", [2, 5])
    file = _stored_vector(root)
    data = file.read_bytes()
    if damage == "offset-past-end":
        log = root / "_delta_log" / f"{0:020}.json"
        log.write_text(log.read_text().replace('"offset":1', f'"offset":{len(data) + 7}'))
    else:
        keep = {"empty": 0, "truncated": len(data) // 2, "no-checksum": len(data) - 2}[damage]
        file.write_bytes(data[:keep])
    with pytest.raises(dl.CorruptDeletionVectorError) as info:
        dl.DeltaTable(root).to_pyarrow_table()
    assert info.value.file is not None and file.name in info.value.file
    message = str(info.value)
    assert "part-0.parquet" in message
    assert "Deletion Vector File Storage Format" in message
    assert not isinstance(info.value, dl.StorageError)


@settings(max_examples=80, deadline=None)
@given(st.sets(st.integers(0, 2**40), max_size=300))
def test_dv_serialization_is_pyroaring_byte_for_byte(rows: set[int]) -> None:
    ours = _native.dv_serialize(sorted(rows))
    assert ours[:4] == DV_MAGIC
    theirs = BitMap64(rows).serialize()
    assert ours[4:] == theirs
    assert set(BitMap64.deserialize(ours[4:])) == rows
    assert set(_native.dv_deserialize(DV_MAGIC + theirs)) == rows


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=64).map(lambda b: b + bytes(-len(b) % 4)))
def test_z85_round_trip(data: bytes) -> None:
    text = _native.z85_encode(data)
    assert len(text) == len(data) // 4 * 5
    assert _native.z85_decode(text) == data


@settings(max_examples=40, deadline=None)
@given(st.sets(st.integers(0, 2**35), max_size=200))
def test_dv_file_round_trip_with_crc(rows: set[int]) -> None:
    file = _native.dv_file(sorted(rows))
    assert file[0] == 1
    (size,) = struct.unpack(">I", file[1:5])
    data = file[5 : 5 + size]
    (crc,) = struct.unpack(">I", file[5 + size : 9 + size])
    assert crc == zlib.crc32(data)
    assert set(BitMap64.deserialize(data[4:])) == rows


def test_spec_examples() -> None:
    # "JSON Example 3 — Inline": rows 3, 4, 7, 11, 18, 29 (in the older native layout).
    inline = _native.z85_decode("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L")
    assert _native.dv_deserialize(inline[:44]) == [3, 4, 7, 11, 18, 29]


# -- row tracking -----------------------------------------------------------------------------


def row_tracking_table(root: Path) -> Path:
    config = {
        "delta.enableRowTracking": "true",
        "delta.rowTracking.materializedRowIdColumnName": "_row-id-col",
        "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-version-col",
    }
    # File 1: no materialized columns. File 2: materialized values for some rows.
    s1 = write_data(root, "a.parquet", [10, 11, 12])
    s2 = write_data(
        root,
        "b.parquet",
        [20, 21, 22, 23],
        **{
            "_row-id-col": pa.array([7, None, 9, None], pa.int64()),
            "_row-version-col": pa.array([None, 1, None, None], pa.int64()),
        },
    )
    LogWriter(root).commit(
        0,
        [
            protocol(
                3, 7, ["deletionVectors"], ["rowTracking", "domainMetadata", "deletionVectors"]
            ),
            metadata(configuration=config, schema_string=SCHEMA),
            add("a.parquet", size=s1, baseRowId=100, defaultRowCommitVersion=4),
            add(
                "b.parquet",
                size=s2,
                baseRowId=200,
                defaultRowCommitVersion=5,
                stats=json.dumps({"numRecords": 4}),
                deletionVector=dv_descriptor("i", [2], root),
            ),
        ],
    )
    return root


def test_row_tracking_columns(tmp_path: Path) -> None:
    t = dl.DeltaTable(row_tracking_table(tmp_path / "t"))
    table = t.to_pyarrow_table(with_row_tracking=True)
    assert table.column_names == ["id", "part", "_row_id", "_row_commit_version"]
    got = sorted(
        zip(
            table.column("id").to_pylist(),
            table.column("_row_id").to_pylist(),
            table.column("_row_commit_version").to_pylist(),
            strict=True,
        )
    )
    # Default row IDs are baseRowId + the physical row index (row 2 of b is deleted, so 23
    # keeps index 3); materialized values win where not null.
    assert got == [
        (10, 100, 4),
        (11, 101, 4),
        (12, 102, 4),
        (20, 7, 5),
        (21, 201, 1),
        (23, 203, 5),
    ]
    # The hidden materialized columns never show as table columns.
    assert t.to_pyarrow_table().column_names == ["id", "part"]


def test_row_tracking_needs_it_enabled(tmp_path: Path) -> None:
    root = tmp_path / "t"
    size = write_data(root, "a.parquet", [1])
    LogWriter(root).commit(
        0, [protocol(), metadata(schema_string=SCHEMA), add("a.parquet", size=size)]
    )
    with pytest.raises(ValueError, match="row tracking is not enabled"):
        dl.DeltaTable(root).to_pyarrow_table(with_row_tracking=True)


# -- tasks ------------------------------------------------------------------------------------


def test_tasks_pickle_and_read_anywhere(tmp_path: Path) -> None:
    t = dl.DeltaTable(row_tracking_table(tmp_path / "t"))
    scan = t.scan(columns=["id"], filter=dl.col("id") != 11, with_row_tracking=True)
    tasks = scan.tasks()
    assert [task.path for task in tasks] == ["a.parquet", "b.parquet"]
    assert tasks[1].deletion_vector is not None and tasks[0].deletion_vector is None
    assert tasks[0].size == (tmp_path / "t" / "a.parquet").stat().st_size
    shipped = pickle.loads(pickle.dumps(tasks))
    assert shipped == tasks
    parts = [dl.read_task(task) for task in shipped]
    whole = pa.concat_tables(parts)
    assert whole.column_names == ["id", "_row_id", "_row_commit_version"]
    assert sorted(whole.column("id").to_pylist()) == [10, 12, 20, 21, 23]
    assert whole.sort_by("id").equals(scan.to_pyarrow_table().sort_by("id"))
    assert dl.read_task(shipped).sort_by("id").equals(whole.sort_by("id"))
    other = dl.DeltaTable(tmp_path / "t").scan().tasks()
    with pytest.raises(ValueError, match="different scans"):
        dl.read_task([tasks[0], other[0]])


def test_partition_values_in_tasks(tmp_path: Path) -> None:
    root = tmp_path / "t"
    size = write_data(root, "part=x/a.parquet", [1, 2])
    LogWriter(root).commit(
        0,
        [
            protocol(),
            metadata(schema_string=SCHEMA, partition_columns=["part"]),
            {
                "add": {
                    **add("part=x/a.parquet", size=size)["add"],
                    "partitionValues": {"part": "x"},
                }
            },
        ],
    )
    (task,) = dl.DeltaTable(root).scan().tasks()
    assert task.partition_values == {"part": "x"}
    assert dl.read_task(task).column("part").to_pylist() == ["x", "x"]


# -- bad input --------------------------------------------------------------------------------


def test_missing_data_file_is_a_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    size = write_data(root, "a.parquet", [1])
    LogWriter(root).commit(
        0,
        [
            protocol(),
            metadata(schema_string=SCHEMA),
            add("a.parquet", size=size),
            add("gone.parquet"),
        ],
    )
    with pytest.raises(dl.DataFileNotFoundError) as info:
        dl.DeltaTable(root).to_pyarrow_table()
    assert info.value.file == "gone.parquet"
    assert isinstance(info.value, FileNotFoundError)
    # Streaming raises the same typed error.
    with pytest.raises(dl.DataFileNotFoundError):
        dl.DeltaTable(root).to_batches().read_all()


def test_unreconcilable_column_is_a_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    path = root / "a.parquet"
    root.mkdir()
    pq.write_table(pa.table({"id": ["not", "a", "long"]}), path)
    LogWriter(root).commit(
        0, [protocol(), metadata(schema_string=SCHEMA), add("a.parquet", size=path.stat().st_size)]
    )
    with pytest.raises(dl.CorruptDataFileError, match="cannot be read as") as info:
        dl.DeltaTable(root).to_pyarrow_table()
    assert info.value.file == "a.parquet"


def test_garbage_data_file_is_a_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.parquet").write_bytes(b"this is not parquet at all")
    LogWriter(root).commit(
        0, [protocol(), metadata(schema_string=SCHEMA), add("a.parquet", size=26)]
    )
    with pytest.raises(dl.CorruptDataFileError, match="unreadable parquet") as info:
        dl.DeltaTable(root).to_pyarrow_table()
    assert info.value.file == "a.parquet"


def test_bad_partition_value_is_a_typed_error(tmp_path: Path) -> None:
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": "id", "type": "long", "nullable": True, "metadata": {}},
                {"name": "n", "type": "integer", "nullable": True, "metadata": {}},
            ],
        }
    )
    root = tmp_path / "t"
    size = write_data(root, "n=x/a.parquet", [1])
    LogWriter(root).commit(
        0,
        [
            protocol(),
            metadata(schema_string=schema, partition_columns=["n"]),
            {"add": {**add("n=x/a.parquet", size=size)["add"], "partitionValues": {"n": "x"}}},
        ],
    )
    with pytest.raises(dl.CorruptDataFileError, match="Partition Value Serialization"):
        dl.DeltaTable(root).to_pyarrow_table()


def test_columns_missing_from_older_files_read_as_nulls(tmp_path: Path) -> None:
    root = tmp_path / "t"
    size = write_data(root, "old.parquet", [1, 2])  # has no "part" column
    LogWriter(root).commit(
        0, [protocol(), metadata(schema_string=SCHEMA), add("old.parquet", size=size)]
    )
    table = dl.DeltaTable(root).to_pyarrow_table()
    assert table.column("part").to_pylist() == [None, None]
    assert table.schema.field("part").type == pa.string()


def test_type_widening_on_read(tmp_path: Path) -> None:
    """Files written before a column's type was widened ("typeWidening") read as the wider
    type: int -> long, float -> double, int -> double, decimal(5,2) -> decimal(10,4),
    date -> timestamp_ntz."""
    fields = [
        ("a", "long"),
        ("b", "double"),
        ("c", "double"),
        ("d", "decimal(10,4)"),
        ("e", "timestamp_ntz"),
    ]
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
        }
    )
    root = tmp_path / "t"
    root.mkdir()
    old = pa.table(
        {
            "a": pa.array([1, None], pa.int32()),
            "b": pa.array([1.5, 2.0], pa.float32()),
            "c": pa.array([3, 4], pa.int32()),
            "d": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(5, 2)),
            "e": pa.array([dt.date(2024, 1, 2), None], pa.date32()),
        }
    )
    pq.write_table(old, root / "old.parquet")
    LogWriter(root).commit(
        0,
        [
            protocol(3, 7, ["typeWidening", "timestampNtz"], ["typeWidening", "timestampNtz"]),
            metadata(schema_string=schema),
            add("old.parquet", size=(root / "old.parquet").stat().st_size),
        ],
    )
    table = dl.DeltaTable(root).to_pyarrow_table()
    assert table.schema.types == [
        pa.int64(),
        pa.float64(),
        pa.float64(),
        pa.decimal128(10, 4),
        pa.timestamp("us"),
    ]
    assert table.to_pylist() == [
        {
            "a": 1,
            "b": 1.5,
            "c": 3.0,
            "d": decimal.Decimal("1.2500"),
            "e": dt.datetime(2024, 1, 2),
        },
        {"a": None, "b": 2.0, "c": 4.0, "d": None, "e": None},
    ]
