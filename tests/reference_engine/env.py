"""Installs Delta Spark, the protocol's reference implementation, outside the clone (issue #44).

Run as a script by ``scripts/test.sh`` (and ``benches/spark.py``), and called by the tests'
fixture, which both get the same cached installation:

- a Python environment with the pyspark release Delta Spark is built for (``spark.version`` in
  ``pom.xml``) and pyarrow, apart from the one deltalog's own Spark integration runs in (Delta
  Spark 4.4.0 fails on Spark 4.3: see ``pom.xml``);
- Delta Spark's jars, copied from Maven Central by ``mvn dependency:copy-dependencies``.

Both live under ``$DELTALOG_REFERENCE_HOME`` (default ``~/.cache/deltalog-reference``), keyed by
the versions, and are reused while a ``ready`` stamp says they were installed completely. Nothing
here is committed or shipped: Delta Spark is a test dependency only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"


class ReferenceEngineUnavailable(RuntimeError):
    """Delta Spark could not be installed (no Maven, no network, a failed download)."""


@dataclass(frozen=True)
class Env:
    python: Path
    jars: tuple[Path, ...]
    delta_version: str
    spark_version: str


def _property(name: str) -> str:
    match = re.search(rf"<{re.escape(name)}>([^<]+)</", POM.read_text())
    if match is None:
        raise ReferenceEngineUnavailable(f"{POM}: no <{name}> property")
    return match.group(1).strip()


def home() -> Path:
    default = Path.home() / ".cache" / "deltalog-reference"
    return Path(os.environ.get("DELTALOG_REFERENCE_HOME", default))


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        raise ReferenceEngineUnavailable(f"{what} failed ({done.returncode}): {tail}")


def ensure(log: bool = False) -> Env:
    """The installed environment, installing what is missing first (minutes on a cold cache,
    a few milliseconds warm)."""
    delta, spark = _property("delta.version"), _property("spark.version")
    root = home() / f"delta-{delta}-spark-{spark}"
    python = root / "venv" / "bin" / "python"
    jar_dir = root / "jars"
    stamp = root / "ready"
    if not stamp.exists():
        if log:
            print(f"installing Delta Spark {delta} with pyspark {spark} into {root}", flush=True)
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        venv.EnvBuilder(with_pip=True).create(root / "venv")
        _run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
             f"pyspark=={spark}", "pyarrow"],
            f"pip install pyspark=={spark}",
        )  # fmt: skip
        if shutil.which("mvn") is None:
            raise ReferenceEngineUnavailable("mvn is not on PATH (Maven fetches Delta Spark)")
        _run(
            ["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
             f"-DoutputDirectory={jar_dir}", "-DincludeScope=runtime"],
            "mvn dependency:copy-dependencies",
        )  # fmt: skip
        stamp.write_text(f"delta {delta}\nspark {spark}\n")
    jars = tuple(sorted(jar_dir.glob("*.jar")))
    if not any(j.name.startswith("delta-spark_") for j in jars):
        raise ReferenceEngineUnavailable(f"{jar_dir}: no delta-spark jar (remove {stamp})")
    return Env(python=python, jars=jars, delta_version=delta, spark_version=spark)


if __name__ == "__main__":
    try:
        env = ensure(log=True)
    except ReferenceEngineUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"Delta Spark {env.delta_version} on pyspark {env.spark_version}: {env.python}")
