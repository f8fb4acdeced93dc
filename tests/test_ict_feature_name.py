"""The name of the In-Commit Timestamps table feature: deltalog writes ``inCommitTimestamp`` and
reads ``inCommitTimestamps`` as the same feature.

The stored protocol text ("In-Commit Timestamps": "The feature `inCommitTimestamps` must exist
in the table `protocol`'s `writerFeatures`") says ``inCommitTimestamps``; Delta Spark, delta-rs,
delta-kernel-rs and the Unity Catalog Delta API say ``inCommitTimestamp`` (delta-io/delta issue
#4466). deltalog used to write the plural, and no other engine could then write its tables
(see :data:`deltalog.protocol.features.IN_COMMIT_TIMESTAMP`). Here:

* what deltalog writes, on every path that adds the feature;
* independent evidence that the name matters: DuckDB's delta extension (delta-kernel-rs)
  appends to a deltalog table with in-commit timestamps, and refuses the plural; ``deltalake``
  reads the table and knows the feature by this name;
* tables that list the plural (written by an older deltalog, or by hand after the stored text)
  are read, written and altered, and keep exactly one name for the feature;
* a catalog ratifies a catalog-managed version 0 with either name.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from conftest import BASE_MS, LogWriter, commit_info, metadata, protocol
from deltalog.catalog.ratification import ProposalError, TableState, check_proposal
from deltalog.exceptions import InvalidArgumentError
from deltalog.protocol import features
from deltalog.table.delta_table import Protocol

NEW, OLD = "inCommitTimestamp", "inCommitTimestamps"
ICT_ON = {"delta.enableInCommitTimestamps": "true"}
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(path: Path, version: int | None = None) -> list[int]:
    t = dl.DeltaTable(str(path), version=version)
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def all_features(path: Path) -> set[str]:
    p = dl.DeltaTable(str(path)).protocol()
    return set(features.reader_features_of(p) | features.writer_features_of(p))


def ict_names(path: Path) -> set[str]:
    return all_features(path) & features.IN_COMMIT_TIMESTAMP_NAMES


def log_protocols(path: Path) -> list[dict[str, Any]]:
    """Every protocol action in the table's JSON commits and checksum files, in order."""
    found = []
    for f in sorted((path / "_delta_log").iterdir()):
        if f.suffix == ".json":
            for line in f.read_text().splitlines():
                action = json.loads(line)
                if "protocol" in action:
                    found.append(action["protocol"])
        elif f.suffix == ".crc":
            found.append(json.loads(f.read_text())["protocol"])
    return found


def commit_infos(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(f.read_text().splitlines()[0])["commitInfo"]
        for f in sorted((path / "_delta_log").glob("*.json"))
    ]


def old_name_table(root: Path, name: str = OLD) -> Path:
    """A table with in-commit timestamps on from version 0, hand-written with ``name`` for the
    feature (the plural: as deltalog wrote it before, and as the stored spec words it). Its
    commit file's mtime is far from its in-commit timestamp, so reads that use the latter show
    it."""
    root.mkdir(parents=True, exist_ok=True)
    data = root / "part-0.parquet"
    pq.write_table(rows(1, 2), data)
    LogWriter(root).commit(
        0,
        [
            commit_info("CREATE TABLE", BASE_MS, inCommitTimestamp=BASE_MS, txnId="t0"),
            protocol(1, 7, writer_features=[name]),
            metadata(ICT_ON, schema_string=SCHEMA),
            {
                "add": {
                    "path": data.name,
                    "partitionValues": {},
                    "size": data.stat().st_size,
                    "modificationTime": BASE_MS,
                    "dataChange": True,
                }
            },
        ],
        mtime_ms=BASE_MS + 86_400_000,
    )
    return root


# ------------------------------------------------------------------------------------------------
# The registry
# ------------------------------------------------------------------------------------------------


def test_both_names_are_one_feature() -> None:
    assert features.IN_COMMIT_TIMESTAMP == NEW
    assert features.ALIASES == {OLD: NEW}
    assert features.canonical_name(OLD) == features.canonical_name(NEW) == NEW
    assert features.names_of(OLD) == features.names_of(NEW) == {NEW, OLD}
    assert features.names_of("deletionVectors") == {"deletionVectors"}
    # Adding the feature keeps a table's existing name; otherwise the new name.
    assert features.with_features({OLD}, [NEW]) == {OLD}
    assert features.with_features({NEW}, [OLD]) == {NEW}
    assert features.with_features({"appendOnly"}, [OLD]) == {"appendOnly", NEW}
    # Both names: readable, writable, active under either name.
    for listed in (NEW, OLD):
        p = Protocol(1, 7, None, [listed])
        features.check_readable(p)
        features.check_writable(p, "", {})
        for asked in (NEW, OLD):
            assert features.is_active(asked, p, ICT_ON)
            assert not features.is_active(asked, p, {})
        managed = Protocol(3, 7, ["catalogManaged"], ["catalogManaged", listed])
        features.check_writable(managed, through_catalog=True)
        assert features.min_protocol_for(["catalogManaged", listed])[3] == [
            "catalogManaged",
            listed,
        ]
    assert features.min_protocol_for(["catalogManaged"])[3] == ["catalogManaged", NEW]


def test_features_asked_for_by_either_name_are_added_as_inCommitTimestamp() -> None:
    for config, names in (
        (ICT_ON, ()),
        ({"delta.feature.inCommitTimestamps": "supported"}, ()),
        ({}, [OLD]),
        ({}, [OLD, NEW]),
    ):
        needed, _ = features.features_for_configuration(config, names)
        assert needed == {NEW}, (config, names)


# ------------------------------------------------------------------------------------------------
# What deltalog writes
# ------------------------------------------------------------------------------------------------


def test_new_tables_list_inCommitTimestamp(tmp_path: Path) -> None:
    for i, kwargs in enumerate(
        (
            {"configuration": ICT_ON},
            {"configuration": {**ICT_ON, "delta.feature.inCommitTimestamps": "supported"}},
            {"configuration": ICT_ON, "table_features": [OLD]},
        )
    ):
        path = tmp_path / f"t{i}"
        dl.write_table(str(path), rows(1), **kwargs)  # type: ignore[arg-type]
        assert ict_names(path) == {NEW}
        # The commit and its checksum file both.
        protocols = log_protocols(path)
        assert len(protocols) == 2
        assert all(p["writerFeatures"] == [NEW] for p in protocols), protocols


def test_enabling_on_an_existing_table_adds_inCommitTimestamp(tmp_path: Path) -> None:
    dl.write_table(str(tmp_path), rows(1))
    t = dl.DeltaTable(str(tmp_path))
    t.alter.set_properties(ICT_ON)
    assert ict_names(tmp_path) == {NEW}
    dl.write_table(str(tmp_path), rows(2), mode="append")
    assert commit_infos(tmp_path)[-1]["inCommitTimestamp"] > 0


# ------------------------------------------------------------------------------------------------
# Independent evidence: other engines
# ------------------------------------------------------------------------------------------------


def test_duckdb_delta_kernel_appends_to_a_deltalog_ict_table(tmp_path: Path) -> None:
    """delta-kernel-rs (DuckDB's delta extension) writes to a deltalog table with in-commit
    timestamps: its commit continues deltalog's timestamps and deltalog reads its row; deltalog
    then appends after the kernel's commit. The same table listing the plural is refused by the
    kernel, which is the bug this name fixes."""
    from duckdb_delta import connect, duck_table

    path = tmp_path / "t"
    dl.write_table(str(path), rows(1, 2), configuration=ICT_ON)
    con = connect()
    try:
        con.execute(f"ATTACH '{path}' AS d (TYPE delta)")
        con.execute("INSERT INTO d VALUES (3)")
        assert ids(path) == [1, 2, 3]
        infos = commit_infos(path)
        assert len(infos) == 2 and infos[1]["engineInfo"] == "DuckDB"
        assert infos[1]["inCommitTimestamp"] > infos[0]["inCommitTimestamp"]
        dl.write_table(str(path), rows(4), mode="append")
        infos = commit_infos(path)
        assert infos[2]["inCommitTimestamp"] > infos[1]["inCommitTimestamp"]
        assert sorted(duck_table(con, path).column("id").to_pylist()) == [1, 2, 3, 4]
        assert ict_names(path) == {NEW}

        # The plural (how deltalog wrote it before): the kernel does not know the feature.
        old = old_name_table(tmp_path / "old")
        con.execute(f"ATTACH '{old}' AS o (TYPE delta)")
        with pytest.raises(Exception, match="inCommitTimestamps"):
            con.execute("INSERT INTO o VALUES (3)")
    finally:
        con.close()


def test_deltalake_knows_the_feature_deltalog_writes(tmp_path: Path) -> None:
    """deltalake reads the table, and knows ``inCommitTimestamp`` as its own feature: an append
    either works (deltalog then reads deltalake's row) or is refused as a known feature that
    deltalake does not write (``[InCommitTimestamp]``, deltalake 1.6.6), never as the
    ``Unknown("inCommitTimestamps")`` the plural got."""
    path = tmp_path / "t"
    dl.write_table(str(path), rows(1, 2), configuration=ICT_ON)
    theirs = deltalake.DeltaTable(str(path)).to_pyarrow_table()
    assert sorted(theirs.column("id").to_pylist()) == [1, 2]
    try:
        deltalake.write_deltalake(str(path), rows(3), mode="append")
    except Exception as e:  # deltalake 1.6.6 writes no in-commit timestamps
        assert "InCommitTimestamp" in str(e) and "Unknown" not in str(e), e
        assert ids(path) == [1, 2]
    else:
        assert ids(path) == [1, 2, 3]
        assert ict_names(path) == {NEW}
    # The plural is an unknown feature to deltalake.
    old = old_name_table(tmp_path / "old")
    with pytest.raises(Exception, match=r'Unknown\("inCommitTimestamps"\)'):
        deltalake.write_deltalake(str(old), rows(3), mode="append")


def test_deltalog_appends_to_a_deltalake_ict_table(tmp_path: Path) -> None:
    """A table deltalake creates with in-commit timestamps, appended to by deltalog. deltalake
    1.6.6 cannot create one (it refuses the property, "Error parsing property"); the test then
    stops at that refusal, and checks the rest once deltalake creates such tables."""
    path = tmp_path / "t"
    try:
        deltalake.write_deltalake(str(path), rows(1), configuration=ICT_ON)
    except Exception as e:
        assert "delta.enableInCommitTimestamps" in str(e), e
        pytest.skip(f"deltalake {deltalake.__version__} creates no ICT table: {e}")
    theirs = log_protocols(path)[0]
    assert NEW in theirs["writerFeatures"] and OLD not in theirs["writerFeatures"]
    dl.write_table(str(path), rows(2), mode="append")
    assert ids(path) == [1, 2]
    assert ict_names(path) == {NEW}
    infos = commit_infos(path)
    assert infos[-1]["inCommitTimestamp"] > infos[-2]["inCommitTimestamp"]


# ------------------------------------------------------------------------------------------------
# Tables that list the plural
# ------------------------------------------------------------------------------------------------


def test_a_table_listing_the_plural_is_read_and_written(tmp_path: Path) -> None:
    path = old_name_table(tmp_path / "t")
    t = dl.DeltaTable(str(path))
    assert t.protocol().writer_features == [OLD]
    assert ids(path) == [1, 2]
    # An ICT table: its commit time is the in-commit timestamp, not the file's mtime.
    assert t.history()[0]["timestamp"] == BASE_MS
    dl.write_table(str(path), rows(3), mode="append")
    dl.DeltaTable(str(path)).delete("id = 1")
    assert ids(path) == [2, 3]
    stamps = [i["inCommitTimestamp"] for i in commit_infos(path)]
    assert len(stamps) == 3 and stamps == sorted(set(stamps))  # strictly increasing
    # Writes leave its protocol alone: one name, the table's own.
    assert ict_names(path) == {OLD}
    assert len(log_protocols(path)) >= 1
    assert all(p["writerFeatures"] == [OLD] for p in log_protocols(path))


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.alter.add_feature("deletionVectors"),
        lambda t: t.alter.set_properties({"delta.enableChangeDataFeed": "true"}),
        lambda t: t.alter.set_properties(ICT_ON),
        lambda t: t.alter.set_properties({"delta.feature.inCommitTimestamp": "supported"}),
        lambda t: t.alter.add_feature(NEW),
        lambda t: t.alter.add_constraint({"positive": "id > 0"}),
    ],
    ids=["add-dv", "cdf", "enable-ict-again", "feature-property", "add-ict", "constraint"],
)
def test_a_protocol_rewrite_keeps_the_tables_own_name(tmp_path: Path, change: Any) -> None:
    path = old_name_table(tmp_path / "t")
    change(dl.DeltaTable(str(path)))
    assert ict_names(path) == {OLD}
    for p in log_protocols(path):
        assert len(set(p["writerFeatures"]) & features.IN_COMMIT_TIMESTAMP_NAMES) == 1, p
    dl.write_table(str(path), rows(5), mode="append")
    assert ids(path) == [1, 2, 5]


@pytest.mark.parametrize("listed", [OLD, NEW])
@pytest.mark.parametrize("asked", [OLD, NEW])
def test_drop_feature_by_either_name(tmp_path: Path, listed: str, asked: str) -> None:
    path = old_name_table(tmp_path / "t", listed)
    t = dl.DeltaTable(str(path))
    t.alter.add_feature("appendOnly")  # something left after the drop
    t = dl.DeltaTable(str(path))
    t.alter.drop_feature(asked)
    t = dl.DeltaTable(str(path))
    assert not ict_names(path)
    assert "appendOnly" in all_features(path)
    assert not any("InCommitTimestamp" in k for k in t.metadata().configuration)
    assert t.history(1)[0]["operationParameters"]["featureName"] == asked
    with pytest.raises(InvalidArgumentError, match="does not support the feature"):
        t.alter.drop_feature(asked)
    dl.write_table(str(path), rows(3), mode="append")
    assert ids(path) == [1, 2, 3]
    assert "inCommitTimestamp" not in commit_infos(path)[-1]


# ------------------------------------------------------------------------------------------------
# Catalog ratification
# ------------------------------------------------------------------------------------------------


def _proposal(writer_features: list[str], ict: int) -> bytes:
    lines = [
        {"commitInfo": {"inCommitTimestamp": ict, "txnId": str(uuid.uuid4())}},
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["catalogManaged"],
                "writerFeatures": writer_features,
            }
        },
        metadata(ICT_ON, table_id=str(uuid.uuid4()), schema_string=SCHEMA),
    ]
    return ("\n".join(json.dumps(x) for x in lines) + "\n").encode()


@pytest.mark.parametrize("name", [NEW, OLD])
def test_ratification_accepts_either_name(tmp_path: Path, name: str) -> None:
    location = (tmp_path / "t").as_uri()
    ict = int(time.time() * 1000)
    checked = check_proposal(
        location, 0, _proposal(["catalogManaged", name], ict), TableState(), check_files=False
    )
    assert checked.version == 0 and checked.in_commit_timestamp == ict
    assert json.loads(checked.protocol or "{}")["writerFeatures"] == ["catalogManaged", name]
    # A later commit keeping it (under either name) passes; one without it does not.
    state = TableState(protocol=checked.protocol, metadata=checked.metadata, last_ict=ict)
    for kept in (NEW, OLD):
        content = _proposal(["catalogManaged", kept], ict + 1)
        check_proposal(location, 1, content, state, check_files=False)
    with pytest.raises(ProposalError, match="inCommitTimestamp or inCommitTimestamps"):
        check_proposal(
            location, 1, _proposal(["catalogManaged"], ict + 1), state, check_files=False
        )


def test_ratification_refuses_a_version_0_without_either_name(tmp_path: Path) -> None:
    with pytest.raises(ProposalError, match="must enable inCommitTimestamp or inCommitTimestamps"):
        check_proposal(
            (tmp_path / "t").as_uri(),
            0,
            _proposal(["catalogManaged"], int(time.time() * 1000)),
            TableState(),
            check_files=False,
        )
