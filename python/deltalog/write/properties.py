"""How data files are encoded: ``WriterProperties``, ``ColumnProperties`` and
``BloomFilterProperties``, named and shaped as deltalake's, for ``write_table`` and OPTIMIZE
(``t.optimize.compact`` / ``z_order`` / ``purge_deletion_vectors``, ``dl.spark.optimize``).

Compression codec and level, row group and page sizes, and per column dictionary encoding,
parquet statistics and bloom filters. None of it changes what the Delta log says about a file
(its statistics are computed by deltalog itself); it trades file size and write speed against
what parquet readers can skip inside a file. The native core checks the values
(``write::parquet_options``): unknown codecs, levels out of range and columns the table does
not have are errors. Unless the properties set dictionaries (``dictionary_enabled`` for some
column, or ``dictionary_page_size_limit``), a column whose dictionary overflows its page limit
in one row group is written without a dictionary in the file writer's later row groups (as
under deltalog's own settings): values that fall back anyway are not interned again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Compression = Literal["UNCOMPRESSED", "SNAPPY", "GZIP", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"]


@dataclass(frozen=True)
class BloomFilterProperties:
    """A bloom filter for a column: ``fpp`` (false positive probability, 0 < fpp < 1) and
    ``ndv`` (distinct values expected) size it."""

    set_bloom_filter_enabled: bool = True
    fpp: float | None = None
    ndv: int | None = None


@dataclass(frozen=True)
class ColumnProperties:
    """Settings of one column (or, as ``default_column_properties``, of all)."""

    dictionary_enabled: bool | None = None
    statistics_enabled: Literal["NONE", "CHUNK", "PAGE"] | None = None
    bloom_filter_properties: BloomFilterProperties | None = None

    def _json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.dictionary_enabled is not None:
            out["dictionary_enabled"] = self.dictionary_enabled
        if self.statistics_enabled is not None:
            out["statistics_enabled"] = self.statistics_enabled
        if self.bloom_filter_properties is not None:
            b = self.bloom_filter_properties
            out["bloom_filter"] = {
                "enabled": b.set_bloom_filter_enabled,
                "fpp": b.fpp,
                "ndv": b.ndv,
            }
        return out


@dataclass(frozen=True)
class WriterProperties:
    """Parquet writer settings; ``None`` keeps deltalog's default (SNAPPY, 1M-row row groups,
    the parquet crate's page sizes). ``column_properties`` are keyed by column name (dotted
    for nested fields; a struct's settings apply to all its fields)."""

    data_page_size_limit: int | None = None
    dictionary_page_size_limit: int | None = None
    data_page_row_count_limit: int | None = None
    write_batch_size: int | None = None
    max_row_group_size: int | None = None
    statistics_truncate_length: int | None = None
    compression: Compression | None = None
    compression_level: int | None = None
    default_column_properties: ColumnProperties | None = None
    column_properties: Mapping[str, ColumnProperties] = field(default_factory=dict)

    def to_json(self) -> str:
        """The form the native core takes."""
        out: dict[str, Any] = {
            k: getattr(self, k)
            for k in (
                "data_page_size_limit",
                "dictionary_page_size_limit",
                "data_page_row_count_limit",
                "write_batch_size",
                "max_row_group_size",
                "statistics_truncate_length",
                "compression",
                "compression_level",
            )
            if getattr(self, k) is not None
        }
        if self.default_column_properties is not None:
            out["default_column_properties"] = self.default_column_properties._json()
        if self.column_properties:
            out["column_properties"] = {k: v._json() for k, v in self.column_properties.items()}
        return json.dumps(out)
