"""Hadoop's S3A file system for Spark in the tests (issue #45, item 2): hadoop-aws and the AWS
SDK v2 modules it loads, copied from Maven Central by ``mvn dependency:copy-dependencies`` of
``object_store_jars/pom.xml`` into ``~/.cache/deltalog-object-store-jars/<pom hash>/``
(``DELTALOG_OBJECT_STORE_JARS`` overrides the root) once, then reused.

``python tests/hadoop_aws.py`` prints the jars' paths, ``:``-separated."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

POM = Path(__file__).parent / "object_store_jars" / "pom.xml"


def cache_root() -> Path:
    root = os.environ.get("DELTALOG_OBJECT_STORE_JARS")
    return Path(root) if root else Path.home() / ".cache" / "deltalog-object-store-jars"


def jars() -> list[Path]:
    """The jars, fetched first if this pom's set is not in the cache."""
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    target = cache_root() / digest
    done = target / ".complete"
    if not done.is_file():
        if shutil.which("mvn") is None:
            raise RuntimeError("mvn is not on PATH (Maven fetches hadoop-aws for the S3 tests)")
        partial = target.with_name(digest + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run(
            [
                "mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
                "-DincludeScope=runtime", f"-DoutputDirectory={partial}",
            ],
            check=True,
        )  # fmt: skip
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        done.touch()
    return sorted(target.glob("*.jar"))


if __name__ == "__main__":
    print(":".join(str(j) for j in jars()))
    sys.exit(0)
