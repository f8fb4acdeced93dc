"""deltalog and Delta Spark committing to one table at once (issue #44, Deliver 3).

On a local file system both engines create a commit file only if it does not exist yet (Delta
Spark's HDFSLogStore renames without overwrite; deltalog's object_store puts with create
mode): "the Delta transaction log protocol requires ... mutual exclusion" ("Delta Log
Entries"). So every acknowledged commit must be in the log exactly once, whichever engine won
a version, and conflicts are decided by the protocol's rules on both sides: appends are blind
and never fail because of the other engine's append; an operation that read files the other
engine removed fails ("Commit Provenance Information", isolation levels as Delta Spark names
them: a DELETE reads the files it rewrites or marks).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
import processes
from reference_engine.client import DeltaSpark, DeltaSparkError, table_ref
from reference_engine.compare import assert_same_history, assert_same_rows

WRITERS_EACH = 4  # deltalog processes, and as many Delta Spark threads
COMMITS_EACH = 25

SPARK_WRITERS = """
import threading
from pathlib import Path

errors = []

def write(k):
    for i in range(commits):
        try:
            spark.sql(f"INSERT INTO {ref} VALUES ('spark-{k}', {i})")
        except Exception as e:
            errors.append(f"spark-{k} commit {i}: {e}"[:600])

threads = [threading.Thread(target=write, args=(k,)) for k in range(writers)]
Path(go).touch()
for t in threads:
    t.start()
for t in threads:
    t.join()
result = errors
"""


def _deltalog_writer(path: str, k: int, commits: int, go: str, out: Any) -> None:
    """One deltalog process: ``commits`` appends of one row each, once ``go`` exists."""
    deadline = time.monotonic() + 300
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.005)
    errors = []
    for i in range(commits):
        row = pa.table({"writer": [f"deltalog-{k}"], "seq": pa.array([i], pa.int64())})
        try:
            dl.write_table(path, row, mode="append")
        except Exception as e:  # reported to the test, which fails on any
            errors.append(f"deltalog-{k} commit {i}: {type(e).__name__}: {e}"[:600])
    out.put(errors)


def test_appends_from_both_engines_are_each_committed_once_in_order(
    delta_spark: DeltaSpark, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    schema = pa.schema([("writer", pa.string()), ("seq", pa.int64())])
    dl.DeltaTable.create(path, schema, configuration={"delta.enableChangeDataFeed": "true"})
    go = str(tmp_path / "go")
    ctx = processes.context()
    out = ctx.Queue()
    children = [
        ctx.Process(target=_deltalog_writer, args=(str(path), k, COMMITS_EACH, go, out))
        for k in range(WRITERS_EACH)
    ]
    for child in children:
        child.start()
    spark_errors = delta_spark.run(
        SPARK_WRITERS, ref=table_ref(path), commits=COMMITS_EACH, writers=WRITERS_EACH, go=go
    )
    our_errors = [e for _ in children for e in out.get(timeout=600)]
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    # A blind append never fails because of another engine's append.
    assert spark_errors == [] and our_errors == []

    total = 2 * WRITERS_EACH * COMMITS_EACH
    t = dl.DeltaTable(path)
    assert t.version() == total
    expected = sorted(
        (f"{engine}-{k}", i)
        for engine in ("deltalog", "spark")
        for k in range(WRITERS_EACH)
        for i in range(COMMITS_EACH)
    )
    rows = assert_same_rows(t.to_pyarrow_table(), delta_spark.read(path))
    assert sorted((r["writer"], r["seq"]) for r in rows) == expected
    # Every version holds exactly one row, and each writer's commits are in its order.
    changes = t.load_cdf(starting_version=1).read_all().to_pylist()
    assert sorted(c["_commit_version"] for c in changes) == list(range(1, total + 1))
    by_writer: dict[str, list[tuple[int, int]]] = {}
    for c in changes:
        assert c["_change_type"] == "insert"
        by_writer.setdefault(c["writer"], []).append((c["seq"], c["_commit_version"]))
    for commits in by_writer.values():
        versions = [v for _, v in sorted(commits)]
        assert versions == sorted(versions)
    engines = {e.get("engineInfo", "").split("/")[0] for e in t.history()}
    assert len(engines) >= 2, engines  # both engines' commits are in the history
    assert len(assert_same_history(delta_spark, path)) == total + 1


def _base(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "s": [f"s{i}" for i in ids]})


def test_deltalog_detects_delta_spark_conflicts(delta_spark: DeltaSpark, tmp_path: Path) -> None:
    """deltalog's DELETE over files Delta Spark's DELETE removed since deltalog read them is a
    conflict; its append on the same stale snapshot is not."""
    path = tmp_path / "t"
    dl.write_table(path, _base(range(10)))  # one file
    stale = dl.DeltaTable(path)
    delta_spark.execute(f"DELETE FROM {table_ref(path)} WHERE id = 1")
    with pytest.raises(dl.CommitConflictError):
        stale.delete("id = 2")
    again = dl.DeltaTable(path, version=0)
    delta_spark.execute(f"INSERT INTO {table_ref(path)} VALUES (100, 'spark')")
    dl.write_table(again, _base(range(200, 202)), mode="append")
    rows = assert_same_rows(dl.DeltaTable(path).to_pyarrow_table(), delta_spark.read(path))
    assert sorted(r["id"] for r in rows) == [0, *range(2, 10), 100, 200, 201]
    assert_same_history(delta_spark, path)


# Delta Spark's own transaction, opened on one version and committed after deltalog's commit:
# what a Delta Spark DELETE does between planning and commit (OptimisticTransaction reads every
# file through filterFiles, then commits the removal of the first one).
OPEN_TRANSACTION = """
log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
txn = log.startTransaction()
files = txn.filterFiles()
state["txn"], state["files"] = txn, files
result = (txn.readVersion(), files.size())
"""

COMMIT_REMOVAL = """
txn, files = state.pop("txn"), state.pop("files")
jvm = spark._jvm
removal = files.head().remove()
actions = jvm.scala.jdk.javaapi.CollectionConverters.asScala(
    jvm.java.util.Collections.singletonList(removal)).toSeq()
op = getattr(getattr(jvm.org.apache.spark.sql.delta, "DeltaOperations$ManualUpdate$"), "MODULE$")
result = txn.commit(actions, op)
"""


def test_delta_spark_detects_deltalog_conflicts(delta_spark: DeltaSpark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, _base(range(10)))
    read_version, nfiles = delta_spark.run(OPEN_TRANSACTION, path=str(path))
    assert (read_version, nfiles) == (0, 1)
    dl.DeltaTable(path).delete("id = 3")  # removes (rewrites) the file Delta Spark read
    with pytest.raises(DeltaSparkError, match=r"(?i)concurrent"):
        delta_spark.run(COMMIT_REMOVAL)
    # Appends from both sides after that: neither conflicts.
    dl.write_table(path, _base(range(50, 52)), mode="append")
    delta_spark.execute(f"INSERT INTO {table_ref(path)} VALUES (60, 'spark')")
    rows = assert_same_rows(dl.DeltaTable(path).to_pyarrow_table(), delta_spark.read(path))
    assert sorted(r["id"] for r in rows) == [0, 1, 2, *range(4, 10), 50, 51, 60]
