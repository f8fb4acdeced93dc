"""deltalog's Unity Catalog wire models (``deltalog.protocol.unity``): the committed generated
modules are exactly what ``scripts/generate_unity_models.py`` makes from the specs (edited by
hand, or a spec changed: this fails), and Delta's string-or-object data types
(``unitycatalog-delta-api-2026-08.yaml``, ``DeltaDataType``) parse and serialise in their wire
form."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest

from deltalog.protocol.unity import catalog_api, delta_api

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "python" / "deltalog" / "protocol" / "unity"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "generate_unity_models", REPO / "scripts" / "generate_unity_models.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_models_are_the_generated_ones(tmp_path: Path) -> None:
    script = _script()
    assert script.SPEC.is_dir(), f"the specs are not at {script.SPEC} (set DELTALOG_SHARED)"
    written = script.generate(tmp_path)
    assert sorted(p.name for p in written) == ["catalog_api.py", "delta_api.py"]
    for fresh in written:
        committed = PACKAGE / fresh.name
        assert committed.read_text() == fresh.read_text(), (
            f"{committed} differs from what scripts/generate_unity_models.py generates now: "
            "regenerate it (never edit it by hand)"
        )


def test_generated_modules_import_in_a_fresh_interpreter() -> None:
    import subprocess

    code = "import deltalog.protocol.unity.delta_api, deltalog.protocol.unity.catalog_api"
    subprocess.run([sys.executable, "-c", code], check=True)


def _field(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": True, "metadata": {}}


SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        _field("id", "long"),
        _field("amount", "decimal(10,2)"),
        {"name": "c", "type": "string", "nullable": False, "metadata": {"comment": "x", "n": 1}},
        _field("tags", {"type": "array", "element-type": "string", "contains-null": True}),
        _field(
            "m",
            {
                "type": "map",
                "key-type": "string",
                "value-type": {"type": "struct", "fields": [_field("x", "timestamp_ntz")]},
                "value-contains-null": False,
            },
        ),
        _field("nested", {"type": "struct", "fields": [_field("d", "decimal(38,0)")]}),
    ],
}


def test_data_types_parse_and_round_trip() -> None:
    parsed = delta_api.DeltaStructType.model_validate(SCHEMA)
    assert parsed.fields[0].type == "long"
    assert parsed.fields[1].type == "decimal(10,2)"
    assert parsed.fields[2].metadata == {"comment": "x", "n": 1}
    assert isinstance(parsed.fields[3].type, delta_api.DeltaArrayType)
    assert parsed.fields[3].type.element_type == "string"
    m = parsed.fields[4].type
    assert isinstance(m, delta_api.DeltaMapType)
    assert isinstance(m.value_type, delta_api.DeltaStructType)
    assert m.value_type.fields[0].type == "timestamp_ntz"
    assert parsed.model_dump(mode="json", by_alias=True, exclude_none=True) == SCHEMA


def test_a_create_table_request_with_every_type_form() -> None:
    request = delta_api.DeltaCreateTableRequest.model_validate(
        {
            "name": "t",
            "location": "file:///w/t",
            "table-type": "MANAGED",
            "columns": SCHEMA,
            "protocol": {"min-reader-version": 3, "min-writer-version": 7},
            "properties": {},
            "last-commit-timestamp-ms": 1,
        }
    )
    assert request.table_type == delta_api.DeltaTableType.managed == "MANAGED"
    dumped = request.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped["columns"] == SCHEMA and "comment" not in dumped


@pytest.mark.parametrize(
    "bad",
    [
        "lng",
        "decimal(10)",
        "decimal(39,2)",
        "decimal(5,6)",
        {"type": "list", "element-type": "long"},
        {"type": "array", "element-type": "nope", "contains-null": True},
        {"type": "array", "contains-null": True},
        {"type": "struct"},
        7,
        None,
    ],
)
def test_bad_data_types_are_refused(bad: Any) -> None:
    with pytest.raises(pydantic.ValidationError) as e:
        delta_api.DeltaStructField.model_validate(_field("a", bad))
    assert "type" in str(e.value)


def test_strict_scalars_and_aliases() -> None:
    commit = {
        "version": 1,
        "timestamp": 2,
        "file-name": "00000000000000000001.a.json",
        "file-size": 3,
        "file-modification-timestamp": 4,
    }
    assert delta_api.DeltaCommit.model_validate(commit).file_name == commit["file-name"]
    with pytest.raises(pydantic.ValidationError):
        delta_api.DeltaCommit.model_validate({**commit, "version": "1"})
    info = catalog_api.CatalogInfo.model_validate({"name": "main", "properties": {"a": "b"}})
    assert info.properties is not None and info.properties.root == {"a": "b"}
    assert catalog_api.ColumnInfo().nullable is True  # the spec's default, as a boolean
