"""The embedded SQLite store of a :class:`~deltalog.catalog.managed.ManagedCatalog`: one
database file, WAL mode, one ``BEGIN IMMEDIATE`` transaction per ratification (it takes the
database's write lock, so that a version is ratified at most once, in order, across threads and
processes).

The catalog logic is :class:`~deltalog.catalog.stores.sql.SqlStore`'s; this module is the engine.
The
schema is created and upgraded by :data:`MIGRATIONS` (versioned; ``schema_version`` holds the
version applied).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from deltalog.catalog.stores.sql import (
    AUDIT_MIGRATION,
    COMMIT_LOG_MIGRATION,
    NAME_KEY_MIGRATION,
    TABLE_UUID_MIGRATION,
    ConnectionPool,
    SqlStore,
    refusals_migration,
)
from deltalog.exceptions import CatalogError

#: Schema migrations, applied in order; entry ``i`` takes the schema to version ``i + 1``.
MIGRATIONS: list[list[Any]] = [
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
    # 2: each table's latest protocol and metadata (JSON), cached for readers.
    [
        "ALTER TABLE tables ADD COLUMN protocol TEXT",
        "ALTER TABLE tables ADD COLUMN metadata TEXT",
    ],
    # 3: namespace and table properties (JSON objects of strings; Lance catalog spec).
    [
        "ALTER TABLE namespaces ADD COLUMN properties TEXT",
        "ALTER TABLE tables ADD COLUMN properties TEXT",
    ],
    # 4: each ratified version bound to its content (SHA-256), its txnId (unique per table) and
    # in-commit timestamp, kept after publishing; the cached clustering domain and latest ICT.
    COMMIT_LOG_MIGRATION,
    # Each table's UUID (Unity Catalog's table_id) and latest protocol/metadata version.
    TABLE_UUID_MIGRATION,
    # Names case-insensitive and look-alike-free: each name's key, unique in its parent
    # (docs/catalogs.md, "Names"; existing rows keyed, refused clearly when they collide).
    NAME_KEY_MIGRATION,
    # 7: who created and last changed each namespace and table, and when (UC's created_by /
    # created_at / updated_by / updated_at; older rows keep NULL: never recorded).
    AUDIT_MIGRATION,
    # 8: for the web UI (issue #47), which shows who committed each version and the recent
    # 403 / 409 refusals: commit_log.principal (older versions NULL: never recorded) and the
    # bounded audit_log of refusals (stores/audit_log.py).
    refusals_migration("INTEGER PRIMARY KEY"),
]


class SqliteStore(SqlStore):
    """A catalog database in one SQLite file (connections reused through a pool)."""

    MIGRATIONS = MIGRATIONS
    PLACEHOLDER = "?"
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: str) -> None:
        self.path = path
        self._pool: ConnectionPool[sqlite3.Connection] = ConnectionPool(
            self._connect, lambda db: not db.in_transaction, lambda db: db.close()
        )
        super().__init__(path)

    def _connect(self) -> sqlite3.Connection:
        # Used by one thread at a time (the pool hands it out), not always the same one.
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA busy_timeout=60000")
        # A ratification is durable once committed (catalogManaged RFC: the catalog is the
        # source of truth for commits).
        db.execute("PRAGMA synchronous=FULL")
        return db

    @contextmanager
    def _transaction(
        self, write: bool = True, durable: bool = True
    ) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock at once: the checks and the writes of a
        # ratification see no other writer. A read is one deferred transaction (WAL: a
        # snapshot of one moment, not blocking writers).
        try:
            with self._pool.connection() as db:
                if not durable:
                    db.execute("PRAGMA synchronous=NORMAL")
                try:
                    db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                    try:
                        yield db
                    except BaseException:
                        db.execute("ROLLBACK")
                        raise
                    db.execute("COMMIT")
                finally:
                    if not durable:
                        db.execute("PRAGMA synchronous=FULL")
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.IntegrityError):
                raise  # a name taken: the callers answer it
            # The database itself failed (locked past the timeout, disk full, a damaged file):
            # the catalog is unavailable, which is not the caller's fault.
            raise CatalogError(
                f"the catalog database {self.path} failed: {e}", table=self.path
            ) from e

    def _insert(self, db: Any, sql: str, params: Sequence[Any]) -> int:
        return int(self._run(db, sql, params).lastrowid or 0)
