"""How Spark's tasks reach the version of a table the driver read (reads and writes of
:mod:`deltalog.spark.read.source`, :mod:`deltalog.spark.dml.operations`): the commits held for them
(a
catalog-managed table's ratified commits, or the version 0 a write will create), the snapshot
they open from those without reaching a catalog, and the data files they write to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable


def _storage_options_of(table: DeltaTable) -> dict[str, str] | None:
    return dict(table._storage_options) if table._storage_options else None


#: Ratified commits a task reads a version with: ``(version, staged path, inline content)``.
Held = list[tuple[int, str | None, bytes | None]]


def held_commits(table: DeltaTable) -> Held | None:
    """A catalog-managed table's ratified commits up to the loaded version (possibly none),
    from which tasks open that version without reaching the catalog (:class:`_HeldCommits`);
    None for a table without a catalog."""
    client = table._catalog_client
    if client is None:
        return None
    held = client.get_ratified_commits(None, table.version())
    return [(c.version, c.path, c.content) for c in held.commits]


def task_snapshot(uri: str, version: int, storage: dict[str, str] | None, held: Held | None) -> Any:
    """The table's ``version`` as a task opens it: through :class:`_HeldCommits` when commits
    are held (a catalog-managed table, or commits that exist only in the job), else from
    storage alone."""
    from deltalog import _native

    client = _HeldCommits(held, version) if held is not None else None
    return _native.RawSnapshot.open(uri, version, storage, client)


def write_to_files(
    snapshot: Callable[[], Any],
    batches: Iterator[pa.RecordBatch],
    target_file_size: int | None,
    replace_where: str | None = None,
) -> list[str]:
    """Writes ``batches`` as data files of the snapshot ``snapshot()`` opens (only when there
    is a row to write) with ``write_files``; their ``add`` actions (JSON), none for no rows."""
    from deltalog import _native

    first = next(batches, None)
    if first is None:
        return []

    def chained() -> Iterator[pa.RecordBatch]:
        yield first
        yield from batches

    reader = pa.RecordBatchReader.from_batches(first.schema, chained())
    return list(_native.write_files(snapshot(), reader, target_file_size, replace_where))


class _HeldCommits:
    """A stand-in catalog client answering with fixed ratified commits, so that tasks open a
    version without reaching a catalog: the commits the driver saw of a catalog-managed table,
    or the version 0 a write will create for a table whose log does not exist yet."""

    max_inline_commit_bytes = 0

    def __init__(self, held: list[tuple[int, str | None, bytes | None]], latest: int) -> None:
        self._held = held
        self._latest = latest

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> Any:
        from deltalog.catalog import RatifiedCommit, RatifiedCommits

        commits = [RatifiedCommit(v, path=p, content=c) for v, p, c in self._held]
        return RatifiedCommits(commits, self._latest)

    def commit(self, version: int, **_: Any) -> None:
        raise RuntimeError("tasks take no commits: the driver commits")

    def published(self, version: int) -> None:
        pass
