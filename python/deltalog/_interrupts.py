"""Interrupts (Ctrl-C) and the exceptions of a write's own input, around a commit.

The native layer runs every operation as one interruptible unit (``deltalog_core::interrupt``,
``runtime::block_on``): an interrupt before the commit point stops it (nothing committed, its
files removed) and comes back as the ``KeyboardInterrupt`` it was; one after the commit comes
back as :class:`~deltalog.exceptions.InterruptedAfterCommit` with the committed version. What
this module adds is the same rule for the Python code around those calls:

* :func:`after_commit`: Python work after a commit (moving the ``DeltaTable`` to the new
  version, a cleanup) that is interrupted raises ``InterruptedAfterCommit`` too, never a bare
  ``KeyboardInterrupt`` a user would take for "nothing happened" and retry;
* :func:`capturing`: a ``RecordBatchReader`` whose batches come from Python code (a generator
  given to ``pa.RecordBatchReader.from_batches``) raises its exceptions inside the native
  read, where they become an Arrow error text (``C Data interface error … KeyboardInterrupt``);
  the wrapper keeps the exception so that the caller raises it as itself (the write then
  stopped before its commit point: nothing committed).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING

from deltalog.exceptions import DeltaError, InterruptedAfterCommit

if TYPE_CHECKING:
    import pyarrow as pa


@contextmanager
def after_commit(version: int | None) -> Iterator[None]:
    """Python work after ``version`` was committed: an interrupt raises
    ``InterruptedAfterCommit(version)`` (nothing when ``version`` is None: no commit)."""
    try:
        yield
    except InterruptedAfterCommit:
        raise
    except KeyboardInterrupt as e:
        if version is None:
            raise
        raise InterruptedAfterCommit(version) from e


class Captured:
    """The exception a wrapped input raised (see :func:`capturing`); as a context manager
    around the native call that read the input, it raises that exception instead of the
    ``DeltaError`` the native call made of it."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def __enter__(self) -> Captured:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(value, DeltaError) and self.error is not None:
            error, self.error = self.error, None
            raise error.with_traceback(error.__traceback__) from None


def capturing(reader: pa.RecordBatchReader) -> tuple[pa.RecordBatchReader, Captured]:
    """``reader`` read through a Python wrapper that keeps any exception its batches raise."""
    import pyarrow as pa

    captured = Captured()

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                yield batch
        except BaseException as e:
            captured.error = e
            raise

    return pa.RecordBatchReader.from_batches(reader.schema, batches()), captured
