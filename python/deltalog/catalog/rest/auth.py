"""Bearer tokens and roles of a catalog server.

The operator keeps a tokens file (JSON) of principals: each a ``name``, a ``role`` (``reader``,
``writer`` or ``admin``) and the SHA-256 of its token, never the token itself::

    {"tokens": [{"name": "etl", "role": "writer", "sha256": "9f86d0…"}]}

``deltalog catalog token --tokens FILE --name etl --role writer`` adds one and prints the new
token once. Tokens are 256-bit random strings, so a plain SHA-256 (not a slow password hash)
is what protects them at rest, and checking one costs microseconds per request.

What each role may do (a role includes the ones before it):

* ``reader``: list, describe and check namespaces, tables and table versions.
* ``writer``: declare and create tables; commit (``version/create``, ``batch-create``) changes
  to data; forget published versions. A new table's version 0 is its creation, so a writer
  sets its schema and features.
* ``admin``: create and drop namespaces; register, deregister and drop tables; commits that
  change a table's protocol or metadata (features, schema, partitioning, properties).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from deltalog.exceptions import InvalidArgumentError

ROLES = ("reader", "writer", "admin")
_RANK = {role: i for i, role in enumerate(ROLES)}


def allows(role: str, needed: str) -> bool:
    """Whether ``role`` may do what needs ``needed``."""
    return _RANK[role] >= _RANK[needed]


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who made a request."""

    name: str
    role: str


#: The principal of every request on a server without tokens (authentication off).
ANONYMOUS_ADMIN = Principal("anonymous", "admin")


class TokenStore:
    """The principals of a tokens file, by token digest."""

    def __init__(self, principals: dict[str, Principal]) -> None:
        self._by_digest = principals

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TokenStore:
        """Reads a tokens file.

        Raises:
            InvalidArgumentError: unreadable, not the format above, or an unknown role.
        """
        try:
            document = json.loads(Path(path).read_text())
            entries = document["tokens"]
            principals = {}
            for entry in entries:
                name, role, sha = entry["name"], entry["role"], entry["sha256"]
                if role not in ROLES:
                    raise InvalidArgumentError(f"{path}: unknown role {role!r} for {name!r}")
                if not (isinstance(sha, str) and len(sha) == 64):
                    raise InvalidArgumentError(f"{path}: {name!r} needs a 64-digit sha256")
                principals[sha.lower()] = Principal(str(name), role)
        except (OSError, ValueError, KeyError, TypeError) as e:
            if isinstance(e, InvalidArgumentError):
                raise
            raise InvalidArgumentError(f"cannot read the tokens file {path}: {e}") from e
        return cls(principals)

    def __len__(self) -> int:
        return len(self._by_digest)

    def principal(self, token: str) -> Principal | None:
        """Who holds ``token``, or None."""
        wanted = digest(token)
        for sha, principal in self._by_digest.items():
            if hmac.compare_digest(sha, wanted):
                return principal
        return None


def add_token(path: str | os.PathLike[str], name: str, role: str) -> str:
    """Adds a principal to the tokens file (created if missing) and returns its new token,
    which is stored only as its SHA-256."""
    if role not in ROLES:
        raise InvalidArgumentError(f"unknown role {role!r}: expected one of {', '.join(ROLES)}")
    file = Path(path)
    document: dict[str, list[dict[str, str]]] = {"tokens": []}
    if file.exists():
        document = json.loads(file.read_text())
    if any(entry.get("name") == name for entry in document["tokens"]):
        raise InvalidArgumentError(f"{path} already has a token named {name!r}")
    token = "dlt_" + secrets.token_urlsafe(32)
    document["tokens"].append({"name": name, "role": role, "sha256": digest(token)})
    file.write_text(json.dumps(document, indent=2) + "\n")
    os.chmod(file, 0o600)
    return token
