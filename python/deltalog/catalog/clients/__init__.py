"""Catalogs deltalog reaches over the network: a Lance Namespace REST server (:mod:`.rest`,
deltalog's own ``deltalog catalog serve`` or another) and Unity Catalog (:mod:`.unity`). Each
implements :class:`deltalog.catalog.Catalog` and hands its tables a
:class:`deltalog.catalog.CatalogClient` (catalogManaged RFC "Commit Protocol")."""
