"""What deltalog's REST catalog server and client agree on: the Lance Namespace REST
protocol's error codes and HTTP statuses (``../shared/spec/lance-namespace-rest-2026-08.yaml``,
``ErrorResponse``; Lance REST catalog, "Error Code to HTTP Status Mapping"), identifiers in URL
paths, and how a catalog-managed Delta table (catalogManaged RFC, ``000_…``) is carried by the
namespace's table and table-version routes.

**Delta on the Lance Namespace routes** (documented in ``docs/catalogs.md``):

* ``DescribeTable`` answers ``managed_versioning: true`` for a catalog-managed table, with
  ``properties[PROP_FORMAT] == "delta"`` and ``properties[PROP_CATALOG_MANAGED] == "true"``
  (the RFC's "Table Discovery": the name resolution step says the table is catalog-managed),
  ``version`` = the latest ratified version, and in ``metadata`` the table's latest
  ``protocol`` and ``metaData`` actions as JSON (:data:`META_PROTOCOL`, :data:`META_METADATA`;
  the RFC's "Catalog-managed Tables" encourages returning them).
* ``CreateTableVersion`` proposes version ``v``: a **staged** commit names its file in
  ``manifest_path`` (``_delta_log/_staged_commits/<v>.<uuid>.json``); an **inline** commit sets
  ``manifest_path`` to the file it will be published as (``_delta_log/<v>.json``) and carries
  its newline-delimited JSON actions in ``metadata[META_INLINE]``.
* ``ListTableVersions`` lists the table's versions, ``0`` to the latest ratified one (said in
  the response's ``context[CTX_LATEST_VERSION]``), ascending or (``descending=true``) newest
  first: the commits the catalog still holds (unpublished) in the same form as above, the
  published ones as ``_delta_log/<v>.json`` with ``metadata[META_PUBLISHED] == "true"``.
  Every version the catalog recorded carries the SHA-256 of its ratified content
  (``metadata[META_SHA256]``): readers and publishers check the content against it.
* A conflict (``409``, code 14) carries what the writer needs to rebase in the error's
  ``context``: :data:`CTX_LATEST_VERSION` and :data:`CTX_RATIFIED` (a JSON list of the commits
  held from the proposed version on, ``{"version", "path" | "content", "timestamp"}``).
* ``BatchDeleteTableVersions`` forgets published commits ("Publishing Commits"); so does a
  ``CreateTableVersion`` whose ``context`` reports them (:data:`CTX_PUBLISHED_THROUGH`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any
from urllib.parse import quote, unquote_to_bytes

from deltalog.protocol.catalog_client import RatifiedCommit, RatifiedCommits

#: Lance Namespace error codes (``ErrorResponse.code``).
UNSUPPORTED = 0
NAMESPACE_NOT_FOUND = 1
NAMESPACE_ALREADY_EXISTS = 2
NAMESPACE_NOT_EMPTY = 3
TABLE_NOT_FOUND = 4
TABLE_ALREADY_EXISTS = 5
TRANSACTION_NOT_FOUND = 10
TABLE_VERSION_NOT_FOUND = 11
INVALID_INPUT = 13
CONCURRENT_MODIFICATION = 14
PERMISSION_DENIED = 15
UNAUTHENTICATED = 16
SERVICE_UNAVAILABLE = 17
INTERNAL = 18
INVALID_TABLE_STATE = 19
THROTTLING = 21

#: The HTTP status of each error code (Lance REST catalog, "Error Code to HTTP Status
#: Mapping"; 22 and 23, branches, as the reference adapter answers them).
STATUS = {
    0: 406,
    1: 404,
    2: 409,
    3: 409,
    4: 404,
    5: 409,
    6: 404,
    7: 409,
    8: 404,
    9: 409,
    10: 404,
    11: 404,
    12: 404,
    13: 400,
    14: 409,
    15: 403,
    16: 401,
    17: 503,
    18: 500,
    19: 409,
    20: 400,
    21: 429,
    22: 404,
    23: 409,
}

#: The table property naming a table's format.
PROP_FORMAT = "format"
#: The table property saying whether the catalog manages the table's commits.
PROP_CATALOG_MANAGED = "delta.catalogManaged"
#: Properties the server sets; a request cannot.
RESERVED_PROPERTIES = frozenset({PROP_FORMAT, PROP_CATALOG_MANAGED, "delta.logIntegrity"})

#: ``TableVersion.metadata`` key of an inline commit's content.
META_INLINE = "delta.inlineCommit"
#: ``TableVersion.metadata`` key of the SHA-256 of the content the catalog ratified.
META_SHA256 = "delta.sha256"
#: ``TableVersion.metadata`` key saying ``"true"`` for a version already published.
META_PUBLISHED = "delta.published"
#: ``TableVersion.metadata`` key of a published version's ``commitInfo.txnId``.
META_TXN_ID = "delta.txnId"
#: ``TableVersion.metadata`` key of a published version's staged file name, if it was staged.
META_STAGED = "delta.stagedCommit"
#: ``DescribeTableResponse.metadata`` keys of the cached latest protocol / metadata actions.
META_PROTOCOL = "delta.protocol"
META_METADATA = "delta.metaData"

#: ``BatchDeleteTableVersionsRequest.context`` key: ``"true"`` asks an admin's rollback of the
#: newest unpublished versions the ranges cover (never a side effect of forgetting).
CTX_ROLLBACK = "delta.rollback"
#: With :data:`CTX_ROLLBACK`: ``"true"`` lets the rollback go over published versions too (their
#: log files moved to ``_delta_log/_rolled_back/``): the last resort for a published history
#: that cannot be repaired (docs/catalogs.md, "Repairing a table").
CTX_ROLLBACK_PUBLISHED = "delta.rollbackPublished"
#: ``BatchDeleteTableVersionsRequest.context`` key: ``"true"`` asks an admin's repair instead of
#: a deletion: every published commit changed in storage is replaced by the ratified content
#: where the catalog still has it (nothing is forgotten).
CTX_REPAIR = "delta.repair"
#: ``DescribeTableResponse.properties`` key (reserved), present only when the table's published
#: log is not what the catalog ratified: which version differs, and how.
PROP_INTEGRITY = "delta.logIntegrity"

#: ``CreateTableVersionRequest.context`` key: the writer published every commit through this
#: version since its last request ("Publishing Commits"); the catalog forgets those whose
#: ``<v>.json`` holds the ratified content, as ``BatchDeleteTableVersions`` would (a writer's
#: report of its previous commit rides on its next one: a request fewer per commit).
CTX_PUBLISHED_THROUGH = "delta.publishedThrough"

#: Response / error ``context`` keys.
CTX_LATEST_VERSION = "delta.latestVersion"
CTX_RATIFIED = "delta.ratifiedCommits"

#: The delimiter of identifiers in paths when the request names none.
DEFAULT_DELIMITER = "$"

STAGED_DIR = "_delta_log/_staged_commits/"
_STAGED_NAME = re.compile(r"(\d{20})\.[0-9A-Za-z-]{1,64}\.json")


def published_path(version: int) -> str:
    """The table-relative path a version is published as."""
    return f"_delta_log/{version:020d}.json"


def staged_name(manifest_path: str) -> str | None:
    """The file name in ``_staged_commits/`` of a staged commit's ``manifest_path`` (given
    relative to the table: ``_delta_log/_staged_commits/<name>``, or as the bare name), or
    ``None`` when it names no staged commit."""
    name = manifest_path[len(STAGED_DIR) :] if manifest_path.startswith(STAGED_DIR) else None
    if name is None and "/" not in manifest_path:
        name = manifest_path
    return name if name is not None and _STAGED_NAME.fullmatch(name) else None


def staged_version(name: str) -> int:
    """The version a staged commit's file name carries (``<v>.<uuid>.json``)."""
    match = _STAGED_NAME.fullmatch(name)
    if match is None:
        raise ValueError(f"not a staged commit file name: {name!r}")
    return int(match.group(1))


def encode_id(names: list[str], delimiter: str = DEFAULT_DELIMITER) -> str:
    """An identifier as the ``{id}`` path segment: names joined by the delimiter, the root
    namespace as the bare delimiter. Callers percent-encode it (the generated clients do)."""
    return delimiter.join(names) if names else delimiter


def decode_id(raw_segment: str, delimiter: str = DEFAULT_DELIMITER) -> list[str]:
    """The names of a raw (still percent-encoded) ``{id}`` path segment: percent-decoded as
    UTF-8 (strictly), then split at the delimiter, each name in Unicode normalization form C;
    the bare delimiter is the root (``[]``).

    The Lance clients percent-encode the delimiter itself (``ns%24t``), so splitting happens
    after decoding: a name cannot contain the delimiter.

    Raises:
        ValueError: not UTF-8, or an empty name.
    """
    text = unquote_to_bytes(raw_segment).decode("utf-8")  # strict: non-UTF-8 raises
    if text == delimiter:
        return []
    # Names in normalization form C, as every catalog stores them (deltalog.catalog.names).
    names = [unicodedata.normalize("NFC", n) for n in text.split(delimiter)]
    if any(not n for n in names):
        raise ValueError(f"the identifier {text!r} has an empty name")
    return names


def path_segment(names: list[str], delimiter: str = DEFAULT_DELIMITER) -> str:
    """:func:`encode_id`, percent-encoded for a URL path (every reserved character, as the
    generated clients do)."""
    return quote(encode_id(names, delimiter), safe="")


def ratified_to_wire(held: RatifiedCommits) -> dict[str, str]:
    """A conflict answer's ``context``: the latest version and the held commits."""
    commits = [
        {
            "version": c.version,
            **({"path": c.path} if c.path is not None else {}),
            **({"content": c.content.decode()} if c.content is not None else {}),
            **({"timestamp": c.timestamp} if c.timestamp is not None else {}),
        }
        for c in held.commits
    ]
    return {CTX_LATEST_VERSION: str(held.latest_version), CTX_RATIFIED: json.dumps(commits)}


def ratified_from_wire(context: dict[str, Any] | None) -> RatifiedCommits | None:
    """The :class:`RatifiedCommits` a conflict answer carries, or ``None``."""
    if not context or CTX_LATEST_VERSION not in context:
        return None
    try:
        latest = int(context[CTX_LATEST_VERSION])
        entries = json.loads(context.get(CTX_RATIFIED) or "[]")
        commits = [
            RatifiedCommit(
                int(e["version"]),
                path=e.get("path"),
                content=e["content"].encode() if "content" in e else None,
                timestamp=e.get("timestamp"),
            )
            for e in entries
        ]
    except (ValueError, TypeError, KeyError):
        return None
    return RatifiedCommits(commits, latest)
