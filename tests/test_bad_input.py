"""Damaged and non-tables: a typed deltalog error naming the file or version, never a crash."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import deltalog as dl
import oracle
from conftest import LogWriter, add, commit_info, copy_corpus_table, metadata, protocol


def _open_all(path: Path | str, **kwargs: object) -> dl.DeltaTable:
    """Open and touch everything, so a lazy implementation still has to notice."""
    t = dl.DeltaTable(str(path), **kwargs)
    t.version()
    t.protocol()
    t.metadata()
    t.get_add_actions()
    return t


def assert_names(err: dl.CorruptLogError, version: int) -> None:
    assert str(err).strip()
    named_file = err.file is not None and Path(err.file).name == f"{version:020}.json"
    assert named_file or err.version == version, f"file={err.file!r} version={err.version!r}: {err}"


def _small_table(log: LogWriter, versions: int = 2) -> None:
    log.commit(0, [commit_info("CREATE TABLE"), protocol(), metadata(), add("a.parquet")])
    for v in range(1, versions):
        log.commit(v, [commit_info(), add(f"f{v}.parquet")])


# --- malformed commit files -------------------------------------------------------------------

BAD_COMMIT_1 = {
    "truncated-line": (
        '{"commitInfo":{"operation":"WRITE"}}\n{"add":{"path":"b.parquet","partitionValues":{},"si'
    ),
    "non-json-line": '{"commitInfo":{"operation":"WRITE"}}\nthis is not json\n',
    "binary-garbage": b"\x00\xff\xfe\x89PNG\r\n\x1a\n\x00\x00",
    "json-array-line": "[1, 2, 3]\n",
    "action-not-an-object": '{"add": 5}\n',
    "add-without-path": (
        '{"add":{"partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}\n'
    ),
    "protocol-wrong-type": '{"protocol":{"minReaderVersion":"one","minWriterVersion":2}}\n',
    # "Delta Log Entries": every action is a single-line JSON document.
    "two-actions-on-a-line": (
        '{"add":{"path":"b.parquet","partitionValues":{},"size":1,"modificationTime":1,'
        '"dataChange":true},"metaData":{"id":"x","format":{"provider":"parquet","options":{}},'
        '"schemaString":"{\\"type\\":\\"struct\\",\\"fields\\":[]}","partitionColumns":[],'
        '"configuration":{}}}\n'
    ),
}


@pytest.mark.parametrize("content", list(BAD_COMMIT_1.values()), ids=list(BAD_COMMIT_1))
def test_malformed_commit(make_log: Callable[..., LogWriter], content: str | bytes) -> None:
    log = make_log()
    _small_table(log, versions=1)
    log.raw(1, content)
    with pytest.raises(dl.CorruptLogError) as info:
        _open_all(log.root)
    assert_names(info.value, 1)
    # The damaged commit is not needed for version 0.
    assert _open_all(log.root, version=0).files() == ["a.parquet"]


def test_unknown_actions_and_fields_are_ignored(
    make_log: Callable[..., LogWriter],
) -> None:
    """Spec "Protocol Evolution": clients must ignore unrecognized actions and fields."""
    log = make_log()
    _small_table(log, versions=1)
    log.commit(1, [{"someFutureAction": {"x": 1}}, add("b", someFutureField=[1, 2])])
    assert sorted(_open_all(log.root).files()) == ["a.parquet", "b"]


# --- damaged checkpoints (corpus tables, copied) ----------------------------------------------


@pytest.mark.parametrize(
    "root",
    [
        "deltalog-state-reconstruction-from-checkpoint-missing-protocol/delta",
        "deltalog-state-reconstruction-from-checkpoint-missing-metadata/delta",
    ],
    ids=["missing-protocol", "missing-metadata"],
)
def test_checkpoint_missing_action(tmp_path: Path, root: str) -> None:
    table = copy_corpus_table(root, tmp_path)
    with pytest.raises(dl.CorruptLogError) as info:
        _open_all(table)
    err = info.value
    assert str(err).strip()
    assert err.version == 10 or "checkpoint" in (err.file or ""), (
        f"file={err.file!r} version={err.version!r}"
    )
    # Version 9 is rebuilt from the commits alone, without the faulty checkpoint.
    t = _open_all(table, version=9)
    assert sorted(t.files()) == oracle.replay(table, 9).paths


def test_multipart_checkpoint_missing_part(tmp_path: Path) -> None:
    table = copy_corpus_table("multi-part-checkpoint/delta", tmp_path)
    expected = oracle.replay(table).paths
    log = table / "_delta_log"
    (log / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    # Incomplete multi-part checkpoints must be ignored; commits 0 and 1 rebuild the table.
    t = _open_all(table)
    assert t.version() == 1
    assert sorted(t.files()) == expected
    # Without commit 0 nothing can rebuild version 1.
    (log / "00000000000000000000.json").unlink()
    with pytest.raises((dl.VersionNotFoundError, dl.CorruptLogError)) as info:
        _open_all(table)
    assert str(info.value).strip()


# --- _last_checkpoint -------------------------------------------------------------------------

LAST_CHECKPOINT = {
    "garbage": "this is {not json",
    "empty": "",
    "missing-checkpoint": json.dumps({"version": 12, "size": 5}),
    "wrong-parts": json.dumps({"version": 10, "size": 13, "parts": 3}),
    "bad-checksum": json.dumps(
        {"version": 10, "size": 13, "checksum": "00000000000000000000000000000000"}
    ),
}


@pytest.mark.parametrize("content", list(LAST_CHECKPOINT.values()), ids=list(LAST_CHECKPOINT))
def test_bad_last_checkpoint_falls_back_to_listing(tmp_path: Path, content: str) -> None:
    table = copy_corpus_table("checkpoint/delta", tmp_path)
    expected = oracle.replay(table)
    (table / "_delta_log" / "_last_checkpoint").write_text(content, encoding="utf-8")
    t = _open_all(table)
    assert t.version() == 14
    assert sorted(t.files()) == expected.paths


def test_last_checkpoint_removed(tmp_path: Path) -> None:
    table = copy_corpus_table("checkpoint/delta", tmp_path)
    (table / "_delta_log" / "_last_checkpoint").unlink()
    t = _open_all(table)
    assert t.version() == 14
    assert sorted(t.files()) == oracle.replay(table).paths


# --- log shape --------------------------------------------------------------------------------


def test_non_contiguous_versions(make_log: Callable[..., LogWriter]) -> None:
    log = make_log()
    _small_table(log, versions=2)
    log.commit(3, [commit_info(), add("f3.parquet")])  # version 2 is missing
    with pytest.raises((dl.CorruptLogError, dl.VersionNotFoundError)) as info:
        _open_all(log.root)
    assert str(info.value).strip()
    if isinstance(info.value, dl.CorruptLogError):
        assert info.value.version in (2, 3) or info.value.file is not None
    assert sorted(_open_all(log.root, version=1).files()) == ["a.parquet", "f1.parquet"]


def test_directory_without_delta_log(tmp_path: Path) -> None:
    (tmp_path / "part-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(dl.TableNotFoundError) as info:
        _open_all(tmp_path)
    assert str(info.value).strip()


def test_empty_delta_log(tmp_path: Path) -> None:
    (tmp_path / "_delta_log").mkdir()
    with pytest.raises(dl.TableNotFoundError):
        _open_all(tmp_path)


def test_path_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(dl.TableNotFoundError) as info:
        _open_all(tmp_path / "no" / "such" / "table")
    assert str(info.value).strip()


def test_path_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(dl.TableNotFoundError):
        _open_all(f)


@pytest.mark.parametrize("version", [2, 3, 1000], ids=["next", "later", "far"])
def test_version_does_not_exist(make_log: Callable[..., LogWriter], version: int) -> None:
    log = make_log()
    _small_table(log, versions=2)
    with pytest.raises(dl.VersionNotFoundError) as info:
        _open_all(log.root, version=version)
    assert str(info.value).strip()
    t = dl.DeltaTable(str(log.root))
    with pytest.raises(dl.VersionNotFoundError):
        t.load_as_version(version)
    assert t.version() == 1, "a failed load_as_version leaves the table as it was"


@pytest.mark.parametrize("version", [-1, -100], ids=["minus-one", "minus-hundred"])
def test_negative_version(make_log: Callable[..., LogWriter], version: int) -> None:
    log = make_log()
    _small_table(log, versions=2)
    with pytest.raises((ValueError, dl.DeltaError)):
        _open_all(log.root, version=version)
    t = dl.DeltaTable(str(log.root))
    with pytest.raises((ValueError, dl.DeltaError)):
        t.load_as_version(version)


def test_an_error_says_its_kind_once(tmp_path: Path) -> None:
    """The exception's class names the kind ("InvalidArgumentError"): the message is the
    reason alone, never "invalid argument: invalid argument: …" after layers re-wrapped it."""
    import pyarrow as pa

    dl.write_table(str(tmp_path), pa.table({"a": [1]}))
    with pytest.raises(dl.InvalidArgumentError) as info:
        dl.write_table(str(tmp_path), pa.table({"a": [1]}))
    assert str(info.value).startswith("a table already exists at "), str(info.value)
    with pytest.raises(dl.UnsupportedFeatureError) as unsupported:
        dl.DeltaTable(str(tmp_path)).alter.add_feature("noSuchFeature")
    assert not str(unsupported.value).lower().startswith("unsupported: "), str(unsupported.value)
