#!/usr/bin/env python3
"""Exercises the Unity Catalog API of an installed ``deltalog[rest]`` with plain HTTP (urllib3
and json only): starts ``deltalog catalog serve`` (the ``deltalog`` beside this interpreter) on
a loopback port, creates a catalog, a schema and a managed table (the Delta API's
``createStagingTable``, version 0 written by hand, ``createTable``), commits version 1 through
``updateTable`` (a staged commit file: the catalog-managed commit protocol), and reads it back
with ``loadTable`` and the UC API's ``getTable``. Run by ``scripts/check_install.sh`` in each
fresh venv; exits non-zero on the first failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import urllib3

P = "/api/2.1/unity-catalog"


def call(http: urllib3.PoolManager, url: str, method: str, route: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    answer = http.request(method, url + P + route, body=data, headers=headers)
    if not 200 <= answer.status < 300:
        raise SystemExit(f"{method} {route}: HTTP {answer.status}: {answer.data.decode()}")
    return json.loads(answer.data) if answer.data else None


def commit_file(root: Path, version: int, table_id: str | None, now: int) -> str:
    """A commit's lines: commitInfo (in-commit timestamp, txnId) first; version 0 with the
    catalog-managed protocol and metadata; an empty data change otherwise."""
    lines: list[dict[str, Any]] = [
        {
            "commitInfo": {
                "timestamp": now,
                "inCommitTimestamp": now,
                "operation": "WRITE",
                "txnId": str(uuid.uuid4()),
            }
        }
    ]
    if version == 0:
        lines.append(
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": ["catalogManaged"],
                    "writerFeatures": ["catalogManaged", "inCommitTimestamp"],
                }
            }
        )
        schema = {
            "type": "struct",
            "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
        }
        lines.append(
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
            }
        )
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="deltalog-check-install-"))
    deltalog = Path(sys.executable).parent / "deltalog"
    command = [str(deltalog), "catalog", "serve", "--port", "0"]
    command += ["--db", f"sqlite://{work / 'catalog.db'}", "--warehouse", str(work / "wh")]
    log = open(work / "server.log", "w")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if "listening on " not in line:
            said = (work / "server.log").read_text()
            raise SystemExit(f"the server did not start: {line!r}\n{said}")
        url = line.split("listening on ", 1)[1].split()[0]
        http = urllib3.PoolManager(timeout=30, retries=False)
        for _ in range(100):
            try:
                if http.request("GET", url + "/healthz").status == 200:
                    break
            except urllib3.exceptions.HTTPError:
                pass
            time.sleep(0.1)
        call(http, url, "POST", "/catalogs", {"name": "main"})
        call(http, url, "POST", "/schemas", {"name": "sales", "catalog_name": "main"})
        base = "/delta/v1/catalogs/main/schemas/sales"
        staged = call(http, url, "POST", base + "/staging-tables", {"name": "orders"})
        location = Path(staged["location"].removeprefix("file://"))
        log_dir = location / "_delta_log"
        log_dir.mkdir(parents=True, exist_ok=True)
        now = int(time.time() * 1000)
        (log_dir / "00000000000000000000.json").write_text(
            commit_file(location, 0, staged["table-id"], now)
        )
        columns = {
            "type": "struct",
            "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
        }
        created = call(
            http,
            url,
            "POST",
            base + "/tables",
            {
                "name": "orders",
                "location": staged["location"],
                "table-type": "MANAGED",
                "columns": columns,
                "protocol": {"min-reader-version": 3, "min-writer-version": 7},
                "properties": {"delta.enableInCommitTimestamps": "true"},
                "last-commit-timestamp-ms": now,
            },
        )
        uuid_ = created["metadata"]["table-uuid"]
        # Version 1: a staged commit, ratified by updateTable (add-commit).
        staged_dir = log_dir / "_staged_commits"
        staged_dir.mkdir(exist_ok=True)
        name = f"{1:020d}.{uuid.uuid4()}.json"
        body = commit_file(location, 1, None, now + 1)
        (staged_dir / name).write_text(body)
        commit = {
            "version": 1,
            "timestamp": now + 1,
            "file-name": name,
            "file-size": len(body.encode()),
            "file-modification-timestamp": now + 1,
        }
        call(
            http,
            url,
            "POST",
            base + "/tables/orders",
            {
                "requirements": [{"type": "assert-table-uuid", "uuid": uuid_}],
                "updates": [{"action": "add-commit", "commit": commit}],
            },
        )
        loaded = call(http, url, "GET", base + "/tables/orders")
        assert loaded["latest-table-version"] == 1, loaded
        assert [c["file-name"] for c in loaded["commits"]] == [name], loaded
        info = call(http, url, "GET", "/tables/main.sales.orders")
        assert info["table_type"] == "MANAGED" and info["table_id"] == uuid_, info
        listed = call(http, url, "GET", "/tables?catalog_name=main&schema_name=sales")
        assert [t["name"] for t in listed["tables"]] == ["orders"], listed
        print(f"UC API ok: catalog, schema, managed table, commit 1 ratified ({url})")
        # The web pages' files are package data: the wheel must carry them.
        for page in ("/ui/", "/ui/static/app.js", "/ui/static/app.css"):
            answer = http.request("GET", url + page)
            assert answer.status == 200 and answer.data, (page, answer.status)
        answer = http.request("GET", url + "/ui/api/health?ns=main&ns=sales&t=orders")
        health = json.loads(answer.data)
        assert answer.status == 200 and health["version"] == 1, health
        print("web pages ok: /ui/ and its files served, orders' health at version 1")
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
