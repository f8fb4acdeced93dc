"""deltalog: Delta Lake tables for Python, with a Rust core.

>>> import deltalog as dl
>>> t = dl.DeltaTable("path/to/table")
>>> t.version(), t.schema(), t.get_add_actions()
"""

from __future__ import annotations

from deltalog import features
from deltalog._native import __version__
from deltalog.exceptions import (
    CorruptDeletionVectorError,
    CorruptLogError,
    DeltaError,
    StorageError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.table import DeltaTable, Metadata, Protocol

__all__ = [
    "CorruptDeletionVectorError",
    "CorruptLogError",
    "DeltaError",
    "DeltaTable",
    "Metadata",
    "Protocol",
    "StorageError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "__version__",
    "features",
]
