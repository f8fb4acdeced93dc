"""The Delta API's table life cycle and credentials (``unitycatalog-delta-api-2026-08.yaml``):
staging tables, ``createTable``, ``deleteTable``, ``renameTable``, the credentials routes and
``reportMetrics``; a mixin of :class:`~deltalog.server.unity.delta.DeltaApi`.

Creating a managed table (catalogManaged RFC, "Creating and Dropping Catalog-managed Tables"):
``createStagingTable`` allocates the table (a UUID, a location in the warehouse: a table the
catalog knows but does not list or load), the engine writes version 0 at that location as
``_delta_log/00000000000000000000.json``, and ``createTable`` ratifies that file as version 0
through the same check as every commit (:func:`deltalog.catalog.ratification.prepare`:
``catalogManaged`` and in-commit timestamps enabled, a ``commitInfo`` with a ``txnId``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import TYPE_CHECKING, Any

from deltalog.catalog.clients.unity.errors import UcError
from deltalog.protocol.unity import catalog_api, delta_api
from deltalog.server.unity import views
from deltalog.server.unity.catalogs import UcRequest, UnityCatalogs, model

if TYPE_CHECKING:
    from deltalog.catalog.managed import Store, TableRecord
    from deltalog.server.lance.service import CatalogService

_log = logging.getLogger("deltalog.catalog.server")

#: What a new managed table's version 0 must enable (catalogManaged RFC, "Catalog-managed Table
#: Enablement"; in-commit timestamps: "Writer Requirements for Catalog-managed tables").
REQUIRED_PROTOCOL = {
    "min-reader-version": 3,
    "min-writer-version": 7,
    "reader-features": ["catalogManaged"],
    "writer-features": ["catalogManaged", "inCommitTimestamp"],
}
REQUIRED_PROPERTIES = {"delta.enableInCommitTimestamps": "true"}
SUGGESTED_PROTOCOL = {
    "reader-features": ["deletionVectors", "v2Checkpoint", "vacuumProtocolCheck"],
    "writer-features": ["deletionVectors", "v2Checkpoint", "vacuumProtocolCheck"],
}


class TableLifecycle:
    """Creating, dropping, renaming tables, and their credentials (see the module docs)."""

    catalogs: UnityCatalogs
    service: CatalogService
    store: Store

    def load(self, record: TableRecord) -> dict[str, Any]:
        raise NotImplementedError  # DeltaApi's

    def _names(self, r: UcRequest) -> list[str]:
        raise NotImplementedError  # DeltaApi's

    def _record(self, r: UcRequest) -> TableRecord:
        raise NotImplementedError  # DeltaApi's

    def _uuid(self, record: TableRecord) -> str:
        return self.store.table_uuid(record.id) if record.uuid is None else record.uuid

    # -- creating ----------------------------------------------------------------------------

    def stage(self, principal: Any, catalog: str, schema: str, table: Any) -> TableRecord:
        """Allocates a staging table (a UUID, a location in the warehouse): the first step of
        creating a managed table through either UC API."""
        from deltalog.exceptions import AlreadyExistsError, InvalidArgumentError

        self.catalogs.require(principal, "writer", "create a table")
        name = self.catalogs.check_name(table, "table")
        sid = self.catalogs.schema_id(catalog, schema)
        if self.store.namespace_id(sid, name) is not None:
            raise UcError("AlreadyExistsException", f"{name!r} is the name of a namespace")
        try:
            # The directory the catalog derives (a fresh one where another table lives).
            location = self.service.catalog.derived_location(
                [catalog, schema, name], f"table {catalog}.{schema}.{name}"
            )
            return self.store.register(
                sid, name, location, None, managed=True, principal=principal.name
            )
        except AlreadyExistsError as e:
            raise UcError("AlreadyExistsException", str(e)) from e
        except InvalidArgumentError as e:
            raise UcError("InvalidParameterValueException", str(e)) from e

    def create_staging_table(self, r: UcRequest) -> dict[str, Any]:
        """The Delta API's ``createStagingTable``."""
        body = model(delta_api.DeltaCreateStagingTableRequest, r.body)
        record = self.stage(r.principal, r.params["catalog"], r.params["schema"], body.name)
        return {
            "table-id": self._uuid(record),
            "table-type": "MANAGED",
            "location": views.uri(record.location),
            "storage-credentials": self.service.credentials.delta_form(record.location, True),
            "required-protocol": REQUIRED_PROTOCOL,
            "suggested-protocol": SUGGESTED_PROTOCOL,
            "required-properties": {
                **REQUIRED_PROPERTIES,
                "io.unitycatalog.tableId": self._uuid(record),
            },
            "suggested-properties": {},
        }

    def create_table(self, r: UcRequest) -> dict[str, Any]:
        raw = dict(r.body) if isinstance(r.body, dict) else None
        if raw is None:
            raise UcError("BadRequestException", "the request body must be a JSON object")
        columns = raw.get("columns")
        body = model(delta_api.DeltaCreateTableRequest, raw)
        catalog, schema = r.params["catalog"], r.params["schema"]
        name = self.catalogs.check_name(body.name, "table")
        kind = getattr(body.table_type, "value", body.table_type)
        if kind == "EXTERNAL":
            self.catalogs.require(r.principal, "admin", "register an external table")
            record = self.catalogs.register_external(
                r.principal,
                catalog,
                schema,
                name,
                body.location,
                dict(body.properties or {}) or None,
            )
            return self.load(record)
        from deltalog.catalog.clients.unity.columns import from_delta_api

        said = from_delta_api(columns) if isinstance(columns, dict) else None
        fresh = self.promote(
            r.principal,
            [catalog, schema, name],
            body.location,
            [f.get("name") for f in said.get("fields", [])] if said is not None else None,
            list(body.partition_columns or []),
        )
        return self.load(fresh)

    def promote(
        self,
        principal: Any,
        names: list[str],
        location: str,
        column_names: list[str] | None,
        partition_columns: list[str] | None,
    ) -> TableRecord:
        """Makes staging table ``names`` a managed table: its version 0, written at
        ``location`` (the staging table's), ratified (the last step of creating a managed
        table through either UC API). ``column_names`` / ``partition_columns``, when given,
        must be version 0's."""
        self.catalogs.require(principal, "writer", "create a table")
        catalog, schema, name = names
        record = self.store.table(self.catalogs.schema_id(catalog, schema), name)
        if record is None:
            raise UcError(
                "NoSuchTableException",
                f"no staging table {catalog}.{schema}.{name}: a managed table is created by "
                "createStagingTable, then writing version 0, then createTable",
            )
        if not views.is_staging(record):
            raise UcError("AlreadyExistsException", f"table {catalog}.{schema}.{name} exists")
        self._check_location(record, location)
        self._ratify_version_zero(principal, names, record, column_names, partition_columns)
        fresh = self.store.table_by_id(record.id)
        if fresh is None:
            raise UcError("NoSuchTableException", f"table {name!r} was dropped")
        return fresh

    def uc_create_staging_table(self, r: UcRequest) -> dict[str, Any]:
        """The UC API's ``POST /staging-tables`` (``StagingTableInfo``)."""
        body = model(catalog_api.CreateStagingTable, r.body)
        record = self.stage(r.principal, body.catalog_name, body.schema_name, body.name)
        return {
            "name": record.name,
            "catalog_name": body.catalog_name,
            "schema_name": body.schema_name,
            "id": self._uuid(record),
            "staging_location": views.uri(record.location),
        }

    def _check_location(self, record: TableRecord, location: str) -> None:
        from deltalog.catalog.names import canonical_location
        from deltalog.exceptions import InvalidArgumentError

        try:
            same = canonical_location(location) == canonical_location(record.location)
        except InvalidArgumentError as e:
            raise UcError("InvalidParameterValueException", str(e)) from e
        if not same:
            raise UcError(
                "InvalidParameterValueException",
                f"location {location} is not the staging table's ({views.uri(record.location)})",
            )

    def _ratify_version_zero(
        self,
        principal: Any,
        names: list[str],
        record: TableRecord,
        column_names: list[str] | None,
        partition_columns: list[str] | None,
    ) -> None:
        from deltalog.catalog import ratification
        from deltalog.exceptions import DeltaError, InvalidArgumentError

        try:
            content = ratification.read_log(
                record.location, "00000000000000000000.json", self.service.storage_options
            )
        except InvalidArgumentError as e:
            raise UcError("InvalidParameterValueException", str(e)) from e
        if content is None:
            raise UcError(
                "InvalidParameterValueException",
                f"{views.uri(record.location)}/_delta_log/00000000000000000000.json does not "
                "exist: write version 0 before createTable",
            )
        try:
            proposal, checked = ratification.prepare(
                record.location,
                0,
                None,
                content,
                record,
                storage_options=self.service.storage_options,
            )
        except InvalidArgumentError as e:
            raise UcError("InvalidParameterValueException", str(e)) from e
        except DeltaError as e:
            raise UcError("InternalServerErrorException", f"cannot read version 0: {e}") from e
        from deltalog.catalog.stores.sql import UC_TABLE_ID, table_uuid_of

        try:
            said_id = table_uuid_of(checked.metadata, 0)
        except InvalidArgumentError as e:
            raise UcError("InvalidParameterValueException", str(e)) from e
        if said_id is not None and said_id != self._uuid(record):
            raise UcError(
                "InvalidParameterValueException",
                f"version 0's {UC_TABLE_ID} is {said_id}, not the staging table's id "
                f"{self._uuid(record)}",
            )
        metadata = json.loads(checked.metadata or "{}")
        written = json.loads(metadata.get("schemaString") or "{}")
        if column_names is not None and column_names != [
            f.get("name") for f in written.get("fields", [])
        ]:
            raise UcError(
                "InvalidParameterValueException",
                "columns differ from version 0's schema (the commit is the truth)",
            )
        if partition_columns is not None and partition_columns != list(
            metadata.get("partitionColumns") or []
        ):
            raise UcError(
                "InvalidParameterValueException",
                "partition-columns differ from version 0's partitionColumns",
            )
        # The promoter is the table's updater (its creator staged it: TableInfo's created_by).
        proposal = dataclasses.replace(proposal, principal=principal.name)
        self.service._ratify([proposal], [list(names)])
        self.store.forget(record.id, 0)  # published already: it is the file just read

    # -- dropping and renaming ---------------------------------------------------------------

    def delete_table(self, r: UcRequest) -> None:
        self.catalogs.require(r.principal, "admin", "delete a table")
        names = self._names(r)
        catalog, schema, name = names
        self.catalogs.drop(self.catalogs.table(catalog, schema, name, staging=True), names)

    def rename_table(self, r: UcRequest) -> None:
        from deltalog.exceptions import AlreadyExistsError

        self.catalogs.require(r.principal, "admin", "rename a table")
        body = model(delta_api.DeltaRenameTableRequest, r.body)
        new = self.catalogs.check_name(body.new_name, "table")
        record = self._record(r)
        try:
            self.store.rename_table(record.id, new, principal=r.principal.name)
        except AlreadyExistsError as e:
            raise UcError("AlreadyExistsException", str(e)) from e

    # -- credentials and metrics -------------------------------------------------------------

    @staticmethod
    def _operation(query: dict[str, str]) -> bool:
        operation = query.get("operation")
        if operation not in ("READ", "READ_WRITE"):
            raise UcError(
                "InvalidParameterValueException", f"operation is READ or READ_WRITE: {operation!r}"
            )
        return operation == "READ_WRITE"

    def table_credentials(self, r: UcRequest) -> dict[str, Any]:
        write = self._operation(r.query)
        self.catalogs.require(
            r.principal, "writer" if write else "reader", "get the table's credentials"
        )
        record = self._record(r)
        return {"storage-credentials": self.service.credentials.delta_form(record.location, write)}

    def staging_table_credentials(self, r: UcRequest) -> dict[str, Any]:
        self.catalogs.require(r.principal, "writer", "write a staging table")
        record = self.store.table_by_uuid(r.params["table_id"])
        if record is None or not views.is_staging(record):
            raise UcError("NoSuchTableException", f"no staging table {r.params['table_id']}")
        return {"storage-credentials": self.service.credentials.delta_form(record.location, True)}

    def path_credentials(self, r: UcRequest) -> dict[str, Any]:
        write = self._operation(r.query)
        location = r.query.get("location")
        if not location:
            raise UcError("InvalidParameterValueException", "location is required")
        path = self.service.credentials.path_for(r.principal, location, write)
        return {"storage-credentials": self.service.credentials.delta_form(path, write)}

    def report_metrics(self, r: UcRequest) -> None:
        self.catalogs.require(r.principal, "writer", "report metrics")
        body = model(delta_api.DeltaReportMetricsRequest, r.body)
        record = self._record(r)
        if str(body.table_id).lower() != self._uuid(record):
            raise UcError(
                "InvalidParameterValueException",
                f"table-id {body.table_id} is not the table's ({self._uuid(record)})",
            )
        report = (
            body.report.model_dump(mode="json", by_alias=True, exclude_none=True)
            if body.report is not None
            else {}
        )
        _log.info(json.dumps({"event": "metrics", "table": self._names(r), "report": report}))
