"""Table properties and CHECK constraints are validated before they are committed (issue #15,
item 7): ``delta.*`` keys by the property registry (type and range; unknown keys refused, as
Delta Spark refuses them), values given as ``None`` refused, and constraints that are not
boolean conditions refused at ``add_constraint`` and at creation. Tables written by others
with odd properties still read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl
from deltalog.protocol import properties


def _peer_config(path: Path) -> dict[str, str]:
    return dict(deltalake.DeltaTable(str(path)).metadata().configuration)


BAD: list[tuple[dict[str, Any], str]] = [
    ({"delta.appendOnly": "maybe"}, "true or false"),
    ({"delta.checkpointInterval": "-3"}, "at least 1"),
    ({"delta.checkpointInterval": "0"}, "at least 1"),
    ({"delta.checkpointInterval": "abc"}, "whole number"),
    ({"delta.checkpointInterval": "2.5"}, "whole number"),
    ({"delta.checkpointInterval": " 5"}, "whole number"),
    ({"delta.checkpointInterval": "2147483648"}, "at most 2147483647"),
    ({"delta.appendOnly": " true"}, "true or false"),
    ({"delta.deletedFileRetentionDuration": "interval 1 month"}, "months"),
    ({"delta.deletedFileRetentionDuration": "soon"}, "interval"),
    ({"delta.columnMapping.mode": "names"}, "none, name, id"),
    ({"delta.checkpointPolicy": "v3"}, "classic, v2"),
    ({"delta.isolationLevel": "ReadCommitted"}, "Serializable"),
    ({"delta.dataSkippingNumIndexedCols": "-2"}, "at least -1"),
    ({"delta.enableChangeDataFeed": "yes"}, "true or false"),
    ({"delta.universalFormat.enabledFormats": "iceberg,parquet"}, "iceberg, hudi"),
    ({"delta.noSuchProperty": "1"}, "unknown Delta table property"),
    ({"delta.minWriterVersion": "4"}, "derives the protocol"),
    ({"x": None}, "has no value"),
    ({"delta.appendOnly": None}, "has no value"),
    ({"delta.constraints.": "true"}, "names no constraint"),
]


@pytest.mark.parametrize(("config", "message"), BAD, ids=lambda v: str(v))
def test_invalid_properties_are_refused_at_create(
    tmp_path: Path, config: dict[str, Any], message: str
) -> None:
    path = tmp_path / "t"
    with pytest.raises(dl.InvalidArgumentError, match=message):
        dl.write_table(path, pa.table({"id": [1]}), configuration=config)
    assert not (path / "_delta_log").exists()
    # InvalidArgumentError is also a ValueError.
    with pytest.raises(ValueError):
        dl.DeltaTable.create(path, pa.schema([("id", pa.int64())]), configuration=config)


@pytest.mark.parametrize(("config", "message"), BAD, ids=lambda v: str(v))
def test_invalid_properties_are_refused_by_set_properties(
    tmp_path: Path, config: dict[str, Any], message: str
) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": [1]}))
    t = dl.DeltaTable(path)
    with pytest.raises((dl.InvalidArgumentError, ValueError), match=message):
        t.alter.set_properties(config)
    assert t.version() == 0
    assert dl.DeltaTable(path).version() == 0
    # Even where an existing table ignores `configuration`, a bad one is an error.
    with pytest.raises(dl.InvalidArgumentError, match=message):
        dl.write_table(path, pa.table({"id": [2]}), mode="append", configuration=config)
    assert dl.DeltaTable(path).version() == 0


def test_valid_properties_are_normalised_and_committed(tmp_path: Path) -> None:
    path = tmp_path / "t"
    config = {
        "delta.appendOnly": False,
        "delta.checkpointInterval": 5,
        "delta.logRetentionDuration": "interval 7 days",
        "delta.deletedFileRetentionDuration": "2 weeks",
        "delta.ENABLECHANGEDATAFEED": "TRUE",
        "delta.isolationLevel": "Serializable",
        "delta.dataSkippingNumIndexedCols": "-1",
        "owner": "team-a",
    }
    dl.write_table(path, pa.table({"id": [1]}), configuration=config)
    expected = {
        "delta.appendOnly": "false",
        "delta.checkpointInterval": "5",
        "delta.logRetentionDuration": "interval 7 days",
        "delta.deletedFileRetentionDuration": "2 weeks",
        "delta.enableChangeDataFeed": "TRUE",
        "delta.isolationLevel": "Serializable",
        "delta.dataSkippingNumIndexedCols": "-1",
        "owner": "team-a",
    }
    assert dl.DeltaTable(path).metadata().configuration == expected
    assert _peer_config(path) == expected
    t = dl.DeltaTable(path)
    t.alter.set_properties({"delta.appendOnly": True, "delta.checkpointPolicy": "V2"})
    assert t.metadata().configuration["delta.appendOnly"] == "true"
    assert _peer_config(path)["delta.appendOnly"] == "true"
    # The v2 policy brings the v2Checkpoint feature (deltalake's pyarrow reader refuses it; its
    # query engine reads it).
    assert "v2Checkpoint" in (t.protocol().reader_features or [])
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    assert pa.table(query.execute("SELECT * FROM t").read_all()).to_pylist() == [{"id": 1}]


def test_registry_keys_are_delta_keys() -> None:
    assert all(k.startswith("delta.") for k in properties.PROPERTIES)
    assert properties.validate({"Delta.AppendOnly": "true"}) == {"delta.appendOnly": "true"}
    with pytest.raises(dl.InvalidArgumentError, match="twice"):
        properties.validate({"delta.appendOnly": "true", "delta.appendonly": "false"})


def test_existing_tables_with_odd_properties_still_read_and_write(tmp_path: Path) -> None:
    # Written by another implementation: properties deltalog would refuse to commit.
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": [1]}))
    commit = path / "_delta_log" / f"{1:020}.json"
    meta = dl.DeltaTable(path).metadata()
    odd = {"delta.someVendorFlag": "x", "delta.appendOnly": "False", "k": "None"}
    action = {
        "metaData": {
            "id": meta.id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": meta.schema_string,
            "partitionColumns": [],
            "configuration": odd,
            "createdTime": meta.created_time,
        }
    }
    info = {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "SET TBLPROPERTIES"}}
    commit.write_text(json.dumps(info) + "\n" + json.dumps(action) + "\n")
    t = dl.DeltaTable(path)
    assert t.metadata().configuration == odd
    assert t.to_pyarrow_table().to_pylist() == [{"id": 1}]
    dl.write_table(t, pa.table({"id": [2]}), mode="append")
    # Setting a valid property keeps the others as they are.
    t.alter.set_properties({"owner": "b"})
    assert dl.DeltaTable(path).metadata().configuration == {**odd, "owner": "b"}


def test_non_boolean_check_constraints_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": pa.array([], pa.int64())}))
    t = dl.DeltaTable(path)
    for sql in ("id + 1", "'text'", "id"):
        with pytest.raises(dl.InvalidArgumentError, match="not a boolean condition"):
            t.alter.add_constraint({"c": sql})
    assert t.version() == 0
    assert "delta.constraints.c" not in t.metadata().configuration
    # The table stays writable; a boolean constraint is accepted and enforced.
    dl.write_table(t, pa.table({"id": [1]}), mode="append")
    t.alter.add_constraint({"c": "id > 0"})
    with pytest.raises(dl.ConstraintViolationError):
        dl.write_table(t, pa.table({"id": [0]}), mode="append")
    assert deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist() == [{"id": 1}]
    # A new table declaring such a constraint is refused before anything is written.
    with pytest.raises(dl.InvalidArgumentError, match="not a boolean condition"):
        dl.write_table(
            tmp_path / "u",
            pa.table({"id": [1]}),
            configuration={"delta.constraints.c": "id * 2"},
        )
    assert not (tmp_path / "u" / "_delta_log").exists()
