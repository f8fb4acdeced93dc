"""Distributed writes: data files written anywhere, committed once.

``write_files`` writes parquet data files of a table (its schema, partitioning, column mapping,
statistics and row rules) and returns their ``add`` actions without committing, so Spark tasks
or any worker can write while one driver commits. ``DeltaTable.transaction`` starts a
transaction from the loaded version that commits actions produced anywhere as one version,
under the same conflict rules as deltalog's own writes (spec "Creation of New Log Entries").

>>> adds = dl.write_files(table, batch)                 # on each worker
>>> txn = table.transaction(operation="WRITE")          # on the driver
>>> txn.add_actions(adds_from_all_workers)
>>> txn.commit()
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from deltalog import _native
from deltalog._interrupts import after_commit
from deltalog.write.writer import check_snapshot_writable

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import CommitProperties

#: Actions a transaction may carry (spec "Actions"); `commitInfo` is written by deltalog.
_ACTIONS = frozenset({"add", "remove", "cdc", "txn", "metaData", "protocol", "domainMetadata"})


def write_files(
    table: DeltaTable, data: Any, target_file_size: int | None = None
) -> list[dict[str, Any]]:
    """Writes ``data`` as data files of ``table``'s loaded version, without committing.

    Returns one ``add`` action per file (``{"add": {...}}``, with statistics), picklable and
    JSON-serializable, for :meth:`Transaction.add_actions`. The data must fit the table's
    schema (new columns are refused: change the schema with a write's ``schema_mode`` first).
    Files that are never committed are orphans a later VACUUM removes; they are never read.
    ``target_file_size`` as for :func:`deltalog.write_table`.
    """
    from deltalog.write.writer import _reader, _target_file_size

    check_snapshot_writable(table._raw)
    texts = _native.write_files(table._raw, _reader(data), _target_file_size(target_file_size))
    return [json.loads(t) for t in texts]


class Transaction:
    """Actions committed atomically as the version after the one the table had when the
    transaction started. Made by :meth:`DeltaTable.transaction`."""

    def __init__(self, table: DeltaTable, operation: str, parameters: Mapping[str, Any]) -> None:
        check_snapshot_writable(table._raw)
        self._table = table
        self._read_version = table.version()
        self._operation = operation
        self._parameters = dict(parameters)
        self._actions: list[dict[str, Any]] = []
        self._removed: set[str] = set()
        self._read: set[str] = set()
        self._committed: int | None = None

    @property
    def read_version(self) -> int:
        """The version the transaction started from."""
        return self._read_version

    def add_actions(self, actions: Iterable[Mapping[str, Any] | str]) -> Transaction:
        """Adds actions (``{"add": {...}}`` dicts as :func:`write_files` returns them, or their
        JSON text). Each must hold exactly one action of a known kind."""
        for action in actions:
            parsed = json.loads(action) if isinstance(action, str) else dict(action)
            kinds = [k for k, v in parsed.items() if v is not None]
            if len(kinds) != 1 or kinds[0] not in _ACTIONS:
                raise ValueError(
                    f"an action must hold exactly one of {sorted(_ACTIONS)}: {parsed!r}"
                )
            self._actions.append(parsed)
        return self

    def remove_files(self, paths: Iterable[str]) -> Transaction:
        """Removes active files of the read version (paths as :meth:`DeltaTable.files` gives
        them); they stay readable by time travel until vacuumed."""
        wanted = set(paths)
        adds = self._table.get_add_actions()
        known = set(adds.column("path").to_pylist())
        missing = sorted(wanted - known)
        if missing:
            raise ValueError(f"not active files of version {self._read_version}: {missing}")
        self._removed |= wanted
        return self

    def read_files(self, paths: Iterable[str]) -> Transaction:
        """Records files of the read version the transaction's actions depend on besides those
        it removes (URI-decoded paths, e.g. files a predicate scanned and found no match in):
        a concurrent commit that removes or changes one conflicts with this transaction."""
        self._read |= set(paths)
        return self

    def commit(self, commit_properties: CommitProperties | None = None) -> int:
        """Commits the actions as one new version and returns it.

        A transaction that only adds files is a blind append and commutes with concurrent
        writers; one that removes files conflicts with concurrent changes to them, and one that
        changes metadata or protocol conflicts with any concurrent data change
        (``CommitConflictError``, nothing committed).
        """
        from deltalog.write.writer import CommitProperties

        if self._committed is not None:
            raise ValueError(f"the transaction already committed version {self._committed}")
        props = commit_properties or CommitProperties()
        app = props.app_transaction()
        removed = self._removed
        actions = [json.dumps(a) for a in self._actions]
        if removed:
            raw_removes = _native.remove_actions(self._table._raw, sorted(removed))
            actions.extend(raw_removes)
        changes_table = any(("metaData" in a or "protocol" in a) for a in self._actions)
        removes = bool(removed) or any("remove" in a for a in self._actions)
        blind = not changes_table and not removes
        read_files = None
        if (removes or self._read) and not changes_table:
            read_files = sorted(
                removed
                | self._read
                | {unquote(a["remove"]["path"]) for a in self._actions if "remove" in a}
            )
            blind = False
        version = _native.commit_actions(
            self._table.table_uri,
            self._read_version,
            self._operation,
            actions,
            json.dumps(self._parameters, default=str),
            blind,
            read_files,
            app,
            props.commit_info_json(),
            self._table._storage_options,
            self._table._raw,
        )
        self._committed = version
        with after_commit(version):
            self._table.update_incremental()
        return version
