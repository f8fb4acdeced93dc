"""``deltalog catalog serve``: a Lance Namespace REST server (``../shared/spec/003_…``, "Lance
REST Catalog"; ``lance-namespace-rest-2026-08.yaml``) for Delta tables, an ASGI app
(Starlette) run by uvicorn over a :class:`~deltalog.catalog.managed.ManagedCatalog` (SQLite
or PostgreSQL; several server processes may share one PostgreSQL database).

A request goes through, in order:

1. **routing** on the *raw* path (before percent-decoding, so that an encoded ``/`` inside an
   identifier never splits a path segment; :func:`route`); an unknown route or method is code 0
   (``Unsupported``, 406);
2. **authentication**: ``Authorization: Bearer <token>`` against the tokens file
   (:mod:`deltalog.server.auth`); 401 without a valid token; no tokens file means
   authentication is off;
3. **authorization** by the route's role (403); commits are checked again from their content;
4. **the body**: at most ``max_body_bytes`` (413), a JSON object whose fields the operation's
   model (``lance-namespace-urllib3-client``) knows (400 for unknown fields or wrong types),
   naming the same identifier as the path; malformed JSON (too deep, integers outside int64,
   lone surrogates) is 400 (:mod:`deltalog.server.lance.bodies`); an Arrow body of
   ``CreateTable`` is checked against ``max_decoded_bytes`` before it is decoded (413,
   :mod:`deltalog.server.lance.arrow_body`);
5. **the operation** (:class:`~deltalog.server.lance.service.CatalogService`, in a worker
   thread), answered with the model's JSON, or an ``ErrorResponse``
   ``{error, code, detail, instance}`` whose HTTP status follows the spec's code mapping;
6. **the audit log**: a 403 or 409 answer is recorded in the catalog database
   (:mod:`deltalog.server.refusals`; the UC routes and the web pages record theirs too);
7. **a request log line** (JSON, logger ``deltalog.catalog.server``): method, path, status,
   code, duration, principal, request id. Headers, bodies and query strings are never logged,
   so no token is. A 5xx answer says only a generic message and the request id; its detail
   (database errors, server paths) is in the log line's traceback under the same id.

Paths under ``/api/2.1/unity-catalog/`` go to the Unity Catalog routes
(:mod:`deltalog.server.unity`), and ``/ui`` and below to the web pages and their read-only JSON
API (:mod:`deltalog.server.ui`, docs/ui.md), each with the same tokens and roles.

Connections are uvicorn's httptools protocol with timeouts and caps
(:mod:`deltalog.server.connections`); at most ``max_in_flight`` requests are answered at
once (503, code 17, past it; ``/healthz`` is not counted).

uvicorn stops gracefully on SIGTERM/SIGINT: it stops accepting connections and lets requests in
flight (ratifications included) finish.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import math
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic
from lance_namespace_urllib3_client import models as m
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request as HttpRequest
from starlette.responses import JSONResponse, Response

from deltalog.catalog.clients.rest import protocol as p
from deltalog.catalog.managed import ManagedCatalog
from deltalog.catalog.stores.records import acting_as
from deltalog.exceptions import DeltaError, InvalidArgumentError
from deltalog.server.auth import (
    ANONYMOUS_ADMIN,
    Principal,
    TokenRefused,
    TokenStore,
    allows,
)
from deltalog.server.lance.bodies import PayloadTooLarge, parse_json_body
from deltalog.server.lance.service import (
    NO_CONTENT,
    CatalogService,
    Request,
    RestError,
    error_code,
)
from deltalog.server.limits import (
    MAX_BODY_BYTES,
    MAX_CREATE_BYTES,
    MAX_DECODED_BYTES,
    ConnectionLimits,
)
from deltalog.server.redact import redact

if TYPE_CHECKING:
    from deltalog.server.unity.credentials import CredentialVendor

_log = logging.getLogger("deltalog.catalog.server")

#: How long ``/healthz`` waits for the database.
HEALTHZ_TIMEOUT = 2.0


@dataclass(frozen=True)
class Operation:
    """A route: its HTTP method, the request model (``None``: no body), the role it needs and
    the service method."""

    method: str
    model: type[pydantic.BaseModel] | None
    role: str
    handler: str
    has_id: bool = True


_NAMESPACE_OPS = {
    "create": Operation("POST", m.CreateNamespaceRequest, "admin", "create_namespace"),
    "list": Operation("GET", None, "reader", "list_namespaces"),
    "describe": Operation("POST", m.DescribeNamespaceRequest, "reader", "describe_namespace"),
    "drop": Operation("POST", m.DropNamespaceRequest, "admin", "drop_namespace"),
    "exists": Operation("POST", m.NamespaceExistsRequest, "reader", "namespace_exists"),
    "table/list": Operation("GET", None, "reader", "list_tables"),
}

_TABLE_OPS = {
    "register": Operation("POST", m.RegisterTableRequest, "admin", "register_table"),
    "describe": Operation("POST", m.DescribeTableRequest, "reader", "describe_table"),
    "exists": Operation("POST", m.TableExistsRequest, "reader", "table_exists"),
    "drop": Operation("POST", None, "admin", "drop_table"),
    "deregister": Operation("POST", m.DeregisterTableRequest, "admin", "deregister_table"),
    "rename": Operation("POST", m.RenameTableRequest, "admin", "rename_table"),
    "declare": Operation("POST", m.DeclareTableRequest, "writer", "declare_table"),
    "create": Operation("POST", None, "writer", "create_table"),
    "version/list": Operation("POST", None, "reader", "list_table_versions"),
    "version/create": Operation(
        "POST", m.CreateTableVersionRequest, "writer", "create_table_version"
    ),
    "version/describe": Operation(
        "POST", m.DescribeTableVersionRequest, "reader", "describe_table_version"
    ),
    "version/delete": Operation(
        "POST", m.BatchDeleteTableVersionsRequest, "writer", "delete_table_versions"
    ),
}

_LIST_ALL = Operation("GET", None, "reader", "list_all_tables", has_id=False)
_BATCH_CREATE = Operation(
    "POST",
    m.BatchCreateTableVersionsRequest,
    "writer",
    "batch_create_table_versions",
    has_id=False,
)


def route(raw_path: str) -> tuple[Operation, str | None]:
    """The operation of a raw (percent-encoded) path and its raw ``{id}`` segment.

    Raises:
        RestError: code 0 for a path that names no operation deltalog serves.
    """
    parts = raw_path.split("/")
    if len(parts) >= 3 and parts[0] == "" and parts[1] == "v1":
        kind, rest = parts[2], parts[3:]
        if kind == "table" and not rest:
            return _LIST_ALL, None
        if kind == "table" and rest == ["version", "batch-create"]:
            return _BATCH_CREATE, None
        ops = {"namespace": _NAMESPACE_OPS, "table": _TABLE_OPS}.get(kind)
        if ops is not None and len(rest) >= 2:
            op = ops.get("/".join(rest[1:]))
            if op is not None:
                return op, rest[0]
    raise RestError(p.UNSUPPORTED, f"no such operation: {raw_path}")


def _error_body(e: RestError, instance: str, request_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": e.message, "code": e.code, "instance": instance}
    if e.context:
        body["context"] = e.context
    if request_id is not None:
        body["detail"] = f"request id {request_id}"
    shaped = m.ErrorResponse.from_dict(body)  # shaped by the spec's model
    assert shaped is not None  # from_dict answers None for None only
    return shaped.to_dict()


class _Json(JSONResponse):
    """A JSON answer in ASCII: a string echoed from the request (a name in an error message)
    that is not Unicode text, e.g. a lone surrogate, is escaped instead of failing to
    encode."""

    def render(self, content: Any) -> bytes:
        return json.dumps(
            content, ensure_ascii=True, allow_nan=False, separators=(",", ":")
        ).encode("ascii")


def _internal(code: int, request_id: str) -> RestError:
    """The answer to a server-side failure: generic, with the request id (the detail is in
    the log line)."""
    what = (
        "the catalog database is unavailable"
        if code == p.SERVICE_UNAVAILABLE
        else ("internal error")
    )
    return RestError(code, f"{what} (request id {request_id}; see the server's log)")


def _principal(request: HttpRequest, tokens: TokenStore | None) -> Principal:
    if tokens is None:
        return ANONYMOUS_ADMIN
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise RestError(p.UNAUTHENTICATED, "a bearer token is required (Authorization header)")
    try:
        principal = tokens.principal(token.strip())
    except TokenRefused as e:
        raise RestError(p.UNAUTHENTICATED, e.reason) from None
    if principal is None:
        raise RestError(p.UNAUTHENTICATED, "the bearer token is not valid")
    return principal


async def _read_body(request: HttpRequest, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            too_big = int(declared) > limit
        except ValueError:
            raise RestError(p.INVALID_INPUT, "Content-Length is not a number") from None
        if too_big:
            raise _too_large(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> RestError:
    return PayloadTooLarge(f"the request body is larger than {limit} bytes")


def _model(op: Operation, raw: bytes, names: list[str] | None) -> Any:
    if op.model is None:
        return None
    document: Any = parse_json_body(raw) if raw.strip() else {}
    if not isinstance(document, dict):
        raise RestError(p.INVALID_INPUT, "the body must be a JSON object")
    known = {f.alias or name for name, f in op.model.model_fields.items()}
    unknown = sorted(set(document) - known)
    if unknown:
        raise RestError(p.INVALID_INPUT, f"unknown fields: {', '.join(unknown)}")
    try:
        model = op.model.from_dict(document)  # type: ignore[attr-defined]
    except pydantic.ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors()
        )
        raise RestError(p.INVALID_INPUT, f"invalid request: {problems}") from e
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        # The generated from_dict iterates list fields before validating them: a number
        # where a list belongs ("ranges": 5) is a TypeError, not a ValidationError.
        raise RestError(p.INVALID_INPUT, f"invalid request: {type(e).__name__}: {e}") from e
    body_id = getattr(model, "id", None)
    if names is not None and body_id is not None and list(body_id) != names:
        raise RestError(
            p.INVALID_INPUT, f"the body names {list(body_id)!r} but the path names {names!r}"
        )
    return model


def create_app(
    catalog: ManagedCatalog,
    tokens: TokenStore | None = None,
    storage_options: dict[str, str] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_create_bytes: int = MAX_CREATE_BYTES,
    max_unpublished: int | None = None,
    max_decoded_bytes: int = MAX_DECODED_BYTES,
    max_in_flight: int = ConnectionLimits.max_in_flight,
    credential_vendor: CredentialVendor | None = None,
    ui: bool = True,
) -> CatalogApp:
    """The ASGI app serving ``catalog`` (see the module docs). ``credential_vendor``: what
    vends the UC routes' temporary credentials (a
    :class:`~deltalog.server.unity.credentials.CredentialVendor` of ``catalog``, e.g.
    an ``S3CredentialVendor``; default: none for local tables, 501 for object stores).
    ``ui``: serve the web pages (``/ui/``; ``False``: those paths are unknown routes)."""
    service = CatalogService(catalog, storage_options)
    # For CatalogService.create_table's decode_arrow_body (arrow_body.py).
    service.max_decoded_bytes = max_decoded_bytes
    if max_unpublished is not None:
        catalog._store.max_unpublished = max_unpublished  # type: ignore[attr-defined]

    from deltalog.server.unity.credentials import CredentialVendor
    from deltalog.server.unity.routes import PREFIX as UC_PREFIX, UnityRoutes

    if credential_vendor is None:
        credential_vendor = CredentialVendor(service.catalog)
    service.credentials = credential_vendor
    from deltalog.server.refusals import RefusalLog
    from deltalog.server.ui.routes import PREFIX as UI_PREFIX, UiRoutes

    refusals = RefusalLog(catalog._store)
    unity = UnityRoutes(service, tokens, max_body_bytes, refusals)
    pages = UiRoutes(service, tokens, _principal, refusals) if ui else None

    async def dispatch(request: HttpRequest) -> Response:
        started = time.perf_counter()
        request_id = uuid.uuid4().hex[:16]
        raw_bytes = request.scope.get("raw_path") or request.scope["path"].encode()
        raw_path = raw_bytes.split(b"?", 1)[0].decode("latin-1")
        if raw_path.startswith(UC_PREFIX):
            # Unity Catalog's APIs over the same catalog (deltalog.server.unity).
            return await unity.dispatch(request, raw_path)
        if pages is not None and (raw_path == UI_PREFIX or raw_path.startswith(UI_PREFIX + "/")):
            # The web pages and their read-only JSON API (deltalog.server.ui).
            return await pages.dispatch(request, raw_path)
        principal: Principal | None = None
        code: int | None = None
        message: str | None = None
        try:
            op, raw_id = route(raw_path)
            if request.method != op.method:
                raise RestError(
                    p.UNSUPPORTED, f"{raw_path} takes {op.method}, not {request.method}"
                )
            principal = _principal(request, tokens)
            if not allows(principal.role, op.role):
                raise RestError(
                    p.PERMISSION_DENIED,
                    f"{principal.name} ({principal.role}) may not call {raw_path}: it needs "
                    f"the {op.role} role",
                )
            query = dict(request.query_params)
            delimiter = query.get("delimiter") or p.DEFAULT_DELIMITER
            names: list[str] | None = None
            if raw_id is not None:
                try:
                    names = p.decode_id(raw_id, delimiter)
                except (ValueError, UnicodeDecodeError) as e:
                    raise RestError(p.INVALID_INPUT, f"invalid identifier: {e}") from e
            create = op.handler == "create_table"
            raw = await _read_body(request, max_create_bytes if create else max_body_bytes)
            handler: Callable[..., Any] = getattr(service, op.handler)

            def answer(principal: Principal = principal) -> Any:
                # Parsed off the event loop (a hostile 4 MiB body takes a few hundred ms),
                # and answered in the same worker thread: one hand-off per request.
                model = _model(op, raw, names)
                call = Request(principal, names or [], model, query, delimiter)
                # What the handler does through the ManagedCatalog is recorded as principal's.
                with acting_as(principal.name):
                    return handler(call, raw) if create else handler(call)

            result = await run_in_threadpool(answer)
            response: Response = (
                Response(status_code=200)
                if result is None
                else Response(status_code=204)
                if result is NO_CONTENT
                else _Json(result.to_dict(), status_code=200)
            )
        except RestError as e:
            code, message = e.code, e.message
            response = _Json(_error_body(e, raw_path), status_code=e.status)
        except ClientDisconnect:
            code = None
            response = Response(status_code=499)  # nobody reads it; logged as 499
        except (OverflowError, UnicodeError) as e:
            # Client input the database cannot store: an integer past int64 (a query's
            # page_token), a string that is not Unicode text.
            code = p.INVALID_INPUT
            error = RestError(code, f"the request has a value out of range: {e}")
            response = _Json(_error_body(error, raw_path), status_code=error.status)
        except (DeltaError, OSError) as e:
            code = error_code(e)
            error = RestError(code, f"{type(e).__name__}: {e}")
            message = error.message
            if error.status >= 500:
                _log.error(
                    "request %s %s (request id %s) failed: %s",
                    request.method,
                    raw_path,
                    request_id,
                    redact(f"{type(e).__name__}: {e}"),
                    exc_info=code == p.INTERNAL,
                )
                error = _internal(code, request_id)
            response = _Json(
                _error_body(error, raw_path, request_id if error.status >= 500 else None),
                status_code=error.status,
            )
        except Exception as e:
            code = p.INTERNAL
            _log.exception(
                "request %s %s (request id %s) failed: %s",
                request.method,
                raw_path,
                request_id,
                redact(f"{type(e).__name__}: {e}"),
            )
            error = _internal(p.INTERNAL, request_id)
            response = _Json(_error_body(error, raw_path, request_id), status_code=500)
        refusals.note(
            request.method,
            raw_path,
            response.status_code,
            code,
            principal.name if principal else None,
            message,
        )
        _log.info(
            json.dumps(
                {
                    "method": request.method,
                    "path": raw_path,
                    "status": response.status_code,
                    "code": code,
                    "ms": round((time.perf_counter() - started) * 1000, 3),
                    "principal": principal.name if principal else None,
                    "request_id": request_id,
                }
            )
        )
        return response

    # Its own threads: a database that hangs neither holds /healthz (the answer is 503 after
    # HEALTHZ_TIMEOUT; anyio's threads cannot be abandoned) nor takes the requests' threads.
    probes = ThreadPoolExecutor(max_workers=2, thread_name_prefix="healthz")

    async def healthz(request: HttpRequest) -> Response:
        loop = asyncio.get_running_loop()
        try:
            probe = loop.run_in_executor(probes, catalog._store.child_namespaces, 0)
            await asyncio.wait_for(probe, HEALTHZ_TIMEOUT)
        except Exception as e:  # the database is unreachable (or too slow to answer)
            # The database's own text may name hosts, users and paths: logged, not answered.
            _log.error(
                "healthz: the database did not answer: %s", redact(f"{type(e).__name__}: {e}")
            )
            return _Json({"status": "unavailable"}, status_code=503)
        return _Json({"status": "ok"})

    return CatalogApp(dispatch, healthz, max_in_flight)


class CatalogApp:
    """The ASGI app: ``GET /healthz``, and every other path to the dispatcher, which routes on
    the raw path itself (a router's path patterns would not match every path a client may
    send, e.g. one with an encoded newline, and would answer without the spec's error body).
    Requests and responses are Starlette's. At most ``max_in_flight`` requests other than
    ``/healthz`` are answered at once; more are answered 503 (code 17) with ``Retry-After``."""

    def __init__(
        self,
        dispatch: Callable[[HttpRequest], Awaitable[Response]],
        healthz: Callable[[HttpRequest], Awaitable[Response]],
        max_in_flight: int = ConnectionLimits.max_in_flight,
    ) -> None:
        self._dispatch = dispatch
        self._healthz = healthz
        self.max_in_flight = max_in_flight
        self.in_flight = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        request = HttpRequest(scope, receive)
        if scope["path"] == "/healthz" and request.method == "GET":
            response = await self._healthz(request)
        elif self.in_flight >= self.max_in_flight:
            error = RestError(
                p.SERVICE_UNAVAILABLE,
                f"the server is answering {self.in_flight} requests already; retry later",
            )
            raw_path = (scope.get("raw_path") or b"").split(b"?", 1)[0].decode("latin-1")
            response = _Json(
                _error_body(error, raw_path or scope["path"]), status_code=error.status
            )
            response.headers["retry-after"] = "1"
            _log.warning(json.dumps({"event": "in-flight cap", "cap": self.max_in_flight}))
        else:
            self.in_flight += 1
            try:
                response = await self._dispatch(request)
            finally:
                self.in_flight -= 1
        await response(scope, receive, send)


# -- running it ------------------------------------------------------------------------------


def open_catalog(db: str, warehouse: str) -> ManagedCatalog:
    """The catalog of ``--db`` (``sqlite:///abs/path.db``, ``sqlite://rel.db``, a path, or a
    ``postgresql://`` URI) with its ``--warehouse``."""
    from deltalog.catalog import connect_catalog

    if db.startswith(("postgresql://", "postgres://")):
        config = {"type": "postgresql", "uri": db, "warehouse": warehouse}
    else:
        path = db[len("sqlite:") :] if db.startswith("sqlite:") else db
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise InvalidArgumentError(f"no database file in {redact(db)!r}")
        config = {"type": "sqlite", "path": path, "warehouse": warehouse}
    catalog = connect_catalog(config)
    assert isinstance(catalog, ManagedCatalog)
    return catalog


#: The environment variable that passes the configuration to worker processes.
CONFIG_ENV = "DELTALOG_CATALOG_SERVER_CONFIG"


def app_from_env() -> CatalogApp:
    """The app of the configuration in :data:`CONFIG_ENV` (uvicorn's factory in each worker)."""
    from deltalog.server.unity.credentials import vendor_from_config

    config = json.loads(os.environ[CONFIG_ENV])
    # A worker process of --workers N starts with logging unconfigured (uvicorn configures
    # only its own loggers): the request log lines need the root handler serve() sets up.
    # (No-op in serve()'s own process, where it is configured already.)
    logging.basicConfig(
        level=str(config.get("log_level", "info")).upper(), format="%(message)s", stream=sys.stderr
    )
    tokens = TokenStore.load(config["tokens"]) if config.get("tokens") else None
    if config.get("max_clock_skew_ms") is not None:
        # Every route's ratification checks in-commit timestamps against this process's clock.
        from deltalog.catalog import ratification

        ratification.MAX_ICT_SKEW_MS = int(config["max_clock_skew_ms"])
    catalog = open_catalog(config["db"], config["warehouse"])
    storage_options = config.get("storage_options") or None
    app = create_app(
        catalog,
        tokens=tokens,
        storage_options=storage_options,
        credential_vendor=vendor_from_config(catalog, config.get("credentials"), storage_options),
        max_body_bytes=config["max_body_bytes"],
        max_create_bytes=config.get("max_create_bytes", MAX_CREATE_BYTES),
        max_unpublished=config.get("max_unpublished"),
        max_decoded_bytes=config.get("max_decoded_bytes", MAX_DECODED_BYTES),
        max_in_flight=config.get("max_in_flight", ConnectionLimits.max_in_flight),
        ui=config.get("ui", True),
    )
    # Everything loaded so far (modules, the generated models' schemas) lives as long as the
    # worker: out of the collector's sight, a full collection no longer walks it (it took a
    # quarter of a busy worker's CPU).
    gc.freeze()
    return app


def serve(
    db: str,
    warehouse: str,
    host: str = "127.0.0.1",
    port: int = 2333,
    workers: int = 1,
    tokens: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_unpublished: int | None = None,
    log_level: str = "info",
    max_create_bytes: int = MAX_CREATE_BYTES,
    max_decoded_bytes: int = MAX_DECODED_BYTES,
    limits: ConnectionLimits | None = None,
    storage_options: dict[str, str] | None = None,
    credentials: dict[str, Any] | None = None,
    max_clock_skew_ms: int | None = None,
    ui: bool = True,
) -> None:
    """Runs the server until SIGTERM/SIGINT. Prints where it listens (``port`` 0: a free
    port) as its first line on stdout. ``limits``: connection timeouts and caps, per worker
    process (``docs/catalogs.md``, "Limits"). ``storage_options``: how the server reaches
    its tables' object store. ``credentials``: the temporary credentials' vendor
    (:func:`~deltalog.server.unity.credentials.vendor_from_config`). ``ui``: serve the web
    pages (``/ui/``)."""
    import uvicorn

    from deltalog.server.connections import GuardedHttpProtocol, raise_open_files_limit

    limits = limits or ConnectionLimits()
    config: dict[str, Any] = {
        "db": db,
        "warehouse": os.path.abspath(warehouse) if "://" not in warehouse else warehouse,
        "tokens": os.path.abspath(tokens) if tokens else None,
        "max_body_bytes": max_body_bytes,
        "max_create_bytes": max_create_bytes,
        "max_decoded_bytes": max_decoded_bytes,
        "max_unpublished": max_unpublished,
        "max_clock_skew_ms": max_clock_skew_ms,
        "max_in_flight": limits.max_in_flight,
        "storage_options": dict(storage_options) if storage_options else None,
        "credentials": dict(credentials) if credentials else None,
        "log_level": log_level,
        "ui": ui,
    }
    os.environ[CONFIG_ENV] = json.dumps(config)
    logging.basicConfig(level=log_level.upper(), format="%(message)s", stream=sys.stderr)
    # Each connection is a file descriptor: 1,000 of them pass the common soft limit of 1,024.
    raise_open_files_limit(limits.max_connections + 256)
    # Opened once here: the schema is created or upgraded before any worker starts, and a
    # bad configuration fails now, with a clear message.
    catalog = open_catalog(config["db"], config["warehouse"])
    # And the credential vendor's (boto3 missing, a bad role ARN or duration).
    from deltalog.server.unity.credentials import vendor_from_config

    vendor_from_config(catalog, config["credentials"], config["storage_options"])
    store = TokenStore.load(config["tokens"]) if config["tokens"] else None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets of that protocol, and
    # without it an answer's headers and body wait ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    auth = f"{len(store)} token(s)" if store is not None else "off (no --tokens file)"
    print(
        f"deltalog catalog listening on http://{shown}:{bound} "
        f"(db {redact(db)}, warehouse {redact(config['warehouse'])}, workers {workers}, "
        f"authentication {auth}, web pages {'at /ui/' if ui else 'off'})",
        flush=True,
    )
    uv = uvicorn.Config(
        "deltalog.server.app:app_from_env",
        factory=True,
        workers=workers,
        access_log=False,
        log_level=log_level,
        timeout_graceful_shutdown=None,
        # Not uvicorn's limit_concurrency: it counts idle connections (1,000 of them made
        # every request 503). Connections are capped by GuardedHttpProtocol, requests in
        # flight by CatalogApp.
        limit_concurrency=None,
        http=GuardedHttpProtocol,
        timeout_keep_alive=math.ceil(limits.idle_timeout),
        h11_max_incomplete_event_size=limits.max_header_bytes,
    )
    uv.deltalog_limits = limits  # type: ignore[attr-defined]  # read by GuardedHttpProtocol
    server = uvicorn.Server(uv)
    # uvicorn shuts down gracefully on SIGTERM, then re-raises it to the handler it found:
    # this one makes that a clean exit (status 0), as service managers expect.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if workers > 1:
        from uvicorn.supervisors import Multiprocess

        sock.set_inheritable(True)
        Multiprocess(uv, sockets=[sock]).run()
    else:
        server.run(sockets=[sock])
