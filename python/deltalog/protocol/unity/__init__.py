"""The Unity Catalog wire formats (``../shared/spec/unitycatalog-*-2026-08.yaml``) as pydantic
v2 models: what deltalog's UC client (:mod:`deltalog.catalog.clients.unity`) sends and reads,
and what the server's UC routes (:mod:`deltalog.server.unity`) validate and answer.

- :mod:`.catalog_api`: the UC API (catalogs, schemas, tables, temporary credentials, …),
  generated from ``unitycatalog-api-2026-08.yaml``;
- :mod:`.delta_api`: the UC Delta API v1 (config, staging tables, load / update / create /
  rename tables, credentials, metrics, ``DeltaErrorResponse``), generated from
  ``unitycatalog-delta-api-2026-08.yaml``;
- :mod:`.data_types`: hand-written: Delta's string-or-object data types (``DeltaDataType``)
  and field metadata, which the generated Delta API models use.

The two generated modules are written by ``scripts/generate_unity_models.py`` (pinned
``datamodel-code-generator`` options) and never edited by hand: ``tests/test_unity_models.py``
regenerates them and fails when they differ. Field names are snake case, the wire names their
aliases: send ``model.model_dump(mode="json", by_alias=True, exclude_none=True)``, build from
wire JSON with ``Model.model_validate(document)``.
"""
