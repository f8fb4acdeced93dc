"""Typed catalog errors through the native layer (issue #30, section 3).

An exception a catalog client raises that is a ``deltalog.exceptions.DeltaError`` reaches the
caller as that very object (class and attributes), whichever deltalog call went through the
client; any other exception becomes a ``CatalogError`` naming the call, with the original as
its ``__cause__``. Writing a catalog-managed table without its catalog raises
``CatalogRequiredError`` (catalogManaged RFC, "Writer Requirements for Catalog-managed
tables").

The client is a SQLite catalog's own ``TableCatalogClient`` wrapped so that one method raises a
chosen exception while armed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog as dl
from deltalog import _native
from deltalog.catalog import RatifiedCommits

TABLE = "t"


class Raising:
    """A catalog client over ``inner`` whose method ``method`` raises ``error`` once armed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.max_inline_commit_bytes = inner.max_inline_commit_bytes
        self.method: str | None = None
        self.error: BaseException | None = None
        self.calls: list[str] = []

    def arm(self, method: str, error: BaseException) -> Raising:
        self.method, self.error = method, error
        return self

    def _call(self, method: str) -> None:
        self.calls.append(method)
        if self.method == method and self.error is not None:
            raise self.error

    def get_ratified_commits(
        self, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        self._call("get_ratified_commits")
        return self.inner.get_ratified_commits(start_version, end_version)

    def commit(self, version: int, **kwargs: Any) -> Any:
        self._call("commit")
        return self.inner.commit(version, **kwargs)

    def published(self, version: int) -> None:
        self._call("published")
        self.inner.published(version)

    def allow_maintenance(self, operation: str, version: int) -> bool:
        self._call("allow_maintenance")
        return True


class AdapterError(dl.CatalogError):
    """A catalog adapter's own subclass, with an attribute of its own."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message, table="somewhere")
        self.code = code


def typed_errors() -> list[tuple[str, Callable[[], BaseException], dict[str, Any]]]:
    """Each deltalog exception a client may raise, made anew per test, and its attributes."""
    return [
        (
            "permission",
            lambda: dl.CatalogPermissionError("role reader cannot commit", table="cat.t"),
            {"table": "cat.t", "unauthenticated": False},
        ),
        (
            "authentication",
            lambda: dl.CatalogAuthenticationError("token expired", table="cat.t"),
            {"table": "cat.t", "unauthenticated": True},
        ),
        (
            "unavailable",
            lambda: dl.CatalogUnavailableError("503 from the catalog", table="cat.t"),
            {"table": "cat.t"},
        ),
        (
            "outcome_unknown",
            lambda: dl.CommitOutcomeUnknownError("answer lost", table="cat.t", version=7),
            {"table": "cat.t", "version": 7},
        ),
        ("throttled", lambda: dl.CatalogThrottledError("too many"), {"table": None}),
        ("invalid_argument", lambda: dl.InvalidArgumentError("bad name"), {}),
        ("adapter_subclass", lambda: AdapterError("its own", code=42), {"code": 42}),
    ]


ERRORS = typed_errors()
IDS = [name for name, _, _ in ERRORS]


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Any]:
    cat = dl.connect_catalog(
        {"type": "sqlite", "path": str(tmp_path / "cat.db"), "warehouse": str(tmp_path / "wh")}
    )
    cat.write_table(TABLE, pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    yield cat


def opened(catalog: Any) -> tuple[dl.DeltaTable, Raising]:
    client = Raising(catalog.catalog_client(TABLE))
    uri = catalog.load_table(TABLE).table_uri
    return dl.DeltaTable(uri, catalog_client=client), client


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64())})


def check_same(
    raised: pytest.ExceptionInfo[BaseException], error: BaseException, attrs: Any
) -> None:
    assert raised.value is error
    assert type(raised.value) is type(error)
    for name, value in attrs.items():
        assert getattr(raised.value, name) == value


# -- typed errors arrive unchanged ----------------------------------------------------------


@pytest.mark.parametrize(("name", "make", "attrs"), ERRORS, ids=IDS)
def test_opening_through_the_client(catalog: Any, name: str, make: Any, attrs: Any) -> None:
    client = Raising(catalog.catalog_client(TABLE))
    uri = catalog.load_table(TABLE).table_uri
    error = make()
    client.arm("get_ratified_commits", error)
    with pytest.raises(dl.DeltaError) as raised:
        dl.DeltaTable(uri, catalog_client=client)
    check_same(raised, error, attrs)


@pytest.mark.parametrize(("name", "make", "attrs"), ERRORS, ids=IDS)
def test_write_table_commit(catalog: Any, name: str, make: Any, attrs: Any) -> None:
    t, client = opened(catalog)
    error = make()
    client.arm("commit", error)
    with pytest.raises(dl.DeltaError) as raised:
        dl.write_table(t, rows(4), mode="append")
    check_same(raised, error, attrs)
    # Nothing was ratified.
    assert catalog.load_table(TABLE).version() == 0


@pytest.mark.parametrize(("name", "make", "attrs"), ERRORS, ids=IDS)
def test_dml_and_optimize_commit(catalog: Any, name: str, make: Any, attrs: Any) -> None:
    t, client = opened(catalog)
    statements: list[tuple[str, Callable[[], Any]]] = [
        ("delete", lambda: t.delete("id = 1")),
        ("update", lambda: t.update({"id": "id + 10"}, predicate="id = 2")),
        (
            "merge",
            lambda: (
                t.merge(rows(3, 9), "target.id = source.id", target_alias="target")
                .when_matched_delete()
                .when_not_matched_insert_all()
                .execute()
            ),
        ),
        ("optimize", lambda: t.optimize.compact()),
    ]
    dl.write_table(t, rows(5), mode="append")  # two files, so that compaction commits
    t.update_incremental()
    for _name, run in statements:
        error = make()
        client.arm("commit", error)
        with pytest.raises(dl.DeltaError) as raised:
            run()
        check_same(raised, error, attrs)
    assert catalog.load_table(TABLE).version() == 1


@pytest.mark.parametrize(("name", "make", "attrs"), ERRORS, ids=IDS)
def test_maintenance_asking_the_catalog(catalog: Any, name: str, make: Any, attrs: Any) -> None:
    t, client = opened(catalog)
    operations: list[Callable[[], Any]] = [
        lambda: t.create_checkpoint(),
        lambda: t.compact_logs(0, 0),
        lambda: t.cleanup_metadata(),
        lambda: t.vacuum(dry_run=False),
    ]
    for method in ("allow_maintenance", "published"):
        for run in operations:
            error = make()
            client.arm(method, error)
            with pytest.raises(dl.DeltaError) as raised:
                run()
            check_same(raised, error, attrs)


@pytest.mark.parametrize(("name", "make", "attrs"), ERRORS, ids=IDS)
def test_native_publish(catalog: Any, name: str, make: Any, attrs: Any) -> None:
    t, client = opened(catalog)
    for method in ("get_ratified_commits", "published"):
        error = make()
        client.arm(method, error)
        with pytest.raises(dl.DeltaError) as raised:
            _native.publish(t.table_uri, 0, client)
        check_same(raised, error, attrs)


def test_an_error_while_resolving_a_conflict_arrives_unchanged(catalog: Any) -> None:
    """A CommitConflictError without the winners makes deltalog ask for them; what that call
    raises is the caller's answer (and the conflict stays the rebase signal, not an error)."""
    t, client = opened(catalog)
    unavailable = dl.CatalogUnavailableError("gone while asked", table="cat.t")

    class Lost(Raising):
        def commit(self, version: int, **kwargs: Any) -> Any:
            self.arm("get_ratified_commits", unavailable)
            raise dl.CommitConflictError("taken", version=version)

    lost = Lost(client.inner)
    t = dl.DeltaTable(t.table_uri, catalog_client=lost)
    with pytest.raises(dl.CatalogUnavailableError) as raised:
        dl.write_table(t, rows(4), mode="append")
    assert raised.value is unavailable


def test_an_unknown_outcome_whose_commit_landed_can_be_retried_idempotently(
    catalog: Any,
) -> None:
    """The commit was ratified but its answer was lost: the caller learns that the outcome is
    unknown (not a refusal), and a retry of the same application transaction is skipped
    ("Transaction Identifiers") instead of committing the rows twice."""
    t, client = opened(catalog)

    class AnswerLost(Raising):
        def commit(self, version: int, **kwargs: Any) -> Any:
            self.inner.commit(version, **kwargs)
            raise dl.CommitOutcomeUnknownError("answer lost", table="cat.t", version=version)

    t = dl.DeltaTable(t.table_uri, catalog_client=AnswerLost(client.inner))
    job = dl.CommitProperties(app_id="job-7", app_version=1)
    with pytest.raises(dl.CommitOutcomeUnknownError) as raised:
        dl.write_table(t, rows(4), mode="append", commit_properties=job)
    assert raised.value.version == 1
    again = catalog.load_table(TABLE)
    assert dl.write_table(again, rows(4), mode="append", commit_properties=job) == 1
    assert sorted(catalog.load_table(TABLE).to_pyarrow_table()["id"].to_pylist()) == [1, 2, 3, 4]


# -- other exceptions become CatalogError with the original as __cause__ ----------------------


@pytest.mark.parametrize(
    ("method", "run"),
    [
        ("get_ratified_commits", "open"),
        ("commit", "write"),
        ("commit", "delete"),
        ("allow_maintenance", "checkpoint"),
        ("published", "publish"),
    ],
)
def test_a_foreign_exception_is_a_catalog_error_with_its_cause(
    catalog: Any, method: str, run: str
) -> None:
    t, client = opened(catalog)
    error = RuntimeError("the adapter broke")
    client.arm(method, error)
    calls: dict[str, Callable[[], Any]] = {
        "open": lambda: dl.DeltaTable(t.table_uri, catalog_client=client),
        "write": lambda: dl.write_table(t, rows(4), mode="append"),
        "delete": lambda: t.delete("id = 1"),
        "checkpoint": lambda: t.create_checkpoint(),
        "publish": lambda: _native.publish(t.table_uri, 0, client),
    }
    with pytest.raises(dl.CatalogError) as raised:
        calls[run]()
    assert type(raised.value) is dl.CatalogError
    assert raised.value.__cause__ is error
    assert f"{method} raised RuntimeError: the adapter broke" in str(raised.value)
    assert raised.value.table == t.table_uri


# -- writes by path ----------------------------------------------------------------------------


def test_writes_by_path_raise_catalog_required(catalog: Any) -> None:
    uri = catalog.load_table(TABLE).table_uri
    log = Path(catalog.load_table(TABLE).table_uri.removeprefix("file://")) / "_delta_log"
    before = sorted(p.name for p in log.rglob("*"))
    with pytest.raises(dl.CatalogRequiredError, match="through its catalog") as raised:
        dl.write_table(uri, rows(4), mode="append")
    assert raised.value.table == uri
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = dl.DeltaTable(uri, published_only=True)
    # Reads by path with published_only keep working.
    assert t.to_pyarrow_table().num_rows == 3
    writes: list[Callable[[], Any]] = [
        lambda: dl.write_table(t, rows(4), mode="append"),
        lambda: dl.write_table(t, rows(4), mode="overwrite"),
        lambda: t.delete("id = 1"),
        lambda: t.update({"id": "id + 1"}),
        lambda: (
            t.merge(rows(1), "target.id = source.id", target_alias="target")
            .when_matched_delete()
            .execute()
        ),
        lambda: t.optimize.compact(),
        lambda: t.vacuum(dry_run=False),
        lambda: t.create_checkpoint(),
        lambda: t.compact_logs(0, 0),
        lambda: t.cleanup_metadata(),
        lambda: t.alter.set_properties({"delta.appendOnly": "false"}),
        lambda: t.restore(0),
        lambda: t.transaction(),
    ]
    for write in writes:
        with pytest.raises(dl.CatalogRequiredError) as raised:
            write()
        assert raised.value.table == uri
    assert sorted(p.name for p in log.rglob("*")) == before
    assert catalog.load_table(TABLE).version() == 0
