"""The audit log of refusals a SQL store keeps (schema 8,
:func:`~deltalog.catalog.stores.migrations.refusals_migration`): the latest requests the
catalog's server refused (403 / 409), for its web UI. :class:`AuditLog` is a mixin of
:class:`~deltalog.catalog.stores.sql.SqlStore`, written over the engine's transactions."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from deltalog.catalog.stores.records import RefusalRecord

#: The most refusals the audit log keeps: each new one drops those this many ids older.
#: Read when a refusal is recorded (a test may set a smaller one).
AUDIT_LOG_ROWS = 1000

#: The most characters kept of each text of a refusal; longer ones are truncated, not refused
#: (a refused request's path or message is the requester's to choose).
LIMITS = {"principal": 256, "method": 16, "path": 512, "message": 1024}


class _Engine(Protocol):
    """What :class:`AuditLog` uses of its store (:class:`~deltalog.catalog.stores.sql.SqlStore`)."""

    def _transaction(
        self, write: bool = True, durable: bool = True
    ) -> AbstractContextManager[Any]: ...

    def _insert(self, db: Any, sql: str, params: Sequence[Any]) -> int: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


def _cut(text: str | None, field: str) -> str | None:
    return None if text is None else str(text)[: LIMITS[field]]


class AuditLog:
    """:meth:`record_refusal` and :meth:`refusals` over the ``audit_log`` table."""

    def record_refusal(self: _Engine, record: RefusalRecord) -> None:
        """Records one refusal (its texts truncated to :data:`LIMITS`) and drops the refusals
        :data:`AUDIT_LOG_ROWS` or more ids older, in one short transaction (not waiting for
        the disk: losing a refusal to a crash is harmless)."""
        with self._transaction(durable=False) as db:
            new_id = self._insert(
                db,
                "INSERT INTO audit_log (at_ms, principal, method, path, status, code, message) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    int(record.at_ms),
                    _cut(record.principal, "principal"),
                    _cut(record.method, "method") or "",
                    _cut(record.path, "path") or "",
                    int(record.status),
                    None if record.code is None else int(record.code),
                    _cut(record.message, "message"),
                ),
            )
            self._run(db, "DELETE FROM audit_log WHERE id <= ?", (new_id - AUDIT_LOG_ROWS,))

    def refusals(self: _Engine, limit: int = 100) -> list[RefusalRecord]:
        """The latest ``limit`` refusals recorded (clamped to 1 … :data:`AUDIT_LOG_ROWS`),
        newest first."""
        limit = max(1, min(int(limit), AUDIT_LOG_ROWS))
        rows = self._read(
            "SELECT at_ms, principal, method, path, status, code, message FROM audit_log "
            "ORDER BY id DESC LIMIT ?",
            (limit,),
        )
        return [RefusalRecord(*row) for row in rows]
