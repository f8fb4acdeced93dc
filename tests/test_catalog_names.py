"""Names and locations, the same in every catalog (issue #30, "Data loss through names"):
directory, SQLite, PostgreSQL and REST (``deltalog catalog serve`` over SQLite, a real server
process) refuse the same names and say which rule a name breaks; a table's location is never
inside, equal to or above another table's; ``drop_table(purge=True)`` deletes only the table's
own directory, checked against the catalog's record of it; an admin cannot register one
directory under two names.

Each test here failed on the catalogs as they were before the rule (``["tmp", ".."]`` made the
warehouse root a table, which dropping deleted; ``["prod", "a/b"]`` nested inside table ``a``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from catalog_configs import new_catalog
from deltalog.catalog.names import InvalidNameError, canonical_location, check_name

Config = dict[str, str]

#: (identifier as names, the words of the rule it breaks)
BAD_NAMES = [
    (["tmp", ".."], "directory references"),
    (["tmp", "."], "directory references"),
    ([".."], "directory references"),
    (["prod", "a/b"], "'/'"),
    (["prod", "a\\b"], "'/' or '\\\\'"),
    (["ns", "x\x00y"], "control characters"),
    (["ns", "line\nbreak"], "control characters"),
    (["ns", "del\x7f"], "control characters"),
    (["ns", "c1\x85"], "control characters"),
    (["ns", ""], "empty"),
    (["ns", "a.b"], "delimiter '.'"),
    (["ns", "a$b"], "delimiter '\\$'"),
    (["ns", "x" * 256], "at most 255 bytes"),
    (["ns", "é" * 128], "at most 255 bytes"),
    (["ns", "\ud800"], "valid Unicode"),
]


@pytest.fixture(params=["dir", "sqlite", "postgresql", "rest"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Config]:
    with new_catalog(request.param, request, tmp_path, private=True) as made:
        yield made


def connect(config: Config) -> Any:
    return dl.connect_catalog({k: v for k, v in config.items() if not k.startswith("_")})


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def test_the_rule_itself() -> None:
    for names, rule in BAD_NAMES:
        with pytest.raises(InvalidNameError, match=rule):
            check_name(names[-1])
    for good in ("orders", "Orders_2026", "événements", "a-b", "a b", "x" * 255):
        assert check_name(good) == good
    # With "$" as the delimiter (the REST protocol's), a dot is part of a name.
    assert check_name("a.b", "$") == "a.b"
    with pytest.raises(InvalidNameError, match="delimiter"):
        check_name("a$b", ".")
    with pytest.raises(TypeError):
        check_name(3)


def test_every_catalog_refuses_the_same_names(config: Config, tmp_path: Path) -> None:
    """No bad name creates, loads or drops anything; the table that was there survives."""
    cat = connect(config)
    nested = config["type"] != "dir"
    if nested:
        for ns in ("tmp", "prod", "ns"):
            cat.create_namespace(ns)
    cat.write_table("keep", rows(1, 2))
    for names, rule in BAD_NAMES:
        identifier = names if nested else names[-1:]
        with pytest.raises(dl.InvalidArgumentError, match=rule):
            cat.write_table(identifier, rows(3))
        with pytest.raises(dl.InvalidArgumentError, match=rule):
            cat.drop_table(identifier)
        with pytest.raises(dl.InvalidArgumentError, match=rule):
            cat.load_table(identifier)
        assert not cat.table_exists(identifier)
        if nested:
            with pytest.raises(dl.InvalidArgumentError, match=rule):
                cat.create_namespace(identifier)
    assert ids(cat.load_table("keep")) == [1, 2]
    assert cat.list_tables() == ["keep"]
    # Nothing was written outside the tables' directories.
    warehouse = tmp_path / "wh"
    assert sorted(p.name for p in warehouse.iterdir() if p.is_file()) == []


def test_dot_dot_cannot_make_the_warehouse_a_table(config: Config, tmp_path: Path) -> None:
    """The reported loss: ``["tmp", ".."]`` lived at the warehouse root and dropping it deleted
    the whole warehouse."""
    cat = connect(config)
    if config["type"] != "dir":
        cat.create_namespace("tmp")
    cat.write_table("keep", rows(1))
    with pytest.raises(dl.InvalidArgumentError, match="directory references"):
        cat.write_table(["tmp", ".."] if config["type"] != "dir" else [".."], rows(2))
    with pytest.raises(dl.InvalidArgumentError):
        cat.drop_table(["tmp", ".."] if config["type"] != "dir" else [".."])
    assert (tmp_path / "wh" / "keep" / "_delta_log").is_dir()
    assert ids(cat.load_table("keep")) == [1]


def test_a_slash_cannot_nest_one_table_in_another(config: Config, tmp_path: Path) -> None:
    cat = connect(config)
    if config["type"] == "dir":
        cat.write_table("a", rows(1))
        with pytest.raises(dl.InvalidArgumentError, match="'/'"):
            cat.write_table("a/b", rows(2))
    else:
        cat.create_namespace("prod")
        cat.write_table("prod.a", rows(1))
        with pytest.raises(dl.InvalidArgumentError, match="'/'"):
            cat.write_table(["prod", "a/b"], rows(2))
        # The two spellings that used to share one directory: neither nests any more.
        cat.create_namespace("ns")
        with pytest.raises(dl.InvalidArgumentError):
            cat.write_table(["ns", "a/b"], rows(3))
        cat.create_namespace(["ns", "a"])
        cat.write_table("ns.a.b", rows(4))
        assert ids(cat.load_table(["ns", "a", "b"])) == [4]
        cat.drop_table("prod.a")
    # Nothing lives inside table a's directory.
    assert not (tmp_path / "wh" / "a" / "b").exists()
    assert not (tmp_path / "wh" / "prod" / "a" / "b").exists()


# -- locations (catalogs that record them: not the directory catalog) --------------------------


@pytest.fixture(params=["sqlite", "postgresql", "rest"])
def managed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Config]:
    with new_catalog(request.param, request, tmp_path, private=True) as made:
        yield made


def test_one_directory_is_one_table(managed: Config, tmp_path: Path) -> None:
    """An admin cannot register a directory under two names (not through a ``..`` path
    either), nor a table inside or above another one, nor the warehouse."""
    cat = connect(managed)
    ext = tmp_path / "ext"
    dl.write_table(str(ext), rows(7))
    dl.write_table(str(ext / "inner"), rows(8))
    cat.register_table("outer_inner", str(ext / "inner"))
    with pytest.raises(dl.InvalidArgumentError, match="overlaps"):
        cat.register_table("ext", str(ext))  # above a registered table
    cat.drop_table("outer_inner", purge=False)
    cat.register_table("ext", str(ext))
    with pytest.raises(dl.InvalidArgumentError, match=r"'\.\.'"):
        cat.register_table("again", f"{tmp_path}/wh/../ext")
    for alias in (str(ext) + "/", f"file://{ext}", f"{tmp_path}/./ext"):
        with pytest.raises(dl.InvalidArgumentError, match="overlaps"):
            cat.register_table("again", alias)
    with pytest.raises(dl.InvalidArgumentError, match="overlaps"):
        cat.register_table("inner", str(ext / "inner"))  # inside a registered table
    cat.write_table("t", rows(1))
    with pytest.raises(dl.InvalidArgumentError):
        cat.register_table("wh", str(tmp_path / "wh"))  # the warehouse: above every table
    assert cat.list_tables() == ["ext", "t"]
    assert ids(cat.load_table("ext")) == [7]


def test_a_new_table_never_lands_where_another_lives(managed: Config, tmp_path: Path) -> None:
    """A registered table inside the warehouse keeps its directory: a new table whose derived
    location is that directory gets a directory of its own beside it, and the registered
    table's log is untouched. A derived location inside another table is refused before any
    file is written."""
    cat = connect(managed)
    cat.create_namespace("sales")
    target = tmp_path / "wh" / "sales" / "orders"
    dl.write_table(str(target), rows(5))
    cat.register_table("legacy", str(target))
    before = sorted(p.name for p in (target / "_delta_log").iterdir())
    cat.write_table("sales.orders", rows(6))
    fresh = cat.load_table("sales.orders")
    assert fresh.table_uri.rstrip("/") != str(target)
    assert Path(fresh.table_uri.removeprefix("file://")).parent == target.parent
    assert ids(fresh) == [6]
    assert sorted(p.name for p in (target / "_delta_log").iterdir()) == before
    assert ids(cat.load_table("legacy")) == [5]
    cat.create_namespace("west")
    dl.write_table(str(tmp_path / "wh" / "west"), rows(1))  # a table where namespace west lives
    cat.register_table("west_table", str(tmp_path / "wh" / "west"))
    with pytest.raises(dl.InvalidArgumentError, match="overlaps"):
        cat.write_table("west.orders", rows(2))  # <warehouse>/west/orders: inside that table
    assert cat.list_tables("west") == []


def _set_location(config: Config, name: str, location: str) -> None:
    """Rewrites a table's recorded location behind the catalog's back (a record damaged by an
    older deltalog that accepted ``..``)."""
    if config["type"] == "postgresql":
        import psycopg

        with psycopg.connect(config["uri"]) as db:
            db.execute("UPDATE tables SET location = %s WHERE name = %s", (location, name))
        return
    db = sqlite3.connect(config.get("_path") or config["path"])
    with db:
        db.execute("UPDATE tables SET location = ? WHERE name = ?", (location, name))
    db.close()


def test_drop_deletes_only_the_tables_own_directory(managed: Config, tmp_path: Path) -> None:
    cat = connect(managed)
    cat.write_table("keep", rows(1))
    cat.write_table("victim", rows(2))
    warehouse = tmp_path / "wh"
    # A record pointing at the warehouse root (what ["tmp", ".."] used to make): purging it
    # would delete every table; the catalog refuses, and purge=False still removes the entry.
    _set_location(managed, "victim", str(warehouse))
    with pytest.raises(dl.CatalogError, match="warehouse"):
        cat.drop_table("victim")
    _set_location(managed, "victim", f"{warehouse}/victim/../")
    with pytest.raises(dl.CatalogError, match="not deleted"):
        cat.drop_table("victim")
    assert ids(cat.load_table("keep")) == [1]
    # A record holding another table's directory inside it.
    dl.write_table(str(tmp_path / "outer" / "ext"), rows(3))
    cat.register_table("ext", str(tmp_path / "outer" / "ext"))
    _set_location(managed, "victim", str(tmp_path / "outer"))
    with pytest.raises(dl.CatalogError, match="another table"):
        cat.drop_table("victim")
    cat.drop_table("victim", purge=False)
    assert (warehouse / "keep" / "_delta_log").is_dir() and (tmp_path / "outer/ext").is_dir()
    assert sorted(cat.list_tables()) == ["ext", "keep"]
    # The ordinary case still purges its own directory.
    cat.drop_table("keep")
    assert not (warehouse / "keep").exists() and (tmp_path / "outer/ext").is_dir()


def test_canonical_locations() -> None:
    assert canonical_location("/a/b/") == "/a/b"
    assert canonical_location("/a//b/./c") == "/a/b/c"
    assert canonical_location("file:///a/b") == "/a/b"
    assert canonical_location("file:///a/b%20c") == "/a/b c"
    assert canonical_location("S3://bucket/x//y/") == "s3://bucket/x/y"
    for bad in ("", "/a/../b", "s3://bucket/a/..", "file://host/a", "s3:///x", "/a\nb"):
        with pytest.raises(dl.InvalidArgumentError):
            canonical_location(bad)
