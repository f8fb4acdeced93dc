"""The table's ``protocol`` and ``metaData`` actions as Python values (spec "Protocol
Evolution", "Change Metadata"), as :meth:`deltalog.DeltaTable.protocol` and
:meth:`~deltalog.DeltaTable.metadata` return them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deltalog.exceptions import CorruptLogError


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


def schema_text(metadata: Mapping[str, Any] | Metadata) -> str:
    """The ``schemaString`` of a ``metaData`` action (as the native module gives it,
    ``RawSnapshot.metadata()``, or as :class:`Metadata`); the field is required ("Change
    Metadata")."""
    if isinstance(metadata, Metadata):
        text: object = metadata.schema_string
    else:
        text = metadata.get("schema_string")
    if not isinstance(text, str):
        raise CorruptLogError(
            "the table's metaData action has no schemaString",
            rule='"Change Metadata": schemaString is required',
        )
    return text
