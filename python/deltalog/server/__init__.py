"""``deltalog catalog serve``: the catalog server, an ASGI app (Starlette, run by uvicorn) over a
:class:`deltalog.catalog.ManagedCatalog`.

- :mod:`.app`: the app, its routing, and the order a request goes through;
- :mod:`.auth` (tokens and roles), :mod:`.limits` (caps), :mod:`.connections` (slow and idle
  clients), :mod:`.redact` (what logs may hold);
- :mod:`.lance`: the Lance Namespace REST routes (``../shared/spec/003_…``, "Lance REST
  Catalog"), Delta's catalog-managed commits among them (catalogManaged RFC "Commit Protocol");
- :mod:`.unity`: the Unity Catalog routes (``/api/2.1/unity-catalog/``) and the Delta API v1.

Dependencies point one way: the server uses :mod:`deltalog.catalog` (which ratifies every
commit), never the other way round. Needs the ``rest`` extra.
"""

from deltalog.server.lazy_models import defer_package_init

# Before any module here imports the Lance Namespace models (:mod:`.lazy_models`).
defer_package_init()
