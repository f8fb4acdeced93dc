"""Named catalogs (issue #34, items 1–2): ``dl.load_catalog(name)`` from ``.deltalog.yaml`` and
``DELTALOG_CATALOG__*`` variables, and the CLI that browses them, driven as a user types it
(``python -m deltalog ...`` in a subprocess: exit status, stdout, stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import catalog_server
import deltalog as dl
from deltalog.catalog.named import read_config


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[int, str, str]:
    """``deltalog ARGS`` as a shell runs it: exit status, stdout, stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "deltalog", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def one_line_error(code: int, err: str, *expected: str) -> None:
    assert code == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, err


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``DELTALOG_HOME`` in a fresh directory, no ``DELTALOG_*`` variables inherited, and a
    working directory without a ``.deltalog.yaml``."""
    for key in list(os.environ):
        if key.startswith("DELTALOG_"):
            monkeypatch.delenv(key)
    directory = tmp_path / "home"
    directory.mkdir()
    monkeypatch.setenv("DELTALOG_HOME", str(directory))
    monkeypatch.setenv("HOME", str(directory))
    monkeypatch.chdir(tmp_path)
    return directory


def test_three_catalogs_by_name_from_python_and_the_cli(home: Path, tmp_path: Path) -> None:
    """The acceptance test of issue #34: a directory catalog, a SQLite catalog and a REST
    server (its token from an environment variable), each driven by name."""
    tokens = tmp_path / "tokens.json"
    code, out, err = cli(
        "catalog", "token", "--tokens", str(tokens), "--name", "ci", "--role", "admin"
    )
    assert code == 0, err
    token = out.strip().split()[-1]
    with catalog_server.running(tmp_path / "server", tokens=tokens) as server:
        (home / ".deltalog.yaml").write_text(
            textwrap.dedent(
                f"""\
                default-catalog: lake
                catalog:
                  lake:
                    type: dir
                    path: {tmp_path / "lake"}
                  local:
                    type: sqlite
                    path: {tmp_path / "local.db"}
                    warehouse: {tmp_path / "wh"}
                  remote:
                    type: rest
                    uri: {server.url}
                    token: ${{REMOTE_CATALOG_TOKEN}}
                """
            )
        )
        os.environ["REMOTE_CATALOG_TOKEN"] = token
        try:
            data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
            # (A directory catalog holds tables only: "Lance Directory Catalog".)
            where = {"lake": "", "local": "sales", "remote": "sales"}
            for name, namespace in where.items():
                catalog = dl.load_catalog(name, create=True)  # new: created on purpose
                if namespace:
                    catalog.create_namespace(namespace)
                full = f"{namespace}.orders" if namespace else "orders"
                catalog.write_table(full, data)
                assert catalog.load_table(full).to_pyarrow_table().num_rows == 3
            assert dl.load_catalog().list_tables() == ["orders"]  # the default: lake
            env = dict(os.environ)

            code, out, err = cli("catalog", "list", env=env)
            assert code == 0, err
            lines = out.splitlines()
            assert lines[0].split() == ["NAME", "TYPE", "LOCATION", "DEFAULT", "FROM"]
            assert [line.split()[0] for line in lines[1:]] == ["lake", "local", "remote"]
            assert lines[1].split()[3] == "*"
            # Aligned: every column starts where its header does.
            at = lines[0].index("TYPE")
            assert all(line[at - 2 : at] == "  " for line in lines[1:])
            code, out, err = cli("catalog", "list", "--json", env=env)
            listed = json.loads(out)
            assert listed["file"] == str(home / ".deltalog.yaml")
            assert [c["type"] for c in listed["catalogs"]] == ["dir", "sqlite", "rest"]
            assert token not in out  # references are listed, never resolved secrets

            for name, namespace in where.items():
                args = [namespace] if namespace else []
                code, out, err = cli("catalog", "tables", "--catalog", name, *args, env=env)
                assert code == 0, err
                assert out.splitlines()[1].split() == [
                    namespace or "(top",
                    *(["level)"] if not namespace else []),
                    "orders",
                ], out
                code, out, err = cli("catalog", "tables", "-c", name, "-r", "--json", env=env)
                full = f"{namespace}.orders" if namespace else "orders"
                assert json.loads(out)["tables"] == [
                    {"namespace": namespace, "table": "orders", "name": full}
                ]
                code, out, err = cli("catalog", "describe", "--catalog", name, "--json", env=env)
                assert code == 0, err
                described = json.loads(out)
                assert described["type"] == {"lake": "dir", "local": "sqlite"}.get(name, "rest")
                assert described["namespaces"] == ([namespace] if namespace else [])
                assert described["tables"] == ([] if namespace else ["orders"])

            # The REST catalog without its variable: a one-line error naming it.
            del env["REMOTE_CATALOG_TOKEN"]
            code, out, err = cli("catalog", "tables", "--catalog", "remote", env=env)
            one_line_error(code, err, "REMOTE_CATALOG_TOKEN", "not set")
        finally:
            del os.environ["REMOTE_CATALOG_TOKEN"]


def test_bad_names_and_missing_catalogs_are_one_line_errors(home: Path) -> None:
    env = {**os.environ}
    code, out, err = cli("catalog", "describe", "--catalog", "nope", env=env)
    one_line_error(code, err, "no catalog named 'nope'", "no .deltalog.yaml found")
    code, out, err = cli("catalog", "tables", env=env)
    one_line_error(code, err, "no default catalog")
    (home / ".deltalog.yaml").write_text("catalog:\n  a:\n    type: dir\n    path: /tmp/x\n")
    code, out, err = cli("catalog", "tables", "--catalog", "b", env=env)
    one_line_error(code, err, "no catalog named 'b'", "configured: a")
    (home / ".deltalog.yaml").write_text("catalog: [1, 2\n")
    code, out, err = cli("catalog", "list", env=env)
    one_line_error(code, err, "is not valid YAML")
    (home / ".deltalog.yaml").write_text("catalogs:\n  a: {}\n")
    code, out, err = cli("catalog", "list", env=env)
    one_line_error(code, err, "unknown top-level keys ['catalogs']")
    code, out, err = cli("--version")
    assert code == 0 and out.strip() == f"deltalog {dl.__version__}"


def test_the_environment_adds_and_overrides(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DELTALOG_CATALOG__<NAME>__<KEY>`` adds catalogs and overrides the file key by key;
    ``__STORAGE_OPTIONS__`` goes to the tables' storage options; ``DELTALOG_DEFAULT_CATALOG``
    names the default; a single catalog is the default."""
    (home / ".deltalog.yaml").write_text(
        textwrap.dedent(
            f"""\
            catalog:
              one:
                type: dir
                path: {tmp_path / "first"}
                storage_options:
                  timeout: 30s
            """
        )
    )
    config = read_config()
    assert config.default == "one" and config.catalogs["one"].storage_options == {"timeout": "30s"}
    monkeypatch.setenv("DELTALOG_CATALOG__ONE__PATH", str(tmp_path / "second"))
    monkeypatch.setenv("DELTALOG_CATALOG__TWO__TYPE", "sqlite")
    monkeypatch.setenv("DELTALOG_CATALOG__TWO__PATH", str(tmp_path / "two.db"))
    monkeypatch.setenv("DELTALOG_CATALOG__TWO__WAREHOUSE", str(tmp_path / "wh"))
    monkeypatch.setenv("DELTALOG_CATALOG__TWO__STORAGE_OPTIONS__AWS_REGION", "eu-west-1")
    config = read_config()
    assert config.default is None  # two catalogs, none named the default
    assert config.catalogs["one"].properties["path"] == str(tmp_path / "second")
    assert config.catalogs["one"].sources == [str(home / ".deltalog.yaml"), "environment"]
    assert config.catalogs["two"].storage_options == {"AWS_REGION": "eu-west-1"}
    with pytest.raises(dl.InvalidArgumentError, match="no default catalog"):
        dl.load_catalog()
    monkeypatch.setenv("DELTALOG_DEFAULT_CATALOG", "TWO")
    catalog = dl.load_catalog(create=True)  # a new catalog: created on purpose
    catalog.create_namespace("n")
    assert dl.load_catalog("two").list_namespaces() == ["n"]
    dl.load_catalog("one", create=True).write_table("t", pa.table({"x": [1]}))
    assert (tmp_path / "second" / "t" / "_delta_log").is_dir()  # the environment's path won
    monkeypatch.setenv("DELTALOG_CATALOG__BAD", "x")
    with pytest.raises(dl.InvalidArgumentError, match="DELTALOG_CATALOG__BAD: expected"):
        read_config()


def test_secrets_come_from_the_environment(home: Path, tmp_path: Path) -> None:
    (home / ".deltalog.yaml").write_text(
        "catalog:\n  r:\n    type: rest\n    uri: http://127.0.0.1:9\n    token: abc123\n"
    )
    with pytest.raises(dl.InvalidArgumentError, match=r"r\.token is a secret written in the file"):
        dl.load_catalog("r")
    (home / ".deltalog.yaml").write_text(
        "catalog:\n  r:\n    type: rest\n    uri: http://127.0.0.1:9\n    token: ${NOT_SET_X}\n"
    )
    with pytest.raises(
        dl.InvalidArgumentError, match=r"refers to \$\{NOT_SET_X\}, which is not set"
    ):
        dl.load_catalog("r")


def test_table_commands_take_a_catalog_table(home: Path, tmp_path: Path) -> None:
    """``info``, ``files``, ``history``, ``optimize``, ``checkpoint``, ``compact-log`` and
    ``vacuum`` with ``--catalog NAME TABLE``: a catalog-managed table of a SQLite catalog,
    which by location is refused (``CatalogRequiredError``)."""
    (home / ".deltalog.yaml").write_text(
        f"catalog:\n  local:\n    type: sqlite\n    path: {tmp_path / 'c.db'}\n"
        f"    warehouse: {tmp_path / 'wh'}\n"
    )
    catalog = dl.load_catalog("local", create=True)
    catalog.create_namespace("sales")
    for i in range(3):
        catalog.write_table(
            "sales.orders", pa.table({"id": pa.array([i], pa.int64())}), mode="append"
        )
    location = catalog.load_table("sales.orders").table_uri
    env = {**os.environ}
    code, out, err = cli("info", location, env=env)
    one_line_error(code, err, "CatalogRequiredError")
    code, out, err = cli("info", "--catalog", "local", "sales.orders", "--json", env=env)
    assert code == 0, err
    info = json.loads(out)
    assert info["version"] == 2 and info["files"] == 3
    assert "catalogManaged" in info["protocol"]["readerFeatures"]
    code, out, err = cli("info", "-c", "local", "sales.orders", "--version", "0", "--json", env=env)
    assert json.loads(out)["version"] == 0
    code, out, err = cli(
        "history", "-c", "local", "sales.orders", "--limit", "2", "--json", env=env
    )
    assert [json.loads(line)["version"] for line in out.splitlines()] == [2, 1]
    code, out, err = cli("history", "-c", "local", "sales.orders", env=env)
    lines = out.splitlines()
    assert lines[0].split() == ["VERSION", "TIMESTAMP", "OPERATION", "PARAMETERS"]
    assert [line.split()[0] for line in lines[1:]] == ["2", "1", "0"]
    code, out, err = cli("info", "-c", "local", "sales.orders", env=env)
    assert code == 0, err
    assert any(line.split()[:2] == ["version", "2"] for line in out.splitlines()), out
    assert any("catalogManaged" in line for line in out.splitlines() if "reader features" in line)
    code, out, err = cli("files", "-c", "local", "sales.orders", env=env)
    assert len(out.splitlines()) == 3
    # Not a terminal: no bar unless asked for.
    code, out, err = cli("optimize", "-c", "local", "sales.orders", "--json", "--progress", env=env)
    assert code == 0, err
    assert json.loads(out)["numFilesRemoved"] == 3
    assert "OPTIMIZE" in err and ("1/1 units" in err or "100%" in err), err
    code, out, err = cli("files", "-c", "local", "sales.orders", env=env)
    assert len(out.splitlines()) == 1
    assert catalog.load_table("sales.orders").version() == 3  # one catalog commit
    code, out, err = cli("vacuum", "-c", "local", "sales.orders", "--no-progress", env=env)
    assert code == 0, err
    code, out, err = cli("info", "-c", "local", "sales.nope", env=env)
    one_line_error(code, err, "sales.nope")
    code, out, err = cli("compact", location, env=env)
    assert code == 2 and "invalid choice: 'compact'" in err  # argparse: see optimize


def test_delta_table_by_catalog_name(home: Path, tmp_path: Path) -> None:
    """``dl.DeltaTable("local.sales.orders")``: the table of the named catalog, through the
    catalog (a catalog-managed table), at a version or a timestamp; a local path of that name
    wins; an unknown first part is a location as before."""
    (home / ".deltalog.yaml").write_text(
        f"catalog:\n  local:\n    type: sqlite\n    path: {tmp_path / 'c.db'}\n"
        f"    warehouse: {tmp_path / 'wh'}\n"
    )
    catalog = dl.load_catalog("local", create=True)
    catalog.create_namespace("sales")
    catalog.write_table("sales.orders", pa.table({"id": pa.array([1], pa.int64())}))
    catalog.write_table("sales.orders", pa.table({"id": pa.array([2], pa.int64())}), mode="append")
    t = dl.DeltaTable("local.sales.orders")
    assert t.version() == 1 and sorted(t.to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    dl.write_table(t, pa.table({"id": pa.array([3], pa.int64())}), mode="append")
    assert catalog.load_table("sales.orders").version() == 2  # committed through the catalog
    assert dl.DeltaTable("LOCAL.sales.orders", version=0).to_pyarrow_table().num_rows == 1
    stamp = next(h["timestamp"] for h in t.history() if h["version"] == 1)
    assert dl.DeltaTable("local.sales.orders", timestamp=stamp).version() == 1
    with pytest.raises(dl.TableNotFoundError):
        dl.DeltaTable("other.sales.orders")
    # A directory of that very name in the working directory is a location: it wins.
    dl.write_table("local.sales.orders", pa.table({"x": [9]}))
    assert dl.DeltaTable("local.sales.orders").schema().names == ["x"]


def test_a_misspelled_catalog_name_is_explained(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DeltaTable("teamm.sales.orders")`` / ``deltalog info teamm.sales.orders`` with no such
    local path and no catalog ``teamm``: the TableNotFoundError still says there is no table
    at that path, and says the text looked like a catalog table name, which catalogs are
    configured (the file's and the environment's) and which is the closest."""
    (home / ".deltalog.yaml").write_text(
        f"catalog:\n  team:\n    type: sqlite\n    path: {tmp_path / 'c.db'}\n"
        f"    warehouse: {tmp_path / 'wh'}\n"
    )
    monkeypatch.setenv("DELTALOG_CATALOG__LAKE__TYPE", "dir")
    monkeypatch.setenv("DELTALOG_CATALOG__LAKE__PATH", str(tmp_path / "lake"))
    with pytest.raises(dl.TableNotFoundError) as raised:
        dl.DeltaTable("teamm.sales.orders")
    message = str(raised.value)
    assert "no Delta table at file://" in message and "teamm.sales.orders" in message
    assert "catalog table name" in message and "lake, team" in message, message
    assert "did you mean 'team.sales.orders'" in message, message
    with pytest.raises(dl.TableNotFoundError, match=r"did you mean 'lake\.orders'"):
        dl.DeltaTable("lak.orders")  # two parts: catalog.table
    code, _, err = cli("info", "teamm.sales.orders", env={**os.environ})
    one_line_error(
        code, err, "TableNotFoundError", "no Delta table at", "did you mean 'team.sales.orders'"
    )
    # Nothing configured: said so, with where the configuration comes from.
    (home / ".deltalog.yaml").unlink()
    monkeypatch.delenv("DELTALOG_CATALOG__LAKE__TYPE")
    monkeypatch.delenv("DELTALOG_CATALOG__LAKE__PATH")
    with pytest.raises(dl.TableNotFoundError, match="no catalogs are configured"):
        dl.DeltaTable("teamm.sales.orders")
    # A path that exists is a location, explained as before (no catalog hint).
    (tmp_path / "some.dir").mkdir()
    with pytest.raises(dl.TableNotFoundError) as raised:
        dl.DeltaTable("some.dir")
    assert "catalog table name" not in str(raised.value)
