"""``write_table``: data into a table (create, append, overwrite), a verb of a table: it takes
a :class:`~deltalog.table.delta_table.DeltaTable` or a location, and the pieces every writer
shares (commit properties, the protocol of a new table, the input's conversion, the checks of a
location) from :mod:`deltalog.write.writer`. Data files are written and committed by the native
core (spec "Creation of New Log Entries")."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from deltalog import _native
from deltalog._interrupts import after_commit
from deltalog._lazy import lazy_module
from deltalog.exceptions import InvalidArgumentError, TableNotFoundError
from deltalog.protocol import features
from deltalog.protocol.catalog_client import CatalogClient
from deltalog.table.delta_table import DeltaTable
from deltalog.write.properties import WriterProperties
from deltalog.write.writer import (
    CommitProperties,
    WriteMode,
    _input,
    _target_file_size,
    check_no_unconverted_files,
    check_not_a_file,
    check_snapshot_writable,
    new_table_protocol,
)

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")


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


def write_deltalake(
    table_or_uri: Any,
    data: Any,
    *,
    partition_by: list[str] | str | None = None,
    mode: WriteMode = "error",
    name: str | None = None,
    description: str | None = None,
    configuration: Mapping[str, str | None] | None = None,
    schema_mode: Literal["merge", "overwrite"] | None = None,
    storage_options: Mapping[str, str] | None = None,
    predicate: str | None = None,
    target_file_size: int | None = None,
    writer_properties: Any = None,
    commit_properties: Any = None,
    post_commithook_properties: Any = None,
) -> None:
    """deltalake's ``write_deltalake``, its name and keyword-only signature, on
    :func:`write_table` (which see for each argument; ``table_or_uri`` may be a
    ``pathlib.Path``). deltalake's own ``WriterProperties`` / ``CommitProperties`` objects
    are converted, ``post_commithook_properties`` honoured as for OPTIMIZE. A
    ``configuration`` value of ``None`` is refused (deltalake drops the key). Returns None,
    as deltalake does; :func:`write_table` returns the version.
    """
    from deltalog.table import optimize_args
    from deltalog.table.interop import arguments as compat_args

    if configuration is not None and any(v is None for v in configuration.values()):
        raise InvalidArgumentError(
            "configuration values must be strings: a None value is refused "
            f"({sorted(k for k, v in configuration.items() if v is None)})"
        )
    cleanup = compat_args.check_hooks(post_commithook_properties)
    target = table_or_uri if isinstance(table_or_uri, DeltaTable) else str(table_or_uri)
    version = write_table(
        target,
        data,
        mode=mode,
        partition_by=partition_by,
        configuration=cast("Mapping[str, str] | None", configuration),
        name=name,
        description=description,
        storage_options=storage_options,
        commit_properties=compat_args.commit_props(commit_properties),
        schema_mode=schema_mode,
        predicate=predicate,
        target_file_size=target_file_size,
        writer_properties=optimize_args.writer_properties(writer_properties),
    )
    if cleanup:
        opened = (
            target
            if isinstance(target, DeltaTable)
            else DeltaTable(target, storage_options=storage_options)
        )
        compat_args.run_hooks(opened, cleanup, version)
