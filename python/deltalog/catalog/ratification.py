"""What a catalog checks before it ratifies a commit: one check, shared by every store and route
(the embedded SQLite and PostgreSQL catalogs, the REST server's ``version/create`` and
``batch-create``).

A ratified commit is the table's history for good (catalogManaged RFC, "Commit Protocol";
"Publishing Commits": its content is immutable), so the catalog refuses what would damage the
table or forge its state:

* content deltalog's reader cannot read, or that breaks the protocol's rules for a commit:
  the native check (``deltalog_core::log::proposal``) decodes it with the reader's own decoder
  and checks action shapes, 64-bit integers, paths inside the table and (concurrently) that the
  files it adds exist with their sizes;
* what the RFC asks of a catalog-managed commit ("Writer Requirements for Catalog-managed
  tables"): a ``commitInfo`` first, with an ``inCommitTimestamp`` later than the previous
  commit's ("In-Commit Timestamps") and a ``txnId`` ("Commit Provenance Information"); version 0
  enabling ``catalogManaged`` and in-commit timestamps ("Catalog-managed Table Enablement"); no
  later commit dropping either;
* what it changes beyond data (:attr:`CheckedProposal.changes`: the protocol, the metadata, the
  ``delta.clustering`` domain), for the caller's governance.

The content's SHA-256 is recorded with the ratified version: readers, publishers and the
catalog itself check every later copy of the commit against it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltalog.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from deltalog.catalog.managed import Proposal, TableRecord

#: The largest staged commit a catalog reads (a larger one is refused). An OPTIMIZE of 100,000
#: files writes a commit of about 50 MB.
MAX_STAGED_COMMIT_BYTES = 64 * 1024 * 1024

#: How far ahead of the catalog's own clock a commit's in-commit timestamp may be, by default
#: (5 minutes): a writer's clock may run a little fast, but a timestamp far ahead would pin
#: every later commit's timestamp after it ("In-Commit Timestamps": each is later than the
#: previous one), and one at 2^63 - 1 would leave no later timestamp at all, freezing the table
#: for every writer. `deltalog catalog serve --max-clock-skew`.
MAX_ICT_SKEW_MS = 5 * 60 * 1000

#: The domain of a clustered table's clustering columns ("Clustered Table"): changing it changes
#: the table's layout definition, as metadata does.
CLUSTERING_DOMAIN = "delta.clustering"

#: The features a catalog-managed table keeps for good.
REQUIRED_READER_FEATURES = ("catalogManaged",)
#: Each entry is met by any one of its names, the first the one deltalog writes: in-commit
#: timestamps are `inCommitTimestamp` to Delta Spark, delta-rs, kernel-rs and the UC Delta API,
#: `inCommitTimestamps` in the stored protocol text ("In-Commit Timestamps"); both are accepted
#: (see deltalog.protocol.features.IN_COMMIT_TIMESTAMP).
REQUIRED_WRITER_FEATURES: tuple[tuple[str, ...], ...] = (
    ("catalogManaged",),
    ("inCommitTimestamp", "inCommitTimestamps"),
)


class ProposalError(InvalidArgumentError):
    """A proposed commit the catalog refuses: it names the version and the rule broken.

    Attributes:
        version: the proposed version.
        rule: the rule it breaks.
    """

    def __init__(self, version: int, rule: str) -> None:
        super().__init__(f"proposed commit {version}: {rule}")
        self.version = version
        self.rule = rule


class ProposalTooLargeError(ProposalError):
    """A staged commit larger than the catalog reads."""


@dataclass(frozen=True)
class TableState:
    """What the catalog knows of a table before a proposal: its latest protocol, metadata and
    clustering domain (JSON, ``None`` when unknown), and its latest in-commit timestamp."""

    protocol: str | None = None
    metadata: str | None = None
    clustering: str | None = None
    last_ict: int | None = None


@dataclass(frozen=True)
class CheckedProposal:
    """A proposal that passed :func:`check_proposal`.

    Attributes:
        version: the version proposed.
        sha256: the SHA-256 of its content (lowercase hex).
        txn_id: its ``commitInfo.txnId``.
        in_commit_timestamp: its ``commitInfo.inCommitTimestamp``.
        protocol, metadata: its ``protocol`` / ``metaData`` action (compact JSON), if any.
        clustering: ``(present, configuration)`` of its ``delta.clustering`` domain action:
            ``(False, None)`` without one; configuration ``None`` when it removes the domain.
        changes: what it changes beyond data, compared with the table's state: any of
            ``"protocol"``, ``"metadata"``, ``"clustering"``.
        content: the content (inline commits, and staged ones read for the check).
    """

    version: int
    sha256: str
    txn_id: str
    in_commit_timestamp: int
    protocol: str | None
    metadata: str | None
    clustering: tuple[bool, str | None]
    changes: tuple[str, ...]
    content: bytes = field(repr=False)


def _json(text: str | None) -> Any:
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None


def _differs(new: str | None, current: str | None) -> bool:
    return new is not None and (_json(new) != _json(current) or current is None)


def sha256_hex(content: bytes) -> str:
    """The SHA-256 of ``content``, lowercase hex (as the catalog records it)."""
    return hashlib.sha256(content).hexdigest()


def read_staged(
    location: str,
    name: str,
    storage_options: dict[str, str] | None = None,
    max_bytes: int = MAX_STAGED_COMMIT_BYTES,
) -> bytes | None:
    """The bytes of ``_delta_log/_staged_commits/<name>`` (see :func:`read_log`).

    Raises:
        InvalidArgumentError: ``name`` is not a plain file name, or not a regular file.
        ProposalTooLargeError: larger than ``max_bytes``.
    """
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise InvalidArgumentError(f"not a staged commit file name: {name!r}")
    return read_log(location, f"_staged_commits/{name}", storage_options, max_bytes)


def read_log(
    location: str,
    relative: str,
    storage_options: dict[str, str] | None = None,
    max_bytes: int = MAX_STAGED_COMMIT_BYTES,
) -> bytes | None:
    """The bytes of ``_delta_log/<relative>`` of the table at ``location``, or ``None`` when it
    does not exist. A local file must be a regular file (not a FIFO, device or symbolic link:
    it is opened without blocking and without following links) whose real path lies under the
    table's real root (no linked directory on the way), of at most ``max_bytes``.

    Raises:
        InvalidArgumentError: not a regular file, a linked directory on the way, or
            ``relative`` leaves ``_delta_log``.
        ProposalTooLargeError: larger than ``max_bytes``.
    """
    parts = relative.split("/")
    if not relative or any(part in ("", ".", "..") for part in parts) or "\\" in relative:
        raise InvalidArgumentError(f"not a path inside _delta_log: {relative!r}")
    local = location[len("file://") :] if location.startswith("file://") else location
    if "://" in local or storage_options:
        from deltalog import _native

        found = _native.read_log_file(location, relative, storage_options)
        if found is not None and len(found) > max_bytes:
            raise ProposalTooLargeError(
                -1, f"_delta_log/{relative} is {len(found)} bytes, more than {max_bytes}"
            )
        return None if found is None else bytes(found)
    path = os.path.join(local, "_delta_log", *parts)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:  # O_NOFOLLOW
            raise InvalidArgumentError(
                f"_delta_log/{relative} is a symbolic link: a catalog-managed table's commits "
                "are regular files of its own log"
            ) from e
        raise InvalidArgumentError(f"_delta_log/{relative} cannot be opened: {e.strerror}") from e
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidArgumentError(
                f"_delta_log/{relative} is not a regular file (a commit is a file of the log)"
            )
        _check_inside(fd, path, local, relative)
        if info.st_size > max_bytes:
            raise ProposalTooLargeError(
                -1, f"_delta_log/{relative} is {info.st_size} bytes, more than {max_bytes}"
            )
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise ProposalTooLargeError(
                    -1, f"_delta_log/{relative} is more than {max_bytes} bytes"
                )
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check_inside(fd: int, path: str, root: str, relative: str) -> None:
    """Refuses a log file opened at ``path`` whose real path (the directories' symbolic links
    resolved: ``_delta_log`` or ``_staged_commits`` linked elsewhere) lies outside the table's
    real root ``root``: the commit would be another table's file.

    Raises:
        InvalidArgumentError: naming the file, its real path and the rule.
    """
    try:  # the file opened, not a path that could change meanwhile (Linux)
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(path)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real, real_root]) != real_root or real == real_root:
        raise InvalidArgumentError(
            f"_delta_log/{relative} resolves through a symbolic link to {real}, outside the "
            f"table's real root {real_root}: a catalog-managed table's commits are files of its "
            "own log"
        )


def check_proposal(
    location: str,
    version: int,
    content: bytes,
    state: TableState,
    storage_options: dict[str, str] | None = None,
    check_files: bool = True,
    max_clock_skew_ms: int | None = None,
) -> CheckedProposal:
    """Checks ``content`` proposed as ``version`` of the catalog-managed table at ``location``
    (see the module docs). Its in-commit timestamp may be at most ``max_clock_skew_ms`` ahead
    of this process's clock (the catalog's; default :data:`MAX_ICT_SKEW_MS`, which ``deltalog
    catalog serve --max-clock-skew`` sets for every route of the server).

    Raises:
        ProposalError: what the catalog must not ratify, naming the version and the rule.
    """
    from deltalog import _native
    from deltalog.exceptions import DeltaError, StorageError

    try:
        report = _native.check_proposal(
            location, version, bytes(content), storage_options, check_files
        )
    except StorageError:
        raise  # the table's storage failed: not the proposal's fault
    except (DeltaError, OverflowError, ValueError) as e:
        rule = getattr(e, "rule", None) or str(e)
        raise ProposalError(version, rule) from e

    def bad(rule: str) -> ProposalError:
        return ProposalError(version, rule)

    ict, txn_id = report["in_commit_timestamp"], report["txn_id"]
    if not report["commit_info_first"] or ict is None:
        raise bad(
            "the first action must be a commitInfo with an inCommitTimestamp (catalogManaged "
            'RFC: catalog-managed tables "must use in-commit-timestamps"; "In-Commit '
            'Timestamps": the commitInfo is the first action)'
        )
    if txn_id is None:
        raise bad('commitInfo needs a txnId (catalogManaged RFC, "Commit Provenance Information")')
    now = int(time.time() * 1000)
    if max_clock_skew_ms is None:
        max_clock_skew_ms = MAX_ICT_SKEW_MS
    if ict > now + max_clock_skew_ms:
        raise bad(
            f"inCommitTimestamp {ict} is {_ahead(ict - now)} ahead of the catalog's clock "
            f"({now}), more than the {max_clock_skew_ms} ms it allows: every later commit "
            'would have to be later still ("In-Commit Timestamps": monotonically increasing), '
            "so one far-future timestamp freezes the table's history; check the writer's clock"
        )
    if state.last_ict is not None and ict <= state.last_ict:
        raise bad(
            f"inCommitTimestamp {ict} is not later than the previous commit's "
            f'({state.last_ict}) ("In-Commit Timestamps": monotonically increasing)'
        )
    protocol, metadata = _json(report["protocol"]), _json(report["metadata"])
    if version == 0:
        if protocol is None or metadata is None:
            raise bad("version 0 creates the table: it needs a protocol and a metaData action")
    _check_features(version, protocol, metadata, bad)
    clustering: tuple[bool, str | None] = (False, None)
    for domain, configuration in report["domains"]:
        if domain == CLUSTERING_DOMAIN:
            clustering = (True, configuration)
    changes = []
    if version > 0:
        if _differs(report["protocol"], state.protocol):
            changes.append("protocol")
        if _differs(report["metadata"], state.metadata):
            changes.append("metadata")
        if clustering[0] and (clustering[1] is None or _differs(clustering[1], state.clustering)):
            changes.append("clustering")
    return CheckedProposal(
        version=version,
        sha256=report["sha256"],
        txn_id=txn_id,
        in_commit_timestamp=ict,
        protocol=report["protocol"],
        metadata=report["metadata"],
        clustering=clustering,
        changes=tuple(changes),
        content=bytes(content),
    )


def _ahead(ms: int) -> str:
    """``ms`` as a human duration."""
    for unit, size in (("years", 365 * 86_400_000), ("days", 86_400_000), ("hours", 3_600_000)):
        if ms >= 2 * size:
            return f"{ms // size:,} {unit}"
    return f"{ms / 60_000:,.1f} minutes"


def _check_features(version: int, protocol: Any, metadata: Any, bad: Any) -> None:
    """catalogManaged and in-commit timestamps: enabled by version 0, never dropped later
    ("Catalog-managed Table Enablement"; the RFC has no way back for a catalog's table)."""
    if protocol is not None:
        if not isinstance(protocol, dict):
            raise bad("the protocol action is not an object")
        readers = protocol.get("readerFeatures") or []
        writers = protocol.get("writerFeatures") or []
        if protocol.get("minReaderVersion") != 3 or protocol.get("minWriterVersion") != 7:
            raise bad(
                "a catalog-managed table's protocol is reader version 3 and writer version 7 "
                '(catalogManaged RFC, "Catalog-managed Table Enablement")'
            )
        missing = [f for f in REQUIRED_READER_FEATURES if f not in readers] + [
            " or ".join(names)
            for names in REQUIRED_WRITER_FEATURES
            if set(names).isdisjoint(writers)
        ]
        if missing:
            what = "enable" if version == 0 else "keep"
            raise bad(
                f"a catalog-managed table's protocol must {what} {', '.join(sorted(set(missing)))} "
                '(catalogManaged RFC, "Catalog-managed Table Enablement" and "Writer '
                'Requirements for Catalog-managed tables")'
            )
    if metadata is not None:
        configuration = (metadata.get("configuration") or {}) if isinstance(metadata, dict) else {}
        if str(configuration.get("delta.enableInCommitTimestamps", "")).lower() != "true":
            raise bad(
                "a catalog-managed table keeps delta.enableInCommitTimestamps = true "
                '(catalogManaged RFC: catalog-managed tables "must use in-commit-timestamps")'
            )


#: A staged commit's file name: ``<version, 20 digits>.<uuid>.json`` (catalogManaged RFC,
#: "Staged commit"), matched whole (no trailing newline).
STAGED_NAME = re.compile(r"(\d{20})\.[0-9A-Za-z-]{1,64}\.json")


def check_staged_name(name: str, version: int) -> None:
    """Refuses a staged commit name that is not ``<version>.<uuid>.json`` for ``version``.

    Raises:
        ProposalError: naming the rule.
    """
    match = STAGED_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None or int(match.group(1)) != version:
        raise ProposalError(
            version,
            f"the staged commit {name!r} is not named <version>.<uuid>.json for version "
            f'{version} (catalogManaged RFC, "Staged commit": the version in its name is '
            "authoritative)",
        )


def state_of(record: TableRecord | None) -> TableState:
    """What a table's catalog record says a proposal is checked against."""
    if record is None:
        return TableState()
    return TableState(record.protocol, record.metadata, record.clustering, record.last_ict)


def prepare(
    location: str,
    version: int,
    path: str | None,
    content: bytes | None,
    record: TableRecord | None,
    create: tuple[Any, str, str] | None = None,
    storage_options: dict[str, str] | None = None,
    max_staged_bytes: int = MAX_STAGED_COMMIT_BYTES,
    max_clock_skew_ms: int | None = None,
) -> tuple[Proposal, CheckedProposal]:
    """A commit proposed for ``version`` of the table at ``location`` (``record``: the
    catalog's record of it, ``None`` for a table ``create`` registers), checked
    (:func:`check_proposal`) and made into the :class:`~deltalog.catalog.managed.Proposal` a
    store ratifies: a staged commit (``path``, its file read here, regular files only) or an
    inline one (``content``).

    Raises:
        ProposalError: the proposal is refused (the rule in the message).
    """
    from deltalog.catalog.managed import Proposal

    if (path is None) == (content is None):
        raise ProposalError(version, "a proposal is either staged (a path) or inline (content)")
    if path is not None:
        check_staged_name(path, version)
        try:
            found = read_staged(location, path, storage_options, max_staged_bytes)
        except ProposalTooLargeError as e:
            raise ProposalTooLargeError(version, e.rule) from e
        if found is None:
            raise ProposalError(
                version, f"the staged commit _delta_log/_staged_commits/{path} does not exist"
            )
        body = found
    else:
        body = bytes(content or b"")
    checked = check_proposal(
        location,
        version,
        body,
        state_of(record),
        storage_options,
        max_clock_skew_ms=max_clock_skew_ms,
    )
    proposal = Proposal(
        table_id=None if record is None else record.id,
        version=version,
        path=path,
        content=None if path is not None else body,
        create=create,
        protocol=checked.protocol,
        metadata=checked.metadata,
        sha256=checked.sha256,
        txn_id=checked.txn_id,
        ict=checked.in_commit_timestamp,
        clustering=checked.clustering,
    )
    return proposal, checked
