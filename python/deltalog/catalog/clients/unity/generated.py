"""The generated ``unitycatalog-client`` (PyPI, 0.7.0+) made whole: its UC API client
(``unitycatalog.client``) works as shipped, but its Delta API package (``unitycatalog.delta``)
ships without the modules its generated APIs import (``unitycatalog.delta.api_client``,
``api_response``, ``rest``) and without ``models/__init__``, so that the module teaching its
models Delta's string-or-object type form (``unitycatalog.delta.internal.serde``) is never
imported. Importing this module supplies them once, from the UC API client's own generated
modules (the same generator, the same runtime), with an ``ApiClient`` that deserialises the
Delta API's response models (``Delta…``) from ``unitycatalog.delta.models``. Two generated
``from_dict`` methods are mended too: the ``allOf`` subtypes (each requirement and update,
e.g. ``DeltaAssertTableUUID``) keep only their ``type`` / ``action`` field, and the complex
data types (``DeltaStructType`` …) do not parse their fields; both now validate the whole
object (types through the package's own serde). Nothing is hand-written HTTP: requests and
responses stay the generated APIs' and models'.

Raises ``ImportError`` when ``unitycatalog-client`` is not installed (``pip install
'deltalog[unity]'``).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import types
from typing import Any

import unitycatalog.client.api_client as _client_api_client
import unitycatalog.client.api_response as _client_api_response
import unitycatalog.client.rest as _client_rest
import unitycatalog.delta.internal.serde.delta_data_type_module  # noqa: F401  (type serde)


def model_class(package: str, name: str) -> type[Any]:
    """The generated model class ``name`` of ``unitycatalog.<package>`` (``delta.models`` or
    ``client.models``; a module per class, named in snake case)."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().replace("u_u_i_d", "uuid")
    cls: type[Any] = getattr(importlib.import_module(f"unitycatalog.{package}.{snake}"), name)
    return cls


def delta_model(name: str) -> type[Any]:
    """The generated Delta API model class ``name`` (e.g. ``DeltaLoadTableResponse``)."""
    return model_class("delta.models", name)


class DeltaApiClient(_client_api_client.ApiClient):
    """The UC API's generated ``ApiClient``, deserialising the Delta API's models too."""

    def deserialize(self, response_text: str, response_type: str, content_type: str | None) -> Any:
        if isinstance(response_type, str) and response_type.startswith("Delta"):
            data = json.loads(response_text) if response_text else None
            return None if data is None else delta_model(response_type).from_dict(data)
        return super().deserialize(response_text, response_type, content_type)


def _mend_models() -> None:
    import pkgutil

    import unitycatalog.delta.models as models
    from unitycatalog.delta.internal.serde import delta_data_type_module as serde

    parse_type = serde._parse_type
    for cls in (
        serde.DeltaStructType,
        serde.DeltaArrayType,
        serde.DeltaMapType,
        serde.DeltaDecimalType,
        serde.DeltaPrimitiveType,
    ):
        cls.from_dict = classmethod(lambda _cls, obj: parse_type(obj))
    requirement = delta_model("DeltaTableRequirement")
    update = delta_model("DeltaTableUpdate")

    def whole(cls: type[Any], obj: Any) -> Any:
        if obj is None:
            return None
        if isinstance(obj, dict) and isinstance(obj.get("columns"), dict):
            columns = parse_type(obj["columns"])
            found = cls.model_validate({**obj, "columns": columns})
            return found
        return cls.model_validate(obj)

    for info in pkgutil.iter_modules(models.__path__):
        module = importlib.import_module(f"unitycatalog.delta.models.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and value not in (requirement, update)
                and issubclass(value, (requirement, update))
            ):
                value.from_dict = classmethod(whole)  # type: ignore[attr-defined]


def _install() -> None:
    if "unitycatalog.delta.api_client" in sys.modules:
        return
    _mend_models()
    api_client = types.ModuleType("unitycatalog.delta.api_client")
    api_client.ApiClient = DeltaApiClient  # type: ignore[attr-defined]
    api_client.RequestSerialized = _client_api_client.RequestSerialized  # type: ignore[attr-defined]
    sys.modules["unitycatalog.delta.api_client"] = api_client
    sys.modules.setdefault("unitycatalog.delta.api_response", _client_api_response)
    sys.modules.setdefault("unitycatalog.delta.rest", _client_rest)


_install()

# The Delta API's generated APIs, importable only now (after _install).
from unitycatalog.delta.api.delta_configuration_api import (  # noqa: E402
    DeltaConfigurationApi,
)
from unitycatalog.delta.api.delta_tables_api import DeltaTablesApi  # noqa: E402
from unitycatalog.delta.api.delta_temporary_credentials_api import (  # noqa: E402
    DeltaTemporaryCredentialsApi,
)

__all__ = [
    "DeltaApiClient",
    "DeltaConfigurationApi",
    "DeltaTablesApi",
    "DeltaTemporaryCredentialsApi",
    "delta_model",
]
