"""Transactions over several catalog-managed tables of one :class:`ManagedCatalog`: commits to
each are prepared as usual (data files and staged commits written, conflicts with newer
versions checked and rebased), then ratified together in one catalog transaction, or none of
them. This goes beyond the catalogManaged RFC, whose "Commit Protocol" ratifies one table's
version at a time; the RFC's rules still hold for each table (each version ratified at most
once and in order, published afterwards in order).

Example::

    with catalog.transaction() as tx:
        tx.write_table("sales.orders", new_orders, mode="append")
        tx.load_table("sales.stock").delete("sku = 'A-17'")
    # both commits are visible now, or (on an exception) neither is

A table takes at most one commit in a transaction. Reads through :meth:`load_table` see the
transaction's own commit of that table once it is made.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.catalog.base import Identifier
from deltalog.catalog.managed import (
    MAX_INLINE_COMMIT_BYTES,
    ManagedCatalog,
    Proposal,
    Store,
    conflict,
)
from deltalog.catalog.ratification import prepare
from deltalog.exceptions import CatalogError, InvalidArgumentError
from deltalog.protocol.catalog_client import DEFERRED, RatifiedCommit, RatifiedCommits

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import WriteMode

_log = logging.getLogger("deltalog")


@dataclass
class _Pending:
    """The commit a transaction holds for one table until it ends."""

    name: str
    location: str
    proposal: Proposal


class _DeferringClient:
    """The catalog client of one table inside a :class:`CatalogTransaction`: proposals are
    checked against the catalog now (so that a writer behind rebases at once) and ratified when
    the transaction commits."""

    max_inline_commit_bytes = MAX_INLINE_COMMIT_BYTES

    def __init__(
        self,
        tx: CatalogTransaction,
        name: str,
        location: str,
        table_id: int | None,
        create: tuple[int, str, str] | None = None,
    ) -> None:
        self._tx = tx
        self._name = name
        self._location = location
        self._table_id = table_id
        self._create = create

    def _pending(self) -> _Pending | None:
        return self._tx._pending.get(self._name)

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        store = self._tx._catalog._store
        held = (
            RatifiedCommits((), -1)
            if self._table_id is None
            else store.commits(self._table_id, start_version, end_version)
        )
        # Published commits are checked against what the catalog recorded (published_digests).
        published = held.published if held.published is not None else {}
        pending = self._pending()
        if pending is None or pending.proposal.version != held.latest_version + 1:
            return RatifiedCommits(held.commits, held.latest_version, published=published)
        # The transaction's own commit reads as ratified inside it.
        p = pending.proposal
        commits = list(held.commits)
        if end_version is None or p.version <= end_version:
            commits.append(RatifiedCommit(p.version, path=p.path, content=p.content))
        return RatifiedCommits(commits, p.version, published=published)

    def published_digests(self, start_version: int, end_version: int) -> dict[int, str]:
        """The SHA-256 the catalog recorded for each version in the range."""
        store: Any = self._tx._catalog._store
        if self._table_id is None:
            return {}
        if hasattr(store, "published_digests"):
            return dict(store.published_digests(self._table_id, start_version, end_version))
        records = store.commit_records(self._table_id, start_version, end_version)
        return {r.version: r.sha256 for r in records if r.sha256}

    def commit(
        self,
        version: int,
        path: str | None = None,
        content: bytes | None = None,
        protocol: str | None = None,
        metadata: str | None = None,
    ) -> str:
        with self._tx._lock:
            self._tx._check_open()
            if self._pending() is not None:
                raise InvalidArgumentError(
                    f"the transaction already commits to {self._name!r} (one commit per table)"
                )
            store = self._tx._catalog._store
            if self._table_id is not None:
                held = store.commits(self._table_id, version, None)
                if version != held.latest_version + 1:
                    # Behind already: the writer checks the winners and proposes again.
                    raise conflict(version, held)
            elif version != 0 or self._create is None:
                raise CatalogError(f"the table {self._name!r} is not registered yet")
            if isinstance(store, Store):
                # Checked now, as any proposal to this catalog (deltalog.catalog.ratification).
                record = None if self._table_id is None else store.table_by_id(self._table_id)
                proposal, _ = prepare(
                    self._location, version, path, content, record, create=self._create
                )
            else:
                # A remote catalog checks the proposals itself when the transaction commits.
                proposal = Proposal(
                    self._table_id,
                    version,
                    path,
                    content,
                    create=self._create,
                    protocol=protocol,
                    metadata=metadata,
                )
            self._tx._pending[self._name] = _Pending(self._name, self._location, proposal)
            return DEFERRED

    def published(self, version: int) -> None:
        if self._table_id is not None:
            self._tx._catalog._store.forget(self._table_id, version)


class CatalogTransaction:
    """Commits to several tables of a :class:`ManagedCatalog` that become visible together:
    :meth:`commit` ratifies all of them in one catalog transaction, or none (see the module
    docs). Used as a context manager, it commits when the block ends and aborts on an
    exception."""

    def __init__(self, catalog: ManagedCatalog) -> None:
        self._catalog = catalog
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        self._state = "open"
        #: The version each table got, once committed (table name → version).
        self.versions: dict[str, int] = {}

    def _check_open(self) -> None:
        if self._state != "open":
            raise InvalidArgumentError(f"the catalog transaction is {self._state}")

    def _key(self, name: Identifier) -> str:
        return self._catalog.delimiter.join(self._catalog._names(name))

    # -- tables ------------------------------------------------------------------------------

    def load_table(self, name: Identifier) -> DeltaTable:
        """The catalog-managed table ``name``; its writes join this transaction."""
        from deltalog.table.delta_table import DeltaTable

        self._check_open()
        key = self._key(name)
        record = self._catalog._record(name)
        if not record.managed:
            raise InvalidArgumentError(
                f"{key!r} is storage-managed (registered): only catalog-managed tables take "
                "part in catalog transactions"
            )
        client = _DeferringClient(self, key, record.location, record.id)
        return DeltaTable(record.location, catalog_client=client)

    def write_table(
        self, name: Identifier, data: Any, mode: WriteMode = "append", **kwargs: Any
    ) -> int:
        """Writes ``data`` to the table ``name`` (created as a catalog-managed table when it
        does not exist) as part of this transaction; returns the version it will have."""
        from deltalog.table.write import write_table

        self._check_open()
        if self._catalog.table_exists(name):
            return write_table(self.load_table(name), data, mode=mode, **kwargs)
        create, _ = self._catalog._new_table(name)
        location = create[2]
        client = _DeferringClient(self, self._key(name), location, None, create=create)
        return write_table(location, data, mode=mode, catalog_client=client, **kwargs)

    def create_table(
        self,
        name: Identifier,
        schema: pa.Schema,
        partition_by: list[str] | None = None,
        configuration: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Creates an empty catalog-managed table as part of this transaction."""
        import pyarrow as pa

        if self._catalog.table_exists(name):
            raise InvalidArgumentError(f"the catalog already has a table {name!r}")
        self.write_table(
            name,
            pa.Table.from_batches([], schema=schema),
            mode="error",
            partition_by=partition_by,
            configuration=configuration,
            **kwargs,
        )

    # -- ending ------------------------------------------------------------------------------

    def commit(self) -> dict[str, int]:
        """Ratifies every commit of the transaction at once, then publishes them. Returns the
        version each table got.

        Raises:
            CommitConflictError: another writer committed to one of the tables since (nothing
                of this transaction is ratified; its staged files are deleted).
            CatalogError: the catalog refused (nothing is ratified).
        """
        with self._lock:
            self._check_open()
            pending = list(self._pending.values())
            try:
                self._catalog._store.ratify_all([p.proposal for p in pending])
            except BaseException:
                self._discard(pending)
                self._state = "aborted"
                raise
            self._state = "committed"
        self.versions = {p.name: p.proposal.version for p in pending}
        self._publish(pending)
        return dict(self.versions)

    def abort(self) -> None:
        """Ends the transaction without ratifying anything (its staged files are deleted)."""
        with self._lock:
            if self._state != "open":
                return
            self._state = "aborted"
            self._discard(list(self._pending.values()))

    def _publish(self, pending: list[_Pending]) -> None:
        """Publishes the new commits ("Publishing Commits"); a failure leaves them for the next
        writer, as after any commit."""
        from deltalog import _native

        for p in pending:
            try:
                client = self._catalog.catalog_client(p.name)
                _native.publish(p.location, p.proposal.version, client)
            except Exception as e:  # the commits stand; publishing is retried later
                _log.warning(
                    "%s: version %s committed, but publishing it failed: %s",
                    p.name,
                    p.proposal.version,
                    e,
                )

    def _discard(self, pending: list[_Pending]) -> None:
        """Deletes the staged files of proposals that were never ratified (no reader reads
        them: the catalog never returned them)."""
        from deltalog import _native

        for p in pending:
            if p.proposal.path is None:
                continue
            staged = f"{p.location}/_delta_log/_staged_commits/{p.proposal.path}"
            try:
                _native.delete_tree(staged)
            except Exception as e:  # a stray staged file is harmless
                _log.warning("could not delete the unratified staged commit %s: %s", staged, e)

    def __enter__(self) -> CatalogTransaction:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
