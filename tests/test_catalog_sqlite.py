"""What only the SQLite catalog (``type: sqlite``) has: one database file in WAL mode and its
versioned migrations. The catalog itself is tested over both stores in
test_catalog_stores.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import deltalog as dl
from deltalog.catalog import SqliteStore
from deltalog.catalog.stores.sqlite import MIGRATIONS
from test_catalog_stores import ids, rows

#: The schema of version 1 (deltalog before the protocol / metadata cache), as it was written.
V1 = [
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    "INSERT INTO schema_version VALUES (1)",
    "CREATE TABLE namespaces (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL, "
    "name TEXT NOT NULL, UNIQUE (parent_id, name))",
    "CREATE TABLE tables (id INTEGER PRIMARY KEY, namespace_id INTEGER NOT NULL, "
    "name TEXT NOT NULL, location TEXT NOT NULL, managed INTEGER NOT NULL, "
    "latest_version INTEGER NOT NULL DEFAULT -1, created_ms INTEGER NOT NULL, "
    "UNIQUE (namespace_id, name))",
    "CREATE TABLE commits (table_id INTEGER NOT NULL, version INTEGER NOT NULL, "
    "staged_path TEXT, content BLOB, timestamp_ms INTEGER NOT NULL, "
    "PRIMARY KEY (table_id, version))",
]


def connect(tmp: Path) -> Any:
    return dl.connect_catalog(
        {"type": "sqlite", "path": str(tmp / "catalog.db"), "warehouse": str(tmp / "wh")}
    )


def test_schema_migrations(tmp_path: Path) -> None:
    cat = connect(tmp_path)
    cat.write_table("t", rows(1))
    again = connect(tmp_path)
    assert again.list_tables() == ["t"] and ids(again.load_table("t")) == [1]
    db = sqlite3.connect(tmp_path / "catalog.db")
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    with pytest.raises(dl.CatalogError, match="newer"):
        connect(tmp_path)


def test_a_version_1_database_is_upgraded(tmp_path: Path) -> None:
    """A catalog made by migration 1 (no protocol / metadata / properties columns), holding a
    catalog-managed table with an unpublished inline commit: opening it adds the columns and
    keeps everything."""
    path = tmp_path / "catalog.db"
    db = sqlite3.connect(path)
    for statement in V1:
        db.execute(statement)
    db.execute("INSERT INTO namespaces (parent_id, name) VALUES (0, 'ns')")
    db.execute(
        "INSERT INTO tables (namespace_id, name, location, managed, latest_version, created_ms) "
        "VALUES (1, 't', '/t', 1, 0, 1)"
    )
    db.execute("INSERT INTO commits VALUES (1, 0, NULL, X'7B7D', 1)")
    db.commit()
    db.close()

    store = SqliteStore(str(path))
    db = sqlite3.connect(path)
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]
    columns = [r[1] for r in db.execute("PRAGMA table_info(tables)")]
    assert columns[-12:] == [
        "protocol",
        "metadata",
        "properties",
        "clustering",
        "last_ict",
        "uuid",
        "metadata_version",
        "metadata_ict",
        "name_key",
        # Migration 7: who made and last changed the table, and when it last changed.
        "created_by",
        "updated_ms",
        "updated_by",
    ]
    # Migration 6: every name keyed (found in any case).
    assert db.execute("SELECT name_key FROM tables").fetchall() == [("t",)]
    # Migration 4: every ratified version recorded (content hash, txnId, in-commit timestamp).
    assert db.execute("SELECT COUNT(*) FROM commit_log").fetchone() == (0,)
    assert "properties" in [r[1] for r in db.execute("PRAGMA table_info(namespaces)")]
    record = store.table(1, "t")
    assert record is not None
    assert (record.latest_version, record.managed, record.protocol, record.metadata) == (
        0,
        True,
        None,
        None,
    )
    assert [(c.version, c.content) for c in store.commits(record.id, None, None).commits] == [
        (0, b"{}")
    ]
    # Migration 5: a table registered before it gets its UUID on first use, once.
    assert record.uuid is None
    assert store.table_uuid(record.id) == store.table_uuid(record.id)
    assert store.table_by_uuid(store.table_uuid(record.id)) is not None
    store.ratify(record.id, 1, None, b"{}", protocol='{"p":1}', metadata='{"m":1}')
    assert db.execute("SELECT protocol, metadata, latest_version FROM tables").fetchone() == (
        '{"p":1}',
        '{"m":1}',
        1,
    )
    # Opening it again applies nothing twice.
    SqliteStore(str(path))
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]


def test_ratifications_are_durable_and_forgetting_is_not(tmp_path: Path) -> None:
    """Ratifications commit with synchronous=FULL; forgetting published commits with NORMAL
    (losing it is harmless), and the connection goes back to FULL after it."""
    store = SqliteStore(str(tmp_path / "catalog.db"))
    table = store.ratify(None, 0, None, b"{}", create=(store.ROOT, "t", "/t"))
    # One connection, reused by every call (the pool's only idle connection).
    with store._pool.connection() as db:
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    store.forget(table, 0)
    with store._pool.connection() as again:
        assert again is db
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 60000
