"""Unity Catalog clients for the tests, none of them deltalog's: plain HTTP (urllib3 and json,
a request per call on a fresh connection), its answers checked against the models generated
from the UC specs (:mod:`deltalog.protocol.unity`: the spec's shapes, not deltalog's client),
and DuckDB with its ``unity_catalog`` extension (loaded, with ``httpfs`` and ``delta``, from
the PyPI packages' files).

:class:`Uc` is called as ``uc(DeltaTablesApi, "load_table", "main", "sales", "orders")``: an
operation of the specs by its API (tag) and snake-case ``operationId``, the path parameters
positionally in the spec's order, then the request body; query parameters by keyword.
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import duckdb
import pydantic
import urllib3

from deltalog.protocol.unity import catalog_api, delta_api

PREFIX = "/api/2.1/unity-catalog"


class CatalogsApi:
    """The UC API's Catalogs operations."""


class SchemasApi:
    """The UC API's Schemas operations."""


class TablesApi:
    """The UC API's Tables operations."""


class TemporaryCredentialsApi:
    """The UC API's TemporaryCredentials operations."""


class DeltaConfigurationApi:
    """The Delta API's DeltaConfiguration operation."""


class DeltaTablesApi:
    """The Delta API's DeltaTables operations."""


class DeltaTemporaryCredentialsApi:
    """The Delta API's DeltaTemporaryCredentials operations."""


_T = "delta/v1/catalogs/{catalog}/schemas/{schema}/tables/{table}"
_D = "delta/v1/catalogs/{catalog}/schemas/{schema}"

#: (API, operation) -> (HTTP method, path, its positional parameters, answer model).
OPERATIONS: dict[tuple[type, str], tuple[str, str, tuple[str, ...], Any]] = {
    (CatalogsApi, "list_catalogs"): ("GET", "catalogs", (), catalog_api.ListCatalogsResponse),
    (CatalogsApi, "create_catalog"): ("POST", "catalogs", (), catalog_api.CatalogInfo),
    (CatalogsApi, "get_catalog"): ("GET", "catalogs/{name}", ("name",), catalog_api.CatalogInfo),
    (CatalogsApi, "update_catalog"): (
        "PATCH",
        "catalogs/{name}",
        ("name",),
        catalog_api.CatalogInfo,
    ),
    (CatalogsApi, "delete_catalog"): ("DELETE", "catalogs/{name}", ("name",), None),
    (SchemasApi, "list_schemas"): ("GET", "schemas", (), catalog_api.ListSchemasResponse),
    (SchemasApi, "create_schema"): ("POST", "schemas", (), catalog_api.SchemaInfo),
    (SchemasApi, "get_schema"): (
        "GET",
        "schemas/{full_name}",
        ("full_name",),
        catalog_api.SchemaInfo,
    ),
    (SchemasApi, "update_schema"): (
        "PATCH",
        "schemas/{full_name}",
        ("full_name",),
        catalog_api.SchemaInfo,
    ),
    (SchemasApi, "delete_schema"): ("DELETE", "schemas/{full_name}", ("full_name",), None),
    (TablesApi, "list_tables"): ("GET", "tables", (), catalog_api.ListTablesResponse),
    (TablesApi, "create_table"): ("POST", "tables", (), catalog_api.TableInfo),
    (TablesApi, "create_staging_table"): (
        "POST",
        "staging-tables",
        (),
        catalog_api.StagingTableInfo,
    ),
    (TablesApi, "get_table"): ("GET", "tables/{full_name}", ("full_name",), catalog_api.TableInfo),
    (TablesApi, "delete_table"): ("DELETE", "tables/{full_name}", ("full_name",), None),
    (TemporaryCredentialsApi, "generate_temporary_table_credentials"): (
        "POST",
        "temporary-table-credentials",
        (),
        catalog_api.TemporaryCredentials,
    ),
    (TemporaryCredentialsApi, "generate_temporary_path_credentials"): (
        "POST",
        "temporary-path-credentials",
        (),
        catalog_api.TemporaryCredentials,
    ),
    (DeltaConfigurationApi, "get_config"): (
        "GET",
        "delta/v1/config",
        (),
        delta_api.DeltaCatalogConfig,
    ),
    (DeltaTablesApi, "create_staging_table"): (
        "POST",
        _D + "/staging-tables",
        ("catalog", "schema"),
        delta_api.DeltaStagingTableResponse,
    ),
    (DeltaTablesApi, "create_table"): (
        "POST",
        _D + "/tables",
        ("catalog", "schema"),
        delta_api.DeltaLoadTableResponse,
    ),
    (DeltaTablesApi, "load_table"): (
        "GET",
        _T,
        ("catalog", "schema", "table"),
        delta_api.DeltaLoadTableResponse,
    ),
    (DeltaTablesApi, "update_table"): (
        "POST",
        _T,
        ("catalog", "schema", "table"),
        delta_api.DeltaLoadTableResponse,
    ),
    (DeltaTablesApi, "delete_table"): ("DELETE", _T, ("catalog", "schema", "table"), None),
    (DeltaTablesApi, "table_exists"): ("HEAD", _T, ("catalog", "schema", "table"), None),
    (DeltaTablesApi, "rename_table"): (
        "POST",
        _T + "/rename",
        ("catalog", "schema", "table"),
        None,
    ),
    (DeltaTablesApi, "report_metrics"): (
        "POST",
        _T + "/metrics",
        ("catalog", "schema", "table"),
        None,
    ),
    (DeltaTemporaryCredentialsApi, "get_table_credentials"): (
        "GET",
        _T + "/credentials",
        ("operation", "catalog", "schema", "table"),
        delta_api.DeltaCredentialsResponse,
    ),
    (DeltaTemporaryCredentialsApi, "get_staging_table_credentials"): (
        "GET",
        "delta/v1/staging-tables/{table_id}/credentials",
        ("table_id",),
        delta_api.DeltaCredentialsResponse,
    ),
    (DeltaTemporaryCredentialsApi, "get_temporary_path_credentials"): (
        "GET",
        "delta/v1/temporary-path-credentials",
        ("location", "operation"),
        delta_api.DeltaCredentialsResponse,
    ),
}


#: Query parameters whose spec names are not Python names.
QUERY_NAMES = {"protocol_versions": "protocol-versions"}


class UcHttpError(Exception):
    """An error answer: its status and JSON body (``None`` when it has none)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


def _text(value: Any) -> str:
    return str(getattr(value, "value", value))


def dump(model: Any) -> Any:
    """A model's wire JSON (by alias, absent fields left out)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def delta_model(name: str) -> Any:
    """The Delta API model class ``name`` (e.g. ``DeltaLoadTableResponse``)."""
    return getattr(delta_api, name)


class Uc:
    """A plain-HTTP client of a UC server at ``url`` (``token``: its bearer token)."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.token = token

    def raw(
        self, method: str, route: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> urllib3.BaseHTTPResponse:
        """One request below :data:`PREFIX` (``route`` already encoded), on a new connection."""
        url = self.url + PREFIX + "/" + route
        params = {k: _text(v) for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urlencode(params)
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            document = dump(body) if isinstance(body, pydantic.BaseModel) else body
            data = json.dumps(document).encode()
            headers["Content-Type"] = "application/json"
        with urllib3.PoolManager(retries=False, timeout=60) as http:
            return http.request(method, url, body=data, headers=headers)

    def __call__(self, api: type, operation: str, *args: Any, **query: Any) -> Any:
        """The operation's answer, validated by the spec's model (see the module docs)."""
        method, template, params, answer = OPERATIONS[(api, operation)]
        values = dict(zip(params, args, strict=False))
        rest = args[len(params) :]
        body = rest[0] if rest else None
        route = template
        for name in params:
            segment = "{" + name + "}"
            if segment in route:
                route = route.replace(segment, quote(_text(values[name]), safe=""))
            else:
                query[name] = values[name]
        query = {QUERY_NAMES.get(k, k): v for k, v in query.items()}
        response = self.raw(method, route, body, query)
        if not 200 <= response.status < 300:
            text = response.data.decode() if response.data else ""
            raise UcHttpError(response.status, json.loads(text) if text else None)
        if answer is None:
            return None
        return answer.model_validate_json(response.data)

    def error(self, api: type, operation: str, *args: Any, **kwargs: Any) -> tuple[int, Any]:
        """The status and JSON body of a call that must fail."""
        try:
            self(api, operation, *args, **kwargs)
        except UcHttpError as e:
            return e.status, e.body
        raise AssertionError(f"{operation} succeeded")


def delta_error(status_body: tuple[int, Any], kind: str, status: int) -> None:
    """Checks a Delta API error answer: ``DeltaErrorResponse`` of ``kind`` with ``status``."""
    got_status, body = status_body
    assert got_status == status, status_body
    delta_api.DeltaErrorResponse.model_validate(body)
    assert body["error"]["type"] == kind and body["error"]["code"] == status, body


def uc_error(status_body: tuple[int, Any], code: str, status: int) -> None:
    """Checks a UC API error answer (``error_code``, ``message``)."""
    got_status, body = status_body
    assert got_status == status, status_body
    assert body["error_code"] == code and body["message"], body


def staged_commit(location: str, version: int, values: list[int]) -> str:
    """Writes a commit by hand (not deltalog: ``test_catalog_rest.hand_commit``, a parquet
    file written by pyarrow and its ``add`` after a ``commitInfo`` with an in-commit
    timestamp and a ``txnId``) as a staged commit in ``_delta_log/_staged_commits/``. Returns
    its file name."""
    from test_catalog_rest import hand_commit

    staged = Path(location) / "_delta_log" / "_staged_commits"
    staged.mkdir(parents=True, exist_ok=True)
    file_name = f"{version:020d}.{uuid.uuid4()}.json"
    (staged / file_name).write_text(hand_commit(location, version, values))
    return file_name


def commit_of(location: str, file_name: str) -> dict[str, Any]:
    """The Delta API's ``DeltaCommit`` (JSON) of a staged commit file."""
    path = Path(location) / "_delta_log" / "_staged_commits" / file_name
    first = json.loads(path.read_text().splitlines()[0])
    return {
        "version": int(file_name.split(".")[0]),
        "timestamp": first["commitInfo"]["inCommitTimestamp"],
        "file-name": file_name,
        "file-size": path.stat().st_size,
        "file-modification-timestamp": int(path.stat().st_mtime * 1000),
    }


def _extension(package: str, name: str) -> str:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, f"{package} is missing"
    root = Path(next(iter(spec.submodule_search_locations))) / "extensions"
    path = root / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    assert path.is_file(), f"no {name} extension for DuckDB {duckdb.__version__}"
    return str(path).replace("'", "''")


def duckdb_attached(
    url: str, catalog: str, schema: str, token: str = "none", alias: str = "uc"
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB attached to the UC server at ``url`` (its ``catalog``, default
    ``schema``) as ``alias``: the extensions loaded from the PyPI packages' files (never
    downloaded), the zone UTC."""
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    for package, name in (
        ("duckdb_extension_httpfs", "httpfs"),
        ("duckdb_extension_delta", "delta"),
        ("duckdb_extension_unity_catalog", "unity_catalog"),
    ):
        con.execute(f"LOAD '{_extension(package, name)}'")
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE SECRET (TYPE unity_catalog, TOKEN '{token}', ENDPOINT '{url}')")
    con.execute(f"ATTACH '{catalog}' AS {alias} (TYPE unity_catalog, DEFAULT_SCHEMA '{schema}')")
    return con


def retry(times: int, action: Callable[[], Any]) -> Any:
    """``action()``, tried up to ``times`` times (the last failure is raised)."""
    for i in range(times):
        try:
            return action()
        except Exception:
            if i == times - 1:
                raise
    return None
