"""Child processes for tests that need several at once (writers committing together, writers
killed anywhere, concurrent appends).

Children start from a fork server that has already imported deltalog, its catalogs, pyarrow,
deltalake and pytest, so starting one costs milliseconds instead of the ~1.5 s a fresh
interpreter spends importing a test module and its dependencies (measured: 150 killed writers
took 380 s, most of it imports). Each child is still a fresh process of its own, forked from a
server that ran no test code. A child sees the environment the server started with, not the
test's later changes: a test that changes the environment for its children uses "spawn".
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import BaseContext

#: Imported once by the fork server (a module that is not installed is skipped).
PRELOAD = [
    "deltalog",
    "deltalog.catalog.managed",
    "deltalog.catalog.stores.sqlite",
    "deltalog.catalog.stores.postgresql",
    "deltalog.catalog.clients.rest.client",
    "deltalog.catalog.clients.unity.client",
    "deltalog.protocol.unity.delta_api",
    "psycopg",
    "pyarrow",
    "pyarrow.parquet",
    "deltalake",
    "pytest",
    "catalog_server",
]


def context() -> BaseContext:
    """The multiprocessing context the tests start their children with."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx
