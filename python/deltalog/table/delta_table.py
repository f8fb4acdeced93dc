"""`DeltaTable`: one version of a Delta table, read through the native core.

The heavy lifting (listing, parsing and replaying the log, building Arrow data) happens in
Rust; this module converts arguments, applies the table-feature gate of
:mod:`deltalog.protocol.features`, and shapes results for Python users.

Besides reading, :class:`DeltaTable` has methods from the classes it inherits: DELETE and
UPDATE (:mod:`deltalog.table.dml`) and maintenance (:mod:`deltalog.table.maintenance`:
checkpoints, log compaction, checksums, metadata cleanup, VACUUM).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _args, _native
from deltalog._lazy import lazy_module
from deltalog.exceptions import (
    CatalogRequiredError,
    DeltaError,
    InvalidArgumentError,
    TableNotFoundError,
)
from deltalog.protocol import features
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.catalog_client import CatalogClient
from deltalog.table import locations
from deltalog.table.dml import TableDML
from deltalog.table.interop.compat import TableCompat
from deltalog.table.interop.pyiceberg import TableIcebergVerbs
from deltalog.table.maintenance import TableMaintenance, VacuumResult as VacuumResult
from deltalog.table.reads import TableReads
from deltalog.table.timestamps import TimestampLike, _timestamp_ms
from deltalog.write.writer import CommitProperties, check_snapshot_writable

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table.alter.alterer import TableAlterer
    from deltalog.table.merge import TableMerger
    from deltalog.table.optimize import TableOptimizer
    from deltalog.table.transaction import Transaction
else:
    pa = lazy_module("pyarrow")


def _flatten(table: pa.Table) -> pa.Table:
    """Flattens struct columns recursively into `parent.child` columns."""
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


class DeltaTable(TableReads, TableDML, TableMaintenance, TableCompat, TableIcebergVerbs):
    """A Delta table at one version.

    Args:
        table_uri: a local path, a ``file://`` URI, or an ``s3://``, ``gs://``, ``az://`` /
            ``abfss://`` URI; or ``uc://catalog.schema.table``, a table of a Unity Catalog
            server named by ``storage_options`` (``unity_catalog_uri``,
            ``unity_catalog_token``) or ``UNITY_CATALOG_URI`` / ``UNITY_CATALOG_TOKEN``.
        version: the version to load (latest when ``None``).
        timestamp: load the latest version committed at or before this time instead: a
            ``datetime`` (naive means UTC), an ISO-8601 string, or milliseconds since the epoch.
        storage_options: credentials and settings passed to the object store unchanged.
        catalog_client: for a catalog-managed table (``catalogManaged`` feature), its catalog's
            client (any object implementing :class:`deltalog.catalog.CatalogClient`): the
            ratified commits it returns are read along with the published log, the catalog's
            commit winning for its version, nothing past its latest version.
        published_only: open a catalog-managed table without its catalog, reading only its
            published commits (possibly not the latest version), with a warning.

    Raises:
        TableNotFoundError: no Delta table at ``table_uri``.
        VersionNotFoundError: the version or timestamp cannot be served.
        CorruptLogError: the log breaks a protocol rule (the error names file, version, rule),
            or the catalog returned malformed commits.
        UnsupportedFeatureError: the table needs reader features deltalog does not support.
        CatalogRequiredError: the table is catalog-managed and no ``catalog_client`` was given.
    """

    _uri: str
    _storage_options: dict[str, str] | None
    _catalog_client: CatalogClient | None
    _published_only: bool
    #: The loaded snapshot; None while a table opened from its catalog's cached state
    #: answers from ``_header``.
    _loaded: _native.RawSnapshot | None
    _header: _native.RawHeader | None
    _protocol: Protocol

    def __init__(
        self,
        table_uri: str | Any,
        version: int | None = None,
        timestamp: TimestampLike | None = None,
        storage_options: Mapping[str, str] | None = None,
        catalog_client: CatalogClient | None = None,
        published_only: bool = False,
    ) -> None:
        if version is not None and timestamp is not None:
            raise ValueError("pass either version or timestamp, not both")
        if catalog_client is not None and published_only:
            raise ValueError("pass either catalog_client or published_only, not both")
        if catalog_client is not None and not callable(
            getattr(catalog_client, "get_ratified_commits", None)
        ):
            raise TypeError(
                "catalog_client must implement deltalog.catalog.CatalogClient "
                f"(get_ratified_commits), not {type(catalog_client).__name__}"
            )
        if version is not None:
            version = _args.version("version", version)
        resolver = locations.scheme_resolver(table_uri) if isinstance(table_uri, str) else None
        if resolver is not None:
            if catalog_client is not None:
                raise ValueError("a uc:// table names its catalog: pass no catalog_client")
            # Unity Catalog: the table's location, credentials and catalog client, from the
            # server in storage_options / UNITY_CATALOG_URI (deltalog.catalog.clients.unity).
            table_uri, storage_options, catalog_client = resolver(str(table_uri), storage_options)
        elif isinstance(table_uri, str) and catalog_client is None and storage_options is None:
            # "prod.sales.orders": a table of a named catalog (deltalog.catalog.named), where
            # that is unambiguous (no such local path, "prod" configured).
            loaded = locations.table_of_catalog(table_uri, version if timestamp is None else None)
            if loaded is not None:
                table_uri = loaded._uri
                storage_options = loaded._storage_options
                catalog_client = loaded._catalog_client
                if timestamp is None:
                    self._uri = str(table_uri)
                    self._storage_options = dict(storage_options) if storage_options else None
                    self._catalog_client = catalog_client
                    self._published_only = bool(published_only)
                    # As loaded (perhaps from the catalog's cached state, not opened yet).
                    self._loaded, self._header = loaded._loaded, loaded._header
                    self._protocol = loaded._protocol
                    return
        self._uri = str(table_uri)
        self._storage_options = dict(storage_options) if storage_options else None
        self._catalog_client = catalog_client
        self._published_only = bool(published_only)
        try:
            if timestamp is not None:
                # A catalog-managed table's unpublished commits count (by in-commit timestamps).
                version = _native.RawSnapshot.resolve_timestamp(
                    self._uri, _timestamp_ms(timestamp), self._storage_options, catalog_client
                )
            self._set(self._open(version))
        except TableNotFoundError as e:
            # "teamm.sales.orders": no such path, and perhaps a misspelled catalog name.
            hint = None
            if isinstance(table_uri, str) and catalog_client is None and storage_options is None:
                hint = locations.catalog_hint(table_uri)
            if hint is None:
                raise
            raise TableNotFoundError(f"{e}; {hint}") from e

    @classmethod
    def _of_catalog(
        cls,
        record: locations.CatalogTableState,
        catalog_client: CatalogClient,
        storage_options: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """The latest version of a catalog-managed table as its catalog describes it
        (``record``): with the protocol and metadata the catalog cached, the object answers
        :meth:`version`, :meth:`protocol`, :meth:`metadata` and :meth:`schema` from them
        alone, and opens the snapshot of that version (from the cached state: its replay
        skips the first pass) only when something needs the log or the files. Without them,
        the snapshot is opened now."""
        header = None
        if record.protocol and record.metadata and record.latest_version >= 0:
            try:
                header = _native.RawHeader(
                    record.location,
                    record.latest_version,
                    record.protocol,
                    record.metadata,
                    dict(storage_options) if storage_options else None,
                )
            except DeltaError:
                header = None  # not usable: the log answers
        if header is None:
            return cls(
                record.location, storage_options=storage_options, catalog_client=catalog_client
            )
        table = cls.__new__(cls)
        table._uri = record.location
        table._storage_options = dict(storage_options) if storage_options else None
        table._catalog_client = catalog_client
        table._published_only = False
        table._loaded = None
        table._header = header
        table._check(Protocol(*header.protocol()))
        return table

    @property
    def _raw(self) -> _native.RawSnapshot:
        """The snapshot; a table opened from its catalog's cached state opens it now, at the
        version the catalog described."""
        loaded = self._loaded
        if loaded is None:
            header = self._header
            assert header is not None  # no snapshot yet: the catalog's cached state
            # The catalog's state vouches for the log (deltalog's catalogs record what they
            # ratified): a log that disagrees with it was changed in storage.
            loaded = _native.RawSnapshot.open(
                self._uri,
                header.version(),
                self._storage_options,
                self._catalog_client,
                header,
                vouched=True,
            )
            self._set(loaded)
        return loaded

    def _latest(self) -> _native.RawSnapshot:
        """The latest version: the loaded snapshot advanced; a table not opened yet opens the
        latest version at once (not its described version first, then the rest)."""
        if self._loaded is None:
            return _native.RawSnapshot.open(
                self._uri,
                None,
                self._storage_options,
                self._catalog_client,
                self._header,
                vouched=self._header is not None,
            )
        return self._loaded.advance(None)

    @property
    def _state(self) -> _native.RawSnapshot | _native.RawHeader:
        """What answers the version, protocol, metadata and schema: the snapshot, or the
        catalog's cached state until the snapshot is opened."""
        if self._loaded is not None:
            return self._loaded
        assert self._header is not None  # one of the two is always set
        return self._header

    def _open(self, version: int | None) -> _native.RawSnapshot:
        """Opens ``version`` (the latest when ``None``), through the catalog when there is
        one."""
        return _native.RawSnapshot.open(
            self._uri, version, self._storage_options, self._catalog_client
        )

    def _set(self, raw: _native.RawSnapshot) -> None:
        self._check(Protocol(*raw.protocol()))
        self._loaded = raw
        self._header = None

    def _check(self, protocol: Protocol) -> None:
        """Checks that this object may read a table with ``protocol``, and keeps it."""
        features.check_readable(protocol)
        if features.is_catalog_managed(protocol):
            # catalogManaged RFC, "Reader Requirements for Catalog-managed tables".
            if self._catalog_client is None and not self._published_only:
                raise CatalogRequiredError(
                    f"the table at {self._uri} is catalog-managed (table feature "
                    "catalogManaged): open it through its catalog (DeltaTable(uri, "
                    "catalog_client=...)), or pass published_only=True to read only its "
                    "published commits",
                    table=self._uri,
                )
            if self._catalog_client is None:
                warnings.warn(
                    f"reading the catalog-managed table at {self._uri} without its catalog: "
                    "only published commits are read, so this may not be the latest version",
                    stacklevel=3,
                )
        elif self._catalog_client is not None:
            raise InvalidArgumentError(
                f"the table at {self._uri} is not catalog-managed (no catalogManaged table "
                "feature), so it takes no catalog_client"
            )
        self._protocol = protocol

    # -- loading -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        table_uri: str | Any,
        schema: pa.Schema,
        partition_by: list[str] | None = None,
        configuration: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        mode: str = "error",
        storage_options: Mapping[str, str] | None = None,
        features: list[str] | None = None,
        clustering_columns: list[str] | None = None,
        *,
        commit_properties: CommitProperties | None = None,
        post_commithook_properties: Any = None,
        raise_if_key_not_exists: bool = True,
    ) -> DeltaTable:
        """Creates an empty table with ``schema`` (Arrow types mapped to Delta types) and
        returns it. ``mode="ignore"`` leaves an existing table alone; ``"overwrite"``
        replaces an existing table's schema, partitioning and rows (CREATE OR REPLACE, as
        deltalake), ``"append"`` creates a table where there is none and raises where there is.
        ``commit_properties`` / ``post_commithook_properties`` as for writes.
        ``raise_if_key_not_exists`` (deltalake's): deltalog always refuses unknown ``delta.*``
        keys (as Delta Spark), so ``False`` changes nothing for them; other keys are stored.

        ``features`` are table features the protocol supports from the start (as
        ``configuration={"delta.feature.<name>": "supported"}`` does); properties such as
        ``delta.enableDeletionVectors=true`` or ``delta.enableChangeDataFeed=true`` add their
        feature themselves. The protocol is the smallest that supports them all.
        ``clustering_columns`` makes a clustered table (spec "Clustered Table").
        """
        from deltalog.table.write import write_table

        if not isinstance(schema, pa.Schema):
            if hasattr(schema, "__arrow_c_schema__"):
                schema = pa.schema(schema)
            else:
                raise TypeError(
                    "schema must be a pyarrow.Schema (e.g. pa.schema({'id': pa.int64()})) or "
                    f"export __arrow_c_schema__, not {type(schema).__name__}"
                )
        from deltalog.table.interop import arguments as compat_args

        if mode not in ("error", "ignore", "overwrite", "append"):
            raise ValueError('mode must be "error", "ignore", "overwrite" or "append" for create')
        del raise_if_key_not_exists  # unknown delta.* keys are always refused (see above)
        cleanup = compat_args.check_hooks(post_commithook_properties)
        if mode == "append" and cls.is_deltatable(str(table_uri), storage_options):
            raise InvalidArgumentError(
                f'create(mode="append"): a table exists at {table_uri} (deltalake refuses too)'
            )
        version = write_table(
            table_uri,
            schema.empty_table(),
            mode="error" if mode == "append" else mode,  # type: ignore[arg-type]
            partition_by=partition_by,
            configuration=configuration,
            name=name,
            description=description,
            storage_options=storage_options,
            table_features=features,
            clustering_columns=clustering_columns,
            commit_properties=compat_args.commit_props(commit_properties),
            schema_mode="overwrite" if mode == "overwrite" else None,
        )
        table = cls(table_uri, storage_options=storage_options)
        compat_args.run_hooks(table, cleanup, version)
        return table

    @staticmethod
    def is_deltatable(table_uri: str, storage_options: Mapping[str, str] | None = None) -> bool:
        """Whether ``table_uri`` holds a Delta table (a readable ``_delta_log``)."""
        try:
            _native.RawSnapshot.open(str(table_uri), None, dict(storage_options or {}) or None)
        except DeltaError:
            return False
        return True

    def load_as_version(self, version: int | TimestampLike) -> None:
        """Reloads this object at another version: an int is a version, anything else a time."""
        if isinstance(version, int) and not isinstance(version, bool):
            raw = self._raw.load_version(_args.version("version", version))
        else:
            raw = self._raw.load_version(self._raw.version_at_timestamp(_timestamp_ms(version)))
        self._set(raw)

    def update_incremental(self) -> None:
        """Moves to the latest version (``deltalake``'s name; :meth:`update` is SQL UPDATE),
        replaying only the commits after the loaded version onto it: after a write this costs
        the new commit, not a reload of the table. A loaded version older than the log's
        cleanup horizon, a schema or protocol change, or a long way to go reload afresh; so
        does a table deleted and created again at the same location (the loaded version's
        commit gone or another file): the object then shows the new table. A catalog-managed
        table asks its catalog for the latest ratified commits (replayed the same way)."""
        self._set(self._latest())

    # -- state ---------------------------------------------------------------------------

    @property
    def table_uri(self) -> str:
        """The table root as a URI."""
        return self._state.table_uri()

    def version(self) -> int:
        """The loaded version."""
        return self._state.version()

    def protocol(self) -> Protocol:
        """The protocol in force."""
        return self._protocol

    def metadata(self) -> Metadata:
        """The metadata in force."""
        d = self._state.metadata()
        return Metadata(
            id=d["id"],
            name=d["name"],
            description=d["description"],
            partition_columns=list(d["partition_columns"]),
            configuration=dict(d["configuration"]),
            created_time=d["created_time"],
            schema_string=d["schema_string"],
            format_provider=d["format_provider"],
            format_options=dict(d["format_options"]),
        )

    def schema(self) -> pa.Schema:
        """The logical schema (column metadata, e.g. column-mapping ids, kept)."""
        return self._state.schema()

    def physical_schema(self) -> pa.Schema:
        """The schema of the data files: physical names, and field ids in id mode."""
        return self._state.physical_schema()

    def column_mapping_mode(self) -> str:
        """``"none"``, ``"name"`` or ``"id"`` (spec: "Column Mapping")."""
        return self._state.column_mapping_mode()

    def timestamp(self) -> int | None:
        """When the loaded version was committed, in milliseconds since the epoch."""
        return self._raw.timestamp()

    def get_add_actions(self, flatten: bool = False) -> pa.Table:
        """One row per active logical file.

        Columns: ``path`` (URI-decoded), ``size``, ``modification_time``, ``data_change``,
        ``partition_values``, ``num_records``, ``null_count``, ``min``, ``max``,
        ``tight_bounds`` (statistics by logical column name, null where absent),
        ``deletion_vector``, ``base_row_id``, ``default_row_commit_version``, ``tags`` and
        ``clustering_provider``. With ``flatten=True`` struct columns become
        ``parent.child`` columns.
        """
        table = self._raw.add_actions().read_all()
        return _flatten(table) if flatten else table

    def files(self) -> list[str]:
        """The URI-decoded paths of the active files, relative to the table root unless absolute."""
        return self._raw.files()

    def file_uris(
        self,
        partition_filters: Any = None,
        *,
        file_pruning_predicate: Any = None,
    ) -> list[str]:
        """Absolute URIs of the active files (``file://`` ones for local tables, where
        deltalake gives plain paths); with ``partition_filters`` / ``file_pruning_predicate``
        (deltalake's; DNF tuples or a deltalog predicate) those of the files that may hold
        matching rows (partition values and statistics prune, as in :meth:`scan`)."""
        if partition_filters is not None and file_pruning_predicate is not None:
            raise TypeError("pass partition_filters or file_pruning_predicate, not both")
        wanted = partition_filters if partition_filters is not None else file_pruning_predicate
        if isinstance(wanted, str):
            raise InvalidArgumentError(
                "file_uris() takes DNF tuples or a deltalog predicate (deltalog.col), not SQL text"
            )
        paths = (
            self.files() if wanted is None else [t.path for t in self.scan(filter=wanted).tasks()]
        )
        root = self.table_uri.rstrip("/")
        out = []
        for p in paths:
            out.append(p if "://" in p else (f"file://{p}" if p.startswith("/") else f"{root}/{p}"))
        return out

    def transactions(self) -> dict[str, int]:
        """The latest transaction version per application id (spec: "Transaction Identifiers")."""
        return {app: v for app, (v, _updated) in self._raw.transactions().items()}

    def domain_metadata(self) -> dict[str, str]:
        """The configuration of each live metadata domain (spec: "Domain Metadata")."""
        return dict(self._raw.domain_metadata())

    def clustering_columns(self) -> list[str]:
        """The clustering columns of a clustered table (logical top-level names, in order);
        empty when the table is not clustered (spec "Clustered Table": the
        ``delta.clustering`` domain holds physical names)."""
        return self._clustering_columns()

    def _clustering_columns(self) -> list[str]:
        return list(self._raw.clustering_columns())

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The commitInfo of each version, newest first, with ``version`` and ``timestamp``.

        ``timestamp`` is the commit timestamp time travel uses (the in-commit timestamp where
        enabled, the commit file's modification time otherwise), as Delta Spark's
        ``DESCRIBE HISTORY`` shows it; the writer's own clock stays in the commitInfo fields
        only when it differs under the name ``commitInfoTimestamp``.
        """
        limit = _args.optional_integer("limit", limit)
        out = []
        for version, ts, info in self._raw.history(limit):
            entry: dict[str, Any] = json.loads(info) if info else {}
            own = entry.pop("timestamp", None)
            if own is not None and own != ts:
                entry["commitInfoTimestamp"] = own
            entry["version"] = version
            entry["timestamp"] = ts
            out.append(entry)
        return out

    # -- DML -----------------------------------------------------------------------------
    # (DELETE and UPDATE: deltalog.table.dml.)

    def merge(
        self,
        source: Any,
        predicate: str,
        source_alias: str | None = "source",
        target_alias: str | None = "target",
        commit_properties: CommitProperties | None = None,
        target_file_size: int | None = None,
        merge_schema: bool = False,
        *,
        error_on_type_mismatch: bool = True,
        writer_properties: Any = None,
        streamed_exec: bool | None = None,
        max_spill_size: int | None = None,
        max_temp_directory_size: int | None = None,
        post_commithook_properties: Any = None,
    ) -> TableMerger:
        """Starts a MERGE of ``source`` (a pyarrow Table/RecordBatchReader, pandas or polars
        frame, or any Arrow stream) into the loaded version, matched by ``predicate`` (SQL
        over ``<target_alias>.col`` and ``<source_alias>.col``, with at least one equality
        between a target and a source column). Add ``when_*`` clauses, then ``execute()``
        (see :mod:`deltalog.table.merge`). ``target_file_size`` as for
        :func:`deltalog.write_table`. ``merge_schema=True`` (deltalake's name; Delta Spark's
        ``autoMerge``) adds the source's columns the table lacks, as nullable columns at the
        end, in the MERGE's own commit, when a clause is ``when_matched_update_all`` or
        ``when_not_matched_insert_all``; existing rows read them as null.

        deltalake's keyword arguments: ``post_commithook_properties`` as for OPTIMIZE;
        ``writer_properties`` encode the files the MERGE writes, as for
        :func:`deltalog.write_table`; ``streamed_exec`` is accepted either way: deltalog's
        MERGE reads the source once, into memory, and prunes target files by its key ranges
        (what deltalake's ``streamed_exec=False`` does; the results are the same as a
        streamed MERGE's, the memory is the source's size); ``error_on_type_mismatch=False``
        and the spill limits are refused (:mod:`deltalog.table.interop.arguments`)."""
        from deltalog.table.interop import arguments as compat_args
        from deltalog.table.merge import TableMerger

        parquet = compat_args.writer_properties_json(writer_properties)
        compat_args.refuse_lenient_casts(error_on_type_mismatch, "merge")
        compat_args.refuse_spill_limits(max_spill_size, max_temp_directory_size)
        return TableMerger(
            self,
            source,
            predicate,
            source_alias if source_alias is not None else "source",
            target_alias if target_alias is not None else "target",
            compat_args.commit_props(commit_properties),
            target_file_size,
            merge_schema,
            compat_args.check_hooks(post_commithook_properties),
            parquet,
        )

    # -- table changes -----------------------------------------------------------------------

    def repair(
        self,
        dry_run: bool = False,
        *args: Any,
        commit_properties: CommitProperties | None = None,
        post_commithook_properties: Any = None,
    ) -> dict[str, Any]:
        """FSCK REPAIR: removes from the table the files its log lists but storage no longer
        has (as deltalake's ``repair``), in one commit, and reloads at the latest version.

        Args:
            dry_run: only report the missing files.
            commit_properties: extra commitInfo fields.
            post_commithook_properties: as for OPTIMIZE (deltalake's).

        Returns:
            ``{"dry_run": …, "files_removed": [paths], "version": …}`` (``version`` None on a
            dry run or when nothing is missing).

        Raises:
            CommitConflictError: a concurrent commit removed one of those files too.
        """
        from deltalog.table.interop import arguments as compat_args

        commit_properties, hooks = compat_args.split_positional(
            "repair", args, commit_properties, post_commithook_properties
        )
        cleanup = compat_args.check_hooks(hooks)
        check_snapshot_writable(self._raw)
        props = compat_args.commit_props(commit_properties)
        version, missing = _native.repair(self._raw, bool(dry_run), props.commit_info_json())
        if version is not None:
            self.update_incremental()
            compat_args.run_hooks(self, cleanup, version)
        return {"dry_run": bool(dry_run), "files_removed": missing, "version": version}

    def clone(
        self,
        target: str,
        shallow: bool = True,
        name: str | None = None,
        description: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        commit_properties: CommitProperties | None = None,
    ) -> DeltaTable:
        """CLONE: a new table at ``target`` with this table's content at the loaded version
        (load an older version first to clone it), as Delta Spark's ``SHALLOW CLONE`` /
        ``DEEP CLONE``.

        A shallow clone's files are this table's, named by absolute URI: nothing is copied,
        and the clone breaks if this table's files are vacuumed away. A deep clone copies the
        data files and deletion vector files. Either way the clone gets the schema,
        partitioning, properties, protocol (without ``catalogManaged``) and metadata domains,
        a new table id, and one ``CLONE`` commit (version 0) naming the source and its
        version.

        Args:
            target: where the new table goes (path or URI); nothing may be there yet.
            shallow: point at this table's files (default) or copy them.
            name, description: the clone's (default: this table's).
            storage_options: object store settings of ``target`` (default: this table's).
            commit_properties: extra commitInfo fields.

        Returns:
            The clone, loaded.

        Raises:
            InvalidArgumentError: a table already exists at ``target``.
            DataFileNotFoundError: a deep clone found a file of this table missing.
        """
        props = commit_properties or CommitProperties()
        options = storage_options if storage_options is not None else self._storage_options
        _native.clone_table(
            self._raw,
            str(target),
            not shallow,
            name,
            description,
            dict(options) if options else None,
            props.commit_info_json(),
        )
        return DeltaTable(str(target), storage_options=dict(options) if options else None)

    @property
    def optimize(self) -> TableOptimizer:
        """OPTIMIZE and REORG: compaction, Z-order, clustering and deletion vector purges (see
        :mod:`deltalog.table.optimize`)."""
        from deltalog.table.optimize import TableOptimizer

        return TableOptimizer(self)

    @property
    def alter(self) -> TableAlterer:
        """Properties, CHECK constraints and table features (see
        :mod:`deltalog.table.alter.alterer`)."""
        from deltalog.table.alter.alterer import TableAlterer

        return TableAlterer(self)

    def transaction(self, operation: str = "WRITE", **parameters: Any) -> Transaction:
        """A transaction from the loaded version that commits actions produced anywhere (e.g.
        by :func:`deltalog.write_files` on Spark executors) as one version."""
        from deltalog.table.transaction import Transaction

        return Transaction(self, operation, parameters)

    def restore(
        self,
        target: int | TimestampLike,
        commit_properties: CommitProperties | None = None,
        *,
        ignore_missing_files: bool = False,
        protocol_downgrade_allowed: bool = False,
        post_commithook_properties: Any = None,
    ) -> dict[str, Any]:
        """Makes the table's content that of an earlier version (an int) or of the version
        current at a time, as a new commit (``RESTORE``): files active then but not now are
        re-added, files active now but not then removed, the metadata restored; the protocol
        is kept (never downgraded). Files removed by VACUUM cannot come back
        (``DataFileNotFoundError`` naming them, nothing committed), on any store.

        deltalake's keywords: ``ignore_missing_files=True`` (re-add files storage lost) and
        ``protocol_downgrade_allowed=True`` where the older version's protocol is lower (a
        feature leaves a protocol only by DROP FEATURE's rules, protocol "Table Features")
        are refused with ``InvalidArgumentError``; ``post_commithook_properties`` as for
        OPTIMIZE.

        Returns:
            ``version``, ``num_restored_files``, ``num_removed_files``, and the last two
            under deltalake's keys ``numRestoredFile`` and ``numRemovedFile``.
        """
        from deltalog.exceptions import DataFileNotFoundError
        from deltalog.table.interop import arguments as compat_args

        cleanup = compat_args.check_hooks(post_commithook_properties)
        latest = self._latest()
        check_snapshot_writable(latest)
        if isinstance(target, int) and not isinstance(target, bool):
            version = _args.version("version", target)
        else:
            version = latest.version_at_timestamp(_timestamp_ms(target))
        if version >= latest.version():
            raise ValueError(
                f"can only restore an earlier version than the latest ({latest.version()})"
            )
        old = latest.load_version(version)
        features.check_readable(Protocol(*old.protocol()))
        if protocol_downgrade_allowed and Protocol(*old.protocol()) != self._protocol:
            raise InvalidArgumentError(
                f"restore(protocol_downgrade_allowed=True): version {version}'s protocol "
                f"{Protocol(*old.protocol())} differs from the table's {self._protocol}, and "
                "deltalog never downgrades a protocol on RESTORE (features leave by "
                'alter.drop_feature, protocol "Table Features")'
            )
        # "Add File and Remove File": a re-added file must exist. The FSCK listing of the old
        # version checks every store, not only local ones.
        _version, lost = _native.repair(old, True, None)
        lost = sorted(set(lost) - set(latest.files()))
        if lost:
            if ignore_missing_files:
                raise InvalidArgumentError(
                    f"restore(ignore_missing_files=True) is not supported: version {version}'s "
                    f"files {lost[:5]} are gone (vacuumed?) and deltalog does not commit files "
                    "storage does not have"
                )
            raise DataFileNotFoundError(
                f"cannot restore version {version}: its file {lost[0]} is gone "
                f"({len(lost)} missing; removed by VACUUM?)",
                file=lost[0],
            )
        actions, restored, removed = _native.restore_actions(latest, old)
        props = compat_args.commit_props(commit_properties)
        app = props.app_transaction()
        committed = _native.commit_actions(
            self.table_uri,
            latest.version(),
            "RESTORE",
            actions,
            json.dumps({"version": version}),
            False,
            None,
            app,
            props.commit_info_json(),
            self._storage_options,
            latest,
        )
        self.update_incremental()
        compat_args.run_hooks(self, cleanup, committed)
        return {
            "version": committed,
            "num_restored_files": restored,
            "num_removed_files": removed,
            "numRestoredFile": restored,
            "numRemovedFile": removed,
        }

    def __repr__(self) -> str:
        return f"DeltaTable({self.table_uri!r}, version={self.version()})"
