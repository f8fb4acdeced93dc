"""Readers served by what the catalog caches (catalogManaged RFC, "Catalog Responsibilities":
the latest protocol and metadata, so that clients can skip log replay): ``load_table`` answers
version, protocol, metadata and schema without touching the log, opens the snapshot of the
version it described only when data is read, and a cached state that is wrong never yields a
wrong snapshot (the log decides)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
import test_catalog_stores
from deltalog import _native
from test_catalog_stores import Config, connect, ids, rows, table_dir

#: Each catalog kind, as test_catalog_stores makes them (the fixture, shared).
config = test_catalog_stores.config


def lazy_catalogs(config: Config) -> None:
    if config["type"] == "unity":
        pytest.skip("Unity Catalog's loadTable answers with the table's commits: its client reads")


def test_load_table_answers_from_the_catalog_without_the_log(config: Config) -> None:
    lazy_catalogs(config)
    cat = connect(config)
    cat.create_namespace("sales")
    cat.create_table(
        "sales.orders",
        pa.schema({"id": pa.int64(), "note": pa.string()}),
        configuration={"delta.columnMapping.mode": "name"},
    )
    for i in range(3):
        cat.write_table("sales.orders", pa.table({"id": [i], "note": [f"n{i}"]}), mode="append")
    log = table_dir(config, "sales.orders") / "_delta_log"
    opened = cat.load_table("sales.orders")
    expected = (opened.version(), opened.schema(), opened.protocol(), opened.metadata())
    opened.to_pyarrow_table()  # opens the snapshot: the same answers from the log
    assert (opened.version(), opened.schema(), opened.protocol(), opened.metadata()) == expected
    assert expected[0] == 3 and expected[1].names == ["id", "note"]
    assert opened.column_mapping_mode() == "name"
    assert opened.physical_schema().names[0].startswith("col-")

    # With the log out of reach, what the catalog cached still answers...
    hidden = log.parent / "_hidden_log"
    log.rename(hidden)
    try:
        t = cat.load_table("sales.orders")
        assert (t.version(), t.schema(), t.protocol(), t.metadata()) == expected
        assert t.physical_schema() == opened.physical_schema()
        assert t.table_uri == opened.table_uri
        # ... and reading data needs the log.
        with pytest.raises(dl.DeltaError):
            t.to_pyarrow_table()
    finally:
        hidden.rename(log)
    # Loaded at version 3, read after another commit: still version 3's data.
    t = cat.load_table("sales.orders")
    cat.write_table("sales.orders", pa.table({"id": [9], "note": ["late"]}), mode="append")
    assert t.version() == 3
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2]
    assert t.version() == 3
    # A write through it commits after the latest version, as any write does.
    dl.write_table(t, pa.table({"id": [10], "note": ["x"]}), mode="append")
    assert t.version() == 5 and ids(cat.load_table("sales.orders")) == [0, 1, 2, 9, 10]


def test_a_wrong_cached_state_does_not_make_a_wrong_snapshot(config: Config) -> None:
    lazy_catalogs(config)
    cat = connect(config)
    cat.write_table("t", rows(1, 2))
    dl.write_table(cat.load_table("t"), rows(3), mode="append")
    real = cat.load_table("t")
    real.to_pyarrow_table()
    client = cat.catalog_client("t")
    metadata = dict(real.metadata().__dict__)
    wrong_schema = {
        "type": "struct",
        "fields": [{"name": "other", "type": "string", "nullable": True, "metadata": {}}],
    }
    body = {
        "id": metadata["id"],
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(wrong_schema),
        "partitionColumns": [],
        "configuration": metadata["configuration"],
    }
    protocol = json.dumps(
        {
            "minReaderVersion": real.protocol().min_reader_version,
            "minWriterVersion": real.protocol().min_writer_version,
            "readerFeatures": real.protocol().reader_features,
            "writerFeatures": real.protocol().writer_features,
        }
    )
    header = _native.RawHeader(real.table_uri, real.version(), protocol, json.dumps(body))
    assert header.schema().names == ["other"]
    snapshot = _native.RawSnapshot.open(real.table_uri, None, None, client, header)
    assert snapshot.version() == real.version()
    assert snapshot.schema() == real.schema()
    table = dl.DeltaTable(real.table_uri, catalog_client=client)
    assert ids(table) == [1, 2, 3]
    # Not a protocol and metadata at all: a typed error naming the version.
    with pytest.raises(dl.InvalidArgumentError, match="version 2"):
        _native.RawHeader(real.table_uri, 2, "[]", json.dumps(body))


def test_a_catalog_without_a_cached_state_opens_the_log(config: Config) -> None:
    """A catalog that was never given the table's protocol and metadata (a table registered
    from an existing log, a rollback): loading it reads them from the log."""
    lazy_catalogs(config)
    from deltalog.catalog.managed import TableRecord
    from deltalog.table.delta_table import DeltaTable

    cat = connect(config)
    cat.write_table("t", rows(1))
    record: Any = cat._record("t")
    assert record.protocol and record.metadata
    plain = TableRecord(**(dict(record.__dict__) | {"protocol": None, "metadata": None}))
    t = DeltaTable._of_catalog(plain, cat.catalog_client("t"))
    assert t._loaded is not None and t.version() == 0 and ids(t) == [1]
