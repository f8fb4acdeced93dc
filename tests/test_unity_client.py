"""deltalog's Unity Catalog client (``type: unity``, issue #32) against a real ``deltalog
catalog serve`` process: a catalog's schemas and tables, ``uc://`` URIs, governance and errors
as deltalog exceptions, and the tables it creates read and written by DuckDB (an engine that
is not deltalog). The read/write/concurrency suite shared with the other catalogs is
``test_catalog_stores.py`` (its ``unity`` parameter)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl
from deltalog.server.auth import add_token
from unity_helpers import duckdb_attached


@pytest.fixture
def server(tmp_path: Path) -> Any:
    tokens = tmp_path / "tokens.json"
    keys = {role: add_token(tokens, role, role) for role in ("reader", "writer", "admin")}
    with catalog_server.running(tmp_path / "server", tokens=tokens) as running:
        running.keys = keys
        rest = dl.connect_catalog({"type": "rest", "uri": running.url, "token": keys["admin"]})
        rest.create_namespace("main")
        yield running


def unity(server: Any, role: str = "admin", **extra: str) -> Any:
    config = {"type": "unity", "uri": server.url, "token": server.keys[role], "catalog": "main"}
    return dl.connect_catalog({**config, **extra})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def rows(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def test_schemas_tables_and_names(server: Any) -> None:
    uc = unity(server)
    uc.create_namespace("sales")
    uc.create_namespace("main.hr")  # the catalog's own name may lead
    assert uc.list_namespaces() == ["hr", "sales"] and uc.list_namespaces("sales") == []
    assert uc.namespace_exists("sales") and not uc.namespace_exists("nope")
    with pytest.raises(dl.InvalidArgumentError, match="one schema name"):
        uc.create_namespace("a.b.c")
    uc.write_table("sales.orders", rows(1, 2))
    uc.write_table("main.sales.items", rows(3))
    assert uc.list_tables("sales") == ["items", "orders"]
    assert uc.list_tables() == ["sales.items", "sales.orders"]
    assert uc.table_exists("sales.orders") and not uc.table_exists("sales.nope")
    with pytest.raises(dl.AlreadyExistsError):
        uc.create_table("sales.orders", pa.schema({"id": pa.int64()}))
    # The same tables through the Lance routes, as main$sales$orders.
    rest = dl.connect_catalog({"type": "rest", "uri": server.url, "token": server.keys["admin"]})
    assert rest.list_tables("main.sales") == ["items", "orders"]
    assert ids(rest.load_table("main.sales.orders")) == [1, 2]
    t = uc.load_table("sales.orders")
    assert t.protocol().reader_features and "catalogManaged" in t.protocol().reader_features
    assert t.metadata().configuration["io.unitycatalog.tableId"]
    described = uc.describe_table("sales.orders")
    assert described.catalog_managed and described.latest_version == 0
    uc.rename_table("sales.items", "things")
    assert uc.list_tables("sales") == ["orders", "things"]
    uc.drop_table("sales.things")
    assert uc.list_tables("sales") == ["orders"]
    with pytest.raises(dl.TableNotFoundError):
        uc.load_table("sales.things")
    with pytest.raises(dl.InvalidArgumentError):
        uc.drop_namespace("sales")  # not empty


def test_uc_uris(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    uc = unity(server)
    uc.create_namespace("sales")
    uc.write_table("sales.orders", rows(1))
    options = {"unity_catalog_uri": server.url, "unity_catalog_token": server.keys["writer"]}
    t = dl.DeltaTable("uc://main.sales.orders", storage_options=options)
    assert ids(t) == [1]
    dl.write_table(t, rows(2), mode="append")
    monkeypatch.setenv("UNITY_CATALOG_URI", server.url)
    monkeypatch.setenv("UNITY_CATALOG_TOKEN", server.keys["reader"])
    assert ids(dl.DeltaTable("uc://main.sales.orders")) == [1, 2]
    assert dl.DeltaTable("uc://main.sales.orders", version=0).version() == 0
    with pytest.raises(dl.InvalidArgumentError, match=r"catalog\.schema\.table"):
        dl.DeltaTable("uc://main.orders")


def test_governance_and_errors(server: Any) -> None:
    unity(server).create_namespace("sales")
    unity(server).write_table("sales.orders", rows(1))
    writer, reader = unity(server, "writer"), unity(server, "reader")
    dl.write_table(writer.load_table("sales.orders"), rows(2), mode="append")
    with pytest.raises(dl.CatalogPermissionError):
        dl.write_table(reader.load_table("sales.orders"), rows(3), mode="append")
    # A writer cannot change the table's definition: the server reads it from the commit.
    with pytest.raises(dl.CatalogPermissionError):
        writer.load_table("sales.orders").alter.set_properties({"delta.appendOnly": "true"})
    unity(server).load_table("sales.orders").alter.set_properties({"delta.appendOnly": "true"})
    assert (
        unity(server).load_table("sales.orders").metadata().configuration["delta.appendOnly"]
        == "true"
    )
    with pytest.raises(dl.CatalogPermissionError):
        reader.create_namespace("x")
    with pytest.raises(dl.CatalogAuthenticationError):
        dl.connect_catalog(
            {"type": "unity", "uri": server.url, "token": "wrong", "catalog": "main"}
        ).list_namespaces()
    assert ids(reader.load_table("sales.orders")) == [1, 2]


def test_racing_writers_rebase(server: Any) -> None:
    uc = unity(server)
    uc.create_namespace("sales")
    uc.write_table("sales.orders", rows(0))
    a, b = uc.load_table("sales.orders"), unity(server).load_table("sales.orders")
    dl.write_table(a, rows(1), mode="append")
    dl.write_table(b, rows(2), mode="append")  # loses version 1, rebases onto it: version 2
    t = uc.load_table("sales.orders")
    assert t.version() == 2 and ids(t) == [0, 1, 2]


def test_duckdb_reads_and_writes_tables_the_unity_client_creates(server: Any) -> None:
    uc = unity(server, "writer")
    unity(server).create_namespace("sales")
    uc.write_table("sales.orders", rows(1, 2), partition_by=None)
    con = duckdb_attached(server.url, "main", "sales", token=server.keys["writer"])
    assert [r[0] for r in con.execute("SELECT id FROM uc.sales.orders ORDER BY id").fetchall()] == [
        1,
        2,
    ]
    con.execute("INSERT INTO uc.sales.orders VALUES (3)")
    t = uc.load_table("sales.orders")
    assert ids(t) == [1, 2, 3]
    dl.write_table(t, rows(4), mode="append")
    again = duckdb_attached(server.url, "main", "sales", token=server.keys["reader"], alias="u2")
    assert [
        r[0] for r in again.execute("SELECT id FROM u2.sales.orders ORDER BY id").fetchall()
    ] == [
        1,
        2,
        3,
        4,
    ]


def test_lost_answers_never_commit_twice(server: Any, tmp_path: Path) -> None:
    """Through a proxy that drops the answer of each commit (after the server acted) while
    another writer commits and publishes it: the client resends the identical updateTable,
    which the server answers as the replay it is; every acknowledged row is in the table
    exactly once. When no answer comes at all, the client asks the catalog whether its commit
    landed (it did)."""
    from test_catalog_exactly_once import DroppingProxy

    admin = unity(server)
    admin.create_namespace("sales")
    admin.write_table("sales.t", rows(0))
    proxy = DroppingProxy(server.url)
    try:
        via_proxy = dl.connect_catalog(
            {
                "type": "unity",
                "uri": proxy.url,
                "token": server.keys["writer"],
                "catalog": "main",
                "timeout": 20,
            }
        )
        other = iter(range(1000, 2000))
        acknowledged = [0]

        def other_writer_commits() -> None:
            value = next(other)
            dl.write_table(admin.load_table("sales.t"), rows(value), mode="append")
            acknowledged.append(value)

        state = {"drop": False}
        commit_path = "/api/2.1/unity-catalog/delta/v1/catalogs/main/schemas/sales/tables/t"

        def drop_first_commit_answer(method: str, path: str) -> bool:
            if method == "POST" and path == commit_path and state["drop"]:
                state["drop"] = False
                return True
            return False

        proxy.policy = drop_first_commit_answer
        proxy.before_drop = other_writer_commits
        for i in range(1, 11):
            state["drop"] = True
            dl.write_table(via_proxy.load_table("sales.t"), rows(i), mode="append")
            acknowledged.append(i)
        assert proxy.dropped >= 10
        final = admin.load_table("sales.t")
        assert ids(final) == sorted(acknowledged)
        assert final.version() == len(acknowledged) - 1  # one version per acknowledged row

        # Every commit answer lost (the retries' too): settled by asking for the commits.
        proxy.before_drop = None
        proxy.policy = lambda method, path: method == "POST" and path == commit_path
        dl.write_table(via_proxy.load_table("sales.t"), rows(99), mode="append")
        assert ids(admin.load_table("sales.t")) == sorted([*acknowledged, 99])
    finally:
        proxy.close()


def test_the_last_commit_is_reported_at_exit_without_waiting(server: Any) -> None:
    """A process that only appends through the unity client and exits: its exit report
    (``set-latest-backfilled-version`` of its last commit) reaches the server, and the exit
    waits for that one request only (the transport's event loop was stopped before the
    report was sent, which then waited for the full timeout)."""
    uc = unity(server)
    uc.create_namespace("sales")
    uc.write_table("sales.orders", rows(1))
    script = (
        "import sys, pyarrow as pa, deltalog as dl\n"
        "uc = dl.connect_catalog({'type': 'unity', 'uri': sys.argv[1], 'token': sys.argv[2],\n"
        "                         'catalog': 'main', 'timeout': 30})\n"
        "t = uc.load_table('sales.orders')\n"
        "dl.write_table(t, pa.table({'id': pa.array([2], pa.int64())}), mode='append')\n"
        "print(t.version(), flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, server.url, server.keys["writer"]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    printed = proc.stdout.readline()
    written = time.monotonic()
    _, err = proc.communicate(timeout=120)
    exiting = time.monotonic() - written
    assert proc.returncode == 0 and printed.strip() == "1", err
    assert exiting < 3.0, f"the exit took {exiting:.1f} s: {err}"
    assert "was never awaited" not in err and "Task was destroyed" not in err, err
    # The server got the report: it checked _delta_log/1.json and forgot the commit.
    assert uc.load_response("sales", "orders").commits in (None, [])
    assert uc.load_table("sales.orders").version() == 1


def test_catalog_verbs(server: Any) -> None:
    """pyiceberg's verbs on the unity client: namespace properties (getSchema / updateSchema),
    rename within a schema (the Delta API's renameTable), purge_table."""
    uc = unity(server)
    uc.create_namespace("sales", {"owner": "ops", "tier": "gold"})
    assert uc.load_namespace_properties("sales") == {"owner": "ops", "tier": "gold"}
    summary = uc.update_namespace_properties("sales", removals=["tier", "nope"], updates={"a": "1"})
    assert (summary.removed, summary.updated, summary.missing) == (["tier"], ["a"], ["nope"])
    assert uc.load_namespace_properties("main.sales") == {"owner": "ops", "a": "1"}
    with pytest.raises(dl.InvalidArgumentError, match="both removed and updated"):
        uc.update_namespace_properties("sales", removals=["a"], updates={"a": "2"})
    with pytest.raises(dl.NamespaceNotFoundError):
        uc.load_namespace_properties("nope")
    with pytest.raises(dl.CatalogPermissionError):
        unity(server, "writer").update_namespace_properties("sales", updates={"b": "2"})
    assert uc.load_namespace_properties("sales") == {"owner": "ops", "a": "1"}
    uc.write_table("sales.orders", rows(1, 2))
    renamed = uc.rename_table("sales.orders", "sales.orders2")
    assert isinstance(renamed, dl.DeltaTable) and ids(renamed) == [1, 2]
    assert uc.list_tables("sales") == ["orders2"]
    uc.create_namespace("hr")
    with pytest.raises(dl.UnsupportedFeatureError, match="within its schema"):
        uc.rename_table("sales.orders2", "hr.orders2")
    with pytest.raises(dl.UnsupportedFeatureError, match="within its schema"):
        uc.rename_table("sales.orders2", "other.sales.orders2")
    assert ids(uc.rename_table("main.sales.orders2", "orders")) == [1, 2]
    location = uc.describe_table("sales.orders").location
    uc.purge_table("sales.orders")
    assert not uc.table_exists("sales.orders") and not Path(location).exists()
