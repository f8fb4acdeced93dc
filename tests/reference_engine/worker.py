"""Delta Spark in a process of its own, driven by the tests through a loopback connection.

Started by ``tests/reference_engine/client.py`` with the reference environment's Python (see
``env.py``): it never imports deltalog, so that what it reads and writes is Delta Spark's alone.
Arguments: host, port, then a JSON object of Spark settings; the connection's key comes in
``DELTALOG_REFERENCE_KEY`` (hex). Requests are tuples:

- ``("sql", query)``: runs a statement, answers its rows as an Arrow IPC stream (bytes);
- ``("execute", statement)``: runs a command (DML, OPTIMIZE, VACUUM...), answers nothing;
- ``("run", code, values)``: runs Python code with ``spark``, ``state`` (a dict kept between
  requests) and ``values`` in scope, and answers the value it leaves in ``result`` (a
  DataFrame is answered as an Arrow IPC stream);
- ``("close",)``.

Answers are ``("ok", value)`` or ``("error", exception class, Spark error class, message)``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from multiprocessing.connection import Client
from typing import Any


def _ipc(df: Any) -> bytes:
    import pyarrow as pa

    table = df.toArrow()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _error(e: BaseException) -> tuple[str, str, str, str]:
    error_class = ""
    get = getattr(e, "getCondition", None) or getattr(e, "getErrorClass", None)
    if get is not None:
        try:
            error_class = get() or ""
        except Exception:  # a Py4J error without a condition
            error_class = ""
    message = str(e).split("\n", 1)[0]
    java = getattr(e, "java_exception", None)
    if java is not None:  # the chain of causes, without the stack traces
        cause, seen = java, 0
        while cause is not None and seen < 12:
            message += "\n  caused by: " + str(cause.toString())
            cause, seen = cause.getCause(), seen + 1
    if not message.strip():
        message = traceback.format_exc()
    return ("error", type(e).__name__, error_class, message[:8000])


def main() -> None:
    host, port, settings = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    key = bytes.fromhex(os.environ.pop("DELTALOG_REFERENCE_KEY"))
    from pyspark.sql import DataFrame, SparkSession

    builder = SparkSession.builder.appName("delta-spark-reference")
    for name, value in settings.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    conn = Client((host, port), authkey=key)
    conn.send(("ok", spark.version))
    state: dict[str, Any] = {}  # kept between "run" requests (a transaction left open)
    while True:
        request = conn.recv()
        if request[0] == "close":
            break
        try:
            if request[0] == "sql":
                answer: Any = _ipc(spark.sql(request[1]))
            elif request[0] == "execute":
                spark.sql(request[1])  # a command runs when it is planned
                answer = None
            elif request[0] == "run":
                scope: dict[str, Any] = {"spark": spark, "state": state, **request[2]}
                exec(request[1], scope)
                answer = scope.get("result")
                if isinstance(answer, DataFrame):
                    answer = _ipc(answer)
            else:
                raise ValueError(f"unknown request {request[0]!r}")
            conn.send(("ok", answer))
        except Exception as e:  # every failure is the test's to judge
            conn.send(_error(e))
    conn.close()
    spark.stop()


if __name__ == "__main__":
    main()
