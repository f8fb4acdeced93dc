"""DuckDB, the independent engine (issue #32): DuckDB 1.5.5 with its ``unity_catalog`` and
``delta`` extensions (delta-kernel-rs inside), attached to a real ``deltalog catalog serve``
process (SQLite, the default), reads and commits to the catalog-managed tables deltalog
manages, through Unity Catalog's API only.

* reads: every kind of table deltalog writes (partitioned, deletion vectors, column mapping,
  after a checkpoint), including ratified commits not yet published, staged and inline, with
  the same rows as deltalog;
* writes: DuckDB's INSERTs are ratified by the server (its staged commit read and checked),
  deltalog reads them and its writers continue on top;
* a mixed run: 4 deltalog writer processes x 25 appends while DuckDB inserts 25 times
  (re-attaching after a conflict, as it must): every acknowledged row once, every version
  ratified once and in order.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl
import processes
from deltalog.catalog import reports
from deltalog.server.auth import add_token
from unity_helpers import duckdb_attached


@pytest.fixture
def server(tmp_path: Path) -> Any:
    tokens = tmp_path / "tokens.json"
    keys = {role: add_token(tokens, role, role) for role in ("reader", "writer", "admin")}
    with catalog_server.running(tmp_path / "server", tokens=tokens) as running:
        running.keys = keys
        running.dir = tmp_path / "server"
        yield running


def catalog(server: Any, role: str = "admin") -> Any:
    return dl.connect_catalog({"type": "rest", "uri": server.url, "token": server.keys[role]})


def embedded(server: Any) -> Any:
    """The server's own database, opened by deltalog in this process (SQLite): for writers
    that leave their commits unpublished."""
    return dl.connect_catalog(
        {
            "type": "sqlite",
            "path": str(server.dir / "catalog.db"),
            "warehouse": str(server.dir / "wh"),
        }
    )


def rows_of(con: Any, table: str, order: str = "id") -> list[tuple[Any, ...]]:
    return [tuple(r) for r in con.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()]


def deltalog_rows(t: dl.DeltaTable, order: str = "id") -> list[tuple[Any, ...]]:
    data = t.to_pyarrow_table().sort_by(order)
    return [tuple(r.values()) for r in data.to_pylist()]


class Unpublished:
    """A catalog client that ratifies but never reports publishing, with staged (not inline)
    commits when ``staged``: the writer publishes ``<v>.json`` anyway, which the test then
    deletes, so the catalog holds commits no file of the published log has."""

    def __init__(self, inner: Any, staged: bool) -> None:
        self.inner = inner
        if staged:
            self.max_inline_commit_bytes = 0
        else:
            self.max_inline_commit_bytes = inner.max_inline_commit_bytes

    def get_ratified_commits(self, *args: Any) -> Any:
        return self.inner.get_ratified_commits(*args)

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.commit(*args, **kwargs)

    def published(self, version: int) -> None:
        pass


def unpublished_appends(server: Any, name: list[str], batches: list[tuple[pa.Table, bool]]) -> None:
    """Appends each batch (``staged`` or inline) as a writer whose commits stay unpublished."""
    cat = embedded(server)
    record = cat._record(name)
    written = []
    for data, staged in batches:
        client = Unpublished(cat.catalog_client(name), staged)
        t = dl.DeltaTable(record.location, catalog_client=client)
        written.append(dl.write_table(t, data, mode="append"))
    for v in written:
        (Path(record.location) / "_delta_log" / f"{v:020d}.json").unlink(missing_ok=True)
    held = cat.catalog_client(name).get_ratified_commits()
    assert [c.version for c in held.commits] == written


def table(values: list[int], text: str = "x", column: str = "s") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(values, pa.int64()),
            "part": pa.array([v % 3 for v in values], pa.int64()),
            column: pa.array([f"{text}{v}" for v in values]),
        }
    )


CASES = {
    "plain": {},
    "partitioned": {"partition_by": ["part"]},
    "deletion_vectors": {"configuration": {"delta.enableDeletionVectors": "true"}},
    "column_mapping": {"configuration": {"delta.columnMapping.mode": "name"}},
    "checkpointed": {"configuration": {"delta.checkpointInterval": "2"}},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_duckdb_reads_what_deltalog_writes(server: Any, case: str) -> None:
    cat = catalog(server)
    cat.create_namespace(["main"])
    cat.create_namespace(["main", "sales"])
    name = ["main", "sales", case]
    cat.write_table(name, table(list(range(10))), **CASES[case])
    t = cat.load_table(name)
    dl.write_table(t, table([10, 11, 12]), mode="append")
    del t  # its client reports its commit published (else it would with its next commit)
    reports.flush()
    if case == "deletion_vectors":
        cat.load_table(name).delete("id % 4 = 1")
    if case == "column_mapping":
        cat.load_table(name).alter.rename_column("s", "label")
    if case == "checkpointed":
        cat.load_table(name).create_checkpoint()
    # Then commits the catalog holds unpublished: two inline, then two staged.
    column = "label" if case == "column_mapping" else "s"
    unpublished_appends(
        server,
        name,
        [(table([v], column=column), v < 22) for v in (20, 21, 22, 23)],
    )
    expected = deltalog_rows(cat.load_table(name))
    assert [r[0] for r in expected][-4:] == [20, 21, 22, 23]
    con = duckdb_attached(server.url, "main", "sales", token=server.keys["reader"])
    assert rows_of(con, f"uc.sales.{case}") == expected
    if case == "plain":
        # What docs/catalogs.md shows a newcomer: SHOW ALL TABLES lists the UC tables.
        listed = {(r[0], r[1], r[2]) for r in con.execute("SHOW ALL TABLES").fetchall()}
        assert ("uc", "sales", "plain") in listed, listed


def test_duckdb_inserts_and_deltalog_continues(server: Any) -> None:
    cat = catalog(server)
    cat.create_namespace(["main"])
    cat.create_namespace(["main", "sales"])
    name = ["main", "sales", "orders"]
    cat.write_table(name, table([1, 2]))
    con = duckdb_attached(server.url, "main", "sales", token=server.keys["writer"])
    con.execute("INSERT INTO uc.sales.orders VALUES (3, 0, 'duck3'), (4, 1, 'duck4')")
    t = cat.load_table(name)
    assert t.version() == 1
    assert [r[0] for r in deltalog_rows(t)] == [1, 2, 3, 4]
    # DuckDB's commit is its own (kernel-rs), ratified by the server from its staged file.
    commit = t.history(1)[0]
    assert commit["operation"] != "WRITE" or "deltalog" not in json.dumps(commit)
    dl.write_table(t, table([5]), mode="append")
    con2 = duckdb_attached(server.url, "main", "sales", token=server.keys["writer"], alias="uc2")
    assert [r[0] for r in rows_of(con2, "uc2.sales.orders")] == [1, 2, 3, 4, 5]
    con2.execute("INSERT INTO uc2.sales.orders VALUES (6, 0, 'duck6')")
    assert [r[0] for r in deltalog_rows(cat.load_table(name))] == [1, 2, 3, 4, 5, 6]
    # A reader's token cannot commit through DuckDB either.
    reader = duckdb_attached(server.url, "main", "sales", token=server.keys["reader"], alias="r")
    with pytest.raises(Exception, match=r"403|ermission"):
        reader.execute("INSERT INTO r.sales.orders VALUES (7, 1, 'no')")
    assert [r[0] for r in deltalog_rows(cat.load_table(name))] == [1, 2, 3, 4, 5, 6]


def _deltalog_writer(url: str, token: str, k: int, n: int, ready: Any, go: Any, out: Any) -> None:
    cat = dl.connect_catalog({"type": "rest", "uri": url, "token": token})
    ready.set()
    go.wait(60)
    for i in range(n):
        value = 1000 * (k + 1) + i
        dl.write_table(
            cat.load_table(["main", "sales", "mixed"]), table([value], "dl"), mode="append"
        )
        out.put(value)


def test_mixed_writers_deltalog_processes_and_duckdb(server: Any) -> None:
    cat = catalog(server)
    cat.create_namespace(["main"])
    cat.create_namespace(["main", "sales"])
    name = ["main", "sales", "mixed"]
    cat.write_table(name, table([0]))
    procs, per, duck = 4, 25, 25
    ctx = processes.context()
    go, out = ctx.Event(), ctx.Queue()
    readies = [ctx.Event() for _ in range(procs)]
    workers = [
        ctx.Process(
            target=_deltalog_writer,
            args=(server.url, server.keys["writer"], k, per, readies[k], go, out),
        )
        for k in range(procs)
    ]
    for w in workers:
        w.start()
    for r in readies:
        assert r.wait(120)
    go.set()
    acknowledged: list[int] = []
    attaches = 0
    con = duckdb_attached(server.url, "main", "sales", token=server.keys["writer"], alias="m0")
    i = 0
    deadline = time.monotonic() + 600
    while i < duck:
        assert time.monotonic() < deadline
        value = 100 + i
        try:
            con.execute(f"INSERT INTO m{attaches}.sales.mixed VALUES ({value}, 0, 'duck')")
        except Exception as e:
            # A conflict (409): DuckDB keeps the table's commits for the whole attach, so it
            # re-attaches and inserts the same row again (nothing of the failed one landed).
            assert "409" in str(e) or "onflict" in str(e), e
            attaches += 1
            con = duckdb_attached(
                server.url, "main", "sales", token=server.keys["writer"], alias=f"m{attaches}"
            )
            continue
        acknowledged.append(value)
        i += 1
    for w in workers:
        w.join(600)
    assert [w.exitcode for w in workers] == [0] * procs
    while not out.empty():
        acknowledged.append(out.get())
    assert len(acknowledged) == procs * per + duck
    print(f"DuckDB re-attached {attaches} times after conflicts")
    t = cat.load_table(name)
    ids = [r[0] for r in deltalog_rows(t)]
    assert ids == sorted([0, *acknowledged])  # every acknowledged row, exactly once
    assert t.version() == procs * per + duck  # one version per commit
    history = t.history()
    assert sorted(h["version"] for h in history) == list(range(t.version() + 1))
    stamps = [h["timestamp"] for h in sorted(history, key=lambda h: h["version"])]
    assert stamps == sorted(stamps)  # in-commit timestamps rise with the versions
    final = duckdb_attached(server.url, "main", "sales", token=server.keys["reader"], alias="f")
    assert [r[0] for r in rows_of(final, "f.sales.mixed")] == ids
