"""Catalog databases at an older schema version, for the tests of the SQL stores' migrations:
a store that stops at migration ``upto``, and raw SQL run on the database as that schema
holds its rows."""

from __future__ import annotations

import sqlite3
from typing import Any


def old_store(kind: str, where: str, upto: int) -> Any:
    """A ``kind`` (``sqlite`` / ``postgresql``) store of ``where`` with only the first ``upto``
    migrations applied (opening it creates or upgrades the database to that version)."""
    if kind == "sqlite":
        from deltalog.catalog.stores.sqlite import MIGRATIONS, SqliteStore

        class Old(SqliteStore):
            pass

    else:
        from deltalog.catalog.stores.postgresql import MIGRATIONS, PostgresStore

        class Old(PostgresStore):  # type: ignore[no-redef]
            pass

    Old.MIGRATIONS = MIGRATIONS[:upto]
    return Old(where)


def execute(kind: str, where: str, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Runs ``statements`` (SQL with ``?`` placeholders, and their parameters) in one
    transaction."""
    if kind == "sqlite":
        db = sqlite3.connect(where)
        with db:
            for sql, params in statements:
                db.execute(sql, params)
        db.close()
        return
    import psycopg

    with psycopg.connect(where) as pg:
        for sql, params in statements:
            pg.execute(sql.replace("?", "%s").encode(), params)
