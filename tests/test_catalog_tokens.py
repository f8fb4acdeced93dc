"""Tokens with a life cycle (issue #34, item 4): ``deltalog catalog token create|list|revoke|
rotate`` on the tokens file of a running ``deltalog catalog serve`` (two worker processes),
taking effect without a restart; expired and revoked tokens answer 401 with the reason, on the
Lance routes and on Unity Catalog's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

import catalog_server
import deltalog as dl
from deltalog.server import auth


def token_cli(*args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "deltalog", "catalog", "token", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


def status(url: str, token: str) -> tuple[int, str]:
    """HTTP status and body of a GET with ``token``."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def eventually(check: Callable[[], bool], seconds: float = 10) -> None:
    """``check()`` becomes true within ``seconds`` (servers re-read the file within a
    second; requests may reach either worker)."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.1)


def test_tokens_are_created_listed_revoked_and_rotated_without_a_restart(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    code, out, err = token_cli(
        "create", "--tokens", str(tokens), "--name", "ops", "--role", "admin"
    )
    assert code == 0, err
    admin = out.strip()
    code, out, err = token_cli("--tokens", str(tokens), "--name", "etl", "--role", "writer")
    assert code == 0, err  # the old form: create is the default
    etl = out.strip()
    assert oct(tokens.stat().st_mode & 0o777) == "0o600"
    with catalog_server.running(
        tmp_path / "server", tokens=tokens, args=["--workers", "2"]
    ) as server:
        lance = f"{server.url}/v1/namespace/%24/list"
        unity = f"{server.url}/api/2.1/unity-catalog/catalogs"
        assert status(lance, admin)[0] == 200 and status(unity, etl)[0] == 200

        # A token created while the server runs works within a second, on every worker.
        code, out, err = token_cli(
            "create", "--tokens", str(tokens), "--name", "bi", "--role", "reader", "--expires", "4s"
        )
        bi = out.strip()
        eventually(lambda: all(status(lance, bi)[0] == 200 for _ in range(6)))
        # ... and expires.
        eventually(lambda: status(lance, bi)[0] == 401, seconds=15)
        code, body = status(lance, bi)
        assert "'bi' expired at" in body, body

        # Revoked: 401 saying so, on both APIs; the others are untouched.
        code, out, err = token_cli("revoke", "--tokens", str(tokens), "--name", "etl")
        assert code == 0, err
        # Each worker reloads the file on its own (within a second): until both did, a
        # request may reach one that has not.
        eventually(
            lambda: all(
                status(unity, etl)[0] == 401 and status(lance, etl)[0] == 401 for _ in range(6)
            )
        )
        assert "'etl' was revoked at" in status(unity, etl)[1]
        assert "'etl' was revoked at" in status(lance, etl)[1]
        assert status(lance, admin)[0] == 200
        with pytest.raises(dl.CatalogAuthenticationError, match="revoked"):
            dl.connect_catalog({"type": "rest", "uri": server.url, "token": etl}).list_namespaces()

        # Rotated: the new token works, the old one is refused.
        code, out, err = token_cli("rotate", "--tokens", str(tokens), "--name", "ops")
        new_admin = out.strip()
        assert code == 0 and new_admin != admin, err
        eventually(lambda: all(status(lance, admin)[0] == 401 for _ in range(6)))
        assert status(lance, new_admin)[0] == 200

        # list: names, roles and states, never a token or a digest.
        code, out, err = token_cli("list", "--tokens", str(tokens), "--json")
        listed = {r["name"]: r for r in json.loads(out)}
        assert {n: r["state"] for n, r in listed.items()} == {
            "ops": "active",
            "etl": "revoked",
            "bi": "expired",
        }
        assert listed["ops"]["role"] == "admin" and listed["bi"]["expires"].endswith("Z")
        code, out, err = token_cli("list", "--tokens", str(tokens))
        assert out.splitlines()[0].split() == ["NAME", "ROLE", "STATE", "CREATED", "EXPIRES"]
        assert all(t not in out for t in (admin, new_admin, etl, bi))
        assert "sha256" not in out

        # A tokens file that breaks refuses every token (fail closed) until it is fixed.
        good = tokens.read_text()
        tokens.write_text("{not json")
        eventually(lambda: all(status(lance, new_admin)[0] == 401 for _ in range(6)))
        assert "tokens file cannot be read" in status(lance, new_admin)[1]
        tokens.write_text(good)
        eventually(lambda: all(status(lance, new_admin)[0] == 200 for _ in range(6)))
        log = server.log_text()
    assert all(t not in log for t in (admin, new_admin, etl, bi))


def test_token_commands_refuse_bad_input(tmp_path: Path) -> None:
    tokens = str(tmp_path / "tokens.json")
    for args, message in (
        (["create", "--tokens", tokens, "--name", "x"], "needs --role"),
        (["revoke", "--tokens", tokens], "needs --name"),
        (["revoke", "--tokens", tokens, "--name", "nobody"], "no token named 'nobody'"),
        (
            ["create", "--tokens", tokens, "--name", "x", "--role", "reader", "--expires", "0d"],
            "must be in the future",
        ),
        (
            [
                "create",
                "--tokens",
                tokens,
                "--name",
                "x",
                "--role",
                "reader",
                "--expires",
                "2001-01-01",
            ],
            "that time has passed",
        ),
        (
            ["create", "--tokens", tokens, "--name", "x", "--role", "reader", "--expires", "soon"],
            "not an ISO-8601 time",
        ),
    ):
        code, _out, err = token_cli(*args)
        assert code == 1 and message in err and "Traceback" not in err, (args, err)
    assert auth.parse_expiry("7d", now=0) == 7 * 86400
    assert auth.parse_expiry("2030-01-01T00:00:00Z", now=0) == 1893456000
