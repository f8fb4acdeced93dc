"""The Unity Catalog routes of ``deltalog catalog serve`` (issue #32), driven by plain HTTP
(``unity_helpers.Uc``: urllib3, answers checked against the specs' models) against a real
server process on loopback: the UC API's catalogs,
schemas, tables and credentials, the Delta API v1's whole table life cycle and commit
protocol, UC's error shapes and statuses, and governance by the same tokens and roles as the
Lance routes. Commits are written by hand (pyarrow's parquet, hand-written JSON), not by
deltalog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl
from deltalog.protocol.unity.catalog_api import (
    CreateCatalog,
    CreateSchema,
    GenerateTemporaryTableCredential,
)
from deltalog.server.auth import add_token
from unity_helpers import (
    CatalogsApi,
    DeltaConfigurationApi,
    DeltaTablesApi,
    DeltaTemporaryCredentialsApi,
    SchemasApi,
    TablesApi,
    TemporaryCredentialsApi,
    Uc,
    commit_of,
    delta_error,
    delta_model,
    dump,
    staged_commit,
    uc_error,
)


def update(requirements: list[dict[str, Any]], updates: list[dict[str, Any]]) -> Any:
    """A ``DeltaUpdateTableRequest`` (the spec's model, each item validated by its own)."""
    req_models = {"assert-table-uuid": "DeltaAssertTableUUID", "assert-etag": "DeltaAssertEtag"}
    upd_models = {
        "add-commit": "DeltaAddCommitUpdate",
        "set-latest-backfilled-version": "DeltaSetLatestBackfilledVersionUpdate",
        "set-properties": "DeltaSetPropertiesUpdate",
        "set-protocol": "DeltaSetProtocolUpdate",
    }
    return delta_model("DeltaUpdateTableRequest")(
        requirements=[delta_model(req_models[r["type"]]).model_validate(r) for r in requirements],
        updates=[delta_model(upd_models[u["action"]]).model_validate(u) for u in updates],
    )


@pytest.fixture
def server(tmp_path: Path) -> Any:
    tokens = tmp_path / "tokens.json"
    keys = {role: add_token(tokens, role, role) for role in ("reader", "writer", "admin")}
    with catalog_server.running(tmp_path / "server", tokens=tokens) as running:
        running.keys = keys
        yield running


def deltalog_catalog(server: Any, role: str = "admin") -> Any:
    return dl.connect_catalog({"type": "rest", "uri": server.url, "token": server.keys[role]})


def make_table(server: Any, values: list[int], name: str = "orders") -> Any:
    """main.sales.<name>, catalog-managed, written by deltalog through the Lance routes."""
    cat = deltalog_catalog(server)
    if not cat.namespace_exists(["main"]):
        cat.create_namespace(["main"])
        cat.create_namespace(["main", "sales"])
    cat.write_table(["main", "sales", name], pa.table({"id": pa.array(values, pa.int64())}))
    return cat


def test_catalogs_and_schemas(server: Any) -> None:
    uc = Uc(server.url, server.keys["admin"])
    made = uc(CatalogsApi, "create_catalog", CreateCatalog(name="main", comment="the main one"))
    assert made.name == "main" and made.comment == "the main one" and made.id
    uc(SchemasApi, "create_schema", CreateSchema(name="sales", catalog_name="main"))
    uc(SchemasApi, "create_schema", CreateSchema(name="hr", catalog_name="main"))
    assert [c.name for c in uc(CatalogsApi, "list_catalogs").catalogs] == ["main"]
    schemas = uc(SchemasApi, "list_schemas", catalog_name="main", max_results=1)
    assert [s.name for s in schemas.schemas] == ["hr"] and schemas.next_page_token
    rest = uc(SchemasApi, "list_schemas", catalog_name="main", page_token=schemas.next_page_token)
    assert [s.full_name for s in rest.schemas] == ["main.sales"] and not rest.next_page_token
    assert uc(SchemasApi, "get_schema", "main.sales").catalog_name == "main"
    # The same tree through the Lance routes: catalog main, namespace main$sales.
    assert deltalog_catalog(server).list_namespaces(["main"]) == ["hr", "sales"]

    uc_error(uc.error(CatalogsApi, "get_catalog", "nope"), "NOT_FOUND", 404)
    uc_error(uc.error(SchemasApi, "get_schema", "main.nope"), "NOT_FOUND", 404)
    uc_error(
        uc.error(CatalogsApi, "create_catalog", CreateCatalog(name="main")), "ALREADY_EXISTS", 409
    )
    uc_error(
        uc.error(CatalogsApi, "create_catalog", CreateCatalog(name="bad.name")),
        "INVALID_ARGUMENT",
        400,
    )
    uc_error(uc.error(CatalogsApi, "delete_catalog", "main"), "INVALID_ARGUMENT", 400)
    uc(SchemasApi, "delete_schema", "main.hr")
    uc(CatalogsApi, "delete_catalog", "main", force=True)
    assert uc(CatalogsApi, "list_catalogs").catalogs in ([], None)

    # Roles: a reader lists, only an admin creates.
    reader = Uc(server.url, server.keys["reader"])
    uc_error(
        reader.error(CatalogsApi, "create_catalog", CreateCatalog(name="x")),
        "PERMISSION_DENIED",
        403,
    )
    uc_error(Uc(server.url, "wrong").error(CatalogsApi, "list_catalogs"), "UNAUTHENTICATED", 401)


def test_table_listing_carries_what_engines_need(server: Any) -> None:
    cat = deltalog_catalog(server)
    cat.create_namespace(["main"])
    cat.create_namespace(["main", "sales"])
    data = pa.table(
        {
            "id": pa.array([1], pa.int64()),
            "amount": pa.array([12345], pa.decimal128(10, 2)),
            "tags": pa.array([["a"]], pa.list_(pa.string())),
            "attrs": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int32())),
            "point": pa.array([{"x": 1.0, "y": 2.0}]),
            "at": pa.array([0], pa.timestamp("us", tz="UTC")),
            "day": pa.array(["2026-01-01"]),
        }
    )
    cat.write_table(["main", "sales", "orders"], data, partition_by=["day"])
    uc = Uc(server.url, server.keys["reader"])
    listed = uc(TablesApi, "list_tables", catalog_name="main", schema_name="sales").tables
    assert [t.name for t in listed] == ["orders"]
    info = uc(TablesApi, "get_table", "main.sales.orders")
    assert info.table_id and info.table_type.value == "MANAGED"
    assert info.data_source_format.value == "DELTA"
    location = Path(cat.describe_table(["main", "sales", "orders"]).location)
    assert info.storage_location == location.as_uri()
    assert info.properties.root["delta.feature.catalogManaged"] == "supported"
    assert info.properties.root["delta.enableInCommitTimestamps"] == "true"
    columns = {c.name: c for c in info.columns}
    expected = {
        "id": ("bigint", "LONG"),
        "amount": ("decimal(10,2)", "DECIMAL"),
        "tags": ("array<string>", "ARRAY"),
        "attrs": ("map<string,int>", "MAP"),
        "point": ("struct<x:double,y:double>", "STRUCT"),
        "at": ("timestamp", "TIMESTAMP"),
        "day": ("string", "STRING"),
    }
    for name, (text, type_name) in expected.items():
        assert (columns[name].type_text, columns[name].type_name.value) == (text, type_name)
        assert json.loads(columns[name].type_json)["name"] == name
    assert (columns["amount"].type_precision, columns["amount"].type_scale) == (10, 2)
    assert [c.position for c in info.columns] == list(range(7))
    assert columns["day"].partition_index == 0 and columns["id"].partition_index is None
    # The credentials of a local table: none needed (the path is used as it is).
    credentials = uc(
        TemporaryCredentialsApi,
        "generate_temporary_table_credentials",
        GenerateTemporaryTableCredential(table_id=info.table_id, operation="READ"),
    )
    assert credentials.aws_temp_credentials is None and credentials.url == info.storage_location
    uc_error(
        uc.error(
            TemporaryCredentialsApi,
            "generate_temporary_table_credentials",
            GenerateTemporaryTableCredential(table_id=info.table_id, operation="READ_WRITE"),
        ),
        "PERMISSION_DENIED",
        403,
    )


def test_delta_api_commit_protocol(server: Any) -> None:
    cat = make_table(server, [1, 2])
    location = cat.describe_table(["main", "sales", "orders"]).location
    writer = Uc(server.url, server.keys["writer"])
    config = writer(DeltaConfigurationApi, "get_config", catalog="main", protocol_versions="1.3")
    assert config.protocol_version == "1.0" and len(config.endpoints) == 11
    loaded = writer(DeltaTablesApi, "load_table", "main", "sales", "orders")
    assert loaded.latest_table_version == 0 and not loaded.commits
    uuid, etag = loaded.metadata.table_uuid, loaded.metadata.etag
    assert [f.name for f in loaded.metadata.columns.fields] == ["id"]

    # add-commit: version 1 (a staged file written by hand), then a replay of it (a no-op).
    name = staged_commit(location, 1, [3])
    body = update(
        [{"type": "assert-table-uuid", "uuid": uuid}, {"type": "assert-etag", "etag": etag}],
        [{"action": "add-commit", "commit": commit_of(location, name)}],
    )
    after = writer(DeltaTablesApi, "update_table", "main", "sales", "orders", body)
    assert after.latest_table_version == 1 and [c.version for c in after.commits] == [1]
    assert after.commits[0].file_name == name and after.metadata.etag != etag
    again = writer(DeltaTablesApi, "update_table", "main", "sales", "orders", body)
    assert again.latest_table_version == 1
    # The stale etag and a version not next: 409s in UC's error shape.
    other = staged_commit(location, 2, [4])
    stale = update(
        [{"type": "assert-table-uuid", "uuid": uuid}, {"type": "assert-etag", "etag": etag}],
        [{"action": "add-commit", "commit": commit_of(location, other)}],
    )
    delta_error(
        writer.error(DeltaTablesApi, "update_table", "main", "sales", "orders", stale),
        "UpdateRequirementConflictException",
        409,
    )
    skip = staged_commit(location, 3, [5])
    ahead = update(
        [{"type": "assert-table-uuid", "uuid": uuid}],
        [{"action": "add-commit", "commit": commit_of(location, skip)}],
    )
    delta_error(
        writer.error(DeltaTablesApi, "update_table", "main", "sales", "orders", ahead),
        "CommitVersionConflictException",
        409,
    )
    wrong_uuid = update(
        [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
        [{"action": "add-commit", "commit": commit_of(location, other)}],
    )
    delta_error(
        writer.error(DeltaTablesApi, "update_table", "main", "sales", "orders", wrong_uuid),
        "UpdateRequirementConflictException",
        409,
    )
    # deltalog reads the staged commit the catalog ratified.
    t = cat.load_table(["main", "sales", "orders"])
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]

    # set-latest-backfilled-version: refused while <1>.json does not hold the commit, then the
    # catalog forgets version 1 once it is published.
    backfill = update(
        [{"type": "assert-table-uuid", "uuid": uuid}],
        [{"action": "set-latest-backfilled-version", "latest-published-version": 1}],
    )
    delta_error(
        writer.error(DeltaTablesApi, "update_table", "main", "sales", "orders", backfill),
        "BadRequestException",
        400,
    )
    staged = Path(location) / "_delta_log" / "_staged_commits" / name
    published = Path(location) / "_delta_log" / f"{1:020d}.json"
    published.write_text(staged.read_text().replace('"WRITE"', '"FORGED"'))
    delta_error(
        writer.error(DeltaTablesApi, "update_table", "main", "sales", "orders", backfill),
        "BadRequestException",
        400,
    )
    published.write_bytes(staged.read_bytes())
    done = writer(DeltaTablesApi, "update_table", "main", "sales", "orders", backfill)
    assert done.latest_table_version == 1 and not done.commits


def test_inline_commits_are_files_before_a_uc_client_sees_them(server: Any) -> None:
    cat = make_table(server, [1])
    t = cat.load_table(["main", "sales", "orders"])
    # A catalog whose client keeps publishing from happening: deltalog's commits stay held,
    # inline (small), until the UC route shows them.
    for v in (2, 3):
        dl.write_table(t, pa.table({"id": pa.array([v], pa.int64())}), mode="append")
    location = Path(cat.describe_table(["main", "sales", "orders"]).location)
    loaded = Uc(server.url, server.keys["reader"])(
        DeltaTablesApi, "load_table", "main", "sales", "orders"
    )
    assert loaded.latest_table_version == 2
    for c in loaded.commits or []:
        assert (location / "_delta_log" / "_staged_commits" / c.file_name).is_file()
    versions = {c.version for c in loaded.commits or []}
    for v in range(3):
        assert v in versions or (location / "_delta_log" / f"{v:020d}.json").is_file()


def test_governance_on_the_uc_routes(server: Any) -> None:
    cat = make_table(server, [1])
    location = cat.describe_table(["main", "sales", "orders"]).location
    reader = Uc(server.url, server.keys["reader"])
    writer = Uc(server.url, server.keys["writer"])
    loaded = reader(DeltaTablesApi, "load_table", "main", "sales", "orders")
    name = staged_commit(location, 1, [2])
    body = update(
        [{"type": "assert-table-uuid", "uuid": loaded.metadata.table_uuid}],
        [{"action": "add-commit", "commit": commit_of(location, name)}],
    )
    delta_error(
        reader.error(DeltaTablesApi, "update_table", "main", "sales", "orders", body),
        "PermissionDeniedException",
        403,
    )
    props = update(
        [{"type": "assert-table-uuid", "uuid": loaded.metadata.table_uuid}],
        [
            {"action": "add-commit", "commit": commit_of(location, name)},
            {"action": "set-properties", "updates": {"delta.appendOnly": "true"}},
        ],
    )
    delta_error(
        writer.error(DeltaTablesApi, "update_table", "main", "sales", "orders", props),
        "PermissionDeniedException",
        403,
    )
    # A commit whose content changes the metadata needs an admin, whatever the request says.
    staged = Path(location) / "_delta_log" / "_staged_commits"
    text = (staged / name).read_text().splitlines()
    metadata = json.loads(loaded_metadata_action(cat))
    metadata["configuration"]["delta.appendOnly"] = "true"
    changed = f"{1:020d}.00000000-0000-0000-0000-00000000beef.json"
    (staged / changed).write_text("\n".join([text[0], json.dumps({"metaData": metadata})]) + "\n")
    sneaky = update(
        [{"type": "assert-table-uuid", "uuid": loaded.metadata.table_uuid}],
        [{"action": "add-commit", "commit": commit_of(location, changed)}],
    )
    delta_error(
        writer.error(DeltaTablesApi, "update_table", "main", "sales", "orders", sneaky),
        "PermissionDeniedException",
        403,
    )
    # Nor the protocol, nor the clustering columns.
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["catalogManaged", "deletionVectors"],
        "writerFeatures": ["catalogManaged", "inCommitTimestamp", "deletionVectors"],
    }
    clustering = {
        "domain": "delta.clustering",
        "configuration": json.dumps({"clusteringColumns": [["id"]]}),
        "removed": False,
    }
    for i, action in enumerate([{"protocol": protocol}, {"domainMetadata": clustering}]):
        forged = f"{1:020d}.00000000-0000-0000-0000-0000000000{i:02d}.json"
        (staged / forged).write_text("\n".join([text[0], json.dumps(action)]) + "\n")
        attempt = update(
            [{"type": "assert-table-uuid", "uuid": loaded.metadata.table_uuid}],
            [{"action": "add-commit", "commit": commit_of(location, forged)}],
        )
        delta_error(
            writer.error(DeltaTablesApi, "update_table", "main", "sales", "orders", attempt),
            "PermissionDeniedException",
            403,
        )
    writer(DeltaTablesApi, "update_table", "main", "sales", "orders", body)
    assert reader(DeltaTablesApi, "load_table", "main", "sales", "orders").latest_table_version == 1


def loaded_metadata_action(cat: Any) -> str:
    return json.dumps(cat.describe_table(["main", "sales", "orders"]).metadata)


def test_staging_create_rename_delete(server: Any, tmp_path: Path) -> None:
    admin = Uc(server.url, server.keys["admin"])
    admin(CatalogsApi, "create_catalog", CreateCatalog(name="main"))
    admin(SchemasApi, "create_schema", CreateSchema(name="sales", catalog_name="main"))
    writer = Uc(server.url, server.keys["writer"])
    staged = writer(
        DeltaTablesApi,
        "create_staging_table",
        "main",
        "sales",
        delta_model("DeltaCreateStagingTableRequest")(name="events"),
    )
    assert staged.table_type.value == "MANAGED" and staged.storage_credentials == []
    assert "catalogManaged" in staged.required_protocol.reader_features
    # Not a table yet: not listed, not loadable; its credentials are the staging table's.
    assert not Uc(server.url, server.keys["reader"])(
        TablesApi, "list_tables", catalog_name="main", schema_name="sales"
    ).tables
    delta_error(
        writer.error(DeltaTablesApi, "load_table", "main", "sales", "events"),
        "NoSuchTableException",
        404,
    )
    creds = writer(DeltaTemporaryCredentialsApi, "get_staging_table_credentials", staged.table_id)
    assert creds.storage_credentials == []
    # A version 0 that does not enable catalogManaged (deltalake's) is refused: the catalog
    # never makes a table its own that other writers would commit to by path.
    import deltalake

    location = staged.location.removeprefix("file://")
    deltalake.write_deltalake(location, pa.table({"id": pa.array([1, 2], pa.int64())}))
    request = create_request("events", staged.location)
    status, body = writer.error(DeltaTablesApi, "create_table", "main", "sales", request)
    assert status == 400 and "catalogManaged" in body["error"]["message"], body
    # Version 0 written by hand as an engine does: catalogManaged, in-commit timestamps, the
    # staging table's id. createTable ratifies it; the table is listed and loadable.
    import shutil

    shutil.rmtree(Path(location) / "_delta_log")
    version_zero(location, str(staged.table_id), [1, 2])
    created = writer(DeltaTablesApi, "create_table", "main", "sales", request)
    assert created.latest_table_version == 0 and created.metadata.table_uuid == staged.table_id
    assert created.metadata.properties["delta.feature.catalogManaged"] == "supported"
    cat = deltalog_catalog(server, "writer")
    t = cat.load_table(["main", "sales", "events"])
    assert t.version() == 0 and t.to_pyarrow_table().column("id").to_pylist() == [1, 2]
    dl.write_table(t, pa.table({"id": pa.array([3], pa.int64())}), mode="append")
    assert writer(DeltaTablesApi, "load_table", "main", "sales", "events").latest_table_version == 1
    # Metrics (the table-id must be the table's), exists, rename, delete.
    metrics = delta_model("DeltaReportMetricsRequest").model_validate(
        {"table-id": str(staged.table_id), "report": {"commit-report": {"num-files-added": 1}}}
    )
    writer(DeltaTablesApi, "report_metrics", "main", "sales", "events", metrics)
    wrong = delta_model("DeltaReportMetricsRequest").model_validate(
        {"table-id": "00000000-0000-0000-0000-000000000000"}
    )
    delta_error(
        writer.error(DeltaTablesApi, "report_metrics", "main", "sales", "events", wrong),
        "InvalidParameterValueException",
        400,
    )
    writer(DeltaTablesApi, "table_exists", "main", "sales", "events")
    rename = delta_model("DeltaRenameTableRequest").model_validate({"new-name": "events2"})
    delta_error(
        writer.error(DeltaTablesApi, "rename_table", "main", "sales", "events", rename),
        "PermissionDeniedException",
        403,
    )
    admin(DeltaTablesApi, "rename_table", "main", "sales", "events", rename)
    assert cat.table_exists(["main", "sales", "events2"])
    assert not cat.table_exists(["main", "sales", "events"])
    admin(DeltaTablesApi, "delete_table", "main", "sales", "events2")
    delta_error(
        writer.error(DeltaTablesApi, "load_table", "main", "sales", "events2"),
        "NoSuchTableException",
        404,
    )
    assert not Path(location).exists()  # a managed table's files go with it

    # An external table (written by deltalake): registered by an admin, read by path.
    outside = tmp_path / "external"
    deltalake.write_deltalake(str(outside), pa.table({"id": pa.array([7], pa.int64())}))
    external = delta_model("DeltaCreateTableRequest").model_validate(
        {**dump(create_request("ext", outside.as_uri())), "table-type": "EXTERNAL"}
    )
    delta_error(
        writer.error(DeltaTablesApi, "create_table", "main", "sales", external),
        "PermissionDeniedException",
        403,
    )
    registered = admin(DeltaTablesApi, "create_table", "main", "sales", external)
    assert registered.metadata.table_type.value == "EXTERNAL"
    info = admin(TablesApi, "get_table", "main.sales.ext")
    assert info.table_type.value == "EXTERNAL" and info.storage_location == outside.as_uri()
    admin(TablesApi, "delete_table", "main.sales.ext")
    assert (outside / "_delta_log").is_dir()  # an external table's files stay


def create_request(name: str, location: str) -> Any:
    return delta_model("DeltaCreateTableRequest").model_validate(
        {
            "name": name,
            "location": location,
            "table-type": "MANAGED",
            "columns": {
                "type": "struct",
                "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
            },
            "protocol": {"min-reader-version": 3, "min-writer-version": 7},
            "properties": {},
            "last-commit-timestamp-ms": 0,
        }
    )


def version_zero(location: str, table_id: str, values: list[int]) -> None:
    """A catalog-managed table's version 0, written by hand (a parquet file by pyarrow)."""
    import time
    import uuid

    import pyarrow.parquet as pq

    Path(location, "_delta_log").mkdir(parents=True, exist_ok=True)
    name = f"part-{uuid.uuid4()}.parquet"
    pq.write_table(pa.table({"id": pa.array(values, pa.int64())}), f"{location}/{name}")
    now = int(time.time() * 1000)
    schema = {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
    actions = [
        {
            "commitInfo": {
                "inCommitTimestamp": now,
                "timestamp": now,
                "operation": "CREATE TABLE",
                "txnId": str(uuid.uuid4()),
            }
        },
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["catalogManaged"],
                "writerFeatures": ["catalogManaged", "inCommitTimestamp"],
            }
        },
        {
            "metaData": {
                "id": str(uuid.uuid4()),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {
                    "delta.enableInCommitTimestamps": "true",
                    "io.unitycatalog.tableId": table_id,
                },
                "createdTime": now,
            }
        },
        {
            "add": {
                "path": name,
                "partitionValues": {},
                "size": Path(location, name).stat().st_size,
                "modificationTime": now,
                "dataChange": True,
            }
        },
    ]
    Path(location, "_delta_log", f"{0:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in actions) + "\n"
    )


def test_managed_table_through_the_uc_api(server: Any) -> None:
    """UC API clients (UC 0.5's Spark connector) create a managed table with POST
    /staging-tables, version 0 written at the staging location, then POST /tables."""
    from deltalog.protocol.unity.catalog_api import (
        ColumnInfo,
        ColumnTypeName,
        CreateStagingTable,
        CreateTable,
        DataSourceFormat,
        TableType,
    )

    admin = Uc(server.url, server.keys["admin"])
    admin(CatalogsApi, "create_catalog", CreateCatalog(name="main"))
    admin(SchemasApi, "create_schema", CreateSchema(name="sales", catalog_name="main"))
    writer = Uc(server.url, server.keys["writer"])
    staged = writer(
        TablesApi,
        "create_staging_table",
        CreateStagingTable(name="t", catalog_name="main", schema_name="sales"),
    )
    assert staged.id and staged.staging_location.startswith("file://")
    version_zero(staged.staging_location.removeprefix("file://"), staged.id, [5, 6])
    column = ColumnInfo(
        name="id",
        type_text="bigint",
        type_name=ColumnTypeName.long,
        type_json=json.dumps({"name": "id", "type": "long", "nullable": True, "metadata": {}}),
        position=0,
        nullable=True,
    )
    request = CreateTable(
        name="t",
        catalog_name="main",
        schema_name="sales",
        table_type=TableType.managed,
        data_source_format=DataSourceFormat.delta,
        columns=[column],
        storage_location=staged.staging_location,
    )
    wrong = request.model_copy(update={"columns": [column.model_copy(update={"name": "x"})]})
    uc_error(writer.error(TablesApi, "create_table", wrong), "INVALID_ARGUMENT", 400)
    info = writer(TablesApi, "create_table", request)
    assert info.table_type.value == "MANAGED" and info.table_id == staged.id
    t = deltalog_catalog(server, "reader").load_table(["main", "sales", "t"])
    assert sorted(t.to_pyarrow_table().column("id").to_pylist()) == [5, 6]
    uc_error(writer.error(TablesApi, "create_table", request), "ALREADY_EXISTS", 409)


def test_credential_routes_of_a_local_warehouse(server: Any) -> None:
    """The generated client on every credential route: a local table needs no credentials
    (an empty list, the URL as it is); paths only inside the warehouse; roles as for data."""
    from deltalog.protocol.unity.catalog_api import GenerateTemporaryPathCredential

    cat = make_table(server, [1])
    location = str(cat.describe_table(["main", "sales", "orders"]).location)
    reader = Uc(server.url, server.keys["reader"])
    got = reader(
        DeltaTemporaryCredentialsApi, "get_table_credentials", "READ", "main", "sales", "orders"
    )
    assert got.storage_credentials == []
    delta_error(
        reader.error(
            DeltaTemporaryCredentialsApi,
            "get_table_credentials",
            "READ_WRITE",
            "main",
            "sales",
            "orders",
        ),
        "PermissionDeniedException",
        403,
    )
    inside = Path(location).parent.as_uri()
    got = reader(DeltaTemporaryCredentialsApi, "get_temporary_path_credentials", inside, "READ")
    assert got.storage_credentials == []
    delta_error(
        reader.error(
            DeltaTemporaryCredentialsApi, "get_temporary_path_credentials", "/etc", "READ"
        ),
        "PermissionDeniedException",
        403,
    )
    admin = Uc(server.url, server.keys["admin"])
    path = admin(
        TemporaryCredentialsApi,
        "generate_temporary_path_credentials",
        GenerateTemporaryPathCredential(url=inside, operation="PATH_READ_WRITE"),
    )
    assert path.url == inside and path.expiration_time
    writer = Uc(server.url, server.keys["writer"])
    uc_error(
        writer.error(
            TemporaryCredentialsApi,
            "generate_temporary_path_credentials",
            GenerateTemporaryPathCredential(url=inside, operation="PATH_READ_WRITE"),
        ),
        "PERMISSION_DENIED",
        403,
    )


def test_a_forced_delete_removes_only_what_uc_sees(server: Any, tmp_path: Path) -> None:
    """``DELETE schemas/{c.s}?force=true`` (and ``catalogs/{c}?force=true``) never deletes
    what UC cannot see (namespaces below a schema and their tables, tables directly in a
    catalog: Lance-only): it is refused as a non-empty schema, naming them. Otherwise force
    drops the schema's own tables, deleting only managed tables' files."""
    uc = Uc(server.url, server.keys["admin"])
    cat = make_table(server, [1, 2])  # main.sales.orders, managed
    orders = Path(cat.describe_table("main.sales.orders").location.removeprefix("file://"))
    external = tmp_path / "external"
    dl.write_table(str(external), pa.table({"id": pa.array([7], pa.int64())}))
    cat.register_table("main.sales.ext", str(external))
    cat.create_namespace("main.sales.archive")
    cat.write_table("main.sales.archive.old", pa.table({"id": pa.array([3], pa.int64())}))
    old = Path(cat.describe_table("main.sales.archive.old").location.removeprefix("file://"))
    cat.write_table("main.loose", pa.table({"id": pa.array([4], pa.int64())}))

    status, body = uc.error(SchemasApi, "delete_schema", "main.sales", force=True)
    uc_error((status, body), "INVALID_ARGUMENT", 400)
    assert "not empty" in body["message"] and "main.sales.archive" in body["message"]
    assert "main.sales.archive.old" in body["message"], body
    status, body = uc.error(CatalogsApi, "delete_catalog", "main", force=True)
    uc_error((status, body), "INVALID_ARGUMENT", 400)
    assert "main.loose" in body["message"] and "main.sales.archive" in body["message"], body
    # Nothing was deleted.
    assert cat.list_tables("main.sales") == ["ext", "orders"]
    assert cat.list_tables("main.sales.archive") == ["old"]
    assert (orders / "_delta_log").is_dir() and (old / "_delta_log").is_dir()

    # Once only UC's own tables are left, force drops them: a managed one's files too, an
    # external one's never.
    cat.drop_table("main.sales.archive.old")
    cat.drop_namespace("main.sales.archive")
    uc(SchemasApi, "delete_schema", "main.sales", force=True)
    assert cat.list_namespaces("main") == [] and not orders.exists()
    assert dl.DeltaTable(str(external)).to_pyarrow_table().column("id").to_pylist() == [7]
    assert cat.list_tables("main") == ["loose"]


def test_update_schema_and_catalog(server: Any) -> None:
    """``updateSchema`` / ``updateCatalog`` (PATCH): properties replaced whole, the comment kept
    unless given; admin only; bad bodies 400; renaming is not served (501)."""
    admin = Uc(server.url, server.keys["admin"])
    admin(CatalogsApi, "create_catalog", CreateCatalog(name="main", comment="c"))
    admin(
        SchemasApi,
        "create_schema",
        CreateSchema.model_validate(
            {"name": "sales", "catalog_name": "main", "comment": "s", "properties": {"a": "1"}}
        ),
    )
    got = admin(SchemasApi, "update_schema", "main.sales", {"properties": {"b": "2"}})
    assert got.properties.root == {"b": "2", "comment": "s"} and got.comment == "s"
    got = admin(SchemasApi, "update_schema", "main.sales", {"comment": "t"})
    assert got.properties.root == {"b": "2", "comment": "t"}
    assert admin(SchemasApi, "get_schema", "main.sales").properties.root == {
        "b": "2",
        "comment": "t",
    }
    uc_error(
        Uc(server.url, server.keys["writer"]).error(
            SchemasApi, "update_schema", "main.sales", {"properties": {}}
        ),
        "PERMISSION_DENIED",
        403,
    )
    uc_error(
        admin.error(SchemasApi, "update_schema", "main.sales", {"properties": {"a": 1}}),
        "INVALID_ARGUMENT",
        400,
    )
    uc_error(
        admin.error(SchemasApi, "update_schema", "main.sales", {"owner": "x"}),
        "INVALID_ARGUMENT",
        400,
    )
    uc_error(
        admin.error(SchemasApi, "update_schema", "main.nope", {"properties": {}}),
        "NOT_FOUND",
        404,
    )
    uc_error(
        admin.error(SchemasApi, "update_schema", "main.sales", {"new_name": "x"}),
        "UNIMPLEMENTED",
        501,
    )
    got = admin(CatalogsApi, "update_catalog", "main", {"properties": {"k": "v"}})
    assert got.properties.root == {"k": "v", "comment": "c"} and got.comment == "c"
