"""deltalog's REST catalog server for the tests: ``python -m deltalog catalog serve`` started as
a real process on a free loopback port (it prints where it listens), stopped with SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


class CatalogServer:
    """A running server: its ``url``, its process and where its stderr (the request log)
    goes."""

    def __init__(self, proc: subprocess.Popen[str], url: str, log: Path) -> None:
        self.proc = proc
        self.url = url
        self.log = log

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM (a graceful shutdown), then waits; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start(
    directory: Path,
    db: str | None = None,
    warehouse: str | None = None,
    tokens: Path | None = None,
    args: Sequence[str] = (),
) -> CatalogServer:
    """Starts a server whose files (SQLite database, warehouse, log) are in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"server-{time.monotonic_ns()}.log"
    command = [
        sys.executable,
        "-m",
        "deltalog",
        "catalog",
        "serve",
        "--port",
        "0",
        "--db",
        db or f"sqlite://{directory / 'catalog.db'}",
        "--warehouse",
        warehouse or str(directory / "wh"),
        *(["--tokens", str(tokens)] if tokens else []),
        *args,
    ]
    with open(log, "w") as err:
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on " not in line:
        proc.kill()
        raise RuntimeError(f"the catalog server did not start: {line!r}\n{log.read_text()}")
    url = line.split("listening on ", 1)[1].split()[0]
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5) as answer:
                if answer.status == 200:
                    break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(
                    f"the catalog server is not healthy:\n{log.read_text()}"
                ) from None
            time.sleep(0.05)
    return CatalogServer(proc, url, log)


@contextmanager
def running(directory: Path, **kwargs: object) -> Iterator[CatalogServer]:
    server = start(directory, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
