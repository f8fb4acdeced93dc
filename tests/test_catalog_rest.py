"""deltalog's REST catalog server (``deltalog catalog serve``, started as a real process per
test: tests/catalog_server.py) against independent clients: the generated
``lance-namespace-urllib3-client`` on every namespace, table and table-version route, pylance's
``lance.namespace`` REST namespace, raw HTTP for what clients never send, and pylance's own
reference REST adapter for a differential run. Commits sent by hand (not by deltalog) are read
back by deltalog and by ``deltalake``."""

from __future__ import annotations

import gc
import hashlib
import json
import time
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import urllib3
from lance_namespace_urllib3_client import (
    ApiClient,
    Configuration,
    NamespaceApi,
    TableApi,
    exceptions as api_errors,
    models as m,
)

import catalog_server
import deltalog as dl
from deltalog.catalog import reports

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def server(tmp_path: Path) -> Any:
    with catalog_server.running(tmp_path / "server") as running:
        yield running


def apis(url: str, token: str | None = None) -> tuple[NamespaceApi, TableApi]:
    client = ApiClient(Configuration(host=url, access_token=token))
    return NamespaceApi(client), TableApi(client)


def error_of(e: api_errors.ApiException) -> dict[str, Any]:
    """The ErrorResponse of an error answer, checked against the spec's model."""
    body = json.loads(e.body)
    m.ErrorResponse.from_dict(body)
    return dict(body)


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def hand_commit(location: str, version: int, values: list[int]) -> str:
    """A commit written by hand, not by deltalog: a parquet file written by pyarrow and its
    ``add`` action, after a ``commitInfo`` with an in-commit timestamp and a ``txnId`` (the
    catalogManaged RFC's "Writer Requirements")."""
    name = f"part-hand-{uuid.uuid4()}.parquet"
    pq.write_table(rows(*values), f"{location}/{name}")
    now = int(time.time() * 1000) + version  # in-commit timestamps rise
    stats = {"numRecords": len(values), "minValues": {"id": min(values)}}
    stats["maxValues"] = {"id": max(values)}
    stats["nullCount"] = {"id": 0}
    actions = [
        {
            "commitInfo": {
                "inCommitTimestamp": now,
                "timestamp": now,
                "operation": "WRITE",
                "txnId": str(uuid.uuid4()),
            }
        },
        {
            "add": {
                "path": name,
                "partitionValues": {},
                "size": Path(f"{location}/{name}").stat().st_size,
                "modificationTime": now,
                "dataChange": True,
                "stats": json.dumps(stats),
            }
        },
    ]
    return "\n".join(json.dumps(a) for a in actions) + "\n"


# -- the generated client ----------------------------------------------------------------------


def test_the_generated_client_on_every_route(server: Any, tmp_path: Path) -> None:
    ns, tables = apis(server.url)
    # Namespaces: create, list (paged), describe, exists, and their errors.
    assert ns.create_namespace("db", m.CreateNamespaceRequest(properties={"owner": "x"})).properties
    ns.create_namespace("db$inner", m.CreateNamespaceRequest())
    for i in range(5):
        ns.create_namespace(f"p{i}", m.CreateNamespaceRequest())
    page = ns.list_namespaces("$", limit=3)
    assert page.namespaces == ["db", "p0", "p1"] and page.page_token == "p1"
    page = ns.list_namespaces("$", limit=3, page_token=page.page_token)
    assert page.namespaces == ["p2", "p3", "p4"] and not page.page_token
    assert ns.list_namespaces("db").namespaces == ["inner"]
    described = ns.describe_namespace("db", m.DescribeNamespaceRequest())
    assert described.properties == {"owner": "x"}
    ns.namespace_exists("db$inner", m.NamespaceExistsRequest())
    with pytest.raises(api_errors.NotFoundException) as missing:
        ns.namespace_exists("nope", m.NamespaceExistsRequest())
    assert error_of(missing.value)["code"] == 1
    with pytest.raises(api_errors.ConflictException) as taken:
        ns.create_namespace("db", m.CreateNamespaceRequest())
    assert error_of(taken.value)["code"] == 2
    with pytest.raises(api_errors.ConflictException) as busy:
        ns.drop_namespace("db", m.DropNamespaceRequest())
    assert error_of(busy.value)["code"] == 3

    # A table created from an Arrow IPC stream (CreateTable): a catalog-managed Delta table.
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows(1).schema) as writer:
        writer.write_table(rows(1, 2))
    created = tables.create_table("db$t", sink.getvalue().to_pybytes())
    assert created.version == 0
    with pytest.raises(api_errors.ConflictException):
        tables.create_table("db$t", sink.getvalue().to_pybytes())
    # Declared, then described: a catalog-managed Delta table ("Table Discovery").
    declared = tables.declare_table("db$d", m.DeclareTableRequest())
    assert declared.managed_versioning is True
    # Registered: a storage-managed table written by deltalake.
    ext = str(tmp_path / "ext")
    deltalake.write_deltalake(ext, rows(7))
    registered = tables.register_table("db$ext", m.RegisterTableRequest(location=ext))
    assert registered.properties == {"format": "delta", "delta.catalogManaged": "false"}
    assert ns.list_tables("db").tables == ["d", "ext", "t"]
    assert ns.list_tables("db", include_declared=False).tables == ["ext", "t"]
    assert tables.list_all_tables(limit=2).tables == ["db$d", "db$ext"]
    t = tables.describe_table("db$t", m.DescribeTableRequest(), with_table_uri=True)
    assert t.managed_versioning is True and t.version == 0
    assert t.properties == {"format": "delta", "delta.catalogManaged": "true"}
    assert t.table_uri is not None and t.table_uri.startswith("file://")
    assert t.metadata is not None
    assert "catalogManaged" in json.loads(t.metadata["delta.protocol"])["readerFeatures"]
    assert tables.describe_table("db$d", m.DescribeTableRequest()).is_only_declared is True
    tables.table_exists("db$t", m.TableExistsRequest())
    with pytest.raises(api_errors.NotFoundException) as nt:
        tables.describe_table("db$zz", m.DescribeTableRequest())
    assert error_of(nt.value)["code"] == 4

    # Table versions: a commit written by hand, proposed inline, then staged.
    location = str(t.location)
    inline = hand_commit(location, 1, [3])
    answer = tables.create_table_version(
        "db$t",
        m.CreateTableVersionRequest(
            version=1,
            manifest_path="_delta_log/00000000000000000001.json",
            metadata={"delta.inlineCommit": inline},
        ),
    )
    assert answer.version is not None and answer.version.version == 1
    staged_name = f"{2:020}.{uuid.uuid4()}.json"
    staged_dir = Path(location) / "_delta_log" / "_staged_commits"
    staged_dir.mkdir(exist_ok=True)
    (staged_dir / staged_name).write_text(hand_commit(location, 2, [4, 5]))
    tables.create_table_version(
        "db$t",
        m.CreateTableVersionRequest(
            version=2, manifest_path=f"_delta_log/_staged_commits/{staged_name}"
        ),
    )
    # Version 2 again, the same staged file: the commit ratified (its answer lost), a success.
    again = tables.create_table_version(
        "db$t",
        m.CreateTableVersionRequest(
            version=2, manifest_path=f"_delta_log/_staged_commits/{staged_name}"
        ),
    )
    assert again.version.version == 2
    # Version 2, another commit: taken, and the answer says what a writer needs to rebase.
    other_name = f"{2:020}.{uuid.uuid4()}.json"
    (staged_dir / other_name).write_text(hand_commit(location, 2, [9]))
    with pytest.raises(api_errors.ConflictException) as lost:
        tables.create_table_version(
            "db$t",
            m.CreateTableVersionRequest(
                version=2, manifest_path=f"_delta_log/_staged_commits/{other_name}"
            ),
        )
    (staged_dir / other_name).unlink()
    body = error_of(lost.value)
    assert body["code"] == 14 and body["context"]["delta.latestVersion"] == "2"
    assert [c["version"] for c in json.loads(body["context"]["delta.ratifiedCommits"])] == [2]
    # Every version: 0 published, 1 (inline) and 2 (staged) held, each with its SHA-256.
    listed = tables.list_table_versions("db$t")
    assert [v.version for v in listed.versions] == [0, 1, 2]
    assert listed.versions[0].metadata["delta.published"] == "true"
    assert listed.versions[1].metadata["delta.inlineCommit"] == inline
    digest = hashlib.sha256(inline.encode()).hexdigest()
    assert listed.versions[1].metadata["delta.sha256"] == digest
    assert listed.versions[2].manifest_path.endswith(staged_name)
    assert listed.context == {"delta.latestVersion": "2"}
    assert tables.list_table_versions("db$t", limit=1, descending=True).versions[0].version == 2
    got = tables.describe_table_version("db$t", m.DescribeTableVersionRequest(version=2))
    assert got.version.manifest_path.endswith(staged_name)
    with pytest.raises(api_errors.NotFoundException) as nv:
        tables.describe_table_version("db$t", m.DescribeTableVersionRequest(version=9))
    assert error_of(nv.value)["code"] == 11
    # deltalog reads the unpublished commits the catalog returns.
    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    assert ids(cat.load_table("db.t")) == [1, 2, 3, 4, 5]
    # Not published yet: the catalog refuses to forget them.
    with pytest.raises(api_errors.ConflictException) as early:
        tables.batch_delete_table_versions(
            "db$t",
            m.BatchDeleteTableVersionsRequest(
                ranges=[m.VersionRange(start_version=0, end_version=-1)]
            ),
        )
    assert error_of(early.value)["code"] == 19
    # A deltalog writer publishes them, byte for byte, and the catalog forgets them.
    dl.write_table(cat.load_table("db.t"), rows(6), mode="append")
    listed = tables.list_table_versions("db$t").versions
    assert [v.metadata["delta.published"] for v in listed] == ["true"] * 4
    log = Path(location) / "_delta_log"
    assert (log / f"{1:020}.json").read_text() == inline
    assert (log / f"{2:020}.json").read_text() == (staged_dir / staged_name).read_text()
    assert ids(cat.load_table("db.t")) == [1, 2, 3, 4, 5, 6]
    # Two tables in one batch: both ratified, or neither.
    cat.write_table("db.u", rows(10))
    u_location = str(tables.describe_table("db$u", m.DescribeTableRequest()).location)
    batch = m.BatchCreateTableVersionsRequest(
        entries=[
            m.CreateTableVersionEntry(
                id=["db", "t"],
                version=4,
                manifest_path=f"_delta_log/{4:020}.json",
                metadata={"delta.inlineCommit": hand_commit(location, 4, [7])},
            ),
            m.CreateTableVersionEntry(
                id=["db", "u"],
                version=5,  # behind is 0: version 5 is not next
                manifest_path=f"_delta_log/{5:020}.json",
                metadata={"delta.inlineCommit": hand_commit(u_location, 5, [11])},
            ),
        ]
    )
    with pytest.raises(api_errors.ConflictException):
        tables.batch_create_table_versions(batch)
    assert len(tables.list_table_versions("db$t").versions) == 4  # nothing ratified
    batch.entries[1].version = 1
    batch.entries[1].manifest_path = f"_delta_log/{1:020}.json"
    done = tables.batch_create_table_versions(batch)
    assert [v.version for v in done.versions] == [4, 1]
    assert ids(cat.load_table("db.t"))[-1] == 7 and ids(cat.load_table("db.u")) == [10, 11]
    # Deregister keeps the files; drop deletes them.
    dl.write_table(cat.load_table("db.t"), rows(8), mode="append")  # publishes 4
    tables.deregister_table("db$ext", m.DeregisterTableRequest())
    assert Path(ext).exists()
    dropped = tables.drop_table("db$t")
    assert dropped.location == location and not Path(location).exists()
    ns.drop_namespace("db", m.DropNamespaceRequest(behavior="Cascade"))
    assert ns.list_namespaces("$").namespaces == ["p0", "p1", "p2", "p3", "p4"]


# -- pylance ----------------------------------------------------------------------------------


def test_describe_table_honours_version(server: Any) -> None:
    """``DescribeTable`` with ``version`` describes that version: its number, and its own
    protocol and metadata (the schema before a column was added), not the latest's."""
    _, tables = apis(server.url)
    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.write_table("t", rows(1))
    cat.load_table("t").alter.add_columns(pa.schema({"x": pa.int64()}))

    def fields(answer: Any) -> list[str]:
        schema = json.loads(json.loads(answer.metadata["delta.metaData"])["schemaString"])
        return [f["name"] for f in schema["fields"]]

    latest = tables.describe_table("t", m.DescribeTableRequest())
    assert latest.version == 1 and fields(latest) == ["id", "x"]
    old = tables.describe_table("t", m.DescribeTableRequest(version=0))
    assert old.version == 0 and fields(old) == ["id"]
    assert "catalogManaged" in json.loads(old.metadata["delta.protocol"])["readerFeatures"]
    with pytest.raises(api_errors.NotFoundException) as missing:
        tables.describe_table("t", m.DescribeTableRequest(version=7))
    assert error_of(missing.value)["code"] == 11


def test_pylance_rest_namespace(server: Any, tmp_path: Path) -> None:
    import lance_namespace as ln
    from lance_namespace import errors

    client = ln.connect("rest", {"uri": server.url})
    client.create_namespace(ln.CreateNamespaceRequest(id=["lake"], properties={"team": "a"}))
    client.create_namespace(ln.CreateNamespaceRequest(id=["lake", "raw"]))
    assert client.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["lake"]
    assert client.list_namespaces(ln.ListNamespacesRequest(id=["lake"])).namespaces == ["raw"]
    described = client.describe_namespace(ln.DescribeNamespaceRequest(id=["lake"]))
    assert described.properties == {"team": "a"}
    with pytest.raises(errors.NamespaceAlreadyExistsError):
        client.create_namespace(ln.CreateNamespaceRequest(id=["lake"]))
    with pytest.raises(errors.NamespaceNotFoundError):
        client.describe_namespace(ln.DescribeNamespaceRequest(id=["nope"]))
    with pytest.raises(errors.NamespaceNotEmptyError):
        client.drop_namespace(ln.DropNamespaceRequest(id=["lake"]))
    # Tables: one registered (written by deltalake), one catalog-managed made by deltalog.
    ext = str(tmp_path / "ext")
    deltalake.write_deltalake(ext, rows(1))
    client.register_table(ln.RegisterTableRequest(id=["lake", "ext"], location=ext))
    with pytest.raises(errors.TableAlreadyExistsError):
        client.register_table(ln.RegisterTableRequest(id=["lake", "ext"], location=ext))
    cat = dl.connect_catalog({"type": "rest", "uri": server.url})
    cat.write_table("lake.managed", rows(1))
    t = cat.load_table("lake.managed")
    for i in range(3):
        dl.write_table(t, rows(i), mode="append")
    listed = client.list_tables(ln.ListTablesRequest(id=["lake"]))
    assert listed.tables == ["ext", "managed"]
    managed = client.describe_table(ln.DescribeTableRequest(id=["lake", "managed"]))
    assert managed.managed_versioning and managed.version == 3
    assert managed.properties["delta.catalogManaged"] == "true"
    plain = client.describe_table(ln.DescribeTableRequest(id=["lake", "ext"]))
    assert plain.location == ext and not plain.managed_versioning
    versions = client.list_table_versions(ln.ListTableVersionsRequest(id=["lake", "managed"]))
    assert [v.version for v in versions.versions] == [0, 1, 2, 3]
    # Each writer reports its commit published with its next one: the last is still held...
    assert [v.metadata.get("delta.published") for v in versions.versions] == [
        "true",
        "true",
        "true",
        None,
    ]
    assert versions.context["delta.latestVersion"] == "3"
    # ... until the writer's client goes away (here; else at exit), which reports it.
    del t
    gc.collect()
    reports.flush()  # a collected client's report goes from the reporting thread
    versions = client.list_table_versions(ln.ListTableVersionsRequest(id=["lake", "managed"]))
    assert all(v.metadata["delta.published"] == "true" for v in versions.versions)
    with pytest.raises(errors.TableNotFoundError):
        client.describe_table(ln.DescribeTableRequest(id=["lake", "nope"]))
    client.deregister_table(ln.DeregisterTableRequest(id=["lake", "ext"]))
    assert client.list_tables(ln.ListTablesRequest(id=["lake"])).tables == ["managed"]
    assert deltalake.DeltaTable(ext).version() == 0  # its files are still there
    client.drop_namespace(ln.DropNamespaceRequest(id=["lake", "raw"]))
    assert client.list_namespaces(ln.ListNamespacesRequest(id=["lake"])).namespaces == []


# -- the reference adapter ------------------------------------------------------------------

#: Requests whose answers differ from pylance's reference adapter on purpose (documented in
#: docs/catalogs.md): deltalog's status code for each.
INTENDED = {
    # mode ExistOk: the spec says an existing namespace is fine; the adapter ignores the mode.
    ("POST", "/v1/namespace/a/create", '{"mode": "ExistOk"}'): 200,
    # A missing namespace is 404 code 1 (the spec lists it); the adapter lists nothing.
    ("GET", "/v1/namespace/zz/list", ""): 404,
    ("GET", "/v1/namespace/zz/table/list", ""): 404,
    # A table's namespace must exist; the directory adapter's tables are flat.
    ("POST", "/v1/table/zz%24t/declare", "{}"): 404,
    # mode Skip: "the server must return 204" for a missing namespace (spec); the adapter
    # ignores the mode.
    ("POST", "/v1/namespace/a/drop", '{"mode": "Skip"}'): 204,
    # Unknown fields are refused; the adapter ignores them.
    ("POST", "/v1/namespace/a/describe", '{"bogus": 1}'): 400,
    # Pages are at most 1,000 items.
    ("GET", "/v1/table?limit=100000", ""): 400,
    # behavior Cascade drops what the namespace holds; the adapter refuses.
    ("POST", "/v1/namespace/p0/drop", '{"behavior": "Cascade"}'): 200,
    # deltalog serves RenameTable (the adapter answers 406).
    ("POST", "/v1/table/p0%24t1/rename", '{"new_table_name": "t2"}'): 200,
    # Operations deltalog does not serve: code 0 (Unsupported, 406).
    ("GET", "/v1/nothing", ""): 406,
}

_STEPS: list[tuple[str, str, str]] = [
    ("GET", "/v1/namespace/%24/list", ""),
    ("POST", "/v1/namespace/a/create", "{}"),
    ("POST", "/v1/namespace/a/create", "{}"),
    ("POST", "/v1/namespace/a/create", '{"mode": "ExistOk"}'),
    ("POST", "/v1/namespace/a/describe", "{}"),
    ("POST", "/v1/namespace/a/exists", "{}"),
    ("POST", "/v1/namespace/zz/exists", "{}"),
    ("POST", "/v1/namespace/zz/describe", "{}"),
    ("POST", "/v1/namespace/zz%24q/create", "{}"),
    ("POST", "/v1/namespace/a%24b/create", '{"properties": {"x": "y"}}'),
    ("POST", "/v1/namespace/a%24b/describe", "{}"),
    ("GET", "/v1/namespace/a/list", ""),
    ("GET", "/v1/namespace/zz/list", ""),
    ("GET", "/v1/namespace/a/table/list", ""),
    ("GET", "/v1/namespace/zz/table/list", ""),
    ("POST", "/v1/table/a%24t/declare", "{}"),
    ("POST", "/v1/table/a%24t/declare", "{}"),
    ("POST", "/v1/table/zz%24t/declare", "{}"),
    ("GET", "/v1/namespace/a/table/list", ""),
    ("POST", "/v1/table/a%24t/describe", "{}"),
    ("POST", "/v1/table/a%24t/exists", "{}"),
    ("POST", "/v1/table/a%24zz/describe", "{}"),
    ("POST", "/v1/table/a%24zz/exists", "{}"),
    ("POST", "/v1/namespace/a/drop", "{}"),
    ("POST", "/v1/table/a%24t/deregister", "{}"),
    ("POST", "/v1/table/a%24t/deregister", "{}"),
    ("POST", "/v1/namespace/a%24b/drop", "{}"),
    ("POST", "/v1/namespace/a/drop", "{}"),
    ("POST", "/v1/namespace/a/drop", "{}"),
    ("POST", "/v1/namespace/a/drop", '{"mode": "Skip"}'),
    ("POST", "/v1/namespace/a/describe", "{not json"),
    ("POST", "/v1/namespace/a/describe", '{"id": 5}'),
    ("POST", "/v1/namespace/a/describe", '{"id": ["b"]}'),
    ("POST", "/v1/namespace/a/describe", '{"bogus": 1}'),
    ("GET", "/v1/namespace/%24/list?limit=abc", ""),
    *[("POST", f"/v1/namespace/p{i}/create", "{}") for i in range(5)],
    ("GET", "/v1/namespace/%24/list?limit=2", ""),
    ("GET", "/v1/namespace/%24/list?limit=2&page_token=p1", ""),
    ("GET", "/v1/namespace/%24/list?limit=2&page_token=p3", ""),
    ("POST", "/v1/table/p0%24t1/declare", "{}"),
    ("GET", "/v1/namespace/p0/table/list", ""),
    ("GET", "/v1/table?limit=100000", ""),
    ("POST", "/v1/table/p0%24t1/rename", '{"new_table_name": "t2"}'),
    ("POST", "/v1/namespace/p0/drop", '{"behavior": "Cascade"}'),
    ("POST", "/v1/table/p1%24x/rename", "{}"),
    ("GET", "/v1/nothing", ""),
]

#: Fields whose values name storage, which the two servers lay out differently.
_STORAGE_FIELDS = {"location", "table_uri"}


def _equivalent(reference: Any, ours: Any) -> bool:
    """Every field of the reference answer has the same value in ours (storage locations and
    error messages aside); ours may say more (``properties``, ``managed_versioning``,
    ``instance``)."""
    if reference is None or ours is None:
        return reference == ours or (reference is None and ours == {})
    if "code" in reference:
        return bool(reference["code"] == ours.get("code"))
    return all(key in _STORAGE_FIELDS or ours.get(key) == value for key, value in reference.items())


def test_differential_with_the_reference_adapter(server: Any, tmp_path: Path) -> None:
    """The same requests to pylance's reference REST adapter (a directory namespace) and to
    deltalog's server: the same statuses and equivalent bodies, except the documented
    intended differences (:data:`INTENDED`)."""
    from lance.namespace import RestAdapter

    http = urllib3.PoolManager()

    def send(base: str, method: str, path: str, body: str) -> tuple[int, Any]:
        answer = http.request(
            method, base + path, body=body.encode() if body else None, headers=JSON
        )
        try:
            return answer.status, json.loads(answer.data) if answer.data else None
        except ValueError:
            return answer.status, answer.data

    adapter = RestAdapter("dir", {"root": str(tmp_path / "ref")}, host="127.0.0.1", port=0)
    adapter.start()
    try:
        reference = f"http://127.0.0.1:{adapter.port}"
        compared = intended = 0
        for step in _STEPS:
            ref_status, ref_body = send(reference, *step)
            our_status, our_body = send(server.url, *step)
            if step in INTENDED:
                assert our_status == INTENDED[step], (step, our_status, our_body)
                assert ref_status != our_status, f"{step} is no longer a difference"
                intended += 1
                continue
            assert our_status == ref_status, (step, ref_body, our_body)
            assert _equivalent(ref_body, our_body), (step, ref_body, our_body)
            compared += 1
        assert compared >= 35 and intended == len(INTENDED)
    finally:
        adapter.stop()
