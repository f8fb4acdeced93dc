"""Routing of the Unity Catalog routes (``/api/2.1/unity-catalog/…``) of ``deltalog catalog
serve``: the same pipeline as the Lance routes (:mod:`deltalog.server.app`: bearer
token, body cap, JSON checks, the operation in a worker thread, one log line), with UC's paths
and error shapes (:mod:`deltalog.catalog.clients.unity.errors`: ``DeltaErrorResponse`` on the Delta
API's routes, the UC API's ``error_code`` answer on the others).

Paths are matched segment by segment on the raw path, each segment percent-decoded as UTF-8
on its own (an encoded ``/`` never splits a segment).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request as HttpRequest
from starlette.responses import Response

from deltalog.catalog.clients.unity.errors import UcError, from_rest
from deltalog.catalog.stores.records import acting_as
from deltalog.server.unity.catalogs import UcRequest, UnityCatalogs
from deltalog.server.unity.delta import DeltaApi

if TYPE_CHECKING:
    from deltalog.server.auth import Principal, TokenStore
    from deltalog.server.lance.service import CatalogService
    from deltalog.server.refusals import RefusalLog

_log = logging.getLogger("deltalog.catalog.server")

PREFIX = "/api/2.1/unity-catalog/"


@dataclass(frozen=True)
class Route:
    """A UC route: its method, path pattern (``{name}`` segments are parameters), which
    service answers it and with what method, whether it takes a JSON body, and the success
    status (``None`` answers the result as JSON with 200)."""

    method: str
    pattern: tuple[str, ...]
    target: str  # "uc" or "delta"
    handler: str
    body: bool = False
    status: int | None = None


_T = "delta/v1/catalogs/{catalog}/schemas/{schema}/tables/{table}"

ROUTES = (
    Route("GET", ("catalogs",), "uc", "list_catalogs"),
    Route("POST", ("catalogs",), "uc", "create_catalog", body=True),
    Route("GET", ("catalogs", "{name}"), "uc", "get_catalog"),
    Route("PATCH", ("catalogs", "{name}"), "uc", "update_catalog", body=True),
    Route("DELETE", ("catalogs", "{name}"), "uc", "delete_catalog"),
    Route("GET", ("schemas",), "uc", "list_schemas"),
    Route("POST", ("schemas",), "uc", "create_schema", body=True),
    Route("GET", ("schemas", "{full_name}"), "uc", "get_schema"),
    Route("PATCH", ("schemas", "{full_name}"), "uc", "update_schema", body=True),
    Route("DELETE", ("schemas", "{full_name}"), "uc", "delete_schema"),
    Route("GET", ("tables",), "uc", "list_tables"),
    Route("POST", ("tables",), "uc", "create_table", body=True),
    Route("POST", ("staging-tables",), "delta", "uc_create_staging_table", body=True),
    Route("GET", ("tables", "{full_name}"), "uc", "get_table"),
    Route("DELETE", ("tables", "{full_name}"), "uc", "delete_table"),
    Route("POST", ("temporary-table-credentials",), "uc", "temporary_table_credentials", True),
    Route("POST", ("temporary-path-credentials",), "uc", "temporary_path_credentials", True),
    Route("GET", ("delta", "v1", "config"), "delta", "get_config"),
    Route(
        "POST",
        tuple("delta/v1/catalogs/{catalog}/schemas/{schema}/staging-tables".split("/")),
        "delta",
        "create_staging_table",
        body=True,
    ),
    Route(
        "POST",
        tuple("delta/v1/catalogs/{catalog}/schemas/{schema}/tables".split("/")),
        "delta",
        "create_table",
        body=True,
    ),
    Route("GET", tuple(_T.split("/")), "delta", "load_table"),
    Route("POST", tuple(_T.split("/")), "delta", "update_table", body=True),
    Route("DELETE", tuple(_T.split("/")), "delta", "delete_table", status=204),
    Route("HEAD", tuple(_T.split("/")), "delta", "table_exists", status=204),
    Route("GET", (*_T.split("/"), "credentials"), "delta", "table_credentials"),
    Route("POST", (*_T.split("/"), "metrics"), "delta", "report_metrics", True, 204),
    Route("POST", (*_T.split("/"), "rename"), "delta", "rename_table", True, 204),
    Route(
        "GET",
        ("delta", "v1", "staging-tables", "{table_id}", "credentials"),
        "delta",
        "staging_table_credentials",
    ),
    Route("GET", ("delta", "v1", "temporary-path-credentials"), "delta", "path_credentials"),
)


def route(method: str, raw_path: str) -> tuple[Route, dict[str, str]]:
    """The route of a raw UC path (after :data:`PREFIX`) and its decoded parameters.

    Raises:
        UcError: no such route (404 ``NotFoundException``; 501 for a known path with a method
            deltalog does not serve), or a segment that is not UTF-8.
    """
    try:
        parts = [unquote_to_bytes(s).decode("utf-8") for s in raw_path.split("/")]
    except UnicodeDecodeError as e:
        raise UcError("BadRequestException", f"the path is not UTF-8: {e}") from e
    known_path = False
    for r in ROUTES:
        if len(r.pattern) != len(parts):
            continue
        params: dict[str, str] = {}
        for want, got in zip(r.pattern, parts, strict=True):
            if want.startswith("{"):
                if not got:
                    break
                params[want[1:-1]] = got
            elif want != got:
                break
        else:
            known_path = True
            if r.method == method:
                return r, params
    if known_path:
        raise UcError("NotImplementedException", f"{method} is not served on {raw_path}")
    raise UcError("NotFoundException", f"no such UC route: {raw_path}")


class UnityRoutes:
    """The dispatcher of the UC routes over ``service`` (the Lance routes' service: one store,
    one ratification)."""

    def __init__(
        self,
        service: CatalogService,
        tokens: TokenStore | None,
        max_body_bytes: int,
        refusals: RefusalLog | None = None,
    ) -> None:
        self.catalogs = UnityCatalogs(service)
        self.refusals = refusals
        self.delta = DeltaApi(self.catalogs)
        self.catalogs.delta = self.delta
        self.tokens = tokens
        self.max_body_bytes = max_body_bytes

    async def dispatch(self, request: HttpRequest, raw_path: str) -> Response:
        from deltalog.exceptions import DeltaError
        from deltalog.server.app import _principal, _read_body
        from deltalog.server.lance.service import RestError, error_code

        started = time.perf_counter()
        request_id = uuid.uuid4().hex[:16]
        rest = raw_path[len(PREFIX) :]
        delta_api = rest.startswith("delta/")
        principal: Principal | None = None
        error: UcError | None = None
        try:
            r, params = route(request.method, rest)
            principal = _principal(request, self.tokens)
            body: Any = None
            if r.body:
                raw = await _read_body(request, self.max_body_bytes)
                body = await run_in_threadpool(_json, raw)
            call = UcRequest(principal, params, dict(request.query_params), body)
            target: Any = self.catalogs if r.target == "uc" else self.delta
            handler: Callable[[UcRequest], Any] = getattr(target, r.handler)
            result = await run_in_threadpool(_acting, principal.name, handler, call)
            if r.status is not None:
                response: Response = Response(status_code=r.status)
            else:
                response = _json_response(result, 200)
        except UcError as e:
            error = e
        except RestError as e:
            error = from_rest(e.code, e.message, e.status, not_found="NoSuchSchemaException")
        except ClientDisconnect:
            response = Response(status_code=499)
        except (OverflowError, UnicodeError) as e:
            error = UcError("BadRequestException", f"the request has a value out of range: {e}")
        except (DeltaError, OSError) as e:
            from deltalog.catalog.clients.rest import protocol as p

            code = error_code(e)
            error = from_rest(code, f"{type(e).__name__}: {e}", p.STATUS[code])
            if error.status >= 500:
                _log.error(
                    "request %s %s (request id %s) failed: %s",
                    request.method,
                    raw_path,
                    request_id,
                    f"{type(e).__name__}: {e}",
                    exc_info=code == p.INTERNAL,
                )
                error = UcError(
                    error.kind, f"internal error (request id {request_id})", error.status
                )
        except Exception as e:
            _log.exception(
                "request %s %s (request id %s) failed: %s",
                request.method,
                raw_path,
                request_id,
                f"{type(e).__name__}: {e}",
            )
            error = UcError(
                "InternalServerErrorException",
                f"internal error (request id {request_id}; see the server's log)",
            )
        if error is not None:
            if request.method == "HEAD":
                response = Response(status_code=error.status)
            else:
                body_json = error.delta_body() if delta_api else error.uc_body()
                response = _json_response(body_json, error.status)
        if self.refusals is not None:
            self.refusals.note(
                request.method,
                raw_path,
                response.status_code,
                error.kind if error is not None else None,
                principal.name if principal else None,
                error.message if error is not None else None,
            )
        _log.info(
            json.dumps(
                {
                    "method": request.method,
                    "path": raw_path,
                    "status": response.status_code,
                    "code": error.kind if error is not None else None,
                    "ms": round((time.perf_counter() - started) * 1000, 3),
                    "principal": principal.name if principal else None,
                    "request_id": request_id,
                }
            )
        )
        return response


def _acting(principal: str, handler: Callable[[UcRequest], Any], call: UcRequest) -> Any:
    """``handler(call)`` with what it does through the ManagedCatalog recorded as
    ``principal``'s (:func:`~deltalog.catalog.stores.records.acting_as`)."""
    with acting_as(principal):
        return handler(call)


def _json(raw: bytes) -> Any:
    from deltalog.server.lance.bodies import parse_json_body

    if not raw.strip():
        return {}
    return parse_json_body(raw)


def _json_response(content: Any, status: int) -> Response:
    body = json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return Response(body.encode("ascii"), status_code=status, media_type="application/json")
