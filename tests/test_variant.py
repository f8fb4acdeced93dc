"""The variant type (upstream protocol "Variant Data Type", features ``variantType`` and
``variantType-preview``): read unshredded, as ``struct<metadata: binary, value: binary>`` in
the Parquet variant encoding, like the ``deltalake`` package; writes refused clearly.

The data files are written here by pyarrow in Spark's physical layout (a group of two
required binary fields, ``value`` before ``metadata``), so the reader's column matching is
exercised rather than assumed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from conftest import LogWriter, add, commit_info, metadata, protocol

# Parquet variant encoding: metadata version 1 with an empty dictionary; values: int8 42,
# short string "hi", object {"a": true}, array [1, "x"] (needs a one-key dictionary "a").
EMPTY_METADATA = b"\x01\x00\x00"
DICT_A = b"\x01\x01\x00\x01a"
VALUES = [
    (EMPTY_METADATA, b"\x0c\x2a"),
    (EMPTY_METADATA, b"\x09hi"),
    (DICT_A, b"\x02\x01\x00\x00\x01\x04"),
    (EMPTY_METADATA, b"\x03\x02\x00\x02\x04\x0c\x01\x05x"),
    None,
]


def _variant_array(values: list[tuple[bytes, bytes] | None], order: str = "spark") -> pa.Array:
    metas = pa.array([v[0] if v else b"" for v in values], pa.binary())
    vals = pa.array([v[1] if v else b"" for v in values], pa.binary())
    mask = pa.array([v is None for v in values])
    if order == "spark":
        arrays = [vals, metas]
        fields = [pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)]
    else:
        arrays = [metas, vals]
        fields = [pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)]
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)


def _field(name: str, type_: Any, **meta: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def _schema(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)})


@pytest.mark.parametrize("feature", ["variantType", "variantType-preview"])
def test_variant_columns_read_like_deltalake(tmp_path: Path, feature: str) -> None:
    root = tmp_path / "t"
    root.mkdir()
    n = len(VALUES)
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": _variant_array(VALUES)})
    pq.write_table(data, root / "part-0.parquet")
    size = (root / "part-0.parquet").stat().st_size
    stats = {
        "numRecords": n,
        "minValues": {"id": 0},
        "maxValues": {"id": n - 1},
        # Delta Spark counts a variant's nulls as one leaf and keeps no min/max for it.
        "nullCount": {"id": 0, "v": 1},
    }
    log = LogWriter(root)
    log.commit(
        0,
        [
            commit_info(),
            protocol(3, 7, [feature], [feature]),
            metadata(schema_string=_schema(_field("id", "long"), _field("v", "variant"))),
            add("part-0.parquet", size=size, stats=json.dumps(stats)),
        ],
    )
    t = dl.DeltaTable(root)
    schema = t.schema()
    assert schema.field("v").type == pa.struct(
        [pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)]
    )
    assert schema.field("v").metadata[b"ARROW:extension:name"] == b"arrow.parquet.variant"
    ours = t.to_pyarrow_table()
    theirs = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    assert ours.column("v").to_pylist() == theirs.column("v").to_pylist()
    assert ours.column("v").to_pylist()[:2] == [
        {"metadata": EMPTY_METADATA, "value": b"\x0c\x2a"},
        {"metadata": EMPTY_METADATA, "value": b"\x09hi"},
    ]
    assert ours.column("v").null_count == 1
    # Statistics: the variant's null count is a leaf; filters on other columns still skip.
    actions = t.get_add_actions(flatten=True).to_pylist()
    assert actions[0]["null_count.v"] == 1
    assert t.to_pyarrow_table(filter=dl.col("id") > 100).num_rows == 0
    assert t.to_pyarrow_table(columns=["v"], filter=dl.col("id") == 2).column("v").to_pylist() == [
        {"metadata": DICT_A, "value": VALUES[2][1]}
    ]
    # deltalake's checkpoint of the table (statistics of the variant included) reads the same.
    deltalake.DeltaTable(str(root)).create_checkpoint()
    assert (root / "_delta_log" / "00000000000000000000.checkpoint.parquet").exists()
    again = dl.DeltaTable(root)
    assert again.to_pyarrow_table().column("v").to_pylist() == ours.column("v").to_pylist()
    assert again.get_add_actions(flatten=True).to_pylist()[0]["null_count.v"] == 1
    # Writing, checkpoints included, is refused, naming the feature.
    with pytest.raises(dl.UnsupportedFeatureError, match=feature):
        again.create_checkpoint()
    # Writing is refused, naming the feature.
    with pytest.raises(dl.UnsupportedFeatureError, match=feature):
        dl.write_table(root, data.select(["id"]), mode="append")


def test_nested_variants_and_column_mapping(tmp_path: Path) -> None:
    """Variants inside structs, arrays and maps; physical names under column mapping (the
    variant's own ``metadata``/``value`` fields are not Delta fields and keep their names)."""
    root = tmp_path / "t"
    root.mkdir()
    values = VALUES[:3]
    variant = _variant_array(values, order="kernel")
    item = pa.field("element", variant.type, True)
    s = pa.StructArray.from_arrays([_variant_array(values)], ["col-3"])
    arr = pa.array([[x] for x in variant.to_pylist()], pa.list_(item))
    m = pa.array(
        [[("k", x)] for x in variant.to_pylist()],
        pa.map_(pa.string(), pa.field("value", variant.type, True)),
    )
    data = pa.table(
        {"col-1": pa.array([1, 2, 3], pa.int64()), "col-2": s, "col-4": arr, "col-5": m}
    )
    pq.write_table(data, root / "part-0.parquet")
    size = (root / "part-0.parquet").stat().st_size

    def mapped(name: str, type_: Any, i: int) -> dict[str, Any]:
        return _field(
            name,
            type_,
            **{"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f"col-{i}"},
        )

    schema = _schema(
        mapped("id", "long", 1),
        mapped("s", {"type": "struct", "fields": [mapped("inner", "variant", 3)]}, 2),
        mapped("a", {"type": "array", "elementType": "variant", "containsNull": True}, 4),
        mapped(
            "m",
            {
                "type": "map",
                "keyType": "string",
                "valueType": "variant",
                "valueContainsNull": True,
            },
            5,
        ),
    )
    log = LogWriter(root)
    log.commit(
        0,
        [
            commit_info(),
            protocol(3, 7, ["columnMapping", "variantType"], ["columnMapping", "variantType"]),
            metadata(
                schema_string=schema,
                configuration={
                    "delta.columnMapping.mode": "name",
                    "delta.columnMapping.maxColumnId": "5",
                },
            ),
            add("part-0.parquet", size=size),
        ],
    )
    ours = dl.DeltaTable(root).to_pyarrow_table()
    assert ours.column_names == ["id", "s", "a", "m"]
    expected = [{"metadata": m, "value": v} for m, v in values]
    assert [r["inner"] for r in ours.column("s").to_pylist()] == expected
    assert [r[0] for r in ours.column("a").to_pylist()] == expected
    assert [r[0][1] for r in ours.column("m").to_pylist()] == expected
    peer = deltalake.DeltaTable(str(root))
    theirs = pa.table(
        deltalake.QueryBuilder().register("t", peer).execute("SELECT * FROM t").read_all()
    )
    their_rows = sorted(theirs.to_pylist(), key=lambda r: r["id"])
    assert [r["s"] for r in their_rows] == ours.sort_by("id").column("s").to_pylist()
