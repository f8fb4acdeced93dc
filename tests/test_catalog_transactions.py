"""Transactions over several catalog-managed tables of one catalog
(:mod:`deltalog.catalog.transaction`), on the SQLite and the PostgreSQL store, and through the
REST catalog (one ``batch-create`` call): the commits are ratified in one catalog transaction,
or none of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl
from deltalog.catalog import ManagedCatalog

SCHEMA = pa.schema({"id": pa.int64()})


@pytest.fixture(params=["sqlite", "postgresql", "rest"])
def empty(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ManagedCatalog]:
    """A new catalog on each store (PostgreSQL: a real server, tests/postgres_server.py), and
    a REST catalog (a real ``deltalog catalog serve`` process over SQLite)."""
    warehouse = str(tmp_path / "wh")
    if request.param == "sqlite":
        config = {"type": "sqlite", "path": str(tmp_path / "catalog.db"), "warehouse": warehouse}
    elif request.param == "postgresql":
        uri = request.getfixturevalue("postgres_uri")
        config = {"type": "postgresql", "uri": uri, "warehouse": warehouse}
    else:
        with catalog_server.running(tmp_path / "server", warehouse=warehouse) as server:
            yield dl.connect_catalog({"type": "rest", "uri": server.url})  # type: ignore[misc]
        return
    cat = dl.connect_catalog(config)
    assert isinstance(cat, ManagedCatalog)
    yield cat


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def state(cat: ManagedCatalog, *names: str) -> dict[str, tuple[int, list[int]]]:
    out = {}
    for name in names:
        t = cat.load_table(name)
        out[name] = (t.version(), ids(t))
    return out


@pytest.fixture
def cat(empty: ManagedCatalog) -> ManagedCatalog:
    cat = empty
    cat.create_namespace("db")
    cat.write_table("db.a", rows(1, 2))
    cat.write_table("db.b", rows(10, 20))
    return cat


def test_commits_to_two_tables_become_visible_together(cat: ManagedCatalog) -> None:
    before = state(cat, "db.a", "db.b")
    big = pa.table({"id": pa.array(range(100_000), pa.int64())})  # staged, not inline
    with cat.transaction() as tx:
        assert tx.write_table("db.a", rows(3), mode="append") == 1
        b = tx.load_table("db.b")
        b.delete("id = 10")
        assert b.version() == 1
        assert tx.write_table("db.c", big) == 0  # a new table, registered on commit
        # Inside the transaction its own commits read as made; outside nothing is yet.
        assert ids(tx.load_table("db.a")) == [1, 2, 3]
        assert state(cat, "db.a", "db.b") == before
        assert not cat.table_exists("db.c")
    assert tx.versions == {"db.a": 1, "db.b": 1, "db.c": 0}
    assert state(cat, "db.a", "db.b") == {"db.a": (1, [1, 2, 3]), "db.b": (1, [20])}
    assert cat.load_table("db.c").to_pyarrow_table().num_rows == 100_000
    # Published in order; the catalog holds nothing any more.
    for name, version in tx.versions.items():
        log = Path(cat.load_table(name).table_uri.removeprefix("file://")) / "_delta_log"
        assert (log / f"{version:020}.json").exists()
        assert cat.catalog_client(name).get_ratified_commits().commits == []


def test_a_conflict_on_the_second_table_leaves_both_unchanged(cat: ManagedCatalog) -> None:
    tx = cat.transaction()
    tx.write_table("db.a", rows(3), mode="append")
    tx.write_table("db.b", pa.table({"id": pa.array(range(50_000), pa.int64())}), mode="append")
    # Another writer takes the version the transaction proposed for db.b.
    cat.write_table("db.b", rows(30), mode="append")
    after_other = state(cat, "db.a", "db.b")
    with pytest.raises(dl.CommitConflictError):
        tx.commit()
    assert state(cat, "db.a", "db.b") == after_other
    assert after_other == {"db.a": (0, [1, 2]), "db.b": (1, [10, 20, 30])}
    # The transaction's staged commit of db.b is gone; nothing of it is read.
    b_log = Path(cat.load_table("db.b").table_uri.removeprefix("file://")) / "_delta_log"
    assert not list((b_log / "_staged_commits").glob("*.json"))
    with pytest.raises(dl.InvalidArgumentError, match="aborted"):
        tx.write_table("db.a", rows(4), mode="append")


def test_an_exception_aborts_the_transaction(cat: ManagedCatalog) -> None:
    before = state(cat, "db.a", "db.b")
    with pytest.raises(RuntimeError, match="boom"):
        with cat.transaction() as tx:
            tx.write_table("db.a", rows(3), mode="append")
            tx.write_table("db.new", rows(1))
            raise RuntimeError("boom")
    assert state(cat, "db.a", "db.b") == before
    assert not cat.table_exists("db.new")


def test_writers_behind_rebase_before_the_transaction_ends(cat: ManagedCatalog) -> None:
    with cat.transaction() as tx:
        a = tx.load_table("db.a")  # reads version 0
        cat.write_table("db.a", rows(5), mode="append")  # version 1, outside
        dl.write_table(a, rows(6), mode="append")  # rebased: proposed as version 2
        assert a.version() == 2
    assert tx.versions == {"db.a": 2}
    assert state(cat, "db.a") == {"db.a": (2, [1, 2, 5, 6])}


def test_one_commit_per_table(cat: ManagedCatalog) -> None:
    # The transaction's client raises it; it reaches the caller as raised.
    with pytest.raises(dl.InvalidArgumentError, match="one commit per table"):
        with cat.transaction() as tx:
            tx.write_table("db.a", rows(3), mode="append")
            tx.write_table("db.a", rows(4), mode="append")
    assert state(cat, "db.a") == {"db.a": (0, [1, 2])}


def test_storage_managed_tables_cannot_join(cat: ManagedCatalog, tmp_path: Path) -> None:
    dl.write_table(str(tmp_path / "plain"), rows(1))
    cat.register_table("db.plain", str(tmp_path / "plain"))
    with pytest.raises(dl.InvalidArgumentError, match="storage-managed"):
        cat.transaction().load_table("db.plain")
