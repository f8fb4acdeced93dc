"""A catalog that manages tables itself: namespaces, tables and the ratified commits of its
catalog-managed tables, kept in a database (:mod:`deltalog.catalog.stores.sqlite`).

Lance catalog specification (``003_…``): nested namespaces, names unique in their parent (a
namespace and a table may not share a name), identifiers. catalogManaged RFC (``000_…``): the
catalog ratifies each version of its catalog-managed tables at most once and strictly in order
("Commit Protocol"), holds the ratified commits until they are published ("Publishing
Commits"), and registers a table in the same step as its first commit ("Creating and Dropping
Catalog-managed Tables"). ``register_table`` adds a storage-managed table (one that commits by
put-if-absent).
"""

from __future__ import annotations

import abc
import dataclasses
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.catalog.base import (
    Catalog,
    Identifier,
    PropertiesUpdateSummary,
    plan_properties_update,
)
from deltalog.catalog.names import (
    ConfusableNameError,
    canonical_location,
    contains,
    name_key,
    same_name,
    unlinked_location,
)
from deltalog.catalog.stores.records import (  # re-exported: the stores' records
    CommitRecord as CommitRecord,
    NamespaceRecord as NamespaceRecord,
    Proposal as Proposal,
    RefusalRecord as RefusalRecord,
    TableRecord as TableRecord,
    default_principal as default_principal,
)
from deltalog.exceptions import (
    AlreadyExistsError,
    CatalogError,
    CommitConflictError,
    InvalidArgumentError,
    NamespaceNotFoundError,
    TableNotFoundError,
)
from deltalog.protocol.catalog_client import RatifiedCommit, RatifiedCommits

if TYPE_CHECKING:
    from deltalog.catalog.transaction import CatalogTransaction
    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import WriteMode


class PurgeRefusedError(CatalogError):
    """``drop_table(purge=True)`` refused to delete a table's recorded location: it is the
    warehouse or above it, holds another table's directory, or cannot be checked."""


#: The most ratified commits a table may have unpublished (writers publish right after their
#: commit; a backlog means publishing fails).
MAX_UNPUBLISHED = 1000

#: Commits up to this size are proposed inline: the catalog holds their content.
MAX_INLINE_COMMIT_BYTES = 64 * 1024


@dataclass(frozen=True)
class TableDescription:
    """What the catalog knows of a table without reading its log
    (:meth:`ManagedCatalog.describe_table`).

    Attributes:
        name: the table's identifier, joined by the catalog's delimiter.
        location: the table's root URI.
        catalog_managed: whether the catalog ratifies its commits.
        latest_version: the latest ratified version (``None`` for a storage-managed table,
            whose versions the catalog does not track).
        protocol: the latest ``protocol`` action, as the catalog cached it from the commits it
            ratified (``None`` when it was never given one).
        metadata: the latest ``metaData`` action, likewise.
    """

    name: str
    location: str
    catalog_managed: bool
    latest_version: int | None
    protocol: dict[str, Any] | None
    metadata: dict[str, Any] | None

    @property
    def configuration(self) -> dict[str, str]:
        """The table properties of the cached metadata."""
        return dict((self.metadata or {}).get("configuration") or {})

    @property
    def partition_columns(self) -> list[str]:
        """The partition columns of the cached metadata."""
        return list((self.metadata or {}).get("partitionColumns") or [])

    @property
    def schema_string(self) -> str | None:
        """The Delta schema (JSON) of the cached metadata."""
        return (self.metadata or {}).get("schemaString")


class Store(abc.ABC):
    """The database behind a :class:`ManagedCatalog` (one implementation per engine).

    The calls that create or change a namespace or table take ``principal``: who does it,
    recorded as its creator (its owner) or last updater with the time; ``None`` (a library
    caller) records :func:`default_principal`."""

    ROOT = 0  # the id of the root namespace

    @abc.abstractmethod
    def namespace_id(self, parent: int, name: str) -> int | None: ...

    @abc.abstractmethod
    def child_namespaces(self, parent: int) -> list[str]: ...

    @abc.abstractmethod
    def create_namespace(
        self,
        parent: int,
        name: str,
        properties: Mapping[str, str] | None = None,
        principal: str | None = None,
    ) -> None: ...

    @abc.abstractmethod
    def namespace_record(self, namespace: int) -> NamespaceRecord | None:
        """The namespace of that id (not the root), or None."""

    @abc.abstractmethod
    def namespace_properties(self, namespace: int) -> dict[str, str]: ...

    @abc.abstractmethod
    def set_namespace_properties(
        self, namespace: int, properties: Mapping[str, str], principal: str | None = None
    ) -> None: ...

    @abc.abstractmethod
    def drop_namespace(self, parent: int, name: str) -> None: ...

    @abc.abstractmethod
    def tables(self, namespace: int) -> list[str]: ...

    @abc.abstractmethod
    def table_records(self, namespace: int) -> list[TableRecord]:
        """The tables directly in ``namespace``, by name."""

    @abc.abstractmethod
    def table(self, namespace: int, name: str) -> TableRecord | None:
        """The table of that name (in any case or normalization form:
        :func:`deltalog.catalog.names.same_name`), or None."""

    def holder(self, parent: int, name: str) -> tuple[str, str] | None:
        """``("table" | "namespace", its name)`` of the object of ``parent`` whose name is
        ``name`` or confusable with it (:func:`deltalog.catalog.names.name_key`), or None."""
        key = name_key(name)
        for kind, names in (
            ("table", self.tables(parent)),
            ("namespace", self.child_namespaces(parent)),
        ):
            found = next((n for n in names if name_key(n) == key), None)
            if found is not None:
                return kind, found
        return None

    @abc.abstractmethod
    def table_by_id(self, table_id: int) -> TableRecord | None: ...

    @abc.abstractmethod
    def register(
        self,
        namespace: int,
        name: str,
        location: str,
        properties: Mapping[str, str] | None = None,
        managed: bool = False,
        principal: str | None = None,
    ) -> TableRecord:
        """Adds a table: storage-managed, or (``managed``) a catalog-managed table *declared*
        at ``location`` whose version 0 is not ratified yet."""

    @abc.abstractmethod
    def drop_table(self, table_id: int) -> None: ...

    @abc.abstractmethod
    def rename_table(
        self, table_id: int, name: str, namespace: int | None = None, principal: str | None = None
    ) -> None:
        """Renames the table, moving it to ``namespace`` when given (its location stays).

        Raises:
            AlreadyExistsError: the namespace has a table or namespace of that name.
            NamespaceNotFoundError: ``namespace`` is gone.
        """

    @abc.abstractmethod
    def update_namespace_properties(
        self,
        namespace: int,
        removals: Iterable[str],
        updates: Mapping[str, str],
        principal: str | None = None,
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Removes ``removals`` and sets ``updates`` on the namespace's properties in one
        transaction; the properties before and after."""

    @abc.abstractmethod
    def table_uuid(self, table_id: int) -> str:
        """The table's UUID, assigned now (once, for good) if it has none yet.

        Raises:
            CatalogError: the table is gone.
        """

    @abc.abstractmethod
    def table_by_uuid(self, uuid: str) -> TableRecord | None: ...

    @abc.abstractmethod
    def overlapping(self, location: str, exclude: int | None = None) -> list[tuple[int, str]]:
        """The tables (id, location) whose location is ``location``, lies inside it or above
        it, except table ``exclude``."""

    @abc.abstractmethod
    def commits(self, table_id: int, start: int | None, end: int | None) -> RatifiedCommits: ...

    def ratify(
        self,
        table_id: int | None,
        version: int,
        path: str | None,
        content: bytes | None,
        create: tuple[int, str, str] | None = None,
        protocol: str | None = None,
        metadata: str | None = None,
    ) -> int:
        """Ratifies ``version`` of a table in one database transaction: only the next version,
        at most once. ``create`` (namespace id, name, location) registers a new
        catalog-managed table with its version 0. ``protocol`` / ``metadata`` (JSON), when
        given, become the table's cached latest protocol / metadata. Returns the table's id.

        Raises:
            CommitConflictError: the version is taken (``ratified``: the commits from it on).
            CatalogError: the table is gone, or holds too many unpublished commits.
        """
        proposal = Proposal(table_id, version, path, content, create, protocol, metadata)
        return self.ratify_all([proposal])[0]

    @abc.abstractmethod
    def ratify_all(self, proposals: Sequence[Proposal]) -> list[int]:
        """Ratifies every proposal in ONE database transaction, or none of them: each must be
        the next version of its table (at most one proposal a table). Returns the tables' ids,
        in the order of ``proposals``.

        Raises:
            CommitConflictError: a proposal's version is taken (``ratified``: that table's
                commits from it on); nothing is ratified.
            CatalogError: a table is gone, holds too many unpublished commits, or is named by
                two proposals; nothing is ratified.
        """

    @abc.abstractmethod
    def forget(self, table_id: int, version: int) -> int:
        """Drops the held commits up to ``version`` (published); returns how many."""

    @abc.abstractmethod
    def commit_record(self, table_id: int, version: int) -> CommitRecord | None:
        """What the catalog recorded of ``version`` of the table, or ``None``."""

    @abc.abstractmethod
    def commit_records(self, table_id: int, start: int, end: int) -> list[CommitRecord]:
        """What the catalog recorded of the table's versions in ``[start, end]``, ascending."""

    @abc.abstractmethod
    def rollback(self, table_id: int, version: int, published: bool = False) -> list[int]:
        """Rolls the table back to ``version``: forgets its ratified, unpublished commits after
        it (an administrator's repair of a table a bad commit damaged; with ``published``, its
        published ones too: the caller moves their files aside). Returns the versions
        forgotten.

        Raises:
            CatalogError: a version after ``version`` is published already (its commit is in
                the table's log for good), or the table is gone.
        """

    @abc.abstractmethod
    def set_cached_state(
        self, table_id: int, protocol: str | None, metadata: str | None, clustering: str | None
    ) -> None:
        """Sets the table's cached protocol, metadata and clustering domain (JSON)."""

    @abc.abstractmethod
    def record_refusal(self, record: RefusalRecord) -> None:
        """Adds a refused request to the audit log (long texts truncated), which keeps the
        latest :data:`~deltalog.catalog.stores.audit_log.AUDIT_LOG_ROWS` only."""

    @abc.abstractmethod
    def refusals(self, limit: int = 100) -> list[RefusalRecord]:
        """The latest ``limit`` refusals of the audit log (1 … ``AUDIT_LOG_ROWS``), newest
        first."""


class TableCatalogClient:
    """The :class:`deltalog.catalog.CatalogClient` of one catalog-managed table of a
    :class:`ManagedCatalog` (or of one it is creating)."""

    max_inline_commit_bytes = MAX_INLINE_COMMIT_BYTES

    def __init__(
        self,
        store: Store,
        table_id: int | None,
        create: tuple[int, str, str] | None = None,
    ) -> None:
        self._store = store
        self._table_id = table_id
        self._create = create
        # Who its commits are recorded as (the table's updater): taken here, as the client may
        # commit from another thread, outside the request that opened the table.
        self._principal = default_principal()

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        if self._table_id is None:
            return RatifiedCommits((), -1)
        held = self._store.commits(self._table_id, start_version, end_version)
        # The catalog recorded the SHA-256 of every commit it ratified: readers check each
        # published commit they replay against it (`published_digests`; deltalog_core's
        # log::published), so a log file rewritten in storage is refused, not read.
        return RatifiedCommits(held.commits, held.latest_version, published={})

    def published_digests(self, start_version: int, end_version: int) -> dict[int, str]:
        """The SHA-256 the catalog recorded for each version in ``[start_version,
        end_version]`` (see :class:`~deltalog.catalog.RatifiedCommits`)."""
        if self._table_id is None:
            return {}
        records = self._store.commit_records(self._table_id, start_version, end_version)
        return {r.version: r.sha256 for r in records if r.sha256}

    def commit(
        self,
        version: int,
        path: str | None = None,
        content: bytes | None = None,
        protocol: str | None = None,
        metadata: str | None = None,
    ) -> None:
        # protocol / metadata as the writer says them are not taken: the catalog reads them
        # from the commit it checks (deltalog.catalog.ratification).
        from deltalog.catalog.ratification import prepare

        if self._table_id is None:
            if version != 0 or self._create is None:
                raise CatalogError(f"the table is not registered yet (version {version})")
            location = self._create[2]
            try:
                proposal, _ = prepare(location, 0, path, content, None, create=self._create)
                proposal = dataclasses.replace(proposal, principal=self._principal)
                self._table_id = self._store.ratify_all([proposal])[0]
            except Exception as e:
                from deltalog.catalog.refused import discard_created_files, refused

                if refused(e):  # a failed creation leaves no files behind
                    discard_created_files(location, path, content)
                raise
            self._create = None
            return
        record = self._store.table_by_id(self._table_id)
        if record is None:
            raise CatalogError(f"the table {self._table_id} is no longer in the catalog")
        if version <= record.latest_version:
            # Behind: the winners, so that the writer rebases (nothing to check yet).
            held = self._store.commits(self._table_id, version, None)
            raise conflict(version, held)
        proposal, _ = prepare(record.location, version, path, content, record)
        self._store.ratify_all([dataclasses.replace(proposal, principal=self._principal)])

    def published(self, version: int) -> None:
        if self._table_id is not None:
            self._store.forget(self._table_id, version)


class ManagedCatalog(Catalog):
    """A catalog of namespaces and tables in a :class:`Store`, with a warehouse where new
    tables get their directories (``<warehouse>/<namespace>/.../<name>``)."""

    def __init__(self, store: Store, warehouse: str, delimiter: str = ".") -> None:
        super().__init__(delimiter)
        self._store = store
        self.warehouse = canonical_location(warehouse)

    # -- helpers ---------------------------------------------------------------------------

    def _namespace(self, names: list[str]) -> int:
        current = Store.ROOT
        for i, name in enumerate(names):
            found = self._store.namespace_id(current, name)
            if found is None:
                raise NamespaceNotFoundError(
                    f"namespace {self.delimiter.join(names[: i + 1])!r} does not exist"
                )
            current = found
        return current

    def _split(self, name: Identifier) -> tuple[list[str], str]:
        names = self._names(name)
        return names[:-1], names[-1]

    def _check_free(self, pid: int, name: str, identifier: Identifier, kind: str) -> None:
        """Refuses a new ``kind`` (``table`` / ``namespace``) ``name`` in namespace ``pid``
        when the namespace holds an object of that name in any case or form
        (AlreadyExistsError) or of a look-alike name (:class:`ConfusableNameError`)."""
        held = self._store.holder(pid, name)
        if held is None:
            return
        what, existing = held
        if not same_name(existing, name):
            raise ConfusableNameError(name, existing)
        if what != kind:
            raise AlreadyExistsError(f"{identifier!r} is the name of a {what} ({existing!r})")
        if kind == "table":
            raise AlreadyExistsError(f"the catalog already has a table {existing!r}")
        raise AlreadyExistsError(f"the namespace {existing!r} already exists")

    def _record(self, name: Identifier) -> TableRecord:
        parent, table = self._split(name)
        record = self._store.table(self._namespace(parent), table)
        if record is None:
            raise TableNotFoundError(f"the catalog has no table {name!r}")
        return record

    # -- namespaces ------------------------------------------------------------------------

    def list_namespaces(self, namespace: Identifier | None = None) -> list[str]:
        parent = Store.ROOT if namespace is None else self._namespace(self._names(namespace))
        return self._store.child_namespaces(parent)

    def create_namespace(
        self, namespace: Identifier, properties: Mapping[str, str] | None = None
    ) -> None:
        parent, name = self._split(namespace)
        pid = self._namespace(parent)
        self._check_free(pid, name, namespace, "namespace")
        checked, _ = plan_properties_update({}, None, properties)
        self._store.create_namespace(pid, name, checked or None)

    def load_namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        return self._store.namespace_properties(self._namespace(self._names(namespace)))

    def update_namespace_properties(
        self,
        namespace: Identifier,
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        nid = self._namespace(self._names(namespace))
        plan_properties_update({}, removals, updates)  # the arguments checked
        before, _ = self._store.update_namespace_properties(
            nid, list(removals or ()), dict(updates or {})
        )
        _, summary = plan_properties_update(before, removals, updates)
        return summary

    def drop_namespace(self, namespace: Identifier) -> None:
        parent, name = self._split(namespace)
        self._store.drop_namespace(self._namespace(parent), name)

    def namespace_exists(self, namespace: Identifier) -> bool:
        try:
            self._namespace(self._names(namespace))
        except InvalidArgumentError:
            return False
        return True

    # -- tables ----------------------------------------------------------------------------

    def list_tables(
        self, namespace: Identifier | None = None, recursive: bool = False
    ) -> list[str]:
        if recursive:
            return self._tables_below(namespace)
        parent = Store.ROOT if namespace is None else self._namespace(self._names(namespace))
        return self._store.tables(parent)

    def table_exists(self, name: Identifier) -> bool:
        try:
            self._record(name)
        except (TableNotFoundError, InvalidArgumentError):
            return False
        return True

    def derived_location(self, names: Sequence[str], what: str) -> str:
        """The directory of a new table of identifier ``names``: ``<warehouse>/<names…>``,
        not a symbolic link on the way. When that directory is another table's own (a table
        renamed away from this name, or one registered there), a fresh directory beside it
        (``<name>-<random>``): a directory is never two tables'.

        Raises:
            InvalidArgumentError: the directory lies inside or above another table's (checked
                again by the store when the table is registered; refused here before any file
                is written).
        """
        location = unlinked_location("/".join([self.warehouse, *names]), what)
        taken = self._store.overlapping(location)
        if taken and all(canonical_location(other) == location for _, other in taken):
            location = unlinked_location(f"{location}-{uuid.uuid4().hex[:12]}", what)
            taken = self._store.overlapping(location)
        if taken:
            raise InvalidArgumentError(
                f"{what} would live at {location}, which overlaps the location of another "
                f"table of the catalog ({taken[0][1]})"
            )
        return location

    def _new_table(self, name: Identifier) -> tuple[tuple[int, str, str], TableCatalogClient]:
        parent, table = self._split(name)
        pid = self._namespace(parent)
        self._check_free(pid, table, name, "table")
        location = self.derived_location([*parent, table], f"the new table {name!r}")
        create = (pid, table, location)
        return create, TableCatalogClient(self._store, None, create=create)

    def new_table_target(self, name: Identifier) -> tuple[str, Any | None]:
        """A new catalog-managed table's location, and the client whose first commit (version
        0) registers it (catalogManaged RFC, "Creating and Dropping Catalog-managed Tables")."""
        (_, _, location), client = self._new_table(name)
        return location, client

    def rename_table(self, from_name: Identifier, to_name: Identifier) -> DeltaTable:
        """Renames table ``from_name`` to ``to_name``, which may be in another namespace (that
        must exist); the table keeps its location, its files and its commits. A later table
        given the old name gets a directory of its own (:meth:`_new_table`)."""
        record = self._record(from_name)
        parent, table = self._split(to_name)
        pid = self._namespace(parent)
        if pid != record.namespace_id or name_key(table) != name_key(record.name):
            self._check_free(pid, table, to_name, "table")
        self._store.rename_table(record.id, table, pid)
        return self.load_table(to_name)

    def _create_from_data(self, name: Identifier, data: Any, mode: WriteMode, **kwargs: Any) -> int:
        from deltalog.table.write import write_table

        (_, _, location), client = self._new_table(name)
        return write_table(location, data, mode=mode, catalog_client=client, **kwargs)

    def register_table(self, name: Identifier, location: str) -> DeltaTable:
        """Adds the Delta table at ``location`` as a storage-managed table."""
        from deltalog.table.delta_table import DeltaTable

        location = canonical_location(location)
        self.check_not_above_warehouse(location)
        DeltaTable(location)  # must be a readable (filesystem) Delta table
        parent, table = self._split(name)
        pid = self._namespace(parent)
        self._check_free(pid, table, name, "table")
        self._store.register(pid, table, location)
        return self.load_table(name)

    def load_table(self, name: Identifier, version: int | None = None) -> DeltaTable:
        from deltalog.table.delta_table import DeltaTable

        record = self._record(name)
        if not record.managed:
            return DeltaTable(record.location, version=version)
        client = TableCatalogClient(self._store, record.id)
        if version is None:
            # The latest version, from what the catalog caches of it: no log replay until
            # something needs the files.
            return DeltaTable._of_catalog(record, client)
        return DeltaTable(record.location, version=version, catalog_client=client)

    def describe_table(self, name: Identifier) -> TableDescription:
        """The table's location, kind, latest version, protocol and metadata, from the catalog
        alone (no storage access): the catalog keeps the latest protocol and metadata of the
        commits it ratifies (catalogManaged RFC, "Catalog-managed Tables")."""
        import json

        record = self._record(name)
        return TableDescription(
            name=self.delimiter.join(self._names(name)),
            location=record.location,
            catalog_managed=record.managed,
            latest_version=record.latest_version if record.managed else None,
            protocol=json.loads(record.protocol) if record.protocol else None,
            metadata=json.loads(record.metadata) if record.metadata else None,
        )

    def rollback_table(self, name: Identifier, version: int, published: bool = False) -> list[int]:
        """Rolls the catalog-managed table ``name`` back to ``version``: the catalog forgets its
        ratified commits after it (an administrator's repair of a table that a bad commit
        damaged). Without ``published`` they must all be unpublished (a published commit is
        the table's history); with it, published versions go too, and their log files
        (commits, checksums, checkpoints, compactions) are moved to
        ``_delta_log/_rolled_back/<time>/``: the last resort for a history that cannot be
        repaired, such as a commit whose in-commit timestamp lies years ahead (docs/catalogs.md,
        "Repairing a table"). Readers holding a later version must load the table again.
        Returns the versions forgotten.

        Raises:
            CatalogError: a version after ``version`` is published already (without
                ``published``).
        """
        from deltalog.catalog import integrity

        record = self._record(name)
        if not record.managed:
            raise InvalidArgumentError(f"{name!r} is storage-managed: the catalog holds no commits")
        if published:
            integrity.require_local(record.location, "rolling back published versions")
        rolled = self._store.rollback(record.id, version, published=published)
        # The catalog first (readers ignore files past its latest version), then the files.
        if rolled:
            integrity.quarantine_after(record.location, version)
        self.refresh_cached_state(record.id)
        return rolled

    def repair_table(self, name: Identifier) -> dict[str, list[int]]:
        """Puts back the ratified content of every published commit of ``name`` that was
        changed in storage (of the versions readers replay), where the catalog can still find
        it (the staged commit it ratified); the changed files are kept in
        ``_delta_log/_tampered/``. Returns ``{"republished": [...], "unrepairable": [...]}``:
        roll the table back to before an unrepairable version (``rollback_table(...,
        published=True)``)."""
        from deltalog.catalog import integrity

        record = self._record(name)
        if not record.managed:
            raise InvalidArgumentError(f"{name!r} is storage-managed: the catalog holds no commits")
        repaired, left = integrity.republish(self._store, record)
        if repaired:
            self.refresh_cached_state(record.id)
        return {"republished": repaired, "unrepairable": [t.version for t in left]}

    def refresh_cached_state(self, table_id: int) -> None:
        """Sets the table's cached protocol, metadata and clustering domain from its latest
        version, read through the catalog (after a rollback); left unknown when the table
        cannot be read."""
        from deltalog.exceptions import DeltaError

        record = self._store.table_by_id(table_id)
        if record is None or record.latest_version < 0:
            return
        try:
            from deltalog.table.delta_table import DeltaTable

            table = DeltaTable(
                record.location, catalog_client=TableCatalogClient(self._store, table_id)
            )
            protocol, metadata, clustering = state_json(table)
        except DeltaError:
            return
        self._store.set_cached_state(table_id, protocol, metadata, clustering)

    def catalog_client(self, name: Identifier) -> TableCatalogClient:
        """The catalog client of a catalog-managed table."""
        record = self._record(name)
        if not record.managed:
            raise InvalidArgumentError(f"{name!r} is storage-managed (registered), not managed")
        return TableCatalogClient(self._store, record.id)

    def transaction(self) -> CatalogTransaction:
        """A transaction over several catalog-managed tables of this catalog: their commits
        are ratified together, or none of them (:mod:`deltalog.catalog.transaction`)."""
        from deltalog.catalog.transaction import CatalogTransaction

        return CatalogTransaction(self)

    def check_not_above_warehouse(self, location: str) -> None:
        """Refuses a table location that is the warehouse or lies above it (canonical)."""
        if contains(location, self.warehouse):
            raise InvalidArgumentError(
                f"a table cannot live at or above the catalog's warehouse {self.warehouse}: "
                f"{location}"
            )

    def check_purge(self, record: TableRecord) -> str:
        """The directory purging ``record`` deletes, once checked against the catalog's records:
        the table's own location, never the warehouse or above it, and holding no other table
        of the catalog.

        Raises:
            PurgeRefusedError: the location is not the table's own to delete.
        """
        try:
            location = canonical_location(record.location)
            named = canonical_location(record.location, resolve=False)
        except InvalidArgumentError as e:
            raise PurgeRefusedError(
                f"table {record.name!r} is recorded at {record.location!r}, not a location the "
                f"catalog can check: its files are not deleted (drop it with purge=False): {e}"
            ) from e
        if named != location:
            raise PurgeRefusedError(
                f"table {record.name!r} is recorded at {named}, which now resolves through a "
                f"symbolic link to {location}: its files are not deleted (drop it with "
                "purge=False)"
            )
        if contains(location, self.warehouse):
            raise PurgeRefusedError(
                f"table {record.name!r} is recorded at {record.location}, the catalog's warehouse "
                "or above it: its files are not deleted (drop it with purge=False)"
            )
        others = self._store.overlapping(location, exclude=record.id)
        if others:
            raise PurgeRefusedError(
                f"table {record.name!r} is recorded at {record.location}, which holds or lies "
                f"inside another table's directory ({others[0][1]}): its files are not deleted "
                "(drop it with purge=False)"
            )
        return location

    def drop_table(self, name: Identifier, purge: bool = True) -> None:
        """Removes the table from the catalog and, with ``purge``, deletes its directory: the
        location the catalog recorded for it, after checking that no other table lives there
        (:meth:`check_purge`)."""
        from deltalog import _native

        record = self._record(name)
        location = self.check_purge(record) if purge else None
        self._store.drop_table(record.id)
        if location is not None:
            _native.delete_tree(location)


def state_json(table: DeltaTable) -> tuple[str, str, str | None]:
    """The ``protocol`` and ``metaData`` actions of a loaded version as JSON (nulls left
    out), and its ``delta.clustering`` domain's configuration: what a catalog caches of a
    table's latest version, and describes of an older one."""
    import json

    reader, writer, reader_features, writer_features = table._raw.protocol()
    protocol: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        protocol["readerFeatures"] = list(reader_features)
    if writer_features is not None:
        protocol["writerFeatures"] = list(writer_features)
    d = table._raw.metadata()
    metadata = {
        "id": d["id"],
        "name": d["name"],
        "description": d["description"],
        "format": {"provider": d["format_provider"], "options": dict(d["format_options"])},
        "schemaString": d["schema_string"],
        "partitionColumns": list(d["partition_columns"]),
        "configuration": dict(d["configuration"]),
        "createdTime": d["created_time"],
    }
    compact = {k: v for k, v in metadata.items() if v is not None}
    clustering = dict(table._raw.domain_metadata()).get("delta.clustering")
    return (
        json.dumps(protocol, separators=(",", ":")),
        json.dumps(compact, separators=(",", ":")),
        clustering,
    )


def now_ms() -> int:
    return int(time.time() * 1000)


def conflict(version: int, held: RatifiedCommits) -> CommitConflictError:
    return CommitConflictError(
        f"version {version} was already ratified (the latest ratified version is "
        f"{held.latest_version})",
        version=version,
        reason="another commit won the version",
        ratified=held,
    )


def commit_of(row: tuple[Any, ...]) -> RatifiedCommit:
    version, path, content, ts, sha256 = row
    return RatifiedCommit(
        version,
        path=path,
        content=bytes(content) if content is not None and path is None else None,
        timestamp=ts,
        sha256=sha256,
    )
