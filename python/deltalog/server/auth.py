"""Bearer tokens and roles of a catalog server.

The operator keeps a tokens file (JSON) of principals: each a ``name``, a ``role`` (``reader``,
``writer`` or ``admin``) and the SHA-256 of its token, never the token itself::

    {"tokens": [{"name": "etl", "role": "writer", "sha256": "9f86d0…"}]}

``deltalog catalog token create --tokens FILE --name etl --role writer [--expires 7d]`` adds
one and prints the new token once; ``token list`` shows the principals and their state,
``token revoke --name etl`` ends a token, ``token rotate --name etl`` replaces it (the old one
ends at once). An entry may carry ``created``, ``expires`` and ``revoked`` (ISO-8601 UTC).
Tokens are 256-bit random strings, so a plain SHA-256 (not a slow password hash) is what
protects them at rest, and checking one costs microseconds per request.

A server re-reads the file when it changes (checked at most once a second per process, so
every worker of ``--workers N`` sees it): a revocation, an expiry or a new token takes effect
without a restart. An expired or revoked token answers 401 saying which; a file that becomes
unreadable refuses every token until it is fixed (fail closed). Writes go to a temporary file
renamed over the old one, so a server never reads half a file.

What each role may do (a role includes the ones before it):

* ``reader``: list, describe and check namespaces, tables and table versions.
* ``writer``: declare and create tables; commit (``version/create``, ``batch-create``) changes
  to data; forget published versions. A new table's version 0 is its creation, so a writer
  sets its schema and features.
* ``admin``: create and drop namespaces; register, deregister and drop tables; commits that
  change a table's protocol or metadata (features, schema, partitioning, properties).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
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

#: How often (seconds) a server checks whether its tokens file changed.
RELOAD_SECONDS = 1.0


class TokenRefused(Exception):
    """A token that is known but may not be used: ``reason`` says why (expired, revoked)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class _Entry:
    principal: Principal
    expires: float | None  # epoch seconds
    revoked: str | None  # when (ISO-8601), or "yes"


class TokenStore:
    """The principals of a tokens file, by token digest; re-read when the file changes."""

    def __init__(self, entries: dict[str, _Entry], path: Path | None = None) -> None:
        self._by_digest = entries
        self._path = path
        self._stamp = _stamp(path) if path is not None else None
        self._checked = time.monotonic()
        self._broken: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TokenStore:
        """Reads a tokens file (and watches it).

        Raises:
            InvalidArgumentError: unreadable, not the format above, or an unknown role.
        """
        return cls(_read(Path(path)), Path(path))

    @property
    def path(self) -> Path | None:
        """The tokens file (None: entries given directly)."""
        return self._path

    def __len__(self) -> int:
        self._refresh()
        return len(self._by_digest)

    def principal(self, token: str) -> Principal | None:
        """Who holds ``token``, or None for an unknown token.

        Raises:
            TokenRefused: the token is known but expired or revoked, or the tokens file
                became unreadable.
        """
        self._refresh()
        if self._broken is not None:
            raise TokenRefused(f"the server's tokens file cannot be read ({self._broken})")
        wanted = digest(token)
        found = None
        for sha, entry in self._by_digest.items():
            if hmac.compare_digest(sha, wanted):
                found = entry
        if found is None:
            return None
        if found.revoked is not None:
            when = "" if found.revoked in ("yes", "true") else f" at {found.revoked}"
            raise TokenRefused(f"the bearer token of {found.principal.name!r} was revoked{when}")
        if found.expires is not None and time.time() >= found.expires:
            raise TokenRefused(
                f"the bearer token of {found.principal.name!r} expired at {_iso(found.expires)}"
            )
        return found.principal

    def _refresh(self) -> None:
        if self._path is None or time.monotonic() - self._checked < RELOAD_SECONDS:
            return
        with self._lock:
            self._checked = time.monotonic()
            stamp = _stamp(self._path)
            if stamp == self._stamp and self._broken is None:
                return
            try:
                self._by_digest = _read(self._path)
                self._broken = None
            except InvalidArgumentError as e:
                self._broken = str(e)
            self._stamp = stamp


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _read(path: Path) -> dict[str, _Entry]:
    try:
        document = json.loads(path.read_text())
        entries = document["tokens"]
        out = {}
        for entry in entries:
            name, role, sha = entry["name"], entry["role"], entry["sha256"]
            if role not in ROLES:
                raise InvalidArgumentError(f"{path}: unknown role {role!r} for {name!r}")
            if not (isinstance(sha, str) and len(sha) == 64):
                raise InvalidArgumentError(f"{path}: {name!r} needs a 64-digit sha256")
            expires = entry.get("expires")
            revoked = entry.get("revoked")
            out[sha.lower()] = _Entry(
                Principal(str(name), role),
                None if expires is None else _epoch(expires, f"{path}: {name!r} expires"),
                None if revoked in (None, False) else str(revoked),
            )
    except (OSError, ValueError, KeyError, TypeError) as e:
        if isinstance(e, InvalidArgumentError):
            raise
        raise InvalidArgumentError(f"cannot read the tokens file {path}: {e}") from e
    return out


def _epoch(value: object, what: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.timezone.utc)
            return moment.timestamp()
    raise InvalidArgumentError(f"{what}: {value!r} is not an ISO-8601 time")


def _iso(epoch: float) -> str:
    moment = dt.datetime.fromtimestamp(epoch, dt.timezone.utc).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def parse_expiry(text: str, now: float | None = None) -> float:
    """``--expires``: a duration (``90s``, ``30m``, ``12h``, ``7d``, ``4w``) from now, or an
    ISO-8601 time; epoch seconds."""
    now = time.time() if now is None else now
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    text = text.strip()
    if text[:-1].isdigit() and text[-1:].lower() in units:
        seconds = int(text[:-1]) * units[text[-1].lower()]
        if seconds <= 0:
            raise InvalidArgumentError(f"--expires {text}: must be in the future")
        return now + seconds
    when = _epoch(text, "--expires")
    if when <= now:
        raise InvalidArgumentError(f"--expires {text}: that time has passed")
    return when


def _document(file: Path) -> dict[str, list[dict[str, object]]]:
    if not file.exists():
        return {"tokens": []}
    document = json.loads(file.read_text())
    if not isinstance(document, dict) or not isinstance(document.get("tokens"), list):
        raise InvalidArgumentError(f"{file} is not a tokens file")
    return document


def _save(file: Path, document: dict[str, list[dict[str, object]]]) -> None:
    """Writes the file atomically (a temporary file renamed over it), readable by the owner
    only."""
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(document, indent=2) + "\n")
    os.replace(tmp, file)


def add_token(
    path: str | os.PathLike[str], name: str, role: str, expires: float | None = None
) -> str:
    """Adds a principal to the tokens file (created if missing) and returns its new token,
    which is stored only as its SHA-256; ``expires`` (epoch seconds) ends it then."""
    if role not in ROLES:
        raise InvalidArgumentError(f"unknown role {role!r}: expected one of {', '.join(ROLES)}")
    file = Path(path)
    document = _document(file)
    if any(entry.get("name") == name for entry in document["tokens"]):
        raise InvalidArgumentError(f"{path} already has a token named {name!r}")
    token = "dlt_" + secrets.token_urlsafe(32)
    entry: dict[str, object] = {
        "name": name,
        "role": role,
        "sha256": digest(token),
        "created": _iso(time.time()),
    }
    if expires is not None:
        entry["expires"] = _iso(expires)
    document["tokens"].append(entry)
    _save(file, document)
    return token


def revoke_token(path: str | os.PathLike[str], name: str) -> None:
    """Marks ``name``'s token revoked (servers refuse it within a second)."""
    file = Path(path)
    document = _document(file)
    entry = _named(document, name, path)
    if entry.get("revoked"):
        raise InvalidArgumentError(f"the token of {name!r} is already revoked")
    entry["revoked"] = _iso(time.time())
    _save(file, document)


def rotate_token(path: str | os.PathLike[str], name: str, expires: float | None = None) -> str:
    """Replaces ``name``'s token by a new one (same role; the old one stops at once);
    returns the new token."""
    file = Path(path)
    document = _document(file)
    entry = _named(document, name, path)
    token = "dlt_" + secrets.token_urlsafe(32)
    entry["sha256"] = digest(token)
    entry["created"] = _iso(time.time())
    entry.pop("revoked", None)
    if expires is not None:
        entry["expires"] = _iso(expires)
    else:
        entry.pop("expires", None)
    _save(file, document)
    return token


def list_tokens(path: str | os.PathLike[str]) -> list[dict[str, object]]:
    """The principals of the file with their state (``active``, ``expired``, ``revoked``),
    never a digest."""
    file = Path(path)
    document = _document(file)
    now = time.time()
    out = []
    for entry in document["tokens"]:
        expires = entry.get("expires")
        state = "active"
        if entry.get("revoked"):
            state = "revoked"
        elif expires is not None and _epoch(expires, str(path)) <= now:
            state = "expired"
        out.append(
            {
                "name": entry.get("name"),
                "role": entry.get("role"),
                "created": entry.get("created"),
                "expires": expires,
                "state": state,
            }
        )
    return out


def _named(
    document: dict[str, list[dict[str, object]]], name: str, path: object
) -> dict[str, object]:
    for entry in document["tokens"]:
        if entry.get("name") == name:
            return entry
    raise InvalidArgumentError(f"{path} has no token named {name!r}")
