"""Symbolic links do not get past containment (issue #42, A): every containment check of the
catalogs is made on real paths (``os.path.realpath``; in the core, the file's real path under
the table's real root), and a data file, deletion-vector file or staged commit that is a link,
or whose real path leaves the table, is refused with the file and the rule named.

On the catalogs before the fix: a link inside a catalog-managed table to another table's data
file was ratified (the table then showed that table's rows); a link in the warehouse to
``/etc`` got path credentials; an admin registered one directory twice through a link.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl
from catalog_configs import Config, new_catalog
from deltalog.server.auth import add_token
from test_unity_hostile import send, uc_shape

P = "/api/2.1/unity-catalog"


@pytest.fixture(params=["sqlite", "postgresql", "rest", "unity"])
def managed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Config]:
    """A new catalog that manages its tables (``unity``: the server's UC routes, tables in
    ``main.default``)."""
    with new_catalog(request.param, request, tmp_path) as config:
        yield config


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def ids(t: dl.DeltaTable) -> list[int]:
    return sorted(t.to_pyarrow_table().column("id").to_pylist())


def root(t: dl.DeltaTable) -> Path:
    uri = t.table_uri
    return Path(uri[len("file://") :] if uri.startswith("file://") else uri)


def parquet_files(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.parquet"))


def add(path: str, size: int, dv: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "path": path,
        "partitionValues": {},
        "size": size,
        "modificationTime": 1,
        "dataChange": True,
    }
    if dv is not None:
        body["deletionVector"] = dv
    return {"add": body}


def test_a_link_to_another_tables_file_is_not_ratified(managed: Config, tmp_path: Path) -> None:
    """(a) A link in a catalog-managed table to another table's data file, or a linked
    directory, or a deletion vector file that is a link: refused, naming the file and the rule;
    the table keeps its own rows."""
    cat = dl.connect_catalog(managed)
    cat.write_table("secret", rows(42))
    cat.write_table("mine", rows(1))
    secret, mine = root(cat.load_table("secret")), root(cat.load_table("mine"))
    theirs = parquet_files(secret)[0]
    size = theirs.stat().st_size
    (mine / "link.parquet").symlink_to(theirs)
    (mine / "sub").symlink_to(secret)
    own = parquet_files(mine)[0]
    shutil.copy(own, mine / "copy.parquet")
    (mine / "dv.bin").symlink_to(theirs)
    dv = {
        "storageType": "p",
        "pathOrInlineDv": f"file://{mine}/dv.bin",
        "offset": 1,
        "sizeInBytes": 10,
        "cardinality": 1,
    }
    cases = [
        (add("link.parquet", size), "link.parquet.*symbolic link"),
        (add(f"sub/{theirs.name}", size), f"sub/{theirs.name}.*outside the table's real root"),
        (add("copy.parquet", own.stat().st_size, dv), "deletion vector of copy.parquet.*symbolic"),
    ]
    for action, rule in cases:
        t = cat.load_table("mine")
        with pytest.raises(dl.InvalidArgumentError, match=rule):
            t.transaction(operation="WRITE").add_actions([action]).commit()
        assert ids(cat.load_table("mine")) == [1]
    assert cat.load_table("mine").version() == 0


def forged_commit(directory: Path, version: int, data_file: str, size: int) -> str:
    """A staged commit adding ``data_file``, written in ``directory``; its file name."""
    name = f"{version:020}.{uuid.uuid4()}.json"
    actions = [
        {"commitInfo": {"inCommitTimestamp": 4_000_000_000_000, "txnId": str(uuid.uuid4())}},
        add(data_file, size),
    ]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("".join(json.dumps(a) + "\n" for a in actions))
    return name


def test_a_staged_commit_through_a_linked_directory_is_refused(
    managed: Config, tmp_path: Path
) -> None:
    """A staged commit whose ``_staged_commits`` directory is a link out of the table is not
    read: its real path leaves the table's real root."""
    cat = dl.connect_catalog(managed)
    cat.write_table("mine", rows(1))
    t = cat.load_table("mine")
    mine = root(t)
    own = parquet_files(mine)[0]
    shutil.copy(own, mine / "copy.parquet")
    outside = tmp_path / "outside"
    name = forged_commit(outside, 1, "copy.parquet", own.stat().st_size)
    staged = mine / "_delta_log" / "_staged_commits"
    if staged.exists():
        shutil.rmtree(staged)
    staged.symlink_to(outside)
    client = t._catalog_client
    with pytest.raises(dl.InvalidArgumentError, match=r"_staged_commits.*symbolic link"):
        client.commit(1, path=name)
    staged.unlink()
    # The staged file itself a link (to the forged commit outside).
    staged.mkdir()
    (staged / name).symlink_to(outside / name)
    with pytest.raises(dl.InvalidArgumentError, match=f"{name} is a symbolic link"):
        client.commit(1, path=name)
    assert ids(cat.load_table("mine")) == [1]


def test_one_directory_is_not_registered_twice_through_a_link(
    managed: Config, tmp_path: Path
) -> None:
    """(c) Registering a directory under a second name through a link (to it, or to a
    directory above it) is refused like registering it twice; a table created in the
    warehouse where a link stands is refused too."""
    cat = dl.connect_catalog(managed)
    if managed["type"] == "unity":
        pytest.skip("UC external tables: test_uc_routes_resolve_links")
    ext = tmp_path / "ext"
    dl.write_table(str(ext), rows(7))
    cat.register_table("ext", str(ext))
    (tmp_path / "alias").symlink_to(ext)
    (tmp_path / "up").symlink_to(tmp_path)
    for alias in (tmp_path / "alias", tmp_path / "up" / "ext"):
        with pytest.raises(dl.InvalidArgumentError, match="overlaps"):
            cat.register_table("again", str(alias))
    # A link in the warehouse where a new table would live.
    warehouse = tmp_path / "wh"
    warehouse.mkdir(exist_ok=True)
    (warehouse / "t").symlink_to(ext)
    with pytest.raises(dl.InvalidArgumentError, match="symbolic link"):
        cat.write_table("t", rows(9))
    assert ids(cat.load_table("ext")) == [7]
    assert dl.DeltaTable(str(ext)).version() == 0
    assert sorted(cat.list_tables()) == ["ext"]


def test_sql_catalogs_check_real_paths(tmp_path: Path) -> None:
    """The embedded catalogs: a link that would put a table's warehouse directory elsewhere,
    and a purge of a table whose directory was replaced by a link, are refused; the directory
    catalog creates no table through a link."""
    cat = dl.connect_catalog(
        {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    )
    cat.create_namespace("ns")
    cat.write_table("ns.victim", rows(1))
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    victim = root(cat.load_table("ns.victim"))
    shutil.rmtree(victim)
    victim.symlink_to(precious)
    with pytest.raises(dl.CatalogError, match="symbolic link"):
        cat.drop_table("ns.victim")
    assert (precious / "keep.txt").read_text() == "mine"
    cat.drop_table("ns.victim", purge=False)
    # The directory catalog: a link among its sub-directories is no table of its own.
    directory = dl.connect_catalog({"type": "dir", "path": str(tmp_path / "dir")})
    directory.write_table("t", rows(5))
    (tmp_path / "dir" / "alias").symlink_to(tmp_path / "dir" / "t")
    (tmp_path / "dir" / "out").symlink_to(precious)
    for name in ("alias", "out"):
        with pytest.raises(dl.InvalidArgumentError, match="symbolic link"):
            directory.write_table(name, rows(6))
        with pytest.raises(dl.InvalidArgumentError, match="symbolic link"):
            directory.register_table(name, str(tmp_path / "dir" / name))
    assert sorted(p.name for p in precious.iterdir()) == ["keep.txt"]
    assert ids(directory.load_table("t")) == [5]


@pytest.fixture(scope="module")
def uc(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("links")
    tokens = base / "tokens.json"
    keys = {role: add_token(tokens, role, role) for role in ("reader", "writer", "admin")}
    with catalog_server.running(base / "server", tokens=tokens) as running:
        running.keys = keys
        running.base = base
        running.warehouse = base / "server" / "wh"
        cat = dl.connect_catalog({"type": "rest", "uri": running.url, "token": keys["admin"]})
        cat.create_namespace(["main"])
        cat.create_namespace(["main", "sales"])
        cat.write_table(["main", "sales", "orders"], rows(1))
        yield running


def test_uc_routes_resolve_links(uc: Any) -> None:
    """(b) A link in the warehouse to ``/etc`` gets no path credentials (either UC API); (c) an
    external table is not created twice through a link; a staging table is not allocated where
    a link stands."""
    link = uc.warehouse / "etc_link"
    link.symlink_to("/etc")
    for role in ("reader", "admin"):
        got = send(
            uc,
            "GET",
            f"{P}/delta/v1/temporary-path-credentials?location={link}&operation=READ",
            role=role,
        )
        assert got[0] == 400 and "symbolic link" in json.dumps(got[1]), got
        body = json.dumps({"url": f"file://{link}/passwd", "operation": "PATH_READ"}).encode()
        got = send(uc, "POST", f"{P}/temporary-path-credentials", body, role=role)
        assert uc_shape(got, 400) == "INVALID_ARGUMENT" and "symbolic link" in got[1]["message"]
    # An external table registered twice, the second time through a link.
    ext = uc.base / "ext"
    dl.write_table(str(ext), rows(7))
    (uc.base / "ext_alias").symlink_to(ext)

    def external(name: str, location: Path) -> tuple[int, Any]:
        body = {
            "name": name,
            "catalog_name": "main",
            "schema_name": "sales",
            "table_type": "EXTERNAL",
            "data_source_format": "DELTA",
            "storage_location": f"file://{location}",
            "columns": [],
        }
        return send(uc, "POST", f"{P}/tables", json.dumps(body).encode())

    got = external("ext", ext)
    assert got[0] == 200, got
    got = external("ext2", uc.base / "ext_alias")
    assert uc_shape(got, 400) == "INVALID_ARGUMENT" and "overlaps" in got[1]["message"]
    # A staging table where a link stands in the warehouse.
    (uc.warehouse / "main" / "sales").mkdir(parents=True, exist_ok=True)
    (uc.warehouse / "main" / "sales" / "linked").symlink_to(ext)
    body = json.dumps({"name": "linked", "catalog_name": "main", "schema_name": "sales"})
    got = send(uc, "POST", f"{P}/staging-tables", body.encode(), role="writer")
    assert uc_shape(got, 400) == "INVALID_ARGUMENT" and "symbolic link" in got[1]["message"]


def test_lance_routes_resolve_links(uc: Any) -> None:
    """(c) The Lance ``register`` route: a directory is not registered twice through a link
    (400, code 13); ``declare`` does not put a table where a link stands."""
    rest = dl.connect_catalog({"type": "rest", "uri": uc.url, "token": uc.keys["admin"]})
    ext = uc.base / "lance_ext"
    dl.write_table(str(ext), rows(3))
    (uc.base / "lance_alias").symlink_to(ext)
    rest.register_table(["main", "sales", "lance_ext"], str(ext))
    got = send(
        uc,
        "POST",
        "/v1/table/main$sales$again/register",
        json.dumps({"location": str(uc.base / "lance_alias")}).encode(),
    )
    assert got[0] == 400 and got[1]["code"] == 13 and "overlaps" in got[1]["error"], got
    (uc.warehouse / "main" / "sales" / "declared").symlink_to(os.path.realpath("/tmp"))
    got = send(uc, "POST", "/v1/table/main$sales$declared/declare", b"{}", role="writer")
    assert got[0] == 400 and got[1]["code"] == 13 and "symbolic link" in got[1]["error"], got
