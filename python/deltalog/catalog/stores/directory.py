"""The directory catalog (Lance catalog specification ``003_…``: "Lance Directory Catalog",
"Directory Path", "Table Existence").

A directory whose sub-directories are its tables: ``<path>/<name>/`` is table ``name``. It holds
no namespaces. A table exists when its directory exists, even when it is empty or holds no
Delta table: it is listed, and loading it fails with :class:`deltalog.TableNotFoundError`.
Its tables are storage-managed (they commit by put-if-absent).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog import _native
from deltalog.catalog.base import Catalog, Identifier
from deltalog.catalog.names import ConfusableNameError, name_key, same_name
from deltalog.exceptions import (
    InvalidArgumentError,
    TableNotFoundError,
    UnsupportedFeatureError,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.table.delta_table import DeltaTable
    from deltalog.write.writer import WriteMode

_NO_NAMESPACES = (
    "a directory catalog holds tables only, no namespaces (Lance catalog specification: "
    '"Lance Directory Catalog")'
)


def _directory_uri(path: str) -> str:
    """A URI as given; a POSIX path (absolute, or relative to the current directory) made
    absolute ("Directory Path")."""
    if "://" in path:
        return path.rstrip("/")
    return os.path.abspath(path)


class DirectoryCatalog(Catalog):
    """A directory of tables.

    Args:
        path: a URI (``s3://bucket/prefix``), an absolute POSIX path or a relative one (from the
            current directory).
        storage_options: passed to the object store unchanged.
        delimiter: joins the names of a string identifier.
    """

    def __init__(
        self,
        path: str,
        storage_options: Mapping[str, str] | None = None,
        delimiter: str = ".",
    ) -> None:
        super().__init__(delimiter)
        if not isinstance(path, str) or not path:
            raise InvalidArgumentError("a directory catalog needs a path")
        self.path = _directory_uri(path)
        self.storage_options = dict(storage_options) if storage_options else None

    def __repr__(self) -> str:
        return f"DirectoryCatalog({self.path!r})"

    def _table_name(self, name: Identifier) -> str:
        names = self._names(name)
        if len(names) != 1:
            raise InvalidArgumentError(f"{_NO_NAMESPACES}: {name!r} names a nested object")
        (table,) = names  # each name checked by _names (deltalog.catalog.names)
        return table

    def _directory(self, table: str) -> str | None:
        """The sub-directory that is table ``table`` (its name in any case or normalization
        form: :func:`deltalog.catalog.names.same_name`), or None."""
        children = self.list_tables()
        if table in children:
            return table
        return next((c for c in children if same_name(c, table)), None)

    def table_uri(self, name: Identifier) -> str:
        """Where table ``name`` lives: its table directory (an existing one whose name is
        ``name`` in another case or form, else one named ``name``)."""
        table = self._table_name(name)
        return f"{self.path}/{self._directory(table) or table}"

    def _local(self, uri: str) -> str | None:
        if "://" not in uri:
            return uri
        return uri[len("file://") :] if uri.startswith("file://") else None

    def _new_table_uri(self, name: Identifier) -> str:
        """The directory of a new table ``name``: refused when a sub-directory has a name
        confusable with it (another spelling of the same name is the table itself), or when
        it is a symbolic link (a table's directory is its own: a link would create the table
        in another directory)."""
        table = self._table_name(name)
        key = name_key(table)
        found = next((c for c in self.list_tables() if name_key(c) == key), None)
        if found is not None and not same_name(found, table):
            raise ConfusableNameError(table, found)
        uri = f"{self.path}/{found or table}"
        self._check_not_link(uri)
        return uri

    def _check_not_link(self, uri: str) -> None:
        local = self._local(uri)
        if local is not None and os.path.islink(local):
            raise InvalidArgumentError(
                f"{local} is a symbolic link (to {os.path.realpath(local)}): a directory "
                "catalog's table is a directory of its own, never a link to another one"
            )

    # -- namespaces: none ------------------------------------------------------------------

    def list_namespaces(self, namespace: Identifier | None = None) -> list[str]:
        if namespace is not None:
            raise UnsupportedFeatureError(_NO_NAMESPACES)
        return []

    def create_namespace(
        self, namespace: Identifier, properties: Mapping[str, str] | None = None
    ) -> None:
        raise UnsupportedFeatureError(_NO_NAMESPACES)

    def drop_namespace(self, namespace: Identifier) -> None:
        raise UnsupportedFeatureError(_NO_NAMESPACES)

    def namespace_exists(self, namespace: Identifier) -> bool:
        return False

    # -- tables ----------------------------------------------------------------------------

    def list_tables(
        self, namespace: Identifier | None = None, recursive: bool = False
    ) -> list[str]:
        if namespace is not None:
            raise UnsupportedFeatureError(_NO_NAMESPACES)
        return _native.child_directories(self.path, self.storage_options)

    def table_exists(self, name: Identifier) -> bool:
        try:
            table = self._table_name(name)
        except InvalidArgumentError:
            return False  # no table has a name the catalog refuses
        return self._directory(table) is not None

    def create_table(
        self,
        name: Identifier,
        schema: pa.Schema,
        partition_by: list[str] | None = None,
        configuration: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> DeltaTable:
        from deltalog.exceptions import AlreadyExistsError
        from deltalog.table.delta_table import DeltaTable

        if self.table_exists(name):
            raise AlreadyExistsError(f"the directory catalog {self.path} has a table {name!r}")
        uri = self._new_table_uri(name)
        return DeltaTable.create(
            uri,
            schema,
            partition_by=partition_by,
            configuration=configuration,
            storage_options=self.storage_options,
            **kwargs,
        )

    def new_table_target(self, name: Identifier) -> tuple[str, Any | None]:
        """The sub-directory a new table ``name`` is created in (a storage-managed table)."""
        if self.table_exists(name):
            raise InvalidArgumentError(f"the directory catalog {self.path} has a table {name!r}")
        return self._new_table_uri(name), None

    def register_table(self, name: Identifier, location: str) -> DeltaTable:
        uri = self.table_uri(name)
        given = _directory_uri(location).rstrip("/")
        local, own = self._local(given), self._local(uri)
        if local is not None and own is not None:
            # One directory, compared by its real path; never a link to another one.
            self._check_not_link(own)
            same = os.path.realpath(local) == os.path.realpath(own)
        else:
            same = given == uri
        if not same:
            raise InvalidArgumentError(
                f"a directory catalog's tables are its sub-directories: table {name!r} lives at "
                f"{uri}, not {location}"
            )
        return self.load_table(name)

    def load_table(self, name: Identifier, version: int | None = None) -> DeltaTable:
        from deltalog.table.delta_table import DeltaTable

        uri = self.table_uri(name)
        if not self.table_exists(name):
            raise TableNotFoundError(f"the directory catalog {self.path} has no table {name!r}")
        try:
            return DeltaTable(uri, version=version, storage_options=self.storage_options)
        except TableNotFoundError as e:
            # "Table Existence": the table is listed, but loading it fails clearly.
            raise TableNotFoundError(
                f"table {name!r} of the directory catalog {self.path} exists, but its "
                f"directory holds no Delta table: {e}"
            ) from e

    def drop_table(self, name: Identifier, purge: bool = True) -> None:
        self._table_name(name)  # a refused name says so, rather than "no such table"
        if not self.table_exists(name):
            raise TableNotFoundError(f"the directory catalog {self.path} has no table {name!r}")
        if not purge:
            raise InvalidArgumentError(
                "a directory catalog's table is its directory: dropping it deletes the files "
                "(purge=False is not possible)"
            )
        _native.delete_tree(self.table_uri(name), self.storage_options)

    def rename_table(self, from_name: Identifier, to_name: Identifier) -> DeltaTable:
        """Renames the table's directory (a directory catalog's table is its directory: "Lance
        Directory Catalog"). Local directories only: an object store has no rename, and
        copying every object is not a rename. Refused when the table names any file by an
        absolute path into its own directory (the rename would break it), and while the new
        name is taken. A writer that has the old location open keeps writing there: rename a
        table nobody writes to."""
        import pyarrow.compute as pc

        from deltalog.exceptions import AlreadyExistsError

        source = self.table_uri(from_name)
        table = self.load_table(from_name)  # an existing Delta table
        local = self._local(source)
        if local is None:
            raise UnsupportedFeatureError(
                f"the directory catalog {self.path} is on an object store, which cannot rename "
                f"a table's directory ({source}); copy it with DeltaTable.clone and drop it"
            )
        self._check_not_link(source)
        actions = table.get_add_actions()
        paths = actions.column("path")
        absolute = pc.or_(pc.starts_with(paths, "/"), pc.match_substring(paths, "://"))
        dv = actions.column("deletion_vector")
        on_path = pc.equal(pc.struct_field(dv, "storage_type"), "p")
        if pc.any(absolute).as_py() or pc.any(on_path).as_py():
            raise UnsupportedFeatureError(
                f"table {from_name!r} names files or deletion vectors by absolute path: renaming "
                f"its directory {source} would break it"
            )
        target = self._new_table_uri(to_name)
        target_local = self._local(target)
        assert target_local is not None  # the catalog's own directory is local
        if self.table_exists(to_name) and os.path.realpath(target_local) != os.path.realpath(local):
            raise AlreadyExistsError(f"the directory catalog {self.path} has a table {to_name!r}")
        os.rename(local, target_local)
        return self.load_table(to_name)

    def _create_from_data(self, name: Identifier, data: Any, mode: WriteMode, **kwargs: Any) -> int:
        from deltalog.table.write import write_table

        uri = self._new_table_uri(name)
        kwargs.setdefault("storage_options", self.storage_options)
        return write_table(uri, data, mode=mode, **kwargs)
