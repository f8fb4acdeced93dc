"""The server's audit log of refusals: each 403 (a principal asked for more than its role
allows) and 409 (a conflicting commit or name) answered by any route, kept in the catalog's
database (so every worker process, and every server sharing a PostgreSQL database, sees the
same log) for the admin page (issue #47).

Recording never holds up the answer: rows are written by one background thread, at most
:data:`MAX_PER_SECOND` a second per process (a client that hammers a forbidden route must not
turn every refusal into a database write; the ones past the rate are counted in the request
log only). A failed write is logged, never raised. The row holds the method, the raw path
(never the query string or a header: no token reaches it), the status, the error code, the
principal and the error message.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from deltalog.catalog.stores.records import RefusalRecord

if TYPE_CHECKING:
    from deltalog.catalog.managed import Store

_log = logging.getLogger("deltalog.catalog.server")

#: The statuses recorded.
RECORDED = frozenset({403, 409})
#: The most refusals one process records a second.
MAX_PER_SECOND = 20


class RefusalLog:
    """Records refusals into ``store`` (see the module docs)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refusals")
        self._lock = threading.Lock()
        self._second = 0
        self._count = 0

    def note(
        self,
        method: str,
        path: str,
        status: int,
        code: Any,
        principal: str | None,
        message: str | None,
    ) -> None:
        """Records the answer if it is a refusal (and the rate allows)."""
        if status not in RECORDED:
            return
        now = time.time()
        with self._lock:
            second = int(now)
            if second != self._second:
                self._second, self._count = second, 0
            if self._count >= MAX_PER_SECOND:
                return
            self._count += 1
        record = RefusalRecord(
            at_ms=int(now * 1000),
            principal=principal,
            method=method,
            path=path,
            status=status,
            code=code if isinstance(code, int) else None,
            message=message if code is None or isinstance(code, int) else f"{code}: {message}",
        )
        self._writer.submit(self._write, record)

    def _write(self, record: RefusalRecord) -> None:
        try:
            self._store.record_refusal(record)
        except Exception as e:  # the log is best effort: the answer went out already
            _log.warning("could not record a refusal in the audit log: %s", type(e).__name__)

    def recent(self, limit: int = 100) -> list[RefusalRecord]:
        """The newest refusals first."""
        return self._store.refusals(limit)

    def flush(self) -> None:
        """Waits for the refusals noted so far to be written (tests)."""
        self._writer.submit(lambda: None).result()
