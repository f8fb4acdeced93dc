"""What a catalog client does when the catalog refuses version 0 of a table it is creating:
the files that version's commit wrote are deleted, so that a failed creation leaves nothing in
the warehouse (catalogManaged RFC, "Creating and Dropping Catalog-managed Tables": a table
exists once the catalog ratified its version 0; before that, its files are no one's).

Only files the refused commit names are deleted — its ``add`` and ``cdc`` files (relative
paths inside the table, URI-decoded once as "Add File and Remove File" says), its staged
commit file and, for a Unity Catalog creation that publishes version 0 before ``createTable``,
the published ``_delta_log/00000000000000000000.json`` — then the directories they leave empty.
Their names are unique to this writer, so a concurrent creator's files are never touched. Only
refusals are cleaned up (:func:`refused`): after an unknown outcome the commit may have been
ratified, and its files stay.
"""

from __future__ import annotations

import json
import logging
import os
from urllib.parse import quote, unquote

from deltalog.exceptions import AlreadyExistsError, CommitConflictError, InvalidArgumentError

_log = logging.getLogger("deltalog")

#: The errors that mean the catalog did not ratify the version: it refused the proposal, or
#: another creator won the name.
REFUSALS = (InvalidArgumentError, CommitConflictError, AlreadyExistsError)


def refused(error: BaseException) -> bool:
    """Whether ``error`` says the catalog did not ratify the commit (not an unknown
    outcome)."""
    return isinstance(error, REFUSALS)


def _relative(raw: str) -> str | None:
    """A commit's file path, URI-decoded once, when it is relative and inside the table."""
    decoded = unquote(raw, errors="strict")
    parts = decoded.split("/")
    if not decoded or decoded.startswith("/") or "://" in decoded or decoded.startswith("file:"):
        return None
    if any(p in ("", ".", "..") for p in parts) or "\\" in decoded or "\x00" in decoded:
        return None
    return decoded


def written_files(content: bytes) -> list[str]:
    """The table-relative files a commit's ``add`` and ``cdc`` actions name."""
    found = []
    for line in content.decode("utf-8", errors="replace").splitlines():
        try:
            action = json.loads(line) if line.strip() else {}
        except ValueError:
            continue
        for kind in ("add", "cdc"):
            body = action.get(kind) if isinstance(action, dict) else None
            if isinstance(body, dict) and isinstance(body.get("path"), str):
                relative = _relative(body["path"])
                if relative is not None:
                    found.append(relative)
    return found


def discard_created_files(
    location: str,
    path: str | None,
    content: bytes | None,
    storage_options: dict[str, str] | None = None,
    published: bool = False,
) -> None:
    """Deletes what the refused version 0 of the new table at ``location`` wrote (see the
    module docs): its staged commit ``path`` (or inline ``content``), the files it names,
    ``00000000000000000000.json`` when ``published``, and the directories left empty. Never
    raises: a failure to clean up is logged, and the catalog's refusal is what the caller
    raises."""
    try:
        if content is None and path is not None:
            content = _staged(location, path, storage_options)
        relative = written_files(content or b"")
        if path is not None:
            relative.append(f"_delta_log/_staged_commits/{path}")
        if published:
            relative.append("_delta_log/00000000000000000000.json")
        _delete(location, relative, storage_options)
    except Exception as e:  # the refusal matters, not this
        _log.warning("the files of the refused table at %s were not all deleted: %s", location, e)


def _local(location: str) -> str | None:
    local = location[len("file://") :] if location.startswith("file://") else location
    return None if "://" in local else local


def _staged(location: str, name: str, storage_options: dict[str, str] | None) -> bytes | None:
    """The refused staged commit's content: the file this writer wrote, read where it wrote
    it (also through a linked ``_delta_log``, which is why the catalog refused it)."""
    from deltalog.catalog.ratification import MAX_STAGED_COMMIT_BYTES, read_staged

    local = _local(location)
    if local is None:
        return read_staged(location, name, storage_options)
    if "/" in name or name in (".", ".."):
        return None
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(os.path.join(local, "_delta_log", "_staged_commits", name), flags)
    try:
        return os.read(fd, MAX_STAGED_COMMIT_BYTES)
    finally:
        os.close(fd)


def _delete(location: str, relative: list[str], storage_options: dict[str, str] | None) -> None:
    local = _local(location)
    if local is not None:
        root = os.path.realpath(local)
        folders = set()
        for rel in relative:
            file = os.path.join(root, *rel.split("/"))
            parent = os.path.realpath(os.path.dirname(file))
            inside = parent == root or parent.startswith(root + os.sep)
            if not inside and not rel.startswith("_delta_log/"):
                # A data file's directory linked elsewhere: nothing there is this table's.
                # (The log's files are this writer's own, wherever _delta_log leads.)
                continue
            try:
                os.unlink(file)  # a link itself, never what it points to
            except FileNotFoundError:
                pass
            parent = os.path.dirname(file)
            while parent.startswith(root + os.sep):
                folders.add(parent)
                parent = os.path.dirname(parent)
        for folder in [*sorted(folders, key=len, reverse=True), root]:
            try:
                os.rmdir(folder)  # only when empty
            except OSError:
                pass
        return
    from deltalog import _native

    for rel in relative:
        # One object: its URI percent-encoded, as the store decodes it.
        uri = location.rstrip("/") + "/" + "/".join(quote(p, safe="") for p in rel.split("/"))
        _native.delete_tree(uri, storage_options)
