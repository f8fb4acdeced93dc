"""The table's ``protocol`` and ``metaData`` actions as Python values (spec "Protocol
Evolution", "Change Metadata"), as :meth:`deltalog.DeltaTable.protocol` and
:meth:`~deltalog.DeltaTable.metadata` return them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Protocol:
    """The table's `protocol` action (spec: "Protocol Evolution")."""

    min_reader_version: int
    min_writer_version: int
    reader_features: list[str] | None = None
    writer_features: list[str] | None = None


@dataclass(frozen=True)
class Metadata:
    """The table's `metaData` action (spec: "Change Metadata")."""

    id: str | None
    name: str | None
    description: str | None
    partition_columns: list[str]
    configuration: dict[str, str]
    created_time: int | None
    schema_string: str | None
    format_provider: str | None = "parquet"
    format_options: dict[str, str] = field(default_factory=dict)
