"""Checks of the numbers users pass to the API, before they reach the native core.

The core takes versions, counts and durations as 64-bit integers; a Python int outside that
range, a float that is not finite, or a value of the wrong type would otherwise surface as an
``OverflowError`` from the binding, a ``ValueError`` from ``int(nan)``, or worse (``"24" *
3_600_000`` is a 3.6-million-digit string). Wrong types raise ``TypeError``; values of the right
type but out of range raise :class:`~deltalog.InvalidArgumentError` (also a ``ValueError``),
naming the argument.
"""

from __future__ import annotations

import math
from typing import Any

from deltalog.exceptions import InvalidArgumentError

#: The largest value of a signed 64-bit integer: versions, counts and milliseconds in the log.
MAX_I64 = 2**63 - 1


def integer(name: str, value: Any, *, minimum: int = 0, maximum: int = MAX_I64) -> int:
    """``value`` as an int in ``minimum..=maximum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        if minimum == 0:
            raise InvalidArgumentError(f"{name} must not be negative, got {value}")
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    if value > maximum:
        raise InvalidArgumentError(f"{name} must be at most {maximum}, got {value}")
    return int(value)


def optional_integer(
    name: str, value: Any, *, minimum: int = 0, maximum: int = MAX_I64
) -> int | None:
    """:func:`integer`, or None for None."""
    return None if value is None else integer(name, value, minimum=minimum, maximum=maximum)


def version(name: str, value: Any) -> int:
    """A table version: an int in ``0..=2**63-1``."""
    return integer(name, value)


def hours_to_ms(name: str, value: Any) -> int:
    """A non-negative, finite number of hours as milliseconds that fit a 64-bit integer."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of hours, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgumentError(f"{name} must be a finite number of hours, got {value}")
    if value < 0:
        raise InvalidArgumentError(f"{name} must not be negative, got {value}")
    ms = value * 3_600_000
    if ms > MAX_I64:
        raise InvalidArgumentError(f"{name} is too large: {value} hours")
    return int(ms)
