"""The client of a Lance Namespace REST catalog (``../shared/spec/003_…``, "Lance REST
Catalog") that makes such a server a deltalog catalog (:class:`RestCatalog`,
``connect_catalog({"type": "rest", "uri": …})``): :mod:`.client` (the catalog and its tables'
catalog clients) and :mod:`.protocol` (how Delta's catalog-managed commit protocol rides on
the namespace's routes, shared with the server, :mod:`deltalog.server`). Needs the ``rest``
extra (``pip install 'deltalog[rest]'``: ``lance-namespace-urllib3-client``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["RestCatalog"]


def __getattr__(name: str) -> Any:
    if name == "RestCatalog":
        from deltalog.catalog.clients.rest.client import RestCatalog

        return RestCatalog
    raise AttributeError(name)
