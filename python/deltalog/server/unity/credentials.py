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

S3 (:class:`S3CredentialVendor`, ``deltalog catalog serve --s3-role-arn …``): an ``s3://``
location's credentials are STS ``AssumeRole``'s of the configured role, called with the
server's own (base) credentials and an inline *session policy* (:func:`session_policy`) that
narrows them to the location: READ may get objects under ``bucket/prefix/`` and list the bucket
under that prefix; READ_WRITE may also put and delete them (and abort multipart uploads). The
effective permissions are the intersection of the role's policies and the session policy, so
the role must itself allow at least that on the warehouse. The base credentials are never
vended. A bucket's root is never vended (403), nor a key with ``*``, ``?``, ``$`` (which a
policy reads as wildcards or variables) or ``#`` (400). Credentials are cached per
(location, operation) in each server process until five minutes before they expire: a cached
credential is only ever answered for the same location and operation it was made for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from deltalog.catalog.clients.unity.errors import UcError
from deltalog.server.unity.views import uri

if TYPE_CHECKING:
    from deltalog.catalog.managed import ManagedCatalog
    from deltalog.server.auth import Principal

#: How long a vended credential lives.
LIFETIME_MS = 60 * 60 * 1000

_log = logging.getLogger("deltalog.catalog.server")


class CredentialVendor:
    """Vends credentials for locations of ``catalog``'s tables (see the module docs)."""

    def __init__(self, catalog: ManagedCatalog) -> None:
        self.catalog = catalog

    @staticmethod
    def is_local(location: str) -> bool:
        return "://" not in location or location.startswith("file:")

    def scoped(self, location: str, write: bool) -> dict[str, Any] | None:
        """The store's credential config for ``location`` (``None`` for a local location):
        keys ``s3.access-key-id`` … and ``expiration-time-ms``.

        Raises:
            UcError: a local location that now resolves through a symbolic link elsewhere
                (a table's directory replaced by a link): nothing is vended for it.
        """
        if self.is_local(location):
            from deltalog.catalog.names import unlinked_location
            from deltalog.exceptions import InvalidArgumentError

            try:
                unlinked_location(location, "the location")
            except InvalidArgumentError as e:
                raise UcError("InvalidParameterValueException", str(e)) from e
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
        from deltalog.exceptions import InvalidArgumentError
        from deltalog.server.auth import allows

        try:
            # The real path (every symbolic link resolved): a link in the warehouse to /etc is
            # /etc, not a path of the warehouse.
            location = canonical_location(url)
            named = canonical_location(url, resolve=False)
        except InvalidArgumentError as e:
            raise UcError("InvalidParameterValueException", str(e)) from e
        store = self.catalog._store
        tables = store.overlapping(location)
        inside_table = any(contains(t[1], location) for t in tables)
        if not inside_table and not contains(self.catalog.warehouse, location):
            if named != location:
                raise UcError(
                    "InvalidParameterValueException",
                    f"{url} resolves through a symbolic link to {location}, which is neither "
                    "inside the catalog's warehouse nor a table of the catalog: credentials "
                    "are vended for real paths only",
                )
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


# ---------------------------------------------------------------------------------------------
# S3: STS AssumeRole with a session policy scoped to the location

#: Shortest and default lifetime of an S3 credential, in seconds (STS's own minimum is 900).
MIN_DURATION_S = 15 * 60
DEFAULT_DURATION_S = 60 * 60
#: STS's longest role session (a role's MaxSessionDuration may be shorter: STS then refuses).
MAX_DURATION_S = 12 * 60 * 60
#: A cached credential is answered again only while it has more than this left.
REFRESH_BEFORE_MS = 5 * 60 * 1000

# A bucket name (S3's rules, legacy upper case and underscores included); nothing that could be
# an ARN wildcard or an authority's user or port.
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,254}")
# IAM reads these as wildcards or policy variables in a resource or a StringLike condition.
_POLICY_SPECIAL = ("*", "?", "$")

READ_ACTIONS = ["s3:GetObject"]
WRITE_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]


def s3_location(location: str) -> tuple[str, str]:
    """``(bucket, key prefix)`` of an ``s3://`` / ``s3a://`` location; the prefix is the
    object keys' (percent-decoded, as the object store reads the URI), without its leading and
    trailing ``/``; ``""`` for the bucket's root.

    Raises:
        UcError: not an S3 URI, a bucket name that is not one, or a key with a character a
            policy would read as a wildcard (``*``, ``?``, ``$``) or a URI would drop (``#``).
    """
    scheme, sep, rest = location.partition("://")
    if not sep or scheme.lower() not in ("s3", "s3a"):
        raise UcError("InvalidParameterValueException", f"not an s3:// location: {location}")
    bucket, _, raw = rest.partition("/")
    if not _BUCKET.fullmatch(bucket):
        raise UcError(
            "InvalidParameterValueException", f"not an S3 bucket name: {bucket!r} ({location})"
        )
    if "#" in raw or any(c in raw or c in unquote(raw) for c in _POLICY_SPECIAL):
        raise UcError(
            "InvalidParameterValueException",
            f"no credentials are vended for {location}: its key has a character that a policy "
            "would read as a wildcard or that a URI would drop (*, ?, $, #)",
        )
    prefix = "/".join(s for s in unquote(raw).split("/") if s)
    return bucket, prefix


def session_policy(bucket: str, prefix: str, write: bool) -> dict[str, Any]:
    """The STS session policy for the objects under ``bucket/prefix/`` (see the module docs).

    Raises:
        UcError: ``prefix`` empty (a whole bucket is never vended), or it has a wildcard.
    """
    prefix = prefix.strip("/")
    if not prefix:
        raise UcError(
            "PermissionDeniedException",
            f"no credentials are vended for the root of bucket {bucket}: only for a prefix "
            "inside it (put the warehouse and its tables under a prefix)",
        )
    if not _BUCKET.fullmatch(bucket) or any(c in prefix for c in _POLICY_SPECIAL):
        raise UcError("InvalidParameterValueException", f"no policy for s3://{bucket}/{prefix}")
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Objects",
                "Effect": "Allow",
                "Action": list(WRITE_ACTIONS if write else READ_ACTIONS),
                "Resource": [f"arn:aws:s3:::{bucket}/{prefix}/*"],
            },
            {
                "Sid": "List",
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": [f"arn:aws:s3:::{bucket}"],
                # Not the bare prefix: listing ``…/orders`` would list ``…/orders2/…`` too.
                # ``prefix/*`` matches ``prefix/`` itself (``*`` may be empty).
                "Condition": {"StringLike": {"s3:prefix": [f"{prefix}/*"]}},
            },
        ],
    }


def _option(options: Mapping[str, str], *names: str) -> str | None:
    """An object-store option by any of its (case-insensitive) names."""
    lowered = {k.lower(): v for k, v in options.items()}
    for name in names:
        if lowered.get(name):
            return lowered[name]
    return None


class S3CredentialVendor(CredentialVendor):
    """Vends ``s3://`` locations' credentials by STS ``AssumeRole`` of ``role_arn`` with a
    session policy scoped to the location (see the module docs); local locations need none,
    other object stores are 501 as in :class:`CredentialVendor`.

    Args:
        role_arn: the role assumed; it must allow at least what the session policies allow.
        external_id: the role's trust policy's ``sts:ExternalId``, if it asks for one.
        sts_endpoint: STS's URL (default: boto3's, from the region).
        region: STS's region (default: the storage options' ``aws_region``, else boto3's,
            else ``us-east-1``).
        duration_seconds: the credentials' lifetime, 900 to 43200 (default 3600).
        storage_options: the server's storage options: their ``aws_access_key_id``,
            ``aws_secret_access_key`` and ``aws_session_token`` are the base credentials that
            call STS (none: boto3's default chain: environment, profile, instance role).

    Raises:
        InvalidArgumentError: boto3 is not installed, or the configuration is not valid.
    """

    def __init__(
        self,
        catalog: ManagedCatalog,
        role_arn: str,
        *,
        external_id: str | None = None,
        sts_endpoint: str | None = None,
        region: str | None = None,
        duration_seconds: int = DEFAULT_DURATION_S,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        from deltalog.exceptions import InvalidArgumentError

        super().__init__(catalog)
        try:
            import boto3
        except ImportError:
            raise InvalidArgumentError(
                "vending S3 credentials (--s3-role-arn) needs boto3, which is not installed: "
                "pip install boto3"
            ) from None
        if not role_arn or not role_arn.startswith("arn:"):
            raise InvalidArgumentError(f"not a role ARN: {role_arn!r}")
        if not MIN_DURATION_S <= duration_seconds <= MAX_DURATION_S:
            raise InvalidArgumentError(
                f"a credential lives {MIN_DURATION_S} to {MAX_DURATION_S} seconds, not "
                f"{duration_seconds}"
            )
        if sts_endpoint is not None and not sts_endpoint.startswith(("https://", "http://")):
            raise InvalidArgumentError(f"not an STS endpoint URL: {sts_endpoint!r}")
        options = dict(storage_options or {})
        self.role_arn = role_arn
        self.external_id = external_id
        self.duration_seconds = int(duration_seconds)
        self._base_key = _option(options, "aws_access_key_id", "access_key_id")
        secret = _option(options, "aws_secret_access_key", "secret_access_key")
        token = _option(options, "aws_session_token", "aws_token", "session_token", "token")
        session = boto3.session.Session(
            aws_access_key_id=self._base_key if secret else None,
            aws_secret_access_key=secret if self._base_key else None,
            aws_session_token=token if self._base_key and secret else None,
        )
        region = (
            region
            or _option(options, "aws_region", "region", "aws_default_region", "default_region")
            or session.region_name
            or "us-east-1"
        )
        self._sts = session.client("sts", region_name=region, endpoint_url=sts_endpoint)
        self._cache: dict[tuple[str, bool], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def scoped(self, location: str, write: bool) -> dict[str, Any] | None:
        if self.is_local(location) or location.split("://", 1)[0].lower() not in ("s3", "s3a"):
            return super().scoped(location, write)
        key = (location, write)
        now_ms = int(time.time() * 1000)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached["expiration-time-ms"] - now_ms > REFRESH_BEFORE_MS:
                return dict(cached)
            # Expired entries go: the cache holds at most the live (location, operation)s.
            for k in [k for k, v in self._cache.items() if v["expiration-time-ms"] <= now_ms]:
                del self._cache[k]
        found = self._assume(location, write)
        with self._lock:
            self._cache[key] = found
        return dict(found)

    def _assume(self, location: str, write: bool) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, prefix = s3_location(location)
        policy = session_policy(bucket, prefix, write)
        digest = hashlib.sha256(f"{location}\n{write}".encode()).hexdigest()[:16]
        request: dict[str, Any] = {
            "RoleArn": self.role_arn,
            "RoleSessionName": f"deltalog-{'rw' if write else 'r'}-{digest}",
            "Policy": json.dumps(policy, separators=(",", ":")),
            "DurationSeconds": self.duration_seconds,
        }
        if self.external_id:
            request["ExternalId"] = self.external_id
        try:
            answer = self._sts.assume_role(**request)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "error")
            _log.error("STS AssumeRole for %s failed: %s", location, e)
            raise UcError(
                "InternalServerErrorException",
                f"the token service refused credentials for {location} ({code}; see the "
                "server's log)",
                status=503,
            ) from None
        except BotoCoreError as e:
            _log.error("STS AssumeRole for %s failed: %s", location, e)
            raise UcError(
                "InternalServerErrorException",
                f"the token service is unavailable ({type(e).__name__}; see the server's log)",
                status=503,
            ) from None
        credentials = answer.get("Credentials") or {}
        access_key = credentials.get("AccessKeyId")
        if (
            not access_key
            or not credentials.get("SecretAccessKey")
            or not credentials.get("SessionToken")
            or access_key == self._base_key
        ):
            # Never answer anything but a fresh session's credentials.
            _log.error("STS AssumeRole for %s answered no session credentials", location)
            raise UcError(
                "InternalServerErrorException",
                "the token service answered no temporary credentials (see the server's log)",
            )
        expiration = credentials["Expiration"]
        return {
            "s3.access-key-id": access_key,
            "s3.secret-access-key": credentials["SecretAccessKey"],
            "s3.session-token": credentials["SessionToken"],
            "expiration-time-ms": int(expiration.timestamp() * 1000),
        }


def vendor_from_config(
    catalog: ManagedCatalog,
    config: Mapping[str, Any] | None,
    storage_options: Mapping[str, str] | None = None,
) -> CredentialVendor:
    """The vendor of a server configuration's ``credentials`` section: ``None`` (or no
    ``s3_role_arn``) is :class:`CredentialVendor`; keys ``s3_role_arn``, ``s3_external_id``,
    ``sts_endpoint``, ``s3_region``, ``duration_seconds`` make an :class:`S3CredentialVendor`.
    """
    if not config or not config.get("s3_role_arn"):
        return CredentialVendor(catalog)
    return S3CredentialVendor(
        catalog,
        config["s3_role_arn"],
        external_id=config.get("s3_external_id"),
        sts_endpoint=config.get("sts_endpoint"),
        region=config.get("s3_region"),
        duration_seconds=int(config.get("duration_seconds") or DEFAULT_DURATION_S),
        storage_options=storage_options,
    )
