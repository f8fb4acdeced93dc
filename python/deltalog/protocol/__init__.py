"""The Delta protocol's rules that every layer above consults, with no I/O of their own.

- :mod:`~deltalog.protocol.features`: the table-feature registry and the read/write gate
  (protocol "Table Features", "Supported Features", "Reader/Writer Version Requirements";
  the ``catalogManaged`` RFC's "Catalog-managed Table Enablement").
- :mod:`~deltalog.protocol.properties`: the ``delta.*`` table properties deltalog accepts
  (protocol "Change Metadata", each feature's property).
- :mod:`~deltalog.protocol.catalog_client`: the client API a catalog implements for a
  catalog-managed table (catalogManaged RFC "Sample Catalog Client API"): the interface a table
  commits through, defined here so that tables need no catalog (``deltalog.catalog`` re-exports
  it as ``deltalog.catalog.CatalogClient``).

Dependencies point down only: this folder imports :mod:`deltalog.exceptions` and the native
module, never ``table``, ``write``, ``catalog`` or ``server``.
"""
