"""Makes ``spark.read.format("deltalog")`` work without registering it first: PySpark imports
every installed top-level module named ``pyspark_*`` and registers its ``DefaultSource``
(``pyspark.sql.worker.lookup_data_sources``)."""

from deltalog.spark.read.source import DeltaDataSource as DefaultSource

__all__ = ["DefaultSource"]
