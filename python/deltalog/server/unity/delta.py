"""Unity Catalog's Delta API v1 (``../shared/spec/unitycatalog-delta-api-2026-08.yaml``) over
deltalog's catalog: how Delta engines (Delta Spark 4.3+, Delta Kernel, delta-kernel-rs, DuckDB's
``unity_catalog`` extension) load and commit the catalog-managed tables deltalog manages
(catalogManaged RFC, ``000_…``).

* ``loadTable`` answers the table's metadata, its ratified commits not yet published, newest
  first and contiguous up to ``latest-table-version`` (always given, ``-1``-free: a table
  always has version 0), with an etag. UC commits are files: a commit deltalog ratified
  *inline* (its content held by the catalog) is published first (``_delta_log/<v>.json``,
  with the staged commits before it, in order: "Publishing Commits"), so that every commit
  shown is a file an engine can read.
* ``updateTable`` checks ``assert-table-uuid`` and ``assert-etag`` (409
  ``UpdateRequirementConflictException``), takes ``add-commit`` for the next version only
  (409 ``CommitVersionConflictException``) through the same ratification as the Lance routes
  (:meth:`~deltalog.server.lance.versions.VersionRoutes._proposal`: the staged file read and
  checked, governance from its content), answers a replay of an accepted commit (same version
  and file name) as a success, and applies ``set-latest-backfilled-version`` by forgetting
  published commits once each ``<v>.json`` is checked to hold the ratified content. Updates
  that change the table's definition (``set-properties``, ``remove-properties``,
  ``set-columns``, ``set-table-comment``, ``set-protocol``, ``set-domain-metadata``,
  ``remove-domain-metadata``, ``set-partition-columns``) need an admin and ride with the
  ``add-commit`` whose content makes the change: the commit is the truth, the catalog's view is
  read from it.
* ``createStagingTable`` allocates a table (UUID, location) whose version 0 the engine writes
  as ``_delta_log/00000000000000000000.json``; ``createTable`` ratifies that file as version 0
  (a ``MANAGED`` table) or registers an ``EXTERNAL`` one.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import pydantic

from deltalog.catalog.clients.unity.errors import UcError
from deltalog.protocol.unity import delta_api
from deltalog.server.unity import views
from deltalog.server.unity.catalogs import UcRequest, UnityCatalogs, model
from deltalog.server.unity.lifecycle import TableLifecycle

if TYPE_CHECKING:
    from deltalog.catalog.managed import TableRecord

_log = logging.getLogger("deltalog.catalog.server")

#: The Delta API version deltalog serves, and its endpoints (``getConfig``).
PROTOCOL_VERSION = "1.0"
ENDPOINTS = (
    "POST /v1/catalogs/{catalog}/schemas/{schema}/staging-tables",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables",
    "GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "DELETE /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "HEAD /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/rename",
    "GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/credentials",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/metrics",
    "GET /v1/staging-tables/{table_id}/credentials",
    "GET /v1/temporary-path-credentials",
)

#: Updates that change the table's definition: admin only, with the commit that makes them.
GOVERNED = (
    "set-properties",
    "remove-properties",
    "set-columns",
    "set-table-comment",
    "set-protocol",
    "set-domain-metadata",
    "remove-domain-metadata",
    "set-partition-columns",
)

#: The update models by action, and the requirement models by type.
#: (``DeltaTableUpdate`` / ``DeltaTableRequirement``: their discriminator mappings.)
_UPDATES: dict[str, type[pydantic.BaseModel]] = {
    "add-commit": delta_api.DeltaAddCommitUpdate,
    "set-latest-backfilled-version": delta_api.DeltaSetLatestBackfilledVersionUpdate,
    "set-properties": delta_api.DeltaSetPropertiesUpdate,
    "remove-properties": delta_api.DeltaRemovePropertiesUpdate,
    "set-columns": delta_api.DeltaSetSchemaUpdate,
    "set-table-comment": delta_api.DeltaSetTableCommentUpdate,
    "set-protocol": delta_api.DeltaSetProtocolUpdate,
    "set-domain-metadata": delta_api.DeltaSetDomainMetadataUpdate,
    "remove-domain-metadata": delta_api.DeltaRemoveDomainMetadataUpdate,
    "set-partition-columns": delta_api.DeltaSetPartitionColumnsUpdate,
    "update-metadata-snapshot-version": delta_api.DeltaUpdateSnapshotVersionUpdate,
}
_REQUIREMENTS: dict[str, type[pydantic.BaseModel]] = {
    "assert-table-uuid": delta_api.DeltaAssertTableUUID,
    "assert-etag": delta_api.DeltaAssertEtag,
}

#: How often ``loadTable`` reads again when a commit lands between its reads.
_LOAD_ATTEMPTS = 8


def _by_kind(
    items: Any, key: str, models: dict[str, type[pydantic.BaseModel]], what: str
) -> dict[str, Any]:
    """A request's requirements / updates, each validated by its model, at most one of each."""
    if not isinstance(items, list) or not items:
        raise UcError("BadRequestException", f"{what} must be a non-empty array")
    found: dict[str, Any] = {}
    for item in items:
        kind = item.get(key) if isinstance(item, dict) else None
        if kind not in models:
            raise UcError("BadRequestException", f"unknown {what[:-1]} {kind!r}")
        if kind in found:
            raise UcError("BadRequestException", f"at most one {kind} per request")
        found[kind] = model(models[kind], item)
    return found


class DeltaApi(TableLifecycle):
    """The Delta API's operations (see the module docs; creating, dropping, renaming and
    credentials: :class:`~deltalog.server.unity.lifecycle.TableLifecycle`)."""

    def __init__(self, catalogs: UnityCatalogs) -> None:
        self.catalogs = catalogs
        self.service = catalogs.service
        self.store = catalogs.store

    # -- configuration -----------------------------------------------------------------------

    def get_config(self, r: UcRequest) -> dict[str, Any]:
        catalog = r.query.get("catalog")
        if not catalog:
            raise UcError("InvalidParameterValueException", "the catalog parameter is required")
        self.catalogs.catalog_id(catalog)
        versions = r.query.get("protocol-versions")
        if not versions:
            raise UcError("InvalidParameterValueException", "protocol-versions is required")
        majors = set()
        for v in versions.split(","):
            major, _, _minor = v.strip().partition(".")
            if not major.isdigit():
                raise UcError("InvalidParameterValueException", f"not a version: {v!r}")
            majors.add(int(major))
        if 1 not in majors:
            raise UcError(
                "InvalidParameterValueException",
                f"the server speaks protocol {PROTOCOL_VERSION}; the client offers {versions}",
            )
        return {"endpoints": list(ENDPOINTS), "protocol-version": PROTOCOL_VERSION}

    # -- loading -----------------------------------------------------------------------------

    def _names(self, r: UcRequest) -> list[str]:
        return [r.params["catalog"], r.params["schema"], r.params["table"]]

    def _record(self, r: UcRequest) -> TableRecord:
        catalog, schema, name = self._names(r)
        return self.catalogs.table(catalog, schema, name)

    def _publish_inline(self, record: TableRecord) -> None:
        """Publishes the held commits through the newest inline one (a UC engine reads commit
        files only)."""
        from deltalog import _native
        from deltalog.catalog.managed import TableCatalogClient

        held = self.store.commits(record.id, None, None).commits
        inline = [c.version for c in held if c.content is not None]
        if inline:
            client = TableCatalogClient(self.store, record.id)
            _native.publish(record.location, inline[-1], client, self.service.storage_options)

    def _staged_file(self, record: TableRecord, name: str) -> tuple[int, int]:
        """(size, modification time in ms) of a staged commit file; (0, 0) when it is gone (a
        damaged table: the catalog still answers, and a reader fails on the file, naming it)."""
        location = record.location
        if "://" not in location or location.startswith("file:"):
            path = os.path.join(
                location.removeprefix("file://"), "_delta_log", "_staged_commits", name
            )
            try:
                info = os.stat(path)
            except FileNotFoundError:
                return 0, 0
            return info.st_size, int(info.st_mtime * 1000)
        from deltalog.catalog import ratification

        body = ratification.read_log(
            location, f"_staged_commits/{name}", self.service.storage_options
        )
        return (len(body) if body is not None else 0), 0

    def load(self, record: TableRecord) -> dict[str, Any]:
        """The ``DeltaLoadTableResponse`` of a table."""
        if not record.managed:
            return {"metadata": views.table_metadata(self.service, record)}
        self._publish_inline(record)
        for _ in range(_LOAD_ATTEMPTS):
            held = self.store.commits(record.id, None, None)
            fresh = self.store.table_by_id(record.id)
            if fresh is None:
                raise UcError("NoSuchTableException", f"table {record.name!r} was dropped")
            if fresh.latest_version != held.latest_version:
                continue  # a commit landed between the two reads
            if any(c.content is not None for c in held.commits):
                self._publish_inline(fresh)
                continue
            records = (
                {
                    c.version: c
                    for c in self.store.commit_records(
                        record.id, held.commits[0].version, held.commits[-1].version
                    )
                }
                if held.commits
                else {}
            )
            commits = []
            for c in reversed(held.commits):
                assert c.path is not None
                size, mtime = self._staged_file(fresh, c.path)
                ict = records[c.version].ict if c.version in records else None
                commits.append(
                    {
                        "version": c.version,
                        "timestamp": ict if ict is not None else (c.timestamp or 0),
                        "file-name": c.path,
                        "file-size": size,
                        "file-modification-timestamp": mtime or (c.timestamp or 0),
                    }
                )
            return {
                "metadata": views.table_metadata(self.service, fresh),
                "commits": commits,
                "latest-table-version": held.latest_version,
            }
        raise UcError(
            "TooManyRequestsException",
            f"table {record.name!r} is committed to faster than it can be loaded; retry",
        )

    def load_table(self, r: UcRequest) -> dict[str, Any]:
        record = self._record(r)
        if record.managed:
            # A UC engine reads the published commits itself: a table whose published log is
            # not what the catalog ratified is refused, not handed out (it would read the
            # changed files as the table; deltalog.catalog.integrity).
            from deltalog.catalog import integrity

            tampered = integrity.check_published(self.store, record, self.service.storage_options)
            if tampered is not None:
                raise UcError(
                    "InternalServerErrorException",
                    f"table {'.'.join(self._names(r))}: {tampered.describe()}",
                )
        return self.load(record)

    def table_exists(self, r: UcRequest) -> None:
        self._record(r)

    # -- updating ----------------------------------------------------------------------------

    def update_table(self, r: UcRequest) -> dict[str, Any]:
        body = r.body if isinstance(r.body, dict) else None
        if body is None:
            raise UcError("BadRequestException", "the request body must be a JSON object")
        unknown = sorted(set(body) - {"requirements", "updates"})
        if unknown:
            raise UcError("BadRequestException", f"unknown fields: {', '.join(unknown)}")
        requirements = _by_kind(body.get("requirements"), "type", _REQUIREMENTS, "requirements")
        updates = _by_kind(body.get("updates"), "action", _UPDATES, "updates")
        if "assert-table-uuid" not in requirements:
            raise UcError("BadRequestException", "an assert-table-uuid requirement is required")
        names = self._names(r)
        record = self._record(r)
        uuid = self.store.table_uuid(record.id) if record.uuid is None else record.uuid
        if str(requirements["assert-table-uuid"].uuid).lower() != uuid:
            raise UcError(
                "UpdateRequirementConflictException",
                f"table {'.'.join(names)} has UUID {uuid}, not "
                f"{requirements['assert-table-uuid'].uuid} (it was dropped and created again)",
            )
        governed = [a for a in updates if a in GOVERNED]
        add = updates.get("add-commit")
        if governed:
            self.catalogs.require(
                r.principal, "admin", f"change the table's definition ({', '.join(governed)})"
            )
            if add is None:
                raise UcError(
                    "BadRequestException",
                    f"{', '.join(governed)}: a catalog-managed table's definition changes "
                    "only with the add-commit whose metaData/protocol/domainMetadata makes "
                    "the change",
                )
        if "update-metadata-snapshot-version" in updates and record.managed:
            raise UcError(
                "BadRequestException",
                "update-metadata-snapshot-version is for external tables only",
            )
        # The role first: a reader's replay of an accepted commit is refused like any update
        # (it used to be answered as the no-op it is, 200).
        self.catalogs.require(r.principal, "writer", "update a table")
        if add is not None and self._is_replay(record, add.commit):
            return self.load(record)  # the accepted commit again: a whole-request no-op
        etag_req = requirements.get("assert-etag")
        if etag_req is not None and etag_req.etag != views.etag(record, uuid):
            raise UcError(
                "UpdateRequirementConflictException",
                f"table {'.'.join(names)} changed since it was loaded (etag {etag_req.etag} is "
                "not current): reload it",
            )
        self.catalogs.require(r.principal, "writer", "update a table")
        backfill = updates.get("set-latest-backfilled-version")
        if add is not None and backfill is not None:
            # A writer's report of its previous commit, riding on its next one: applied first
            # (what it frees counts no more against the cap of unbackfilled commits), and as a
            # hint: a version not published, or published with other content, stays held.
            self._backfilled(names, record, backfill.latest_published_version, strict=False)
            backfill = None
        if add is not None:
            self._add_commit(r, names, record, add.commit)
            record = self.store.table_by_id(record.id) or record
        if backfill is not None:
            self._backfilled(names, record, backfill.latest_published_version)
        return self.load(self.store.table_by_id(record.id) or record)

    def _is_replay(self, record: TableRecord, commit: Any) -> bool:
        if commit.version > record.latest_version or commit.version < 0:
            return False
        found = self.store.commit_record(record.id, commit.version)
        return found is not None and found.staged_path == commit.file_name

    def _add_commit(self, r: UcRequest, names: list[str], record: TableRecord, commit: Any) -> None:
        from deltalog.catalog.clients.rest import protocol as p

        if not record.managed:
            raise UcError(
                "BadRequestException",
                f"table {'.'.join(names)} is external: its commits are in its own _delta_log",
            )
        if p.staged_name(commit.file_name) is None or "/" in commit.file_name:
            raise UcError(
                "InvalidParameterValueException",
                f"file-name {commit.file_name!r} is not a staged commit "
                "(<version, 20 digits>.<uuid>.json in _delta_log/_staged_commits/)",
            )
        if commit.version != record.latest_version + 1:
            raise UcError(
                "CommitVersionConflictException",
                f"version {commit.version} of {'.'.join(names)} cannot be ratified: the latest "
                f"ratified version is {record.latest_version}",
            )
        proposal = self.service._proposal(
            r.principal, names, record, commit.version, p.STAGED_DIR + commit.file_name, None
        )
        if proposal is None:
            return
        if proposal.ict is not None and commit.timestamp != proposal.ict:
            raise UcError(
                "InvalidParameterValueException",
                f"add-commit timestamp {commit.timestamp} is not the commit's inCommitTimestamp "
                f"({proposal.ict})",
            )
        self.service._ratify([proposal], [names])

    def _backfilled(
        self, names: list[str], record: TableRecord, version: int, strict: bool = True
    ) -> None:
        """``set-latest-backfilled-version``: forgets the held commits through ``version``,
        each checked to be published with its ratified content; not ``strict`` (a report
        riding on an ``add-commit``), it forgets those that are, up to the first that is not,
        and refuses nothing."""
        from deltalog.catalog import ratification

        if version > record.latest_version:
            if not strict:
                return
            raise UcError(
                "InvalidParameterValueException",
                f"latest-published-version {version} is past the latest ratified version "
                f"{record.latest_version}",
            )
        held = [c for c in self.store.commits(record.id, None, version).commits]
        through = None
        for c in held:
            found = self.service._published_content(record, c.version)
            if found is None:
                if not strict:
                    break
                raise UcError(
                    "BadRequestException",
                    f"version {c.version} of {'.'.join(names)} is not published "
                    f"(_delta_log/{c.version:020d}.json does not exist): the catalog keeps it",
                )
            if c.sha256 and ratification.sha256_hex(found) != c.sha256:
                if not strict:
                    break
                raise UcError(
                    "BadRequestException",
                    f"_delta_log/{c.version:020d}.json of {'.'.join(names)} differs from the "
                    "commit the catalog ratified for that version (catalogManaged RFC, "
                    '"Publishing Commits": the content of a ratified commit is immutable)',
                )
            through = c.version
        if through is not None:
            self.store.forget(record.id, through)
