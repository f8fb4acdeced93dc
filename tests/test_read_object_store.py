"""Reads through an object store: a real S3-protocol HTTP server on loopback (moto's server).

Golden tables are uploaded key by key (names verbatim, `%` escapes in Hive-style directory
names included) and read with `s3://` URIs: log listing, checkpoints, data files and deletion
vectors then go through object_store's range requests instead of local positioned reads. The
rows must equal those of the local read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest

import deltalog as dl
from conftest import S3_BUCKET, corpus_table, upload_table

TABLES = [
    "dv-with-columnmapping/delta",  # DVs, column mapping, checkpoint
    "kernel-timestamp-pst/delta",  # '%3A' in partition directory names
    "v2-checkpoint-parquet/delta",  # V2 checkpoint with sidecars
    "data-reader-timestamp_ntz-id-mode/delta",  # field ids
]
BUCKET = S3_BUCKET


@pytest.fixture(scope="module")
def s3(s3_server: tuple[dict[str, str], Any]) -> dict[str, str]:
    options, client = s3_server
    for name in TABLES:
        upload_table(client, corpus_table(name), name)
    return options


def _sorted_rows(table: Any) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in table.to_pylist())


@pytest.mark.parametrize("name", TABLES)
def test_remote_reads_equal_local_reads(s3: dict[str, str], name: str) -> None:
    remote = dl.DeltaTable(f"s3://{BUCKET}/{name}", storage_options=s3)
    local = dl.DeltaTable(corpus_table(name))
    assert remote.version() == local.version()
    ours = remote.to_pyarrow_table()
    assert ours.schema == local.to_pyarrow_table().schema
    assert _sorted_rows(ours) == _sorted_rows(local.to_pyarrow_table())
    # Streaming and tasks read remotely too.
    assert _sorted_rows(remote.to_batches().read_all()) == _sorted_rows(ours)
    tasks = remote.scan().tasks()
    assert _sorted_rows(dl.read_task(tasks, storage_options=s3)) == _sorted_rows(ours)


def test_missing_remote_data_file_is_a_typed_error(s3: dict[str, str], tmp_path: Path) -> None:
    name = "dv-with-columnmapping/delta"
    remote = dl.DeltaTable(f"s3://{BUCKET}/{name}", storage_options=s3)
    (task, *_) = remote.scan().tasks()
    client = boto3.client(
        "s3",
        endpoint_url=s3["AWS_ENDPOINT_URL"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.delete_object(Bucket=BUCKET, Key=f"{name}/{task.path}")
    try:
        with pytest.raises(dl.DataFileNotFoundError) as info:
            remote.to_pyarrow_table()
        assert info.value.file == task.path
    finally:
        client.upload_file(str(corpus_table(name) / task.path), BUCKET, f"{name}/{task.path}")
