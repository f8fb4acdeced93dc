"""Writing data into Delta tables: the pieces every writing verb shares.

- :mod:`~deltalog.write.writer`: ``write_table`` (create, append, overwrite), the commit
  properties, the protocol a new table gets, and the writability gate of a loaded snapshot
  (protocol "Creation of New Log Entries", "Table Features for New and Existing Tables").
- :mod:`~deltalog.write.properties`: parquet writer properties (row groups, compression, bloom
  filters).
- :mod:`~deltalog.table.convert`: ``convert_to_deltalake`` (a parquet directory becomes a table).

Data files are encoded and committed by the native core (``rust/core/src/write``).
"""
