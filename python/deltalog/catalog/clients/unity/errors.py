"""Unity Catalog's errors: the Delta API's ``DeltaErrorResponse``
(``unitycatalog-delta-api-2026-08.yaml``, "Errors": ``{"error": {"message", "type",
"code"}}`` with a ``DeltaErrorType`` and its HTTP status) and the UC API's answer for its other
routes (the reference server's ``{"error_code", "message", "details"}``, its error codes named
as gRPC's), and how deltalog's REST errors (Lance Namespace codes) become them.
"""

from __future__ import annotations

from typing import Any

#: ``DeltaErrorType`` -> HTTP status (the spec's ``x-enum-descriptions``).
STATUS = {
    "BadRequestException": 400,
    "InvalidParameterValueException": 400,
    "UnsupportedTableFormatException": 400,
    "NotAuthorizedException": 401,
    "PermissionDeniedException": 403,
    "NotFoundException": 404,
    "NoSuchCatalogException": 404,
    "NoSuchSchemaException": 404,
    "NoSuchTableException": 404,
    "AlreadyExistsException": 409,
    "CommitVersionConflictException": 409,
    "UpdateRequirementConflictException": 409,
    "ResourceExhaustedException": 429,
    "TooManyRequestsException": 429,
    "CommitStateUnknownException": 500,
    "InternalServerErrorException": 500,
    "NotImplementedException": 501,
}

#: ``DeltaErrorType`` -> the UC API's ``error_code``.
_ERROR_CODES = {
    "BadRequestException": "INVALID_ARGUMENT",
    "InvalidParameterValueException": "INVALID_ARGUMENT",
    "UnsupportedTableFormatException": "INVALID_ARGUMENT",
    "NotAuthorizedException": "UNAUTHENTICATED",
    "PermissionDeniedException": "PERMISSION_DENIED",
    "NotFoundException": "NOT_FOUND",
    "NoSuchCatalogException": "NOT_FOUND",
    "NoSuchSchemaException": "NOT_FOUND",
    "NoSuchTableException": "NOT_FOUND",
    "AlreadyExistsException": "ALREADY_EXISTS",
    "CommitVersionConflictException": "ABORTED",
    "UpdateRequirementConflictException": "FAILED_PRECONDITION",
    "ResourceExhaustedException": "RESOURCE_EXHAUSTED",
    "TooManyRequestsException": "RESOURCE_EXHAUSTED",
    "CommitStateUnknownException": "UNKNOWN",
    "InternalServerErrorException": "INTERNAL",
    "NotImplementedException": "UNIMPLEMENTED",
}


class UcError(Exception):
    """An error answer of the UC routes: a ``DeltaErrorType`` and a message (``status``
    overrides the type's HTTP status: 413 for a body past its cap, 503 while the catalog's
    database is unavailable)."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if kind not in STATUS:
            raise ValueError(f"not a DeltaErrorType: {kind}")
        self.kind = kind
        self.message = message
        self.status = status if status is not None else STATUS[kind]

    def delta_body(self) -> dict[str, Any]:
        """The Delta API's ``DeltaErrorResponse``."""
        return {"error": {"message": self.message, "type": self.kind, "code": self.status}}

    def uc_body(self) -> dict[str, Any]:
        """The UC API's error answer."""
        code = "UNAVAILABLE" if self.status == 503 else _ERROR_CODES[self.kind]
        return {
            "error_code": code,
            "message": self.message,
            "details": [
                {"@type": "google.rpc.ErrorInfo", "reason": code, "metadata": {}},
            ],
        }


def from_rest(
    code: int, message: str, status: int, *, not_found: str = "NotFoundException"
) -> UcError:
    """The UC error of a deltalog REST error (a Lance Namespace error ``code`` and its HTTP
    ``status``): the same failure, in UC's terms. ``not_found``: the type of a missing
    namespace (``NoSuchCatalogException`` or ``NoSuchSchemaException``)."""
    from deltalog.catalog.clients.rest import protocol as p

    kind = {
        p.UNSUPPORTED: "NotImplementedException",
        p.NAMESPACE_NOT_FOUND: not_found,
        p.NAMESPACE_ALREADY_EXISTS: "AlreadyExistsException",
        p.NAMESPACE_NOT_EMPTY: "BadRequestException",
        p.TABLE_NOT_FOUND: "NoSuchTableException",
        p.TABLE_ALREADY_EXISTS: "AlreadyExistsException",
        p.TABLE_VERSION_NOT_FOUND: "NotFoundException",
        p.INVALID_INPUT: "InvalidParameterValueException",
        p.CONCURRENT_MODIFICATION: "CommitVersionConflictException",
        p.PERMISSION_DENIED: "PermissionDeniedException",
        p.UNAUTHENTICATED: "NotAuthorizedException",
        p.SERVICE_UNAVAILABLE: "InternalServerErrorException",
        p.INTERNAL: "InternalServerErrorException",
        p.INVALID_TABLE_STATE: "BadRequestException",
        p.THROTTLING: "ResourceExhaustedException",
    }.get(code, "InternalServerErrorException")
    keep = status if status in (413, 503) else None
    return UcError(kind, message, keep)
