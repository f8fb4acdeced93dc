"""Table features: whether deltalog may read or write a table, and the protocol a table needs.

Every decision about whether deltalog may read or write a table goes through this module. It
decides from the declarative registry (:mod:`deltalog.protocol.registry`, re-exported here:
:data:`FEATURES`, one :class:`TableFeature` per feature name, with its kind, the legacy
protocol versions that imply it, and whether deltalog supports it for reading and for writing).

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

from collections.abc import Iterable, Mapping

from deltalog.exceptions import CatalogRequiredError, CorruptLogError, UnsupportedFeatureError
from deltalog.protocol.registry import (
    _REGISTRY as _REGISTRY,
    ALIASES as ALIASES,
    FEATURES as FEATURES,
    IN_COMMIT_TIMESTAMP as IN_COMMIT_TIMESTAMP,
    IN_COMMIT_TIMESTAMP_ALIAS as IN_COMMIT_TIMESTAMP_ALIAS,
    IN_COMMIT_TIMESTAMP_NAMES as IN_COMMIT_TIMESTAMP_NAMES,
    MAX_READER_VERSION as MAX_READER_VERSION,
    MAX_WRITER_VERSION as MAX_WRITER_VERSION,
    TABLE_FEATURES_READER_VERSION as TABLE_FEATURES_READER_VERSION,
    TABLE_FEATURES_WRITER_VERSION as TABLE_FEATURES_WRITER_VERSION,
    UPSTREAM_ONLY as UPSTREAM_ONLY,
    FeatureKind as FeatureKind,
    ProtocolLike as ProtocolLike,
    TableFeature as TableFeature,
    _reader_writer as _reader_writer,
    _writer as _writer,
    canonical_name as canonical_name,
    names_of as names_of,
    supports as supports,
    with_features as with_features,
)

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
