"""The :class:`~deltalog.catalog.CatalogClient` of a table of a REST catalog
(:class:`RestTableClient`), whose calls are the table-version routes
(:mod:`deltalog.catalog.clients.rest.protocol`), and the store a catalog transaction over a REST
catalog ratifies through (catalogManaged RFC "Commit Protocol", "Publishing Commits")."""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lance_namespace_urllib3_client import models as m

from deltalog.catalog import reports
from deltalog.catalog.clients.rest import protocol as p
from deltalog.catalog.managed import (
    MAX_INLINE_COMMIT_BYTES,
    Proposal,
)
from deltalog.exceptions import (
    CatalogError,
    CatalogThrottledError,
    CommitConflictError,
)
from deltalog.protocol.catalog_client import RatifiedCommit, RatifiedCommits

if TYPE_CHECKING:
    from deltalog.catalog.clients.rest.client import RestCatalog


def _within(
    commits: Sequence[RatifiedCommit], start: int | None, end: int | None
) -> list[RatifiedCommit]:
    """The commits with versions in ``[start, end]`` (open where None)."""
    return [
        c
        for c in commits
        if (start is None or c.version >= start) and (end is None or c.version <= end)
    ]


def _entry(
    names: list[str], version: int, path: str | None, content: bytes | None
) -> dict[str, Any]:
    if content is not None:
        return {
            "manifest_path": p.published_path(version),
            "manifest_size": len(content),
            "metadata": {p.META_INLINE: content.decode()},
        }
    return {"manifest_path": p.STAGED_DIR + str(path)}


def _commit_of(v: m.TableVersion) -> RatifiedCommit | None:
    """The held (unpublished) commit a listed version is, or ``None`` for a published one."""
    metadata = v.metadata or {}
    if metadata.get(p.META_PUBLISHED) == "true":
        return None
    sha256 = metadata.get(p.META_SHA256)
    inline = metadata.get(p.META_INLINE)
    if inline is not None:
        return RatifiedCommit(
            v.version, content=inline.encode(), timestamp=v.timestamp_millis, sha256=sha256
        )
    name = p.staged_name(v.manifest_path)
    if name is None:
        raise CatalogError(f"the catalog listed version {v.version} as {v.manifest_path!r}")
    return RatifiedCommit(v.version, path=name, timestamp=v.timestamp_millis, sha256=sha256)


class _Unreported:
    """The newest version a :class:`RestTableClient` published but has not reported yet."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        self.version: int | None = None


def _report(catalog: RestCatalog, names: list[str], unreported: _Unreported) -> None:
    """Reports what a client published and never got to report (its last commit: the client
    is collected, or the interpreter exits). Best effort: a report is a hint, and the next
    writer's publishing covers the commit anyway."""
    version, unreported.version = unreported.version, None
    if version is None:
        return
    try:
        catalog._forget(names, version, once=True)
    except Exception:  # at exit, nothing is left to tell
        pass


class RestTableClient:
    """The :class:`~deltalog.catalog.CatalogClient` of one catalog-managed table of a
    :class:`RestCatalog`: ratified commits from ``version/list``, ratification by
    ``version/create``; what the client published is reported to the catalog with its next
    ``version/create`` (or by ``version/delete`` when the client is collected or the
    interpreter exits: :mod:`deltalog.catalog.reports`), not by a request of its own per
    commit."""

    max_inline_commit_bytes = MAX_INLINE_COMMIT_BYTES

    def __init__(
        self, catalog: RestCatalog, names: list[str], creating_at: str | None = None
    ) -> None:
        self._catalog = catalog
        self._names = list(names)
        #: The location of the table this client creates (its version 0 not ratified yet).
        self._creating_at = creating_at
        self._lock = threading.Lock()
        #: The catalog's last complete answer (every held commit and the latest version).
        self._last: RatifiedCommits | None = None
        #: After this client ratified version v on top of ``_last``: the commits held up to v,
        #: which publishing v asks for right away (one round trip fewer per commit).
        self._after_commit: RatifiedCommits | None = None
        #: Published, not reported yet: sent with the next commit (one round trip fewer per
        #: commit), else when this client goes away.
        self._unreported = _Unreported()
        self._report_at_exit: weakref.finalize[[Callable[[], None]], RestTableClient] | None = None

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        with self._lock:
            known, self._after_commit = self._after_commit, None
        if known is not None and end_version is not None and end_version <= known.latest_version:
            # Publishing what this client just ratified: the catalog held these commits when it
            # ratified it. One another writer published since is published again harmlessly
            # (publishing never overwrites: "Publishing Commits").
            return RatifiedCommits(_within(known.commits, start_version, end_version), end_version)
        answer = self._catalog._held(self._names)
        with self._lock:
            self._last = answer
        return RatifiedCommits(
            _within(answer.commits, start_version, end_version),
            answer.latest_version,
            published=answer.published,
        )

    def published_digests(self, start_version: int, end_version: int) -> dict[int, str]:
        """The SHA-256 the catalog recorded for each version in ``[start_version,
        end_version]`` (see :class:`~deltalog.catalog.RatifiedCommits`)."""
        return self._catalog._digests(self._names, start_version, end_version)

    def commit(
        self,
        version: int,
        path: str | None = None,
        content: bytes | None = None,
        protocol: str | None = None,
        metadata: str | None = None,
    ) -> None:
        try:
            self._commit(version, path, content)
        except Exception as e:
            if version == 0 and self._creating_at is not None:
                from deltalog.catalog.refused import discard_created_files, refused

                if refused(e):  # a failed creation leaves no files behind
                    discard_created_files(
                        self._creating_at, path, content, self._catalog.storage_options
                    )
            raise

    def _commit(self, version: int, path: str | None, content: bytes | None) -> None:
        # protocol / metadata are not sent: the server reads them from the commit itself.
        with self._lock:
            before, self._after_commit = self._last, None
            reported = self._unreported.version
        try:
            self._catalog._ratify([(self._names, version, path, content)], reported)
            self._reported(reported)
        except CommitConflictError as e:
            self._reported(reported)
            # The answer holds the commits the catalog holds from this version on and the
            # latest version; with those this client knew before it, every held commit (the
            # older ones can only have been published since): what the retry at the next
            # free version publishes after it, without asking again.
            won = e.ratified
            if won is not None and before is not None and before.latest_version == version - 1:
                older = [
                    c
                    for c in before.commits
                    if c.version < version and (reported is None or c.version > reported)
                ]
                newer = [c for c in won.commits if c.version >= version]
                with self._lock:
                    self._last = RatifiedCommits([*older, *newer], won.latest_version)
            raise
        except CatalogThrottledError:
            self._reported(reported)
            # The table holds as many unpublished commits as the catalog allows (writers
            # that died before publishing): publish them ("Publishing Commits"), then retry
            # with the report, which frees them first.
            if not self._publish_held():
                raise
            with self._lock:
                reported = self._unreported.version
            self._catalog._ratify([(self._names, version, path, content)], reported)
            self._reported(reported)
            return
        with self._lock:
            if before is not None and before.latest_version == version - 1:
                # Less what this client reported published (the catalog just forgot them).
                held = [c for c in before.commits if reported is None or c.version > reported]
                mine = RatifiedCommit(version, path=path, content=content)
                self._after_commit = RatifiedCommits([*held, mine], version)

    def _publish_held(self) -> bool:
        """Publishes every ratified commit the catalog holds; whether there were any."""
        from deltalog import _native

        held = self.get_ratified_commits()
        if not held.commits:
            return False
        location = self._catalog._record(self._names).location
        _native.publish(location, held.commits[-1].version, self, self._catalog.storage_options)
        return True

    def _reported(self, version: int | None) -> None:
        """The catalog answered a request reporting ``version`` published."""
        with self._lock:
            if version is not None and self._unreported.version == version:
                self._unreported.version = None

    def published(self, version: int) -> None:
        with self._lock:
            if self._unreported.version is None or version > self._unreported.version:
                self._unreported.version = version
            if self._report_at_exit is None:
                # Sent when this client is collected, else at exit (deltalog.catalog.reports:
                # never from inside a cyclic collection).
                job = functools.partial(_report, self._catalog, self._names, self._unreported)
                self._report_at_exit = weakref.finalize(self, reports.when_collected, job)
                self._report_at_exit.atexit = False
                reports.watch(self)

    def report_unreported(self) -> None:
        """Reports what this client published and has not reported yet (at exit)."""
        _report(self._catalog, self._names, self._unreported)


class _RestStore:
    """The part of a store a :class:`~deltalog.catalog.transaction.CatalogTransaction` uses,
    over a :class:`RestCatalog`: tables are named by their names (a tuple), not by ids."""

    def __init__(self, catalog: RestCatalog) -> None:
        self._catalog = catalog

    def commits(self, table_id: Any, start: int | None, end: int | None) -> RatifiedCommits:
        return self._catalog._held(list(table_id), start, end)

    def published_digests(self, table_id: Any, start: int, end: int) -> dict[int, str]:
        return self._catalog._digests(list(table_id), start, end)

    def ratify_all(self, proposals: Sequence[Proposal]) -> list[Any]:
        entries = []
        for q in proposals:
            if q.table_id is not None:
                names = list(q.table_id)  # type: ignore[call-overload]
            elif q.create is not None:
                names = [*q.create[0], q.create[1]]  # type: ignore[misc]
            else:
                raise CatalogError("a proposal names no table")
            entries.append((names, q.version, q.path, q.content))
        if entries:
            self._catalog._ratify(entries)
        return [tuple(e[0]) for e in entries]

    def forget(self, table_id: Any, version: int) -> int:
        self._catalog._forget(list(table_id), version)
        return 0
