"""Opening a catalog never creates one by mistake (issue #42): a named catalog (``.deltalog.yaml``,
``dl.load_catalog``, ``dl.DeltaTable("name.ns.table")``) and ``deltalog catalog describe`` /
``tables`` open an existing SQLite database, directory or PostgreSQL schema only, and say
which path is missing and how to create it (``deltalog catalog create``, ``create=True``);
``dl.connect_catalog`` still creates a brand-new embedded catalog, as the README does."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog as dl


def cli(*args: str) -> tuple[int, str, str]:
    """``deltalog ARGS`` as a shell runs it: exit status, stdout, stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "deltalog", *args],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def one_line_error(code: int, err: str, *expected: str) -> None:
    assert code == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, err


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``DELTALOG_HOME`` in a fresh directory, no ``DELTALOG_*`` variables inherited."""
    for key in list(os.environ):
        if key.startswith("DELTALOG_"):
            monkeypatch.delenv(key)
    directory = tmp_path / "home"
    directory.mkdir()
    monkeypatch.setenv("DELTALOG_HOME", str(directory))
    monkeypatch.setenv("HOME", str(directory))
    monkeypatch.chdir(tmp_path)
    return directory


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def test_a_misspelled_sqlite_path_is_refused_not_created(home: Path, tmp_path: Path) -> None:
    made = dl.connect_catalog(  # a brand-new embedded catalog, as the README makes one
        {"type": "sqlite", "path": str(tmp_path / "catalog.db"), "warehouse": str(tmp_path / "wh")}
    )
    made.create_namespace("sales")
    made.write_table("sales.orders", rows(1))
    typo = tmp_path / "catalgo.db"
    (home / ".deltalog.yaml").write_text(
        f"catalog:\n  local:\n    type: sqlite\n    path: {typo}\n"
        f"    warehouse: {tmp_path / 'wh'}\n"
    )
    with pytest.raises(dl.CatalogError) as raised:
        dl.load_catalog("local")
    message = str(raised.value)
    assert str(typo) in message and "does not exist" in message, message
    assert "deltalog catalog create" in message and "create=True" in message, message
    with pytest.raises(dl.CatalogError, match=r"catalgo\.db"):
        dl.DeltaTable("local.sales.orders")
    for command in (("describe",), ("tables",), ("tables", "sales", "--recursive")):
        code, _, err = cli("catalog", *command, "--catalog", "local")
        one_line_error(code, err, "CatalogNotFoundError", str(typo), "deltalog catalog create")
    code, _, err = cli("info", "--catalog", "local", "sales.orders")
    one_line_error(code, err, str(typo))
    assert not typo.exists() and not Path(f"{typo}-wal").exists()
    with pytest.raises(dl.CatalogError, match="does not exist"):
        dl.connect_catalog(
            {"type": "sqlite", "path": str(typo), "warehouse": str(tmp_path / "wh")},
            create=False,
        )
    assert not typo.exists()

    # A file that is a SQLite database but no deltalog catalog: refused, left as it was.
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
    before = other.read_bytes()
    (home / ".deltalog.yaml").write_text(
        f"catalog:\n  other:\n    type: sqlite\n    path: {other}\n    warehouse: {tmp_path}\n"
    )
    code, _, err = cli("catalog", "describe", "--catalog", "other")
    one_line_error(code, err, str(other), "holds no deltalog catalog")
    assert other.read_bytes() == before

    # Created on purpose: `deltalog catalog create`, then it opens.
    (home / ".deltalog.yaml").write_text(
        f"catalog:\n  local:\n    type: sqlite\n    path: {typo}\n"
        f"    warehouse: {tmp_path / 'wh2'}\n"
    )
    code, out, err = cli("catalog", "create", "--catalog", "local")
    assert code == 0 and "created" in out and str(typo) in out, err
    assert typo.is_file()
    code, out, err = cli("catalog", "create", "--catalog", "local")
    assert code == 0 and "exists already" in out, err
    code, out, err = cli("catalog", "describe", "--catalog", "local", "--json")
    assert code == 0, err
    assert dl.load_catalog("local").list_namespaces() == []


def test_load_catalog_create_true(home: Path, tmp_path: Path) -> None:
    (home / ".deltalog.yaml").write_text(
        f"catalog:\n  new:\n    type: sqlite\n    path: {tmp_path / 'new.db'}\n"
        f"    warehouse: {tmp_path / 'wh'}\n"
    )
    catalog = dl.load_catalog("new", create=True)
    catalog.write_table("t", rows(1))
    assert dl.load_catalog("new").list_tables() == ["t"]


def test_a_misspelled_directory_catalog_is_refused(home: Path, tmp_path: Path) -> None:
    typo = tmp_path / "lakke"
    (home / ".deltalog.yaml").write_text(f"catalog:\n  lake:\n    type: dir\n    path: {typo}\n")
    with pytest.raises(dl.CatalogError) as raised:
        dl.load_catalog("lake")
    assert str(typo) in str(raised.value) and "deltalog catalog create" in str(raised.value)
    code, _, err = cli("catalog", "describe", "--catalog", "lake")
    one_line_error(code, err, str(typo), "does not exist")
    assert not typo.exists()
    code, _, err = cli("catalog", "create", "--catalog", "lake")
    assert code == 0 and typo.is_dir(), err
    dl.load_catalog("lake").write_table("t", rows(1))
    assert dl.load_catalog("lake").list_tables() == ["t"]
    # connect_catalog of a new directory catalog works as before (created on the first write).
    fresh = dl.connect_catalog({"type": "dir", "path": str(tmp_path / "fresh")})
    fresh.write_table("t", rows(2))
    assert fresh.list_tables() == ["t"]


def test_a_postgresql_database_without_a_catalog_is_not_migrated(
    home: Path, postgres_uri: str
) -> None:
    import psycopg

    os.environ["TEST_PG_URI"] = postgres_uri
    try:
        (home / ".deltalog.yaml").write_text(
            "catalog:\n  pg:\n    type: postgresql\n    uri: ${TEST_PG_URI}\n"
            "    warehouse: /tmp/unused-warehouse\n"
        )
        with pytest.raises(dl.CatalogError, match="holds no deltalog catalog"):
            dl.load_catalog("pg")
        code, _, err = cli("catalog", "describe", "--catalog", "pg")
        one_line_error(code, err, "holds no deltalog catalog", "deltalog catalog create")
        code, _, err = cli("catalog", "tables", "--catalog", "pg")
        one_line_error(code, err, "holds no deltalog catalog")
        with psycopg.connect(postgres_uri) as db:
            assert db.execute("SELECT to_regclass('schema_version')").fetchone() == (None,)
        code, out, err = cli("catalog", "create", "--catalog", "pg")
        assert code == 0 and "created" in out, err
        assert dl.load_catalog("pg").list_namespaces() == []
    finally:
        del os.environ["TEST_PG_URI"]
