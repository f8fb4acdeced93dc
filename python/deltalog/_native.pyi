"""Type stub of the native module built from `rust/python` (PyO3).

Checked against the built module by ``python -m mypy.stubtest deltalog._native
--mypy-config-file pyproject.toml``. Its classes are PyO3 ``#[pyclass]``es: final (not
subclassable), constructed by ``__new__`` (``#[new]``).
"""

from typing import Any, TypedDict, final

import pyarrow as pa
from typing_extensions import Self

__all__ = [
    "RawBatchStream",
    "RawHeader",
    "RawScan",
    "RawSnapshot",
    "__version__",
    "add_actions_from_footers",
    "add_columns",
    "check_proposal",
    "child_directories",
    "cleanup_metadata",
    "clone_table",
    "commit_actions",
    "compact_logs",
    "count_violations",
    "create_checkpoint",
    "delete_files",
    "delete_tree",
    "dml",
    "duration_property_ms",
    "dv_cardinality",
    "dv_deserialize",
    "dv_file",
    "dv_serialize",
    "evolved_metadata",
    "feature_trace",
    "files_with_narrower_types",
    "inspect_parquet_directory",
    "interval_ms",
    "json_checksum",
    "log_file_version",
    "mask_rows",
    "merge",
    "optimize",
    "optimize_commit",
    "optimize_plan",
    "optimize_rewrite",
    "parse_expression",
    "publish",
    "read_log_file",
    "remove_actions",
    "repair",
    "replace_where_actions",
    "restore_actions",
    "skipping_predicate",
    "truncate_history",
    "vacuum_plan",
    "validate_checksum",
    "write_change_files",
    "write_files",
    "write_rows_with_lineage",
    "write_table",
    "z85_decode",
    "z85_encode",
]

__version__: str

class _MetadataDict(TypedDict):
    """``metadata()`` of a snapshot or header: the fields of its ``metaData`` action (the
    core's ``Metadata``; not a runtime class)."""

    id: str | None
    name: str | None
    description: str | None
    format_provider: str | None
    format_options: dict[str, str]
    schema_string: str | None
    partition_columns: list[str]
    created_time: int | None
    configuration: dict[str, str]

@final
class RawHeader:
    """A table's protocol and metadata at one version, as its catalog cached them."""

    def __new__(
        cls,
        uri: str,
        version: int,
        protocol: str,
        metadata: str,
        storage_options: dict[str, str] | None = None,
    ) -> Self: ...
    def table_uri(self) -> str: ...
    def version(self) -> int: ...
    def protocol(self) -> tuple[int, int, list[str] | None, list[str] | None]: ...
    def metadata(self) -> _MetadataDict: ...
    def schema(self) -> pa.Schema: ...
    def physical_schema(self) -> pa.Schema: ...
    def column_mapping_mode(self) -> str: ...

@final
class RawSnapshot:
    """One loaded version of a table, held by the Rust core."""

    @staticmethod
    def open(
        uri: str,
        version: int | None = None,
        storage_options: dict[str, str] | None = None,
        catalog_client: Any = None,
        header: RawHeader | None = None,
        vouched: bool = False,
    ) -> RawSnapshot:
        """Opens a version; of a catalog-managed table through ``catalog_client`` (a
        ``deltalog.catalog.CatalogClient``), which the snapshot keeps for later versions and
        commits, starting from what the catalog cached (``header``) when that is the version
        opened."""
    @staticmethod
    def resolve_timestamp(
        uri: str,
        timestamp_ms: int,
        storage_options: dict[str, str] | None = None,
        catalog_client: Any | None = None,
    ) -> int:
        """The latest version committed at or before ``timestamp_ms``; through
        ``catalog_client`` a catalog-managed table's unpublished commits count too."""
    def load_version(self, version: int | None) -> RawSnapshot: ...
    def has_catalog(self) -> bool: ...
    def advance(self, version: int | None) -> RawSnapshot:
        """A newer version: only the commits after this one are replayed onto it."""
    def advance_published(self, version: int) -> RawSnapshot:
        """After committing ``version``: the latest version, or ``version`` itself without
        asking the catalog when the log holds every commit up to it."""
    def version_at_timestamp(self, timestamp_ms: int) -> int: ...
    def history(self, limit: int | None = None) -> list[tuple[int, int, str | None]]: ...
    def version_changes(
        self, limit: int | None = None
    ) -> list[tuple[int, int, str | None, int, int, int, int, int, int, bool, bool]]:
        """What each version changed, newest first, at most ``limit`` entries, for the versions
        and timestamps ``history`` gives: ``(version, timestamp_ms, commitInfo JSON or None,
        files_added, bytes_added, files_removed, bytes_removed, removed_without_size,
        deletion_vectors_added, metadata_changed, protocol_changed)``. ``bytes_removed`` sums
        the removes that have a size; ``removed_without_size`` counts the others;
        ``deletion_vectors_added`` counts the adds carrying a deletion vector."""
    def checkpoint_version(self) -> int | None:
        """The version of the checkpoint this snapshot was replayed from, None when it was
        replayed from commits only."""
    def table_uri(self) -> str: ...
    def version(self) -> int: ...
    def protocol(self) -> tuple[int, int, list[str] | None, list[str] | None]: ...
    def metadata(self) -> _MetadataDict: ...
    def schema(self) -> pa.Schema: ...
    def physical_schema(self) -> pa.Schema: ...
    def column_mapping_mode(self) -> str: ...
    def add_actions(self) -> pa.RecordBatchReader: ...
    def clustering_columns(self) -> list[str]: ...
    def files(self) -> list[str]: ...
    def num_files(self) -> int: ...
    def transactions(self) -> dict[str, tuple[int, int | None]]: ...
    def domain_metadata(self) -> list[tuple[str, str]]: ...
    def timestamp(self) -> int | None: ...
    def scan(
        self,
        columns: list[str] | None = None,
        row_tracking: bool = False,
        predicate: str | None = None,
    ) -> RawScan: ...
    def changes(
        self, start: int, columns: list[str] | None = None, predicate: str | None = None
    ) -> RawScan: ...

@final
class RawScan:
    """A planned scan: read spec, file tasks and the storage to read them from."""

    @staticmethod
    def from_json(
        spec: str, tasks: list[str], storage_options: dict[str, str] | None = None
    ) -> RawScan: ...
    def schema(self) -> pa.Schema: ...
    def spec_json(self) -> str: ...
    def task_jsons(self) -> list[str]: ...
    def num_tasks(self) -> int: ...
    def files_considered(self) -> int: ...
    def to_table(self) -> pa.Table: ...
    def file_plan(self) -> bytes:
        """The planned files as an Arrow IPC stream for Spark's file scan (``path``,
        ``size``, ``deleted_rows``: a portable RoaringBitmap or null, ``partition``: the
        typed partition values)."""
    def to_stream(self) -> RawBatchStream: ...

@final
class RawBatchStream:
    """Batches of a running scan; errors raise the typed deltalog exceptions."""

    def __iter__(self) -> RawBatchStream: ...
    def __next__(self) -> pa.RecordBatch: ...

def json_checksum(text: str) -> str:
    """The MD5 checksum of a `_last_checkpoint` document (spec: "JSON checksum")."""

def dv_serialize(rows: list[int]) -> bytes:
    """Row indexes as a deletion vector (magic number + portable 64-bit RoaringBitmap)."""

def dv_deserialize(data: bytes) -> list[int]:
    """The row indexes of a serialized deletion vector (checked)."""

def dv_cardinality(data: bytes) -> int:
    """Decodes a serialized deletion vector; the number of rows it deletes."""

def dv_file(rows: list[int]) -> bytes:
    """A DV file with one deletion vector at offset 1."""

def z85_encode(data: bytes) -> str:
    """Z85 text of bytes (zero-padded to a multiple of four)."""

def z85_decode(text: str) -> bytes:
    """The bytes of Z85 text."""

def write_table(
    uri: str,
    data: pa.RecordBatchReader,
    mode: str,
    snapshot: RawSnapshot | None = None,
    partition_by: list[str] | None = None,
    configuration: dict[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
    storage_options: dict[str, str] | None = None,
    app_transaction: tuple[str, int] | None = None,
    commit_info: str | None = None,
    merge_schema: bool = False,
    protocol: str | None = None,
    overwrite_schema: bool = False,
    predicate: str | None = None,
    clustering_columns: list[str] | None = None,
    target_file_size: int | None = None,
    catalog_client: Any = None,
    adopted_files: list[str] | None = None,
    writer_properties: str | None = None,
) -> tuple[int, bool]:
    """Writes `data` to the table at `uri`; `(version, written)`. `protocol` is the JSON
    `protocol` action of a new table; `adopted_files` are `add` actions (JSON) of files
    already under a new table's root that its first commit adopts (CONVERT)."""

def dml(
    snapshot: RawSnapshot,
    predicate_sql: str | None = None,
    predicate_json: str | None = None,
    set: list[tuple[str, str, bool]] | None = None,
    app_transaction: tuple[str, int] | None = None,
    commit_info: str | None = None,
    predicate_text: str | None = None,
    set_text: list[tuple[str, str]] | None = None,
    target_file_size: int | None = None,
    writer_properties: str | None = None,
) -> dict[str, Any]:
    """DELETE (`set` None) or UPDATE of the latest version `snapshot`; the metrics, with
    `version` None when nothing changed. `set` holds `(column, value, is_sql)`;
    `predicate_text` and `set_text` (column, SQL) are what the commitInfo shows."""

def write_files(
    snapshot: RawSnapshot,
    data: pa.RecordBatchReader,
    target_file_size: int | None = None,
    replace_where: str | None = None,
) -> list[str]:
    """Writes data files of the table (its schema, partitioning, column mapping, statistics and
    rules) without committing; their `add` actions as JSON texts. With ``replace_where`` every
    row must match that SQL predicate, and `cdc` actions of the inserted rows come too when
    the change feed is on."""

def add_actions_from_footers(
    snapshot: RawSnapshot, files: list[tuple[str, dict[str, str | None]]]
) -> list[str]:
    """``add`` actions (JSON texts, in the order of ``files``) for parquet files another
    writer (e.g. Spark's native parquet writer) put into the snapshot's table, for a
    transaction to commit. ``files`` holds ``(path, partition_values)``: the path relative to
    the table root as stored (not URI-encoded; the action's ``path`` is encoded as deltalog's
    writer encodes it) and every partition column's value (logical or physical name; ``None``
    or ``""`` for null), serialized as the protocol's "Partition Value Serialization" says.

    Only each file's footer is read (one ranged read of its last 64 KiB on object stores),
    ``size`` and ``modificationTime`` come from the store, ``dataChange`` is true, and
    ``stats`` are those deltalog's own writer gives the same rows (numRecords; nullCount,
    minValues and maxValues of the table's indexed leaf columns, by physical name, strings cut
    to 32 characters, timestamps to milliseconds) as far as the footer has them: min/max are
    left out where a row group lacks them, for INT96 timestamps and for NaN floats; nullCount
    where a row group lacks it and for arrays and maps.

    Raises ``InvalidArgumentError`` for a bad path or partition value,
    ``DataFileNotFoundError`` for a missing file and ``CorruptDataFileError`` for a file that
    is not parquet or does not fit the table's schema (a column of another type, a column the
    table does not have, a NOT NULL column missing or holding nulls), each naming the file.
    """

def evolved_metadata(
    snapshot: RawSnapshot,
    schema: pa.Schema,
    merge_schema: bool = False,
    overwrite_schema: bool = False,
    partition_by: list[str] | None = None,
) -> str | None:
    """The `metaData` action (JSON) a write of data shaped ``schema`` commits under schema_mode
    merge or overwrite, or None when the table's metadata stays."""

def mask_rows(
    snapshot: RawSnapshot, masks: list[tuple[str, int, list[int]]]
) -> tuple[list[str], int, int]:
    """Deletion vectors taking rows away: ``(path, live rows, row indexes)`` per file. Returns
    the actions (JSON), the vectors added and the files removed (every live row gone)."""

def write_change_files(
    snapshot: RawSnapshot, data: pa.RecordBatchReader, target_file_size: int | None = None
) -> list[str]:
    """Change data files of rows changed elsewhere: ``data`` holds the table's columns and
    ``_change_type``. Returns the `cdc` actions (JSON)."""

def write_rows_with_lineage(
    snapshot: RawSnapshot, data: pa.RecordBatchReader, target_file_size: int | None = None
) -> list[str]:
    """Data files of rows updated or copied elsewhere that keep their lineage ("Writer
    Requirements for Row Tracking"): ``data`` holds the table's columns, ``_row_id`` and
    ``_row_commit_version`` (null: the commit's version), written into the materialized row
    tracking columns when row tracking is enabled; the table's rules are checked. Returns the
    `add` actions (JSON; the commit gives them their ``baseRowId``)."""

def skipping_predicate(snapshot: RawSnapshot, sql: str) -> str | None:
    """The file-skipping predicate (JSON) of a SQL expression over the table; None when
    nothing can be skipped."""

def replace_where_actions(
    snapshot: RawSnapshot, sql: str, target_file_size: int | None = None
) -> tuple[list[str], list[str]]:
    """The removals of a replaceWhere overwrite by ``sql``: actions (JSON) and files read."""

def commit_actions(
    uri: str,
    read_version: int | None,
    operation: str,
    actions: list[str],
    parameters: str | None = None,
    blind_append: bool = False,
    read_files: list[str] | None = None,
    app_transaction: tuple[str, int] | None = None,
    commit_info: str | None = None,
    storage_options: dict[str, str] | None = None,
    snapshot: RawSnapshot | None = None,
    enable_in_commit_timestamps: bool = False,
    catalog_client: Any | None = None,
) -> int:
    """Commits JSON actions as the version after `read_version` (following the table rules of
    `snapshot`, the read version: in-commit timestamps); the version committed.
    `catalog_client` ratifies version 0 of a new catalog-managed table."""

def count_violations(snapshot: RawSnapshot, sql: str) -> int:
    """Rows of the snapshot for which the SQL condition is false or unknown."""

def parse_expression(sql: str) -> str:
    """The JSON form of a SQL expression (raises InvalidArgumentError when it does not parse)."""

def restore_actions(current: RawSnapshot, target: RawSnapshot) -> tuple[list[str], int, int]:
    """Actions restoring `target`'s content on top of `current`: (actions, restored, removed)."""

def remove_actions(snapshot: RawSnapshot, paths: list[str]) -> list[str]:
    """`remove` actions (JSON texts) for active files of the snapshot (URI-decoded paths)."""

def add_columns(snapshot: RawSnapshot, columns: pa.Schema) -> tuple[str, dict[str, str]]:
    """The schema string and configuration of the table with ``columns`` added at the end
    (ids, physical names and nested ids assigned as the table needs)."""

def merge(
    snapshot: RawSnapshot,
    source: pa.RecordBatchReader,
    predicate: str,
    source_alias: str,
    target_alias: str,
    clauses: str,
    app_transaction: tuple[str, int] | None = None,
    commit_info: str | None = None,
    target_file_size: int | None = None,
    merge_schema: bool = False,
    writer_properties: str | None = None,
) -> dict[str, Any]:
    """MERGE `source` into the snapshot's table; the metrics (`version` None: no change).
    `merge_schema`: the source's new columns join the schema in the same commit (with
    `UPDATE SET *` / `INSERT *` clauses)."""

def create_checkpoint(
    snapshot: RawSnapshot,
    kind: str | None = None,
    sidecars: int | None = None,
    now_ms: int | None = None,
    classic_copy: bool = True,
) -> dict[str, Any]:
    """Writes a checkpoint of the snapshot's version (`kind`: classic, v2, v2-parquet, v2-json;
    None follows `delta.checkpointPolicy`) and `_last_checkpoint`; returns `version`, `files`
    (table-relative paths written), `num_actions`, `num_add_files`, `size_in_bytes`."""

def compact_logs(snapshot: RawSnapshot, start: int | None = None, end: int | None = None) -> str:
    """Writes `<start>.<end>.compacted.json` (defaults: the commits after the snapshot's
    checkpoint, up to its version); returns its table-relative path."""

def cleanup_metadata(snapshot: RawSnapshot, now_ms: int | None = None) -> list[str]:
    """Deletes the table's expired log files ("Metadata Cleanup") as of `now_ms`; returns the
    `_delta_log`-relative names deleted."""

def feature_trace(snapshot: RawSnapshot, feature: str) -> tuple[int, int, str] | None:
    """The newest use of a table feature in the history the table keeps (the state at the
    oldest checkpoint, the commits after it, V2 checkpoints): ``(version, commit time ms,
    what)``, or None. ``ValueError`` for a feature DROP FEATURE does not support."""

def truncate_history(snapshot: RawSnapshot, version: int, now_ms: int | None = None) -> list[str]:
    """Deletes the log files of the versions before ``version`` (which must have a complete
    checkpoint); returns the ``_delta_log``-relative names deleted."""

def files_with_narrower_types(snapshot: RawSnapshot) -> list[str]:
    """The active files (table-relative) holding a column in a narrower type than the table's,
    as files written before a type widening do (footers only)."""

def vacuum_plan(
    snapshot: RawSnapshot,
    retention_ms: int | None = None,
    enforce_retention: bool = True,
    now_ms: int | None = None,
) -> list[tuple[str, int]]:
    """The files VACUUM would delete, as (table-relative path, size) pairs."""

def interval_ms(text: str) -> int:
    """Milliseconds of an interval property value (``interval 7 days``); ``ValueError`` when
    it is not one."""

def duration_property_ms(snapshot: RawSnapshot, key: str) -> int:
    """An interval table property (``delta.deletedFileRetentionDuration``,
    ``delta.logRetentionDuration``, ``delta.checkpointRetentionDuration``) in milliseconds, its
    default when unset."""

def delete_files(snapshot: RawSnapshot, paths: list[str]) -> int:
    """Deletes table-relative files (a missing one is not an error); how many were processed."""

def validate_checksum(snapshot: RawSnapshot) -> bool:
    """Checks the snapshot against its version's `.crc` file; False when there is none."""

def child_directories(uri: str, storage_options: dict[str, str] | None = None) -> list[str]:
    """The directories directly under ``uri``, sorted (empty ones included locally)."""

def delete_tree(uri: str, storage_options: dict[str, str] | None = None) -> None:
    """Deletes everything under ``uri`` (or the one file it names)."""

def publish(
    uri: str,
    version: int,
    catalog_client: Any,
    storage_options: dict[str, str] | None = None,
) -> None:
    """Publishes every commit the catalog ratified for the table at ``uri`` up to ``version``
    (copied to ``<v>.json`` in order), then tells the catalog."""

def read_log_file(
    uri: str, relative: str, storage_options: dict[str, str] | None = None
) -> bytes | None:
    """The bytes of ``_delta_log/<relative>`` of the table at ``uri`` (no ``..``, not
    absolute), or None when it does not exist."""

def log_file_version(name: str) -> int | None:
    """The version a ``_delta_log`` file name belongs to (a compaction's last), or None."""

def check_proposal(
    uri: str,
    version: int,
    content: bytes,
    storage_options: dict[str, str] | None = None,
    check_files: bool = True,
) -> dict[str, Any]:
    """Checks ``content`` proposed as ``version`` of the catalog-managed table at ``uri`` (the
    rules a catalog checks before it ratifies a commit; with ``check_files`` the files the
    actions add exist). What the catalog decides on: ``sha256``, ``in_commit_timestamp``,
    ``txn_id``, ``commit_info_first``, ``protocol``, ``metadata`` (compact JSON), ``domains``
    (``[(domain, configuration or None)]``), ``actions``, ``files_checked``."""

def optimize(
    snapshot: RawSnapshot,
    layout: str,
    columns: list[str] | None = None,
    full: bool = False,
    partition_filter_sql: str | None = None,
    target_size: int | None = None,
    max_concurrent_tasks: int | None = None,
    memory_limit: int | None = None,
    commit_info: str | None = None,
    partition_filter_text: str | None = None,
    writer_properties: str | None = None,
) -> dict[str, Any]:
    """OPTIMIZE of the snapshot's table, committed as the next version. ``layout``:
    ``compact`` (bin-packing; clustering on a clustered table), ``zorder`` (by ``columns``),
    ``cluster`` (``full`` reclusters every file), ``purge`` (REORG PURGE), ``rewrite`` (a
    REORG of the files whose table-relative paths ``columns`` holds) or ``unmap`` (every file
    rewritten with logical names, committed with the metadata without column mapping).
    deltalake's
    metrics, ``version`` None when nothing was rewritten, plus ``numRows`` and
    ``spilledBytes``."""

def optimize_plan(
    snapshot: RawSnapshot,
    layout: str,
    columns: list[str] | None = None,
    full: bool = False,
    partition_filter_sql: str | None = None,
    target_size: int | None = None,
) -> tuple[int, list[list[str]], int, int]:
    """A distributed OPTIMIZE's plan: ``(target size, units, considered files, partitions)``,
    each unit the paths of the files one rewrite takes."""

def optimize_rewrite(
    snapshot: RawSnapshot,
    layout: str,
    paths: list[str],
    columns: list[str] | None = None,
    full: bool = False,
    target_size: int | None = None,
    memory_limit: int | None = None,
    writer_properties: str | None = None,
) -> tuple[list[str], int, int, int]:
    """One unit of a distributed OPTIMIZE rewritten (not committed): ``(actions as JSON,
    rows, spilled bytes, record batches written)``."""

def optimize_commit(
    snapshot: RawSnapshot,
    layout: str,
    plan: tuple[int, list[list[str]], int, int],
    results: list[tuple[list[str], int, int, int]],
    columns: list[str] | None = None,
    full: bool = False,
    partition_filter_text: str | None = None,
    commit_info: str | None = None,
) -> dict[str, Any]:
    """The units' rewrites committed as one OPTIMIZE version after the planned one."""

def inspect_parquet_directory(
    uri: str,
    partition_names: list[str] | None = None,
    partition_schema: pa.Schema | None = None,
    configuration: dict[str, str] | None = None,
    collect_stats: bool = True,
    storage_options: dict[str, str] | None = None,
) -> tuple[pa.Schema, list[str], list[str]]:
    """CONVERT TO DELTA's inspection of the parquet files under ``uri``: the table's schema
    (the files' columns, then the partition columns), its partition columns and one ``add``
    action (JSON) per file, with statistics unless ``collect_stats`` is false."""

def clone_table(
    snapshot: RawSnapshot,
    target_uri: str,
    deep: bool = False,
    name: str | None = None,
    description: str | None = None,
    storage_options: dict[str, str] | None = None,
    commit_info: str | None = None,
) -> dict[str, Any]:
    """CLONE of the snapshot's table at its version into a new table at ``target_uri``,
    shallow or ``deep``; ``{version, sourceVersion, numFiles, copiedBytes}``."""

def repair(
    snapshot: RawSnapshot, dry_run: bool = False, commit_info: str | None = None
) -> tuple[int | None, list[str]]:
    """FSCK: the active files missing from storage, removed in one commit unless ``dry_run``;
    ``(version or None, missing paths)``."""
