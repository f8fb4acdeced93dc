"""Scoped temporary credentials for S3 warehouses (issue #32, item 5): ``deltalog catalog serve
--s3-role-arn …`` vends an ``s3://`` table's credentials by STS ``AssumeRole`` with a session
policy narrowed to the table's prefix (``server/unity/credentials.py``).

moto's server (S3 and STS on loopback) answers AssumeRole but does not enforce session
policies, so the policy document itself is checked here too: its exact statements, and what a
small evaluator of IAM's ``Allow`` / ``StringLike`` rules says it lets through. The routes are
driven against a real server process whose warehouse is on moto's S3, with plain HTTP
(``unity_helpers.Uc``); the vended keys are used with boto3."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl
from deltalog.catalog.clients.unity.errors import UcError
from deltalog.exceptions import InvalidArgumentError
from deltalog.protocol.unity.catalog_api import (
    GenerateTemporaryPathCredential,
    GenerateTemporaryTableCredential,
)
from deltalog.server.auth import add_token
from deltalog.server.unity.credentials import (
    CredentialVendor,
    S3CredentialVendor,
    s3_location,
    session_policy,
    vendor_from_config,
)
from unity_helpers import (
    DeltaTablesApi,
    DeltaTemporaryCredentialsApi,
    TablesApi,
    TemporaryCredentialsApi,
    Uc,
    delta_error,
    delta_model,
    dump,
    uc_error,
)

BUCKET = "vended"
ROLE = "arn:aws:iam::123456789012:role/deltalog-vended"
DURATION = 900

# ---------------------------------------------------------------------------------------------
# The session policy


def _like(value: str, pattern: str) -> bool:
    """IAM's wildcard match (``*`` any run, ``?`` one character; nothing else special)."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.DOTALL) is not None


def allows(policy: dict[str, Any], action: str, resource: str, prefix: str | None = None) -> bool:
    """Whether ``policy`` (Allow statements, ``StringLike`` on ``s3:prefix``) allows
    ``action`` on ``resource``; ``prefix``: a ListBucket request's ``prefix`` parameter."""
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow"
        if action not in statement["Action"]:
            continue
        if not any(_like(resource, r) for r in statement["Resource"]):
            continue
        condition = statement.get("Condition")
        if condition is not None:
            assert list(condition) == ["StringLike"] and list(condition["StringLike"]) == [
                "s3:prefix"
            ]
            if prefix is None or not any(
                _like(prefix, p) for p in condition["StringLike"]["s3:prefix"]
            ):
                continue
        return True
    return False


def test_the_session_policy_of_read_and_read_write() -> None:
    read = session_policy("tables", "wh/main/sales/orders", write=False)
    assert read == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Objects",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": ["arn:aws:s3:::tables/wh/main/sales/orders/*"],
            },
            {
                "Sid": "List",
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": ["arn:aws:s3:::tables"],
                "Condition": {"StringLike": {"s3:prefix": ["wh/main/sales/orders/*"]}},
            },
        ],
    }
    write = session_policy("tables", "wh/main/sales/orders", write=True)
    assert write["Statement"][0]["Action"] == [
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
    ]
    assert write["Statement"][0]["Resource"] == read["Statement"][0]["Resource"]
    assert write["Statement"][1] == read["Statement"][1]
    # A trailing (or doubled) slash changes nothing.
    assert session_policy("tables", "wh/main/sales/orders/", False) == read
    assert session_policy("tables", "/wh/main/sales/orders//", True) == write
    # Compact enough for STS's 2,048-character limit on a session policy.
    assert len(json.dumps(write, separators=(",", ":"))) < 600


def test_what_the_session_policy_lets_through() -> None:
    obj = "arn:aws:s3:::tables/"
    bucket = "arn:aws:s3:::tables"
    for write in (False, True):
        policy = session_policy("tables", "wh/main/sales/orders", write)
        inside = obj + "wh/main/sales/orders/_delta_log/00000000000000000000.json"
        assert allows(policy, "s3:GetObject", inside)
        assert allows(policy, "s3:GetObject", obj + "wh/main/sales/orders/part-0.parquet")
        # Not a sibling whose name starts the same, not the parent, not another bucket.
        for outside in (
            obj + "wh/main/sales/orders2/part-0.parquet",
            obj + "wh/main/sales/orders_archive/_delta_log/0.json",
            obj + "wh/main/sales/orders",
            obj + "wh/main/sales/other/part-0.parquet",
            obj + "wh/secret.json",
            "arn:aws:s3:::other/wh/main/sales/orders/part-0.parquet",
        ):
            for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
                assert not allows(policy, action, outside), (action, outside)
        assert allows(policy, "s3:PutObject", inside) == write
        assert allows(policy, "s3:DeleteObject", inside) == write
        assert allows(policy, "s3:AbortMultipartUpload", inside) == write
        # Listing: the table's prefix and below; not the bucket, its parent, or a prefix that
        # would list a sibling's keys (``…/orders`` lists ``…/orders2/…`` too).
        for prefix in ("wh/main/sales/orders/", "wh/main/sales/orders/_delta_log/"):
            assert allows(policy, "s3:ListBucket", bucket, prefix)
        for prefix in (None, "", "wh/", "wh/main/sales/", "wh/main/sales/orders"):
            assert not allows(policy, "s3:ListBucket", bucket, prefix), prefix
        assert not allows(policy, "s3:ListBucket", "arn:aws:s3:::other", "wh/main/sales/orders/")
        for action in ("s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucket", "s3:*"):
            assert not allows(policy, action, bucket, "wh/main/sales/orders/")
            assert not allows(policy, action, inside)


def test_locations_to_bucket_and_prefix() -> None:
    assert s3_location("s3://tables/wh/main/sales/orders") == ("tables", "wh/main/sales/orders")
    assert s3_location("s3://tables/wh/orders/") == ("tables", "wh/orders")
    assert s3_location("s3a://tables/wh/orders") == ("tables", "wh/orders")
    # Keys are percent-decoded, as the object store reads the URI.
    assert s3_location("s3://tables/wh/my%20table") == ("tables", "wh/my table")
    assert s3_location("s3://tables") == ("tables", "")
    assert s3_location("s3://tables/") == ("tables", "")
    # The root of a bucket is never vended: a credential would be the whole bucket's.
    for root in ("s3://tables", "s3://tables/", "s3://tables//"):
        with pytest.raises(UcError) as e:
            session_policy(*s3_location(root), write=False)
        assert e.value.kind == "PermissionDeniedException" and e.value.status == 403
    # Anything a policy would read as a wildcard or variable, or a URI would drop, is refused.
    for bad in (
        "s3://tables/wh/a*b",
        "s3://tables/wh/a?b",
        "s3://tables/wh/a%2Ab",
        "s3://tables/wh/a%3Fb",
        "s3://tables/wh/${aws:username}",
        "s3://tables/wh/a#b",
        "s3://*/wh/orders",
        "s3://user@tables/wh/orders",
        "s3://tables:9000/wh/orders",
        "gs://tables/wh/orders",
    ):
        with pytest.raises(UcError) as e:
            s3_location(bad)
        assert e.value.status == 400, bad
    with pytest.raises(UcError):
        session_policy("tables", "wh/*", False)


# ---------------------------------------------------------------------------------------------
# The vendor, with a stand-in for STS


class FakeSts:
    """Answers ``assume_role`` with fresh keys living ``life`` seconds; records the calls."""

    def __init__(self, life: float = 3600, key: str | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.life = life
        self.key = key

    def assume_role(self, **request: Any) -> dict[str, Any]:
        self.calls.append(request)
        return {
            "Credentials": {
                "AccessKeyId": self.key or f"ASIAFAKE{len(self.calls)}",
                "SecretAccessKey": f"secret-{len(self.calls)}",
                "SessionToken": f"token-{len(self.calls)}",
                "Expiration": datetime.now(timezone.utc) + timedelta(seconds=self.life),
            }
        }


def fake_vendor(sts: FakeSts, **kwargs: Any) -> S3CredentialVendor:
    options = {"AWS_ACCESS_KEY_ID": "BASEKEY", "AWS_SECRET_ACCESS_KEY": "base-secret"}
    vendor = S3CredentialVendor(
        None,  # type: ignore[arg-type]  # (only path_for reads the catalog)
        ROLE,
        sts_endpoint="http://127.0.0.1:9",
        storage_options=options,
        **kwargs,
    )
    vendor._sts = sts
    return vendor


def test_the_vendor_assumes_the_role_with_the_scoped_policy() -> None:
    sts = FakeSts()
    vendor = fake_vendor(sts, external_id="ext-1", duration_seconds=1800)
    found = vendor.delta_form("s3://tables/wh/main/sales/orders", write=False)
    assert len(found) == 1 and found[0]["prefix"] == "s3://tables/wh/main/sales/orders/"
    assert found[0]["operation"] == "READ"
    assert found[0]["config"] == {
        "s3.access-key-id": "ASIAFAKE1",
        "s3.secret-access-key": "secret-1",
        "s3.session-token": "token-1",
    }
    expires = found[0]["expiration-time-ms"]
    assert abs(expires - (time.time() + 3600) * 1000) < 60_000
    [request] = sts.calls
    assert request["RoleArn"] == ROLE and request["ExternalId"] == "ext-1"
    assert request["DurationSeconds"] == 1800
    assert json.loads(request["Policy"]) == session_policy(
        "tables", "wh/main/sales/orders", write=False
    )
    assert re.fullmatch(r"[\w+=,.@-]{2,64}", request["RoleSessionName"])
    # The UC API's form of the same.
    uc = vendor.uc_form("s3://tables/wh/main/sales/orders", write=True)
    assert uc["url"] == "s3://tables/wh/main/sales/orders"
    assert set(uc["aws_temp_credentials"]) == {
        "access_key_id",
        "secret_access_key",
        "session_token",
    }
    assert json.loads(sts.calls[-1]["Policy"]) == session_policy(
        "tables", "wh/main/sales/orders", write=True
    )
    # Local tables need none; other object stores are still 501.
    assert vendor.scoped("/tmp/wh/t", True) is None
    with pytest.raises(UcError) as e:
        vendor.scoped("gs://tables/wh/t", False)
    assert e.value.kind == "NotImplementedException" and e.value.status == 501
    # A bucket's root: 403, and STS is not asked.
    calls = len(sts.calls)
    with pytest.raises(UcError) as e:
        vendor.scoped("s3://tables", False)
    assert e.value.status == 403 and len(sts.calls) == calls


def test_the_cache_is_per_location_and_operation_and_refreshes_before_expiry() -> None:
    sts = FakeSts()
    vendor = fake_vendor(sts)
    a = vendor.scoped("s3://tables/wh/a", False)
    assert vendor.scoped("s3://tables/wh/a", False) == a and len(sts.calls) == 1
    # Answers are copies: delta_form's pop of the expiration does not touch the cache.
    vendor.delta_form("s3://tables/wh/a", False)
    assert vendor.scoped("s3://tables/wh/a", False) == a and len(sts.calls) == 1
    # Another operation, another location (one inside the first one included): new sessions.
    rw = vendor.scoped("s3://tables/wh/a", True)
    b = vendor.scoped("s3://tables/wh/a/b", False)
    assert len(sts.calls) == 3
    assert {a["s3.access-key-id"], rw["s3.access-key-id"], b["s3.access-key-id"]} == {
        "ASIAFAKE1",
        "ASIAFAKE2",
        "ASIAFAKE3",
    }
    assert "wh/a/b/*" in sts.calls[2]["Policy"] and "wh/a/*" not in sts.calls[2]["Policy"]
    # A credential with five minutes or less left is not answered again.
    short = FakeSts(life=299)
    vendor = fake_vendor(short)
    first = vendor.scoped("s3://tables/wh/a", False)
    second = vendor.scoped("s3://tables/wh/a", False)
    assert len(short.calls) == 2 and first != second


def test_the_base_credentials_are_never_vended() -> None:
    vendor = fake_vendor(FakeSts(key="BASEKEY"))
    with pytest.raises(UcError) as e:
        vendor.scoped("s3://tables/wh/a", False)
    assert e.value.status == 500 and "BASEKEY" not in e.value.message


def test_sts_failures_are_503() -> None:
    from botocore.exceptions import ClientError, EndpointConnectionError

    class Refusing:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def assume_role(self, **request: Any) -> Any:
            raise self.error

    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "AssumeRole")
    for error in (denied, EndpointConnectionError(endpoint_url="http://127.0.0.1:9")):
        vendor = fake_vendor(Refusing(error))  # type: ignore[arg-type]
        with pytest.raises(UcError) as e:
            vendor.scoped("s3://tables/wh/a", False)
        assert e.value.status == 503 and e.value.kind == "InternalServerErrorException"
        assert "base-secret" not in e.value.message


def test_configuration() -> None:
    catalog: Any = None
    assert type(vendor_from_config(catalog, None)) is CredentialVendor
    assert type(vendor_from_config(catalog, {"s3_role_arn": None})) is CredentialVendor
    made = vendor_from_config(
        catalog,
        {"s3_role_arn": ROLE, "sts_endpoint": "http://127.0.0.1:9", "s3_region": "eu-west-1"},
        {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"},
    )
    assert isinstance(made, S3CredentialVendor) and made.duration_seconds == 3600
    assert made._sts.meta.region_name == "eu-west-1"
    assert made._sts.meta.endpoint_url == "http://127.0.0.1:9"
    for bad in (
        {"s3_role_arn": "deltalog-vended"},
        {"s3_role_arn": ROLE, "duration_seconds": 899},
        {"s3_role_arn": ROLE, "duration_seconds": 43201},
        {"s3_role_arn": ROLE, "sts_endpoint": "127.0.0.1:9"},
    ):
        with pytest.raises(InvalidArgumentError):
            vendor_from_config(catalog, bad)


def test_without_boto3_the_server_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(InvalidArgumentError, match="needs boto3"):
        S3CredentialVendor(None, ROLE)  # type: ignore[arg-type]
    code = (
        "import sys; sys.modules['boto3'] = None\n"
        "from deltalog.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    args = ["catalog", "serve", "--port", "0", "--db", f"sqlite://{tmp_path / 'c.db'}"]
    args += ["--warehouse", "s3://tables/wh", "--s3-role-arn", ROLE]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done
    assert "needs boto3" in done.stderr and "pip install boto3" in done.stderr
    assert "listening" not in done.stdout


def test_flags_are_checked(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "deltalog", "catalog", "serve", "--port", "0"]
    base += ["--db", f"sqlite://{tmp_path / 'c.db'}", "--warehouse", "s3://tables/wh"]
    for extra, expected in (
        (["--s3-role-arn", ROLE, "--credential-duration", "60"], "900 (15 min) to 43200"),
        (["--sts-endpoint", "http://127.0.0.1:9"], "give --s3-role-arn too"),
        (["--storage-option", "AWS_REGION"], "KEY=VALUE"),
    ):
        done = subprocess.run(base + extra, capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and expected in done.stderr, (extra, done)


# ---------------------------------------------------------------------------------------------
# A real server with its warehouse on moto's S3


@pytest.fixture(scope="module")
def moto(s3_server: tuple[dict[str, str], Any]) -> Iterator[tuple[str, dict[str, str], Any]]:
    """(endpoint, storage options, boto3 S3 client) of the tests' moto server (conftest's
    ``s3_server``: S3 and STS on loopback) with this module's own bucket ``BUCKET``."""
    options, client = s3_server
    if BUCKET not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
        client.create_bucket(Bucket=BUCKET)
    yield options["AWS_ENDPOINT_URL"], dict(options), client


def start_server(directory: Path, options: dict[str, str], warehouse: str, extra: list[str]) -> Any:
    tokens = directory / "tokens.json"
    keys = {role: add_token(tokens, role, role) for role in ("reader", "writer", "admin")}
    args = [f"--storage-option={k}={v}" for k, v in options.items()] + extra
    server = catalog_server.start(directory, warehouse=warehouse, tokens=tokens, args=args)
    server.keys = keys  # type: ignore[attr-defined]
    server.warehouse = warehouse  # type: ignore[attr-defined]
    return server


def write_table(server: Any, options: dict[str, str], name: str = "orders") -> str:
    """main.sales.<name>, catalog-managed, written by deltalog to S3 through the catalog;
    returns its location."""
    cat = dl.connect_catalog(
        {"type": "rest", "uri": server.url, "token": server.keys["admin"]},
        storage_options=options,
    )
    if not cat.namespace_exists(["main"]):
        cat.create_namespace(["main"])
        cat.create_namespace(["main", "sales"])
    cat.write_table(["main", "sales", name], pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    return str(cat.describe_table(["main", "sales", name]).location).rstrip("/")


@pytest.fixture(scope="module")
def vending(
    moto: tuple[str, dict[str, str], Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    endpoint, options, _ = moto
    warehouse = f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:8]}"
    flags = ["--s3-role-arn", ROLE, "--sts-endpoint", endpoint, "--s3-region", "us-east-1"]
    flags += ["--credential-duration", str(DURATION)]
    server = start_server(tmp_path_factory.mktemp("vending"), options, warehouse, flags)
    try:
        server.location = write_table(server, options)
        yield server
    finally:
        server.stop()


def key_of(location: str) -> str:
    return location.removeprefix(f"s3://{BUCKET}/")


def client_of(endpoint: str, config: dict[str, str]) -> Any:
    """boto3's S3 client with vended credentials (the Delta API's config keys)."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=config["s3.access-key-id"],
        aws_secret_access_key=config["s3.secret-access-key"],
        aws_session_token=config["s3.session-token"],
        region_name="us-east-1",
    )


def test_table_credentials_work(vending: Any, moto: tuple[str, dict[str, str], Any]) -> None:
    endpoint, options, _ = moto
    location = vending.location
    assert location.startswith(vending.warehouse + "/")
    reader = Uc(vending.url, vending.keys["reader"])
    writer = Uc(vending.url, vending.keys["writer"])
    operation = delta_model("DeltaCredentialOperation")
    seen = {}
    for uc, op in ((reader, "READ"), (writer, "READ_WRITE")):
        answer = uc(
            DeltaTemporaryCredentialsApi,
            "get_table_credentials",
            operation(op),
            "main",
            "sales",
            "orders",
        )
        [credential] = answer.storage_credentials
        assert credential.prefix == location + "/"
        assert credential.operation.value == op
        now_ms = time.time() * 1000
        assert now_ms < credential.expiration_time_ms <= now_ms + DURATION * 1000 + 60_000
        assert credential.expiration_time_ms > now_ms + (DURATION - 120) * 1000
        config = dump(credential.config)
        assert set(config) >= {"s3.access-key-id", "s3.secret-access-key", "s3.session-token"}
        # Never the server's own keys.
        assert config["s3.access-key-id"] != options["AWS_ACCESS_KEY_ID"]
        assert config["s3.secret-access-key"] != options["AWS_SECRET_ACCESS_KEY"]
        assert config["s3.session-token"]
        seen[op] = config
        # The keys read the table.
        s3 = client_of(endpoint, config)
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=key_of(location) + "/_delta_log/")
        names = [o["Key"].rsplit("/", 1)[1] for o in listed.get("Contents", [])]
        assert "00000000000000000000.json" in names
        first = s3.get_object(
            Bucket=BUCKET, Key=key_of(location) + "/_delta_log/00000000000000000000.json"
        )["Body"].read()
        assert b'"protocol"' in first and b'"metaData"' in first
    assert seen["READ"]["s3.access-key-id"] != seen["READ_WRITE"]["s3.access-key-id"]
    # READ_WRITE's keys write (and delete) under the prefix.
    s3 = client_of(endpoint, seen["READ_WRITE"])
    probe = key_of(location) + "/probe-" + uuid.uuid4().hex
    s3.put_object(Bucket=BUCKET, Key=probe, Body=b"x")
    s3.delete_object(Bucket=BUCKET, Key=probe)
    # Asked again: the same session (cached until five minutes before it expires).
    again = reader(
        DeltaTemporaryCredentialsApi,
        "get_table_credentials",
        operation("READ"),
        "main",
        "sales",
        "orders",
    )
    assert dump(again.storage_credentials[0].config) == seen["READ"]
    # The table still reads through the catalog with the server's own storage options.
    cat = dl.connect_catalog(
        {"type": "rest", "uri": vending.url, "token": vending.keys["reader"]},
        storage_options=options,
    )
    assert cat.load_table(["main", "sales", "orders"]).to_pyarrow_table().num_rows == 3


def test_uc_temporary_table_credentials(vending: Any) -> None:
    reader = Uc(vending.url, vending.keys["reader"])
    info = reader(TablesApi, "get_table", "main.sales.orders")
    assert info.storage_location.rstrip("/") == vending.location
    answer = reader(
        TemporaryCredentialsApi,
        "generate_temporary_table_credentials",
        GenerateTemporaryTableCredential(table_id=info.table_id, operation="READ"),
    )
    aws = answer.aws_temp_credentials
    assert aws is not None and aws.access_key_id and aws.secret_access_key and aws.session_token
    assert aws.access_key_id != "testing"
    assert answer.url.rstrip("/") == vending.location
    assert time.time() * 1000 < answer.expiration_time <= (time.time() + DURATION + 60) * 1000
    writer = Uc(vending.url, vending.keys["writer"])
    written = writer(
        TemporaryCredentialsApi,
        "generate_temporary_table_credentials",
        GenerateTemporaryTableCredential(table_id=info.table_id, operation="READ_WRITE"),
    )
    assert written.aws_temp_credentials.access_key_id not in (aws.access_key_id, "testing")


def test_roles_and_paths(vending: Any) -> None:
    reader = Uc(vending.url, vending.keys["reader"])
    writer = Uc(vending.url, vending.keys["writer"])
    admin = Uc(vending.url, vending.keys["admin"])
    operation = delta_model("DeltaCredentialOperation")
    # A reader may not have a table's READ_WRITE credentials (either API).
    delta_error(
        reader.error(
            DeltaTemporaryCredentialsApi,
            "get_table_credentials",
            operation("READ_WRITE"),
            "main",
            "sales",
            "orders",
        ),
        "PermissionDeniedException",
        403,
    )
    info = reader(TablesApi, "get_table", "main.sales.orders")
    uc_error(
        reader.error(
            TemporaryCredentialsApi,
            "generate_temporary_table_credentials",
            GenerateTemporaryTableCredential(table_id=info.table_id, operation="READ_WRITE"),
        ),
        "PERMISSION_DENIED",
        403,
    )
    # Paths outside the warehouse: 403, whoever asks.
    for outside in (
        f"s3://{BUCKET}/elsewhere/data",
        f"s3://{BUCKET}",
        vending.warehouse + "-sibling/t",
        f"s3://other-bucket/{key_of(vending.warehouse)}/t",
    ):
        for uc in (reader, admin):
            delta_error(
                uc.error(
                    DeltaTemporaryCredentialsApi,
                    "get_temporary_path_credentials",
                    outside,
                    operation("READ"),
                ),
                "PermissionDeniedException",
                403,
            )
        uc_error(
            admin.error(
                TemporaryCredentialsApi,
                "generate_temporary_path_credentials",
                GenerateTemporaryPathCredential(url=outside, operation="PATH_READ"),
            ),
            "PERMISSION_DENIED",
            403,
        )
    # Inside the warehouse: READ for a reader, READ_WRITE only for an admin.
    inside = vending.warehouse + "/external/events"
    [credential] = reader(
        DeltaTemporaryCredentialsApi, "get_temporary_path_credentials", inside, operation("READ")
    ).storage_credentials
    assert credential.prefix == inside + "/" and credential.operation.value == "READ"
    delta_error(
        writer.error(
            DeltaTemporaryCredentialsApi,
            "get_temporary_path_credentials",
            inside,
            operation("READ_WRITE"),
        ),
        "PermissionDeniedException",
        403,
    )
    [credential] = admin(
        DeltaTemporaryCredentialsApi,
        "get_temporary_path_credentials",
        inside,
        operation("READ_WRITE"),
    ).storage_credentials
    assert credential.operation.value == "READ_WRITE"
    answer = admin(
        TemporaryCredentialsApi,
        "generate_temporary_path_credentials",
        GenerateTemporaryPathCredential(url=inside, operation="PATH_READ_WRITE"),
    )
    assert answer.aws_temp_credentials.session_token and answer.url == inside
    # A wildcard in a path is refused, not turned into a wider policy.
    delta_error(
        admin.error(
            DeltaTemporaryCredentialsApi,
            "get_temporary_path_credentials",
            vending.warehouse + "/ext/a%2A",
            operation("READ"),
        ),
        "InvalidParameterValueException",
        400,
    )


def test_staging_table_credentials(vending: Any, moto: tuple[str, dict[str, str], Any]) -> None:
    endpoint, _, _ = moto
    writer = Uc(vending.url, vending.keys["writer"])
    staged = writer(
        DeltaTablesApi,
        "create_staging_table",
        "main",
        "sales",
        delta_model("DeltaCreateStagingTableRequest")(name="events"),
    )
    assert staged.location == vending.warehouse + "/main/sales/events"
    [credential] = staged.storage_credentials
    assert credential.prefix == staged.location + "/"
    assert credential.operation.value == "READ_WRITE"
    creds = writer(DeltaTemporaryCredentialsApi, "get_staging_table_credentials", staged.table_id)
    [again] = creds.storage_credentials
    assert again.prefix == staged.location + "/" and again.operation.value == "READ_WRITE"
    # The keys write the staging table's files.
    s3 = client_of(endpoint, dump(again.config))
    key = key_of(staged.location) + "/part-0.parquet"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"not yet a table")
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"not yet a table"
    delta_error(
        Uc(vending.url, vending.keys["reader"]).error(
            DeltaTemporaryCredentialsApi, "get_staging_table_credentials", staged.table_id
        ),
        "PermissionDeniedException",
        403,
    )


def test_without_a_vendor_s3_is_501(
    moto: tuple[str, dict[str, str], Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, options, _ = moto
    warehouse = f"s3://{BUCKET}/plain-{uuid.uuid4().hex[:8]}"
    server = start_server(tmp_path_factory.mktemp("plain"), options, warehouse, [])
    try:
        write_table(server, options)
        reader = Uc(server.url, server.keys["reader"])
        delta_error(
            reader.error(
                DeltaTemporaryCredentialsApi,
                "get_table_credentials",
                delta_model("DeltaCredentialOperation")("READ"),
                "main",
                "sales",
                "orders",
            ),
            "NotImplementedException",
            501,
        )
        info = reader(TablesApi, "get_table", "main.sales.orders")
        uc_error(
            reader.error(
                TemporaryCredentialsApi,
                "generate_temporary_table_credentials",
                GenerateTemporaryTableCredential(table_id=info.table_id, operation="READ"),
            ),
            "UNIMPLEMENTED",
            501,
        )
    finally:
        server.stop()


def test_the_unity_client_uses_vended_credentials(
    vending: Any, moto: tuple[str, dict[str, str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """deltalog's UC client opens an S3 table with the credentials the server vends for it
    (its own options name only the endpoint), creates tables with the staging table's, and
    asks again when they are about to expire."""
    from deltalog.catalog.clients.unity import client as unity_client

    endpoint, _, _ = moto
    base = {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
    config = {"type": "unity", "uri": vending.url, "catalog": "main"}
    uc = dl.connect_catalog({**config, "token": vending.keys["writer"]}, storage_options=base)
    t = uc.load_table("sales.orders")
    options = t._storage_options or {}
    assert options["aws_session_token"] and "AWS_ACCESS_KEY_ID" not in options
    assert options["aws_access_key_id"] != "testing"  # vended, not the server's own
    before = sorted(t.to_pyarrow_table().column("id").to_pylist())
    dl.write_table(t, pa.table({"id": pa.array([100], pa.int64())}), mode="append")
    after = sorted(uc.load_table("sales.orders").to_pyarrow_table().column("id").to_pylist())
    assert after == sorted([*before, 100])
    # A new table: version 0 written with the staging table's credentials.
    uc.write_table("sales.fresh", pa.table({"id": pa.array([7], pa.int64())}))
    assert uc.load_table("sales.fresh").to_pyarrow_table().column("id").to_pylist() == [7]

    # Cached while fresh; asked again once they expire within the renewal window.
    def vended() -> int:
        return vending.log_text().count("/credentials")

    count = vended()
    uc.load_table("sales.orders")
    assert vended() == count
    monkeypatch.setattr(unity_client, "RENEW_MS", (DURATION + 60) * 1000)
    uc.load_table("sales.orders")
    assert vended() == count + 1
    # A reader gets READ credentials (READ_WRITE is refused, then READ asked).
    reader = dl.connect_catalog({**config, "token": vending.keys["reader"]}, storage_options=base)
    assert reader.load_table("sales.orders").version() >= 1
