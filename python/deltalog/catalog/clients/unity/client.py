"""deltalog's Unity Catalog client: ``dl.connect_catalog({"type": "unity", "uri": …, "token": …,
"catalog": …})`` lists, creates, loads, writes and drops the tables of one catalog of any UC
server speaking the UC API and the UC Delta API (``../shared/spec/unitycatalog-*``), over
synchronous HTTP (:mod:`deltalog.catalog.clients.unity.transport`, urllib3) with the models
generated from those specs (:mod:`deltalog.protocol.unity`).

Names are ``schema.table`` (or ``catalog.schema.table`` naming the configured catalog, or
``table`` in the configured default ``schema``); the namespaces are the catalog's schemas,
their properties the schema's (``getSchema`` / ``updateSchema``, which replaces them whole).
A table is renamed within its schema only (the Delta API's ``renameTable``: "Cross-schema and
cross-catalog moves are not supported").

A catalog-managed table (``delta.feature.catalogManaged = supported``) is read and written
through :class:`UnityTableClient`, deltalog's :class:`~deltalog.catalog.CatalogClient` over
the Delta API (catalogManaged RFC, ``000_…``, "Commit Protocol"):

* ``get_ratified_commits``: ``loadTable``'s unpublished commits (staged files), ascending,
  and its ``latest-table-version``;
* ``commit``: the writer stages the commit file (never inline: UC commits are files), then
  ``updateTable`` with ``assert-table-uuid`` and ``add-commit`` (version, in-commit timestamp,
  file name, size, modification time); a 409 ``CommitVersionConflictException`` becomes
  :class:`~deltalog.CommitConflictError` with the winners; a lost answer is resent identically
  (the server answers a replay as a success), and when no answer ever comes the commits are
  asked whether it landed;
* ``published``: ``set-latest-backfilled-version``, sent before the ``add-commit`` in the
  ``updateTable`` of the client's next commit, or alone when the client is collected or the
  interpreter exits.

A new table is made as the Delta API says: ``createStagingTable`` (the server allocates its id
and location), version 0 written and published at that location (with the staging table's id
as ``io.unitycatalog.tableId``), then ``createTable``.

Object-store tables are opened with the credentials the server vends for them
(``credentials`` route; READ_WRITE, else READ), renewed on each open when they expire within
five minutes.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from deltalog.catalog.base import (
    Catalog,
    Identifier,
    PropertiesUpdateSummary,
    plan_properties_update,
)
from deltalog.catalog.clients.unity.table_client import UnityTableClient
from deltalog.catalog.clients.unity.transport import Transport, path
from deltalog.exceptions import (
    CatalogPermissionError,
    InvalidArgumentError,
    NamespaceNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from deltalog.protocol.unity import catalog_api, delta_api

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import WriteMode

_log = logging.getLogger("deltalog.catalog.clients.unity")

#: The Delta API protocol version the client speaks.
PROTOCOL_VERSIONS = "1.0"
#: Credentials are renewed when they expire within this long.
RENEW_MS = 5 * 60 * 1000


def _local(location: str) -> str | None:
    """The local path of a ``file:`` location (or a path), else ``None``."""
    if location.startswith("file:"):
        from urllib.parse import unquote, urlsplit

        return unquote(urlsplit(location).path)
    return None if "://" in location else location


def _storage_options(
    credentials: Sequence[delta_api.DeltaStorageCredential], base: Mapping[str, str] | None
) -> dict[str, str]:
    """object_store options from vended ``DeltaStorageCredential`` s (the longest prefix
    first), over the catalog's own ``base`` options (endpoint, region…)."""
    options = dict(base or {})
    if not credentials:
        return options
    best = max(credentials, key=lambda c: len(c.prefix or ""))
    config = best.config.model_dump(by_alias=True) if best.config is not None else {}
    mapping = {
        "s3.access-key-id": "aws_access_key_id",
        "s3.secret-access-key": "aws_secret_access_key",
        "s3.session-token": "aws_session_token",
        "azure.sas-token": "azure_storage_sas_token",
        "gcs.oauth-token": "google_bearer_token",
    }
    for key, value in config.items():
        if value is not None and key in mapping:
            options[mapping[key]] = str(value)
    return options


class UnityCatalog(Catalog):
    """One catalog of a Unity Catalog server (see the module docs)."""

    def __init__(
        self,
        uri: str,
        catalog: str,
        token: str | None = None,
        timeout: float = 30.0,
        storage_options: Mapping[str, str] | None = None,
        schema: str | None = None,
    ) -> None:
        super().__init__(".")
        #: The schema a one-part table name is in (like DuckDB's ``DEFAULT_SCHEMA``).
        self.default_schema = schema
        if not catalog:
            raise InvalidArgumentError('a unity catalog needs "catalog" (the UC catalog name)')
        self.uri = uri.rstrip("/")
        self.catalog = catalog
        self.storage_options = dict(storage_options) if storage_options else None
        self._transport = Transport(self.uri, token, timeout)
        self._credentials: dict[str, tuple[int, dict[str, str]]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"UnityCatalog({self.uri!r}, catalog={self.catalog!r})"

    # -- requests ----------------------------------------------------------------------------

    @property
    def transport(self) -> Transport:
        """The HTTP connections (:mod:`deltalog.catalog.clients.unity.transport`)."""
        return self._transport

    def _delta_route(self, schema: str, *rest: str) -> str:
        """A Delta API path below ``/delta/v1/catalogs/<catalog>/schemas/<schema>``."""
        return path("delta", "v1", "catalogs", self.catalog, "schemas", schema, *rest)

    # -- names -------------------------------------------------------------------------------

    def _split(self, name: Identifier) -> tuple[str, str]:
        names = self._names(name)
        if len(names) == 3 and names[0] == self.catalog:
            names = names[1:]
        if len(names) == 1 and self.default_schema:
            names = [self.default_schema, *names]
        if len(names) != 2 or not all(names):
            raise InvalidArgumentError(
                f"a table of UC catalog {self.catalog!r} is named schema.table: {name!r}"
            )
        return names[0], names[1]

    def _schema(self, namespace: Identifier) -> str:
        names = self._names(namespace)
        if len(names) == 2 and names[0] == self.catalog:
            names = names[1:]
        if len(names) != 1 or not names[0]:
            raise InvalidArgumentError(
                f"a namespace of UC catalog {self.catalog!r} is one schema name: {namespace!r}"
            )
        return names[0]

    # -- namespaces (schemas) ----------------------------------------------------------------

    def list_namespaces(self, namespace: Identifier | None = None) -> list[str]:
        if namespace is not None:
            if not self.namespace_exists(namespace):
                raise NamespaceNotFoundError(f"schema {namespace!r} does not exist")
            return []  # schemas hold no namespaces
        names: list[str] = []
        token = None
        while True:
            page = self._transport.request(
                f"list the schemas of {self.catalog}",
                "GET",
                path("schemas"),
                query={"catalog_name": self.catalog, "page_token": token},
                answer=catalog_api.ListSchemasResponse,
                idempotent=True,
            )
            names += [s.name for s in page.schemas or [] if s.name]
            token = page.next_page_token
            if not token:
                return sorted(names)

    def create_namespace(
        self, namespace: Identifier, properties: Mapping[str, str] | None = None
    ) -> None:
        """Creates schema ``namespace`` with ``properties`` (the UC API's ``createSchema``)."""
        schema = self._schema(namespace)
        props = dict(properties or {})
        request = catalog_api.CreateSchema.model_validate(
            {"name": schema, "catalog_name": self.catalog, "properties": props or None}
        )
        self._transport.request(
            f"create schema {schema}",
            "POST",
            path("schemas"),
            body=request,
            answer=catalog_api.SchemaInfo,
            idempotent=False,
        )

    def _get_schema(self, schema: str) -> catalog_api.SchemaInfo:
        return self._transport.request(
            f"get schema {schema}",
            "GET",
            path("schemas", f"{self.catalog}.{schema}"),
            answer=catalog_api.SchemaInfo,
            idempotent=True,
        )

    def load_namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        """The schema's properties (the UC API's ``getSchema``)."""
        found = self._get_schema(self._schema(namespace))
        return dict(found.properties.root) if found.properties is not None else {}

    def update_namespace_properties(
        self,
        namespace: Identifier,
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Removes ``removals`` and sets ``updates`` on the schema's properties: read with
        ``getSchema``, written whole with ``updateSchema`` (its ``properties`` replace the
        schema's; UC has no finer update, so a concurrent update of the same schema may be
        lost)."""
        schema = self._schema(namespace)
        current = self.load_namespace_properties(schema)
        after, summary = plan_properties_update(current, removals, updates)
        self._transport.request(
            f"update the properties of schema {schema}",
            "PATCH",
            path("schemas", f"{self.catalog}.{schema}"),
            body=catalog_api.UpdateSchema.model_validate({"properties": after}),
            answer=catalog_api.SchemaInfo,
            idempotent=False,
        )
        return summary

    def drop_namespace(self, namespace: Identifier) -> None:
        schema = self._schema(namespace)
        self._transport.request(
            f"delete schema {schema}",
            "DELETE",
            path("schemas", f"{self.catalog}.{schema}"),
            idempotent=False,
        )

    def namespace_exists(self, namespace: Identifier) -> bool:
        try:
            self._get_schema(self._schema(namespace))
        except (NamespaceNotFoundError, TableNotFoundError):
            return False
        return True

    # -- tables ------------------------------------------------------------------------------

    def list_tables(
        self, namespace: Identifier | None = None, recursive: bool = False
    ) -> list[str]:
        """A schema's tables; at the root every schema's, as ``schema.table`` (UC namespaces
        are one level, so that is the recursive listing too; a schema's with ``recursive``
        are ``schema.table`` as well)."""
        if recursive and namespace is not None:
            schema = self._schema(namespace)
            return [f"{schema}.{t}" for t in self.list_tables(namespace)]
        schemas = [self._schema(namespace)] if namespace is not None else self.list_namespaces()
        names: list[str] = []
        for schema in schemas:
            token = None
            while True:
                page = self._transport.request(
                    f"list the tables of {self.catalog}.{schema}",
                    "GET",
                    path("tables"),
                    query={
                        "catalog_name": self.catalog,
                        "schema_name": schema,
                        "page_token": token,
                    },
                    answer=catalog_api.ListTablesResponse,
                    idempotent=True,
                )
                found = [t.name for t in page.tables or [] if t.name]
                names += found if namespace is not None else [f"{schema}.{t}" for t in found]
                token = page.next_page_token
                if not token:
                    break
        return sorted(names)

    def table_exists(self, name: Identifier) -> bool:
        try:
            schema, table = self._split(name)  # no table has a name the catalog refuses
            self._transport.request(
                f"check table {schema}.{table}",
                "HEAD",
                self._delta_route(schema, "tables", table),
                idempotent=True,
            )
        except (TableNotFoundError, InvalidArgumentError, NamespaceNotFoundError):
            return False
        return True

    def load_response(self, schema: str, table: str) -> delta_api.DeltaLoadTableResponse:
        """``loadTable`` of ``schema.table``."""
        return self._transport.request(
            f"load table {self.catalog}.{schema}.{table}",
            "GET",
            self._delta_route(schema, "tables", table),
            answer=delta_api.DeltaLoadTableResponse,
            idempotent=True,
        )

    def describe_table(self, name: Identifier) -> Any:
        """The table's location, kind, latest version, protocol and metadata from the catalog
        alone (``loadTable``; as :meth:`ManagedCatalog.describe_table`). The protocol and
        metadata are rebuilt from UC's view (columns, partition columns, properties with the
        server-derived keys taken out); UC's API does not carry Delta's ``metaData.id``. An
        external table's are ``None`` (the catalog does not ratify its commits)."""
        from deltalog.catalog.clients.unity.columns import from_delta_api
        from deltalog.catalog.managed import TableDescription
        from deltalog.protocol import features

        schema, table = self._split(name)
        loaded = self.load_response(schema, table)
        meta = loaded.metadata
        props = dict(meta.properties or {})
        managed = props.get("delta.feature.catalogManaged") == "supported"
        protocol = metadata = None
        if managed:
            named = sorted(
                k[len("delta.feature.") :] for k in props if k.startswith("delta.feature.")
            )
            known = features.FEATURES
            protocol = {
                "minReaderVersion": int(props.get("delta.minReaderVersion", "3")),
                "minWriterVersion": int(props.get("delta.minWriterVersion", "7")),
                "readerFeatures": [
                    f for f in named if f not in known or known[f].is_reader_feature
                ],
                "writerFeatures": named,
            }
            derived = {
                "delta.minReaderVersion",
                "delta.minWriterVersion",
                "delta.lastUpdateVersion",
                "delta.lastCommitTimestamp",
                "delta.clusteringColumns",
            }
            metadata = {
                "schemaString": json.dumps(
                    from_delta_api(
                        meta.columns.model_dump(mode="json", by_alias=True, exclude_none=True)
                    )
                ),
                "partitionColumns": list(meta.partition_columns or []),
                "configuration": {
                    k: v
                    for k, v in props.items()
                    if k not in derived and not k.startswith("delta.feature.")
                },
            }
        return TableDescription(
            name=f"{schema}.{table}",
            location=_local(meta.location) or meta.location,
            catalog_managed=managed,
            latest_version=loaded.latest_table_version if managed else None,
            protocol=protocol,
            metadata=metadata,
        )

    def table_options(self, schema: str, table: str, location: str) -> dict[str, str] | None:
        """The storage options of a table: the catalog's, with credentials vended for it when
        its location is not local (renewed within :data:`RENEW_MS` of their expiry)."""
        if _local(location) is not None:
            return self.storage_options
        now = int(time.time() * 1000)
        with self._lock:
            cached = self._credentials.get(location)
        if cached is not None and cached[0] - now > RENEW_MS:
            return cached[1]
        answer = None
        for operation in ("READ_WRITE", "READ"):
            try:
                answer = self._transport.request(
                    f"credentials of {schema}.{table}",
                    "GET",
                    self._delta_route(schema, "tables", table, "credentials"),
                    query={"operation": operation},
                    answer=delta_api.DeltaCredentialsResponse,
                    idempotent=True,
                )
                break
            except CatalogPermissionError:
                if operation == "READ":
                    raise
        vended = list(answer.storage_credentials or []) if answer is not None else []
        options = _storage_options(vended, self.storage_options)
        expires = min((c.expiration_time_ms for c in vended), default=now + 3600_000)
        with self._lock:
            self._credentials[location] = (expires, options)
        return options

    def load_table(self, name: Identifier, version: int | None = None) -> DeltaTable:
        from deltalog.table.delta_table import DeltaTable

        schema, table = self._split(name)
        loaded = self.load_response(schema, table)
        metadata = loaded.metadata
        location = _local(metadata.location) or metadata.location
        options = self.table_options(schema, table, metadata.location)
        properties = dict(metadata.properties or {})
        if properties.get("delta.feature.catalogManaged") != "supported":
            return DeltaTable(location, version=version, storage_options=options)
        client = UnityTableClient(self, schema, table, str(metadata.table_uuid), location, options)
        client.prime(loaded)
        return DeltaTable(location, version=version, storage_options=options, catalog_client=client)

    def register_table(self, name: Identifier, location: str) -> DeltaTable:
        """Registers the Delta table at ``location`` as an EXTERNAL table (the Delta API's
        ``createTable``; the server decides who may)."""
        from deltalog.catalog.clients.unity.columns import to_delta_api
        from deltalog.table.delta_table import DeltaTable

        schema, table = self._split(name)
        found = DeltaTable(location, storage_options=self.storage_options)
        reader, writer, reader_features, writer_features = found._raw.protocol()
        d = found._raw.metadata()
        protocol: dict[str, Any] = {"min-reader-version": reader, "min-writer-version": writer}
        if reader_features is not None:
            protocol["reader-features"] = list(reader_features)
        if writer_features is not None:
            protocol["writer-features"] = list(writer_features)
        uri = location if "://" in location else "file://" + os.path.abspath(location)
        request = delta_api.DeltaCreateTableRequest.model_validate(
            {
                "name": table,
                "location": uri,
                "table-type": "EXTERNAL",
                # None only in a corrupt log (a metaData action without schemaString).
                "columns": to_delta_api(json.loads(cast(str, d["schema_string"]))),
                "partition-columns": list(d["partition_columns"]),
                "protocol": protocol,
                "properties": dict(d["configuration"]),
                "last-commit-timestamp-ms": found._raw.timestamp() or 0,
            },
        )
        self._transport.request(
            f"register {schema}.{table}",
            "POST",
            self._delta_route(schema, "tables"),
            body=request,
            answer=delta_api.DeltaLoadTableResponse,
            idempotent=False,
        )
        return self.load_table(name)

    def drop_table(self, name: Identifier, purge: bool = True) -> None:
        """Deletes the table from the catalog. UC's ``deleteTable`` has no choice to make: the
        server deletes a MANAGED table's files and keeps an EXTERNAL table's. So
        ``purge=False`` on a managed table and ``purge=True`` on an external one are refused
        (``InvalidArgumentError``) before anything is deleted, rather than doing the other."""
        schema, table = self._split(name)
        kind = self.load_response(schema, table).metadata.table_type.value
        if kind == "MANAGED" and not purge:
            raise InvalidArgumentError(
                f"{schema}.{table} is a MANAGED table: Unity Catalog deletes its files with it "
                "(drop it with purge=True)"
            )
        if kind == "EXTERNAL" and purge:
            raise InvalidArgumentError(
                f"{schema}.{table} is an EXTERNAL table: Unity Catalog keeps its files when it "
                "is dropped (drop it with purge=False, then delete the files yourself)"
            )
        self._transport.request(
            f"delete table {schema}.{table}",
            "DELETE",
            self._delta_route(schema, "tables", table),
            idempotent=False,
        )

    def rename_table(self, from_name: Identifier, to_name: Identifier) -> DeltaTable:
        """Renames a table within its schema (the Delta API's ``renameTable``: "Cross-schema
        and cross-catalog moves are not supported") and returns it. ``to_name`` is
        ``schema.table`` (or ``catalog.schema.table``, or a bare table name in
        ``from_name``'s schema).

        Raises:
            UnsupportedFeatureError: ``to_name`` is in another schema or catalog.
        """
        schema, table = self._split(from_name)
        names = self._names(to_name)
        if len(names) == 1:
            names = [schema, *names]
        elif len(names) == 3 and names[0] != self.catalog:
            raise UnsupportedFeatureError(
                f"UC renames a table within its schema: {to_name!r} is in catalog "
                f"{names[0]!r}, not {self.catalog!r}"
            )
        new_schema, new_table = self._split(names)
        if new_schema != schema:
            raise UnsupportedFeatureError(
                f"UC renames a table within its schema (renameTable: no cross-schema moves): "
                f"{schema}.{table} cannot become {new_schema}.{new_table}"
            )
        self._transport.request(
            f"rename table {schema}.{table}",
            "POST",
            self._delta_route(schema, "tables", table, "rename"),
            body=delta_api.DeltaRenameTableRequest.model_validate({"new-name": new_table}),
            idempotent=False,
        )
        return self.load_table([schema, new_table])

    def new_table_target(self, name: Identifier) -> tuple[str, Any | None]:
        schema, table = self._split(name)
        staged = self._transport.request(
            f"create staging table {schema}.{table}",
            "POST",
            self._delta_route(schema, "staging-tables"),
            body=delta_api.DeltaCreateStagingTableRequest.model_validate({"name": table}),
            answer=delta_api.DeltaStagingTableResponse,
            idempotent=False,
        )
        location = _local(staged.location) or staged.location
        options = _storage_options(list(staged.storage_credentials or []), self.storage_options)
        client = UnityTableClient(
            self, schema, table, str(staged.table_id), location, options, creating=True
        )
        return location, client

    def _create_from_data(self, name: Identifier, data: Any, mode: WriteMode, **kwargs: Any) -> int:
        from deltalog.table.write import write_table

        location, client = self.new_table_target(name)
        assert isinstance(client, UnityTableClient)
        return write_table(
            location,
            data,
            mode=mode,
            catalog_client=client,
            storage_options=client.storage_options,
            **kwargs,
        )

    def close(self) -> None:
        """Closes the connections (a catalog is usable again afterwards: it reconnects)."""
        self._transport.close()


#: Where ``uc://`` URIs find their server (storage options, then environment variables).
URI_OPTION, TOKEN_OPTION = "unity_catalog_uri", "unity_catalog_token"
URI_ENV, TOKEN_ENV = "UNITY_CATALOG_URI", "UNITY_CATALOG_TOKEN"


def resolve_uc_uri(
    uri: str, storage_options: Mapping[str, str] | None
) -> tuple[str, dict[str, str] | None, UnityTableClient | None]:
    """A ``uc://catalog.schema.table`` URI as the table's location, storage options and
    catalog client: the server from ``storage_options`` (``unity_catalog_uri``,
    ``unity_catalog_token``, taken out of the options) or the environment
    (``UNITY_CATALOG_URI``, ``UNITY_CATALOG_TOKEN``).

    Raises:
        InvalidArgumentError: not ``uc://catalog.schema.table``, or no server configured.
    """
    options = dict(storage_options or {})
    server = options.pop(URI_OPTION, None) or os.environ.get(URI_ENV)
    token = options.pop(TOKEN_OPTION, None) or os.environ.get(TOKEN_ENV)
    names = uri[len("uc://") :].split(".")
    if len(names) != 3 or not all(names):
        raise InvalidArgumentError(f"a Unity Catalog table URI is uc://catalog.schema.table: {uri}")
    if not server:
        raise InvalidArgumentError(
            f"{uri}: no Unity Catalog server: pass storage_options={{'{URI_OPTION}': "
            f"'http://host:port', '{TOKEN_OPTION}': '…'}} or set {URI_ENV} / {TOKEN_ENV}"
        )
    catalog = UnityCatalog(server, names[0], token=token, storage_options=options or None)
    table = catalog.load_table([names[1], names[2]])
    return table.table_uri, table._storage_options, table._catalog_client  # type: ignore[return-value]
