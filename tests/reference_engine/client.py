"""The tests' handle on Delta Spark, the protocol's reference implementation (issue #44).

``DeltaSpark()`` starts ``worker.py`` under the reference environment's Python (``env.py``
installs it: pyspark at the release Delta Spark is built for, Delta Spark's jars from Maven
Central) and talks to it over an authenticated loopback connection. Results come back as Arrow
tables, so that they are compared with deltalog's without going through either engine's
conversions. One worker (one JVM) serves a whole test module.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from typing import Any

import pyarrow as pa

from .env import Env, ensure

WORKER = Path(__file__).resolve().parent / "worker.py"
START_TIMEOUT_S = 240
REQUEST_TIMEOUT_S = 600


class DeltaSparkError(Exception):
    """A statement Delta Spark refused or failed: its exception class, its error class (Spark's
    condition name, when it has one) and its message."""

    def __init__(self, kind: str, error_class: str, message: str) -> None:
        super().__init__(f"{kind} [{error_class}] {message}")
        self.kind = kind
        self.error_class = error_class
        self.message = message


def table_ref(path: str | Path) -> str:
    """``delta.`<path>``` with the backtick escaped."""
    return "delta.`" + str(path).replace("`", "``") + "`"


def settings(env: Env, master: str = "local[2]") -> dict[str, str]:
    return {
        "spark.master": master,
        "spark.jars": ",".join(str(j) for j in env.jars),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.databricks.delta.snapshotPartitions": "2",
        # VACUUM lists and deletes in this many tasks (10,000 by default: minutes on 2 cores).
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "2g",
        # VACUUM ... RETAIN 0 HOURS on tables a test wrote a second ago.
        "spark.databricks.delta.retentionDurationCheck.enabled": "false",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    }


class DeltaSpark:
    """A Delta Spark session in its own process."""

    def __init__(self, *, master: str = "local[2]", extra: dict[str, str] | None = None) -> None:
        self.env = ensure()
        key = os.urandom(16)
        self._listener = Listener(("127.0.0.1", 0), authkey=key)
        host, port = self._listener.address
        conf = {**settings(self.env, master), **(extra or {})}
        self._log = tempfile.NamedTemporaryFile(prefix="delta-spark-", suffix=".log", delete=False)
        env = {
            **os.environ,
            "DELTALOG_REFERENCE_KEY": key.hex(),
            "PYSPARK_PYTHON": str(self.env.python),
            "PYSPARK_DRIVER_PYTHON": str(self.env.python),
        }
        env.pop("SPARK_HOME", None)
        env.pop("PYTHONPATH", None)
        self._proc = subprocess.Popen(
            [str(self.env.python), str(WORKER), host, str(port), json.dumps(conf)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        accepted: list[Connection] = []
        thread = threading.Thread(target=lambda: accepted.append(self._listener.accept()))
        thread.daemon = True
        thread.start()
        thread.join(START_TIMEOUT_S)
        if not accepted:
            self._proc.kill()
            raise RuntimeError(f"Delta Spark did not start: {self._tail()}")
        self._conn = accepted[0]
        self.spark_version = self._answer()

    def _tail(self) -> str:
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-4000:]

    def _answer(self) -> Any:
        waited = 0.0
        while not self._conn.poll(5):
            waited += 5
            if self._proc.poll() is not None:
                raise RuntimeError(f"Delta Spark exited ({self._proc.returncode}): {self._tail()}")
            if waited >= REQUEST_TIMEOUT_S:
                raise TimeoutError(f"Delta Spark answered nothing in {waited:.0f} s")
        reply = self._conn.recv()
        if reply[0] == "error":
            raise DeltaSparkError(reply[1], reply[2], reply[3])
        return reply[1]

    def _request(self, *request: Any) -> Any:
        self._conn.send(request)
        return self._answer()

    def sql(self, query: str) -> pa.Table:
        """Runs a SQL statement and answers its rows."""
        return _table(self._request("sql", query))

    def execute(self, statement: str) -> None:
        """Runs a command (its result rows, such as OPTIMIZE's metrics, are not collected)."""
        self._request("execute", statement)

    def run(self, code: str, **values: Any) -> Any:
        """Runs Python code in the worker (``spark`` in scope) and answers its ``result``; a
        DataFrame comes back as an Arrow table."""
        answer = self._request("run", code, values)
        return _table(answer) if isinstance(answer, bytes) else answer

    def read(self, path: str | Path, version: int | None = None) -> pa.Table:
        """``spark.read.format("delta")`` of the table (at ``version``)."""
        code = "r = spark.read.format('delta')\n"
        if version is not None:
            code += "r = r.option('versionAsOf', version)\n"
        code += "result = r.load(path)\n"
        return self.run(code, path=str(path), version=version)  # type: ignore[no-any-return]

    def cdf(self, path: str | Path, start: int, end: int | None = None) -> pa.Table:
        """The table's change data feed from version ``start`` (to ``end``)."""
        code = (
            "r = spark.read.format('delta').option('readChangeFeed', 'true')"
            ".option('startingVersion', start)\n"
            "if end is not None:\n    r = r.option('endingVersion', end)\n"
            "result = r.load(path)\n"
        )
        return self.run(code, path=str(path), start=start, end=end)  # type: ignore[no-any-return]

    def history(self, path: str | Path) -> list[dict[str, Any]]:
        """DESCRIBE HISTORY, oldest first: version, timestamp (ms since the epoch), operation."""
        code = (
            "from pyspark.sql import functions as F\n"
            "h = spark.sql('DESCRIBE HISTORY ' + ref).select(\n"
            "    'version', F.unix_millis('timestamp').alias('ms'), 'operation')\n"
            "result = [tuple(r) for r in h.collect()]\n"
        )
        rows = self.run(code, ref=table_ref(path))
        return [{"version": v, "timestamp": ms, "operation": op} for v, ms, op in sorted(rows)]

    def detail(self, path: str | Path) -> dict[str, Any]:
        """DESCRIBE DETAIL's one row."""
        rows = self.sql("DESCRIBE DETAIL " + table_ref(path)).to_pylist()
        assert len(rows) == 1
        return rows[0]  # type: ignore[no-any-return]

    def checkpoint(self, path: str | Path) -> int:
        """Writes a checkpoint of the latest version the way Delta Spark's own commits do
        (``DeltaLog.checkpoint``), and answers that version."""
        code = (
            "log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable("
            "spark._jsparkSession, path)\n"
            "log.checkpoint()\n"
            "result = log.unsafeVolatileSnapshot().version()\n"
        )
        return self.run(code, path=str(path))  # type: ignore[no-any-return]

    def close(self) -> None:
        try:
            self._conn.send(("close",))
            self._proc.wait(60)
        except Exception:
            self._proc.kill()
        finally:
            self._listener.close()
            self._log.close()
            os.unlink(self._log.name)


def _table(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
