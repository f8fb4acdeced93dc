"""pyiceberg's catalog verbs on every catalog deltalog ships: namespace properties (load and
update, with pyiceberg's summary), ``create_namespace_if_not_exists``,
``create_table_if_not_exists``, ``rename_table`` (within and across namespaces) and
``purge_table``. Each catalog kind runs the same script; where a kind cannot do something
(a directory catalog has no namespaces; Unity Catalog renames within a schema), it says so
with a typed error, and the test checks that error."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from catalog_configs import new_catalog
from deltalog.catalog.base import PropertiesUpdateSummary

Config = dict[str, str]

KINDS = ["dir", "sqlite", "postgresql", "rest", "unity"]


@pytest.fixture(params=KINDS)
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Config]:
    with new_catalog(request.param, request, tmp_path) as made:
        yield made


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def name(config: Config, table: str, namespace: str = "sales") -> str:
    """A table identifier in the catalog's kind: a directory catalog has no namespaces, a
    Unity Catalog client's namespace is its configured schema."""
    if config["type"] == "dir":
        return table
    if config["type"] == "unity":
        return f"default.{table}"
    return f"{namespace}.{table}"


def prepare(cat: Any, config: Config) -> None:
    if config["type"] not in ("dir", "unity"):
        cat.create_namespace("sales")


def test_namespace_properties(config: Config) -> None:
    cat = dl.connect_catalog(config)
    if config["type"] == "dir":
        with pytest.raises(dl.UnsupportedFeatureError):
            cat.create_namespace("sales", {"owner": "ops"})
        with pytest.raises(dl.UnsupportedFeatureError):
            cat.load_namespace_properties("sales")
        return
    ns = "main.sales" if config["type"] == "unity" else "sales"
    if config["type"] == "unity":
        ns = "sales"  # a schema of the client's catalog
    cat.create_namespace(ns, {"owner": "ops", "tier": "gold"})
    assert cat.load_namespace_properties(ns) == {"owner": "ops", "tier": "gold"}
    summary = cat.update_namespace_properties(
        ns, removals={"tier", "absent"}, updates={"owner": "finance", "region": "eu"}
    )
    assert isinstance(summary, PropertiesUpdateSummary)
    assert summary == PropertiesUpdateSummary(
        removed=["tier"], updated=["owner", "region"], missing=["absent"]
    )
    assert cat.load_namespace_properties(ns) == {"owner": "finance", "region": "eu"}
    with pytest.raises(dl.InvalidArgumentError, match="both removed and updated"):
        cat.update_namespace_properties(ns, removals=["owner"], updates={"owner": "x"})
    assert cat.load_namespace_properties(ns) == {"owner": "finance", "region": "eu"}
    with pytest.raises(dl.NamespaceNotFoundError):
        cat.load_namespace_properties("nowhere")
    # pyiceberg's create_namespace_if_not_exists leaves an existing namespace as it is.
    cat.create_namespace_if_not_exists(ns, {"owner": "someone else"})
    assert cat.load_namespace_properties(ns)["owner"] == "finance"
    cat.create_namespace_if_not_exists("fresh", {"a": "1"})
    assert cat.load_namespace_properties("fresh") == {"a": "1"}


def test_concurrent_property_updates_of_different_keys_both_land(config: Config) -> None:
    """The stores update a namespace's properties in one locked transaction. (The Lance
    Namespace protocol has no partial update: the REST client reads and writes the whole set,
    and may lose one of two concurrent updates; it is left out here.)"""
    if config["type"] not in ("sqlite", "postgresql"):
        pytest.skip("only the stores update properties atomically")
    cat = dl.connect_catalog(config)
    cat.create_namespace("sales")
    errors: list[BaseException] = []

    def update(i: int) -> None:
        try:
            dl.connect_catalog(config).update_namespace_properties(
                "sales", updates={f"k{i}": str(i)}
            )
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=update, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cat.load_namespace_properties("sales") == {f"k{i}": str(i) for i in range(8)}


def test_create_table_if_not_exists(config: Config) -> None:
    cat = dl.connect_catalog(config)
    prepare(cat, config)
    orders = name(config, "orders")
    schema = pa.schema([("id", pa.int64())])
    first = cat.create_table_if_not_exists(orders, schema)
    assert isinstance(first, dl.DeltaTable) and first.version() == 0
    cat.write_table(orders, rows(1, 2), mode="append")
    again = cat.create_table_if_not_exists(orders, pa.schema([("other", pa.string())]))
    assert again.schema() == schema  # the existing table, its schema untouched
    assert ids(again) == [1, 2]


def test_rename_table(config: Config) -> None:
    cat = dl.connect_catalog(config)
    prepare(cat, config)
    orders, old = name(config, "orders"), name(config, "orders_old")
    cat.write_table(orders, rows(1, 2, 3))
    renamed = cat.rename_table(orders, old)
    assert isinstance(renamed, dl.DeltaTable) and ids(renamed) == [1, 2, 3]
    assert not cat.table_exists(orders) and cat.table_exists(old)
    with pytest.raises(dl.TableNotFoundError):
        cat.load_table(orders)
    # The renamed table keeps committing (through the catalog, where it manages the table).
    cat.write_table(old, rows(4), mode="append")
    assert ids(cat.load_table(old)) == [1, 2, 3, 4]
    # The old name is free: a new table of that name is a table of its own.
    cat.write_table(orders, rows(9))
    assert ids(cat.load_table(orders)) == [9]
    assert ids(cat.load_table(old)) == [1, 2, 3, 4]
    with pytest.raises(dl.AlreadyExistsError):
        cat.rename_table(orders, old)
    assert ids(cat.load_table(orders)) == [9]
    with pytest.raises(dl.TableNotFoundError):
        cat.rename_table(name(config, "missing"), name(config, "anything"))


def test_rename_table_to_another_namespace(config: Config) -> None:
    if config["type"] in ("dir", "unity"):
        pytest.skip("no namespaces to move between (dir), or within its schema only (unity)")
    cat = dl.connect_catalog(config)
    cat.create_namespace("sales")
    cat.create_namespace("archive")
    cat.write_table("sales.orders", rows(5))
    moved = cat.rename_table("sales.orders", "archive.orders_2025")
    assert ids(moved) == [5]
    assert cat.list_tables("sales") == [] and cat.list_tables("archive") == ["orders_2025"]
    cat.write_table("archive.orders_2025", rows(6), mode="append")
    assert ids(cat.load_table("archive.orders_2025")) == [5, 6]
    with pytest.raises(dl.NamespaceNotFoundError):
        cat.rename_table("archive.orders_2025", "nowhere.orders")
    assert ids(cat.load_table("archive.orders_2025")) == [5, 6]


def test_purge_table(config: Config, tmp_path: Path) -> None:
    cat = dl.connect_catalog(config)
    prepare(cat, config)
    orders = name(config, "orders")
    cat.write_table(orders, rows(1))
    location = cat.load_table(orders).table_uri.removeprefix("file://")
    assert Path(location, "_delta_log").is_dir()
    cat.purge_table(orders)
    assert not cat.table_exists(orders)
    assert not Path(location).exists()


def test_only_admins_rename_and_set_namespace_properties_on_the_server(tmp_path: Path) -> None:
    """``RenameTable`` and a namespace's properties are the server admins' (a writer commits
    to tables, it does not move them or relabel namespaces): 403 for a writer, the catalog
    unchanged."""
    import catalog_server
    from test_catalog_tokens import token_cli

    tokens = tmp_path / "tokens.json"
    tokens_of: dict[str, str] = {}
    for who, role in (("ops", "admin"), ("etl", "writer")):
        code, out, err = token_cli("create", "--tokens", str(tokens), "--name", who, "--role", role)
        assert code == 0, err
        tokens_of[who] = out.strip().split()[-1]
    with catalog_server.running(
        tmp_path / "server", warehouse=str(tmp_path / "wh"), tokens=tokens
    ) as server:
        admin = dl.connect_catalog({"type": "rest", "uri": server.url, "token": tokens_of["ops"]})
        writer = dl.connect_catalog({"type": "rest", "uri": server.url, "token": tokens_of["etl"]})
        admin.create_namespace("sales", {"owner": "ops"})
        writer.write_table("sales.orders", rows(1))
        with pytest.raises(dl.CatalogPermissionError):
            writer.rename_table("sales.orders", "sales.mine")
        with pytest.raises(dl.CatalogPermissionError):
            writer.update_namespace_properties("sales", updates={"owner": "etl"})
        assert admin.list_tables("sales") == ["orders"]
        assert admin.load_namespace_properties("sales") == {"owner": "ops"}
        assert ids(admin.rename_table("sales.orders", "sales.mine")) == [1]
        writer.write_table("sales.mine", rows(2), mode="append")
        assert ids(writer.load_table("sales.mine")) == [1, 2]
