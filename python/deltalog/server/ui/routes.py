"""The web pages' HTTP side (``/ui/…``; issue #47).

* ``GET /ui/``: the page shell (``static/index.html``): no data and nothing secret in it, so it
  needs no token. Its script asks for a token once, keeps it in ``sessionStorage`` (this tab
  only, gone when it closes), and sends it as ``Authorization: Bearer`` to the JSON API: never
  in a URL, so never in a log, a history or a ``Referer``. The page's own places are in the
  URL's fragment (``#/table/…``), which browsers never send.
* ``GET /ui/static/<file>``: the script and the style sheet (a fixed list; nothing else is
  served from disk).
* ``GET /ui/api/<view>``: read-only JSON, behind the server's tokens and roles (every view
  needs ``reader``; ``server`` needs ``admin``). Names arrive as query parameters (``ns`` once
  per namespace level, ``t`` for a table), never as paths, so any name is expressible.

Only ``GET`` and ``HEAD`` are answered (405 otherwise): nothing here changes anything, so
there is no request to forge (no CSRF), and the pages show commands as text to copy. Every
answer has a Content-Security-Policy allowing only this server's own script, styles and
requests (no inline script or handler can run even if a value were mis-rendered), and
``nosniff``, ``no-referrer`` and ``DENY`` framing. The script puts every value into the page as
text (``textContent``), never as markup.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request as HttpRequest
from starlette.responses import Response

from deltalog.catalog.clients.rest import protocol as p
from deltalog.exceptions import DeltaError
from deltalog.server.auth import Principal, allows, list_tokens
from deltalog.server.lance.service import RestError, error_code
from deltalog.server.redact import redact
from deltalog.server.ui import browse, table_view
from deltalog.server.ui.snapshots import FigureCache, SnapshotCache, identity

if TYPE_CHECKING:
    from deltalog.server.auth import TokenStore
    from deltalog.server.lance.service import CatalogService
    from deltalog.server.refusals import RefusalLog

_log = logging.getLogger("deltalog.catalog.server")

PREFIX = "/ui"
_STATIC_DIR = Path(__file__).parent / "static"
_STATIC = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
#: The policy of every answer: this server's own script, styles, images and requests only.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
#: The most namespace levels and the longest name a query may carry.
MAX_LEVELS, MAX_NAME_CHARS = 32, 1024
#: The most principals and refusals the admin view lists.
MAX_PRINCIPALS, MAX_REFUSALS = 1000, 200


class UiRoutes:
    """Answers ``/ui`` and everything under it (see the module docs)."""

    def __init__(
        self,
        service: CatalogService,
        tokens: TokenStore | None,
        principal_of: Callable[[HttpRequest, TokenStore | None], Principal],
        refusals: RefusalLog | None = None,
    ) -> None:
        self.service = service
        self.tokens = tokens
        self.principal_of = principal_of
        self.refusals = refusals
        self.snapshots = SnapshotCache(service)
        self.figures = FigureCache()
        self._files = {name: (_STATIC_DIR / name).read_bytes() for name in _STATIC}
        self._shell = (_STATIC_DIR / "index.html").read_bytes()
        self._views: dict[str, tuple[str, Callable[[HttpRequest, Principal], Any]]] = {
            "me": ("reader", self._me),
            "namespace": ("reader", self._namespace),
            "search": ("reader", self._search),
            "summary": ("reader", self._summary),
            "table": ("reader", self._table),
            "history": ("reader", self._history),
            "health": ("reader", self._health),
            "diff": ("reader", self._diff),
            "server": ("admin", self._server),
        }

    async def dispatch(self, request: HttpRequest, raw_path: str) -> Response:
        if request.method not in ("GET", "HEAD"):
            response = _plain("the pages only read: GET or HEAD\n", 405)
            response.headers["allow"] = "GET, HEAD"
        elif raw_path in ("/ui", "/ui/", "/ui/index.html"):
            if raw_path == "/ui":
                response = Response(status_code=308, headers={"location": "/ui/"})
            else:
                response = Response(self._shell, media_type="text/html; charset=utf-8")
                response.headers["cache-control"] = "no-cache"
        elif raw_path.startswith("/ui/static/"):
            name = raw_path[len("/ui/static/") :]
            if name in self._files:
                response = Response(self._files[name], media_type=_STATIC[name])
                response.headers["cache-control"] = "no-cache"
            else:
                response = _plain("no such file\n", 404)
        elif raw_path.startswith("/ui/api/"):
            response = await self._api(request, raw_path, raw_path[len("/ui/api/") :])
        else:
            response = _plain("no such page\n", 404)
        for key, value in _HEADERS.items():
            response.headers[key] = value
        return response

    async def _api(self, request: HttpRequest, raw_path: str, view: str) -> Response:
        started = time.perf_counter()
        request_id = uuid.uuid4().hex[:16]
        principal: Principal | None = None
        code: int | None = None
        message: str | None = None
        try:
            if view not in self._views:
                raise RestError(p.UNSUPPORTED, f"no such view: {view}")
            role, handler = self._views[view]
            principal = self.principal_of(request, self.tokens)
            if not allows(principal.role, role):
                raise RestError(
                    p.PERMISSION_DENIED,
                    f"{principal.name} ({principal.role}) may not see {view}: it needs the "
                    f"{role} role",
                )
            result = await run_in_threadpool(handler, request, principal)
            status = 200
            body: Any = result
        except RestError as e:
            code, message, status = e.code, e.message, e.status
            body = {"error": e.message, "code": e.code}
        except (DeltaError, OSError) as e:
            code = error_code(e)
            status = p.STATUS[code]
            message = f"{type(e).__name__}: {e}"
            if status >= 500:
                _log.error(
                    "request GET %s (request id %s) failed: %s",
                    raw_path,
                    request_id,
                    redact(message),
                    exc_info=code == p.INTERNAL,
                )
                message = f"internal error (request id {request_id}; see the server's log)"
            body = {"error": message, "code": code}
        except Exception as e:
            code, status = p.INTERNAL, 500
            _log.exception(
                "request GET %s (request id %s) failed: %s",
                raw_path,
                request_id,
                redact(f"{type(e).__name__}: {e}"),
            )
            message = f"internal error (request id {request_id}; see the server's log)"
            body = {"error": message, "code": code}
        text = json.dumps(body, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        response = Response(text.encode("ascii"), status, media_type="application/json")
        response.headers["cache-control"] = "no-store"
        if self.refusals is not None:
            name = principal.name if principal else None
            self.refusals.note(request.method, raw_path, status, code, name, message)
        _log.info(
            json.dumps(
                {
                    "method": request.method,
                    "path": raw_path,
                    "status": status,
                    "code": code,
                    "ms": round((time.perf_counter() - started) * 1000, 3),
                    "principal": principal.name if principal else None,
                    "request_id": request_id,
                }
            )
        )
        return response

    # -- the views (in a worker thread) -------------------------------------------------------

    def _me(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        return {
            "name": principal.name,
            "role": principal.role,
            "authentication": self.tokens is not None,
        }

    def _namespace(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        return browse.namespace(self.service, _levels(request))

    def _search(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        return browse.search(self.service, _text(request, "q", required=False) or "")

    def _summary(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        record = browse.table_record(self.service, _levels(request), _text(request, "t"))
        return browse.summary(self.service, self.figures, record)

    def _table(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        names, name = _levels(request), _text(request, "t")
        record = browse.table_record(self.service, names, name)
        table = self.snapshots.latest(record)
        out = table_view.detail(self.service, record, table, [*names, name])
        out["summary"] = self._figures(record, table, [*names, name])["summary"]
        return out

    def _history(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        names, name = _levels(request), _text(request, "t")
        record = browse.table_record(self.service, names, name)
        table = self.snapshots.latest(record)
        limit = _int(request, "limit", 50)
        key = (*identity(record), table.version(), "history", limit)
        entries = self.figures.get(
            key, lambda: table_view.history(self.service, record, table, limit)
        )
        return {"name": [*names, name], "version": table.version(), "history": entries}

    def _health(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        names, name = _levels(request), _text(request, "t")
        record = browse.table_record(self.service, names, name)
        table = self.snapshots.latest(record)
        return {"name": [*names, name], **self._figures(record, table, [*names, name])}

    def _figures(self, record: Any, table: Any, name: list[str]) -> dict[str, Any]:
        key = (*identity(record), table.version(), "health", tuple(name))

        def compute() -> dict[str, Any]:
            # Imported here: pyarrow's compute kernels cost a worker ~0.25 s to start up.
            from deltalog.server.ui import health

            figures = health.health(table, name)
            figures["summary"] = {
                "version": figures["version"],
                "timestamp": table.timestamp(),
                "files": figures["files"],
                "bytes": figures["bytes"],
                "rows": figures["rows"],
            }
            return figures

        result: dict[str, Any] = self.figures.get(key, compute)
        return result

    def _diff(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        names, name = _levels(request), _text(request, "t")
        record = browse.table_record(self.service, names, name)
        old, new = _int(request, "from", None), _int(request, "to", None)
        key = (*identity(record), old, new, "diff")
        result: dict[str, Any] = self.figures.get(
            key, lambda: table_view.diff(self.service, record, [*names, name], old, new)
        )
        return result

    def _server(self, request: HttpRequest, principal: Principal) -> dict[str, Any]:
        principals: list[dict[str, Any]] = []
        path = self.tokens.path if self.tokens is not None else None
        if path is not None:
            principals = [
                {k: entry.get(k) for k in ("name", "role", "state", "created", "expires")}
                for entry in list_tokens(path)[:MAX_PRINCIPALS]
            ]
        refusals = []
        if self.refusals is not None:
            refusals = [
                {
                    "at_ms": r.at_ms,
                    "principal": r.principal,
                    "method": r.method,
                    "path": r.path,
                    "status": r.status,
                    "code": r.code,
                    "message": r.message,
                }
                for r in self.refusals.recent(MAX_REFUSALS)
            ]
        return {
            "authentication": self.tokens is not None,
            "principals": principals,
            "refusals": refusals,
        }


def _plain(text: str, status: int) -> Response:
    return Response(text, status_code=status, media_type="text/plain; charset=utf-8")


def _levels(request: HttpRequest) -> list[str]:
    levels = request.query_params.getlist("ns")
    if len(levels) > MAX_LEVELS:
        raise RestError(p.INVALID_INPUT, f"at most {MAX_LEVELS} namespace levels")
    for level in levels:
        _check(level, "ns")
    return levels


def _check(value: str, what: str) -> str:
    if not value or len(value) > MAX_NAME_CHARS:
        raise RestError(p.INVALID_INPUT, f"{what} must be 1 to {MAX_NAME_CHARS} characters")
    return value


def _text(request: HttpRequest, key: str, required: bool = True) -> str:
    value = request.query_params.get(key)
    if value is None:
        if required:
            raise RestError(p.INVALID_INPUT, f"the query needs {key}")
        return ""
    return _check(value, key) if required else value[:MAX_NAME_CHARS]


def _int(request: HttpRequest, key: str, default: int | None) -> int:
    value = request.query_params.get(key)
    if value is None:
        if default is None:
            raise RestError(p.INVALID_INPUT, f"the query needs {key}")
        return default
    try:
        number = int(value)
    except ValueError:
        raise RestError(p.INVALID_INPUT, f"{key} must be an integer, not {value[:40]!r}") from None
    if number < 0 or number >= 1 << 62:
        raise RestError(p.INVALID_INPUT, f"{key} is out of range")
    return number
