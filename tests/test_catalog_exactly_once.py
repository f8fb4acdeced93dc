"""Exactly once, and honest errors, when the network fails (issue #30, "Exactly once, and honest
errors, when the network fails"): deltalog's REST catalog client talks to a real ``deltalog
catalog serve`` process through a proxy on loopback that forwards each request to the server,
reads the server's whole answer, and then, when told to, drops it (closes the client's
connection without a byte), as a network that fails after the server acted would.

Before the fix, an answer lost while another writer published the commit made the client commit
the same actions again (the row twice, 3 of 3 runs). Now a retried proposal is recognised by the
catalog as the commit it ratified (the same version and staged file, or the same content: the UC
Delta API's rule), every acknowledged commit is in the table exactly once, and a commit whose
outcome the catalog cannot tell raises :class:`deltalog.CommitOutcomeUnknownError`.
"""

from __future__ import annotations

import http.client
import http.server
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


class DroppingProxy:
    """An HTTP proxy in front of ``upstream`` whose ``policy(method, path)`` says, after the
    server answered, whether the answer is dropped (the client's connection closed instead).
    ``before_drop`` runs, when set, between the server's answer and the drop."""

    def __init__(self, upstream: str) -> None:
        target = urlsplit(upstream)
        self.policy: Callable[[str, str], bool] = lambda method, path: False
        self.before_drop: Callable[[], None] | None = None
        self.dropped = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")
                }
                upstream_conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                try:
                    upstream_conn.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream_conn.getresponse()
                    data = answer.read()
                finally:
                    upstream_conn.close()
                if proxy.policy(self.command, self.path.split("?")[0]):
                    proxy.dropped += 1
                    if proxy.before_drop is not None:
                        proxy.before_drop()
                    self.close_connection = True
                    self.connection.shutdown(2)  # the answer is lost
                    return
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _forward
            do_POST = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Any]:
    with catalog_server.running(tmp_path / "server") as running:
        yield running


@pytest.fixture
def proxy(server: Any) -> Iterator[DroppingProxy]:
    p = DroppingProxy(server.url)
    yield p
    p.close()


def ratified_versions(tmp_path: Path) -> list[int]:
    db = sqlite3.connect(tmp_path / "server" / "catalog.db")
    try:
        return [v for (v,) in db.execute("SELECT version FROM commit_log ORDER BY version")]
    finally:
        db.close()


def test_lost_answers_never_commit_twice(server: Any, proxy: DroppingProxy, tmp_path: Path) -> None:
    """Each commit's first answer is lost, and before the client retries, another writer
    commits and publishes it (the reported double commit): every acknowledged row is in the
    table exactly once."""
    direct = dl.connect_catalog({"type": "rest", "uri": server.url})
    via_proxy = dl.connect_catalog({"type": "rest", "uri": proxy.url, "timeout": 30})
    direct.write_table("t", rows(0))
    other = iter(range(1000, 2000))
    acknowledged: list[int] = [0]

    def other_writer_commits() -> None:
        value = next(other)
        dl.write_table(direct.load_table("t"), rows(value), mode="append")
        acknowledged.append(value)

    state = {"drop": False}

    def drop_first_answer(method: str, path: str) -> bool:
        if path.endswith("/version/create") and state["drop"]:
            state["drop"] = False
            return True
        return False

    proxy.policy = drop_first_answer
    proxy.before_drop = other_writer_commits
    for i in range(1, 21):
        state["drop"] = True
        dl.write_table(via_proxy.load_table("t"), rows(i), mode="append")
        acknowledged.append(i)
    assert proxy.dropped >= 20
    final = direct.load_table("t")
    assert ids(final) == sorted(acknowledged)  # every acknowledged row, exactly once
    assert ratified_versions(tmp_path) == list(range(final.version() + 1))


def test_lost_answers_of_staged_commits_too(server: Any, proxy: DroppingProxy) -> None:
    """A staged commit (too large to go inline) whose answer is lost: the retry names the same
    staged file, which the catalog recognises."""
    direct = dl.connect_catalog({"type": "rest", "uri": server.url})
    via_proxy = dl.connect_catalog({"type": "rest", "uri": proxy.url})
    direct.write_table("t", rows(0))
    t = via_proxy.load_table("t")
    adds = []
    for i in range(400):  # ~400 add actions: a commit of > 64 KiB, staged
        adds += dl.write_files(t, rows(10_000 + i))
    answers = iter([True, False, False, False])
    proxy.policy = lambda method, path: path.endswith("/version/create") and next(answers)
    t.transaction(operation="WRITE").add_actions(adds).commit()
    assert proxy.dropped == 1
    assert ids(direct.load_table("t")) == [0, *range(10_000, 10_400)]


def test_an_unknown_outcome_is_typed(server: Any, proxy: DroppingProxy) -> None:
    """No answer to the commit, nor to the questions that would settle it: the writer gets
    CommitOutcomeUnknownError (not the CatalogError of a refusal), and the commit did land."""
    direct = dl.connect_catalog({"type": "rest", "uri": server.url})
    via_proxy = dl.connect_catalog({"type": "rest", "uri": proxy.url, "timeout": 10})
    direct.write_table("t", rows(0))
    t = via_proxy.load_table("t")
    sent = {"commit": False}

    def after_the_commit(method: str, path: str) -> bool:
        sent["commit"] = sent["commit"] or path.endswith("/version/create")
        return sent["commit"] and "/version/" in path

    proxy.policy = after_the_commit
    with pytest.raises(dl.CommitOutcomeUnknownError) as e:
        dl.write_table(t, rows(1), mode="append")
    assert not isinstance(e.value, dl.CommitConflictError)
    assert "_NoAnswer" not in type(e.value).__name__
    proxy.policy = lambda method, path: False
    # It did land (the server acted before the answer was lost): exactly once.
    assert ids(direct.load_table("t")) == [0, 1]


def test_a_refresh_after_a_commit_sees_later_commits(server: Any) -> None:
    """Read your writes, and everyone else's: after a commit through a table, the next refresh
    of that same table sees other writers' later commits."""
    a = dl.connect_catalog({"type": "rest", "uri": server.url})
    b = dl.connect_catalog({"type": "rest", "uri": server.url})
    a.write_table("t", rows(0))
    mine = a.load_table("t")
    dl.write_table(mine, rows(1), mode="append")
    assert mine.version() == 1
    dl.write_table(b.load_table("t"), rows(2), mode="append")
    mine.update_incremental()
    assert mine.version() == 2
    assert ids(mine) == [0, 1, 2]
