"""What a proposed commit changes, read from its content: the catalog server's governance
decides from this, never from anything the client says about its commit.

A commit (Delta protocol, "Delta Log Entries": newline-delimited JSON actions) that carries a
``protocol`` or ``metaData`` action differing from the table's current one changes the table's
features, schema, partitioning or properties; every other commit (``add``, ``remove``,
``cdc``, ``txn``, ``domainMetadata``, ``commitInfo``, …) changes data only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class InvalidCommitError(ValueError):
    """The content is not a Delta commit."""


@dataclass(frozen=True)
class CommitContent:
    """The parts of a commit the catalog looks at.

    Attributes:
        protocol: the JSON text of its ``protocol`` action, if any.
        metadata: the JSON text of its ``metaData`` action, if any.
        actions: how many actions it has.
    """

    protocol: str | None
    metadata: str | None
    actions: int

    def changes_table_definition(
        self, current_protocol: str | None, current_metadata: str | None
    ) -> list[str]:
        """What this commit changes beyond data, compared with the table's current protocol
        and metadata (JSON, ``None`` when unknown): ``"protocol"`` and/or ``"metadata"``."""
        changed = []
        if self.protocol is not None and _differs(self.protocol, current_protocol):
            changed.append("protocol")
        if self.metadata is not None and _differs(self.metadata, current_metadata):
            changed.append("metadata")
        return changed


def _differs(new: str, current: str | None) -> bool:
    if current is None:
        return True
    try:
        return bool(json.loads(new) != json.loads(current))
    except ValueError:
        return True


def parse_commit(content: bytes, version: int) -> CommitContent:
    """Reads a commit's actions.

    Raises:
        InvalidCommitError: not UTF-8, a line that is not a JSON object with exactly one
            action, two ``protocol`` or ``metaData`` actions, or version 0 without both.
    """
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidCommitError(f"commit {version} is not UTF-8: {e}") from e
    protocol: str | None = None
    metadata: str | None = None
    actions = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            action: Any = json.loads(line)
        except ValueError as e:
            raise InvalidCommitError(f"commit {version}, line {number}: not JSON ({e})") from e
        if not isinstance(action, dict) or len(action) != 1:
            raise InvalidCommitError(
                f"commit {version}, line {number}: an action is a JSON object with one key"
            )
        ((kind, body),) = action.items()
        actions += 1
        if kind in ("protocol", "metaData"):
            if not isinstance(body, dict):
                raise InvalidCommitError(
                    f"commit {version}, line {number}: {kind} is not an object"
                )
            encoded = json.dumps(body, separators=(",", ":"))
            if kind == "protocol":
                if protocol is not None:
                    raise InvalidCommitError(f"commit {version} has two protocol actions")
                protocol = encoded
            else:
                if metadata is not None:
                    raise InvalidCommitError(f"commit {version} has two metaData actions")
                metadata = encoded
    if actions == 0:
        raise InvalidCommitError(f"commit {version} has no actions")
    if version == 0 and (protocol is None or metadata is None):
        raise InvalidCommitError(
            "commit 0 creates the table: it needs a protocol and a metaData action"
        )
    return CommitContent(protocol, metadata, actions)
