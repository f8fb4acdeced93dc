"""The PostgreSQL store of a :class:`~deltalog.catalog.managed.ManagedCatalog`, for catalogs
shared by many processes and machines (psycopg 3, imported when such a catalog is opened:
``pip install 'deltalog[postgresql]'``).

The catalog logic is :class:`~deltalog.catalog.stores.sql.SqlStore`'s; this module is the engine:

* a ratification runs in one ``READ COMMITTED`` transaction that first locks the rows of its
  tables (``SELECT … FOR UPDATE``, in id order so that concurrent multi-table ratifications
  cannot deadlock), then checks the version against ``latest_version`` and inserts the commit:
  a version is ratified at most once (``commits`` has the primary key ``(table_id, version)``)
  and strictly in order. A race only the database sees (two creators of one table name, a
  deadlock, a serialization failure) rolls the transaction back and the ratification is tried
  again, which then answers it with the same ``CommitConflictError(ratified=…)`` as SQLite;
* reads (the latest version with the held commits) run in one ``REPEATABLE READ, READ ONLY``
  transaction: one snapshot;
* forgetting published commits commits with ``synchronous_commit = off`` (losing it is
  harmless); ratifications wait for the WAL flush;
* connections are kept in a small free list and reused by whichever thread needs one (deltalog
  calls its catalog client from short-lived thread states, so a thread-local connection would
  be opened anew for every call), never across a fork; autocommit is off and every
  transaction ends explicitly;
* the schema is created and upgraded by :data:`MIGRATIONS` (``schema_version``, as in SQLite)
  under ``pg_advisory_xact_lock``, so that several processes may open a new database at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from deltalog.catalog.managed import Proposal, conflict, now_ms
from deltalog.catalog.stores import sql
from deltalog.catalog.stores.sql import (
    AUDIT_MIGRATION,
    COMMIT_LOG_MIGRATION,
    NAME_KEY_MIGRATION,
    TABLE_UUID_MIGRATION,
    ConnectionPool,
    SqlStore,
    refusals_migration,
    table_uuid_of,
)
from deltalog.catalog.stores.sql_rows import who
from deltalog.exceptions import (
    CatalogError,
    CatalogThrottledError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg import Connection

#: The ratification of a commit to an existing table as one function (migration 5).
RATIFY_FUNCTION = """CREATE OR REPLACE FUNCTION deltalog_ratify(
            p_table BIGINT, p_version BIGINT, p_path TEXT, p_content BYTEA, p_sha TEXT,
            p_txn TEXT, p_ict BIGINT, p_protocol TEXT, p_metadata TEXT,
            p_set_clustering BOOLEAN, p_clustering TEXT, p_max_held BIGINT, p_now BIGINT)
        RETURNS TEXT LANGUAGE plpgsql AS $$
        DECLARE
            latest BIGINT; logged RECORD; used BIGINT; held BIGINT; changes BOOLEAN;
        BEGIN
            SELECT latest_version INTO latest FROM tables WHERE id = p_table FOR UPDATE;
            IF NOT FOUND THEN RETURN 'gone'; END IF;
            IF p_version <= latest THEN
                SELECT sha256, staged_path INTO logged FROM commit_log
                    WHERE table_id = p_table AND version = p_version;
                IF FOUND THEN
                    IF p_path IS NOT NULL AND logged.staged_path IS NOT NULL THEN
                        IF p_path = logged.staged_path THEN RETURN 'replay'; END IF;
                    ELSIF p_sha IS NOT NULL AND logged.sha256 IS NOT NULL
                          AND p_sha = logged.sha256 THEN
                        RETURN 'replay';
                    END IF;
                END IF;
            END IF;
            IF p_version <> latest + 1 THEN RETURN 'conflict'; END IF;
            IF p_txn IS NOT NULL THEN
                SELECT version INTO used FROM commit_log
                    WHERE table_id = p_table AND txn_id = p_txn;
                IF FOUND THEN RETURN 'txn:' || used; END IF;
            END IF;
            SELECT COUNT(*) INTO held FROM commits WHERE table_id = p_table;
            IF held >= p_max_held THEN RETURN 'held:' || held; END IF;
            INSERT INTO commits (table_id, version, staged_path, content, timestamp_ms, sha256)
                VALUES (p_table, p_version, p_path, p_content, p_now, p_sha);
            INSERT INTO commit_log (table_id, version, txn_id, sha256, staged_path, ict,
                                    ratified_ms)
                VALUES (p_table, p_version, p_txn, p_sha, p_path, p_ict, p_now);
            changes := p_protocol IS NOT NULL OR p_metadata IS NOT NULL;
            UPDATE tables SET latest_version = p_version,
                protocol = COALESCE(p_protocol, protocol),
                metadata = COALESCE(p_metadata, metadata),
                last_ict = COALESCE(p_ict, last_ict),
                clustering = CASE WHEN p_set_clustering THEN p_clustering ELSE clustering END,
                metadata_version = CASE WHEN changes THEN p_version ELSE metadata_version END,
                metadata_ict = CASE WHEN changes THEN p_ict ELSE metadata_ict END
                WHERE id = p_table;
            RETURN 'ok';
        END $$"""


def _ratify_function_with_audit() -> str:
    """:data:`RATIFY_FUNCTION` that also records who ratified the version and when, as the
    table's last update (:data:`~deltalog.catalog.stores.migrations.AUDIT_MIGRATION`): a
    14th argument, ``p_principal``."""
    text = RATIFY_FUNCTION
    for old, new in (
        ("p_max_held BIGINT, p_now BIGINT)", "p_max_held BIGINT, p_now BIGINT, p_principal TEXT)"),
        (
            "metadata_ict = CASE WHEN changes THEN p_ict ELSE metadata_ict END",
            "metadata_ict = CASE WHEN changes THEN p_ict ELSE metadata_ict END,\n"
            "                updated_ms = p_now, updated_by = p_principal",
        ),
    ):
        if old not in text:
            raise AssertionError(f"deltalog_ratify no longer has {old!r}")
        text = text.replace(old, new)
    return text


def _ratify_function_with_principal() -> str:
    """:func:`_ratify_function_with_audit` that also records ``p_principal`` as the version's
    ``commit_log.principal`` (migration 8; the function's signature is unchanged, so it is
    replaced in place)."""
    text = _ratify_function_with_audit()
    for old, new in (
        (
            "INSERT INTO commit_log (table_id, version, txn_id, sha256, staged_path, ict,\n"
            "                                    ratified_ms)",
            "INSERT INTO commit_log (table_id, version, txn_id, sha256, staged_path, ict,\n"
            "                                    ratified_ms, principal)",
        ),
        (
            "VALUES (p_table, p_version, p_txn, p_sha, p_path, p_ict, p_now);",
            "VALUES (p_table, p_version, p_txn, p_sha, p_path, p_ict, p_now, p_principal);",
        ),
    ):
        if text.count(old) != 1:
            raise AssertionError(f"deltalog_ratify no longer has {old!r} once")
        text = text.replace(old, new)
    if not text.startswith("CREATE OR REPLACE FUNCTION deltalog_ratify("):
        raise AssertionError("deltalog_ratify is no longer created by CREATE OR REPLACE")
    return text


#: Schema migrations, applied in order; entry ``i`` takes the schema to version ``i + 1``.
MIGRATIONS: list[list[Any]] = [
    [
        "CREATE TABLE namespaces (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
        "parent_id BIGINT NOT NULL, name TEXT NOT NULL, UNIQUE (parent_id, name))",
        "CREATE TABLE tables (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
        "namespace_id BIGINT NOT NULL, name TEXT NOT NULL, location TEXT NOT NULL, "
        "managed BOOLEAN NOT NULL, latest_version BIGINT NOT NULL DEFAULT -1, "
        "created_ms BIGINT NOT NULL, protocol TEXT, metadata TEXT, "
        "UNIQUE (namespace_id, name))",
        "CREATE TABLE commits (table_id BIGINT NOT NULL, version BIGINT NOT NULL, "
        "staged_path TEXT, content BYTEA, timestamp_ms BIGINT NOT NULL, "
        "PRIMARY KEY (table_id, version))",
    ],
    # 2: namespace and table properties (JSON objects of strings; Lance catalog spec).
    [
        "ALTER TABLE namespaces ADD COLUMN properties TEXT",
        "ALTER TABLE tables ADD COLUMN properties TEXT",
    ],
    # 3: each ratified version bound to its content (SHA-256), its txnId (unique per table) and
    # in-commit timestamp, kept after publishing; the cached clustering domain and latest ICT.
    COMMIT_LOG_MIGRATION,
    # Each table's UUID (Unity Catalog's table_id) and latest protocol/metadata version.
    TABLE_UUID_MIGRATION,
    # 5: one round trip per commit: the ratification of a commit to an existing table as one
    # function, called in autocommit (its statement is its transaction; see ratify_all).
    [
        RATIFY_FUNCTION,
    ],
    # Names case-insensitive and look-alike-free: each name's key, unique in its parent
    # (docs/catalogs.md, "Names"; existing rows keyed, refused clearly when they collide).
    NAME_KEY_MIGRATION,
    # 7: who created and last changed each namespace and table, and when (UC's created_by /
    # created_at / updated_by / updated_at); deltalog_ratify records its commits' updater.
    [
        *AUDIT_MIGRATION,
        "DROP FUNCTION deltalog_ratify(BIGINT, BIGINT, TEXT, BYTEA, TEXT, TEXT, BIGINT, TEXT, "
        "TEXT, BOOLEAN, TEXT, BIGINT, BIGINT)",
        _ratify_function_with_audit(),
    ],
    # 8: for the web UI (issue #47), which shows who committed each version and the recent
    # 403 / 409 refusals: commit_log.principal (older versions NULL: never recorded), which
    # deltalog_ratify now fills from its p_principal, and the bounded audit_log of refusals
    # (stores/audit_log.py).
    [
        *refusals_migration("BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
        _ratify_function_with_principal(),
    ],
]

#: The ``pg_advisory_xact_lock`` key of schema migrations (``deltalog`` in ASCII).
SCHEMA_LOCK = 0x64656C74616C6F67

#: The ``pg_advisory_xact_lock`` key of transactions that add a table location (``dltlocat``).
LOCATION_LOCK = 0x646C746C6F636174

#: The most idle connections a store keeps open.
MAX_IDLE = 8


def _fast(p: Proposal) -> bool:
    """Whether ``deltalog_ratify`` takes the proposal: a commit to an existing table whose
    metadata sets no Unity Catalog table id (which the general path adopts or checks)."""
    return (
        p.table_id is not None and p.create is None and table_uuid_of(p.metadata, p.version) is None
    )


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as e:
        raise UnsupportedFeatureError(
            "the postgresql catalog needs psycopg 3, which is not installed: "
            "pip install 'deltalog[postgresql]' (or 'psycopg[binary]')"
        ) from e
    return psycopg


def describe(uri: str) -> str:
    """``uri`` without its password, to name the database in errors."""
    psycopg = _psycopg()
    try:
        params = psycopg.conninfo.conninfo_to_dict(uri)
    except psycopg.ProgrammingError as e:
        raise CatalogError(f"not a PostgreSQL connection URI: {e}") from e
    params.pop("password", None)
    return str(psycopg.conninfo.make_conninfo(**params))


class PostgresStore(SqlStore):
    """A catalog database in PostgreSQL (``uri``: a ``postgresql://`` URI or a libpq
    connection string)."""

    MIGRATIONS = MIGRATIONS
    PLACEHOLDER = "%s"

    def __init__(self, uri: str) -> None:
        psycopg = _psycopg()
        self.uri = uri
        self._psycopg = psycopg
        self.integrity_errors = (psycopg.errors.IntegrityError,)
        self.retry_errors = (
            psycopg.errors.SerializationFailure,
            psycopg.errors.DeadlockDetected,
        )
        self._pool: ConnectionPool[Connection[Any]] = ConnectionPool(
            self._connect, self._reusable, lambda db: db.close(), MAX_IDLE
        )
        super().__init__(describe(uri))

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return self._psycopg.connect(self.uri, autocommit=False)  # type: ignore[no-any-return]
        except self._psycopg.OperationalError as e:
            raise CatalogError(
                f"cannot connect to the catalog database {self.name}: {e}", table=self.name
            ) from e

    def _reusable(self, db: psycopg.Connection[Any]) -> bool:
        idle = self._psycopg.pq.TransactionStatus.IDLE
        return not db.closed and not db.broken and db.info.transaction_status == idle

    @contextmanager
    def _transaction(
        self, write: bool = True, durable: bool = True
    ) -> Iterator[psycopg.Connection[Any]]:
        with self._pool.connection() as db:
            # autocommit is off: psycopg sends BEGIN before the first statement.
            if not write:
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            elif not durable:
                db.execute("SET LOCAL synchronous_commit = off")
            try:
                yield db
            except BaseException:
                with suppress(self._psycopg.Error):
                    db.rollback()
                raise
            db.commit()

    def ratify_all(self, proposals: Sequence[Proposal]) -> list[int]:
        """One commit to an existing table (the common case) is one round trip: the function
        ``deltalog_ratify`` (migration 5) does :meth:`SqlStore._ratify`'s checks and writes
        in one statement, run in autocommit so that the statement is its own transaction
        (its ``FOR UPDATE`` lock held to its end, the WAL flushed before the answer). A
        conflict costs one more read, for the held commits the answer carries. New tables,
        several proposals and commits carrying a Unity Catalog table id take the general
        path."""
        proposals = list(proposals)
        if len(proposals) != 1 or not _fast(proposals[0]):
            return super().ratify_all(proposals)
        p = proposals[0]
        assert p.table_id is not None
        set_clustering, clustering = p.clustering
        params = (
            p.table_id,
            p.version,
            p.path,
            p.content,
            p.sha256,
            p.txn_id,
            p.ict,
            p.protocol,
            p.metadata,
            set_clustering,
            clustering,
            self.max_unpublished or sql.MAX_UNPUBLISHED,  # (sql's: one setting for both)
            now_ms(),
            who(p.principal),  # recorded as the table's updater and the version's principal
        )

        def attempt() -> Any:
            with self._pool.connection() as db:
                db.autocommit = True
                try:
                    return db.execute(
                        "SELECT deltalog_ratify(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                        "%s, %s, %s, %s)",
                        params,
                    ).fetchone()
                finally:
                    with suppress(self._psycopg.Error):
                        db.autocommit = False

        row = self._retrying(attempt)
        status = str(row[0]) if row is not None else "gone"
        if status in ("ok", "replay"):
            return [p.table_id]
        if status == "conflict":
            raise conflict(p.version, self.commits(p.table_id, p.version, None))
        if status.startswith("txn:"):
            raise InvalidArgumentError(
                f"proposed commit {p.version}: txnId {p.txn_id!r} was ratified as version "
                f'{status[4:]} already (catalogManaged RFC, "Commit Provenance Information": '
                "a unique transaction identifier)"
            )
        if status.startswith("held:"):
            raise CatalogThrottledError(
                f"the table holds {status[5:]} unpublished commits, the most it may; publish "
                f"them before committing version {p.version}"
            )
        raise CatalogError(f"the table {p.table_id} is no longer in the catalog")

    def _insert(self, db: Any, sql: str, params: Sequence[Any]) -> int:
        return int(self._one(db, sql + " RETURNING id", params)[0])

    def _lock_schema(self, db: Any) -> None:
        self._run(db, "SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))

    def _lock_locations(self, db: Any) -> None:
        self._run(db, "SELECT pg_advisory_xact_lock(?)", (LOCATION_LOCK,))

    FOR_UPDATE = " FOR UPDATE"

    def _lock_tables(self, db: Any, table_ids: Sequence[int]) -> None:
        if table_ids:
            self._run(
                db,
                "SELECT id FROM tables WHERE id = ANY(?) ORDER BY id FOR UPDATE",
                (list(table_ids),),
            )
