"""The catalog logic of the SQL stores of a :class:`~deltalog.catalog.managed.ManagedCatalog`,
written once for every engine (:mod:`deltalog.catalog.stores.sqlite`,
:mod:`deltalog.catalog.stores.postgresql`).

:class:`SqlStore` holds the namespaces, the tables and the ratification of commits
(catalogManaged RFC, "Commit Protocol": each version at most once and strictly in order; the
held commits in a conflict answer; at most :data:`~deltalog.catalog.managed.MAX_UNPUBLISHED`
unpublished commits a table). Statements are written with ``?`` placeholders. An engine
provides a small layer: its connections (reused through a :class:`ConnectionPool`),
transactions, its placeholder style, how an
insert returns its id, how the rows of a ratification are locked, its schema migrations and
its error classes.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from deltalog.catalog.managed import (
    # Re-exported: the PostgreSQL store reads (and tests set) ``sql.MAX_UNPUBLISHED``.
    MAX_UNPUBLISHED as MAX_UNPUBLISHED,
    CommitRecord,
    NamespaceRecord,
    Proposal,
    Store,
    TableRecord,
    commit_of,
    conflict,
    now_ms,
)
from deltalog.catalog.names import (
    ConfusableNameError,
    ancestors,
    canonical_location,
    name_key,
    overlaps,
    same_name,
)
from deltalog.catalog.stores.audit_log import AuditLog
from deltalog.catalog.stores.migrations import (
    AUDIT_MIGRATION as AUDIT_MIGRATION,
    COMMIT_LOG_MIGRATION as COMMIT_LOG_MIGRATION,
    NAME_KEY_MIGRATION as NAME_KEY_MIGRATION,
    TABLE_UUID_MIGRATION as TABLE_UUID_MIGRATION,
    refusals_migration as refusals_migration,
)
from deltalog.catalog.stores.pool import ConnectionPool as ConnectionPool
from deltalog.catalog.stores.sql_rows import (
    UC_TABLE_ID as UC_TABLE_ID,
    check_distinct as _check_distinct,
    new_uuid as _new_uuid,
    properties_json as _properties_json,
    properties_of as _properties,
    table_record as _table_record,
    table_uuid_of as table_uuid_of,
    who as _who,
)
from deltalog.exceptions import (
    AlreadyExistsError,
    CatalogError,
    CatalogThrottledError,
    InvalidArgumentError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
)
from deltalog.protocol.catalog_client import RatifiedCommits

#: How often a ratification is tried again after a race only the database saw (a unique key,
#: a serialization failure, a deadlock): the next try answers it with the checks below.
RATIFY_ATTEMPTS = 5

T = TypeVar("T")

_COLUMNS = (
    "id, namespace_id, name, location, managed, latest_version, protocol, metadata, properties, "
    "clustering, last_ict, uuid, created_ms, metadata_version, metadata_ict, created_by, "
    "updated_ms, updated_by"
)


@functools.lru_cache(maxsize=256)
def _pyformat(sql: str) -> str:
    return sql.replace("?", "%s")


class SqlStore(AuditLog, Store):
    """A :class:`Store` in a SQL database (its audit log of refusals: :class:`AuditLog`).
    Subclasses are the engines."""

    #: Schema migrations, applied in order; entry ``i`` takes the schema to version ``i + 1``.
    #: ``schema_version`` holds the version applied. A step is a statement, or a function of
    #: the store and the connection (rows rewritten by Python's rules).
    MIGRATIONS: Sequence[Sequence[str | Callable[[Any, Any], None]]] = ()

    #: The placeholder the engine's driver takes: ``?`` (qmark) or ``%s`` (format).
    PLACEHOLDER = "?"

    #: What the database says of the name of a new namespace or table that is taken.
    integrity_errors: tuple[type[BaseException], ...] = ()

    #: Races the database alone sees: the ratification is tried again (``integrity_errors``
    #: are too: a new table whose name another transaction took).
    retry_errors: tuple[type[BaseException], ...] = ()

    #: The most ratified commits a table may hold unpublished; ``None``:
    #: :data:`~deltalog.catalog.managed.MAX_UNPUBLISHED` (a catalog server sets its own).
    max_unpublished: int | None = None

    def __init__(self, name: str) -> None:
        #: The database, as errors name it.
        self.name = name
        self._migrate()

    # -- the engine ------------------------------------------------------------------------

    @abc.abstractmethod
    def _transaction(self, write: bool = True, durable: bool = True) -> AbstractContextManager[Any]:
        """A transaction on this thread's connection, yielding the connection (whose
        ``execute(sql, params)`` returns a cursor): committed on exit, rolled back on an
        exception. ``write=False``: reads only, all of one moment. ``durable=False``: losing
        the transaction to a crash is harmless, so it need not wait for the disk."""

    @abc.abstractmethod
    def _insert(self, db: Any, sql: str, params: Sequence[Any]) -> int:
        """Runs an ``INSERT`` and returns the id of the new row."""

    #: What locks a row read in a write transaction until its end (PostgreSQL's ``FOR
    #: UPDATE``; SQLite's write transactions hold the database's write lock already).
    FOR_UPDATE = ""

    def _lock_schema(self, db: Any) -> None:
        """Serialises the schema migrations of concurrent openers (a transaction that writes
        takes the whole database already on some engines)."""

    def _lock_tables(self, db: Any, table_ids: Sequence[int]) -> None:
        """Locks the rows of the tables a ratification writes, in id order, until the
        transaction ends (a transaction that writes takes the whole database already on some
        engines)."""

    def _sql(self, sql: str) -> str:
        return sql if self.PLACEHOLDER == "?" else _pyformat(sql)

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return db.execute(self._sql(sql), params)

    def _one(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._run(db, sql, params).fetchone()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._transaction(write=False) as db:
            return list(self._run(db, sql, params).fetchall())

    # -- the schema ------------------------------------------------------------------------

    def _migrate(self) -> None:
        with self._transaction() as db:
            self._lock_schema(db)
            self._run(db, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = self._one(db, "SELECT version FROM schema_version")
            applied = row[0] if row else 0
            known = len(self.MIGRATIONS)
            if applied > known:
                raise CatalogError(
                    f"the catalog database {self.name} has schema version {applied}, newer "
                    f"than this deltalog knows ({known})",
                    table=self.name,
                )
            for statements in self.MIGRATIONS[applied:]:
                for statement in statements:
                    if callable(statement):
                        statement(self, db)
                    else:
                        self._run(db, statement)
            if row is None:
                self._run(db, "INSERT INTO schema_version VALUES (?)", (known,))
            elif applied != known:
                self._run(db, "UPDATE schema_version SET version = ?", (known,))

    # -- namespaces ------------------------------------------------------------------------

    def namespace_id(self, parent: int, name: str) -> int | None:
        rows = self._read(
            "SELECT id, name FROM namespaces WHERE parent_id = ? AND name_key = ?",
            (parent, name_key(name)),
        )
        return next((r[0] for r in rows if same_name(r[1], name)), None)

    def holder(self, parent: int, name: str) -> tuple[str, str] | None:
        key = name_key(name)
        rows = self._read(
            "SELECT 'table', name FROM tables WHERE namespace_id = ? AND name_key = ? UNION ALL "
            "SELECT 'namespace', name FROM namespaces WHERE parent_id = ? AND name_key = ?",
            (parent, key, parent, key),
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def _claim(self, db: Any, parent: int, name: str, kind: str) -> None:
        """Refuses a new ``kind`` (``namespace`` / ``table``) ``name`` in ``parent`` when the
        parent holds a namespace or table of that name (any case or form: AlreadyExistsError)
        or of a name it is confusable with (:class:`ConfusableNameError`)."""
        key = name_key(name)
        for what, sql in (
            ("table", "SELECT name FROM tables WHERE namespace_id = ? AND name_key = ?"),
            ("namespace", "SELECT name FROM namespaces WHERE parent_id = ? AND name_key = ?"),
        ):
            row = self._one(db, sql, (parent, key))
            if row is None:
                continue
            if not same_name(row[0], name):
                raise ConfusableNameError(name, row[0])
            if what == kind == "table":
                raise AlreadyExistsError(f"the catalog already has a table {row[0]!r}")
            if what == kind:
                raise AlreadyExistsError(f"the namespace {row[0]!r} already exists")
            raise AlreadyExistsError(f"{name!r} is the name of a {what} ({row[0]!r})")

    def child_namespaces(self, parent: int) -> list[str]:
        rows = self._read(
            "SELECT name FROM namespaces WHERE parent_id = ? ORDER BY name", (parent,)
        )
        return [r[0] for r in rows]

    def create_namespace(
        self,
        parent: int,
        name: str,
        properties: Mapping[str, str] | None = None,
        principal: str | None = None,
    ) -> None:
        who, when = _who(principal), now_ms()
        try:
            with self._transaction() as db:
                self._claim(db, parent, name, "namespace")
                self._run(
                    db,
                    "INSERT INTO namespaces (parent_id, name, name_key, properties, created_ms, "
                    "created_by, updated_ms, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        parent,
                        name,
                        name_key(name),
                        _properties_json(properties),
                        when,
                        who,
                        when,
                        who,
                    ),
                )
        except self.integrity_errors as e:
            raise AlreadyExistsError(f"the namespace {name!r} already exists") from e

    def namespace_properties(self, namespace: int) -> dict[str, str]:
        if namespace == self.ROOT:
            return {}
        rows = self._read("SELECT properties FROM namespaces WHERE id = ?", (namespace,))
        if not rows:
            raise NamespaceNotFoundError(f"the namespace {namespace} no longer exists")
        return _properties(rows[0][0])

    def namespace_record(self, namespace: int) -> NamespaceRecord | None:
        rows = self._read(
            "SELECT id, parent_id, name, properties, created_ms, created_by, updated_ms, "
            "updated_by FROM namespaces WHERE id = ?",
            (namespace,),
        )
        if not rows:
            return None
        nid, parent, name, props, *audit = rows[0]
        return NamespaceRecord(nid, parent, name, _properties(props), *audit)

    def set_namespace_properties(
        self, namespace: int, properties: Mapping[str, str], principal: str | None = None
    ) -> None:
        with self._transaction() as db:
            self._run(
                db,
                "UPDATE namespaces SET properties = ?, updated_ms = ?, updated_by = ? WHERE id = ?",
                (_properties_json(properties), now_ms(), _who(principal), namespace),
            )

    def drop_namespace(self, parent: int, name: str) -> None:
        with self._transaction() as db:
            row = self._one(
                db,
                "SELECT id, name FROM namespaces WHERE parent_id = ? AND name_key = ?",
                (parent, name_key(name)),
            )
            if row is None or not same_name(row[1], name):
                raise NamespaceNotFoundError(f"the namespace {name!r} does not exist")
            nid = row[0]
            busy = self._one(
                db,
                "SELECT (SELECT COUNT(*) FROM namespaces WHERE parent_id = ?) + "
                "(SELECT COUNT(*) FROM tables WHERE namespace_id = ?)",
                (nid, nid),
            )[0]
            if busy:
                raise NamespaceNotEmptyError(f"the namespace {name!r} is not empty")
            self._run(db, "DELETE FROM namespaces WHERE id = ?", (nid,))

    # -- tables ----------------------------------------------------------------------------

    def tables(self, namespace: int) -> list[str]:
        rows = self._read(
            "SELECT name FROM tables WHERE namespace_id = ? ORDER BY name", (namespace,)
        )
        return [r[0] for r in rows]

    def table_records(self, namespace: int) -> list[TableRecord]:
        rows = self._read(
            f"SELECT {_COLUMNS} FROM tables WHERE namespace_id = ? ORDER BY name", (namespace,)
        )
        return [r for r in (_table_record([row]) for row in rows) if r is not None]

    def table(self, namespace: int, name: str) -> TableRecord | None:
        rows = self._read(
            f"SELECT {_COLUMNS} FROM tables WHERE namespace_id = ? AND name_key = ?",
            (namespace, name_key(name)),
        )
        return _table_record([r for r in rows if same_name(r[2], name)])

    def table_by_id(self, table_id: int) -> TableRecord | None:
        return _table_record(self._read(f"SELECT {_COLUMNS} FROM tables WHERE id = ?", (table_id,)))

    def table_by_uuid(self, uuid: str) -> TableRecord | None:
        return _table_record(
            self._read(f"SELECT {_COLUMNS} FROM tables WHERE uuid = ?", (uuid.lower(),))
        )

    def table_uuid(self, table_id: int) -> str:
        import uuid

        with self._transaction() as db:
            row = self._one(db, "SELECT uuid FROM tables WHERE id = ?", (table_id,))
            if row is None:
                raise CatalogError(f"the table {table_id} is no longer in the catalog")
            if row[0] is not None:
                return str(row[0])
            fresh = str(uuid.uuid4())
            self._run(db, "UPDATE tables SET uuid = ? WHERE id = ?", (fresh, table_id))
            return fresh

    def rename_table(
        self, table_id: int, name: str, namespace: int | None = None, principal: str | None = None
    ) -> None:
        try:
            with self._transaction() as db:
                row = self._one(
                    db, "SELECT namespace_id, name FROM tables WHERE id = ?", (table_id,)
                )
                if row is None:
                    raise CatalogError(f"the table {table_id} is no longer in the catalog")
                target = row[0] if namespace is None else namespace
                if target != self.ROOT and (
                    self._one(db, "SELECT id FROM namespaces WHERE id = ?", (target,)) is None
                ):
                    raise NamespaceNotFoundError(f"the namespace {target} no longer exists")
                # Not a new spelling of its own name in its own namespace: the name is claimed.
                if target != row[0] or name_key(row[1]) != name_key(name):
                    self._claim(db, target, name, "table")
                self._run(
                    db,
                    "UPDATE tables SET namespace_id = ?, name = ?, name_key = ?, updated_ms = ?, "
                    "updated_by = ? WHERE id = ?",
                    (target, name, name_key(name), now_ms(), _who(principal), table_id),
                )
        except self.integrity_errors as e:
            raise AlreadyExistsError(f"the namespace already has a {name!r}") from e

    def update_namespace_properties(
        self,
        namespace: int,
        removals: Iterable[str],
        updates: Mapping[str, str],
        principal: str | None = None,
    ) -> tuple[dict[str, str], dict[str, str]]:
        if namespace == self.ROOT:
            raise InvalidArgumentError("the catalog's root namespace keeps no properties")
        with self._transaction() as db:
            # Read (its row locked) and written in one transaction: two concurrent updates of
            # different keys both land.
            row = self._one(
                db, f"SELECT properties FROM namespaces WHERE id = ?{self.FOR_UPDATE}", (namespace,)
            )
            if row is None:
                raise NamespaceNotFoundError(f"the namespace {namespace} no longer exists")
            before = _properties(row[0])
            after = {k: v for k, v in before.items() if k not in set(removals)}
            after.update(updates)
            self._run(
                db,
                "UPDATE namespaces SET properties = ?, updated_ms = ?, updated_by = ? WHERE id = ?",
                (_properties_json(after), now_ms(), _who(principal), namespace),
            )
            return before, after

    def _lock_locations(self, db: Any) -> None:
        """Serialises the transactions that add a table location, so that two of them cannot
        both pass :meth:`_check_location` with overlapping locations (a transaction that writes
        takes the whole database already on some engines)."""

    def _overlapping(
        self, db: Any, location: str, exclude: int | None = None
    ) -> list[tuple[int, str]]:
        """The tables (id, location) whose location is canonical ``location``, lies above it or
        inside it."""
        above = ancestors(location)
        inside = location.rstrip("/").replace("\\", "\\\\").replace("%", "\\%")
        inside = inside.replace("_", "\\_") + "/%"
        marks = ", ".join("?" for _ in above) or "NULL"
        rows = self._run(
            db,
            f"SELECT id, location FROM tables WHERE location = ? OR location IN ({marks}) "
            "OR location LIKE ? ESCAPE '\\' ORDER BY location",
            (location, *above, inside),
        ).fetchall()
        # LIKE may ignore case (SQLite's does for ASCII): the rows are checked exactly here.
        return [(r[0], r[1]) for r in rows if r[0] != exclude and overlaps(location, r[1])]

    def overlapping(self, location: str, exclude: int | None = None) -> list[tuple[int, str]]:
        with self._transaction(write=False) as db:
            return self._overlapping(db, canonical_location(location), exclude)

    def _check_location(self, db: Any, location: str) -> None:
        """Refuses a new table's (canonical) ``location`` when it is, lies inside or lies above
        another table's: one directory is one table, and dropping one table never deletes
        another's files."""
        taken = self._overlapping(db, location)
        if taken:
            raise InvalidArgumentError(
                f"the table location {location} overlaps the location of another table of the "
                f"catalog ({taken[0][1]}): a table's directory is never inside, equal to or above "
                "another table's"
            )

    def register(
        self,
        namespace: int,
        name: str,
        location: str,
        properties: Mapping[str, str] | None = None,
        managed: bool = False,
        principal: str | None = None,
    ) -> TableRecord:
        location = canonical_location(location)
        who, when = _who(principal), now_ms()
        try:
            with self._transaction() as db:
                self._claim(db, namespace, name, "table")
                self._lock_locations(db)
                self._check_location(db, location)
                self._run(
                    db,
                    "INSERT INTO tables (namespace_id, name, name_key, location, managed, "
                    "created_ms, properties, uuid, created_by, updated_ms, updated_by) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        namespace,
                        name,
                        name_key(name),
                        location,
                        managed,
                        when,
                        _properties_json(properties),
                        _new_uuid(),
                        who,
                        when,
                        who,
                    ),
                )
        except self.integrity_errors as e:
            raise AlreadyExistsError(f"the catalog already has a table {name!r}") from e
        record = self.table(namespace, name)
        if record is None:  # dropped by another caller at once
            raise CatalogError(f"the table {name!r} was dropped while it was registered")
        return record

    def drop_table(self, table_id: int) -> None:
        with self._transaction() as db:
            self._run(db, "DELETE FROM commits WHERE table_id = ?", (table_id,))
            self._run(db, "DELETE FROM commit_log WHERE table_id = ?", (table_id,))
            self._run(db, "DELETE FROM tables WHERE id = ?", (table_id,))

    # -- commits ---------------------------------------------------------------------------

    def _held(self, db: Any, table_id: int, start: int | None, end: int | None) -> RatifiedCommits:
        row = self._one(db, "SELECT latest_version FROM tables WHERE id = ?", (table_id,))
        if row is None:
            raise CatalogError(f"the table {table_id} is no longer in the catalog", table=None)
        rows = self._run(
            db,
            "SELECT version, staged_path, content, timestamp_ms, sha256 FROM commits "
            "WHERE table_id = ? AND version >= ? AND version <= ? ORDER BY version",
            (table_id, -1 if start is None else start, 2**62 if end is None else end),
        ).fetchall()
        return RatifiedCommits([commit_of(r) for r in rows], row[0])

    def commits(self, table_id: int, start: int | None, end: int | None) -> RatifiedCommits:
        # One read transaction: the latest version and the commits of one moment.
        with self._transaction(write=False) as db:
            return self._held(db, table_id, start, end)

    def ratify_all(self, proposals: Sequence[Proposal]) -> list[int]:
        proposals = list(proposals)
        _check_distinct(proposals)
        if not proposals:
            return []

        def attempt() -> list[int]:
            with self._transaction() as db:
                existing = sorted({p.table_id for p in proposals if p.table_id is not None})
                self._lock_tables(db, existing)
                return [self._ratify(db, p) for p in proposals]

        return self._retrying(attempt)

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` (one ratification transaction), tried again after a race only the
        database saw (a unique key, a serialization failure, a deadlock) up to
        :data:`RATIFY_ATTEMPTS` times: the next try answers it with the ratification's own
        checks."""
        tries = 1
        while True:
            try:
                return attempt()
            except self.integrity_errors + self.retry_errors as e:
                if tries == RATIFY_ATTEMPTS:
                    raise CatalogError(
                        f"the ratification lost {tries} races in the catalog database "
                        f"{self.name}: {e}"
                    ) from e
                tries += 1

    def _ratify(self, db: Any, p: Proposal) -> int:
        """Ratifies one proposal in the transaction ``db`` (whose rows are locked)."""
        table_id = p.table_id
        if table_id is None:
            if p.create is None or p.version != 0:
                raise CatalogError(f"the table is not registered yet (version {p.version})")
            namespace, name, location = p.create
            taken = self._one(
                db,
                "SELECT id, name FROM tables WHERE namespace_id = ? AND name_key = ?",
                (namespace, name_key(name)),
            )
            if taken is not None and same_name(taken[1], name):
                raise conflict(0, self._held(db, taken[0], 0, None))
            self._claim(db, namespace, name, "table")
            location = canonical_location(location)
            self._lock_locations(db)
            self._check_location(db, location)
            table_id = self._insert(
                db,
                "INSERT INTO tables (namespace_id, name, name_key, location, managed, "
                "latest_version, created_ms, uuid, created_by) "
                "VALUES (?, ?, ?, ?, ?, -1, ?, ?, ?)",
                (
                    namespace,
                    name,
                    name_key(name),
                    location,
                    True,
                    now_ms(),
                    _new_uuid(),
                    _who(p.principal),
                ),
            )
        self._adopt_uuid(db, table_id, p)
        latest = self._one(db, "SELECT latest_version FROM tables WHERE id = ?", (table_id,))
        if latest is None:
            raise CatalogError(f"the table {table_id} is no longer in the catalog")
        if p.version <= latest[0] and self._is_replay(db, table_id, p):
            # The same commit proposed again (its answer was lost): ratified already, once.
            return table_id
        if p.version != latest[0] + 1:
            raise conflict(p.version, self._held(db, table_id, p.version, None))
        if p.txn_id is not None:
            used = self._one(
                db,
                "SELECT version FROM commit_log WHERE table_id = ? AND txn_id = ?",
                (table_id, p.txn_id),
            )
            if used is not None:
                raise InvalidArgumentError(
                    f"proposed commit {p.version}: txnId {p.txn_id!r} was ratified as version "
                    f'{used[0]} already (catalogManaged RFC, "Commit Provenance Information": '
                    "a unique transaction identifier)"
                )
        held = self._one(db, "SELECT COUNT(*) FROM commits WHERE table_id = ?", (table_id,))[0]
        if held >= (self.max_unpublished or MAX_UNPUBLISHED):
            raise CatalogThrottledError(
                f"the table holds {held} unpublished commits, the most it may; publish them "
                f"before committing version {p.version}"
            )
        ratified_ms, who = now_ms(), _who(p.principal)
        self._run(
            db,
            "INSERT INTO commits (table_id, version, staged_path, content, timestamp_ms, "
            "sha256) VALUES (?, ?, ?, ?, ?, ?)",
            (table_id, p.version, p.path, p.content, ratified_ms, p.sha256),
        )
        self._run(
            db,
            "INSERT INTO commit_log (table_id, version, txn_id, sha256, staged_path, ict, "
            "ratified_ms, principal) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (table_id, p.version, p.txn_id, p.sha256, p.path, p.ict, ratified_ms, who),
        )
        set_clustering, clustering = p.clustering
        changes_state = p.protocol is not None or p.metadata is not None
        self._run(
            db,
            "UPDATE tables SET latest_version = ?, protocol = COALESCE(?, protocol), "
            "metadata = COALESCE(?, metadata), last_ict = COALESCE(?, last_ict), "
            "clustering = CASE WHEN ? THEN ? ELSE clustering END, "
            "metadata_version = CASE WHEN ? THEN ? ELSE metadata_version END, "
            "metadata_ict = CASE WHEN ? THEN ? ELSE metadata_ict END, updated_ms = ?, "
            "updated_by = ? WHERE id = ?",
            (
                p.version,
                p.protocol,
                p.metadata,
                p.ict,
                set_clustering,
                clustering,
                changes_state,
                p.version,
                changes_state,
                p.ict,
                ratified_ms,
                who,
                table_id,
            ),
        )
        return table_id

    def _adopt_uuid(self, db: Any, table_id: int, p: Proposal) -> None:
        """Version 0's ``io.unitycatalog.tableId`` becomes the table's UUID: the id engines
        that commit through Unity Catalog's API read from the table's configuration (and
        send back in ``assert-table-uuid``); a later commit may set it only to that id."""
        found = table_uuid_of(p.metadata, p.version)
        if found is None:
            return
        if p.version > 0:
            row = self._one(db, "SELECT uuid FROM tables WHERE id = ?", (table_id,))
            if row is not None and row[0] is not None and row[0] != found:
                raise InvalidArgumentError(
                    f"proposed commit {p.version}: {UC_TABLE_ID} is {found}, but the table's id "
                    f"in its catalog is {row[0]} (it is set once, by version 0)"
                )
            return
        taken = self._one(db, "SELECT id FROM tables WHERE uuid = ? AND id <> ?", (found, table_id))
        if taken is not None:
            raise InvalidArgumentError(
                f"proposed commit 0: {UC_TABLE_ID} {found} is the id of another table"
            )
        self._run(db, "UPDATE tables SET uuid = ? WHERE id = ?", (found, table_id))

    def _is_replay(self, db: Any, table_id: int, p: Proposal) -> bool:
        """Whether ``p`` is the commit the catalog ratified for its version (the UC Delta API's
        rule: proposing an accepted commit again, with the same version and file name, is a
        success): the same staged file, or the same content."""
        row = self._one(
            db,
            "SELECT sha256, staged_path FROM commit_log WHERE table_id = ? AND version = ?",
            (table_id, p.version),
        )
        if row is None:
            return False
        sha256, staged = row
        if p.path is not None and staged is not None:
            return bool(p.path == staged)
        return p.sha256 is not None and sha256 is not None and p.sha256 == sha256

    def commit_record(self, table_id: int, version: int) -> CommitRecord | None:
        found = self.commit_records(table_id, version, version)
        return found[0] if found else None

    def commit_records(self, table_id: int, start: int, end: int) -> list[CommitRecord]:
        rows = self._read(
            "SELECT version, sha256, staged_path, txn_id, ict, ratified_ms, principal "
            "FROM commit_log WHERE table_id = ? AND version >= ? AND version <= ? "
            "ORDER BY version",
            (table_id, start, end),
        )
        return [CommitRecord(*row) for row in rows]

    def rollback(self, table_id: int, version: int, published: bool = False) -> list[int]:
        with self._transaction() as db:
            self._lock_tables(db, [table_id])
            row = self._one(db, "SELECT latest_version FROM tables WHERE id = ?", (table_id,))
            if row is None:
                raise CatalogError(f"the table {table_id} is no longer in the catalog")
            latest = row[0]
            if version >= latest:
                return []
            if version < -1:
                raise InvalidArgumentError(f"cannot roll back to version {version}")
            held = [
                r[0]
                for r in self._run(
                    db,
                    "SELECT version FROM commits WHERE table_id = ? AND version > ? "
                    "ORDER BY version",
                    (table_id, version),
                ).fetchall()
            ]
            if not published and held != list(range(version + 1, latest + 1)):
                first = held[0] if held else latest + 1
                raise CatalogError(
                    f"cannot roll back to version {version}: version {first - 1} is published "
                    "already (a published commit is the table's history for good; only "
                    "ratified, unpublished commits can be rolled back)"
                )
            self._run(
                db, "DELETE FROM commits WHERE table_id = ? AND version > ?", (table_id, version)
            )
            self._run(
                db,
                "DELETE FROM commit_log WHERE table_id = ? AND version > ?",
                (table_id, version),
            )
            ict = self._one(
                db,
                "SELECT ict FROM commit_log WHERE table_id = ? AND version = ?",
                (table_id, version),
            )
            if published:
                held = list(range(version + 1, latest + 1))
            # The cached state belonged to the versions forgotten: the caller sets it anew.
            self._run(
                db,
                "UPDATE tables SET latest_version = ?, last_ict = ?, protocol = NULL, "
                "metadata = NULL, clustering = NULL, metadata_version = CASE WHEN "
                "metadata_version > ? THEN NULL ELSE metadata_version END, metadata_ict = CASE "
                "WHEN metadata_version > ? THEN NULL ELSE metadata_ict END WHERE id = ?",
                (version, ict[0] if ict else None, version, version, table_id),
            )
            return held

    def set_cached_state(
        self, table_id: int, protocol: str | None, metadata: str | None, clustering: str | None
    ) -> None:
        with self._transaction() as db:
            self._run(
                db,
                "UPDATE tables SET protocol = ?, metadata = ?, clustering = ? WHERE id = ?",
                (protocol, metadata, clustering, table_id),
            )

    def forget(self, table_id: int, version: int) -> int:
        # Losing this transaction to a crash is harmless (the commits stay held, the next
        # publisher finds them published and forgets them again), so it is not made durable
        # before returning; ratifications are.
        with self._transaction(durable=False) as db:
            cursor = self._run(
                db, "DELETE FROM commits WHERE table_id = ? AND version <= ?", (table_id, version)
            )
            return max(int(cursor.rowcount or 0), 0)


#: The table property naming a catalog-managed table's id in its catalog (Unity Catalog's
#: ``table_id``; required by engines committing through UC's Delta API).
