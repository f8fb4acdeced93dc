"""OPTIMIZE's arguments and metrics in deltalake's forms.

``t.optimize.compact`` / ``z_order`` take deltalake 1.6's parameters in its order, and its
own argument objects: a ``deltalake.CommitProperties`` or ``deltalake.WriterProperties`` is
converted to deltalog's (a setting deltalog cannot honour is an ``InvalidArgumentError``
naming it, never dropped), a ``deltalake.PostCommitHookProperties`` (or deltalog's
:class:`PostCommitHookProperties`) says what happens after the commit. deltalake is not
imported: its objects are recognised by their class and read by their attributes.

The metrics are deltalake's: the same keys, ``filesAdded`` / ``filesRemoved`` as JSON text
(``{"avg":…,"max":…,"min":…,"totalFiles":…,"totalSize":…}``), ``preserveInsertionOrder`` and
``preservedStableOrder`` false for Z-order and clustering.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from deltalog.exceptions import InvalidArgumentError
from deltalog.write.properties import BloomFilterProperties, ColumnProperties, WriterProperties
from deltalog.write.writer import CommitProperties


@dataclass(frozen=True)
class PostCommitHookProperties:
    """What happens after an OPTIMIZE commit, as deltalake's class of the same name says it.

    deltalog's commits always write a checkpoint when ``delta.checkpointInterval`` divides
    their version, then clean up expired log files when ``delta.enableExpiredLogCleanup``
    allows ("Checkpoints", "Metadata Cleanup"). ``cleanup_expired_logs=True`` also cleans up
    after the commit whatever that property says (files older than
    ``delta.logRetentionDuration``, before the latest checkpoint). Turning the automatic
    checkpoint or cleanup off (``False``) is refused: set those table properties instead.
    """

    create_checkpoint: bool = True
    cleanup_expired_logs: bool | None = None


def _is_deltalakes(value: Any, name: str) -> bool:
    kind = type(value)
    return kind.__name__ == name and kind.__module__.split(".")[0] == "deltalake"


def commit_properties(value: Any) -> CommitProperties:
    """deltalog's :class:`CommitProperties` for OPTIMIZE from ``value`` (None, deltalog's or
    deltalake's). OPTIMIZE records no application transaction (its commit changes no data), and
    deltalog retries a conflicting commit up to its own limit: those settings are refused."""
    if value is None:
        return CommitProperties()
    if isinstance(value, CommitProperties):
        props = value
    elif _is_deltalakes(value, "CommitProperties"):
        if getattr(value, "max_commit_retries", None) is not None:
            raise InvalidArgumentError(
                "commit_properties.max_commit_retries is not supported: deltalog retries a "
                "commit that lost its version to a non-conflicting one up to its own limit"
            )
        transactions = list(getattr(value, "app_transactions", None) or [])
        if transactions:
            raise InvalidArgumentError(
                "commit_properties.app_transactions: OPTIMIZE records no application "
                'transaction ("Transaction Identifiers" mark data writes)'
            )
        props = CommitProperties(custom_metadata=dict(value.custom_metadata or {}))
    else:
        raise InvalidArgumentError(
            "commit_properties must be a deltalog.CommitProperties or a "
            f"deltalake.CommitProperties, not {type(value).__name__}"
        )
    if props.app_id is not None:
        raise InvalidArgumentError(
            "commit_properties.app_id: OPTIMIZE records no application transaction "
            '("Transaction Identifiers" mark data writes)'
        )
    return props


_CODEC = re.compile(r"^([A-Z0-9_]+)(?:\((-?\d+)\))?$")


def _bloom(value: Any) -> BloomFilterProperties | None:
    if value is None:
        return None
    enabled = value.set_bloom_filter_enabled
    if enabled is None:
        # deltalake leaves it unset: a fpp or ndv alone turns the filter on (parquet's rule).
        if value.fpp is None and value.ndv is None:
            return None
        enabled = True
    return BloomFilterProperties(bool(enabled), value.fpp, value.ndv)


def _column(value: Any, where: str) -> ColumnProperties | None:
    if value is None:
        return None
    if isinstance(value, ColumnProperties):
        return value
    if not _is_deltalakes(value, "ColumnProperties"):
        raise InvalidArgumentError(
            f"{where} must be a ColumnProperties (deltalog's or deltalake's), not "
            f"{type(value).__name__}"
        )
    if getattr(value, "encoding", None) is not None:
        raise InvalidArgumentError(
            f"{where}.encoding ({value.encoding}) is not supported: deltalog chooses the "
            "encodings of the columns it writes"
        )
    return ColumnProperties(
        dictionary_enabled=value.dictionary_enabled,
        statistics_enabled=value.statistics_enabled,
        bloom_filter_properties=_bloom(value.bloom_filter_properties),
    )


def writer_properties(value: Any) -> WriterProperties | None:
    """deltalog's :class:`WriterProperties` from ``value`` (None, deltalog's or deltalake's:
    the same settings; deltalake's per column ``encoding`` is refused)."""
    if value is None or isinstance(value, WriterProperties):
        return value
    if not _is_deltalakes(value, "WriterProperties"):
        raise InvalidArgumentError(
            "writer_properties must be a deltalog.WriterProperties or a "
            f"deltalake.WriterProperties, not {type(value).__name__}"
        )
    codec, level = None, None
    if value.compression is not None:
        # deltalake keeps the codec with its level: "ZSTD(4)", "SNAPPY".
        match = _CODEC.match(str(value.compression))
        if match is None:
            raise InvalidArgumentError(
                f"writer_properties.compression {value.compression!r} is not a codec"
            )
        codec = match.group(1)
        level = int(match.group(2)) if match.group(2) is not None else None
    columns = {
        name: _column(c, f"writer_properties.column_properties[{name!r}]")
        for name, c in (value.column_properties or {}).items()
    }
    return WriterProperties(
        data_page_size_limit=value.data_page_size_limit,
        dictionary_page_size_limit=value.dictionary_page_size_limit,
        data_page_row_count_limit=value.data_page_row_count_limit,
        write_batch_size=value.write_batch_size,
        max_row_group_size=value.max_row_group_size,
        statistics_truncate_length=value.statistics_truncate_length,
        compression=codec,  # type: ignore[arg-type]
        compression_level=level,
        default_column_properties=_column(
            value.default_column_properties, "writer_properties.default_column_properties"
        ),
        column_properties={k: v for k, v in columns.items() if v is not None},
    )


def cleans_up_after(value: Any) -> bool:
    """Whether OPTIMIZE cleans up expired log files after its commit
    (``post_commithook_properties.cleanup_expired_logs=True``); settings deltalog cannot honour
    are refused (:class:`PostCommitHookProperties`)."""
    if value is None:
        return False
    if not (
        isinstance(value, PostCommitHookProperties)
        or _is_deltalakes(value, "PostCommitHookProperties")
    ):
        raise InvalidArgumentError(
            "post_commithook_properties must be a PostCommitHookProperties (deltalog's or "
            f"deltalake's), not {type(value).__name__}"
        )
    if value.create_checkpoint is False:
        raise InvalidArgumentError(
            "post_commithook_properties.create_checkpoint=False is not supported: deltalog "
            "checkpoints every delta.checkpointInterval commits (set that table property)"
        )
    if value.cleanup_expired_logs is False:
        raise InvalidArgumentError(
            "post_commithook_properties.cleanup_expired_logs=False is not supported: deltalog "
            "cleans up after its automatic checkpoints as delta.enableExpiredLogCleanup says "
            "(set that table property to false)"
        )
    return value.cleanup_expired_logs is True


def split_commit_args(
    method: str, args: tuple[Any, ...], commit: Any, hooks: Any
) -> tuple[Any, Any]:
    """deltalake's positional commit arguments (after ``writer_properties``; deltalake 1.6
    still takes them, in the order ``post_commithook_properties, commit_properties``) as
    ``(commit_properties, post_commithook_properties)``. Each is recognised by its class,
    so either order works."""
    if len(args) > 2:
        raise TypeError(f"{method}() takes at most 2 positional commit arguments, got {len(args)}")
    for i, value in enumerate(args):
        name = type(value).__name__
        if name == "PostCommitHookProperties" or (value is None and i == 0):
            slot = "post_commithook_properties"
        elif name == "CommitProperties" or value is None:
            slot = "commit_properties"
        else:
            raise TypeError(
                f"{method}() got an unexpected positional argument of type {name} after "
                "writer_properties (commit_properties / post_commithook_properties)"
            )
        if slot == "commit_properties":
            if commit is not None and value is not None:
                raise TypeError(f"{method}() got multiple values for 'commit_properties'")
            commit = value if value is not None else commit
        else:
            if hooks is not None and value is not None:
                raise TypeError(f"{method}() got multiple values for 'post_commithook_properties'")
            hooks = value if value is not None else hooks
    return commit, hooks


def commit_interval(value: Any) -> float | None:
    """``min_commit_interval`` in seconds: an int or float of seconds, or a timedelta."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(
            f"min_commit_interval must be seconds (int) or a timedelta, not {type(value).__name__}"
        )
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgumentError(
            f"min_commit_interval must be a non-negative number of seconds, got {value}"
        )
    return seconds


def memory_limit(max_spill_size: Any, limit: Any) -> Any:
    """deltalake's ``max_spill_size`` (bytes held in memory before spilling) is deltalog's
    ``memory_limit``; both may be given only when they agree."""
    if max_spill_size is None:
        return limit
    if limit is not None and limit != max_spill_size:
        raise InvalidArgumentError(
            f"max_spill_size ({max_spill_size}) and memory_limit ({limit}) are the same limit: "
            "give one"
        )
    return max_spill_size


def _sizes(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value)


def _sizes_text(sizes: dict[str, Any]) -> str:
    # deltalake's MetricDetails serialized: avg, max, min, totalFiles, totalSize.
    out = {
        "avg": float(sizes["avg"]),
        "max": int(sizes["max"]),
        "min": int(sizes["min"]),
        "totalFiles": int(sizes["totalFiles"]),
        "totalSize": int(sizes["totalSize"]),
    }
    return json.dumps(out, separators=(",", ":"))


def merged_sizes(parts: list[Any]) -> dict[str, Any]:
    """The sizes of the files of several commits together."""
    parts = [_sizes(p) for p in parts if _sizes(p)["totalFiles"]]
    files = sum(p["totalFiles"] for p in parts)
    size = sum(p["totalSize"] for p in parts)
    return {
        "min": min((p["min"] for p in parts), default=0),
        "max": max((p["max"] for p in parts), default=0),
        "avg": size / files if files else 0.0,
        "totalFiles": files,
        "totalSize": size,
    }


def deltalake_metrics(
    native: dict[str, Any], *, reorders: bool, max_bin_span_files: int
) -> dict[str, Any]:
    """The native core's metrics in deltalake's form (``reorders``: Z-order or clustering,
    which keep no insertion order), then deltalog's own ``version``, ``numRows`` and
    ``spilledBytes``."""
    return {
        "numFilesAdded": native["numFilesAdded"],
        "numFilesRemoved": native["numFilesRemoved"],
        "filesAdded": _sizes_text(_sizes(native["filesAdded"])),
        "filesRemoved": _sizes_text(_sizes(native["filesRemoved"])),
        "partitionsOptimized": native["partitionsOptimized"],
        "numBatches": native["numBatches"],
        "totalConsideredFiles": native["totalConsideredFiles"],
        "totalFilesSkipped": native["totalFilesSkipped"],
        "preserveInsertionOrder": not reorders,
        "plannerStrategy": "zOrder" if reorders else "preserveLocality",
        "preservedStableOrder": not reorders,
        "maxBinSpanFiles": max_bin_span_files,
        "version": native["version"],
        "numRows": native["numRows"],
        "spilledBytes": native["spilledBytes"],
    }
