"""A remote catalog as a deltalog :class:`~deltalog.catalog.Catalog`:
``connect_catalog({"type": "rest", "uri": "http://host:2333", "token": "…"})``.

It speaks the Lance Namespace REST protocol through the generated client,
``lance-namespace-urllib3-client`` (one connection pool per catalog, reused by every call and
thread). Catalog-managed tables are read and written through :class:`RestTableClient`, the
:class:`~deltalog.catalog.CatalogClient` whose calls are the table-version routes (see
:mod:`deltalog.catalog.clients.rest.protocol` for how a Delta commit is carried).

Calls that only read (list, describe, exists, version/list) are retried on connection errors,
timeouts and 502/503/504 answers. Calls that change something are not, except the ratification
of a commit, which after a failure of unknown outcome asks the catalog which commit it holds for
that version before proposing again (so a commit is never ratified twice, nor reported as lost
when it landed).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import urllib3
from lance_namespace_urllib3_client import (
    ApiClient,
    Configuration,
    NamespaceApi,
    TableApi,
    models as m,
)
from lance_namespace_urllib3_client.exceptions import ApiException

from deltalog.catalog.base import (
    Catalog,
    Identifier,
    PropertiesUpdateSummary,
    plan_properties_update,
)
from deltalog.catalog.clients.rest import protocol as p
from deltalog.catalog.clients.rest.errors import _TRANSIENT, _NoAnswer, translate
from deltalog.catalog.clients.rest.table_client import (
    RestTableClient,
    _commit_of,
    _entry,
    _RestStore,
    _within,
)
from deltalog.catalog.managed import (
    TableDescription,
    TableRecord,
)
from deltalog.exceptions import (
    AlreadyExistsError,
    CatalogError,
    CatalogUnavailableError,
    CommitConflictError,
    CommitOutcomeUnknownError,
    InvalidArgumentError,
    NamespaceNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.protocol.catalog_client import RatifiedCommit, RatifiedCommits

if TYPE_CHECKING:
    from deltalog.catalog.transaction import CatalogTransaction
    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import WriteMode

T = TypeVar("T")

#: The page size asked for when listing.
_PAGE = 1000
#: The first page asked for when listing a table's held commits, newest first: a table holds
#: few unpublished commits (usually none), and every version older than the first published
#: one is of no interest, so a short first page spares both sides the table's whole history.
_HELD_FIRST_PAGE = 8


class RestCatalog(Catalog):
    """A catalog served over HTTP by a Lance Namespace REST server (``deltalog catalog
    serve``, or any server speaking the protocol with deltalog's Delta conventions).

    Args:
        uri: the server, e.g. ``http://127.0.0.1:2333``.
        token: a bearer token (sent as ``Authorization: Bearer …``).
        delimiter: what joins the names of a string identifier in this API (default ``.``;
            on the wire identifiers are always joined by ``$``).
        timeout: seconds to wait for a connection and for each answer.
        retries: how often a read is tried again after a transient failure.
        storage_options: how to reach the tables' storage (object store credentials).
    """

    def __init__(
        self,
        uri: str,
        token: str | None = None,
        delimiter: str = ".",
        timeout: float = 30.0,
        retries: int = 3,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(delimiter)
        if not uri.startswith(("http://", "https://")):
            raise InvalidArgumentError(f"a rest catalog's uri is http(s)://…, not {uri!r}")
        self.uri = uri.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.retries = retries
        self.storage_options = dict(storage_options) if storage_options else None
        self._lock = threading.Lock()
        self._pid = -1
        self._client: ApiClient | None = None

    def __repr__(self) -> str:
        return f"RestCatalog({self.uri!r})"

    # -- transport -------------------------------------------------------------------------

    def _apis(self) -> tuple[NamespaceApi, TableApi]:
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                # A forked child opens its own connections (sharing sockets corrupts both).
                config = Configuration(host=self.uri, access_token=self._token, retries=0)
                self._client = ApiClient(config)
                self._pid = os.getpid()
            return NamespaceApi(self._client), TableApi(self._client)

    def _call(
        self,
        what: str,
        fn: Callable[..., T],
        *args: Any,
        idempotent: bool,
        timeout: float | None = None,
        **kw: Any,
    ) -> T:
        """``fn`` with the timeout (``timeout``, else the catalog's); reads retried on
        transient failures; errors translated. A read that gets no answer raises
        :class:`CatalogUnavailableError`; a call that changes something raises the internal
        ``_NoAnswer`` for its caller to resolve."""
        attempts = 1 + (self.retries if idempotent else 0)
        for attempt in range(attempts):
            try:
                return fn(*args, _request_timeout=timeout or self.timeout, delimiter="$", **kw)
            except ApiException as e:
                if e.status in _TRANSIENT and attempt + 1 < attempts:
                    time.sleep(0.05 * 2**attempt)
                    continue
                error: Exception | None = translate(e, what)
                if isinstance(error, _NoAnswer) and idempotent:
                    error = CatalogUnavailableError(str(error))
                try:
                    raise error from None  # type: ignore[misc]
                finally:
                    # Else this frame (in the error's traceback) and the error hold each
                    # other: a cycle per conflict, left to the cyclic collector, whose full
                    # collections cost contended writers milliseconds a commit.
                    error = None
            except urllib3.exceptions.HTTPError as e:
                if attempt + 1 < attempts:
                    time.sleep(0.05 * 2**attempt)
                    continue
                text = f"{what}: cannot reach the catalog at {self.uri}: {e}"
                if idempotent:
                    raise CatalogUnavailableError(text) from e
                raise _NoAnswer(text) from e
        raise AssertionError("unreachable")

    def _wire_names(self, names: Sequence[str]) -> list[str]:
        for name in names:
            if p.DEFAULT_DELIMITER in name:
                raise InvalidArgumentError(
                    f"a name of a REST catalog cannot contain {p.DEFAULT_DELIMITER!r}: {name!r}"
                )
        return list(names)

    def _id(self, identifier: Identifier | None) -> tuple[list[str], str]:
        names = [] if identifier is None else self._wire_names(self._names(identifier))
        return names, p.encode_id(names)

    # -- namespaces ------------------------------------------------------------------------

    def _pages(self, what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> list[Any]:
        """Every answer of a list call, ``page_token`` followed to the end (a read: retried)."""
        pages: list[Any] = []
        token: str | None = None
        while True:
            answer = self._call(
                what, fn, *args, page_token=token, limit=_PAGE, idempotent=True, **kw
            )
            pages.append(answer)
            token = answer.page_token
            if not token:
                return pages

    def list_namespaces(self, namespace: Identifier | None = None) -> list[str]:
        ns_api, _ = self._apis()
        _, wire = self._id(namespace)
        pages = self._pages(f"list namespaces of {_shown(namespace)}", ns_api.list_namespaces, wire)
        return [name for page in pages for name in page.namespaces]

    def create_namespace(
        self, namespace: Identifier, properties: Mapping[str, str] | None = None
    ) -> None:
        ns_api, _ = self._apis()
        names, wire = self._id(namespace)
        request = m.CreateNamespaceRequest(id=names, properties=dict(properties or {}) or None)
        self._call(
            f"create namespace {namespace!r}",
            ns_api.create_namespace,
            wire,
            request,
            idempotent=False,
        )

    def load_namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        return self.namespace_properties(namespace)

    def update_namespace_properties(
        self,
        namespace: Identifier,
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """The Lance Namespace protocol has no call that changes some of a namespace's
        properties: this reads them (``DescribeNamespace``) and writes the result whole
        (``CreateNamespace`` with mode ``overwrite``). Two clients updating one namespace at
        once may lose one's change; tables and their commits are untouched either way."""
        after, summary = plan_properties_update(
            self.namespace_properties(namespace), removals, updates
        )
        ns_api, _ = self._apis()
        names, wire = self._id(namespace)
        if not names:
            raise InvalidArgumentError("the catalog's root namespace keeps no properties")
        request = m.CreateNamespaceRequest(id=names, mode="overwrite", properties=after)
        self._call(
            f"update namespace {namespace!r}",
            ns_api.create_namespace,
            wire,
            request,
            idempotent=True,
        )
        return summary

    def namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        """The namespace's properties."""
        ns_api, _ = self._apis()
        names, wire = self._id(namespace)
        answer = self._call(
            f"describe namespace {namespace!r}",
            ns_api.describe_namespace,
            wire,
            m.DescribeNamespaceRequest(id=names),
            idempotent=True,
        )
        return dict(answer.properties or {})

    def drop_namespace(self, namespace: Identifier, cascade: bool = False) -> None:
        """Drops the namespace: an empty one, or with ``cascade`` everything in it."""
        ns_api, _ = self._apis()
        names, wire = self._id(namespace)
        request = m.DropNamespaceRequest(id=names, behavior="Cascade" if cascade else "Restrict")
        self._call(
            f"drop namespace {namespace!r}", ns_api.drop_namespace, wire, request, idempotent=False
        )

    def namespace_exists(self, namespace: Identifier) -> bool:
        ns_api, _ = self._apis()
        names, wire = self._id(namespace)
        try:
            self._call(
                f"namespace {namespace!r}",
                ns_api.namespace_exists,
                wire,
                m.NamespaceExistsRequest(id=names),
                idempotent=True,
            )
        except NamespaceNotFoundError:
            return False
        return True

    # -- tables ----------------------------------------------------------------------------

    def list_tables(
        self, namespace: Identifier | None = None, recursive: bool = False
    ) -> list[str]:
        """The tables directly under ``namespace`` (declared tables whose first version was
        never committed are not listed); with ``recursive``, every table at or below it, the
        pages of each list call followed."""
        if recursive:
            return self._all_tables(namespace)
        ns_api, _ = self._apis()
        _, wire = self._id(namespace)
        pages = self._pages(
            f"list tables of {_shown(namespace)}",
            ns_api.list_tables,
            wire,
            include_declared=False,
        )
        return [name for page in pages for name in page.tables]

    def _all_tables(self, namespace: Identifier | None) -> list[str]:
        """Every table at or below ``namespace`` with one paged ``GET /v1/table`` (the
        server's listing of all tables); a server without
        that route is walked namespace by namespace (:meth:`_tables_below`)."""
        _, t_api = self._apis()
        try:
            pages = self._pages("list every table", t_api.list_all_tables, include_declared=False)
        except (UnsupportedFeatureError, TableNotFoundError, NamespaceNotFoundError):
            return self._tables_below(namespace)
        except CatalogError as e:
            if "HTTP 404" not in str(e) and "HTTP 405" not in str(e):
                raise
            return self._tables_below(namespace)
        # Wire identifiers are joined by the protocol's "$" (names cannot hold it).
        names = sorted(
            self.delimiter.join(name.split(p.DEFAULT_DELIMITER))
            for page in pages
            for name in page.tables
        )
        if namespace is None:
            return names
        if not self.namespace_exists(namespace):
            raise NamespaceNotFoundError(f"namespace {namespace!r} does not exist")
        prefix = self.delimiter.join(self._names(namespace)) + self.delimiter
        return [name for name in names if name.startswith(prefix)]

    def _describe(self, name: Identifier) -> m.DescribeTableResponse:
        _, t_api = self._apis()
        names, wire = self._id(name)
        return self._call(
            f"describe table {name!r}",
            t_api.describe_table,
            wire,
            m.DescribeTableRequest(id=names),
            idempotent=True,
        )

    def table_exists(self, name: Identifier) -> bool:
        try:
            self._names(name)
        except InvalidArgumentError:
            return False  # no table has a name the catalog refuses
        try:
            described = self._describe(name)
        except (TableNotFoundError, NamespaceNotFoundError):
            return False
        return not described.is_only_declared

    def _record(self, name: Identifier) -> TableRecord:
        """The table as a :class:`TableRecord` whose id is its names (for transactions)."""
        names = self._wire_names(self._names(name))
        described = self._describe(names)
        if described.is_only_declared:
            raise TableNotFoundError(f"table {name!r} is declared, but has no version yet")
        metadata = described.metadata or {}
        return TableRecord(
            id=tuple(names),  # type: ignore[arg-type]
            namespace_id=-1,
            name=names[-1],
            location=str(described.location),
            managed=bool(described.managed_versioning),
            latest_version=described.version if described.version is not None else -1,
            protocol=metadata.get(p.META_PROTOCOL),
            metadata=metadata.get(p.META_METADATA),
            properties=described.properties,
        )

    def describe_table(self, name: Identifier) -> TableDescription:
        """The table's location, kind, latest version, protocol and metadata, from the catalog
        alone (as :meth:`ManagedCatalog.describe_table`)."""
        record = self._record(name)
        return TableDescription(
            name=self.delimiter.join(self._names(name)),
            location=record.location,
            catalog_managed=record.managed,
            latest_version=record.latest_version if record.managed else None,
            protocol=json.loads(record.protocol) if record.protocol else None,
            metadata=json.loads(record.metadata) if record.metadata else None,
        )

    def table_properties(self, name: Identifier) -> dict[str, str]:
        """The table's catalog properties (not Delta's table properties)."""
        return dict(self._record(name).properties or {})

    def _declare(self, names: list[str]) -> str:
        """Declares a new catalog-managed table (or finds the declaration an earlier, failed
        creation left) and returns its location."""
        _, t_api = self._apis()
        wire = p.encode_id(names)
        try:
            answer = self._call(
                f"declare table {names!r}",
                t_api.declare_table,
                wire,
                m.DeclareTableRequest(id=names),
                idempotent=False,
            )
            return str(answer.location)
        except AlreadyExistsError:
            try:
                described = self._describe(names)
            except TableNotFoundError:  # the name of a namespace
                raise AlreadyExistsError(f"{names!r} is the name of a namespace") from None
            if described.is_only_declared:
                return str(described.location)
            raise

    def _new_table(self, name: Identifier) -> tuple[tuple[Any, str, str], RestTableClient]:
        names = self._wire_names(self._names(name))
        location = self._declare(names)
        client = RestTableClient(self, names, creating_at=location)
        return (tuple(names[:-1]), names[-1], location), client

    def new_table_target(self, name: Identifier) -> tuple[str, Any | None]:
        """A new catalog-managed table's location, and the client whose first commit
        (version 0) creates it (catalogManaged RFC, "Creating and Dropping Catalog-managed
        Tables")."""
        (_, _, location), client = self._new_table(name)
        return location, client

    def _create_from_data(self, name: Identifier, data: Any, mode: WriteMode, **kwargs: Any) -> int:
        from deltalog.table.write import write_table

        (_, _, location), client = self._new_table(name)
        return write_table(
            location,
            data,
            mode=mode,
            catalog_client=client,
            storage_options=self.storage_options,
            **kwargs,
        )

    def register_table(
        self, name: Identifier, location: str, properties: Mapping[str, str] | None = None
    ) -> DeltaTable:
        """Adds the Delta table at ``location`` as a storage-managed table."""
        _, t_api = self._apis()
        names, wire = self._id(name)
        request = m.RegisterTableRequest(
            id=names, location=location, properties=dict(properties or {}) or None
        )
        self._call(
            f"register table {name!r}", t_api.register_table, wire, request, idempotent=False
        )
        return self.load_table(name)

    def load_table(self, name: Identifier, version: int | None = None) -> DeltaTable:
        from deltalog.table.delta_table import DeltaTable

        record = self._record(name)
        if not record.managed:
            return DeltaTable(
                record.location, version=version, storage_options=self.storage_options
            )
        client = RestTableClient(self, list(record.id))  # type: ignore[call-overload]
        if version is None:
            # The latest version, from what the catalog caches of it (describe's metadata):
            # no log replay until something needs the files.
            return DeltaTable._of_catalog(record, client, self.storage_options)
        return DeltaTable(
            record.location,
            version=version,
            storage_options=self.storage_options,
            catalog_client=client,
        )

    def catalog_client(self, name: Identifier) -> RestTableClient:
        """The catalog client of a catalog-managed table."""
        record = self._record(name)
        if not record.managed:
            raise InvalidArgumentError(f"{name!r} is storage-managed (registered), not managed")
        return RestTableClient(self, list(record.id))  # type: ignore[call-overload]

    def rename_table(self, from_name: Identifier, to_name: Identifier) -> DeltaTable:
        """``RenameTable``: the table keeps its location, files and commits; ``to_name`` may
        be in another namespace (which must exist). The server's admins only."""
        _, t_api = self._apis()
        names, wire = self._id(from_name)
        target = self._wire_names(self._names(to_name))
        request = m.RenameTableRequest(
            id=names, new_table_name=target[-1], new_namespace_id=target[:-1]
        )
        try:
            self._call(
                f"rename table {from_name!r}", t_api.rename_table, wire, request, idempotent=False
            )
        except _NoAnswer as e:
            # The rename may have landed: it did when the new name is taken and the old free.
            if not (self.table_exists(to_name) and not self.table_exists(from_name)):
                raise CatalogUnavailableError(
                    f"rename table {from_name!r}: no answer, and the catalog still holds "
                    f"{from_name!r} or no {to_name!r}: the rename did not land ({e})"
                ) from e
        return self.load_table(to_name)

    def drop_table(self, name: Identifier, purge: bool = True) -> None:
        """Removes the table: with ``purge`` the server deletes its files too, without it the
        table is deregistered and its files stay."""
        _, t_api = self._apis()
        names, wire = self._id(name)
        if purge:
            self._call(f"drop table {name!r}", t_api.drop_table, wire, idempotent=False)
        else:
            self._call(
                f"deregister table {name!r}",
                t_api.deregister_table,
                wire,
                m.DeregisterTableRequest(id=names),
                idempotent=False,
            )

    def transaction(self) -> CatalogTransaction:
        """A transaction over several catalog-managed tables of this catalog, ratified together
        by one ``batch-create`` call, or not at all (:mod:`deltalog.catalog.transaction`)."""
        from deltalog.catalog.transaction import CatalogTransaction

        return CatalogTransaction(self)  # type: ignore[arg-type]

    @property
    def _store(self) -> _RestStore:
        return _RestStore(self)

    # -- table versions (used by RestTableClient and transactions) -------------------------

    def _held(
        self, names: list[str], start: int | None = None, end: int | None = None
    ) -> RatifiedCommits:
        """The ratified commits the catalog holds (unpublished: always the newest versions)
        and the latest version: ``version/list`` newest first, until a published version."""
        _, t_api = self._apis()
        held: list[RatifiedCommit] = []
        digests: dict[int, str] = {}
        latest: int | None = None
        token: str | None = None
        while True:
            page = self._call(
                f"list versions of {names!r}",
                t_api.list_table_versions,
                p.encode_id(names),
                descending=True,
                page_token=token,
                limit=_PAGE if token else _HELD_FIRST_PAGE,
                idempotent=True,
            )
            if latest is None:
                latest = int((page.context or {}).get(p.CTX_LATEST_VERSION, -1))
            done = False
            for v in page.versions:
                commit = _commit_of(v)
                if commit is None:  # published: so is every older version
                    done = True
                    # The page's published versions come with what the catalog ratified
                    # (readers check those files against it: RatifiedCommits.published).
                    digest = (v.metadata or {}).get(p.META_SHA256)
                    if digest:
                        digests[v.version] = digest
                    continue
                if not done:
                    held.append(commit)
            token = page.page_token
            if done or not token:
                break
        held.sort(key=lambda c: c.version)
        return RatifiedCommits(
            _within(held, start, end), -1 if latest is None else latest, published=digests
        )

    def _digests(self, names: list[str], start: int, end: int) -> dict[int, str]:
        """The SHA-256 the catalog recorded for each version in ``[start, end]``:
        ``version/list`` ascending from ``start``."""
        _, t_api = self._apis()
        digests: dict[int, str] = {}
        token: str | None = str(start - 1) if start > 0 else None
        while True:
            page = self._call(
                f"list versions of {names!r}",
                t_api.list_table_versions,
                p.encode_id(names),
                page_token=token,
                limit=min(_PAGE, max(1, end - start + 1)),
                idempotent=True,
            )
            for v in page.versions:
                digest = (v.metadata or {}).get(p.META_SHA256)
                if start <= v.version <= end and digest:
                    digests[v.version] = digest
            token = page.page_token
            if not token or not page.versions or page.versions[-1].version >= end:
                return digests

    def _version(self, names: list[str], version: int) -> m.TableVersion:
        """What the catalog says of ``version`` (also once published)."""
        _, t_api = self._apis()
        answer = self._call(
            f"describe version {version} of {names!r}",
            t_api.describe_table_version,
            p.encode_id(names),
            m.DescribeTableVersionRequest(id=names, version=version),
            idempotent=True,
        )
        return answer.version

    def _ratify(
        self,
        entries: list[tuple[list[str], int, str | None, bytes | None]],
        published_through: int | None = None,
    ) -> None:
        """Ratifies ``(names, version, staged name, inline content)`` entries together;
        ``published_through``: a single entry's report that its table's commits are published
        through that version
        (:data:`~deltalog.catalog.clients.rest.protocol.CTX_PUBLISHED_THROUGH`).

        A proposal whose answer is lost is sent again, identical: the catalog answers a
        replay of the commit it ratified for that version as a success (never ratifying it
        twice). When no answer comes at all, the catalog is asked which commit it holds for
        the version; only when it cannot tell does :class:`CommitOutcomeUnknownError` leave.
        """
        _, t_api = self._apis()
        wire_entries = [_entry(*e) for e in entries]
        what = f"commit version {entries[0][1]} of {entries[0][0]!r}"
        if len(entries) == 1:
            names, version, _, _ = entries[0]
            fields = wire_entries[0]
            context = (
                {p.CTX_PUBLISHED_THROUGH: str(published_through)}
                if published_through is not None
                else None
            )
            request = m.CreateTableVersionRequest(
                id=names, version=version, context=context, **fields
            )
            call: Callable[[], Any] = lambda: self._call(  # noqa: E731
                what,
                t_api.create_table_version,
                p.encode_id(names),
                request,
                idempotent=False,
            )
        else:
            batch = m.BatchCreateTableVersionsRequest(
                entries=[
                    m.CreateTableVersionEntry(id=names, version=version, **fields)
                    for (names, version, _, _), fields in zip(entries, wire_entries, strict=True)
                ]
            )
            call = lambda: self._call(  # noqa: E731
                what, t_api.batch_create_table_versions, batch, idempotent=False
            )
        last: Exception | None = None
        for attempt in range(1 + self.retries):
            try:
                call()
                return
            except CommitConflictError:
                if attempt == 0:
                    raise
                # A retry lost, to the first attempt whose answer was lost? Then the
                # catalog's commit for the version is ours.
                if self._landed(entries) is True:
                    return
                raise
            except _NoAnswer as e:
                last = e
                time.sleep(0.05 * 2**attempt)
        # Still no answer: ask the catalog which commit it holds for the version.
        try:
            landed = self._landed(entries)
        except CatalogError:
            landed = None
        if landed is True:
            return
        if landed is False:
            names, version, _, _ = entries[0]
            raise CommitConflictError(
                f"version {version} of {names!r} was ratified for another commit",
                version=version,
                reason="another commit won the version",
                ratified=self._held(names, version, None),
            )
        names, version, _, _ = entries[0]
        raise CommitOutcomeUnknownError(
            f"{what}: the catalog at {self.uri} did not answer, and could not say whether it "
            f"ratified the commit ({last}); reload the table to see whether version {version} "
            "is this commit",
            table=".".join(names),
            version=version,
        ) from last

    def _landed(
        self, entries: list[tuple[list[str], int, str | None, bytes | None]]
    ) -> bool | None:
        """Whether the catalog ratified the first entry's commit for its version: ``True``
        (this commit), ``False`` (another one), ``None`` (the version is not ratified yet)."""
        names, version, path, content = entries[0]
        try:
            found = self._version(names, version)
        except VersionNotFoundError:
            return None
        metadata = found.metadata or {}
        if path is not None:
            staged = p.staged_name(found.manifest_path) or metadata.get(p.META_STAGED)
            return staged == path
        if content is None:
            return False
        inline = metadata.get(p.META_INLINE)
        if inline is not None:
            return inline.encode() == content
        digest = metadata.get(p.META_SHA256)
        return digest is not None and digest == hashlib.sha256(content).hexdigest()

    def rollback_table(self, name: Identifier, version: int, published: bool = False) -> None:
        """Rolls the catalog-managed table ``name`` back to ``version``: the catalog forgets its
        ratified commits after it (``version/delete`` of the newest versions, which needs the
        admin role). Without ``published`` only unpublished commits can be rolled back; with
        it published ones too, their log files moved aside (the last resort: docs/catalogs.md,
        "Repairing a table"). The repair of a table that a bad commit damaged."""
        _, t_api = self._apis()
        names, wire = self._id(name)
        context = {p.CTX_ROLLBACK: "true"}
        if published:
            context[p.CTX_ROLLBACK_PUBLISHED] = "true"
        request = m.BatchDeleteTableVersionsRequest(
            id=names,
            ranges=[m.VersionRange(start_version=version + 1, end_version=-1)],
            context=context,
        )
        self._call(
            f"roll back {name!r} to version {version}",
            t_api.batch_delete_table_versions,
            wire,
            request,
            idempotent=True,
        )

    def repair_table(self, name: Identifier) -> None:
        """Has the catalog put back the ratified content of every published commit of ``name``
        changed in storage (admin; ``version/delete`` with ``delta.repair``). Raises
        ``CatalogError`` naming the versions it has no ratified copy of."""
        _, t_api = self._apis()
        names, wire = self._id(name)
        request = m.BatchDeleteTableVersionsRequest(
            id=names,
            ranges=[m.VersionRange(start_version=0, end_version=-1)],
            context={p.CTX_REPAIR: "true"},
        )
        self._call(
            f"repair {name!r}", t_api.batch_delete_table_versions, wire, request, idempotent=True
        )

    def _forget(self, names: list[str], version: int, once: bool = False) -> None:
        """``version/delete`` of the published commits through ``version``; ``once``: one
        attempt with a short timeout (a report at exit must not hold the interpreter up)."""
        _, t_api = self._apis()
        request = m.BatchDeleteTableVersionsRequest(
            id=names, ranges=[m.VersionRange(start_version=0, end_version=version + 1)]
        )
        self._call(
            f"forget published versions of {names!r}",
            t_api.batch_delete_table_versions,
            p.encode_id(names),
            request,
            idempotent=not once,
            timeout=min(self.timeout, 2.0) if once else None,
        )


def _shown(namespace: Identifier | None) -> str:
    """A namespace as messages name it (the root when None)."""
    return "the root namespace" if namespace is None else f"namespace {namespace!r}"
