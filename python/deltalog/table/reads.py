"""Reading a loaded version of a table, methods of :class:`deltalog.DeltaTable`: scans planned
by the native core (partition pruning and file skipping by statistics, deletion vectors and
column mapping applied: protocol "Action Reconciliation", "Deletion Vectors", "Column
Mapping") and their results as Arrow, pandas or a pyarrow dataset, and the change data feed
(protocol "Add CDC File", "Change Data Files")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from deltalog import _args, _native
from deltalog._lazy import lazy_module
from deltalog.exceptions import VersionNotFoundError
from deltalog.expressions import Expr, FilterLike, to_predicate
from deltalog.protocol import features
from deltalog.protocol.actions import Protocol
from deltalog.table.scan import DeltaScan
from deltalog.table.timestamps import TimestampLike, _timestamp_ms

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from deltalog.table.delta_table import DeltaTable
else:
    pa = lazy_module("pyarrow")


def _merged_filter(
    filter: FilterLike | None,
    filters: FilterLike | None = None,
    partitions: FilterLike | None = None,
) -> Expr | None:
    """``filter`` and the names ``deltalake`` users type: ``filters`` (the same thing) and
    ``partitions`` (DNF filters on partition columns), all of which must hold."""
    if filter is not None and filters is not None:
        raise TypeError("pass filter or its alias filters, not both")
    rows = to_predicate(filter if filter is not None else filters)
    parts = to_predicate(partitions)
    if rows is None or parts is None:
        return rows if parts is None else parts
    return rows & parts


def _column_list(columns: list[str] | None) -> list[str] | None:
    """`columns` as a list (a single string is a mistake, not a list of characters)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        raise TypeError("columns must be a list of column names, not a string")
    return list(columns)


class TableReads:
    """The reads of :class:`deltalog.DeltaTable`, which inherits this class."""

    if TYPE_CHECKING:
        # DeltaTable's.
        @property
        def _raw(self) -> _native.RawSnapshot: ...

    # -- data ----------------------------------------------------------------------------

    def scan(
        self,
        columns: list[str] | None = None,
        filter: FilterLike | None = None,
        with_row_tracking: bool = False,
        *,
        filters: FilterLike | None = None,
        partitions: FilterLike | None = None,
    ) -> DeltaScan:
        """Plans a read of this version.

        Args:
            columns: logical column names, in output order (all columns when ``None``).
            filter: only rows satisfying it: a predicate built with :func:`deltalog.col`, or
                DNF tuples as pyarrow and deltalake take them (see
                :mod:`deltalog.expressions`). Partitions are pruned and files skipped by their
                statistics before any data is read.
            with_row_tracking: add ``_row_id`` and ``_row_commit_version`` (tables with row
                tracking enabled only; spec "Reader Requirements for Row Tracking").
            filters, partitions: ``deltalake``'s names: ``filters`` is ``filter``;
                ``partitions`` (DNF on partition columns) must hold as well.

        The result reads in parallel (``to_pyarrow_table``, ``to_batches``), exports
        ``__arrow_c_stream__`` for polars/duckdb, and hands out picklable per-file tasks
        (``tasks()``) for :func:`deltalog.read_task`.
        """
        predicate = _merged_filter(filter, filters, partitions)
        raw = self._raw.scan(
            _column_list(columns),
            with_row_tracking,
            predicate.to_json() if predicate is not None else None,
        )
        return DeltaScan(raw)

    def to_pyarrow_table(
        self,
        columns: list[str] | None = None,
        filter: FilterLike | None = None,
        with_row_tracking: bool = False,
        *,
        filters: FilterLike | None = None,
        partitions: FilterLike | None = None,
        filesystem: Any = None,
    ) -> pa.Table:
        """Every live row of this version (deleted rows removed) as a ``pyarrow.Table``;
        arguments as for :meth:`scan`. ``filesystem`` (deltalake's: a
        ``pyarrow.fs.FileSystem`` the files are read through) reads through
        :meth:`to_pyarrow_dataset` instead of the native reader, with its limits (no deletion
        vectors, no column mapping: ``UnsupportedFeatureError``)."""
        if filesystem is not None:
            return self._through_filesystem(
                filesystem, columns, filter, with_row_tracking, filters, partitions
            )
        return self.scan(
            columns, filter, with_row_tracking, filters=filters, partitions=partitions
        ).to_pyarrow_table()

    def _through_filesystem(
        self,
        filesystem: Any,
        columns: list[str] | None,
        filter: FilterLike | None,
        with_row_tracking: bool,
        filters: FilterLike | None,
        partitions: FilterLike | None,
    ) -> pa.Table:
        from deltalog.exceptions import InvalidArgumentError

        if with_row_tracking:
            raise InvalidArgumentError(
                "with_row_tracking needs deltalog's reader: pass no filesystem"
            )
        if isinstance(filesystem, str):
            import pyarrow.fs as pafs

            filesystem, _ = pafs.FileSystem.from_uri(filesystem)
        predicate = _merged_filter(filter, filters, partitions)
        expression = None
        if predicate is not None:
            # The same predicate, evaluated by pyarrow on the dataset's rows.
            import pyarrow.compute as pc

            expression = _arrow_expression(pc, predicate)
        dataset = self.to_pyarrow_dataset(filesystem=filesystem)
        return dataset.to_table(columns=_column_list(columns), filter=expression)

    def to_pyarrow_dataset(
        self,
        filesystem: Any = None,
        parquet_read_options: Any = None,
    ) -> Any:
        """This version as a ``pyarrow.dataset.Dataset`` (deltalake's ``to_pyarrow_dataset``):
        one parquet fragment per file, partition values as fragment expressions, so engines
        taking a pyarrow dataset (DuckDB, Polars, Acero) push filters down. Tables with
        deletion vectors or column mapping raise ``UnsupportedFeatureError``: a dataset would
        read them wrongly (see :mod:`deltalog.table.dataset`).

        Args:
            filesystem: a ``pyarrow.fs.FileSystem`` for the table's files (default: the local
                file system, or the one pyarrow derives from the table's URI).
            parquet_read_options: ``pyarrow.dataset.ParquetReadOptions`` for the fragments.
        """
        from deltalog.table.dataset import to_pyarrow_dataset

        return to_pyarrow_dataset(cast("DeltaTable", self), filesystem, parquet_read_options)

    def to_batches(
        self,
        columns: list[str] | None = None,
        filter: FilterLike | None = None,
        with_row_tracking: bool = False,
        *,
        filters: FilterLike | None = None,
        partitions: FilterLike | None = None,
    ) -> pa.RecordBatchReader:
        """The live rows as a ``pyarrow.RecordBatchReader``, read a few row groups ahead."""
        return self.scan(
            columns, filter, with_row_tracking, filters=filters, partitions=partitions
        ).to_batches()

    def to_pandas(
        self,
        columns: list[str] | None = None,
        filter: FilterLike | None = None,
        with_row_tracking: bool = False,
        *,
        filters: FilterLike | None = None,
        partitions: FilterLike | None = None,
        filesystem: Any = None,
        types_mapper: Any = None,
    ) -> pd.DataFrame:
        """The live rows as a pandas DataFrame; ``types_mapper`` (deltalake's) maps Arrow
        types to pandas extension dtypes (``pyarrow.Table.to_pandas``), ``filesystem`` as for
        :meth:`to_pyarrow_table`."""
        table = self.to_pyarrow_table(
            columns,
            filter,
            with_row_tracking,
            filters=filters,
            partitions=partitions,
            filesystem=filesystem,
        )
        frame: pd.DataFrame = table.to_pandas(types_mapper=types_mapper)
        return frame

    # -- change data feed ------------------------------------------------------------------

    def scan_cdf(
        self,
        starting_version: int = 0,
        ending_version: int | None = None,
        starting_timestamp: TimestampLike | None = None,
        ending_timestamp: TimestampLike | None = None,
        columns: list[str] | None = None,
        filter: FilterLike | None = None,
        *,
        predicate: Any = None,
    ) -> DeltaScan:
        """Plans a read of the row-level changes of a range of versions (spec "Add CDC File").

        The range is ``starting_version`` (or the first version committed at or after
        ``starting_timestamp``) to ``ending_version`` (or the last version committed at or
        before ``ending_timestamp``; this object's version when neither is given), both
        included. Rows carry ``_change_type`` (``insert``, ``delete``, ``update_preimage``,
        ``update_postimage``), ``_commit_version`` and ``_commit_timestamp``. Versions with
        ``cdc`` files are read from them; other versions' added and removed files are read as
        inserts and deletes, honouring deletion vectors and column mapping. The table's schema
        is the ending version's.

        Every version of the range must have recorded its changes
        (``delta.enableChangeDataFeed`` true there); otherwise
        :class:`~deltalog.ChangeDataNotRecordedError` names the first version that did not.
        """
        if starting_timestamp is not None:
            start_ms = _timestamp_ms(starting_timestamp)
            try:
                # The first version committed at or after the time.
                starting_version = self._raw.version_at_timestamp(start_ms - 1) + 1
            except VersionNotFoundError:
                starting_version = 0
        if ending_timestamp is not None:
            ending_version = self._raw.version_at_timestamp(_timestamp_ms(ending_timestamp))
        starting_version = _args.version("starting_version", starting_version)
        ending_version = (
            None if ending_version is None else _args.version("ending_version", ending_version)
        )
        raw = self._raw
        if ending_version is not None and ending_version != raw.version():
            raw = raw.load_version(ending_version)
            features.check_readable(Protocol(*raw.protocol()))
        if isinstance(predicate, str):
            # deltalake's load_cdf takes SQL text; deltalog's change feed filters rows with
            # the same predicates as scan().
            raise TypeError(
                "the change feed's row filter is deltalog's filter= argument (a predicate "
                "built with deltalog.col, or DNF tuples, as for scan), not SQL text"
            )
        if predicate is not None and filter is not None:
            raise TypeError("pass filter or its alias predicate, not both")
        row_filter = to_predicate(filter if filter is not None else predicate)
        plan = raw.changes(
            starting_version,
            _column_list(columns),
            row_filter.to_json() if row_filter is not None else None,
        )
        return DeltaScan(plan)

    def load_cdf(
        self,
        starting_version: int = 0,
        ending_version: int | None = None,
        starting_timestamp: TimestampLike | None = None,
        ending_timestamp: TimestampLike | None = None,
        columns: list[str] | None = None,
        filter: FilterLike | None = None,
        *,
        predicate: Any = None,
        allow_out_of_range: bool = False,
    ) -> pa.RecordBatchReader:
        """The change data feed as a stream of record batches (see :meth:`scan_cdf`;
        ``predicate`` is an alias of ``filter``, not SQL text). ``allow_out_of_range``
        (deltalake's): a range starting after the latest version (or timestamp) gives no
        rows instead of ``VersionNotFoundError``, and one ending after it ends there."""
        if allow_out_of_range:
            latest = self._raw.load_version(None)
            last = latest.version()
            empty = False
            if starting_timestamp is not None:
                stamp = latest.timestamp()
                empty = stamp is not None and _timestamp_ms(starting_timestamp) > stamp
            elif starting_version > last:
                empty = True
            if empty:
                plan = self.scan_cdf(last, last, None, None, columns, filter, predicate=predicate)
                return pa.RecordBatchReader.from_batches(plan.schema, [])
            if ending_version is not None and ending_version > last:
                ending_version = last
            if ending_timestamp is not None:
                stamp = latest.timestamp()
                if stamp is not None and _timestamp_ms(ending_timestamp) > stamp:
                    ending_timestamp, ending_version = None, last
        return self.scan_cdf(
            starting_version,
            ending_version,
            starting_timestamp,
            ending_timestamp,
            columns,
            filter,
            predicate=predicate,
        ).to_batches()


def _arrow_expression(pc: Any, predicate: Expr) -> Any:
    """A deltalog predicate as a ``pyarrow.compute.Expression`` (for reads through a
    pyarrow dataset)."""
    import json

    def convert(node: Any) -> Any:
        if "and" in node:
            parts = [convert(n) for n in node["and"]]
            out = parts[0]
            for p in parts[1:]:
                out = out & p
            return out
        if "or" in node:
            parts = [convert(n) for n in node["or"]]
            out = parts[0]
            for p in parts[1:]:
                out = out | p
            return out
        if "not" in node:
            return ~convert(node["not"])
        if "is_null" in node:
            return pc.field(node["is_null"]["column"]).is_null()
        if "in" in node:
            values = [_plain(v) for v in node["in"]["values"]]
            return pc.field(node["in"]["column"]).isin(values)
        if "compare" in node:
            c = node["compare"]
            field, value = pc.field(c["column"]), pc.scalar(_plain(c["value"]))
            ops = {
                "=": field == value,
                "!=": field != value,
                "<": field < value,
                "<=": field <= value,
                ">": field > value,
                ">=": field >= value,
            }
            return ops[c["op"]]
        raise ValueError(f"a predicate pyarrow cannot evaluate: {node}")

    return convert(json.loads(predicate.to_json()))


def _plain(literal: Any) -> Any:
    """The Python value of a literal of a predicate's JSON (``{"int": 3}`` -> 3; see
    :func:`deltalog.expressions._literal`)."""
    import datetime as dt
    import decimal

    if literal == "null":
        return None
    ((kind, value),) = literal.items()
    if kind == "date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if kind == "timestamp":
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return epoch + dt.timedelta(microseconds=value)
    if kind == "decimal":
        return decimal.Decimal(value)
    if kind == "binary":
        return bytes(value)
    return value
