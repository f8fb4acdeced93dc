//! The non-file actions as Rust values, and reading them out of Arrow struct columns.
//!
//! Spec: "Protocol Evolution", "Change Metadata", "Transaction Identifiers", "Domain Metadata".
//! Fields the spec marks required but that old writers left out (e.g. `schemaString` in some
//! golden tables) are optional here; callers decide when their absence is an error.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, StructArray};
use arrow::datatypes::{DataType, Int32Type, Int64Type};

/// The `protocol` action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    pub min_reader_version: i32,
    pub min_writer_version: i32,
    pub reader_features: Option<Vec<String>>,
    pub writer_features: Option<Vec<String>>,
}

/// The `metaData` action.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metadata {
    pub id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub format_provider: Option<String>,
    pub format_options: BTreeMap<String, String>,
    pub schema_string: Option<String>,
    pub partition_columns: Vec<String>,
    pub created_time: Option<i64>,
    pub configuration: BTreeMap<String, String>,
}

impl Metadata {
    /// The `metaData` action ("Change Metadata") with these fields.
    pub fn to_action(&self) -> serde_json::Value {
        serde_json::json!({"metaData": {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "format": {
                "provider": self.format_provider.clone().unwrap_or_else(|| "parquet".into()),
                "options": self.format_options,
            },
            "schemaString": self.schema_string,
            "partitionColumns": self.partition_columns,
            "configuration": self.configuration,
            "createdTime": self.created_time,
        }})
    }
}

/// A JSON array of strings (`None` when it is absent or holds anything else).
pub fn json_strings(value: Option<&serde_json::Value>) -> Option<Vec<String>> {
    value?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// A JSON object of strings (other values skipped; empty when absent).
pub fn json_map(value: Option<&serde_json::Value>) -> BTreeMap<String, String> {
    value
        .and_then(|v| v.as_object())
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

impl Protocol {
    /// A `protocol` action's body as JSON (e.g. from a version checksum file).
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        Some(Protocol {
            min_reader_version: i32::try_from(value.get("minReaderVersion")?.as_i64()?).ok()?,
            min_writer_version: i32::try_from(value.get("minWriterVersion")?.as_i64()?).ok()?,
            reader_features: json_strings(value.get("readerFeatures")),
            writer_features: json_strings(value.get("writerFeatures")),
        })
    }
}

impl Metadata {
    /// A `metaData` action's body as JSON (e.g. from a version checksum file).
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        let text = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_string);
        Some(Metadata {
            id: text("id"),
            name: text("name"),
            description: text("description"),
            format_provider: value
                .pointer("/format/provider")
                .and_then(|v| v.as_str())
                .map(str::to_string),
            format_options: json_map(value.pointer("/format/options")),
            schema_string: Some(text("schemaString")?),
            partition_columns: json_strings(value.get("partitionColumns")).unwrap_or_default(),
            created_time: value.get("createdTime").and_then(|v| v.as_i64()),
            configuration: json_map(value.get("configuration")),
        })
    }
}

/// A `txn` action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    pub app_id: String,
    pub version: i64,
    pub last_updated: Option<i64>,
}

/// A `domainMetadata` action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainMetadata {
    pub domain: String,
    pub configuration: String,
    pub removed: bool,
}

/// A string field of a struct row, if present and non-null.
pub fn str_field<'a>(s: &'a StructArray, name: &str, row: usize) -> Option<&'a str> {
    let col = s.column_by_name(name)?;
    if col.is_null(row) {
        return None;
    }
    match col.data_type() {
        DataType::Utf8 => Some(col.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => Some(col.as_string::<i64>().value(row)),
        DataType::Utf8View => Some(col.as_string_view().value(row)),
        _ => None,
    }
}

/// An integer field (int32 or int64) of a struct row, widened to i64.
pub fn i64_field(s: &StructArray, name: &str, row: usize) -> Option<i64> {
    let col = s.column_by_name(name)?;
    if col.is_null(row) {
        return None;
    }
    match col.data_type() {
        DataType::Int64 => Some(col.as_primitive::<Int64Type>().value(row)),
        DataType::Int32 => Some(i64::from(col.as_primitive::<Int32Type>().value(row))),
        _ => None,
    }
}

/// A boolean field of a struct row.
pub fn bool_field(s: &StructArray, name: &str, row: usize) -> Option<bool> {
    let col = s.column_by_name(name)?;
    if col.is_null(row) {
        return None;
    }
    col.as_boolean_opt().map(|b| b.value(row))
}

/// A `map<string,string>` field of a struct row (null values kept out).
pub fn map_field(
    s: &StructArray,
    name: &str,
    row: usize,
) -> Option<BTreeMap<String, Option<String>>> {
    let col = s.column_by_name(name)?;
    if col.is_null(row) {
        return None;
    }
    let map = col.as_map_opt()?;
    let entries = map.value(row);
    let keys = entries.column(0).as_string_opt::<i32>()?;
    let values = entries.column(1).as_string_opt::<i32>()?;
    Some(
        (0..entries.len())
            .map(|i| {
                let v = values.is_valid(i).then(|| values.value(i).to_string());
                (keys.value(i).to_string(), v)
            })
            .collect(),
    )
}

/// A `map<string,string>` field with null values dropped.
fn string_map(s: &StructArray, name: &str, row: usize) -> BTreeMap<String, String> {
    map_field(s, name, row)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
}

/// An `array<string>` field of a struct row.
pub fn list_field(s: &StructArray, name: &str, row: usize) -> Option<Vec<String>> {
    let col = s.column_by_name(name)?;
    if col.is_null(row) {
        return None;
    }
    let list = col.as_list_opt::<i32>()?;
    let items = list.value(row);
    let items = items.as_string_opt::<i32>()?;
    Some(
        (0..items.len())
            .filter(|i| items.is_valid(*i))
            .map(|i| items.value(i).to_string())
            .collect(),
    )
}

impl Protocol {
    /// Reads row `row` of a `protocol` struct column; `None` when the versions are missing.
    pub fn from_row(s: &StructArray, row: usize) -> Option<Self> {
        Some(Protocol {
            min_reader_version: i32::try_from(i64_field(s, "minReaderVersion", row)?).ok()?,
            min_writer_version: i32::try_from(i64_field(s, "minWriterVersion", row)?).ok()?,
            reader_features: list_field(s, "readerFeatures", row),
            writer_features: list_field(s, "writerFeatures", row),
        })
    }
}

impl Metadata {
    /// Reads row `row` of a `metaData` struct column.
    pub fn from_row(s: &StructArray, row: usize) -> Self {
        let (format_provider, format_options) = match s.column_by_name("format") {
            Some(f) if f.is_valid(row) => {
                let f = f.as_struct();
                (
                    str_field(f, "provider", row).map(str::to_string),
                    string_map(f, "options", row),
                )
            }
            _ => (None, BTreeMap::new()),
        };
        Metadata {
            id: str_field(s, "id", row).map(str::to_string),
            name: str_field(s, "name", row).map(str::to_string),
            description: str_field(s, "description", row).map(str::to_string),
            format_provider,
            format_options,
            schema_string: str_field(s, "schemaString", row).map(str::to_string),
            partition_columns: list_field(s, "partitionColumns", row).unwrap_or_default(),
            created_time: i64_field(s, "createdTime", row),
            configuration: string_map(s, "configuration", row),
        }
    }
}

impl Txn {
    /// Reads row `row` of a `txn` struct column; `None` without an `appId` or `version`.
    pub fn from_row(s: &StructArray, row: usize) -> Option<Self> {
        Some(Txn {
            app_id: str_field(s, "appId", row)?.to_string(),
            version: i64_field(s, "version", row)?,
            last_updated: i64_field(s, "lastUpdated", row),
        })
    }
}

impl DomainMetadata {
    /// Reads row `row` of a `domainMetadata` struct column; `None` without a `domain`.
    pub fn from_row(s: &StructArray, row: usize) -> Option<Self> {
        Some(DomainMetadata {
            domain: str_field(s, "domain", row)?.to_string(),
            configuration: str_field(s, "configuration", row).unwrap_or("").to_string(),
            removed: bool_field(s, "removed", row).unwrap_or(false),
        })
    }
}
