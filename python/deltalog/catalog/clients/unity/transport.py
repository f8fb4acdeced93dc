"""How deltalog's Unity Catalog client talks to a UC server: the generated ``unitycatalog-client``
APIs (async, on aiohttp) run on one event loop in a background thread per client, so that
deltalog's synchronous callers, native threads included, wait on them; the connections are
kept alive across calls; a forked child starts its own loop. UC's errors become deltalog's
(:func:`translate`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import multiprocessing.util
import os
import threading
from collections.abc import Callable
from typing import Any

from deltalog.exceptions import (
    AlreadyExistsError,
    CatalogAuthenticationError,
    CatalogError,
    CatalogPermissionError,
    CatalogThrottledError,
    CatalogUnavailableError,
    DeltaError,
    InvalidArgumentError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
)

PREFIX = "/api/2.1/unity-catalog"

#: HTTP statuses after which a call that changes nothing is sent again.
TRANSIENT = {429, 500, 502, 503, 504}


class NoAnswer(CatalogError):
    """A call that changes something got no answer (the connection broke, it timed out, the
    server failed): it may or may not have taken effect."""


class UcConflict(CatalogError):
    """A 409 of the Delta API: ``kind`` is ``CommitVersionConflictException``,
    ``UpdateRequirementConflictException`` or ``AlreadyExistsException``."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def translate(status: int, body: str | None, what: str) -> DeltaError:
    """The deltalog error of a UC error answer (either of UC's error shapes)."""
    kind, message = "", body or ""
    try:
        document = json.loads(body) if body else {}
        if isinstance(document.get("error"), dict):  # the Delta API's DeltaErrorResponse
            kind = str(document["error"].get("type", ""))
            message = str(document["error"].get("message", ""))
        elif "error_code" in document:  # the UC API's answer
            kind = str(document["error_code"])
            message = str(document.get("message", ""))
    except (ValueError, AttributeError):
        pass
    text = f"{what}: {message or f'HTTP {status}'} (HTTP {status}{', ' + kind if kind else ''})"
    if status == 401:
        return CatalogAuthenticationError(text)
    if status == 403:
        return CatalogPermissionError(text)
    if status == 404:
        if kind in ("NoSuchCatalogException", "NoSuchSchemaException") or "schema" in what:
            return NamespaceNotFoundError(text)
        return TableNotFoundError(text)
    if status == 409:
        if kind in ("AlreadyExistsException", "ALREADY_EXISTS"):
            return AlreadyExistsError(text)
        return UcConflict(text, kind)
    if status == 429:
        return CatalogThrottledError(text)
    if status == 400 and "not empty" in message:
        return NamespaceNotEmptyError(text)
    if status in (400, 413, 422):
        return InvalidArgumentError(text)
    if status == 501:
        return UnsupportedFeatureError(text)
    if status in (502, 503, 504):
        return CatalogUnavailableError(text)
    return NoAnswer(text)


class _ExitSafeExecutor(concurrent.futures.ThreadPoolExecutor):
    """The loop's default executor, where aiohttp looks up ``.netrc`` and resolves host names
    for each request: a thread pool, and once the interpreter is exiting, the call itself on
    the loop's thread. Python shuts every thread pool down before the ``atexit`` hooks run,
    which is when the exit reports (:mod:`deltalog.catalog.reports`) are sent on this loop."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().submit(fn, *args, **kwargs)
        except RuntimeError:  # "cannot schedule new futures after (interpreter) shutdown"
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as e:
                future.set_exception(e)
            return future


class Transport:
    """The generated clients of one UC server, on a background event loop."""

    def __init__(self, uri: str, token: str | None, timeout: float, retries: int = 3) -> None:
        try:
            import deltalog.catalog.clients.unity.generated  # noqa: F401
        except ImportError as e:
            raise UnsupportedFeatureError(
                "the unity catalog needs unitycatalog-client, which is not installed: pip "
                f"install 'deltalog[unity]' ({e})"
            ) from e
        self.uri = uri.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self._lock = threading.Lock()
        self._pid = -1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: dict[str, Any] = {}

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            finalizer = getattr(self, "_finalizer", None)
            shut = finalizer is None or not finalizer.still_active()
            if self._loop is None or shut or self._pid != os.getpid():
                # (A loop its finalizer shut down is not used again: a call on a stopped loop
                # would wait for its whole timeout.)
                loop = asyncio.new_event_loop()
                loop.set_default_executor(_ExitSafeExecutor(thread_name_prefix="deltalog-unity"))
                thread = threading.Thread(
                    target=loop.run_forever, name="deltalog-unity", daemon=True
                )
                thread.start()
                self._loop, self._pid, self._clients = loop, os.getpid(), {}
                # Closed when the transport is collected, or at exit (aiohttp warns about
                # sessions left open, and the loop's thread would linger) — at exit only
                # after the exit reports (deltalog.catalog.reports, exit priority 0), which
                # are sent on this loop: multiprocessing's exit hook runs its finalizers by
                # priority, where weakref.finalize's atexit order is unrelated to it.
                self._finalizer = multiprocessing.util.Finalize(
                    self, _shut_down, (loop, self._clients, os.getpid()), exitpriority=-1
                )
            return self._loop

    async def _client(self, delta: bool) -> Any:
        key = "delta" if delta else "uc"
        client = self._clients.get(key)
        if client is None:
            from unitycatalog.client.api_client import ApiClient
            from unitycatalog.client.configuration import Configuration

            from deltalog.catalog.clients.unity.generated import DeltaApiClient

            config = Configuration(host=self.uri + PREFIX)
            header = (
                {"header_name": "Authorization", "header_value": f"Bearer {self.token}"}
                if self.token
                else {}
            )
            client = (DeltaApiClient if delta else ApiClient)(config, **header)
            self._clients[key] = client
        return client

    def call(
        self, what: str, api: type[Any], method: str, *args: Any, idempotent: bool, **kw: Any
    ) -> Any:
        """``api(client).method(*args, **kw)``, awaited on the loop: a call that changes
        nothing is retried on transient failures; errors translated (:func:`translate`; a
        call that changes something and gets no answer raises :class:`NoAnswer`)."""
        from unitycatalog.client.exceptions import ApiException

        delta = api.__module__.startswith("unitycatalog.delta")
        attempts = 1 + (self.retries if idempotent else 0)

        async def run() -> Any:
            client = await self._client(delta)
            return await getattr(api(client), method)(*args, _request_timeout=self.timeout, **kw)

        import time

        for attempt in range(attempts):
            loop = self._start()
            future = asyncio.run_coroutine_threadsafe(run(), loop)
            try:
                return future.result(self.timeout + 5)
            except ApiException as e:
                if e.status in TRANSIENT and attempt + 1 < attempts:
                    time.sleep(0.05 * 2**attempt)
                    continue
                error = translate(int(e.status or 0), e.body, what)
                if isinstance(error, NoAnswer) and idempotent:
                    error = CatalogUnavailableError(str(error))
                raise error from None
            except (DeltaError, TypeError, ValueError):
                raise  # deltalog's own, or a call the generated API refuses (pydantic's)
            except Exception as e:  # aiohttp's connection errors, timeouts
                future.cancel()
                if attempt + 1 < attempts:
                    time.sleep(0.05 * 2**attempt)
                    continue
                text = f"{what}: cannot reach the Unity Catalog at {self.uri}: {e!r}"
                if idempotent:
                    raise CatalogUnavailableError(text) from e
                raise NoAnswer(text) from e
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Closes the connections and stops the loop (the next call starts them again)."""
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None and self._pid == os.getpid():
            finalizer()
        self._loop = None


def _shut_down(loop: asyncio.AbstractEventLoop, clients: dict[str, Any], pid: int) -> None:
    """Closes a transport's clients on its loop, then stops the loop (its own process only:
    a forked child's copy of the loop has no thread running it)."""
    if pid != os.getpid() or not loop.is_running():
        return

    async def shut() -> None:
        for client in list(clients.values()):
            await client.close()
        clients.clear()

    try:
        asyncio.run_coroutine_threadsafe(shut(), loop).result(5)
    except Exception:
        pass
    loop.call_soon_threadsafe(loop.stop)


Call = Callable[..., Any]
