"""A table's columns written on a command line, as Spark's and Delta's DDL write them:
``"id BIGINT NOT NULL, name STRING, price DECIMAL(10,2), tags ARRAY<STRING>,
attrs MAP<STRING, INT>, addr STRUCT<city: STRING, zip: STRING>"``, parsed into a
``pyarrow.Schema`` (the Delta protocol's "Primitive Types" and nested types, by their Delta
names and Spark's SQL aliases). Errors name the position they were found at.
"""

from __future__ import annotations

import re

import pyarrow as pa

from deltalog.exceptions import InvalidArgumentError

_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "bigint": pa.int64(),
    "integer": pa.int32(),
    "int": pa.int32(),
    "short": pa.int16(),
    "smallint": pa.int16(),
    "byte": pa.int8(),
    "tinyint": pa.int8(),
    "float": pa.float32(),
    "real": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "bool": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)+`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|(.))")

#: Deepest nesting accepted (a command line's schema, not a fuzzer's).
_MAX_DEPTH = 32


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[int, str, str]] = []  # (position, kind, text)
        for m in _TOKEN.finditer(text):
            if m.group(1):
                self.tokens.append((m.start(1), "name", m.group(1)[1:-1].replace("``", "`")))
            elif m.group(2):
                self.tokens.append((m.start(2), "word", m.group(2)))
            elif m.group(3):
                self.tokens.append((m.start(3), "number", m.group(3)))
            elif m.group(4) and not m.group(4).isspace():
                self.tokens.append((m.start(4), "punct", m.group(4)))
        self.i = 0

    def fail(self, what: str) -> InvalidArgumentError:
        at = self.tokens[self.i][0] if self.i < len(self.tokens) else len(self.text)
        return InvalidArgumentError(f"schema {self.text!r}: {what} at position {at}")

    def peek(self) -> tuple[str, str] | None:
        if self.i >= len(self.tokens):
            return None
        _, kind, text = self.tokens[self.i]
        return kind, text

    def take(self, punct: str | None = None) -> tuple[str, str]:
        got = self.peek()
        if got is None:
            raise self.fail("unexpected end" + (f" (expected {punct!r})" if punct else ""))
        if punct is not None and got != ("punct", punct):
            raise self.fail(f"expected {punct!r}, found {got[1]!r}")
        self.i += 1
        return got

    def word(self, word: str) -> bool:
        got = self.peek()
        if got is not None and got[0] == "word" and got[1].lower() == word:
            self.i += 1
            return True
        return False

    def name(self) -> str:
        kind, text = self.take()
        if kind not in ("name", "word"):
            raise self.fail(f"expected a column name, found {text!r}")
        return text

    def field(self, depth: int, colon: bool) -> pa.Field:
        name = self.name()
        if colon:
            self.take(":")
        t = self.type(depth)
        nullable = True
        if self.word("not"):
            if not self.word("null"):
                raise self.fail("expected NULL after NOT")
            nullable = False
        if self.word("comment"):
            _, text = self.take()
            raise self.fail(f"COMMENT is not supported here ({text!r}); set it with alter")
        return pa.field(name, t, nullable=nullable)

    def type(self, depth: int) -> pa.DataType:
        if depth > _MAX_DEPTH:
            raise self.fail(f"types nested deeper than {_MAX_DEPTH}")
        kind, text = self.take()
        lower = text.lower()
        if kind != "word":
            raise self.fail(f"expected a type, found {text!r}")
        if lower in _PRIMITIVES:
            return _PRIMITIVES[lower]
        if lower in ("decimal", "dec", "numeric"):
            precision, scale = 10, 0
            if self.peek() == ("punct", "("):
                self.take("(")
                precision = self.number()
                if self.peek() == ("punct", ","):
                    self.take(",")
                    scale = self.number()
                self.take(")")
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise self.fail(f"decimal({precision},{scale}) is outside 1 <= s <= p <= 38")
            return pa.decimal128(precision, scale)
        if lower == "array":
            self.take("<")
            element = self.type(depth + 1)
            self.take(">")
            return pa.list_(element)
        if lower == "map":
            self.take("<")
            key = self.type(depth + 1)
            self.take(",")
            value = self.type(depth + 1)
            self.take(">")
            return pa.map_(key, value)
        if lower == "struct":
            self.take("<")
            fields = [self.field(depth + 1, colon=True)]
            while self.peek() == ("punct", ","):
                self.take(",")
                fields.append(self.field(depth + 1, colon=True))
            self.take(">")
            return pa.struct(fields)
        raise self.fail(f"unknown type {text!r}")

    def number(self) -> int:
        kind, text = self.take()
        if kind != "number" or len(text) > 3:
            raise self.fail(f"expected a small number, found {text!r}")
        return int(text)


def parse_schema(text: str) -> pa.Schema:
    """The ``pyarrow.Schema`` of ``"name TYPE [NOT NULL], ..."``.

    Raises:
        InvalidArgumentError: the text is not such a list (the message names the position),
            or names a column twice.
    """
    parser = _Parser(text)
    if parser.peek() is None:
        raise InvalidArgumentError("the schema names no column")
    fields = [parser.field(0, colon=False)]
    while parser.peek() == ("punct", ","):
        parser.take(",")
        fields.append(parser.field(0, colon=False))
    if parser.peek() is not None:
        raise parser.fail(f"unexpected {parser.peek()[1]!r}")  # type: ignore[index]
    seen: set[str] = set()
    for f in fields:
        if f.name.lower() in seen:
            raise InvalidArgumentError(f"schema {text!r}: column {f.name!r} is named twice")
        seen.add(f.name.lower())
    return pa.schema(fields)
