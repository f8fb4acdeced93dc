"""``write_table(writer_properties=...)`` (issue #19): the parquet encoding of data files,
checked by reading the files' own metadata with pyarrow (an independent reader of parquet),
and the table's content with deltalake."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog as dl
from deltalog.exceptions import InvalidArgumentError


def data(n: int = 5000) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": pa.array([f"name-{i % 50}" for i in range(n)]),
            "s": pa.array([{"a": i, "b": str(i)} for i in range(n)]),
        }
    )


def only_file(path: Path) -> pq.ParquetFile:
    (name,) = dl.DeltaTable(str(path)).files()
    return pq.ParquetFile(path / name)


def test_codec_level_row_groups_and_column_settings(tmp_path: Path) -> None:
    path = tmp_path / "t"
    props = dl.WriterProperties(
        compression="ZSTD",
        compression_level=7,
        max_row_group_size=1000,
        default_column_properties=dl.ColumnProperties(statistics_enabled="NONE"),
        column_properties={
            "id": dl.ColumnProperties(
                statistics_enabled="CHUNK",
                bloom_filter_properties=dl.BloomFilterProperties(True, fpp=0.01, ndv=5000),
            ),
            "name": dl.ColumnProperties(dictionary_enabled=False),
        },
    )
    dl.write_table(str(path), data(), writer_properties=props)
    meta = only_file(path).metadata
    assert meta.num_row_groups == 5
    columns = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
        for i in range(meta.num_columns)
    }
    assert {c.compression for c in columns.values()} == {"ZSTD"}
    assert columns["id"].statistics is not None and columns["id"].statistics.has_min_max
    assert columns["s.a"].statistics is None or not columns["s.a"].statistics.has_min_max
    assert "PLAIN_DICTIONARY" not in columns["name"].encodings
    assert "RLE_DICTIONARY" not in columns["name"].encodings
    # The bloom filter (about 6 KiB for 5,000 values at 1%) is in the file: the same write
    # without it is that much smaller.
    plain = tmp_path / "plain"
    no_bloom = dataclasses.replace(props.column_properties["id"], bloom_filter_properties=None)
    without = dataclasses.replace(
        props, column_properties={**props.column_properties, "id": no_bloom}
    )
    dl.write_table(str(plain), data(), writer_properties=without)
    with_bloom = dl.DeltaTable(str(path)).get_add_actions().column("size")[0].as_py()
    without_size = dl.DeltaTable(str(plain)).get_add_actions().column("size")[0].as_py()
    assert with_bloom - without_size > 4096
    # The log's statistics do not depend on the parquet ones.
    adds = dl.DeltaTable(str(path)).get_add_actions(flatten=True).to_pylist()
    assert (adds[0]["min.id"], adds[0]["max.id"]) == (0, 4999)
    assert deltalake.DeltaTable(str(path)).to_pyarrow_table().sort_by("id") == data()


def test_defaults_and_appends_with_other_settings(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dl.write_table(str(path), data(100))
    meta = only_file(path).metadata
    assert meta.row_group(0).column(0).compression == "SNAPPY"
    dl.write_table(
        str(path),
        data(100),
        mode="append",
        writer_properties=dl.WriterProperties(compression="GZIP", compression_level=9),
    )
    codecs = set()
    for name in dl.DeltaTable(str(path)).files():
        codecs.add(pq.ParquetFile(path / name).metadata.row_group(0).column(0).compression)
    assert codecs == {"SNAPPY", "GZIP"}


def test_column_mapped_tables_take_logical_names(tmp_path: Path) -> None:
    path = tmp_path / "mapped"
    props = dl.WriterProperties(
        column_properties={"name": dl.ColumnProperties(dictionary_enabled=False)}
    )
    dl.write_table(
        str(path),
        data(100),
        configuration={"delta.columnMapping.mode": "name"},
        writer_properties=props,
    )
    meta = only_file(path).metadata
    physical = [meta.row_group(0).column(i) for i in range(meta.num_columns)]
    name_column = physical[1]
    assert name_column.path_in_schema != "name"  # a physical name
    assert "RLE_DICTIONARY" not in name_column.encodings


def test_optimize_of_a_column_mapped_table_takes_logical_names(tmp_path: Path) -> None:
    """OPTIMIZE's ``writer_properties`` name columns as the table does; the rewritten file
    holds physical names, and the setting reaches the right one."""
    path = tmp_path / "mapped"
    for i in range(3):
        dl.write_table(
            str(path),
            data(100),
            mode="append",
            configuration={"delta.columnMapping.mode": "name"} if i == 0 else None,
        )
    t = dl.DeltaTable(str(path))
    props = dl.WriterProperties(
        compression="ZSTD",
        column_properties={"name": dl.ColumnProperties(dictionary_enabled=False)},
    )
    assert t.optimize.compact(writer_properties=props)["numFilesAdded"] == 1
    meta = only_file(path).metadata
    columns = [meta.row_group(0).column(i) for i in range(meta.num_columns)]
    assert columns[1].path_in_schema != "name"  # a physical name
    assert "RLE_DICTIONARY" not in columns[1].encodings
    assert "RLE_DICTIONARY" in columns[0].encodings  # `id` keeps the default
    assert {c.compression for c in columns} == {"ZSTD"}
    assert t.to_pyarrow_table().num_rows == 300


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (dl.WriterProperties(compression="LZO"), "unknown compression"),  # type: ignore[arg-type]
        (dl.WriterProperties(compression="ZSTD", compression_level=99), "compression level"),
        (dl.WriterProperties(compression="SNAPPY", compression_level=1), "no compression level"),
        (dl.WriterProperties(max_row_group_size=0), "positive"),
        (
            dl.WriterProperties(column_properties={"nope": dl.ColumnProperties(False)}),
            "do not have",
        ),
        (
            dl.WriterProperties(
                default_column_properties=dl.ColumnProperties(
                    bloom_filter_properties=dl.BloomFilterProperties(True, fpp=1.5)
                )
            ),
            "fpp",
        ),
    ],
)
def test_bad_settings_are_refused_before_anything_is_written(
    tmp_path: Path, props: dl.WriterProperties, message: str
) -> None:
    path = tmp_path / "bad"
    with pytest.raises(InvalidArgumentError, match=message):
        dl.write_table(str(path), data(10), writer_properties=props)
    assert not (path / "_delta_log").exists() or not list((path / "_delta_log").glob("*.json"))


@pytest.mark.parametrize("sets_dictionary", [False, True])
def test_overflowing_dictionaries_are_dropped_unless_set(
    tmp_path: Path, sets_dictionary: bool
) -> None:
    """A column whose dictionary overflows (distinct int64 keys: a 1 MiB dictionary page holds
    131,072 of them, a row group has 200,000) falls back in the first row group and is written
    without a dictionary once the writer has seen that (the second row group may already be
    encoding by then; the third is not), while a low-cardinality column keeps its dictionary;
    settings that say how dictionaries are used are kept as given. pyarrow reads the footers
    and the rows."""
    import numpy as np

    n = 600_000
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "key": pa.array(rng.permutation(n * 10)[:n].astype(np.int64)),
            "kind": pa.array([f"k{i % 7}" for i in range(n)]),
        }
    )
    props = dl.WriterProperties(
        compression="ZSTD",
        max_row_group_size=200_000,
        dictionary_page_size_limit=1024 * 1024 if sets_dictionary else None,
    )
    path = tmp_path / "t"
    dl.write_table(str(path), table, writer_properties=props)
    meta = only_file(path).metadata
    assert meta.num_row_groups == 3
    first, third = meta.row_group(0), meta.row_group(2)
    # The first group's keys overflowed: a dictionary page, then plain pages.
    assert first.column(0).has_dictionary_page and "PLAIN" in first.column(0).encodings
    assert third.column(0).has_dictionary_page == sets_dictionary
    assert first.column(1).has_dictionary_page and third.column(1).has_dictionary_page
    assert {first.column(0).compression, third.column(0).compression} == {"ZSTD"}
    assert pq.read_table(path / dl.DeltaTable(str(path)).files()[0]).equals(table)
