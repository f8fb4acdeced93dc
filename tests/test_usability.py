"""What a new user runs into: arguments out of range or of the wrong type, the command line's
errors and help, history() showing the statements as written, and names deltalake users type."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

import deltalog as dl
from deltalog.cli.main import main

BIG = 2**63


def _same_as_deltalake(root: Path) -> None:
    """deltalake opens the table deltalog wrote and reads the same rows."""
    ours = dl.DeltaTable(root).to_pyarrow_table()
    theirs = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    key = [(c, "ascending") for c in ours.column_names]
    assert (
        theirs.select(ours.column_names).sort_by(key).to_pylist() == ours.sort_by(key).to_pylist()
    )


@pytest.fixture()
def table(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
    dl.write_table(root, data)
    dl.write_table(root, data, mode="append")
    yield root
    # Whatever the test did to the table, another reader still agrees with deltalog.
    _same_as_deltalake(root)


def test_numbers_out_of_range_are_invalid_arguments(table: Path) -> None:
    t = dl.DeltaTable(table)
    calls = [
        lambda: dl.DeltaTable(table, version=BIG),
        lambda: dl.DeltaTable(table, version=-1),
        lambda: t.load_as_version(BIG),
        lambda: t.history(limit=BIG),
        lambda: t.history(limit=-1),
        lambda: t.load_cdf(starting_version=BIG),
        lambda: t.load_cdf(ending_version=-2),
        lambda: t.restore(BIG),
        lambda: t.compact_logs(0, BIG),
        lambda: t.create_checkpoint(sidecars=-1),
        lambda: t.create_checkpoint(sidecars=BIG),
        lambda: t.vacuum(retention_hours=math.nan),
        lambda: t.vacuum(retention_hours=math.inf),
        lambda: t.vacuum(retention_hours=-1),
        lambda: t.vacuum(retention_hours=1e300),
        lambda: dl.CommitProperties(app_id="job", app_version=2**70),
        lambda: dl.CommitProperties(app_id="job", app_version=-1),
        lambda: dl.DeltaTable(table, timestamp="notatime"),
        lambda: dl.DeltaTable(table, timestamp=BIG),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(dl.InvalidArgumentError):
            call()
            pytest.fail(f"call {i} did not raise")
    # Wrong types are TypeErrors, never a huge computation.
    for call in [
        lambda: t.vacuum("24"),  # type: ignore[arg-type]
        lambda: t.vacuum(retention_hours=True),  # type: ignore[arg-type]
        lambda: dl.DeltaTable(table, version="1"),  # type: ignore[arg-type]
        lambda: t.history(limit=1.5),  # type: ignore[arg-type]
        lambda: dl.CommitProperties(app_id="job", app_version="3"),  # type: ignore[arg-type]
    ]:
        with pytest.raises(TypeError):
            call()
    # The table is untouched and fine values still work.
    assert dl.DeltaTable(table).version() == 1
    assert t.vacuum(retention_hours=168.5) == []


def test_history_shows_statements_as_written(table: Path) -> None:
    t = dl.DeltaTable(table)
    t.update({"s": "upper(s)"}, predicate="id = 1")
    t.update(new_values={"s": "it's", "id": None}, predicate=dl.col("id") == 2)
    t.update(new_values={"s": "z"}, predicate=(dl.col("id") > 2) | dl.col("s").is_in(["q"]))
    t.delete(dl.col("s") == "z")
    delete, third, second, first = t.history()[:4]
    # Nested values are written as JSON text: Delta Spark reads operationParameters as a map of
    # strings (tests/test_delta_spark_reads_ours.py).
    assert first["operationParameters"] == {"predicate": "id = 1", "set": '{"s":"upper(s)"}'}
    assert json.loads(second["operationParameters"]["set"]) == {"s": "'it\\'s'", "id": "NULL"}
    assert second["operationParameters"]["predicate"] == "id = 2"
    assert json.loads(third["operationParameters"]["set"]) == {"s": "'z'"}
    assert third["operationParameters"]["predicate"] == "(id > 2 OR s IN ('q'))"
    assert delete["operationParameters"]["predicate"] == "s = 'z'"
    history = t.history()
    text = json.dumps(history)
    assert '"binary"' not in text and '"literal"' not in text and "Compare" not in text
    # deltalake shows the same history entries.
    peer = deltalake.DeltaTable(str(table)).history()
    assert peer[0]["operationParameters"]["predicate"] == "s = 'z'"


def test_cli_errors_are_messages_not_tracebacks(
    table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = [
        ["info", str(table), "--timestamp", "notatime"],
        ["info", str(table), "--version", "-1"],
        ["files", str(table), "--version", "x"],
        ["history", str(table), "--limit", "-1"],
        ["checkpoint", str(table), "--sidecars", "-1"],
        ["compact", str(table), "--start", "-3"],
        ["vacuum", str(table), "--retention-hours", "nan"],
        ["info", str(table), "--version", "1", "--timestamp", "2026-01-01"],
    ]
    for argv in bad:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err and "usage:" in err, argv
    # Errors of the operation itself: exit code 1 and one line naming the error.
    assert main(["info", str(table), "--version", "99"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("deltalog: VersionNotFoundError") and "Traceback" not in err
    assert main(["info", str(table.parent / "missing")]) == 1
    assert "TableNotFoundError" in capsys.readouterr().err
    # The refused short retention names the flag that allows it.
    assert main(["vacuum", str(table), "--retention-hours", "1"]) == 1
    err = capsys.readouterr().err
    assert "--force" in err and "enforce_retention_duration" not in err


def test_cli_commands_work_and_have_help(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(table), "--version", "0", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == 0 and info["files"] == 1
    assert main(["files", str(table)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert main(["history", str(table), "--limit", "1", "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["version"] == 1
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    for command in (
        "info",
        "files",
        "history",
        "checkpoint",
        "optimize",
        "compact-log",
        "cleanup",
        "vacuum",
    ):
        assert command in top
    for command in ("info", "files", "history"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert "a location" in text and "--catalog" in text, command
    assert "print a version" in top and "newest first" in top


def test_names_deltalake_users_type(table: Path) -> None:
    t = dl.DeltaTable(table)
    assert t.to_pyarrow_table(filters=[("id", ">", 1)]).num_rows == 4
    assert t.to_pandas(filters=dl.col("id") == 3).shape == (2, 2)
    assert t.to_batches(filters=[("s", "=", "a")]).read_all().num_rows == 2
    with pytest.raises(TypeError, match="not both"):
        t.to_pyarrow_table(filter=dl.col("id") > 1, filters=[("id", ">", 1)])
    part = table.parent / "p"
    dl.write_table(part, pa.table({"d": ["x", "y", "y"], "v": [1, 2, 3]}), partition_by=["d"])
    p = dl.DeltaTable(part)
    got = p.to_pyarrow_table(partitions=[("d", "=", "y")], filters=[("v", ">", 2)])
    assert got.column("v").to_pylist() == [3]
    cdf = part.parent / "c"
    dl.write_table(
        cdf, pa.table({"v": [1, 2]}), configuration={"delta.enableChangeDataFeed": "true"}
    )
    c = dl.DeltaTable(cdf)
    assert c.load_cdf(predicate=dl.col("v") == 2).read_all().column("v").to_pylist() == [2]
    _same_as_deltalake(part)
    _same_as_deltalake(cdf)
    with pytest.raises(TypeError, match="filter="):
        c.load_cdf(predicate="v = 2")


def test_error_messages_name_the_column(tmp_path: Path, table: Path) -> None:
    with pytest.raises(dl.DeltaError, match='column "u"'):
        dl.write_table(tmp_path / "u", pa.table({"id": [1], "u": pa.array([1], pa.uint8())}))
    with pytest.raises(dl.InvalidArgumentError, match=r'column "id".*"abc" is not a Int64 value'):
        dl.DeltaTable(table).to_pyarrow_table(filter=[("id", "=", "abc")])
    with pytest.raises(TypeError, match=r"pyarrow\.Schema"):
        dl.DeltaTable.create(tmp_path / "d", {"a": "int"})  # type: ignore[arg-type]
    assert not (tmp_path / "d").exists()


def test_pandas_index_is_not_a_column(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"v": [1, 2, 3]}, index=[10, 20, 30])
    dl.write_table(tmp_path / "t", df)
    assert dl.DeltaTable(tmp_path / "t").schema().names == ["v"]
    assert deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table().column_names == ["v"]
    dl.write_table(tmp_path / "i", df.reset_index())
    assert dl.DeltaTable(tmp_path / "i").schema().names == ["index", "v"]
    _same_as_deltalake(tmp_path / "i")


def _nested(depth: int) -> pa.DataType:
    t: pa.DataType = pa.int64()
    for _ in range(depth):
        t = pa.struct([("f", t)])
    return t


def test_deeply_nested_structs(tmp_path: Path) -> None:
    # Deep but supported: written, read back, and read by deltalake.
    ok = tmp_path / "ok"
    value: dict | int = 7
    for _ in range(30):
        value = {"f": value}
    dl.write_table(ok, pa.table({"x": pa.array([value, None], _nested(30))}))
    assert dl.DeltaTable(ok).to_pyarrow_table().column("x").to_pylist() == [value, None]
    assert deltalake.DeltaTable(str(ok)).to_pyarrow_table().column("x").to_pylist()[0] == value
    # Deeper than the schema parser allows: a typed error naming the rule, nothing written.
    with pytest.raises(dl.InvalidArgumentError, match="nests deeper"):
        dl.write_table(tmp_path / "deep", pa.table({"x": pa.array([None], _nested(60))}))
    assert not (tmp_path / "deep" / "_delta_log").exists() or not any(
        (tmp_path / "deep" / "_delta_log").iterdir()
    )
    # A log someone else wrote with such a schema: refused as unsupported, naming the version.
    log = tmp_path / "theirs" / "_delta_log"
    log.mkdir(parents=True)
    field: dict = {"name": "x", "type": "long", "nullable": True, "metadata": {}}
    for _ in range(60):
        field = {
            "name": "x",
            "type": {"type": "struct", "fields": [field]},
            "nullable": True,
            "metadata": {},
        }
    schema = json.dumps({"type": "struct", "fields": [field]})
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "deep",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": schema,
                "partitionColumns": [],
                "configuration": {},
            }
        },
    ]
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in actions))
    with pytest.raises(dl.UnsupportedFeatureError, match=r"version 0.*nests deeper"):
        dl.DeltaTable(tmp_path / "theirs").schema()


def test_maintenance_does_not_load_pyarrow(table: Path) -> None:
    """Opening a table, its history, OPTIMIZE and VACUUM run in the Rust core: a maintenance
    job never pays pyarrow's import (about 40 MB). Reading rows then loads it, and the lazily
    bound module is pyarrow itself."""
    import subprocess
    import sys

    script = """
import sys
import deltalog as dl
t = dl.DeltaTable(sys.argv[1])
t.history(); t.metadata(); t.protocol(); t.files()
metrics = t.optimize.compact()
assert metrics["numFilesRemoved"] == 2, metrics
t.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=True)
assert "pyarrow" not in sys.modules, "maintenance imported pyarrow"
rows = t.to_pyarrow_table()
import pyarrow
import deltalog.table.delta_table
assert deltalog.table.delta_table.pa.Table is pyarrow.Table
assert isinstance(rows, pyarrow.Table) and rows.num_rows == 6
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script, str(table)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_regular_file_is_not_a_table_location(tmp_path: Path) -> None:
    """Writing where a regular file is (or under one) is an InvalidArgumentError saying so,
    before any data file is written; the file is left alone. Reading it is a
    TableNotFoundError saying the same."""
    path = tmp_path / "notes.txt"
    path.write_text("keep me")
    data = pa.table({"id": pa.array([1], pa.int64())})
    for target in (path, f"file://{path}", path / "below"):
        with pytest.raises(dl.InvalidArgumentError, match=r"is a file, not a table directory"):
            dl.write_table(target, data, mode="append")
    with pytest.raises(dl.InvalidArgumentError, match=r"the location is a file"):
        dl.DeltaTable.create(path, data.schema)
    with pytest.raises(dl.InvalidArgumentError, match=r"notes\.txt is a file"):
        dl.write_table(path / "below", data)
    with pytest.raises(dl.TableNotFoundError, match=r"the location is a file"):
        dl.DeltaTable(path)
    assert path.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    # A directory that does not exist yet is still a new table.
    dl.write_table(tmp_path / "new" / "t", data)
    _same_as_deltalake(tmp_path / "new" / "t")
