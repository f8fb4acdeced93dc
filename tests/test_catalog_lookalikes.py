"""Look-alike names (issue #42, B): one rule in every catalog (``deltalog.catalog.names``) —
names in Unicode normalization form C, one name in any case or compatibility form (as Unity
Catalog compares names), no invisible or format characters, no surrounding whitespace, no
mixed scripts (UTS #39), and no new name confusable with one its parent holds. Each kind of
look-alike on every catalog: directory, SQLite, PostgreSQL, REST (a real server process) and
Unity Catalog (deltalog's UC client over the same server's UC routes), and on the REST and UC
routes by raw HTTP; the SQL stores' migration of existing names.

On the catalogs before the fix ``Main``/``main``, NFC/NFD spellings, ``mаin`` with a Cyrillic
``а``, ``ma\\u200bin`` and `` main`` were different tables side by side.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pytest
from tests.old_schemas import execute, old_store

import catalog_server
import deltalog as dl
from catalog_configs import Config, new_catalog
from deltalog.catalog.names import InvalidNameError, check_name
from test_unity_hostile import send, uc_shape

NFD_CAFE = unicodedata.normalize("NFD", "café")
NFC_CAFE = unicodedata.normalize("NFC", "café")
CYRILLIC_CAP = "\u0441\u0430\u0440"  # "сар": с, а, р look like Latin c, a, p

#: (a look-alike of ``main``, the words of the rule it breaks)
REFUSED = [
    ("m\u0430in", "one script"),  # U+0430 CYRILLIC SMALL LETTER A
    ("m\u03b1in", "one script"),  # U+03B1 GREEK SMALL LETTER ALPHA
    ("ma\u200bin", "invisible"),  # U+200B ZERO WIDTH SPACE
    ("main\u200d", "invisible"),  # U+200D ZERO WIDTH JOINER
    ("\ufeffmain", "invisible"),  # U+FEFF ZERO WIDTH NO-BREAK SPACE
    ("ma\u00adin", "invisible"),  # U+00AD SOFT HYPHEN
    ("main\ufe0f", "invisible"),  # U+FE0F VARIATION SELECTOR-16
    ("ma\u00a0in", "U\\+0020"),  # U+00A0 NO-BREAK SPACE
    ("ma\u3000in", "U\\+0020"),  # U+3000 IDEOGRAPHIC SPACE
    (" main", "whitespace"),
    ("main ", "whitespace"),
]


def test_the_rule() -> None:
    from deltalog.catalog.names import fold_name, name_key

    for name, rule in REFUSED:
        with pytest.raises(InvalidNameError, match=rule):
            check_name(name)
    assert check_name(NFD_CAFE) == NFC_CAFE
    for good in ("main", "Main", "a b", "東京", "データ_2026", "Ελλάδα", "Москва", "x-1_y"):
        assert check_name(good) == good
    assert fold_name("Main") == fold_name("MAIN") == fold_name("ｍａｉｎ") == "main"
    assert name_key(CYRILLIC_CAP) == name_key("CAP") == "cap"
    assert name_key("Москва") != name_key("moskva")


@pytest.fixture(params=["dir", "sqlite", "postgresql", "rest", "unity"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Config]:
    with new_catalog(request.param, request, tmp_path) as config:
        yield config


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def test_look_alike_tables(config: Config) -> None:
    """Another case or normalization form of a table's name is that table; the other kinds of
    look-alike are refused, naming the rule; nothing else is created."""
    cat = dl.connect_catalog(config)
    cat.write_table("main", rows(1))
    for spelling in ("Main", "MAIN", "ｍａｉｎ"):
        assert cat.table_exists(spelling)
        assert ids(cat.load_table(spelling)) == [1]
        with pytest.raises(dl.InvalidArgumentError, match="already"):
            cat.write_table(spelling, rows(2))
    assert cat.write_table("Main", rows(3), mode="append") == 1
    assert ids(cat.load_table("main")) == [1, 3]
    for name, rule in REFUSED:
        with pytest.raises(dl.InvalidArgumentError, match=rule):
            cat.write_table(name, rows(4))
        with pytest.raises(dl.InvalidArgumentError, match=rule):
            cat.load_table(name)
        assert not cat.table_exists(name)
    # NFD and NFC: one name, stored in NFC.
    cat.write_table(NFD_CAFE, rows(5))
    assert ids(cat.load_table(NFC_CAFE)) == [5]
    with pytest.raises(dl.InvalidArgumentError, match="already"):
        cat.write_table(NFC_CAFE, rows(6))
    # A whole-script look-alike of an existing name.
    cat.write_table("cap", rows(7))
    with pytest.raises(dl.InvalidArgumentError, match="confusable with 'cap'"):
        cat.write_table(CYRILLIC_CAP, rows(8))
    here = "default" if config["type"] == "unity" else None  # UC: the schema's tables
    assert sorted(cat.list_tables(here)) == sorted(["main", NFC_CAFE, "cap"])
    cat.drop_table("MAIN")
    assert sorted(cat.list_tables(here)) == sorted([NFC_CAFE, "cap"])


def test_look_alike_namespaces(config: Config) -> None:
    """Namespaces (every catalog that has them): one name in any case or form; look-alikes
    refused; a table and a namespace may not share a name in any spelling."""
    if config["type"] in ("dir", "unity"):
        pytest.skip("the directory catalog has no namespaces; UC's are tested by raw HTTP")
    cat = dl.connect_catalog(config)
    cat.create_namespace("Sales")
    assert cat.namespace_exists("sales") and cat.namespace_exists("SALES")
    with pytest.raises(dl.AlreadyExistsError):
        cat.create_namespace("sales")
    cat.write_table("sales.orders", rows(1))
    assert ids(cat.load_table("SALES.Orders")) == [1]
    assert cat.list_tables("sAlEs") == ["orders"]
    for name, rule in REFUSED:
        with pytest.raises(dl.InvalidArgumentError, match=rule):
            cat.create_namespace(name)
    cat.create_namespace("cap")
    with pytest.raises(dl.InvalidArgumentError, match="confusable with 'cap'"):
        cat.create_namespace(CYRILLIC_CAP)
    with pytest.raises(dl.AlreadyExistsError):
        cat.write_table("CAP", rows(2))  # the name of a namespace
    with pytest.raises(dl.AlreadyExistsError):
        cat.create_namespace("sales.ORDERS")  # the name of a table
    assert cat.list_namespaces() == ["Sales", "cap"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from deltalog.server.auth import add_token

    base = tmp_path_factory.mktemp("lookalikes")
    tokens = base / "tokens.json"
    keys = {role: add_token(tokens, role, role) for role in ("reader", "writer", "admin")}
    with catalog_server.running(base / "server", tokens=tokens) as running:
        running.keys = keys
        yield running


P = "/api/2.1/unity-catalog"


def test_the_routes_apply_the_rule(server: Any) -> None:
    """Raw HTTP, no deltalog client in between: the Lance routes answer 400 code 13 and the UC
    routes 400 INVALID_ARGUMENT for every look-alike; another case of an existing name is that
    object (409 to create it again, found by any case)."""
    assert send(server, "POST", "/v1/namespace/main/create", b"{}")[0] == 200
    for name, _ in REFUSED:
        wire = quote(name, safe="")
        got = send(server, "POST", f"/v1/namespace/{wire}/create", b"{}")
        assert got[0] == 400 and got[1]["code"] == 13, (name, got)
        got = send(server, "POST", f"{P}/catalogs", json.dumps({"name": name}).encode())
        assert uc_shape(got, 400) == "INVALID_ARGUMENT", (name, got)
    got = send(server, "POST", "/v1/namespace/MAIN/create", b"{}")
    assert got[0] == 409, got
    got = send(server, "POST", f"{P}/catalogs", json.dumps({"name": "Main"}).encode())
    assert uc_shape(got, 409) == "ALREADY_EXISTS"
    got = send(server, "GET", f"{P}/catalogs/MAIN", role="reader")
    assert got[0] == 200 and got[1]["name"] == "main", got
    body = json.dumps({"name": "Default", "catalog_name": "MAIN"}).encode()
    assert send(server, "POST", f"{P}/schemas", body)[0] == 200
    body = json.dumps({"name": "default", "catalog_name": "main"}).encode()
    assert uc_shape(send(server, "POST", f"{P}/schemas", body), 409) == "ALREADY_EXISTS"
    body = json.dumps({"name": "d\u0435fault", "catalog_name": "main"}).encode()  # Cyrillic е
    assert uc_shape(send(server, "POST", f"{P}/schemas", body), 400) == "INVALID_ARGUMENT"
    got = send(server, "POST", f"{P}/catalogs", json.dumps({"name": "cap"}).encode())
    assert got[0] == 200
    got = send(server, "POST", f"{P}/catalogs", json.dumps({"name": CYRILLIC_CAP}).encode())
    assert uc_shape(got, 400) == "INVALID_ARGUMENT" and "confusable" in got[1]["message"]
    nfd = quote(NFD_CAFE, safe="")
    assert send(server, "POST", f"/v1/namespace/{nfd}/create", b"{}")[0] == 200
    listed = send(server, "GET", "/v1/namespace/$/list", role="reader")[1]["namespaces"]
    assert NFC_CAFE in listed and NFD_CAFE not in listed


# -- the SQL stores' migration of existing names ------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def old_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, Config]:
    if request.param == "sqlite":
        where = str(tmp_path / "old.db")
        config = {"type": "sqlite", "path": where, "warehouse": str(tmp_path / "wh")}
    else:
        where = request.getfixturevalue("postgres_uri")
        config = {"type": "postgresql", "uri": where, "warehouse": str(tmp_path / "wh")}
    old_store(request.param, where, 5)
    return request.param, where, config


def test_existing_names_are_migrated(old_catalog: tuple[str, str, Config], tmp_path: Path) -> None:
    """A catalog made before the rule: its names get keys (an NFD name stored as NFC) and are
    found in any case; a new look-alike of one is refused."""
    kind, where, config = old_catalog
    ext = tmp_path / "ext"
    dl.write_table(str(ext), rows(7))
    execute(
        kind,
        where,
        [
            ("INSERT INTO namespaces (parent_id, name) VALUES (0, ?)", ("Sales",)),
            (
                "INSERT INTO tables (namespace_id, name, location, managed, created_ms) "
                "VALUES (0, ?, ?, ?, 0)",
                (NFD_CAFE, str(ext), False),
            ),
        ],
    )
    cat = dl.connect_catalog(config)
    assert cat.list_namespaces() == ["Sales"] and cat.namespace_exists("SALES")
    assert cat.list_tables() == [NFC_CAFE]
    assert ids(cat.load_table("CAFÉ")) == [7]
    with pytest.raises(dl.AlreadyExistsError):
        cat.create_namespace("sales")


def test_colliding_names_refuse_the_migration(
    old_catalog: tuple[str, str, Config], tmp_path: Path
) -> None:
    """Two existing names that are one name under the rule (``Main`` and ``main``), and one the
    rule refuses: the catalog is not opened, the message names them, and nothing changed (the
    old schema still works)."""
    kind, where, config = old_catalog
    execute(
        kind,
        where,
        [
            ("INSERT INTO namespaces (parent_id, name) VALUES (0, ?)", ("Main",)),
            ("INSERT INTO namespaces (parent_id, name) VALUES (0, ?)", ("main",)),
            ("INSERT INTO namespaces (parent_id, name) VALUES (0, ?)", ("ma\u200bin",)),
        ],
    )
    with pytest.raises(dl.CatalogError, match=r"'Main' and 'main'.*one name") as e:
        dl.connect_catalog(config)
    assert "invisible" in str(e.value)
    assert sorted(old_store(kind, where, 5).child_namespaces(0)) == sorted(
        ["Main", "ma\u200bin", "main"]
    )
