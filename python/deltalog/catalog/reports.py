"""Reports of published commits that a catalog client makes when it goes away.

A REST or Unity Catalog client reports what it published with its next commit (one request
fewer per commit); its last commit is reported when the client is collected or the process
exits. A client freed in the main thread, outside a cyclic collection (the usual
``dl.write_table(catalog.load_table(name), ...)``), reports at once. A report must never
run inside a cyclic collection or in another thread, though: the collector can run anywhere,
holding any lock (a connection pool's; the Unity Catalog transport's event loop), and a
request sent from there could wait on itself. Such reports are queued for one background
thread. At exit, of the interpreter or of a ``multiprocessing`` worker (which skips
``atexit``), every report still owed (queued, or of a client still alive) is sent from the
exiting thread, before the Unity Catalog transport's event loop is shut down (its finalizer
has a lower exit priority). Every report is best effort: the next writer's publishing covers a
lost one.
"""

from __future__ import annotations

import gc
import multiprocessing.util
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

_jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
_worker: threading.Thread | None = None
_start = threading.Lock()
#: Clients that may owe a report (``report_unreported()``), for the exit.
_live: weakref.WeakSet[Any] = weakref.WeakSet()


def watch(client: Any) -> None:
    """Remembers ``client`` (it has ``report_unreported()``) for the report at exit."""
    _live.add(client)


_state = threading.local()


def _collection_phase(phase: str, info: dict[str, Any]) -> None:
    _state.collecting = phase == "start"


gc.callbacks.append(_collection_phase)


def when_collected(job: Callable[[], None]) -> None:
    """A collected client's report: now when that is safe (the main thread, outside a cyclic
    collection), else from the reporting thread (:func:`later`)."""
    if getattr(_state, "collecting", False) or threading.current_thread() is not (
        threading.main_thread()
    ):
        later(job)
        return
    try:
        job()
    except Exception:  # best effort: the next writer's publishing covers it
        pass


def later(job: Callable[[], None]) -> None:
    """Runs ``job`` on the reporting thread: returns at once (a collector callback calls it)."""
    global _worker
    _jobs.put(job)
    if _worker is None:
        with _start:
            if _worker is None:
                _worker = threading.Thread(target=_work, name="deltalog-reports", daemon=True)
                _worker.start()


def _work() -> None:
    while True:
        job = _jobs.get()
        try:
            job()
        except Exception:  # best effort: the next writer's publishing covers it
            pass


def flush(timeout: float = 10.0) -> bool:
    """Waits until the reports queued so far are sent; whether they were in time."""
    done = threading.Event()
    later(done.set)
    return done.wait(timeout)


def _at_exit() -> None:
    for client in list(_live):
        try:
            client.report_unreported()
        except Exception:
            pass
    while True:
        try:
            job = _jobs.get_nowait()
        except queue.Empty:
            return
        try:
            job()
        except Exception:
            pass


# multiprocessing's exit hook runs at the interpreter's exit (through atexit) and at a
# multiprocessing worker's, which ends with os._exit and skips atexit.
multiprocessing.util.Finalize(None, _at_exit, exitpriority=0)
