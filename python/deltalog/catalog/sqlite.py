"""The embedded SQLite store of a :class:`~deltalog.catalog.managed.ManagedCatalog`: one
database file, WAL mode, one ``BEGIN IMMEDIATE`` transaction per ratification (so that a
version is ratified at most once, in order, across threads and processes).

The schema is created and upgraded by :data:`MIGRATIONS` (versioned; ``schema_version`` holds
the version applied).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from deltalog.catalog.client import RatifiedCommits
from deltalog.catalog.managed import (
    MAX_UNPUBLISHED,
    Store,
    TableRecord,
    commit_of,
    conflict,
    now_ms,
)
from deltalog.exceptions import CatalogError, InvalidArgumentError

#: Schema migrations, applied in order; entry ``i`` takes the schema to version ``i + 1``.
MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE namespaces (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL, "
        "name TEXT NOT NULL, UNIQUE (parent_id, name))",
        "CREATE TABLE tables (id INTEGER PRIMARY KEY, namespace_id INTEGER NOT NULL, "
        "name TEXT NOT NULL, location TEXT NOT NULL, managed INTEGER NOT NULL, "
        "latest_version INTEGER NOT NULL DEFAULT -1, created_ms INTEGER NOT NULL, "
        "UNIQUE (namespace_id, name))",
        "CREATE TABLE commits (table_id INTEGER NOT NULL, version INTEGER NOT NULL, "
        "staged_path TEXT, content BLOB, timestamp_ms INTEGER NOT NULL, "
        "PRIMARY KEY (table_id, version))",
    ],
]


class SqliteStore(Store):
    """A catalog database in one SQLite file (a connection per thread)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        with self._transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            applied = row[0] if row else 0
            if applied > len(MIGRATIONS):
                raise CatalogError(
                    f"the catalog database {path} has schema version {applied}, newer than "
                    f"this deltalog knows ({len(MIGRATIONS)})",
                    table=path,
                )
            for statements in MIGRATIONS[applied:]:
                for statement in statements:
                    db.execute(statement)
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (?)", (len(MIGRATIONS),))
            else:
                db.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS),))

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=60000")
            # A ratification is durable once committed (catalogManaged RFC: the catalog is
            # the source of truth for commits).
            db.execute("PRAGMA synchronous=FULL")
            self._local.db = db
        return db

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # -- namespaces ------------------------------------------------------------------------

    def namespace_id(self, parent: int, name: str) -> int | None:
        row = (
            self._db()
            .execute("SELECT id FROM namespaces WHERE parent_id = ? AND name = ?", (parent, name))
            .fetchone()
        )
        return row[0] if row else None

    def child_namespaces(self, parent: int) -> list[str]:
        rows = self._db().execute(
            "SELECT name FROM namespaces WHERE parent_id = ? ORDER BY name", (parent,)
        )
        return [r[0] for r in rows]

    def create_namespace(self, parent: int, name: str) -> None:
        try:
            with self._transaction() as db:
                db.execute("INSERT INTO namespaces (parent_id, name) VALUES (?, ?)", (parent, name))
        except sqlite3.IntegrityError as e:
            raise InvalidArgumentError(f"the namespace {name!r} already exists") from e

    def drop_namespace(self, parent: int, name: str) -> None:
        with self._transaction() as db:
            row = db.execute(
                "SELECT id FROM namespaces WHERE parent_id = ? AND name = ?", (parent, name)
            ).fetchone()
            if row is None:
                raise InvalidArgumentError(f"the namespace {name!r} does not exist")
            (nid,) = row
            busy = db.execute(
                "SELECT (SELECT COUNT(*) FROM namespaces WHERE parent_id = ?) + "
                "(SELECT COUNT(*) FROM tables WHERE namespace_id = ?)",
                (nid, nid),
            ).fetchone()[0]
            if busy:
                raise InvalidArgumentError(f"the namespace {name!r} is not empty")
            db.execute("DELETE FROM namespaces WHERE id = ?", (nid,))

    # -- tables ----------------------------------------------------------------------------

    def tables(self, namespace: int) -> list[str]:
        rows = self._db().execute(
            "SELECT name FROM tables WHERE namespace_id = ? ORDER BY name", (namespace,)
        )
        return [r[0] for r in rows]

    _COLUMNS = "id, namespace_id, name, location, managed, latest_version"

    def table(self, namespace: int, name: str) -> TableRecord | None:
        row = (
            self._db()
            .execute(
                f"SELECT {self._COLUMNS} FROM tables WHERE namespace_id = ? AND name = ?",
                (namespace, name),
            )
            .fetchone()
        )
        return TableRecord(row[0], row[1], row[2], row[3], bool(row[4]), row[5]) if row else None

    def table_by_id(self, table_id: int) -> TableRecord | None:
        row = (
            self._db()
            .execute(f"SELECT {self._COLUMNS} FROM tables WHERE id = ?", (table_id,))
            .fetchone()
        )
        return TableRecord(row[0], row[1], row[2], row[3], bool(row[4]), row[5]) if row else None

    def register(self, namespace: int, name: str, location: str) -> TableRecord:
        try:
            with self._transaction() as db:
                db.execute(
                    "INSERT INTO tables (namespace_id, name, location, managed, created_ms) "
                    "VALUES (?, ?, ?, 0, ?)",
                    (namespace, name, location, now_ms()),
                )
        except sqlite3.IntegrityError as e:
            raise InvalidArgumentError(f"the catalog already has a table {name!r}") from e
        record = self.table(namespace, name)
        assert record is not None
        return record

    def drop_table(self, table_id: int) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM commits WHERE table_id = ?", (table_id,))
            db.execute("DELETE FROM tables WHERE id = ?", (table_id,))

    # -- commits ---------------------------------------------------------------------------

    def _held(
        self, db: sqlite3.Connection, table_id: int, start: int | None, end: int | None
    ) -> RatifiedCommits:
        row = db.execute("SELECT latest_version FROM tables WHERE id = ?", (table_id,)).fetchone()
        if row is None:
            raise CatalogError(f"the table {table_id} is no longer in the catalog", table=None)
        rows = db.execute(
            "SELECT version, staged_path, content, timestamp_ms FROM commits "
            "WHERE table_id = ? AND version >= ? AND version <= ? ORDER BY version",
            (table_id, -1 if start is None else start, 2**62 if end is None else end),
        ).fetchall()
        return RatifiedCommits([commit_of(r) for r in rows], row[0])

    def commits(self, table_id: int, start: int | None, end: int | None) -> RatifiedCommits:
        # One read transaction: the latest version and the commits of one moment (WAL).
        db = self._db()
        db.execute("BEGIN")
        try:
            return self._held(db, table_id, start, end)
        finally:
            db.execute("COMMIT")

    def ratify(
        self,
        table_id: int | None,
        version: int,
        path: str | None,
        content: bytes | None,
        create: tuple[int, str, str] | None = None,
    ) -> int:
        with self._transaction() as db:
            if table_id is None:
                assert create is not None and version == 0
                namespace, name, location = create
                taken = db.execute(
                    "SELECT id FROM tables WHERE namespace_id = ? AND name = ?", (namespace, name)
                ).fetchone()
                if taken is not None:
                    raise conflict(0, self._held(db, taken[0], 0, None))
                cursor = db.execute(
                    "INSERT INTO tables (namespace_id, name, location, managed, latest_version,"
                    " created_ms) VALUES (?, ?, ?, 1, -1, ?)",
                    (namespace, name, location, now_ms()),
                )
                table_id = int(cursor.lastrowid or 0)
            latest = db.execute(
                "SELECT latest_version FROM tables WHERE id = ?", (table_id,)
            ).fetchone()
            if latest is None:
                raise CatalogError(f"the table {table_id} is no longer in the catalog")
            if version != latest[0] + 1:
                raise conflict(version, self._held(db, table_id, version, None))
            held = db.execute(
                "SELECT COUNT(*) FROM commits WHERE table_id = ?", (table_id,)
            ).fetchone()[0]
            if held >= MAX_UNPUBLISHED:
                raise CatalogError(
                    f"the table holds {held} unpublished commits, the most it may; publish them "
                    f"before committing version {version}"
                )
            db.execute(
                "INSERT INTO commits (table_id, version, staged_path, content, timestamp_ms) "
                "VALUES (?, ?, ?, ?, ?)",
                (table_id, version, path, content, now_ms()),
            )
            db.execute("UPDATE tables SET latest_version = ? WHERE id = ?", (version, table_id))
            return table_id

    def forget(self, table_id: int, version: int) -> None:
        # Losing this transaction to a power cut is harmless (the commits stay held, the
        # next publisher finds them published and forgets them again), so it is not fsynced;
        # ratifications are (synchronous=FULL).
        db = self._db()
        db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._transaction() as db:
                db.execute(
                    "DELETE FROM commits WHERE table_id = ? AND version <= ?", (table_id, version)
                )
        finally:
            db.execute("PRAGMA synchronous=FULL")
