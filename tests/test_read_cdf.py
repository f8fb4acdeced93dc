"""Change data feed: `load_cdf` / `scan_cdf` against the golden `deltalog-getChanges` table,
against tables whose changes the `deltalake` package wrote (with `cdc` files for deletes and
updates), and against hand-built deletion-vector updates."""

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
from conftest import LogWriter, add, commit_info, corpus_table, metadata, protocol, remove
from deltalog import _native

CDF_COLUMNS = ["_change_type", "_commit_version", "_commit_timestamp"]


def _rows(table: pa.Table, drop: tuple[str, ...] = ("_commit_timestamp",)) -> list[dict[str, Any]]:
    rows = table.drop_columns([c for c in drop if c in table.column_names]).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


CDF_ON = {"delta.enableChangeDataFeed": "true"}


def test_golden_get_changes_is_refused_without_the_property() -> None:
    # Delta Spark wrote this log without delta.enableChangeDataFeed: its changes were never
    # recorded, so a change feed over it would be made up (as Delta Spark and deltalake refuse).
    t = dl.DeltaTable(corpus_table("deltalog-getChanges/delta"))
    with pytest.raises(dl.ChangeDataNotRecordedError) as info:
        t.scan_cdf()
    assert (info.value.start, info.value.end, info.value.version) == (0, 2, 0)
    assert "delta.enableChangeDataFeed" in str(info.value)
    with pytest.raises(dl.ChangeDataNotRecordedError):
        t.load_cdf(starting_version=1)


def test_golden_get_changes_plan(tmp_path: Path) -> None:
    # The golden log with the property set in its metaData. Version 0 adds fake/path/1;
    # version 1 has a cdc action (fake/path/2) and removes fake/path/1: only the cdc file
    # counts; version 2 has a txn only. The data files do not exist (the table is a log-only
    # fixture), so reading names the first missing file.
    source = Path(corpus_table("deltalog-getChanges/delta")) / "_delta_log"
    log = tmp_path / "_delta_log"
    log.mkdir()
    for f in sorted(source.glob("*.json")):
        lines = []
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                action["metaData"]["configuration"] = CDF_ON
            lines.append(json.dumps(action))
        (log / f.name).write_text("\n".join(lines) + "\n")
    t = dl.DeltaTable(tmp_path)
    scan = t.scan_cdf()
    assert scan.schema.names == ["part", "id", *CDF_COLUMNS]
    tasks = scan.tasks()
    assert [(x.path, x.change["changeType"], x.change["commitVersion"]) for x in tasks] == [
        ("fake/path/1", "insert", 0),
        ("fake/path/2", None, 1),
    ]
    assert tasks[1].partition_values == {"partition_foo": "partition_bar"}
    assert tasks[0].change["commitTimestamp"] <= tasks[1].change["commitTimestamp"]
    assert [x.path for x in t.scan_cdf(starting_version=1).tasks()] == ["fake/path/2"]
    assert t.scan_cdf(starting_version=2).tasks() == []
    with pytest.raises(dl.DataFileNotFoundError) as info:
        t.load_cdf().read_all()
    assert info.value.file == "fake/path/1"


def test_ranges_where_changes_were_not_recorded(tmp_path: Path) -> None:
    """Only versions whose metadata had the property may be read; the error names the first
    version of the range that had not, wherever in the range the property changed."""
    root = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    dl.write_table(root, data)  # 0: not recorded
    dl.write_table(root, data, mode="append")  # 1
    t = dl.DeltaTable(root)
    t.alter.set_properties(CDF_ON)  # 2: recorded from here
    dl.write_table(root, data, mode="append")  # 3
    t = dl.DeltaTable(root)
    t.delete("id = 1")  # 4: a delete with cdc files
    t.alter.set_properties({"delta.enableChangeDataFeed": "false"})  # 5: off again
    dl.write_table(root, data, mode="append")  # 6
    t = dl.DeltaTable(root)
    # An UPDATE/DELETE on the unrecorded versions would show made-up inserts and deletes.
    for start, end, first_bad in [(0, 6, 0), (1, 3, 1), (2, 6, 5), (5, 5, 5), (3, 6, 5)]:
        with pytest.raises(dl.ChangeDataNotRecordedError) as info:
            t.load_cdf(starting_version=start, ending_version=end)
        assert (info.value.start, info.value.end, info.value.version) == (start, end, first_bad)
    got = t.load_cdf(starting_version=2, ending_version=4).read_all()
    # Version 3 appended two rows; version 4 deleted the three rows with id 1.
    assert sorted(got.column("_commit_version").to_pylist()) == [3, 3, 4, 4, 4]
    # deltalake agrees on what is refused and on the content of the recorded range.
    peer = deltalake.DeltaTable(str(root))
    with pytest.raises(Exception, match=r"(?i)change ?data"):
        pa.table(peer.load_cdf(starting_version=0, ending_version=3))
    theirs = pa.table(peer.load_cdf(starting_version=2, ending_version=4))
    assert _rows(got) == _rows(theirs.select(got.column_names))


@pytest.fixture(scope="module")
def cdf_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cdf") / "t"
    data = pa.table({"id": list(range(10)), "p": ["a", "b"] * 5})
    deltalake.write_deltalake(
        str(path), data, partition_by=["p"], configuration={"delta.enableChangeDataFeed": "true"}
    )
    table = deltalake.DeltaTable(str(path))
    table.delete("id < 3")  # v1: cdc files with deletes
    table.update({"id": "id + 100"}, predicate="id = 9")  # v2: pre/post images
    deltalake.write_deltalake(str(path), pa.table({"id": [50], "p": ["c"]}), mode="append")  # v3
    return path


def _deltalake_cdf(path: Path, **kwargs: Any) -> pa.Table:
    theirs = pa.table(deltalake.DeltaTable(str(path)).load_cdf(**kwargs))
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("p", pa.string()),
            ("_change_type", pa.string()),
            ("_commit_version", pa.int64()),
            ("_commit_timestamp", pa.timestamp("ms")),
        ]
    )
    return theirs.select(schema.names).cast(schema)


def test_matches_deltalake(cdf_table: Path) -> None:
    ours = dl.DeltaTable(cdf_table).load_cdf().read_all()
    assert ours.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    assert ours.schema.field("_commit_version").type == pa.int64()
    assert _rows(ours) == _rows(_deltalake_cdf(cdf_table, starting_version=0))
    kinds = set(ours.column("_change_type").to_pylist())
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}
    # "_commit_timestamp": the commit file's modification time here (no in-commit
    # timestamps), the timestamp time travel and history() use. (deltalake reports
    # commitInfo.timestamp, the writer's clock, which can differ by a millisecond.)
    history = {h["version"]: h["timestamp"] for h in dl.DeltaTable(cdf_table).history()}
    for r in ours.to_pylist():
        ms = r["_commit_timestamp"].timestamp() * 1000
        assert round(ms) == history[r["_commit_version"]]


def test_version_and_time_ranges(cdf_table: Path) -> None:
    t = dl.DeltaTable(cdf_table)
    part = t.load_cdf(starting_version=1, ending_version=2).read_all()
    assert set(part.column("_commit_version").to_pylist()) == {1, 2}
    history = {h["version"]: h["timestamp"] for h in t.history()}
    by_time = t.load_cdf(starting_timestamp=history[2], ending_timestamp=history[3]).read_all()
    assert set(by_time.column("_commit_version").to_pylist()) == {2, 3}
    as_datetime = dt.datetime.fromtimestamp(history[3] / 1000, tz=dt.timezone.utc)
    latest = t.load_cdf(starting_timestamp=as_datetime).read_all()
    assert set(latest.column("_commit_version").to_pylist()) == {3}
    with pytest.raises(ValueError, match="after its end"):
        t.load_cdf(starting_version=3, ending_version=1)
    with pytest.raises(dl.VersionNotFoundError):
        t.load_cdf(ending_version=99)


def test_columns_and_filters(cdf_table: Path) -> None:
    t = dl.DeltaTable(cdf_table)
    got = t.load_cdf(columns=["id"], filter=dl.col("p") == "b").read_all()
    assert got.column_names == ["id", *CDF_COLUMNS]
    full = t.load_cdf().read_all()
    expected = [r for r in _rows(full) if r["p"] == "b"]
    assert _rows(got) == [{k: v for k, v in r.items() if k != "p"} for r in expected]
    with pytest.raises(ValueError, match="row"):
        t.scan(with_row_tracking=True)  # not enabled on this table either


def test_deletion_vector_updates_are_deletes_of_the_changed_rows(tmp_path: Path) -> None:
    """A DELETE with deletion vectors removes the file and re-adds it with a larger vector:
    only the newly deleted rows are changes."""
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(6), pa.int64())}), root / "f.parquet")
    size = (root / "f.parquet").stat().st_size
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
        }
    )

    def inline(rows: list[int]) -> dict[str, Any]:
        data = _native.dv_serialize(rows)
        return {
            "storageType": "i",
            "pathOrInlineDv": _native.z85_encode(data),
            "sizeInBytes": len(data),
            "cardinality": len(rows),
        }

    log = LogWriter(root)
    p = protocol(3, 7, ["deletionVectors"], ["deletionVectors"])
    log.commit(
        0,
        [
            commit_info(),
            p,
            metadata(schema_string=schema, configuration=CDF_ON),
            add("f.parquet", size=size),
        ],
    )
    log.commit(
        1,
        [
            commit_info("DELETE"),
            remove("f.parquet", size=size),
            add("f.parquet", size=size, deletionVector=inline([1])),
        ],
    )
    log.commit(
        2,
        [
            commit_info("DELETE"),
            remove("f.parquet", size=size, deletionVector=inline([1])),
            add("f.parquet", size=size, deletionVector=inline([1, 4, 5])),
        ],
    )
    changes = dl.DeltaTable(root).load_cdf().read_all()
    assert _rows(changes) == _rows(
        pa.table(
            {
                "id": pa.array([0, 1, 2, 3, 4, 5, 1, 4, 5], pa.int64()),
                "_change_type": ["insert"] * 6 + ["delete"] * 3,
                "_commit_version": pa.array([0] * 6 + [1, 2, 2], pa.int64()),
            }
        )
    )
    assert sorted(dl.DeltaTable(root).to_pyarrow_table().column("id").to_pylist()) == [0, 2, 3]


def test_in_commit_timestamps_are_the_commit_timestamps(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), root / "f.parquet")
    size = (root / "f.parquet").stat().st_size
    config = {
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": "0",
        "delta.inCommitTimestampEnablementTimestamp": "1700000000000",
        **CDF_ON,
    }
    log = LogWriter(root)
    log.commit(
        0,
        [
            # Null action fields are no actions (writers emit them in one-action rows).
            {"add": None, **commit_info(inCommitTimestamp=1_700_000_000_000)},
            protocol(3, 7, [], ["inCommitTimestamp"]),
            metadata(configuration=config),
            {"remove": None, "cdc": None, **add("f.parquet", size=size)},
        ],
    )
    (row,) = dl.DeltaTable(root).load_cdf(columns=["id"]).read_all().to_pylist()
    assert row["_commit_timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.timezone.utc)
