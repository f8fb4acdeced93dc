"""Reads of a Delta table on Spark. Two paths, one plan: deltalog's native core plans the scan
once (log replay, partition pruning, file skipping, deletion vectors: protocol "Action
Reconciliation", "Deletion Vectors"), then

- :mod:`.source`: the ``deltalog`` data source (PySpark's Python Data Source API): Python
  workers read the planned files through the native core; its options, its pushed filters
  (:mod:`.filters`);
- :mod:`.native`: Spark's own parquet source reads the planned files (``read_path`` /
  ``read_table``), with the JVM companion for deletion vectors.
"""
