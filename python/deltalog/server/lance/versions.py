"""The table-version routes of deltalog's REST catalog server, which carry Delta's
catalog-managed commit protocol (catalogManaged RFC, ``000_…``; how it rides on the Lance
Namespace routes: :mod:`deltalog.catalog.clients.rest.protocol`):

* ``version/create`` and ``batch-create`` propose commits. Each proposal is checked once, as
  every store checks it (:mod:`deltalog.catalog.ratification`: the reader's parse, the RFC's
  rules for a catalog-managed commit, paths inside the table, files that exist); a commit that
  changes the table's protocol, metadata or clustering domain needs an admin; the catalog
  ratifies each version at most once, in order ("Commit Protocol"), binding it to its
  content's SHA-256. A proposal the catalog already ratified for that version (the same staged
  file, or the same content; its answer was lost) is answered as a success again, never
  ratified twice.
* ``version/list`` lists the table's versions (``0`` to the latest), newest first on request,
  in pages of at most :data:`MAX_PAGE` versions and :data:`MAX_LIST_BYTES` of inline content;
  unpublished commits carry their staged file or inline content, published ones say so.
* ``version/describe`` describes one version (what the catalog recorded of it, also once
  published: how a client whose answer was lost learns whether its commit landed).
* ``version/delete`` forgets published commits, after checking that each ``<v>.json`` holds
  the content ratified for ``v`` ("Publishing Commits"); an admin may also roll the table back
  by deleting its newest unpublished versions, saying so in the request's context
  (``{"delta.rollback": "true"}``: a repair of a table a bad commit damaged, never a side
  effect of forgetting).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lance_namespace_urllib3_client import models as m

from deltalog.catalog import ratification
from deltalog.catalog.clients.rest import protocol as p
from deltalog.catalog.managed import (
    MAX_INLINE_COMMIT_BYTES,
    CommitRecord,
    Proposal,
    TableRecord,
)
from deltalog.exceptions import (
    CatalogError,
    CatalogThrottledError,
    CommitConflictError,
    DeltaError,
    InvalidArgumentError,
)
from deltalog.protocol.catalog_client import RatifiedCommit, RatifiedCommits

if TYPE_CHECKING:
    from deltalog.catalog.managed import ManagedCatalog, Store
    from deltalog.server.auth import Principal
    from deltalog.server.lance.service import Request

_log = logging.getLogger("deltalog.catalog.server")

#: The most versions one page of ``version/list`` holds.
MAX_PAGE = 1000
#: The most inline commit content one page of ``version/list`` carries (a page ends early
#: rather than exceed it).
MAX_LIST_BYTES = 4 * 1024 * 1024


class VersionRoutes:
    """The version routes of :class:`~deltalog.server.lance.service.CatalogService` (a mixin:
    the service provides the catalog, the store, the table lookups and the role checks)."""

    catalog: ManagedCatalog
    store: Store
    storage_options: dict[str, str] | None
    max_staged_bytes: int = ratification.MAX_STAGED_COMMIT_BYTES

    # Provided by CatalogService (a class using this mixin must define them).
    def _managed(self, names: list[str]) -> TableRecord:
        raise NotImplementedError

    def _require(self, principal: Principal, role: str, what: str) -> None:
        raise NotImplementedError

    def _limit(self, value: int | None) -> int | None:
        raise NotImplementedError

    # -- the wire form of a version ----------------------------------------------------------

    @staticmethod
    def _held_version(c: RatifiedCommit) -> m.TableVersion:
        extra = {p.META_SHA256: c.sha256} if c.sha256 else {}
        if c.content is not None:
            return m.TableVersion(
                version=c.version,
                manifest_path=p.published_path(c.version),
                manifest_size=len(c.content),
                timestamp_millis=c.timestamp,
                metadata={p.META_INLINE: c.content.decode(), **extra},
            )
        return m.TableVersion(
            version=c.version,
            manifest_path=p.STAGED_DIR + str(c.path),
            timestamp_millis=c.timestamp,
            metadata=extra or None,
        )

    @staticmethod
    def _published_version(version: int, record: CommitRecord | None) -> m.TableVersion:
        metadata = {p.META_PUBLISHED: "true"}
        if record is not None:
            if record.sha256:
                metadata[p.META_SHA256] = record.sha256
            if record.txn_id:
                metadata[p.META_TXN_ID] = record.txn_id
            if record.staged_path:
                metadata[p.META_STAGED] = record.staged_path
        return m.TableVersion(
            version=version,
            manifest_path=p.published_path(version),
            timestamp_millis=record.ratified_ms if record is not None else None,
            metadata=metadata,
        )

    # -- listing -----------------------------------------------------------------------------

    def list_table_versions(self, r: Request) -> m.ListTableVersionsResponse:
        limit = self._limit(int_query(r.query, "limit")) or MAX_PAGE
        descending = r.query.get("descending", "false").lower() == "true"
        record = self._managed(r.names)
        held = self.store.commits(record.id, None, None)
        latest = held.latest_version
        by_version = {c.version: c for c in held.commits}
        token_text = r.query.get("page_token")
        try:
            token = int(token_text) if token_text else None
        except ValueError as e:
            raise _error(p.INVALID_INPUT, f"not a page token: {token_text!r}") from e
        if descending:
            start = latest if token is None else min(latest, token - 1)
            wanted = range(start, max(start - limit, -1), -1)
        else:
            start = 0 if token is None else max(0, token + 1)
            wanted = range(start, min(start + limit, latest + 1))
        published = [v for v in wanted if v not in by_version]
        records = (
            {
                rec.version: rec
                for rec in self.store.commit_records(record.id, min(published), max(published))
            }
            if published
            else {}
        )
        versions: list[m.TableVersion] = []
        size = 0
        last = None
        for v in wanted:
            commit = by_version.get(v)
            if commit is not None and commit.content is not None:
                size += len(commit.content)
                if versions and size > MAX_LIST_BYTES:
                    break  # the next page starts here
            versions.append(
                self._held_version(commit)
                if commit is not None
                else self._published_version(v, records.get(v))
            )
            last = v
        more = last is not None and (last > 0 if descending else last < latest)
        return m.ListTableVersionsResponse(
            versions=versions,
            page_token=str(last) if more else None,
            context={p.CTX_LATEST_VERSION: str(latest)},
        )

    def describe_table_version(self, r: Request) -> m.DescribeTableVersionResponse:
        body: m.DescribeTableVersionRequest = r.body
        record = self._managed(r.names)
        version = record.latest_version if body.version is None else body.version
        if version < 0 or version > record.latest_version:
            raise _error(p.TABLE_VERSION_NOT_FOUND, f"version {version} does not exist")
        held = self.store.commits(record.id, version, version)
        if held.commits:
            return m.DescribeTableVersionResponse(version=self._held_version(held.commits[0]))
        return m.DescribeTableVersionResponse(
            version=self._published_version(version, self.store.commit_record(record.id, version))
        )

    # -- proposing ---------------------------------------------------------------------------

    def _proposal(
        self,
        principal: Principal,
        names: list[str],
        record: TableRecord,
        version: int,
        manifest_path: str,
        metadata: dict[str, str] | None,
    ) -> Proposal | None:
        """A version/create entry as a checked :class:`Proposal` (governance included), or
        ``None`` when it is the commit the catalog already ratified for that version."""
        inline = (metadata or {}).get(p.META_INLINE)
        path: str | None = None
        content: bytes | None = None
        if inline is not None:
            if manifest_path != p.published_path(version):
                raise _error(
                    p.INVALID_INPUT,
                    f"an inline commit's manifest_path is {p.published_path(version)}",
                )
            content = inline.encode("utf-8")
            if len(content) > MAX_INLINE_COMMIT_BYTES:
                raise too_large(
                    f"an inline commit is at most {MAX_INLINE_COMMIT_BYTES} bytes; this one "
                    f"is {len(content)}: stage it (_delta_log/_staged_commits/) instead"
                )
        else:
            path = p.staged_name(manifest_path)
            if path is None:
                raise _error(
                    p.INVALID_INPUT,
                    f"manifest_path {manifest_path!r} is neither a staged commit "
                    f"({p.STAGED_DIR}<version>.<uuid>.json) nor an inline commit "
                    f"({p.published_path(version)} with metadata[{p.META_INLINE!r}])",
                )
        if version <= record.latest_version:
            if _same_commit(self.store.commit_record(record.id, version), path, content):
                return None  # a replay: ratified already
            held = self.store.commits(record.id, version, None)
            raise _conflict(version, held, names)
        if version != record.latest_version + 1:
            held = self.store.commits(record.id, version, None)
            raise _conflict(version, held, names)
        try:
            proposal, checked = ratification.prepare(
                record.location,
                version,
                path,
                content,
                record,
                storage_options=self.storage_options,
                max_staged_bytes=self.max_staged_bytes,
            )
        except ratification.ProposalTooLargeError as e:
            raise too_large(str(e)) from e
        except InvalidArgumentError as e:
            raise _error(p.INVALID_INPUT, str(e)) from e
        except (DeltaError, OSError) as e:
            raise _error(
                p.SERVICE_UNAVAILABLE, f"cannot read the proposed commit {version}: {e}"
            ) from e
        # Its principal is recorded as the table's last updater (UC TableInfo's updated_by).
        proposal = dataclasses.replace(proposal, principal=principal.name)
        if version > 0 and checked.changes:
            self._require(
                principal,
                "admin",
                f"commit version {version} of {'.'.join(names)}, which changes the table's "
                f"{' and '.join(checked.changes)}",
            )
        return proposal

    def _ratify(self, proposals: list[Proposal], names: list[list[str]]) -> None:
        try:
            self.store.ratify_all(proposals)
        except CommitConflictError as e:
            held = e.ratified if isinstance(e.ratified, RatifiedCommits) else None
            which = names[0]
            for proposal, n in zip(proposals, names, strict=True):
                if held is not None and e.version == proposal.version:
                    which = n
                    break
            raise _conflict(
                e.version if e.version is not None else -1,
                held or RatifiedCommits((), -1),
                which,
            ) from e
        except CatalogThrottledError as e:
            raise _error(p.THROTTLING, str(e)) from e

    def _committed(self, record: TableRecord, version: int) -> m.TableVersion:
        held = self.store.commits(record.id, version, version)
        if held.commits:
            return self._held_version(held.commits[0])
        return self._published_version(version, self.store.commit_record(record.id, version))

    def create_table_version(self, r: Request) -> m.CreateTableVersionResponse:
        body: m.CreateTableVersionRequest = r.body
        record = self._managed(r.names)
        # First: the commits it frees count no more against the table's cap of unpublished
        # commits.
        self.forget_reported(record, body.context)
        proposal = self._proposal(
            r.principal, r.names, record, body.version, body.manifest_path, body.metadata
        )
        if proposal is not None:
            self._ratify([proposal], [r.names])
        return m.CreateTableVersionResponse(version=self._committed(record, body.version))

    def batch_create_table_versions(self, r: Request) -> m.BatchCreateTableVersionsResponse:
        body: m.BatchCreateTableVersionsRequest = r.body
        if not body.entries:
            raise _error(p.INVALID_INPUT, "a batch needs at least one entry")
        proposals: list[Proposal | None] = []
        names, records = [], []
        seen: set[int] = set()
        for entry in body.entries:
            record = self._managed(list(entry.id))
            if record.id in seen:
                raise _error(
                    p.INVALID_INPUT, f"two entries name table {entry.id!r}: one version a table"
                )
            seen.add(record.id)
            proposals.append(
                self._proposal(
                    r.principal,
                    list(entry.id),
                    record,
                    entry.version,
                    entry.manifest_path,
                    entry.metadata,
                )
            )
            names.append(list(entry.id))
            records.append(record)
        fresh = [q for q in proposals if q is not None]
        if fresh and len(fresh) != len(proposals):
            # A batch is ratified whole: part of it ratified before means another batch won.
            i = next(i for i, q in enumerate(proposals) if q is None)
            version = body.entries[i].version
            raise _conflict(version, self.store.commits(records[i].id, version, None), names[i])
        if fresh:
            self._ratify(fresh, names)
        return m.BatchCreateTableVersionsResponse(
            versions=[
                self._committed(rec, e.version)
                for rec, e in zip(records, body.entries, strict=True)
            ]
        )

    # -- forgetting and rolling back ---------------------------------------------------------

    def _published_content(self, record: TableRecord, version: int) -> bytes | None:
        relative = p.published_path(version)[len("_delta_log/") :]
        try:
            return ratification.read_log(
                record.location, relative, self.storage_options, self.max_staged_bytes + 1
            )
        except ratification.ProposalTooLargeError:
            return b""  # larger than any commit the catalog ratifies: not the ratified one
        except InvalidArgumentError as e:
            raise _error(p.INVALID_TABLE_STATE, str(e)) from e
        except (DeltaError, OSError) as e:
            raise _error(p.SERVICE_UNAVAILABLE, f"cannot check the published log: {e}") from e

    def _published_through(
        self, record: TableRecord, held: Sequence[RatifiedCommit], highest: int
    ) -> tuple[int, int | None]:
        """How far (at most ``highest``) the held commits are published, each ``<v>.json``
        checked against the content ratified for ``v``, and the first version whose
        published file differs from it (or ``None``)."""
        published_upto = held[0].version - 1 if held else highest
        for c in held:
            if c.version > highest:
                break
            found = self._published_content(record, c.version)
            if found is None:
                break  # not published yet: neither is any later version ("in order")
            if c.sha256 and ratification.sha256_hex(found) != c.sha256:
                return published_upto, c.version
            published_upto = c.version
        return published_upto, None

    def forget_reported(self, record: TableRecord, context: dict[str, str] | None) -> None:
        """Forgets the commits a writer reports published (``context[CTX_PUBLISHED_THROUGH]``
        of its next ``version/create``: one request fewer per commit than ``version/delete``),
        those whose ``<v>.json`` holds the ratified content; anything else is left as it is
        (a report is a hint: the commit it comes with does not depend on it)."""
        reported = (context or {}).get(p.CTX_PUBLISHED_THROUGH)
        if reported is None:
            return
        try:
            through = int(reported)
        except ValueError as e:
            raise _error(p.INVALID_INPUT, f"{p.CTX_PUBLISHED_THROUGH} is {reported!r}") from e
        through = min(through, record.latest_version)
        held = self.store.commits(record.id, None, through).commits
        if not held:
            return
        from deltalog.server.lance.service import RestError

        try:
            published_upto, _ = self._published_through(record, held, through)
        except RestError as e:
            _log.warning("%s: cannot check published commits: %s", record.location, e)
            return
        if published_upto >= held[0].version:
            self.store.forget(record.id, published_upto)

    def delete_table_versions(self, r: Request) -> m.BatchDeleteTableVersionsResponse:
        """Forgets published commits (each ``<v>.json`` checked against the content ratified
        for ``v``); an admin's range covering the newest unpublished versions rolls them
        back."""
        body: m.BatchDeleteTableVersionsRequest = r.body
        record = self._managed(r.names)
        spans = []
        for span in body.ranges:
            if span.start_version < 0 or span.end_version < -1:
                raise _error(p.INVALID_INPUT, f"invalid version range {span.to_dict()}")
            end = record.latest_version if span.end_version == -1 else span.end_version - 1
            spans.append((span.start_version, min(end, record.latest_version)))

        def requested(v: int) -> bool:
            return any(lo <= v <= hi for lo, hi in spans)

        context = body.context or {}
        rollback = context.get(p.CTX_ROLLBACK) == "true"
        if context.get(p.CTX_REPAIR) == "true":
            self._require(r.principal, "admin", "repair a table's published log")
            return self._repair(record, r.names)
        held = self.store.commits(record.id, None, None).commits
        targets = [c for c in held if requested(c.version)]
        if rollback and spans:
            lowest = min(lo for lo, _ in spans)
            first_held = held[0].version if held else record.latest_version + 1
            if lowest < first_held:
                # A range over published versions: the catalog never rolls them back as a side
                # effect (it used to answer success and change nothing).
                self._require(r.principal, "admin", "roll back a table's published versions")
                if context.get(p.CTX_ROLLBACK_PUBLISHED) != "true":
                    raise _error(
                        p.INVALID_TABLE_STATE,
                        f"version {lowest} of {'.'.join(r.names)} is published: a rollback "
                        "over published versions rewrites the table's history and needs "
                        f"context {{{p.CTX_ROLLBACK_PUBLISHED!r}: 'true'}} as well "
                        '(docs/catalogs.md, "Repairing a table")',
                    )
                if not all(requested(v) for v in range(lowest, record.latest_version + 1)):
                    raise _error(
                        p.INVALID_INPUT,
                        "a rollback covers every version from its first through the latest",
                    )
                rolled = self.rollback(record, lowest - 1, published=True)
                return m.BatchDeleteTableVersionsResponse(deleted_count=len(rolled))
        if not targets:
            return m.BatchDeleteTableVersionsResponse(deleted_count=0)
        highest = targets[-1].version
        published_upto, differs = self._published_through(record, held, highest)
        if published_upto >= highest:
            return m.BatchDeleteTableVersionsResponse(
                deleted_count=self.store.forget(record.id, highest)
            )
        first_unpublished = published_upto + 1
        tail = all(requested(v) for v in range(first_unpublished, record.latest_version + 1))
        if rollback and not _is_admin(r.principal):
            self._require(r.principal, "admin", "roll back a table's ratified commits")
        if rollback and tail:
            # An admin's rollback: the newest unpublished versions are forgotten (a published
            # file that differs from its ratified commit is not the table's: it goes too).
            count = (
                self.store.forget(record.id, published_upto)
                if published_upto >= held[0].version
                else 0
            )
            rolled = self.rollback(record, first_unpublished - 1)
            return m.BatchDeleteTableVersionsResponse(deleted_count=count + len(rolled))
        if differs is not None:
            raise _error(
                p.INVALID_TABLE_STATE,
                f"{p.published_path(differs)} of {'.'.join(r.names)} differs from the commit "
                'the catalog ratified for that version (catalogManaged RFC, "Publishing '
                'Commits": the content of a ratified commit is immutable); the catalog keeps '
                "its commit",
            )
        raise _error(
            p.INVALID_TABLE_STATE,
            f"version {first_unpublished} of {'.'.join(r.names)} is not published yet "
            f"({p.published_path(first_unpublished)} does not hold it): the catalog keeps "
            "it (an admin may roll the table back: version/delete of its newest unpublished "
            f"versions through the latest, with context {{{p.CTX_ROLLBACK!r}: 'true'}})",
        )

    def _repair(self, record: TableRecord, names: list[str]) -> m.BatchDeleteTableVersionsResponse:
        """An admin's repair (:func:`deltalog.catalog.integrity.republish`): nothing forgotten;
        409 naming the versions it could not repair."""
        from deltalog.catalog import integrity

        try:
            repaired, left = integrity.republish(self.store, record, self.storage_options)
        except InvalidArgumentError as e:
            raise _error(p.INVALID_INPUT, str(e)) from e
        if repaired:
            self.catalog.refresh_cached_state(record.id)
        if left:
            raise _error(
                p.INVALID_TABLE_STATE,
                f"{'.'.join(names)}: republished {repaired or 'nothing'}; the catalog has no "
                f"ratified copy left of {[t.version for t in left]} ({left[0].describe()}): "
                "roll the table back to the version before the first of them (version/delete "
                f"with context {p.CTX_ROLLBACK!r} and {p.CTX_ROLLBACK_PUBLISHED!r})",
            )
        return m.BatchDeleteTableVersionsResponse(deleted_count=0)

    def rollback(self, record: TableRecord, version: int, published: bool = False) -> list[int]:
        """Rolls ``record`` back to ``version`` (its newer, unpublished commits forgotten);
        published files of the forgotten versions are deleted where the storage is local (they
        are not the table's: readers ignore them, and they would block the next publisher).
        With ``published``, published versions go too, their files moved aside
        (:func:`deltalog.catalog.integrity.quarantine_after`)."""
        from deltalog.catalog import integrity

        if published:
            try:
                integrity.require_local(record.location, "rolling back published versions")
            except InvalidArgumentError as e:
                raise _error(p.INVALID_INPUT, str(e)) from e
        try:
            rolled = self.store.rollback(record.id, version, published=published)
        except CatalogError as e:
            raise _error(p.INVALID_TABLE_STATE, str(e)) from e
        if published and rolled:
            moved = integrity.quarantine_after(record.location, version)
            _log.warning("rollback of %s to %d: moved %s aside", record.name, version, moved)
            self.catalog.refresh_cached_state(record.id)
            return rolled
        local = (
            record.location[len("file://") :]
            if record.location.startswith("file://")
            else (record.location)
        )
        if "://" not in local:
            for v in rolled:
                stray = os.path.join(local, p.published_path(v))
                try:
                    os.unlink(stray)
                    _log.warning("rollback of %s: deleted %s", record.name, stray)
                except FileNotFoundError:
                    pass
        self.catalog.refresh_cached_state(record.id)
        return rolled


def _is_admin(principal: Principal) -> bool:
    from deltalog.server.auth import allows

    return allows(principal.role, "admin")


def _same_commit(record: CommitRecord | None, path: str | None, content: bytes | None) -> bool:
    """Whether a proposal is the commit ``record`` says the catalog ratified (the UC Delta
    API's rule: the same version and file name is the same commit; an inline one by its
    content)."""
    if record is None:
        return False
    if path is not None:
        return record.staged_path == path
    return (
        content is not None
        and record.sha256 is not None
        and record.sha256 == ratification.sha256_hex(content)
    )


def _error(code: int, message: str, context: dict[str, str] | None = None) -> Exception:
    from deltalog.server.lance.service import RestError

    return RestError(code, message, context)


def too_large(message: str) -> Exception:
    """A 413 answer (the request is larger than the server takes)."""
    from deltalog.server.lance.bodies import PayloadTooLarge

    return PayloadTooLarge(message)


def _conflict(version: int, held: RatifiedCommits, names: list[str]) -> Exception:
    import json

    return _error(
        p.CONCURRENT_MODIFICATION,
        f"version {version} of {'.'.join(names)} cannot be ratified: the latest ratified "
        f"version is {held.latest_version}",
        context={**p.ratified_to_wire(held), "delta.table": json.dumps(names)},
    )


def int_query(query: dict[str, str], key: str) -> int | None:
    """The integer query parameter ``key`` (``None`` when absent or empty; 400 otherwise)."""
    text = query.get(key)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError as e:
        raise _error(p.INVALID_INPUT, f"{key} is not an integer: {text!r}") from e


__all__: Sequence[str] = ["MAX_LIST_BYTES", "MAX_PAGE", "VersionRoutes", "too_large"]
