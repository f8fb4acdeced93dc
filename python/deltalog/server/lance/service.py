"""The operations of deltalog's REST catalog server over a :class:`ManagedCatalog`: one method
per Lance Namespace route (``../shared/spec/lance-namespace-rest-2026-08.yaml``), taking the
identifier's names and the validated request model, returning the response model, raising
:class:`RestError` with the spec's error code.

The Delta side (catalogManaged RFC, ``000_…``): a declared table is catalog-managed and gets its
version 0 through ``version/create``; every version is ratified at most once and only after
the one before ("Commit Protocol"); the server reads a staged commit's content from storage (or
takes an inline commit's from the request) and decides from it what the commit changes
(:mod:`deltalog.catalog.clients.rest.governance`); published commits are forgotten only once their
``_delta_log/<v>.json`` exists ("Publishing Commits").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from lance_namespace_urllib3_client import models as m

from deltalog.catalog import names
from deltalog.catalog.clients.rest import protocol as p
from deltalog.catalog.managed import (
    ManagedCatalog,
    PurgeRefusedError,
    Store,
    TableRecord,
)
from deltalog.exceptions import (
    AlreadyExistsError,
    CatalogError,
    CatalogThrottledError,
    CommitConflictError,
    CorruptDataFileError,
    CorruptDeletionVectorError,
    CorruptLogError,
    DataFileNotFoundError,
    DeltaError,
    InvalidArgumentError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableNotFoundError,
    VersionNotFoundError,
)
from deltalog.server.auth import Principal, allows
from deltalog.server.lance.versions import VersionRoutes, int_query as _int_query

if TYPE_CHECKING:
    from deltalog.server.unity.credentials import CredentialVendor
    from deltalog.table.delta_table import DeltaTable

_log = logging.getLogger("deltalog.catalog.server")

#: The most items one page of a list holds (a larger ``limit`` is refused).
MAX_PAGE = 1000

T = TypeVar("T")


class RestError(Exception):
    """An error answer: a Lance Namespace error ``code`` (its HTTP status follows
    :data:`protocol.STATUS`), a message, and optional ``context``."""

    def __init__(self, code: int, message: str, context: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.context = context

    @property
    def status(self) -> int:
        return p.STATUS[self.code]


def check_name(name: str) -> None:
    """A name the catalog accepts for a new namespace or table: the rule every deltalog catalog
    applies (:func:`deltalog.catalog.names.check_name`), ``$`` being the delimiter here."""
    try:
        names.check_name(name, p.DEFAULT_DELIMITER)
    except (InvalidArgumentError, TypeError) as e:
        raise RestError(p.INVALID_INPUT, str(e)) from e


def page(
    items: Sequence[T], key: Callable[[T], Any], token: Any, limit: int | None
) -> tuple[list[T], Any]:
    """The items after ``token`` (by ``key``, ascending), at most ``limit`` of them, and the
    next page's token (the last key returned) when more remain."""
    rest = [i for i in items if token is None or key(i) > token]
    if limit is None or len(rest) <= limit:
        return rest, None
    chosen = rest[:limit]
    return chosen, key(chosen[-1]) if chosen else None


@dataclass
class Request:
    """A validated request: who asks, the identifier's names and the body model."""

    principal: Principal
    names: list[str]
    body: Any
    query: dict[str, str]
    delimiter: str


class NoContent:
    """What an operation answers for ``204 No Content``."""


#: The answer of an operation that succeeded with nothing to say (HTTP 204).
NO_CONTENT = NoContent()


class CatalogService(VersionRoutes):
    """The server's operations over ``catalog`` (see the module docs); the table-version
    routes are :class:`~deltalog.server.lance.versions.VersionRoutes`'."""

    #: The most bytes an Arrow IPC body of ``CreateTable`` decodes to (set by the server).
    max_decoded_bytes: int = 256 * 1024 * 1024
    #: What vends the UC routes' temporary credentials (set by ``deltalog.server.app.create_app``).
    credentials: CredentialVendor

    def __init__(
        self,
        catalog: ManagedCatalog,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        if catalog.delimiter != p.DEFAULT_DELIMITER:
            # Names arrive split at the protocol's delimiter, "$": a "." is part of a name here.
            catalog = ManagedCatalog(catalog._store, catalog.warehouse, p.DEFAULT_DELIMITER)
        self.catalog = catalog
        self.store: Store = catalog._store
        self.storage_options = storage_options

    # -- helpers -------------------------------------------------------------------------

    def _namespace_id(self, names: list[str]) -> int:
        try:
            return self.catalog._namespace(names)
        except NamespaceNotFoundError as e:
            raise RestError(p.NAMESPACE_NOT_FOUND, str(e)) from e

    def _table(self, names: list[str]) -> TableRecord:
        if not names:
            raise RestError(p.INVALID_INPUT, "a table identifier needs at least one name")
        pid = self._namespace_id(names[:-1])
        record = self.store.table(pid, names[-1])
        if record is None:
            raise RestError(p.TABLE_NOT_FOUND, f"table {'.'.join(names)!r} does not exist")
        return record

    def _managed(self, names: list[str]) -> TableRecord:
        record = self._table(names)
        if not record.managed:
            raise RestError(
                p.INVALID_TABLE_STATE,
                f"table {'.'.join(names)!r} is storage-managed: its versions are in its own "
                "_delta_log, not ratified by the catalog",
            )
        return record

    def _location(self, location: str) -> str:
        """A table location a request gives, canonical (``deltalog.catalog.names``: a local
        path's real path, every symbolic link resolved), never the warehouse or above it."""
        try:
            canonical = names.canonical_location(location)
            self.catalog.check_not_above_warehouse(canonical)
        except InvalidArgumentError as e:
            raise RestError(p.INVALID_INPUT, str(e)) from e
        return canonical

    @staticmethod
    def _require(principal: Principal, role: str, what: str) -> None:
        if not allows(principal.role, role):
            raise RestError(
                p.PERMISSION_DENIED,
                f"{principal.name} ({principal.role}) may not {what}: it needs the {role} role",
            )

    @staticmethod
    def _properties(record: TableRecord) -> dict[str, str]:
        return {
            **dict(record.properties or {}),
            p.PROP_FORMAT: "delta",
            p.PROP_CATALOG_MANAGED: "true" if record.managed else "false",
        }

    @staticmethod
    def _check_properties(properties: dict[str, str] | None) -> dict[str, str]:
        properties = dict(properties or {})
        reserved = sorted(set(properties) & p.RESERVED_PROPERTIES)
        if reserved:
            raise RestError(
                p.INVALID_INPUT, f"the server sets these properties itself: {', '.join(reserved)}"
            )
        return properties

    @staticmethod
    def _limit(value: int | None) -> int | None:
        if value is None:
            return None
        if value < 1 or value > MAX_PAGE:
            raise RestError(p.INVALID_INPUT, f"limit must be between 1 and {MAX_PAGE}: {value}")
        return value

    # -- namespaces ------------------------------------------------------------------------

    def create_namespace(self, r: Request) -> m.CreateNamespaceResponse:
        body: m.CreateNamespaceRequest = r.body
        mode = (body.mode or "create").lower()
        if mode not in ("create", "exist_ok", "existok", "overwrite"):
            raise RestError(p.INVALID_INPUT, f"unknown mode {body.mode!r}")
        if not r.names:
            if mode == "create":
                raise RestError(p.NAMESPACE_ALREADY_EXISTS, "the root namespace always exists")
            return m.CreateNamespaceResponse(properties={})
        for name in r.names:
            check_name(name)
        properties = dict(body.properties or {})
        pid = self._namespace_id(r.names[:-1])
        existing = self.store.namespace_id(pid, r.names[-1])
        if existing is not None:
            if mode == "create":
                raise RestError(p.NAMESPACE_ALREADY_EXISTS, f"namespace {r.names!r} already exists")
            if mode == "overwrite":
                self.store.set_namespace_properties(existing, properties, r.principal.name)
                return m.CreateNamespaceResponse(properties=properties)
            return m.CreateNamespaceResponse(properties=self.store.namespace_properties(existing))
        if self.store.table(pid, r.names[-1]) is not None:
            raise RestError(p.NAMESPACE_ALREADY_EXISTS, f"{r.names!r} is the name of a table")
        try:
            self.store.create_namespace(pid, r.names[-1], properties, r.principal.name)
        except AlreadyExistsError as e:
            if mode == "create":
                raise RestError(p.NAMESPACE_ALREADY_EXISTS, str(e)) from e
        return m.CreateNamespaceResponse(properties=properties)

    def list_namespaces(self, r: Request) -> m.ListNamespacesResponse:
        limit = self._limit(_int_query(r.query, "limit"))
        nid = self._namespace_id(r.names)
        names, token = page(
            self.store.child_namespaces(nid), lambda n: n, r.query.get("page_token"), limit
        )
        return m.ListNamespacesResponse(namespaces=names, page_token=token)

    def describe_namespace(self, r: Request) -> m.DescribeNamespaceResponse:
        nid = self._namespace_id(r.names)
        return m.DescribeNamespaceResponse(properties=self.store.namespace_properties(nid))

    def namespace_exists(self, r: Request) -> None:
        self._namespace_id(r.names)

    def drop_namespace(self, r: Request) -> m.DropNamespaceResponse | NoContent:
        body: m.DropNamespaceRequest = r.body
        mode = (body.mode or "fail").lower()
        behavior = (body.behavior or "restrict").lower()
        if mode not in ("fail", "skip") or behavior not in ("restrict", "cascade"):
            raise RestError(p.INVALID_INPUT, f"unknown mode/behavior {body.mode}/{body.behavior}")
        if not r.names:
            raise RestError(p.INVALID_INPUT, "the root namespace cannot be dropped")
        try:
            nid = self._namespace_id(r.names)
        except RestError:
            if mode == "skip":
                return NO_CONTENT  # "Skip: the server must return 204"
            raise
        properties = self.store.namespace_properties(nid)
        if behavior == "cascade":
            self._drop_contents(r.names, nid)
        try:
            self.store.drop_namespace(self._namespace_id(r.names[:-1]), r.names[-1])
        except NamespaceNotEmptyError as e:
            raise RestError(p.NAMESPACE_NOT_EMPTY, str(e)) from e
        except NamespaceNotFoundError as e:
            if mode != "skip":
                raise RestError(p.NAMESPACE_NOT_FOUND, str(e)) from e
        return m.DropNamespaceResponse(properties=properties)

    def _drop_contents(self, names: list[str], nid: int) -> None:
        for child in self.store.child_namespaces(nid):
            child_names = [*names, child]
            child_id = self._namespace_id(child_names)
            self._drop_contents(child_names, child_id)
            self.store.drop_namespace(nid, child)
        for table in self.store.tables(nid):
            self.catalog.drop_table([*names, table])

    # -- tables ----------------------------------------------------------------------------

    def list_tables(self, r: Request) -> m.ListTablesResponse:
        limit = self._limit(_int_query(r.query, "limit"))
        include_declared = r.query.get("include_declared", "true").lower() != "false"
        nid = self._namespace_id(r.names)
        records = self.store.table_records(nid)
        names = [t.name for t in records if include_declared or not _declared(t)]
        chosen, token = page(names, lambda n: n, r.query.get("page_token"), limit)
        return m.ListTablesResponse(tables=chosen, page_token=token)

    def list_all_tables(self, r: Request) -> m.ListTablesResponse:
        limit = self._limit(_int_query(r.query, "limit"))
        include_declared = r.query.get("include_declared", "true").lower() != "false"
        found: list[str] = []

        def walk(names: list[str], nid: int) -> None:
            for t in self.store.table_records(nid):
                if include_declared or not _declared(t):
                    found.append(r.delimiter.join([*names, t.name]))
            for child in self.store.child_namespaces(nid):
                child_id = self.store.namespace_id(nid, child)
                if child_id is not None:
                    walk([*names, child], child_id)

        walk([], Store.ROOT)
        chosen, token = page(sorted(found), lambda n: n, r.query.get("page_token"), limit)
        return m.ListTablesResponse(tables=chosen, page_token=token)

    def _new_table_slot(self, names: list[str]) -> int:
        if not names:
            raise RestError(p.INVALID_INPUT, "a table identifier needs at least one name")
        for name in names:
            check_name(name)
        pid = self._namespace_id(names[:-1])
        if self.store.table(pid, names[-1]) is not None:
            raise RestError(
                p.TABLE_ALREADY_EXISTS, f"the catalog already has a table {'.'.join(names)!r}"
            )
        if self.store.namespace_id(pid, names[-1]) is not None:
            raise RestError(p.TABLE_ALREADY_EXISTS, f"{names!r} is the name of a namespace")
        return pid

    def declare_table(self, r: Request) -> m.DeclareTableResponse:
        body: m.DeclareTableRequest = r.body
        properties = self._check_properties(body.properties)
        pid = self._new_table_slot(r.names)
        derived = "/".join([self.catalog.warehouse, *r.names])
        if body.location and self._location(body.location) != self._location(derived):
            self._require(r.principal, "admin", "declare a table outside the warehouse")
            location = self._location(body.location)
        else:
            try:  # the directory the catalog derives (a fresh one where another table lives)
                location = self.catalog.derived_location(r.names, f"table {r.names!r}")
            except InvalidArgumentError as e:
                raise RestError(p.INVALID_INPUT, str(e)) from e
        try:
            record = self.store.register(
                pid, r.names[-1], location, properties, managed=True, principal=r.principal.name
            )
        except AlreadyExistsError as e:
            raise RestError(p.TABLE_ALREADY_EXISTS, str(e)) from e
        return m.DeclareTableResponse(
            location=location, managed_versioning=True, properties=self._properties(record)
        )

    def create_table(self, r: Request, data: bytes) -> m.CreateTableResponse:
        """``CreateTable``: a new catalog-managed Delta table from an Arrow IPC stream."""
        mode = r.query.get("mode", "create").lower()
        if mode not in ("create", "exist_ok", "existok", "overwrite"):
            raise RestError(p.INVALID_INPUT, f"unknown mode {mode!r}")
        from deltalog.server.lance.arrow_body import decode_arrow_body

        # At most max_decoded_bytes, refused (413) before anything is decompressed or expanded.
        table = decode_arrow_body(data, self.max_decoded_bytes)
        pid = self._namespace_id(r.names[:-1]) if r.names else None
        record = self.store.table(pid, r.names[-1]) if pid is not None and r.names else None
        if record is not None:
            if mode == "create":
                raise RestError(p.TABLE_ALREADY_EXISTS, f"table {r.names!r} already exists")
            if mode != "overwrite":
                return m.CreateTableResponse(
                    location=record.location,
                    version=max(record.latest_version, 0),
                    properties=self._properties(record),
                )
            self._require(r.principal, "admin", "overwrite a table through CreateTable")
            if not record.managed:
                raise RestError(
                    p.INVALID_TABLE_STATE, "a storage-managed table is not written here"
                )
            try:
                loaded = self.catalog.load_table(r.names)
            except (CorruptLogError, DataFileNotFoundError, CorruptDataFileError) as e:
                raise RestError(
                    p.INVALID_TABLE_STATE,
                    f"table {r.names!r} cannot be read, so it cannot be overwritten: {e}. An "
                    "admin can roll it back to its last readable version first (version/delete "
                    "of its newest unpublished versions)",
                ) from e
            from deltalog.table.write import write_table

            version = write_table(loaded, table, mode="overwrite", schema_mode="overwrite")
        else:
            self._new_table_slot(r.names)
            version = self.catalog._create_from_data(r.names, table, mode="error")
        record = self._table(r.names)
        return m.CreateTableResponse(
            location=record.location, version=version, properties=self._properties(record)
        )

    def register_table(self, r: Request) -> m.RegisterTableResponse:
        from deltalog.table.delta_table import DeltaTable

        body: m.RegisterTableRequest = r.body
        mode = (body.mode or "create").lower()
        if mode not in ("create", "overwrite"):
            raise RestError(p.INVALID_INPUT, f"unknown mode {body.mode!r}")
        properties = self._check_properties(body.properties)
        location = self._location(body.location)
        try:
            DeltaTable(location, storage_options=self.storage_options)
        except TableNotFoundError as e:
            raise RestError(p.TABLE_NOT_FOUND, f"no Delta table at {location}: {e}") from e
        except DeltaError as e:
            raise RestError(
                p.INVALID_INPUT, f"{location} is not a Delta table the server can read: {e}"
            ) from e
        if mode == "overwrite" and r.names:
            pid = self._namespace_id(r.names[:-1])
            old = self.store.table(pid, r.names[-1])
            if old is not None:
                self._forget_table(old)
        pid = self._new_table_slot(r.names)
        try:
            record = self.store.register(
                pid, r.names[-1], location, properties, principal=r.principal.name
            )
        except AlreadyExistsError as e:
            raise RestError(p.TABLE_ALREADY_EXISTS, str(e)) from e
        return m.RegisterTableResponse(location=location, properties=self._properties(record))

    def describe_table(self, r: Request) -> m.DescribeTableResponse:
        body: m.DescribeTableRequest = r.body
        record = self._table(r.names)
        declared = _declared(record)
        version = body.version if body.version is not None else None
        if version is not None and record.managed and version > record.latest_version:
            raise RestError(
                p.TABLE_VERSION_NOT_FOUND,
                f"version {version} of {r.names!r} does not exist (latest: "
                f"{record.latest_version})",
            )
        metadata = {}
        protocol_json, metadata_json = record.protocol, record.metadata
        described = record.latest_version if record.managed and not declared else None
        if version is not None and not declared and version != described:
            # An older version: its own protocol and metadata, read through the catalog.
            protocol_json, metadata_json = self._state_at(record, version)
            described = version
        if protocol_json:
            metadata[p.META_PROTOCOL] = protocol_json
        if metadata_json:
            metadata[p.META_METADATA] = metadata_json
        flag = _flag(r.query, "with_table_uri") or bool(body.with_table_uri)
        properties = self._properties(record)
        if record.managed and not declared:
            # The published log checked against what the catalog ratified: a mismatch is
            # reported, never hidden (deltalog.catalog.integrity).
            from deltalog.catalog import integrity

            tampered = integrity.check_published(self.store, record, self.storage_options)
            if tampered is not None:
                properties[p.PROP_INTEGRITY] = tampered.describe()
        return m.DescribeTableResponse(
            table=r.names[-1],
            namespace=r.names[:-1],
            version=described,
            location=record.location,
            table_uri=_uri(record.location) if flag else None,
            metadata=metadata,
            properties=properties,
            managed_versioning=record.managed,
            is_only_declared=declared,
        )

    def open_table(self, record: TableRecord, version: int | None = None) -> DeltaTable:
        """The table of ``record`` (its latest version, or ``version``), read with the server's
        storage options and, where the catalog manages it, through the catalog."""
        from deltalog.catalog.managed import TableCatalogClient
        from deltalog.table.delta_table import DeltaTable

        client = TableCatalogClient(self.store, record.id) if record.managed else None
        return DeltaTable(
            record.location,
            version=version,
            storage_options=self.storage_options,
            catalog_client=client,
        )

    def _state_at(self, record: TableRecord, version: int) -> tuple[str, str]:
        """The protocol and metadata (JSON) of ``version`` of the table."""
        from deltalog.catalog.managed import state_json

        try:
            table = self.open_table(record, version)
        except VersionNotFoundError as e:
            raise RestError(p.TABLE_VERSION_NOT_FOUND, str(e)) from e
        protocol, metadata, _ = state_json(table)
        return protocol, metadata

    def table_exists(self, r: Request) -> None:
        body: m.TableExistsRequest = r.body
        record = self._table(r.names)
        if body.version is not None and record.managed and body.version > record.latest_version:
            raise RestError(p.TABLE_VERSION_NOT_FOUND, f"version {body.version} does not exist")

    def _forget_table(self, record: TableRecord) -> None:
        if record.managed and self.store.commits(record.id, None, None).commits:
            raise RestError(
                p.INVALID_TABLE_STATE,
                f"table {record.name!r} holds ratified commits that are not published yet; "
                "publish them first (they exist nowhere else), or, as an admin, roll them "
                "back (version/delete of its unpublished versions)",
            )
        self.store.drop_table(record.id)

    def deregister_table(self, r: Request) -> m.DeregisterTableResponse:
        record = self._table(r.names)
        self._forget_table(record)
        return m.DeregisterTableResponse(
            id=r.names, location=record.location, properties=dict(record.properties or {})
        )

    def rename_table(self, r: Request) -> m.RenameTableResponse:
        """``RenameTable``: a new name, and with ``new_namespace_id`` a new namespace (which
        must exist); the table keeps its location, its files and its commits."""
        body: m.RenameTableRequest = r.body
        record = self._table(r.names)
        names = list(r.names[:-1] if body.new_namespace_id is None else body.new_namespace_id)
        for name in [*names, body.new_table_name]:
            check_name(name)
        pid = self._namespace_id(names)
        try:
            self.store.rename_table(record.id, body.new_table_name, pid, r.principal.name)
        except AlreadyExistsError as e:
            raise RestError(p.TABLE_ALREADY_EXISTS, str(e)) from e
        except NamespaceNotFoundError as e:
            raise RestError(p.NAMESPACE_NOT_FOUND, str(e)) from e
        return m.RenameTableResponse()

    def drop_table(self, r: Request) -> m.DropTableResponse:
        record = self._table(r.names)
        try:
            self.catalog.drop_table(r.names)
        except PurgeRefusedError as e:
            raise RestError(p.INVALID_TABLE_STATE, str(e)) from e
        return m.DropTableResponse(
            id=r.names, location=record.location, properties=dict(record.properties or {})
        )


def _declared(record: TableRecord) -> bool:
    return record.managed and record.latest_version < 0


def _flag(query: dict[str, str], key: str) -> bool:
    return query.get(key, "false").lower() == "true"


def _uri(location: str) -> str:
    if "://" in location:
        return location
    from pathlib import Path

    return Path(location).absolute().as_uri()


#: How deltalog errors from the catalog become error codes, most specific first (anything
#: else: ``Internal``).
_ERROR_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (NamespaceNotFoundError, p.NAMESPACE_NOT_FOUND),
    (NamespaceNotEmptyError, p.NAMESPACE_NOT_EMPTY),
    (TableNotFoundError, p.TABLE_NOT_FOUND),
    (AlreadyExistsError, p.TABLE_ALREADY_EXISTS),
    (CommitConflictError, p.CONCURRENT_MODIFICATION),
    (CatalogThrottledError, p.THROTTLING),
    (InvalidArgumentError, p.INVALID_INPUT),
    (CatalogError, p.SERVICE_UNAVAILABLE),
    # A table whose log or files cannot be read: the table's state, not the server's fault.
    (CorruptLogError, p.INVALID_TABLE_STATE),
    (CorruptDataFileError, p.INVALID_TABLE_STATE),
    (CorruptDeletionVectorError, p.INVALID_TABLE_STATE),
    (DataFileNotFoundError, p.INVALID_TABLE_STATE),
    (VersionNotFoundError, p.TABLE_VERSION_NOT_FOUND),
)


def error_code(e: BaseException) -> int:
    """The error code of a deltalog error raised by the catalog."""
    return next((code for kind, code in _ERROR_CODES if isinstance(e, kind)), p.INTERNAL)
