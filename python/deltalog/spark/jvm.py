"""deltalog's JVM companion (``jvm/``): attached to a Spark session when a read needs it.

The companion is a small jar (``deltalog-spark.jar``, built by ``scripts/build_jvm.sh`` and
shipped inside the wheel under ``deltalog/spark/jars/``) with two classes Spark's file scan
needs from the JVM side: a file index fed by deltalog's plan and a parquet format that drops
the rows of each file's deletion vector inside the vectorised reader. It never reads the
Delta log: the Rust core plans on the driver (:meth:`RawScan.file_plan`) and the plan crosses
py4j once, as Arrow IPC bytes.

:func:`companion` attaches the jar to the session on first use (``ADD JAR``: the driver's
session class loader and every executor, nothing for the user to put on ``spark.jars``) and
returns the entry point, or raises :class:`CompanionUnavailable` saying why not (no jar in
this installation, a Spark version the jar is not built for, Spark Connect without py4j).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The jar inside the installed package.
JAR = Path(__file__).parent / "jars" / "deltalog-spark.jar"

#: Spark feature releases the jar is built for and tested on (compiled against the first).
SUPPORTED_SPARK = ("4.2", "4.3")

#: The entry point class (``jvm/src/main/java/dev/deltalog/spark/PlannedScan.java``).
ENTRY = "dev.deltalog.spark.PlannedScan"

_lock = threading.Lock()
_attached: set[str] = set()  # application ids the jar was added to


class CompanionUnavailable(Exception):
    """The JVM companion cannot serve this session; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Attached:
    """A session the jar is attached to: its class loader (the session's, holding the jars
    added to it), Java's ``Thread`` class and the companion classes resolved so far (each
    step of a class's package path is a py4j round trip: resolved once)."""

    session: Any
    loader: Any
    thread: Any
    classes: dict[str, Any] = field(default_factory=dict)


_sessions: dict[int, _Attached] = {}  # by the session's JVM object (py4j proxy, its id)


def companion(spark: SparkSession, name: str = ENTRY) -> Any:
    """A class of the companion (a py4j ``JavaClass``; the entry point unless ``name`` says
    which) in ``spark``'s JVM, the jar attached first if it is not yet. Raises
    :class:`CompanionUnavailable` naming the reason."""
    jvm = getattr(spark, "_jvm", None)
    jsession = getattr(spark, "_jsparkSession", None)
    attached = _sessions.get(id(jsession))
    if attached is None or attached.session is not jsession:
        attached = _attach(spark, jvm, jsession)
        _sessions[id(jsession)] = attached  # (it holds the proxy: the id stays its own)
    # py4j resolves classes with the calling thread's context class loader: the session's,
    # which holds the jars added to it.
    attached.thread.currentThread().setContextClassLoader(attached.loader)
    entry = attached.classes.get(name)
    if entry is None:
        entry = jvm
        for part in name.split("."):
            entry = getattr(entry, part)
        from py4j.java_gateway import JavaClass  # type: ignore[import-untyped]

        if not isinstance(entry, JavaClass):
            raise CompanionUnavailable(f"{name} did not load from {JAR}")
        attached.classes[name] = entry
    return entry


def _attach(spark: SparkSession, jvm: Any, jsession: Any) -> _Attached:
    """Checks the session can take the jar and attaches it (once per application)."""
    version = spark.version
    if ".".join(version.split(".")[:2]) not in SUPPORTED_SPARK:
        raise CompanionUnavailable(
            f"Spark {version} is not a release the deltalog JVM companion is built for "
            f"({', '.join(SUPPORTED_SPARK)})"
        )
    if jvm is None or jsession is None:
        raise CompanionUnavailable("the session has no JVM gateway (Spark Connect?)")
    if not JAR.is_file():
        raise CompanionUnavailable(
            f"the deltalog JVM companion is not built into this installation ({JAR} is "
            "missing; scripts/build_jvm.sh builds it)"
        )
    loader = jsession.sharedState().jarClassLoader()
    with _lock:
        app = spark.sparkContext.applicationId
        if app not in _attached:
            if not any(str(u).endswith("/" + JAR.name) for u in loader.getURLs()):
                spark.sql(f"ADD JAR '{_sql_text(str(JAR))}'")
            _attached.add(app)
    return _Attached(jsession, loader, jvm.java.lang.Thread)


def _sql_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


__all__ = ["ENTRY", "JAR", "SUPPORTED_SPARK", "CompanionUnavailable", "companion"]
