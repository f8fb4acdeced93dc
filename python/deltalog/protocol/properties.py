"""Table properties: the registry of the ``delta.*`` properties deltalog accepts, and the
validation of every configuration deltalog commits.

Delta table properties are strings (spec "Change Metadata": ``configuration`` is a
``Map[String, String]``). Properties whose key starts with ``delta.`` belong to Delta itself:
Delta Spark refuses an unknown ``delta.*`` key and a value its property does not accept
(``delta.appendOnly=maybe``, ``delta.checkpointInterval=0``), and so does deltalog, when a table
is created (``write_table(configuration=...)``) and when properties are set
(``alter.set_properties``). Two families have rules of their own: ``delta.feature.<name>``
(a table feature to support; :func:`deltalog.protocol.features.features_for_configuration`) and
``delta.constraints.<name>`` (CHECK constraints, "CHECK Constraints"; their expressions are
checked by the core before anything is written).

Other keys (``owner``, ``comment``, an application's own settings) are free. Values must be
given, not ``None`` (Delta has no null property values); Python booleans become ``"true"`` /
``"false"`` and numbers their text.

Validation applies to what deltalog commits: tables written by others keep whatever properties
they have, and reading them never validates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from deltalog import _native
from deltalog.exceptions import InvalidArgumentError

DELTA_PREFIX = "delta."
FEATURE_PREFIX = "delta.feature."
CONSTRAINT_PREFIX = "delta.constraints."


@dataclass(frozen=True)
class TableProperty:
    """One ``delta.*`` table property.

    Attributes:
        key: the full key (``delta.appendOnly``).
        kind: what values it takes, for messages (``boolean``, ``a positive integer``, ...).
        check: returns None for a valid value, else why it is not valid.
        source: where it is defined: a section of the spec, or Delta Spark's ``DeltaConfigs``.
    """

    key: str
    kind: str
    check: Callable[[str], str | None]
    source: str


def _boolean(value: str) -> str | None:
    # Delta Spark parses booleans with `toBoolean`: true/false in any case.
    return None if value.lower() in ("true", "false") else "expected true or false"


def _integer(minimum: int, bits: int = 32) -> Callable[[str], str | None]:
    """Whole numbers from ``minimum`` up to the largest Java int (``bits=32``) or long."""
    maximum = 2 ** (bits - 1) - 1

    def check(value: str) -> str | None:
        # Java's parseInt/parseLong: an optional sign and digits, nothing else.
        digits = value[1:] if value[:1] in ("-", "+") else value
        if not digits.isascii() or not digits.isdigit():
            return "expected a whole number"
        number = int(value)
        if number < minimum:
            return f"expected a whole number of at least {minimum}"
        if number > maximum:
            return f"expected a whole number of at most {maximum}"
        return None

    return check


def _interval(value: str) -> str | None:
    # One parser for reading and validating: the core's (`maintenance::intervals`).
    try:
        _native.interval_ms(value)
    except ValueError as e:
        return str(e)
    return None


def _one_of(*allowed: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        if value.strip().lower() in {a.lower() for a in allowed}:
            return None
        return "expected one of " + ", ".join(allowed)

    return check


def _list_of(*allowed: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        items = [v.strip().lower() for v in value.split(",") if v.strip()]
        bad = [v for v in items if v not in allowed]
        if bad:
            return "expected a comma-separated list of " + ", ".join(allowed)
        return None

    return check


def _text(value: str) -> str | None:
    return None if value.strip() else "expected a non-empty value"


_SPARK = "Delta Spark DeltaConfigs"

_REGISTRY: tuple[TableProperty, ...] = (
    TableProperty("delta.appendOnly", "boolean", _boolean, "Append-only Tables"),
    TableProperty(
        "delta.checkpointInterval", "a positive integer", _integer(1), "Checkpoints (interval)"
    ),
    TableProperty(
        "delta.checkpointPolicy",
        "classic or v2",
        _one_of("classic", "v2"),
        "V2 Checkpoint Table Feature",
    ),
    TableProperty("delta.checkpoint.writeStatsAsJson", "boolean", _boolean, "Checkpoints"),
    TableProperty("delta.checkpoint.writeStatsAsStruct", "boolean", _boolean, "Checkpoints"),
    TableProperty("delta.logRetentionDuration", "an interval", _interval, "Metadata Cleanup"),
    TableProperty(
        "delta.deletedFileRetentionDuration", "an interval", _interval, "Add File and Remove File"
    ),
    TableProperty("delta.checkpointRetentionDuration", "an interval", _interval, _SPARK),
    TableProperty(
        "delta.dropFeatureTruncateHistory.retentionDuration",
        "an interval",
        _interval,
        _SPARK + " (DROP FEATURE ... TRUNCATE HISTORY)",
    ),
    TableProperty("delta.sampleRetentionDuration", "an interval", _interval, _SPARK),
    TableProperty(
        "delta.setTransactionRetentionDuration", "an interval", _interval, "Transaction Identifiers"
    ),
    TableProperty("delta.enableExpiredLogCleanup", "boolean", _boolean, "Metadata Cleanup"),
    TableProperty(
        "delta.dataSkippingNumIndexedCols",
        "an integer of at least -1",
        _integer(-1),
        "Per-file Statistics",
    ),
    TableProperty(
        "delta.dataSkippingStatsColumns", "a list of column names", _text, "Per-file Statistics"
    ),
    TableProperty("delta.enableChangeDataFeed", "boolean", _boolean, "Add CDC File"),
    TableProperty(
        "delta.columnMapping.mode",
        "none, name or id",
        _one_of("none", "name", "id"),
        "Column Mapping",
    ),
    TableProperty(
        "delta.columnMapping.maxColumnId",
        "a non-negative integer",
        _integer(0, 64),
        "Column Mapping",
    ),
    TableProperty("delta.enableDeletionVectors", "boolean", _boolean, "Deletion Vectors"),
    TableProperty("delta.enableRowTracking", "boolean", _boolean, "Row Tracking"),
    TableProperty(
        "delta.rowTracking.materializedRowIdColumnName", "a column name", _text, "Row Tracking"
    ),
    TableProperty(
        "delta.rowTracking.materializedRowCommitVersionColumnName",
        "a column name",
        _text,
        "Row Tracking",
    ),
    TableProperty("delta.enableInCommitTimestamps", "boolean", _boolean, "In-Commit Timestamps"),
    TableProperty(
        "delta.inCommitTimestampEnablementVersion",
        "a non-negative integer",
        _integer(0, 64),
        "In-Commit Timestamps",
    ),
    TableProperty(
        "delta.inCommitTimestampEnablementTimestamp",
        "an integer",
        _integer(-(2**63), 64),
        "In-Commit Timestamps",
    ),
    TableProperty(
        "delta.isolationLevel",
        "Serializable or WriteSerializable",
        _one_of("Serializable", "WriteSerializable"),
        _SPARK,
    ),
    TableProperty("delta.enableIcebergCompatV1", "boolean", _boolean, "Iceberg Compatibility V1"),
    TableProperty("delta.enableIcebergCompatV2", "boolean", _boolean, "Iceberg Compatibility V2"),
    TableProperty(
        "delta.universalFormat.enabledFormats",
        "a list of iceberg, hudi",
        _list_of("iceberg", "hudi"),
        _SPARK,
    ),
    TableProperty("delta.enableTypeWidening", "boolean", _boolean, _SPARK + " (type widening)"),
    TableProperty("delta.compatibility.symlinkFormatManifest.enabled", "boolean", _boolean, _SPARK),
    TableProperty("delta.randomizeFilePrefixes", "boolean", _boolean, _SPARK),
    TableProperty("delta.randomPrefixLength", "a positive integer", _integer(1), _SPARK),
    TableProperty("delta.autoOptimize.optimizeWrite", "boolean", _boolean, _SPARK),
    TableProperty(
        "delta.autoOptimize.autoCompact",
        "true, false, auto or legacy",
        _one_of("true", "false", "auto", "legacy"),
        _SPARK,
    ),
    TableProperty("delta.targetFileSize", "a positive number of bytes", _integer(1, 64), _SPARK),
    TableProperty("delta.tuneFileSizesForRewrites", "boolean", _boolean, _SPARK),
)

#: Every ``delta.*`` table property deltalog accepts, by key. Read-only.
PROPERTIES: Mapping[str, TableProperty] = MappingProxyType({p.key: p for p in _REGISTRY})

if len(PROPERTIES) != len(_REGISTRY):  # pragma: no cover - guards edits of the registry
    raise RuntimeError("duplicate key in the table-property registry")

_BY_LOWER_KEY: Mapping[str, TableProperty] = {p.key.lower(): p for p in _REGISTRY}

# Delta Spark consumes these to upgrade the protocol instead of storing them; deltalog derives
# the protocol from the table's features.
_PROTOCOL_VERSIONS_LOWER = ("delta.minreaderversion", "delta.minwriterversion")


def _as_text(key: str, value: Any) -> str:
    if value is None:
        raise InvalidArgumentError(
            f"table property {key!r} has no value (None): Delta table properties are strings; "
            "leave the key out (or unset it) instead"
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise InvalidArgumentError(
        f"table property {key!r} must be a string, not {type(value).__name__} ({value!r})"
    )


def validate(configuration: Mapping[str, Any]) -> dict[str, str]:
    """``configuration`` as the strings to commit, after checking every key and value (see
    the module docs). ``delta.feature.*`` and ``delta.constraints.*`` keys are passed through
    for their own rules.

    Raises:
        InvalidArgumentError: an unknown ``delta.*`` key, a value its property does not take, a
            ``None`` value, or a key that is not a non-empty string.
    """
    out: dict[str, str] = {}
    for key, value in configuration.items():
        if not isinstance(key, str) or not key.strip():
            raise InvalidArgumentError(f"table property keys are non-empty strings, not {key!r}")
        text = _as_text(key, value)
        lower = key.lower()
        if not lower.startswith(DELTA_PREFIX):
            out[key] = text
            continue
        if lower.startswith(FEATURE_PREFIX) or lower.startswith(CONSTRAINT_PREFIX):
            if lower.startswith(CONSTRAINT_PREFIX) and not key[len(CONSTRAINT_PREFIX) :]:
                raise InvalidArgumentError(f"{key!r} names no constraint")
            out[key] = text
            continue
        if lower in _PROTOCOL_VERSIONS_LOWER:
            raise InvalidArgumentError(
                f"{key} is not supported: deltalog derives the protocol from the table's "
                "features; name them with table_features= or alter.add_feature instead"
            )
        # Keys are matched case-insensitively and stored as Delta spells them, as Delta
        # Spark does (`delta.appendonly` sets `delta.appendOnly`).
        prop = _BY_LOWER_KEY.get(lower)
        if prop is None:
            raise InvalidArgumentError(
                f"unknown Delta table property {key!r}: keys starting with 'delta.' belong to "
                "Delta, which refuses keys it does not define"
            )
        if prop.key in out and prop.key != key:
            raise InvalidArgumentError(f"table property {prop.key} is given twice")
        out[prop.key] = text
        why = prop.check(text)
        if why is not None:
            raise InvalidArgumentError(
                f"invalid value {text!r} for table property {key}: {why} ({prop.kind}; "
                f"{prop.source})"
            )
    return out


__all__ = ["PROPERTIES", "TableProperty", "validate"]
