"""Running deltalog's REST catalog server: authentication and governance (bearer tokens with
roles; a commit that changes a table's protocol or metadata needs an admin, decided from the
commit's content), bad input and a hypothesis fuzz over the routes (never a 5xx), the cap on
unpublished commits (429), many writers through two servers sharing one PostgreSQL, a graceful
shutdown under load, ``/healthz`` and the request log."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import urllib3
from hypothesis import HealthCheck, given, settings, strategies as st

import catalog_server
import deltalog as dl
import processes
from deltalog.server.auth import add_token

JSON = {"Content-Type": "application/json"}


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


@pytest.fixture
def server(tmp_path: Path) -> Any:
    with catalog_server.running(tmp_path / "server") as running:
        yield running


# -- authentication and governance ----------------------------------------------------------


def test_roles_and_governance(tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens.json"
    admin = add_token(tokens_file, "ops", "admin")
    writer = add_token(tokens_file, "etl", "writer")
    reader = add_token(tokens_file, "bi", "reader")
    stored = tokens_file.read_text()
    assert all(token not in stored for token in (admin, writer, reader))  # hashed
    with catalog_server.running(tmp_path / "server", tokens=tokens_file) as server:

        def connect(token: str | None) -> Any:
            config = {"type": "rest", "uri": server.url}
            return dl.connect_catalog({**config, "token": token} if token else config)

        as_admin, as_writer, as_reader = connect(admin), connect(writer), connect(reader)
        as_admin.create_namespace("db")
        as_writer.write_table("db.t", pa.table({"id": [1], "v": ["a"]}))  # writers create
        # Data changes: a writer may.
        t = as_writer.load_table("db.t")
        dl.write_table(t, pa.table({"id": [2], "v": ["b"]}), mode="append")
        t.delete("id = 1")
        assert as_reader.load_table("db.t").version() == 2
        # Schema and property changes need an admin: 403, and nothing changes.
        with pytest.raises(dl.CatalogError, match="needs the admin role"):
            as_writer.load_table("db.t").alter.add_columns(pa.schema({"x": pa.int64()}))
        with pytest.raises(dl.CatalogError, match=r"changes the table's (protocol and )?metadata"):
            as_writer.load_table("db.t").alter.set_properties({"delta.appendOnly": "true"})
        with pytest.raises(dl.CatalogError, match="needs the admin role"):
            dl.write_table(
                as_writer.load_table("db.t"),
                pa.table({"id": [3], "v": ["c"], "w": [1.0]}),
                mode="append",
                schema_mode="merge",
            )
        after = as_reader.load_table("db.t")
        assert after.version() == 2 and after.schema().names == ["id", "v"]
        assert "delta.appendOnly" not in after.metadata().configuration
        # An admin's change lands.
        as_admin.load_table("db.t").alter.add_columns(pa.schema({"x": pa.int64()}))
        assert as_reader.load_table("db.t").schema().names == ["id", "v", "x"]
        # A writer's commit after it, carrying data only, is fine again.
        dl.write_table(
            as_writer.load_table("db.t"),
            pa.table({"id": [4], "v": ["d"], "x": [1]}),
            mode="append",
        )
        # A reader cannot commit, create or declare; nobody without a token gets in.
        # (A commit's catalog error reaches the writer as the client raised it.)
        with pytest.raises(dl.CatalogPermissionError, match=r"\(reader\).*HTTP 403"):
            dl.write_table(as_reader.load_table("db.t"), pa.table({"id": [5]}), mode="append")
        with pytest.raises(dl.CatalogPermissionError):
            as_reader.create_namespace("x")
        # No valid credentials is 401, a type of its own (403 is CatalogPermissionError).
        with pytest.raises(dl.CatalogAuthenticationError) as anonymous:
            connect(None).list_namespaces()
        assert anonymous.value.unauthenticated
        assert not isinstance(anonymous.value, dl.CatalogPermissionError)
        with pytest.raises(dl.CatalogAuthenticationError) as wrong:
            connect("dlt_not-a-token").list_namespaces()
        assert wrong.value.unauthenticated
        # Namespace and table lifecycle is an admin's.
        with pytest.raises(dl.CatalogPermissionError):
            as_writer.drop_table("db.t")
        with pytest.raises(dl.CatalogPermissionError):
            as_writer.create_namespace("other")
        assert ids(as_reader.load_table("db.t")) == [2, 4]
        log = server.log_text()
    assert all(token not in log for token in (admin, writer, reader))
    assert '"status": 403' in log and '"status": 401' in log and '"principal": "etl"' in log


def test_governance_reads_the_commit_not_the_client(tmp_path: Path) -> None:
    """Commits sent by hand by a writer: a staged commit whose content changes the metadata is
    refused whatever the request says; one that repeats the current metadata unchanged is a
    data change."""
    tokens_file = tmp_path / "tokens.json"
    admin = add_token(tokens_file, "ops", "admin")
    writer = add_token(tokens_file, "etl", "writer")
    with catalog_server.running(tmp_path / "server", tokens=tokens_file) as server:
        cat = dl.connect_catalog({"type": "rest", "uri": server.url, "token": admin})
        cat.write_table("t", rows(1))
        described = cat.describe_table("t")
        http = urllib3.PoolManager()
        headers = {**JSON, "Authorization": f"Bearer {writer}"}

        def propose(version: int, actions: list[dict[str, Any]], staged: bool) -> Any:
            info = {"commitInfo": {"inCommitTimestamp": int(time.time() * 1000) + 10}}
            info["commitInfo"]["txnId"] = str(uuid.uuid4())
            content = "\n".join(json.dumps(a) for a in [info, *actions]) + "\n"
            body: dict[str, Any] = {"version": version}
            if staged:
                name = f"{version:020}.{uuid.uuid4()}.json"
                staged_dir = Path(described.location) / "_delta_log" / "_staged_commits"
                staged_dir.mkdir(exist_ok=True)
                (staged_dir / name).write_text(content)
                body["manifest_path"] = f"_delta_log/_staged_commits/{name}"
                # A client's claim is not what decides.
                body["metadata"] = {"changes": "data only"}
            else:
                body["manifest_path"] = f"_delta_log/{version:020}.json"
                body["metadata"] = {"delta.inlineCommit": content}
            return http.request(
                "POST",
                f"{server.url}/v1/table/t/version/create",
                body=json.dumps(body).encode(),
                headers=headers,
            )

        changed = dict(described.metadata or {})
        changed["configuration"] = {**changed["configuration"], "delta.appendOnly": "true"}
        refused = propose(1, [{"metaData": changed}], staged=True)
        assert refused.status == 403 and json.loads(refused.data)["code"] == 15
        same = propose(1, [{"metaData": described.metadata}], staged=False)
        assert same.status == 200, same.data
        assert cat.describe_table("t").latest_version == 1
        protocol = dict(described.protocol or {})
        protocol["writerFeatures"] = [*protocol["writerFeatures"], "changeDataFeed"]
        refused = propose(2, [{"protocol": protocol}], staged=False)
        assert refused.status == 403
        assert cat.describe_table("t").latest_version == 1


# -- bad input ---------------------------------------------------------------------------------


def test_bad_input_gets_4xx_with_the_spec_error_body(server: Any) -> None:
    http = urllib3.PoolManager()
    url = server.url

    def send(method: str, path: str, body: bytes | None = None, **headers: str) -> Any:
        return http.request(method, url + path, body=body, headers={**JSON, **headers})

    http.request("POST", url + "/v1/namespace/ok/create", body=b"{}", headers=JSON)
    cases = [
        ("POST", "/v1/namespace/ok/describe", b"{", 400),  # malformed JSON
        ("POST", "/v1/namespace/ok/describe", b"[1, 2]", 400),  # not an object
        ("POST", "/v1/namespace/ok/describe", b'{"unknown": true}', 400),
        ("POST", "/v1/namespace/ok/describe", b'{"id": "ok"}', 400),  # wrong type
        ("POST", "/v1/namespace/ok/create", b'{"properties": {"a": 1}}', 400),
        ("POST", "/v1/namespace/a$b/create?delimiter=.", b"{}", 400),  # a name with $
        ("POST", "/v1/namespace/a%2Fb/create", b"{}", 400),  # a name with /
        ("POST", "/v1/namespace/ok%24../create", b"{}", 400),  # ..
        ("POST", "/v1/namespace/ok%24%24x/create", b"{}", 400),  # an empty name
        ("POST", "/v1/namespace/%FF%FE/create", b"{}", 400),  # not UTF-8
        ("POST", "/v1/namespace/ok%00x/create", b"{}", 400),  # a control character
        ("POST", "/v1/namespace/" + "x" * 300 + "/create", b"{}", 400),
        ("GET", "/v1/namespace/%24/list?limit=99999999999999999999", None, 400),
        ("GET", "/v1/namespace/%24/list?limit=-1", None, 400),
        ("GET", "/v1/namespace/%24/list?limit=0", None, 400),
        ("POST", "/v1/table/ok%24t/version/create", b'{"version": 1}', 400),
        ("POST", "/v1/table/ok%24t/version/create", b'{"version": -1, "manifest_path": "x"}', 400),
        ("POST", "/v1/namespace/ok/describe", b"{" + b" " * (5 * 1024 * 1024) + b"}", 413),
        ("GET", "/v1/namespace/ok/create", None, 406),  # wrong method
        ("DELETE", "/v1/table", None, 406),
        ("POST", "/v1/table/ok%24t/declare", b'{"properties": {"format": "x"}}', 400),
    ]
    for method, path, body, status in cases:
        answer = send(method, path, body)
        assert answer.status == status, (method, path, answer.status, answer.data[:200])
        error = json.loads(answer.data)
        assert isinstance(error["code"], int) and error["error"], error
        assert error["instance"].startswith("/v1/"), error
    # A staged commit outside _staged_commits, or missing, is refused.
    http.request("POST", url + "/v1/table/ok%24t/declare", body=b"{}", headers=JSON)
    for manifest in ("../../etc/passwd", "_delta_log/_staged_commits/../../x.json"):
        body = json.dumps({"version": 0, "manifest_path": manifest}).encode()
        assert send("POST", "/v1/table/ok%24t/version/create", body).status == 400
    body = json.dumps(
        {"version": 0, "manifest_path": f"_delta_log/_staged_commits/{0:020}.{uuid.uuid4()}.json"}
    ).encode()
    assert send("POST", "/v1/table/ok%24t/version/create", body).status == 400
    # Version 0 without a protocol and metadata creates nothing.
    inline = json.dumps({"commitInfo": {"inCommitTimestamp": 1}})
    body = json.dumps(
        {
            "version": 0,
            "manifest_path": f"_delta_log/{0:020}.json",
            "metadata": {"delta.inlineCommit": inline},
        }
    ).encode()
    assert send("POST", "/v1/table/ok%24t/version/create", body).status == 400
    assert send("GET", "/healthz").status == 200


_ROUTES = [
    ("POST", "/v1/namespace/{id}/create"),
    ("GET", "/v1/namespace/{id}/list"),
    ("POST", "/v1/namespace/{id}/describe"),
    ("POST", "/v1/namespace/{id}/drop"),
    ("POST", "/v1/namespace/{id}/exists"),
    ("GET", "/v1/namespace/{id}/table/list"),
    ("GET", "/v1/table"),
    ("POST", "/v1/table/{id}/register"),
    ("POST", "/v1/table/{id}/describe"),
    ("POST", "/v1/table/{id}/exists"),
    ("POST", "/v1/table/{id}/drop"),
    ("POST", "/v1/table/{id}/deregister"),
    ("POST", "/v1/table/{id}/declare"),
    ("POST", "/v1/table/{id}/create"),
    ("POST", "/v1/table/{id}/version/list"),
    ("POST", "/v1/table/{id}/version/create"),
    ("POST", "/v1/table/{id}/version/describe"),
    ("POST", "/v1/table/{id}/version/delete"),
    ("POST", "/v1/table/version/batch-create"),
]

_names = st.one_of(
    st.sampled_from(["db", "t", "db$t", "db$t$u", "$", "", "..", "a/b"]),
    st.text(min_size=0, max_size=12),
)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)
_fields = st.sampled_from(
    [
        "id",
        "mode",
        "properties",
        "behavior",
        "location",
        "version",
        "manifest_path",
        "metadata",
        "ranges",
        "entries",
        "page_token",
        "limit",
        "with_table_uri",
        "identity",
        "context",
    ]
)
_bodies = st.one_of(
    st.dictionaries(_fields, _json_values, max_size=5).map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=64),
    st.just(b""),
)
_queries = st.dictionaries(
    st.sampled_from(["delimiter", "limit", "page_token", "include_declared", "descending", "mode"]),
    st.text(max_size=8),
    max_size=3,
)


def test_fuzzing_the_routes_finds_no_server_error(server: Any) -> None:
    """2,100 random requests (hypothesis, derandomized) over every route, with random
    identifiers, query parameters and bodies: every answer is below 500, and every error has
    the spec's body."""
    http = urllib3.PoolManager(maxsize=2)
    for setup in ("/v1/namespace/db/create", "/v1/table/db%24t/declare"):
        http.request("POST", server.url + setup, body=b"{}", headers=JSON)
    seen = []

    @settings(
        max_examples=2100,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(
        route=st.sampled_from(_ROUTES),
        method=st.sampled_from(["GET", "POST", "POST", "POST", "PUT"]),
        names=st.lists(_names, max_size=3),
        query=_queries,
        body=_bodies,
    )
    def request(
        route: tuple[str, str], method: str, names: list[str], query: dict[str, str], body: bytes
    ) -> None:
        identifier = urllib.parse.quote("$".join(names) if names else "$", safe="")
        path = route[1].replace("{id}", identifier)
        if query:
            path += "?" + urllib.parse.urlencode(query)
        answer = http.request(method, server.url + path, body=body or None, headers=JSON)
        seen.append(answer.status)
        assert answer.status < 500, (method, path, body, answer.data)
        if answer.status >= 400:
            error = json.loads(answer.data)
            assert isinstance(error["code"], int), error

    request()
    assert len(seen) >= 2000
    assert http.request("GET", server.url + "/healthz").status == 200


# -- limits -----------------------------------------------------------------------------------


def test_unpublished_commits_are_capped_with_429(tmp_path: Path) -> None:
    with catalog_server.running(tmp_path / "server", args=["--max-unpublished", "2"]) as server:
        cat = dl.connect_catalog({"type": "rest", "uri": server.url})
        cat.write_table("t", rows(0))
        location = cat.describe_table("t").location
        http = urllib3.PoolManager()

        def propose(version: int) -> Any:
            info = {
                "commitInfo": {
                    "inCommitTimestamp": int(time.time() * 1000) + 10_000 * version,
                    "txnId": str(uuid.uuid4()),
                }
            }
            body = {
                "version": version,
                "manifest_path": f"_delta_log/{version:020}.json",
                "metadata": {"delta.inlineCommit": json.dumps(info) + "\n"},
            }
            return http.request(
                "POST",
                f"{server.url}/v1/table/t/version/create",
                body=json.dumps(body).encode(),
                headers=JSON,
            )

        # Ratified, never published (a writer that stops after ratifying).
        assert propose(1).status == 200 and propose(2).status == 200
        throttled = propose(3)
        assert throttled.status == 429 and json.loads(throttled.data)["code"] == 21
        # A deltalog writer publishes what is held when the cap answers, then commits.
        t = cat.load_table("t")
        dl.write_table(t, rows(3), mode="append")
        assert cat.load_table("t").version() == 3
        log = Path(location) / "_delta_log"
        assert all((log / f"{v:020}.json").exists() for v in range(4))
        assert ids(cat.load_table("t")) == [0, 3]


# -- many writers ------------------------------------------------------------------------------


def _writer(urls: list[str], k: int, n: int, ready: Any, go: Any) -> None:
    cats = [dl.connect_catalog({"type": "rest", "uri": url}) for url in urls]
    ready.set()
    go.wait(60)
    for i in range(n):
        cat = cats[(k + i) % len(cats)]
        dl.write_table(cat.load_table("shared"), rows(k * 1000 + i), mode="append")


def _eight_writers(urls: list[str], location: Path) -> None:
    procs, per = 8, 50
    cat = dl.connect_catalog({"type": "rest", "uri": urls[0]})
    cat.create_table("shared", pa.schema({"id": pa.int64()}))
    ctx = processes.context()
    go = ctx.Event()
    readies = [ctx.Event() for _ in range(procs)]
    workers = [
        ctx.Process(target=_writer, args=(urls, k, per, readies[k], go)) for k in range(procs)
    ]
    for w in workers:
        w.start()
    for r in readies:
        assert r.wait(120)
    go.set()
    for w in workers:
        w.join(600)
    assert [w.exitcode for w in workers] == [0] * procs
    t = cat.load_table("shared")
    assert t.version() == procs * per
    assert ids(t) == sorted(k * 1000 + i for k in range(procs) for i in range(per))
    log = location / "_delta_log"
    versions = sorted(int(p.name[:20]) for p in log.glob("*.json") if p.name[20:] == ".json")
    assert versions == list(range(procs * per + 1))
    first_lines = [
        json.loads((log / f"{v:020}.json").read_text().splitlines()[0]) for v in versions
    ]
    assert len({line["commitInfo"]["txnId"] for line in first_lines}) == len(versions)
    stamps = [line["commitInfo"]["inCommitTimestamp"] for line in first_lines]
    assert stamps == sorted(stamps)  # published in order
    assert cat.catalog_client("shared").get_ratified_commits().commits == []


def test_two_servers_share_one_postgresql(postgres_uri: str, tmp_path: Path) -> None:
    """8 processes x 50 appends through two server processes on one PostgreSQL database, each
    writer alternating between them: versions 1..400, each ratified once, published in order,
    no row lost or doubled. (Through one server on SQLite: test_catalog_stores.py,
    ``test_processes_commit_through_one_database[rest]``.)"""
    warehouse = str(tmp_path / "wh")
    with (
        catalog_server.running(tmp_path / "a", db=postgres_uri, warehouse=warehouse) as a,
        catalog_server.running(tmp_path / "b", db=postgres_uri, warehouse=warehouse) as b,
    ):
        _eight_writers([a.url, b.url], tmp_path / "wh" / "shared")


def test_workers_serve_one_catalog(tmp_path: Path) -> None:
    with catalog_server.running(tmp_path / "server", args=["--workers", "2"]) as server:
        cat = dl.connect_catalog({"type": "rest", "uri": server.url})
        cat.write_table("t", rows(1))
        for i in range(10):
            dl.write_table(cat.load_table("t"), rows(i + 2), mode="append")
        assert ids(cat.load_table("t")) == list(range(1, 12))


def test_every_worker_logs_its_requests(tmp_path: Path) -> None:
    """With ``--workers 2`` each worker process writes the JSON request lines on stderr, as
    one worker does (worker processes start with logging unconfigured)."""
    with catalog_server.running(tmp_path / "server", args=["--workers", "2"]) as server:
        http = urllib3.PoolManager()
        for i in range(20):  # a new connection each: the workers take turns accepting them
            answer = http.request(
                "POST",
                f"{server.url}/v1/namespace/n{i}/create",
                body=b"{}",
                headers={**JSON, "Connection": "close"},
            )
            assert answer.status == 200
    lines = [
        json.loads(line)
        for line in server.log_text().splitlines()
        if line.startswith("{") and '"path"' in line
    ]
    assert sorted(r["path"] for r in lines if r["path"].endswith("/create")) == sorted(
        f"/v1/namespace/n{i}/create" for i in range(20)
    ), server.log_text()[-2000:]


# -- operations --------------------------------------------------------------------------------


def test_graceful_shutdown_finishes_ratifications_in_flight(tmp_path: Path) -> None:
    """SIGTERM while four threads commit as fast as they can: the server exits cleanly, and
    every commit a writer was told is ratified is in the table, once (read through a new
    server on the same database)."""
    server = catalog_server.start(tmp_path / "server")
    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.write_table("t", rows(-1))
    landed: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()

    def commit(k: int) -> None:
        mine = dl.connect_catalog({"type": "rest", "uri": server.url, "timeout": "10"})
        i = 0
        while not stop.is_set():
            value = k * 100_000 + i
            i += 1
            try:
                dl.write_table(mine.load_table("t"), rows(value), mode="append")
            except dl.DeltaError:
                continue  # refused or lost: it may or may not have landed
            with lock:
                landed.append(value)

    threads = [threading.Thread(target=commit, args=(k,), daemon=True) for k in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.5)
        exit_code = server.stop()
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert exit_code == 0, server.log_text()[-2000:]
    assert len(landed) > 10
    with catalog_server.running(tmp_path / "server") as again:
        t = dl.connect_catalog({"type": "rest", "uri": again.url}).load_table("t")
        got = ids(t)
    assert len(got) == len(set(got)) == t.version() + 1
    assert set(landed) <= set(got)
    assert "Shutting down" in server.log_text()


def test_healthz_and_the_request_log(server: Any) -> None:
    http = urllib3.PoolManager()
    assert json.loads(http.request("GET", server.url + "/healthz").data) == {"status": "ok"}
    http.request("POST", server.url + "/v1/namespace/x/create", body=b"{}", headers=JSON)
    http.request("POST", server.url + "/v1/namespace/x/create", body=b"{}", headers=JSON)
    lines = [
        json.loads(line)
        for line in server.log_text().splitlines()
        if line.startswith("{") and '"path"' in line
    ]
    assert [(r["path"], r["status"], r["code"]) for r in lines[-2:]] == [
        ("/v1/namespace/x/create", 200, None),
        ("/v1/namespace/x/create", 409, 2),
    ]
    assert all(r["ms"] >= 0 and r["principal"] == "anonymous" for r in lines)


def test_a_lost_answer_never_commits_twice(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server ratifies a commit but its answer is lost (the connection drops, or a timeout
    fires while the server is slow): the client asks which commit the server holds for the
    version instead of reporting a failure, or proposing the commit again (which would lose
    to itself, rebase and land twice)."""
    from lance_namespace_urllib3_client import TableApi

    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.write_table("t", rows(0))
    real = TableApi.create_table_version
    lost = {"after": 0, "before": 0}

    def answer_lost_after(self: Any, *args: Any, **kwargs: Any) -> Any:
        if lost["after"]:
            lost["after"] -= 1
            real(self, *args, **kwargs)  # ratified...
            raise urllib3.exceptions.ProtocolError("connection reset")  # ...answer lost
        if lost["before"]:
            lost["before"] -= 1
            raise urllib3.exceptions.ProtocolError("connection refused")  # never arrived
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TableApi, "create_table_version", answer_lost_after)
    t = cat.load_table("t")
    lost["after"] = 1
    dl.write_table(t, rows(1), mode="append")
    lost["before"] = 1
    dl.write_table(t, rows(2), mode="append")
    monkeypatch.setattr(TableApi, "create_table_version", real)
    t = cat.load_table("t")
    assert t.version() == 2 and ids(t) == [0, 1, 2]


def test_the_server_loads_the_lance_models_without_the_client_apis() -> None:
    """``deltalog.server.lazy_models``: the server imports the generated package's models and
    not its nine API modules (1.2 s of every server start); a REST client in the same process
    still gets the whole package, with the same model classes."""
    import subprocess
    import sys

    code = """
import sys
import deltalog.server.app
package = sys.modules["lance_namespace_urllib3_client"]
apis = [m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api.")]
assert apis == [], apis
assert "ApiClient" not in vars(package)
from lance_namespace_urllib3_client.models import CreateTableRequest
from deltalog.catalog.clients.rest.client import RestCatalog
from lance_namespace_urllib3_client import ApiClient, TableApi, models
assert models.CreateTableRequest is CreateTableRequest
assert package.ApiClient is ApiClient and "TableApi" in vars(package)
try:
    package.NoSuchName
except AttributeError:
    pass
else:
    raise AssertionError("a missing name must raise AttributeError")
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
