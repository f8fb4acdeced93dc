"""Nothing forged, nothing broken ratified (issue #30, "Forged or broken commits accepted by the
REST server"; catalogManaged RFC, "Commit Protocol", "Publishing Commits"): commits proposed by
hand over the Lance Namespace routes of a real ``deltalog catalog serve`` process, as a hostile
or careless writer would, and what the catalog makes of them.

Every proposal here was ratified by the server as it was before the check (and then broke every
read, or changed what readers saw); each is refused now with a 4xx naming the rule, and the
table stays readable and writable. A ratified commit is bound to its content's SHA-256: a staged
file rewritten afterwards is refused by readers and publishers, a published file that differs is
never forgotten, and an admin can roll the table back.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import urllib3

import catalog_server
import deltalog as dl
from deltalog.server.auth import add_token


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


@dataclass
class Env:
    url: str
    admin: Any
    writer: Any
    tokens: dict[str, str]
    location: Path
    http: urllib3.PoolManager

    def post(self, route: str, body: dict[str, Any], role: str = "writer") -> tuple[int, Any]:
        answer = self.http.request(
            "POST",
            f"{self.url}/v1/table/{urllib.parse.quote('db$t', safe='')}/{route}",
            body=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self.tokens[role]}",
            },
            retries=False,
            timeout=30,
        )
        try:
            return answer.status, json.loads(answer.data or b"null")
        except ValueError:
            return answer.status, answer.data

    def latest(self) -> int:
        return self.admin.load_table("db.t").version()

    def last_ict(self) -> int:
        t = self.admin.load_table("db.t")
        return max(ts for _, ts, _ in t._raw.history(None))

    def data_file(self, *values: int) -> tuple[str, int]:
        name = f"part-{uuid.uuid4()}.parquet"
        pq.write_table(rows(*values), self.location / name)
        return name, (self.location / name).stat().st_size

    def stage(self, version: int, content: bytes) -> str:
        staged = self.location / "_delta_log" / "_staged_commits"
        staged.mkdir(parents=True, exist_ok=True)
        name = f"{version:020}.{uuid.uuid4()}.json"
        (staged / name).write_bytes(content)
        return name

    def propose_staged(self, version: int, content: bytes, role: str = "writer") -> Any:
        name = self.stage(version, content)
        request = {
            "id": ["db", "t"],
            "version": version,
            "manifest_path": f"_delta_log/_staged_commits/{name}",
        }
        return (*self.post("version/create", request, role), name)

    def propose_inline(self, version: int, content: bytes, role: str = "writer") -> Any:
        return self.post(
            "version/create",
            {
                "id": ["db", "t"],
                "version": version,
                "manifest_path": f"_delta_log/{version:020}.json",
                "metadata": {"delta.inlineCommit": content.decode()},
            },
            role,
        )


def info(ict: int, txn: str | None = None, **extra: Any) -> str:
    return json.dumps(
        {
            "commitInfo": {
                "inCommitTimestamp": ict,
                "timestamp": ict,
                "operation": "WRITE",
                "txnId": txn or str(uuid.uuid4()),
                **extra,
            }
        }
    )


def add(path: str, size: int) -> str:
    return json.dumps(
        {
            "add": {
                "path": path,
                "partitionValues": {},
                "size": size,
                "modificationTime": int(time.time() * 1000),
                "dataChange": True,
            }
        }
    )


def commit(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    tokens_file = tmp_path / "tokens.json"
    tokens = {role: add_token(tokens_file, role, role) for role in ("admin", "writer", "reader")}
    with catalog_server.running(tmp_path / "server", tokens=tokens_file) as server:

        def connect(role: str) -> Any:
            return dl.connect_catalog({"type": "rest", "uri": server.url, "token": tokens[role]})

        admin, writer = connect("admin"), connect("writer")
        admin.create_namespace("db")
        writer.write_table("db.t", rows(1, 2))
        location = Path(admin.load_table("db.t").table_uri.removeprefix("file://"))
        yield Env(server.url, admin, writer, tokens, location, urllib3.PoolManager())


def assert_intact(env: Env, expected: list[int]) -> None:
    """The table reads as ``expected`` and takes a writer's append."""
    assert ids(env.admin.load_table("db.t")) == expected
    dl.write_table(env.writer.load_table("db.t"), rows(100), mode="append")
    assert ids(env.admin.load_table("db.t")) == sorted([*expected, 100])


# -- what a reader could not read, or would read wrongly, is never ratified ------------------


def test_broken_commits_are_refused(env: Env) -> None:
    v = env.latest() + 1
    ict = env.last_ict() + 1000
    good, size = env.data_file(7)
    other = env.location.parent / "other"
    other.mkdir()
    pq.write_table(rows(666), other / "secret.parquet")
    secret_size = (other / "secret.parquet").stat().st_size
    cases = {
        "NaN": commit(info(ict), '{"txn":{"appId":"a","version":NaN,"lastUpdated":1}}'),
        "Infinity": commit(info(ict), '{"txn":{"appId":"a","version":Infinity}}'),
        "above int64": commit(info(ict), '{"txn":{"appId":"a","version":9223372036854775808}}'),
        "string ICT": commit(
            info(ict).replace(f'"inCommitTimestamp": {ict}', f'"inCommitTimestamp": "{ict}"')
        ),
        "add as a string": commit(info(ict), '{"add":"part-0.parquet"}'),
        "add as an array": commit(info(ict), '{"add":["part-0.parquet"]}'),
        "no commitInfo": commit(add(good, size)),
        "commitInfo not first": commit(add(good, size), info(ict)),
        "no in-commit timestamp": commit(
            json.dumps({"commitInfo": {"txnId": "x"}}), add(good, size)
        ),
        "no txnId": commit(json.dumps({"commitInfo": {"inCommitTimestamp": ict}}), add(good, size)),
        "ICT in 2001": commit(info(1_000_000_000_000), add(good, size)),
        "ICT not later": commit(info(env.last_ict()), add(good, size)),
        "missing file": commit(info(ict), add("nothing-here.parquet", 10)),
        "wrong size": commit(info(ict), add(good, size + 1)),
        "another table's file": commit(
            info(ict), add(f"file://{other}/secret.parquet", secret_size)
        ),
        "escaping path": commit(info(ict), add("../other/secret.parquet", secret_size)),
        "two actions a line": commit(info(ict), '{"add":{},"remove":{}}'),
        "not JSON": commit(info(ict), "{oops"),
        "sidecar in a commit": commit(info(ict), '{"sidecar":{"path":"x","sizeInBytes":1}}'),
        "drops catalogManaged": commit(
            info(ict),
            json.dumps(
                {
                    "protocol": {
                        "minReaderVersion": 3,
                        "minWriterVersion": 7,
                        "readerFeatures": [],
                        "writerFeatures": ["inCommitTimestamps"],
                    }
                }
            ),
        ),
    }
    for what, content in cases.items():
        for propose in (env.propose_staged, env.propose_inline):
            status, body, *_ = propose(v, content, "admin")
            assert 400 <= status < 500 and status != 409, (what, propose.__name__, status, body)
    # A staged name ending in a newline names no staged commit.
    name = env.stage(v, commit(info(ict), add(good, size)))
    status, body = env.post(
        "version/create",
        {"id": ["db", "t"], "version": v, "manifest_path": f"_delta_log/_staged_commits/{name}\n"},
    )
    assert status == 400, body
    assert env.latest() == v - 1
    assert_intact(env, [1, 2])


def test_a_reused_txn_id_is_refused_and_a_replay_is_the_same_commit(env: Env) -> None:
    v = env.latest() + 1
    ict = env.last_ict() + 1000
    f1, s1 = env.data_file(5)
    first = commit(info(ict, txn="job-1"), add(f1, s1))
    status, body = env.propose_inline(v, first)
    assert status == 200, body
    # The same proposal again (its answer lost): a success, ratified once.
    status, body = env.propose_inline(v, first)
    assert status == 200, body
    assert env.latest() == v
    # Another commit for that version loses; the same txnId in a new commit is refused.
    f2, s2 = env.data_file(6)
    status, body = env.propose_inline(v, commit(info(ict + 1, txn="job-2"), add(f2, s2)))
    assert status == 409, body
    status, body = env.propose_inline(v + 1, commit(info(ict + 1, txn="job-1"), add(f2, s2)))
    assert status == 400 and "txnId" in body["error"], body
    # A staged replay (same version, same file name) too, even once published.
    f3, s3 = env.data_file(7)
    staged = commit(info(ict + 2, txn="job-3"), add(f3, s3))
    status, body, name = env.propose_staged(v + 1, staged)
    assert status == 200, body
    assert_intact(env, [1, 2, 5, 7])  # publishes v + 1 on the way
    status, body = env.post(
        "version/create",
        {
            "id": ["db", "t"],
            "version": v + 1,
            "manifest_path": f"_delta_log/_staged_commits/{name}",
        },
    )
    assert status == 200, body
    assert ids(env.admin.load_table("db.t")) == [1, 2, 5, 7, 100]


def test_version_0_must_enable_catalog_managed(env: Env) -> None:
    """A writer's version 0 without catalogManaged was ratified: the catalog called the table
    managed but could not load it, and a path writer then committed to it directly."""
    http = env.http
    declared = http.request(
        "POST",
        f"{env.url}/v1/table/db%24u/declare",
        body=json.dumps({"id": ["db", "u"]}).encode(),
        headers={
            "Authorization": f"Bearer {env.tokens['writer']}",
            "Content-Type": "application/json",
        },
    )
    assert declared.status == 200, declared.data
    location = Path(json.loads(declared.data)["location"])
    (location / "_delta_log" / "_staged_commits").mkdir(parents=True)
    metadata = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(
            {
                "type": "struct",
                "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
            }
        ),
        "partitionColumns": [],
        "configuration": {"delta.enableInCommitTimestamps": "true"},
        "createdTime": 1,
    }
    plain = {"minReaderVersion": 1, "minWriterVersion": 2}
    managed = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["catalogManaged"],
        "writerFeatures": ["catalogManaged", "inCommitTimestamps"],
    }
    ict = int(time.time() * 1000)
    for protocol, config, ok in (
        (plain, metadata["configuration"], False),
        (managed, {}, False),  # in-commit timestamps not enabled
        (managed, metadata["configuration"], True),
    ):
        content = commit(
            info(ict),
            json.dumps({"protocol": protocol}),
            json.dumps({"metaData": {**metadata, "configuration": config}}),
        )
        answer = http.request(
            "POST",
            f"{env.url}/v1/table/db%24u/version/create",
            body=json.dumps(
                {
                    "id": ["db", "u"],
                    "version": 0,
                    "manifest_path": "_delta_log/00000000000000000000.json",
                    "metadata": {"delta.inlineCommit": content.decode()},
                }
            ).encode(),
            headers={
                "Authorization": f"Bearer {env.tokens['writer']}",
                "Content-Type": "application/json",
            },
        )
        assert (answer.status == 200) == ok, (protocol, config, answer.data)
    t = env.admin.load_table("db.u")
    assert "catalogManaged" in t.protocol().reader_features


def test_governance_covers_the_clustering_domain(env: Env) -> None:
    v = env.latest() + 1
    ict = env.last_ict() + 1000
    clustering = json.dumps(
        {
            "domainMetadata": {
                "domain": "delta.clustering",
                "configuration": json.dumps({"clusteringColumns": [["id"]]}),
                "removed": False,
            }
        }
    )
    status, body = env.propose_inline(v, commit(info(ict), clustering), "writer")
    assert status == 403 and "clustering" in body["error"], body
    status, body = env.propose_inline(v, commit(info(ict), clustering), "admin")
    assert status == 200, body
    # The same clustering again is no change: a writer may carry it.
    f, s = env.data_file(3)
    status, body = env.propose_inline(v + 1, commit(info(ict + 1), clustering, add(f, s)))
    assert status == 200, body


# -- the content of a ratified commit is bound to it -----------------------------------------


def test_a_staged_commit_rewritten_after_ratification_is_refused(env: Env) -> None:
    v = env.latest() + 1
    ict = env.last_ict() + 1000
    f, s = env.data_file(9)
    status, body, name = env.propose_staged(v, commit(info(ict), add(f, s)))
    assert status == 200, body
    staged = env.location / "_delta_log" / "_staged_commits" / name
    # Rewritten behind the catalog's back: a metadata change no admin made.
    forged = json.loads(staged.read_text().splitlines()[0])
    staged.write_text(json.dumps(forged) + "\n" + json.dumps({"remove": {"path": f}}) + "\n")
    # Loading it answers from the catalog's cached state; reading it opens the log.
    loaded = env.admin.load_table("db.t")
    assert loaded.version() == v
    with pytest.raises(dl.CorruptLogError, match="immutable") as e:
        loaded.to_pyarrow_table()
    assert name in str(e.value)
    # Publishing it is refused too (the writer's next commit publishes first).
    with pytest.raises(dl.DeltaError):
        dl.write_table(env.writer.load_table("db.t", version=v - 1), rows(5), mode="append")
    assert not (env.location / "_delta_log" / f"{v:020}.json").exists()
    # A forged published file is not forgotten: the catalog keeps its commit.
    (env.location / "_delta_log" / f"{v:020}.json").write_text(staged.read_text())
    status, body = env.post(
        "version/delete",
        {"id": ["db", "t"], "ranges": [{"start_version": 0, "end_version": v + 1}]},
    )
    assert status == 409 and "differs" in body["error"], body
    # A writer cannot roll back; an admin can, and the table is whole again.
    with pytest.raises(dl.CatalogError):
        env.writer.rollback_table("db.t", v - 1)
    env.admin.rollback_table("db.t", v - 1)
    assert not (env.location / "_delta_log" / f"{v:020}.json").exists()
    assert_intact(env, [1, 2])


def test_version_delete_checks_the_published_content(env: Env) -> None:
    v = env.latest() + 1
    ict = env.last_ict() + 1000
    f, s = env.data_file(4)
    content = commit(info(ict), add(f, s))
    status, body = env.propose_inline(v, content)
    assert status == 200, body
    published = env.location / "_delta_log" / f"{v:020}.json"
    # Not published: kept.
    forget = {"id": ["db", "t"], "ranges": [{"start_version": 0, "end_version": -1}]}
    status, body = env.post("version/delete", forget)
    assert status == 409 and "not published" in body["error"], body
    # A substitute with other content (a metadata change, another writer's wipe): kept.
    published.write_bytes(commit(info(ict), json.dumps({"remove": {"path": f}})))
    status, body = env.post("version/delete", forget)
    assert status == 409 and "differs" in body["error"], body
    assert ids(env.admin.load_table("db.t")) == [1, 2, 4]  # the catalog's commit wins
    # The ratified content itself: forgotten.
    published.write_bytes(content)
    status, body = env.post("version/delete", forget)
    assert status == 200 and body["deleted_count"] == 1, body
    assert_intact(env, [1, 2, 4])


def test_a_damaged_table_is_repaired_without_500s(env: Env) -> None:
    """A table that a commit damaged (its staged file removed after ratification): reads fail
    with a typed error, an overwrite answers 409 (not 500), and an admin's rollback repairs
    it."""
    v = env.latest() + 1
    ict = env.last_ict() + 1000
    f, s = env.data_file(8)
    status, body, name = env.propose_staged(v, commit(info(ict), add(f, s)))
    assert status == 200, body
    (env.location / "_delta_log" / "_staged_commits" / name).unlink()
    with pytest.raises(dl.CorruptLogError):
        env.admin.load_table("db.t").to_pyarrow_table()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows(1).schema) as w:
        w.write_table(rows(50))
    answer = env.http.request(
        "POST",
        f"{env.url}/v1/table/db%24t/create?mode=overwrite",
        body=sink.getvalue().to_pybytes(),
        headers={
            "Authorization": f"Bearer {env.tokens['admin']}",
            "Content-Type": "application/vnd.apache.arrow.stream",
        },
    )
    assert answer.status == 409, answer.data
    rollback = {"id": ["db", "t"], "ranges": [{"start_version": v, "end_version": -1}]}
    # Without saying so, an admin's delete forgets only published versions: nothing here.
    status, body = env.post("version/delete", rollback, "admin")
    assert status == 409 and "not published" in body["error"], body
    status, body = env.post("version/delete", {**rollback, "context": {"delta.rollback": "true"}})
    assert status == 403, body  # a writer cannot roll back
    status, body = env.post(
        "version/delete", {**rollback, "context": {"delta.rollback": "true"}}, "admin"
    )
    assert status == 200 and body["deleted_count"] == 1, body
    assert_intact(env, [1, 2])


def test_the_list_of_versions_is_every_version_in_capped_pages(env: Env) -> None:
    """``version/list`` lists the table's versions (not only unpublished ones), newest first on
    request, in pages that stay under the byte cap."""
    from deltalog.server.lance.versions import MAX_LIST_BYTES

    base = env.latest()
    ict = env.last_ict() + 1000
    pad = "x" * 60_000
    count = MAX_LIST_BYTES // 60_000 + 5
    for i in range(count):
        status, body = env.propose_inline(base + 1 + i, commit(info(ict + i, pad=pad)))
        assert status == 200, body
    latest = base + count
    seen, token, pages = [], None, 0
    while True:
        query = "?descending=true" + (f"&page_token={token}" if token else "")
        answer = env.http.request(
            "POST",
            f"{env.url}/v1/table/db%24t/version/list{query}",
            body=b"{}",
            headers={
                "Authorization": f"Bearer {env.tokens['reader']}",
                "Content-Type": "application/json",
            },
        )
        assert answer.status == 200
        assert len(answer.data) < MAX_LIST_BYTES + 200_000
        page = json.loads(answer.data)
        assert page["context"]["delta.latestVersion"] == str(latest)
        seen += [v["version"] for v in page["versions"]]
        pages += 1
        token = page.get("page_token")
        if not token:
            break
    assert seen == list(range(latest, -1, -1)) and pages >= 2
    published = [v for v in range(base + 1) if v <= base]
    assert published  # versions 0..base are published and listed as such
    assert ids(env.admin.load_table("db.t")) == [1, 2]


def test_a_staged_fifo_does_not_hang_the_server(env: Env) -> None:
    v = env.latest() + 1
    staged = env.location / "_delta_log" / "_staged_commits"
    staged.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for _ in range(45):
        name = f"{v:020}.{uuid.uuid4()}.json"
        os.mkfifo(staged / name)
        status, body = env.post(
            "version/create",
            {
                "id": ["db", "t"],
                "version": v,
                "manifest_path": f"_delta_log/_staged_commits/{name}",
            },
        )
        assert status == 400 and "regular file" in body["error"], body
    assert time.monotonic() - started < 60
    # Oversized: an inline commit past 64 KiB, a staged one past the cap (sparse, not read).
    big = commit(info(env.last_ict() + 1000, pad="y" * 70_000))
    status, body = env.propose_inline(v, big)
    assert status == 413, body
    name = f"{v:020}.{uuid.uuid4()}.json"
    with open(staged / name, "wb") as f:
        f.truncate(65 * 1024 * 1024)
    status, body = env.post(
        "version/create",
        {"id": ["db", "t"], "version": v, "manifest_path": f"_delta_log/_staged_commits/{name}"},
    )
    assert status == 413, body
    assert_intact(env, [1, 2])
