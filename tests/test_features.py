"""Tests of the table-feature registry (``deltalog.protocol.features``).

The registry is checked against the Delta protocol itself: the appendix "Valid Feature Names in
Table Features" and the "Writer/Reader Version Requirements" tables are parsed out of the stored
spec at test time, so the tests fail when the registry and the spec disagree.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from deltalog.exceptions import CatalogRequiredError, CorruptLogError, UnsupportedFeatureError
from deltalog.protocol import features
from deltalog.protocol.features import (
    FEATURES,
    check_readable,
    check_writable,
    is_active,
    min_protocol_for,
    reader_features_of,
    validate_protocol,
    writer_features_of,
)

# The spec lives in `shared/spec` beside the repository (DELTALOG_SHARED overrides, as in conftest).
SHARED = Path(os.environ.get("DELTALOG_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SPEC_DIR = SHARED / "spec"
PROTOCOL_SPEC = SPEC_DIR / "002_480a22627341214f.txt"
CATALOG_MANAGED_RFC = SPEC_DIR / "000_f168e7ca6de42a06.txt"


@dataclass(frozen=True)
class P:
    """A stand-in for a ``protocol`` action (the registry duck-types it)."""

    min_reader_version: int
    min_writer_version: int
    reader_features: Sequence[str] | None = None
    writer_features: Sequence[str] | None = None


def proto(
    reader: int,
    writer: int,
    reader_features: Sequence[str] | None = None,
    writer_features: Sequence[str] | None = None,
) -> P:
    """A well-formed protocol: empty lists where the versions require lists and none are given."""
    if reader >= 3 and reader_features is None:
        reader_features = []
    if writer >= 7 and writer_features is None:
        writer_features = []
    return P(reader, writer, reader_features, writer_features)


# ------------------------------------------------------------------------------------------------
# The spec, parsed
# ------------------------------------------------------------------------------------------------


def _spec_lines() -> list[str]:
    return PROTOCOL_SPEC.read_text(encoding="utf-8").splitlines()


def _section(title: str) -> list[str]:
    """The lines of the spec section headed ``title``, up to the next heading."""
    lines = _spec_lines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(rf"#+ {re.escape(title)}", line))
    body: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        body.append(line)
    return body


def spec_valid_feature_names() -> dict[str, tuple[str, str]]:
    """``name -> (kind, anchor)`` from the appendix "Valid Feature Names in Table Features"."""
    table: dict[str, tuple[str, str]] = {}
    for line in _section("Valid Feature Names in Table Features"):
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) != 3:
            continue
        link, name_cell, who = cells
        name = re.fullmatch(r"`([^`]+)`", name_cell)
        anchor = re.search(r"\]\(#([^)]+)\)", link)
        if name is None or anchor is None:
            continue
        who = who.lower()
        if who == "writers only":
            kind = "writer"
        elif who == "readers and writers":
            kind = "reader_writer"
        else:  # pragma: no cover - a new wording in the spec must be looked at
            raise AssertionError(f"unexpected 'Readers or Writers?' cell: {who!r}")
        table[name.group(1)] = (kind, anchor.group(1).lower())
    return table


def spec_version_requirements(title: str, prefix: str) -> dict[int, set[str]]:
    """``version -> anchors linked from its row`` of a "... Version Requirements" table."""
    rows: dict[int, set[str]] = {}
    for line in _section(title):
        match = re.match(rf"{prefix} Version (\d+) \|(.*)", line)
        if match:
            anchors = re.findall(r"\]\(#([^)]+)\)", match.group(2))
            rows[int(match.group(1))] = {anchor.lower() for anchor in anchors}
    return rows


def test_spec_tables_parse() -> None:
    names = spec_valid_feature_names()
    assert len(names) >= 17
    assert names["deletionVectors"] == ("reader_writer", "deletion-vectors")
    assert spec_version_requirements("Writer Version Requirements", "Writer").keys() == set(
        range(2, 8)
    )
    assert spec_version_requirements("Reader Version Requirements", "Reader").keys() == {2, 3}


# ------------------------------------------------------------------------------------------------
# The registry against the spec
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"), [(n, k) for n, (k, _) in spec_valid_feature_names().items()]
)
def test_every_valid_feature_name_is_registered_with_the_spec_kind(name: str, kind: str) -> None:
    assert name in FEATURES, f"{name} is in the spec's Valid Feature Names but not registered"
    assert FEATURES[name].kind == kind
    assert FEATURES[name].name == name


def _legacy_version_of(anchor: str, rows: dict[int, set[str]]) -> int | None:
    return min((v for v, anchors in rows.items() if anchor in anchors), default=None)


@pytest.mark.parametrize("name", sorted(spec_valid_feature_names()))
def test_legacy_versions_match_the_version_requirements_tables(name: str) -> None:
    """A feature's legacy version is the first row of the version table that links to it."""
    _, anchor = spec_valid_feature_names()[name]
    writer_rows = spec_version_requirements("Writer Version Requirements", "Writer")
    reader_rows = spec_version_requirements("Reader Version Requirements", "Reader")
    # Version 7 / 3 link to "Table Features", which is no feature.
    assert FEATURES[name].legacy_writer_version == _legacy_version_of(anchor, writer_rows)
    assert FEATURES[name].legacy_reader_version == _legacy_version_of(anchor, reader_rows)


EXTRA_FEATURES = {
    # Not in the stored spec's appendix; registered under both names (features.ALIASES).
    "inCommitTimestamp": "writer",
    "inCommitTimestamps": "writer",
    "typeWidening": "reader_writer",
    "typeWidening-preview": "reader_writer",
    "catalogManaged": "reader_writer",
    "catalogOwned-preview": "reader_writer",
    "variantType": "reader_writer",
    "variantType-preview": "reader_writer",
}


@pytest.mark.parametrize(("name", "kind"), sorted(EXTRA_FEATURES.items()))
def test_features_beyond_the_appendix_are_registered(name: str, kind: str) -> None:
    assert FEATURES[name].kind == kind
    assert FEATURES[name].legacy_reader_version is None
    assert FEATURES[name].legacy_writer_version is None


def test_registry_has_exactly_the_expected_names() -> None:
    assert set(FEATURES) == set(spec_valid_feature_names()) | set(EXTRA_FEATURES)


def test_spec_sections_are_headings_of_the_spec_or_the_rfc() -> None:
    headings = {
        line.lstrip("#").strip()
        for path in (PROTOCOL_SPEC, CATALOG_MANAGED_RFC)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }
    for feature in FEATURES.values():
        if feature.spec_section.startswith(features.UPSTREAM_ONLY):
            assert feature.name.split("-")[0] in {"typeWidening", "variantType"}
            continue
        assert feature.spec_section in headings, feature


def test_legacy_versions_follow_the_article() -> None:
    legacy = {
        name: (f.legacy_reader_version, f.legacy_writer_version)
        for name, f in FEATURES.items()
        if f.legacy_reader_version is not None or f.legacy_writer_version is not None
    }
    assert legacy == {
        "appendOnly": (None, 2),
        "invariants": (None, 2),
        "checkConstraints": (None, 3),
        "changeDataFeed": (None, 4),
        "generatedColumns": (None, 4),
        "columnMapping": (2, 5),
        "identityColumns": (None, 6),
    }


def test_support_flags_are_honest() -> None:
    readable_reader_features = {
        name for name, f in FEATURES.items() if f.kind == "reader_writer" and f.read_supported
    }
    assert readable_reader_features == {
        "catalogManaged",
        "catalogOwned-preview",
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
    }
    assert all(f.read_supported for f in FEATURES.values() if f.kind == "writer")
    # Writable: the legacy writer-version-2 features (invariants by refusing tables that have
    # any, which deltalog cannot evaluate yet), the change feed and deletion vectors (DELETE
    # and UPDATE write cdc files and DVs), column mapping, timestampNtz, and the checkpoint/vacuum
    # features
    # that govern operations deltalog does not perform yet.
    assert {n for n, f in FEATURES.items() if f.write_supported} == {
        "allowColumnDefaults",
        "appendOnly",
        "invariants",
        "changeDataFeed",
        "checkConstraints",
        "clustering",
        "columnMapping",
        "deletionVectors",
        "domainMetadata",
        "generatedColumns",
        "icebergCompatV1",
        "icebergCompatV2",
        "identityColumns",
        "inCommitTimestamp",
        "inCommitTimestamps",
        "rowTracking",
        "timestampNtz",
        "typeWidening",
        "v2Checkpoint",
        "vacuumProtocolCheck",
    }


def test_enablement_properties() -> None:
    assert {n: f.enablement_property for n, f in FEATURES.items() if f.enablement_property} == {
        "appendOnly": "delta.appendOnly",
        "changeDataFeed": "delta.enableChangeDataFeed",
        "columnMapping": "delta.columnMapping.mode",
        "deletionVectors": "delta.enableDeletionVectors",
        "rowTracking": "delta.enableRowTracking",
        "inCommitTimestamp": "delta.enableInCommitTimestamps",
        "inCommitTimestamps": "delta.enableInCommitTimestamps",
        "icebergCompatV1": "delta.enableIcebergCompatV1",
        "icebergCompatV2": "delta.enableIcebergCompatV2",
        "typeWidening": "delta.enableTypeWidening",
        "typeWidening-preview": "delta.enableTypeWidening",
    }


def test_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        FEATURES["x"] = FEATURES["appendOnly"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        FEATURES["appendOnly"].write_supported = True  # type: ignore[misc]


# ------------------------------------------------------------------------------------------------
# Legacy protocol versions
# ------------------------------------------------------------------------------------------------

# Written out by hand from "Writer Version Requirements" / "Reader Version Requirements" and the
# article, independently of the registry.
LEGACY_READER = {1: set(), 2: {"columnMapping"}}
LEGACY_WRITER: dict[int, set[str]] = {1: set(), 2: {"appendOnly", "invariants"}}
LEGACY_WRITER[3] = LEGACY_WRITER[2] | {"checkConstraints"}
LEGACY_WRITER[4] = LEGACY_WRITER[3] | {"changeDataFeed", "generatedColumns"}
LEGACY_WRITER[5] = LEGACY_WRITER[4] | {"columnMapping"}
LEGACY_WRITER[6] = LEGACY_WRITER[5] | {"identityColumns"}


@pytest.mark.parametrize("reader", [1, 2, 3])
@pytest.mark.parametrize("writer", [1, 2, 3, 4, 5, 6, 7])
def test_legacy_protocol_grid(reader: int, writer: int) -> None:
    p = proto(reader, writer)
    assert reader_features_of(p) == LEGACY_READER.get(reader, set())
    assert writer_features_of(p) == LEGACY_WRITER.get(writer, set())

    if reader == 3 and writer < 7:
        for check in (validate_protocol, check_readable, check_writable):
            with pytest.raises(CorruptLogError) as err:
                check(p)
            assert "Table Features for New and Existing Tables" in (err.value.rule or "")
        return

    # Every legacy feature is read-supported (columnMapping included).
    check_readable(p)
    blocking = sorted(
        n for n in reader_features_of(p) | writer_features_of(p) if not FEATURES[n].write_supported
    )
    if blocking:
        with pytest.raises(UnsupportedFeatureError) as err:
            check_writable(p)
        assert err.value.features == blocking
    else:
        check_writable(p)


def test_reader_features_list_is_ignored_below_reader_version_3() -> None:
    p = P(1, 7, ["typeWidening"], ["appendOnly"])
    assert reader_features_of(p) == frozenset()
    check_readable(p)


# ------------------------------------------------------------------------------------------------
# Explicit feature lists
# ------------------------------------------------------------------------------------------------


def test_spec_example_reader_2_writer_7() -> None:
    # "Protocol Evolution": reader version 2 with columnMapping only in writerFeatures.
    p = P(2, 7, None, ["columnMapping", "identityColumns"])
    assert reader_features_of(p) == {"columnMapping"}
    assert writer_features_of(p) == {"columnMapping", "identityColumns"}
    check_readable(p)
    same = P(3, 7, ["columnMapping"], ["columnMapping", "identityColumns"])
    assert reader_features_of(same) == reader_features_of(p)
    check_readable(same)


def test_article_example_with_deletion_vectors() -> None:
    p = P(
        3,
        7,
        ["deletionVectors"],
        [
            "deletionVectors",
            "checkConstraints",
            "generatedColumns",
            "invariants",
            "changeDataFeed",
            "appendOnly",
        ],
    )
    assert reader_features_of(p) == {"deletionVectors"}
    assert len(writer_features_of(p)) == 6
    check_readable(p)
    # Every feature of the article's example is writable now.
    assert all(FEATURES[n].write_supported for n in writer_features_of(p))
    check_writable(p)


@pytest.mark.parametrize(
    "name",
    [
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
    ],
)
def test_read_supported_reader_features(name: str) -> None:
    check_readable(P(3, 7, [name], [name]))


@pytest.mark.parametrize("name", ["catalogManaged", "catalogOwned-preview"])
def test_catalog_managed_tables_are_read_through_their_catalog(name: str) -> None:
    """The feature is readable; `DeltaTable` requires the table's catalog (or an explicit
    published-only read) instead (tests/test_catalog_read.py)."""
    p = P(3, 7, [name], [name, "inCommitTimestamps"])
    check_readable(p)
    assert features.is_catalog_managed(p)
    assert not features.is_catalog_managed(P(3, 7, [], ["inCommitTimestamps"]))
    # Written through the catalog only (RFC "Writer Requirements for Catalog-managed tables").
    with pytest.raises(CatalogRequiredError, match="through its catalog") as required:
        check_writable(p, table="file:///t")
    assert required.value.table == "file:///t"
    check_writable(p, through_catalog=True)
    # A feature no catalog makes writable is named first.
    with pytest.raises(UnsupportedFeatureError) as err:
        check_writable(P(3, 7, [name, "fooBar"], [name, "fooBar", "inCommitTimestamps"]))
    assert err.value.features == ["fooBar"]


def test_every_unsupported_reader_feature_is_named() -> None:
    p = P(
        3,
        7,
        ["catalogOwned-preview", "deletionVectors", "fooBar", "catalogManaged"],
        [
            "catalogOwned-preview",
            "deletionVectors",
            "fooBar",
            "catalogManaged",
            "inCommitTimestamps",
        ],
    )
    with pytest.raises(UnsupportedFeatureError) as err:
        check_readable(p)
    assert err.value.features == ["fooBar"]
    assert "fooBar (unknown)" in str(err.value)


def test_unknown_reader_feature_blocks_reads() -> None:
    with pytest.raises(UnsupportedFeatureError) as err:
        check_readable(P(3, 7, ["someFutureFeature"], ["someFutureFeature"]))
    assert err.value.features == ["someFutureFeature"]


def test_writer_only_features_never_block_reads() -> None:
    # Known and unknown writer features alike; they can still not be written.
    p = P(1, 7, None, ["icebergCompatV2", "domainMetadata", "someFutureWriterFeature"])
    check_readable(p)
    with pytest.raises(UnsupportedFeatureError) as err:
        check_writable(p)
    assert err.value.features == ["someFutureWriterFeature"]


def test_writable_requires_reader_features_too() -> None:
    # Writers must also respect reader features ("Table Features").
    with pytest.raises(UnsupportedFeatureError) as err:
        check_writable(P(3, 7, ["variantType"], ["variantType"]))
    assert err.value.features == ["variantType"]
    # Legacy reader version 2 implies columnMapping, which deltalog writes.
    check_writable(P(2, 7, None, []))


def test_unused_writer_features_are_tolerated_with_the_metadata() -> None:
    # Legacy writer 5 supports CHECK constraints, generated columns, ...: a table that declares
    # none asks nothing of a writer; one that declares some does.
    legacy = P(2, 5)
    check_writable(legacy, "{}", {})
    check_writable(P(1, 7, None, ["icebergCompatV1", "columnMapping"]), "{}", {})
    # A feature deltalog does not know counts as in use.
    with pytest.raises(UnsupportedFeatureError) as err:
        check_writable(P(1, 7, None, ["someFutureWriterFeature", "columnMapping"]), "{}", {})
    assert err.value.features == ["someFutureWriterFeature"]


def test_empty_feature_lists_are_readable_and_writable() -> None:
    for p in (P(3, 7, [], []), P(1, 7, None, []), P(1, 1)):
        check_readable(p)
        check_writable(p)


# ------------------------------------------------------------------------------------------------
# Protocol versions and malformed protocols
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("reader", "writer"), [(4, 7), (3, 8), (4, 8), (99, 2), (1, 10)])
def test_unknown_protocol_versions(reader: int, writer: int) -> None:
    for check in (check_readable, check_writable):
        with pytest.raises(UnsupportedFeatureError) as err:
            check(P(reader, writer, [], []))
        assert err.value.features == []
        assert f"minReaderVersion={reader}" in str(err.value)
        assert f"minWriterVersion={writer}" in str(err.value)


@pytest.mark.parametrize("writer", [1, 2, 3, 4, 5, 6])
def test_reader_3_with_writer_below_7_is_illegal(writer: int) -> None:
    with pytest.raises(CorruptLogError) as err:
        check_readable(P(3, writer, ["deletionVectors"], ["deletionVectors"]))
    assert err.value.rule is not None
    assert err.value.rule.startswith("Table Features for New and Existing Tables")


@pytest.mark.parametrize(
    ("p", "rule"),
    [
        (P(0, 2), "Protocol Evolution"),
        (P(1, 0), "Protocol Evolution"),
        (P(3, 7, None, ["deletionVectors"]), "Table Features"),
        (P(3, 7, ["deletionVectors"], None), "Table Features"),
        (P(1, 7, None, None), "Table Features"),
        (P(3, 7, ["deletionVectors"], []), "Supported Features"),
    ],
)
def test_malformed_protocols(p: P, rule: str) -> None:
    with pytest.raises(CorruptLogError) as err:
        check_readable(p)
    assert (err.value.rule or "").startswith(rule)


# ------------------------------------------------------------------------------------------------
# min_protocol_for
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        (set(), (1, 1, None, None)),
        ({"appendOnly"}, (1, 2, None, None)),
        ({"appendOnly", "invariants"}, (1, 2, None, None)),
        ({"checkConstraints"}, (1, 3, None, None)),
        ({"changeDataFeed"}, (1, 4, None, None)),
        ({"generatedColumns", "appendOnly"}, (1, 4, None, None)),
        ({"columnMapping"}, (2, 5, None, None)),
        ({"identityColumns"}, (1, 6, None, None)),
        ({"columnMapping", "identityColumns"}, (2, 6, None, None)),
        ({"domainMetadata"}, (1, 7, None, ["domainMetadata"])),
        ({"appendOnly", "inCommitTimestamp"}, (1, 7, None, ["appendOnly", "inCommitTimestamp"])),
        # The other name of in-commit timestamps is kept as given (a table's existing name)...
        ({"appendOnly", "inCommitTimestamps"}, (1, 7, None, ["appendOnly", "inCommitTimestamps"])),
        # ...and both names are one feature, listed once under the name deltalog writes.
        ({"inCommitTimestamp", "inCommitTimestamps"}, (1, 7, None, ["inCommitTimestamp"])),
        (
            {"columnMapping", "allowColumnDefaults"},
            (2, 7, None, ["allowColumnDefaults", "columnMapping"]),
        ),
        ({"deletionVectors"}, (3, 7, ["deletionVectors"], ["deletionVectors"])),
        (
            {"deletionVectors", "changeDataFeed"},
            (3, 7, ["deletionVectors"], ["changeDataFeed", "deletionVectors"]),
        ),
        (
            {"columnMapping", "timestampNtz"},
            (3, 7, ["columnMapping", "timestampNtz"], ["columnMapping", "timestampNtz"]),
        ),
        # Required features are added ("Row Tracking", "Clustered Table", "Iceberg
        # Compatibility V1", RFC "Writer Requirements for Catalog-managed tables").
        ({"rowTracking"}, (1, 7, None, ["domainMetadata", "rowTracking"])),
        ({"clustering"}, (1, 7, None, ["clustering", "domainMetadata"])),
        ({"icebergCompatV1"}, (2, 7, None, ["columnMapping", "icebergCompatV1"])),
        (
            {"catalogManaged"},
            (3, 7, ["catalogManaged"], ["catalogManaged", "inCommitTimestamp"]),
        ),
        # catalogManaged's requirement is met by either name of in-commit timestamps.
        (
            {"catalogManaged", "inCommitTimestamps"},
            (3, 7, ["catalogManaged"], ["catalogManaged", "inCommitTimestamps"]),
        ),
    ],
)
def test_min_protocol_for(
    wanted: set[str], expected: tuple[int, int, list[str] | None, list[str] | None]
) -> None:
    assert min_protocol_for(wanted) == expected
    assert min_protocol_for(iter(sorted(wanted))) == expected


def test_min_protocol_for_unknown_names() -> None:
    with pytest.raises(UnsupportedFeatureError) as err:
        min_protocol_for(["appendOnly", "zeta", "alpha"])
    assert err.value.features == ["alpha", "zeta"]


# ------------------------------------------------------------------------------------------------
# is_active
# ------------------------------------------------------------------------------------------------


def test_is_active_needs_support_and_enablement() -> None:
    # "Supported Features": appendOnly supported but delta.appendOnly not set -> not active.
    legacy = P(1, 2)
    assert not is_active("appendOnly", legacy, {})
    assert not is_active("appendOnly", legacy, {"delta.appendOnly": "false"})
    assert is_active("appendOnly", legacy, {"delta.appendOnly": "true"})
    assert is_active("appendOnly", legacy, {"delta.appendOnly": "TRUE"})
    # Not supported -> not active, whatever the properties say.
    assert not is_active("appendOnly", P(1, 1), {"delta.appendOnly": "true"})
    assert not is_active("appendOnly", P(1, 7, None, ["invariants"]), {"delta.appendOnly": "true"})
    assert is_active("appendOnly", P(1, 7, None, ["appendOnly"]), {"delta.appendOnly": "true"})
    # Features without an enablement property are active as soon as they are supported.
    assert is_active("invariants", legacy, {})
    assert is_active("timestampNtz", P(3, 7, ["timestampNtz"], ["timestampNtz"]), {})
    assert not is_active("timestampNtz", P(3, 7, [], []), {})


def test_is_active_column_mapping() -> None:
    p = P(2, 5)
    assert not is_active("columnMapping", p, {})
    assert not is_active("columnMapping", p, {"delta.columnMapping.mode": "none"})
    assert is_active("columnMapping", p, {"delta.columnMapping.mode": "name"})
    assert is_active("columnMapping", p, {"delta.columnMapping.mode": "id"})
    assert not is_active("columnMapping", P(1, 4), {"delta.columnMapping.mode": "name"})
    dv = P(3, 7, ["columnMapping"], ["columnMapping"])
    assert is_active("columnMapping", dv, {"delta.columnMapping.mode": "name"})


def test_is_active_deletion_vectors_and_others() -> None:
    p = P(3, 7, ["deletionVectors"], ["deletionVectors", "rowTracking", "domainMetadata"])
    assert not is_active("deletionVectors", p, {})
    assert is_active("deletionVectors", p, {"delta.enableDeletionVectors": "true"})
    assert not is_active("rowTracking", p, {"delta.enableRowTracking": "false"})
    assert is_active("rowTracking", p, {"delta.enableRowTracking": "true"})
    assert is_active("domainMetadata", p, {})
    assert not is_active("inCommitTimestamps", p, {"delta.enableInCommitTimestamps": "true"})


def test_is_active_unknown_name() -> None:
    with pytest.raises(UnsupportedFeatureError) as err:
        is_active("fooBar", P(1, 2), {})
    assert err.value.features == ["fooBar"]


# ------------------------------------------------------------------------------------------------
# Property test
# ------------------------------------------------------------------------------------------------


def _protocol_of(result: tuple[int, int, list[str] | None, list[str] | None]) -> P:
    return P(*result)


@settings(max_examples=300, deadline=None)
@given(st.frozensets(st.sampled_from(sorted(FEATURES))))
def test_min_protocol_for_properties(wanted: frozenset[str]) -> None:
    result = min_protocol_for(wanted)
    p = _protocol_of(result)
    reader, writer, reader_list, writer_list = result

    # The protocol is well formed and of a known version.
    validate_protocol(p)
    assert (reader_list is not None) == (reader == 3)
    assert (writer_list is not None) == (writer == 7)
    for names in (reader_list, writer_list):
        if names is not None:
            assert names == sorted(set(names))

    supported = reader_features_of(p) | writer_features_of(p)
    needed = set(wanted)
    while any(not features.supports(needed, d) for n in needed for d in FEATURES[n].requires):
        needed |= {
            d for n in needed for d in FEATURES[n].requires if not features.supports(needed, d)
        }
    # A feature asked for under both of its names is listed once, under the name deltalog
    # writes (features.ALIASES): no protocol lists both.
    needed -= {a for a, n in features.ALIASES.items() if n in needed}
    assert len(supported & features.IN_COMMIT_TIMESTAMP_NAMES) <= 1
    # It supports everything asked (under one of its names), and everything those features
    # require.
    assert all(features.supports(supported, n) for n in wanted)
    assert wanted - set(features.ALIASES) <= supported
    for name in supported:
        assert all(features.supports(supported, d) for d in FEATURES[name].requires)
    # Reader-writer features asked for are reader features of the protocol, and all of them are
    # listed in writerFeatures too when writer version 7 is used ("Supported Features").
    wanted_reader = {n for n in wanted if FEATURES[n].kind == "reader_writer"}
    assert wanted_reader <= reader_features_of(p)
    if writer_list is not None:
        assert reader_features_of(p) <= set(writer_list)
    # Explicit lists hold exactly the needed features; legacy versions are the smallest ones.
    if writer_list is None:
        assert all(FEATURES[n].legacy_writer_version is not None for n in needed)
        assert writer == max((FEATURES[n].legacy_writer_version or 1 for n in needed), default=1)
    else:
        assert set(writer_list) == needed
    if reader_list is None:
        assert reader == (2 if "columnMapping" in needed else 1)
    else:
        assert any(FEATURES[n].legacy_reader_version is None for n in reader_list)

    # Readability agrees with the registry's read support of the reader features.
    blocking = sorted(n for n in reader_features_of(p) if not FEATURES[n].read_supported)
    if blocking:
        with pytest.raises(UnsupportedFeatureError) as err:
            check_readable(p)
        assert err.value.features == blocking
    else:
        check_readable(p)
    # Writable exactly when every feature of the protocol is write-supported; a
    # catalog-managed one through its catalog only (RFC "Writer Requirements for
    # Catalog-managed tables").
    managed = supported & features.CATALOG_MANAGED
    if any(not FEATURES[n].write_supported for n in supported - managed):
        with pytest.raises(UnsupportedFeatureError):
            check_writable(p, through_catalog=True)
    elif managed:
        with pytest.raises(CatalogRequiredError):
            check_writable(p)
        check_writable(p, through_catalog=True)
    else:
        check_writable(p)
