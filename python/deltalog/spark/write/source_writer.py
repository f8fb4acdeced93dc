"""Writing through the deltalog data source (:mod:`deltalog.spark.read.source`, whose docs list the
options): :class:`DeltaWriter` (every task writes data files of the version the driver read,
the driver commits them as one version, or creates the table with that commit) and
:class:`DeltaStreamWriter` (a commit per micro-batch, made idempotent by an application
transaction: "Transaction Identifiers").
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from deltalog.spark.options import (
    _catalog_table,
    _exists,
    _flag,
    _int,
    _open,
    _path,
    _storage_options,
)
from deltalog.spark.tasks import Held, held_commits, task_snapshot, write_to_files

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from deltalog.table.delta_table import DeltaTable


@dataclass
class WrittenFiles(WriterCommitMessage):
    """What one task wrote: the ``add`` actions of its files (JSON)."""

    actions: list[str] = field(default_factory=list)


class DeltaWriter(DataSourceArrowWriter):
    """Tasks write data files; the driver commits them as one version."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        self._options = options
        self._overwrite = overwrite
        self._uri = _path(options)
        #: The store options the write uses: the table's own when it exists (a catalog's
        #: table carries those the catalog vends, ``temporary-table-credentials``), else the
        #: ``storageOptions`` given.
        self._storage = _storage_options(options)
        #: For a catalog-managed table, the catalog's commits up to the version read, which
        #: the tasks open that version from.
        self._held: Held | None = None
        #: The ``metaData`` action (JSON) of a schema change the commit carries: the tasks
        #: write against the version read with it applied.
        self._evolved: str | None = None
        #: A new catalog-managed table, whose version 0 the catalog ratifies.
        self._creates_in_catalog = False
        #: The commit's operation and extra operationParameters (streaming writes set them).
        self._operation = "WRITE"
        self._parameters: dict[str, Any] = {}
        self._partition_by = [
            c.strip() for c in options.get("partitionby", "").split(",") if c.strip()
        ]
        merge_schema = _flag(options, "mergeSchema")
        overwrite_schema = _flag(options, "overwriteSchema")
        self._replace_where: str | None = options.get("replacewhere") or None
        if (overwrite_schema or self._replace_where) and not overwrite:
            raise ValueError(
                "overwriteSchema and replaceWhere need mode('overwrite') (they replace data)"
            )
        if overwrite_schema and self._replace_where:
            raise ValueError("replaceWhere keeps the table's schema: not with overwriteSchema")
        if _exists(options):
            table = _open(options)
            self._uri = table.table_uri
            self._storage = table._storage_options or self._storage
            self._read_version: int | None = table.version()
            self._held = held_commits(table)
            existing = table.metadata().partition_columns
            if (
                self._partition_by
                and not overwrite_schema
                and [c.lower() for c in self._partition_by] != [c.lower() for c in existing]
            ):
                raise ValueError(
                    f"partitionBy {self._partition_by} differs from the table's partition "
                    f"columns {existing} (overwriteSchema replaces them)"
                )
            if merge_schema or overwrite_schema:
                self._evolved = _evolved_metadata(
                    table,
                    schema,
                    merge_schema,
                    overwrite_schema,
                    # overwriteSchema: partitionBy="" unpartitions; absent keeps the table's
                    self._partition_by if "partitionby" in options else None,
                )
            self._first_commit: str | None = None
            self._check_fits(schema, table)
        else:
            self._read_version = None
            self._replace_where = None  # a new table: every row is written
            named = _catalog_table(options)
            managed = False
            from deltalog.write.writer import check_no_unconverted_files, check_not_a_file

            if named is None:
                check_not_a_file(self._uri)
            else:
                # A new table of a catalog: at the location the catalog gives it; a
                # catalog-managed one is registered by the catalog ratifying version 0.
                catalog, name = named
                self._uri, client = catalog.new_table_target(name)
                managed = client is not None
            # A directory of parquet files is not a table: refused before any task runs.
            check_no_unconverted_files(self._uri, _flag(options, "allowUnconvertedFiles"))
            self._first_commit = _first_commit(
                schema, self._partition_by, options, catalog_managed=managed
            )
            self._creates_in_catalog = managed

    def _snapshot(self) -> Any:
        storage = self._storage
        if self._first_commit is not None:
            # The version 0 this write creates, read from its content (no log yet).
            return task_snapshot(self._uri, 0, storage, [(0, None, self._first_commit.encode())])
        version = self._read_version
        held = self._held
        if self._evolved is not None and version is not None:
            # The version read with the schema change applied: a commit of its metaData
            # that exists only here (the driver commits it with the files).
            version += 1
            now = int(time.time() * 1000)
            info = json.dumps({"commitInfo": {"timestamp": now, "inCommitTimestamp": now}})
            held = [*(held or []), (version, None, f"{info}\n{self._evolved}\n".encode())]
        if version is None:
            raise RuntimeError("the table's version read is unknown")
        return task_snapshot(self._uri, version, storage, held)

    def _check_fits(self, schema: StructType, table: DeltaTable) -> None:
        """The data's columns checked against the table's schema (with ``mergeSchema`` /
        ``overwriteSchema`` applied) on the driver, before a task runs: deltalog's writer
        given no rows in Spark's schema applies exactly the rules the tasks would (lossless
        conversions and widening, new columns only when merged), and writes nothing.
        Raises :class:`~deltalog.exceptions.SchemaMismatchError` naming the column, both types
        and the table."""
        from pyspark.sql.pandas.types import to_arrow_schema

        from deltalog.exceptions import InvalidArgumentError, SchemaMismatchError

        try:
            arrow = to_arrow_schema(schema, timezone="UTC")
        except Exception:  # a type Arrow does not carry: the tasks say so
            return
        # The version read (already loaded), or with the schema change the commit carries.
        snapshot = table._raw if self._evolved is None else self._snapshot()

        def fits(fields: list[pa.Field]) -> str | None:
            empty = pa.RecordBatch.from_pylist([], schema=pa.schema(fields))
            try:
                write_to_files(lambda: snapshot, iter([empty]), None)
            except InvalidArgumentError as e:
                return str(e).removeprefix("invalid argument: ")
            return None

        problem = fits(list(arrow))
        if problem is None:
            return
        table_types = {f.name.lower(): f for f in _table_spark_schema(snapshot)}
        for given, arrow_field in zip(schema.fields, arrow, strict=True):
            target = table_types.get(given.name.lower())
            if target is None or target.dataType == given.dataType or fits([arrow_field]) is None:
                continue
            raise SchemaMismatchError(
                f"cannot write to the Delta table at {self._uri}: column {given.name!r} is "
                f"{given.dataType.simpleString()} in the DataFrame, "
                f"{target.dataType.simpleString()} in the table, and deltalog's writer does not "
                f"convert one to the other without loss ({problem}); cast the column, or "
                "widen the table's type (mergeSchema with delta.enableTypeWidening) or replace "
                "the schema (overwriteSchema)",
                table=self._uri,
                column=given.name,
            )
        raise SchemaMismatchError(
            f"cannot write to the Delta table at {self._uri}: {problem}", table=self._uri
        )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenFiles:
        from deltalog.write.writer import _target_file_size

        size = _target_file_size(_int(self._options, "targetFileSize"))
        return WrittenFiles(
            write_to_files(self._snapshot, iter(iterator), size, self._replace_where)
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from deltalog import _native
        from deltalog.write.writer import CommitProperties, _target_file_size

        actions = [a for m in messages if isinstance(m, WrittenFiles) for a in m.actions]
        storage = self._storage
        app = _app_transaction(self._options)
        props = CommitProperties(
            app_id=app[0] if app else None,
            app_version=app[1] if app else None,
            custom_metadata=(
                {"userMetadata": self._options["usermetadata"]}
                if "usermetadata" in self._options
                else {}
            ),
        )
        if self._first_commit is not None:
            lines = [line for line in self._first_commit.splitlines() if line.strip()]
            client = None
            if self._creates_in_catalog:
                named = _catalog_table(self._options)
                if named is None:
                    raise RuntimeError("the catalog of the new table is gone from the options")
                catalog, name = named
                location, client = catalog.new_table_target(name)
                if location.rstrip("/") != self._uri.rstrip("/"):
                    raise RuntimeError(
                        f"the catalog moved the new table {name!r}: {location}, not {self._uri}"
                    )
            _native.commit_actions(
                self._uri,
                None,
                "CREATE TABLE AS SELECT" if self._operation == "WRITE" else self._operation,
                [line for line in lines if '"commitInfo"' not in line[:16]] + actions,
                json.dumps(
                    {"mode": "ErrorIfExists", "partitionBy": self._partition_by, **self._parameters}
                ),
                False,
                None,
                props.app_transaction(),
                props.commit_info_json(),
                storage,
                None,
                '"delta.enableInCommitTimestamps":"true"' in self._first_commit.replace(" ", ""),
                client,
            )
            return
        if app is not None:
            # "Transaction Identifiers": a retried job whose version the table already
            # holds for the app writes nothing.
            latest = _open(self._options)
            held = latest._raw.transactions().get(app[0])
            if held is not None and held[0] >= app[1]:
                self.abort(list(messages))
                return
        # Through the table's catalog when it has one.
        table = _open(self._options, self._read_version)
        parameters: dict[str, Any] = {"mode": "Overwrite" if self._overwrite else "Append"}
        if self._evolved is not None:
            parameters[
                "overwriteSchema" if _flag(self._options, "overwriteSchema") else "mergeSchema"
            ] = True
        if self._replace_where is not None:
            parameters["predicate"] = self._replace_where
        parameters.update(self._parameters)
        tx = table.transaction(self._operation, **parameters)
        if self._evolved is not None:
            # "Change Metadata": the new schema in the same commit as the files written to it.
            tx.add_actions([self._evolved])
        if self._replace_where is not None:
            # replaceWhere: the matching rows go (deletion vectors or rewritten files); the
            # tasks checked that every written row matches.
            removals, read = _native.replace_where_actions(
                table._raw,
                self._replace_where,
                _target_file_size(_int(self._options, "targetFileSize")),
            )
            tx.add_actions(removals)
            tx.read_files(read)
        elif self._overwrite:
            tx.remove_files(table.files())
        tx.add_actions(actions)
        tx.commit(props)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Deletes the files the finished tasks wrote (a failed task's own files are orphans a
        later VACUUM removes); nothing is committed."""
        from deltalog import _native

        paths = [
            json.loads(a)["add"]["path"]
            for m in messages
            if isinstance(m, WrittenFiles)
            for a in m.actions
        ]
        if not paths:
            return
        try:
            _native.delete_files(self._snapshot(), paths)
        except Exception:  # best effort: orphans are never read
            pass


class DeltaStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("deltalog")``: each micro-batch is one commit, made idempotent by
    an application transaction ("Transaction Identifiers") whose version is the batch id, so
    a batch Spark replays after a restart is not written twice. The application id is
    ``txnAppId`` when given, else derived from the query's ``checkpointLocation`` (stable
    across restarts of the query). Output mode ``complete`` overwrites the table per batch."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool) -> None:
        unsupported = sorted(
            k
            for k in ("replacewhere", "mergeschema", "overwriteschema", "txnversion")
            if options.get(k)
        )
        if unsupported:
            raise ValueError(f"a streaming write does not take {', '.join(unsupported)}")
        self._app = options.get("txnappid") or _stream_app_id(options)
        self._files = DeltaWriter(options, schema, overwrite)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenFiles:
        return self._files.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        batch = self._files
        options = {**batch._options, "txnappid": self._app, "txnversion": str(batchId)}
        if batch._first_commit is not None and _exists(options):
            # An earlier batch created the table (with the version 0 these files were
            # written against): this one appends to it.
            batch = _copy_writer(batch, options, first_commit=None)
        else:
            batch = _copy_writer(batch, options, first_commit=batch._first_commit)
        batch._operation = "STREAMING UPDATE"
        batch._parameters = {
            "outputMode": "Complete" if batch._overwrite else "Append",
            "epochId": batchId,
        }
        if batch._first_commit is None:
            # The files commute with every commit since the writer started (a blind append);
            # an overwrite replaces what the table holds now.
            batch._read_version = _open(options).version()
            batch._held = None
        batch.commit(messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._files.abort(messages)


def _table_spark_schema(snapshot: Any) -> list[Any]:
    """The table's columns as Spark fields (empty when a type has no Spark equivalent)."""
    from deltalog.spark.types import spark_schema

    try:
        return list(spark_schema(snapshot.schema()).fields)
    except TypeError:
        return []


def _copy_writer(writer: DeltaWriter, options: dict[str, str], first_commit: str | None) -> Any:
    import copy

    out = copy.copy(writer)
    out._options = options
    out._first_commit = first_commit
    return out


def _stream_app_id(options: Mapping[str, str]) -> str:
    location = options.get("checkpointlocation")
    if not location:
        raise ValueError(
            "a streaming write needs checkpointLocation (or txnAppId) to make its commits "
            "idempotent"
        )
    import hashlib

    digest = hashlib.sha256(location.rstrip("/").encode()).hexdigest()[:16]
    return f"deltalog-stream-{digest}"


def _app_transaction(options: Mapping[str, str]) -> tuple[str, int] | None:
    app, version = options.get("txnappid"), _int(options, "txnVersion")
    if (app is None) != (version is None):
        raise ValueError("txnAppId and txnVersion go together")
    return (app, version) if app is not None and version is not None else None


def _evolved_metadata(
    table: DeltaTable,
    schema: StructType,
    merge_schema: bool,
    overwrite_schema: bool,
    partition_by: list[str] | None,
) -> str | None:
    """The ``metaData`` action (JSON) that changes ``table``'s schema for data of Spark's
    ``schema`` (``mergeSchema``: new columns added; ``overwriteSchema``: replaced, with
    ``partitionBy``), or None when it stays."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from deltalog import _native

    metadata = _native.evolved_metadata(
        table._raw,
        to_arrow_schema(schema, timezone="UTC"),
        merge_schema,
        overwrite_schema,
        partition_by,
    )
    return metadata


def _first_commit(
    schema: StructType,
    partition_by: list[str],
    options: Mapping[str, str],
    catalog_managed: bool = False,
) -> str:
    """The version 0 (protocol and metadata) deltalog would write for a new table of Spark's
    ``schema`` (a catalog-managed one with ``catalog_managed``): made in a scratch directory
    by deltalog's own write, whose rules it follows."""
    import tempfile

    from pyspark.sql.pandas.types import to_arrow_schema

    from deltalog.table.write import write_table

    configuration = json.loads(options.get("configuration", "{}") or "{}")
    arrow = to_arrow_schema(schema, timezone="UTC")
    recorder = _FirstCommitRecorder() if catalog_managed else None
    with tempfile.TemporaryDirectory() as scratch:
        write_table(
            scratch,
            arrow.empty_table(),
            partition_by=partition_by or None,
            configuration=configuration or None,
            catalog_client=recorder,
        )
        if recorder is not None and recorder.content is not None:
            return recorder.content.decode()
        with open(f"{scratch}/_delta_log/{0:020}.json", encoding="utf-8") as f:
            return f.read()


class _FirstCommitRecorder:
    """A catalog client that keeps the version 0 a new catalog-managed table would have (its
    content inline), so that Spark's tasks write against it before the real catalog ratifies
    it with their files."""

    max_inline_commit_bytes = 1 << 30

    def __init__(self) -> None:
        self.content: bytes | None = None

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> Any:
        from deltalog.catalog import RatifiedCommits

        return RatifiedCommits((), -1)

    def commit(
        self,
        version: int,
        path: str | None = None,
        content: bytes | None = None,
        protocol: str | None = None,
        metadata: str | None = None,
    ) -> str | None:
        self.content = content
        return None

    def published(self, version: int) -> None:
        pass
