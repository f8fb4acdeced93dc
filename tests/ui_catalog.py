"""A catalog server with tables worth looking at, for the web pages' tests (issue #47).

Everything is made through the server's own REST API by principals with tokens, so that each
version's principal is the catalog's record of who committed it:

* ``ada`` (admin) makes the namespaces, the tables and their schema changes;
* ``etl`` (writer) appends and deletes;
* ``rita`` (reader) only reads.

Hostile text sits everywhere a user can put text: table names (a catalog name cannot contain
``/``, every deltalog catalog's rule, so ``<script>alert(1)</script>`` itself is a comment, a
description and property values, and the table names are ``<script>alert(1)<script>`` and
``<img src=x onerror=alert(1)>``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from tests.catalog_server import CatalogServer, running

import deltalog as dl
from deltalog.server.auth import add_token

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
SCRIPT_TABLE = "<script>alert(1)<script>"
COMMENT = f"order id {SCRIPT} & <b>bold</b>"


@dataclass
class UiCatalog:
    server: CatalogServer
    tokens: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.url

    def get(self, view: str, token: str | None, **params: Any) -> tuple[int, Any, dict[str, str]]:
        """GET ``/ui/api/<view>``: status, decoded JSON, headers."""
        query = urllib.parse.urlencode(params, doseq=True)
        request = urllib.request.Request(f"{self.url}/ui/api/{view}?{query}")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read()), dict(answer.headers)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null"), dict(e.headers)


def _client(url: str, token: str) -> Any:
    return dl.connect_catalog({"type": "rest", "uri": url, "token": token})


def populate(url: str, tokens: dict[str, str]) -> None:
    admin, writer = _client(url, tokens["ada"]), _client(url, tokens["etl"])
    admin.create_namespace("sales", properties={"owner note": SCRIPT})
    admin.create_namespace("sales.eu")
    admin.create_namespace("marketing")
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("region", pa.string()),
            pa.field("amount", pa.float64()),
            pa.field(
                "customer", pa.struct([pa.field("name", pa.string()), pa.field("tier", pa.int32())])
            ),
        ]
    )
    admin.create_table(
        "sales.eu.orders",
        schema,
        partition_by=["region"],
        configuration={"delta.enableDeletionVectors": "true", "note": IMG},
    )
    orders = writer.load_table("sales.eu.orders")
    for batch in range(6):
        n = 50 + batch * 10
        data = pa.table(
            {
                "id": pa.array(range(batch * 1000, batch * 1000 + n), pa.int64()),
                "region": ["north", "south", "east"][batch % 3 : batch % 3 + 1] * n,
                "amount": [float(i) for i in range(n)],
                "customer": [{"name": f"c{i}", "tier": i % 3} for i in range(n)],
            },
            schema=schema,
        )
        dl.write_deltalake(orders, data, mode="append")
    orders.delete("id % 2 = 0 AND region = 'north'")
    table = admin.load_table("sales.eu.orders")
    table.alter.set_column_metadata("id", {"comment": COMMENT})
    table.alter.set_table_description(f"Orders {SCRIPT}")
    table.alter.set_properties({"team": SCRIPT})
    small = pa.table({"x": pa.array([1, 2, 3], pa.int64())})
    admin.write_table(f"sales.{SCRIPT_TABLE}", small)
    admin.write_table(f"sales.{IMG}", small)
    admin.write_table("marketing.campaigns", small)


@contextmanager
def ui_catalog(directory: Path) -> Iterator[UiCatalog]:
    """A running server with the tables above (see the module docs)."""
    tokens_file = directory / "tokens.json"
    tokens = {
        "ada": add_token(tokens_file, "ada", "admin"),
        "etl": add_token(tokens_file, "etl", "writer"),
        "rita": add_token(tokens_file, "rita", "reader"),
    }
    with running(directory, tokens=tokens_file) as server:
        populate(server.url, tokens)
        yield UiCatalog(server, tokens)
