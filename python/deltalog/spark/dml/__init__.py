"""MERGE, DELETE and UPDATE computed by Spark, committed once by deltalog (protocol "Add File
and Remove File", "Deletion Vectors"):

- :mod:`.operations`: the entry points (``deltalog.spark.merge``, ``delete``, ``update``);
- :mod:`.merger`: the MERGE builder on Spark (:class:`SparkMerger`) and its join;
- :mod:`.rewrite`: what the three share: the target's rows read on the executors, tagged with
  their file and row index, and the files rewritten or marked deleted.
"""
