"""polars' Unity Catalog client (``polars.Catalog``, issue #46 item 4) against a real
``deltalog catalog serve`` process with a tokens file: catalogs, schemas and tables listed and
described with the fields the UC spec defines and polars requires (``created_at`` /
``created_by`` / ``updated_at`` / ``updated_by``, owners, ids, full names, storage
locations), as the catalog recorded them for the authenticated principal; an external table
scanned by polars with deltalog's rows. And a catalog database made before deltalog recorded
these (schema version 6) upgraded in place by the server and answering them (``null`` where
never recorded).

polars reads external tables; a catalog-managed table it describes but does not scan (its
Delta reader asks for the catalog's latest version, which polars' client does not give).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from tests.old_schemas import old_store

import catalog_server
import deltalog as dl
from deltalog.server.auth import add_token
from unity_helpers import CatalogsApi, SchemasApi, TablesApi, Uc


@pytest.fixture
def server(tmp_path: Path) -> Any:
    tokens = tmp_path / "tokens.json"
    keys = {"ops": add_token(tokens, "ops", "admin"), "etl": add_token(tokens, "etl", "writer")}
    with catalog_server.running(tmp_path / "server", tokens=tokens) as running:
        running.keys = keys  # type: ignore[attr-defined]
        yield running


def polars_catalog(server: Any, principal: str) -> pl.Catalog:
    return pl.Catalog(server.url, bearer_token=server.keys[principal], require_https=False)


def ms(moment: dt.datetime | None) -> int:
    """A polars datetime (UTC) as epoch milliseconds."""
    assert moment is not None
    return round(moment.timestamp() * 1000)


def external_table(path: Path) -> pa.Table:
    data = pa.table({"id": list(range(20)), "s": [f"row {i}" for i in range(20)]})
    dl.write_table(str(path), data)
    return data


def register_external(uc: Uc, name: str, location: Path) -> Any:
    return uc(
        TablesApi,
        "create_table",
        {
            "name": name,
            "catalog_name": "main",
            "schema_name": "sales",
            "table_type": "EXTERNAL",
            "data_source_format": "DELTA",
            "storage_location": str(location),
            "columns": [],
        },
    )


def test_polars_lists_describes_and_scans_through_the_server(server: Any, tmp_path: Path) -> None:
    before = int(time.time() * 1000)
    ops = Uc(server.url, server.keys["ops"])
    made = ops(CatalogsApi, "create_catalog", {"name": "main", "comment": "the main one"})
    schema = ops(SchemasApi, "create_schema", {"name": "sales", "catalog_name": "main"})
    external_table(tmp_path / "ext")
    registered = register_external(ops, "orders", tmp_path / "ext")
    # A managed table, created by the writer through the catalog's Lance routes.
    writer = dl.connect_catalog({"type": "rest", "uri": server.url, "token": server.keys["etl"]})
    writer.write_table(["main", "sales", "events"], pa.table({"id": [1, 2, 3]}))
    after = int(time.time() * 1000)

    cat = polars_catalog(server, "etl")
    (catalog,) = cat.list_catalogs()
    assert (catalog.name, catalog.comment, catalog.created_by) == ("main", "the main one", "ops")
    assert before <= ms(catalog.created_at) <= after and catalog.created_at == catalog.updated_at
    assert catalog.updated_by == "ops" and ms(catalog.created_at) == made.created_at
    assert catalog.storage_location == made.storage_location
    assert made.owner == "ops" and made.id

    (namespace,) = cat.list_namespaces("main")
    assert (namespace.name, namespace.created_by, namespace.updated_by) == ("sales", "ops", "ops")
    assert before <= ms(namespace.created_at) <= after
    assert schema.full_name == "main.sales" and schema.schema_id and schema.owner == "ops"
    assert namespace.storage_location == schema.storage_location
    assert schema.storage_location is not None
    assert schema.storage_location.endswith("/main/sales")

    tables = {t.name: t for t in cat.list_tables("main", "sales")}
    assert sorted(tables) == ["events", "orders"]
    orders = cat.get_table_info("main", "sales", "orders")
    assert orders == tables["orders"]  # ids, times and principals the same in list and get
    assert orders.table_id == registered.table_id
    assert (orders.table_type, orders.created_by, orders.updated_by) == ("EXTERNAL", "ops", "ops")
    assert before <= ms(orders.created_at) <= after
    assert orders.storage_location == (tmp_path / "ext").as_uri()

    events = cat.get_table_info("main", "sales", "events")
    assert events == tables["events"]
    assert (events.table_type, events.created_by, events.updated_by) == ("MANAGED", "etl", "etl")
    assert before <= ms(events.created_at) <= ms(events.updated_at) <= after
    assert events.table_id == events.properties["io.unitycatalog.tableId"]
    # The spec's model of the answer: the owner is the creator.
    got = ops(TablesApi, "get_table", "main.sales.events")
    assert (got.owner, got.table_id, got.created_at) == (
        "etl",
        events.table_id,
        ms(events.created_at),
    )

    # A commit by another principal is the table's last update.
    admin = dl.connect_catalog({"type": "rest", "uri": server.url, "token": server.keys["ops"]})
    dl.write_table(
        admin.load_table(["main", "sales", "events"]), pa.table({"id": [4]}), mode="append"
    )
    again = cat.get_table_info("main", "sales", "events")
    assert (again.created_by, again.updated_by) == ("etl", "ops")
    assert again.created_at == events.created_at
    assert ms(again.updated_at) > ms(events.updated_at)

    # polars scans the external table: deltalog's rows.
    scanned = cat.scan_table("main", "sales", "orders").collect().sort("id")
    ours = pl.from_arrow(dl.DeltaTable(str(tmp_path / "ext")).to_pyarrow_table())
    assert isinstance(ours, pl.DataFrame)
    assert scanned.to_dicts() == ours.sort("id").to_dicts() and scanned.height == 20


def test_updates_record_their_principal(server: Any) -> None:
    ops = Uc(server.url, server.keys["ops"])
    created = ops(CatalogsApi, "create_catalog", {"name": "main"})
    ops(SchemasApi, "create_schema", {"name": "sales", "catalog_name": "main"})
    time.sleep(0.01)
    updated = ops(CatalogsApi, "update_catalog", "main", {"comment": "now described"})
    assert updated.created_at == created.created_at and updated.updated_at > created.created_at
    assert (updated.created_by, updated.updated_by, updated.owner) == ("ops", "ops", "ops")
    # A namespace made through the Lance routes is recorded as its principal's too.
    lance = dl.connect_catalog({"type": "rest", "uri": server.url, "token": server.keys["ops"]})
    lance.create_namespace(["main", "ops_made"])
    (info,) = [
        n for n in polars_catalog(server, "etl").list_namespaces("main") if n.name == "ops_made"
    ]
    assert info.created_by == "ops"


# -- a catalog database older than the columns -------------------------------------------------


def _old_rows(kind: str, where: str, location: Path) -> int:
    """A catalog ``main``, its schema ``sales`` and the external table ``orders`` at
    ``location``, inserted as deltalog 6's schema holds them. Returns the table's created_ms."""
    created = 1_700_000_000_000
    statements = [
        "INSERT INTO namespaces (parent_id, name, name_key) VALUES (0, 'main', 'main')",
        "INSERT INTO namespaces (parent_id, name, name_key) "
        "VALUES ((SELECT id FROM namespaces WHERE name = 'main'), 'sales', 'sales')",
        "INSERT INTO tables (namespace_id, name, name_key, location, managed, created_ms, uuid) "
        "VALUES ((SELECT id FROM namespaces WHERE name = 'sales'), 'orders', 'orders', "
        f"'{location}', false, {created}, '8d6b1c7e-8a63-4e0b-9a55-5b8f0f7e0c11')",
    ]
    if kind == "sqlite":
        lite = sqlite3.connect(where)
        with lite:
            for sql in statements:
                lite.execute(sql.replace("false", "0"))
        lite.close()
    else:
        import psycopg

        with psycopg.connect(where) as db:
            for sql in statements:
                db.execute(sql.encode())
    return created


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_old_catalog_database_is_upgraded_and_answers(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = (
        str(tmp_path / "old.db") if kind == "sqlite" else request.getfixturevalue("postgres_uri")
    )
    old_store(kind, where, 6)
    external_table(tmp_path / "ext")
    created = _old_rows(kind, where, tmp_path / "ext")
    tokens = tmp_path / "tokens.json"
    keys = {"ops": add_token(tokens, "ops", "admin")}
    db = f"sqlite://{where}" if kind == "sqlite" else where
    with catalog_server.running(tmp_path / "server", db=db, tokens=tokens) as server:
        cat = pl.Catalog(server.url, bearer_token=keys["ops"], require_https=False)
        (catalog,) = cat.list_catalogs()
        # Never recorded: null, not invented.
        assert (catalog.name, catalog.created_at, catalog.created_by) == ("main", None, None)
        (namespace,) = cat.list_namespaces("main")
        assert (namespace.created_at, namespace.updated_by) == (None, None)
        (orders,) = cat.list_tables("main", "sales")
        assert ms(orders.created_at) == created and orders.created_by is None
        assert orders.updated_at == orders.created_at  # never updated since: its creation
        assert orders.table_id == "8d6b1c7e-8a63-4e0b-9a55-5b8f0f7e0c11"
        assert cat.get_table_info("main", "sales", "orders") == orders
        scanned = cat.scan_table("main", "sales", "orders").collect()
        assert scanned.height == 20

        # Updates after the upgrade are recorded.
        ops = Uc(server.url, keys["ops"])
        ops(SchemasApi, "update_schema", "main.sales", {"comment": "described"})
        (namespace,) = cat.list_namespaces("main")
        assert namespace.created_at is None and namespace.updated_by == "ops"
        assert namespace.updated_at is not None and ms(namespace.updated_at) > created
        ops(SchemasApi, "create_schema", {"name": "fresh", "catalog_name": "main"})
        fresh = next(n for n in cat.list_namespaces("main") if n.name == "fresh")
        assert fresh.created_by == "ops" and fresh.created_at is not None
    if kind == "sqlite":
        from deltalog.catalog.stores.sqlite import MIGRATIONS

        db_ = sqlite3.connect(where)
        # Upgraded to the latest schema (7 added these columns; later ones followed).
        assert db_.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]
        db_.close()
