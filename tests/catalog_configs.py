"""New, empty catalogs of each kind for the tests: the configuration ``dl.connect_catalog``
takes (a ``rest`` or ``unity`` catalog is a real ``deltalog catalog serve`` process, stopped
when the context ends; ``unity``'s tables go in ``main.default``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import catalog_server
import deltalog as dl

Config = dict[str, str]


@contextmanager
def new_catalog(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, private: bool = False
) -> Iterator[Config]:
    """A new catalog of ``kind`` (``dir``, ``sqlite``, ``postgresql``, ``rest``, ``unity``).
    With ``private``, a server's configuration also names its SQLite database and warehouse
    under keys starting with ``_`` (the test's own: drop them before connecting)."""
    warehouse = str(tmp_path / "wh")
    if kind == "dir":
        yield {"type": "dir", "path": warehouse}
    elif kind == "sqlite":
        yield {"type": "sqlite", "path": str(tmp_path / "catalog.db"), "warehouse": warehouse}
    elif kind == "postgresql":
        uri = request.getfixturevalue("postgres_uri")
        yield {"type": "postgresql", "uri": uri, "warehouse": warehouse}
    else:
        with catalog_server.running(tmp_path / "server", warehouse=warehouse) as server:
            config = {"type": kind, "uri": server.url}
            if private:
                config |= {
                    "_path": str(tmp_path / "server" / "catalog.db"),
                    "_warehouse": warehouse,
                }
            if kind == "unity":
                rest = dl.connect_catalog({"type": "rest", "uri": server.url})
                rest.create_namespace("main")
                rest.create_namespace("main.default")
                config |= {"catalog": "main", "schema": "default"}
            yield config
