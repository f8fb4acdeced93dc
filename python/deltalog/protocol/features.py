"""The table-feature registry of deltalog: the one place that says which features exist and what
deltalog supports.

Every decision about whether deltalog may read or write a table goes through this module. The
registry :data:`FEATURES` is declarative: one :class:`TableFeature` per feature name, carrying the
feature's kind (reader-writer or writer-only), the legacy protocol versions that imply it, and
whether deltalog supports it for reading and for writing. When support for a feature lands, flip
its ``read_supported`` / ``write_supported`` flag here and nowhere else.

Sources (section names are those of the documents in ``shared/spec``):

* the Delta protocol (``002_…``): "Table Features", "Table Features for New and Existing Tables",
  "Supported Features", "Active Features", "Writer Version Requirements", "Reader Version
  Requirements", the appendix "Valid Feature Names in Table Features", and each feature's section;
* the table-features article (``004_…``): the map from legacy protocol versions to feature sets and
  the client rule "a table's reader/writer features must be a subset of what the client supports";
* the ``catalogManaged`` RFC (``000_…``): "Catalog-managed Table Enablement".

``typeWidening`` and ``variantType`` (and their ``-preview`` names) are not described by the
stored spec; they are registered as reader-writer features, as the upstream Delta protocol defines
them, so that deltalog can name them instead of calling them unknown. ``typeWidening`` is read
(files written before a widening are read as the wider type: integer widening, float and integers
to double, decimal widening, date to timestamp_ntz) and written (``alter.change_column_type``
records ``delta.typeChanges``; ``alter.drop_feature`` rewrites the narrower files and removes it);
``variantType`` is read unshredded (a column of Arrow extension ``arrow.parquet.variant``:
``struct<metadata: binary, value: binary>`` in the Parquet variant encoding), not written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Protocol

from deltalog.exceptions import CatalogRequiredError, CorruptLogError, UnsupportedFeatureError

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


# ------------------------------------------------------------------------------------------------
# Feature sets of a protocol
# ------------------------------------------------------------------------------------------------


def _implied_by_legacy_reader_version(version: int) -> frozenset[str]:
    """The reader features bundled by a legacy reader version (< 3).

    "Reader Version Requirements": Reader Version 2 adds Column Mapping; version 1 implies nothing.
    """
    return frozenset(
        f.name
        for f in _REGISTRY
        if f.legacy_reader_version is not None and f.legacy_reader_version <= version
    )


def _implied_by_legacy_writer_version(version: int) -> frozenset[str]:
    """The writer features bundled by a legacy writer version (< 7), cumulatively.

    "Writer Version Requirements": "Each row inherits the requirements from the preceding row".
    """
    return frozenset(
        f.name
        for f in _REGISTRY
        if f.legacy_writer_version is not None and f.legacy_writer_version <= version
    )


def reader_features_of(protocol: ProtocolLike) -> frozenset[str]:
    """The reader features a protocol requires.

    With ``min_reader_version >= 3`` these are the features listed in ``reader_features`` (a
    missing list counts as empty here; :func:`validate_protocol` rejects it). Below 3, they are
    the features implied by the legacy reader version ("Reader Version Requirements"): none for
    version 1, ``columnMapping`` for version 2; a ``reader_features`` list is then ignored, as it
    may only exist on Reader Version 3 ("Protocol Evolution").
    """
    if protocol.min_reader_version >= TABLE_FEATURES_READER_VERSION:
        return frozenset(protocol.reader_features or ())
    return _implied_by_legacy_reader_version(protocol.min_reader_version)


def writer_features_of(protocol: ProtocolLike) -> frozenset[str]:
    """The writer features a protocol requires.

    With ``min_writer_version >= 7`` these are the features listed in ``writer_features`` (a
    missing list counts as empty here; :func:`validate_protocol` rejects it). Below 7, they are
    the features bundled by the legacy writer version, cumulatively ("Writer Version
    Requirements"): 2 → ``appendOnly``, ``invariants``; 3 → + ``checkConstraints``; 4 →
    + ``changeDataFeed``, ``generatedColumns``; 5 → + ``columnMapping``; 6 →
    + ``identityColumns``. Version 1 implies nothing.
    """
    if protocol.min_writer_version >= TABLE_FEATURES_WRITER_VERSION:
        return frozenset(protocol.writer_features or ())
    return _implied_by_legacy_writer_version(protocol.min_writer_version)


# ------------------------------------------------------------------------------------------------
# Checks
# ------------------------------------------------------------------------------------------------


def validate_protocol(protocol: ProtocolLike) -> None:
    """Check that a protocol is well formed and of a version deltalog knows.

    Raises:
        UnsupportedFeatureError: reader version > 3 or writer version > 7 (a protocol version
            newer than deltalog; "Protocol Evolution": "an error should be thrown instructing the
            user to upgrade"). ``features`` is empty.
        CorruptLogError: a version below 1; Reader Version 3 with Writer Version < 7 ("Table
            Features for New and Existing Tables": "It is illegal to support reader but not
            writer features"); Reader Version 3 without ``readerFeatures`` or Writer Version 7
            without ``writerFeatures`` ("Table Features"); a feature listed in ``readerFeatures``
            but not in ``writerFeatures`` ("Supported Features").
    """
    reader, writer = protocol.min_reader_version, protocol.min_writer_version
    if reader > MAX_READER_VERSION or writer > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"unsupported protocol version (minReaderVersion={reader}, "
            f"minWriterVersion={writer}): deltalog knows reader versions up to "
            f"{MAX_READER_VERSION} and writer versions up to {MAX_WRITER_VERSION}; "
            "upgrade deltalog to use this table",
            features=[],
        )
    if reader < 1 or writer < 1:
        raise CorruptLogError(
            f"invalid protocol version (minReaderVersion={reader}, minWriterVersion={writer}): "
            "protocol versions start at 1",
            rule="Protocol Evolution: minReaderVersion and minWriterVersion are versions >= 1",
        )
    if reader >= TABLE_FEATURES_READER_VERSION and writer < TABLE_FEATURES_WRITER_VERSION:
        raise CorruptLogError(
            f"illegal protocol (minReaderVersion={reader}, minWriterVersion={writer}): "
            "Reader Version 3 requires Writer Version 7",
            rule=(
                "Table Features for New and Existing Tables: it is illegal to support reader but "
                "not writer features; a Reader Version 3 with a Writer Version less than 7 is not "
                "allowed"
            ),
        )
    if reader >= TABLE_FEATURES_READER_VERSION and protocol.reader_features is None:
        raise CorruptLogError(
            f"protocol with minReaderVersion={reader} has no readerFeatures",
            rule="Table Features: when the Reader Version is 3, readerFeatures must exist",
        )
    if writer >= TABLE_FEATURES_WRITER_VERSION and protocol.writer_features is None:
        raise CorruptLogError(
            f"protocol with minWriterVersion={writer} has no writerFeatures",
            rule="Table Features: when the Writer Version is 7, writerFeatures must exist",
        )
    if reader >= TABLE_FEATURES_READER_VERSION:
        only_reader = reader_features_of(protocol) - writer_features_of(protocol)
        if only_reader:
            raise CorruptLogError(
                "features listed in readerFeatures but not in writerFeatures: "
                + ", ".join(sorted(only_reader)),
                rule=(
                    "Supported Features: it is not allowed to list a feature only in "
                    "readerFeatures but not in writerFeatures"
                ),
            )


def _describe(names: Iterable[str]) -> str:
    """``a (unknown), b (not supported yet)`` for an error message."""
    return ", ".join(
        f"{name} ({'not supported yet' if name in FEATURES else 'unknown'})"
        for name in sorted(names)
    )


#: The names of the catalog-managed table feature (``catalogOwned-preview`` while in preview).
CATALOG_MANAGED = frozenset({"catalogManaged", "catalogOwned-preview"})


def is_catalog_managed(protocol: ProtocolLike) -> bool:
    """Whether the table is catalog-managed: reader version 3, writer version 7 and the
    feature among both feature lists (catalogManaged RFC: "Catalog-managed Table
    Enablement"); for reads, its presence among the reader features decides."""
    return bool(CATALOG_MANAGED & reader_features_of(protocol))


def check_readable(protocol: ProtocolLike) -> None:
    """Raise unless deltalog can read a table with this protocol.

    The protocol is first checked with :func:`validate_protocol`. Then every reader feature
    (:func:`reader_features_of`) must be known and read-supported: "to read a table, readers must
    implement and respect all features listed in `readerFeatures`" ("Table Features"; article:
    "the table's readerFeatures is a subset of the client's supportedReaderFeatures"). Writer
    features never block reads.

    Raises:
        UnsupportedFeatureError: a newer protocol version, or reader features that are unknown or
            not supported for reading (all of them are named in ``features``).
        CorruptLogError: a malformed protocol (see :func:`validate_protocol`).
    """
    validate_protocol(protocol)
    unsupported = {
        name
        for name in reader_features_of(protocol)
        if name not in FEATURES or not FEATURES[name].read_supported
    }
    if unsupported:
        raise UnsupportedFeatureError(
            "deltalog cannot read this table; it requires reader table features that deltalog "
            "does not support: " + _describe(unsupported),
            features=sorted(unsupported),
        )


def _in_use(name: str, schema_string: str, configuration: Mapping[str, str]) -> bool:
    """Whether a table uses writer feature ``name``: writers must respect a supported feature,
    which for these features means checking what the schema or properties declare; with nothing
    declared there is nothing to respect. Unknown usage counts as in use."""
    if name == "checkConstraints":  # "CHECK Constraints": `delta.constraints.{name}` properties
        return any(k.startswith("delta.constraints.") for k in configuration)
    if name == "generatedColumns":  # "Generated Columns": `delta.generationExpression` metadata
        return "delta.generationExpression" in schema_string
    if name == "identityColumns":  # "Identity Columns": `delta.identity.*` metadata
        return "delta.identity." in schema_string
    if name == "allowColumnDefaults":  # "Default Columns": `CURRENT_DEFAULT` metadata
        return "CURRENT_DEFAULT" in schema_string
    if name == "invariants":  # "Column Invariants": `delta.invariants` metadata
        return "delta.invariants" in schema_string
    return True


def check_writable(
    protocol: ProtocolLike,
    schema_string: str | None = None,
    configuration: Mapping[str, str] | None = None,
    through_catalog: bool = False,
    table: str | None = None,
) -> None:
    """Raise unless deltalog can write (read and then commit to) a table with this protocol.

    With the table's ``schema_string`` and ``configuration``, a writer feature deltalog does not
    implement is tolerated while the table does not use it (a legacy writer version 5 table
    supports CHECK constraints and generated columns, but a table with no constraint and no
    generated column asks nothing of a writer); without them every feature counts.

    Writers "must implement and respect all features listed in `writerFeatures`. Because writers
    have to read the table (or only the Delta log) before write, they must implement and respect
    all reader features as well" ("Table Features"; article: "When reading & writing a table ...
    readerFeatures is a subset of supportedReaderFeatures, and writerFeatures is a subset of
    supportedWriterFeatures"). So every feature of :func:`reader_features_of` and
    :func:`writer_features_of` must be known and both read- and write-supported.
    ``through_catalog``: the commit goes through the table's catalog, which is what the
    ``catalogManaged`` feature asks of writers. ``table``: the table's location, for the error.

    Raises:
        UnsupportedFeatureError: a newer protocol version, or features that are unknown or not
            supported for writing (all of them are named in ``features``).
        CatalogRequiredError: the table is catalog-managed and the write does not go through
            its catalog (catalogManaged RFC, "Writer Requirements for Catalog-managed tables":
            writers must discover and access the table through its catalog).
        CorruptLogError: a malformed protocol (see :func:`validate_protocol`).
    """
    validate_protocol(protocol)
    unsupported = {
        name
        for name in reader_features_of(protocol) | writer_features_of(protocol)
        if name not in FEATURES
        or not (FEATURES[name].read_supported and FEATURES[name].write_supported)
    }
    # Writable, but only through the table's catalog (catalogManaged RFC, "Commit Protocol"):
    # checked below, after the features no catalog makes writable.
    catalog_managed = bool(
        CATALOG_MANAGED & (reader_features_of(protocol) | writer_features_of(protocol))
    )
    unsupported -= CATALOG_MANAGED
    if schema_string is not None and configuration is not None:
        unsupported = {
            name
            for name in unsupported
            if name not in FEATURES
            or FEATURES[name].is_reader_feature
            or _in_use(name, schema_string, configuration)
        }
    if unsupported:
        raise UnsupportedFeatureError(
            "deltalog cannot write this table; it requires table features that deltalog cannot "
            "write: " + _describe(unsupported),
            features=sorted(unsupported),
        )
    if catalog_managed and not through_catalog:
        # catalogManaged RFC, "Writer Requirements for Catalog-managed tables": writers must
        # discover and access the table through its catalog, which ratifies every commit.
        where = f"the table at {table}" if table else "this table"
        raise CatalogRequiredError(
            f"{where} is catalog-managed (table feature catalogManaged): write it through its "
            "catalog (load it with catalog.load_table(name) or DeltaTable(uri, "
            "catalog_client=...), or pass catalog_client= to write_table); a table opened by "
            "path, even with published_only=True, can only be read",
            table=table,
        )


# ------------------------------------------------------------------------------------------------
# Choosing a protocol
# ------------------------------------------------------------------------------------------------


def _closure(names: Iterable[str]) -> frozenset[str]:
    """``names`` plus, transitively, every feature they require and do not support already
    under another name (``catalogManaged`` is satisfied by either in-commit timestamps name);
    of a feature named twice, only the name deltalog writes is kept."""
    result = set(names)
    pending = list(result)
    while pending:
        for dep in FEATURES[pending.pop()].requires:
            if not supports(result, dep):
                result.add(dep)
                pending.append(dep)
    return frozenset(n for n in result if n not in ALIASES or ALIASES[n] not in result)


def min_protocol_for(
    features: Iterable[str],
) -> tuple[int, int, list[str] | None, list[str] | None]:
    """The smallest protocol that supports ``features``.

    Returns ``(min_reader_version, min_writer_version, reader_features, writer_features)``; the
    lists are sorted, and ``None`` where the version does not use explicit feature lists.

    Algorithm:

    1. Unknown names raise :class:`UnsupportedFeatureError`. The set is closed under
       :attr:`TableFeature.requires` (e.g. ``rowTracking`` adds ``domainMetadata``,
       ``icebergCompatV1`` adds ``columnMapping``, ``catalogManaged`` adds
       ``inCommitTimestamp``), since a protocol supporting a feature must support what it needs.
       A requirement is met by any name of the feature (:data:`ALIASES`: ``inCommitTimestamps``
       meets ``catalogManaged``'s), and names are kept as given (the caller chooses between a
       table's existing name and the one deltalog writes, see :func:`with_features`), except
       that a feature asked for under both names is listed once, under the name deltalog
       writes.
    2. Legacy versions, when every feature of the set has a legacy writer version and every
       reader-writer feature a legacy reader version: reader = max(legacy reader versions of the
       reader-writer features, 1), writer = max(legacy writer versions, 1), no lists. Legacy
       versions bundle cumulative features, so the result may support more than asked (article:
       "each version number bundles multiple features, and features across version numbers are
       cumulative"); e.g. ``{}`` → ``(1, 1, None, None)``, ``{changeDataFeed}`` →
       ``(1, 4, None, None)``, ``{columnMapping}`` → ``(2, 5, None, None)``.
    3. Otherwise writer version 7 with ``writer_features`` = the whole (closed) set: every
       feature, reader-writer ones included, is listed in ``writerFeatures`` ("Supported
       Features": "Reader features should be listed in both `readerFeatures` and
       `writerFeatures`"). The reader version is then

       * the legacy one when every reader-writer feature of the set has a legacy reader version:
         1 when there is none, 2 when ``columnMapping`` is among them, with ``reader_features``
         ``None`` (spec "Protocol Evolution" example: ``(2, 7)`` with ``writerFeatures``
         ``["columnMapping", "identityColumns"]``);
       * otherwise 3, with ``reader_features`` = all reader-writer features of the set.

    Raises:
        UnsupportedFeatureError: some names are not known table features (named in
            ``features``).
    """
    requested = frozenset(features)
    unknown = sorted(name for name in requested if name not in FEATURES)
    if unknown:
        raise UnsupportedFeatureError(
            "unknown table features: " + ", ".join(unknown), features=unknown
        )
    wanted = [FEATURES[name] for name in _closure(requested)]
    reader_writer = [f for f in wanted if f.is_reader_feature]

    legacy_reader = all(f.legacy_reader_version is not None for f in reader_writer)
    reader_version = max((f.legacy_reader_version or 1 for f in reader_writer), default=1)
    reader_list: list[str] | None = None
    if not legacy_reader:
        reader_version = TABLE_FEATURES_READER_VERSION
        reader_list = sorted(f.name for f in reader_writer)

    if legacy_reader and all(f.legacy_writer_version is not None for f in wanted):
        writer_version = max((f.legacy_writer_version or 1 for f in wanted), default=1)
        return reader_version, writer_version, None, None
    return (
        reader_version,
        TABLE_FEATURES_WRITER_VERSION,
        reader_list,
        sorted(f.name for f in wanted),
    )


# ------------------------------------------------------------------------------------------------
# Active features
# ------------------------------------------------------------------------------------------------


def _is_true(value: str | None) -> bool:
    # Delta table properties are strings; booleans are compared case-insensitively.
    return value is not None and value.strip().lower() == "true"


#: Table property prefix that adds a feature to the protocol, as in Delta Spark
#: (``delta.feature.deletionVectors = supported``).
FEATURE_PROPERTY_PREFIX = "delta.feature."


def features_for_configuration(
    configuration: Mapping[str, str], features: Iterable[str] = ()
) -> tuple[frozenset[str], dict[str, str]]:
    """The table features a new table with ``configuration`` needs, and the configuration to
    store (without the ``delta.feature.*`` keys, which name features rather than set
    properties).

    A feature is needed when it is named in ``features``, named by a
    ``delta.feature.<name> = supported`` property, or its enablement property is set
    (``delta.enableDeletionVectors = true``, ``delta.columnMapping.mode = name``, ...).

    Raises:
        ValueError: a ``delta.feature.*`` property with a value other than ``supported``.
        InvalidArgumentError: an unknown ``delta.*`` property or an invalid value
            (:func:`deltalog.protocol.properties.validate`).
        UnsupportedFeatureError: an unknown feature name.
    """
    from deltalog.protocol import properties

    # Every key and value checked ("delta.*" keys by the property registry), as strings.
    configuration = properties.validate(configuration)
    needed = set(features)
    stored: dict[str, str] = {}
    for key, value in configuration.items():
        if key.startswith(FEATURE_PROPERTY_PREFIX):
            if str(value).strip().lower() not in ("supported", "enabled"):
                raise ValueError(f'{key} must be "supported", not {value!r}')
            needed.add(key[len(FEATURE_PROPERTY_PREFIX) :])
        else:
            stored[key] = str(value)
    for feature in FEATURES.values():
        prop = feature.enablement_property
        if prop is None or prop not in stored or feature.name in ALIASES:
            continue
        value = stored[prop]
        if feature.name == "columnMapping":
            if value.strip().lower() != "none":
                needed.add(feature.name)
        elif feature.name.endswith("-preview"):
            continue
        elif _is_true(value):
            needed.add(feature.name)
    # "V2 Checkpoint Table Feature": the v2 checkpoint policy needs the feature.
    if str(stored.get("delta.checkpointPolicy", "")).strip().lower() == "v2":
        needed.add("v2Checkpoint")
    unknown = sorted(n for n in needed if n not in FEATURES)
    if unknown:
        raise UnsupportedFeatureError(
            "unknown table features: " + ", ".join(unknown), features=unknown
        )
    # A feature asked for by another of its names is added under the one deltalog writes.
    return frozenset(canonical_name(n) for n in needed), stored


def is_active(name: str, protocol: ProtocolLike, configuration: Mapping[str, str]) -> bool:
    """Whether feature ``name`` is active on a table ("Active Features").

    A feature is active when it is *supported* — its name is among the protocol's reader and/or
    writer features, listed or implied by legacy versions ("Supported Features") — *and* its
    metadata requirements are satisfied:

    * ``columnMapping``: ``delta.columnMapping.mode`` is set and not ``none`` ("Column Mapping");
    * a feature with an :attr:`TableFeature.enablement_property`: that table property is ``true``
      (case-insensitive), e.g. ``delta.appendOnly`` ("Append-only Tables");
    * a feature of several names (:data:`ALIASES`) is supported under any of them;
    * any other feature (e.g. ``invariants``, ``checkConstraints``, ``generatedColumns``,
      ``identityColumns``, ``timestampNtz``, ``v2Checkpoint``, ``catalogManaged``): active
      whenever supported; what it governs lives in the schema or the log itself.

    Raises:
        UnsupportedFeatureError: ``name`` is not a known table feature.
    """
    feature = FEATURES.get(name)
    if feature is None:
        raise UnsupportedFeatureError(f"unknown table feature: {name}", features=[name])
    if not supports(reader_features_of(protocol) | writer_features_of(protocol), name):
        return False
    if feature.enablement_property is None:
        return True
    value = configuration.get(feature.enablement_property)
    if name == "columnMapping":
        return value is not None and value.strip().lower() != "none"
    return _is_true(value)


__all__ = [
    "ALIASES",
    "FEATURES",
    "IN_COMMIT_TIMESTAMP",
    "IN_COMMIT_TIMESTAMP_ALIAS",
    "IN_COMMIT_TIMESTAMP_NAMES",
    "MAX_READER_VERSION",
    "MAX_WRITER_VERSION",
    "TABLE_FEATURES_READER_VERSION",
    "TABLE_FEATURES_WRITER_VERSION",
    "UPSTREAM_ONLY",
    "FeatureKind",
    "ProtocolLike",
    "TableFeature",
    "canonical_name",
    "check_readable",
    "check_writable",
    "features_for_configuration",
    "is_active",
    "min_protocol_for",
    "names_of",
    "reader_features_of",
    "supports",
    "validate_protocol",
    "with_features",
    "writer_features_of",
]
