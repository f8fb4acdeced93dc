"""The idle connections of a SQL store (:class:`ConnectionPool`), shared by its engines."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

C = TypeVar("C")


class ConnectionPool(Generic[C]):
    """The idle connections of a store, reused across calls and threads: deltalog calls a
    catalog client from short-lived native threads, so a connection per thread would be a new
    connection per call. A forked child starts with none of the parent's connections (they
    are the parent's: using them from two processes corrupts the session)."""

    def __init__(
        self,
        connect: Callable[[], C],
        reusable: Callable[[C], bool],
        close: Callable[[C], None],
        max_idle: int = 8,
    ) -> None:
        self._connect = connect
        self._reusable = reusable
        self._close = close
        self._max_idle = max_idle
        self._idle: list[C] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def take(self) -> C:
        """An idle connection, or a new one."""
        if self._pid != os.getpid():
            self._idle, self._lock, self._pid = [], threading.Lock(), os.getpid()
        with self._lock:
            db = self._idle.pop() if self._idle else None
        if db is None or not self._reusable(db):
            db = self._connect()
        return db

    def release(self, db: C) -> None:
        """Returns a connection taken with :meth:`take` (closed if it is not reusable, or
        enough are idle)."""
        if self._pid != os.getpid():
            return  # taken before a fork: the parent's to close
        if self._reusable(db):
            with self._lock:
                if len(self._idle) < self._max_idle:
                    self._idle.append(db)
                    return
        self._close(db)

    @contextmanager
    def connection(self) -> Iterator[C]:
        """A connection for the duration of the block."""
        db = self.take()
        try:
            yield db
        finally:
            self.release(db)
