"""deltalog's REST catalog server under hostile or careless clients (issue #30, section 4), each
against a real server process on loopback (tests/catalog_server.py): 1,000 idle connections
with ``/healthz`` still answering, the connection cap, header / body / idle timeouts, the
header size cap, the cap on requests in flight, malformed bodies on every route (4xx, never
5xx), Arrow bodies that decode to far more than they weigh (413 before they are decoded),
and no password or raw database error in what the server prints or answers.

The new modules are imported inside the tests, so that each test also runs (and fails) on the
code before them."""

from __future__ import annotations

import io
import json
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import urllib3
from hypothesis import HealthCheck, given, settings, strategies as st

import catalog_server

JSON = {"Content-Type": "application/json"}


def _address(server: catalog_server.CatalogServer) -> tuple[str, int]:
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def _closed_by_server(sock: socket.socket, within: float) -> bytes | None:
    """What the server sent before it closed ``sock`` within ``within`` seconds; ``None`` if it
    kept it open."""
    sock.settimeout(within)
    received = b""
    deadline = time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                return received
            received += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        return received
    return None


def _timed_get(url: str, timeout: float = 5) -> tuple[int, float]:
    """A GET on a new connection: its status and how long it took."""
    started = time.monotonic()
    with urllib3.PoolManager() as http:
        answer = http.request("GET", url, timeout=timeout, retries=False)
    return answer.status, time.monotonic() - started


def _get_keeping_the_connection(address: tuple[str, int], path: str) -> tuple[bytes, socket.socket]:
    """A GET on a new keep-alive connection, left open: the answer's status line and the
    socket."""
    sock = socket.create_connection(address, timeout=5)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return sock.recv(65536).split(b"\r\n", 1)[0], sock


@pytest.fixture
def server(tmp_path: Path) -> Iterator[catalog_server.CatalogServer]:
    with catalog_server.running(tmp_path / "server") as running:
        yield running


# -- connections ----------------------------------------------------------------------------


def _open_files_limit(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open files limit")


def test_a_thousand_idle_connections_leave_the_server_answering(tmp_path: Path) -> None:
    """1,000 connections that send nothing, to a server started with the common soft limit
    of 1,024 open files: ``/healthz`` and a real request still answer 200 within a second
    (uvicorn's limit_concurrency counted them: every request was 503), because the server
    raised its limit and idle connections do not count against requests."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the hard open files limit ({hard}) leaves no room for 1,000 sockets")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))  # what the server inherits
    try:
        server = catalog_server.start(tmp_path / "s")  # default limits
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    try:
        assert _open_files_limit(server.proc.pid) > 1024
        idle = []
        try:
            for _ in range(1000):
                idle.append(socket.create_connection(_address(server), timeout=5))
            time.sleep(0.5)  # every one accepted by the server's loop
            status, took = _timed_get(server.url + "/healthz")
            assert (status, took < 1) == (200, True), (status, took)
            status, took = _timed_get(server.url + "/v1/namespace/%24/list")
            assert (status, took < 1) == (200, True), (status, took)
            # None of them was closed to make room (the default cap is higher).
            assert _closed_by_server(idle[0], 0.2) is None
        finally:
            for sock in idle:
                sock.close()
        assert server.proc.poll() is None
    finally:
        server.stop()


def test_the_connection_cap_closes_the_longest_idle_connections(tmp_path: Path) -> None:
    args = ["--max-connections", "20", "--header-timeout", "120", "--idle-timeout", "120"]
    with catalog_server.running(tmp_path / "s", args=args) as server:
        idle = []
        try:
            for _ in range(20):
                idle.append(socket.create_connection(_address(server), timeout=5))
                time.sleep(0.01)
            time.sleep(0.3)
            for _ in range(3):  # each new connection makes room by closing the oldest idle one
                status, sock = _get_keeping_the_connection(_address(server), "/healthz")
                idle.append(sock)
                assert status == b"HTTP/1.1 200 OK"
            assert [_closed_by_server(s, 1.0) for s in idle[:3]] == [b"", b"", b""]
            assert all(_closed_by_server(s, 0.1) is None for s in idle[3:])
        finally:
            for sock in idle:
                sock.close()


def test_header_body_and_idle_timeouts_close_connections(tmp_path: Path) -> None:
    args = ["--header-timeout", "1", "--body-timeout", "1", "--idle-timeout", "1"]
    with catalog_server.running(tmp_path / "s", args=args) as server:
        address = _address(server)
        started = time.monotonic()
        silent = socket.create_connection(address)
        assert _closed_by_server(silent, 5) == b""  # sent nothing: closed
        assert time.monotonic() - started < 3
        # Slowloris: a byte of headers every 0.2 s never completes them.
        slow = socket.create_connection(address)
        started = time.monotonic()
        answer = b""
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa":
            try:
                slow.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.2)
            if time.monotonic() - started > 2.5:  # the headers are due after 1 s
                break
        answer = _closed_by_server(slow, 3) or b""
        assert answer.startswith(b"HTTP/1.1 408"), answer
        # A body that never arrives.
        body = socket.create_connection(address)
        body.sendall(
            b"POST /v1/namespace/%24/list HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
        )
        assert _closed_by_server(body, 5) is not None
        # A keep-alive connection is closed once idle.
        keep = socket.create_connection(address)
        keep.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        keep.settimeout(5)
        first = b""
        while not first.endswith(b'{"status":"ok"}'):
            first += keep.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first
        assert _closed_by_server(keep, 5) == b""
        assert _timed_get(server.url + "/healthz")[0] == 200
        log = server.log_text()
    assert '"status": 5' not in log


def test_oversized_headers_are_431(server: catalog_server.CatalogServer) -> None:
    address = _address(server)
    for chunked in (False, True):
        sock = socket.create_connection(address)
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
        try:
            if chunked:  # headers that never end: refused once past the cap, not buffered
                sock.sendall(request[:150_000])
            else:
                sock.sendall(request)
        except OSError:
            pass
        answer = _closed_by_server(sock, 5) or b""
        assert answer.startswith(b"HTTP/1.1 431"), answer[:100]
    assert _timed_get(server.url + "/healthz")[0] == 200


def test_requests_in_flight_are_capped_but_healthz_is_not(tmp_path: Path) -> None:
    with catalog_server.running(tmp_path / "s", args=["--max-in-flight", "1"]) as server:
        http = urllib3.PoolManager()
        http.request("POST", server.url + "/v1/namespace/db/create", body=b"{}", headers=JSON)
        # A request whose body is still coming is in flight.
        pending = socket.create_connection(_address(server))
        head = (
            b"POST /v1/namespace/db/describe HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n"
        )
        pending.sendall(head + b"{")
        time.sleep(0.3)
        refused = http.request("POST", server.url + "/v1/namespace/db/describe", body=b"{}")
        assert refused.status == 503, refused.data
        assert json.loads(refused.data)["code"] == 17
        assert refused.headers["retry-after"] == "1"
        assert http.request("GET", server.url + "/healthz").status == 200
        pending.sendall(b"}")
        pending.settimeout(5)
        assert pending.recv(65536).startswith(b"HTTP/1.1 200")
        pending.close()
        assert (
            http.request("POST", server.url + "/v1/namespace/db/describe", body=b"{}").status == 200
        )


# -- malformed requests -----------------------------------------------------------------------


def _assert_error_body(
    answer: Any, status: int | None = None, client: bool = True
) -> dict[str, Any]:
    """The spec's ``ErrorResponse`` of ``answer``; a 4xx (``client``) or ``status``."""
    assert answer.status < 500 or not client, (answer.status, answer.data[:300])
    if status is not None:
        assert answer.status == status, (answer.status, answer.data[:300])
    try:
        error = json.loads(answer.data)
    except ValueError:
        raise AssertionError(
            f"not the spec's error body: {answer.status} {answer.data[:300]!r}"
        ) from None
    assert isinstance(error["code"], int) and isinstance(error["error"], str), error
    assert error["instance"].startswith("/v1/"), error
    return error


def _setup(http: Any, url: str) -> None:
    for path in ("/v1/namespace/db/create", "/v1/table/db%24t/declare"):
        assert http.request("POST", url + path, body=b"{}", headers=JSON).status == 200


def test_the_malformed_requests_of_issue_30_are_400(server: catalog_server.CatalogServer) -> None:
    """The 500s of the issue: a lone surrogate, JSON nested 1,000 deep, a version of 2^63 (past
    SQLite's int64), list fields given as numbers; and NaN, non-UTF-8 paths, huge query
    numbers."""
    http = urllib3.PoolManager()
    url = server.url
    _setup(http, url)
    deep = b"[" * 1000 + b"]" * 1000
    cases: list[tuple[str, bytes]] = [
        ("/v1/namespace/db%24x/create", b'{"id": ["db", "\\ud800"]}'),
        ("/v1/namespace/p/create", b'{"properties": {"\\ud800": "x"}}'),
        ("/v1/namespace/q/create", b'{"properties": {"x": "\\udc00"}}'),
        ("/v1/table/db%24t/declare", b'{"location": "\\udfff"}'),
        ("/v1/namespace/db/describe", deep),
        ("/v1/namespace/db/describe", b'{"id": ' + deep + b"}"),
        ("/v1/namespace/db/describe", b'{"id": ["db"], "context": {"a": ' + deep + b"}}"),
        (
            "/v1/table/db%24t/version/create",
            b'{"version": 9223372036854775808, "manifest_path": "x"}',
        ),
        ("/v1/table/db%24t/version/describe", b'{"version": 9223372036854775808}'),
        ("/v1/table/db%24t/version/describe", b'{"version": -9223372036854775809}'),
        ("/v1/table/db%24t/version/delete", b'{"ranges": 5}'),
        ("/v1/table/db%24t/version/delete", b'{"ranges": [{"start_version": 1e400}]}'),
        (
            "/v1/table/db%24t/version/delete",
            b'{"ranges": [{"start_version": 99999999999999999999, "end_version": 2}]}',
        ),
        ("/v1/table/version/batch-create", b'{"entries": 7}'),
        ("/v1/table/version/batch-create", b'{"entries": {"a": 1}}'),
        ("/v1/namespace/db/describe", b'{"id": NaN}'),
        ("/v1/namespace/db/describe", b'{"id": ["db"], "context": {"a": Infinity}}'),
        ("/v1/namespace/%ED%A0%80/create", b"{}"),  # a UTF-8-encoded surrogate in the path
        ("/v1/table/db%24t/version/list?page_token=99999999999999999999", b""),
        ("/v1/table/db%24t/version/list?limit=abc", b""),
    ]
    wrong = []
    for path, body in cases:
        answer = http.request("POST", url + path, body=body, headers=JSON)
        if "page_token" in path and answer.status == 200:
            continue  # a token past every version: an empty page is a fine answer
        try:
            _assert_error_body(answer, 400)
        except AssertionError as e:
            wrong.append((path, body[:60], str(e)[:200]))
    assert wrong == []
    # A path that is not ASCII at all is refused by the HTTP layer (400), not a 500.
    sock = socket.create_connection(_address(server))
    sock.sendall(b"GET /v1/namespace/\xff\xfe/list HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = _closed_by_server(sock, 5) or b""
    assert answer.startswith(b"HTTP/1.1 4"), answer[:100]
    assert http.request("GET", url + "/healthz").status == 200
    assert '"status": 5' not in server.log_text()


def _route_table() -> list[tuple[str, str, Any]]:
    """(method, path, request model) of every route in server.py's route table."""
    from deltalog.server import app as server

    routes = [
        (op.method, f"/v1/namespace/{{id}}/{name}", op.model)
        for name, op in server._NAMESPACE_OPS.items()
    ]
    routes += [
        (op.method, f"/v1/table/{{id}}/{name}", op.model) for name, op in server._TABLE_OPS.items()
    ]
    routes += [
        (server._LIST_ALL.method, "/v1/table", None),
        (server._BATCH_CREATE.method, "/v1/table/version/batch-create", server._BATCH_CREATE.model),
    ]
    return routes


_DEEP = "[" * 600 + "]" * 600
#: Values that broke the server, as JSON text: nested past any limit, past int64, NaN, lone
#: surrogates, the wrong shape for every kind of field.
_HOSTILE_VALUES = st.sampled_from(
    [
        _DEEP,
        "{" + '"a": {' * 300 + "}" * 301,
        str(2**63),
        str(-(2**63) - 1),
        str(10**30),
        "1e400",
        "NaN",
        "-Infinity",
        '"\\ud800"',
        '["\\udc00", "x"]',
        '{"\\ud800": "x"}',
        "5",
        "-1",
        "true",
        '"text"',
        "[1, 2]",
        '[{"a": 1}]',
        "{}",
        '{"start_version": "x"}',
        "null",
        '"' + "x" * 70_000 + '"',
    ]
)


def test_fuzzing_every_route_with_malformed_bodies_finds_no_server_error(
    server: catalog_server.CatalogServer,
) -> None:
    """600 requests (hypothesis, derandomized): every route of server.py's route table, each
    of its model's fields (and unknown ones) set to hostile JSON, and hostile query strings:
    every answer is below 500 with the spec's error body, and the server stays healthy."""
    http = urllib3.PoolManager(maxsize=2)
    url = server.url
    _setup(http, url)
    routes = _route_table()
    statuses: list[int] = []

    @st.composite
    def requests(draw: Any) -> tuple[str, str, bytes]:
        method, path, model = draw(st.sampled_from(routes))
        fields = sorted(f.alias or n for n, f in model.model_fields.items()) if model else []
        chosen = draw(st.lists(st.sampled_from([*fields, "id", "x"]), max_size=3, unique=True))
        parts = [f"{json.dumps(name)}: {draw(_HOSTILE_VALUES)}" for name in chosen]
        body = ("{" + ", ".join(parts) + "}").encode()
        if draw(st.booleans()) and not parts:
            body = draw(_HOSTILE_VALUES).encode()
        identifier = draw(st.sampled_from(["db", "db%24t", "%24", "db%24%ED%A0%80", "%F0%28"]))
        query = draw(
            st.sampled_from(
                [
                    "",
                    "?limit=99999999999999999999",
                    "?page_token=-99999999999999999999",
                    "?limit=x",
                    "?delimiter=%ED%A0%80",
                    "?mode=%00",
                    "?page_token=%FF",
                ]
            )
        )
        return method, path.replace("{id}", identifier) + query, body

    @settings(
        max_examples=600,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(request=requests())
    def send(request: tuple[str, str, bytes]) -> None:
        method, path, body = request
        answer = http.request(method, url + path, body=body, headers=JSON, retries=False)
        statuses.append(answer.status)
        if answer.status >= 400:
            _assert_error_body(answer)

    send()
    assert len(statuses) >= 500 and 400 in statuses
    assert http.request("GET", url + "/healthz").status == 200


# -- Arrow bodies that decode to far more than they weigh ---------------------------------------


def _stream(batches: list[pa.RecordBatch], compression: str | None = None) -> bytes:
    sink = io.BytesIO()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, batches[0].schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue()


_MIB = 1024 * 1024
_ZEROS = pa.record_batch({"x": pa.array(np.zeros(_MIB, dtype=np.int64))})  # 8 MiB


def _attack_bodies() -> dict[str, bytes]:
    """Bodies of a few KiB to 1 MiB, each decoding (or expanding) to 512 MiB or more."""
    one_mib_value = pa.array([b"v" * _MIB], pa.binary())
    dictionary = pa.DictionaryArray.from_arrays(pa.array(np.zeros(512, np.int32)), one_mib_value)
    run_end = pa.RunEndEncodedArray.from_arrays(
        pa.array([64 * _MIB], pa.int32()), pa.array([1], pa.int64())
    )
    return {
        "zstd": _stream([_ZEROS] * 64, "zstd"),
        "lz4": _stream([_ZEROS] * 64, "lz4"),
        "dictionary": _stream([pa.record_batch({"d": dictionary})]),
        "run-end": _stream([pa.record_batch({"r": run_end})]),
        "nulls": _stream([pa.record_batch({"n": pa.nulls(600 * _MIB)})]),
    }


def test_decode_arrow_body_refuses_bodies_that_decode_past_the_cap() -> None:
    from deltalog.server.lance.arrow_body import decode_arrow_body
    from deltalog.server.lance.bodies import PayloadTooLarge

    bodies = _attack_bodies()
    assert max(len(bodies[k]) for k in ("zstd", "run-end", "nulls")) < 64 * 1024
    assert len(bodies["lz4"]) < 4 * _MIB and len(bodies["dictionary"]) < 2 * _MIB
    for name, body in bodies.items():
        with pytest.raises(PayloadTooLarge, match="more than 268435456 bytes") as refused:
            decode_arrow_body(body, 256 * _MIB)
        assert refused.value.status == 413, name
    # A compressed buffer whose length prefix claims 2^62 bytes is refused before pyarrow
    # would try to allocate it (Arrow columnar format, "Compression").
    small = _stream([pa.record_batch({"x": pa.array(np.zeros(1000, dtype=np.int64))})], "zstd")
    prefix = (8 * 1000).to_bytes(8, "little")
    assert small.count(prefix) == 1
    with pytest.raises(PayloadTooLarge):
        decode_arrow_body(small.replace(prefix, (2**62).to_bytes(8, "little")), 256 * _MIB)


def test_decode_arrow_body_decodes_what_fits_to_plain_columns() -> None:
    """Within the cap, compressed, dictionary and run-end encoded columns decode to what
    pyarrow itself decodes them to, as plain columns."""
    import pyarrow.compute as pc

    from deltalog.server.lance.arrow_body import BATCH_OVERHEAD, decode_arrow_body
    from deltalog.server.lance.service import RestError

    words = pa.array(["a", None, "ccc", "a"]).dictionary_encode()
    runs = pa.RunEndEncodedArray.from_arrays(pa.array([2, 5], pa.int32()), pa.array(["x", None]))
    batch = pa.record_batch({"id": pa.array([1, 2, 3, 4], pa.int64()), "w": words})
    for compression in (None, "zstd", "lz4"):
        table = decode_arrow_body(_stream([batch, batch], compression), 10_000)
        assert table.schema == pa.schema({"id": pa.int64(), "w": pa.string()})
        assert table.column("w").to_pylist() == ["a", None, "ccc", "a"] * 2
        assert table.column("id").to_pylist() == [1, 2, 3, 4] * 2
    table = decode_arrow_body(_stream([pa.record_batch({"r": runs})]), 10_000)
    assert table.column("r").type == pa.string()
    assert table.column("r").to_pylist() == pc.run_end_decode(runs).to_pylist()
    # Exactly at the cap: 8 MiB of int64 plus one batch's bookkeeping.
    cap = 8 * _MIB + BATCH_OVERHEAD
    assert decode_arrow_body(_stream([_ZEROS], "zstd"), cap).num_rows == _MIB
    with pytest.raises(RestError) as too_big:
        decode_arrow_body(_stream([_ZEROS], "zstd"), cap - 1)
    assert too_big.value.status == 413
    # Many empty batches are not free either.
    empty = pa.record_batch({"id": pa.array([], pa.int64())})
    with pytest.raises(RestError) as too_many:
        decode_arrow_body(_stream([empty] * 2000), 1 * _MIB)
    assert too_many.value.status == 413
    # Not a stream: 400.
    good = _stream([batch], "zstd")
    for junk in (
        b"",
        b"not arrow",
        good[: len(good) // 2],
        b"\xff\xff\xff\xff\x10\0\0\0" + b"\0" * 16,
    ):
        with pytest.raises(RestError) as bad:
            decode_arrow_body(junk, 10_000)
        assert bad.value.status == 400, junk[:20]


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))


def test_create_table_refuses_arrow_bombs_with_413(server: catalog_server.CatalogServer) -> None:
    """Each attack body (default --max-decoded-bytes, 256 MiB) is 413 with the spec's error
    body, creates nothing, and leaves the server's memory where it was (after a first small
    create has loaded pyarrow and its compute functions)."""
    http = urllib3.PoolManager()
    url = server.url
    assert http.request("POST", url + "/v1/namespace/db/create", body=b"{}", headers=JSON).status
    arrow = {"Content-Type": "application/vnd.apache.arrow.stream"}
    words = pa.array(["a", None, "ccc", "a"]).dictionary_encode()
    small = pa.record_batch({"id": pa.array([1, 2, 3, 4], pa.int64()), "w": words})
    answer = http.request(
        "POST", url + "/v1/table/db%24ok/create", body=_stream([small], "zstd"), headers=arrow
    )
    assert answer.status == 200, answer.data
    before = _rss_kib(server.proc.pid)
    for name, body in _attack_bodies().items():
        answer = http.request(
            "POST", url + f"/v1/table/db%24{name}/create", body=body, headers=arrow
        )
        error = _assert_error_body(answer, 413)
        assert "268435456" in error["error"], error
    grown = _rss_kib(server.proc.pid) - before
    assert grown < 64 * 1024, f"the server grew by {grown} KiB"
    listed = http.request("GET", url + "/v1/namespace/db/table/list")
    assert json.loads(listed.data)["tables"] == ["ok"]


# -- secrets and raw errors ---------------------------------------------------------------------


def test_redact_hides_every_form_of_a_database_password() -> None:
    from deltalog.server.redact import redact

    secret = "hunter2"
    forms = [
        f"postgresql://bob:{secret}@db:5432/cat",
        f"postgresql://bob:{secret}@db/cat?sslmode=require",
        f"postgres://bob:p@{secret}@db/cat",  # an unencoded @ in the password
        f"postgresql://bob@db/cat?password={secret}",
        f"postgresql://db/cat?sslmode=require&password={secret}&x=1",
        f"postgresql://db/cat?sslpassword={secret}",
        f"host=db user=bob password={secret} dbname=cat",
        f"host=db password = '{secret} with spaces' dbname=cat",
        f"host=db PASSWORD={secret}",
    ]
    for form in forms:
        shown = redact(form)
        assert secret not in shown and "***" in shown, (form, shown)
    assert redact("host=db password = 'a b' dbname=cat") == "host=db password = *** dbname=cat"
    assert redact("postgresql://bob:pw@db:5432/cat") == "postgresql://bob:***@db:5432/cat"
    for plain in ("sqlite:///var/lib/cat.db", "postgresql://bob@db/cat?sslmode=require"):
        assert redact(plain) == plain


def _startup_line(db: str, directory: Path) -> str:
    """The first line ``deltalog catalog serve`` prints for ``db``; then it is stopped."""
    command = [sys.executable, "-m", "deltalog", "catalog", "serve", "--port", "0", "--db", db]
    command += ["--warehouse", str(directory / "wh")]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as proc:
        assert proc.stdout is not None
        try:
            line = proc.stdout.readline()
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return line


def test_the_startup_line_hides_the_database_password(postgres_uri: str, tmp_path: Path) -> None:
    """PostgreSQL (trust authentication) ignores the password: it is only shown, or not."""
    secret = "hunter2-s3cret"
    scheme, rest = postgres_uri.split("://", 1)
    user_host, database = rest.split("/", 1)
    user, host = user_host.split("@", 1) if "@" in user_host else ("postgres", user_host)
    for db in (
        f"{scheme}://{user}:{secret}@{host}/{database}",
        f"{scheme}://{user}@{host}/{database}?password={secret}",
    ):
        line = _startup_line(db, tmp_path)
        assert "listening on http://" in line, line
        assert secret not in line and "***" in line, line


def test_server_errors_answer_a_request_id_not_the_database_text(tmp_path: Path) -> None:
    """The catalog's SQLite file is overwritten while the server runs: ``/healthz`` answers a
    bare ``unavailable`` and a request a generic 5xx with a request id; the database's text
    (and the server's paths) are only in the log line carrying that id."""
    directory = tmp_path / "s"
    with catalog_server.running(directory) as server:
        http = urllib3.PoolManager()
        assert http.request("POST", server.url + "/v1/namespace/db/create", body=b"{}").status
        for name in ("catalog.db", "catalog.db-wal", "catalog.db-shm"):  # WAL mode
            with open(directory / name, "r+b") as f:  # in place: the server has them open
                f.write(b"this is not a database, whatever it was " * 1024)
        health = http.request("GET", server.url + "/healthz")
        assert health.status == 503
        assert json.loads(health.data) == {"status": "unavailable"}
        answer = http.request("GET", server.url + "/v1/namespace/%24/list")
        assert answer.status >= 500
        error = _assert_error_body(answer, client=False)
        text = answer.data.decode()
        assert "not a database" not in text and str(tmp_path) not in text, text
        request_id = error["detail"].split()[-1]
        assert len(request_id) == 16 and request_id in error["error"], error
        log = server.log_text()
    assert "not a database" in log
    lines = [line for line in log.splitlines() if request_id in line]
    assert any("not a database" in line for line in lines), lines
    assert any('"request_id": "' + request_id in line for line in lines), lines


def test_healthz_answers_503_in_time_when_the_database_hangs(
    postgres_uri: str, tmp_path: Path
) -> None:
    """A table lock held by another session makes the catalog's reads wait: ``/healthz``
    answers 503 after its 2 s timeout instead of hanging with them, and 200 once the lock is
    gone."""
    import psycopg

    with catalog_server.running(tmp_path / "s", db=postgres_uri) as server:
        assert _timed_get(server.url + "/healthz")[0] == 200
        with psycopg.connect(postgres_uri) as locker:
            locker.execute("LOCK TABLE namespaces IN ACCESS EXCLUSIVE MODE")
            status, took = _timed_get(server.url + "/healthz", timeout=30)
            assert status == 503 and took < 5, (status, took)
            locker.rollback()
        deadline = time.monotonic() + 10
        while _timed_get(server.url + "/healthz")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        log = server.log_text()
    assert "healthz: the database did not answer: TimeoutError" in log
