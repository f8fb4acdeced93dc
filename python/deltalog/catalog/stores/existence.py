"""Whether a catalog exists before it is opened (issue #42): a named catalog
(:func:`deltalog.load_catalog`, ``dl.DeltaTable("name.ns.table")``) and the ``deltalog
catalog`` commands open an existing catalog only — a misspelled path must not become a new,
empty catalog — while :func:`deltalog.connect_catalog` creates a brand-new embedded one
(``create=True``, its default) and ``deltalog catalog create`` creates a configured one.

What "exists" means per type: a directory catalog's local directory (an object store prefix
cannot be told from an empty catalog: it is not checked); a SQLite catalog's database file,
holding deltalog's ``schema_version`` table; a PostgreSQL catalog's database, holding that
table (the database itself is the server's to create).
"""

from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote

from deltalog.exceptions import CatalogError


class CatalogNotFoundError(CatalogError):
    """A catalog opened without ``create`` does not exist: its directory or database file is
    missing, or the database holds no deltalog catalog. Nothing was created.

    Attributes:
        table: where the catalog was looked for (the path, or the database without its
            password).
        kind: the catalog's type (``dir``, ``sqlite``, ``postgresql``).
    """

    def __init__(self, kind: str, where: str, why: str, name: str | None = None) -> None:
        self.kind = kind
        self.why = why
        if name is not None:
            how = (
                f"`deltalog catalog create --catalog {name}` or "
                f"dl.load_catalog({name!r}, create=True)"
            )
        else:
            how = (
                "`deltalog catalog create --catalog NAME` or dl.load_catalog(NAME, create=True) "
                "for a configured catalog, dl.connect_catalog(config, create=True) otherwise"
            )
        label = f"catalog {name!r} ({kind} at {where})" if name else f"the {kind} catalog {where}"
        super().__init__(
            f"{label} {why}: nothing was created; check the path, or create a new catalog there "
            f"on purpose: {how}",
            table=where,
        )

    def named(self, name: str) -> CatalogNotFoundError:
        """The same error, naming the configured catalog ``name`` and its ``create`` command."""
        return CatalogNotFoundError(self.kind, str(self.table), self.why, name)


def local_directory(path: str) -> str | None:
    """The local path of a directory catalog's ``path`` (None for an object store URI)."""
    if path.startswith("file://"):
        return path[len("file://") :]
    return None if "://" in path else path


def require_directory(path: str) -> None:
    """A directory catalog at ``path`` exists (a local directory; other URIs unchecked)."""
    local = local_directory(path)
    if local is None:
        return
    if not os.path.exists(local):
        raise CatalogNotFoundError("dir", local, "does not exist (no such directory)")
    if not os.path.isdir(local):
        raise CatalogNotFoundError("dir", local, "is not a directory")


def require_sqlite_catalog(path: str) -> None:
    """The SQLite database ``path`` exists and holds a deltalog catalog; read without
    creating or changing anything (not even a journal)."""
    if not os.path.exists(path):
        raise CatalogNotFoundError("sqlite", path, "does not exist (no such database file)")
    if not os.path.isfile(path):
        raise CatalogNotFoundError("sqlite", path, "is not a file")
    try:
        db = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, timeout=60)
        try:
            found = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError as e:
        raise CatalogError(
            f"the sqlite catalog {path} cannot be read as a SQLite database: {e}", table=path
        ) from e
    if found is None:
        raise CatalogNotFoundError(
            "sqlite", path, "holds no deltalog catalog (no schema_version table)"
        )


def require_postgresql_catalog(uri: str) -> None:
    """The PostgreSQL database ``uri`` holds a deltalog catalog (its ``schema_version``
    table, on the connection's search path); one read-only transaction, nothing created."""
    from deltalog.catalog.stores.postgresql import _psycopg, describe

    psycopg = _psycopg()
    name = describe(uri)
    try:
        with psycopg.connect(uri, autocommit=False) as db:
            db.execute("SET TRANSACTION READ ONLY")
            row = db.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
            db.rollback()
    except psycopg.OperationalError as e:
        raise CatalogError(f"cannot connect to the catalog database {name}: {e}", table=name) from e
    if not row or not row[0]:
        raise CatalogNotFoundError(
            "postgresql", name, "holds no deltalog catalog (no schema_version table)"
        )


__all__ = [
    "CatalogNotFoundError",
    "local_directory",
    "require_directory",
    "require_postgresql_catalog",
    "require_sqlite_catalog",
]
