"""Secrets out of what deltalog prints (the REST catalog server, catalog listings): one
redaction for every form a database password takes in ``--db`` (PostgreSQL's "Connection
Strings": a URI's userinfo ``postgresql://user:secret@host/db``, a URI query parameter
``?password=secret``, and the keyword/value form ``host=h password=secret`` or
``password='a secret'``)."""

from __future__ import annotations

import re

MASK = "***"

#: The keys whose values are secrets, in a query string or a keyword/value string.
_SECRET_KEYS = r"(?:ssl)?password|passwd|pwd|secret|token|sslkey"

_QUERY = re.compile(rf"([?&;](?:{_SECRET_KEYS})=)[^&;#\s]*", re.IGNORECASE)
_KEYWORD = re.compile(
    rf"(?<![\w?&;])((?:{_SECRET_KEYS})\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s'&;]+)", re.IGNORECASE
)


def _userinfo(text: str) -> str:
    scheme_end = text.find("://")
    if scheme_end < 0:
        return text
    start = scheme_end + 3
    query = text.find("?", start)
    authority_end = len(text) if query < 0 else query
    at = text.rfind("@", start, authority_end)
    if at < 0:
        return text
    user, colon, _ = text[start:at].partition(":")
    return f"{text[:start]}{user}:{MASK}{text[at:]}" if colon else text


def redact(text: str) -> str:
    """``text`` with every database password in it replaced by ``***``."""
    text = _userinfo(text)
    text = _QUERY.sub(rf"\g<1>{MASK}", text)
    return _KEYWORD.sub(rf"\g<1>{MASK}", text)
