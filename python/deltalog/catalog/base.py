"""The catalog API every deltalog catalog implements (Lance catalog specification, ``003_…``:
"Concepts", "Name and Identifier"), and identifiers.

A catalog holds tables, and in catalogs that have them, namespaces nested to any depth. Every
object's *name* is unique in its parent; its *identifier* is the list of names from under the
root down to it, or that list joined by a delimiter (``.`` by default).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.catalog.names import check_name
from deltalog.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import WriteMode

Identifier = str | Sequence[str]


@dataclasses.dataclass(frozen=True)
class PropertiesUpdateSummary:
    """What :meth:`Catalog.update_namespace_properties` did (pyiceberg's shape): the keys it
    removed, the keys it set, and the keys asked to be removed that were not there."""

    removed: list[str]
    updated: list[str]
    missing: list[str]


def plan_properties_update(
    current: Mapping[str, str],
    removals: Iterable[str] | None,
    updates: Mapping[str, str] | None,
) -> tuple[dict[str, str], PropertiesUpdateSummary]:
    """The properties after removing ``removals`` and setting ``updates``, and the summary;
    a key both removed and set is refused (pyiceberg refuses it too)."""
    removals = sorted(set(removals or ()))
    updates = dict(updates or {})
    both = sorted(set(removals) & set(updates))
    if both:
        raise InvalidArgumentError(f"properties both removed and updated: {both}")
    for key, value in updates.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise InvalidArgumentError(
                f"a namespace property is a non-empty string key with a string value: "
                f"{key!r}={value!r}"
            )
    result = {k: v for k, v in current.items() if k not in removals}
    result.update(updates)
    summary = PropertiesUpdateSummary(
        removed=[k for k in removals if k in current],
        updated=sorted(updates),
        missing=[k for k in removals if k not in current],
    )
    return result, summary


def parse_identifier(identifier: Identifier, delimiter: str = ".") -> list[str]:
    """The names of an identifier given as a list or as a string joined by ``delimiter``.

    Raises:
        InvalidArgumentError: an empty identifier or name.
        TypeError: neither a string nor a sequence of strings.
    """
    if isinstance(identifier, str):
        names = identifier.split(delimiter) if identifier else []
    elif isinstance(identifier, Sequence) and all(isinstance(n, str) for n in identifier):
        names = list(identifier)
    else:
        raise TypeError(
            f"an identifier is a string or a list of strings, not {type(identifier).__name__}"
        )
    if not names:
        raise InvalidArgumentError("an identifier needs at least one name")
    if any(not n for n in names):
        raise InvalidArgumentError(f"an identifier has an empty name: {identifier!r}")
    return names


class Catalog(abc.ABC):
    """A catalog of Delta tables.

    Args:
        delimiter: what joins the names of a string identifier (default ``.``).
    """

    def __init__(self, delimiter: str = ".") -> None:
        if not delimiter:
            raise InvalidArgumentError("the identifier delimiter cannot be empty")
        self.delimiter = delimiter

    def _names(self, identifier: Identifier) -> list[str]:
        """The names of ``identifier``, each one a name every deltalog catalog accepts
        (:func:`deltalog.catalog.names.check_name`: no ``.``/``..``, ``/``, ``\\``, control
        characters or delimiter, no invisible characters or mixed scripts), in Unicode
        normalization form C."""
        return [
            check_name(name, self.delimiter)
            for name in parse_identifier(identifier, self.delimiter)
        ]

    # -- namespaces ----------------------------------------------------------------------

    @abc.abstractmethod
    def list_namespaces(self, namespace: Identifier | None = None) -> list[str]:
        """The names of the namespaces directly under ``namespace`` (the root when None)."""

    @abc.abstractmethod
    def create_namespace(
        self, namespace: Identifier, properties: Mapping[str, str] | None = None
    ) -> None:
        """Creates a namespace (its parent must exist), with ``properties``."""

    def create_namespace_if_not_exists(
        self, namespace: Identifier, properties: Mapping[str, str] | None = None
    ) -> None:
        """Creates the namespace unless it exists (pyiceberg's name); an existing one is
        left as it is, its properties unchanged."""
        from deltalog.exceptions import AlreadyExistsError

        if self.namespace_exists(namespace):
            return
        try:
            self.create_namespace(namespace, properties)
        except AlreadyExistsError:
            pass  # created meanwhile by someone else: it exists, as asked

    def load_namespace_properties(self, namespace: Identifier) -> dict[str, str]:
        """The namespace's properties (pyiceberg's name)."""
        from deltalog.exceptions import UnsupportedFeatureError

        raise UnsupportedFeatureError(f"{type(self).__name__} keeps no namespace properties")

    def update_namespace_properties(
        self,
        namespace: Identifier,
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Removes the keys ``removals`` and sets ``updates`` on the namespace's properties
        (pyiceberg's name and result); a key both removed and set is refused."""
        from deltalog.exceptions import UnsupportedFeatureError

        raise UnsupportedFeatureError(f"{type(self).__name__} keeps no namespace properties")

    @abc.abstractmethod
    def drop_namespace(self, namespace: Identifier) -> None:
        """Drops an empty namespace."""

    @abc.abstractmethod
    def namespace_exists(self, namespace: Identifier) -> bool:
        """Whether the namespace exists."""

    # -- tables --------------------------------------------------------------------------

    @abc.abstractmethod
    def list_tables(
        self, namespace: Identifier | None = None, recursive: bool = False
    ) -> list[str]:
        """The names of the tables directly under ``namespace`` (the root when None); with
        ``recursive``, every table at or below it as identifiers from the root (joined by the
        delimiter), sorted (:meth:`_tables_below`)."""

    def _tables_below(self, namespace: Identifier | None) -> list[str]:
        """Every table at or below ``namespace``: its own, then each nested namespace's, as
        identifiers from the root joined by the delimiter, sorted. One list call per
        namespace (each pages through a large catalog where its protocol pages)."""
        start = [] if namespace is None else self._names(namespace)
        found: list[str] = []
        pending = [start]
        while pending:
            names = pending.pop()
            here = names or None
            found += [self.delimiter.join([*names, t]) for t in self.list_tables(here)]
            pending += [[*names, child] for child in self.list_namespaces(here)]
        return sorted(found)

    @abc.abstractmethod
    def table_exists(self, name: Identifier) -> bool:
        """Whether the catalog holds a table of that identifier."""

    def create_table(
        self,
        name: Identifier,
        schema: pa.Schema,
        partition_by: list[str] | None = None,
        configuration: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> DeltaTable:
        """Creates an empty table (the catalog's kind: catalog-managed where the catalog
        manages tables, its version 0 ratified by it) and returns it."""
        import pyarrow as pa

        self._create_from_data(
            name,
            pa.Table.from_batches([], schema=schema),
            mode="error",
            partition_by=partition_by,
            configuration=configuration,
            **kwargs,
        )
        return self.load_table(name)

    def create_table_if_not_exists(
        self,
        name: Identifier,
        schema: pa.Schema,
        partition_by: list[str] | None = None,
        configuration: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> DeltaTable:
        """The table ``name``: created as :meth:`create_table` does unless the catalog holds
        it already (pyiceberg's name), in which case it is loaded as it is; its schema is not
        compared with ``schema``."""
        from deltalog.exceptions import AlreadyExistsError

        if not self.table_exists(name):
            try:
                return self.create_table(name, schema, partition_by, configuration, **kwargs)
            except AlreadyExistsError:
                pass  # created meanwhile by someone else
        return self.load_table(name)

    def rename_table(self, from_name: Identifier, to_name: Identifier) -> DeltaTable:
        """Renames (or moves, where the catalog can) table ``from_name`` to ``to_name`` and
        returns it; its data and log stay where they are, except in a directory catalog,
        whose tables are their directories."""
        from deltalog.exceptions import UnsupportedFeatureError

        raise UnsupportedFeatureError(f"{type(self).__name__} cannot rename tables")

    def purge_table(self, name: Identifier) -> None:
        """Removes the table from the catalog and deletes its files (pyiceberg's name; the
        same as ``drop_table(name, purge=True)``)."""
        self.drop_table(name, purge=True)

    @abc.abstractmethod
    def register_table(self, name: Identifier, location: str) -> DeltaTable:
        """Adds an existing Delta table at ``location`` to the catalog under ``name``."""

    @abc.abstractmethod
    def load_table(self, name: Identifier, version: int | None = None) -> DeltaTable:
        """The table (its latest version, or ``version``), reading and writing through the
        catalog where the catalog manages it."""

    @abc.abstractmethod
    def drop_table(self, name: Identifier, purge: bool = True) -> None:
        """Removes the table from the catalog (and, with ``purge``, its files)."""

    def write_table(
        self, name: Identifier, data: Any, mode: WriteMode = "error", **kwargs: Any
    ) -> int:
        """Writes ``data`` to the table ``name`` as :func:`deltalog.write_table` does (creating
        it where the catalog allows); returns the version committed."""
        from deltalog.table.write import write_table

        if self.table_exists(name):
            table = self.load_table(name)
            write_table(table, data, mode=mode, **kwargs)
            return table.version()
        return self._create_from_data(name, data, mode=mode, **kwargs)

    def new_table_target(self, name: Identifier) -> tuple[str, Any | None]:
        """Where a new table ``name`` goes, for writers that commit its version 0 themselves
        (e.g. a Spark job): its location, and the :class:`deltalog.catalog.CatalogClient` that
        ratifies that version and registers the table, or None for a storage-managed table
        (created by its location alone). Refused for a name the catalog already holds."""
        from deltalog.exceptions import UnsupportedFeatureError

        raise UnsupportedFeatureError(
            f"{type(self).__name__} does not create tables for outside writers"
        )

    @abc.abstractmethod
    def _create_from_data(self, name: Identifier, data: Any, mode: WriteMode, **kwargs: Any) -> int:
        """Creates table ``name`` from ``data`` (the catalog's kind of table); its version."""
