"""Catalog schema 8 over both SQL stores, SQLite and PostgreSQL (a real server:
tests/postgres_server.py): who ratified each version (``CommitRecord.principal``, through the
general ratification and PostgreSQL's one-statement ``deltalog_ratify``), versions ratified
before it (``None``), a schema-7 database upgraded in place, and the bounded audit log of
refused requests (``record_refusal`` / ``refusals``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from tests.old_schemas import execute, old_store

import deltalog as dl
from catalog_configs import Config, new_catalog
from deltalog.catalog.managed import Proposal, RefusalRecord, Store
from deltalog.catalog.stores import audit_log
from deltalog.catalog.stores.records import acting_as
from deltalog.catalog.stores.sql import SqlStore


@pytest.fixture(params=["sqlite", "postgresql"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Config]:
    with new_catalog(request.param, request, tmp_path) as config:
        yield config


def store_of(catalog: Any) -> SqlStore:
    store = catalog._store
    assert isinstance(store, SqlStore)
    return store


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def principals(store: SqlStore, name: str) -> list[tuple[int, str | None]]:
    record = store.table(Store.ROOT, name)
    assert record is not None
    return [(r.version, r.principal) for r in store.commit_records(record.id, 0, 2**40)]


# -- who ratified each version ---------------------------------------------------------------


def test_commits_record_their_principal(config: Config) -> None:
    """Version 0 (the table registered with it: the general ratification), an append (on
    PostgreSQL, one ``deltalog_ratify`` statement) and a transaction of two tables each
    record who proposed them."""
    cat = dl.connect_catalog(config)
    store = store_of(cat)
    with acting_as("alice"):
        cat.write_table("t", rows(1))
        dl.write_table(cat.load_table("t"), rows(2), mode="append")
        cat.write_table("u", rows(3))
    with acting_as("bob"):
        with cat.transaction() as tx:
            tx.write_table("t", rows(4), mode="append")
            tx.write_table("u", rows(5), mode="append")
    assert principals(store, "t") == [(0, "alice"), (1, "alice"), (2, "bob")]
    assert principals(store, "u") == [(0, "alice"), (1, "bob")]
    # The table's last updater is the version's principal.
    record = store.table(Store.ROOT, "t")
    assert record is not None and record.updated_by == "bob"
    single = store.commit_record(record.id, 1)
    assert single is not None and single.principal == "alice"


def test_a_proposal_naming_its_principal_records_it(config: Config) -> None:
    cat = dl.connect_catalog(config)
    store = store_of(cat)
    cat.write_table("t", rows(1))
    record = store.table(Store.ROOT, "t")
    assert record is not None
    with acting_as("ignored"):
        store.ratify_all([Proposal(record.id, 1, None, b"{}", principal="carol")])
    assert principals(store, "t")[1] == (1, "carol")


def _schema_version(kind: str, where: str) -> int:
    if kind == "sqlite":
        db = sqlite3.connect(where)
        try:
            return int(db.execute("SELECT version FROM schema_version").fetchone()[0])
        finally:
            db.close()
    import psycopg

    with psycopg.connect(where) as pg:
        row = pg.execute(b"SELECT version FROM schema_version").fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_schema_7_database_is_upgraded_in_place(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Version 0 ratified at schema 7 answers ``principal`` None (never recorded); the
    database is upgraded to schema 8 when opened, and the next version records its
    principal (on PostgreSQL through the replaced ``deltalog_ratify``)."""
    where = (
        str(tmp_path / "old.db") if kind == "sqlite" else request.getfixturevalue("postgres_uri")
    )
    old = old_store(kind, where, 7)
    table_id = old.register(Store.ROOT, "t", str(tmp_path / "t"), managed=True).id
    execute(
        kind,
        where,
        [
            (
                "INSERT INTO commit_log (table_id, version, txn_id, sha256, staged_path, ict, "
                "ratified_ms) VALUES (?, 0, NULL, ?, NULL, NULL, ?)",
                (table_id, "ab" * 32, 1_700_000_000_000),
            ),
            ("UPDATE tables SET latest_version = 0 WHERE id = ?", (table_id,)),
        ],
    )
    assert _schema_version(kind, where) == 7
    if kind == "sqlite":
        from deltalog.catalog.stores.sqlite import MIGRATIONS, SqliteStore

        store: SqlStore = SqliteStore(where)
    else:
        from deltalog.catalog.stores.postgresql import MIGRATIONS, PostgresStore

        store = PostgresStore(where)
    assert len(MIGRATIONS) == 8 and _schema_version(kind, where) == 8
    (before,) = store.commit_records(table_id, 0, 0)
    assert (before.version, before.principal, before.ratified_ms) == (0, None, 1_700_000_000_000)
    store.ratify_all([Proposal(table_id, 1, None, b"{}", principal="dave")])
    assert [(r.version, r.principal) for r in store.commit_records(table_id, 0, 9)] == [
        (0, None),
        (1, "dave"),
    ]
    assert store.refusals() == []


# -- the audit log of refusals ---------------------------------------------------------------


def refusal(i: int, **changes: Any) -> RefusalRecord:
    values: dict[str, Any] = {
        "at_ms": 1_700_000_000_000 + i,
        "principal": f"user{i}",
        "method": "POST",
        "path": f"/v1/table/t{i}/commit",
        "status": 409 if i % 2 else 403,
        "code": i if i % 3 else None,
        "message": f"refused {i}",
    }
    values.update(changes)
    return RefusalRecord(**values)


def test_refusals_round_trip_newest_first(config: Config) -> None:
    store = store_of(dl.connect_catalog(config))
    assert store.refusals() == []
    recorded = [refusal(i) for i in range(4)] + [refusal(4, principal=None, message=None)]
    for r in recorded:
        store.record_refusal(r)
    assert store.refusals() == recorded[::-1]
    assert store.refusals(2) == recorded[:2:-1][:2]
    # Another store of the same database reads the same log.
    assert store_of(dl.connect_catalog(config)).refusals(1) == [recorded[-1]]


def test_long_values_are_truncated_not_refused(config: Config) -> None:
    store = store_of(dl.connect_catalog(config))
    store.record_refusal(
        refusal(
            0, message="m" * 10_240, path="/" + "p" * 2000, principal="u" * 1000, method="X" * 40
        )
    )
    (got,) = store.refusals()
    assert got.message == "m" * 1024
    assert got.path == "/" + "p" * 511
    assert got.principal == "u" * 256
    assert got.method == "X" * 16
    assert (got.status, got.code, got.at_ms) == (403, None, 1_700_000_000_000)


def test_the_log_keeps_the_latest_rows_only(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_log, "AUDIT_LOG_ROWS", 5)
    store = store_of(dl.connect_catalog(config))
    for i in range(5 + 5):
        store.record_refusal(refusal(i))
    kept = [r.path for r in store.refusals(100)]  # the limit clamped to 5
    assert kept == [f"/v1/table/t{i}/commit" for i in range(9, 4, -1)]
    with store._transaction(write=False) as db:
        assert store._one(db, "SELECT COUNT(*) FROM audit_log")[0] == 5


def test_the_limit_is_clamped(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    store = store_of(dl.connect_catalog(config))
    for i in range(3):
        store.record_refusal(refusal(i))
    assert [r.at_ms for r in store.refusals(0)] == [1_700_000_000_002]
    assert [r.at_ms for r in store.refusals(-7)] == [1_700_000_000_002]
    assert len(store.refusals(10**9)) == 3
    monkeypatch.setattr(audit_log, "AUDIT_LOG_ROWS", 2)
    assert len(store.refusals(10**9)) == 2
