"""deltalog: Delta Lake tables for Python, with a Rust core.

>>> import deltalog as dl
>>> t = dl.DeltaTable("path/to/table")
>>> t.version(), t.schema(), t.get_add_actions()
"""

from __future__ import annotations

from deltalog import catalog
from deltalog._native import __version__
from deltalog.catalog import connect_catalog, load_catalog
from deltalog.exceptions import (
    AlreadyExistsError,
    CatalogAuthenticationError,
    CatalogError,
    CatalogPermissionError,
    CatalogRequiredError,
    CatalogThrottledError,
    CatalogUnavailableError,
    ChangeDataNotRecordedError,
    CommitConflictError,
    CommitOutcomeUnknownError,
    ConstraintViolationError,
    CorruptDataFileError,
    CorruptDeletionVectorError,
    CorruptLogError,
    DataFileNotFoundError,
    DeltaError,
    FeatureDropWaitError,
    InterruptedAfterCommit,
    InvalidArgumentError,
    LogIntegrityError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    NotADeltaTableError,
    SchemaMismatchError,
    SparkWorkerPythonError,
    StorageError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.expressions import Column, Expr, col
from deltalog.protocol import features
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.table.convert import convert_to_deltalake
from deltalog.table.delta_table import DeltaTable, VacuumResult
from deltalog.table.interop.compat import AddAction, DeltaTableConfig, RemoveAction, TableFeatures
from deltalog.table.interop.query import QueryBuilder
from deltalog.table.optimize_args import PostCommitHookProperties
from deltalog.table.scan import DeltaScan, ScanTask, read_task
from deltalog.table.transaction import Transaction, write_files
from deltalog.table.write import write_deltalake, write_table
from deltalog.write.properties import BloomFilterProperties, ColumnProperties, WriterProperties
from deltalog.write.writer import CommitProperties

__all__ = [
    "AddAction",
    "AlreadyExistsError",
    "BloomFilterProperties",
    "CatalogAuthenticationError",
    "CatalogError",
    "CatalogPermissionError",
    "CatalogRequiredError",
    "CatalogThrottledError",
    "CatalogUnavailableError",
    "ChangeDataNotRecordedError",
    "Column",
    "ColumnProperties",
    "CommitConflictError",
    "CommitOutcomeUnknownError",
    "CommitProperties",
    "ConstraintViolationError",
    "CorruptDataFileError",
    "CorruptDeletionVectorError",
    "CorruptLogError",
    "DataFileNotFoundError",
    "DeltaError",
    "DeltaScan",
    "DeltaTable",
    "DeltaTableConfig",
    "Expr",
    "FeatureDropWaitError",
    "InterruptedAfterCommit",
    "InvalidArgumentError",
    "LogIntegrityError",
    "Metadata",
    "NamespaceNotEmptyError",
    "NamespaceNotFoundError",
    "NotADeltaTableError",
    "PostCommitHookProperties",
    "Protocol",
    "QueryBuilder",
    "RemoveAction",
    "ScanTask",
    "SchemaMismatchError",
    "SparkWorkerPythonError",
    "StorageError",
    "TableFeatures",
    "TableNotFoundError",
    "Transaction",
    "UnsupportedFeatureError",
    "VacuumResult",
    "VersionNotFoundError",
    "WriterProperties",
    "__version__",
    "catalog",
    "col",
    "connect_catalog",
    "convert_to_deltalake",
    "features",
    "load_catalog",
    "read_task",
    "write_deltalake",
    "write_files",
    "write_table",
]
