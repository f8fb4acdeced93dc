//! CONVERT TO DELTA: a directory of parquet files (Hive-style partition directories) adopted
//! as a Delta table, its files left where they are.
//!
//! Spec: "Data Files" (a table's files live under its root, partitioned ones in `column=value`
//! directories whose values are the `partitionValues`, `__HIVE_DEFAULT_PARTITION__` for null:
//! "Partition Value Serialization"), "Add File and Remove File" (one `add` per file, with the
//! file's size and modification time), "Per-file Statistics" (computed by reading each file,
//! as Delta Spark's CONVERT does, so that the first queries already skip files). Files and
//! directories whose names start with `_` or `.` are not data (Delta Spark and Hive skip them
//! too). This module only inspects the directory; the commit that creates the table (version
//! 0, operation `CONVERT`) is [`crate::write::table::write_batches`]'s with
//! [`crate::write::table::WriteOptions::adopted_files`].

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::StringArray;
use arrow::datatypes::{DataType, Field, Schema};
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectMeta;
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use serde_json::{json, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::parquet_io::StoreFileReader;
use crate::stats::collect::{IndexedColumns, StatsCollector};
use crate::storage::Storage;
use crate::write::partitions::{path_uri, NULL_PARTITION};

/// Files inspected at once.
const CONCURRENCY: usize = 8;

/// How the directory's partition columns are typed.
#[derive(Debug, Clone, Default)]
pub enum PartitionSpec {
    /// Not partitioned: a `column=value` directory is an error.
    #[default]
    None,
    /// These columns, typed from their values (all integers: long; all numbers: double; all
    /// `yyyy-mm-dd`: date; otherwise string).
    Names(Vec<String>),
    /// These columns with these types.
    Typed(Vec<Field>),
}

/// What a directory holds, ready to be committed as a new table.
#[derive(Debug, Clone)]
pub struct Conversion {
    /// The table's columns: the files' (merged), then the partition columns.
    pub schema: Schema,
    pub partition_columns: Vec<String>,
    /// One `add` action per data file, in path order.
    pub adds: Vec<Value>,
}

/// One data file found in the directory.
struct Found {
    meta: ObjectMeta,
    relative: String,
    partition_values: PartitionValues,
}

/// Undoes Hive's escaping of a directory name part (`%XX`).
fn unescape_hive(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// A file's partition values, column by column as its directories name them.
type PartitionValues = Vec<(String, Option<String>)>;

/// The `column=value` pairs of the directories of `relative` (`None`: not data).
fn partition_values_of(relative: &str) -> Result<Option<PartitionValues>, String> {
    let parts: Vec<&str> = relative.split('/').collect();
    let Some((file, dirs)) = parts.split_last() else {
        return Ok(None);
    };
    if file.starts_with('_') || file.starts_with('.') {
        return Ok(None);
    }
    let mut values = Vec::new();
    for dir in dirs {
        if dir.starts_with('_') || dir.starts_with('.') {
            return Ok(None);
        }
        let Some((column, value)) = dir.split_once('=') else {
            return Err(format!(
                "directory {dir:?} is not a Hive partition directory (column=value)"
            ));
        };
        let value = (value != NULL_PARTITION).then(|| unescape_hive(value));
        values.push((unescape_hive(column), value));
    }
    Ok(Some(values))
}

/// The type inferred for partition values (see [`PartitionSpec::Names`]).
fn infer_type(values: &[&str]) -> DataType {
    let date = |v: &str| chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok() && v.len() == 10;
    if values.is_empty() {
        DataType::Utf8
    } else if values.iter().all(|v| v.parse::<i64>().is_ok()) {
        DataType::Int64
    } else if values
        .iter()
        .all(|v| v.parse::<f64>().is_ok_and(f64::is_finite))
    {
        DataType::Float64
    } else if values.iter().all(|v| date(v)) {
        DataType::Date32
    } else {
        DataType::Utf8
    }
}

/// Inspects the parquet files under `storage`'s root: their merged schema, partition columns
/// and `add` actions, with statistics (unless `collect_stats` is false) for the columns
/// `configuration` indexes (`delta.dataSkippingNumIndexedCols`, ...).
pub async fn inspect(
    storage: &Storage,
    partitions: PartitionSpec,
    configuration: &BTreeMap<String, String>,
    collect_stats: bool,
) -> DeltaResult<Conversion> {
    let root = storage.root().clone();
    let listed: Vec<ObjectMeta> = storage.store().list(Some(&root)).try_collect().await?;
    let mut found = Vec::new();
    for meta in listed {
        let relative = meta
            .location
            .prefix_match(&root)
            .map(|parts| parts.map(|p| p.as_ref().to_string()).collect::<Vec<_>>())
            .unwrap_or_default()
            .join("/");
        if relative.is_empty() {
            continue;
        }
        match partition_values_of(&relative) {
            Ok(Some(partition_values)) => found.push(Found {
                meta,
                relative,
                partition_values,
            }),
            Ok(None) => {}
            Err(rule) => {
                return Err(DeltaError::InvalidArgument(format!(
                    "cannot convert {}: {relative}: {rule}",
                    storage.url()
                )))
            }
        }
    }
    found.sort_by(|a, b| a.relative.cmp(&b.relative));
    let Some(first) = found.first() else {
        return Err(DeltaError::InvalidArgument(format!(
            "cannot convert {}: it holds no parquet files",
            storage.url()
        )));
    };
    // Every file sits at the same depth of the same partition columns.
    let columns: Vec<String> = first
        .partition_values
        .iter()
        .map(|(c, _)| c.clone())
        .collect();
    for f in &found {
        let here: Vec<&String> = f.partition_values.iter().map(|(c, _)| c).collect();
        if here.len() != columns.len() || here.iter().zip(&columns).any(|(a, b)| *a != b) {
            return Err(DeltaError::InvalidArgument(format!(
                "cannot convert {}: {} is partitioned by {:?} but {} by {:?}",
                storage.url(),
                first.relative,
                columns,
                f.relative,
                here
            )));
        }
    }
    let partition_fields: Vec<Field> = match &partitions {
        PartitionSpec::None if !columns.is_empty() => {
            return Err(DeltaError::InvalidArgument(format!(
                "{} is partitioned by {columns:?} (Hive directories); pass partition_by",
                storage.url()
            )))
        }
        PartitionSpec::None => Vec::new(),
        PartitionSpec::Names(_) | PartitionSpec::Typed(_)
            if partitions_names(&partitions) != columns =>
        {
            return Err(DeltaError::InvalidArgument(format!(
                "{} is partitioned by {columns:?}, not {names:?}",
                storage.url(),
                names = partitions_names(&partitions)
            )))
        }
        PartitionSpec::Names(names) => names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let values: Vec<&str> = found
                    .iter()
                    .filter_map(|f| f.partition_values[i].1.as_deref())
                    .collect();
                Field::new(name, infer_type(&values), true)
            })
            .collect(),
        PartitionSpec::Typed(fields) => fields.clone(),
    };
    // The values must be of their column's type.
    for (i, field) in partition_fields.iter().enumerate() {
        let values: StringArray = found
            .iter()
            .map(|f| f.partition_values[i].1.clone())
            .collect();
        let options = arrow::compute::CastOptions {
            safe: false,
            ..Default::default()
        };
        if let Err(e) = arrow::compute::cast_with_options(&values, field.data_type(), &options) {
            return Err(DeltaError::InvalidArgument(format!(
                "partition column {:?} of {} is not of type {}: {e}",
                field.name(),
                storage.url(),
                field.data_type()
            )));
        }
    }

    let indexed = IndexedColumns::from_config(configuration);
    let store = storage.store().clone();
    let jobs: Vec<(object_store::path::Path, u64, String)> = found
        .iter()
        .map(|f| (f.meta.location.clone(), f.meta.size, f.relative.clone()))
        .collect();
    let inspected: Vec<(Arc<Schema>, Option<Value>)> = futures::stream::iter(jobs)
        .map(move |(location, size, relative)| {
            let store = store.clone();
            let indexed = indexed.clone();
            async move {
                let unreadable = |e: &dyn std::fmt::Display| {
                    DeltaError::data_file(&relative, format!("not a readable parquet file: {e}"))
                };
                let reader = StoreFileReader::new(store, location, size);
                let builder = ParquetRecordBatchStreamBuilder::new(reader)
                    .await
                    .map_err(|e| unreadable(&e))?;
                let schema = builder.schema().clone();
                if !collect_stats {
                    return Ok::<_, DeltaError>((schema, None));
                }
                let mut stats = StatsCollector::new(&schema, &indexed);
                let mut stream = builder.build().map_err(|e| unreadable(&e))?;
                while let Some(batch) = stream.try_next().await.map_err(|e| unreadable(&e))? {
                    stats.update(&batch).map_err(|e| unreadable(&e))?;
                }
                Ok((schema, Some(stats.finish())))
            }
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await?;

    // One schema for every file (columns missing from some files read as null).
    let mut merged = Schema::empty();
    for ((schema, _), f) in inspected.iter().zip(&found) {
        let plain = Schema::new(
            schema
                .fields()
                .iter()
                .map(|field| {
                    field
                        .as_ref()
                        .clone()
                        .with_metadata(std::collections::HashMap::new())
                })
                .collect::<Vec<_>>(),
        );
        merged = Schema::try_merge([merged, plain]).map_err(|e| {
            DeltaError::InvalidArgument(format!(
                "cannot convert {}: the schema of {} does not fit the other files': {e}",
                storage.url(),
                f.relative
            ))
        })?;
    }
    for field in &partition_fields {
        if merged.field_with_name(field.name()).is_ok() {
            return Err(DeltaError::InvalidArgument(format!(
                "partition column {:?} is also a column in the files",
                field.name()
            )));
        }
    }
    let fields: Vec<Field> = merged
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .chain(partition_fields.iter().cloned())
        .collect();

    let adds = found
        .iter()
        .zip(inspected)
        .map(|(f, (_, stats))| {
            let partition_values: BTreeMap<&str, Option<&str>> = f
                .partition_values
                .iter()
                .map(|(c, v)| (c.as_str(), v.as_deref()))
                .collect();
            let mut add = json!({
                "path": path_uri(&f.relative),
                "partitionValues": partition_values,
                "size": f.meta.size,
                "modificationTime": f.meta.last_modified.timestamp_millis(),
                "dataChange": true,
            });
            if let Some(stats) = stats {
                add["stats"] = json!(stats.to_string());
            }
            json!({ "add": add })
        })
        .collect();
    Ok(Conversion {
        schema: Schema::new(fields),
        partition_columns: columns,
        adds,
    })
}

fn partitions_names(spec: &PartitionSpec) -> Vec<String> {
    match spec {
        PartitionSpec::None => Vec::new(),
        PartitionSpec::Names(names) => names.clone(),
        PartitionSpec::Typed(fields) => fields.iter().map(|f| f.name().clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_directories_give_partition_values() {
        assert_eq!(
            partition_values_of("a=x%2Fy/b=__HIVE_DEFAULT_PARTITION__/part-0.parquet"),
            Ok(Some(vec![
                ("a".to_string(), Some("x/y".to_string())),
                ("b".to_string(), None)
            ]))
        );
        assert_eq!(partition_values_of("part-0.parquet"), Ok(Some(vec![])));
        assert_eq!(partition_values_of("_SUCCESS"), Ok(None));
        assert_eq!(partition_values_of("_delta_log/0.json"), Ok(None));
        assert_eq!(partition_values_of("a=1/.part-0.crc"), Ok(None));
        assert!(partition_values_of("plain/part-0.parquet").is_err());
    }

    #[test]
    fn partition_types_are_inferred_from_values() {
        assert_eq!(infer_type(&["1", "-20"]), DataType::Int64);
        assert_eq!(infer_type(&["1", "2.5"]), DataType::Float64);
        assert_eq!(infer_type(&["2026-11-25", "2026-01-01"]), DataType::Date32);
        assert_eq!(infer_type(&["2026-11-25", "x"]), DataType::Utf8);
        assert_eq!(infer_type(&["NaN"]), DataType::Utf8);
        assert_eq!(infer_type(&[]), DataType::Utf8);
    }
}
