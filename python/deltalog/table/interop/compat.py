"""deltalake's table methods that deltalog had no name for, methods of
:class:`deltalog.DeltaTable` (which inherits :class:`TableCompat`): ``count``,
``partitions``, ``deletion_vectors``, ``table_config``, ``transaction_version``, ``generate``
(symlink manifests) and ``create_write_transaction``; and the argument objects of deltalake's
``create_write_transaction`` (:class:`AddAction`, :class:`RemoveAction`) and ``add_feature``
(:class:`TableFeatures`).
"""

from __future__ import annotations

import enum
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote, urlparse

from deltalog import _native
from deltalog._lazy import lazy_module
from deltalog.exceptions import (
    CorruptLogError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from deltalog.expressions import FilterLike, to_predicate

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table.delta_table import DeltaTable
    from deltalog.table.scan import DeltaScan
else:
    pa = lazy_module("pyarrow")


class TableFeatures(str, enum.Enum):
    """deltalake's ``TableFeatures`` names, each valued by the protocol's feature name
    ("Table Features"), for ``alter.add_feature``."""

    AppendOnly = "appendOnly"
    ChangeDataFeed = "changeDataFeed"
    CheckConstraints = "checkConstraints"
    ColumnMapping = "columnMapping"
    DeletionVectors = "deletionVectors"
    DomainMetadata = "domainMetadata"
    GeneratedColumns = "generatedColumns"
    IcebergCompatV1 = "icebergCompatV1"
    IdentityColumns = "identityColumns"
    Invariants = "invariants"
    RowTracking = "rowTracking"
    TimestampNanos = "timestampNanos"
    TimestampWithoutTimezone = "timestampNtz"
    V2Checkpoint = "v2Checkpoint"
    VariantType = "variantType"
    VariantTypePreview = "variantType-preview"


def feature_name(value: Any) -> str:
    """A protocol feature name from a :class:`TableFeatures`, deltalake's enum member of the
    same name, or a name."""
    if isinstance(value, TableFeatures):
        return value.value
    if isinstance(value, str):
        return value
    # deltalake's enum is a native class (module "builtins"): known by its name and text.
    text = str(value)
    if type(value).__name__ == "TableFeatures" and text.startswith("TableFeatures."):
        name = text.rpartition(".")[2]
        if name in TableFeatures.__members__:
            return TableFeatures[name].value
    raise InvalidArgumentError(f"a table feature is a name or a TableFeatures, not {value!r}")


@dataclass(frozen=True)
class DeltaTableConfig:
    """deltalake's (deprecated) ``DeltaTable.table_config``. deltalog always loads the files
    and their statistics (``without_files`` and ``skip_stats`` are false) and has no log
    buffer setting: ``log_buffer_size`` is deltalake's default, reported for its shape."""

    without_files: bool = False
    log_buffer_size: int = 8
    skip_stats: bool = False


@dataclass
class AddAction:
    """A file to add, as deltalake's ``deltalake.transaction.AddAction`` (spec "Add File and
    Remove File"): ``path`` relative to the table root (or an absolute URI), URI-encoded as
    the log stores it; ``modification_time`` in milliseconds; ``stats`` the JSON text of
    "Per-file Statistics" (or None)."""

    path: str
    size: int
    partition_values: Mapping[str, str | None]
    modification_time: int
    data_change: bool
    stats: str | None = None

    def _action(self) -> dict[str, Any]:
        add: dict[str, Any] = {
            "path": self.path,
            "partitionValues": dict(self.partition_values),
            "size": int(self.size),
            "modificationTime": int(self.modification_time),
            "dataChange": bool(self.data_change),
        }
        if self.stats is not None:
            add["stats"] = self.stats
        return {"add": add}


@dataclass
class RemoveAction:
    """A file to remove, as deltalake's ``RemoveAction``: its ``path`` as the log stores it."""

    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None


def logical_partition_names(table: Any) -> dict[str, str]:
    """Physical -> logical name of each top-level column: partition values are keyed by
    physical names under column mapping ("Column Mapping": partitionValues use physical
    names)."""
    out = {}
    for f in table.schema():
        physical = (f.metadata or {}).get(b"delta.columnMapping.physicalName")
        out[physical.decode() if physical else f.name] = f.name
    return out


def _hive_escape(text: str) -> str:
    """A partition value in a directory name, escaped as Hive and Delta Spark escape it."""
    special = set("\"#%'*/:=?\\\x7f{[]^")
    return "".join(f"%{ord(c):02X}" if (c in special or ord(c) < 0x20) else c for c in text)


class TableCompat:
    """deltalake's table methods; :class:`deltalog.DeltaTable` inherits this class."""

    if TYPE_CHECKING:
        # DeltaTable's.
        @property
        def _raw(self) -> _native.RawSnapshot: ...

        @property
        def table_uri(self) -> str: ...

        def get_add_actions(self, flatten: bool = False) -> pa.Table: ...

        def scan(
            self,
            columns: list[str] | None = None,
            filter: FilterLike | None = None,
            with_row_tracking: bool = False,
            *,
            filters: FilterLike | None = None,
            partitions: FilterLike | None = None,
        ) -> DeltaScan: ...

        def column_mapping_mode(self) -> str: ...

        def update_incremental(self) -> None: ...

    def count(self) -> int:
        """The number of live rows, from the files' statistics alone (deltalake's ``count``):
        each file's ``numRecords`` less its deletion vector's ``cardinality`` (protocol
        "Per-file Statistics": numRecords counts the rows in the file, deleted or not;
        "Deletion Vector Descriptor Schema"). deltalake does not subtract deleted rows; the
        protocol decides. Files without ``numRecords`` are not counted, so the result is a
        lower bound then (exact otherwise)."""
        adds = self.get_add_actions(flatten=True)
        total = 0
        records = adds.column("num_records").to_pylist()
        deleted = adds.column("deletion_vector.cardinality").to_pylist()
        for n, gone in zip(records, deleted, strict=True):
            if n is not None:
                total += n - (gone or 0)
        return total

    def partitions(
        self,
        partition_filters: FilterLike | None = None,
        *,
        file_pruning_predicate: FilterLike | None = None,
    ) -> list[dict[str, str | None]]:
        """The partitions holding active files, one dict of partition column -> value text
        ("Partition Value Serialization"; None for a null value) each, as deltalake returns
        them. ``partition_filters`` / ``file_pruning_predicate`` (DNF tuples or a deltalog
        predicate) keep the partitions of the files that may hold matching rows. An
        unpartitioned table has none."""
        if partition_filters is not None and file_pruning_predicate is not None:
            raise TypeError("pass partition_filters or file_pruning_predicate, not both")
        wanted = partition_filters if partition_filters is not None else file_pruning_predicate
        if isinstance(wanted, str):
            raise InvalidArgumentError(
                "partitions() takes DNF tuples or a deltalog predicate (deltalog.col), not SQL text"
            )
        seen: dict[tuple[tuple[str, str | None], ...], dict[str, str | None]] = {}
        names = logical_partition_names(self)
        if wanted is None:
            for values in self.get_add_actions().column("partition_values").to_pylist():
                if values:
                    logical = [(names.get(k, k), v) for k, v in values]
                    seen.setdefault(tuple(sorted(logical)), dict(logical))
        else:
            for task in self.scan(filter=to_predicate(wanted)).tasks():
                logical = [(names.get(k, k), v) for k, v in task.partition_values.items()]
                if logical:
                    seen.setdefault(tuple(sorted(logical)), dict(logical))
        return list(seen.values())

    def deletion_vectors(self) -> pa.RecordBatchReader:
        """The deletion vectors of the active files, as deltalake returns them: a
        ``RecordBatchReader`` of ``filepath`` (the data file's absolute URI) and
        ``selection_vector`` (one boolean per row of the file, false where deleted), for the
        files that have one only. Materialised in memory."""
        from deltalog.table.interop.deletion_vectors import deleted_rows

        adds = self.get_add_actions()
        root = self.table_uri.rstrip("/")
        paths: list[str] = []
        vectors: list[list[bool]] = []
        for path, records, dv in zip(
            adds.column("path").to_pylist(),
            adds.column("num_records").to_pylist(),
            adds.column("deletion_vector").to_pylist(),
            strict=True,
        ):
            if dv is None or dv["storage_type"] is None:
                continue
            if records is None:
                raise CorruptLogError(
                    f"{path} has a deletion vector but no numRecords statistic",
                    rule='"Per-file Statistics": numRecords is required with deletion vectors',
                )
            keep = [True] * records
            for row in deleted_rows(cast("DeltaTable", self), path, dv):
                if row < records:
                    keep[row] = False
            paths.append(path if "://" in path else f"{root}/{path.lstrip('/')}")
            vectors.append(keep)
        schema = pa.schema(
            [
                pa.field("filepath", pa.large_string(), nullable=False),
                pa.field(
                    "selection_vector",
                    pa.list_(pa.field("item", pa.bool_(), nullable=False)),
                    nullable=False,
                ),
            ]
        )
        table = pa.table([pa.array(paths, pa.large_string()), vectors], schema=schema)
        return pa.RecordBatchReader.from_batches(schema, table.to_batches())

    @property
    def table_config(self) -> DeltaTableConfig:
        """deltalake's deprecated ``table_config`` (see :class:`DeltaTableConfig`)."""
        warnings.warn(
            "table_config is deprecated in deltalake and reports fixed values in deltalog",
            DeprecationWarning,
            stacklevel=2,
        )
        return DeltaTableConfig()

    def transaction_version(self, app_id: str) -> int | None:
        """The latest version the application ``app_id`` recorded ("Transaction
        Identifiers"), or None."""
        found = self._raw.transactions().get(app_id)
        return None if found is None else found[0]

    def generate(self) -> None:
        """Writes symlink manifests (``GENERATE symlink_format_manifest``) for engines that
        read a table through a list of its files (Presto, Athena, BigQuery):
        ``_symlink_format_manifest/manifest`` lists every active file by absolute path, one a
        line; a partitioned table gets one manifest per partition directory
        (``_symlink_format_manifest/day=2026-11-01/manifest``). Manifests of partitions that
        no longer exist are removed.

        Refused (``UnsupportedFeatureError``) when a file has a deletion vector (such readers
        would read deleted rows) or under column mapping (they would see physical names), as
        Delta Spark refuses. Local tables only.
        """
        if self.column_mapping_mode() != "none":
            raise UnsupportedFeatureError(
                "generate() cannot write symlink manifests for a table with column mapping: "
                "readers of manifests would see the files' physical column names",
                ["columnMapping"],
            )
        root = urlparse(self.table_uri)
        if root.scheme not in ("", "file"):
            raise UnsupportedFeatureError(
                f"generate() writes manifests of local tables only, not {self.table_uri}"
            )
        base = unquote(root.path) if root.scheme else self.table_uri
        adds = self.get_add_actions()
        partition_columns = list(self._raw.metadata()["partition_columns"])
        manifests: dict[str, list[str]] = {}
        for path, values, dv in zip(
            adds.column("path").to_pylist(),
            adds.column("partition_values").to_pylist(),
            adds.column("deletion_vector").to_pylist(),
            strict=True,
        ):
            if dv is not None and dv["storage_type"] is not None:
                raise UnsupportedFeatureError(
                    f"generate() cannot list {path}: it has a deletion vector, and readers of "
                    "symlink manifests would read its deleted rows (purge them first: "
                    "optimize.purge_deletion_vectors())",
                    ["deletionVectors"],
                )
            by_name = dict(values or [])
            directory = "/".join(
                f"{_hive_escape(c)}="
                + (
                    "__HIVE_DEFAULT_PARTITION__"
                    if by_name.get(c) is None
                    else _hive_escape(str(by_name[c]))
                )
                for c in partition_columns
            )
            if "://" in path:
                located = urlparse(path)
                full = unquote(located.path) if located.scheme == "file" else path
            else:
                full = path if path.startswith("/") else os.path.join(base, path)
            manifests.setdefault(directory, []).append(full)
        out = os.path.join(base, "_symlink_format_manifest")
        for directory in sorted(manifests):
            target = os.path.join(out, directory) if directory else out
            os.makedirs(target, exist_ok=True)
            with open(os.path.join(target, "manifest"), "w", encoding="utf-8") as f:
                f.write("".join(f"{p}\n" for p in manifests[directory]))
        # Stale manifests (partitions without files now, or the whole table emptied).
        for parent, _dirs, names in os.walk(out, topdown=False):
            relative = os.path.relpath(parent, out)
            relative = "" if relative == "." else relative.replace(os.sep, "/")
            if "manifest" in names and relative not in manifests:
                os.remove(os.path.join(parent, "manifest"))
            if parent != out and not os.listdir(parent):
                os.rmdir(parent)

    def create_write_transaction(
        self,
        actions: list[AddAction | RemoveAction],
        mode: str,
        schema: Any,
        partition_by: list[str] | str | None = None,
        partition_filters: FilterLike | None = None,
        *args: Any,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> None:
        """Commits files the caller already wrote under the table root as one version
        (deltalake's ``create_write_transaction``): ``mode="append"`` adds the
        :class:`AddAction` files and removes the :class:`RemoveAction` ones;
        ``mode="overwrite"`` removes every active file (or those of the partitions
        ``partition_filters`` selects) and adds the new ones.

        ``schema`` and ``partition_by`` must be the table's (deltalog changes neither here:
        use a write's ``schema_mode`` for that). A path cannot be both added and removed;
        removes that change data are refused on an append-only table
        ("Append-only Tables"). Conflicts are checked as for any deltalog commit.
        """
        from deltalog.table.interop import arguments as compat_args

        commit_properties, post_commithook_properties = compat_args.split_positional(
            "create_write_transaction", args, commit_properties, post_commithook_properties
        )
        cleanup = compat_args.check_hooks(post_commithook_properties)
        props = compat_args.commit_props(commit_properties)
        if mode not in ("append", "overwrite"):
            raise InvalidArgumentError(f'mode must be "append" or "overwrite", not {mode!r}')
        table = cast("DeltaTable", self)
        wanted = schema if isinstance(schema, pa.Schema) else pa.schema(schema)
        have = table.schema()
        mine = [(f.name, f.type) for f in have]
        theirs = [(f.name, f.type) for f in wanted]
        if mine != theirs:
            raise SchemaMismatchError(
                f"create_write_transaction's schema {wanted} is not the table's {have}: "
                "deltalog commits files of the table's schema only"
            )
        partitions = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
        columns = list(self._raw.metadata()["partition_columns"])
        if partition_by is not None and partitions != columns:
            raise InvalidArgumentError(
                f"partition_by {partitions} is not the table's partitioning {columns}"
            )
        adds = [a for a in actions if isinstance(a, AddAction)]
        removes = [a for a in actions if isinstance(a, RemoveAction)]
        if len(adds) + len(removes) != len(actions):
            raise InvalidArgumentError("actions must be AddAction and RemoveAction objects")
        if removes and mode != "append":
            raise InvalidArgumentError(
                'RemoveAction is allowed with mode="append" only; mode="overwrite" removes '
                "the files partition_filters selects"
            )
        if partition_filters is not None and mode != "overwrite":
            raise InvalidArgumentError('partition_filters need mode="overwrite"')
        added = {unquote(a.path) for a in adds}
        removed = {unquote(r.path) for r in removes}
        if added & removed:
            raise InvalidArgumentError(f"paths both added and removed: {sorted(added & removed)}")
        config = self._raw.metadata()["configuration"]
        if str(config.get("delta.appendOnly", "false")).lower() == "true" and any(
            r.data_change for r in removes
        ):
            raise InvalidArgumentError(
                'the table is append-only (delta.appendOnly; "Append-only Tables"): it takes no '
                "remove with data_change=True"
            )
        if mode == "overwrite":
            if partition_filters is not None:
                names = {c.lower() for c in columns}
                predicate = to_predicate(partition_filters)
                for node in _columns_of(json.loads(predicate.to_json()) if predicate else None):
                    if node.lower() not in names:
                        raise InvalidArgumentError(
                            f"partition_filters may name partition columns only, not {node!r}"
                        )
                removed = {t.path for t in self.scan(filter=predicate).tasks()}
            else:
                removed = set(table.files())
        txn = table.transaction(
            "WRITE",
            mode="Append" if mode == "append" else "Overwrite",
            partitionBy=json.dumps(columns),
        )
        txn.add_actions([a._action() for a in adds])
        if removed:
            txn.remove_files(sorted(removed))
        version = txn.commit(props)
        compat_args.run_hooks(table, cleanup, version)


def _columns_of(node: Any) -> list[str]:
    """The column names a predicate's JSON names."""
    out: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "column" and isinstance(value, str):
                out.append(value)
            else:
                out.extend(_columns_of(value))
    elif isinstance(node, list):
        for value in node:
            out.extend(_columns_of(value))
    return out
