"""Request bodies of deltalog's REST catalog server: the 413 of a body (or what it decodes
to) past its cap, and the JSON body parser that answers every malformed body with a 4xx, never
a 5xx: nesting deeper than :data:`~deltalog.server.limits.MAX_JSON_DEPTH`, integers
outside int64 (the catalog's versions are Delta's ``long``; protocol ``002_…``, "Delta Log
Entries"), ``NaN``/``Infinity``, and strings that are not Unicode text (a lone surrogate such
as ``"\\ud800"`` is valid JSON but cannot be encoded, stored or answered)."""

from __future__ import annotations

import json
import re
from typing import Any

from deltalog.catalog.clients.rest import protocol as p
from deltalog.server.lance.service import RestError
from deltalog.server.limits import INT64_MAX, INT64_MIN, MAX_JSON_DEPTH


class PayloadTooLarge(RestError):
    """A body, or what it decodes to, is larger than its cap: HTTP 413, code 13
    (``InvalidInput``)."""

    def __init__(self, message: str) -> None:
        super().__init__(p.INVALID_INPUT, message)

    @property
    def status(self) -> int:
        return 413


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(raw: bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep ``raw``'s arrays and objects nest (strings skipped), without recursion; counting
    stops past ``limit`` (the answer is then ``limit + 1``)."""
    if raw.count(b"[") + raw.count(b"{") <= limit:  # the common case, in C
        return min(raw.count(b"[") + raw.count(b"{"), limit)
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for b in brackets:
        depth += 1 if b in b"[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


def _int64(text: str) -> int:
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise RestError(p.INVALID_INPUT, f"the number {text[:40]} is outside int64")
    return value


def _no_constant(name: str) -> Any:
    raise RestError(p.INVALID_INPUT, f"{name} is not a JSON number")


def _check_text(value: Any, depth: int = 0) -> None:
    """Every string (and key) in ``value`` encodes as UTF-8 (``depth`` is bounded by
    :data:`MAX_JSON_DEPTH` already)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise RestError(
                p.INVALID_INPUT, "the body has a string that is not Unicode text (a lone surrogate)"
            ) from None
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_text(k, depth + 1)
            _check_text(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_text(v, depth + 1)


def parse_json_body(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON document of a request body, or a :class:`RestError` (code 13, 400) naming
    what is wrong with it."""
    if json_depth(raw, max_depth) > max_depth:
        raise RestError(
            p.INVALID_INPUT, f"the body nests more than {max_depth} levels deep (the most allowed)"
        )
    try:
        document = json.loads(raw, parse_int=_int64, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise RestError(p.INVALID_INPUT, f"the body is not JSON: {e}") from e
    _check_text(document)
    return document
