"""deltalog's REST catalog: a Lance Namespace REST server for Delta tables
(:mod:`deltalog.catalog.rest.server`, ``deltalog catalog serve``) and the client that makes
such a server a deltalog catalog (:class:`RestCatalog`, ``connect_catalog({"type": "rest",
"uri": …})``). Both need the ``rest`` extra (``pip install 'deltalog[rest]'``): Starlette and
uvicorn for the server, ``lance-namespace-urllib3-client`` for both.

How Delta's catalog-managed commit protocol rides on the namespace's routes is described in
:mod:`deltalog.catalog.rest.protocol`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RestCatalog"]


def __getattr__(name: str) -> Any:
    if name == "RestCatalog":
        from deltalog.catalog.rest.client import RestCatalog

        return RestCatalog
    raise AttributeError(name)
