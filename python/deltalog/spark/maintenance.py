"""Table maintenance on Spark. ``deltalog.spark.optimize`` plans an OPTIMIZE on the driver,
rewrites each unit of work (a bin of small files, or a partition's files for Z-order and
clustering) on an executor with deltalog's native core, and commits every rewrite as one
OPTIMIZE version from the driver, under the same conflict rule as ``t.optimize`` (only a
concurrent removal of a rewritten file conflicts; appends land). For tables whose OPTIMIZE
outgrows one machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from deltalog.exceptions import UnsupportedFeatureError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.expressions import FilterLike
    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.properties import WriterProperties
    from deltalog.write.writer import CommitProperties


def optimize(
    spark: SparkSession,
    table: DeltaTable,
    z_order_by: str | Iterable[str] | None = None,
    partition_filters: str | FilterLike | None = None,
    target_size: int | None = None,
    memory_limit: int | None = None,
    commit_properties: CommitProperties | Any | None = None,
    writer_properties: WriterProperties | Any | None = None,
) -> dict[str, Any]:
    """OPTIMIZE of ``table`` (its loaded version) rewritten on Spark's executors: compaction
    (clustering on a clustered table), or Z-order by ``z_order_by``; the new files encoded
    with ``writer_properties`` when given (deltalog's or deltalake's, as ``t.optimize``
    takes them). Returns the metrics of :meth:`deltalog.table.optimize.TableOptimizer.compact`
    (deltalake's keys and types)."""
    from deltalog import _native
    from deltalog.expressions import to_predicate
    from deltalog.protocol import features
    from deltalog.table import optimize_args
    from deltalog.write.writer import check_snapshot_writable

    check_snapshot_writable(table._raw)
    if features.is_catalog_managed(table.protocol()):
        raise UnsupportedFeatureError(
            "OPTIMIZE through Spark reads a path-based table's published log on the executors; "
            "a catalog-managed table is optimized with t.optimize",
            ["catalogManaged"],
        )
    columns: list[str] | None = None
    if z_order_by is not None:
        columns = [z_order_by] if isinstance(z_order_by, str) else list(z_order_by)
    layout = "zorder" if columns is not None else "compact"
    if isinstance(partition_filters, str):
        sql: str | None = partition_filters
    else:
        predicate = to_predicate(partition_filters)
        sql = predicate.to_sql() if predicate is not None else None
    plan = _native.optimize_plan(table._raw, layout, columns, False, sql, target_size)
    target, units, _considered, _partitions = plan
    uri, version = table.table_uri, table.version()
    storage = dict(table._storage_options) if table._storage_options else None
    props = optimize_args.commit_properties(commit_properties)
    writer_properties = optimize_args.writer_properties(writer_properties)
    parquet = writer_properties.to_json() if writer_properties is not None else None
    results: list[tuple[list[str], int, int, int]] = []
    if units:

        def rewrite(paths: list[str]) -> tuple[list[str], int, int, int]:
            from deltalog import _native as native

            snapshot = native.RawSnapshot.open(uri, version, storage, None)
            return native.optimize_rewrite(
                snapshot, layout, paths, columns, False, target, memory_limit, parquet
            )

        results = spark.sparkContext.parallelize(units, len(units)).map(rewrite).collect()
    native: dict[str, Any] = _native.optimize_commit(
        table._raw, layout, plan, results, columns, False, sql, props.commit_info_json()
    )
    table.update_incremental()
    reorders = columns is not None or bool(table._clustering_columns())
    span = max((len(u) for u in units), default=0)
    return optimize_args.deltalake_metrics(native, reorders=reorders, max_bin_span_files=span)
