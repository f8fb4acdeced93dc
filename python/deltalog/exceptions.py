"""The exceptions deltalog raises.

Every error that concerns a table's log names the file, the version and the protocol rule that
was broken, so that bad input can be reported precisely. All of them derive from
:class:`DeltaError`; the native core maps its own errors onto these classes.
"""

from __future__ import annotations

from typing import Any


class DeltaError(Exception):
    """Base class of every deltalog error."""


class TableNotFoundError(DeltaError):
    """The location holds no Delta table (no ``_delta_log``, or one without any commit)."""


class CorruptLogError(DeltaError):
    """A log file is malformed or breaks a rule of the protocol.

    Attributes:
        file: the offending file (path inside the table), when known.
        version: the table version the file belongs to, when known.
        rule: the rule that was broken, citing the spec section where there is one.
    """

    def __init__(
        self,
        message: str,
        file: str | None = None,
        version: int | None = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.file = file
        self.version = version
        self.rule = rule


class LogIntegrityError(CorruptLogError):
    """A published commit of a catalog-managed table is not the commit its catalog ratified
    for that version (its SHA-256 differs from the one the catalog recorded): the file was
    changed after it was published, by someone with write access to the table's storage. The
    catalog's readers refuse it rather than take it for the table's state; an administrator
    repairs the table (docs/catalogs.md, "Repairing a table").

    Attributes:
        file, version, rule: as :class:`CorruptLogError`.
    """


class CorruptDeletionVectorError(DeltaError):
    """A deletion vector is malformed or disagrees with its descriptor (magic number, size,
    CRC-32 checksum, bucket keys or cardinality; spec "Deletion Vector Format").

    Attributes:
        file: the DV file, or the data file whose inline deletion vector it is.
        reason: what did not match.
    """

    def __init__(self, message: str, file: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.reason = reason


class DataFileNotFoundError(DeltaError, FileNotFoundError):
    """A data file the log names does not exist (files are never silently skipped).

    Attributes:
        file: the missing file (its path as the log names it).
    """

    def __init__(self, message: str, file: str | None = None) -> None:
        super().__init__(message)
        self.file = file


class CorruptDataFileError(DeltaError):
    """A data file cannot be read, or its content cannot be reconciled with the table's
    schema (a column of an incompatible type, a partition value that does not parse).

    Attributes:
        file: the data file.
        reason: what went wrong.
    """

    def __init__(self, message: str, file: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.reason = reason


class CommitConflictError(DeltaError):
    """Another writer committed a conflicting change first; nothing was committed.

    A catalog client raises it from ``commit`` when another commit was ratified for the
    version first, with ``ratified``: the catalog's ratified commits from that version on, so
    that the writer can rebase without asking again (catalogManaged RFC: "Commit Protocol").

    Attributes:
        version: the version the winning commit took.
        reason: why it conflicts (metadata change, data read by this transaction, ...).
        ratified: from a catalog, its latest ratified commits
            (:class:`deltalog.catalog.RatifiedCommits`).
    """

    def __init__(
        self,
        message: str,
        version: int | None = None,
        reason: str | None = None,
        ratified: Any = None,
    ) -> None:
        super().__init__(message)
        self.version = version
        self.reason = reason
        self.ratified = ratified


class VersionNotFoundError(DeltaError):
    """The requested version or timestamp does not exist or can no longer be reconstructed."""


class ChangeDataNotRecordedError(DeltaError):
    """The change data feed was asked for a range of versions some of which did not record
    their changes (``delta.enableChangeDataFeed`` was not ``true`` there), as Delta Spark and
    ``deltalake`` refuse it.

    Attributes:
        start, end: the range asked for (both included).
        version: the first version of the range whose changes were not recorded.
    """

    def __init__(
        self,
        message: str,
        start: int | None = None,
        end: int | None = None,
        version: int | None = None,
    ) -> None:
        super().__init__(message)
        self.start = start
        self.end = end
        self.version = version


class UnsupportedFeatureError(DeltaError):
    """The table uses table features deltalog does not support for the requested operation.

    Attributes:
        features: the unsupported feature names, sorted.
    """

    def __init__(self, message: str, features: list[str] | None = None) -> None:
        super().__init__(message)
        self.features = sorted(features or [])


class FeatureDropWaitError(DeltaError):
    """DROP FEATURE removed what the current version had of a reader-writer feature, but
    versions a reader can still time travel to use it, so the protocol keeps it for now
    (Delta Spark's ``DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD``).

    Attributes:
        feature: the feature's name.
        version: the newest version that uses it.
        retry_after_ms: when (milliseconds since the epoch) ``drop_feature(...,
            truncate_history=True)`` will succeed, if nothing uses the feature again.
    """

    def __init__(self, message: str, feature: str, version: int, retry_after_ms: int) -> None:
        super().__init__(message)
        self.feature = feature
        self.version = version
        self.retry_after_ms = retry_after_ms


class InvalidArgumentError(DeltaError, ValueError):
    """An argument deltalog cannot honour: a malformed SQL expression, an unknown column, data
    that does not fit the table's schema, a write the table's rules forbid (append-only, NOT
    NULL). Also a ``ValueError``."""


class SchemaMismatchError(InvalidArgumentError):
    """Written data does not fit the table's schema: a column's type neither is the table's
    nor converts to it without loss (widening, timestamp units, string encodings), or a column
    the table lacks without schema merging. Raised before any data file is written.

    Attributes:
        table: the table's location.
        column: the column that does not fit, when one is to blame.
    """

    def __init__(self, message: str, table: str | None = None, column: str | None = None) -> None:
        super().__init__(message)
        self.table = table
        self.column = column


class NotADeltaTableError(InvalidArgumentError):
    """A write was pointed at a directory that holds data files but no ``_delta_log``: a plain
    parquet directory, which a new Delta table beside its files would hide. Convert it
    (:func:`deltalog.convert_to_deltalake`, ``CONVERT TO DELTA``) or pass
    ``allow_unconverted_files=True`` to create the table anyway.

    Attributes:
        table: the directory.
        files: a few of the data files found (relative paths).
    """

    def __init__(self, message: str, table: str | None = None, files: list[str] | None = None):
        super().__init__(message)
        self.table = table
        self.files = list(files or [])


class SparkWorkerPythonError(DeltaError):
    """Spark's Python workers cannot import deltalog: they run another interpreter than the
    one deltalog is installed in. Set ``PYSPARK_PYTHON`` (or ``spark.pyspark.python``) to one
    that has deltalog.

    Attributes:
        worker_python: the interpreter the workers run, when known.
    """

    def __init__(self, message: str, worker_python: str | None = None) -> None:
        super().__init__(message)
        self.worker_python = worker_python


class NamespaceNotFoundError(InvalidArgumentError):
    """A catalog has no namespace of that identifier."""


class AlreadyExistsError(InvalidArgumentError):
    """A catalog already has a namespace or table of that name (in one parent, a namespace and
    a table may not share a name either: Lance catalog specification, "Name and
    Identifier")."""


class NamespaceNotEmptyError(InvalidArgumentError):
    """A namespace still holds tables or namespaces, so it cannot be dropped."""


class ConstraintViolationError(InvalidArgumentError):
    """Written rows break a CHECK constraint, a column invariant or a generated column's
    expression; nothing was committed.

    Attributes:
        constraint: what was violated (``CHECK constraint positive``, ``invariant of column x``,
            ``generated column g``).
        expression: its SQL expression.
    """

    def __init__(
        self, message: str, constraint: str | None = None, expression: str | None = None
    ) -> None:
        super().__init__(message)
        self.constraint = constraint
        self.expression = expression


class StorageError(DeltaError):
    """The storage layer (local disk or object store) failed."""


class CatalogRequiredError(DeltaError):
    """A catalog-managed table was opened without its catalog (catalogManaged RFC: "Reader
    Requirements for Catalog-managed tables": readers must discover the table through its
    catalog and ask it for ratified commits that are not yet published).

    Open it with ``DeltaTable(uri, catalog_client=...)`` or through a catalog
    (``deltalog.catalog``); ``published_only=True`` reads its published commits alone.

    Attributes:
        table: the table's location.
    """

    def __init__(self, message: str, table: str | None = None) -> None:
        super().__init__(message)
        self.table = table


class CatalogError(DeltaError):
    """The catalog of a catalog-managed table failed a call: it could not be reached, refused
    the request, or its client raised (the message carries what it raised).

    Attributes:
        table: the table's location.
    """

    def __init__(self, message: str, table: str | None = None) -> None:
        super().__init__(message)
        self.table = table


class CatalogAuthenticationError(CatalogError):
    """A catalog refused the call because it came without valid credentials (no token, or an
    unknown or expired one: HTTP 401). Nothing changed. Retrying with the same credentials
    fails the same way.

    Attributes:
        table: the table's location, when the call concerned one.
        unauthenticated: always ``True``. Older code tested
            ``CatalogPermissionError.unauthenticated``.
    """

    unauthenticated: bool = True


class CatalogPermissionError(CatalogError):
    """A catalog refused the call because the credentials' role does not allow it (HTTP 403).
    For example, a writer changing a table's schema. Nothing changed.

    A call without valid credentials (HTTP 401) raises :class:`CatalogAuthenticationError`
    now. The ``unauthenticated`` keyword is still accepted so that old callers keep working.

    Attributes:
        table: the table's location, when the call concerned one.
        unauthenticated: ``False`` unless a caller passed ``unauthenticated=True``.
    """

    def __init__(
        self, message: str, table: str | None = None, unauthenticated: bool = False
    ) -> None:
        super().__init__(message, table)
        self.unauthenticated = unauthenticated


class CatalogThrottledError(CatalogError):
    """A catalog refused a commit for now: the table holds as many unpublished commits as the
    catalog allows (they must be published first), or the catalog is overloaded."""


class CatalogUnavailableError(CatalogError):
    """The catalog could not be reached, or it is overloaded or down (a connection error, a
    timeout before anything was sent, HTTP 502/503/504). Nothing changed, so the call may be
    retried later.

    Attributes:
        table: the table's location, when the call concerned one.
    """


class CommitOutcomeUnknownError(CatalogError):
    """A commit was sent to the catalog, but its outcome could not be learned: the answer was
    lost, the connection broke or the server failed after receiving it. The catalog may have
    ratified it. Unlike every other :class:`CatalogError`, this one does not mean "nothing
    changed".

    Do not simply write again: the data could be committed twice. Reload the table through
    its catalog, which ratifies each version at most once (catalogManaged RFC: "Commit
    Protocol"), and check whether ``version`` is this write. A write made with
    ``CommitProperties(app_id=..., app_version=...)`` can just be retried: the retry is skipped
    when the table already holds that application transaction (protocol: "Transaction
    Identifiers").

    Attributes:
        table: the table's location (or its name in the catalog).
        version: the version the commit was proposed as, when known.
    """

    def __init__(self, message: str, table: str | None = None, version: int | None = None) -> None:
        super().__init__(message, table)
        self.version = version


class InterruptedAfterCommit(KeyboardInterrupt):
    """An interrupt (Ctrl-C) that arrived after the operation's commit point: the change
    *was committed* as ``version``; do not retry it. An interrupt before that point stops the
    operation (nothing committed, its new files removed) and is raised as the plain
    ``KeyboardInterrupt`` it was. A ``KeyboardInterrupt`` by class, so that ``except
    KeyboardInterrupt`` and the interpreter's exit still treat it as one.

    Attributes:
        version: the version the operation committed (its last, if it made several).
    """

    def __init__(self, version: int, message: str | None = None) -> None:
        super().__init__(
            message
            or f"interrupted after version {version} was committed: the change landed "
            "(do not retry it)"
        )
        self.version = version


__all__ = [
    "AlreadyExistsError",
    "CatalogAuthenticationError",
    "CatalogError",
    "CatalogPermissionError",
    "CatalogRequiredError",
    "CatalogThrottledError",
    "CatalogUnavailableError",
    "ChangeDataNotRecordedError",
    "CommitConflictError",
    "CommitOutcomeUnknownError",
    "ConstraintViolationError",
    "CorruptDataFileError",
    "CorruptDeletionVectorError",
    "CorruptLogError",
    "DataFileNotFoundError",
    "DeltaError",
    "FeatureDropWaitError",
    "InterruptedAfterCommit",
    "InvalidArgumentError",
    "LogIntegrityError",
    "NamespaceNotEmptyError",
    "NamespaceNotFoundError",
    "NotADeltaTableError",
    "SchemaMismatchError",
    "SparkWorkerPythonError",
    "StorageError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
]
