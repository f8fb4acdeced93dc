"""Action Reconciliation beyond files: txn and domainMetadata, across commits, a hand-written
checkpoint with the early commits removed, and log compaction files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import deltalog as dl
import oracle
from conftest import (
    LogWriter,
    add,
    commit_info,
    domain,
    metadata,
    protocol,
    remove,
    txn,
)

# --- txn + domainMetadata over five versions --------------------------------------------------

# Per version: (files, transactions, domains) after that version.
EXPECTED: list[tuple[list[str], dict[str, int], dict[str, str]]] = [
    (["a"], {}, {}),
    (["a", "f1"], {"app1": 1, "app2": 5}, {"a": "a1", "b": "b1"}),
    (["f1"], {"app1": 2, "app2": 5}, {"a": "a2", "b": "b1", "c": "c1"}),
    (
        ["f1"],
        {"app1": 1, "app2": 5},
        {"a": "a2", "c": "c1"},
    ),  # app1 rolled back; b tombstoned
    (
        ["f1", "f4"],
        {"app1": 1, "app2": 5},
        {"a": "a2", "b": "b2", "c": "c1"},
    ),  # b re-created
]


def build(log: LogWriter) -> Path:
    log.commit(
        0,
        [
            commit_info(),
            protocol(1, 7, writer_features=["domainMetadata"]),
            metadata(),
            add("a"),
        ],
    )
    log.commit(
        1,
        [
            commit_info(),
            txn("app1", 1),
            txn("app2", 5),
            domain("a", "a1"),
            domain("b", "b1"),
            add("f1"),
        ],
    )
    log.commit(
        2,
        [
            commit_info(),
            txn("app1", 2),
            domain("a", "a2"),
            domain("c", "c1"),
            remove("a"),
        ],
    )
    log.commit(3, [commit_info(), txn("app1", 1), domain("b", "b1", removed=True)])
    log.commit(4, [commit_info(), domain("b", "b2"), add("f4")])
    return log.root


def write_checkpoint_2(log: LogWriter) -> None:
    """The reconciled state at version 2, as a classic checkpoint (remove tombstone included)."""
    log.checkpoint(
        2,
        [
            protocol(1, 7, writer_features=["domainMetadata"]),
            metadata(),
            txn("app1", 2),
            txn("app2", 5),
            domain("a", "a2"),
            domain("b", "b1"),
            domain("c", "c1"),
            add("f1"),
            remove("a"),
        ],
    )


def assert_state(t: dl.DeltaTable, version: int) -> None:
    files, txns, domains = EXPECTED[version]
    assert t.version() == version
    assert sorted(t.files()) == files
    assert t.transactions() == txns
    assert t.domain_metadata() == domains


def test_expectations_match_oracle(make_log: Callable[..., LogWriter]) -> None:
    root = build(make_log())
    for v, (files, txns, domains) in enumerate(EXPECTED):
        snap = oracle.replay(root, v)
        assert (snap.paths, snap.txns, snap.domains) == (files, txns, domains)


@pytest.mark.parametrize("version", range(5))
def test_txn_and_domain_metadata(make_log: Callable[..., LogWriter], version: int) -> None:
    root = build(make_log())
    assert_state(dl.DeltaTable(str(root), version=version), version)


@pytest.mark.parametrize("version", range(2, 5))
def test_from_checkpoint_with_early_commits_removed(
    make_log: Callable[..., LogWriter], version: int
) -> None:
    log = make_log()
    root = build(log)
    write_checkpoint_2(log)
    for v in range(3):  # metadata cleanup: the checkpoint at 2 is now the oldest state
        log.commit_path(v).unlink()
    assert oracle.replay(root, version).paths == EXPECTED[version][0]
    assert_state(dl.DeltaTable(str(root), version=version), version)
    if version == 4:
        assert_state(dl.DeltaTable(str(root)), 4)


@pytest.mark.parametrize("version", [0, 1])
def test_versions_before_oldest_checkpoint_are_gone(
    make_log: Callable[..., LogWriter], version: int
) -> None:
    log = make_log()
    build(log)
    write_checkpoint_2(log)
    for v in range(3):
        log.commit_path(v).unlink()
    with pytest.raises(dl.VersionNotFoundError) as info:
        dl.DeltaTable(str(log.root), version=version).files()
    assert str(info.value).strip()


# --- log compaction (spec "Log Compaction Files"), after the spec's own example -------------

COMPACTED_FILES = {
    1: ["f2"],
    2: ["f2", "f3", "f4"],
    3: ["f2", "f4"],
    4: ["f2", "f4", "f5"],
}
COMPACTED_TXNS = {1: {}, 2: {"app": 4389}, 3: {"app": 4390}, 4: {"app": 4390}}


def build_compacted(log: LogWriter) -> Path:
    log.commit(0, [commit_info(), protocol(), metadata(), add("f1")])
    log.commit(1, [commit_info(), add("f2"), remove("f1")])
    log.commit(2, [commit_info(), add("f3"), add("f4"), txn("app", 4389)])
    log.commit(3, [commit_info(), remove("f3"), txn("app", 4390)])
    log.commit(4, [commit_info(), add("f5")])
    log.compaction(1, 3, [add("f2"), add("f4"), remove("f1"), remove("f3"), txn("app", 4390)])
    return log.root


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_log_compaction_present(make_log: Callable[..., LogWriter], version: int) -> None:
    """Versions inside the compacted range must not use it; 3 and 4 may."""
    root = build_compacted(make_log())
    snap = oracle.replay(root, version)
    assert (snap.paths, snap.txns) == (
        COMPACTED_FILES[version],
        COMPACTED_TXNS[version],
    )
    t = dl.DeltaTable(str(root), version=version)
    assert sorted(t.files()) == COMPACTED_FILES[version]
    assert t.transactions() == COMPACTED_TXNS[version]


def test_log_compaction_replaces_its_commits(
    make_log: Callable[..., LogWriter],
) -> None:
    log = make_log()
    root = build_compacted(log)
    for v in (1, 2, 3):  # only the compaction is left for [1, 3]
        log.commit_path(v).unlink()
    t = dl.DeltaTable(str(root))
    assert t.version() == 4
    assert sorted(t.files()) == COMPACTED_FILES[4]
    assert t.transactions() == COMPACTED_TXNS[4]
    assert t.protocol().min_reader_version == 1
    assert t.metadata().id == "00000000-0000-4000-8000-000000000001"
