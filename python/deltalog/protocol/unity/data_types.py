"""Delta's string-or-object data type form, as the UC Delta API carries it
(``unitycatalog-delta-api-2026-08.yaml``, ``DeltaDataType``: "For primitive types, a bare JSON
string (e.g., "long", "string", "decimal(10,2)"). For complex types, a JSON object with a
"type" discriminator field ("array", "map", or "struct")").

The spec models the primitive and decimal forms as objects (``DeltaPrimitiveType``,
``DeltaDecimalType``) that never appear on the wire, so the generated models cannot parse a
real schema. :data:`DeltaDataType` is the type the generator puts in their place
(``scripts/generate_unity_models.py`` maps ``DeltaStructField.type``,
``DeltaArrayType.element-type``, ``DeltaMapType.key-type`` / ``value-type`` to it): a bare
string is a primitive (Delta protocol, "Primitive Types") or ``decimal(p,s)``, kept as the
string; an object is the generated ``DeltaArrayType``, ``DeltaMapType`` or ``DeltaStructType``
chosen by its ``type``. It serialises back to the same wire form (objects by alias).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, PlainSerializer, PlainValidator

#: The primitive types of the Delta protocol ("Primitive Types"), as schemas spell them.
PRIMITIVES = frozenset(
    {
        "string",
        "long",
        "integer",
        "short",
        "byte",
        "float",
        "double",
        "boolean",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "variant",
    }
)
#: ``decimal(precision,scale)``: precision 1 to 38, scale 0 to precision ("Primitive Types").
DECIMAL = re.compile(r"decimal\(\s*(\d{1,2})\s*,\s*(\d{1,2})\s*\)")


def _complex_models() -> dict[str, type[BaseModel]]:
    # Imported when a value is parsed, not at import: the generated module imports this one.
    from deltalog.protocol.unity import delta_api

    return {
        "array": delta_api.DeltaArrayType,
        "map": delta_api.DeltaMapType,
        "struct": delta_api.DeltaStructType,
    }


def parse_data_type(value: Any) -> Any:
    """A ``DeltaDataType`` from its JSON form: the string of a primitive or decimal type, or
    the generated model of a complex one.

    Raises:
        ValueError: neither (pydantic reports it as a validation error of the field).
    """
    if isinstance(value, BaseModel):
        if type(value) in _complex_models().values():
            return value
        raise ValueError(f"not a Delta data type: {type(value).__name__}")
    if isinstance(value, str):
        decimal = DECIMAL.fullmatch(value)
        if decimal:
            precision, scale = int(decimal.group(1)), int(decimal.group(2))
            if not 1 <= precision <= 38 or scale > precision:
                raise ValueError(f"decimal precision 1-38 and scale 0-precision: {value!r}")
            return value
        if value in PRIMITIVES:
            return value
        raise ValueError(f"not a Delta primitive type: {value!r}")
    if isinstance(value, dict):
        kind = value.get("type")
        model = _complex_models().get(kind) if isinstance(kind, str) else None
        if model is None:
            raise ValueError(
                f"a complex Delta data type has type array, map or struct, not {kind!r}"
            )
        return model.model_validate(value)
    raise ValueError(f"a Delta data type is a string or an object, not {type(value).__name__}")


def dump_data_type(value: Any) -> Any:
    """The wire form of a ``DeltaDataType`` (a string, or the model's JSON by alias)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


#: A column's type in the Delta API: a primitive's name, ``decimal(p,s)``, or a
#: ``DeltaArrayType`` / ``DeltaMapType`` / ``DeltaStructType``.
DeltaDataType = Annotated[
    Any,
    PlainValidator(parse_data_type),
    PlainSerializer(dump_data_type),
]

#: A field's metadata (``DeltaStructFieldMetadata``: "arbitrary key-value pairs, e.g.,
#: comment, delta.columnMapping.id"), kept as the JSON object it is (the spec's
#: ``_placeholder`` property is "never sent on the wire").
DeltaStructFieldMetadata = dict[str, Any]
