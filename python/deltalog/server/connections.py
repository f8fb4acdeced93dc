"""Connections of deltalog's REST catalog server that careless or hostile clients cannot use
to take it down: uvicorn's httptools protocol with

* a **header-read timeout**: a connection that has not sent a request's complete headers
  within ``header_timeout`` seconds of opening (or of the request's first byte) is answered
  408 and closed, however slowly the bytes trickle in (slowloris);
* a **body timeout**: a request whose body is not complete ``body_timeout`` seconds after its
  headers is closed;
* an **idle timeout**: a keep-alive connection without a request for ``idle_timeout`` seconds
  is closed;
* a **header size cap**: a request line plus headers over ``max_header_bytes`` is answered 431
  and closed (HTTP/1.1 leaves the limit to the server; RFC 9110 "Field Limits");
* a **connection cap that never starves real requests**: past ``max_connections`` the
  connections that are idle (no request in flight, longest idle first), then those still
  sending headers (longest first), are closed to make room; the new connection is always
  accepted. (uvicorn's own ``limit_concurrency`` counts idle connections, so 1,000 idle sockets
  made every request, ``/healthz`` included, answer 503; it is not used, and the cap on requests
  in flight is the app's, :class:`deltalog.server.app.CatalogApp`.)

The limits come from :class:`~deltalog.server.limits.ConnectionLimits` set on uvicorn's
``Config`` as ``deltalog_limits`` (a picklable attribute, so worker processes get it too).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from deltalog.server.limits import ConnectionLimits

_log = logging.getLogger("deltalog.catalog.server")

_IDLE, _HEADERS, _BODY, _APP = "idle", "headers", "body", "app"


def _answer(status: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class _HeadersTooLarge(Exception):
    """Stops the parser after a 431 (httptools re-raises it as a callback error)."""


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the timeouts and caps of the module docs."""

    def __init__(self, config: Any, server_state: Any, app_state: Any, _loop: Any = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits: ConnectionLimits = getattr(config, "deltalog_limits", ConnectionLimits())
        self._state = _IDLE
        self._since = 0.0  # when the current state began (loop time)
        self._timer: asyncio.TimerHandle | None = None
        self._generation = 0  # bumped whenever a new deadline replaces the old one
        self._header_bytes = 0
        self._requests = 0
        self._in_message = False  # between a request's first byte and its body's end

    # -- state and timers ----------------------------------------------------------------

    def _enter(self, state: str, timeout: float | None) -> None:
        self._state = state
        self._since = self.loop.time()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._generation += 1
        if timeout is not None:
            self._timer = self.loop.call_later(timeout, self._expired, self._generation)

    def _expired(self, generation: int) -> None:
        if generation != self._generation:
            return
        self._timer = None
        state = self._state
        if state == _APP or self.transport is None or self.transport.is_closing():
            return
        if state == _HEADERS:
            self.transport.write(_answer(b"408 Request Timeout"))
        _log.info('{"event": "connection closed", "reason": "%s timeout"}', state)
        self.transport.close()

    def _evictable(self) -> bool:
        return (
            self._state in (_IDLE, _HEADERS)
            and (self.cycle is None or self.cycle.response_complete)
            and not self.pipeline
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def _make_room(self) -> None:
        """Closes idle connections (then those still sending headers), longest first, until
        this new one fits under ``max_connections``."""
        cap = self.limits.max_connections
        if len(self.connections) < cap:
            return
        open_ = [c for c in self.connections if not c.transport.is_closing()]
        excess = len(open_) + 1 - cap
        if excess <= 0:
            return
        victims = sorted(
            (c for c in open_ if isinstance(c, GuardedHttpProtocol) and c._evictable()),
            key=lambda c: (c._state != _IDLE, c._since),
        )
        for victim in victims[:excess]:
            victim.transport.close()
        if len(victims) < excess:
            _log.warning(
                '{"event": "connection cap", "open": %d, "cap": %d, "busy": true}',
                len(open_),
                cap,
            )

    # -- the protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._make_room()
        super().connection_made(transport)
        # The first request's headers are due header_timeout after connecting.
        self._enter(_IDLE, self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        reading_headers = self._reading_headers()
        if reading_headers and self._state == _IDLE:
            self._header_bytes = 0
        super().data_received(data)
        if reading_headers and self._reading_headers() and not self.transport.is_closing():
            # All of ``data`` was request line and headers: they are not complete yet.
            self._header_bytes += len(data)
            if self._header_bytes > self.limits.max_header_bytes:
                self._refuse_headers()

    def _reading_headers(self) -> bool:
        """Whether the next bytes are a request line or headers (not the rest of a body the
        app answered without reading, e.g. with a 413)."""
        return self._state == _HEADERS or (self._state == _IDLE and not self._in_message)

    def _refuse_headers(self) -> None:
        if not self.transport.is_closing():
            self.transport.write(_answer(b"431 Request Header Fields Too Large"))
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        if not self.transport.is_closing():  # not after a 431 or 408 of ours
            super().send_400_response(msg)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_message = True
        self._header_bytes = 0
        if self._requests == 0:
            # Still due header_timeout after connecting.
            self._state = _HEADERS
        else:
            self._enter(_HEADERS, self.limits.header_timeout)
        self._requests += 1

    def on_headers_complete(self) -> None:
        size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
        if size > self.limits.max_header_bytes:
            self._refuse_headers()
            raise _HeadersTooLarge()
        self._enter(_BODY, self.limits.body_timeout)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self.transport.is_closing():
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_message = False
        if self.cycle is not None and self.cycle.response_complete:
            # The rest of a body the app answered without reading: the connection is idle.
            super().on_message_complete()
            return
        self._enter(_APP, None)
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or self.pipeline:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a pipelined request started
        self._enter(_IDLE, self.limits.idle_timeout)


def raise_open_files_limit(wanted: int) -> int:
    """Raises this process's soft ``RLIMIT_NOFILE`` to its hard limit (each connection is a
    file descriptor; the common default of 1,024 is less than 1,000 connections plus the
    database's and the tables' files). Returns the soft limit now in force; logs a warning if
    it is below ``wanted``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as e:
            _log.warning("could not raise the open files limit to %s: %s", target, e)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        _log.warning(
            "the open files limit (%d) is below --max-connections plus files (%d): "
            "connections past it are refused by the kernel",
            soft,
            wanted,
        )
    return int(soft)
