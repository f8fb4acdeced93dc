"""Tables deltalog writes, one per table feature or combination of features, each built by a
small function that returns the ids of the rows the table must hold: the shared input of every
check that another engine reads what deltalog writes (DuckDB's ``delta`` extension in
``test_duckdb_reader.py``, Delta Spark in ``test_delta_spark_reads_ours.py``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

import deltalog as dl
from deltalog.write.properties import Compression
from duckdb_delta import UTC, drop_commits_through, dv_storage_types, features_of, our_table

DV = {"delta.enableDeletionVectors": "true"}


def rows_by_id(path: Path) -> list[dict[str, Any]]:
    """deltalog's rows, by id (for values the writer generates: identity, defaults)."""
    return sorted(our_table(path).to_pylist(), key=lambda r: r["id"])


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------


def base(ids: Sequence[int]) -> pa.Table:
    """``part`` first (see test_duckdb_disagreements.py for why it matters to DuckDB), then
    an id, a nullable string and a double."""
    return pa.table(
        {
            "part": pa.array([f"p{i % 3}" for i in ids], pa.string()),
            "id": pa.array(ids, pa.int64()),
            "s": pa.array([None if i % 5 == 0 else f"s{i} ü" for i in ids], pa.string()),
            "v": pa.array([i * 0.5 for i in ids], pa.float64()),
        }
    )


def all_types(ids: Sequence[int]) -> pa.Table:
    def opt(values: list[Any]) -> list[Any]:
        return [None if i % 7 == 3 else x for i, x in zip(ids, values, strict=True)]

    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "i8": pa.array(opt([i - 100 for i in ids]), pa.int8()),
            "i16": pa.array(opt([i * 300 for i in ids]), pa.int16()),
            "i32": pa.array(opt([-(i * 70_000) for i in ids]), pa.int32()),
            "f32": pa.array(opt([i / 8 for i in ids]), pa.float32()),
            "f64": pa.array(opt([i / 3 for i in ids]), pa.float64()),
            "b": pa.array(opt([i % 2 == 0 for i in ids]), pa.bool_()),
            "s": pa.array(opt([f"naïve {i} 🦆" for i in ids]), pa.string()),
            # Alike for longer than statistics keep of a string (truncated bounds).
            "long": pa.array(opt([f"{'ü🦆' * 40}{i:03}" for i in ids]), pa.string()),
            "bin": pa.array(opt([bytes([i % 256, 0, 255]) for i in ids]), pa.binary()),
            "d": pa.array(opt([dt.date(1969, 12, 1) + dt.timedelta(days=i) for i in ids])),
            "ts": pa.array(
                opt(
                    [
                        dt.datetime(2026, 3, 29, 0, 59, tzinfo=UTC)
                        + dt.timedelta(hours=i, microseconds=999 * i + 1)  # below milliseconds
                        for i in ids
                    ]
                ),
                pa.timestamp("us", tz="UTC"),
            ),
            "dec": pa.array(opt([Decimal(i * 101) / 100 for i in ids]), pa.decimal128(10, 2)),
            "dec38": pa.array(
                opt([Decimal(f"-{i}12345678901234567890.123456") for i in ids]),
                pa.decimal128(38, 6),
            ),
        }
    )


def nested(ids: Sequence[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "st": pa.array(
                [{"a": i, "inner": {"x": f"x{i}", "y": [i, i + 1]}} if i % 4 else None for i in ids]
            ),
            "arr": pa.array([[i, None, i * 2] if i % 3 else [] for i in ids], pa.list_(pa.int32())),
            "arr_st": pa.array([[{"k": i, "w": "w"}] for i in ids]),
            "m": pa.array(
                [[("a", i), ("b", None)] if i % 2 else None for i in ids],
                pa.map_(pa.string(), pa.int64()),
            ),
        }
    )


# ------------------------------------------------------------------------------------------------
# Tables, one per feature or combination: each builder writes a table at ``path`` and returns the
# ids of the rows it must hold; ``features`` are table features the protocol must support.
# ------------------------------------------------------------------------------------------------

Builder = Callable[[Path], list[int]]
CASES: dict[str, tuple[Builder, frozenset[str]]] = {}


def case(name: str, *features: str) -> Callable[[Builder], Builder]:
    def register(build: Builder) -> Builder:
        CASES[name] = (build, frozenset(features))
        return build

    return register


@case("plain-all-types")
def _plain(path: Path) -> list[int]:
    data = all_types(range(24))
    dl.write_table(path, data.slice(0, 10))
    dl.write_table(path, data.slice(10), mode="append")
    return list(range(24))


CODECS: list[Compression] = ["ZSTD", "LZ4_RAW", "GZIP", "BROTLI", "UNCOMPRESSED"]


def writer_properties(path: Path, codecs: Sequence[Compression] = CODECS) -> list[int]:
    # Parquet written several ways: codecs, small row groups and pages, a column without
    # dictionary, one without statistics, a bloom filter, several files per commit.
    column = {
        "s": dl.ColumnProperties(dictionary_enabled=False),
        "f64": dl.ColumnProperties(statistics_enabled="NONE"),
        "id": dl.ColumnProperties(bloom_filter_properties=dl.BloomFilterProperties(True, 0.01)),
    }
    data = all_types(range(60))
    for i, codec in enumerate(codecs):
        props = dl.WriterProperties(
            compression=codec,
            max_row_group_size=5,
            data_page_row_count_limit=2,
            column_properties=column,
        )
        mode = "error" if i == 0 else "append"
        dl.write_table(path, data.slice(12 * i, 12), mode=mode, writer_properties=props)
    dl.write_table(path, all_types(range(60, 90)), mode="append", target_file_size=1)
    assert len(dl.DeltaTable(path).files()) > 6
    return [*range(12 * len(codecs)), *range(60, 90)]


@case("writer-properties-codecs-row-groups-pages")
def _writer_properties(path: Path) -> list[int]:
    return writer_properties(path)


@case("partitioned-by-every-type")
def _partitioned(path: Path) -> list[int]:
    # "Partition Value Serialization": strings escaped in paths, not in partitionValues;
    # nulls as null (__HIVE_DEFAULT_PARTITION__ directories); timestamps as ISO-8601 UTC.
    ts = dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    data = pa.table(
        {
            "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
            "ps": ["a b", "50%", "x=y/z", "ünï©ødé 漢字", None],
            "pi": pa.array([1, None, -3, 1, 7], pa.int32()),
            "pd": [dt.date(2026, 1, 1), None, dt.date(1970, 1, 1), dt.date(1, 1, 1), None],
            "pt": pa.array([ts, ts, None, dt.datetime(1999, 12, 31, tzinfo=UTC), None]),
            "pb": [True, False, None, True, None],
            "v": [1.5, 2.5, 3.5, 4.5, 5.5],
        }
    )
    partitions = ["ps", "pi", "pd", "pt", "pb"]
    dl.write_table(path, data.slice(0, 3), partition_by=partitions)
    dl.write_table(path, data.slice(3), mode="append")
    return [1, 2, 3, 4, 5]


@case("deletion-vectors-inline", "deletionVectors")
def _dv_inline(path: Path) -> list[int]:
    dl.write_table(path, base(range(30)), configuration=DV)
    dl.DeltaTable(path).delete("id = 7")
    dl.DeltaTable(path).delete("id IN (8, 29)")  # a second DV replaces the first
    assert dv_storage_types(path) == {"i"}
    return [i for i in range(30) if i not in (7, 8, 29)]


@case("deletion-vectors-file", "deletionVectors")
def _dv_file(path: Path) -> list[int]:
    dl.write_table(path, base(range(300)), configuration=DV)
    dl.DeltaTable(path).delete("id % 3 = 0")
    assert dv_storage_types(path) == {"u"}
    return [i for i in range(300) if i % 3]


@case("deletion-vectors-update-merge-partitioned", "deletionVectors")
def _dv_dml(path: Path) -> list[int]:
    dl.write_table(path, base(range(40)), partition_by=["part"], configuration=DV)
    t = dl.DeltaTable(path)
    t.update({"v": "v + 100", "s": "'updated'"}, "id < 5")
    t = dl.DeltaTable(path)
    (
        t.merge(base(range(30, 50)), "target.id = source.id")
        .when_matched_delete("source.id % 2 = 0")
        .when_matched_update({"s": "'merged'"})
        .when_not_matched_insert_all()
        .execute()
    )
    assert dv_storage_types(path)
    return [i for i in range(50) if not (30 <= i < 40 and i % 2 == 0)]


def _column_mapped(path: Path, mode: str) -> list[int]:
    data = base(range(20)).append_column(
        "st", pa.array([{"x": i, "y": f"y{i}"} for i in range(20)])
    )
    config = {"delta.columnMapping.mode": mode, **DV}
    dl.write_table(path, data, partition_by=["part"], configuration=config)
    t = dl.DeltaTable(path)
    t.alter.rename_column("s", "renamed s")
    t.alter.rename_column("st.y", "why")
    t.alter.drop_columns(["v"])
    later = pa.table(
        {
            "part": ["p0", "p1", "p9"],
            "id": pa.array([100, 101, 102], pa.int64()),
            "renamed s": ["a", None, "c"],
            "st": [{"x": -1, "why": "new"}, None, {"x": None, "why": None}],
        }
    )
    dl.write_table(path, later, mode="append")
    dl.DeltaTable(path).delete("id = 4 OR id = 101")
    return [i for i in [*range(20), 100, 101, 102] if i not in (4, 101)]


@case("column-mapping-name-renamed-dropped-dv", "columnMapping", "deletionVectors")
def _cm_name(path: Path) -> list[int]:
    return _column_mapped(path, "name")


@case("column-mapping-id-renamed-dropped-dv", "columnMapping", "deletionVectors")
def _cm_id(path: Path) -> list[int]:
    return _column_mapped(path, "id")


@case("checkpoint-classic", "deletionVectors")
def _checkpoint_classic(path: Path) -> list[int]:
    dl.write_table(path, base(range(10)), partition_by=["part"], configuration=DV)
    dl.write_table(path, base(range(10, 20)), mode="append")
    dl.DeltaTable(path).delete("id = 3")
    t = dl.DeltaTable(path)
    t.create_checkpoint("classic")
    drop_commits_through(path, t.version())
    dl.write_table(path, base(range(20, 25)), mode="append")
    return [i for i in range(25) if i != 3]


@case("checkpoint-stats-as-struct", "deletionVectors")
def _checkpoint_struct(path: Path) -> list[int]:
    # partitionValues_parsed and stats_parsed ("Checkpoint Schema") instead of JSON stats.
    config = {
        **DV,
        "delta.checkpoint.writeStatsAsStruct": "true",
        "delta.checkpoint.writeStatsAsJson": "false",
    }
    dl.write_table(path, base(range(12)), partition_by=["part"], configuration=config)
    dl.DeltaTable(path).delete("id > 9")
    t = dl.DeltaTable(path)
    t.create_checkpoint()
    # "Metadata Cleanup" deletes the commits *before* the checkpoint, and Delta Spark 4.4 needs
    # the checkpoint version's own commit ("Could not find any delta files for version 1").
    drop_commits_through(path, t.version() - 1)
    return list(range(10))


def _v2_checkpoint(path: Path, kind: str, sidecars: int) -> list[int]:
    dl.write_table(path, base(range(10)), partition_by=["part"], configuration=DV)
    t = dl.DeltaTable(path)
    t.alter.add_feature("v2Checkpoint")
    dl.write_table(path, base(range(10, 20)), mode="append")
    dl.DeltaTable(path).delete("id = 12")
    t = dl.DeltaTable(path)
    # No classic-named copy: the UUID-named checkpoint is the only one ("UUID-named checkpoint").
    written = t.create_checkpoint(kind, sidecars=sidecars, classic_copy=False)
    sidecar_files = [f for f in written["files"] if "_sidecars/" in f]
    assert len(sidecar_files) == sidecars
    drop_commits_through(path, t.version())
    dl.write_table(path, base(range(20, 22)), mode="append")
    return [i for i in range(22) if i != 12]


for _kind in ("v2-parquet", "v2-json"):
    for _sidecars in (0, 2):

        def _build(path: Path, kind: str = _kind, sidecars: int = _sidecars) -> list[int]:
            return _v2_checkpoint(path, kind, sidecars)

        case(f"checkpoint-{_kind}-sidecars-{_sidecars}", "v2Checkpoint", "deletionVectors")(_build)


@case("log-compaction", "deletionVectors")
def _log_compaction(path: Path) -> list[int]:
    dl.write_table(path, base(range(10)), configuration=DV)
    for start in (10, 20):
        dl.write_table(path, base(range(start, start + 10)), mode="append")
    dl.DeltaTable(path).delete("id % 10 = 0")
    dl.DeltaTable(path).update({"v": "-v"}, "id = 15")
    t = dl.DeltaTable(path)
    assert t.compact_logs(1, t.version()).endswith(".compacted.json")
    dl.write_table(path, base(range(30, 32)), mode="append")
    return [i for i in range(32) if i % 10 or i == 30]


@case("row-tracking-after-dml", "rowTracking", "domainMetadata")
def _row_tracking(path: Path) -> list[int]:
    config = {"delta.enableRowTracking": "true", **DV}
    dl.write_table(path, base(range(20)), configuration=config)
    t = dl.DeltaTable(path)
    t.update({"v": "v * 2"}, "id < 3")  # materialized row id columns in the new file
    dl.DeltaTable(path).delete("id = 10")
    dl.write_table(path, base(range(20, 25)), mode="append")
    return [i for i in range(25) if i != 10]


@case("in-commit-timestamps", "inCommitTimestamp")
def _ict(path: Path) -> list[int]:
    dl.write_table(path, base(range(5)), configuration={"delta.enableInCommitTimestamps": "true"})
    dl.write_table(path, base(range(5, 10)), mode="append")
    dl.DeltaTable(path).delete("id = 0")
    return list(range(1, 10))


@case("change-data-feed", "changeDataFeed")
def _cdf(path: Path) -> list[int]:
    dl.write_table(path, base(range(10)), configuration={"delta.enableChangeDataFeed": "true"})
    t = dl.DeltaTable(path)
    t.update({"s": "'changed'"}, "id = 1")  # copy-on-write: a cdc file under _change_data
    dl.DeltaTable(path).delete("id = 2")
    assert (path / "_change_data").is_dir()
    return [i for i in range(10) if i != 2]


@case("timestamp-ntz", "timestampNtz")
def _ntz(path: Path) -> list[int]:
    stamps = [dt.datetime(2021, 11, 18, 2, 30, 0, 123456), dt.datetime(1900, 1, 1), None]
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "ntz": pa.array(stamps, pa.timestamp("us")),
            "pntz": pa.array(stamps, pa.timestamp("us")),
        }
    )
    dl.write_table(path, data, partition_by=["pntz"])
    return [1, 2, 3]


@case("type-widening", "typeWidening")
def _widening(path: Path) -> list[int]:
    def data(ids: list[int]) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "i": pa.array([i * 1000 for i in ids], pa.int32()),
                "f": pa.array([i / 4 for i in ids], pa.float32()),
                "sh": pa.array(ids, pa.int16()),
                "dec": pa.array([Decimal(i) / 10 for i in ids], pa.decimal128(5, 1)),
                "d": pa.array([dt.date(2026, 1, 1 + i) for i in ids]),
            }
        )

    dl.write_table(path, data([1, 2]), configuration={"delta.enableTypeWidening": "true"})
    t = dl.DeltaTable(path)
    t.alter.change_column_type("i", "long")
    t.alter.change_column_type("f", "double")
    t.alter.change_column_type("sh", "double")
    t.alter.change_column_type("dec", "decimal(12,3)")
    t.alter.change_column_type("d", "timestamp_ntz")
    wide = pa.table(
        {
            "id": pa.array([3], pa.int64()),
            "i": pa.array([2**40], pa.int64()),
            "f": pa.array([1e300], pa.float64()),
            "sh": pa.array([0.5], pa.float64()),
            "dec": pa.array([Decimal("123456789.123")], pa.decimal128(12, 3)),
            "d": pa.array([dt.datetime(2026, 2, 1, 12)], pa.timestamp("us")),
        }
    )
    dl.write_table(path, wide, mode="append")
    return [1, 2, 3]


@case("optimize-compact-and-z-order", "deletionVectors")
def _optimize(path: Path) -> list[int]:
    dl.write_table(path, base(range(5)), configuration=DV)
    for start in range(5, 30, 5):
        dl.write_table(path, base(range(start, start + 5)), mode="append")
    dl.DeltaTable(path).delete("id = 6")
    dl.DeltaTable(path).optimize.compact()
    for start in range(30, 40, 5):
        dl.write_table(path, base(range(start, start + 5)), mode="append")
    dl.DeltaTable(path).optimize.z_order(["v", "id"])
    return [i for i in range(40) if i != 6]


@case("merge-update-copy-on-write")
def _copy_on_write(path: Path) -> list[int]:
    dl.write_table(path, base(range(20)), partition_by=["part"])
    dl.DeltaTable(path).update({"v": "v + 1"}, "id % 4 = 0")
    (
        dl.DeltaTable(path)
        .merge(base(range(15, 25)), "target.id = source.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("target.id < 2")
        .execute()
    )
    return list(range(2, 25))


@case("identity-generated-check-constraint", "identityColumns", "generatedColumns")
def _writer_features(path: Path) -> list[int]:
    identity = {"delta.identity.start": "10", "delta.identity.step": "5"}
    schema = pa.schema(
        [
            pa.field("key", pa.int64(), metadata=identity),
            pa.field("id", pa.int64()),
            pa.field("twice", pa.int64(), metadata={"delta.generationExpression": "id * 2"}),
        ]
    )
    dl.DeltaTable.create(path, schema)
    dl.DeltaTable(path).alter.add_constraint({"positive": "id > 0"})
    dl.write_table(path, pa.table({"id": pa.array([1, 2, 3], pa.int64())}), mode="append")
    dl.write_table(path, pa.table({"id": pa.array([4], pa.int64())}), mode="append")
    assert "checkConstraints" in features_of(path)
    assert rows_by_id(path) == [
        {"key": 10 + 5 * i, "id": i + 1, "twice": 2 * (i + 1)} for i in range(4)
    ]
    return [1, 2, 3, 4]


@case("vacuum-protocol-check", "vacuumProtocolCheck")
def _vacuum_check(path: Path) -> list[int]:
    dl.DeltaTable.create(path, base([]).schema, features=["vacuumProtocolCheck"])
    dl.write_table(path, base(range(8)), mode="append")
    dl.write_table(path, base(range(3)), mode="overwrite")
    t = dl.DeltaTable(path)
    assert t.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    return [0, 1, 2]


@case("clustering-domain-metadata", "clustering", "domainMetadata")
def _clustered(path: Path) -> list[int]:
    dl.write_table(path, base(range(10)), clustering_columns=["id"], configuration=DV)
    t = dl.DeltaTable(path)
    t.alter.set_domain_metadata("app.settings", '{"owner": "tests"}')
    t.alter.cluster_by(["v", "s"])
    dl.write_table(path, base(range(10, 20)), mode="append")
    dl.DeltaTable(path).delete("id = 11")
    dl.DeltaTable(path).optimize.compact(full=True)
    return [i for i in range(20) if i != 11]


@case("nested-struct-array-map")
def _nested(path: Path) -> list[int]:
    dl.write_table(path, nested(range(12)))
    return list(range(12))


@case("restore")
def _restore(path: Path) -> list[int]:
    dl.write_table(path, base(range(6)), configuration=DV)
    dl.write_table(path, base(range(6, 9)), mode="append")
    dl.DeltaTable(path).delete("id < 4")
    dl.write_table(path, base(range(100, 102)), mode="overwrite")
    dl.DeltaTable(path).restore(1)  # the rows after the append, before the delete
    return list(range(9))


@case("append-only-invariants-column-defaults", "appendOnly", "invariants", "allowColumnDefaults")
def _append_only(path: Path) -> list[int]:
    invariant = json.dumps({"expression": {"expression": "id < 100"}})
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={"delta.invariants": invariant}),
            pa.field("status", pa.string(), metadata={"CURRENT_DEFAULT": "'new'"}),
            pa.field("n", pa.int32(), metadata={"CURRENT_DEFAULT": "40 + 2"}),
        ]
    )
    dl.DeltaTable.create(path, schema, configuration={"delta.appendOnly": "true"})
    dl.write_table(path, pa.table({"id": pa.array([1, 2], pa.int64())}), mode="append")
    explicit = pa.table({"id": pa.array([3], pa.int64()), "status": ["done"]})
    dl.write_table(path, explicit, mode="append")
    assert rows_by_id(path) == [
        {"id": 1, "status": "new", "n": 42},
        {"id": 2, "status": "new", "n": 42},
        {"id": 3, "status": "done", "n": 42},
    ]
    return [1, 2, 3]


def _iceberg(path: Path, version: int) -> list[int]:
    # Partition values also in the data files ("Writer Requirements for IcebergCompatV2").
    data = pa.table(
        {
            "p": pa.array(["x", "y", None, "x"]),
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "d": pa.array(
                [Decimal("1.25"), None, Decimal("-3.50"), Decimal(0)], pa.decimal128(9, 2)
            ),
        }
    )
    if version == 2:
        lists = [["a"], ["b", "c"], [], None]
        data = data.append_column("tags", pa.array(lists, pa.list_(pa.string())))
    config = {f"delta.enableIcebergCompatV{version}": "true", "delta.columnMapping.mode": "name"}
    dl.write_table(path, data, partition_by=["p"], configuration=config)
    dl.write_table(
        path, data.slice(0, 1).set_column(1, "id", pa.array([5], pa.int64())), mode="append"
    )
    return [1, 2, 3, 4, 5]


@case("iceberg-compat-v1", "icebergCompatV1", "columnMapping")
def _iceberg_v1(path: Path) -> list[int]:
    return _iceberg(path, 1)


@case("iceberg-compat-v2", "icebergCompatV2", "columnMapping")
def _iceberg_v2(path: Path) -> list[int]:
    return _iceberg(path, 2)


@case("combo-cdf-dv-row-tracking-merge", "changeDataFeed", "deletionVectors", "rowTracking")
def _combo_cdf(path: Path) -> list[int]:
    config = {"delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true", **DV}
    dl.write_table(path, base(range(30)), partition_by=["part"], configuration=config)
    (
        dl.DeltaTable(path)
        .merge(base(range(25, 35)), "target.id = source.id")
        .when_matched_update({"v": "source.v * 10"})
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("target.id % 4 = 1")
        .execute()
    )
    dl.DeltaTable(path).update({"s": "'u'"}, "id > 30")
    dl.DeltaTable(path).optimize.compact()
    return [i for i in range(35) if i >= 25 or i % 4 != 1]


@case("combo-name-mapping-partitioned-by-every-type-dv", "columnMapping", "deletionVectors")
def _combo_partitions(path: Path) -> list[int]:
    # The partition columns lead the schema: see test_duckdb_disagreements.py for why.
    _partitioned(path.with_name("plain"))
    data = our_table(path.with_name("plain"))
    data = data.select(["ps", "pi", "pd", "pt", "pb", "id", "v"])
    config = {"delta.columnMapping.mode": "name", **DV}
    dl.write_table(path, data, partition_by=["ps", "pi", "pd", "pt", "pb"], configuration=config)
    dl.DeltaTable(path).delete("id = 2")
    return [1, 3, 4, 5]


def _combo_everything(path: Path, mode: str, kind: str) -> list[int]:
    config = {
        "delta.columnMapping.mode": mode,
        "delta.enableRowTracking": "true",
        "delta.enableInCommitTimestamps": "true",
        "delta.enableChangeDataFeed": "true",
        **DV,
    }
    dl.write_table(path, base(range(20)), partition_by=["part"], configuration=config)
    t = dl.DeltaTable(path)
    t.alter.add_feature("v2Checkpoint")
    t.alter.rename_column("v", "value")
    dl.DeltaTable(path).delete("id % 7 = 0")
    dl.DeltaTable(path).update({"value": "value + 1"}, "id = 3")
    t = dl.DeltaTable(path)
    t.create_checkpoint(kind, sidecars=1, classic_copy=False)
    drop_commits_through(path, t.version())
    start = t.version() + 1
    dl.write_table(
        path, base(range(20, 25)).rename_columns(["part", "id", "s", "value"]), mode="append"
    )
    dl.DeltaTable(path).delete("id = 21")
    dl.DeltaTable(path).compact_logs(start, start + 1)
    return [i for i in range(25) if i % 7 and i != 21]


for _mode, _kind in (("name", "v2-parquet"), ("id", "v2-json")):

    def _build_combo(path: Path, mode: str = _mode, kind: str = _kind) -> list[int]:
        return _combo_everything(path, mode, kind)

    case(
        f"combo-{_mode}-mapping-dv-row-tracking-ict-cdf-{_kind}-checkpoint-compaction",
        "columnMapping",
        "deletionVectors",
        "rowTracking",
        "inCommitTimestamp",
        "v2Checkpoint",
        "changeDataFeed",
    )(_build_combo)


@case("combo-id-mapping-type-widening-dv", "columnMapping", "typeWidening", "deletionVectors")
def _combo_widening(path: Path) -> list[int]:
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "n": pa.array([1, 2, 3], pa.int32())})
    config = {"delta.columnMapping.mode": "id", "delta.enableTypeWidening": "true", **DV}
    dl.write_table(path, data, configuration=config)
    t = dl.DeltaTable(path)
    t.alter.change_column_type("n", "long")
    t.alter.rename_column("n", "wide n")
    wide = pa.table({"id": pa.array([4], pa.int64()), "wide n": pa.array([2**40], pa.int64())})
    dl.write_table(path, wide, mode="append")
    dl.DeltaTable(path).delete("id = 2")
    return [1, 3, 4]
