"""The web pages' JSON API and HTTP rules (issue #47), over a real server: what each view
answers, who may see what, the security headers, and that nothing can change through
``/ui/``. The pages themselves are driven in a real browser by ``test_ui_browser.py``."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.ui_catalog import COMMENT, IMG, SCRIPT, SCRIPT_TABLE, UiCatalog, ui_catalog

import deltalog as dl

ORDERS = {"ns": ["sales", "eu"], "t": "orders"}


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiCatalog]:
    with ui_catalog(tmp_path_factory.mktemp("ui")) as catalog:
        yield catalog


def orders_table(ui: UiCatalog) -> dl.DeltaTable:
    """The table read through the catalog (it is catalog-managed), not through the pages."""
    reader = dl.connect_catalog({"type": "rest", "uri": ui.url, "token": ui.tokens["rita"]})
    return reader.load_table("sales.eu.orders")


def raw(url: str, method: str = "GET", token: str | None = None) -> tuple[int, bytes, dict]:
    request = urllib.request.Request(url, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def test_the_shell_and_its_files_need_no_token_and_carry_the_security_headers(ui: UiCatalog):
    status, body, headers = raw(f"{ui.url}/ui/")
    assert status == 200 and b'<script src="/ui/static/app.js" defer></script>' in body
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    # No inline script and no inline handler in the shell (the CSP would block them anyway).
    assert b"<script>" not in body
    assert re.search(rb"\son[a-z]+\s*=", body) is None
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
        status, body, headers = raw(f"{ui.url}/ui/static/{name}")
        assert status == 200 and headers["content-type"].startswith(kind) and body
    js = raw(f"{ui.url}/ui/static/app.js")[1]
    for sink in (b"innerHTML", b"outerHTML", b"insertAdjacentHTML", b"document.write", b"eval("):
        assert sink not in js, sink
    assert raw(f"{ui.url}/ui")[0] == 200  # redirected to /ui/
    assert raw(f"{ui.url}/ui/static/../app.py")[0] == 404
    assert raw(f"{ui.url}/ui/static/index.html")[0] == 404


def test_every_view_needs_a_token_and_the_server_view_an_admin(ui: UiCatalog):
    assert ui.get("me", None)[0] == 401
    assert ui.get("namespace", "not-a-token")[0] == 401
    status, me, headers = ui.get("me", ui.tokens["rita"])
    assert (status, me["name"], me["role"]) == (200, "rita", "reader")
    assert headers["cache-control"] == "no-store"
    assert "content-security-policy" in headers
    status, body, _ = ui.get("server", ui.tokens["rita"])
    assert status == 403 and "admin" in body["error"]
    status, body, _ = ui.get("server", ui.tokens["ada"])
    assert status == 200
    # Names and roles, never a token or its digest.
    assert {(p["name"], p["role"]) for p in body["principals"]} == {
        ("ada", "admin"),
        ("etl", "writer"),
        ("rita", "reader"),
    }
    text = json.dumps(body)
    assert "sha256" not in text and not any(t in text for t in ui.tokens.values())


def test_a_token_in_the_url_is_not_accepted_and_nothing_changes_through_ui(ui: UiCatalog):
    token = ui.tokens["ada"]
    assert raw(f"{ui.url}/ui/api/me?token={token}")[0] == 401
    assert raw(f"{ui.url}/ui/api/me?access_token={token}")[0] == 401
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        status, _, headers = raw(f"{ui.url}/ui/api/table?ns=sales&ns=eu&t=orders", method, token)
        assert status == 405 and headers["allow"] == "GET, HEAD"
    # The request log names paths, never tokens.
    assert token not in ui.server.log_text()


def test_refusals_are_in_the_audit_log_an_admin_sees(ui: UiCatalog):
    reader = dl.connect_catalog({"type": "rest", "uri": ui.url, "token": ui.tokens["rita"]})
    with pytest.raises(dl.exceptions.DeltaError):
        reader.create_namespace("forbidden")
    assert ui.get("server", ui.tokens["rita"])[0] == 403

    def refusals() -> list[dict]:
        return ui.get("server", ui.tokens["ada"])[1]["refusals"]

    from tests.test_catalog_tokens import eventually

    eventually(lambda: len([r for r in refusals() if r["principal"] == "rita"]) >= 2)
    mine = [r for r in refusals() if r["principal"] == "rita"]
    assert {r["status"] for r in mine} == {403}
    assert any(r["path"] == "/ui/api/server" for r in mine)
    assert any("forbidden" in r["path"] or "namespace" in r["path"] for r in mine)
    text = json.dumps(mine)
    assert not any(t in text for t in ui.tokens.values())


def test_namespaces_tables_and_search(ui: UiCatalog):
    token = ui.tokens["rita"]
    status, root, _ = ui.get("namespace", token)
    assert status == 200 and root["namespaces"] == ["marketing", "sales"]
    status, sales, _ = ui.get("namespace", token, ns=["sales"])
    assert sales["namespaces"] == ["eu"] and sales["properties"] == {"owner note": SCRIPT}
    assert {t["name"] for t in sales["tables"]} == {SCRIPT_TABLE, IMG}
    assert all(t["catalog_managed"] and t["format"] == "delta" for t in sales["tables"])
    eu = ui.get("namespace", token, ns=["sales", "eu"])[1]
    (orders,) = eu["tables"]
    assert orders["name"] == "orders" and orders["updated_by"] == "ada"
    summary = ui.get("summary", token, **ORDERS)[1]
    files = orders_table(ui).get_add_actions()
    assert summary["files"] == files.num_rows
    assert summary["bytes"] == sum(files.column("size").to_pylist())
    found = ui.get("search", token, q="ORD")[1]
    assert [(t["namespace"], t["name"]) for t in found["tables"]] == [(["sales", "eu"], "orders")]
    found = ui.get("search", token, q="<script>")[1]
    assert [t["name"] for t in found["tables"]] == [SCRIPT_TABLE]
    assert ui.get("namespace", token, ns=["nowhere"])[0] == 404
    assert ui.get("table", token, ns=["sales"], t="nope")[0] == 404
    assert ui.get("table", token, ns=["sales"])[0] == 400
    assert ui.get("history", token, **ORDERS, limit="x")[0] == 400
    assert ui.get("namespace", token, ns=["a"] * 40)[0] == 400


def test_a_table_its_columns_protocol_and_properties(ui: UiCatalog):
    status, t, _ = ui.get("table", ui.tokens["rita"], **ORDERS)
    assert status == 200 and t["catalog_managed"]
    local = orders_table(ui)
    assert t["version"] == local.version()
    assert t["partition_columns"] == ["region"]
    by_path = {".".join(c["path"]): c for c in t["columns"]}
    assert list(by_path) == ["id", "region", "amount", "customer", "customer.name", "customer.tier"]
    assert by_path["id"]["comment"] == COMMENT and not by_path["id"]["nullable"]
    assert by_path["customer"]["type"] == "struct<name:string,tier:int>"
    assert by_path["id"]["type"] == "bigint"
    assert by_path["customer.tier"]["depth"] == 1
    assert t["properties"]["team"] == SCRIPT and t["properties"]["note"] == IMG
    assert t["description"] == f"Orders {SCRIPT}"
    assert "deletionVectors" in t["protocol"]["reader_features"]
    assert "catalogManaged" in t["protocol"]["writer_features"]
    assert t["summary"]["files"] == local.get_add_actions().num_rows


def test_history_names_each_versions_principal_and_diffs_two_versions(ui: UiCatalog):
    h = ui.get("history", ui.tokens["rita"], **ORDERS, limit=100)[1]["history"]
    local = orders_table(ui)
    assert [e["version"] for e in h] == [e["version"] for e in local.history()]
    by_op: dict[str, set] = {}
    for e in h:
        by_op.setdefault(e["operation"], set()).add(e["principal"])
    assert by_op["WRITE"] == {"etl"} and by_op["DELETE"] == {"etl"}
    assert by_op["CREATE TABLE"] == {"ada"}
    delete = next(e for e in h if e["operation"] == "DELETE")
    assert int(delete["metrics"]["numDeletedRows"]) > 0
    latest = h[0]["version"]
    d = ui.get("diff", ui.tokens["rita"], **ORDERS, **{"from": 0, "to": latest})[1]
    assert {(c["key"], c["change"]) for c in d["properties"]} == {("team", "added")}
    (column,) = d["columns"]
    assert column["key"] == "id" and column["change"] == "changed"
    assert column["new"]["comment"] == COMMENT and column["old"]["comment"] is None
    assert {c["key"] for c in d["other"]} == {"description"}
    assert ui.get("diff", ui.tokens["rita"], **ORDERS, **{"from": 0, "to": 999})[0] == 404


def test_health_figures_match_the_log(ui: UiCatalog):
    h = ui.get("health", ui.tokens["rita"], **ORDERS)[1]
    local = orders_table(ui)
    adds = local.get_add_actions()
    assert h["files"] == adds.num_rows == sum(h["histogram"]["counts"])
    assert h["bytes"] == sum(adds.column("size").to_pylist()) == sum(h["histogram"]["bytes"])
    assert h["small_files"] == h["files"]  # a few KiB each against 100 MiB
    assert {tuple(p["values"]) for p in h["partitions"]["top"]} == {
        ("north",),
        ("south",),
        ("east",),
    }
    assert sum(p["files"] for p in h["partitions"]["top"]) == h["files"]
    dv = h["deletion_vectors"]
    assert dv["files"] >= 1 and dv["deleted_rows"] > 0 and 0 < dv["share"] < 1
    versions = h["versions"]
    assert versions[-1]["version"] == local.version() and versions[-1]["bytes"] == h["bytes"]
    assert versions[0]["version"] == 0 and versions[0]["files"] == 0
    problems = {a["problem"] for a in h["advice"]}
    assert "small files" in problems
    command = next(a for a in h["advice"] if a["problem"] == "small files")["command"]
    assert command == "deltalog optimize --catalog CATALOG sales.eu.orders"


def test_figures_asked_for_at_once_are_computed_once():
    import threading
    import time

    from deltalog.server.ui.snapshots import FigureCache

    cache, calls = FigureCache(capacity=2), []

    def compute() -> int:
        calls.append(1)
        time.sleep(0.2)
        return 42

    answers: list[int] = []
    threads = [
        threading.Thread(target=lambda: answers.append(cache.get(("k",), compute)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [42] * 4 and len(calls) == 1

    def fails() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError):
        cache.get(("bad",), fails)
    assert cache.get(("bad",), lambda: 7) == 7  # a failure is not kept
    cache.get(("a",), lambda: 1)
    cache.get(("b",), lambda: 2)
    assert cache.get(("k",), lambda: 0) == 0  # evicted (capacity 2), computed again


def test_an_external_tables_column_mapping_identity_and_generated_columns(
    ui: UiCatalog, tmp_path: Path
):
    import pyarrow as pa

    location = tmp_path / "features"
    identity = {"delta.identity.start": "100", "delta.identity.step": "10"}
    identity["delta.identity.allowExplicitInsert"] = "false"
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata=identity),
            pa.field("v", pa.int64()),
            pa.field("twice", pa.int64(), metadata={"delta.generationExpression": "v * 2"}),
        ]
    )
    dl.DeltaTable.create(location, schema, configuration={"delta.columnMapping.mode": "name"})
    dl.write_table(location, pa.table({"v": pa.array([1, 2], pa.int64())}), mode="append")
    admin = dl.connect_catalog({"type": "rest", "uri": ui.url, "token": ui.tokens["ada"]})
    admin.register_table("marketing.features", str(location))
    token = ui.tokens["rita"]
    row = next(
        t
        for t in ui.get("namespace", token, ns=["marketing"])[1]["tables"]
        if t["name"] == "features"
    )
    assert not row["catalog_managed"] and row["latest_version"] is None  # known from its log
    t = ui.get("table", token, ns=["marketing"], t="features")[1]
    assert t["column_mapping"] == "name" and t["version"] == 1
    cols = {c["path"][0]: c for c in t["columns"]}
    assert cols["id"]["identity"] == {
        "start": 100,
        "step": 10,
        "allow_explicit_insert": False,
        "high_water_mark": 110,
    }
    assert cols["twice"]["generated"] == "v * 2"
    assert all(c["physical_name"] and c["column_id"] for c in cols.values())
    history = ui.get("history", token, ns=["marketing"], t="features")[1]["history"]
    assert [e["principal"] for e in history] == [None, None]  # not ratified by the catalog
    health = ui.get("health", token, ns=["marketing"], t="features")[1]
    assert health["files"] == 1 and health["versions"][-1]["files"] == 1
    # A new commit behind the catalog's back shows on the next look (the log is listed).
    dl.write_table(location, pa.table({"v": pa.array([3], pa.int64())}), mode="append")
    assert ui.get("table", token, ns=["marketing"], t="features")[1]["version"] == 2


def test_conflicts_are_refusals_too(ui: UiCatalog):
    admin = dl.connect_catalog({"type": "rest", "uri": ui.url, "token": ui.tokens["ada"]})
    with pytest.raises(dl.exceptions.DeltaError):
        admin.create_namespace("marketing")  # exists: 409

    from tests.test_catalog_tokens import eventually

    def conflicts() -> list[dict]:
        refusals = ui.get("server", ui.tokens["ada"])[1]["refusals"]
        return [r for r in refusals if r["status"] == 409 and r["principal"] == "ada"]

    eventually(lambda: len(conflicts()) >= 1)
    assert "marketing" in conflicts()[0]["path"] + (conflicts()[0]["message"] or "")


def test_commits_the_catalog_still_holds_are_listed(ui: UiCatalog):
    import pyarrow as pa

    admin = dl.connect_catalog({"type": "rest", "uri": ui.url, "token": ui.tokens["ada"]})
    admin.write_table("marketing.held", pa.table({"x": pa.array([1], pa.int64())}))
    writer = dl.connect_catalog({"type": "rest", "uri": ui.url, "token": ui.tokens["etl"]})
    t = writer.load_table("marketing.held")
    # A writer that never reports what it published: the catalog keeps holding the commit.
    t._catalog_client.published = lambda version: None  # type: ignore[union-attr]
    dl.write_table(t, pa.table({"x": pa.array([2], pa.int64())}), mode="append")
    detail = ui.get("table", ui.tokens["rita"], ns=["marketing"], t="held")[1]
    held = {c["version"]: c for c in detail["unpublished"]}
    assert 1 in held and held[1]["timestamp"] is not None
    assert held[1]["inline"] or held[1]["staged_path"]


def test_the_pages_can_be_turned_off(tmp_path: Path):
    from tests.catalog_server import running

    with running(tmp_path, args=["--no-ui"]) as server:
        assert raw(f"{server.url}/ui/")[0] == 406  # an unknown route, as any other
        assert raw(f"{server.url}/ui/api/me")[0] == 406
        assert raw(f"{server.url}/v1/namespace/%24/list")[0] == 200


def test_the_kept_tables_are_bounded_by_their_files(tmp_path: Path):
    from types import SimpleNamespace

    import pyarrow as pa

    from deltalog.catalog.stores.records import TableRecord
    from deltalog.server.ui.snapshots import SnapshotCache

    records = []
    for i in range(3):
        location = tmp_path / f"t{i}"
        for _ in range(2):
            dl.write_table(location, pa.table({"x": pa.array([i], pa.int64())}), mode="append")
        records.append(TableRecord(i, 0, f"t{i}", str(location), False, -1))
    service = SimpleNamespace(open_table=lambda record: dl.DeltaTable(record.location))
    cache = SnapshotCache(service, capacity=8, max_files=4)  # type: ignore[arg-type]
    for record in records:
        assert cache.latest(record).version() == 1
    assert [key[0] for key in cache._entries] == [1, 2]  # 6 files > 4: the oldest let go
    big = SnapshotCache(service, capacity=8, max_files=1)  # type: ignore[arg-type]
    assert big.latest(records[0]).version() == 1  # the one in use always stays
    assert len(big._entries) == 1
