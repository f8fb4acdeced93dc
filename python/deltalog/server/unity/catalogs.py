"""The Unity Catalog API's catalogs, schemas, tables and temporary credentials
(``../shared/spec/unitycatalog-api-2026-08.yaml``) over deltalog's catalog: UC's three-level
namespace is the catalog's namespace tree, a UC catalog a top-level namespace, a schema a
namespace inside it, and table ``c.s.t`` the table ``t`` of namespace ``c$s`` (``c$s$t`` on the
Lance routes). The same store, roles and checks serve both APIs: creating and dropping catalogs
and schemas needs an admin (as namespaces do), registering and dropping tables too.

Requests are validated with the models generated from the spec (:mod:`deltalog.protocol.unity`);
names with the rules every deltalog catalog applies (:mod:`deltalog.catalog.names`).
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic

from deltalog.catalog.clients.unity.errors import UcError
from deltalog.protocol.unity import catalog_api
from deltalog.server.unity import views

if TYPE_CHECKING:
    from deltalog.catalog.managed import NamespaceRecord, TableRecord
    from deltalog.server.auth import Principal
    from deltalog.server.lance.service import CatalogService

M = TypeVar("M", bound=pydantic.BaseModel)

#: The most entries one page of a UC list holds (``max_results`` caps: catalogs and schemas
#: 1000, tables 50, as the spec's ``maximum`` says).
MAX_RESULTS = {"catalogs": 1000, "schemas": 1000, "tables": 50}


@dataclass
class UcRequest:
    """A UC request: who asks, the path's parameters (decoded), the query and the JSON body."""

    principal: Principal
    params: dict[str, str]
    query: dict[str, str]
    body: dict[str, Any] | None


def namespace_uuid(namespace_id: int) -> str:
    """A stable UUID for a namespace (UC's catalog ``id`` / ``schema_id``)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"deltalog:namespace:{namespace_id}"))


def model(cls: type[M], body: dict[str, Any] | None) -> M:
    """``body`` validated by ``cls``, a model of :mod:`deltalog.protocol.unity` (400 when it
    does not fit: unknown fields refused, strict types, so no ``"1"`` for ``1``)."""
    import pydantic

    if not isinstance(body, dict):
        raise UcError("BadRequestException", "the request body must be a JSON object")
    known = {f.alias or n for n, f in cls.model_fields.items()}
    unknown = sorted(set(body) - known)
    if unknown:
        raise UcError("BadRequestException", f"unknown fields: {', '.join(unknown)}")
    try:
        return cls.model_validate(body)
    except pydantic.ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors()
        )
        raise UcError("InvalidParameterValueException", f"invalid request: {problems}") from e


def properties_of(found: catalog_api.SecurablePropertiesMap | None) -> dict[str, str] | None:
    """A request's ``SecurablePropertiesMap`` as a dict (``None`` when absent)."""
    return None if found is None else dict(found.root)


def max_results(query: dict[str, str], kind: str) -> int:
    text = query.get("max_results")
    cap = MAX_RESULTS[kind]
    if text in (None, ""):
        return cap
    try:
        value = int(text)
    except ValueError as e:
        raise UcError("InvalidParameterValueException", f"max_results: {text!r}") from e
    if value < 0:
        raise UcError("InvalidParameterValueException", f"max_results is negative: {value}")
    return cap if value == 0 else min(value, cap)


def _page(names: list[str], query: dict[str, str], kind: str) -> tuple[list[str], str | None]:
    limit = max_results(query, kind)
    token = query.get("page_token") or None
    rest = [n for n in sorted(names) if token is None or n > token]
    if len(rest) <= limit:
        return rest, None
    return rest[:limit], rest[limit - 1]


def _listed(kind: str, items: list[dict[str, Any]], token: str | None) -> dict[str, Any]:
    """A UC list answer: the items, and the next page's token when more remain."""
    out: dict[str, Any] = {kind: items}
    if token:
        out["next_page_token"] = token
    return out


def _no_storage_root(storage_root: str | None) -> None:
    if storage_root:
        raise UcError(
            "InvalidParameterValueException",
            "deltalog keeps every table in its warehouse: storage_root is not supported",
        )


class UnityCatalogs:
    """The UC API's catalog, schema, table and credential routes over a
    :class:`~deltalog.server.lance.service.CatalogService`."""

    def __init__(self, service: CatalogService) -> None:
        self.service = service
        self.store = service.store
        #: The Delta API (set by the routes): creating a managed table is its staging logic.
        self.delta: Any = None

    # -- names -------------------------------------------------------------------------------

    def require(self, principal: Principal, role: str, what: str) -> None:
        from deltalog.server.auth import allows

        if not allows(principal.role, role):
            raise UcError(
                "PermissionDeniedException",
                f"{principal.name} ({principal.role}) may not {what}: it needs the {role} role",
            )

    def check_name(self, name: Any, what: str) -> str:
        from deltalog.catalog import names
        from deltalog.exceptions import InvalidArgumentError

        try:
            names.check_name(name, ".")
            return names.check_name(name, "$")  # in normalization form C
        except (InvalidArgumentError, TypeError) as e:
            raise UcError("InvalidParameterValueException", f"invalid {what} name: {e}") from e

    def spelled(self, names: list[str]) -> list[str]:
        """``names`` (catalog, schema) as the catalog stores them: names are found in any case
        or normalization form, and answered as they were created."""
        from deltalog.catalog.names import same_name

        out: list[str] = []
        parent = self.store.ROOT
        for name in names:
            stored = next(
                (n for n in self.store.child_namespaces(parent) if same_name(n, name)), None
            )
            found = self.store.namespace_id(parent, name)
            if stored is None or found is None:
                return [*out, *names[len(out) :]]
            out.append(stored)
            parent = found
        return out

    def catalog_id(self, catalog: str) -> int:
        found = self.store.namespace_id(self.store.ROOT, catalog)
        if found is None:
            raise UcError("NoSuchCatalogException", f"catalog {catalog!r} does not exist")
        return found

    def schema_id(self, catalog: str, schema: str) -> int:
        found = self.store.namespace_id(self.catalog_id(catalog), schema)
        if found is None:
            raise UcError("NoSuchSchemaException", f"schema {catalog}.{schema} does not exist")
        return found

    def table(self, catalog: str, schema: str, name: str, staging: bool = False) -> TableRecord:
        """The table ``catalog.schema.name`` (a staging table only when ``staging``)."""
        record = self.store.table(self.schema_id(catalog, schema), name)
        if record is None or (views.is_staging(record) and not staging):
            raise UcError("NoSuchTableException", f"table {catalog}.{schema}.{name} does not exist")
        return record

    @staticmethod
    def split(full_name: str, parts: int, what: str) -> list[str]:
        names = full_name.split(".")
        if len(names) != parts or not all(names):
            raise UcError(
                "InvalidParameterValueException",
                f"{what} full name {full_name!r} is not {'.'.join(['name'] * parts)}",
            )
        return names

    # -- catalogs ----------------------------------------------------------------------------

    def _namespace(self, nid: int) -> NamespaceRecord:
        found = self.store.namespace_record(nid)
        if found is None:
            raise UcError("NotFoundException", f"the namespace {nid} was dropped")
        return found

    def _storage_location(self, names: list[str]) -> str:
        """Where the managed tables of catalog / schema ``names`` are created: the warehouse
        directory :meth:`ManagedCatalog.derived_location` puts them under (UC API, CatalogInfo /
        SchemaInfo ``storage_location``: the managed storage location)."""
        return views.uri("/".join([self.service.catalog.warehouse, *names]))

    def _catalog_info(self, name: str, nid: int) -> dict[str, Any]:
        """The UC API's ``CatalogInfo`` (every field but ``storage_root``, which deltalog
        refuses: its tables live in its warehouse)."""
        record = self._namespace(nid)
        properties = dict(record.properties)
        info: dict[str, Any] = {
            "name": name,
            "id": namespace_uuid(nid),
            "properties": properties,
            "storage_location": self._storage_location([name]),
            **views.audit(
                record.created_ms, record.created_by, record.updated_ms, record.updated_by
            ),
        }
        if "comment" in properties:
            info["comment"] = properties["comment"]
        return info

    def list_catalogs(self, r: UcRequest) -> dict[str, Any]:
        names, token = _page(self.store.child_namespaces(self.store.ROOT), r.query, "catalogs")
        return _listed(
            "catalogs", [self._catalog_info(n, self.catalog_id(n)) for n in names], token
        )

    def create_catalog(self, r: UcRequest) -> dict[str, Any]:
        self.require(r.principal, "admin", "create a catalog")
        body = model(catalog_api.CreateCatalog, r.body)
        name = self.check_name(body.name, "catalog")
        _no_storage_root(body.storage_root)
        return self._create_namespace(
            r.principal, self.store.ROOT, name, body.comment, properties_of(body.properties), None
        )

    def _create_namespace(
        self,
        principal: Principal,
        parent: int,
        name: str,
        comment: str | None,
        properties: dict[str, str] | None,
        catalog: str | None,
    ) -> dict[str, Any]:
        from deltalog.exceptions import AlreadyExistsError

        props = dict(properties or {})
        if comment is not None:
            props["comment"] = comment
        if self.store.table(parent, name) is not None:
            raise UcError("AlreadyExistsException", f"{name!r} is the name of a table")
        try:
            self.store.create_namespace(parent, name, props, principal.name)
        except AlreadyExistsError as e:
            raise UcError("AlreadyExistsException", f"{name!r} already exists") from e
        nid = self.store.namespace_id(parent, name)
        if nid is None:
            raise UcError("NotFoundException", f"{name!r} was dropped at once")
        return (
            self._catalog_info(name, nid)
            if catalog is None
            else self._schema_info(catalog, name, nid)
        )

    def get_catalog(self, r: UcRequest) -> dict[str, Any]:
        name = r.params["name"]
        return self._catalog_info(self.spelled([name])[0], self.catalog_id(name))

    def delete_catalog(self, r: UcRequest) -> dict[str, Any]:
        self.require(r.principal, "admin", "delete a catalog")
        return self._drop([r.params["name"]], r.query)

    def _drop(self, names: list[str], query: dict[str, str]) -> dict[str, Any]:
        from deltalog.exceptions import NamespaceNotEmptyError

        nid = self.catalog_id(names[0]) if len(names) == 1 else self.schema_id(names[0], names[1])
        parent = self.store.ROOT if len(names) == 1 else self.catalog_id(names[0])
        if query.get("force", "false").lower() == "true":
            # UC API, deleteCatalog / deleteSchema: "force: Force deletion even if the
            # catalog is not empty" — of what UC holds there; what only the Lance routes see
            # (docs/catalogs.md, "Names") is never deleted through UC.
            hidden = self._hidden(names, nid)
            if hidden:
                shown = ", ".join(hidden[:20]) + (
                    f" and {len(hidden) - 20} more" if len(hidden) > 20 else ""
                )
                raise UcError(
                    "BadRequestException",
                    f"{'.'.join(names)} is not empty: it holds what Unity Catalog cannot see "
                    f"({shown}), which force=true does not delete: drop those through the "
                    "catalog's namespace (Lance) routes first",
                )
            self._drop_visible(names, nid)
        try:
            self.store.drop_namespace(parent, names[-1])
        except NamespaceNotEmptyError as e:
            raise UcError(
                "BadRequestException",
                f"{'.'.join(names)} is not empty (delete it with force=true)",
            ) from e
        return {}

    def _hidden(self, names: list[str], nid: int) -> list[str]:
        """What deleting catalog or schema ``names`` would remove that UC cannot see: tables
        directly in a catalog, namespaces below a schema and everything in them (deltalog's
        names, as the Lance routes' clients give them)."""
        found: list[str] = []

        def below(path: list[str], namespace: int) -> None:
            found.extend(".".join([*path, t]) for t in self.store.tables(namespace))
            for child in self.store.child_namespaces(namespace):
                child_id = self.store.namespace_id(namespace, child)
                found.append(f"namespace {'.'.join([*path, child])}")
                if child_id is not None:
                    below([*path, child], child_id)

        if len(names) == 2:
            for child in self.store.child_namespaces(nid):
                child_id = self.store.namespace_id(nid, child)
                found.append(f"namespace {'.'.join([*names, child])}")
                if child_id is not None:
                    below([*names, child], child_id)
            return found
        found.extend(".".join([*names, t]) for t in self.store.tables(nid))
        for schema in self.store.child_namespaces(nid):
            schema_id = self.store.namespace_id(nid, schema)
            if schema_id is not None:
                found.extend(self._hidden([*names, schema], schema_id))
        return found

    def _drop_visible(self, names: list[str], nid: int) -> None:
        """Drops what UC shows in catalog or schema ``names`` (its schemas, their tables):
        managed tables with their files, external ones from the catalog only."""
        if len(names) == 2:
            for record in self.store.table_records(nid):
                self.drop(record, [*names, record.name])
            return
        for schema in self.store.child_namespaces(nid):
            schema_id = self.store.namespace_id(nid, schema)
            if schema_id is not None:
                self._drop_visible([*names, schema], schema_id)
                self.store.drop_namespace(nid, schema)

    # -- schemas -----------------------------------------------------------------------------

    def _schema_info(self, catalog: str, name: str, nid: int) -> dict[str, Any]:
        """The UC API's ``SchemaInfo`` (every field but ``storage_root``, as catalogs)."""
        record = self._namespace(nid)
        properties = dict(record.properties)
        info: dict[str, Any] = {
            "name": name,
            "catalog_name": catalog,
            "full_name": f"{catalog}.{name}",
            "schema_id": namespace_uuid(nid),
            "properties": properties,
            "storage_location": self._storage_location([catalog, name]),
            **views.audit(
                record.created_ms, record.created_by, record.updated_ms, record.updated_by
            ),
        }
        if "comment" in properties:
            info["comment"] = properties["comment"]
        return info

    def list_schemas(self, r: UcRequest) -> dict[str, Any]:
        catalog = r.query.get("catalog_name")
        if not catalog:
            raise UcError("InvalidParameterValueException", "catalog_name is required")
        cid = self.catalog_id(catalog)
        (catalog,) = self.spelled([catalog])
        names, token = _page(self.store.child_namespaces(cid), r.query, "schemas")
        schemas = []
        for n in names:
            nid = self.store.namespace_id(cid, n)
            if nid is not None:
                schemas.append(self._schema_info(catalog, n, nid))
        return _listed("schemas", schemas, token)

    def create_schema(self, r: UcRequest) -> dict[str, Any]:
        self.require(r.principal, "admin", "create a schema")
        body = model(catalog_api.CreateSchema, r.body)
        name = self.check_name(body.name, "schema")
        _no_storage_root(body.storage_root)
        cid = self.catalog_id(body.catalog_name)
        (catalog,) = self.spelled([body.catalog_name])
        return self._create_namespace(
            r.principal, cid, name, body.comment, properties_of(body.properties), catalog
        )

    def get_schema(self, r: UcRequest) -> dict[str, Any]:
        catalog, schema = self.split(r.params["full_name"], 2, "schema")
        nid = self.schema_id(catalog, schema)
        catalog, schema = self.spelled([catalog, schema])
        return self._schema_info(catalog, schema, nid)

    def update_schema(self, r: UcRequest) -> dict[str, Any]:
        """``PATCH /schemas/{full_name}`` (``updateSchema``): ``properties`` replace the
        schema's (as UC's reference server does), ``comment`` sets its comment (kept otherwise);
        admin only, as creating one. ``new_name`` is not served (501)."""
        self.require(r.principal, "admin", "update a schema")
        body = model(catalog_api.UpdateSchema, r.body)
        catalog, schema = self.split(r.params["full_name"], 2, "schema")
        nid = self.schema_id(catalog, schema)
        catalog, schema = self.spelled([catalog, schema])
        self._update_namespace(
            r.principal, nid, body.comment, properties_of(body.properties), body.new_name
        )
        return self._schema_info(catalog, schema, nid)

    def update_catalog(self, r: UcRequest) -> dict[str, Any]:
        """``PATCH /catalogs/{name}`` (``updateCatalog``): as :meth:`update_schema`."""
        self.require(r.principal, "admin", "update a catalog")
        body = model(catalog_api.UpdateCatalog, r.body)
        nid = self.catalog_id(r.params["name"])
        (name,) = self.spelled([r.params["name"]])
        self._update_namespace(
            r.principal, nid, body.comment, properties_of(body.properties), body.new_name
        )
        return self._catalog_info(name, nid)

    def _update_namespace(
        self,
        principal: Principal,
        nid: int,
        comment: str | None,
        properties: dict[str, str] | None,
        new_name: str | None,
    ) -> None:
        if new_name is not None:
            raise UcError("NotImplementedException", "deltalog does not rename catalogs or schemas")
        if properties is None and comment is None:
            return
        current = self.store.namespace_properties(nid)
        after = dict(properties) if properties is not None else dict(current)
        after.pop("comment", None)
        kept = comment if comment is not None else current.get("comment")
        if kept is not None:
            after["comment"] = kept
        # The namespace's updated_at / updated_by (CatalogInfo, SchemaInfo) are this update's.
        self.store.set_namespace_properties(nid, after, principal.name)

    def delete_schema(self, r: UcRequest) -> dict[str, Any]:
        self.require(r.principal, "admin", "delete a schema")
        return self._drop(self.split(r.params["full_name"], 2, "schema"), r.query)

    # -- tables ------------------------------------------------------------------------------

    def list_tables(self, r: UcRequest) -> dict[str, Any]:
        catalog, schema = r.query.get("catalog_name"), r.query.get("schema_name")
        if not catalog or not schema:
            raise UcError(
                "InvalidParameterValueException", "catalog_name and schema_name are required"
            )
        sid = self.schema_id(catalog, schema)
        catalog, schema = self.spelled([catalog, schema])
        records = {t.name: t for t in self.store.table_records(sid) if not views.is_staging(t)}
        names, token = _page(list(records), r.query, "tables")
        infos = [views.table_info(self.service, catalog, schema, records[n]) for n in names]
        return _listed("tables", infos, token)

    def get_table(self, r: UcRequest) -> dict[str, Any]:
        catalog, schema, name = self.split(r.params["full_name"], 3, "table")
        record = self.table(catalog, schema, name)
        catalog, schema = self.spelled([catalog, schema])
        return views.table_info(self.service, catalog, schema, record)

    def delete_table(self, r: UcRequest) -> dict[str, Any]:
        self.require(r.principal, "admin", "delete a table")
        catalog, schema, name = self.split(r.params["full_name"], 3, "table")
        self.drop(self.table(catalog, schema, name, staging=True), [catalog, schema, name])
        return {}

    def drop(self, record: TableRecord, names: list[str]) -> None:
        """Drops a table: a managed one with its files (checked: the catalog's own location),
        an external one from the catalog only."""
        from deltalog.catalog.managed import PurgeRefusedError

        if not record.managed:
            self.store.drop_table(record.id)
            return
        try:
            self.service.catalog.drop_table(names)
        except PurgeRefusedError as e:
            raise UcError("BadRequestException", str(e)) from e

    def create_table(self, r: UcRequest) -> dict[str, Any]:
        """``POST /tables``: registers an external Delta table (admin, as the Lance routes'
        ``register``)."""
        body = model(catalog_api.CreateTable, r.body)
        kind = getattr(body.table_type, "value", body.table_type)
        if kind == "MANAGED":
            # The last step of POST /staging-tables, writing version 0, POST /tables.
            ordered = sorted(body.columns or [], key=lambda c: c.position or 0)
            partitions = sorted(
                (c for c in ordered if c.partition_index is not None),
                key=lambda c: c.partition_index or 0,
            )
            record = self.delta.promote(
                r.principal,
                [body.catalog_name, body.schema_name, body.name],
                body.storage_location or "",
                [c.name for c in ordered] if ordered else None,
                [c.name for c in partitions] if ordered else None,
            )
            return views.table_info(self.service, body.catalog_name, body.schema_name, record)
        self.require(r.principal, "admin", "register an external table")
        if kind != "EXTERNAL":
            raise UcError(
                "InvalidParameterValueException",
                f"POST /tables creates EXTERNAL or MANAGED (staged) tables, not {kind}",
            )
        fmt = getattr(body.data_source_format, "value", body.data_source_format)
        if fmt not in (None, "DELTA"):
            raise UcError("UnsupportedTableFormatException", f"deltalog keeps Delta tables: {fmt}")
        if not body.storage_location:
            raise UcError("InvalidParameterValueException", "storage_location is required")
        record = self.register_external(
            r.principal,
            body.catalog_name,
            body.schema_name,
            body.name,
            body.storage_location,
            {"comment": body.comment} if body.comment else None,
        )
        return views.table_info(self.service, body.catalog_name, body.schema_name, record)

    def register_external(
        self,
        principal: Principal,
        catalog: str,
        schema: str,
        name: str,
        location: str,
        properties: dict[str, str] | None,
    ) -> TableRecord:
        """Adds the Delta table at ``location`` as an external (storage-managed) table."""
        from deltalog.exceptions import AlreadyExistsError, DeltaError, TableNotFoundError
        from deltalog.server.lance.service import RestError
        from deltalog.table.delta_table import DeltaTable

        name = self.check_name(name, "table")
        sid = self.schema_id(catalog, schema)
        try:
            canonical = self.service._location(location)
        except RestError as e:
            raise UcError("InvalidParameterValueException", e.message) from e
        try:
            DeltaTable(canonical, storage_options=self.service.storage_options)
        except TableNotFoundError as e:
            raise UcError("NotFoundException", f"no Delta table at {location}: {e}") from e
        except DeltaError as e:
            raise UcError(
                "UnsupportedTableFormatException", f"{location} is not a readable Delta table: {e}"
            ) from e
        if self.store.namespace_id(sid, name) is not None:
            raise UcError("AlreadyExistsException", f"{name!r} is the name of a namespace")
        try:
            return self.store.register(sid, name, canonical, properties, principal=principal.name)
        except AlreadyExistsError as e:
            raise UcError("AlreadyExistsException", str(e)) from e
        except DeltaError as e:
            raise UcError("InvalidParameterValueException", str(e)) from e

    # -- temporary credentials ---------------------------------------------------------------

    def temporary_table_credentials(self, r: UcRequest) -> dict[str, Any]:
        body = model(catalog_api.GenerateTemporaryTableCredential, r.body)
        operation = getattr(body.operation, "value", body.operation)
        if operation not in ("READ", "READ_WRITE"):
            raise UcError("InvalidParameterValueException", f"operation {operation!r}")
        record = self.store.table_by_uuid(str(body.table_id))
        if record is None:
            raise UcError("NoSuchTableException", f"no table has id {body.table_id}")
        write = operation == "READ_WRITE"
        self.require(r.principal, "writer" if write else "reader", f"{operation} the table")
        return self.service.credentials.uc_form(record.location, write)

    def temporary_path_credentials(self, r: UcRequest) -> dict[str, Any]:
        body = model(catalog_api.GenerateTemporaryPathCredential, r.body)
        operation = getattr(body.operation, "value", body.operation)
        write = {"PATH_READ": False, "PATH_READ_WRITE": True, "PATH_CREATE_TABLE": True}.get(
            str(operation)
        )
        if write is None:
            raise UcError("InvalidParameterValueException", f"operation {operation!r}")
        return self.service.credentials.uc_form(
            self.service.credentials.path_for(r.principal, body.url, write), write
        )
