"""What only the PostgreSQL catalog (``type: postgresql``) has: its configuration, psycopg
imported only for it, its migrations under an advisory lock (several processes opening a new
database at once), and its schema and locking seen from another connection. The catalog itself
is tested over both stores in test_catalog_stores.py; each test here has a new database of a
real server (tests/postgres_server.py)."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest

import deltalog as dl
import processes
from deltalog.catalog import ManagedCatalog, PostgresStore, Proposal
from deltalog.catalog.stores.postgresql import MIGRATIONS

SCHEMA = pa.schema({"id": pa.int64()})


def connect(uri: str, tmp: Path) -> Any:
    return dl.connect_catalog({"type": "postgresql", "uri": uri, "warehouse": str(tmp / "wh")})


def query(uri: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri) as db:
        return db.execute(sql).fetchall()


def test_configuration_is_checked(tmp_path: Path) -> None:
    with pytest.raises(dl.InvalidArgumentError, match=r"unknown keys.*path"):
        dl.connect_catalog({"type": "postgresql", "uri": "postgresql://x/y", "path": "p"})
    with pytest.raises(dl.InvalidArgumentError, match='needs "uri"'):
        dl.connect_catalog({"type": "postgresql", "warehouse": str(tmp_path)})
    with pytest.raises(dl.InvalidArgumentError, match='"warehouse"'):
        dl.connect_catalog({"type": "postgresql", "uri": "postgresql://x/y"})
    with pytest.raises(dl.CatalogError, match="not a PostgreSQL connection URI"):
        dl.connect_catalog({"type": "postgresql", "uri": "not a uri", "warehouse": "wh"})
    with pytest.raises(dl.InvalidArgumentError, match="rest catalog needs"):
        dl.connect_catalog({"type": "rest"})
    with pytest.raises(dl.InvalidArgumentError, match="unknown keys"):
        dl.connect_catalog({"type": "rest", "uri": "http://x", "warehouse": "w"})
    with pytest.raises(dl.InvalidArgumentError, match="http"):
        dl.connect_catalog({"type": "rest", "uri": "ftp://x"})


def test_an_unreachable_server_is_a_catalog_error(tmp_path: Path) -> None:
    from postgres_server import free_port

    uri = f"postgresql://postgres:secret@127.0.0.1:{free_port()}/nothing?connect_timeout=5"
    with pytest.raises(dl.CatalogError, match="cannot connect") as e:
        connect(uri, tmp_path)
    assert "secret" not in str(e.value)


def test_psycopg_is_imported_only_for_a_postgresql_catalog(tmp_path: Path) -> None:
    """Without psycopg, deltalog and its other catalogs work, and a postgresql catalog is
    refused with UnsupportedFeatureError saying what to install."""
    script = f"""
import sys
sys.modules["psycopg"] = None  # as if not installed
import deltalog as dl
assert "psycopg" not in [m for m in sys.modules if sys.modules[m] is not None]
dl.connect_catalog({{"type": "sqlite", "path": {str(tmp_path / "c.db")!r}, "warehouse": "wh"}})
try:
    dl.connect_catalog({{"type": "postgresql", "uri": "postgresql://x/y", "warehouse": "wh"}})
except dl.UnsupportedFeatureError as e:
    print(e)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "deltalog[postgresql]" in done.stdout


def test_migrations_from_an_empty_database(postgres_uri: str, tmp_path: Path) -> None:
    cat = connect(postgres_uri, tmp_path)
    assert isinstance(cat, ManagedCatalog) and isinstance(cat._store, PostgresStore)
    assert query(postgres_uri, "SELECT version FROM schema_version") == [(len(MIGRATIONS),)]
    types = dict(
        query(
            postgres_uri,
            "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public'",
        )
    )
    assert types["commits.content"] == "bytea"
    assert types["tables.protocol"] == types["tables.metadata"] == "text"
    assert types["tables.managed"] == "boolean"
    assert types["tables.id"] == types["commits.version"] == "bigint"
    cat.create_namespace("ns")
    cat.write_table("ns.t", pa.table({"id": [1, 2]}))
    again = connect(postgres_uri, tmp_path)
    assert again.list_tables("ns") == ["t"]
    assert sorted(again.load_table("ns.t").to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    assert query(postgres_uri, "SELECT version FROM schema_version") == [(len(MIGRATIONS),)]
    with psycopg.connect(postgres_uri) as db:
        db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(dl.CatalogError, match="newer"):
        connect(postgres_uri, tmp_path)


def _open_at_once(uri: str, warehouse: str, k: int, go: Any) -> None:
    go.wait(60)
    cat = dl.connect_catalog({"type": "postgresql", "uri": uri, "warehouse": warehouse})
    cat.create_namespace(f"ns{k}")


def test_several_processes_open_a_new_database_at_once(postgres_uri: str, tmp_path: Path) -> None:
    """6 processes open the same empty database together: the schema is made once
    (pg_advisory_xact_lock), and every one of them works."""
    ctx = processes.context()
    go = ctx.Event()
    procs = [
        ctx.Process(target=_open_at_once, args=(postgres_uri, str(tmp_path / "wh"), k, go))
        for k in range(6)
    ]
    for p in procs:
        p.start()
    time.sleep(2)  # let them all import deltalog and reach the start line
    go.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 6
    assert query(postgres_uri, "SELECT version FROM schema_version") == [(len(MIGRATIONS),)]
    cat = connect(postgres_uri, tmp_path)
    assert cat.list_namespaces() == [f"ns{k}" for k in range(6)]


def test_ratify_all_through_the_catalog(postgres_uri: str, tmp_path: Path) -> None:
    """Two catalog-managed tables: ratify_all of their next commits where the second
    conflicts leaves both tables as they were; without the conflict both move together."""
    cat = connect(postgres_uri, tmp_path)
    cat.create_table("a", SCHEMA)
    cat.create_table("b", SCHEMA)
    cat.write_table("b", pa.table({"id": [1]}), mode="append")
    store = cat._store
    a, b = (cat.catalog_client(n)._table_id for n in ("a", "b"))
    with pytest.raises(dl.CommitConflictError) as lost:
        store.ratify_all([Proposal(a, 1, None, b"{}"), Proposal(b, 1, None, b"{}")])
    assert lost.value.ratified.latest_version == 1
    assert cat.load_table("a").version() == 0 and cat.load_table("b").version() == 1
    assert query(postgres_uri, "SELECT COUNT(*) FROM commits") == [(0,)]


def test_a_ratification_waits_for_the_row_lock(postgres_uri: str, tmp_path: Path) -> None:
    """While another transaction holds a table's row (SELECT … FOR UPDATE), a ratification of
    that table waits, then sees the version the other one ratified and answers a conflict."""
    store = PostgresStore(postgres_uri)
    table = store.ratify(None, 0, None, b"{}", create=(store.ROOT, "t", "/t"))
    result: list[BaseException | int] = []
    with psycopg.connect(postgres_uri) as other:
        other.execute("SELECT id FROM tables WHERE id = %s FOR UPDATE", (table,))

        def ratify() -> None:
            try:
                result.append(store.ratify(table, 1, None, b"mine"))
            except dl.CommitConflictError as e:
                result.append(e)

        thread = threading.Thread(target=ratify)
        thread.start()
        thread.join(1.0)
        assert thread.is_alive() and not result  # waiting for the lock
        other.execute("INSERT INTO commits VALUES (%s, 1, NULL, 'theirs', 0)", (table,))
        other.execute("UPDATE tables SET latest_version = 1 WHERE id = %s", (table,))
    thread.join(30)  # `other` committed on leaving the block
    (answer,) = result
    assert isinstance(answer, dl.CommitConflictError)
    assert [c.content for c in answer.ratified.commits] == [b"theirs"]


def _use_after_fork(store: PostgresStore, table: int, out: Any) -> None:
    out.put([store.commits(table, None, None).latest_version for _ in range(300)])


def test_a_forked_child_opens_its_own_connections(postgres_uri: str) -> None:
    """A store used before a fork works in the child and in the parent at the same time (the
    child does not talk over the parent's connections)."""
    store = PostgresStore(postgres_uri)
    table = store.ratify(None, 0, None, b"{}", create=(store.ROOT, "t", "/t"))
    assert store.commits(table, None, None).latest_version == 0  # a connection now idle
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_use_after_fork, args=(store, table, out))
    child.start()
    mine = [store.commits(table, None, None).latest_version for _ in range(300)]
    theirs = out.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0 and mine == theirs == [0] * 300
    store.ratify(table, 1, None, b"{}")
    assert store.commits(table, None, None).latest_version == 1
