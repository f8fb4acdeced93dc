"""Checkpoints, compaction, cleanup and VACUUM through an object store (moto's S3 server).

Large log files go through multipart uploads there (`maintenance::sink`), listings and deletes
through object_store: the same operations as on a local disk must give the same snapshot.
"""

from __future__ import annotations

from typing import Any

import pytest

import deltalog as dl
from conftest import S3_BUCKET, corpus_table, s3_keys, upload_table
from test_checkpoint import state

NAME = "v2-checkpoint-parquet/delta"  # has the v2Checkpoint feature; DVs off; 1 checkpoint


@pytest.fixture()
def remote(s3_server: tuple[dict[str, str], Any], request: pytest.FixtureRequest) -> Any:
    options, client = s3_server
    prefix = f"maintenance/{request.node.name}"
    upload_table(client, corpus_table(NAME), prefix)
    return f"s3://{S3_BUCKET}/{prefix}", options, client, prefix


def test_checkpoints_on_s3(remote: Any) -> None:
    uri, options, client, prefix = remote
    t = dl.DeltaTable(uri, storage_options=options)
    before = state(t)
    rows = t.to_pyarrow_table().num_rows
    v = t.version()
    for kind, sidecars in [("classic", 0), ("v2-json", 2), ("v2-parquet", 1)]:
        written = t.create_checkpoint(kind, sidecars=sidecars)
        keys = s3_keys(client, prefix)
        assert {f for f in written["files"]} <= keys
        assert "_delta_log/_last_checkpoint" in keys
        again = dl.DeltaTable(uri, storage_options=options)
        assert state(again) == before
        assert again.to_pyarrow_table().num_rows == rows
    # No temporary object is left behind by the uploads.
    assert not [k for k in s3_keys(client, prefix) if k.endswith(".tmp")]
    assert dl.DeltaTable(uri, storage_options=options).version() == v


def test_compaction_cleanup_and_vacuum_on_s3(remote: Any) -> None:
    uri, options, client, prefix = remote
    t = dl.DeltaTable(uri, storage_options=options)
    before = state(t)
    if t.version() >= 2:
        path = t.compact_logs(0, t.version())
        assert path in s3_keys(client, prefix)
        assert state(dl.DeltaTable(uri, storage_options=options)) == before
    t.create_checkpoint("classic")
    # Far in the future every commit is expired: everything before the newest checkpoint goes.
    deleted = t.cleanup_metadata(now="2100-01-01T00:00:00Z")
    keys = s3_keys(client, prefix)
    assert deleted and not {f"_delta_log/{d}" for d in deleted} & keys
    assert state(dl.DeltaTable(uri, storage_options=options)) == before
    # Nothing is unreferenced in the golden table; an orphan is.
    client.put_object(Bucket=S3_BUCKET, Key=f"{prefix}/orphan.parquet", Body=b"x")
    plan = t.vacuum(now="2100-01-01T00:00:00Z")
    assert "orphan.parquet" in plan
    assert t.vacuum(now="2100-01-01T00:00:00Z", dry_run=False) == plan
    assert "orphan.parquet" not in s3_keys(client, prefix)
    assert dl.DeltaTable(uri, storage_options=options).to_pyarrow_table().num_rows > 0


def test_incremental_updates_on_s3(remote: Any) -> None:
    """Writes through one `DeltaTable` move it forward from listings that start after its
    version (`Snapshot::advance` on object_store), to the state a fresh load gives."""
    uri, options, _client, _prefix = remote
    t = dl.DeltaTable(uri, storage_options=options)
    batch = t.to_pyarrow_table().slice(0, 2)
    for _ in range(3):
        dl.write_table(t, batch, mode="append")
    fresh = dl.DeltaTable(uri, storage_options=options)
    assert t.version() == fresh.version()
    assert state(t) == state(fresh)
    stale = dl.DeltaTable(uri, version=t.version() - 2, storage_options=options)
    stale.update_incremental()
    assert state(stale) == state(fresh)
