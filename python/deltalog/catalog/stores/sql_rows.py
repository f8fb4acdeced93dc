"""How the SQL stores' rows become records and values (one module for both engines): a
``tables`` row as a :class:`TableRecord`, properties as JSON, a commit's Unity Catalog table
id, the principal recorded, and the check that a transaction names each table once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.catalog.stores.records import Proposal, TableRecord, default_principal
from deltalog.exceptions import CatalogError, InvalidArgumentError


def table_record(rows: list[Any]) -> TableRecord | None:
    """The record of a ``tables`` row (its columns as ``_COLUMNS`` in sql.py lists them), or
    None for no row."""
    if not rows:
        return None
    # The row's columns are TableRecord's fields, in order (_COLUMNS in sql.py).
    values = list(rows[0])
    values[4] = bool(values[4])  # managed
    values[8] = properties_of(values[8])  # the catalog properties' JSON
    return TableRecord(*values)


UC_TABLE_ID = "io.unitycatalog.tableId"


def table_uuid_of(metadata: str | None, version: int) -> str | None:
    """The ``io.unitycatalog.tableId`` of a commit's ``metaData`` (JSON), lower-case, if it
    has one.

    Raises:
        InvalidArgumentError: the property is not a UUID.
    """
    import json
    import uuid

    if not metadata:
        return None
    try:
        configuration = json.loads(metadata).get("configuration") or {}
    except (ValueError, AttributeError):
        return None
    value = configuration.get(UC_TABLE_ID)
    if value is None:
        return None
    try:
        return str(uuid.UUID(str(value)))
    except ValueError as e:
        raise InvalidArgumentError(
            f"proposed commit {version}: {UC_TABLE_ID} is not a UUID: {value!r}"
        ) from e


def who(principal: str | None) -> str | None:
    """The principal a store records: the caller's, else :func:`default_principal`."""
    return principal if principal is not None else default_principal()


def new_uuid() -> str:
    import uuid

    return str(uuid.uuid4())


def properties_json(properties: Mapping[str, str] | None) -> str | None:
    import json

    return json.dumps(dict(properties), sort_keys=True) if properties else None


def properties_of(text: str | None) -> dict[str, str]:
    import json

    return dict(json.loads(text)) if text else {}


def check_distinct(proposals: Sequence[Proposal]) -> None:
    """At most one proposal a table (an existing one by id, a new one by name)."""
    keys = Counter(
        ("id", p.table_id) if p.table_id is not None else ("new", p.create and p.create[:2])
        for p in proposals
    )
    twice = [key for key, n in keys.items() if n > 1]
    if twice:
        kind, which = twice[0]
        raise CatalogError(
            f"two proposals name the same table ({'id' if kind == 'id' else 'new table'} "
            f"{which!r}); a table takes one version per transaction"
        )
