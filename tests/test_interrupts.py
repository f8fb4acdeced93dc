"""Ctrl-C during a write (issue #42, item 2): an interrupt before the commit point commits
nothing and removes the files written so far (a plain ``KeyboardInterrupt``); one after it
never looks like "nothing happened" (``InterruptedAfterCommit`` carrying the version, so a
user does not retry a write that landed). Each case runs in its own process, which sends
itself SIGINT at the moment the case is about (while data files are being written, while the
catalog ratifies), as a user's Ctrl-C would arrive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl

PRELUDE = """
import json, os, signal, sys, threading, time
import numpy as np
import pyarrow as pa
import deltalog as dl

root = sys.argv[1]


def interrupt_when_a_file_appears(directory, before):
    '''SIGINT as soon as a new data file exists under `directory` (the operation is then
    writing, and has not committed: it commits after its last file).'''
    def watch():
        while True:
            for base, _, names in os.walk(directory):
                for n in names:
                    p = os.path.join(base, n)
                    if n.endswith(".parquet") and p not in before:
                        os.kill(os.getpid(), signal.SIGINT)
                        return
            time.sleep(0.002)
    threading.Thread(target=watch, daemon=True).start()


def data_files(directory):
    return {os.path.join(b, n) for b, _, ns in os.walk(directory) for n in ns
            if n.endswith(".parquet") or n.startswith("deletion_vector_")}


def big(n, seed=1):
    return pa.table({"id": np.arange(n, dtype=np.int64),
                     "v": np.random.default_rng(seed).random(n)})


def outcome(call):
    try:
        result = call()
        return {"raised": None, "result": result if isinstance(result, int) else None}
    except BaseException as e:
        return {"raised": type(e).__name__, "version": getattr(e, "version", None),
                "message": str(e)}
"""


def run_case(tmp_path: Path, body: str) -> dict[str, Any]:
    script = tmp_path / "case.py"
    # The case's process ends without the interpreter's teardown once its result is printed:
    # Arrow's thread pools can abort a process at exit ("terminate called without an active
    # exception", apache/arrow#34314, #39862; seen once here after a correct result), which is
    # not what these cases are about.
    epilogue = "\nsys.stdout.flush()\nsys.stderr.flush()\nos._exit(0)\n"
    script.write_text(PRELUDE + textwrap.dedent(body) + epilogue)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_interrupted_in_memory_write_commits_nothing(tmp_path: Path) -> None:
    """The outside trial's case: Ctrl-C while an in-memory table is written. Before issue #42
    the write ran to its end and committed (40,000,001 rows, 14.4 s after the signal), then
    raised a bare KeyboardInterrupt."""
    out = run_case(
        tmp_path,
        """
        uri = os.path.join(root, "t")
        dl.write_table(uri, big(1))
        before = data_files(uri)
        data = big(30_000_000, seed=2)
        interrupt_when_a_file_appears(uri, before)
        started = time.monotonic()
        result = outcome(lambda: dl.write_table(uri, data, mode="append"))
        result["seconds"] = time.monotonic() - started
        result["version"] = dl.DeltaTable(uri).version()
        result["left"] = sorted(data_files(uri) - before)
        print(json.dumps(result))
        """,
    )
    assert out["raised"] == "KeyboardInterrupt", out
    assert out["version"] == 0  # nothing committed
    assert out["left"] == []  # the files written before the interrupt are gone


def test_an_interrupted_generator_input_raises_the_interrupt_itself(tmp_path: Path) -> None:
    """A batch generator interrupted (the signal is handled inside it) came back as
    ``DeltaError: arrow error: C Data interface error … KeyboardInterrupt``; an input's own
    exception is raised as itself, and the write stops before its commit."""
    out = run_case(
        tmp_path,
        """
        uri = os.path.join(root, "t")
        dl.write_table(uri, big(1))
        before = data_files(uri)
        schema = big(1).schema

        def batches():
            for i in range(50):
                if i == 3:
                    os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.02)
                yield big(100_000, seed=i).to_batches()[0]

        reader = pa.RecordBatchReader.from_batches(schema, batches())
        result = outcome(lambda: dl.write_table(uri, reader, mode="append"))

        def failing():
            yield big(10).to_batches()[0]
            raise ValueError("the source broke")

        broken = pa.RecordBatchReader.from_batches(schema, failing())
        result["other"] = outcome(lambda: dl.write_table(uri, broken, mode="append"))
        result["version"] = dl.DeltaTable(uri).version()
        result["left"] = sorted(data_files(uri) - before)
        print(json.dumps(result))
        """,
    )
    assert out["raised"] == "KeyboardInterrupt", out
    assert out["other"]["raised"] == "ValueError" and "the source broke" in out["other"]["message"]
    assert out["version"] == 0
    assert out["left"] == []


def test_an_interrupt_while_the_catalog_ratifies_says_the_commit_landed(tmp_path: Path) -> None:
    """Past the commit point the write runs to its end: the interrupt is raised as
    InterruptedAfterCommit with the version, and the commit is in the table once. Before the
    commit point (a catalog-managed table's data files being written) nothing is committed
    and the files are removed."""
    out = run_case(
        tmp_path,
        """
        from deltalog.catalog.managed import TableCatalogClient

        cat = dl.connect_catalog({"type": "sqlite", "path": os.path.join(root, "c.db"),
                                  "warehouse": os.path.join(root, "wh")})
        cat.create_namespace("s")
        cat.write_table("s.t", big(1))
        ratify = TableCatalogClient.commit

        def slow(self, *args, **kwargs):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the catalog ratifies
            time.sleep(0.3)
            return ratify(self, *args, **kwargs)

        TableCatalogClient.commit = slow
        t = cat.load_table("s.t")
        result = outcome(lambda: dl.write_table(t, big(5, seed=3), mode="append"))
        TableCatalogClient.commit = ratify
        after = cat.load_table("s.t")
        result["latest"] = after.version()
        result["rows"] = after.to_pyarrow_table().num_rows

        # Before the commit point: the files being written, then nothing.
        location = after.table_uri.removeprefix("file://")
        before = data_files(location)
        interrupt_when_a_file_appears(location, before)
        result["early"] = outcome(
            lambda: dl.write_table(cat.load_table("s.t"), big(20_000_000), mode="append"))
        result["early_latest"] = cat.load_table("s.t").version()
        result["left"] = sorted(data_files(location) - before)
        print(json.dumps(result))
        """,
    )
    assert out["raised"] == "InterruptedAfterCommit", out
    assert out["version"] == 1 and "version 1 was committed" in out["message"]
    assert out["latest"] == 1 and out["rows"] == 6  # landed once
    assert out["early"]["raised"] == "KeyboardInterrupt", out
    assert out["early_latest"] == 1
    assert out["left"] == []


@pytest.mark.parametrize("operation", ["delete", "optimize", "optimize-progress"])
def test_interrupted_dml_and_optimize_commit_nothing(tmp_path: Path, operation: str) -> None:
    """DELETE (copy-on-write: its rewritten files) and OPTIMIZE (compaction, native and unit
    by unit with a progress report) interrupted while they write: nothing committed, their
    new files removed."""
    call = {
        "delete": 't.delete("id % 7 = 0")',
        "optimize": "t.optimize.compact(target_size=1 << 30)",
        "optimize-progress": "t.optimize.compact(target_size=1 << 30, progress=lambda *a: None)",
    }[operation]
    out = run_case(
        tmp_path,
        f"""
        uri = os.path.join(root, "t")
        for i in range(3):
            dl.write_table(uri, big(4_000_000, seed=i), mode="append")
        t = dl.DeltaTable(uri)
        before = data_files(uri)
        interrupt_when_a_file_appears(uri, before)
        result = outcome(lambda: {call})
        result["latest"] = dl.DeltaTable(uri).version()
        result["left"] = sorted(data_files(uri) - before)
        print(json.dumps(result))
        """,
    )
    assert out["raised"] == "KeyboardInterrupt", out
    assert out["latest"] == 2
    assert out["left"] == []


def test_a_definite_error_before_the_commit_removes_the_written_files(tmp_path: Path) -> None:
    """The same cleanup for any failure before the commit point: a CHECK constraint broken by
    a later batch leaves none of the earlier batches' files behind."""
    uri = str(tmp_path / "t")
    dl.write_table(uri, pa.table({"id": pa.array([1], pa.int64())}))
    dl.DeltaTable(uri).alter.add_constraint({"small": "id < 1000000"})
    before = {p for p in Path(uri).rglob("*.parquet")}
    batches = [
        pa.record_batch({"id": pa.array(range(i * 100_000, (i + 1) * 100_000), pa.int64())})
        for i in range(15)
    ]
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, batches)
    with pytest.raises(dl.ConstraintViolationError):
        dl.write_table(uri, reader, mode="append", target_file_size=256 << 10)
    assert {p for p in Path(uri).rglob("*.parquet")} == before
    assert os.path.exists(uri) and dl.DeltaTable(uri).version() == 1
