"""The records a catalog :class:`~deltalog.catalog.managed.Store` answers and takes: its
tables, namespaces, proposed commits, ratified versions and refused requests (re-exported by
:mod:`deltalog.catalog.managed`), and who a store records as creator or updater when its caller
names nobody (:func:`default_principal`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class TableRecord:
    """A table of the catalog."""

    id: int
    namespace_id: int
    name: str
    location: str
    managed: bool
    latest_version: int
    #: The JSON of the table's latest ``protocol`` / ``metaData`` action, when the catalog has
    #: been given it (catalogManaged RFC, "Catalog-managed Tables": catalogs are encouraged to
    #: return them so that readers may skip replay).
    protocol: str | None = None
    metadata: str | None = None
    #: The table's catalog properties (Lance catalog specification), not Delta's.
    properties: Mapping[str, str] | None = None
    #: The configuration of the table's latest ``delta.clustering`` domain, when it has one.
    clustering: str | None = None
    #: The in-commit timestamp of the latest version the catalog ratified with one.
    last_ict: int | None = None
    #: The table's UUID (Unity Catalog's ``table_id``; ``None`` until first asked for, for a
    #: table registered before deltalog recorded one: :meth:`Store.table_uuid`).
    uuid: str | None = None
    #: When the catalog registered the table, in milliseconds since the epoch.
    created_ms: int | None = None
    #: The latest version whose commit carried a ``protocol`` or ``metaData`` action, and its
    #: in-commit timestamp (UC's ``last-commit-version`` / ``last-commit-timestamp-ms``).
    metadata_version: int | None = None
    metadata_ict: int | None = None
    #: Who registered the table (its owner, as in Unity Catalog), and when and by whom it was
    #: last changed (registered, renamed, a version ratified): ``None`` where not recorded
    #: (tables of catalogs older than these columns, :data:`AUDIT_MIGRATION`).
    created_by: str | None = None
    updated_ms: int | None = None
    updated_by: str | None = None


@dataclass(frozen=True)
class NamespaceRecord:
    """A namespace of the catalog: when and by whom it was created (its owner) and last
    changed (``None`` where not recorded: namespaces of catalogs older than these columns)."""

    id: int
    parent_id: int
    name: str
    properties: Mapping[str, str]
    created_ms: int | None = None
    created_by: str | None = None
    updated_ms: int | None = None
    updated_by: str | None = None


#: Who the current request acts as (:func:`acting_as`), on this thread / task.
_ACTING: ContextVar[str | None] = ContextVar("deltalog_acting_principal", default=None)


@contextmanager
def acting_as(principal: str) -> Iterator[None]:
    """Within the block (this thread or task), :func:`default_principal` is ``principal``: a
    catalog server runs each request in it, so that what the request does through a
    :class:`~deltalog.catalog.managed.ManagedCatalog` (which names nobody to its store) is
    recorded as the request's principal's."""
    token = _ACTING.set(principal)
    try:
        yield
    finally:
        _ACTING.reset(token)


def default_principal() -> str | None:
    """Who a store records as the creator or updater when its caller names nobody: the
    principal of the request being served (:func:`acting_as`), else (a library caller) the
    operating-system user running the process, or ``None`` when it cannot be told."""
    acting = _ACTING.get()
    if acting is not None:
        return acting
    import getpass

    try:
        return getpass.getuser() or None
    except (KeyError, OSError, ImportError):
        return None


@dataclass(frozen=True)
class Proposal:
    """A commit proposed to a :class:`Store` for ratification (:meth:`Store.ratify_all`).

    Attributes:
        table_id: the table, or ``None`` for a table ``create`` registers.
        version: the version proposed: the table's next one (0 for a new table).
        path: the staged commit's file name, for a staged commit.
        content: the commit's actions, for an inline commit.
        create: (namespace id, name, location) of a new catalog-managed table whose version 0
            this is: the table is registered in the same step.
        protocol: the JSON of the commit's ``protocol`` action, if it has one: the table's
            cached latest protocol (``None`` leaves the cached one as it is).
        metadata: the JSON of the commit's ``metaData`` action, likewise.
        sha256: the SHA-256 of the commit's content, recorded with the version: the catalog
            binds the version to it (and recognises a replay of the same commit by it).
        txn_id: the commit's ``commitInfo.txnId``: a table ratifies each at most once.
        ict: the commit's in-commit timestamp: the next commit's must be later.
        clustering: ``(present, configuration)`` of the commit's ``delta.clustering``
            domain action (configuration ``None``: the domain is removed).
        principal: who proposes it (the table's updater; and creator, with ``create``);
            ``None``: :func:`default_principal`.
    """

    table_id: int | None
    version: int
    path: str | None
    content: bytes | None
    create: tuple[int, str, str] | None = None
    protocol: str | None = None
    metadata: str | None = None
    sha256: str | None = None
    txn_id: str | None = None
    ict: int | None = None
    clustering: tuple[bool, str | None] = (False, None)
    principal: str | None = None


@dataclass(frozen=True)
class CommitRecord:
    """What the catalog recorded of a version it ratified (also after it is published): its
    content's SHA-256, its staged file name (``None`` for an inline commit), its txnId and
    in-commit timestamp (``None`` for versions ratified before deltalog recorded them), and
    who proposed it (:attr:`Proposal.principal`, else :func:`default_principal`; ``None`` for
    versions ratified before catalog schema 8 recorded it, or when nobody could be told)."""

    version: int
    sha256: str | None
    staged_path: str | None
    txn_id: str | None
    ict: int | None
    ratified_ms: int | None = None
    principal: str | None = None


@dataclass(frozen=True)
class RefusalRecord:
    """A request the catalog's server refused (403 / 409 …), as its audit log keeps it
    (:meth:`~deltalog.catalog.managed.Store.record_refusal`): when (milliseconds since the
    epoch), who (``None``: unauthenticated), the HTTP method and path, the HTTP status, the
    protocol's error code if it has one, and the message answered. The store truncates long
    values (:data:`~deltalog.catalog.stores.audit_log.LIMITS`)."""

    at_ms: int
    principal: str | None
    method: str
    path: str
    status: int
    code: int | None
    message: str | None
