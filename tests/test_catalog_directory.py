"""The directory catalog (Lance catalog specification: "Lance Directory Catalog", "Directory
Path", "Table Existence"), on a local disk and on S3 (moto), with deltalake reading what it
created."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl
from conftest import S3_BUCKET, s3_keys
from deltalog.catalog import DirectoryCatalog, parse_identifier

SCHEMA = pa.schema({"id": pa.int64(), "day": pa.string()})


def data(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "day": pa.array([f"d{i % 2}" for i in range(n)]),
        }
    )


def test_tables_are_sub_directories(tmp_path: Path) -> None:
    catalog = dl.connect_catalog({"type": "dir", "path": str(tmp_path / "cat")})
    assert isinstance(catalog, DirectoryCatalog)
    assert catalog.list_tables() == []
    t = catalog.create_table("events", SCHEMA, partition_by=["day"])
    assert t.version() == 0 and (tmp_path / "cat" / "events" / "_delta_log").is_dir()
    assert catalog.write_table("events", data(4), mode="append") == 1
    assert catalog.write_table("more", data(2, 10)) == 0  # created by the write
    assert catalog.list_tables() == ["events", "more"]
    loaded = catalog.load_table("events")
    assert sorted(loaded.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2, 3]
    dl.write_table(loaded, data(1, 100), mode="append")
    assert catalog.load_table(["events"]).version() == 2
    assert catalog.load_table("events", version=1).version() == 1
    # An independent reader sees the same table.
    peer = deltalake.DeltaTable(catalog.table_uri("events"))
    assert sorted(peer.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2, 3, 100]
    assert peer.metadata().partition_columns == ["day"]


def test_table_existence_follows_the_directory(tmp_path: Path) -> None:
    """A table exists when its directory does, even empty or not Delta; loading fails then."""
    root = tmp_path / "cat"
    (root / "empty").mkdir(parents=True)
    (root / "junk").mkdir()
    (root / "junk" / "notes.txt").write_text("not a table")
    (root / "file.txt").write_text("a file is not a table")
    catalog = dl.connect_catalog({"type": "dir", "path": str(root)})
    assert catalog.list_tables() == ["empty", "junk"]
    assert catalog.table_exists("empty") and catalog.table_exists("junk")
    assert not catalog.table_exists(["file.txt"]) and not catalog.table_exists("nope")
    for name in ("empty", "junk"):
        with pytest.raises(dl.TableNotFoundError, match="holds no Delta table"):
            catalog.load_table(name)
    with pytest.raises(dl.TableNotFoundError, match="has no table"):
        catalog.load_table("nope")


def test_drop_table_deletes_its_directory(tmp_path: Path) -> None:
    catalog = dl.connect_catalog({"type": "dir", "path": str(tmp_path)})
    catalog.write_table("a", data(3))
    catalog.write_table("b", data(3))
    catalog.drop_table("a")
    assert catalog.list_tables() == ["b"]
    assert not (tmp_path / "a").exists()
    with pytest.raises(dl.TableNotFoundError):
        catalog.drop_table("a")
    with pytest.raises(dl.InvalidArgumentError, match="purge"):
        catalog.drop_table("b", purge=False)


def test_no_namespaces_and_identifiers(tmp_path: Path) -> None:
    catalog = dl.connect_catalog({"type": "dir", "path": str(tmp_path), "delimiter": "$"})
    assert catalog.list_namespaces() == []
    assert not catalog.namespace_exists("ns")
    with pytest.raises(dl.UnsupportedFeatureError, match="no namespaces"):
        catalog.create_namespace("ns")
    with pytest.raises(dl.UnsupportedFeatureError):
        catalog.list_tables("ns")
    with pytest.raises(dl.InvalidArgumentError, match="nested"):
        catalog.load_table("ns$t")
    # With `$` as the delimiter, a dot is part of a name.
    catalog.write_table("a.b", data(1))
    assert catalog.list_tables() == ["a.b"]
    for bad in ("..", "", "x/y"):
        with pytest.raises(dl.InvalidArgumentError):
            catalog.table_uri(bad)
    assert parse_identifier("cat2.cat5.t1") == ["cat2", "cat5", "t1"]
    assert parse_identifier("cat4$t3", "$") == ["cat4", "t3"]
    assert parse_identifier(["a", "b"]) == ["a", "b"]
    with pytest.raises(dl.InvalidArgumentError):
        parse_identifier("a..b")
    with pytest.raises(TypeError):
        parse_identifier(3)  # type: ignore[arg-type]


def test_relative_paths_and_configuration_errors(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    catalog = dl.connect_catalog({"type": "dir", "path": "./rel/dir"})
    catalog.write_table("t", data(2))
    assert (tmp_path / "rel" / "dir" / "t" / "_delta_log").is_dir()
    assert os.path.isabs(catalog.path)
    with pytest.raises(dl.InvalidArgumentError, match="path"):
        dl.connect_catalog({"type": "dir"})
    with pytest.raises(dl.InvalidArgumentError, match="unknown catalog type"):
        dl.connect_catalog({"type": "hive"})
    with pytest.raises(dl.InvalidArgumentError, match="unknown keys"):
        dl.connect_catalog({"type": "dir", "path": "x", "uri": "y"})
    with pytest.raises(dl.InvalidArgumentError, match="lives at"):
        catalog.register_table("t", str(tmp_path / "elsewhere"))
    assert catalog.register_table("t", "./rel/dir/t").version() == 0


def test_a_directory_catalog_on_s3(s3_server: tuple[dict[str, str], Any]) -> None:
    options, client = s3_server
    catalog = dl.connect_catalog({"type": "dir", "path": f"s3://{S3_BUCKET}/dircat"}, options)
    catalog.write_table("a", data(3))
    catalog.write_table("b", data(2))
    assert catalog.list_tables() == ["a", "b"]
    assert catalog.load_table("a").to_pyarrow_table().num_rows == 3
    catalog.drop_table("a")
    assert catalog.list_tables() == ["b"]
    assert s3_keys(client, "dircat/a") == set()
