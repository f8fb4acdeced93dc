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
