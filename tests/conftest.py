"""Shared fixtures and helpers: where the corpus is, and how to write small tables by hand."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DELTALOG_SHARED", REPO.parent / "shared")).resolve()
CORPUS = SHARED / "corpus" / "golden"

# A fixed, realistic epoch (2023-11-14T22:13:20Z) for hand-built commit timestamps.
BASE_MS = 1_700_000_000_000

SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


@functools.cache
def load_expectations() -> dict[str, dict[str, Any]]:
    return json.loads((CORPUS / "expectations.json").read_text(encoding="utf-8"))


def corpus_table(root: str) -> Path:
    """A corpus table root (key of expectations.json), read in place."""
    return CORPUS / root


def copy_corpus_table(root: str, dest: Path) -> Path:
    """Copy one corpus table root into `dest` (a tmp dir), to damage it there."""
    target = dest / root.replace("/", "_")
    shutil.copytree(CORPUS / root, target)
    return target


# ---------------------------------------------------------------------------------------------
# Actions


def protocol(
    reader: int = 1,
    writer: int = 2,
    reader_features: list[str] | None = None,
    writer_features: list[str] | None = None,
) -> dict[str, Any]:
    p: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        p["readerFeatures"] = reader_features
    if writer_features is not None:
        p["writerFeatures"] = writer_features
    return {"protocol": p}


def metadata(
    configuration: dict[str, str] | None = None,
    table_id: str = "00000000-0000-4000-8000-000000000001",
    partition_columns: list[str] | None = None,
    schema_string: str = SCHEMA_STRING,
    created_time: int = BASE_MS,
) -> dict[str, Any]:
    return {
        "metaData": {
            "id": table_id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": partition_columns or [],
            "configuration": configuration or {},
            "createdTime": created_time,
        }
    }


def add(path: str, size: int = 1, modification_time: int = BASE_MS, **extra: Any) -> dict[str, Any]:
    return {
        "add": {
            "path": path,
            "partitionValues": {},
            "size": size,
            "modificationTime": modification_time,
            "dataChange": True,
            **extra,
        }
    }


def remove(path: str, deletion_timestamp: int = BASE_MS, **extra: Any) -> dict[str, Any]:
    return {
        "remove": {
            "path": path,
            "deletionTimestamp": deletion_timestamp,
            "dataChange": True,
            **extra,
        }
    }


def commit_info(operation: str = "WRITE", timestamp: int = BASE_MS, **extra: Any) -> dict[str, Any]:
    return {
        "commitInfo": {
            "timestamp": timestamp,
            "operation": operation,
            "operationParameters": {},
            **extra,
        }
    }


def txn(app_id: str, version: int) -> dict[str, Any]:
    return {"txn": {"appId": app_id, "version": version}}


def domain(name: str, configuration: str, removed: bool = False) -> dict[str, Any]:
    return {
        "domainMetadata": {
            "domain": name,
            "configuration": configuration,
            "removed": removed,
        }
    }


# ---------------------------------------------------------------------------------------------
# Writing logs by hand


def set_mtime(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


class LogWriter:
    """Writes `_delta_log/<v:020>.json` commits (and friends) under a table root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = root / "_delta_log"
        self.log.mkdir(parents=True, exist_ok=True)

    def commit_path(self, version: int) -> Path:
        return self.log / f"{version:020}.json"

    def commit(
        self,
        version: int,
        actions: Iterable[dict[str, Any]],
        mtime_ms: int | None = None,
    ) -> Path:
        text = "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions)
        return self.raw(version, text, mtime_ms)

    def raw(self, version: int, text: str | bytes, mtime_ms: int | None = None) -> Path:
        path = self.commit_path(version)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        if mtime_ms is not None:
            set_mtime(path, mtime_ms)
        return path

    def compaction(self, start: int, end: int, actions: Iterable[dict[str, Any]]) -> Path:
        path = self.log / f"{start:020}.{end:020}.compacted.json"
        path.write_text("".join(json.dumps(a) + "\n" for a in actions), encoding="utf-8")
        return path

    def checkpoint(self, version: int, actions: list[dict[str, Any]]) -> Path:
        """A classic V1 checkpoint `<v>.checkpoint.parquet` holding exactly `actions`."""
        path = self.log / f"{version:020}.checkpoint.parquet"
        rows = [
            {col: a.get(col) for col in CHECKPOINT_SCHEMA.names}
            for a in (_for_checkpoint(x) for x in actions)
        ]
        pq.write_table(pa.Table.from_pylist(rows, schema=CHECKPOINT_SCHEMA), path)
        return path

    def last_checkpoint(self, content: str | dict[str, Any]) -> Path:
        path = self.log / "_last_checkpoint"
        path.write_text(
            content if isinstance(content, str) else json.dumps(content),
            encoding="utf-8",
        )
        return path


_STR_MAP = pa.map_(pa.string(), pa.string())
CHECKPOINT_SCHEMA = pa.schema(
    [
        (
            "txn",
            pa.struct(
                [
                    ("appId", pa.string()),
                    ("version", pa.int64()),
                    ("lastUpdated", pa.int64()),
                ]
            ),
        ),
        (
            "add",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("stats", pa.string()),
                    ("tags", _STR_MAP),
                ]
            ),
        ),
        (
            "remove",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("deletionTimestamp", pa.int64()),
                    ("dataChange", pa.bool_()),
                ]
            ),
        ),
        (
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("name", pa.string()),
                    ("description", pa.string()),
                    (
                        "format",
                        pa.struct([("provider", pa.string()), ("options", _STR_MAP)]),
                    ),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", _STR_MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        (
            "protocol",
            pa.struct(
                [
                    ("minReaderVersion", pa.int32()),
                    ("minWriterVersion", pa.int32()),
                    ("readerFeatures", pa.list_(pa.string())),
                    ("writerFeatures", pa.list_(pa.string())),
                ]
            ),
        ),
        (
            "domainMetadata",
            pa.struct(
                [
                    ("domain", pa.string()),
                    ("configuration", pa.string()),
                    ("removed", pa.bool_()),
                ]
            ),
        ),
    ]
)


def _for_checkpoint(action: dict[str, Any]) -> dict[str, Any]:
    """pyarrow wants maps as lists of pairs."""
    ((kind, body),) = action.items()
    body = dict(body)
    for key in ("partitionValues", "tags", "configuration"):
        if isinstance(body.get(key), dict):
            body[key] = list(body[key].items())
    if kind == "metaData":
        body["format"] = {"provider": "parquet", "options": []}
    return {kind: body}


@pytest.fixture
def make_log(tmp_path: Path) -> Callable[[str], LogWriter]:
    """`make_log("name")` -> a LogWriter for a fresh table root under tmp_path."""

    def factory(name: str = "table") -> LogWriter:
        return LogWriter(tmp_path / name)

    return factory


# ---------------------------------------------------------------------------------------------
# A real S3-protocol server on loopback (moto's), shared by the object-store tests

S3_BUCKET = "tables"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[tuple[dict[str, str], Any]]:
    """(storage_options, boto3 client) of a moto S3 server with bucket `S3_BUCKET`."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=S3_BUCKET)
    try:
        yield (
            {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ALLOW_HTTP": "true",
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_REGION": "us-east-1",
            },
            client,
        )
    finally:
        server.stop()


def upload_table(client: Any, root: Path, prefix: str) -> None:
    """Uploads every file under `root` to `S3_BUCKET` under `prefix/`, names verbatim."""
    for f in sorted(root.rglob("*")):
        if f.is_file():
            client.upload_file(str(f), S3_BUCKET, f"{prefix}/{f.relative_to(root).as_posix()}")


def s3_keys(client: Any, prefix: str) -> set[str]:
    """Keys under `prefix/`, relative to it."""
    out: set[str] = set()
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=S3_BUCKET, Prefix=prefix + "/"
    ):
        out |= {o["Key"].removeprefix(prefix + "/") for o in page.get("Contents", [])}
    return out


# ---------------------------------------------------------------------------------------------
# A real PostgreSQL server on loopback, for the PostgreSQL catalog tests


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URI of a throwaway PostgreSQL server's ``postgres`` database (tests/postgres_server.py).
    Fails, not skips, when PostgreSQL is not installed: CI installs it."""
    from contextlib import ExitStack

    from postgres_server import postgres_server as start

    with ExitStack() as stack:
        try:
            uri = stack.enter_context(start())
        except RuntimeError as e:
            pytest.fail(str(e), pytrace=False)
        yield uri


@pytest.fixture
def postgres_uri(postgres_server: str) -> Iterator[str]:
    """The URI of a new, empty database of the test server, dropped after the test."""
    import uuid

    import psycopg

    name = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield postgres_server.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark (``local[2]``) for every Spark test, with deltalog's format registered."""
    pytest.importorskip("pyspark", reason="pyspark is a test dependency (.ci/run)")
    # Spark's Python workers must run this interpreter (the one deltalog is installed in).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("deltalog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    import deltalog.spark

    deltalog.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def delta_spark() -> Iterator[Any]:
    """Delta Spark (the protocol's reference implementation) in its own process, one per test
    module (tests/reference_engine). It is installed on first use into a cache outside the
    clone; when it cannot be (no Maven, no network) the tests that need it fail, never skip."""
    from reference_engine.client import DeltaSpark

    engine = DeltaSpark()
    yield engine
    engine.close()
