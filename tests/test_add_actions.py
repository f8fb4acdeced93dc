"""`get_add_actions()` statistics against the log's own JSON and against the deltalake peer.

deltalog parses per-file statistics with its own single-pass parser, so every golden table's
statistics are checked two ways:

* against the raw ``stats`` JSON of each active add (from the independent oracle replay):
  ``numRecords`` and every ``nullCount`` / ``minValues`` / ``maxValues`` leaf that the JSON has
  must come out with the same value;
* against ``deltalake`` where it can open the table. Three deltalake 1.6.6 quirks are
  normalised: it returns URI-encoded paths, names statistics by physical column names under
  column mapping, and returns null for decimals written in scientific notation (``0E-10``),
  which the JSON check above covers instead.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest

import deltalog as dl
import oracle
from conftest import corpus_table, load_expectations, metadata, protocol

EXPECT = load_expectations()
READABLE = sorted(r for r, e in EXPECT.items() if not e["must_fail"])


def _physical_to_logical(schema: pa.Schema) -> dict[str, str]:
    """Dotted physical path -> dotted logical path, for every (nested) field."""
    out: dict[str, str] = {}

    def walk(fields: list[pa.Field], logical: str, physical: str) -> None:
        for f in fields:
            meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
            p = meta.get("delta.columnMapping.physicalName", f.name)
            out[physical + p] = logical + f.name
            if pa.types.is_struct(f.type):
                walk(list(f.type), f"{logical}{f.name}.", f"{physical}{p}.")

    walk(list(schema), "", "")
    return out


def _leaves(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if isinstance(v, dict):
            out.update(_leaves(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _same(ours: Any, raw: Any, arrow_type: pa.DataType) -> bool:
    """Whether our typed value is the JSON value `raw` read as `arrow_type`."""
    if raw is None:
        return ours is None
    if pa.types.is_decimal(arrow_type):
        return ours == Decimal(str(raw))
    if pa.types.is_floating(arrow_type):
        return ours == pytest.approx(float(raw), rel=1e-6)
    if pa.types.is_date(arrow_type):
        return ours == dt.date.fromisoformat(raw[:10])
    if pa.types.is_timestamp(arrow_type):
        text = raw.replace("Z", "+00:00")
        parsed = dt.datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.timezone.utc)
        ours_utc = ours if ours.tzinfo else ours.replace(tzinfo=dt.timezone.utc)
        return ours_utc == parsed
    return ours == raw


@pytest.mark.parametrize("root", READABLE, ids=READABLE)
def test_statistics_match_the_log(root: str) -> None:
    t = dl.DeltaTable(corpus_table(root))
    snap = oracle.replay(corpus_table(root), t.version())
    try:
        names = _physical_to_logical(t.schema())
    except dl.CorruptLogError:
        names = {}
    table = t.get_add_actions(flatten=True)
    rows = {r["path"]: r for r in table.to_pylist()}
    types = {f.name: f.type for f in table.schema}
    checked = 0
    for add in snap.adds.values():
        raw_stats = add.get("stats")
        if not raw_stats:
            continue
        stats = json.loads(raw_stats, parse_float=Decimal)
        row = rows[unquote(add["path"])]
        assert row["num_records"] == stats.get("numRecords")
        for section, column in (
            ("nullCount", "null_count"),
            ("minValues", "min"),
            ("maxValues", "max"),
        ):
            for physical, raw in _leaves(stats.get(section) or {}).items():
                logical = names.get(physical, physical)
                key = f"{column}.{logical}"
                if key not in types:
                    # Only types without min/max (booleans, binary) and columns unknown to the
                    # schema are absent.
                    assert column != "null_count" or logical not in names.values(), key
                    continue
                assert _same(row[key], raw, types[key]), (key, row[key], raw)
                checked += 1
    if any(a.get("stats") for a in snap.adds.values()) and names:
        assert checked > 0


@pytest.mark.parametrize("root", READABLE, ids=READABLE)
def test_statistics_match_deltalake(root: str) -> None:
    deltalake = pytest.importorskip("deltalake")
    try:
        theirs_table = pa.table(
            deltalake.DeltaTable(str(corpus_table(root))).get_add_actions(flatten=True)
        )
    except Exception as e:  # deltalake cannot open some golden tables
        pytest.skip(f"deltalake cannot read this table: {type(e).__name__}")
    t = dl.DeltaTable(corpus_table(root))
    names = _physical_to_logical(t.schema())
    ours = {r["path"]: r for r in t.get_add_actions(flatten=True).to_pylist()}
    theirs = {unquote(r["path"]): r for r in theirs_table.to_pylist()}
    if root.startswith("canonicalized-paths"):
        # deltalake does not canonicalise file: URIs and keeps the removed file.
        assert ours == {}
        return
    assert set(ours) == set(theirs)
    for path, their_row in theirs.items():
        for key, value in their_row.items():
            head, _, rest = key.partition(".")
            if key != "num_records" and head not in ("min", "max", "null_count"):
                continue
            ours_key = f"{head}.{names.get(rest, rest)}" if rest else key
            if value is None:
                continue  # deltalake drops values it cannot parse; see the JSON test
            assert ours[path].get(ours_key) == value, (path, key)


def _write_commit(log: Path, version: int, lines: list[str]) -> None:
    (log / f"{version:020}.json").write_text("\n".join(lines) + "\n")


def test_statistics_follow_a_schema_change_spelled_with_escapes(tmp_path: Path) -> None:
    """Statistics are typed by the newest schema even when its metaData key is JSON-escaped.

    The protocol/metadata pass finds actions by their plain names; a log that spells
    ``metaData`` as ``meta\\u0044ata`` (legal JSON) must still be typed by the newest schema.
    """
    log = tmp_path / "_delta_log"
    log.mkdir()

    def metadata(kind: str) -> dict[str, Any]:
        field = {"name": "a", "type": kind, "nullable": True, "metadata": {}}
        schema = {"type": "struct", "fields": [field]}
        return {
            "id": "t",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema),
            "partitionColumns": [],
            "configuration": {},
        }

    def add(path: str, stats: dict[str, Any]) -> str:
        return json.dumps(
            {
                "add": {
                    "path": path,
                    "partitionValues": {},
                    "size": 1,
                    "modificationTime": 1,
                    "dataChange": True,
                    "stats": json.dumps(stats),
                }
            }
        )

    _write_commit(
        log,
        0,
        [
            json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
            json.dumps({"metaData": metadata("long")}),
            add("f0", {"numRecords": 1, "minValues": {"a": 5}}),
        ],
    )
    escaped = '{"meta\\u0044ata":' + json.dumps(metadata("string")) + "}"
    _write_commit(log, 1, [escaped, add("f1", {"numRecords": 2, "minValues": {"a": "zz"}})])

    t = dl.DeltaTable(tmp_path)
    assert t.schema().field("a").type == pa.string()
    rows = {r["path"]: r for r in t.get_add_actions().to_pylist()}
    assert rows["f1"]["min"] == {"a": "zz"}
    assert rows["f1"]["num_records"] == 2
    # f0's minimum was written for the old long column: it does not parse as the new type.
    assert rows["f0"]["min"] == {"a": None}
    assert rows["f0"]["num_records"] == 1


@pytest.mark.parametrize("changed_at", [1, 5, 39])
def test_statistics_follow_a_schema_change_anywhere_in_a_long_log(
    tmp_path: Path, changed_at: int
) -> None:
    """A long log (more commits than the first pass searches exactly) whose schema changed
    after its first commit: statistics are typed by the newest schema wherever the change is."""
    log = tmp_path / "_delta_log"
    log.mkdir()

    def schema(*fields: tuple[str, str]) -> str:
        return json.dumps(
            {
                "type": "struct",
                "fields": [
                    {"name": n, "type": k, "nullable": True, "metadata": {}} for n, k in fields
                ],
            }
        )

    def add(i: int) -> str:
        stats = {"numRecords": i, "minValues": {"a": i, "b": f"b{i}"}, "nullCount": {"a": 0}}
        return json.dumps(
            {
                "add": {
                    "path": f"f{i}",
                    "partitionValues": {},
                    "size": 1,
                    "modificationTime": 1,
                    "dataChange": True,
                    "stats": json.dumps(stats),
                }
            }
        )

    def meta(schema_string: str) -> str:
        return json.dumps(metadata(schema_string=schema_string))

    versions = 60
    for v in range(versions):
        lines = []
        if v == 0:
            lines += [json.dumps(protocol()), meta(schema(("a", "long")))]
        if v == changed_at:
            lines.append(meta(schema(("a", "long"), ("b", "string"))))
        _write_commit(log, v, [*lines, add(v)])

    t = dl.DeltaTable(tmp_path)
    assert t.version() == versions - 1
    assert t.schema().names == ["a", "b"]
    rows = {r["path"]: r for r in t.get_add_actions().to_pylist()}
    assert len(rows) == versions
    for i in range(versions):
        assert rows[f"f{i}"]["min"] == {"a": i, "b": f"b{i}"}
        assert rows[f"f{i}"]["num_records"] == i
    # Time travel to before the change keeps the old schema and its statistics.
    if changed_at > 1:
        old = dl.DeltaTable(tmp_path, version=changed_at - 1)
        assert old.schema().names == ["a"]
        assert old.get_add_actions().column("min").to_pylist()[0] == {"a": changed_at - 1}
