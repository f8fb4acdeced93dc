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
* is longer than :data:`MAX_NAME_BYTES` bytes of UTF-8 (a file name's limit on most systems);
* begins or ends with whitespace, or holds a space other than U+0020, an invisible or format
  character (Unicode category ``Cf`` such as U+200B ZERO WIDTH SPACE, U+200D, U+FEFF, bidi
  controls; the other default-ignorable code points such as variation selectors and Hangul
  fillers), a line or paragraph separator, a private-use or unassigned code point: two names
  that print the same would name two objects;
* mixes scripts (UTS #39, "Mixed-Script Detection", its "Highly Restrictive" level): a name's
  letters are of one script (digits, ``_``, ``-`` and other common characters go with any),
  except Latin with Han and Japanese kana, Han with Bopomofo, or Han with Hangul. ``mаin``
  with U+0430 CYRILLIC SMALL LETTER A is refused.

A name is stored in Unicode normalization form C (:func:`check_name` returns it so), and two
names are one name when they are equal ignoring case and compatibility forms
(:func:`fold_name`: NFKC, then case folding, as Unity Catalog compares names without case):
``Main`` and ``main`` are one table; the catalogs keep the spelling a name was created with.
A new name is also refused when it is *confusable* with a name its parent holds
(:func:`name_key`, a UTS #39-style skeleton: the folded name with the Cyrillic and Greek
letters that look like Latin ones mapped to those): ``сар`` in Cyrillic next to Latin ``cap``.

Locations: a table's location is stored in one canonical form (:func:`canonical_location`):
a local path is its *real* path, every symbolic link resolved, so that a link cannot make one
directory two locations or put a table outside its warehouse; a location is never inside,
equal to or above another table's (:func:`overlaps`), and a catalog deletes only a location it
has checked that way.
"""

from __future__ import annotations

import os
import unicodedata
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
    return check_characters(name)


#: The default-ignorable code points outside category ``Cf`` (Unicode's
#: ``Default_Ignorable_Code_Point``): they print as nothing.
_IGNORABLE = frozenset(
    [
        *(0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, 0x2800),
        *range(0x180B, 0x1810),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    ]
)

#: Scripts a name may mix (UTS #39, "Highly Restrictive"): Latin + Han + Hiragana + Katakana,
#: Latin + Han + Bopomofo, Latin + Han + Hangul (any subset of one of them).
_ALLOWED_MIXES = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)

#: First words of character names that are no script (the letters are Common).
_COMMON_WORDS = frozenset({"MODIFIER", "KATAKANA-HIRAGANA", "FEMININE", "MASCULINE"})


def _script(c: str) -> str | None:
    """The script of a letter, from its Unicode name (``LATIN SMALL LETTER A``: Latin); ``None``
    for what is not a letter of a script (digits, marks, punctuation, symbols)."""
    if not unicodedata.category(c).startswith("L"):
        return None
    word = unicodedata.name(c, "").split(" ", 1)[0]
    if not word or word in _COMMON_WORDS:
        return None
    return "HAN" if word == "CJK" else word


def _describe(c: str) -> str:
    return f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"


def check_characters(name: str) -> str:
    """``name`` in normalization form C when its characters are allowed (see the module docs:
    no surrounding whitespace, no space but U+0020, no invisible, format, separator,
    private-use or unassigned character, letters of one script).

    Raises:
        InvalidNameError: the rule broken, naming the character.
    """
    name = unicodedata.normalize("NFC", name)
    if name != name.strip():
        raise InvalidNameError(name, "a name cannot begin or end with whitespace")
    for c in name:
        category = unicodedata.category(c)
        if category == "Cf" or ord(c) in _IGNORABLE:
            raise InvalidNameError(
                name,
                f"a name cannot contain invisible or format characters ({_describe(c)}, "
                'Unicode category Cf / Default_Ignorable_Code_Point; UTS #39 "Identifier '
                'Characters")',
            )
        if category in ("Zs", "Zl", "Zp") and c != " ":
            raise InvalidNameError(
                name, f"a name's only space character is U+0020 SPACE, not {_describe(c)}"
            )
        if category in ("Co", "Cn", "Cs"):
            raise InvalidNameError(
                name,
                f"a name cannot contain private-use or unassigned code points ({_describe(c)})",
            )
    scripts: dict[str, str] = {}
    for c in unicodedata.normalize("NFKC", name):
        script = _script(c)
        if script is not None:
            scripts.setdefault(script, c)
    if len(scripts) > 1 and not any(set(scripts) <= allowed for allowed in _ALLOWED_MIXES):
        found = ", ".join(f"{s.title()} ({_describe(c)})" for s, c in sorted(scripts.items()))
        raise InvalidNameError(
            name,
            f"a name's letters are of one script, but this one mixes {found} (UTS #39, "
            '"Mixed-Script Detection": look-alike letters of another script)',
        )
    return name


def fold_name(name: str) -> str:
    """What makes two names one name: NFKC, case folded (``Main``, ``MAIN``, ``ｍａｉｎ`` and
    ``main`` are one name, as Unity Catalog compares names without case)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


#: Cyrillic and Greek letters (case folded) that look like Latin ones, in lower or upper case
#: (UTS #39 ``confusables.txt``, whole-script confusables with Latin; a name mixing them with
#: Latin letters is refused already).
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "ь": "b", "с": "c", "ԁ": "d", "е": "e", "ё": "ë", "һ": "h",
        "н": "h", "і": "i", "ї": "ï", "ј": "j", "к": "k", "ӏ": "l", "м": "m", "о": "o",
        "р": "p", "ԛ": "q", "ѕ": "s", "т": "t", "у": "y", "ү": "y", "ԝ": "w", "х": "x",
        "з": "3",
        # Greek
        "α": "a", "β": "b", "ϲ": "c", "ε": "e", "η": "n", "ι": "i", "ϳ": "j", "κ": "k",
        "μ": "m", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y",
        "ζ": "z", "ω": "w",
    }
)  # fmt: skip


def name_key(name: str) -> str:
    """A name's skeleton: :func:`fold_name` with the Cyrillic and Greek look-alikes of Latin
    letters mapped to them. Two names of one parent never share a key: the same name in
    another case or form is that name, and a look-alike of it is refused."""
    return fold_name(name).translate(_CONFUSABLES)


def same_name(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one name (:func:`fold_name`)."""
    return fold_name(a) == fold_name(b)


class ConfusableNameError(InvalidNameError):
    """A new name that looks like a name its parent already holds (UTS #39, "Confusable
    Detection")."""

    def __init__(self, name: str, existing: str) -> None:
        super().__init__(
            name,
            f"it is confusable with {existing!r}, which already exists here (UTS #39, "
            '"Confusable Detection": names that look alike name one object)',
        )
        self.existing = existing


def canonical_location(location: str, resolve: bool = True) -> str:
    """A table location in the one form the catalog stores and compares: a local path absolute
    (``file://`` URIs become paths) and, with ``resolve``, its real path (every symbolic link
    of the part that exists resolved, ``os.path.realpath``: containment is decided on the
    directories themselves, not on their names); a URI with its scheme lower-cased; no trailing
    ``/``, no empty or ``.`` segments.

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
    lexical = "/" + "/".join(_segments(absolute, location))
    if not resolve:
        return lexical
    return "/" + "/".join(s for s in os.path.realpath(lexical).split("/") if s)


def unlinked_location(location: str, what: str) -> str:
    """The canonical ``location`` of ``what`` (a table the catalog puts in its warehouse, a
    table's recorded location), refused when a symbolic link lies on its way: the directory
    would be another one than its name says.

    Raises:
        InvalidArgumentError: a link on the way (its real path named), or as
            :func:`canonical_location`.
    """
    lexical = canonical_location(location, resolve=False)
    real = canonical_location(lexical)
    if real != lexical:
        raise InvalidArgumentError(
            f"{what} at {lexical} resolves through a symbolic link to {real}: a table's "
            "directory is a directory of its own, never a link (one directory would be two "
            "locations)"
        )
    return real


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
    "ConfusableNameError",
    "InvalidNameError",
    "ancestors",
    "canonical_location",
    "check_characters",
    "check_name",
    "contains",
    "fold_name",
    "name_key",
    "overlaps",
    "same_name",
    "unlinked_location",
]
