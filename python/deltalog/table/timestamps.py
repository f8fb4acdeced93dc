"""Timestamps as the API takes them (time travel, RESTORE, the change data feed's range, the
clock of metadata cleanup and VACUUM): ``TimestampLike`` and its milliseconds since the epoch.
"""

from __future__ import annotations

import datetime as _dt

from deltalog import _args
from deltalog.exceptions import InvalidArgumentError

TimestampLike = _dt.datetime | _dt.date | str | int
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _timestamp_ms(value: TimestampLike) -> int:
    """Milliseconds since the epoch of a datetime (naive means UTC), date, ISO string or int."""
    if isinstance(value, bool):
        raise TypeError("a timestamp cannot be a bool")
    if isinstance(value, int):
        return _args.integer("a timestamp in milliseconds", value, minimum=-_args.MAX_I64)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = _dt.datetime.fromisoformat(text)
        except ValueError as e:
            raise InvalidArgumentError(f"not an ISO-8601 timestamp: {value!r}") from e
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return (value - _EPOCH) // _dt.timedelta(milliseconds=1)
    if isinstance(value, _dt.date):
        return _timestamp_ms(_dt.datetime(value.year, value.month, value.day))
    raise TypeError(f"unsupported timestamp type {type(value).__name__}")
