"""Unity Catalog clients for the tests, none of them deltalog's: the generated
``unitycatalog-client`` (async; each call here runs it to completion on a fresh event loop and
client) and DuckDB with its ``unity_catalog`` extension (loaded, with ``httpfs`` and ``delta``,
from the PyPI packages' files).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from unitycatalog.client.api_client import ApiClient
from unitycatalog.client.configuration import Configuration
from unitycatalog.client.exceptions import ApiException

import deltalog.catalog.clients.unity.generated  # noqa: F401  (the Delta API package made whole)

PREFIX = "/api/2.1/unity-catalog"


class Uc:
    """The generated client of a UC server at ``url`` (``token``: its bearer token)."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.token = token

    def __call__(self, api: type[Any], method: str, *args: Any, **kwargs: Any) -> Any:
        """``api(client).method(*args, **kwargs)``, awaited."""
        from deltalog.catalog.clients.unity.generated import DeltaApiClient

        async def run() -> Any:
            config = Configuration(host=self.url + PREFIX)
            client_type = (
                DeltaApiClient if api.__module__.startswith("unitycatalog.delta") else (ApiClient)
            )
            # The generated configuration has no security scheme: the bearer is a header.
            header = {"header_name": "Authorization", "header_value": f"Bearer {self.token}"}
            async with client_type(config, **(header if self.token else {})) as client:
                return await getattr(api(client), method)(*args, **kwargs)

        return asyncio.run(run())

    def error(self, api: type[Any], method: str, *args: Any, **kwargs: Any) -> tuple[int, Any]:
        """The status and JSON body of a call that must fail."""
        try:
            self(api, method, *args, **kwargs)
        except ApiException as e:
            return int(e.status), json.loads(e.body) if e.body else None
        raise AssertionError(f"{method} succeeded")


def delta_error(status_body: tuple[int, Any], kind: str, status: int) -> None:
    """Checks a Delta API error answer: ``DeltaErrorResponse`` of ``kind`` with ``status``."""
    from deltalog.catalog.clients.unity.generated import delta_model

    got_status, body = status_body
    assert got_status == status, status_body
    delta_model("DeltaErrorResponse").from_dict(body)
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
