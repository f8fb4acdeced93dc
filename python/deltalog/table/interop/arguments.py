"""deltalake's arguments on deltalog's verbs, checked in one place.

deltalake 1.6 gives most verbs a ``post_commithook_properties``, DML and MERGE a
``writer_properties`` (honoured: :func:`writer_properties_json`), MERGE an
``error_on_type_mismatch`` and spill limits. Each is honoured
where deltalog can do what deltalake documents, and refused with an
:class:`~deltalog.exceptions.InvalidArgumentError` naming the setting where it cannot: never
accepted and dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from deltalog.exceptions import InvalidArgumentError
from deltalog.table.optimize_args import cleans_up_after

if TYPE_CHECKING:
    from deltalog.write.writer import CommitProperties


class _Cleans(Protocol):
    def cleanup_metadata(self) -> list[str]: ...


def check_hooks(value: Any) -> bool:
    """Checks ``post_commithook_properties`` before anything is written; whether expired log
    files are cleaned up after the commit (see
    :class:`deltalog.PostCommitHookProperties`)."""
    return cleans_up_after(value)


def run_hooks(table: _Cleans, cleanup: bool, version: int | None) -> None:
    """After a commit (``version`` not None): deltalog has already checkpointed when
    ``delta.checkpointInterval`` divides the version ("Checkpoints"); ``cleanup`` (from
    :func:`check_hooks`) also removes expired log files now ("Metadata Cleanup")."""
    if cleanup and version is not None:
        table.cleanup_metadata()


def writer_properties_json(value: Any) -> str | None:
    """DELETE, UPDATE and MERGE encode the files they write with ``writer_properties``
    (deltalake's ``WriterProperties`` or deltalog's: compression, row groups, statistics,
    bloom filters), as ``write_table`` does; the JSON the native core takes, or None for
    deltalog's own settings."""
    from deltalog.table.optimize_args import writer_properties

    checked = writer_properties(value)
    return checked.to_json() if checked is not None else None


def refuse_lenient_casts(error_on_type_mismatch: bool, verb: str) -> None:
    """deltalog raises on a value that does not cast to its column's type; turning failed
    casts into nulls (``error_on_type_mismatch=False``) is not done."""
    if not error_on_type_mismatch:
        raise InvalidArgumentError(
            f"{verb}(error_on_type_mismatch=False) is not supported: deltalog raises when a "
            "value does not cast to its column's type, it never writes null instead"
        )


def refuse_spill_limits(max_spill_size: Any, max_temp_directory_size: Any) -> None:
    """MERGE's spill limits are DataFusion's; deltalog's MERGE has none to set."""
    for name, value in (
        ("max_spill_size", max_spill_size),
        ("max_temp_directory_size", max_temp_directory_size),
    ):
        if value is not None:
            raise InvalidArgumentError(
                f"merge({name}=...) is not supported: deltalog's MERGE has no spill limit "
                "to set (its memory is bounded by the files it rewrites)"
            )


def split_positional(
    method: str, args: tuple[Any, ...], commit: Any, hooks: Any
) -> tuple[Any, Any]:
    """deltalake's deprecated positional commit arguments (``post_commithook_properties,
    commit_properties`` after the named ones), recognised by their class."""
    from deltalog.table.optimize_args import split_commit_args

    return split_commit_args(method, args, commit, hooks)


def commit_props(value: Any) -> CommitProperties:
    """deltalog's :class:`~deltalog.CommitProperties` from ``value``: None, deltalog's, or
    deltalake's (its ``custom_metadata``, ``app_transactions`` and ``max_commit_retries``,
    checked as deltalog's constructor checks them)."""
    from deltalog.table.optimize_args import _is_deltalakes
    from deltalog.write.writer import CommitProperties

    if value is None:
        return CommitProperties()
    if isinstance(value, CommitProperties):
        return value
    if _is_deltalakes(value, "CommitProperties"):
        return CommitProperties(
            custom_metadata=dict(value.custom_metadata or {}),
            app_transactions=value.app_transactions,
            max_commit_retries=value.max_commit_retries,
        )
    raise InvalidArgumentError(
        "commit_properties must be a deltalog.CommitProperties or a deltalake.CommitProperties, "
        f"not {type(value).__name__}"
    )
