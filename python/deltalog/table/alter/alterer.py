"""ALTER TABLE: properties, CHECK constraints and table features (``DeltaTable.alter``).

Each change is one commit with a new ``metaData`` and, where a feature needs it, a ``protocol``
upgraded to the smallest protocol supporting the table's features plus the new ones (spec
"Protocol Evolution"; never downgraded). A metadata change conflicts with any concurrent data
change or metadata change (``CommitConflictError``), as in Delta Spark: concurrent writers did
not see the new rules.

The changes live in modules of their own, whose classes :class:`TableAlterer` inherits: the
commit of each (:mod:`deltalog.table.alter.commit`), column changes
(:mod:`deltalog.table.alter.columns`),
table properties (:mod:`deltalog.table.alter.properties`) and DROP FEATURE
(:mod:`deltalog.table.alter.drop_feature`); CHECK constraints, clustering, metadata domains and the
table's name and description are here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog.exceptions import ConstraintViolationError, InvalidArgumentError
from deltalog.protocol.actions import schema_text
from deltalog.table.alter.columns import ColumnAlterer, _widening_allowed as _widening_allowed
from deltalog.table.alter.commit import _CONSTRAINT_PREFIX
from deltalog.table.alter.drop_feature import FeatureDropper

if TYPE_CHECKING:
    from deltalog.write.writer import CommitProperties


class TableAlterer(ColumnAlterer, FeatureDropper):
    """Schema-level changes of one table; ``DeltaTable(...).alter``."""

    # -- operations ----------------------------------------------------------------------

    def set_table_name(
        self,
        name: str,
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int:
        """Sets the table's ``name`` (the ``metaData`` field)."""
        self._hooks(post_commithook_properties)
        return self._commit_metadata_fields({"name": name}, commit_properties)

    def set_table_description(
        self,
        description: str,
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int:
        """Sets the table's ``description`` (the ``metaData`` field)."""
        self._hooks(post_commithook_properties)
        return self._commit_metadata_fields({"description": description}, commit_properties)

    def _commit_metadata_fields(
        self, fields: dict[str, Any], commit_properties: CommitProperties | None
    ) -> int:
        config = self._table.metadata().configuration
        action = self._metadata_action(config, None, **fields)
        return self._commit(
            "UPDATE TABLE METADATA",
            {k: json.dumps(v) for k, v in fields.items()},
            None,
            (),
            commit_properties,
            [action],
        )

    def add_constraint(
        self,
        constraints: Mapping[str, str],
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int:
        """Adds CHECK constraints (name -> SQL boolean expression; spec "CHECK Constraints").
        Every existing row must satisfy them (false or unknown violates):
        ``ConstraintViolationError`` otherwise, and nothing is committed."""
        self._hooks(post_commithook_properties)
        if len(constraints) != 1:
            raise ValueError("add one constraint at a time (as ALTER TABLE ADD CONSTRAINT)")
        ((name, sql),) = constraints.items()
        config = dict(self._table.metadata().configuration)
        key = _CONSTRAINT_PREFIX + name.lower()
        if key in config:
            raise ValueError(f"the table already has a constraint {name!r}: {config[key]}")
        _native.parse_expression(sql)
        bad = _native.count_violations(self._table._raw, sql)
        if bad:
            raise ConstraintViolationError(
                f"CHECK constraint {name} ({sql}) violated by {bad} existing row(s)",
                constraint=f"CHECK constraint {name}",
                expression=sql,
            )
        config[key] = sql
        return self._commit(
            "ADD CONSTRAINT",
            {"name": name, "expr": sql},
            config,
            ["checkConstraints"],
            commit_properties,
        )

    def drop_constraint(
        self,
        name: str,
        raise_if_not_exists: bool = True,
        commit_properties: CommitProperties | None = None,
        *,
        post_commithook_properties: Any = None,
    ) -> int | None:
        """Drops a CHECK constraint; returns the version, or None when there was none to drop
        and ``raise_if_not_exists`` is false."""
        self._hooks(post_commithook_properties)
        config = dict(self._table.metadata().configuration)
        key = _CONSTRAINT_PREFIX + name.lower()
        if key not in config:
            if raise_if_not_exists:
                raise ValueError(f"the table has no constraint {name!r}")
            return None
        del config[key]
        return self._commit("DROP CONSTRAINT", {"name": name}, config, (), commit_properties)

    def cluster_by(
        self,
        columns: Iterable[str] | None,
        commit_properties: CommitProperties | None = None,
    ) -> int:
        """ALTER TABLE ... CLUSTER BY: makes ``columns`` (top-level, at most 4) the table's
        clustering columns, or with ``None`` / ``[]`` stops clustering (CLUSTER BY NONE).

        The columns are recorded (physical names) in the ``delta.clustering`` domain, with the
        ``clustering`` and ``domainMetadata`` features (spec "Clustered Table"); a partitioned
        table cannot be clustered. Files already written keep their layout: the next OPTIMIZE
        (``optimize.compact()``) clusters files not clustered yet, and
        ``optimize.compact(full=True)`` reclusters every file by the new columns.
        """
        names = list(columns or [])
        table = self._table
        meta = table._raw.metadata()
        if meta["partition_columns"]:
            raise InvalidArgumentError(
                'a partitioned table cannot be clustered (spec "Clustered Table": a clustered '
                f"table has no partition columns; this one has {list(meta['partition_columns'])})"
            )
        if len(names) > 4:
            raise InvalidArgumentError(
                f"at most 4 clustering columns (as Delta Spark), not {len(names)}"
            )
        fields = json.loads(schema_text(meta)).get("fields", [])
        physical: list[str] = []
        resolved: list[str] = []
        for name in names:
            field = next((f for f in fields if f["name"] == name), None) or next(
                (f for f in fields if f["name"].lower() == str(name).lower()), None
            )
            if field is None:
                raise InvalidArgumentError(
                    f"clustering column {name!r} is not a top-level column of the table"
                )
            if isinstance(field["type"], dict):
                raise InvalidArgumentError(
                    f"clustering column {name!r} is a {field['type'].get('type')}: clustering "
                    "needs a column with min/max statistics"
                )
            if field["name"] in resolved:
                raise InvalidArgumentError(f"clustering column {name!r} is named twice")
            resolved.append(field["name"])
            physical.append(
                (field.get("metadata") or {}).get("delta.columnMapping.physicalName", field["name"])
            )
        old = table._clustering_columns()
        action = {
            "domainMetadata": {
                "domain": "delta.clustering",
                # Each column as its list of name parts, as Delta Spark reads it (see the core's
                # layout/clustering.rs: "Writer Requirements for Clustered Table").
                "configuration": json.dumps({"clusteringColumns": [[p] for p in physical]}),
                "removed": False,
            }
        }
        return self._commit(
            "CLUSTER BY",
            {
                "oldClusteringColumns": ",".join(old),
                "newClusteringColumns": ",".join(resolved),
            },
            None,
            ["clustering", "domainMetadata"],
            commit_properties,
            [action],
        )

    def set_domain_metadata(
        self,
        domain: str,
        configuration: str,
        commit_properties: CommitProperties | None = None,
    ) -> int:
        """Sets the configuration (any string, often JSON) of a user metadata domain (spec
        "Domain Metadata"); adds the ``domainMetadata`` feature when the table lacks it.
        Domains starting with ``delta.`` belong to Delta itself and are refused. A concurrent
        commit changing the same domain conflicts."""
        self._check_domain(domain)
        action = {
            "domainMetadata": {"domain": domain, "configuration": configuration, "removed": False}
        }
        return self._commit(
            "SET DOMAIN METADATA",
            {"domain": domain},
            None,
            ["domainMetadata"],
            commit_properties,
            [action],
        )

    def remove_domain_metadata(
        self, domain: str, commit_properties: CommitProperties | None = None
    ) -> int:
        """Removes a user metadata domain (a tombstone, spec "Domain Metadata")."""
        self._check_domain(domain)
        current = self._table.domain_metadata()
        if domain not in current:
            raise ValueError(f"the table has no metadata domain {domain!r}")
        action = {
            "domainMetadata": {"domain": domain, "configuration": current[domain], "removed": True}
        }
        return self._commit(
            "REMOVE DOMAIN METADATA", {"domain": domain}, None, (), commit_properties, [action]
        )

    @staticmethod
    def _check_domain(domain: str) -> None:
        if not domain or domain.lower().startswith("delta."):
            raise ValueError(
                f"{domain!r} is not a user domain: domains starting with 'delta.' are Delta's "
                'own (spec "Domain Metadata")'
            )
