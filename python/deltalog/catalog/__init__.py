"""Catalogs and catalog-managed tables.

The ``catalogManaged`` table feature (RFC ``000_…`` in ``../shared/spec``) makes a table's
managing catalog the source of truth for its commits: a commit is *ratified* by the catalog,
staged in ``_delta_log/_staged_commits/`` or held *inline* by the catalog, and *published* to
``_delta_log/<v>.json`` later. Readers ask the catalog for the ratified commits it still holds.

This package holds:

* the client-side API catalogs target (:class:`CatalogClient`, :class:`RatifiedCommit`,
  :class:`RatifiedCommits`; the RFC's "Sample Catalog Client API", made Pythonic). Any object
  implementing :class:`CatalogClient` can be passed to ``DeltaTable(uri, catalog_client=...)``,
  so an adapter for another catalog works too;
* the catalogs deltalog ships, organised as the Lance catalog specification (``003_…``) says
  (:class:`Catalog`, identifiers), opened with :func:`connect_catalog`:
  :class:`DirectoryCatalog` (``type: dir``) and :class:`ManagedCatalog`, whose tables are
  catalog-managed, over the embedded :class:`SqliteStore` (``type: sqlite``) or a
  :class:`PostgresStore` (``type: postgresql``; psycopg 3 is imported only then). Both stores
  share their catalog logic (:class:`deltalog.catalog.stores.sql.SqlStore`);
* :class:`CatalogTransaction` (``ManagedCatalog.transaction()``): commits to several
  catalog-managed tables ratified together, or none of them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.catalog.base import Catalog, Identifier, parse_identifier
from deltalog.catalog.named import load_catalog, not_a_catalog, table_of_catalog
from deltalog.exceptions import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.catalog_client import (
    DEFERRED,
    MAINTENANCE_OPERATIONS,
    CatalogClient,
    RatifiedCommit,
    RatifiedCommits,
)
from deltalog.table import locations

if TYPE_CHECKING:
    from deltalog.catalog.managed import (
        ManagedCatalog,
        Proposal,
        PurgeRefusedError,
        TableCatalogClient,
        TableDescription,
    )
    from deltalog.catalog.names import InvalidNameError
    from deltalog.catalog.ratification import ProposalError
    from deltalog.catalog.stores.directory import DirectoryCatalog
    from deltalog.catalog.stores.existence import CatalogNotFoundError
    from deltalog.catalog.stores.postgresql import PostgresStore
    from deltalog.catalog.stores.sqlite import SqliteStore
    from deltalog.catalog.transaction import CatalogTransaction

#: The catalogs and stores, imported on first use: ``import deltalog`` (and every table
#: opened by path) does not pay for the SQL stores, ratification and the rest (about 60 ms).
_LAZY = {
    "DirectoryCatalog": "deltalog.catalog.stores.directory",
    "ManagedCatalog": "deltalog.catalog.managed",
    "Proposal": "deltalog.catalog.managed",
    "PurgeRefusedError": "deltalog.catalog.managed",
    "TableCatalogClient": "deltalog.catalog.managed",
    "TableDescription": "deltalog.catalog.managed",
    "InvalidNameError": "deltalog.catalog.names",
    "PostgresStore": "deltalog.catalog.stores.postgresql",
    "ProposalError": "deltalog.catalog.ratification",
    "SqliteStore": "deltalog.catalog.stores.sqlite",
    "CatalogTransaction": "deltalog.catalog.transaction",
    "CatalogNotFoundError": "deltalog.catalog.stores.existence",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deltalog.catalog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "DEFERRED",
    "MAINTENANCE_OPERATIONS",
    "Catalog",
    "CatalogClient",
    "CatalogNotFoundError",
    "CatalogTransaction",
    "DirectoryCatalog",
    "Identifier",
    "InvalidNameError",
    "ManagedCatalog",
    "PostgresStore",
    "Proposal",
    "ProposalError",
    "PurgeRefusedError",
    "RatifiedCommit",
    "RatifiedCommits",
    "SqliteStore",
    "TableCatalogClient",
    "TableDescription",
    "connect_catalog",
    "load_catalog",
    "parse_identifier",
]

#: The catalogs over a store: where their database is (the config key) and what it is.
_STORES = {
    "sqlite": ("path", "the database file"),
    "postgresql": ("uri", "the database, postgresql://…"),
}


def connect_catalog(
    config: Mapping[str, str],
    storage_options: Mapping[str, str] | None = None,
    create: bool = True,
) -> Catalog:
    """Opens a catalog from its configuration (Lance catalog specification:
    "Configurations"): ``type`` (``dir``, ``sqlite`` or ``postgresql``); ``path`` (the
    directory, or the SQLite database file); ``uri`` (the PostgreSQL database, a
    ``postgresql://`` URI or a libpq connection string; the server of a ``rest`` catalog,
    ``http://host:port``); ``token`` (a rest catalog's bearer token); ``timeout`` (seconds, a
    rest catalog's per-call timeout); ``warehouse`` (where a sqlite or
    postgresql catalog's tables live); an optional ``delimiter`` for string identifiers.

    ``create``: a SQLite or PostgreSQL catalog that does not exist yet is created (its
    database file, its schema), as a brand-new embedded catalog is; with ``create=False`` a
    catalog that does not exist (its local directory, database file or deltalog schema) is
    refused and nothing is created (:mod:`deltalog.catalog.stores.existence`; named catalogs are
    opened so).

    Raises:
        InvalidArgumentError: a missing or unknown key.
        UnsupportedFeatureError: a catalog type deltalog does not provide yet, or psycopg is
            not installed for a postgresql catalog.
        CatalogError: the catalog database cannot be reached, or has a newer schema.
        CatalogNotFoundError: ``create=False`` and the catalog does not exist (a
            :class:`~deltalog.CatalogError`).
    """
    from deltalog.catalog.managed import ManagedCatalog
    from deltalog.catalog.stores.directory import DirectoryCatalog, _directory_uri
    from deltalog.catalog.stores.postgresql import PostgresStore
    from deltalog.catalog.stores.sqlite import SqliteStore

    if not isinstance(config, Mapping):
        raise TypeError(f"a catalog configuration is a mapping, not {type(config).__name__}")
    kind = config.get("type")
    delimiter = config.get("delimiter", ".")
    if kind == "dir":
        unknown = set(config) - {"type", "path", "delimiter"}
        if unknown:
            raise InvalidArgumentError(
                f"unknown keys for a directory catalog: {', '.join(sorted(unknown))}"
            )
        path = config.get("path")
        if not path:
            raise InvalidArgumentError('a directory catalog needs "path" (Lance catalog spec)')
        if not create:
            from deltalog.catalog.stores.existence import require_directory

            require_directory(_directory_uri(path))
        return DirectoryCatalog(path, storage_options=storage_options, delimiter=delimiter)
    if kind in _STORES:
        key, what = _STORES[kind]
        unknown = set(config) - {"type", key, "warehouse", "delimiter"}
        if unknown:
            raise InvalidArgumentError(
                f"unknown keys for a {kind} catalog: {', '.join(sorted(unknown))}"
            )
        where, warehouse = config.get(key), config.get("warehouse")
        if not where or not warehouse:
            raise InvalidArgumentError(
                f'a {kind} catalog needs "{key}" ({what}) and "warehouse" (where its tables live)'
            )
        if not create:  # an existing catalog only: nothing created, no schema migrated in
            from deltalog.catalog.stores import existence

            if kind == "sqlite":
                existence.require_sqlite_catalog(os.path.abspath(where))
            else:
                existence.require_postgresql_catalog(where)
        store = SqliteStore(os.path.abspath(where)) if kind == "sqlite" else PostgresStore(where)
        return ManagedCatalog(store, _directory_uri(warehouse), delimiter=delimiter)
    if kind == "rest":
        unknown = set(config) - {"type", "uri", "token", "delimiter", "timeout"}
        if unknown:
            raise InvalidArgumentError(
                f"unknown keys for a rest catalog: {', '.join(sorted(unknown))}"
            )
        if not config.get("uri"):
            raise InvalidArgumentError('a rest catalog needs "uri" (http://host:port)')
        try:
            from deltalog.catalog.clients.rest.client import RestCatalog
        except ImportError as e:
            raise UnsupportedFeatureError(
                "the rest catalog needs lance-namespace-urllib3-client, which is not "
                f"installed: pip install 'deltalog[rest]' ({e})"
            ) from e
        timeout = _timeout(config)
        return RestCatalog(
            config["uri"],
            token=config.get("token"),
            delimiter=delimiter,
            timeout=timeout,
            storage_options=storage_options,
        )
    if kind == "unity":
        unknown = set(config) - {"type", "uri", "token", "catalog", "schema", "timeout"}
        if unknown:
            raise InvalidArgumentError(
                f"unknown keys for a unity catalog: {', '.join(sorted(unknown))}"
            )
        if not config.get("uri") or not config.get("catalog"):
            raise InvalidArgumentError(
                'a unity catalog needs "uri" (the server, http://host:port) and "catalog" '
                "(the UC catalog's name)"
            )
        from deltalog.catalog.clients.unity.client import UnityCatalog

        timeout = _timeout(config)
        return UnityCatalog(
            config["uri"],
            config["catalog"],
            token=config.get("token"),
            timeout=timeout,
            storage_options=storage_options,
            schema=config.get("schema"),
        )
    raise InvalidArgumentError(
        f"unknown catalog type {kind!r}: expected 'dir' (a directory of tables), 'sqlite', "
        "'postgresql', 'rest' or 'unity'"
    )


def _timeout(config: Mapping[str, str]) -> float:
    """A remote catalog's per-call timeout in seconds (``timeout``, default 30)."""
    try:
        return float(config.get("timeout", 30))
    except ValueError as e:
        raise InvalidArgumentError(f"timeout is not a number: {config['timeout']!r}") from e


def _resolve_uc_uri(
    uri: str, storage_options: Mapping[str, str] | None
) -> tuple[str, dict[str, str] | None, CatalogClient | None]:
    from deltalog.catalog.clients.unity.client import resolve_uc_uri

    return resolve_uc_uri(uri, storage_options)


# Locations only a catalog resolves (deltalog.table.locations): uc:// URIs and the tables of
# named catalogs ("prod.sales.orders").
locations.register_scheme("uc://", _resolve_uc_uri)
locations.register_names(table_of_catalog, not_a_catalog)
