"""deltalake's documented examples, run unchanged but for the import, against deltalake 1.6.6
and against deltalog, each into its own directory; the results must agree.

Each step below is written as deltalake's usage pages and docstrings write it (``m`` is the
imported module: ``import deltalake as m`` or ``import deltalog as m``), and returns what the
example shows. ``COMPARE`` says how the two results are compared where they are not simply
equal; where deltalake and the Delta protocol disagree, the protocol decides and the step says
so.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import deltalake
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog


def df_rows(frame: Any) -> list[dict[str, Any]]:
    """Rows of a pandas frame or Arrow table, in a stable order."""
    table = (
        pa.Table.from_pandas(frame, preserve_index=False)
        if isinstance(frame, pd.DataFrame)
        else pa.table(frame)
    )
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: [str(v) for v in r.values()])


# -- the examples ------------------------------------------------------------------------------


def create_and_read(m: ModuleType, root: Path) -> Any:
    df = pd.DataFrame({"num": [1, 2, 3], "letter": ["a", "b", "c"]})
    m.write_deltalake(f"{root}/tmp/some-table", df)
    dt = m.DeltaTable(f"{root}/tmp/some-table")
    return df_rows(dt.to_pandas())


def append(m: ModuleType, root: Path) -> Any:
    df = pd.DataFrame({"num": [8, 9], "letter": ["dd", "ee"]})
    m.write_deltalake(f"{root}/tmp/some-table", df, mode="append")
    return df_rows(m.DeltaTable(f"{root}/tmp/some-table").to_pandas())


def overwrite(m: ModuleType, root: Path) -> Any:
    df = pd.DataFrame({"num": [11, 22], "letter": ["aa", "bb"]})
    m.write_deltalake(f"{root}/tmp/some-table", df, mode="overwrite")
    return df_rows(m.DeltaTable(f"{root}/tmp/some-table").to_pandas())


def version(m: ModuleType, root: Path) -> Any:
    return m.DeltaTable(f"{root}/tmp/some-table").version()


def time_travel_by_version(m: ModuleType, root: Path) -> Any:
    return df_rows(m.DeltaTable(f"{root}/tmp/some-table", version=1).to_pandas())


def load_as_version(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/some-table")
    dt.load_as_version(0)
    return dt.version(), df_rows(dt.to_pandas())


def history_operations(m: ModuleType, root: Path) -> Any:
    return [h["operation"] for h in m.DeltaTable(f"{root}/tmp/some-table").history()]


def metadata(m: ModuleType, root: Path) -> Any:
    meta = m.DeltaTable(f"{root}/tmp/some-table").metadata()
    return meta.partition_columns, meta.configuration, meta.name, meta.description


def protocol(m: ModuleType, root: Path) -> Any:
    p = m.DeltaTable(f"{root}/tmp/some-table").protocol()
    return p.min_reader_version, p.min_writer_version


def partitioned_write(m: ModuleType, root: Path) -> Any:
    df = pd.DataFrame({"x": [1, 2, 3], "y": ["a", "a", "b"]})
    m.write_deltalake(f"{root}/tmp/partitioned", df, partition_by=["y"])
    return sorted(tuple(p.items()) for p in m.DeltaTable(f"{root}/tmp/partitioned").partitions())


def read_partition(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/partitioned")
    return df_rows(dt.to_pandas(partitions=[("y", "=", "a")]))


def filtered_read(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/partitioned")
    return df_rows(dt.to_pyarrow_table(filters=[("x", ">", 1)]))


def partition_overwrite(m: ModuleType, root: Path) -> Any:
    df = pd.DataFrame({"x": [7], "y": ["a"]})
    m.write_deltalake(f"{root}/tmp/partitioned", df, mode="overwrite", predicate="y = 'a'")
    return df_rows(m.DeltaTable(f"{root}/tmp/partitioned").to_pandas())


def count(m: ModuleType, root: Path) -> Any:
    return m.DeltaTable(f"{root}/tmp/partitioned").count()


def delete(m: ModuleType, root: Path) -> Any:
    df = pd.DataFrame({"id": ["1", "2", "3"], "deleted": [False] * 3, "price": [10.0, 15.0, 20.0]})
    m.write_deltalake(f"{root}/tmp/dml", df)
    dt = m.DeltaTable(f"{root}/tmp/dml")
    metrics = dt.delete("price > 18")
    return metrics["num_deleted_rows"], df_rows(dt.to_pandas())


def update_sql(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/dml")
    metrics = dt.update(predicate="id = '2'", updates={"deleted": "True"})
    return metrics["num_updated_rows"], df_rows(dt.to_pandas())


def update_values(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/dml")
    metrics = dt.update(predicate="id = '1'", new_values={"price": 150.10})
    return metrics["num_updated_rows"], df_rows(dt.to_pandas())


def merge_upsert(m: ModuleType, root: Path) -> Any:
    m.write_deltalake(f"{root}/tmp/merge", pa.table({"x": [1, 2, 3], "y": [4, 5, 6]}))
    dt = m.DeltaTable(f"{root}/tmp/merge")
    new_data = pa.table({"x": [2, 3, 4], "y": [7, 8, 9]})
    metrics = (
        dt.merge(
            source=new_data,
            predicate="target.x = source.x",
            source_alias="source",
            target_alias="target",
        )
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    return (
        metrics["num_target_rows_updated"],
        metrics["num_target_rows_inserted"],
        df_rows(dt.to_pyarrow_table()),
    )


def merge_except_cols(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/merge")
    new_data = pa.table({"x": [1], "y": [70]})
    (
        dt.merge(new_data, "target.x = source.x", source_alias="source", target_alias="target")
        .when_matched_update_all(except_cols=["y"])
        .execute()
    )
    return df_rows(dt.to_pyarrow_table())


def merge_delete(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/merge")
    new_data = pa.table({"x": [2, 3], "deleted": [False, True]})
    metrics = (
        dt.merge(new_data, "target.x = source.x", source_alias="source", target_alias="target")
        .when_matched_delete(predicate="source.deleted = true")
        .execute()
    )
    return metrics["num_target_rows_deleted"], df_rows(dt.to_pyarrow_table())


def merge_not_matched_by_source(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/merge")
    new_data = pa.table({"x": [2, 4], "y": [0, 0]})
    (
        dt.merge(new_data, "target.x = source.x", source_alias="source", target_alias="target")
        .when_not_matched_by_source_delete()
        .execute()
    )
    return df_rows(dt.to_pyarrow_table())


def restore(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/merge")
    metrics = dt.restore(1)
    return metrics["numRestoredFile"] > 0, df_rows(dt.to_pyarrow_table())


def compact(m: ModuleType, root: Path) -> Any:
    path = f"{root}/tmp/small-files"
    for i in range(4):
        m.write_deltalake(path, pa.table({"x": [i], "y": [str(i)]}), mode="append")
    dt = m.DeltaTable(path)
    metrics = dt.optimize.compact()
    return metrics["numFilesAdded"], metrics["numFilesRemoved"], df_rows(dt.to_pyarrow_table())


def z_order(m: ModuleType, root: Path) -> Any:
    path = f"{root}/tmp/small-files"
    m.write_deltalake(path, pa.table({"x": [9], "y": ["9"]}), mode="append")
    dt = m.DeltaTable(path)
    metrics = dt.optimize.z_order(["x"])
    return metrics["numFilesRemoved"], df_rows(dt.to_pyarrow_table())


def vacuum_dry_run(m: ModuleType, root: Path) -> Any:
    return list(m.DeltaTable(f"{root}/tmp/small-files").vacuum())


def vacuum_everything_removed(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/small-files")
    files = dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    return len(files), df_rows(dt.to_pyarrow_table())


def checkpoint(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/small-files")
    dt.create_checkpoint()
    return sorted(
        p.name for p in Path(f"{root}/tmp/small-files/_delta_log").glob("*.checkpoint.parquet")
    )


def cleanup_metadata(m: ModuleType, root: Path) -> Any:
    m.DeltaTable(f"{root}/tmp/small-files").cleanup_metadata()
    return df_rows(m.DeltaTable(f"{root}/tmp/small-files").to_pyarrow_table())


def create_table(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable.create(
        table_uri=f"{root}/tmp/my_local_table",
        schema=pa.schema([pa.field("foo", pa.string()), pa.field("bar", pa.string())]),
        mode="error",
        partition_by="bar",
    )
    return dt.version(), dt.metadata().partition_columns


def add_constraint(m: ModuleType, root: Path) -> Any:
    m.write_deltalake(f"{root}/tmp/constraints", pd.DataFrame({"id": [1, 2, 3]}))
    dt = m.DeltaTable(f"{root}/tmp/constraints")
    dt.alter.add_constraint({"id_gt_0": "id > 0"})
    return dt.metadata().configuration


def constraint_violation(m: ModuleType, root: Path) -> Any:
    with pytest.raises(Exception, match=r"(?i)constraint|invariant|validation"):
        m.write_deltalake(f"{root}/tmp/constraints", pd.DataFrame({"id": [-1]}), mode="append")
    return df_rows(m.DeltaTable(f"{root}/tmp/constraints").to_pandas())


def drop_constraint(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/constraints")
    dt.alter.drop_constraint(name="id_gt_0")
    return dt.metadata().configuration


def set_table_properties(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/constraints")
    dt.alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    return dt.metadata().configuration


def change_data_feed(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/constraints")
    start = dt.version()
    dt.update(predicate="id = 2", updates={"id": "20"})
    changes = dt.load_cdf(starting_version=start + 1).read_all()
    return df_rows(pa.table(changes).drop_columns(["_commit_timestamp"]))


def table_name_and_description(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/constraints")
    dt.alter.set_table_name("my_table")
    dt.alter.set_table_description("my description")
    return dt.metadata().name, dt.metadata().description


def query_builder(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/partitioned")
    data = m.QueryBuilder().register("test", dt).execute("select x, y from test").read_all()
    return df_rows(pa.table(data))


def commit_properties(m: ModuleType, root: Path) -> Any:
    m.write_deltalake(
        f"{root}/tmp/some-table",
        pd.DataFrame({"num": [5], "letter": ["e"]}),
        mode="append",
        commit_properties=m.CommitProperties(custom_metadata={"userName": "John Doe"}),
    )
    return m.DeltaTable(f"{root}/tmp/some-table").history(1)[0]["userName"]


def add_actions(m: ModuleType, root: Path) -> Any:
    adds = m.DeltaTable(f"{root}/tmp/partitioned").get_add_actions(flatten=True)
    return sorted(adds.column("num_records").to_pylist())


def transaction_version(m: ModuleType, root: Path) -> Any:
    return m.DeltaTable(f"{root}/tmp/partitioned").transaction_version("my-app")


def convert_to_delta(m: ModuleType, root: Path) -> Any:
    path = Path(f"{root}/tmp/plain-parquet")
    path.mkdir(parents=True)
    pq.write_table(pa.table({"a": [1, 2]}), path / "part-0.parquet")
    m.convert_to_deltalake(str(path))
    return df_rows(m.DeltaTable(str(path)).to_pyarrow_table())


def repair(m: ModuleType, root: Path) -> Any:
    return m.DeltaTable(f"{root}/tmp/partitioned").repair(dry_run=True)["files_removed"]


def schema_merge(m: ModuleType, root: Path) -> Any:
    df = pd.DataFrame({"num": [6], "letter": ["f"], "extra": [True]})
    m.write_deltalake(f"{root}/tmp/some-table", df, mode="append", schema_mode="merge")
    return df_rows(m.DeltaTable(f"{root}/tmp/some-table").to_pandas())


def generate_manifest(m: ModuleType, root: Path) -> Any:
    m.DeltaTable(f"{root}/tmp/partitioned").generate()
    manifests = Path(f"{root}/tmp/partitioned/_symlink_format_manifest")
    return sorted(
        (str(p.parent.relative_to(manifests)), len(p.read_text().splitlines()))
        for p in manifests.rglob("manifest")
    )


def file_uris(m: ModuleType, root: Path) -> Any:
    return len(m.DeltaTable(f"{root}/tmp/partitioned").file_uris())


def deletion_vectors(m: ModuleType, root: Path) -> Any:
    return pa.table(m.DeltaTable(f"{root}/tmp/partitioned").deletion_vectors()).num_rows


def add_feature(m: ModuleType, root: Path) -> Any:
    dt = m.DeltaTable(f"{root}/tmp/partitioned")
    dt.alter.add_feature(m.TableFeatures.AppendOnly, allow_protocol_versions_increase=True)
    p = dt.protocol()
    return p.min_writer_version, "appendOnly" in (p.writer_features or [])


def to_pyarrow_dataset(m: ModuleType, root: Path) -> Any:
    return df_rows(m.DeltaTable(f"{root}/tmp/partitioned").to_pyarrow_dataset().to_table())


STEPS: list[Callable[[ModuleType, Path], Any]] = [
    create_and_read,
    append,
    overwrite,
    version,
    time_travel_by_version,
    load_as_version,
    history_operations,
    metadata,
    protocol,
    partitioned_write,
    read_partition,
    filtered_read,
    partition_overwrite,
    count,
    delete,
    update_sql,
    update_values,
    merge_upsert,
    merge_except_cols,
    merge_delete,
    merge_not_matched_by_source,
    restore,
    compact,
    z_order,
    vacuum_dry_run,
    vacuum_everything_removed,
    checkpoint,
    cleanup_metadata,
    create_table,
    add_constraint,
    constraint_violation,
    drop_constraint,
    set_table_properties,
    change_data_feed,
    table_name_and_description,
    query_builder,
    commit_properties,
    add_actions,
    transaction_version,
    convert_to_delta,
    repair,
    schema_merge,
    generate_manifest,
    file_uris,
    deletion_vectors,
    add_feature,
    to_pyarrow_dataset,
]


def _first_operation_differs(theirs: Any, ours: Any) -> None:
    # The commitInfo is free-form (protocol "Commit Provenance Information"): deltalake names
    # the commit creating a table from data WRITE, deltalog CREATE TABLE AS SELECT (Delta
    # Spark's name for it). The later operations agree.
    assert theirs[:-1] == ours[:-1]
    assert theirs[-1] == "WRITE" and ours[-1] == "CREATE TABLE AS SELECT"


def _append_only_supported(theirs: Any, ours: Any) -> None:
    # "Append-only Tables" is a legacy writer feature: writer version 2 supports it, so the
    # smallest protocol supporting it on a (1, 2) table is (1, 2) itself, which deltalog
    # keeps ("Table Features for New and Existing Tables"). deltalake moves to writer version 7
    # with an explicit list. Both protocols support appendOnly.
    assert theirs == (7, True)
    assert ours == (2, False)


def _checkpoint_names(theirs: Any, ours: Any) -> None:
    # The same version checkpointed, classic single-file name ("Checkpoints").
    assert theirs == ours and len(ours) == 1


#: Steps compared otherwise than by equality, and why.
COMPARE: dict[str, Callable[[Any, Any], None]] = {
    "history_operations": _first_operation_differs,
    "checkpoint": _checkpoint_names,
    "add_feature": _append_only_supported,
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Any]]:
    theirs_root = tmp_path_factory.mktemp("deltalake")
    ours_root = tmp_path_factory.mktemp("deltalog")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for step in STEPS:
            out[step.__name__] = (step(deltalake, theirs_root), step(deltalog, ours_root))
    return out


def test_there_are_at_least_thirty_examples() -> None:
    assert len(STEPS) >= 30


@pytest.mark.parametrize("step", [s.__name__ for s in STEPS])
def test_example_agrees(results: dict[str, tuple[Any, Any]], step: str) -> None:
    theirs, ours = results[step]
    compare = COMPARE.get(step)
    if compare is not None:
        compare(theirs, ours)
    else:
        assert ours == theirs


def test_deltalake_reads_what_the_examples_wrote_with_deltalog(
    results: dict[str, tuple[Any, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every table the deltalog run wrote, read by deltalake, holds what deltalog reads."""
    root = next(
        p for p in tmp_path_factory.getbasetemp().iterdir() if p.name.startswith("deltalog")
    )
    tables = [p.parent for p in root.rglob("_delta_log")]
    assert len(tables) >= 8
    for table in tables:
        theirs = deltalake.DeltaTable(str(table)).to_pyarrow_table()
        ours = deltalog.DeltaTable(str(table)).to_pyarrow_table()
        assert df_rows(theirs.select(ours.column_names)) == df_rows(ours), table
