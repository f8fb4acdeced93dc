"""Every golden table root: refuse the bad ones, reproduce the oracle's snapshot for the rest."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

import deltalog as dl
import oracle
from conftest import corpus_table, load_expectations

EXPECT = load_expectations()
ROOTS = sorted(EXPECT)

# Which error a must-fail table should raise (by the docstrings in deltalog/exceptions.py).
MUST_FAIL_TYPES: dict[str, tuple[type[dl.DeltaError], ...]] = {
    "no-delta-log-folder/delta": (dl.TableNotFoundError,),
    "deltalog-invalid-protocol-version/delta": (dl.UnsupportedFeatureError,),
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata/delta": (dl.CorruptLogError,),
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol/delta": (dl.CorruptLogError,),
    "deltalog-state-reconstruction-without-metadata/delta": (dl.CorruptLogError,),
    "deltalog-state-reconstruction-without-protocol/delta": (dl.CorruptLogError,),
    "versions-not-contiguous/delta": (dl.CorruptLogError, dl.VersionNotFoundError),
}


def _features(values: list[str] | None) -> set[str]:
    return set(values or [])


def assert_protocol(actual: Any, expected: dict[str, Any]) -> None:
    assert actual.min_reader_version == expected["minReaderVersion"]
    assert actual.min_writer_version == expected["minWriterVersion"]
    assert _features(actual.reader_features) == _features(expected.get("readerFeatures"))
    assert _features(actual.writer_features) == _features(expected.get("writerFeatures"))


def assert_snapshot(t: dl.DeltaTable, snap: oracle.Snapshot) -> None:
    """Version, protocol, metadata, schema and the active logical files agree with the oracle."""
    assert t.version() == snap.version
    assert snap.protocol is not None
    assert_protocol(t.protocol(), snap.protocol)

    adds = t.get_add_actions()
    assert adds.num_rows == len(snap.adds), "one row per active logical file"
    assert sorted(adds.column("path").to_pylist()) == snap.paths
    assert sorted(t.files()) == snap.paths

    if snap.metadata is None:  # no metaData action at all: may refuse, but only as corrupt log
        for accessor in (t.metadata, t.schema):
            try:
                accessor()
            except dl.CorruptLogError as err:
                assert str(err)
        return
    m = t.metadata()
    assert m.id == snap.metadata["id"]
    assert list(m.partition_columns) == list(snap.metadata.get("partitionColumns") or [])
    assert dict(m.configuration) == dict(snap.metadata.get("configuration") or {})
    if "schemaString" in snap.metadata:
        fields = json.loads(snap.metadata["schemaString"])["fields"]
        assert t.schema().names == [f["name"] for f in fields]
    else:  # metaData without schemaString (update-deleted-directory, deltalog-commit-info)
        try:
            t.schema()
        except dl.CorruptLogError as err:
            assert str(err)


def _epoch_ms(value: int | dt.datetime) -> int:
    """An int of epoch milliseconds, or a timestamp column value (datetime, naive = UTC)."""
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return (aware - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(
            milliseconds=1
        )
    return value


def _touch_everything(t: dl.DeltaTable) -> None:
    t.version()
    t.protocol()
    t.metadata()
    t.schema()
    t.get_add_actions()


@pytest.mark.parametrize("root", ROOTS, ids=ROOTS)
def test_latest_snapshot(root: str) -> None:
    exp = EXPECT[root]
    path = str(corpus_table(root))
    if exp["must_fail"]:
        with pytest.raises(dl.DeltaError) as info:
            _touch_everything(dl.DeltaTable(path))
        err = info.value
        assert str(err).strip(), "error message must not be empty"
        if isinstance(err, dl.CorruptLogError):
            assert err.file is not None or err.version is not None
        assert isinstance(err, MUST_FAIL_TYPES[root]), f"{type(err).__name__}: {err}"
        return

    t = dl.DeltaTable(path)
    assert t.version() == exp["latest_version"]
    p = t.protocol()
    assert p.min_reader_version == exp["min_reader_version"]
    assert p.min_writer_version == exp["min_writer_version"]
    assert _features(p.reader_features) == _features(exp["reader_features"])
    assert _features(p.writer_features) == _features(exp["writer_features"])
    assert_snapshot(t, oracle.replay(path))

    # Expectations quoted in the corpus notes.
    if root.startswith("canonicalized-paths-"):
        assert t.version() == 1 and t.get_add_actions().num_rows == 0
    elif root == "delete-re-add-same-file-different-transactions/delta":
        adds = t.get_add_actions()
        assert sorted(adds.column("path").to_pylist()) == ["bar", "foo"]
        name = next(c for c in ("modificationTime", "modification_time") if c in adds.column_names)
        by_path = dict(
            zip(
                adds.column("path").to_pylist(),
                map(_epoch_ms, adds.column(name).to_pylist()),
                strict=True,
            )
        )
        assert by_path["foo"] == 1_700_000_000_000
    elif root == "log-replay-special-characters-b/delta":
        assert t.files() == ["special p@#h"]
    elif root == "deltalog-getChanges/delta":
        txns = t.transactions()
        assert txns["fakeAppId"] == 3
        assert "nonExistentAppId" not in txns
    elif root == "checkpoint/delta":
        assert t.version() == 14


def _earlier_versions() -> list[Any]:
    params = []
    for root in ROOTS:
        latest = EXPECT[root]["latest_version"]
        for v in range(latest or 0):
            params.append(pytest.param(root, v, id=f"{root}@{v}"))
    return params


@pytest.mark.parametrize(("root", "version"), _earlier_versions())
def test_earlier_version(root: str, version: int) -> None:
    """Time travel by version; a version the log cannot reconstruct is VersionNotFoundError."""
    path = str(corpus_table(root))
    try:
        snap = oracle.replay(path, version)
    except oracle.OracleError as err:
        assert err.kind == "version"
        # Commits cleaned up below the oldest checkpoint: the version is gone. A gap between
        # commits (versions-not-contiguous) may also be reported as a corrupt log.
        commits, _ = oracle.list_log(corpus_table(root))
        gap = any(v not in commits for v in range(min(commits), max(commits) + 1))
        expected = (dl.VersionNotFoundError, dl.CorruptLogError) if gap else dl.VersionNotFoundError
        with pytest.raises(expected) as info:
            _touch_everything(dl.DeltaTable(path, version=version))
        assert str(info.value)
        return
    t = dl.DeltaTable(path, version=version)
    assert_snapshot(t, snap)
    # load_as_version on a table opened at the latest version reaches the same state.
    if not EXPECT[root]["must_fail"]:
        t2 = dl.DeltaTable(path)
        t2.load_as_version(version)
        assert_snapshot(t2, snap)
