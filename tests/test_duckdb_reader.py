"""DuckDB's ``delta`` extension as a second independent reader of what deltalog writes.

The extension (PyPI ``duckdb-extension-delta``, built on delta-kernel-rs, pinned with the DuckDB
version it is built for in pyproject's ``test`` extra) reads deletion vectors, column mapping,
V2 checkpoints, row tracking and in-commit timestamps, which ``deltalake`` cannot. Every table
feature deltalog writes, alone and in the combinations that matter, is written as a small
table (``deltalog_tables.py``) and read by both: ``delta_scan(path)`` must return the same rows
(a multiset, by column name) as deltalog's own read, and deltalog's rows must be the
ones the test wrote.

Where the readers disagree the protocol (spec 002) decides: see
``test_duckdb_disagreements.py`` (DuckDB 1.5.5 misreads a column-mapped table's partition
column when it is not the schema's first column; the wrong answer is asserted there). The cases
here keep partition columns first so that every other feature is compared in full.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import deltalog as dl
from deltalog_tables import CASES, base
from duckdb_delta import (
    assert_filters_agree,
    assert_same_rows,
    connect,
    duck_table,
    features_of,
    ids_of,
)


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    c = connect()
    yield c
    c.close()


@pytest.mark.parametrize("name", list(CASES))
def test_duckdb_reads_the_same_rows(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, name: str
) -> None:
    build, features = CASES[name]
    path = tmp_path / "t"
    want = build(path)
    assert features <= features_of(path), "the table does not have the features it tests"
    rows = assert_same_rows(con, path)
    assert ids_of(rows) == sorted(want)
    assert assert_filters_agree(con, path) >= 3  # at least on id


# Cases with more than one version left to read (the checkpoint cases delete their commits).
TIME_TRAVEL = [
    "in-commit-timestamps",
    "column-mapping-name-renamed-dropped-dv",
    "type-widening",
    "log-compaction",
    "restore",
    "change-data-feed",
]


@pytest.mark.parametrize("name", TIME_TRAVEL)
def test_duckdb_time_travel_by_version(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, name: str
) -> None:
    """``delta_scan(path, version := v)`` reads every version as deltalog's ``version=v`` does
    (each version under its own schema: before and after a rename, a widening). DuckDB 1.5.5's
    delta_scan takes no timestamp, so time travel by (in-commit) timestamp is not compared."""
    build, _ = CASES[name]
    path = tmp_path / "t"
    build(path)
    latest = dl.DeltaTable(path).version()
    assert latest >= 2
    seen = [assert_same_rows(con, path, v) for v in range(latest + 1)]
    assert len({json.dumps(rows, default=repr) for rows in seen}) > 1, "versions all alike"


def test_duckdb_reads_the_domain_metadata(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """User domains ("Domain Metadata") as DuckDB's ``delta_domain_metadata`` lists them; it
    leaves out the system-controlled ``delta.*`` domains (here ``delta.clustering``)."""
    path = tmp_path / "t"
    CASES["clustering-domain-metadata"][0](path)
    domains = dl.DeltaTable(path).domain_metadata()
    assert json.loads(domains["delta.clustering"])["clusteringColumns"]
    query = "SELECT * FROM delta_domain_metadata(?)"
    theirs = dict(con.execute(query, [str(path)]).fetchall())
    assert theirs == {k: v for k, v in domains.items() if not k.startswith("delta.")}
    assert theirs == {"app.settings": '{"owner": "tests"}'}


def test_catalog_managed_tables_are_refused_by_path(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A catalog-managed table (``catalogManaged``, written through deltalog's SQLite catalog)
    read by path: "Reader Requirements for Catalog-managed tables" (RFC 000) say readers "must
    contact the catalog for information about unpublished ratified commits", so both readers
    refuse it (DuckDB 1.5.5's delta_scan cannot be given a catalog's latest version)."""
    cat = dl.connect_catalog(
        {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    )
    cat.write_table("t", base(range(3)))
    dl.write_table(cat.load_table("t"), base(range(3, 5)), mode="append")
    t = cat.load_table("t")
    path = Path(t.table_uri.removeprefix("file://"))
    assert "catalogManaged" in (t.protocol().reader_features or [])
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2, 3, 4]
    with pytest.raises(dl.CatalogRequiredError, match="catalog-managed"):
        dl.DeltaTable(path)
    with pytest.raises(duckdb.IOException, match="Catalog-managed table requires"):
        duck_table(con, path)
