//! A table's protocol and metadata at one version without its files: what a catalog caches
//! of the commits it ratifies (catalogManaged RFC, "Catalog Responsibilities": catalogs are
//! encouraged to keep the latest protocol and metadata "so that clients can skip log replay"),
//! and the schema rules both it and a [`crate::snapshot::Snapshot`] derive from them.
//!
//! A header answers what a table *is* (version, protocol, schema, properties) with no storage
//! access; opening a snapshot from it ([`crate::snapshot::Snapshot::try_new_from_header`])
//! uses it to type statistics from the start, and replay still checks it against the log.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};

use crate::error::{DeltaError, DeltaResult};
use crate::model::{Metadata, Protocol};
use crate::schema::{parse_schema_string, physical_schema, ColumnMappingMode};
use crate::stats::parse::StatsSchema;

/// The protocol and metadata of one version of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableHeader {
    /// The version they are in force at.
    pub version: u64,
    pub protocol: Protocol,
    pub metadata: Metadata,
}

impl TableHeader {
    /// From the bodies of a `protocol` and a `metaData` action as JSON (the objects inside
    /// `{"protocol": ...}` and `{"metaData": ...}`, as a catalog caches them).
    pub fn from_json(version: u64, protocol: &str, metadata: &str) -> DeltaResult<Self> {
        let bad = |what: &str, why: String| {
            DeltaError::InvalidArgument(format!(
                "the cached {what} of version {version} is not a {what} action: {why}"
            ))
        };
        let parse = |what: &str, text: &str| {
            serde_json::from_str::<serde_json::Value>(text).map_err(|e| bad(what, e.to_string()))
        };
        let protocol = Protocol::from_json(&parse("protocol", protocol)?).ok_or_else(|| {
            bad(
                "protocol",
                "minReaderVersion/minWriterVersion missing or out of range".into(),
            )
        })?;
        let metadata = Metadata::from_json(&parse("metaData", metadata)?)
            .ok_or_else(|| bad("metaData", "schemaString missing".into()))?;
        Ok(TableHeader {
            version,
            protocol,
            metadata,
        })
    }

    /// The logical schema.
    pub fn schema(&self) -> DeltaResult<SchemaRef> {
        logical_schema(&self.metadata, self.version)
    }

    /// The column mapping mode in force.
    pub fn column_mapping_mode(&self) -> DeltaResult<ColumnMappingMode> {
        mapping_mode(&self.protocol, &self.metadata.configuration, self.version)
    }

    /// The schema of the data files (physical names; field ids in id mode).
    pub fn physical_schema(&self) -> DeltaResult<Schema> {
        data_file_schema(
            self.schema()?.as_ref(),
            self.column_mapping_mode()?,
            self.version,
        )
    }

    /// The types statistics are parsed with.
    pub(crate) fn stats_schema(&self) -> StatsSchema {
        stats_schema_of(Some(&self.protocol), Some(&self.metadata))
    }
}

/// The logical schema a `metaData` action of `version` declares.
pub(crate) fn logical_schema(metadata: &Metadata, version: u64) -> DeltaResult<SchemaRef> {
    let text = metadata.schema_string.as_deref().ok_or_else(|| {
        DeltaError::corrupt(
            "_delta_log",
            Some(version),
            "the metaData action has no schemaString (spec: \"Change Metadata\")",
        )
    })?;
    parse_schema_string(text).map(Arc::new).map_err(|e| {
        if e.is_too_deep() {
            return DeltaError::Unsupported(format!("version {version}: {e}"));
        }
        DeltaError::corrupt(
            "_delta_log",
            Some(version),
            format!("invalid schemaString: {e} (spec: \"Schema Serialization Format\")"),
        )
    })
}

/// The column mapping mode in force at `version`.
pub(crate) fn mapping_mode(
    protocol: &Protocol,
    configuration: &BTreeMap<String, String>,
    version: u64,
) -> DeltaResult<ColumnMappingMode> {
    column_mapping_mode_of(protocol, configuration)
        .map_err(|e| DeltaError::corrupt("_delta_log", Some(version), e.0))
}

/// The schema of the data files of `logical` under `mode`.
pub(crate) fn data_file_schema(
    logical: &Schema,
    mode: ColumnMappingMode,
    version: u64,
) -> DeltaResult<Schema> {
    physical_schema(logical, mode)
        .map_err(|e| DeltaError::corrupt("_delta_log", Some(version), e.0))
}

/// The column mapping mode of a protocol and table properties ("Column Mapping": honoured only
/// on reader version 2, or 3 with `columnMapping` among the reader features).
pub(crate) fn column_mapping_mode_of(
    p: &Protocol,
    config: &BTreeMap<String, String>,
) -> Result<ColumnMappingMode, crate::schema::SchemaError> {
    let supported = p.min_reader_version == 2
        || (p.min_reader_version >= 3
            && p.reader_features
                .as_ref()
                .is_some_and(|f| f.iter().any(|n| n == "columnMapping")));
    if !supported {
        return Ok(ColumnMappingMode::None);
    }
    ColumnMappingMode::from_property(
        config
            .get(crate::schema::COLUMN_MAPPING_MODE_KEY)
            .map(String::as_str),
    )
}

/// The statistics types of a table; counts only when the schema is missing or unusable.
pub(crate) fn stats_schema_of(
    protocol: Option<&Protocol>,
    metadata: Option<&Metadata>,
) -> StatsSchema {
    let typed = || {
        let logical = parse_schema_string(metadata?.schema_string.as_deref()?).ok()?;
        let mode = column_mapping_mode_of(protocol?, &metadata?.configuration).ok()?;
        let physical = physical_schema(&logical, mode).ok()?;
        Some(StatsSchema::new(&physical, &logical))
    };
    typed().unwrap_or_else(StatsSchema::empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTOCOL: &str = r#"{"minReaderVersion":3,"minWriterVersion":7,
        "readerFeatures":["columnMapping"],"writerFeatures":["columnMapping"]}"#;

    fn metadata(mode: &str) -> String {
        let schema = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,
            "metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}}]}"#;
        serde_json::json!({
            "id": "t", "format": {"provider": "parquet", "options": {}},
            "schemaString": schema.replace(char::is_whitespace, ""),
            "partitionColumns": [],
            "configuration": {"delta.columnMapping.mode": mode},
        })
        .to_string()
    }

    #[test]
    fn a_header_gives_the_schemas_a_snapshot_would() {
        let header = TableHeader::from_json(7, PROTOCOL, &metadata("name")).unwrap();
        assert_eq!(header.version, 7);
        assert_eq!(
            header.column_mapping_mode().unwrap(),
            ColumnMappingMode::Name
        );
        assert_eq!(header.schema().unwrap().field(0).name(), "id");
        assert_eq!(header.physical_schema().unwrap().field(0).name(), "col-1");
        assert_ne!(header.stats_schema(), StatsSchema::empty());
    }

    #[test]
    fn bad_cached_actions_are_typed_errors() {
        for (protocol, metadata) in [
            ("{", metadata("name")),
            (r#"{"minReaderVersion":"x"}"#, metadata("name")),
            (PROTOCOL, "[]".to_string()),
            (PROTOCOL, r#"{"id":"t"}"#.to_string()),
        ] {
            let e = TableHeader::from_json(1, protocol, &metadata).unwrap_err();
            assert!(matches!(e, DeltaError::InvalidArgument(_)), "{e}");
            assert!(e.to_string().contains("version 1"), "{e}");
        }
        let header = TableHeader::from_json(1, PROTOCOL, &metadata("bogus")).unwrap();
        assert!(header.column_mapping_mode().is_err());
    }
}
