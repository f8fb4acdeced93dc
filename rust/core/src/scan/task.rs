//! What a scan reads: the [`ReadSpec`] shared by all its files and one [`FileTask`] per file.
//!
//! Both are plain data that serialize to JSON, so that scan planning (on the driver) and file
//! reading (on any machine) can be separated: a task and its spec are all an executor needs.
//! The spec carries the table's logical schema as a Delta `schemaString` (column mapping
//! metadata included), the output columns, the partition columns and the column mapping mode;
//! a task carries the file's path, partition values (by physical name, as in the log),
//! deletion vector descriptor and row tracking fields.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

use crate::deletion_vector::DvDescriptor;
use crate::error::{DeltaError, DeltaResult};
use crate::predicate::{BoundPredicate, Predicate};
use crate::scan::changes::Change;
use crate::scan::columns::output_field;
use crate::schema::{
    arrow_to_schema_string, parse_schema_string, ColumnMappingMode, PHYSICAL_NAME_KEY,
};

/// Name of the change type column of change feeds ("Add CDC File").
pub const CHANGE_TYPE: &str = "_change_type";
/// Name of the commit version column of change feeds.
pub const COMMIT_VERSION: &str = "_commit_version";
/// Name of the commit timestamp column of change feeds.
pub const COMMIT_TIMESTAMP: &str = "_commit_timestamp";

/// Name of the column holding each row's index in its data file (0-based, deleted rows
/// counted), read by DELETE, UPDATE and MERGE to address rows in deletion vectors ("Deletion
/// Vector Format": a DV holds row indexes of the file).
pub const ROW_INDEX: &str = "__deltalog_row_index";

/// Name of the row ID column ("Row IDs").
pub const ROW_ID: &str = "_row_id";
/// Name of the row commit version column ("Row Commit Versions").
pub const ROW_COMMIT_VERSION: &str = "_row_commit_version";

/// Where row tracking's materialized columns are stored ("Reader Requirements for Row
/// Tracking"): the physical column names from the table properties
/// `delta.rowTracking.materializedRowIdColumnName` and
/// `delta.rowTracking.materializedRowCommitVersionColumnName`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RowTracking {
    pub materialized_row_id_column: Option<String>,
    pub materialized_row_commit_version_column: Option<String>,
}

/// Where one output column comes from.
#[derive(Debug, Clone)]
pub enum ColumnSource {
    /// A data column of the files: the logical field (with its column mapping metadata).
    Data(FieldRef),
    /// A partition column: the key in `partitionValues` (the physical name) and the type.
    Partition { key: String, data_type: DataType },
    /// `_row_id`.
    RowId,
    /// `_row_commit_version`.
    RowCommitVersion,
    /// The row's index in its file ([`ROW_INDEX`]).
    RowIndex,
    /// `_change_type` of a change feed.
    ChangeType,
    /// `_commit_version` of a change feed.
    CommitVersion,
    /// `_commit_timestamp` of a change feed.
    CommitTimestamp,
}

/// The columns a read adds to the table's own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetadataColumns {
    /// `_row_id` and `_row_commit_version`, with the materialized columns' names.
    pub row_tracking: Option<RowTracking>,
    /// `_change_type`, `_commit_version` and `_commit_timestamp` (tasks of a change feed).
    pub change_data: bool,
    /// [`ROW_INDEX`], the row's index in its data file.
    #[serde(default)]
    pub row_index: bool,
}

/// Everything about a scan that is the same for all its files.
#[derive(Debug, Clone)]
pub struct ReadSpec {
    table_root: String,
    schema: SchemaRef,
    columns: Vec<String>,
    partition_columns: Vec<String>,
    mode: ColumnMappingMode,
    extra: MetadataColumns,
    predicate: Option<Predicate>,
    /// The predicate bound to `read`.
    filter: Option<BoundPredicate>,
    /// The output columns followed by the columns only the predicate needs.
    read: SchemaRef,
    output: SchemaRef,
    sources: Vec<ColumnSource>,
}

/// The serialized form of a [`ReadSpec`].
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadSpecDoc {
    table_root: String,
    schema_string: String,
    columns: Vec<String>,
    partition_columns: Vec<String>,
    column_mapping_mode: String,
    metadata_columns: MetadataColumns,
    predicate: Option<Predicate>,
}

impl ReadSpec {
    /// A spec reading `columns` (logical names, in output order; all columns of `schema` when
    /// `None`) of the table at `table_root`, plus the `extra` metadata columns, keeping only
    /// rows that satisfy `predicate`.
    pub fn try_new(
        table_root: String,
        schema: SchemaRef,
        columns: Option<Vec<String>>,
        partition_columns: Vec<String>,
        mode: ColumnMappingMode,
        extra: MetadataColumns,
        predicate: Option<Predicate>,
    ) -> DeltaResult<Self> {
        let columns = match columns {
            Some(c) => c,
            None => schema.fields().iter().map(|f| f.name().clone()).collect(),
        };
        let mut fields = Vec::with_capacity(columns.len() + 2);
        let mut sources = Vec::with_capacity(columns.len() + 2);
        for (i, name) in columns.iter().enumerate() {
            if columns[..i].contains(name) {
                return Err(DeltaError::InvalidArgument(format!(
                    "column {name:?} is selected twice"
                )));
            }
            let Ok(field) = schema.field_with_name(name) else {
                return Err(DeltaError::InvalidArgument(format!(
                    "no column {name:?} in the table (columns: {})",
                    schema
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            fields.push(output_field(field));
            sources.push(source_of(field, &partition_columns, mode));
        }
        if extra.row_tracking.is_some() && extra.change_data {
            return Err(DeltaError::InvalidArgument(
                "row IDs and row commit versions cannot be read from a change feed (spec: \
                 \"Reader Requirements for Row Tracking\")"
                    .into(),
            ));
        }
        let mut added = Vec::new();
        if extra.row_tracking.is_some() {
            added.push((ROW_ID, DataType::Int64, ColumnSource::RowId));
            added.push((
                ROW_COMMIT_VERSION,
                DataType::Int64,
                ColumnSource::RowCommitVersion,
            ));
        }
        if extra.row_index {
            added.push((ROW_INDEX, DataType::Int64, ColumnSource::RowIndex));
        }
        if extra.change_data {
            added.push((CHANGE_TYPE, DataType::Utf8, ColumnSource::ChangeType));
            added.push((COMMIT_VERSION, DataType::Int64, ColumnSource::CommitVersion));
            let utc =
                DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()));
            added.push((COMMIT_TIMESTAMP, utc, ColumnSource::CommitTimestamp));
        }
        for (name, data_type, source) in added {
            if schema.field_with_name(name).is_ok() {
                return Err(DeltaError::InvalidArgument(format!(
                    "the table has a column named {name}, which the read's {name} would shadow"
                )));
            }
            fields.push(Arc::new(Field::new(name, data_type, true)));
            sources.push(source);
        }
        let output = Arc::new(Schema::new(fields.clone()));
        // Columns the predicate reads but the output does not show are read too, then dropped.
        if let Some(p) = &predicate {
            for name in p.columns() {
                if output.field_with_name(&name).is_ok() {
                    continue;
                }
                let field = schema.field_with_name(&name).map_err(|_| {
                    DeltaError::InvalidArgument(format!(
                        "the predicate names an unknown column {name:?}"
                    ))
                })?;
                fields.push(output_field(field));
                sources.push(source_of(field, &partition_columns, mode));
            }
        }
        let read = Arc::new(Schema::new(fields));
        let filter = predicate.as_ref().map(|p| p.bind(&read)).transpose()?;
        Ok(ReadSpec {
            table_root,
            schema,
            columns,
            partition_columns,
            mode,
            extra,
            predicate,
            filter,
            read,
            output,
            sources,
        })
    }

    /// The table's partition columns (logical names, in `partitionColumns` order).
    pub fn partition_columns(&self) -> &[String] {
        &self.partition_columns
    }

    /// The `partitionValues` key and type of partition column `column` (a logical name).
    pub fn partition_key(&self, column: &str) -> Option<(String, DataType)> {
        let field = self.schema.field_with_name(column).ok()?;
        match source_of(field, &self.partition_columns, self.mode) {
            ColumnSource::Partition { key, data_type } => Some((key, data_type)),
            _ => None,
        }
    }

    /// The schema of the columns read from each file: the output columns, then those only
    /// the predicate needs.
    pub fn read_schema(&self) -> &SchemaRef {
        &self.read
    }

    /// The row filter, bound to [`ReadSpec::read_schema`].
    pub fn filter(&self) -> Option<&BoundPredicate> {
        self.filter.as_ref()
    }

    /// The table root URI.
    pub fn table_root(&self) -> &str {
        &self.table_root
    }

    /// The table's logical schema (with column mapping metadata).
    pub fn table_schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The schema of the batches the scan produces (logical names, see
    /// [`crate::scan::columns`] for types and nullability).
    pub fn output_schema(&self) -> &SchemaRef {
        &self.output
    }

    /// Where each output column comes from.
    pub fn sources(&self) -> &[ColumnSource] {
        &self.sources
    }

    /// The column mapping mode files are read with.
    pub fn mode(&self) -> ColumnMappingMode {
        self.mode
    }

    /// Row tracking's materialized columns, when the row tracking columns are read.
    pub fn row_tracking(&self) -> Option<&RowTracking> {
        self.extra.row_tracking.as_ref()
    }

    /// The spec as JSON.
    pub fn to_json(&self) -> DeltaResult<String> {
        let doc = ReadSpecDoc {
            table_root: self.table_root.clone(),
            schema_string: arrow_to_schema_string(&self.schema)
                .map_err(|e| DeltaError::Internal(e.0))?,
            columns: self.columns.clone(),
            partition_columns: self.partition_columns.clone(),
            column_mapping_mode: self.mode.as_str().to_string(),
            metadata_columns: self.extra.clone(),
            predicate: self.predicate.clone(),
        };
        serde_json::to_string(&doc).map_err(|e| DeltaError::Internal(e.to_string()))
    }

    /// A spec from [`ReadSpec::to_json`]'s output.
    pub fn from_json(text: &str) -> DeltaResult<Self> {
        let bad = |e: &dyn std::fmt::Display| {
            DeltaError::InvalidArgument(format!("not a deltalog read spec: {e}"))
        };
        let doc: ReadSpecDoc = serde_json::from_str(text).map_err(|e| bad(&e))?;
        let schema = parse_schema_string(&doc.schema_string).map_err(|e| bad(&e))?;
        let mode = ColumnMappingMode::from_property(Some(&doc.column_mapping_mode))
            .map_err(|e| bad(&e))?;
        Self::try_new(
            doc.table_root,
            Arc::new(schema),
            Some(doc.columns),
            doc.partition_columns,
            mode,
            doc.metadata_columns,
            doc.predicate,
        )
    }
}

/// Where a table column comes from: its partition values or the data files.
fn source_of(field: &Field, partition_columns: &[String], mode: ColumnMappingMode) -> ColumnSource {
    let name = field.name();
    if !partition_columns.contains(name) {
        return ColumnSource::Data(Arc::new(field.clone()));
    }
    // "Column Mapping": partition values are keyed by physical name.
    let key = match mode {
        ColumnMappingMode::None => name.clone(),
        _ => field
            .metadata()
            .get(PHYSICAL_NAME_KEY)
            .cloned()
            .unwrap_or_else(|| name.clone()),
    };
    ColumnSource::Partition {
        key,
        data_type: field.data_type().clone(),
    }
}

/// One data file to read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileTask {
    /// The URI-decoded path: relative to the table root, or an absolute URI.
    pub path: String,
    /// The file's size in bytes, when the log records it.
    pub size: Option<u64>,
    /// `partitionValues`, keyed by physical column name.
    pub partition_values: BTreeMap<String, Option<String>>,
    /// The deletion vector of the logical file.
    pub deletion_vector: Option<DvDescriptor>,
    /// `baseRowId` ("Row IDs").
    pub base_row_id: Option<i64>,
    /// `defaultRowCommitVersion` ("Row Commit Versions").
    pub default_row_commit_version: Option<i64>,
    /// `numRecords` from the statistics (physical rows, deleted ones included).
    pub num_records: Option<i64>,
    /// The change this file's rows are, in a change feed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
}

impl FileTask {
    /// The task as JSON.
    pub fn to_json(&self) -> DeltaResult<String> {
        serde_json::to_string(self).map_err(|e| DeltaError::Internal(e.to_string()))
    }

    /// A task from [`FileTask::to_json`]'s output.
    pub fn from_json(text: &str) -> DeltaResult<Self> {
        serde_json::from_str(text)
            .map_err(|e| DeltaError::InvalidArgument(format!("not a deltalog file task: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ReadSpec {
        let schema = parse_schema_string(
            r#"{"type":"struct","fields":[
              {"name":"a","type":"long","nullable":false,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a"}},
              {"name":"p","type":"date","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-p"}}]}"#,
        )
        .unwrap();
        ReadSpec::try_new(
            "file:///t".into(),
            Arc::new(schema),
            Some(vec!["p".into(), "a".into()]),
            vec!["p".into()],
            ColumnMappingMode::Name,
            MetadataColumns {
                row_tracking: Some(RowTracking::default()),
                change_data: false,
                row_index: false,
            },
            None,
        )
        .unwrap()
    }

    #[test]
    fn sources_and_output_schema() {
        let s = spec();
        let names: Vec<_> = s
            .output_schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["p", "a", ROW_ID, ROW_COMMIT_VERSION]);
        assert!(s.output_schema().fields().iter().all(|f| f.is_nullable()));
        assert!(matches!(&s.sources()[0], ColumnSource::Partition { key, .. } if key == "col-p"));
        assert!(matches!(&s.sources()[1], ColumnSource::Data(f) if f.name() == "a"));
    }

    #[test]
    fn spec_and_task_round_trip_through_json() {
        let s = spec();
        let back = ReadSpec::from_json(&s.to_json().unwrap()).unwrap();
        assert_eq!(back.output_schema(), s.output_schema());
        assert_eq!(back.to_json().unwrap(), s.to_json().unwrap());
        let task = FileTask {
            path: "p=1/x y.parquet".into(),
            size: Some(10),
            partition_values: [("col-p".to_string(), None)].into(),
            deletion_vector: Some(DvDescriptor {
                storage_type: "u".into(),
                path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
                offset: Some(4),
                size_in_bytes: 40,
                cardinality: 6,
            }),
            base_row_id: Some(5),
            default_row_commit_version: None,
            num_records: Some(3),
            change: None,
        };
        assert_eq!(FileTask::from_json(&task.to_json().unwrap()).unwrap(), task);
        assert!(FileTask::from_json("{}").is_err());
        assert!(ReadSpec::from_json("[]").is_err());
    }

    #[test]
    fn unknown_or_repeated_columns_are_rejected() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let make = |cols: Vec<&str>| {
            ReadSpec::try_new(
                "file:///t".into(),
                schema.clone(),
                Some(cols.into_iter().map(String::from).collect()),
                vec![],
                ColumnMappingMode::None,
                MetadataColumns::default(),
                None,
            )
        };
        assert!(make(vec!["b"]).is_err());
        assert!(make(vec!["a", "a"]).is_err());
        assert!(make(vec![]).unwrap().output_schema().fields().is_empty());
    }
}
