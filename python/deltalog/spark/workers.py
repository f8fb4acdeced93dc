"""Whether Spark's Python workers can import deltalog (issue #42).

Every deltalog job runs deltalog on the executors, in the interpreter PySpark starts its
workers with: ``SparkContext.pythonExec``, which PySpark takes from ``PYSPARK_PYTHON`` when the
context starts (``spark.pyspark.python`` sets it for ``spark-submit``). Another interpreter than
the driver's, without deltalog, fails every task with a ``ModuleNotFoundError`` deep in a worker
traceback. :func:`check_workers` finds that out once per context, before a job runs:

- the workers run the driver's own interpreter (the same path as ``sys.executable``): nothing
  to probe;
- else one tiny job (one task, one row) asks the workers' interpreter to import deltalog; a
  failure raises :class:`~deltalog.exceptions.SparkWorkerPythonError` naming that interpreter
  and what to set.

The answer is cached per context and interpreter.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger("deltalog.spark")

#: ``(application id of the context, interpreter)`` → the error found (None: the workers
#: import deltalog).
_CHECKED: dict[tuple[str, str], Exception | None] = {}

# The probe is compiled outside any importable module, so that cloudpickle sends it by value:
# a worker without deltalog can still unpickle and run it.
_PROBE_SOURCE = """
def probe(_rows):
    import sys
    try:
        import deltalog
    except BaseException as e:
        yield (sys.executable, None, f"{type(e).__name__}: {e}")
        return
    yield (sys.executable, getattr(deltalog, "__version__", "?"), None)
"""


def _probe() -> Any:
    namespace: dict[str, Any] = {"__name__": "deltalog_worker_probe"}
    exec(compile(_PROBE_SOURCE, "<deltalog worker probe>", "exec"), namespace)
    return namespace["probe"]


def worker_python(sc: SparkContext) -> str:
    """The interpreter PySpark starts ``sc``'s Python workers with."""
    return str(getattr(sc, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON") or "python3")


def _is_driver_python(executable: str) -> bool:
    """Whether ``executable`` names the driver's interpreter by the same path (a virtual
    environment's ``python`` links to its base interpreter, so resolved links prove nothing)."""
    found = shutil.which(executable) if os.sep not in executable else executable
    if found is None:
        return False
    return os.path.abspath(found) == os.path.abspath(sys.executable)


def check_workers(spark: SparkSession) -> None:
    """Raises :class:`~deltalog.exceptions.SparkWorkerPythonError` when ``spark``'s Python
    workers cannot import deltalog (see the module's docs); cheap after the first call for a
    context. Spark Connect sessions (no context here) are not checked."""
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: the workers are the server's
        return
    if getattr(sc, "_jsc", None) is None:
        return
    executable = worker_python(sc)
    key = (str(sc.applicationId), executable)
    if key not in _CHECKED:
        _CHECKED[key] = None if _is_driver_python(executable) else _run_probe(sc, executable)
    found = _CHECKED[key]
    if found is not None:
        raise found


def _run_probe(sc: SparkContext, executable: str) -> Exception | None:
    from deltalog.exceptions import SparkWorkerPythonError

    try:
        result = sc.parallelize([0], 1).mapPartitions(_probe()).collect()
    except Exception as e:
        text = str(e)
        missing = _missing_module(text)
        if missing is None:
            # Not an import failure: the job that follows reports whatever this is.
            log.warning("deltalog could not probe Spark's Python workers (%s): %s", executable, e)
            return None
        return SparkWorkerPythonError(
            _message(executable, f"its workers fail with ModuleNotFoundError: {missing}"),
            worker_python=executable,
        )
    if not result:
        return None
    actual, version, error = result[0]
    if version is None:
        return SparkWorkerPythonError(
            _message(actual or executable, f"it cannot import deltalog ({error})"),
            worker_python=actual or executable,
        )
    log.debug("Spark's Python workers (%s) import deltalog %s", actual, version)
    return None


def _missing_module(text: str) -> str | None:
    """The ``No module named ...`` of a failed job's text, if that is what failed."""
    at = text.find("No module named")
    if at < 0:
        return None
    return text[at:].splitlines()[0].strip()


def _message(executable: str, what: str) -> str:
    return (
        f"Spark's Python workers run {executable}, and {what}: deltalog runs on the executors "
        f"and must be installed in their interpreter. Set PYSPARK_PYTHON (before the "
        f"SparkContext starts; spark.pyspark.python for spark-submit) to an interpreter that "
        f"has deltalog, such as the driver's {sys.executable}"
    )


__all__ = ["check_workers", "worker_python"]
