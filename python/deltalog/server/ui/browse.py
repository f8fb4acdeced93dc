"""Namespaces and tables for the pages: a namespace's children and tables (catalogs are the
top-level namespaces, as Unity Catalog's API shows them), a search over table names, and
each table's summary (format, size, files, last commit).

A listing answers from the catalog's database alone (names, formats, who last changed what
and when); a table's size and file count need its snapshot, so the page asks for each
table's :func:`summary` on its own, and the summaries of a catalog-managed table's version are
kept (:class:`~deltalog.server.ui.snapshots.FigureCache`). An external table's latest version
is known only from its log, so its summary is kept for :data:`EXTERNAL_SUMMARY_SECONDS`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from deltalog.catalog.clients.rest import protocol as p
from deltalog.catalog.stores.records import TableRecord
from deltalog.server.lance.service import RestError
from deltalog.server.ui.snapshots import identity

if TYPE_CHECKING:
    from deltalog.server.lance.service import CatalogService
    from deltalog.server.ui.snapshots import FigureCache

#: How long an external table's summary is reused (its log may change behind the catalog).
EXTERNAL_SUMMARY_SECONDS = 30.0
#: The most tables a search answers, and the most namespaces it walks.
MAX_SEARCH_RESULTS, MAX_SEARCH_NAMESPACES = 200, 5000
#: The longest search text taken.
MAX_QUERY_CHARS = 200


def table_record(service: CatalogService, names: list[str], table: str) -> TableRecord:
    """The record of table ``table`` of namespace ``names`` (the Lance routes' lookup).

    Raises:
        RestError: code 1 or 4 (404) when there is none (or it is only declared).
    """
    record = service._table([*names, table])
    if record.managed and record.latest_version < 0:
        raise RestError(p.TABLE_NOT_FOUND, f"no table {'.'.join([*names, table])!r}")
    return record


def table_row(record: TableRecord) -> dict[str, Any]:
    """What a listing shows of a table from the catalog alone."""
    return {
        "name": record.name,
        "format": "delta",
        "catalog_managed": record.managed,
        "latest_version": record.latest_version if record.managed else None,
        "created_ms": record.created_ms,
        "created_by": record.created_by,
        "updated_ms": record.updated_ms if record.updated_ms is not None else record.created_ms,
        "updated_by": record.updated_by if record.updated_ms is not None else record.created_by,
        "location": record.location,
    }


def namespace(service: CatalogService, names: list[str]) -> dict[str, Any]:
    """Namespace ``names``: its properties, child namespaces and tables."""
    nid = service._namespace_id(names)
    store = service.store
    info: dict[str, Any] = {"namespace": names, "properties": {}}
    if names:
        record = store.namespace_record(nid)
        if record is not None:
            info.update(
                properties=dict(record.properties),
                created_ms=record.created_ms,
                created_by=record.created_by,
                updated_ms=record.updated_ms,
                updated_by=record.updated_by,
            )
    info["namespaces"] = sorted(store.child_namespaces(nid), key=str.lower)
    info["tables"] = [
        table_row(r)
        for r in sorted(store.table_records(nid), key=lambda r: r.name.lower())
        if not (r.managed and r.latest_version < 0)
    ]
    return info


def search(service: CatalogService, text: str) -> dict[str, Any]:
    """Tables whose dotted name contains ``text`` (case-insensitive), breadth first, at most
    :data:`MAX_SEARCH_RESULTS` of them after walking at most :data:`MAX_SEARCH_NAMESPACES`
    namespaces (``complete`` says whether the walk finished)."""
    from deltalog.catalog.managed import Store

    wanted = text.strip().lower()[:MAX_QUERY_CHARS]
    store = service.store
    found: list[dict[str, Any]] = []
    queue: list[tuple[int, list[str]]] = [(Store.ROOT, [])]
    walked = 0
    while queue and len(found) < MAX_SEARCH_RESULTS and walked < MAX_SEARCH_NAMESPACES:
        nid, names = queue.pop(0)
        walked += 1
        for record in sorted(store.table_records(nid), key=lambda r: r.name.lower()):
            if record.managed and record.latest_version < 0:
                continue
            if wanted in ".".join([*names, record.name]).lower():
                found.append({"namespace": names, **table_row(record)})
                if len(found) >= MAX_SEARCH_RESULTS:
                    break
        for child in sorted(store.child_namespaces(nid), key=str.lower):
            child_id = store.namespace_id(nid, child)
            if child_id is not None:
                queue.append((child_id, [*names, child]))
    return {"query": wanted, "tables": found, "complete": not queue}


def summary(service: CatalogService, figures: FigureCache, record: TableRecord) -> dict[str, Any]:
    """The table's size, file and row counts and latest commit, from its latest snapshot."""
    if record.managed:
        key: tuple[Any, ...] = (*identity(record), record.latest_version, "summary")
    else:
        window = int(time.monotonic() // EXTERNAL_SUMMARY_SECONDS)
        key = (*identity(record), "external", window, "summary")
    return figures.get(key, lambda: _summary(service, record))


def _summary(service: CatalogService, record: TableRecord) -> dict[str, Any]:
    import pyarrow.compute as pc

    table = service.open_table(record)
    adds = table.get_add_actions()
    rows = pc.sum(adds.column("num_records")).as_py() if adds.num_rows else 0
    size = pc.sum(adds.column("size")).as_py() if adds.num_rows else 0
    return {
        "version": table.version(),
        "timestamp": table.timestamp(),
        "files": adds.num_rows,
        "bytes": size or 0,
        "rows": rows,
        "rows_known": adds.num_rows == 0 or adds.column("num_records").null_count == 0,
    }
