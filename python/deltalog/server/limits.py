"""What deltalog's REST catalog server accepts from a client: the caps on connections,
requests, bodies and decoded data, each a ``serve()`` argument and a ``deltalog catalog serve``
option, documented in ``docs/catalogs.md``, "Limits". (No imports beyond the standard library:
the command line reads the defaults.)"""

from __future__ import annotations

from dataclasses import dataclass

#: The largest JSON body (an inline commit is at most 64 KiB; staged commits are named).
MAX_BODY_BYTES = 4 * 1024 * 1024
#: The largest Arrow IPC body of ``CreateTable``, as sent.
MAX_CREATE_BYTES = 256 * 1024 * 1024
#: The most an Arrow IPC body of ``CreateTable`` may decode to (decompressed, dictionary and
#: run-end encoded columns expanded).
MAX_DECODED_BYTES = 256 * 1024 * 1024
#: The deepest JSON nesting of a body (the deepest request model nests 3 levels).
MAX_JSON_DEPTH = 32
#: The largest request line plus headers, in bytes (431 past it).
MAX_HEADER_BYTES = 64 * 1024

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class ConnectionLimits:
    """A server process's connection limits (per worker process).

    Attributes:
        max_connections: open connections; a new one past it closes the longest-idle
            connection without a request in flight (never refuses ``/healthz``).
        header_timeout: seconds from a request's first byte (or from the connection's
            opening) to its complete headers; then the connection is closed.
        body_timeout: seconds from a request's headers to its complete body; then closed.
        idle_timeout: seconds a keep-alive connection may wait for its next request.
        max_in_flight: requests being answered at once; more are answered 503 (code 17) with
            ``Retry-After`` (``/healthz`` is not counted).
        max_header_bytes: the request line and headers; more: 431 and closed.
    """

    max_connections: int = 4096
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    idle_timeout: float = 5.0
    max_in_flight: int = 256
    max_header_bytes: int = MAX_HEADER_BYTES
