"""The options of the deltalog data source (:mod:`deltalog.spark.read.source`, whose docs list
them), keys lower-cased as Spark passes them, and the table they name: by location, or by name
in a catalog (``catalog``, or the default catalog given to :func:`deltalog.spark.register`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable


#: Where a source registered with a default catalog finds it among its options.
DEFAULT_CATALOG_OPTION = "deltalog.defaultcatalog"


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key.lower())
    if value is None:
        return False
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"option {key!r} must be true or false, not {value!r}")


def _int(options: Mapping[str, str], key: str, default: int | None = None) -> int | None:
    value = options.get(key.lower())
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"option {key!r} must be an integer, not {value!r}") from None


def _storage_options(options: Mapping[str, str]) -> dict[str, str] | None:
    text = options.get("storageoptions")
    if not text:
        return None
    parsed = json.loads(text)
    if not isinstance(parsed, dict):
        raise ValueError("option 'storageOptions' must be a JSON object")
    return {str(k): str(v) for k, v in parsed.items()}


def looks_like_a_name(text: str) -> bool:
    """Whether ``load(text)``/``save(text)`` names a catalog table (``ns.table``) rather than a
    location: no path separator and no URI scheme."""
    return "/" not in text and "\\" not in text and ":" not in text


def _catalog_table(options: Mapping[str, str]) -> tuple[Any, str] | None:
    """The catalog (``catalog``: its configuration as JSON, as ``dl.connect_catalog`` takes
    it; else the default catalog given to :func:`deltalog.spark.register` when the path is a
    table identifier) and the table's name in it (``load(name)`` / ``save(name)``, or
    ``table``)."""
    config = options.get("catalog")
    if not config:
        default = options.get(DEFAULT_CATALOG_OPTION)
        name = options.get("table") or options.get("path") or ""
        if not default or not looks_like_a_name(name):
            return None
        config = default
    from deltalog.catalog import connect_catalog

    parsed = json.loads(config)
    if not isinstance(parsed, dict):
        raise ValueError("option 'catalog' must be a JSON object (a catalog configuration)")
    name = options.get("table") or options.get("path") or ""
    if not name:
        raise ValueError("name the catalog's table: .load(name) / .save(name) or 'table'")
    return connect_catalog(parsed, _storage_options(options)), name


def _open(
    options: Mapping[str, str], version: int | None = None, timestamp: str | None = None
) -> DeltaTable:
    """The table the options name: by location, or by name in a catalog (through its catalog
    when it is catalog-managed)."""
    from deltalog.table.delta_table import DeltaTable

    named = _catalog_table(options)
    if named is None:
        return DeltaTable(
            _path(options),
            version=version,
            timestamp=timestamp,
            storage_options=_storage_options(options),
        )
    catalog, name = named
    table: DeltaTable = catalog.load_table(name, version=version)
    if timestamp is not None:
        table.load_as_version(timestamp)
    return table


def _exists(options: Mapping[str, str]) -> bool:
    from deltalog.table.delta_table import DeltaTable

    named = _catalog_table(options)
    if named is None:
        return DeltaTable.is_deltatable(_path(options), _storage_options(options))
    catalog, name = named
    return bool(catalog.table_exists(name))


def _path(options: Mapping[str, str]) -> str:
    path = options.get("path")
    if not path:
        raise ValueError(
            "the deltalog data source needs the table's location: .load(uri) / .save(uri)"
        )
    return path
