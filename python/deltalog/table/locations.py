"""Table locations that only a catalog can resolve, and what a catalog tells a table it opens.

``DeltaTable("uc://main.sales.orders")`` (a Unity Catalog table) and
``DeltaTable("prod.sales.orders")`` (a table of the named catalog ``prod``) name a table its
catalog locates. The table layer never imports :mod:`deltalog.catalog` (dependencies point one
way: server → catalog → table → protocol): the catalog package registers its resolvers here
when it is imported, which ``import deltalog`` always does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from deltalog.protocol.catalog_client import CatalogClient
    from deltalog.table.delta_table import DeltaTable


class CatalogTableState(Protocol):
    """What a catalog recorded of one of its tables (``deltalog.catalog.managed.TableRecord``
    has these fields): its location, latest version and, when the catalog caches them, the
    protocol and metadata actions of that version (JSON)."""

    @property
    def location(self) -> str: ...

    @property
    def latest_version(self) -> int: ...

    @property
    def protocol(self) -> str | None: ...

    @property
    def metadata(self) -> str | None: ...


#: ``uri, storage_options`` → the table's location, storage options and catalog client.
SchemeResolver = Callable[
    [str, "Mapping[str, str] | None"],
    "tuple[str, dict[str, str] | None, CatalogClient | None]",
]


@dataclass
class _Registry:
    schemes: dict[str, SchemeResolver]
    #: ``"prod.sales.orders", version`` → the table loaded through its catalog, or None when
    #: the text is not such a name.
    names: Callable[[str, int | None], DeltaTable | None] | None = None
    #: why a location that holds no table may have been meant as a catalog's table.
    hint: Callable[[str], str | None] | None = None


_registry = _Registry(schemes={})


def register_scheme(prefix: str, resolver: SchemeResolver) -> None:
    """Locations starting with ``prefix`` (``"uc://"``) are resolved by ``resolver``."""
    _registry.schemes[prefix] = resolver


def register_names(
    resolve: Callable[[str, int | None], DeltaTable | None], hint: Callable[[str], str | None]
) -> None:
    """Dotted names (``catalog.namespace.table``) are resolved by ``resolve``; ``hint`` says
    why a location with no table may have been meant as one."""
    _registry.names, _registry.hint = resolve, hint


def scheme_resolver(uri: str) -> SchemeResolver | None:
    for prefix, resolver in _registry.schemes.items():
        if uri.startswith(prefix):
            return resolver
    return None


def table_of_catalog(text: str, version: int | None) -> DeltaTable | None:
    return _registry.names(text, version) if _registry.names is not None else None


def catalog_hint(text: str) -> str | None:
    return _registry.hint(text) if _registry.hint is not None else None
