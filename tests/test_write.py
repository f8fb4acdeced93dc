"""Writing tables with `dl.write_table`: modes, inputs, partitions, statistics, concurrency,
and the `deltalake` package as the independent reader (and writer) of the same tables."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import deltalake
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import deltalog as dl
import processes

UTC = dt.timezone.utc


def data(ids: list[int], parts: list[str | None]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(parts, pa.string()),
            "ts": pa.array(
                [dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i) for i in ids],
                pa.timestamp("ns", tz="UTC"),
            ),
            "x": pa.array([i / 2 for i in ids], pa.float64()),
        }
    )


def rows(table: Any) -> list[dict[str, Any]]:
    return sorted(pa.table(table).to_pylist(), key=lambda r: r["id"])


def both(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    ours = rows(dl.DeltaTable(path).to_pyarrow_table())
    theirs = rows(deltalake.DeltaTable(str(path)).to_pyarrow_table())
    return ours, theirs


def test_create_append_overwrite_read_by_both(tmp_path: Path) -> None:
    path = tmp_path / "t"
    assert dl.write_table(path, data([1, 2, 3], ["a", "b", "a"]), partition_by=["part"]) == 0
    assert dl.write_table(path, data([4], ["c"]), mode="append") == 1
    ours, theirs = both(path)
    assert ours == theirs
    assert [r["id"] for r in ours] == [1, 2, 3, 4]
    t = dl.DeltaTable(path)
    assert t.metadata().partition_columns == ["part"]
    assert t.protocol().min_writer_version == 2
    history = t.history()
    assert [h["operation"] for h in history] == ["WRITE", "CREATE TABLE AS SELECT"]
    assert history[0]["isBlindAppend"] is True
    assert dl.write_table(path, data([9], [None]), mode="overwrite") == 2
    ours, theirs = both(path)
    assert ours == theirs == rows(data([9], [None]).cast(ours_schema(path)))
    assert dl.DeltaTable(path).history()[0]["operationParameters"]["mode"] == "Overwrite"


def ours_schema(path: Path) -> pa.Schema:
    return dl.DeltaTable(path).to_pyarrow_table().schema


def test_error_and_ignore_modes(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, data([1], ["a"]))
    with pytest.raises(ValueError, match="already exists"):
        dl.write_table(path, data([2], ["a"]))
    assert dl.write_table(path, data([2], ["a"]), mode="ignore") == 0
    assert [r["id"] for r in both(path)[0]] == [1]
    with pytest.raises(ValueError, match="unknown mode"):
        dl.write_table(path, data([2], ["a"]), mode="upsert")  # type: ignore[arg-type]


def test_inputs_pandas_polars_batches_and_delta_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pd.DataFrame({"id": [1, 2], "name": ["a", "b"]}))
    dl.write_table(path, pl.DataFrame({"id": [3], "name": ["c"]}), mode="append")
    batch = pa.record_batch({"id": pa.array([4], pa.int64()), "name": ["d"]})
    dl.write_table(path, batch, mode="append")
    t = dl.DeltaTable(path)
    dl.write_table(t, pa.table({"id": [5], "name": ["e"]}).to_reader(), mode="append")
    assert t.version() == 3  # the DeltaTable object was updated
    assert [r["id"] for r in rows(t.to_pyarrow_table())] == [1, 2, 3, 4, 5]
    assert rows(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == rows(t.to_pyarrow_table())
    with pytest.raises(TypeError):
        dl.write_table(path, [1, 2, 3], mode="append")


def test_all_columns_as_partition_columns_is_refused(tmp_path: Path) -> None:
    """A data file must store a column (Delta Spark: "Cannot use all columns for partition
    columns"); nothing is written."""
    path = tmp_path / "t"
    with pytest.raises(dl.DeltaError, match="all columns as partition columns"):
        dl.write_table(path, pa.table({"a": [1, 2]}), partition_by=["a"])
    assert not (path / "_delta_log").exists() or not list((path / "_delta_log").iterdir())
    assert not list(path.rglob("*.parquet"))


def test_partition_values_with_special_characters(tmp_path: Path) -> None:
    path = tmp_path / "t"
    parts = ["a/b", "c:d e", "100%", "x=y", None, "ünï"]
    dl.write_table(path, data(list(range(6)), parts), partition_by="part")
    ours, theirs = both(path)
    assert ours == theirs
    assert [r["part"] for r in ours] == parts
    values = sorted(
        (
            json.dumps(v)
            for v in dl.DeltaTable(path).get_add_actions().column("partition_values").to_pylist()
        ),
    )
    assert len(values) == 6


def test_statistics_drive_skipping_and_match_the_data(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, data([1, 2, 3], ["a", "a", "a"]))
    dl.write_table(path, data([10, 20], ["b", "b"]), mode="append")
    t = dl.DeltaTable(path)
    adds = t.get_add_actions(flatten=True).sort_by("min.id")
    assert adds.column("min.id").to_pylist() == [1, 10]
    assert adds.column("max.id").to_pylist() == [3, 20]
    assert adds.column("num_records").to_pylist() == [3, 2]
    assert adds.column("null_count.part").to_pylist() == [0, 0]
    assert t.scan(filter=dl.col("id") > 5).num_files == 1
    assert t.scan(filter=dl.col("ts") < dt.datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)).num_files == 1
    # deltalake reads the same statistics.
    theirs = deltalake.DeltaTable(str(path)).get_add_actions(flatten=True)
    assert sorted(pa.table(theirs).column("min.id").to_pylist()) == [1, 10]


def test_appending_to_a_deltalake_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), data([1, 2], ["a", "b"]), partition_by=["part"])
    dl.write_table(path, data([3], ["a"]), mode="append")
    ours, theirs = both(path)
    assert ours == theirs
    assert [r["id"] for r in ours] == [1, 2, 3]


def test_bad_writes_leave_the_table_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, data([1], ["a"]), configuration={"delta.appendOnly": "true"})
    with pytest.raises(ValueError, match="column"):
        dl.write_table(path, pa.table({"id": [2], "nope": [1]}), mode="append")
    with pytest.raises(ValueError, match="does not fit"):
        dl.write_table(path, pa.table({"id": ["not a number"]}), mode="append")
    with pytest.raises(ValueError, match="append-only"):
        dl.write_table(path, data([3], ["a"]), mode="overwrite")
    with pytest.raises(ValueError, match="partitioned by"):
        dl.write_table(path, data([3], ["a"]), mode="append", partition_by=["part"])
    t = dl.DeltaTable(path)
    assert t.version() == 0
    assert [r["id"] for r in rows(t.to_pyarrow_table())] == [1]


def test_features_deltalog_cannot_write_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), data([1], ["a"]))
    # Version 1 upgrades the protocol to a writer feature deltalog does not know.
    upgrade = {
        "protocol": {
            "minReaderVersion": 1,
            "minWriterVersion": 7,
            "writerFeatures": ["someFutureWriterFeature"],
        }
    }
    (path / "_delta_log" / f"{1:020}.json").write_text(json.dumps(upgrade) + "\n")
    with pytest.raises(dl.UnsupportedFeatureError) as err:
        dl.write_table(path, data([2], ["a"]), mode="append")
    assert "someFutureWriterFeature" in err.value.features
    assert dl.DeltaTable(path).version() == 1


def _append_many(path: str, worker: int, count: int) -> None:
    for i in range(count):
        dl.write_table(path, pa.table({"worker": [worker], "i": [i]}), mode="append")


def test_concurrent_appends_each_land_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(
        path, pa.table({"worker": pa.array([], pa.int64()), "i": pa.array([], pa.int64())})
    )
    workers, count = 4, 50
    ctx = processes.context()
    procs = [ctx.Process(target=_append_many, args=(str(path), w, count)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
        assert p.exitcode == 0
    t = dl.DeltaTable(path)
    assert t.version() == workers * count
    got = sorted((r["worker"], r["i"]) for r in t.to_pyarrow_table().to_pylist())
    assert got == [(w, i) for w in range(workers) for i in range(count)]
    versions = sorted(h["version"] for h in t.history())
    assert versions == list(range(workers * count + 1))


def test_idempotent_writes_with_app_transactions(tmp_path: Path) -> None:
    path = tmp_path / "t"
    props = dl.CommitProperties(app_id="job-7", app_version=1, custom_metadata={"run": "a"})
    assert dl.write_table(path, data([1], ["a"]), commit_properties=props) == 0
    # The same app version again is skipped; a later one is written.
    assert dl.write_table(path, data([1], ["a"]), mode="append", commit_properties=props) == 0
    later = dl.CommitProperties(app_id="job-7", app_version=2)
    assert dl.write_table(path, data([2], ["a"]), mode="append", commit_properties=later) == 1
    t = dl.DeltaTable(path)
    assert t.transactions() == {"job-7": 2}
    assert [r["id"] for r in rows(t.to_pyarrow_table())] == [1, 2]
    assert t.history()[-1]["run"] == "a"
    assert deltalake.DeltaTable(str(path)).transaction_version("job-7") == 2
    with pytest.raises(ValueError):
        dl.CommitProperties(app_id="x")


def test_create_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("v", pa.decimal128(10, 2))])
    t = dl.DeltaTable.create(path, schema, partition_by=["day"], name="events")
    assert t.version() == 0
    assert t.metadata().name == "events"
    assert t.history()[0]["operation"] == "CREATE TABLE"
    assert t.to_pyarrow_table().num_rows == 0
    assert t.schema().names == ["id", "day", "v"]
    with pytest.raises(ValueError, match="already exists"):
        dl.DeltaTable.create(path, schema)
    assert dl.DeltaTable.create(path, schema, mode="ignore").version() == 0
    assert deltalake.DeltaTable(str(path)).schema().to_arrow().names == ["id", "day", "v"]


def test_schema_merge_adds_columns(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": [1]}))
    with pytest.raises(ValueError, match="schema_mode"):
        dl.write_table(path, pa.table({"id": [2], "name": ["b"]}), mode="append")
    v = dl.write_table(
        path, pa.table({"id": [2], "name": ["b"]}), mode="append", schema_mode="merge"
    )
    assert v == 1
    t = dl.DeltaTable(path)
    assert t.schema().names == ["id", "name"]
    assert rows(t.to_pyarrow_table()) == [{"id": 1, "name": None}, {"id": 2, "name": "b"}]
    assert rows(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == rows(t.to_pyarrow_table())
    assert t.metadata().id == dl.DeltaTable(path, version=0).metadata().id
    with pytest.raises(ValueError, match="schema_mode"):
        dl.write_table(path, pa.table({"id": [3]}), mode="append", schema_mode="overwrite")  # type: ignore[arg-type]


def test_writing_from_an_iterator_that_reads_deltalog(tmp_path: Path) -> None:
    """The data of a write may come from Python code that itself reads with deltalog (a
    generator over another table's batches, a write_files input built from a scan): the
    nested native calls run, rather than panicking on a runtime within a runtime."""
    source = tmp_path / "source"
    dl.write_table(source, pa.table({"id": pa.array(range(1000), pa.int64())}))
    scan = dl.DeltaTable(source).scan()

    def batches() -> Any:
        yield from dl.DeltaTable(source).scan(filter=dl.col("id") >= 500).to_batches()

    copy = tmp_path / "copy"
    dl.write_table(copy, pa.RecordBatchReader.from_batches(scan.schema, batches()))
    got = dl.DeltaTable(copy).to_pyarrow_table().column("id").to_pylist()
    assert sorted(got) == list(range(500, 1000))
    adds = dl.write_files(
        dl.DeltaTable(copy), pa.RecordBatchReader.from_batches(scan.schema, batches())
    )
    assert (
        sum(a["add"]["stats"] and json.loads(a["add"]["stats"])["numRecords"] for a in adds) == 500
    )
