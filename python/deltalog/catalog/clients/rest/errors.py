"""How a REST catalog's answers become deltalog's exceptions: an HTTP status and the
Lance Namespace error body (its ``code``; ``../shared/spec/003_…``, "Error Handling") mapped to
the :mod:`deltalog.exceptions` class a caller can act on."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from lance_namespace_urllib3_client.exceptions import ApiException

from deltalog.catalog.clients.rest import protocol as p
from deltalog.exceptions import (
    AlreadyExistsError,
    CatalogAuthenticationError,
    CatalogError,
    CatalogPermissionError,
    CatalogThrottledError,
    CommitConflictError,
    InvalidArgumentError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)

if TYPE_CHECKING:
    pass


#: Statuses worth retrying a read for: the server or a proxy in front of it is busy.
_TRANSIENT = {502, 503, 504}


def _answer(e: ApiException) -> tuple[int | None, str, dict[str, str] | None]:
    """The error code, message and context of an error answer."""
    try:
        body = json.loads(e.body or "")
        return int(body["code"]), str(body.get("error") or ""), body.get("context")
    except (ValueError, TypeError, KeyError):
        return None, (e.body or e.reason or "").strip(), None


class _NoAnswer(CatalogError):
    """Inside the client only: a call got no answer (connection lost, timeout) or a server
    error (5xx), so it may or may not have taken effect. It leaves the client as
    :class:`~deltalog.CatalogUnavailableError` for a call that changes nothing, and as
    :class:`~deltalog.CommitOutcomeUnknownError` for a commit whose outcome the catalog could
    not tell (never as itself)."""


def translate(e: ApiException, what: str) -> Exception:
    """The deltalog exception of an error answer."""
    code, message, context = _answer(e)
    text = f"{what}: {message or e.reason} (HTTP {e.status}, code {code})"
    if e.status == 401 or code == p.UNAUTHENTICATED:
        return CatalogAuthenticationError(text)
    if e.status == 403 or code == p.PERMISSION_DENIED:
        return CatalogPermissionError(text)
    if code == p.NAMESPACE_NOT_FOUND:
        return NamespaceNotFoundError(text)
    if code in (p.NAMESPACE_ALREADY_EXISTS, p.TABLE_ALREADY_EXISTS):
        return AlreadyExistsError(text)
    if code == p.NAMESPACE_NOT_EMPTY:
        return NamespaceNotEmptyError(text)
    if code == p.TABLE_NOT_FOUND:
        return TableNotFoundError(text)
    if code == p.TABLE_VERSION_NOT_FOUND:
        return VersionNotFoundError(text)
    if code == p.CONCURRENT_MODIFICATION:
        held = p.ratified_from_wire(context)
        return CommitConflictError(
            text,
            version=None if held is None else held.latest_version,
            reason="another commit won the version",
            ratified=held,
        )
    if code == p.UNSUPPORTED:
        return UnsupportedFeatureError(text)
    if code == p.THROTTLING or e.status == 429:
        return CatalogThrottledError(text)
    if code == p.INVALID_INPUT:
        return InvalidArgumentError(text)
    if e.status >= 500:
        return _NoAnswer(text)
    return CatalogError(text)
