"""``DeltaTable.to_pyarrow_dataset``: one version of a table as a ``pyarrow.dataset.Dataset``,
so that engines that take a pyarrow dataset (DuckDB, Polars, pandas, Acero) push projections
and filters down themselves.

Each active file becomes a parquet fragment whose partition expression holds its partition
values ("Partition Value Serialization"), so a filter on partition columns skips whole files
and pyarrow fills those columns in; filters on other columns use the files' row-group
statistics. A dataset reads files as they are, so tables whose files need more than that are
refused with ``UnsupportedFeatureError`` rather than read wrongly: deletion vectors (deleted
rows would come back), column mapping (the files' column names are physical ones) and row
tracking columns. ``to_pyarrow_table``/``scan`` read every table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from deltalog.exceptions import UnsupportedFeatureError

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable


def _typed(text: str, type_: pa.DataType) -> pa.Scalar:
    """A partition value's text ("Partition Value Serialization") as a scalar of ``type_``:
    timestamps are UTC wall-clock texts (``2026-11-25 08:00:00[.ffffff]``, or ISO with ``Z``)."""
    if pa.types.is_timestamp(type_) and type_.tz is not None:
        naive = pa.scalar(text.rstrip("Z").replace("T", " ")).cast(pa.timestamp(type_.unit))
        return naive.cast(type_)
    return pa.scalar(text).cast(type_)


def _partition_expression(
    values: list[tuple[str, str | None]], schema: pa.Schema
) -> ds.Expression | None:
    expression: ds.Expression | None = None
    for name, text in values:
        field = schema.field(name)
        if text is None:
            term = ds.field(name).is_null()
        else:
            term = ds.field(name) == _typed(text, field.type)
        expression = term if expression is None else expression & term
    return expression


def to_pyarrow_dataset(
    table: DeltaTable,
    filesystem: pafs.FileSystem | None = None,
    parquet_read_options: ds.ParquetReadOptions | None = None,
) -> ds.Dataset:
    """The loaded version of ``table`` as a pyarrow dataset (see the module docs)."""
    if table.column_mapping_mode() != "none":
        raise UnsupportedFeatureError(
            "a pyarrow dataset cannot read a table with column mapping (its files name the "
            "columns by physical names); use to_pyarrow_table() or scan()",
            ["columnMapping"],
        )
    adds = table.get_add_actions(flatten=True)
    if adds.num_rows and adds.column("deletion_vector.storage_type").null_count != adds.num_rows:
        raise UnsupportedFeatureError(
            "a pyarrow dataset cannot apply deletion vectors (deleted rows would be read); use "
            "to_pyarrow_table() or scan(), or purge them with "
            "optimize.purge_deletion_vectors()",
            ["deletionVectors"],
        )
    schema = table.schema()
    schema = pa.schema([f.remove_metadata() for f in schema])
    root = table.table_uri
    if filesystem is None:
        parsed = urlparse(root)
        if parsed.scheme in ("", "file"):
            filesystem = pafs.LocalFileSystem()
            base = unquote(parsed.path)
        else:
            filesystem, base = pafs.FileSystem.from_uri(root)
    else:
        parsed = urlparse(root)
        base = (
            unquote(parsed.path) if parsed.scheme in ("", "file") else parsed.netloc + parsed.path
        )
    base = base.rstrip("/")
    file_format = ds.ParquetFileFormat(read_options=parquet_read_options)
    fragments = []
    for add in adds.to_pylist():
        path: str = add["path"]
        if "://" in path:
            located = urlparse(path)
            if located.scheme != "file":
                raise UnsupportedFeatureError(
                    f"{path} lives outside the table's file system; use to_pyarrow_table()"
                )
            full = unquote(located.path)
        elif path.startswith("/"):
            full = path
        else:
            full = f"{base}/{path}"
        values: list[tuple[str, Any]] = list(add["partition_values"] or [])
        fragments.append(
            file_format.make_fragment(
                full,
                filesystem,
                partition_expression=_partition_expression(values, schema),
            )
        )
    return ds.FileSystemDataset(fragments, schema, file_format, filesystem)
