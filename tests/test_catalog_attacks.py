"""The outside probe's freezing and rewriting attacks (issue #42, items 3 and 4), each tried on
every route a commit reaches the catalog by: the Lance routes' inline and staged
``version/create``, ``batch-create``, Unity Catalog's ``add-commit``, and the embedded SQLite
catalog's client. A real ``deltalog catalog serve`` process with a token per role; commits are
written by hand, as a hostile writer would. (The symbolic-link attacks of item 5 are in
``test_catalog_symlinks.py``.)

* Freezing: a commit whose in-commit timestamp is 2^63 - 1 (or 2^63 - 4, then three commits)
  left no later timestamp for anyone ("In-Commit Timestamps": each later than the previous),
  and one a year ahead pinned every later commit a year ahead. An in-commit timestamp is now
  bounded by the catalog's clock (``--max-clock-skew``, default 5 minutes) on every route.
* Rewriting: a published ``<v>.json`` rewritten in storage was read as the table (a forged
  ``owner.tag``, ``delta.appendOnly`` switched on, version 0 without ``catalogManaged``).
  The catalog's readers now check every published commit they replay against the SHA-256 the
  catalog recorded (LogIntegrityError naming the version), ``describe`` reports the mismatch,
  ``loadTable`` refuses the table, and an admin repairs it: the ratified commit republished,
  or the table rolled back over published versions.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import urllib3

import catalog_server
import deltalog as dl
from deltalog.server.auth import add_token
from test_catalog_ratification import add, commit, info

YEAR_MS = 365 * 86_400_000


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


class Server:
    """A running server with a catalog-managed table ``main.sales.t`` (also a UC table)."""

    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url = url
        self.tokens = tokens
        self.http = urllib3.PoolManager()
        self.admin = self.connect("admin")
        self.writer = self.connect("writer")

    def connect(self, role: str) -> Any:
        return dl.connect_catalog({"type": "rest", "uri": self.url, "token": self.tokens[role]})

    def request(self, method: str, path: str, body: Any, role: str = "writer") -> Any:
        answer = self.http.request(
            method,
            self.url + path,
            body=None if body is None else json.dumps(body).encode(),
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

    def location(self, name: str = "t") -> Path:
        table = self.admin.load_table(f"main.sales.{name}")
        return Path(table.table_uri.removeprefix("file://"))

    def latest(self, name: str = "t") -> int:
        return int(self.admin.describe_table(f"main.sales.{name}").latest_version)

    def data_file(self, name: str, *values: int) -> tuple[str, int]:
        import pyarrow.parquet as pq

        file = f"part-{uuid.uuid4()}.parquet"
        pq.write_table(rows(*values), self.location(name) / file)
        return file, (self.location(name) / file).stat().st_size

    def stage(self, name: str, version: int, content: bytes) -> str:
        staged = self.location(name) / "_delta_log" / "_staged_commits"
        staged.mkdir(parents=True, exist_ok=True)
        file = f"{version:020}.{uuid.uuid4()}.json"
        (staged / file).write_bytes(content)
        return file


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    tokens_file = tmp_path / "tokens.json"
    tokens = {role: add_token(tokens_file, role, role) for role in ("admin", "writer", "reader")}
    with catalog_server.running(tmp_path / "server", tokens=tokens_file) as running:
        s = Server(running.url, tokens)
        s.admin.create_namespace(["main"])
        s.admin.create_namespace(["main", "sales"])
        yield s


# -- the routes a proposal takes ---------------------------------------------------------------


def lance_inline(s: Server, table: str, version: int, content: bytes) -> tuple[int, Any]:
    quoted = urllib.parse.quote(f"main$sales${table}", safe="")
    return s.request(
        "POST",
        f"/v1/table/{quoted}/version/create",
        {
            "id": ["main", "sales", table],
            "version": version,
            "manifest_path": f"_delta_log/{version:020}.json",
            "metadata": {"delta.inlineCommit": content.decode()},
        },
    )


def lance_staged(s: Server, table: str, version: int, content: bytes) -> tuple[int, Any]:
    quoted = urllib.parse.quote(f"main$sales${table}", safe="")
    name = s.stage(table, version, content)
    return s.request(
        "POST",
        f"/v1/table/{quoted}/version/create",
        {
            "id": ["main", "sales", table],
            "version": version,
            "manifest_path": f"_delta_log/_staged_commits/{name}",
        },
    )


def batch(s: Server, table: str, version: int, content: bytes) -> tuple[int, Any]:
    name = s.stage(table, version, content)
    entry = {
        "id": ["main", "sales", table],
        "version": version,
        "manifest_path": f"_delta_log/_staged_commits/{name}",
    }
    return s.request("POST", "/v1/table/version/batch-create", {"entries": [entry]})


def unity(s: Server, table: str, version: int, content: bytes) -> tuple[int, Any]:
    base = f"/api/2.1/unity-catalog/delta/v1/catalogs/main/schemas/sales/tables/{table}"
    status, loaded = s.request("GET", base, None)
    assert status == 200, loaded
    name = s.stage(table, version, content)
    path = s.location(table) / "_delta_log" / "_staged_commits" / name
    first = json.loads(content.decode().splitlines()[0])
    update = {
        "requirements": [{"type": "assert-table-uuid", "uuid": loaded["metadata"]["table-uuid"]}],
        "updates": [
            {
                "action": "add-commit",
                "commit": {
                    "version": version,
                    "timestamp": first["commitInfo"]["inCommitTimestamp"],
                    "file-name": name,
                    "file-size": path.stat().st_size,
                    "file-modification-timestamp": int(path.stat().st_mtime * 1000),
                },
            }
        ],
    }
    return s.request("POST", base, update)


class Embedded:
    """The same proposals to an embedded SQLite catalog (its table client's ``commit``)."""

    def __init__(self, tmp_path: Path) -> None:
        self.catalog = dl.connect_catalog(
            {"type": "sqlite", "path": str(tmp_path / "e.db"), "warehouse": str(tmp_path / "ewh")}
        )
        self.catalog.create_namespace("s")

    def create(self, table: str) -> Path:
        self.catalog.write_table(f"s.{table}", rows(1))
        return Path(self.catalog.load_table(f"s.{table}").table_uri.removeprefix("file://"))

    def propose(self, table: str, version: int, content: bytes) -> tuple[int, Any]:
        try:
            self.catalog.catalog_client(f"s.{table}").commit(version, content=content)
        except dl.InvalidArgumentError as e:
            return 400, str(e)
        return 200, None


ROUTES = {"lance-inline": lance_inline, "lance-staged": lance_staged, "batch": batch}


def freeze_routes(server: Server, tmp_path: Path) -> dict[str, tuple[Path, Any]]:
    """Each route's table (its location) and how a proposal reaches it."""
    out: dict[str, tuple[Path, Any]] = {}
    for route, propose in [*ROUTES.items(), ("unity", unity)]:
        table = route.replace("-", "_")
        server.writer.write_table(f"main.sales.{table}", rows(1))
        out[route] = (
            server.location(table),
            lambda v, c, table=table, propose=propose: propose(server, table, v, c),
        )
    local = Embedded(tmp_path)
    out["embedded-sqlite"] = (
        local.create("t"),
        lambda v, c: local.propose("t", v, c),
    )
    return out


def test_no_principal_can_freeze_a_table_with_a_timestamp(server: Server, tmp_path: Path) -> None:
    """Every route refuses an in-commit timestamp far ahead of the catalog's clock; one a
    little ahead (within the allowed skew) is taken, and the table stays writable after."""
    import pyarrow.parquet as pq

    refused: dict[str, list[str]] = {}
    for route, (location, propose) in freeze_routes(server, tmp_path).items():

        def attempt(version: int, ict: int, location: Path = location, propose: Any = propose):
            name = f"part-{uuid.uuid4()}.parquet"
            pq.write_table(rows(9), location / name)
            size = (location / name).stat().st_size
            status, body = propose(version, commit(info(ict), add(name, size)))
            return status, body

        now = int(time.time() * 1000)
        for what, ict in {
            "2^63 - 1": 2**63 - 1,
            "2^63 - 4": 2**63 - 4,
            "a year ahead": now + YEAR_MS,
            "an hour ahead": now + 3_600_000,
        }.items():
            status, body = attempt(1, ict)
            assert status == 400 and "clock" in json.dumps(body), (route, what, status, body)
            refused.setdefault(route, []).append(what)
    assert len(refused) == 5 and all(len(v) == 4 for v in refused.values()), refused


def test_a_timestamp_within_the_skew_is_taken_and_writes_go_on(
    server: Server, tmp_path: Path
) -> None:
    """A writer whose clock runs a minute fast is not refused, and the table's next commits
    follow its timestamp as "In-Commit Timestamps" asks."""
    import pyarrow.parquet as pq

    for route, (location, propose) in freeze_routes(server, tmp_path).items():
        name = f"part-{uuid.uuid4()}.parquet"
        pq.write_table(rows(9), location / name)
        size = (location / name).stat().st_size
        ahead = int(time.time() * 1000) + 60_000
        status, body = propose(1, commit(info(ahead), add(name, size)))
        assert status == 200, (route, body)
    for table in ("lance_inline", "lance_staged", "batch", "unity"):
        t = server.writer.load_table(f"main.sales.{table}")
        dl.write_table(t, rows(2), mode="append")
        after = server.admin.load_table(f"main.sales.{table}")
        assert ids(after) == [1, 2, 9], table
        stamps = [ts for _, ts, _ in sorted(after._raw.history(None))]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), table


# -- rewriting published history ---------------------------------------------------------------


def forge_metadata(location: Path, version: int, **configuration: str) -> None:
    """Rewrites the published ``<version>.json`` with a ``metaData`` action carrying
    ``configuration`` (as the probe did: a forged owner tag, appendOnly switched on)."""
    log = location / "_delta_log"
    first = [json.loads(line) for line in (log / f"{0:020}.json").read_text().splitlines()]
    meta = next(a for a in first if "metaData" in a)
    meta["metaData"]["configuration"].update(configuration)
    path = log / f"{version:020}.json"
    path.write_text(path.read_text() + json.dumps(meta) + "\n")


def uc_load(server: Server, table: str) -> tuple[int, Any]:
    base = f"/api/2.1/unity-catalog/delta/v1/catalogs/main/schemas/sales/tables/{table}"
    return server.request("GET", base, None, "reader")


def integrity(server: Server, table: str) -> str | None:
    quoted = urllib.parse.quote(f"main$sales${table}", safe="")
    status, body = server.request(
        "POST", f"/v1/table/{quoted}/describe", {"id": ["main", "sales", table]}, "reader"
    )
    assert status == 200, body
    return (body.get("properties") or {}).get("delta.logIntegrity")


def test_a_rewritten_published_commit_is_refused_reported_and_repaired(server: Server) -> None:
    """The probe's rewrite: a published commit changed in storage to add a forged owner tag and
    switch appendOnly on. Before issue #42 the reader showed the forged tag and a writer's
    DELETE was refused as append-only; now every reader through the catalog refuses the
    changed file (LogIntegrityError naming the version), describe reports it, UC's loadTable
    refuses the table, and the admin's repair puts the ratified commit back."""
    import pyarrow.parquet as pq

    server.writer.write_table("main.sales.r", rows(1, 2))
    location = server.location("r")
    name = f"part-{uuid.uuid4()}.parquet"
    pq.write_table(rows(3), location / name)
    ict = int(time.time() * 1000)
    status, body = lance_staged(
        server, "r", 1, commit(info(ict), add(name, (location / name).stat().st_size))
    )
    assert status == 200, body
    dl.write_table(server.writer.load_table("main.sales.r"), rows(4), mode="append")  # v2
    assert (location / "_delta_log" / f"{1:020}.json").exists()  # published
    assert integrity(server, "r") is None and uc_load(server, "r")[0] == 200

    forge_metadata(location, 1, **{"owner.tag": "forged", "delta.appendOnly": "true"})
    reader = server.connect("reader").load_table("main.sales.r")
    with pytest.raises(dl.LogIntegrityError) as refused:
        reader.to_pyarrow_table()
    assert refused.value.version == 1 and "00000000000000000001.json" in str(refused.value)
    with pytest.raises(dl.LogIntegrityError):  # not "append-only": the forged rule is not read
        server.writer.load_table("main.sales.r").delete("id = 1")
    with pytest.raises(dl.LogIntegrityError):
        server.writer.load_table("main.sales.r", version=1).to_pyarrow_table()
    assert "version 1" in (integrity(server, "r") or "")
    status, body = uc_load(server, "r")
    assert status == 500 and "version 1" in body["error"]["message"], body

    # Repair needs an admin; it republishes the ratified (staged) commit.
    with pytest.raises(dl.CatalogPermissionError):
        server.writer.repair_table("main.sales.r")
    server.admin.repair_table("main.sales.r")
    assert ids(server.connect("reader").load_table("main.sales.r")) == [1, 2, 3, 4]
    assert integrity(server, "r") is None and uc_load(server, "r")[0] == 200
    assert list((location / "_delta_log" / "_tampered").iterdir())  # kept aside
    t = server.writer.load_table("main.sales.r")
    t.delete("id = 1")
    assert ids(server.admin.load_table("main.sales.r")) == [2, 3, 4]
    assert "owner.tag" not in server.admin.load_table("main.sales.r").metadata().configuration


def test_an_unrepairable_version_is_rolled_back_over_published_history(server: Server) -> None:
    """An inline commit's content is gone once published: a changed copy cannot be republished.
    The admin then rolls the table back over published versions (refused without saying so:
    it used to answer success and change nothing); the later log files are kept aside and the
    table is readable and writable at the version rolled back to."""
    server.writer.write_table("main.sales.u", rows(1))
    for i in (2, 3):
        dl.write_table(server.writer.load_table("main.sales.u"), rows(i), mode="append")
    location = server.location("u")
    forge_metadata(location, 2, **{"owner.tag": "forged"})
    with pytest.raises(dl.CatalogError, match=r"\[2\]"):
        server.admin.repair_table("main.sales.u")
    with pytest.raises(dl.CatalogError, match="rollbackPublished"):
        server.admin.rollback_table("main.sales.u", 1)
    with pytest.raises(dl.CatalogPermissionError):
        server.writer.rollback_table("main.sales.u", 1, published=True)
    server.admin.rollback_table("main.sales.u", 1, published=True)
    assert server.latest("u") == 1
    assert ids(server.connect("reader").load_table("main.sales.u")) == [1, 2]
    aside = list((location / "_delta_log" / "_rolled_back").iterdir())
    assert len(aside) == 1 and (aside[0] / f"{2:020}.json").exists()
    dl.write_table(server.writer.load_table("main.sales.u"), rows(5), mode="append")
    assert ids(server.admin.load_table("main.sales.u")) == [1, 2, 5]
    assert uc_load(server, "u")[0] == 200 and integrity(server, "u") is None


def test_a_rewritten_version_0_is_refused_and_a_path_writer_changes_nothing(
    server: Server,
) -> None:
    """The probe's version 0 rewritten without catalogManaged broke every catalog reader with
    an unrelated error, after which a path writer with no token committed version 1 by
    put-if-absent. Now the catalog's readers and writers refuse version 0 by name (the
    table fails closed until an admin restores the file: its ratified SHA-256 is in the
    message), the path writer's file is not the catalog's version 1, and once version 0 is
    restored the catalog's next commit sets that file aside (the admin's repair)."""
    server.writer.write_table("main.sales.z", rows(1))
    location = server.location("z")
    log = location / "_delta_log"
    original = (log / f"{0:020}.json").read_bytes()
    actions = [json.loads(line) for line in original.decode().splitlines()]
    for a in actions:
        if "protocol" in a:
            a["protocol"] = {"minReaderVersion": 1, "minWriterVersion": 2}
        if "metaData" in a:
            a["metaData"]["configuration"] = {}
    (log / f"{0:020}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    with pytest.raises(dl.LogIntegrityError) as refused:
        server.connect("reader").load_table("main.sales.z").to_pyarrow_table()
    assert refused.value.version == 0
    with pytest.raises(dl.LogIntegrityError):
        dl.write_table(server.writer.load_table("main.sales.z"), rows(2), mode="append")
    assert "version 0" in (integrity(server, "z") or "")
    # A path writer, no token: the table looks like a plain one to it.
    dl.write_table(str(location), rows(66), mode="append")
    assert (log / f"{1:020}.json").exists() and server.latest("z") == 0
    # The admin restores version 0 (a copy whose SHA-256 is the ratified one); the path
    # writer's version 1 is no version of the catalog's, and the repair sets it aside once
    # the catalog ratifies its own version 1.
    (log / f"{0:020}.json").write_bytes(original)
    assert ids(server.connect("reader").load_table("main.sales.z")) == [1]
    dl.write_table(server.writer.load_table("main.sales.z"), rows(2), mode="append")
    assert ids(server.connect("reader").load_table("main.sales.z")) == [1, 2]
    server.admin.repair_table("main.sales.z")
    assert json.loads((log / f"{1:020}.json").read_text().splitlines()[-1])["add"]
    published = dl.DeltaTable(str(location), published_only=True)
    assert ids(published) == [1, 2]  # the published log is the catalog's


def test_the_embedded_catalogs_check_the_same(tmp_path: Path) -> None:
    """The embedded SQLite catalog's readers check published commits too, and its admin API
    repairs and rolls back as the server does."""
    cat = dl.connect_catalog(
        {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    )
    cat.create_namespace("s")
    cat.write_table("s.t", rows(1))
    for i in (2, 3):
        dl.write_table(cat.load_table("s.t"), rows(i), mode="append")
    location = Path(cat.load_table("s.t").table_uri.removeprefix("file://"))
    forge_metadata(location, 1, **{"delta.appendOnly": "true"})
    with pytest.raises(dl.LogIntegrityError) as refused:
        cat.load_table("s.t").delete("id = 1")
    assert refused.value.version == 1
    assert cat.repair_table("s.t") == {"republished": [], "unrepairable": [1]}
    with pytest.raises(dl.CatalogError):
        cat.rollback_table("s.t", 0)
    assert cat.rollback_table("s.t", 0, published=True) == [1, 2]
    assert ids(cat.load_table("s.t")) == [1]
    dl.write_table(cat.load_table("s.t"), rows(4), mode="append")
    assert ids(cat.load_table("s.t")) == [1, 4]


def test_a_rewritten_checkpoint_cannot_change_the_tables_rules(tmp_path: Path) -> None:
    """A checkpoint is derived state the catalog never sees; one rewritten to switch
    appendOnly on (or to change the schema) disagrees with the protocol and metadata the
    catalog holds for that version, and the catalog's readers refuse it."""
    import pyarrow.parquet as pq

    cat = dl.connect_catalog(
        {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    )
    cat.create_namespace("s")
    cat.write_table("s.t", rows(1))
    dl.write_table(cat.load_table("s.t"), rows(2), mode="append")
    t = cat.load_table("s.t")
    t.create_checkpoint()
    location = Path(t.table_uri.removeprefix("file://"))
    checkpoint = location / "_delta_log" / f"{1:020}.checkpoint.parquet"
    table = pq.read_table(checkpoint)
    records = table.to_pylist()
    for r in records:
        if r.get("metaData"):
            config = dict(r["metaData"]["configuration"] or [])
            config["delta.appendOnly"] = "true"
            r["metaData"]["configuration"] = list(config.items())
    pq.write_table(pa.Table.from_pylist(records, schema=table.schema), checkpoint)
    # The commits after the checkpoint are gone (as after metadata cleanup): only the
    # checkpoint says what version 1 is.
    for v in (0, 1):
        (location / "_delta_log" / f"{v:020}.json").unlink()
    with pytest.raises(dl.LogIntegrityError, match="table properties"):
        cat.load_table("s.t").delete("id = 1")


def test_a_readers_replay_of_an_accepted_commit_is_refused(server: Server) -> None:
    """A replay of an accepted commit is a no-op for a writer (its answer was lost); for a
    reader it is refused like any update (403), on UC's routes as on Lance's (the UC route
    answered it 200)."""
    import pyarrow.parquet as pq

    server.writer.write_table("main.sales.p", rows(1))
    location = server.location("p")
    name = f"part-{uuid.uuid4()}.parquet"
    pq.write_table(rows(2), location / name)
    content = commit(info(int(time.time() * 1000)), add(name, (location / name).stat().st_size))
    base = "/api/2.1/unity-catalog/delta/v1/catalogs/main/schemas/sales/tables/p"
    status, loaded = server.request("GET", base, None)
    staged = server.stage("p", 1, content)
    path = location / "_delta_log" / "_staged_commits" / staged
    update = {
        "requirements": [{"type": "assert-table-uuid", "uuid": loaded["metadata"]["table-uuid"]}],
        "updates": [
            {
                "action": "add-commit",
                "commit": {
                    "version": 1,
                    "timestamp": json.loads(content.decode().splitlines()[0])["commitInfo"][
                        "inCommitTimestamp"
                    ],
                    "file-name": staged,
                    "file-size": path.stat().st_size,
                    "file-modification-timestamp": int(path.stat().st_mtime * 1000),
                },
            }
        ],
    }
    assert server.request("POST", base, update, "writer")[0] == 200
    assert server.request("POST", base, update, "writer")[0] == 200  # the writer's replay
    status, body = server.request("POST", base, update, "reader")
    assert status == 403 and body["error"]["type"] == "PermissionDeniedException", body
    quoted = urllib.parse.quote("main$sales$p", safe="")
    request = {
        "id": ["main", "sales", "p"],
        "version": 1,
        "manifest_path": f"_delta_log/_staged_commits/{staged}",
    }
    status, _ = server.request("POST", f"/v1/table/{quoted}/version/create", request, "reader")
    assert status == 403
    assert server.latest("p") == 1


def test_a_link_to_another_tables_file_is_refused_on_every_route(
    server: Server, tmp_path: Path
) -> None:
    """Item 5 on the same routes: a proposal adding a data file that is a symbolic link to
    another table's file (or lies under a linked directory) is refused, naming the link,
    whichever way it reaches the catalog (test_catalog_symlinks.py covers the clients)."""
    server.writer.write_table("main.sales.secret", rows(42))
    secret = server.location("secret")
    theirs = next(secret.glob("*.parquet"))
    refused: dict[str, list[str]] = {}
    for route, (location, propose) in freeze_routes(server, tmp_path).items():
        link = f"link-{uuid.uuid4()}.parquet"
        (location / link).symlink_to(theirs)
        linked_dir = f"dir-{uuid.uuid4()}"
        (location / linked_dir).symlink_to(secret)
        for what, path in (("link", link), ("linked directory", f"{linked_dir}/{theirs.name}")):
            ict = int(time.time() * 1000)
            status, body = propose(1, commit(info(ict), add(path, theirs.stat().st_size)))
            text = json.dumps(body)
            assert status == 400 and ("symbolic link" in text or "real root" in text), (
                route,
                what,
                status,
                body,
            )
            refused.setdefault(route, []).append(what)
    assert len(refused) == 5 and all(len(v) == 2 for v in refused.values()), refused
