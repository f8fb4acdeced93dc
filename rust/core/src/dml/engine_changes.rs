//! Row changes another engine computed (e.g. a MERGE or DELETE run by Spark): deletion vectors
//! for the rows it found, and change data files for the rows it changed; the caller commits
//! them.
//!
//! Spec: "Deletion Vectors" ("Writer Requirement for Deletion Vectors"), "Deletion Vector
//! File Storage Format", "Add CDC File".

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::compute::filter_record_batch;
use arrow::datatypes::DataType;
use roaring::RoaringTreemap;
use serde_json::Value;

use crate::dml::delete_update::writes_deletion_vectors;
use crate::error::{DeltaError, DeltaResult};
use crate::scan::{FileTask, ROW_COMMIT_VERSION, ROW_ID};
use crate::snapshot::Snapshot;

use super::rewrite::{FileCounts, Rewriter, CHANGE_TYPE};

/// Deletion vectors that take rows of `snapshot`'s files away (spec "Deletion Vectors"), for
/// a writer that found the rows elsewhere (e.g. a MERGE computed by Spark): `masks` holds,
/// per file (the URI-decoded path of its scan task), the number of live rows the file has
/// and the indexes in the file of the rows that go. A file that loses every live row is
/// removed; the others are re-added with their deletion vector merged with the new rows.
/// Returns the actions (with the DV file written, when one is needed) and the counts.
pub async fn mask_rows(
    snapshot: &Snapshot,
    masks: Vec<(String, u64, Vec<u64>)>,
) -> DeltaResult<(Vec<Value>, FileCounts)> {
    if !writes_deletion_vectors(snapshot) {
        return Err(DeltaError::InvalidArgument(
            "the table does not write deletion vectors (delta.enableDeletionVectors and the \
             deletionVectors feature)"
                .into(),
        ));
    }
    let mut rewriter = Rewriter::try_new(snapshot, None)?;
    let scan = crate::scan::Scan::try_new(snapshot, crate::scan::ScanOptions::default())?;
    let mut tasks: std::collections::HashMap<&str, &FileTask> =
        scan.tasks().iter().map(|t| (t.path.as_str(), t)).collect();
    for (path, live, rows) in masks {
        let Some(task) = tasks.remove(path.as_str()) else {
            return Err(DeltaError::InvalidArgument(format!(
                "{path} is not an active file of version {} (or is named twice)",
                snapshot.version()
            )));
        };
        let physical = task.num_records.and_then(|n| u64::try_from(n).ok());
        if let Some(bad) = rows.iter().find(|&&r| physical.is_some_and(|n| r >= n)) {
            return Err(DeltaError::InvalidArgument(format!(
                "row {bad} is past the end of {path} ({} rows)",
                physical.unwrap_or_default()
            )));
        }
        let gone: RoaringTreemap = rows.into_iter().collect();
        rewriter.change_file(task.clone(), &gone, live, &[]).await?;
    }
    rewriter.into_actions(snapshot).await
}

/// The kinds of change rows ("Add CDC File": `_change_type`).
const CHANGE_KINDS: [&str; 4] = ["delete", "insert", "update_preimage", "update_postimage"];

/// Change data files (spec "Add CDC File") of rows another engine changed (e.g. a MERGE
/// computed by Spark), for a table with the change feed on: `batches` hold the table's columns
/// by name, then [`CHANGE_TYPE`] (`delete`, `insert`, `update_preimage` or
/// `update_postimage`). Values are converted to the table's types as a write converts them.
/// Returns the `cdc` actions.
pub async fn write_change_rows<I>(
    snapshot: &Snapshot,
    batches: I,
    target_file_size: Option<u64>,
) -> DeltaResult<Vec<Value>>
where
    I: IntoIterator<Item = DeltaResult<RecordBatch>>,
{
    use arrow::array::{Array, AsArray};
    let mut rewriter = Rewriter::try_new(snapshot, target_file_size)?;
    if !rewriter.writes_changes() {
        return Err(DeltaError::InvalidArgument(
            "the table's change data feed is off (delta.enableChangeDataFeed): no change rows \
             to write"
                .into(),
        ));
    }
    let data_schema = rewriter.data_schema().clone();
    let target = DataType::Struct(snapshot.schema()?.fields().clone());
    for batch in batches {
        let batch = batch?;
        let kind_at = batch.schema().index_of(CHANGE_TYPE).map_err(|_| {
            DeltaError::InvalidArgument(format!("change rows need a {CHANGE_TYPE} column"))
        })?;
        let kinds = arrow::compute::cast(batch.column(kind_at), &DataType::Utf8)?;
        let kinds = kinds.as_string::<i32>();
        if let Some(bad) =
            (0..kinds.len()).find(|&i| kinds.is_null(i) || !CHANGE_KINDS.contains(&kinds.value(i)))
        {
            return Err(DeltaError::InvalidArgument(format!(
                "{CHANGE_TYPE} must be one of {CHANGE_KINDS:?}, not {:?}",
                kinds.is_valid(bad).then(|| kinds.value(bad))
            )));
        }
        let columns: Vec<usize> = (0..batch.num_columns()).filter(|&i| i != kind_at).collect();
        let converted = conform(
            &batch.project(&columns)?,
            &target,
            &data_schema,
            "change rows",
        )?;
        for kind in CHANGE_KINDS {
            let mask = arrow::compute::kernels::cmp::eq(
                kinds,
                &arrow::array::StringArray::new_scalar(kind),
            )?;
            if mask.true_count() > 0 {
                let rows = filter_record_batch(&converted, &mask)?;
                rewriter.write_changes(&rows, kind).await?;
            }
        }
    }
    Ok(rewriter.into_actions(snapshot).await?.0)
}

/// The table's columns of `batch` (by name, in the table's order) converted to the table's
/// types as a write converts them; `what` names the rows in the error.
fn conform(
    batch: &RecordBatch,
    target: &DataType,
    data_schema: &arrow::datatypes::SchemaRef,
    what: &str,
) -> DeltaResult<RecordBatch> {
    use arrow::array::{AsArray, StructArray};
    let rows = batch.num_rows();
    let data: ArrayRef = Arc::new(StructArray::from(batch.clone()));
    let converted =
        crate::scan::columns::to_logical(&data, target, crate::schema::ColumnMappingMode::None)
            .map_err(|e| {
                DeltaError::InvalidArgument(format!("the {what} do not fit the table: {e}"))
            })?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        data_schema.clone(),
        converted.as_struct().columns().to_vec(),
        &options,
    )?)
}

/// New data files of rows another engine updated or copied (e.g. a MERGE computed by Spark)
/// that keep their lineage ("Writer Requirements for Row Tracking"): `batches` hold the
/// table's columns by name, then [`ROW_ID`] and [`ROW_COMMIT_VERSION`] (Int64). A row's
/// `_row_id` is kept in the materialized row ID column; its `_row_commit_version` likewise,
/// where null means the commit's version (an updated row), a value keeps it (a copied row).
/// The table's rules are checked as any write checks them. Without row tracking enabled the
/// two columns are ignored. Returns the `add` actions (no `baseRowId`: the commit gives one).
pub async fn write_rows_with_lineage<I>(
    snapshot: &Snapshot,
    batches: I,
    target_file_size: Option<u64>,
) -> DeltaResult<Vec<Value>>
where
    I: IntoIterator<Item = DeltaResult<RecordBatch>>,
{
    let mut rewriter = Rewriter::try_new(snapshot, target_file_size)?;
    let data_schema = rewriter.data_schema().clone();
    let target = DataType::Struct(snapshot.schema()?.fields().clone());
    for batch in batches {
        let batch = batch?;
        let lineage = |name: &str| {
            batch.schema().index_of(name).map_err(|_| {
                DeltaError::InvalidArgument(format!("rows keeping their lineage need {name}"))
            })
        };
        let (id_at, version_at) = (lineage(ROW_ID)?, lineage(ROW_COMMIT_VERSION)?);
        let columns: Vec<usize> = (0..batch.num_columns())
            .filter(|&i| i != id_at && i != version_at)
            .collect();
        let rows = conform(&batch.project(&columns)?, &target, &data_schema, "rows")?;
        rewriter.rules().check(&rows)?;
        let ids = batch.column(id_at).clone();
        let versions = batch.column(version_at).clone();
        rewriter
            .write_with_lineage_kept(&rows, &ids, &versions)
            .await?;
    }
    Ok(rewriter.into_actions(snapshot).await?.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Storage;
    use crate::write::table::{write_batches, SaveMode, WriteOptions, Written};
    use arrow::array::Int64Array;
    use arrow::datatypes::{Field, Schema};
    use serde_json::json;

    fn options(configuration: &[(&str, &str)], protocol: Value) -> WriteOptions {
        let mut options = WriteOptions::new(SaveMode::Error);
        options.configuration = configuration
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        options.protocol = Some(protocol);
        options
    }

    /// A table of one `id` column holding `0..rows`, version 0 written with `configuration`
    /// and `protocol`.
    async fn ids_table(
        dir: &std::path::Path,
        rows: i64,
        configuration: &[(&str, &str)],
        protocol: Value,
    ) -> Snapshot {
        let storage = Storage::open(dir.to_str().unwrap(), &Default::default()).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(0..rows))],
        )
        .unwrap();
        let written = write_batches(
            &storage,
            None,
            &schema,
            [Ok(batch)],
            options(configuration, protocol),
        )
        .await
        .unwrap();
        assert_eq!(written, Written::Version(0));
        Snapshot::try_new(storage, None).await.unwrap()
    }

    async fn table(dir: &std::path::Path, dv: bool) -> Snapshot {
        if dv {
            let protocol = json!({"minReaderVersion": 3, "minWriterVersion": 7,
                                  "readerFeatures": ["deletionVectors"],
                                  "writerFeatures": ["deletionVectors"]});
            ids_table(
                dir,
                10,
                &[("delta.enableDeletionVectors", "true")],
                protocol,
            )
            .await
        } else {
            let protocol = json!({"minReaderVersion": 1, "minWriterVersion": 2});
            ids_table(dir, 10, &[], protocol).await
        }
    }

    #[tokio::test]
    async fn mask_rows_merges_with_the_files_vector_and_removes_emptied_files() {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = table(dir.path(), true).await;
        let path = snapshot_paths(&snapshot).remove(0);
        let (actions, counts) = mask_rows(&snapshot, vec![(path.clone(), 10, vec![1, 3])])
            .await
            .unwrap();
        assert_eq!(counts.deletion_vectors_added, 1);
        let add = actions.iter().find(|a| a.get("add").is_some()).unwrap();
        assert_eq!(add["add"]["deletionVector"]["cardinality"], json!(2));
        // Every live row gone: the file is removed, no vector.
        let (actions, counts) = mask_rows(&snapshot, vec![(path.clone(), 10, (0..10).collect())])
            .await
            .unwrap();
        assert_eq!(
            (counts.removed_files, counts.deletion_vectors_added),
            (1, 0)
        );
        assert!(actions.iter().all(|a| a.get("add").is_none()));
        // Bad input: an unknown file, a row past the end.
        let err = mask_rows(&snapshot, vec![("nope.parquet".into(), 1, vec![0])]).await;
        assert!(matches!(err, Err(DeltaError::InvalidArgument(m)) if m.contains("nope.parquet")));
        let err = mask_rows(&snapshot, vec![(path, 10, vec![10])]).await;
        assert!(matches!(err, Err(DeltaError::InvalidArgument(m)) if m.contains("past the end")));
    }

    #[tokio::test]
    async fn mask_rows_needs_deletion_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = table(dir.path(), false).await;
        let path = snapshot_paths(&snapshot).remove(0);
        let err = mask_rows(&snapshot, vec![(path, 10, vec![0])]).await;
        assert!(
            matches!(err, Err(DeltaError::InvalidArgument(m)) if m.contains("deletion vectors"))
        );
    }

    #[tokio::test]
    async fn change_rows_become_cdc_files_of_their_kinds() {
        use arrow::array::StringArray;
        let dir = tempfile::tempdir().unwrap();
        let snapshot = ids_table(
            dir.path(),
            3,
            &[("delta.enableChangeDataFeed", "true")],
            json!({"minReaderVersion": 1, "minWriterVersion": 4}),
        )
        .await;
        let changes = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new(CHANGE_TYPE, DataType::Utf8, true),
        ]));
        let rows = RecordBatch::try_new(
            changes.clone(),
            vec![
                Arc::new(arrow::array::Int32Array::from(vec![1, 2, 2])),
                Arc::new(StringArray::from(vec![
                    "delete",
                    "update_preimage",
                    "update_postimage",
                ])),
            ],
        )
        .unwrap();
        let actions = write_change_rows(&snapshot, [Ok(rows)], None)
            .await
            .unwrap();
        assert!(!actions.is_empty() && actions.iter().all(|a| a.get("cdc").is_some()));
        // An unknown kind is refused, naming it.
        let bad = RecordBatch::try_new(
            changes,
            vec![
                Arc::new(arrow::array::Int32Array::from(vec![1])),
                Arc::new(StringArray::from(vec!["upsert"])),
            ],
        )
        .unwrap();
        let err = write_change_rows(&snapshot, [Ok(bad)], None).await;
        assert!(matches!(err, Err(DeltaError::InvalidArgument(m)) if m.contains("upsert")));
    }

    fn snapshot_paths(snapshot: &Snapshot) -> Vec<String> {
        crate::scan::Scan::try_new(snapshot, crate::scan::ScanOptions::default())
            .unwrap()
            .tasks()
            .iter()
            .map(|t| t.path.clone())
            .collect()
    }

    #[tokio::test]
    async fn rows_keep_their_lineage_in_the_materialized_columns() {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = ids_table(
            dir.path(),
            3,
            &[
                ("delta.enableRowTracking", "true"),
                ("delta.rowTracking.materializedRowIdColumnName", "_rid"),
                (
                    "delta.rowTracking.materializedRowCommitVersionColumnName",
                    "_rcv",
                ),
            ],
            json!({"minReaderVersion": 1, "minWriterVersion": 7,
                   "writerFeatures": ["rowTracking", "domainMetadata"]}),
        )
        .await;
        let rows = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new(ROW_ID, DataType::Int64, true),
            Field::new(ROW_COMMIT_VERSION, DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            rows,
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(Int64Array::from(vec![Some(1), Some(2)])),
                Arc::new(Int64Array::from(vec![None, Some(0)])),
            ],
        )
        .unwrap();
        let actions = write_rows_with_lineage(&snapshot, [Ok(batch.clone())], None)
            .await
            .unwrap();
        assert_eq!(actions.len(), 1);
        let path = actions[0]["add"]["path"].as_str().unwrap().to_string();
        assert!(actions[0]["add"].get("baseRowId").is_none());
        let file = std::fs::File::open(dir.path().join(&path)).unwrap();
        let mut reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap();
        let read = reader.next().unwrap().unwrap();
        let column = |name: &str| {
            read.column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(column("_rid"), vec![Some(1), Some(2)]);
        assert_eq!(column("_rcv"), vec![None, Some(0)]);
        // The lineage columns are required.
        let err =
            write_rows_with_lineage(&snapshot, [Ok(batch.project(&[0, 1]).unwrap())], None).await;
        assert!(
            matches!(err, Err(DeltaError::InvalidArgument(m)) if m.contains(ROW_COMMIT_VERSION))
        );
    }
}
