"""How a table of deltalog's catalog looks through Unity Catalog's APIs: the UC API's
``TableInfo`` and the Delta API's ``DeltaTableMetadata`` (``../shared/spec/unitycatalog-*``),
built from the catalog's record and the table's latest protocol and metadata.

* A catalog-managed table is ``MANAGED``; a storage-managed (registered) one ``EXTERNAL``.
* Its properties are its Delta configuration plus the keys the Delta API says the server
  derives (``delta.minReaderVersion``, ``delta.minWriterVersion``, ``delta.feature.<name> =
  supported`` for every feature of its protocol, so ``delta.feature.catalogManaged =
  supported`` says a table is catalog-managed (catalogManaged RFC, "Table Discovery"),
  ``delta.lastUpdateVersion``, ``delta.lastCommitTimestamp``, ``delta.clusteringColumns``),
  under its catalog properties.
* Its ``storage_location`` is an absolute URI (``file:///…`` for a local table).
* Its etag changes with every ratified version (and a rollback), so that ``assert-etag``
  fails once another commit landed.
* Catalogs, schemas and tables answer who created them and when (``created_by`` /
  ``created_at``), who changed them last and when (``updated_by`` / ``updated_at``) and their
  ``owner``, as the catalog recorded them (:func:`audit`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltalog.catalog.clients.unity.columns import column_infos, to_delta_api

if TYPE_CHECKING:
    from deltalog.catalog.managed import TableRecord
    from deltalog.server.lance.service import CatalogService


def uri(location: str) -> str:
    """A table location as an absolute URI."""
    if "://" in location:
        return location
    return Path(location).absolute().as_uri()


def is_staging(record: TableRecord) -> bool:
    """A catalog-managed table whose version 0 is not ratified yet (a UC staging table, a
    Lance declared table): not listed, not loadable."""
    return record.managed and record.latest_version < 0


def state(service: CatalogService, record: TableRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    """The table's latest ``protocol`` and ``metaData`` actions: what the catalog cached for a
    catalog-managed table, else read from the table (through the catalog if it manages it)."""
    if record.managed and record.protocol and record.metadata:
        return json.loads(record.protocol), json.loads(record.metadata)
    from deltalog.catalog.managed import state_json

    protocol, metadata, _ = state_json(service.open_table(record))
    return json.loads(protocol), json.loads(metadata)


def audit(
    created_ms: int | None, created_by: str | None, updated_ms: int | None, updated_by: str | None
) -> dict[str, Any]:
    """The ``owner``, ``created_at``, ``created_by``, ``updated_at`` and ``updated_by`` of a
    UC API ``CatalogInfo`` / ``SchemaInfo`` / ``TableInfo`` (epoch milliseconds; principals:
    the authenticated token's name, ``anonymous`` on a server without tokens, the OS user for
    what a library caller made).

    * ``owner`` is the creator (UC: the creating principal owns a securable); deltalog has no
      ownership transfer.
    * ``updated_*`` is the last change the catalog recorded: creation, a properties or comment
      update, a rename, a ratified version. Never updated: the creation's.
    * What was never recorded (objects made before deltalog recorded it: migration 7 of the
      SQL stores) is ``null``; the keys are always present (clients such as polars require
      them).
    """
    if updated_ms is None:
        updated_ms, updated_by = created_ms, created_by
    return {
        "owner": created_by,
        "created_at": created_ms,
        "created_by": created_by,
        "updated_at": updated_ms,
        "updated_by": updated_by,
    }


def etag(record: TableRecord, uuid: str) -> str:
    """The table's entity tag: its UUID, latest version and latest in-commit timestamp."""
    text = f"{uuid}:{record.latest_version}:{record.last_ict}:{record.metadata_version}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def properties(
    record: TableRecord, protocol: dict[str, Any], metadata: dict[str, Any]
) -> dict[str, str]:
    """The table's properties as UC shows them (see the module docs)."""
    out = {k: str(v) for k, v in (record.properties or {}).items()}
    out.update({k: str(v) for k, v in (metadata.get("configuration") or {}).items()})
    out["delta.minReaderVersion"] = str(protocol.get("minReaderVersion", 1))
    out["delta.minWriterVersion"] = str(protocol.get("minWriterVersion", 2))
    for name in [*(protocol.get("readerFeatures") or []), *(protocol.get("writerFeatures") or [])]:
        out[f"delta.feature.{name}"] = "supported"
    if record.metadata_version is not None:
        out["delta.lastUpdateVersion"] = str(record.metadata_version)
    if record.metadata_ict is not None:
        out["delta.lastCommitTimestamp"] = str(record.metadata_ict)
    if record.clustering:
        try:
            columns = json.loads(record.clustering).get("clusteringColumns")
        except (ValueError, AttributeError):
            columns = None
        if columns is not None:
            out["delta.clusteringColumns"] = json.dumps(columns, separators=(",", ":"))
    return out


def _schema(metadata: dict[str, Any]) -> dict[str, Any]:
    text = metadata.get("schemaString")
    return json.loads(text) if text else {"type": "struct", "fields": []}


def table_info(
    service: CatalogService, catalog: str, schema: str, record: TableRecord
) -> dict[str, Any]:
    """The UC API's ``TableInfo`` of a table."""
    protocol, metadata = state(service, record)
    partitions = list(metadata.get("partitionColumns") or [])
    info: dict[str, Any] = {
        "name": record.name,
        "catalog_name": catalog,
        "schema_name": schema,
        "table_type": "MANAGED" if record.managed else "EXTERNAL",
        "data_source_format": "DELTA",
        "columns": column_infos(_schema(metadata), partitions),
        "storage_location": uri(record.location),
        "properties": properties(record, protocol, metadata),
        "table_id": service.store.table_uuid(record.id) if record.uuid is None else record.uuid,
    }
    if metadata.get("description"):
        info["comment"] = metadata["description"]
    info.update(audit(record.created_ms, record.created_by, record.updated_ms, record.updated_by))
    return info


def table_metadata(service: CatalogService, record: TableRecord) -> dict[str, Any]:
    """The Delta API's ``DeltaTableMetadata`` of a table."""
    protocol, metadata = state(service, record)
    uuid = service.store.table_uuid(record.id) if record.uuid is None else record.uuid
    created = record.created_ms if record.created_ms is not None else 0
    out: dict[str, Any] = {
        "etag": etag(record, uuid),
        "table-type": "MANAGED" if record.managed else "EXTERNAL",
        "table-uuid": uuid,
        "location": uri(record.location),
        "created-time": created,
        "updated-time": record.last_ict or created,
        "columns": to_delta_api(_schema(metadata)),
        "partition-columns": list(metadata.get("partitionColumns") or []),
        "properties": properties(record, protocol, metadata),
    }
    if record.metadata_version is not None:
        out["last-commit-version"] = record.metadata_version
    if record.metadata_ict is not None:
        out["last-commit-timestamp-ms"] = record.metadata_ict
    return out
