"""Writing tables: ``write_table`` creates a table or appends to or overwrites one.

Data files are written by the native core (parquet, Hive-style partition directories,
per-file statistics); the commit is one put-if-absent of the next log version, retried at a
later version when a concurrent commit does not conflict (spec "Creation of New Log Entries").
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from deltalog import _args, _native
from deltalog._interrupts import Captured, after_commit, capturing
from deltalog._lazy import lazy_module
from deltalog.exceptions import InvalidArgumentError, TableNotFoundError
from deltalog.protocol import features
from deltalog.protocol.catalog_client import CatalogClient
from deltalog.write.properties import WriterProperties

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
    """

    app_id: str | None = None
    app_version: int | None = None
    custom_metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
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
    from deltalog.table.delta_table import Protocol

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
    from deltalog.table.delta_table import Protocol

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


def write_table(
    table_or_uri: Any,
    data: Any,
    mode: WriteMode = "error",
    partition_by: list[str] | str | None = None,
    configuration: Mapping[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    commit_properties: CommitProperties | None = None,
    schema_mode: Literal["merge", "overwrite"] | None = None,
    table_features: Iterable[str] | None = None,
    predicate: str | None = None,
    clustering_columns: list[str] | None = None,
    target_file_size: int | None = None,
    catalog_client: CatalogClient | None = None,
    writer_properties: WriterProperties | None = None,
    allow_unconverted_files: bool = False,
) -> int:
    """Writes ``data`` to the Delta table at ``table_or_uri`` and returns the new version.

    Args:
        table_or_uri: a ``DeltaTable`` or a table location (path or URI).
        data: a pyarrow Table/RecordBatch/RecordBatchReader, a pandas DataFrame, or anything
            exporting ``__arrow_c_stream__``.
        mode: ``"error"`` (the default: fail if the table exists), ``"append"``,
            ``"overwrite"`` (replace every row) or ``"ignore"`` (do nothing if it exists).
        partition_by: partition columns of a new table (checked against an existing one).
            Column names are case-insensitive, here and in the data: ``"ID"`` is the
            column ``id``, in the schema's spelling; names differing only in case are refused.
        configuration, name, description: table properties, name and description of a new
            table. ``delta.*`` properties are checked by :mod:`deltalog.protocol.properties`
            (unknown
            keys and invalid values refused); values are strings (booleans and numbers are
            converted, ``None`` is refused).
        storage_options: object store settings, as for ``DeltaTable``.
        commit_properties: an application transaction (idempotent writes) and extra
            commitInfo fields.
        schema_mode: ``"merge"`` adds the data's columns the table does not have (as nullable
            columns; existing rows read them as null). Without it such columns are an error.
            ``"overwrite"`` (with ``mode="overwrite"``) replaces the table's schema, and its
            partitioning when ``partition_by`` is given, by the data's.
        clustering_columns: clustering columns of a new table (not partitioned): recorded in the
            ``delta.clustering`` domain, with statistics always collected for them (spec
            "Clustered Table"); adds the ``clustering`` feature.
        predicate: with ``mode="overwrite"``, replace only the rows matching this SQL
            predicate (Delta's ``replaceWhere``, e.g. ``"day >= '2026-01-01'"``); every written
            row must match it. Matching rows are removed with deletion vectors or by rewriting
            their files, as DELETE does.
        target_file_size: size in bytes a data file is closed at (``None``: the table's
            ``delta.targetFileSize``, else 100 MiB as ``deltalake`` writes). Each partition's
            rows go to one file at a time in input order, so files hold consecutive rows.
        table_features: table features a new table supports from the start (also
            ``configuration={"delta.feature.<name>": "supported"}``); enablement properties
            such as ``delta.enableDeletionVectors=true`` add their feature themselves.
        writer_properties: how the parquet files are encoded (compression and level, row
            group and page sizes, per column dictionaries, statistics and bloom filters; see
            :mod:`deltalog.write.properties`).
        allow_unconverted_files: create a table in a local directory that holds parquet files
            but no ``_delta_log`` (a plain parquet directory, whose files the new table does
            not include). Without it such a write, in any ``mode``, raises
            :class:`~deltalog.exceptions.NotADeltaTableError`: convert the directory with
            :func:`deltalog.convert_to_deltalake` instead. Files and directories whose names
            start with ``_`` or ``.`` are hidden and do not count, nor do files named as
            deltalog names its data files (``part-<uuid>.c000.snappy.parquet``: what a failed
            first write leaves). Object store locations are not listed for this check.

    Returns:
        The version committed (for ``"ignore"`` on an existing table, or an application
        transaction already committed: the table's current version).

        catalog_client: with a location, the catalog (a
            :class:`deltalog.catalog.CatalogClient`) of a catalog-managed table: an existing
            one is written through it; a new one is created catalog-managed
            (``catalogManaged`` with ``inCommitTimestamp`` and ``vacuumProtocolCheck``,
            in-commit timestamps enabled) and its version 0 is ratified by the catalog, which
            registers the table in the same step (catalogManaged RFC, "Creating and Dropping
            Catalog-managed Tables").

    Raises:
        CommitConflictError: a concurrent commit conflicts with this one; nothing committed.
        InvalidArgumentError: the location is a regular file (or lies under one).
        NotADeltaTableError: the location is a directory of parquet files without a
            ``_delta_log`` (see ``allow_unconverted_files``).
        UnsupportedFeatureError: the table uses features deltalog cannot write.
        CatalogRequiredError: the table is catalog-managed and is written without its catalog
            (by path, or a table opened with ``published_only=True``).
        CatalogError: the catalog refused or failed the commit; a client's own
            :class:`deltalog.DeltaError` (``CatalogPermissionError``,
            ``CommitOutcomeUnknownError``, ...) is raised as the client raised it.
        ValueError: the data does not fit the table, or the mode forbids the write.
    """
    from deltalog.table.delta_table import DeltaTable

    if catalog_client is not None:
        if isinstance(table_or_uri, DeltaTable):
            raise ValueError("pass catalog_client with a location, not with a DeltaTable")
        if catalog_client.get_ratified_commits().latest_version >= 0:
            table = DeltaTable(
                str(table_or_uri), storage_options=storage_options, catalog_client=catalog_client
            )
            return write_table(
                table,
                data,
                mode=mode,
                partition_by=partition_by,
                configuration=configuration,
                name=name,
                description=description,
                commit_properties=commit_properties,
                schema_mode=schema_mode,
                predicate=predicate,
                target_file_size=target_file_size,
                writer_properties=writer_properties,
            )
        check_no_unconverted_files(str(table_or_uri), allow_unconverted_files)
        table_features = [
            *(table_features or ()),
            "catalogManaged",
            features.IN_COMMIT_TIMESTAMP,  # "inCommitTimestamp", as other writers spell it
            "vacuumProtocolCheck",
        ]
        configuration = {**(configuration or {}), "delta.enableInCommitTimestamps": "true"}
        # The table's id in its catalog, in its configuration: engines committing through Unity
        # Catalog's Delta API read it there (and assert it); the catalog adopts it at version
        # 0 (deltalog.catalog.stores.sql). A client that allocated the table (a UC staging table)
        # says which id (``table_uuid``).
        configuration.setdefault(
            "io.unitycatalog.tableId",
            str(getattr(catalog_client, "table_uuid", None) or uuid.uuid4()),
        )

    if isinstance(table_or_uri, DeltaTable):
        uri = table_or_uri.table_uri
        storage_options = storage_options or table_or_uri._storage_options
    else:
        uri = str(table_or_uri)
        check_not_a_file(uri)
    options = dict(storage_options) if storage_options else None
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    existing: _native.RawSnapshot | None
    if catalog_client is not None:
        existing = None  # a new catalog-managed table (checked above)
    elif isinstance(table_or_uri, DeltaTable) and table_or_uri._storage_options == (
        storage_options or None
    ):
        # The latest version, from the loaded one: only the commits since are read.
        existing = table_or_uri._latest()
    else:
        try:
            existing = _native.RawSnapshot.open(uri, None, options)
        except TableNotFoundError:
            existing = None
    if existing is not None:
        check_snapshot_writable(existing)
    elif catalog_client is None:
        check_no_unconverted_files(uri, allow_unconverted_files)
    if schema_mode not in (None, "merge", "overwrite"):
        raise ValueError(f'schema_mode must be None, "merge" or "overwrite", not {schema_mode!r}')
    if schema_mode == "overwrite" and mode != "overwrite":
        raise ValueError('schema_mode="overwrite" needs mode="overwrite"')
    if predicate is not None and mode != "overwrite":
        raise ValueError('a predicate (replaceWhere) needs mode="overwrite"')
    if configuration is not None:
        # Checked even where an existing table ignores them: a bad property is an error.
        from deltalog.protocol import properties

        properties.validate(configuration)
    props = commit_properties or CommitProperties()
    app = props.app_transaction()
    reader, captured = _input(data)
    protocol = None
    if existing is None:
        wanted = list(table_features or ())
        if clustering_columns:
            wanted.append("clustering")
        action, stored = new_table_protocol(reader.schema, configuration, wanted)
        if catalog_client is None and features.CATALOG_MANAGED & set(
            action.get("readerFeatures") or ()
        ):
            raise InvalidArgumentError(
                "a catalog-managed table is created through its catalog: pass catalog_client "
                '(catalogManaged RFC, "Writer Requirements for Catalog-managed tables")'
            )
        protocol = json.dumps(action)
        configuration = stored
    with captured:  # the input's own exception (a generator's), raised as itself
        version, _written = _native.write_table(
            uri,
            reader,
            mode,
            existing,
            list(partition_by) if partition_by is not None else None,
            dict(configuration) if configuration else None,
            name,
            description,
            options,
            app,
            props.commit_info_json(),
            schema_mode == "merge",
            protocol,
            schema_mode == "overwrite",
            predicate,
            list(clustering_columns) if clustering_columns and existing is None else None,
            _target_file_size(target_file_size),
            catalog_client,
            None,
            writer_properties.to_json() if writer_properties is not None else None,
        )
    if isinstance(table_or_uri, DeltaTable):
        with after_commit(version if _written else None):
            if existing is not None:
                # A catalog-managed table moves to the version just written and published,
                # without asking its catalog again; any other table to the latest version.
                table_or_uri._set(existing.advance_published(version))
            else:
                table_or_uri.update_incremental()
    return version
