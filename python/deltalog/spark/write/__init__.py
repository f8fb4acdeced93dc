"""Writes of a Delta table on Spark: data files written by Spark's tasks, one commit by
deltalog's native core on the driver (protocol "Creation of New Log Entries").

- :mod:`.source_writer`: writing through the ``deltalog`` data source (``df.write.format``),
  Python workers encoding the files;
- :mod:`.native`: Spark's own parquet writer writes, deltalog commits (``write_table``);
- :mod:`.partitioning`: ``DataFrameWriter.partitionBy`` for the ``deltalog`` format.
"""
