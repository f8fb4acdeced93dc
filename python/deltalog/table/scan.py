"""Reading table data: `DeltaScan` (a planned scan), `ScanTask` (one file) and `read_task`.

Planning and reading are separate so that files can be read anywhere. ``DeltaTable.scan()``
plans in the native core: the read spec (output schema, column mapping, partition columns)
and one task per active file (path, partition values, deletion vector, row tracking fields).
``DeltaScan`` reads all of them in parallel in Rust; ``tasks()`` hands them out as small
picklable ``ScanTask`` objects that ``read_task`` reads on any machine.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog._lazy import lazy_module

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")


class ScanTask:
    """One data file of a scan, with everything needed to read it elsewhere.

    Picklable and small: the read spec (shared by all tasks of a scan) and the file's own
    description, both JSON. Attributes are parsed from them on first use.
    """

    __slots__ = ("__dict__", "_spec", "_task")

    def __init__(self, spec: str, task: str) -> None:
        self._spec = spec
        self._task = task

    def __reduce__(self) -> tuple[Any, ...]:
        return (ScanTask, (self._spec, self._task))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScanTask) and (self._spec, self._task) == (
            other._spec,
            other._task,
        )

    def __hash__(self) -> int:
        return hash((self._spec, self._task))

    @cached_property
    def _fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = json.loads(self._task)
        return fields

    @property
    def table_uri(self) -> str:
        """The table root the path is relative to."""
        root: str = json.loads(self._spec)["tableRoot"]
        return root

    @property
    def path(self) -> str:
        """The URI-decoded path: relative to the table root, or an absolute URI."""
        path: str = self._fields["path"]
        return path

    @property
    def size(self) -> int | None:
        """The file's size in bytes, as the log records it."""
        return self._fields.get("size")

    @property
    def num_records(self) -> int | None:
        """Physical rows in the file (deleted ones included), from the statistics."""
        return self._fields.get("numRecords")

    @property
    def partition_values(self) -> dict[str, str | None]:
        """``partitionValues`` as in the log (keys are physical names under column mapping)."""
        return dict(self._fields.get("partitionValues") or {})

    @property
    def deletion_vector(self) -> dict[str, Any] | None:
        """The deletion vector descriptor, with the spec's field names, or ``None``."""
        return self._fields.get("deletionVector")

    @property
    def change(self) -> dict[str, Any] | None:
        """For change feed tasks: ``changeType`` (``None`` when the file's own
        ``_change_type`` column says), ``commitVersion``, ``commitTimestamp`` (ms) and
        ``onlyRowsOf`` (a deletion vector selecting the changed rows); ``None`` otherwise."""
        return self._fields.get("change")

    def to_json(self) -> tuple[str, str]:
        """The (spec, task) JSON pair this task is made of."""
        return self._spec, self._task

    def __repr__(self) -> str:
        return f"ScanTask(path={self.path!r}, size={self.size})"


class DeltaScan:
    """A planned scan of one table version: its rows as Arrow, or its files as tasks.

    Exports ``__arrow_c_stream__``, so ``polars.from_arrow(scan)``, ``duckdb`` and
    ``pyarrow`` consume it without a copy. Each read starts a new pass over the files.
    """

    def __init__(self, raw: _native.RawScan) -> None:
        self._raw = raw

    @property
    def schema(self) -> pa.Schema:
        """The schema of the rows the scan produces."""
        return self._raw.schema()

    def tasks(self) -> list[ScanTask]:
        """One picklable task per data file, in log order (see :func:`read_task`)."""
        spec = self._raw.spec_json()
        return [ScanTask(spec, t) for t in self._raw.task_jsons()]

    def to_pyarrow_table(self) -> pa.Table:
        """All rows, read in parallel, as one ``pyarrow.Table``."""
        return self._raw.to_table()

    def to_batches(self) -> pa.RecordBatchReader:
        """The rows as a stream of record batches, read a few row groups ahead."""
        return _reader(self._raw)

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """All rows as a pandas DataFrame (``kwargs`` go to ``pyarrow.Table.to_pandas``)."""
        frame: pd.DataFrame = self.to_pyarrow_table().to_pandas(**kwargs)
        return frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.to_batches().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> object:
        return self.schema.__arrow_c_schema__()

    @property
    def num_files(self) -> int:
        """Files the scan reads (after partition pruning and file skipping)."""
        return self._raw.num_tasks()

    @property
    def files_considered(self) -> int:
        """Active files of the version before pruning and skipping."""
        return self._raw.files_considered()

    def __len__(self) -> int:
        return self._raw.num_tasks()

    def __repr__(self) -> str:
        return f"DeltaScan(files={len(self)}, columns={self.schema.names})"


def _reader(raw: _native.RawScan) -> pa.RecordBatchReader:
    batches: Iterator[pa.RecordBatch] = raw.to_stream()
    return pa.RecordBatchReader.from_batches(raw.schema(), batches)


def read_task(
    task: ScanTask | Iterable[ScanTask],
    storage_options: Mapping[str, str] | None = None,
) -> pa.Table:
    """Reads one task (or several of one scan) into a ``pyarrow.Table``, on any machine.

    Args:
        task: a :class:`ScanTask` from ``DeltaScan.tasks()``, or an iterable of tasks that
            all come from the same scan.
        storage_options: credentials and settings for the object store, as for
            ``DeltaTable``.

    Raises:
        DataFileNotFoundError: a data file does not exist.
        CorruptDataFileError: a data file cannot be read or reconciled with the schema.
        CorruptDeletionVectorError: a deletion vector is damaged.
    """
    tasks = [task] if isinstance(task, ScanTask) else list(task)
    if not tasks:
        raise ValueError("no tasks to read")
    spec = tasks[0]._spec
    if any(t._spec != spec for t in tasks):
        raise ValueError("tasks of different scans cannot be read together")
    raw = _native.RawScan.from_json(
        spec, [t._task for t in tasks], dict(storage_options) if storage_options else None
    )
    return raw.to_table()
