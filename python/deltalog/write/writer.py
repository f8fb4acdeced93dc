"""What every writer of a table shares: :class:`CommitProperties`, the protocol a new table
gets (:func:`new_table_protocol`: the smallest for its features, protocol "Table Features for
New and Existing Tables"), the writability gate of a loaded snapshot
(:func:`check_snapshot_writable`), the conversion of the input data to an Arrow stream, and the
checks of a location (not a file, no unconverted parquet files). ``write_table`` itself is a
verb of a table (:mod:`deltalog.table.write`); data files are written and committed by the
native core (spec "Creation of New Log Entries").
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from deltalog import _args, _native
from deltalog._interrupts import Captured, capturing
from deltalog._lazy import lazy_module
from deltalog.exceptions import InvalidArgumentError
from deltalog.protocol import features
from deltalog.protocol.actions import Protocol

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")

WriteMode = Literal["error", "append", "overwrite", "ignore"]


@dataclass(frozen=True)
class CommitProperties:
    """What a commit records besides its actions.

    Attributes:
        app_id, app_version: an application transaction ("Transaction Identifiers"): the
            commit carries ``txn(app_id, app_version)``, and a write whose ``app_version`` the
            table already holds for ``app_id`` (or a later one) is skipped, so retried jobs
            write exactly once.
        custom_metadata: extra commitInfo fields (deltalog's own fields are never replaced).
        app_transactions: deltalake's spelling of the application transaction: a list of one
            object with ``app_id`` and ``version`` (``deltalake.Transaction``, or an
            ``(app_id, version)`` pair). deltalog's commits carry one ``txn`` action, so more
            than one is refused.
        max_commit_retries: deltalake's; deltalog retries a commit that lost its version to a
            non-conflicting one up to its own limit, so only ``None`` is accepted.

    deltalake's positional order (``custom_metadata`` first) works too: a mapping given as
    the first argument is the custom metadata.
    """

    app_id: str | None = None
    app_version: int | None = None
    custom_metadata: Mapping[str, Any] = field(default_factory=dict)
    app_transactions: Any = None
    max_commit_retries: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.app_id, Mapping):
            # deltalake's CommitProperties(custom_metadata, max_commit_retries, app_transactions)
            # called positionally.
            retries, transactions = self.app_version, self.custom_metadata or None
            object.__setattr__(self, "custom_metadata", dict(self.app_id))
            object.__setattr__(self, "app_id", None)
            object.__setattr__(self, "app_version", None)
            if retries is not None:
                object.__setattr__(self, "max_commit_retries", retries)
            if transactions is not None:
                object.__setattr__(self, "app_transactions", transactions)
        if self.max_commit_retries is not None:
            raise InvalidArgumentError(
                "CommitProperties(max_commit_retries=...) is not supported: deltalog retries a "
                "commit that lost its version to a non-conflicting one up to its own limit"
            )
        if self.app_transactions is not None:
            listed = list(self.app_transactions)
            if len(listed) > 1:
                raise InvalidArgumentError(
                    "CommitProperties(app_transactions=...) holds at most one transaction: a "
                    'deltalog commit carries one txn action ("Transaction Identifiers")'
                )
            if listed:
                one = listed[0]
                if isinstance(one, tuple):
                    app, version = one
                else:
                    app, version = one.app_id, one.version
                if self.app_id is not None and (self.app_id, self.app_version) != (app, version):
                    raise TypeError("app_id/app_version and app_transactions disagree")
                object.__setattr__(self, "app_id", app)
                object.__setattr__(self, "app_version", version)
        if (self.app_id is None) != (self.app_version is None):
            raise ValueError("app_id and app_version go together")
        if self.app_version is not None:
            _args.integer("app_version", self.app_version)
        if self.app_id is not None and not isinstance(self.app_id, str):
            raise TypeError(f"app_id must be a str, not {type(self.app_id).__name__}")

    def app_transaction(self) -> tuple[str, int] | None:
        """``(app_id, app_version)`` as the native core takes it, or None."""
        if self.app_id is None or self.app_version is None:
            return None
        return (self.app_id, self.app_version)

    def commit_info_json(self) -> str | None:
        """The custom commitInfo fields as JSON, or None."""
        if not self.custom_metadata:
            return None
        return json.dumps(dict(self.custom_metadata), default=str)


def check_snapshot_writable(raw: _native.RawSnapshot) -> None:
    """:func:`deltalog.protocol.features.check_writable` for a loaded snapshot: its protocol, with
    its
    schema and properties deciding whether unimplemented legacy writer features are in use.

    A catalog-managed table is writable through its catalog only (the snapshot was opened with
    a catalog client: commits go through it). Its maintenance (checkpoints, log compaction,
    cleanup, VACUUM) follows the same rule and is cleared with the catalog by the native
    core first, which also publishes the versions it covers (catalogManaged RFC: "Maintenance
    Operations on Catalog-managed Tables")."""
    meta = raw.metadata()
    protocol = Protocol(*raw.protocol())
    if features.is_catalog_managed(protocol) and raw.has_catalog():
        features.check_writable(
            protocol,
            meta["schema_string"] or "",
            meta["configuration"],
            through_catalog=True,
        )
        return
    # A catalog-managed table opened without its catalog raises CatalogRequiredError.
    features.check_writable(
        protocol, meta["schema_string"] or "", meta["configuration"], table=raw.table_uri()
    )


def _has_timestamp_ntz(t: pa.DataType) -> bool:
    """Whether ``t`` holds a timestamp without a time zone (Delta ``timestamp_ntz``)."""
    if pa.types.is_timestamp(t):
        return t.tz is None
    if pa.types.is_struct(t):
        return any(_has_timestamp_ntz(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_timestamp_ntz(t.value_type)
    if pa.types.is_map(t):
        return _has_timestamp_ntz(t.key_type) or _has_timestamp_ntz(t.item_type)
    return False


def _field_metadata_keys(schema: pa.Schema) -> set[bytes]:
    """The field metadata keys used anywhere in ``schema`` (nested struct fields included)."""
    keys: set[bytes] = set()

    def visit(field: pa.Field) -> None:
        keys.update((field.metadata or {}).keys())
        if pa.types.is_struct(field.type):
            for i in range(field.type.num_fields):
                visit(field.type.field(i))

    for f in schema:
        visit(f)
    return keys


def new_table_protocol(
    schema: pa.Schema,
    configuration: Mapping[str, str] | None,
    table_features: Iterable[str] = (),
) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``protocol`` action of a new table and the configuration to store.

    The protocol is the smallest that supports every feature the table uses
    (:func:`deltalog.protocol.features.min_protocol_for`: legacy versions where no table feature is
    needed, reader 3 / writer 7 with explicit lists otherwise): features named in
    ``table_features`` or by ``delta.feature.<name>`` properties, features whose enablement
    property is set, and ``timestampNtz`` for timestamp columns without a time zone. Writer
    version 2 is the floor (deltalog's default, as Delta Spark's).

    Raises:
        UnsupportedFeatureError: a feature deltalog cannot write (named in ``features``).
    """
    needed, stored = features.features_for_configuration(configuration or {}, table_features)
    if any(_has_timestamp_ntz(f.type) for f in schema):
        needed = needed | {"timestampNtz"}
    if any(k.startswith("delta.constraints.") for k in stored):
        needed = needed | {"checkConstraints"}
    declared = _field_metadata_keys(schema)
    if b"delta.generationExpression" in declared:
        needed = needed | {"generatedColumns"}
    if b"delta.invariants" in declared:
        needed = needed | {"invariants"}
    if b"delta.identity.start" in declared:
        needed = needed | {"identityColumns"}
    if b"CURRENT_DEFAULT" in declared:
        needed = needed | {"allowColumnDefaults"}
    if "rowTracking" in needed and features._is_true(stored.get("delta.enableRowTracking")):
        # "Row Tracking": enabling it needs the materialized columns' names.
        import uuid

        stored.setdefault(
            "delta.rowTracking.materializedRowIdColumnName", f"_row-id-col-{uuid.uuid4()}"
        )
        stored.setdefault(
            "delta.rowTracking.materializedRowCommitVersionColumnName",
            f"_row-commit-version-col-{uuid.uuid4()}",
        )
    iceberg = ("delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2")
    if any(features._is_true(stored.get(k)) for k in iceberg) and (
        stored.get("delta.columnMapping.mode", "none").strip().lower() == "none"
    ):
        # "Writer Requirements for IcebergCompatV2": column mapping must be on; like Delta
        # Spark, a new table asking for Iceberg compatibility gets name mode.
        stored["delta.columnMapping.mode"] = "name"
        needed = needed | {"columnMapping"}
    reader, writer, reader_list, writer_list = features.min_protocol_for(needed)
    if writer_list is None:
        writer = max(writer, 2)
    protocol = Protocol(reader, writer, reader_list, writer_list)
    # A catalog-managed table is only ever created through its catalog (write_table's
    # catalog_client), which is what the feature asks of writers.
    features.check_writable(
        protocol, "", stored, through_catalog=bool(features.CATALOG_MANAGED & needed)
    )
    action: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_list is not None:
        action["readerFeatures"] = reader_list
    if writer_list is not None:
        action["writerFeatures"] = writer_list
    return action, stored


def _input(data: Any) -> tuple[pa.RecordBatchReader, Captured]:
    """:func:`_reader`, keeping the exception a caller's own reader raises (a generator's
    ``KeyboardInterrupt``) to raise it as itself (:mod:`deltalog._interrupts`)."""
    reader = _reader(data)
    if isinstance(data, pa.RecordBatchReader):
        return capturing(reader)
    return reader, Captured()


def _reader(data: Any) -> pa.RecordBatchReader:
    """`data` as a RecordBatchReader: a pyarrow Table/RecordBatch/reader, a pandas DataFrame, or
    anything exporting ``__arrow_c_stream__`` (polars, duckdb results, ...)."""
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]).to_reader()
    if type(data).__module__.startswith("pandas"):
        # Before the stream interface, which pandas also has: its index is not a column
        # (no ``__index_level_0__``); ``df.reset_index()`` writes it as one.
        return pa.Table.from_pandas(data, preserve_index=False).to_reader()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    raise TypeError(
        f"cannot write {type(data).__name__}: pass a pyarrow Table, RecordBatch or "
        "RecordBatchReader, a pandas DataFrame, or an object with __arrow_c_stream__"
    )


def _local_path(uri: str) -> Path | None:
    """The local path of a path or ``file:`` URI; None for an object store URI."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if len(parsed.scheme) <= 1:  # a path (a drive letter on Windows)
        return Path(uri)
    return None


def check_not_a_file(uri: str) -> None:
    """Refuses to write a table at a local location that is a regular file, or lies under one
    (a table is a directory holding ``_delta_log/``: spec "Delta Table Specification"), before
    any data file is written. Object store URIs have no files in their way."""
    local = _local_path(uri)
    if local is None:
        return
    for place in (local, *local.parents):
        if place.is_file():
            what = "the location is" if place == local else f"{place} is"
            raise InvalidArgumentError(
                f"cannot write a Delta table at {uri}: {what} a file, not a table directory"
            )
        if place.exists():
            return


#: How deltalog's writer names a data file (``<prefix>-<uuid>.c000.snappy.parquet``; Spark's and
#: delta-rs's names put ``-c000`` after the uuid): without a log, such a file is what a failed
#: first write of a table left behind, not a parquet directory's data.
_DELTALOG_FILE = re.compile(
    r"[A-Za-z0-9_]+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"\.c000\.snappy\.parquet"
)


def unconverted_parquet_files(uri: str, limit: int = 3) -> list[str]:
    """Up to ``limit`` parquet files (relative paths) in the local directory ``uri`` when it has
    no ``_delta_log``: a plain parquet directory, not a Delta table. Names starting with ``_``
    or ``.`` are hidden, as Delta and Hive hide them ("Delta Table Specification"), and are not
    looked into; files named as deltalog names its own data files (orphans of a failed first
    write) do not count. Empty for object store URIs (not listed) and for a directory with a
    log."""
    local = _local_path(uri)
    if local is None or not local.is_dir() or (local / "_delta_log").exists():
        return []
    found: list[str] = []
    for directory, dirs, names in os.walk(local):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        for name in sorted(names):
            if name.startswith(("_", ".")) or _DELTALOG_FILE.fullmatch(name):
                continue
            if name.lower().endswith(".parquet"):
                found.append(os.path.relpath(os.path.join(directory, name), local))
                if len(found) >= limit:
                    return found
    return found


def check_no_unconverted_files(uri: str, allow_unconverted_files: bool = False) -> None:
    """Refuses to create a Delta table in a local directory of parquet files without a
    ``_delta_log``, before any file is written: the new table would not see them (a Delta
    table's files are those its log adds: "Delta Table Specification"), so an append or an
    overwrite would silently leave them out. ``allow_unconverted_files`` creates it anyway."""
    if allow_unconverted_files:
        return
    files = unconverted_parquet_files(uri)
    if not files:
        return
    from deltalog.exceptions import NotADeltaTableError

    raise NotADeltaTableError(
        f"cannot write a Delta table at {uri}: the directory holds parquet files that are not "
        f"a Delta table (no _delta_log; e.g. {', '.join(files)}), which a new table there would "
        f"not include. Convert the directory in place with deltalog.convert_to_deltalake("
        f"{uri!r}) (CONVERT TO DELTA) and write to the table it makes, or pass "
        "allow_unconverted_files=True to create a table beside the files anyway",
        table=uri,
        files=files,
    )


def _target_file_size(size: int | None) -> int | None:
    """A ``target_file_size`` argument, checked."""
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise InvalidArgumentError(f"target_file_size must be a positive int, not {size!r}")
    return size
