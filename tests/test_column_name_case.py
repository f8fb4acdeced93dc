"""Column names are case-insensitive in Delta (issue #15, item 4): writes, schema merge,
partition and clustering columns, reads of files whose column case differs, filters, SQL
predicates, constraints, generated columns, UPDATE and MERGE. Every table deltalog writes here
is also read by the ``deltalake`` package."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import deltalog as dl


def rows(table: Any, key: str = "id") -> list[dict[str, Any]]:
    return sorted(pa.table(table).to_pylist(), key=lambda r: r[key])


def assert_peer_agrees(path: Path, key: str = "id") -> list[dict[str, Any]]:
    """deltalake opens the table and reads what deltalog reads; returns the rows."""
    ours = rows(dl.DeltaTable(path).to_pyarrow_table(), key)
    theirs = rows(deltalake.DeltaTable(str(path)).to_pyarrow_table(), key)
    assert ours == theirs
    return ours


def names(path: Path) -> list[str]:
    return dl.DeltaTable(path).schema().names


# ---------------------------------------------------------------------------------------------
# Writes and schema merge


def test_merge_matches_existing_columns_case_insensitively(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": [1, 2], "v": ["a", "b"]}))
    # `ID` is the column `id`: merged into it, the table keeps its spelling.
    dl.write_table(
        path, pa.table({"ID": [3], "V": ["c"], "New": [1.5]}), mode="append", schema_mode="merge"
    )
    assert names(path) == ["id", "v", "New"]
    # Without schema_mode the case of a known column does not matter either.
    dl.write_table(path, pa.table({"Id": [4], "v": ["d"]}), mode="append")
    got = assert_peer_agrees(path)
    assert got == [
        {"id": 1, "v": "a", "New": None},
        {"id": 2, "v": "b", "New": None},
        {"id": 3, "v": "c", "New": 1.5},
        {"id": 4, "v": "d", "New": None},
    ]
    # Overwriting with the table's schema in another case keeps the table's spelling.
    dl.write_table(path, pa.table({"ID": [9], "V": ["z"], "NEW": [0.5]}), mode="overwrite")
    assert names(path) == ["id", "v", "New"]
    assert assert_peer_agrees(path) == [{"id": 9, "v": "z", "New": 0.5}]


@pytest.mark.parametrize(
    "data",
    [
        pa.table({"a": [1], "A": [2]}),
        pa.table({"id": [1], "s": pa.array([{"x": 1, "X": 2}])}),
        pa.table({"id": [1], "l": pa.array([[{"k": 1, "K": 2}]])}),
    ],
    ids=["top-level", "struct", "struct-in-list"],
)
def test_names_differing_only_in_case_are_refused(tmp_path: Path, data: pa.Table) -> None:
    path = tmp_path / "t"
    with pytest.raises(dl.InvalidArgumentError, match="differ only in case"):
        dl.write_table(path, data)
    assert not (path / "_delta_log").exists()
    # Nor can data with such names be appended or merged into an existing table.
    dl.write_table(path, pa.table({"id": [1]}))
    with pytest.raises(dl.InvalidArgumentError, match="differ only in case"):
        dl.write_table(path, data, mode="append", schema_mode="merge")
    with pytest.raises(dl.InvalidArgumentError, match="differ only in case"):
        dl.write_table(path, data, mode="overwrite", schema_mode="overwrite")
    assert dl.DeltaTable(path).version() == 0


def test_add_columns_refuses_case_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": [1]}))
    t = dl.DeltaTable(path)
    with pytest.raises(dl.InvalidArgumentError, match="case-insensitive"):
        t.alter.add_columns(pa.field("ID", pa.int64()))
    with pytest.raises(dl.InvalidArgumentError, match="differ only in case"):
        t.alter.add_columns(pa.field("s", pa.struct([("q", pa.int32()), ("Q", pa.int32())])))
    assert t.version() == 0


def test_partition_columns_resolve_to_the_schema_spelling(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = pa.table({"id": [1, 2, 3], "Part": ["x", "y", "x"]})
    dl.write_table(path, data, partition_by=["PART"])
    t = dl.DeltaTable(path)
    assert t.metadata().partition_columns == ["Part"]
    assert {f.split("/")[0] for f in t.files()} == {"Part=x", "Part=y"}
    # An existing table's partitioning given in another case is the same partitioning.
    dl.write_table(path, pa.table({"id": [4], "part": ["z"]}), mode="append", partition_by="part")
    assert assert_peer_agrees(path) == [
        {"id": 1, "Part": "x"},
        {"id": 2, "Part": "y"},
        {"id": 3, "Part": "x"},
        {"id": 4, "Part": "z"},
    ]
    assert rows(t.to_pyarrow_table(filter=dl.col("PART") == "x")) == [
        {"id": 1, "Part": "x"},
        {"id": 3, "Part": "x"},
    ]


@pytest.mark.parametrize("partition_by", [["a", "a"], ["a", "A"]])
def test_duplicate_partition_columns_are_refused(tmp_path: Path, partition_by: list[str]) -> None:
    path = tmp_path / "t"
    with pytest.raises(dl.InvalidArgumentError, match="given twice"):
        dl.write_table(path, pa.table({"a": [1], "b": [2]}), partition_by=partition_by)
    assert not (path / "_delta_log").exists()


def test_clustering_columns_resolve_case_insensitively(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": [1, 2], "v": [3, 4]}), clustering_columns=["ID"])
    domain = json.loads(dl.DeltaTable(path).domain_metadata()["delta.clustering"])
    assert domain["clusteringColumns"] == [["id"]]
    assert assert_peer_agrees(path) == [{"id": 1, "v": 3}, {"id": 2, "v": 4}]
    with pytest.raises(dl.InvalidArgumentError, match="given twice"):
        dl.write_table(tmp_path / "u", pa.table({"id": [1]}), clustering_columns=["id", "ID"])


# ---------------------------------------------------------------------------------------------
# Reading files whose columns are spelled differently


def _hand_table(path: Path, fields: list[tuple[str, str]], files: list[pa.Table]) -> None:
    """A table with the schema `fields` ((name, Delta type)) whose data files are `files`,
    committed by a hand-written log (as other writers could have left it)."""
    log = path / "_delta_log"
    log.mkdir(parents=True)
    schema = {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
    }
    actions: list[dict[str, Any]] = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "00000000-0000-4000-8000-00000000000c",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 1_700_000_000_000,
            }
        },
    ]
    for i, data in enumerate(files):
        name = f"part-{i}.parquet"
        pq.write_table(data, path / name)
        actions.append(
            {
                "add": {
                    "path": name,
                    "partitionValues": {},
                    "size": (path / name).stat().st_size,
                    "modificationTime": 1_700_000_000_000,
                    "dataChange": True,
                }
            }
        )
    (log / f"{0:020}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_a_file_column_of_another_case_is_that_column(tmp_path: Path) -> None:
    # Older writers (Delta Spark among them) may spell a file's column otherwise than the
    # schema: with one column of that name, the file's `id` is the table's `Id`.
    path = tmp_path / "t"
    _hand_table(
        path, [("Id", "long"), ("V", "string")], [pa.table({"id": [1, 2], "v": ["a", "b"]})]
    )
    assert rows(dl.DeltaTable(path).to_pyarrow_table(), "Id") == [
        {"Id": 1, "V": "a"},
        {"Id": 2, "V": "b"},
    ]


def test_a_column_differing_only_in_case_is_null_in_files_without_it(tmp_path: Path) -> None:
    # A table (written before such schemas were refused) with both `a` and `A`: an old file
    # holds only `a`. `A` must read as null there, not as `a`'s values.
    path = tmp_path / "t"
    _hand_table(
        path,
        [("id", "long"), ("a", "long"), ("A", "long")],
        [pa.table({"id": [1], "a": [10]}), pa.table({"id": [2], "a": [20], "A": [200]})],
    )
    got = rows(dl.DeltaTable(path).to_pyarrow_table())
    assert got == [{"id": 1, "a": 10, "A": None}, {"id": 2, "a": 20, "A": 200}]
    assert rows(dl.DeltaTable(path).to_pyarrow_table(columns=["A", "id"])) == [
        {"A": None, "id": 1},
        {"A": 200, "id": 2},
    ]


# ---------------------------------------------------------------------------------------------
# Filters, SQL, constraints, generated columns, UPDATE and MERGE


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    dl.write_table(path, pa.table({"id": list(range(1, 7)), "Val": [f"v{i}" for i in range(1, 7)]}))
    return path


def test_filters_and_columns_in_any_case(table: Path) -> None:
    t = dl.DeltaTable(table)
    got = t.to_pyarrow_table(columns=["ID", "val"], filter=dl.col("ID") > 3)
    assert got.schema.names == ["id", "Val"]
    assert rows(got) == [{"id": i, "Val": f"v{i}"} for i in (4, 5, 6)]
    assert rows(t.to_pyarrow_table(filter=[("VAL", "=", "v2")])) == [{"id": 2, "Val": "v2"}]
    with pytest.raises(dl.InvalidArgumentError, match="twice"):
        t.to_pyarrow_table(columns=["id", "ID"])
    assert len(assert_peer_agrees(table)) == 6


def test_dml_and_constraints_in_any_case(table: Path) -> None:
    t = dl.DeltaTable(table)
    assert t.delete("ID > 5")["num_deleted_rows"] == 1
    assert t.update({"VAL": "upper(vAL)"}, "Id <= 2")["num_updated_rows"] == 2
    t.alter.add_constraint({"positive": "ID > 0"})
    with pytest.raises(dl.ConstraintViolationError):
        dl.write_table(t, pa.table({"ID": [-1], "val": ["x"]}), mode="append")
    source = pa.table({"ID": [5, 7], "VAL": ["m5", "m7"]})
    (
        t.merge(source, "target.ID = source.id", "source", "target")
        .when_matched_update({"VAL": "source.val"})
        .when_not_matched_insert({"Id": "source.ID", "val": "source.VAL"})
        .execute()
    )
    assert names(table) == ["id", "Val"]
    assert assert_peer_agrees(table) == [
        {"id": 1, "Val": "V1"},
        {"id": 2, "Val": "V2"},
        {"id": 3, "Val": "v3"},
        {"id": 4, "Val": "v4"},
        {"id": 5, "Val": "m5"},
        {"id": 7, "Val": "m7"},
    ]


def test_generated_column_expression_in_another_case(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("twice", pa.int64(), metadata={"delta.generationExpression": "ID * 2"}),
        ]
    )
    dl.write_table(path, pa.table({"id": [1, 2], "twice": [2, 4]}, schema=schema))
    dl.write_table(path, pa.table({"ID": [3]}), mode="append")
    assert assert_peer_agrees(path) == [
        {"id": 1, "twice": 2},
        {"id": 2, "twice": 4},
        {"id": 3, "twice": 6},
    ]


# ---------------------------------------------------------------------------------------------
# Property test: random case variations of names across write, merge and filter

_BASE = ["key", "alpha", "beta", "gamma"]


def _cased(name: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda upper: "".join(c.upper() if u else c for c, u in zip(name, upper, strict=True))
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    create=st.tuples(*(_cased(n) for n in _BASE[:3])),
    append=st.tuples(*(_cased(n) for n in _BASE)),
    filter_name=_cased("key"),
    partition=st.sampled_from([None, 1, 2]),
    data=st.data(),
)
def test_case_variations_across_write_merge_filter(
    tmp_path_factory: pytest.TempPathFactory,
    create: tuple[str, ...],
    append: tuple[str, ...],
    filter_name: str,
    partition: int | None,
    data: st.DataObject,
) -> None:
    path = tmp_path_factory.mktemp("case") / "t"
    first = pa.table({create[0]: [1, 2], create[1]: ["a", "b"], create[2]: [0.5, 1.5]})
    partition_by = None
    if partition is not None:
        partition_by = [data.draw(_cased(_BASE[partition]), label="partition_by")]
    dl.write_table(path, first, partition_by=partition_by)
    # The append names every column in its own case and brings a new one (the fourth name).
    second = pa.table({append[0]: [3], append[1]: ["c"], append[2]: [2.5], append[3]: [7]})
    dl.write_table(path, second, mode="append", schema_mode="merge")
    t = dl.DeltaTable(path)
    # The table keeps the spelling it was created with; the new column the data's.
    assert t.schema().names == [*create, append[3]]
    if partition is not None:
        assert t.metadata().partition_columns == [create[partition]]
    expected = [
        {create[0]: 1, create[1]: "a", create[2]: 0.5, append[3]: None},
        {create[0]: 2, create[1]: "b", create[2]: 1.5, append[3]: None},
        {create[0]: 3, create[1]: "c", create[2]: 2.5, append[3]: 7},
    ]
    assert assert_peer_agrees(path, create[0]) == expected
    got = t.to_pyarrow_table(filter=dl.col(filter_name) >= 2)
    assert rows(got, create[0]) == expected[1:]
    sql = t.to_pyarrow_table(filter=dl.col(filter_name.swapcase()) < 2)
    assert rows(sql, create[0]) == expected[:1]
