"""CONVERT TO DELTA: ``convert_to_deltalake`` (named as deltalake names it).

A directory of parquet files becomes a Delta table in one commit (version 0, operation
``CONVERT``): the files stay where they are and are added as they are, with statistics
computed by reading each one (spec "Per-file Statistics"), so the first queries already skip
files. Hive-style partition directories (``day=2026-11-25/``) give the partition values. The
directory is inspected by the native core (``write::convert``); the commit is an ordinary
table creation that adopts the files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from deltalog import _native
from deltalog._lazy import lazy_module
from deltalog.exceptions import InvalidArgumentError, TableNotFoundError

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.write.writer import CommitProperties
else:
    pa = lazy_module("pyarrow")


def convert_to_deltalake(
    uri: str,
    mode: Literal["error", "ignore"] = "error",
    partition_by: pa.Schema | Mapping[str, pa.DataType] | Sequence[str] | None = None,
    partition_strategy: Literal["hive"] | None = None,
    name: str | None = None,
    description: str | None = None,
    configuration: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
    commit_properties: CommitProperties | None = None,
    collect_stats: bool = True,
    *,
    post_commithook_properties: Any = None,
) -> int:
    """Converts the parquet directory at ``uri`` to a Delta table, in place, in one commit.

    Args:
        uri: the directory (path or URI). Files and directories whose names start with ``_``
            or ``.`` are not data and are left out.
        mode: ``"error"`` (the default) fails when ``uri`` is a Delta table already;
            ``"ignore"`` then does nothing.
        partition_by: the Hive partition columns, in directory order: a pyarrow schema or a
            mapping of names to types (as deltalake takes it), or just the names, whose types
            are then inferred from the values (all integers: int64; all numbers: float64; all
            ``yyyy-mm-dd``: date32; otherwise string). Required when the files sit in
            ``column=value`` directories.
        partition_strategy: ``"hive"`` (the only layout; accepted for deltalake's signature).
        name, description, configuration: the new table's, as for ``write_table``.
            ``delta.columnMapping.mode`` is refused: the files name their columns.
        storage_options: object store settings.
        commit_properties: extra commitInfo fields.
        collect_stats: read every file for statistics (default). Without them the table is
            valid but no file can be skipped until it is rewritten.
        post_commithook_properties: deltalake's, as for OPTIMIZE
            (:class:`deltalog.PostCommitHookProperties`).

    Returns:
        The version committed (0), or the table's version with ``mode="ignore"``.

    Raises:
        InvalidArgumentError: no parquet files, files whose schemas do not fit together,
            directories that are not ``column=value``, partition columns that do not match
            the directories or values that are not of their type, or a table already there.
        CorruptDataFileError: a file that is not parquet.
    """
    from deltalog.protocol import properties
    from deltalog.table.interop import arguments as compat_args
    from deltalog.write.writer import new_table_protocol

    cleanup = compat_args.check_hooks(post_commithook_properties)

    if mode not in ("error", "ignore"):
        raise InvalidArgumentError(f'mode must be "error" or "ignore", not {mode!r}')
    if partition_strategy not in (None, "hive"):
        raise InvalidArgumentError(f'partition_strategy must be "hive", not {partition_strategy!r}')
    options = dict(storage_options) if storage_options else None
    try:
        existing = _native.RawSnapshot.open(uri, None, options)
    except TableNotFoundError:
        existing = None
    if existing is not None:
        if mode == "ignore":
            return int(existing.version())
        raise InvalidArgumentError(f"{uri} is a Delta table already (version {existing.version()})")
    config = dict(configuration or {})
    properties.validate(config)
    if config.get("delta.columnMapping.mode", "none") != "none":
        raise InvalidArgumentError(
            "CONVERT TO DELTA keeps the files as they are, so their columns keep their names: "
            "delta.columnMapping.mode cannot be set here"
        )
    names: list[str] | None = None
    partition_schema: pa.Schema | None = None
    if isinstance(partition_by, pa.Schema):
        partition_schema = partition_by
    elif isinstance(partition_by, Mapping):
        partition_schema = pa.schema(list(partition_by.items()))
    elif partition_by is not None:
        names = [partition_by] if isinstance(partition_by, str) else list(partition_by)
    schema, partition_columns, adds = _native.inspect_parquet_directory(
        uri, names, partition_schema, config or None, bool(collect_stats), options
    )
    protocol, stored = new_table_protocol(schema, config)
    props = compat_args.commit_props(commit_properties)
    version, _ = _native.write_table(
        uri,
        pa.RecordBatchReader.from_batches(schema, []),
        "error",
        None,
        list(partition_columns),
        dict(stored) if stored else None,
        name,
        description,
        options,
        props.app_transaction(),
        props.commit_info_json(),
        False,
        json.dumps(protocol),
        False,
        None,
        None,
        None,
        None,
        list(adds),
    )
    if cleanup:
        from deltalog.table.delta_table import DeltaTable

        compat_args.run_hooks(DeltaTable(uri, storage_options=options), cleanup, version)
    return int(version)
