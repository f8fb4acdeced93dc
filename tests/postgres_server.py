"""A throwaway PostgreSQL server for the tests: a fresh cluster (``initdb``) in a temporary
directory, listening on a free loopback port and on a unix socket in that directory, with trust
authentication. PostgreSQL refuses to run as root: as root, its commands run as the ``postgres``
user (``runuser``), who owns the directory."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: What to say when PostgreSQL is missing (CI installs it: scripts/test.sh).
MISSING = (
    "PostgreSQL's server binaries (initdb, pg_ctl, pg_isready) were found neither on PATH nor "
    "in /usr/lib/postgresql/*/bin: install PostgreSQL (apt-get install postgresql; "
    "scripts/test.sh does) to run the PostgreSQL catalog tests"
)


def find_binaries() -> Path | None:
    """The directory of ``initdb``, ``pg_ctl`` and ``pg_isready``: PATH first, then the newest
    Debian ``/usr/lib/postgresql/<major>/bin``."""
    on_path = shutil.which("initdb")
    candidates = [Path(on_path).parent] if on_path else []
    debian = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted((Path(d) for d in debian), key=_major, reverse=True)
    for directory in candidates:
        if all((directory / tool).is_file() for tool in ("initdb", "pg_ctl", "pg_isready")):
            return directory
    return None


def _major(bindir: Path) -> tuple[int, str]:
    name = bindir.parent.name  # /usr/lib/postgresql/<major>/bin
    return (int(name), name) if name.isdigit() else (0, name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """Starts a server; yields the URI of its ``postgres`` database (user ``postgres``).

    Raises:
        RuntimeError: PostgreSQL is not installed, or the server did not start.
    """
    bindir = find_binaries()
    if bindir is None:
        raise RuntimeError(MISSING)
    as_postgres: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="deltalog-pg-"))
    if os.geteuid() == 0:
        as_postgres = ["runuser", "-u", "postgres", "--"]
        pw = pwd.getpwnam("postgres")
        os.chown(root, pw.pw_uid, pw.pw_gid)
    data, log = root / "data", root / "server.log"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*as_postgres, *args], capture_output=True, text=True, timeout=120, check=False
        )

    try:
        done = run(
            str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
            "--encoding=UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stdout}{done.stderr}")
        port = free_port()
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c max_connections=300"
        done = run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "start")
        if done.returncode:
            logged = log.read_text() if log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stdout}{done.stderr}{logged}")
        try:
            deadline = time.monotonic() + 60
            while True:
                ready = run(str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port))
                if ready.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"PostgreSQL did not become ready: {log.read_text()}")
                time.sleep(0.1)
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "stop", "-m", "fast")
    finally:
        shutil.rmtree(root, ignore_errors=True)
