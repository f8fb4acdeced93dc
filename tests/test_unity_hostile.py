"""The Unity Catalog routes of ``deltalog catalog serve`` under careless or hostile clients
(issue #32 with #30's rules): raw HTTP on loopback, every bad input answered 4xx in UC's error
shape, never a 5xx, never a change to the catalog."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl
from deltalog.server.auth import add_token
from unity_helpers import staged_commit

P = "/api/2.1/unity-catalog"
T = f"{P}/delta/v1/catalogs/main/schemas/sales/tables/orders"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("hostile")
    tokens = root / "tokens.json"
    keys = {role: add_token(tokens, role, role) for role in ("reader", "writer", "admin")}
    with catalog_server.running(root / "server", tokens=tokens) as running:
        running.keys = keys
        cat = dl.connect_catalog({"type": "rest", "uri": running.url, "token": keys["admin"]})
        cat.create_namespace(["main"])
        cat.create_namespace(["main", "sales"])
        cat.write_table(["main", "sales", "orders"], pa.table({"id": pa.array([1], pa.int64())}))
        running.location = cat.describe_table(["main", "sales", "orders"]).location
        running.cat = cat
        yield running


def send(
    server: Any, method: str, path: str, body: bytes | None = None, role: str | None = "admin"
) -> tuple[int, Any]:
    url = urlsplit(server.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if role is not None:
        headers["Authorization"] = f"Bearer {server.keys[role]}"
    conn.request(method, path, body=body, headers=headers)
    answer = conn.getresponse()
    data = answer.read()
    conn.close()
    try:
        return answer.status, json.loads(data) if data else None
    except ValueError:
        return answer.status, data


def delta_shape(answer: tuple[int, Any], status: int) -> str:
    got, body = answer
    assert got == status, answer
    assert set(body) == {"error"} and body["error"]["code"] == status, body
    return str(body["error"]["type"])


def uc_shape(answer: tuple[int, Any], status: int) -> str:
    got, body = answer
    assert got == status, answer
    assert body["message"] and body["error_code"], body
    return str(body["error_code"])


def unchanged(server: Any) -> None:
    t = server.cat.load_table(["main", "sales", "orders"])
    assert t.version() == 0 and t.to_pyarrow_table().column("id").to_pylist() == [1]


BAD_UPDATES = [
    b"",
    b"[]",
    b"{",
    b'{"requirements": [], "updates": []}',
    b'{"requirements": [{"type": "assert-table-uuid"}], "updates": [{"action": "add-commit"}]}',
    b'{"requirements": [{"type": "assert-etag", "etag": "x"}], "updates": '
    b'[{"action": "set-latest-backfilled-version", "latest-published-version": 0}]}',
    b'{"requirements": [{"type": "assert-table-uuid", "uuid": "x"}], "updates": '
    b'[{"action": "nope"}]}',
    b'{"requirements": [{"type": "assert-table-uuid", "uuid": "x"}], "updates": '
    b'[{"action": "add-commit", "commit": {"version": "1"}}]}',
    b'{"requirements": [{"type": "assert-table-uuid", "uuid": "x"}], "updates": '
    b'[{"action": "set-latest-backfilled-version", '
    b'"latest-published-version": 99999999999999999999999}]}',
    b'{"requirements": [{"type": "assert-table-uuid", "uuid": "x"}, {"type": "assert-table-uuid", '
    b'"uuid": "y"}], "updates": [{"action": "set-latest-backfilled-version", '
    b'"latest-published-version": 0}]}',
    b'{"extra": 1, "requirements": [], "updates": []}',
    b"[" * 10_000 + b"]" * 10_000,
    b'{"requirements": "\\ud800", "updates": []}',
]


@pytest.mark.parametrize("body", BAD_UPDATES, ids=range(len(BAD_UPDATES)))
def test_malformed_update_requests_are_400(server: Any, body: bytes) -> None:
    kind = delta_shape(send(server, "POST", T, body, "writer"), 400)
    assert kind in ("BadRequestException", "InvalidParameterValueException")
    unchanged(server)


def test_forged_commits_are_refused(server: Any) -> None:
    """Staged files that are not a commit the catalog may ratify: another version's name, a
    missing file, a path outside _staged_commits, a file-name with a directory, a FIFO."""
    import os

    uuid = send(server, "GET", T, role="reader")[1]["metadata"]["table-uuid"]

    def add(commit: dict[str, Any]) -> tuple[int, Any]:
        body = {
            "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
            "updates": [{"action": "add-commit", "commit": commit}],
        }
        return send(server, "POST", T, json.dumps(body).encode(), "writer")

    def commit(name: str, version: int = 1) -> dict[str, Any]:
        return {
            "version": version,
            "timestamp": 1,
            "file-name": name,
            "file-size": 1,
            "file-modification-timestamp": 1,
        }

    other = staged_commit(server.location, 2, [5])  # named for version 2
    assert delta_shape(add(commit(other)), 400) == "InvalidParameterValueException"
    missing = "00000000000000000001.00000000-0000-0000-0000-000000000000.json"
    assert delta_shape(add(commit(missing)), 400) == "InvalidParameterValueException"
    for name in ("../00000000000000000000.json", "x/00000000000000000001.a.json", "a.json"):
        assert delta_shape(add(commit(name)), 400) == "InvalidParameterValueException"
    fifo = "00000000000000000001.ffffffff-0000-0000-0000-000000000000.json"
    os.mkfifo(Path(server.location, "_delta_log", "_staged_commits", fifo))
    assert delta_shape(add(commit(fifo)), 400) == "InvalidParameterValueException"
    # A good commit whose timestamp is not its in-commit timestamp.
    good = staged_commit(server.location, 1, [6])
    assert delta_shape(add(commit(good)), 400) == "InvalidParameterValueException"
    unchanged(server)


def test_routes_names_and_sizes(server: Any) -> None:
    assert uc_shape(send(server, "GET", f"{P}/nope"), 404) == "NOT_FOUND"
    assert uc_shape(send(server, "PUT", f"{P}/catalogs"), 501) == "UNIMPLEMENTED"
    assert delta_shape(send(server, "PATCH", T), 501) == "NotImplementedException"
    assert uc_shape(send(server, "GET", f"{P}/tables/main.sales.%FF"), 400) == "INVALID_ARGUMENT"
    assert uc_shape(send(server, "GET", f"{P}/tables/main.sales"), 400) == "INVALID_ARGUMENT"
    assert uc_shape(send(server, "GET", f"{P}/tables/main.sales.nope"), 404) == "NOT_FOUND"
    assert delta_shape(send(server, "GET", T + "x"), 404) == "NoSuchTableException"
    assert send(server, "HEAD", T + "x")[0] == 404
    assert send(server, "HEAD", T, role="reader")[0] == 204
    listing = f"{P}/tables?catalog_name=main&schema_name=sales&max_results="
    assert uc_shape(send(server, "GET", listing + "-1"), 400) == "INVALID_ARGUMENT"
    assert uc_shape(send(server, "GET", listing + "x"), 400) == "INVALID_ARGUMENT"
    assert send(server, "GET", listing + "100000")[0] == 200  # capped at 50, not refused
    for name in ("a/b", "a.b", "a$b", "", "x" * 300, "\u0000"):
        body = json.dumps({"name": name}).encode()
        assert uc_shape(send(server, "POST", f"{P}/catalogs", body), 400) == "INVALID_ARGUMENT"
    huge = b'{"name": "' + b"x" * (8 * 1024 * 1024) + b'"}'
    assert send(server, "POST", f"{P}/catalogs", huge)[0] == 413
    assert uc_shape(send(server, "GET", f"{P}/catalogs", role=None), 401) == "UNAUTHENTICATED"
    config = f"{P}/delta/v1/config?catalog=main&protocol-versions="
    assert delta_shape(send(server, "GET", config + "2.0"), 400) == "InvalidParameterValueException"
    assert delta_shape(send(server, "GET", config + "x"), 400) == "InvalidParameterValueException"
    assert send(server, "GET", config + "1.1,2.0")[0] == 200
    unchanged(server)


def test_writers_cannot_delete_or_rename_what_is_not_theirs(server: Any) -> None:
    assert delta_shape(send(server, "DELETE", T, role="writer"), 403) == "PermissionDeniedException"
    rename = json.dumps({"new-name": "x"}).encode()
    kind = delta_shape(send(server, "POST", T + "/rename", rename, "writer"), 403)
    assert kind == "PermissionDeniedException"
    assert uc_shape(send(server, "DELETE", f"{P}/tables/main.sales.orders", role="writer"), 403)
    assert uc_shape(send(server, "DELETE", f"{P}/schemas/main.sales", role="writer"), 403)
    assert uc_shape(send(server, "DELETE", f"{P}/catalogs/main", role="writer"), 403)
    outside = f"{P}/delta/v1/temporary-path-credentials?location=/etc&operation=READ"
    assert delta_shape(send(server, "GET", outside, role="reader"), 403)
    unchanged(server)
