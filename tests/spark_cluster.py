"""A Spark standalone cluster on loopback for the tests (issue #45, item 3): a master and one
worker, each a JVM of its own started from the installed pyspark (``bin/spark-class``); the
worker starts executors in JVMs of their own, which start their own Python workers. Nothing
is shared with a driver process but the network and the local disk (the tables)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    """``with StandaloneCluster(workdir) as cluster: cluster.master_url``."""

    def __init__(self, workdir: Path, cores: int = 2, memory: str = "3g") -> None:
        import pyspark

        self.home = Path(pyspark.__file__).parent
        self.workdir = workdir
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui = free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []

    def _start(self, name: str, *args: str) -> None:
        env = {
            **os.environ,
            "SPARK_HOME": str(self.home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_NO_DAEMONIZE": "1",
        }
        # The child keeps its own descriptor of the log; the parent's is closed here.
        with open(self.workdir / f"{name}.log", "wb") as log:
            self.processes.append(
                subprocess.Popen(
                    [str(self.home / "bin" / "spark-class"), *args],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as r:
            return dict(json.load(r))

    def __enter__(self) -> StandaloneCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--webui-port", str(self.ui),
        )  # fmt: skip
        self._start(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1",
            "--cores", str(self.cores),
            "--memory", self.memory,
            "--work-dir", str(self.workdir / "work"),
            "--webui-port", str(free_port()),
            self.master_url,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.state().get("aliveworkers", 0) >= 1:
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                logs = "\n".join(
                    (self.workdir / f"{n}.log").read_text(errors="replace")[-2000:]
                    for n in ("master", "worker")
                )
                self.__exit__(None, None, None)
                raise RuntimeError(f"the standalone cluster did not start:\n{logs}")
            time.sleep(0.5)

    def __exit__(self, *exc: object) -> None:
        for p in reversed(self.processes):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, 15)
                except ProcessLookupError:
                    continue
        for p in self.processes:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait()
        shutil.rmtree(self.workdir / "work", ignore_errors=True)


def session_lines(master_url: str) -> str:
    """Python source making a SparkSession on the cluster (for driver scripts)."""
    return f"""
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master({master_url!r})
         .config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.executor.memory", "1g")
         .config("spark.executor.cores", "2")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.session.timeZone", "UTC")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
import deltalog.spark
deltalog.spark.register(spark)
"""
