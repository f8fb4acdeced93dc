"""The :class:`~deltalog.catalog.CatalogClient` of one catalog-managed table of a Unity
Catalog (:class:`~deltalog.catalog.clients.unity.client.UnityCatalog`): deltalog's commits over the
Delta API's ``loadTable`` / ``updateTable`` (catalogManaged RFC, ``000_…``, "Commit Protocol";
the module docs of :mod:`deltalog.catalog.clients.unity.client` say how)."""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from deltalog.catalog import reports
from deltalog.catalog.clients.unity.transport import NoAnswer, UcConflict, path as uc_path
from deltalog.exceptions import (
    CatalogError,
    CatalogThrottledError,
    CommitConflictError,
    CommitOutcomeUnknownError,
)
from deltalog.protocol.catalog_client import RatifiedCommit, RatifiedCommits
from deltalog.protocol.unity import delta_api

if TYPE_CHECKING:
    from deltalog.catalog.clients.unity.client import UnityCatalog

_log = logging.getLogger("deltalog.catalog.clients.unity")


class _Unreported:
    """The newest version a :class:`UnityTableClient` published but has not reported."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        self.version: int | None = None


def _backfilled(version: int) -> dict[str, Any]:
    return {"action": "set-latest-backfilled-version", "latest-published-version": version}


def _update_table(
    catalog: UnityCatalog,
    schema: str,
    table: str,
    table_uuid: str,
    what: str,
    updates: list[dict[str, Any]],
) -> delta_api.DeltaLoadTableResponse:
    """``updateTable`` of ``schema.table`` (asserting its UUID) with ``updates``."""
    request = delta_api.DeltaUpdateTableRequest.model_validate(
        {
            "requirements": [{"type": "assert-table-uuid", "uuid": table_uuid}],
            "updates": updates,
        }
    )
    return catalog.transport.request(
        what,
        "POST",
        uc_path("delta", "v1", "catalogs", catalog.catalog, "schemas", schema, "tables", table),
        body=request,
        answer=delta_api.DeltaLoadTableResponse,
        idempotent=False,
    )


def _report(
    catalog: UnityCatalog, schema: str, table: str, table_uuid: str, unreported: _Unreported
) -> None:
    """Reports what a client published and never got to report (its last commit: the client
    is collected, or the interpreter exits). Best effort: the next writer's report covers it."""
    version, unreported.version = unreported.version, None
    if version is None:
        return
    what = f"report version {version} of {schema}.{table} published"
    try:
        _update_table(catalog, schema, table, table_uuid, what, [_backfilled(version)])
    except Exception:  # at exit, nothing is left to tell
        pass


def _local(location: str) -> str | None:
    from deltalog.catalog.clients.unity.client import _local as local

    return local(location)


class UnityTableClient:
    """The :class:`~deltalog.catalog.CatalogClient` of one catalog-managed table of a
    :class:`UnityCatalog` (see the module docs)."""

    #: UC commits are files: deltalog stages every commit.
    max_inline_commit_bytes = 0

    def __init__(
        self,
        catalog: UnityCatalog,
        schema: str,
        table: str,
        table_uuid: str,
        location: str,
        storage_options: dict[str, str] | None,
        creating: bool = False,
    ) -> None:
        self.catalog = catalog
        self.schema = schema
        self.table = table
        #: The table's id (``io.unitycatalog.tableId``; a new table's version 0 carries it).
        self.table_uuid = table_uuid
        self.location = location
        self.storage_options = storage_options
        self._creating = creating
        self._pending: RatifiedCommit | None = None
        self._primed: RatifiedCommits | None = None
        self._after_commit: RatifiedCommits | None = None
        self._lock = threading.Lock()
        #: Published, not reported yet: ``set-latest-backfilled-version`` goes in the same
        #: ``updateTable`` as the next ``add-commit`` (one round trip fewer per commit), else
        #: on its own when this client goes away.
        self._unreported = _Unreported()
        self._report_at_exit: weakref.finalize[[Callable[[], None]], UnityTableClient] | None = None

    @property
    def name(self) -> str:
        return f"{self.catalog.catalog}.{self.schema}.{self.table}"

    # -- reading -----------------------------------------------------------------------------

    @staticmethod
    def _commits(loaded: delta_api.DeltaLoadTableResponse) -> RatifiedCommits:
        commits = sorted(
            (
                RatifiedCommit(c.version, path=c.file_name, timestamp=c.timestamp)
                for c in loaded.commits or []
            ),
            key=lambda c: c.version,
        )
        latest = loaded.latest_table_version
        if latest is None:
            latest = commits[-1].version if commits else -1
        return RatifiedCommits(commits, latest)

    def prime(self, loaded: delta_api.DeltaLoadTableResponse) -> None:
        """Takes a ``loadTable`` answer just received as the next answer of
        :meth:`get_ratified_commits` (the table is opened without asking twice)."""
        with self._lock:
            self._primed = self._commits(loaded)

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        if self._creating:
            pending = [self._pending] if self._pending is not None else []
            return RatifiedCommits(pending, 0 if pending else -1)
        with self._lock:
            held, self._primed = self._primed, None
            known, self._after_commit = self._after_commit, None
        if held is None and known is not None and end_version is not None:
            if end_version <= known.latest_version:
                held = known  # publishing what this client just ratified
        if held is None:
            held = self._commits(self.catalog.load_response(self.schema, self.table))
        lo = -1 if start_version is None else start_version
        hi = 2**62 if end_version is None else end_version
        return RatifiedCommits(
            [c for c in held.commits if lo <= c.version <= hi], held.latest_version
        )

    # -- committing --------------------------------------------------------------------------

    def _staged(self, name: str) -> tuple[bytes, int]:
        """A staged commit's bytes and modification time (ms)."""
        from deltalog import _native

        local = _local(self.location)
        if local is not None:
            path = os.path.join(local, "_delta_log", "_staged_commits", name)
            with open(path, "rb") as f:
                body = f.read()
            return body, int(os.stat(path).st_mtime * 1000)
        found = _native.read_log_file(
            self.location, f"_staged_commits/{name}", self.storage_options
        )
        if found is None:
            raise CatalogError(f"the staged commit {name} of {self.name} is missing")
        return bytes(found), int(time.time() * 1000)

    def _delta_commit(self, version: int, name: str) -> dict[str, Any]:
        body, mtime = self._staged(name)
        try:
            first = json.loads(body.split(b"\n", 1)[0])
            ict = int(first["commitInfo"]["inCommitTimestamp"])
        except (ValueError, KeyError, TypeError) as e:
            raise CatalogError(
                f"the staged commit {name} of {self.name} has no commitInfo.inCommitTimestamp "
                "first: a UC commit needs it"
            ) from e
        return {
            "version": version,
            "timestamp": ict,
            "file-name": name,
            "file-size": len(body),
            "file-modification-timestamp": mtime,
        }

    def _update(self, what: str, updates: list[dict[str, Any]]) -> delta_api.DeltaLoadTableResponse:
        return _update_table(self.catalog, self.schema, self.table, self.table_uuid, what, updates)

    def commit(
        self,
        version: int,
        path: str | None = None,
        content: bytes | None = None,
        protocol: str | None = None,
        metadata: str | None = None,
    ) -> None:
        if path is None:
            raise CatalogError(f"{self.name}: a UC commit is a staged file, not inline content")
        if self._creating:
            try:
                self._create(version, path, metadata)
            except Exception as e:
                from deltalog.catalog.refused import discard_created_files, refused

                if refused(e):  # a failed creation leaves no files behind
                    discard_created_files(
                        self.location,
                        path,
                        None,
                        self.storage_options,
                        published=self._pending is not None,  # published before createTable
                    )
                raise
            return
        commit = self._delta_commit(version, path)
        what = f"commit version {version} of {self.name}"
        try:
            self._add(what, commit)
        except CatalogThrottledError:
            # Too many unpublished commits (writers that died before publishing): publish
            # them ("Publishing Commits"), then try once more.
            if not self._publish_held():
                raise
            self._add(what, commit)

    def _add(self, what: str, commit: dict[str, Any]) -> None:
        version = commit["version"]
        last: Exception | None = None
        with self._lock:
            reported = self._unreported.version
        updates = [{"action": "add-commit", "commit": commit}]
        if reported is not None:
            # Reported first: what it frees counts no more against the unpublished cap.
            updates.insert(0, _backfilled(reported))
        for attempt in range(1 + self.catalog.transport.retries):
            try:
                answer = self._update(what, updates)
                self._reported(reported)
                # The answer is loadTable's view with this commit: publishing it asks for the
                # commits up to it right away (one round trip fewer per commit).
                with self._lock:
                    self._after_commit = self._commits(answer)
                return
            except UcConflict as e:
                self._reported(reported)  # the server answered: it took the report
                if e.kind == "UpdateRequirementConflictException":
                    raise CatalogError(
                        f"{what}: the table is no longer the one loaded (its UUID changed: it was "
                        f"dropped and created again): {e}"
                    ) from e
                if attempt > 0 and self._landed(version, commit["file-name"]):
                    return  # the first attempt, whose answer was lost, won
                raise CommitConflictError(
                    f"{what}: another commit won the version ({e})",
                    version=version,
                    reason="another commit won the version",
                    ratified=self.get_ratified_commits(version, None),
                ) from e
            except NoAnswer as e:
                last = e
                time.sleep(0.05 * 2**attempt)
        landed = None
        try:
            landed = self._landed(version, commit["file-name"])
        except CatalogError:
            pass
        if landed:
            return
        raise CommitOutcomeUnknownError(
            f"{what}: the catalog at {self.catalog.uri} did not answer, and could not say "
            f"whether it ratified the commit ({last}); reload the table to see whether version "
            f"{version} is this commit",
            table=self.name,
            version=version,
        ) from last

    def _landed(self, version: int, file_name: str) -> bool | None:
        """Whether the catalog ratified ``file_name`` as ``version`` (``None``: published
        already, so the catalog no longer says which file it was)."""
        held = self.get_ratified_commits(version, version)
        if held.latest_version < version:
            return False
        if held.commits:
            return held.commits[0].path == file_name
        return None

    def _publish_held(self) -> bool:
        from deltalog import _native

        held = self.get_ratified_commits()
        if not held.commits:
            return False
        _native.publish(self.location, held.commits[-1].version, self, self.storage_options)
        return True

    def _create(self, version: int, path: str, metadata: str | None) -> None:
        """Version 0 of a new table: published at the staging location, then ``createTable``
        (the Delta API's managed-table creation)."""
        from deltalog import _native
        from deltalog.catalog.clients.unity.columns import to_delta_api

        if version != 0 or metadata is None:
            raise CatalogError(f"{self.name} is not created yet (version {version})")
        commit = self._delta_commit(0, path)
        self._pending = RatifiedCommit(0, path=path)
        _native.publish(self.location, 0, self, self.storage_options)
        body, _ = self._staged(path)
        protocol: dict[str, Any] = {}
        for line in body.splitlines():
            action = json.loads(line) if line.strip() else {}
            if "protocol" in action:
                p = action["protocol"]
                protocol = {
                    "min-reader-version": p["minReaderVersion"],
                    "min-writer-version": p["minWriterVersion"],
                    **({"reader-features": p["readerFeatures"]} if "readerFeatures" in p else {}),
                    **({"writer-features": p["writerFeatures"]} if "writerFeatures" in p else {}),
                }
        meta = json.loads(metadata)
        location = self.location if "://" in self.location else "file://" + self.location
        request = delta_api.DeltaCreateTableRequest.model_validate(
            {
                "name": self.table,
                "location": location,
                "table-type": "MANAGED",
                "columns": to_delta_api(json.loads(meta["schemaString"])),
                "partition-columns": list(meta.get("partitionColumns") or []),
                "protocol": protocol,
                "properties": dict(meta.get("configuration") or {}),
                "last-commit-timestamp-ms": commit["timestamp"],
                **({"comment": meta["description"]} if meta.get("description") else {}),
            },
        )
        self.catalog.transport.request(
            f"create table {self.name}",
            "POST",
            uc_path(
                "delta", "v1", "catalogs", self.catalog.catalog, "schemas", self.schema, "tables"
            ),
            body=request,
            answer=delta_api.DeltaLoadTableResponse,
            idempotent=False,
        )
        self._creating, self._pending = False, None

    def _reported(self, version: int | None) -> None:
        """The catalog answered a request reporting ``version`` published."""
        with self._lock:
            if version is not None and self._unreported.version == version:
                self._unreported.version = None

    def published(self, version: int) -> None:
        if self._creating:
            return  # version 0 of a new table: published before createTable
        # Reported with the next add-commit, or when this client goes away.
        with self._lock:
            if self._unreported.version is None or version > self._unreported.version:
                self._unreported.version = version
            if self._report_at_exit is None:
                # Sent when this client is collected, else at exit (deltalog.catalog.reports:
                # never from inside a cyclic collection).
                job = functools.partial(
                    _report,
                    self.catalog,
                    self.schema,
                    self.table,
                    self.table_uuid,
                    self._unreported,
                )
                self._report_at_exit = weakref.finalize(self, reports.when_collected, job)
                self._report_at_exit.atexit = False
                reports.watch(self)

    def report_unreported(self) -> None:
        """Reports what this client published and has not reported yet (at exit)."""
        _report(self.catalog, self.schema, self.table, self.table_uuid, self._unreported)
