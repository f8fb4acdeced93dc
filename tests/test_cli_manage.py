"""``deltalog catalog namespace …`` and ``deltalog catalog table …`` typed as a user types
them, on every catalog kind (a named catalog in ``.deltalog.yaml``), checked through the
library and, with ``--json``, through the documents the commands print."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

import deltalog as dl
from catalog_configs import new_catalog
from deltalog.cli.main import main
from deltalog.cli.schema_text import parse_schema


@pytest.fixture(params=["dir", "sqlite", "postgresql", "rest", "unity"])
def named(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    with new_catalog(request.param, request, tmp_path) as config:
        (tmp_path / "wh").mkdir(exist_ok=True)
        (tmp_path / ".deltalog.yaml").write_text(
            yaml.safe_dump({"catalog": {"here": config}, "default-catalog": "here"})
        )
        monkeypatch.chdir(tmp_path)
        yield config


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def qualified(config: dict[str, str], namespace: str, table: str) -> str:
    if config["type"] == "dir":
        return table
    if config["type"] == "unity":
        return f"default.{table}"
    return f"{namespace}.{table}"


def test_namespace_commands(named: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    cat = dl.connect_catalog(named)
    if named["type"] == "dir":
        code, _, err = run(capsys, "catalog", "namespace", "create", "sales")
        assert code == 1 and "UnsupportedFeatureError" in err and "no namespaces" in err
        return
    got = ok(capsys, "catalog", "namespace", "create", "sales", "-p", "owner=ops", "-p", "x=1")
    assert got == {"catalog": "here", "namespace": "sales", "created": True}
    assert cat.load_namespace_properties("sales") == {"owner": "ops", "x": "1"}
    got = ok(capsys, "catalog", "namespace", "create", "sales", "--if-not-exists")
    assert got["created"] is False
    code, _, err = run(capsys, "catalog", "namespace", "create", "sales")
    assert code == 1 and "AlreadyExistsError" in err
    got = ok(capsys, "catalog", "namespace", "set", "sales", "tier=gold", "owner=finance")
    assert (got["updated"], got["removed"], got["missing"]) == (["owner", "tier"], [], [])
    got = ok(capsys, "catalog", "namespace", "unset", "sales", "x", "absent")
    assert (got["removed"], got["missing"]) == (["x"], ["absent"])
    got = ok(capsys, "catalog", "namespace", "properties", "sales")
    assert got["properties"] == {"owner": "finance", "tier": "gold"}
    code, out, _ = run(capsys, "catalog", "namespace", "properties", "sales")
    assert code == 0 and "owner" in out and "finance" in out
    with pytest.raises(SystemExit):
        run(capsys, "catalog", "namespace", "set", "sales", "novalue")
    assert "not KEY=VALUE: 'novalue'" in capsys.readouterr().err
    got = ok(capsys, "catalog", "namespace", "drop", "sales")
    assert got["dropped"] is True and not cat.namespace_exists("sales")


def test_table_commands(named: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    cat = dl.connect_catalog(named)
    if named["type"] not in ("dir", "unity"):
        cat.create_namespace("sales")
        cat.create_namespace("archive")
    orders = qualified(named, "sales", "orders")
    schema = "id BIGINT NOT NULL, region STRING, price DECIMAL(10,2), tags ARRAY<STRING>"
    got = ok(
        capsys,
        "catalog", "table", "create", orders, "--schema", schema,
        "--partition-by", "region", "-p", "delta.enableDeletionVectors=true",
    )  # fmt: skip
    assert got["created"] is True and got["version"] == 0
    table = cat.load_table(orders)
    assert table.schema() == parse_schema(schema)
    assert table.metadata().partition_columns == ["region"]
    assert table.metadata().configuration["delta.enableDeletionVectors"] == "true"
    got = ok(capsys, "catalog", "table", "create", orders, "--schema", "x INT", "--if-not-exists")
    assert got["created"] is False and cat.load_table(orders).schema() == parse_schema(schema)
    code, _, err = run(capsys, "catalog", "table", "create", orders, "--schema", "x INT")
    assert code == 1 and "AlreadyExistsError" in err

    got = ok(capsys, "catalog", "table", "set", orders, "delta.appendOnly=true")
    assert got["set"] == ["delta.appendOnly"] and got["version"] == 1
    code, _, err = run(capsys, "catalog", "table", "set", orders, "team=ops")
    assert code == 1 and "not Delta table properties" in err
    got = ok(capsys, "catalog", "table", "set", orders, "team=ops", "--any-key")
    assert cat.load_table(orders).metadata().configuration["team"] == "ops"
    got = ok(capsys, "catalog", "table", "unset", orders, "delta.appendOnly", "absent")
    assert (got["removed"], got["missing"]) == (["delta.appendOnly"], ["absent"])
    assert "delta.appendOnly" not in cat.load_table(orders).metadata().configuration

    target = qualified(named, "archive", "orders_2025")
    got = ok(capsys, "catalog", "table", "rename", orders, target)
    assert got["to"] == target and cat.table_exists(target) and not cat.table_exists(orders)
    cat.write_table(
        target,
        pa.table(
            {
                "id": pa.array([1], pa.int64()),
                "region": ["eu"],
                "price": pa.array([1], pa.decimal128(10, 2)),
                "tags": [["a"]],
            },
            schema=parse_schema(schema),
        ),
        mode="append",
    )
    assert cat.load_table(target).to_pyarrow_table().num_rows == 1

    location = cat.load_table(target).table_uri.removeprefix("file://")
    if named["type"] in ("dir", "unity"):
        # A directory catalog's table is its directory; Unity Catalog deletes a managed
        # table's files with it: neither can keep the files, and says so.
        code, _, err = run(capsys, "catalog", "table", "drop", target)
        assert code == 1 and "purge" in err and cat.table_exists(target)
    else:
        got = ok(capsys, "catalog", "table", "drop", target)
        assert got["purged"] is False and not cat.table_exists(target)
        assert Path(location, "_delta_log").is_dir()  # its files stay
        target = qualified(named, "archive", "scratch")
        ok(capsys, "catalog", "table", "create", target, "--schema", "id INT")
        location = cat.load_table(target).table_uri.removeprefix("file://")
    got = ok(capsys, "catalog", "table", "drop", target, "--purge")
    assert got["purged"] is True and not Path(location).exists()
    assert not cat.table_exists(target)


def test_schema_text() -> None:
    schema = parse_schema(
        "id BIGINT NOT NULL, `odd name` STRING, d DECIMAL(38, 18), m MAP<STRING, ARRAY<INT>>, "
        "s STRUCT<a: DATE, b: TIMESTAMP_NTZ NOT NULL>, t TIMESTAMP, f FLOAT, b BOOLEAN"
    )
    assert schema == pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("odd name", pa.string()),
            pa.field("d", pa.decimal128(38, 18)),
            pa.field("m", pa.map_(pa.string(), pa.list_(pa.int32()))),
            pa.field(
                "s",
                pa.struct([("a", pa.date32()), pa.field("b", pa.timestamp("us"), nullable=False)]),
            ),
            pa.field("t", pa.timestamp("us", tz="UTC")),
            pa.field("f", pa.float32()),
            pa.field("b", pa.bool_()),
        ]
    )
    for bad, says in (
        ("", "no column"),
        ("id", "unexpected end"),
        ("id WIDGET", "unknown type 'WIDGET'"),
        ("d DECIMAL(40, 2)", "outside"),
        ("a INT, A STRING", "named twice"),
        ("a ARRAY<INT", "expected '>'"),
        ("a INT NOT", "NULL after NOT"),
        ("a INT) b", "unexpected ')'"),
        ("a " + "ARRAY<" * 40 + "INT" + ">" * 40, "nested deeper"),
    ):
        with pytest.raises(dl.InvalidArgumentError, match=re.escape(says)):
            parse_schema(bad)


def test_listings_resolve_references_and_name_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``catalog list`` shows a location's ``${VAR}`` resolved (an unset one marked, a password
    masked), and ``catalog tables`` on a table's name says it is a table."""
    (tmp_path / ".deltalog.yaml").write_text(
        yaml.safe_dump(
            {
                "catalog": {
                    "srv": {"type": "rest", "uri": "http://127.0.0.1:${SRV_PORT}"},
                    "pg": {"type": "postgresql", "uri": "postgresql://me:${PG_PASSWORD}@db/x"},
                    "gone": {"type": "rest", "uri": "http://${NOT_SET_ANYWHERE}:1"},
                    "here": {"type": "dir", "path": str(tmp_path / "wh")},
                },
                "default-catalog": "here",
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SRV_PORT", "2333")
    monkeypatch.setenv("PG_PASSWORD", "s3cret")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    listed = {c["name"]: c["location"] for c in ok(capsys, "catalog", "list")["catalogs"]}
    assert listed["srv"] == "http://127.0.0.1:2333"
    assert listed["pg"] == "postgresql://me:***@db/x"
    assert listed["gone"] == "http://${NOT_SET_ANYWHERE} (unset):1"
    code, out, _ = run(capsys, "catalog", "list")
    assert code == 0 and "2333" in out and "s3cret" not in out
    (tmp_path / "wh").mkdir()
    dl.write_table(str(tmp_path / "wh" / "orders"), pa.table({"id": [1]}))
    code, _, err = run(capsys, "catalog", "tables", "orders")
    assert code == 1 and "orders is a table of here, not a namespace" in err
