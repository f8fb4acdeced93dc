"""Temporary storage credentials vended by the UC routes (the UC API's
``temporary-table-credentials`` / ``temporary-path-credentials``; the Delta API's table,
staging-table and path ``credentials``), scoped to one table's location and to READ or
READ_WRITE.

A local (``file://``) location needs no credentials: the answer carries none (the Delta API's
``storage-credentials`` is empty), which engines take as "use the path as it is". Object-store
warehouses are vended by :class:`CredentialVendor` subclasses that know the store's token
service; without one, asking for an object store's credentials is answered 501.

Paths: a path credential is only vended inside the catalog's warehouse or a table the catalog
records; READ_WRITE needs the admin role (it is how an external table's files are written
before registering it) unless the path is a table the principal may write already.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from deltalog.catalog.rest.unity.views import uri
from deltalog.catalog.unity.errors import UcError

if TYPE_CHECKING:
    from deltalog.catalog.managed import ManagedCatalog
    from deltalog.catalog.rest.auth import Principal

#: How long a vended credential lives.
LIFETIME_MS = 60 * 60 * 1000


class CredentialVendor:
    """Vends credentials for locations of ``catalog``'s tables (see the module docs)."""

    def __init__(self, catalog: ManagedCatalog) -> None:
        self.catalog = catalog

    @staticmethod
    def is_local(location: str) -> bool:
        return "://" not in location or location.startswith("file:")

    def scoped(self, location: str, write: bool) -> dict[str, Any] | None:
        """The store's credential config for ``location`` (``None`` for a local location):
        keys ``s3.access-key-id`` … and ``expiration-time-ms``."""
        if self.is_local(location):
            return None
        raise UcError(
            "NotImplementedException",
            f"this server vends no credentials for {location.split('://')[0]}:// locations "
            "(start it with a credential vendor for its object store)",
        )

    def delta_form(self, location: str, write: bool) -> list[dict[str, Any]]:
        """The Delta API's ``storage-credentials`` for ``location``."""
        found = self.scoped(location, write)
        if found is None:
            return []
        expires = found.pop("expiration-time-ms")
        return [
            {
                "prefix": uri(location).rstrip("/") + "/",
                "operation": "READ_WRITE" if write else "READ",
                "expiration-time-ms": expires,
                "config": found,
            }
        ]

    def uc_form(self, location: str, write: bool) -> dict[str, Any]:
        """The UC API's ``TemporaryCredentials`` for ``location``."""
        found = self.scoped(location, write)
        out: dict[str, Any] = {"url": uri(location)}
        if found is None:
            out["expiration_time"] = int(time.time() * 1000) + LIFETIME_MS
            return out
        out["expiration_time"] = found["expiration-time-ms"]
        if "s3.access-key-id" in found:
            out["aws_temp_credentials"] = {
                "access_key_id": found["s3.access-key-id"],
                "secret_access_key": found["s3.secret-access-key"],
                "session_token": found.get("s3.session-token"),
            }
        return out

    def path_for(self, principal: Principal, url: str, write: bool) -> str:
        """The canonical location a path credential may be vended for (see the module docs).

        Raises:
            UcError: outside the warehouse and every table, or READ_WRITE without the role.
        """
        from deltalog.catalog.names import canonical_location, contains
        from deltalog.catalog.rest.auth import allows
        from deltalog.exceptions import InvalidArgumentError

        try:
            location = canonical_location(url)
        except InvalidArgumentError as e:
            raise UcError("InvalidParameterValueException", str(e)) from e
        store = self.catalog._store
        tables = store.overlapping(location)
        inside_table = any(contains(t[1], location) for t in tables)
        if not inside_table and not contains(self.catalog.warehouse, location):
            raise UcError(
                "PermissionDeniedException",
                f"{url} is neither inside the catalog's warehouse nor a table of the catalog",
            )
        if write and not allows(principal.role, "admin"):
            raise UcError(
                "PermissionDeniedException",
                f"{principal.name} ({principal.role}) may not write {url} by path: it needs "
                "the admin role (tables are written through their credentials routes)",
            )
        return location
