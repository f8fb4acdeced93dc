"""The tables the pages read, kept loaded between requests, and the figures computed from
them, kept per table version.

A table's page asks for its detail, health and history at once; a second look at the same
version must not replay its log again, nor walk its million add actions again (issue #47: a
1M-file table's page in under a second after the first load). So:

* :class:`SnapshotCache` keeps the last ``capacity`` tables loaded (a
  :class:`~deltalog.DeltaTable` each), brought up to date on each use with
  :meth:`~deltalog.DeltaTable.update_incremental` (the commits since, not a reload; a
  catalog-managed table asks the catalog for its ratified commits);
* :class:`FigureCache` keeps what was computed of a version (the health figures, the summary
  a listing shows) by ``(table id, location, version, kind)``: a version never changes, so an
  entry is never stale, only evicted.

Both are bounded and thread-safe (requests run in worker threads); loading one table never
holds up requests for another.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from deltalog.catalog.stores.records import TableRecord
    from deltalog.server.lance.service import CatalogService
    from deltalog.table.delta_table import DeltaTable

T = TypeVar("T")


def identity(record: TableRecord) -> tuple[Any, ...]:
    """What tells one table from another in the caches: its row's id, UUID and creation time
    and its location (an id alone may be reused for a table created after one was dropped,
    even at the same location)."""
    return (record.id, record.uuid, record.created_ms, record.location)


#: The most active files the kept tables may hold together (a loaded 1M-file snapshot takes
#: ~400 MB): the least recently viewed ones are let go past it (the one in use stays).
MAX_KEPT_FILES = 2_000_000


class SnapshotCache:
    """The latest snapshot of recently viewed tables (see the module docs): at most
    ``capacity`` of them, holding at most ``max_files`` active files together."""

    def __init__(
        self, service: CatalogService, capacity: int = 8, max_files: int = MAX_KEPT_FILES
    ) -> None:
        self._service = service
        self._capacity = capacity
        self._max_files = max_files
        self._files: dict[tuple[Any, ...], int] = {}
        self._entries: OrderedDict[tuple[Any, ...], tuple[threading.Lock, list[Any]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def latest(self, record: TableRecord) -> DeltaTable:
        """The table of ``record`` at its latest version."""
        key = identity(record)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = (threading.Lock(), [])
                self._entries[key] = entry
            else:
                self._entries.move_to_end(key)
        lock, slot = entry
        with lock:
            if slot:
                table: DeltaTable = slot[0]
                if not record.managed or table.version() != record.latest_version:
                    table.update_incremental()
            else:
                table = self._service.open_table(record)
                slot.append(table)
            files = table._raw.num_files()
        self._evict(key, files)
        return table

    def _evict(self, key: tuple[Any, ...], files: int) -> None:
        """Lets go of the least recently viewed tables past the caps (never ``key``'s)."""
        with self._lock:
            self._files[key] = files
            while len(self._entries) > 1 and (
                len(self._entries) > self._capacity
                or sum(self._files.get(k, 0) for k in self._entries) > self._max_files
            ):
                oldest = next(iter(self._entries))
                if oldest == key:
                    self._entries.move_to_end(key)
                    oldest = next(iter(self._entries))
                del self._entries[oldest]
                self._files.pop(oldest, None)


class FigureCache:
    """What was computed of a table version, least recently used out first. A value asked
    for while another thread computes it is waited for, not computed twice (a table's page
    asks for its detail and its health at once, and both need the same figures)."""

    def __init__(self, capacity: int = 256) -> None:
        self._capacity = capacity
        self._values: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._running: dict[tuple[Any, ...], Future[Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """The value of ``key``, computed (outside the lock, once) when absent."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                value: T = self._values[key]
                return value
            running = self._running.get(key)
            if running is None:
                mine: Future[Any] = Future()
                self._running[key] = mine
        if running is not None:
            waited: T = running.result()
            return waited
        try:
            value = compute()
        except BaseException as e:
            with self._lock:
                del self._running[key]
            mine.set_exception(e)
            raise
        with self._lock:
            del self._running[key]
            self._values[key] = value
            while len(self._values) > self._capacity:
                self._values.popitem(last=False)
        mine.set_result(value)
        return value
