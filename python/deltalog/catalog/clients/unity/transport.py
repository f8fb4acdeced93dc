"""How deltalog's Unity Catalog client talks to a UC server: synchronous HTTP on urllib3 (the
library the REST client's generated Lance Namespace client uses too), one
``urllib3.PoolManager`` per client whose kept-alive connections every thread reuses (a forked
child makes its own: a parent's sockets are never shared), requests and answers as the models
of :mod:`deltalog.protocol.unity` (sent by alias, ``None`` fields left out: the specs mark
them optional), UC's errors become deltalog's (:func:`translate`).

Retries: a call that changes nothing is sent again on a :data:`TRANSIENT` status or a
connection failure (up to ``retries`` more times, backing off); a call that changes something
is sent once, and when its answer is lost (the connection broke, it timed out, the server
failed with a 500) it raises :class:`NoAnswer`: it may or may not have taken effect.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from typing import Any, TypeVar, overload
from urllib.parse import quote, urlencode

import pydantic

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

#: Connections kept alive per host (threads beyond it open short-lived extra ones).
POOL_SIZE = 16

M = TypeVar("M", bound=pydantic.BaseModel)


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
    """The deltalog error of a UC error answer (either of UC's error shapes: the Delta API's
    ``DeltaErrorResponse``, "Errors", and the UC API's ``error_code`` answer)."""
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


def path(*segments: str) -> str:
    """A path below :data:`PREFIX` from its segments, each percent-encoded on its own (a name
    holding ``/`` or ``.`` stays one segment)."""
    return "/" + "/".join(quote(s, safe="") for s in segments)


def wire(body: pydantic.BaseModel | Mapping[str, Any]) -> bytes:
    """A request body as JSON: a model by alias, without the ``None`` (absent) fields."""
    if isinstance(body, pydantic.BaseModel):
        document: Any = body.model_dump(mode="json", by_alias=True, exclude_none=True)
    else:
        document = dict(body)
    return json.dumps(document, separators=(",", ":")).encode()


class Transport:
    """The HTTP connections of one UC client (see the module docs)."""

    def __init__(self, uri: str, token: str | None, timeout: float, retries: int = 3) -> None:
        try:
            import urllib3  # noqa: F401
        except ImportError as e:
            raise UnsupportedFeatureError(
                f"the unity catalog needs urllib3 and pydantic: pip install 'deltalog[unity]' ({e})"
            ) from e
        self.uri = uri.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self._lock = threading.Lock()
        self._pid = -1
        self._pool: Any = None

    def _connections(self) -> Any:
        """The client's ``PoolManager`` (a new one in a forked child)."""
        import urllib3

        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = urllib3.PoolManager(
                    num_pools=4,
                    maxsize=POOL_SIZE,
                    retries=False,  # retried here, by the rules in the module docs
                    timeout=urllib3.Timeout(connect=min(self.timeout, 10.0), read=self.timeout),
                )
                self._pid = os.getpid()
            return self._pool

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "deltalog-unity"}
        if has_body:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    @overload
    def request(
        self,
        what: str,
        method: str,
        route: str,
        *,
        idempotent: bool,
        answer: type[M],
        query: Mapping[str, str | int | None] | None = None,
        body: pydantic.BaseModel | Mapping[str, Any] | None = None,
    ) -> M: ...

    @overload
    def request(
        self,
        what: str,
        method: str,
        route: str,
        *,
        idempotent: bool,
        answer: None = None,
        query: Mapping[str, str | int | None] | None = None,
        body: pydantic.BaseModel | Mapping[str, Any] | None = None,
    ) -> None: ...

    def request(
        self,
        what: str,
        method: str,
        route: str,
        *,
        idempotent: bool,
        answer: type[M] | None = None,
        query: Mapping[str, str | int | None] | None = None,
        body: pydantic.BaseModel | Mapping[str, Any] | None = None,
    ) -> M | None:
        """``method`` on ``route`` (a :func:`path`) with ``query`` (``None`` values left out)
        and ``body``; the answer validated as ``answer`` (``None``: its body is ignored).

        Raises:
            DeltaError: the UC error translated (:func:`translate`); :class:`NoAnswer` when a
                call that changes something got no answer; ``CatalogUnavailableError`` when a
                call that changes nothing got none after its retries; ``CatalogError`` for
                an answer that is not the spec's model.
        """
        import urllib3

        url = self.uri + PREFIX + route
        params = {k: str(v) for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urlencode(params)
        payload = wire(body) if body is not None else None
        headers = self._headers(payload is not None)
        attempts = 1 + (self.retries if idempotent else 0)
        for attempt in range(attempts):
            try:
                response = self._connections().request(
                    method, url, body=payload, headers=headers, preload_content=True
                )
            except urllib3.exceptions.HTTPError as e:  # connection failures, timeouts
                if attempt + 1 < attempts:
                    time.sleep(0.05 * 2**attempt)
                    continue
                text = f"{what}: cannot reach the Unity Catalog at {self.uri}: {e!r}"
                if idempotent:
                    raise CatalogUnavailableError(text) from e
                raise NoAnswer(text) from e
            status = int(response.status)
            if 200 <= status < 300:
                return None if answer is None else self._parse(what, answer, response.data)
            if status in TRANSIENT and attempt + 1 < attempts:
                time.sleep(0.05 * 2**attempt)
                continue
            said = response.data.decode("utf-8", "replace") if response.data else None
            error = translate(status, said, what)
            if isinstance(error, NoAnswer) and idempotent:
                error = CatalogUnavailableError(str(error))
            raise error
        raise AssertionError("unreachable")

    def _parse(self, what: str, answer: type[M], data: bytes) -> M:
        try:
            return answer.model_validate_json(data or b"{}")
        except pydantic.ValidationError as e:
            raise CatalogError(
                f"{what}: the Unity Catalog at {self.uri} answered what is not a "
                f"{answer.__name__}: {e}"
            ) from e

    def close(self) -> None:
        """Closes the kept-alive connections (the next call opens new ones)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.clear()
