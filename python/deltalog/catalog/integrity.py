"""A catalog-managed table's published log checked against what its catalog ratified, and an
administrator's repairs of a log that is not.

The trust model (docs/catalogs.md, "Who can change a table"): the catalog is the source of truth
of a catalog-managed table (catalogManaged RFC, "Catalog-managed Tables") and records the
SHA-256 of every commit it ratifies, for good. Storage access is not catalog authority: a
principal who can write the table's files can rewrite a published ``<v>.json`` ("Publishing
Commits" makes it a copy of the ratified commit, whose content is immutable), but the
catalog's readers check every published commit they replay against the recorded digest
(``deltalog_core::log::published``) and refuse a rewritten one
(:class:`~deltalog.exceptions.LogIntegrityError`). This module is the catalog's side of it:

* :func:`check_published`: the versions readers replay (version 0 and those after the newest
  checkpoint ``_last_checkpoint`` names, at most :data:`RECENT` of them) checked on the
  server, so that ``describe`` (Lance) reports a mismatch and ``loadTable`` (Unity Catalog,
  whose engines read the published files themselves) refuses the table instead of handing
  it out; files are hashed once per change (a cache keyed by their stat);
* :func:`republish`: a tampered version's file replaced by the ratified content where the
  catalog can still find it (its staged commit file, which metadata cleanup eventually
  deletes, checked against the digest), the tampered file kept aside in
  ``_delta_log/_tampered/``;
* :func:`quarantine_after`: the published files of versions after a rollback's target moved
  aside to ``_delta_log/_rolled_back/<time>/`` (an administrator's rollback over published
  versions: a history that cannot be repaired, such as commits whose in-commit timestamps lie
  years ahead, ends at the last good version).

The repairs work on local storage; on object stores they are refused with that reason.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deltalog.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from deltalog.catalog.managed import CommitRecord, Store, TableRecord

#: The most published versions after the newest checkpoint that are checked (with version 0).
RECENT = 100

#: Where a repair keeps the files it replaced or rolled back (inside ``_delta_log``: not a name
#: the log's readers take for a log file).
TAMPERED_DIR = "_tampered"
ROLLED_BACK_DIR = "_rolled_back"


@dataclass(frozen=True)
class Tampered:
    """A published version whose file is not the commit the catalog ratified."""

    version: int
    found: str
    expected: str

    @property
    def file(self) -> str:
        return f"_delta_log/{self.version:020d}.json"

    def describe(self) -> str:
        return (
            f"{self.file} differs from the commit the catalog ratified for version "
            f"{self.version} (SHA-256 {self.found}, ratified {self.expected}): it was changed "
            'in storage after publishing (catalogManaged RFC, "Publishing Commits"); an '
            'administrator repairs the table (docs/catalogs.md, "Repairing a table")'
        )


class _Digests:
    """SHA-256s of local files, by path, valid while the file's stat is unchanged."""

    def __init__(self, size: int = 4096) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[tuple[int, int, int, int], str]] = OrderedDict()
        self._size = size

    def get(self, path: str, signature: tuple[int, int, int, int]) -> str | None:
        with self._lock:
            item = self._items.get(path)
            if item is None or item[0] != signature:
                return None
            self._items.move_to_end(path)
            return item[1]

    def put(self, path: str, signature: tuple[int, int, int, int], digest: str) -> None:
        with self._lock:
            self._items[path] = (signature, digest)
            self._items.move_to_end(path)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_DIGESTS = _Digests()


def _local(location: str) -> str | None:
    local = location[len("file://") :] if location.startswith("file://") else location
    return None if "://" in local else local


def _digest_of(location: str, version: int, storage_options: dict[str, str] | None) -> str | None:
    """The SHA-256 of ``_delta_log/<version>.json``, or ``None`` when it does not exist."""
    from deltalog.catalog import ratification

    name = f"{version:020d}.json"
    local = _local(location)
    signature = None
    if local is not None and not storage_options:
        path = os.path.join(local, "_delta_log", name)
        try:
            info = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        signature = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        known = _DIGESTS.get(path, signature)
        if known is not None:
            return known
    try:
        content = ratification.read_log(location, name, storage_options)
    except InvalidArgumentError:
        return "(not a regular file of the table's log)"
    if content is None:
        return None
    digest = ratification.sha256_hex(content)
    if signature is not None and local is not None:
        _DIGESTS.put(os.path.join(local, "_delta_log", name), signature, digest)
    return digest


def _checkpoint_hint(location: str, storage_options: dict[str, str] | None) -> int | None:
    from deltalog.catalog import ratification

    try:
        text = ratification.read_log(location, "_last_checkpoint", storage_options, 1 << 20)
        version = json.loads(text or b"null")["version"]
    except (InvalidArgumentError, ValueError, TypeError, KeyError):
        return None
    return version if isinstance(version, int) and version >= 0 else None


def replayed_versions(
    record: TableRecord, first_held: int, storage_options: dict[str, str] | None
) -> list[int]:
    """The published versions a reader of the latest version replays: version 0 and those
    after the newest checkpoint (at most :data:`RECENT`), below ``first_held``."""
    hint = _checkpoint_hint(record.location, storage_options)
    start = max(1, (hint + 1) if hint is not None else 1, first_held - RECENT)
    return ([0] if first_held > 0 else []) + list(range(start, first_held))


def _recorded(store: Store, record: TableRecord, versions: list[int]) -> dict[int, CommitRecord]:
    """What the catalog recorded of ``versions`` (version 0, then a contiguous run, as
    :func:`replayed_versions` gives them): two range reads."""
    if not versions:
        return {}
    records = {r.version: r for r in store.commit_records(record.id, 0, 0)}
    if len(versions) > 1:
        records.update(
            (r.version, r) for r in store.commit_records(record.id, versions[1], versions[-1])
        )
    return records


def check_published(
    store: Store,
    record: TableRecord,
    storage_options: dict[str, str] | None = None,
) -> Tampered | None:
    """The first published version (of those a reader replays) whose file is not the commit
    the catalog ratified, or ``None``. A missing file (cleaned up behind a checkpoint) is not a
    mismatch."""
    if not record.managed or record.latest_version < 0:
        return None
    held = store.commits(record.id, None, None).commits
    first_held = held[0].version if held else record.latest_version + 1
    versions = replayed_versions(record, first_held, storage_options)
    if not versions:
        return None
    recorded = _recorded(store, record, versions)
    for v in versions:
        expected = recorded[v].sha256 if v in recorded else None
        if not expected:
            continue
        found = _digest_of(record.location, v, storage_options)
        if found is not None and found != expected:
            return Tampered(v, found, expected)
    return None


def require_local(location: str, what: str) -> str:
    local = _local(location)
    if local is None:
        raise InvalidArgumentError(
            f"{what} works on tables on local storage; {location} is on an object store: "
            "replace or move its log files with the store's own tools"
        )
    return local


def republish(
    store: Store, record: TableRecord, storage_options: dict[str, str] | None = None
) -> tuple[list[int], list[Tampered]]:
    """Replaces every tampered published file (of the versions readers replay) by the ratified
    commit, where the catalog can still find it: the staged commit file it ratified, checked
    against the recorded digest. Returns the versions republished and those it could not
    repair (no ratified copy left: roll the table back to the version before them)."""
    from deltalog.catalog import ratification

    local = require_local(record.location, "republishing")
    if storage_options:
        raise InvalidArgumentError("republishing works on local storage without options")
    held = store.commits(record.id, None, None).commits
    first_held = held[0].version if held else record.latest_version + 1
    repaired: list[int] = []
    left: list[Tampered] = []
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    log = os.path.join(local, "_delta_log")
    # A file in the place of a commit the catalog still holds (someone wrote `<v>.json` first,
    # by put-if-absent, so that the ratified commit could not be published): moved aside, and
    # the held commits published.
    foreign = [
        c.version
        for c in held
        if c.sha256 and _digest_of(record.location, c.version, None) not in (None, c.sha256)
    ]
    for v in foreign:
        _set_aside(log, v, stamp)
    if foreign:
        from deltalog import _native
        from deltalog.catalog.managed import TableCatalogClient

        _native.publish(record.location, held[-1].version, TableCatalogClient(store, record.id))
        repaired.extend(foreign)
    versions = replayed_versions(record, first_held, None)
    records = _recorded(store, record, versions)
    for v in versions:
        rec = records.get(v)
        if rec is None or not rec.sha256:
            continue
        found = _digest_of(record.location, v, None)
        if found is None or found == rec.sha256:
            continue
        tampered = Tampered(v, found, rec.sha256)
        content = None
        if rec.staged_path:
            try:
                content = ratification.read_staged(record.location, rec.staged_path)
            except InvalidArgumentError:
                content = None
        if content is None or ratification.sha256_hex(content) != rec.sha256:
            left.append(tampered)
            continue
        name = _set_aside(log, v, stamp)
        fd = os.open(os.path.join(log, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, content)
            os.fsync(fd)
        finally:
            os.close(fd)
        repaired.append(v)
    return repaired, left


def _set_aside(log: str, version: int, stamp: str) -> str:
    """Moves ``<version>.json`` to ``_delta_log/_tampered/``; its name."""
    aside = os.path.join(log, TAMPERED_DIR)
    os.makedirs(aside, exist_ok=True)
    name = f"{version:020d}.json"
    os.replace(os.path.join(log, name), os.path.join(aside, f"{name}.{stamp}"))
    return name


def quarantine_after(location: str, version: int) -> list[str]:
    """Moves every log file of a version after ``version`` (commits, checksums, checkpoints,
    compactions ending after it, and a ``_last_checkpoint`` naming one) to
    ``_delta_log/_rolled_back/<time>/``; returns the names moved."""
    from deltalog import _native

    local = require_local(location, "rolling back published versions")
    log = os.path.join(local, "_delta_log")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = os.path.join(log, ROLLED_BACK_DIR, stamp)
    moved: list[str] = []
    for name in sorted(os.listdir(log)):
        path = os.path.join(log, name)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        if name == "_last_checkpoint":
            hint = _checkpoint_hint(location, None)
            after = hint is None or hint > version
        else:
            last = _native.log_file_version(name)
            after = last is not None and last > version
        if after:
            os.makedirs(aside, exist_ok=True)
            os.replace(path, os.path.join(aside, name))
            moved.append(name)
    return moved
