"""What deltalake's and pyiceberg's users reach for on a table, under their names.

- :mod:`~deltalog.table.interop.compat`: deltalake's ``DeltaTable`` methods and classes
  (``count``, ``partitions``, ``table_config``, ``AddAction``, ``TableFeatures`` ...);
- :mod:`~deltalog.table.interop.arguments`: deltalake's keyword arguments on deltalog's verbs,
  honoured or refused in one place;
- :mod:`~deltalog.table.interop.deletion_vectors`: a table's deletion vectors as rows;
- :mod:`~deltalog.table.interop.query`: ``QueryBuilder`` (SQL on DuckDB over deltalog's scans);
- :mod:`~deltalog.table.interop.pyiceberg`, :mod:`~deltalog.table.interop.inspect`,
  :mod:`~deltalog.table.interop.upsert`, :mod:`~deltalog.table.interop.schema_update`:
  pyiceberg's ``inspect``, ``upsert`` and ``update_schema``.
"""
