"""What a commit through the REST catalog costs in requests, and that the savings keep the
catalogManaged rules: an append is one ``version/list`` (the latest ratified commits) and one
``version/create`` (ratification); the writer reports what it published with its next commit
(``context["delta.publishedThrough"]``), or when its client goes away or the interpreter exits;
the table object moves to its own commit from the published log without asking again; and a
report the catalog cannot confirm (a published file that differs, a version not published) is
ignored, never trusted."""

from __future__ import annotations

import collections
import gc
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import urllib3

import catalog_server
import deltalog as dl
from deltalog.catalog import reports

JSON = {"Content-Type": "application/json"}


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


@pytest.fixture
def server(tmp_path: Path) -> Any:
    with catalog_server.running(tmp_path / "server") as running:
        yield running


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[str]]:
    """The requests this process sends, counted by route (``version/create``, ...)."""
    counted: collections.Counter[str] = collections.Counter()
    send = urllib3.connectionpool.HTTPConnectionPool.urlopen

    def urlopen(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        path = url.split("?", 1)[0]
        counted["/".join(path.rsplit("/", 2)[-2:]) if "/v1/table/" in path else path] += 1
        return send(self, method, url, *args, **kwargs)

    monkeypatch.setattr(urllib3.connectionpool.HTTPConnectionPool, "urlopen", urlopen)
    yield counted


def held(cat: Any, name: str) -> list[int]:
    """The versions the catalog holds (ratified, not known to be published)."""
    return [c.version for c in cat.catalog_client(name).get_ratified_commits().commits]


def test_an_append_is_two_requests(server: Any, requests: collections.Counter[str]) -> None:
    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.create_table("t", pa.schema({"id": pa.int64()}))
    t = cat.load_table("t")
    requests.clear()
    # Its first write too: the table, not opened yet, opens the latest version at once.
    dl.write_table(t, rows(0), mode="append")
    assert requests == {"version/list": 1, "version/create": 1}
    requests.clear()
    for i in range(1, 6):
        dl.write_table(t, rows(i), mode="append")
        # The object shows its own commit, read from the published log.
        assert t.version() == i + 1 and t.to_pyarrow_table().num_rows == i + 1
    assert requests == {"version/list": 5, "version/create": 5}
    # Each commit reported the one before it: the catalog holds only the newest.
    assert held(cat, "t") == [6]
    log = Path(cat.describe_table("t").location) / "_delta_log"
    assert all((log / f"{v:020}.json").exists() for v in range(7))
    # The last one is reported when the writer's client goes away.
    requests.clear()
    del t
    gc.collect()
    assert reports.flush()  # sent from the reporting thread
    assert requests == {"version/delete": 1}
    assert held(cat, "t") == []
    assert dl.DeltaTable(str(log.parent), published_only=True).version() == 6


def test_the_last_commit_is_reported_at_exit(server: Any) -> None:
    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.create_table("t", pa.schema({"id": pa.int64()}))
    script = (
        "import sys, pyarrow as pa, deltalog as dl\n"
        "cat = dl.connect_catalog({'type': 'rest', 'uri': sys.argv[1]})\n"
        "t = cat.load_table('t')\n"
        "dl.write_table(t, pa.table({'id': pa.array([1], pa.int64())}), mode='append')\n"
        "dl.write_table(t, pa.table({'id': pa.array([2], pa.int64())}), mode='append')\n"
        "print(t.version())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, server.url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
    assert held(cat, "t") == []
    assert cat.load_table("t").version() == 2


def test_a_report_is_checked_not_trusted(server: Any) -> None:
    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.create_table("t", pa.schema({"id": pa.int64()}))
    log = Path(cat.describe_table("t").location) / "_delta_log"
    http = urllib3.PoolManager()

    def propose(version: int, context: dict[str, str] | None) -> Any:
        info = {
            "commitInfo": {
                "inCommitTimestamp": int(time.time() * 1000) + 10_000 * version,
                "txnId": str(uuid.uuid4()),
            }
        }
        body: dict[str, Any] = {
            "version": version,
            "manifest_path": f"_delta_log/{version:020}.json",
            "metadata": {"delta.inlineCommit": json.dumps(info) + "\n"},
        }
        if context is not None:
            body["context"] = context
        return http.request(
            "POST",
            f"{server.url}/v1/table/t/version/create",
            body=json.dumps(body).encode(),
            headers=JSON,
        )

    bad = propose(1, {"delta.publishedThrough": "one"})
    assert bad.status == 400 and "delta.publishedThrough" in json.loads(bad.data)["error"]
    assert propose(1, None).status == 200
    # Version 1 "published" by someone else, with other content: the report is ignored.
    (log / f"{1:020}.json").write_text('{"commitInfo":{"forged":true}}\n')
    assert propose(2, {"delta.publishedThrough": "1"}).status == 200
    assert held(cat, "t") == [1, 2]
    # Not published at all: ignored too; a report past the latest version is bounded by it.
    (log / f"{1:020}.json").unlink()
    assert propose(3, {"delta.publishedThrough": "99"}).status == 200
    assert held(cat, "t") == [1, 2, 3]
    # Published for real (deltalog's publishing: every held commit, in order): forgotten.
    from deltalog import _native

    client = cat.catalog_client("t")
    _native.publish(str(log.parent), 3, client, None)
    assert held(cat, "t") == [1, 2, 3]  # reported with the client's next commit, or...
    del client
    gc.collect()  # ... when it goes away
    assert reports.flush()
    assert held(cat, "t") == []
    assert cat.load_table("t").version() == 3


def test_a_conflict_leaves_no_reference_cycle(server: Any) -> None:
    # Contended writers lose many proposals: garbage only the cyclic collector frees made its
    # full collections cost them milliseconds a commit.
    from deltalog.exceptions import CommitConflictError

    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.create_table("t", pa.schema({"id": pa.int64()}))
    dl.write_table(cat.load_table("t"), rows(1), mode="append")
    client = cat.catalog_client("t")
    content = b'{"commitInfo":{"inCommitTimestamp":1}}\n'
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(3):
            with pytest.raises(CommitConflictError):
                client.commit(1, content=content)
        gc.collect()
        frames = [o.f_code.co_name for o in gc.garbage if type(o).__name__ == "frame"]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert frames == []


def test_a_unity_catalog_append_is_two_requests(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same through the server's Unity Catalog API with deltalog's ``unity`` client:
    ``loadTable``, then one ``updateTable`` with ``add-commit`` and, before it, the previous
    commit's ``set-latest-backfilled-version``."""
    rest = dl.connect_catalog({"type": "rest", "uri": server.url})
    rest.create_namespace("main")
    rest.create_namespace("main.default")
    uc = dl.connect_catalog(
        {"type": "unity", "uri": server.url, "catalog": "main", "schema": "default"}
    )
    uc.create_table("t", pa.schema({"id": pa.int64()}))
    t = uc.load_table("t")
    dl.write_table(t, rows(0), mode="append")
    calls: collections.Counter[tuple[str, str]] = collections.Counter()
    send = urllib3.connectionpool.HTTPConnectionPool.urlopen

    def urlopen(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        calls[method, url.split("?", 1)[0].split("/unity-catalog/", 1)[-1]] += 1
        return send(self, method, url, *args, **kwargs)

    monkeypatch.setattr(urllib3.connectionpool.HTTPConnectionPool, "urlopen", urlopen)
    for i in range(1, 4):
        dl.write_table(t, rows(i), mode="append")
    # loadTable (GET) and updateTable (POST) of the Delta API's table route, nothing else.
    table = "delta/v1/catalogs/main/schemas/default/tables/t"
    assert calls == {("GET", table): 3, ("POST", table): 3}, calls
    assert held(rest, "main.default.t") == [4]  # the same table, through the Lance routes
    del t
    gc.collect()
    assert reports.flush()
    assert held(rest, "main.default.t") == []
    assert ids_of(uc.load_table("t")) == [0, 1, 2, 3]


def ids_of(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def test_a_report_never_runs_inside_a_cyclic_collection(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client freed by the cyclic collector (which may run in any thread, holding any lock)
    reports from the reporting thread; one freed in the main thread reports at once."""
    from deltalog.catalog.clients.rest import table_client as rest_client

    threads: list[str] = []
    report = rest_client._report

    def recorded(*args: Any) -> None:
        import threading

        threads.append(threading.current_thread().name)
        report(*args)

    monkeypatch.setattr(rest_client, "_report", recorded)
    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.create_table("t", pa.schema({"id": pa.int64()}))
    threads.clear()
    dl.write_table(cat.load_table("t"), rows(1), mode="append")  # freed at once
    assert threads == ["MainThread"] and held(cat, "t") == []
    t = cat.load_table("t")
    dl.write_table(t, rows(2), mode="append")
    t.cycle = t  # type: ignore[attr-defined]
    del t
    gc.collect()
    assert reports.flush()
    assert threads == ["MainThread", "deltalog-reports"] and held(cat, "t") == []
