"""The table-feature registry: every feature name deltalog knows, its kind (reader-writer or
writer-only), the legacy protocol versions that imply it, what it requires, and whether deltalog
reads and writes it (protocol "Table Features", "Supported Features", the appendix "Valid
Feature Names in Table Features", and each feature's section; the table-features article's map
from legacy versions to feature sets). When support for a feature lands, flip its
``read_supported`` / ``write_supported`` flag here and nowhere else. The decisions made from it
(may deltalog read or write this table?) are in :mod:`deltalog.protocol.features`, which
re-exports these names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Protocol

FeatureKind = Literal["reader_writer", "writer"]

# "Reader Version Requirements" / "Writer Version Requirements": the newest protocol versions.
# Reader Version 3 and Writer Version 7 are the last ones ever introduced (article: "These are
# the last protocol versions to be introduced by the Delta Lake protocol").
MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7
#: The reader version from which ``readerFeatures`` lists the reader features ("Table Features").
TABLE_FEATURES_READER_VERSION = 3
#: The writer version from which ``writerFeatures`` lists the writer features ("Table Features").
TABLE_FEATURES_WRITER_VERSION = 7


class ProtocolLike(Protocol):
    """Anything shaped like a ``protocol`` action (spec "Protocol Evolution").

    The native snapshot's protocol, a test stand-in or a parsed JSON wrapper all qualify.
    """

    @property
    def min_reader_version(self) -> int: ...

    @property
    def min_writer_version(self) -> int: ...

    @property
    def reader_features(self) -> Sequence[str] | None: ...

    @property
    def writer_features(self) -> Sequence[str] | None: ...


@dataclass(frozen=True)
class TableFeature:
    """One table feature and deltalog's support for it.

    Attributes:
        name: the feature name as it appears in ``readerFeatures`` / ``writerFeatures``.
        kind: ``"reader_writer"`` (listed in both ``readerFeatures`` and ``writerFeatures``) or
            ``"writer"`` (listed in ``writerFeatures`` only); appendix "Valid Feature Names in
            Table Features".
        legacy_reader_version: the legacy ``minReaderVersion`` (< 3) from which on the feature is
            implied, or ``None`` when no legacy reader version implies it.
        legacy_writer_version: the legacy ``minWriterVersion`` (< 7) from which on the feature is
            implied, or ``None`` when no legacy writer version implies it.
        read_supported: deltalog can read tables that require this feature.
        write_supported: deltalog can write tables that support this feature.
        spec_section: the section of the spec (or RFC) that defines the feature.
        enablement_property: the table property that makes the feature active ("Active
            Features"), or ``None`` when the feature is active as soon as it is supported.
        requires: other features that a protocol supporting this one must also support (e.g.
            ``rowTracking`` needs ``domainMetadata``, "Row Tracking").
    """

    name: str
    kind: FeatureKind
    legacy_reader_version: int | None
    legacy_writer_version: int | None
    read_supported: bool
    write_supported: bool
    spec_section: str
    enablement_property: str | None = None
    requires: frozenset[str] = frozenset()

    @property
    def is_reader_feature(self) -> bool:
        """Whether the feature must be understood by readers (kind ``reader_writer``)."""
        return self.kind == "reader_writer"


def _writer(
    name: str,
    spec_section: str,
    *,
    legacy_writer_version: int | None = None,
    enablement_property: str | None = None,
    requires: Iterable[str] = (),
    write_supported: bool = False,
) -> TableFeature:
    # Writer-only features never block reads (spec "Table Features": readers only have to
    # implement the features listed in `readerFeatures`), hence read_supported=True.
    return TableFeature(
        name=name,
        kind="writer",
        legacy_reader_version=None,
        legacy_writer_version=legacy_writer_version,
        read_supported=True,
        write_supported=write_supported,
        spec_section=spec_section,
        enablement_property=enablement_property,
        requires=frozenset(requires),
    )


def _reader_writer(
    name: str,
    spec_section: str,
    *,
    read_supported: bool,
    legacy_reader_version: int | None = None,
    legacy_writer_version: int | None = None,
    enablement_property: str | None = None,
    requires: Iterable[str] = (),
    write_supported: bool = False,
) -> TableFeature:
    return TableFeature(
        name=name,
        kind="reader_writer",
        legacy_reader_version=legacy_reader_version,
        legacy_writer_version=legacy_writer_version,
        read_supported=read_supported,
        write_supported=write_supported,
        spec_section=spec_section,
        enablement_property=enablement_property,
        requires=frozenset(requires),
    )


# Sections outside the stored spec are marked with this prefix (see the module docstring).
UPSTREAM_ONLY = "upstream Delta PROTOCOL.md (not in the stored spec): "

_REGISTRY: tuple[TableFeature, ...] = (
    # ---- Writer-only features with a legacy writer version ("Writer Version Requirements":
    # each row inherits the requirements of the preceding one).
    # Writer Version 2: "Respect Append-only Tables", "Respect Column Invariants".
    _writer(
        "appendOnly",
        "Append-only Tables",
        write_supported=True,
        legacy_writer_version=2,
        enablement_property="delta.appendOnly",
    ),
    # "Column Invariants": on Writer Versions 2..6 "Column Invariants are always enabled"; the
    # invariants themselves live in the schema (column metadata `delta.invariants`) and are
    # evaluated on every written row.
    _writer("invariants", "Column Invariants", write_supported=True, legacy_writer_version=2),
    # Writer Version 3: "Respect CHECK constraints" (constraints are `delta.constraints.*` keys).
    # Rows are checked against `delta.constraints.*` on every write (deltalog's SQL evaluator);
    # a constraint it cannot evaluate makes the table unwritable rather than unchecked.
    _writer("checkConstraints", "CHECK Constraints", legacy_writer_version=3, write_supported=True),
    # Writer Version 4: "Respect Change Data Feed", "Respect Generated Columns".
    # DELETE and UPDATE write `_change_data/` files when the property is true; appends need
    # none ("Writer Requirements for AddCDCFile").
    _writer(
        "changeDataFeed",
        "Add CDC File",  # "Writer Requirements for AddCDCFile"
        legacy_writer_version=4,
        enablement_property="delta.enableChangeDataFeed",
        write_supported=True,
    ),
    # Generated columns are computed when the data leaves them out and verified otherwise.
    _writer("generatedColumns", "Generated Columns", legacy_writer_version=4, write_supported=True),
    # Writer Version 6: "Respect Identity Columns".
    # Values are generated past the high-water mark (moved in the same commit); explicit values
    # only with allowExplicitInsert; overflow refused.
    _writer("identityColumns", "Identity Columns", legacy_writer_version=6, write_supported=True),
    # ---- Writer-only features that need Writer Version 7.
    # "Default Columns": "The table must be on Writer Version 7".
    # Writes that leave a column out get its `CURRENT_DEFAULT` value (appends, MERGE inserts).
    _writer("allowColumnDefaults", "Default Columns", write_supported=True),
    # "Row Tracking": "The feature `domainMetadata` is required in ... `writerFeatures`".
    # Appends and overwrites assign fresh row IDs (baseRowId past the `delta.rowTracking`
    # high-water mark) and row commit versions; statements that move rows are refused by the
    # core, which does not write materialized row ID columns yet.
    _writer(
        "rowTracking",
        "Row Tracking",
        enablement_property="delta.enableRowTracking",
        requires=("domainMetadata",),
        write_supported=True,
    ),
    # Writers keep every domain as it is; user domains are set through `alter` (`delta.`
    # domains are refused) and concurrent changes of one domain conflict.
    _writer("domainMetadata", "Domain Metadata", write_supported=True),
    # "Iceberg Compatibility V1/V2": "Since this table feature depends on Column Mapping, the table
    # must be on Reader Version = 2, or ... `columnMapping` must exist in ... `readerFeatures`."
    # Every commit is checked against the writer requirements (the core's `write::iceberg`):
    # column mapping on, no deletion vectors, allowed types, nested field ids (V2), numRecords
    # in every add, no partition evolution; data files carry their partition values.
    _writer(
        "icebergCompatV1",
        "Iceberg Compatibility V1",
        enablement_property="delta.enableIcebergCompatV1",
        requires=("columnMapping",),
        write_supported=True,
    ),
    _writer(
        "icebergCompatV2",
        "Iceberg Compatibility V2",
        enablement_property="delta.enableIcebergCompatV2",
        requires=("columnMapping",),
        write_supported=True,
    ),
    # "Clustered Table": "The feature `domainMetadata` is required in ... `writerFeatures`."
    # Writers record the clustering columns (`delta.clustering` domain) and write statistics
    # for them; deltalog never clusters files, which the spec allows.
    _writer("clustering", "Clustered Table", requires=("domainMetadata",), write_supported=True),
    # Every commit writes `inCommitTimestamp` first while enabled, monotonic across winners;
    # enabling it records the enablement version and timestamp. Registered under both of its
    # names (see IN_COMMIT_TIMESTAMP below): deltalog writes the first, reads and accepts both.
    _writer(
        "inCommitTimestamp",
        "In-Commit Timestamps",
        enablement_property="delta.enableInCommitTimestamps",
        write_supported=True,
    ),
    _writer(
        "inCommitTimestamps",
        "In-Commit Timestamps",
        enablement_property="delta.enableInCommitTimestamps",
        write_supported=True,
    ),
    # ---- Reader-writer features.
    # Reader Version 2: "Respect Column Mapping"; Writer Version 5: "Respect Column Mapping".
    # Writers give new columns ids and physical names and write physical names and parquet
    # field ids ("Writer Requirements for Column Mapping").
    _reader_writer(
        "columnMapping",
        "Column Mapping",
        read_supported=True,
        legacy_reader_version=2,
        legacy_writer_version=5,
        enablement_property="delta.columnMapping.mode",
        write_supported=True,
    ),
    # "Deletion Vectors": readers must honour DVs "even when the `delta.enableDeletionVectors`
    # table property is not set"; the property only governs writing new DVs.
    # DELETE and UPDATE write DVs while the property is true ("Writer Requirement for Deletion
    # Vectors"); any writer keeps existing DVs in removes and re-adds.
    _reader_writer(
        "deletionVectors",
        "Deletion Vectors",
        read_supported=True,
        enablement_property="delta.enableDeletionVectors",
        write_supported=True,
    ),
    # Timestamps without a zone are written as int64 microseconds without UTC adjustment.
    _reader_writer(
        "timestampNtz",
        "Timestamp without timezone (TimestampNtz)",
        read_supported=True,
        write_supported=True,
    ),
    # Active whenever supported. `delta.checkpointPolicy = v2` asks for it (as in Delta Spark:
    # V2 checkpoints need it), see `features_for_configuration`.
    _reader_writer(
        "v2Checkpoint", "V2 Checkpoint Table Feature", read_supported=True, write_supported=True
    ),
    # "Reader Requirements for Vacuum Protocol Check": readers "just need to acknowledge the
    # feature exists"; writers check the full writer protocol before VACUUM, which
    # `DeltaTable.vacuum` always does.
    _reader_writer(
        "vacuumProtocolCheck", "VACUUM Protocol Check", read_supported=True, write_supported=True
    ),
    # RFC 000 "Catalog-managed Table Enablement"; "Writer Requirements for Catalog-managed
    # tables": in-commit timestamps "must be supported and active". `catalogOwned-preview` is the
    # name the feature had while in preview.
    # Read through the table's catalog only (`DeltaTable` refuses to open one without it
    # unless asked to read the published commits alone). Written through the catalog only
    # (`check_writable(through_catalog=True)`); a write by path raises CatalogRequiredError.
    _reader_writer(
        "catalogManaged",
        "Catalog-managed Table Enablement",
        read_supported=True,
        requires=("inCommitTimestamp",),
    ),
    _reader_writer(
        "catalogOwned-preview",
        "Catalog-managed Table Enablement",
        read_supported=True,
        requires=("inCommitTimestamp",),
    ),
    # Not in the stored spec (see the module docstring). Both are reader-writer features.
    # Written by `alter.change_column_type` (the `delta.typeChanges` field metadata) and removed
    # by `alter.drop_feature`; the `-preview` name (whose changes also carry `tableVersion`) is
    # read only.
    _reader_writer(
        "typeWidening",
        UPSTREAM_ONLY + "Type Widening",
        read_supported=True,
        write_supported=True,
        enablement_property="delta.enableTypeWidening",
    ),
    _reader_writer(
        "typeWidening-preview",
        UPSTREAM_ONLY + "Type Widening",
        read_supported=True,
        enablement_property="delta.enableTypeWidening",
    ),
    _reader_writer("variantType", UPSTREAM_ONLY + "Variant Data Type", read_supported=True),
    _reader_writer("variantType-preview", UPSTREAM_ONLY + "Variant Data Type", read_supported=True),
)

#: Every table feature deltalog knows, by name (an alias of :data:`ALIASES` included, as the
#: feature it names). Read-only.
FEATURES: Mapping[str, TableFeature] = MappingProxyType({f.name: f for f in _REGISTRY})

# The name of the In-Commit Timestamps writer feature is spelt two ways. The stored protocol
# text ("In-Commit Timestamps", its enablement list: "The feature `inCommitTimestamps` must
# exist in the table `protocol`'s `writerFeatures`") says `inCommitTimestamps`; the other
# implementations say `inCommitTimestamp`: Delta Spark (InCommitTimestampTableFeature), Delta
# Kernel Java, delta-rs, delta-kernel-rs (so DuckDB's delta extension) and the Unity Catalog
# Delta API (its required protocol: "writer-features: inCommitTimestamp").
# delta-io/delta issue #4466 reports the disagreement (PR #4471 proposes the singular
# throughout the spec). Those engines refuse to write a table listing `inCommitTimestamps` (to
# them an unknown writer feature), so deltalog writes the name they understand and reads both:
# a protocol listing either supports the feature, and one that lists the plural (tables
# deltalog wrote before, or another writer that followed the stored text) keeps it when
# deltalog rewrites the protocol, so that no protocol lists both.
#: The In-Commit Timestamps feature, as deltalog writes it.
IN_COMMIT_TIMESTAMP = "inCommitTimestamp"
#: The same feature as the stored protocol text spells it: read and accepted, never added.
IN_COMMIT_TIMESTAMP_ALIAS = "inCommitTimestamps"
#: Other spellings of a feature, to the name deltalog writes for it. Read-only.
ALIASES: Mapping[str, str] = MappingProxyType({IN_COMMIT_TIMESTAMP_ALIAS: IN_COMMIT_TIMESTAMP})
#: Both names of the In-Commit Timestamps feature.
IN_COMMIT_TIMESTAMP_NAMES = frozenset({IN_COMMIT_TIMESTAMP, IN_COMMIT_TIMESTAMP_ALIAS})

if len(FEATURES) != len(_REGISTRY):  # pragma: no cover - guards edits of the registry
    raise RuntimeError("duplicate feature name in the table-feature registry")
if any(dep not in FEATURES or dep in ALIASES for f in _REGISTRY for dep in f.requires):
    raise RuntimeError(  # pragma: no cover
        "a table feature requires a feature missing from the registry (or an alias)"
    )
if any(  # pragma: no cover - an alias is the feature it names under another name
    dataclasses.replace(FEATURES[alias], name=name) != FEATURES[name]
    for alias, name in ALIASES.items()
):
    raise RuntimeError("a feature alias differs from the feature it names")


def canonical_name(name: str) -> str:
    """The name deltalog writes for feature ``name`` (``inCommitTimestamps`` →
    ``inCommitTimestamp``); any other name as it is."""
    return ALIASES.get(name, name)


def names_of(name: str) -> frozenset[str]:
    """Every name of feature ``name``: its own, the one deltalog writes and their aliases."""
    canonical = canonical_name(name)
    return frozenset({name, canonical, *(a for a, c in ALIASES.items() if c == canonical)})


def supports(names: Iterable[str], name: str) -> bool:
    """Whether the feature names ``names`` (a protocol's features) include feature ``name``
    under any of its names."""
    return not names_of(name).isdisjoint(names)


def with_features(have: Iterable[str], new: Iterable[str]) -> frozenset[str]:
    """The features ``have`` (a protocol's) plus ``new``: a new feature is added under the name
    deltalog writes, unless ``have`` already lists it under another name, which is kept."""
    result = set(have)
    for name in new:
        if not supports(result, name):
            result.add(canonical_name(name))
    return frozenset(result)
