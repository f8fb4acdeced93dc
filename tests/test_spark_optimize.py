"""``deltalog.spark.optimize`` (issue #19): OPTIMIZE planned on the driver, each unit rewritten
on a Spark executor by deltalog's core, one commit; checked against deltalog's own OPTIMIZE on
a copy and read back by deltalake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import deltalog as dl
import deltalog.spark as dls


def small_files(path: Path, files: int = 12, rows: int = 2000) -> None:
    rng = np.random.default_rng(7)
    for i in range(files):
        n = rows
        deltalake.write_deltalake(
            str(path),
            pa.table(
                {
                    "x": pa.array(rng.integers(0, 1000, n), pa.int64()),
                    "y": pa.array(rng.random(n)),
                    "p": pa.array(["a" if i % 2 else "b"] * n),
                }
            ),
            mode="append",
            partition_by=["p"],
        )


def content(path: Path) -> list[tuple[Any, ...]]:
    t = deltalake.DeltaTable(str(path)).to_pyarrow_table()
    return sorted(zip(*(t.column(c).to_pylist() for c in ("x", "y", "p")), strict=True))


def test_compaction_on_spark_matches_the_local_one(spark: Any, tmp_path: Path) -> None:
    ours, local = tmp_path / "spark", tmp_path / "local"
    small_files(ours)
    shutil.copytree(ours, local)
    expected = content(ours)
    stale = dl.DeltaTable(str(ours))
    # An append after planning's version lands (OPTIMIZE's conflict rule).
    deltalake.write_deltalake(
        str(ours),
        pa.table({"x": pa.array([5000], pa.int64()), "y": [0.5], "p": ["a"]}),
        mode="append",
    )
    metrics = dls.optimize(spark, stale)
    mine = dl.DeltaTable(str(local)).optimize.compact()
    # The same metrics as t.optimize's, deltalake's keys and types (sizes as JSON text).
    assert list(metrics) == list(mine)
    for key in (
        "numFilesRemoved",
        "numFilesAdded",
        "partitionsOptimized",
        "numBatches",
        "filesRemoved",
        "preserveInsertionOrder",
        "plannerStrategy",
        "maxBinSpanFiles",
    ):
        assert metrics[key] == mine[key], key
    assert json.loads(metrics["filesAdded"])["totalFiles"] == metrics["numFilesAdded"]
    assert metrics["numFilesRemoved"] == 12 and metrics["version"] == 13
    assert content(ours) == sorted([*expected, (5000, 0.5, "a")])
    actions = [
        json.loads(line)
        for line in (ours / "_delta_log" / f"{13:020}.json").read_text().splitlines()
    ]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "OPTIMIZE"
    changes = [a.get("add") or a.get("remove") for a in actions if "add" in a or "remove" in a]
    assert changes and all(c["dataChange"] is False for c in changes)


def test_z_order_on_spark(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "z"
    small_files(path)
    expected = content(path)
    t = dl.DeltaTable(str(path))
    metrics = dls.optimize(
        spark,
        t,
        z_order_by=["x", "y"],
        target_size=20_000,
        writer_properties=dl.WriterProperties(compression="ZSTD"),
    )
    assert metrics["partitionsOptimized"] == 2 and metrics["numFilesRemoved"] == 12
    assert metrics["preserveInsertionOrder"] is False and metrics["plannerStrategy"] == "zOrder"
    # The executors encoded the new files as asked.
    for add in t.get_add_actions().to_pylist():
        meta = pq.ParquetFile(path / add["path"]).metadata
        assert meta.row_group(0).column(0).compression == "ZSTD"

    assert content(path) == expected
    info = t.history(1)[0]
    assert json.loads(info["operationParameters"]["zOrderBy"]) == ["x", "y"]
    adds = t.get_add_actions(flatten=True).to_pylist()
    hits = [sum(1 for a in adds if a["min.x"] <= v <= a["max.x"]) for v in range(5, 1000, 37)]
    assert sum(hits) / len(hits) / len(adds) < 0.5
    # Nothing left to do is no commit.
    again = dls.optimize(spark, dl.DeltaTable(str(path)))
    assert again["version"] is None or again["numFilesRemoved"] >= 2
