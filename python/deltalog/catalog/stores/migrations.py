"""Schema migrations the SQL stores share that rewrite rows by Python's rules
(:class:`deltalog.catalog.stores.sql.SqlStore` runs a callable step with the store and the
migration's connection, in the migration's transaction)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deltalog.catalog.names import InvalidNameError, check_characters, name_key
from deltalog.exceptions import CatalogError


def _fill_name_keys(store: Any, db: Any) -> None:
    """Migration step: every namespace's and table's name in Unicode normalization form C and
    its ``name_key`` (:func:`deltalog.catalog.names.name_key`: case, compatibility forms and
    look-alike letters folded), so that names are unique and looked up without case.

    Raises:
        CatalogError: existing names the rule refuses (invisible characters, mixed scripts…)
            or two names of one parent that are now one name; nothing is changed (the
            migration's transaction rolls back) and the message names them: rename or drop
            them with the deltalog that made them, then open the catalog again.
    """
    problems: list[str] = []
    for table, parent_column in (("namespaces", "parent_id"), ("tables", "namespace_id")):
        rows = store._run(db, f"SELECT id, {parent_column}, name FROM {table}").fetchall()
        keys: dict[tuple[int, str], str] = {}
        updates = []
        for row_id, parent, name in rows:
            try:
                normal = check_characters(str(name))
            except InvalidNameError as e:
                problems.append(f"{table[:-1]} {name!r} (id {row_id}): {e.rule}")
                continue
            key = name_key(normal)
            if (parent, key) in keys:
                problems.append(
                    f"{table[:-1]}s {keys[(parent, key)]!r} and {name!r} of one parent "
                    f"(id {parent}) are one name now (case, normalization or look-alike "
                    "letters)"
                )
            keys[(parent, key)] = str(name)
            updates.append((normal, key, row_id))
        for normal, key, row_id in updates:
            store._run(
                db, f"UPDATE {table} SET name = ?, name_key = ? WHERE id = ?", (normal, key, row_id)
            )
    if problems:
        raise CatalogError(
            f"the catalog database {store.name} cannot be upgraded to case-insensitive, "
            "look-alike-free names (deltalog.catalog.names): "
            + "; ".join(problems)
            + ". Rename or drop these with the deltalog that created them, then open the "
            "catalog again",
            table=store.name,
        )


#: The migration both engines share that makes names case-insensitive and look-alike-free
#: (docs/catalogs.md, "Names"): a ``name_key`` column of namespaces and tables, filled for the
#: existing rows (refused when two of them collide), unique within each parent.
NAME_KEY_MIGRATION: list[str | Callable[[Any, Any], None]] = [
    "ALTER TABLE namespaces ADD COLUMN name_key TEXT",
    "ALTER TABLE tables ADD COLUMN name_key TEXT",
    _fill_name_keys,
    "CREATE UNIQUE INDEX namespaces_name_key ON namespaces (parent_id, name_key)",
    "CREATE UNIQUE INDEX tables_name_key ON tables (namespace_id, name_key)",
]


#: The migration both engines share that records every ratified version (``commit_log``: kept
#: after publishing, so that a replayed commit is recognised and a published file checked) and
#: the cached clustering domain and latest in-commit timestamp. BIGINT is INTEGER in SQLite.
COMMIT_LOG_MIGRATION = [
    "CREATE TABLE commit_log (table_id BIGINT NOT NULL, version BIGINT NOT NULL, txn_id TEXT, "
    "sha256 TEXT, staged_path TEXT, ict BIGINT, ratified_ms BIGINT NOT NULL, "
    "PRIMARY KEY (table_id, version))",
    "CREATE UNIQUE INDEX commit_log_txn_id ON commit_log (table_id, txn_id)",
    "ALTER TABLE commits ADD COLUMN sha256 TEXT",
    "ALTER TABLE tables ADD COLUMN clustering TEXT",
    "ALTER TABLE tables ADD COLUMN last_ict BIGINT",
]

#: The migration both engines share that gives every table a UUID (Unity Catalog's
#: ``table_id``; tables registered before it get theirs on first use) and records the latest
#: version that changed its protocol or metadata.
TABLE_UUID_MIGRATION = [
    "ALTER TABLE tables ADD COLUMN uuid TEXT",
    "CREATE UNIQUE INDEX tables_uuid ON tables (uuid)",
    "ALTER TABLE tables ADD COLUMN metadata_version BIGINT",
    "ALTER TABLE tables ADD COLUMN metadata_ict BIGINT",
]


#: The migration both engines share that records who created and last changed each namespace
#: and table, and when (Unity Catalog's ``created_by`` / ``created_at`` / ``updated_by`` /
#: ``updated_at`` of ``CatalogInfo``, ``SchemaInfo`` and ``TableInfo``; the creator is the
#: owner). Tables had ``created_ms`` already. Rows older than it keep NULL in the new columns:
#: who made them and when a namespace was made were never recorded, and the migration's time
#: or the operator's name would be invented values (the UC views answer ``null`` for them,
#: and a table's ``updated_at`` falls back to its ``created_ms``).
AUDIT_MIGRATION = [
    "ALTER TABLE namespaces ADD COLUMN created_ms BIGINT",
    "ALTER TABLE namespaces ADD COLUMN created_by TEXT",
    "ALTER TABLE namespaces ADD COLUMN updated_ms BIGINT",
    "ALTER TABLE namespaces ADD COLUMN updated_by TEXT",
    "ALTER TABLE tables ADD COLUMN created_by TEXT",
    "ALTER TABLE tables ADD COLUMN updated_ms BIGINT",
    "ALTER TABLE tables ADD COLUMN updated_by TEXT",
]


def refusals_migration(id_column: str) -> list[str]:
    """The migration both engines share (schema 8) for a web UI that shows who committed each
    version and the requests recently refused (403 / 409): ``commit_log.principal``, who
    proposed each version ratified from now on (older versions keep NULL: never recorded),
    and ``audit_log``, the server's latest refusals, kept bounded by
    :meth:`~deltalog.catalog.stores.audit_log.AuditLog.record_refusal`. ``id_column``: the
    engine's auto-increment primary key (SQLite's ``INTEGER PRIMARY KEY``, PostgreSQL's
    identity column)."""
    return [
        "ALTER TABLE commit_log ADD COLUMN principal TEXT",
        f"CREATE TABLE audit_log (id {id_column}, at_ms BIGINT NOT NULL, principal TEXT, "
        "method TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL, code INTEGER, "
        "message TEXT)",
    ]
