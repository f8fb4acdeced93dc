"""Time travel by version and by timestamp (file mtimes made monotonic; In-Commit Timestamps),
and history()."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from conftest import BASE_MS, LogWriter, add, commit_info, metadata, protocol
from deltalog.cli.main import main

UTC = dt.timezone.utc
PLUS2 = dt.timezone(dt.timedelta(hours=2))
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def _aware(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


# Every way the contract allows to spell the same instant.
FORMS: dict[str, Callable[[int], Any]] = {
    "int-ms": lambda ms: ms,
    "naive-datetime": lambda ms: _aware(ms).replace(tzinfo=None),
    "utc-datetime": _aware,
    "plus2-datetime": lambda ms: _aware(ms).astimezone(PLUS2),
    "iso-offset": lambda ms: _aware(ms).isoformat(timespec="milliseconds"),
    "iso-z": lambda ms: _aware(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    "iso-plus2": lambda ms: _aware(ms).astimezone(PLUS2).isoformat(timespec="milliseconds"),
}


def _files_at(version: int) -> list[str]:
    return sorted(["a.parquet"] + [f"f{v}.parquet" for v in range(1, version + 1)])


# --- a plain table whose mtimes are not monotonic ---------------------------------------------

# Raw mtimes per version, and the commit timestamps the monotonic rule makes of them.
RAW_MTIMES = [
    BASE_MS,
    BASE_MS + 60_000,
    BASE_MS + 30_000,
    BASE_MS + 60_001,
    BASE_MS + 120_500,
]
COMMIT_TS = [
    BASE_MS,
    BASE_MS + 60_000,
    BASE_MS + 60_001,
    BASE_MS + 60_002,
    BASE_MS + 120_500,
]


def build_plain(log: LogWriter) -> Path:
    log.commit(
        0,
        [
            commit_info("CREATE TABLE", RAW_MTIMES[0]),
            protocol(),
            metadata(),
            add("a.parquet"),
        ],
        RAW_MTIMES[0],
    )
    for v in range(1, 5):
        log.commit(
            v,
            [commit_info("WRITE", RAW_MTIMES[v]), add(f"f{v}.parquet")],
            RAW_MTIMES[v],
        )
    return log.root


PLAIN_CASES = {  # timestamp (ms) -> expected version, or None for VersionNotFoundError
    "before-first": (BASE_MS - 1, None),
    "at-v0": (BASE_MS, 0),
    "just-before-v1": (BASE_MS + 59_999, 0),
    "at-v1": (BASE_MS + 60_000, 1),
    "at-v2-monotonic": (BASE_MS + 60_001, 2),
    "at-v3-monotonic": (BASE_MS + 60_002, 3),
    "just-before-v4": (BASE_MS + 120_499, 3),
    "at-v4": (BASE_MS + 120_500, 4),
    "after-latest": (BASE_MS + 10**9, 4),
}


def test_plain_mtimes_are_what_the_test_set(make_log: Callable[..., LogWriter]) -> None:
    root = build_plain(make_log())
    for v, ms in enumerate(RAW_MTIMES):
        assert (root / "_delta_log" / f"{v:020}.json").stat().st_mtime_ns == ms * 1_000_000


@pytest.mark.parametrize("version", range(5))
def test_load_by_version(make_log: Callable[..., LogWriter], version: int) -> None:
    root = build_plain(make_log())
    t = dl.DeltaTable(str(root), version=version)
    assert t.version() == version
    assert sorted(t.files()) == _files_at(version)
    latest = dl.DeltaTable(str(root))
    assert latest.version() == 4
    latest.load_as_version(version)
    assert latest.version() == version
    assert sorted(latest.files()) == _files_at(version)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("case", list(PLAIN_CASES))
def test_load_by_timestamp(make_log: Callable[..., LogWriter], case: str, form: str) -> None:
    root = build_plain(make_log())
    ms, expected = PLAIN_CASES[case]
    ts = FORMS[form](ms)
    if expected is None:
        with pytest.raises(dl.VersionNotFoundError) as info:
            dl.DeltaTable(str(root), timestamp=ts).files()
        assert str(info.value).strip()
        return
    t = dl.DeltaTable(str(root), timestamp=ts)
    assert t.version() == expected
    assert sorted(t.files()) == _files_at(expected)


@pytest.mark.parametrize(
    "form", ["utc-datetime", "naive-datetime", "plus2-datetime", "iso-z", "iso-plus2"]
)
@pytest.mark.parametrize(
    "case", ["before-first", "at-v2-monotonic", "just-before-v4", "after-latest"]
)
def test_load_as_version_by_timestamp(
    make_log: Callable[..., LogWriter], case: str, form: str
) -> None:
    """load_as_version: an int is a version; a datetime or a string is a timestamp."""
    root = build_plain(make_log())
    ms, expected = PLAIN_CASES[case]
    t = dl.DeltaTable(str(root), version=0)
    if expected is None:
        with pytest.raises(dl.VersionNotFoundError):
            t.load_as_version(FORMS[form](ms))
        return
    t.load_as_version(FORMS[form](ms))
    assert t.version() == expected
    assert sorted(t.files()) == _files_at(expected)


def test_history(make_log: Callable[..., LogWriter]) -> None:
    root = build_plain(make_log())
    h = dl.DeltaTable(str(root)).history()
    assert [e["version"] for e in h] == [4, 3, 2, 1, 0], "newest first"
    assert [e["timestamp"] for e in h] == COMMIT_TS[::-1], "monotonic commit timestamps"
    assert all(isinstance(e["timestamp"], int) for e in h)
    assert [e["operation"] for e in h] == ["WRITE"] * 4 + ["CREATE TABLE"]
    assert h[-1]["operationParameters"] == {}


@pytest.mark.parametrize("limit", [1, 2, 5, 10])
def test_history_limit(make_log: Callable[..., LogWriter], limit: int) -> None:
    root = build_plain(make_log())
    h = dl.DeltaTable(str(root)).history(limit=limit)
    assert [e["version"] for e in h] == [4, 3, 2, 1, 0][:limit]


def test_history_of_time_travelled_table(make_log: Callable[..., LogWriter]) -> None:
    root = build_plain(make_log())
    h = dl.DeltaTable(str(root), version=2).history()
    assert [e["version"] for e in h] == [2, 1, 0]
    assert [e["timestamp"] for e in h] == COMMIT_TS[2::-1]


def test_history_commit_without_commit_info(make_log: Callable[..., LogWriter]) -> None:
    log = make_log()
    log.commit(
        0,
        [commit_info("CREATE TABLE"), protocol(), metadata(), add("a.parquet")],
        BASE_MS,
    )
    log.commit(1, [add("b.parquet")], BASE_MS + 1000)
    h = dl.DeltaTable(str(log.root)).history()
    assert [(e["version"], e["timestamp"]) for e in h] == [
        (1, BASE_MS + 1000),
        (0, BASE_MS),
    ]
    assert h[1]["operation"] == "CREATE TABLE"


# --- In-Commit Timestamps, enabled at version 2 -----------------------------------------------

ICT_ENABLE_VERSION = 2
ICT = {2: BASE_MS + 15_000, 3: BASE_MS + 25_000, 4: BASE_MS + 35_000}
# mtimes that disagree with the ICTs on purpose (v2 far earlier, v3 far later, v4 back again).
ICT_MTIMES = [
    BASE_MS,
    BASE_MS + 10_000,
    BASE_MS - 500_000,
    BASE_MS + 900_000_000,
    BASE_MS + 1,
]
ICT_COMMIT_TS = [BASE_MS, BASE_MS + 10_000, ICT[2], ICT[3], ICT[4]]


def build_ict(log: LogWriter, feature: str = "inCommitTimestamps") -> Path:
    """ICT enabled at version 2, its protocol listing ``feature``: by default the stored spec's
    name, which deltalog reads as the ``inCommitTimestamp`` it writes."""
    log.commit(
        0,
        [commit_info("CREATE TABLE"), protocol(), metadata(), add("a.parquet")],
        ICT_MTIMES[0],
    )
    log.commit(1, [commit_info(), add("f1.parquet")], ICT_MTIMES[1])
    config = {
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": str(ICT_ENABLE_VERSION),
        "delta.inCommitTimestampEnablementTimestamp": str(ICT[2]),
    }
    log.commit(
        2,
        [
            commit_info("SET TBLPROPERTIES", ICT[2], inCommitTimestamp=ICT[2]),
            protocol(1, 7, writer_features=[feature]),
            metadata(config),
            add("f2.parquet"),
        ],
        ICT_MTIMES[2],
    )
    for v in (3, 4):
        log.commit(
            v,
            [
                commit_info("WRITE", ICT[v], inCommitTimestamp=ICT[v]),
                add(f"f{v}.parquet"),
            ],
            ICT_MTIMES[v],
        )
    return log.root


ICT_CASES = {
    "before-first": (BASE_MS - 1, None),
    "at-v0": (BASE_MS, 0),
    "just-before-v1": (BASE_MS + 9_999, 0),
    "at-v1-mtime": (BASE_MS + 10_000, 1),
    "just-before-enablement": (ICT[2] - 1, 1),
    "at-enablement": (ICT[2], 2),
    "just-before-v3-ict": (ICT[3] - 1, 2),
    "at-v3-ict": (ICT[3], 3),
    "at-v4-ict": (ICT[4], 4),
    "after-latest-ict": (ICT[4] + 1, 4),
    "at-v3-mtime": (ICT_MTIMES[3], 4),
}


@pytest.mark.parametrize("form", ["int-ms", "utc-datetime", "iso-z"])
@pytest.mark.parametrize("case", list(ICT_CASES))
def test_ict_load_by_timestamp(make_log: Callable[..., LogWriter], case: str, form: str) -> None:
    root = build_ict(make_log())
    ms, expected = ICT_CASES[case]
    ts = FORMS[form](ms)
    if expected is None:
        with pytest.raises(dl.VersionNotFoundError):
            dl.DeltaTable(str(root), timestamp=ts).files()
        return
    t = dl.DeltaTable(str(root), timestamp=ts)
    assert t.version() == expected
    assert sorted(t.files()) == _files_at(expected)


@pytest.mark.parametrize("feature", ["inCommitTimestamps", "inCommitTimestamp"])
def test_ict_history(make_log: Callable[..., LogWriter], feature: str) -> None:
    root = build_ict(make_log(), feature)
    t = dl.DeltaTable(str(root))
    assert t.protocol().writer_features == [feature]
    h = t.history()
    assert [e["version"] for e in h] == [4, 3, 2, 1, 0]
    assert [e["timestamp"] for e in h] == ICT_COMMIT_TS[::-1]
    assert [e.get("inCommitTimestamp") for e in h] == [
        ICT[4],
        ICT[3],
        ICT[2],
        None,
        None,
    ]


ICT_FROM_START = [BASE_MS, BASE_MS + 1_000, BASE_MS + 2_000]


def build_ict_from_creation(log: LogWriter) -> Path:
    """ICT on from version 0: no enablement properties; mtimes run backwards."""
    conf = {"delta.enableInCommitTimestamps": "true"}
    first = [
        protocol(1, 7, writer_features=["inCommitTimestamps"]),
        metadata(conf),
        add("a.parquet"),
    ]
    for v, ict in enumerate(ICT_FROM_START):
        body = first if v == 0 else [add(f"f{v}.parquet")]
        log.commit(
            v,
            [commit_info("WRITE", ict, inCommitTimestamp=ict), *body],
            BASE_MS + 10_000 - v * 1_000,
        )
    return log.root


@pytest.mark.parametrize(
    ("ms", "expected"),
    [
        (BASE_MS - 1, None),
        (BASE_MS, 0),
        (BASE_MS + 999, 0),
        (BASE_MS + 1_500, 1),
        (BASE_MS + 2_000, 2),
        (BASE_MS + 9_000, 2),
    ],
    ids=["before-first", "at-v0", "before-v1", "between-v1-v2", "at-v2", "at-v1-mtime"],
)
def test_ict_from_creation(
    make_log: Callable[..., LogWriter], ms: int, expected: int | None
) -> None:
    root = build_ict_from_creation(make_log())
    if expected is None:
        with pytest.raises(dl.VersionNotFoundError):
            dl.DeltaTable(str(root), timestamp=ms).files()
        return
    assert dl.DeltaTable(str(root), timestamp=ms).version() == expected
    h = dl.DeltaTable(str(root)).history()
    assert [e["timestamp"] for e in h] == ICT_FROM_START[::-1]


# --- a version loaded from its own checkpoint (issue #42) --------------------------------------


@pytest.mark.parametrize("commit_file", ["kept", "cleaned-up"])
def test_ict_of_version_loaded_from_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], commit_file: str
) -> None:
    """A version whose state comes from a checkpoint at that version still has its in-commit
    timestamp as its timestamp ("Recommendations for Readers of Tables with In-Commit
    Timestamps"): from the commit file when it is there, from the version checksum file's
    ``inCommitTimestampOpt`` once the commit is gone; never the commit file's mtime."""
    root = tmp_path / "t"
    conf = {"delta.enableInCommitTimestamps": "true"}
    dl.write_table(str(root), pa.table({"a": [1]}), configuration=conf)
    dl.write_table(str(root), pa.table({"a": [2]}), mode="append")
    table = dl.DeltaTable(str(root))
    ict = table.history(limit=1)[0]["inCommitTimestamp"]
    assert table.timestamp() == ict
    table.create_checkpoint()
    commit = root / "_delta_log" / f"{1:020}.json"
    far = ict - 400 * 86_400_000
    os.utime(commit, ns=(far * 1_000_000, far * 1_000_000))
    if commit_file == "cleaned-up":
        # What metadata cleanup leaves: the checkpoint and checksum of version 1, no commits.
        for v in (0, 1):
            (root / "_delta_log" / f"{v:020}.json").unlink()
    loaded = dl.DeltaTable(str(root))
    assert loaded.version() == 1
    assert loaded.timestamp() == ict
    if commit_file == "kept":
        assert [e["timestamp"] for e in loaded.history(limit=1)] == [ict]
    assert main(["info", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["timestamp"] == ict
