"""The client-side API a catalog implements for deltalog (catalogManaged RFC: "Sample Catalog
Client API", "Getting Ratified Commits from the Catalog", "Commit Protocol")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from deltalog.exceptions import InvalidArgumentError


@dataclass(frozen=True)
class RatifiedCommit:
    """A commit the catalog ratified for ``version``: a staged commit (``path``: its file name
    in ``_delta_log/_staged_commits/``, ``<version>.<uuid>.json``, or its full URI) or an
    inline commit (``content``: its newline-delimited JSON actions, held by the catalog).

    Attributes:
        version: the table version.
        path: the staged commit file, for a staged commit.
        content: the commit's actions, for an inline commit.
        timestamp: when the catalog ratified it, in milliseconds since the epoch, if known
            (readers take commit times from in-commit timestamps, never from this).
        sha256: the SHA-256 (lowercase hex) of the content the catalog ratified, if it
            recorded it: deltalog reads the commit only if its content still has that hash
            ("Publishing Commits": the content of a ratified commit is immutable).
    """

    version: int
    path: str | None = None
    content: bytes | None = None
    timestamp: int | None = None
    sha256: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.version, bool) or not isinstance(self.version, int):
            raise TypeError(f"version must be an int, not {type(self.version).__name__}")
        if self.version < 0:
            raise InvalidArgumentError(f"a commit version cannot be negative: {self.version}")
        if (self.path is None) == (self.content is None):
            raise InvalidArgumentError(
                f"ratified commit {self.version} needs exactly one of path (staged) and "
                "content (inline)"
            )
        if isinstance(self.content, str):
            object.__setattr__(self, "content", self.content.encode())

    @property
    def is_inline(self) -> bool:
        """Whether the catalog holds the commit's content itself."""
        return self.content is not None


@dataclass(frozen=True)
class RatifiedCommits:
    """The catalog's answer to :meth:`CatalogClient.get_ratified_commits`.

    Attributes:
        commits: the ratified commits the catalog still holds in the requested range, ascending
            and contiguous (possibly empty: everything was published).
        latest_version: the table's latest ratified version, authoritative: readers ignore
            any published file of a later version.
        published: the SHA-256 (lowercase hex) the catalog recorded for published versions,
            by version: any of those in the requested range (the rest come from
            ``published_digests``). deltalog reads a published commit it has a digest for only
            if its content still has that hash (:class:`deltalog.LogIntegrityError`
            otherwise). ``None`` (the default): the catalog records none, and published
            commits are read as they are.
    """

    commits: Sequence[RatifiedCommit] = field(default_factory=tuple)
    latest_version: int = -1
    published: Mapping[int, str] | None = None

    def native(
        self,
    ) -> tuple[
        int,
        list[tuple[int, str | None, bytes | None, int | None, str | None]],
        dict[int, str] | None,
    ]:
        """The form the native core takes."""
        return (
            self.latest_version,
            [(c.version, c.path, c.content, c.timestamp, c.sha256) for c in self.commits],
            None if self.published is None else dict(self.published),
        )


#: What :meth:`CatalogClient.commit` answers for a proposal it takes into a transaction over
#: several tables, to ratify later together with the others (or not at all).
DEFERRED = "deferred"

#: The maintenance operations deltalog clears with a catalog that has policies
#: (:meth:`CatalogClient.allow_maintenance`; catalogManaged RFC, "Maintenance Operations on
#: Catalog-managed Tables").
MAINTENANCE_OPERATIONS = (
    "checkpoint",
    "log_compaction",
    "checksum",
    "metadata_cleanup",
    "vacuum",
)


@runtime_checkable
class CatalogClient(Protocol):
    """What deltalog needs from the catalog that manages a catalog-managed table.

    ``get_ratified_commits`` is all a reader needs; writers also call ``commit`` and
    ``published`` (a read-only adapter may leave those raising). Optional members:

    - ``max_inline_commit_bytes`` (attribute, default 0): commits up to that size are proposed
      inline instead of staged;
    - ``published_digests(start_version, end_version) -> Mapping[int, str]``: the SHA-256
      the catalog recorded for each published version in the range (see
      :attr:`RatifiedCommits.published`), asked for the versions a reader replays that
      ``get_ratified_commits`` left out;
    - ``allow_maintenance(operation, version) -> bool``: the catalog's maintenance policy,
      asked before every checkpoint, log compaction, checksum file, metadata cleanup and
      VACUUM (``operation`` is one of :data:`MAINTENANCE_OPERATIONS`); without it everything
      is allowed.

    deltalog calls these methods from its own threads (with the GIL held), possibly from
    several at once: implementations must be thread-safe.
    """

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        """The ratified commits the catalog holds with versions in ``[start_version,
        end_version]`` (all of them when both are ``None``), ascending and contiguous, and the
        table's latest ratified version."""
        ...

    def commit(
        self,
        version: int,
        path: str | None = None,
        content: bytes | None = None,
        protocol: str | None = None,
        metadata: str | None = None,
    ) -> str | None:
        """Ratifies a proposed commit as ``version``: a staged commit (``path``: its file name in
        ``_delta_log/_staged_commits/``, already written) or an inline one (``content``). The
        catalog must ratify ``version`` at most once and only after ``version - 1``
        ("Commit Protocol"). When another commit was ratified for ``version`` first, raise
        :class:`deltalog.CommitConflictError` with ``ratified=`` the catalog's
        :class:`RatifiedCommits` from ``version`` on (deltalog then checks the winners and
        retries at the next version). Any other exception fails the write as
        :class:`deltalog.CatalogError`.

        ``protocol`` and ``metadata`` are the JSON of the commit's ``protocol`` and
        ``metaData`` actions, passed only when it has them, so that the catalog can keep the
        table's latest protocol and metadata (the RFC encourages it).

        Returns ``None`` once ratified, or :data:`DEFERRED` when the catalog takes the proposal
        into a transaction over several tables and ratifies it later (deltalog then neither
        publishes it nor runs maintenance for it)."""
        ...

    def published(self, version: int) -> None:
        """Every version up to ``version`` is now published as ``_delta_log/<v>.json``
        ("Publishing Commits"): the catalog may stop holding those commits."""
        ...
