"""The names every deltalog catalog accepts, and where a table may live.

Lance catalog specification (``003_…``), "Name and Identifier": an object's name is unique in
its parent, and an identifier joins the names from the root by a delimiter. deltalog's catalogs
also make names into directories (``<warehouse>/<namespace>/…/<table>``), so a name must be a
single, ordinary directory name: one rule here, applied by every catalog (directory, SQLite,
PostgreSQL, the REST client and the REST server), so that they accept the same names.

A name is refused when it

* is empty, or ``.`` or ``..`` (they name the parent or the directory itself: a table called
  ``..`` would live at the warehouse root, and dropping it would delete the warehouse);
* contains ``/`` or ``\\`` (a name would nest one table inside another's directory);
* contains NUL or another control character (C0, DEL, C1), or is not valid Unicode;
* contains the identifier delimiter (the catalog's own, ``.`` by default, or ``$``, the
  delimiter of the Lance Namespace REST protocol): two identifiers would be one string;
* is longer than :data:`MAX_NAME_BYTES` bytes of UTF-8 (a file name's limit on most systems).

Locations: a table's location is stored in one canonical form (:func:`canonical_location`),
never inside, equal to or above another table's (:func:`overlaps`), and a catalog deletes only
a location it has checked that way.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from deltalog.exceptions import InvalidArgumentError

#: The longest name, in UTF-8 bytes.
MAX_NAME_BYTES = 255

#: The identifier delimiter of the Lance Namespace REST protocol: no name may contain it, so
#: that every name of every catalog can be served over REST.
WIRE_DELIMITER = "$"

_RULE = 'Lance catalog specification, "Name and Identifier"'


class InvalidNameError(InvalidArgumentError):
    """A name no deltalog catalog accepts.

    Attributes:
        name: the name.
        rule: which rule it breaks.
    """

    def __init__(self, name: str, rule: str) -> None:
        super().__init__(f"invalid name {name!r}: {rule} ({_RULE})")
        self.name = name
        self.rule = rule


def _control(c: str) -> bool:
    code = ord(c)
    return code < 0x20 or 0x7F <= code <= 0x9F


def check_name(name: object, delimiter: str = ".") -> str:
    """``name`` when every deltalog catalog accepts it (see the module docs).

    Raises:
        InvalidNameError: a broken rule, named in the message and in ``rule``.
        TypeError: not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"a name is a string, not {type(name).__name__}")
    if not name:
        raise InvalidNameError(name, "a name cannot be empty")
    if name in (".", ".."):
        raise InvalidNameError(name, "'.' and '..' are not names (they are directory references)")
    if "/" in name or "\\" in name:
        raise InvalidNameError(
            name, "a name cannot contain '/' or '\\' (a name is one directory of the warehouse)"
        )
    if any(_control(c) for c in name):
        raise InvalidNameError(name, "a name cannot contain NUL or other control characters")
    for d in dict.fromkeys((delimiter, WIRE_DELIMITER)):
        if d and d in name:
            raise InvalidNameError(name, f"a name cannot contain the identifier delimiter {d!r}")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidNameError(name, "a name must be valid Unicode (no lone surrogates)") from None
    if size > MAX_NAME_BYTES:
        raise InvalidNameError(name, f"a name is at most {MAX_NAME_BYTES} bytes of UTF-8")
    return name


def canonical_location(location: str) -> str:
    """A table location in the one form the catalog stores and compares: a local path absolute
    (``file://`` URIs become paths), a URI with its scheme lower-cased; no trailing ``/``, no
    empty or ``.`` segments.

    Raises:
        InvalidArgumentError: empty, a ``..`` segment (the location would not say which
            directory it is: "one directory under two names"), or a control character.
    """
    if not isinstance(location, str) or not location.strip():
        raise InvalidArgumentError("a table location cannot be empty")
    if any(_control(c) for c in location):
        raise InvalidArgumentError(
            f"a table location cannot contain control characters: {location!r}"
        )
    if location.startswith("file:"):
        parts = urlsplit(location)
        if parts.netloc not in ("", "localhost"):
            raise InvalidArgumentError(f"not a local file URI: {location!r}")
        location = unquote(parts.path)
    if "://" in location:
        scheme, rest = location.split("://", 1)
        authority, _, path = rest.partition("/")
        if not authority:
            raise InvalidArgumentError(f"a table location URI needs an authority: {location!r}")
        segments = _segments(path, location)
        return f"{scheme.lower()}://{authority}" + "".join("/" + s for s in segments)
    absolute = location if os.path.isabs(location) else os.path.join(os.getcwd(), location)
    segments = _segments(absolute, location)
    return "/" + "/".join(segments)


def _segments(path: str, location: str) -> list[str]:
    segments = [s for s in path.split("/") if s not in ("", ".")]
    if ".." in segments:
        raise InvalidArgumentError(
            f"a table location cannot contain '..' segments: {location!r} (give the directory "
            "itself, so that the catalog can tell one table's directory from another's)"
        )
    return segments


def contains(outer: str, inner: str) -> bool:
    """Whether canonical location ``inner`` is ``outer`` or lies inside it."""
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def overlaps(a: str, b: str) -> bool:
    """Whether two canonical locations are one directory or one lies inside the other."""
    return contains(a, b) or contains(b, a)


def ancestors(location: str) -> list[str]:
    """The canonical locations strictly above canonical ``location`` (nearest first)."""
    if "://" in location:
        scheme, rest = location.split("://", 1)
        authority, _, path = rest.partition("/")
        root = f"{scheme}://{authority}"
    else:
        root, path = "", location.lstrip("/")
    segments = [s for s in path.split("/") if s]
    found = [root + "".join("/" + s for s in segments[:i]) for i in range(len(segments) - 1, 0, -1)]
    found.append(root if root else "/")
    return found


__all__ = [
    "MAX_NAME_BYTES",
    "WIRE_DELIMITER",
    "InvalidNameError",
    "ancestors",
    "canonical_location",
    "check_name",
    "contains",
    "overlaps",
]
