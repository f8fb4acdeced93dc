"""OPTIMIZE compaction (``t.optimize.compact``, issue #19): small files bin-packed per partition
into files of about the target size, in one ``dataChange: false`` commit; checked against the
``deltalake`` package (which reads every result, and whose own OPTIMIZE on a copy gives the same
rows), pyarrow reading the new files directly, deletion vectors, row tracking, the change feed,
partition filters and concurrent writers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltalog as dl
import processes
from deltalog.table.optimize import TableOptimizer


def rows(start: int, n: int, part: str = "a") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "part": pa.array([part] * n),
            "v": pa.array([f"value-{i}" for i in range(start, start + n)]),
        }
    )


def content(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "part", "v")), strict=True))


def log_actions(path: Path, version: int) -> list[dict[str, Any]]:
    text = (path / "_delta_log" / f"{version:020}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def many_small_files(path: Path, per_part: int = 12, parts: tuple[str, ...] = ("a", "b")) -> None:
    dl.write_table(str(path), rows(0, 5, parts[0]), partition_by=["part"])
    n = 5
    for _ in range(per_part):
        for part in parts:
            dl.write_table(str(path), rows(n, 5, part), mode="append")
            n += 5


def test_compaction_bin_packs_each_partition(tmp_path: Path) -> None:
    path = tmp_path / "t"
    many_small_files(path)
    t = dl.DeltaTable(str(path))
    before = content(t.to_pyarrow_table())
    files_before = len(t.files())
    metrics = t.optimize.compact()
    assert metrics["version"] == t.version() == 25
    assert metrics["numFilesRemoved"] == files_before == 25
    assert metrics["numFilesAdded"] == 2 and metrics["partitionsOptimized"] == 2
    assert metrics["totalConsideredFiles"] == 25 and metrics["totalFilesSkipped"] == 0
    assert json.loads(metrics["filesRemoved"])["totalFiles"] == 25
    assert json.loads(metrics["filesAdded"])["totalFiles"] == 2
    assert metrics["numRows"] == len(before)
    assert len(t.files()) == 2
    # The same rows, read by deltalog and by deltalake.
    assert content(t.to_pyarrow_table()) == before
    assert content(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == before
    # One commit that changes no data: every add and remove says dataChange false.
    actions = log_actions(path, 25)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "OPTIMIZE" and info["isBlindAppend"] is False
    assert info["operationParameters"]["predicate"] == "[]"
    assert info["operationMetrics"]["numRemovedFiles"] == "25"
    changes = [a.get("add") or a.get("remove") for a in actions if "add" in a or "remove" in a]
    assert len(changes) == 27 and all(c["dataChange"] is False for c in changes)
    # Statistics of the new files are recomputed.
    for add in (a["add"] for a in actions if "add" in a):
        stats = json.loads(add["stats"])
        part = add["partitionValues"]["part"]
        expected = [r for r in before if r[1] == part]
        assert stats["numRecords"] == len(expected)
        assert stats["minValues"]["id"] == min(r[0] for r in expected)
        assert stats["maxValues"]["id"] == max(r[0] for r in expected)
    # Nothing left to do: no commit.
    again = t.optimize.compact()
    assert again["version"] is None and again["numFilesRemoved"] == 0
    assert again["totalFilesSkipped"] == 2 and t.version() == 25


def test_the_same_rows_as_deltalakes_own_optimize(tmp_path: Path) -> None:
    """A table written by deltalake (many small appends), copied: deltalog compacts one copy and
    deltalake the other; both read back the same rows, with the same number of files."""
    source = tmp_path / "src"
    for i in range(20):
        deltalake.write_deltalake(
            str(source),
            rows(i * 10, 10, "ab"[i % 2]),
            partition_by=["part"],
            mode="append",
        )
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(source, ours)
    shutil.copytree(source, theirs)
    mine = dl.DeltaTable(str(ours)).optimize.compact()
    peer = deltalake.DeltaTable(str(theirs)).optimize.compact()
    assert mine["numFilesRemoved"] == peer["numFilesRemoved"] == 20
    assert mine["numFilesAdded"] == peer["numFilesAdded"] == 2
    expected = content(deltalake.DeltaTable(str(theirs)).to_pyarrow_table())
    assert content(deltalake.DeltaTable(str(ours)).to_pyarrow_table()) == expected
    assert content(dl.DeltaTable(str(theirs)).to_pyarrow_table()) == expected


def test_deleted_rows_are_gone_from_the_rewritten_files(tmp_path: Path) -> None:
    path = tmp_path / "dv"
    dl.write_table(
        str(path),
        rows(0, 100),
        configuration={"delta.enableDeletionVectors": "true"},
    )
    t = dl.DeltaTable(str(path))
    t.delete("id % 3 = 0")
    assert t.get_add_actions().column("deletion_vector").null_count == 0  # one DV file
    live = content(t.to_pyarrow_table())
    # One file with a deletion vector: rewritten although it is alone in its bin.
    metrics = t.optimize.compact()
    assert metrics["numFilesRemoved"] == 1 and metrics["numFilesAdded"] == 1
    assert content(t.to_pyarrow_table()) == live
    (new_file,) = t.files()
    physical = pq.read_table(path / new_file)
    assert physical.num_rows == len(live) == 66  # deleted rows physically gone
    assert all(i % 3 for i in physical.column("id").to_pylist())
    adds = t.get_add_actions()
    assert adds.column("deletion_vector").null_count == adds.num_rows
    rows_read = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    assert rows_read.execute("SELECT count(*) AS n FROM t").read_all().column("n")[0].as_py() == 66


def lineage(t: dl.DeltaTable) -> list[tuple[int, int, int]]:
    """Each row's id, row ID and row commit version, sorted."""
    table = t.to_pyarrow_table(with_row_tracking=True)
    columns = ("id", "_row_id", "_row_commit_version")
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def test_row_ids_and_commit_versions_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "rt"
    dl.write_table(str(path), rows(0, 10), configuration={"delta.enableRowTracking": "true"})
    for i in range(1, 6):
        dl.write_table(str(path), rows(i * 10, 10), mode="append")
    t = dl.DeltaTable(str(path))
    t.update({"v": "'changed'"}, "id = 42")
    before = lineage(t)
    assert t.optimize.compact()["numFilesRemoved"] == len(t.files()) + 5
    after = lineage(t)
    assert after == before
    assert len({r[1] for r in after}) == 60  # row IDs stay unique
    info = next(a["commitInfo"] for a in log_actions(path, t.version()) if "commitInfo" in a)
    assert info["operation"] == "OPTIMIZE"


def test_the_change_feed_skips_the_compaction(tmp_path: Path) -> None:
    path = tmp_path / "cdf"
    dl.write_table(str(path), rows(0, 5), configuration={"delta.enableChangeDataFeed": "true"})
    for i in range(1, 4):
        dl.write_table(str(path), rows(i * 5, 5), mode="append")
    t = dl.DeltaTable(str(path))
    version = t.optimize.compact()["version"]
    feed = t.load_cdf(starting_version=version).read_all()
    assert feed.num_rows == 0
    assert not (path / "_change_data").exists()


def test_partition_filters(tmp_path: Path) -> None:
    path = tmp_path / "parts"
    many_small_files(path, per_part=4, parts=("a", "b", "c"))
    t = dl.DeltaTable(str(path))
    metrics = t.optimize.compact(partition_filters=[("part", "=", "b")])
    assert metrics["partitionsOptimized"] == 1 and metrics["numFilesRemoved"] == 4
    assert metrics["totalConsideredFiles"] == 4
    files = t.get_add_actions()
    by_part: dict[str, int] = {}
    for values in files.column("partition_values").to_pylist():
        part = dict(values)["part"]
        by_part[part] = by_part.get(part, 0) + 1
    assert by_part == {"a": 5, "b": 1, "c": 4}
    t.optimize.compact(partition_filters="part IN ('a', 'c')")
    assert len(t.files()) == 3
    with pytest.raises(dl.InvalidArgumentError, match="partition columns only"):
        t.optimize.compact(partition_filters=[("id", ">", 3)])
    with pytest.raises(ValueError):
        t.optimize.compact(target_size=0)


def test_target_size_splits_the_output(tmp_path: Path) -> None:
    path = tmp_path / "sized"
    for i in range(10):
        dl.write_table(str(path), rows(i * 2000, 2000), mode="append")
    t = dl.DeltaTable(str(path))
    size = sum(a["size"] for a in t.get_add_actions().to_pylist())
    metrics = t.optimize.compact(target_size=size // 3)
    assert 2 <= metrics["numFilesAdded"] <= 5
    assert content(t.to_pyarrow_table()) == content(rows(0, 20000))


def test_an_append_during_optimize_lands_and_a_delete_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "race"
    many_small_files(path, per_part=3)
    stale = dl.DeltaTable(str(path))  # OPTIMIZE plans from this version
    dl.write_table(str(path), rows(1000, 5, "a"), mode="append")  # a concurrent append
    assert stale.optimize.compact()["version"] == 8
    assert sorted(stale.to_pyarrow_table().column("id").to_pylist())[-1] == 1004
    # A delete planned before an OPTIMIZE that removed its files must conflict.
    before_delete = dl.DeltaTable(str(path))
    many = dl.DeltaTable(str(path))
    dl.write_table(str(path), rows(2000, 5, "a"), mode="append")
    dl.write_table(str(path), rows(2005, 5, "a"), mode="append")
    many.optimize.compact()
    with pytest.raises(dl.CommitConflictError):
        before_delete.delete("id = 0")  # its file was compacted away
    # A concurrent UPDATE elsewhere (not a blind append: it removes and adds files) lands
    # before an OPTIMIZE of another partition, which still commits.
    stale = dl.DeltaTable(str(path))
    dl.write_table(str(path), rows(4000, 5, "a"), mode="append")
    dl.write_table(str(path), rows(4005, 5, "a"), mode="append")
    dl.DeltaTable(str(path)).update({"v": "'updated'"}, "part = 'b' AND id = 10")
    assert stale.optimize.compact(partition_filters=[("part", "=", "a")])["version"] is not None
    updated = dl.DeltaTable(str(path)).to_pyarrow_table().filter(pc.field("id") == 10)
    assert updated.column("v").to_pylist() == ["updated"]
    # ... and an OPTIMIZE planned before a delete that removed one of its files conflicts.
    dl.write_table(str(path), rows(3000, 5, "b"), mode="append")
    planned = dl.DeltaTable(str(path))
    dl.DeltaTable(str(path)).delete("id = 3000")
    with pytest.raises(dl.CommitConflictError):
        planned.optimize.compact()


def _appender(path: str, k: int, n: int, ready: Any, go: Any) -> None:
    ready.set()
    go.wait(60)
    for i in range(n):
        t = dl.DeltaTable(path)
        dl.write_table(t, rows(k * 10_000 + i, 1, "ab"[i % 2]), mode="append")


def _optimizer(path: str, rounds: int, ready: Any, go: Any) -> None:
    import time

    ready.set()
    go.wait(60)
    done = 0
    deadline = time.monotonic() + 300
    while done < rounds and time.monotonic() < deadline:
        try:
            if dl.DeltaTable(path).optimize.compact()["version"] is not None:
                done += 1
            else:
                time.sleep(0.05)  # nothing to compact yet
        except dl.CommitConflictError:
            continue


def test_four_processes_append_while_optimize_runs(tmp_path: Path) -> None:
    """Three processes append 30 rows each while a fourth compacts the table again and again:
    every row lands once, and deltalake reads the result."""
    path = tmp_path / "race4"
    many_small_files(path, per_part=2)
    expected = content(dl.DeltaTable(str(path)).to_pyarrow_table())
    ctx = processes.context()
    go = ctx.Event()
    readies = [ctx.Event() for _ in range(4)]
    procs = [
        ctx.Process(target=_appender, args=(str(path), k + 1, 30, readies[k], go)) for k in range(3)
    ]
    procs.append(ctx.Process(target=_optimizer, args=(str(path), 5, readies[3], go)))
    for p in procs:
        p.start()
    for r in readies:
        assert r.wait(120)
    go.set()
    for p in procs:
        p.join(600)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    for k in range(1, 4):
        for i in range(30):
            expected += content(rows(k * 10_000 + i, 1, "ab"[i % 2]))
    t = dl.DeltaTable(str(path))
    assert content(t.to_pyarrow_table()) == sorted(expected)
    assert content(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == sorted(expected)
    operations = [h.get("operation") for h in t.history()]
    assert operations.count("OPTIMIZE") >= 5


def test_a_catalog_managed_table_is_compacted_through_its_catalog(tmp_path: Path) -> None:
    cat = dl.connect_catalog(
        {"type": "sqlite", "path": str(tmp_path / "c.db"), "warehouse": str(tmp_path / "wh")}
    )
    cat.write_table("t", rows(0, 5))
    for i in range(1, 6):
        cat.write_table("t", rows(i * 5, 5), mode="append")
    t = cat.load_table("t")
    metrics = t.optimize.compact()
    assert metrics["numFilesRemoved"] == 6 and metrics["version"] == 6
    assert cat.describe_table("t").latest_version == 6
    assert content(cat.load_table("t").to_pyarrow_table()) == content(rows(0, 30))


def test_repair_removes_the_files_storage_lost(tmp_path: Path) -> None:
    """FSCK: data files deleted behind the table's back are removed from it (the other rows
    stay readable, by deltalog and by deltalake); a dry run only reports them."""
    path = tmp_path / "fsck"
    many_small_files(path, per_part=2)
    t = dl.DeltaTable(str(path))
    assert t.repair() == {"dry_run": False, "files_removed": [], "version": None}
    before = content(t.to_pyarrow_table())
    lost = sorted(t.files())[:2]
    lost_ids = {i for name in lost for i in pq.read_table(path / name).column("id").to_pylist()}
    for name in lost:
        (path / name).unlink()
    report = t.repair(dry_run=True)
    assert report == {"dry_run": True, "files_removed": lost, "version": None}
    assert t.version() == 4
    report = t.repair()
    assert report["files_removed"] == lost and report["version"] == 5 == t.version()
    assert len(t.files()) == 3 and not set(lost) & set(t.files())
    expected = [r for r in before if r[0] not in lost_ids]
    assert content(t.to_pyarrow_table()) == expected
    assert content(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == expected
    actions = log_actions(path, 5)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "FSCK"
    removes = [a["remove"] for a in actions if "remove" in a]
    assert sorted(r["path"] for r in removes) == lost


def _new_files(path: Path, version: int) -> list[Path]:
    return [path / a["add"]["path"] for a in log_actions(path, version) if "add" in a]


@pytest.mark.parametrize("progress", [False, True])
def test_writer_properties_encode_the_new_files(tmp_path: Path, progress: bool) -> None:
    """``writer_properties`` (deltalake's argument) reach the rewritten files: codec, row
    group size and per-column dictionary, as pyarrow reads them from the files' footers; the
    rows are the same and deltalake reads them. The progress run (unit by unit) too."""
    path = tmp_path / "t"
    many_small_files(path)
    t = dl.DeltaTable(str(path))
    before = content(t.to_pyarrow_table())
    props = dl.WriterProperties(
        compression="ZSTD",
        compression_level=5,
        max_row_group_size=16,
        column_properties={"id": dl.ColumnProperties(dictionary_enabled=False)},
    )
    seen: list[int] = []
    report = (lambda done, *_: seen.append(done)) if progress else False
    metrics = t.optimize.compact(writer_properties=props, progress=report)
    assert metrics["numFilesRemoved"] == 25 and metrics["numFilesAdded"] == 2
    assert not progress or seen[-1] == 2
    for file in _new_files(path, t.version()):
        meta = pq.ParquetFile(file).metadata
        # 65 rows in partition a, 60 in b: row groups of 16 rows at most.
        assert meta.num_rows in (65, 60)
        assert meta.num_row_groups == -(-meta.num_rows // 16)
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            columns = {group.column(c).path_in_schema: group.column(c) for c in range(2)}
            assert {c.compression for c in columns.values()} == {"ZSTD"}
            assert not columns["id"].has_dictionary_page
            assert columns["v"].has_dictionary_page
    assert content(t.to_pyarrow_table()) == before
    assert content(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == before

    # Z-order takes them too; a wrong type is a typed error.
    t.optimize.z_order(["id"], writer_properties=dl.WriterProperties(compression="GZIP"))
    for file in _new_files(path, t.version()):
        meta = pq.ParquetFile(file).metadata
        assert meta.row_group(0).column(0).compression == "GZIP"
    assert content(t.to_pyarrow_table()) == before
    with pytest.raises(dl.InvalidArgumentError, match="WriterProperties"):
        t.optimize.compact(writer_properties={"compression": "ZSTD"})  # type: ignore[arg-type]


# deltalake's OPTIMIZE interface (issue #30): its parameters in its order, its argument objects,
# its metrics' keys and value types, min_commit_interval and post-commit hooks; every value
# compared with deltalake's own OPTIMIZE of a copy of the same table.

DELTALAKE_PARAMETERS = [
    "partition_filters",
    "target_size",
    "max_concurrent_tasks",
    "max_spill_size",
    "max_temp_directory_size",
    "min_commit_interval",
    "writer_properties",
]


def twins(tmp_path: Path, parts: str = "abc", per_part: int = 4) -> tuple[Path, Path]:
    """Two copies of one table written by deltalake: ``per_part`` small files per partition."""
    source = tmp_path / "src"
    n = 0
    for _ in range(per_part):
        for part in parts:
            deltalake.write_deltalake(
                str(source), rows(n, 5, part), partition_by=["part"], mode="append"
            )
            n += 5
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(source, ours)
    shutil.copytree(source, theirs)
    return ours, theirs


def test_the_signatures_are_deltalakes() -> None:
    """deltalake's parameters, in its order, before deltalog's own keyword-only options."""
    import inspect

    for method, first in (("compact", []), ("z_order", ["columns"])):
        theirs = inspect.signature(getattr(deltalake.table.TableOptimizer, method)).parameters
        ours = inspect.signature(getattr(TableOptimizer, method)).parameters
        assert list(theirs)[1:] == [*first, *DELTALAKE_PARAMETERS, "args", *KEYWORD_ONLY]
        assert list(ours)[1 : len(theirs)] == list(theirs)[1:]
        for name in theirs:
            assert ours[name].kind == theirs[name].kind, (method, name)


KEYWORD_ONLY = ["commit_properties", "post_commithook_properties"]


@pytest.mark.parametrize("layout", ["compact", "z_order"])
def test_metrics_are_deltalakes(tmp_path: Path, layout: str) -> None:
    """The same keys as deltalake's metrics, each with the type deltalake gives it
    (``filesAdded`` / ``filesRemoved`` JSON text), and the same values where the two must
    agree: the files first removed (byte for byte the same files), the counts, the planner's
    description (Z-order keeps no insertion order). A second run, with nothing to do, too."""
    ours, theirs = twins(tmp_path)
    for run in range(2):
        if layout == "compact":
            mine = dl.DeltaTable(str(ours)).optimize.compact()
            peer = deltalake.DeltaTable(str(theirs)).optimize.compact()
        else:
            mine = dl.DeltaTable(str(ours)).optimize.z_order(["id"])
            peer = deltalake.DeltaTable(str(theirs)).optimize.z_order(["id"])
        assert list(mine)[: len(peer)] == list(peer)
        assert {k: type(mine[k]) for k in peer} == {k: type(v) for k, v in peer.items()}
        for key in (
            "numFilesAdded",
            "numFilesRemoved",
            "totalConsideredFiles",
            "totalFilesSkipped",
            "preserveInsertionOrder",
            "plannerStrategy",
            "preservedStableOrder",
            "maxBinSpanFiles",
            "numBatches",  # small files: one record batch each, as deltalake reads them
        ):
            assert mine[key] == peer[key], (key, mine[key], peer[key])
        if run == 0:  # the same files (a second Z-order removes what each one wrote)
            assert mine["filesRemoved"] == peer["filesRemoved"]
        assert json.loads(mine["filesAdded"]).keys() == json.loads(peer["filesAdded"]).keys()
        assert json.loads(mine["filesAdded"])["totalFiles"] == mine["numFilesAdded"]
    assert mine["preserveInsertionOrder"] is (layout == "compact")
    assert content(dl.DeltaTable(str(ours)).to_pyarrow_table()) == content(
        deltalake.DeltaTable(str(theirs)).to_pyarrow_table()
    )


@pytest.mark.parametrize("progress", [False, True])
def test_num_batches_counts_record_batches_written(tmp_path: Path, progress: bool) -> None:
    """``numBatches`` means what deltalake's does, the record batches passed to the writer,
    not the bins: one bin of four files whose row groups are each read as one batch gives
    eight (deltalake, reading 8Ki-row batches, also counts eight here), on the native run and
    on the run reporting progress alike. Z-order writes its sorted rows in batches of up to
    64Ki rows: 3 for 150,000 rows in one partition's single key range."""
    source = tmp_path / "src"
    for i in range(4):
        t = pa.table({"id": pa.array(range(i * 4000, (i + 1) * 4000), pa.int64())})
        pq.write_table(t, tmp_path / f"f{i}.parquet", row_group_size=2000)
        deltalake.write_deltalake(str(source), t, mode="append")
    # Two row groups per file (pyarrow wrote them), each small enough for one batch; the log's
    # sizes fixed up and its statistics dropped for the swapped files.
    sizes = {}
    for i, data in enumerate(sorted(source.glob("*.parquet"))):
        shutil.copy(tmp_path / f"f{i}.parquet", data)
        sizes[data.name] = data.stat().st_size
    for commit in sorted((source / "_delta_log").glob("*.json")):
        lines = []
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                action["add"]["size"] = sizes[action["add"]["path"]]
                action["add"].pop("stats", None)
            lines.append(json.dumps(action))
        commit.write_text("\n".join(lines) + "\n")
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(source, ours)
    shutil.copytree(source, theirs)
    mine = dl.DeltaTable(str(ours)).optimize.compact(
        progress=(lambda *a: None) if progress else False
    )
    peer = deltalake.DeltaTable(str(theirs)).optimize.compact()
    assert mine["numFilesRemoved"] == 4 and mine["numBatches"] == 8 == peer["numBatches"]

    z = tmp_path / "z"
    dl.write_table(str(z), pa.table({"id": pa.array(range(150_000), pa.int64())}))
    m = dl.DeltaTable(str(z)).optimize.z_order(["id"])
    assert m["numBatches"] == 3 and m["numRows"] == 150_000


def test_deltalakes_positional_call_and_argument_objects(tmp_path: Path) -> None:
    """A call written for deltalake runs unchanged: its positional order, its
    ``WriterProperties`` (codec with level, row groups, a column without dictionary) reaching
    the files as pyarrow reads them, and its ``CommitProperties`` reaching the commitInfo;
    the commit arguments also positionally after ``writer_properties`` (either order)."""
    ours, _theirs = twins(tmp_path)
    t = dl.DeltaTable(str(ours))
    before = content(t.to_pyarrow_table())
    props = deltalake.WriterProperties(
        compression="ZSTD",
        compression_level=7,
        max_row_group_size=8,
        column_properties={"id": deltalake.ColumnProperties(dictionary_enabled=False)},
    )
    commit = deltalake.CommitProperties(custom_metadata={"job": "nightly"})
    m = t.optimize.compact(None, 1 << 20, 2, None, None, None, props, commit_properties=commit)
    assert m["numFilesRemoved"] == 12 and m["numFilesAdded"] == 3
    for file in _new_files(ours, t.version()):
        meta = pq.ParquetFile(file).metadata
        assert meta.num_row_groups == -(-meta.num_rows // 8)
        column = {meta.row_group(0).column(c).path_in_schema: c for c in range(2)}
        chunk = meta.row_group(0).column(column["id"])
        assert chunk.compression == "ZSTD" and not chunk.has_dictionary_page
        assert meta.row_group(0).column(column["v"]).has_dictionary_page
    info = next(a["commitInfo"] for a in log_actions(ours, t.version()) if "commitInfo" in a)
    assert info["job"] == "nightly" and info["operation"] == "OPTIMIZE"
    assert content(t.to_pyarrow_table()) == before

    # Positional commit arguments, deltalake's legacy order and the other.
    hooks = deltalake.PostCommitHookProperties()
    for extra in ((hooks, commit), (commit, hooks)):
        dl.write_table(str(ours), rows(1000, 5, "a"), mode="append")
        dl.write_table(str(ours), rows(2000, 5, "a"), mode="append")
        m = dl.DeltaTable(str(ours)).optimize.z_order(
            ["id"], [("part", "=", "a")], None, None, None, None, None, None, *extra
        )
        assert m["numFilesRemoved"] == 3 and m["preserveInsertionOrder"] is False
        info = next(a["commitInfo"] for a in log_actions(ours, m["version"]) if "commitInfo" in a)
        assert info["job"] == "nightly"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"commit_properties": deltalake.CommitProperties(max_commit_retries=3)}, "retries"),
        (
            {
                "commit_properties": deltalake.CommitProperties(
                    app_transactions=[deltalake.Transaction("app", 1)]
                )
            },
            "app_transactions",
        ),
        ({"commit_properties": dl.CommitProperties(app_id="app", app_version=1)}, "app_id"),
        (
            {
                "writer_properties": deltalake.WriterProperties(
                    column_properties={"id": deltalake.ColumnProperties(encoding="PLAIN")}
                )
            },
            "encoding",
        ),
        ({"max_temp_directory_size": 1 << 30}, "max_temp_directory_size"),
        (
            {"post_commithook_properties": deltalake.PostCommitHookProperties(False)},
            "create_checkpoint",
        ),
        (
            {"post_commithook_properties": deltalake.PostCommitHookProperties(True, False)},
            "cleanup_expired_logs",
        ),
        ({"max_spill_size": 1 << 20, "memory_limit": 1 << 21}, "same limit"),
        ({"min_commit_interval": -1}, "min_commit_interval"),
    ],
)
def test_settings_deltalog_cannot_honour_are_refused(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    """A deltalake setting deltalog cannot honour is an InvalidArgumentError naming it, before
    anything is written: never silently dropped."""
    ours, _theirs = twins(tmp_path, parts="a", per_part=3)
    t = dl.DeltaTable(str(ours))
    with pytest.raises(dl.InvalidArgumentError, match=message):
        t.optimize.compact(**kwargs)
    assert dl.DeltaTable(str(ours)).version() == 2 and len(t.files()) == 3


def test_min_commit_interval_commits_as_it_goes(tmp_path: Path) -> None:
    """``min_commit_interval=0``: a commit per bin (here per partition), as deltalake makes;
    the metrics are the sum over the commits, equal to deltalake's on a copy, and the rows
    are the same. A long interval (a timedelta): one commit."""
    from datetime import timedelta

    ours, theirs = twins(tmp_path)
    start = dl.DeltaTable(str(ours)).version()
    mine = dl.DeltaTable(str(ours)).optimize.compact(min_commit_interval=0)
    peer = deltalake.DeltaTable(str(theirs)).optimize.compact(min_commit_interval=0)
    t = dl.DeltaTable(str(ours))
    assert t.version() == deltalake.DeltaTable(str(theirs)).version() == start + 3
    assert mine["version"] == start + 3
    assert [h["operation"] for h in t.history(3)] == ["OPTIMIZE"] * 3
    for key in (
        "numFilesAdded",
        "numFilesRemoved",
        "filesRemoved",
        "totalConsideredFiles",
        "numBatches",
    ):
        assert mine[key] == peer[key], key
    assert mine["numFilesAdded"] == 3 and json.loads(mine["filesAdded"])["totalFiles"] == 3
    # Each commit removed its own partition's files only.
    removed = [
        {a["remove"]["partitionValues"]["part"] for a in log_actions(ours, v) if "remove" in a}
        for v in range(start + 1, start + 4)
    ]
    assert sorted(len(r) for r in removed) == [1, 1, 1] and set.union(*removed) == set("abc")
    assert content(t.to_pyarrow_table()) == content(
        deltalake.DeltaTable(str(theirs)).to_pyarrow_table()
    )

    again, _ = twins(tmp_path / "again")
    m = dl.DeltaTable(str(again)).optimize.z_order(["id"], min_commit_interval=timedelta(hours=1))
    assert m["version"] == start + 1 and m["numFilesRemoved"] == 12


def test_post_commit_hook_cleans_up_expired_logs(tmp_path: Path) -> None:
    """deltalake's ``PostCommitHookProperties(cleanup_expired_logs=True)``: expired commits
    before the checkpoint are deleted after the OPTIMIZE commit although the table turns its
    own cleanup off; without it they stay."""
    import os
    import time

    config = {
        "delta.enableExpiredLogCleanup": "false",
        "delta.logRetentionDuration": "interval 1 days",
    }
    paths = []
    for name in ("hook", "plain"):
        path = tmp_path / name
        dl.write_table(str(path), rows(0, 5), partition_by=["part"], configuration=config)
        for i in range(1, 4):
            dl.write_table(str(path), rows(i * 5, 5), mode="append")
        dl.DeltaTable(str(path)).create_checkpoint()
        old = time.time() - 3 * 86_400
        for f in (path / "_delta_log").iterdir():
            os.utime(f, (old, old))
        paths.append(path)
    hook, plain = paths
    hooks = deltalake.PostCommitHookProperties(cleanup_expired_logs=True)
    metrics = dl.DeltaTable(str(hook)).optimize.compact(post_commithook_properties=hooks)
    assert metrics["version"] == 4
    assert dl.DeltaTable(str(plain)).optimize.compact()["version"] == 4
    commits = {p.name: sorted(f.name for f in (p / "_delta_log").glob("*.json")) for p in paths}
    assert commits["hook"] == [f"{v:020}.json" for v in (3, 4)]
    assert commits["plain"] == [f"{v:020}.json" for v in range(5)]
    assert content(dl.DeltaTable(str(hook)).to_pyarrow_table()) == content(
        deltalake.DeltaTable(str(hook)).to_pyarrow_table()
    )
