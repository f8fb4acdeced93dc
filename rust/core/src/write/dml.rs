//! DELETE and UPDATE: rows changed in place, by deletion vectors or by rewriting files.
//!
//! Spec: "Add File and Remove File" (a changed file is removed and, with a deletion vector,
//! re-added under the same path), "Deletion Vectors" and "Writer Requirement for Deletion
//! Vectors" (DVs are written only when `delta.enableDeletionVectors` is true on a table whose
//! protocol supports the `deletionVectors` writer feature; a re-added file keeps its
//! statistics with `tightBounds` false, "Per-file Statistics"), "Deletion Vector File Storage
//! Format", "Add CDC File" and "Writer Requirements for AddCDCFile" (with
//! `delta.enableChangeDataFeed`, the changed rows go to `_change_data/` files with
//! `_change_type` `delete`, `update_preimage` and `update_postimage`).
//!
//! A DML statement plans like a scan: the files its predicate may match (partition pruning and
//! statistics, [`Expr::skipping_predicate`]); each is read whole (every live row, with its
//! index in the file) and the predicate evaluated row by row ([`crate::expr::eval`]). Per
//! file with matching rows:
//! - every live row matches: the file is removed (UPDATE writes the new rows elsewhere);
//! - with deletion vectors: the matching rows join the file's deletion vector, all new vectors
//!   of the commit going into one DV file; UPDATE writes the updated rows to new files;
//! - otherwise (copy on write): the file is removed and its surviving (and, for UPDATE,
//!   updated) rows are written to new files.
//!
//! The commit reads exactly the planned files, so concurrent blind appends commute with it and
//! a concurrent change of one of its files conflicts ([`crate::write::transaction`]). Files are
//! written before the commit: a writer that dies leaves orphan files only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, RecordBatch, RecordBatchOptions, StringArray,
    StructArray,
};
use arrow::compute::{filter_record_batch, not};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};
use roaring::RoaringTreemap;
use serde_json::{json, Map, Value};

use crate::deletion_vector::{dv_file, z85_encode, DvDescriptor};
use crate::error::{DeltaError, DeltaResult};
use crate::expr::{eval, Expr};
use crate::paths::decode_uri_path;
use crate::scan::columns::output_field;
use crate::scan::{self, FileTask, MetadataColumns, ReadSpec, Scan, ScanOptions, ROW_INDEX};
use crate::snapshot::Snapshot;
use crate::write::constraints::TableRules;
use crate::write::data_files::{DataFileOptions, DataFileWriter, WrittenFile};
use crate::write::mapping::{physical_name, physical_output_schema, to_physical};
use crate::write::stats::{stats_json_of_parsed, IndexedColumns};
use crate::write::transaction::{Isolation, Transaction};

/// Table property: write deletion vectors ("Deletion Vectors").
pub const ENABLE_DELETION_VECTORS: &str = "delta.enableDeletionVectors";
/// Table property: write change data files ("Add CDC File").
pub const ENABLE_CHANGE_DATA_FEED: &str = "delta.enableChangeDataFeed";
/// The change type column of change data files.
const CHANGE_TYPE: &str = "_change_type";

/// What a DML statement changes.
#[derive(Debug, Clone)]
pub enum Change {
    /// Delete the matching rows.
    Delete,
    /// Set columns (table column names) of the matching rows to expressions over the row.
    Update(Vec<(String, Expr)>),
}

/// Options of a DML commit.
#[derive(Debug, Clone, Default)]
pub struct DmlOptions {
    /// Extra commitInfo fields.
    pub commit_info: Map<String, Value>,
    /// An application transaction `(appId, version)` ("Transaction Identifiers"); the
    /// statement is skipped when the table already holds it.
    pub app_transaction: Option<(String, i64)>,
    /// The predicate as the user wrote it, for the commitInfo.
    pub predicate_text: Option<String>,
}

/// What a DML statement did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DmlMetrics {
    /// The committed version; `None` when nothing matched (nothing is committed).
    pub version: Option<u64>,
    pub num_deleted_rows: u64,
    pub num_updated_rows: u64,
    /// Unchanged rows rewritten into new files (copy on write).
    pub num_copied_rows: u64,
    pub num_removed_files: u64,
    pub num_added_files: u64,
    pub num_added_change_files: u64,
    pub num_deletion_vectors_added: u64,
    /// Files the plan read (after pruning and skipping).
    pub num_files_scanned: u64,
}

impl DmlMetrics {
    /// Delta Spark's `operationMetrics` (values as strings).
    fn operation_metrics(&self) -> Value {
        json!({
            "numDeletedRows": self.num_deleted_rows.to_string(),
            "numUpdatedRows": self.num_updated_rows.to_string(),
            "numCopiedRows": self.num_copied_rows.to_string(),
            "numRemovedFiles": self.num_removed_files.to_string(),
            "numAddedFiles": self.num_added_files.to_string(),
            "numAddedChangeFiles": self.num_added_change_files.to_string(),
            "numDeletionVectorsAdded": self.num_deletion_vectors_added.to_string(),
        })
    }
}

fn is_true(config: &BTreeMap<String, String>, key: &str) -> bool {
    config
        .get(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Whether new deletion vectors may be written: the property is true and the protocol lists
/// the `deletionVectors` writer feature ("Writer Requirement for Deletion Vectors").
pub fn writes_deletion_vectors(snapshot: &Snapshot) -> bool {
    is_true(&snapshot.configuration(), ENABLE_DELETION_VECTORS)
        && snapshot
            .protocol()
            .writer_features
            .as_ref()
            .is_some_and(|f| f.iter().any(|n| n == "deletionVectors"))
}

/// One planned file, read: its matching rows and (when needed) its live rows.
struct ReadFile {
    task: FileTask,
    /// Indexes in the file of the matching rows.
    matched: RoaringTreemap,
    /// Live rows read.
    rows: u64,
    /// The live rows (table columns, then the row index), when the change needs them.
    batches: Vec<RecordBatch>,
    /// Per batch, which rows matched.
    masks: Vec<BooleanArray>,
}

/// Runs a DELETE (`Change::Delete`) or UPDATE on the latest version `snapshot` of its table.
/// `predicate` `None` matches every row.
pub async fn execute(
    snapshot: &Snapshot,
    predicate: Option<&Expr>,
    change: Change,
    options: DmlOptions,
) -> DeltaResult<DmlMetrics> {
    let storage = snapshot.storage().clone();
    let config = snapshot.configuration();
    let schema = snapshot.schema()?;
    let metadata = snapshot.metadata()?;
    let partition_columns = metadata.partition_columns.clone();
    let mode = snapshot.column_mapping_mode()?;
    let operation = match change {
        Change::Delete => "DELETE",
        Change::Update(_) => "UPDATE",
    };
    if is_true(&config, "delta.appendOnly") {
        return Err(DeltaError::InvalidArgument(format!(
            "the table is append-only (delta.appendOnly = true): {operation} is not allowed \
             (spec: \"Append-only Tables\")"
        )));
    }
    let rules = TableRules::of(&schema, &config)?;
    if let Some((app, version)) = &options.app_transaction {
        if snapshot
            .transactions()
            .get(app)
            .is_some_and(|t| t.version >= *version)
        {
            return Ok(DmlMetrics::default());
        }
    }
    let predicate = predicate.map(|p| p.resolve(&schema)).transpose()?;
    // UPDATE's assignments: table columns, each once, values cast to the column's type.
    let assignments: Vec<(usize, Expr)> = match &change {
        Change::Delete => Vec::new(),
        Change::Update(set) => {
            if set.is_empty() {
                return Err(DeltaError::InvalidArgument(
                    "UPDATE needs at least one column to set".into(),
                ));
            }
            let mut out: Vec<(usize, Expr)> = Vec::new();
            for (name, value) in set {
                let resolved = Expr::Column(name.clone()).resolve(&schema)?;
                let Expr::Column(column) = resolved else {
                    return Err(DeltaError::Internal(
                        "a column resolved to an expression".into(),
                    ));
                };
                let (index, field) = schema.column_with_name(&column).ok_or_else(|| {
                    DeltaError::InvalidArgument(format!(
                        "UPDATE can only set top-level columns, not {name:?}"
                    ))
                })?;
                if out.iter().any(|(i, _)| *i == index) {
                    return Err(DeltaError::InvalidArgument(format!(
                        "UPDATE sets column {column:?} twice"
                    )));
                }
                let value = Expr::Cast {
                    expr: Box::new(value.resolve(&schema)?),
                    to: output_field(field).data_type().clone(),
                };
                out.push((index, value));
            }
            out
        }
    };
    let use_dv = writes_deletion_vectors(snapshot);
    let cdf = is_true(&config, ENABLE_CHANGE_DATA_FEED);
    let writes_files = cdf || !use_dv || matches!(change, Change::Update(_));

    // Plan: the files the predicate may match.
    let skipping = predicate.as_ref().and_then(Expr::skipping_predicate);
    let planned = Scan::try_new(
        snapshot,
        ScanOptions {
            columns: Some(Vec::new()),
            predicate: skipping,
            ..Default::default()
        },
    )?;
    let tasks = planned.tasks().to_vec();
    let mut metrics = DmlMetrics {
        num_files_scanned: tasks.len() as u64,
        ..Default::default()
    };
    // Read: every live row, all columns unless only the predicate's are needed.
    let columns = if writes_files {
        None
    } else {
        Some(predicate.as_ref().map(Expr::columns).unwrap_or_default())
    };
    let columns = columns.map(|names| {
        names
            .into_iter()
            .filter_map(|n| {
                // Struct paths read their top-level column.
                let top = n.split('.').next().unwrap_or_default().to_string();
                schema.field_with_name(&top).ok().map(|_| top)
            })
            .fold(Vec::new(), |mut acc: Vec<String>, n| {
                if !acc.contains(&n) {
                    acc.push(n);
                }
                acc
            })
    });
    let spec = Arc::new(ReadSpec::try_new(
        storage.url().to_string(),
        schema.clone(),
        columns,
        partition_columns.clone(),
        mode,
        MetadataColumns {
            row_index: true,
            ..Default::default()
        },
        None,
    )?);
    let concurrency = std::thread::available_parallelism().map_or(2, |n| n.get());
    let keep_rows = writes_files;
    let reads = futures::stream::iter(tasks.clone())
        .map(|task| {
            let (storage, spec, predicate) = (storage.clone(), spec.clone(), predicate.clone());
            async move {
                let batches: Vec<RecordBatch> = scan::execute(storage, spec, vec![task.clone()], 1)
                    .try_collect()
                    .await?;
                read_file(task, batches, predicate.as_ref(), keep_rows)
            }
        })
        .buffered(concurrency);
    futures::pin_mut!(reads);

    // Change and write, file by file.
    let table_fields: Vec<_> = schema.fields().iter().map(|f| output_field(f)).collect();
    let data_schema = Arc::new(Schema::new(table_fields.clone()));
    let mut data_writer: Option<DataFileWriter> = None;
    let mut change_writer: Option<DataFileWriter> = None;
    let indexed = IndexedColumns::from_config(&config);
    // Files hold physical columns ("Writer Requirements for Column Mapping").
    let data_physical = physical_output_schema(&schema, &data_schema, mode)?;
    let cdc_physical = {
        let mut fields: Vec<_> = data_physical.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(CHANGE_TYPE, DataType::Utf8, true)));
        Arc::new(Schema::new(fields))
    };
    let physical_partitions: Vec<String> = partition_columns
        .iter()
        .map(|p| physical_name(&schema, p, mode))
        .collect();
    let mut removed: Vec<FileTask> = Vec::new();
    let mut new_vectors: Vec<(FileTask, RoaringTreemap)> = Vec::new();
    while let Some(file) = reads.try_next().await? {
        if file.matched.is_empty() {
            continue;
        }
        let matched_count = file.matched.len();
        let whole = matched_count == file.rows;
        let via_dv = use_dv && !whole;
        // Rows written: survivors (copy on write) and updated rows.
        let mut data_out: Vec<RecordBatch> = Vec::new();
        let mut change_out: Vec<(RecordBatch, &'static str)> = Vec::new();
        for (batch, mask) in file.batches.iter().zip(&file.masks) {
            let table_part = drop_row_index(batch, &data_schema)?;
            if mask.true_count() == 0 {
                if !via_dv {
                    metrics.num_copied_rows += batch.num_rows() as u64;
                    data_out.push(table_part);
                }
                continue;
            }
            let hit = filter_record_batch(&table_part, mask)?;
            if !via_dv && mask.false_count() > 0 {
                let rest = filter_record_batch(&table_part, &not(mask)?)?;
                metrics.num_copied_rows += rest.num_rows() as u64;
                data_out.push(rest);
            }
            match &change {
                Change::Delete => change_out.push((hit, "delete")),
                Change::Update(_) => {
                    let updated = apply(&hit, &assignments, &schema)?;
                    // Generated columns follow the columns they are computed from, unless set.
                    let updated = rules.fill_generated(&updated, &|i| {
                        !rules.is_generated(i) || assignments.iter().any(|(a, _)| *a == i)
                    })?;
                    rules.check(&updated)?;
                    change_out.push((hit, "update_preimage"));
                    change_out.push((updated.clone(), "update_postimage"));
                    data_out.push(updated);
                }
            }
        }
        match change {
            Change::Delete => metrics.num_deleted_rows += matched_count,
            Change::Update(_) => metrics.num_updated_rows += matched_count,
        }
        if !data_out.is_empty() {
            if data_writer.is_none() {
                data_writer = Some(DataFileWriter::try_new(
                    storage.clone(),
                    &data_physical,
                    DataFileOptions::data(physical_partitions.clone(), indexed.clone()),
                )?);
            }
            if let Some(w) = data_writer.as_mut() {
                for b in &data_out {
                    check_not_null(&schema, b)?;
                    w.write(&to_physical(b, &data_physical)?).await?;
                }
            }
        }
        if cdf {
            if change_writer.is_none() {
                change_writer = Some(DataFileWriter::try_new(
                    storage.clone(),
                    &cdc_physical,
                    DataFileOptions::change_data(physical_partitions.clone()),
                )?);
            }
            if let Some(w) = change_writer.as_mut() {
                for (b, kind) in &change_out {
                    let b = to_physical(b, &data_physical)?;
                    w.write(&with_change_type(&b, kind, &cdc_physical)?).await?;
                }
            }
        }
        if via_dv {
            let mut bitmap = match &file.task.deletion_vector {
                Some(dv) => dv.load(&storage, &file.task.path).await?,
                None => RoaringTreemap::new(),
            };
            bitmap |= &file.matched;
            new_vectors.push((file.task, bitmap));
        } else {
            removed.push(file.task);
        }
    }
    if removed.is_empty() && new_vectors.is_empty() {
        return Ok(metrics);
    }

    // Actions: removes of changed files, re-adds with new DVs, new data and change files.
    let now = chrono::Utc::now().timestamp_millis();
    let touched: HashSet<String> = removed
        .iter()
        .chain(new_vectors.iter().map(|(t, _)| t))
        .map(|t| t.path.clone())
        .collect();
    let originals = file_actions(snapshot, &touched, now)?;
    let mut actions: Vec<Value> = Vec::new();
    for task in &removed {
        let (_, remove) = originals
            .get(&task.path)
            .ok_or_else(|| DeltaError::Internal(format!("{} is not an active file", task.path)))?;
        actions.push(remove.clone());
    }
    metrics.num_removed_files = removed.len() as u64;
    if !new_vectors.is_empty() {
        let bitmaps: Vec<RoaringTreemap> = new_vectors.iter().map(|(_, b)| b.clone()).collect();
        let (bytes, places) = dv_file(&bitmaps);
        let id = uuid::Uuid::new_v4();
        storage
            .put_file(&format!("deletion_vector_{id}.bin"), bytes.into())
            .await?;
        let encoded = z85_encode(id.as_bytes());
        for ((task, bitmap), (offset, size)) in new_vectors.iter().zip(places) {
            let (add, remove) = originals.get(&task.path).ok_or_else(|| {
                DeltaError::Internal(format!("{} is not an active file", task.path))
            })?;
            let descriptor = DvDescriptor {
                storage_type: "u".into(),
                path_or_inline_dv: encoded.clone(),
                offset: Some(offset),
                size_in_bytes: size,
                cardinality: bitmap.len() as i64,
            };
            let mut add = add.clone();
            add["add"]["deletionVector"] = serde_json::to_value(&descriptor)
                .map_err(|e| DeltaError::Internal(e.to_string()))?;
            actions.push(remove.clone());
            actions.push(add);
        }
        metrics.num_deletion_vectors_added = new_vectors.len() as u64;
        metrics.num_removed_files += new_vectors.len() as u64;
        metrics.num_added_files += new_vectors.len() as u64;
    }
    let written: Vec<WrittenFile> = match data_writer {
        Some(w) => w.finish().await?,
        None => Vec::new(),
    };
    metrics.num_added_files += written.len() as u64;
    actions.extend(written.iter().map(|f| f.to_action(true)));
    let changes: Vec<WrittenFile> = match change_writer {
        Some(w) => w.finish().await?,
        None => Vec::new(),
    };
    metrics.num_added_change_files = changes.len() as u64;
    actions.extend(changes.iter().map(WrittenFile::to_cdc_action));

    let mut info = options.commit_info.clone();
    info.insert("operationMetrics".into(), metrics.operation_metrics());
    let read: HashSet<String> = tasks.iter().map(|t| t.path.clone()).collect();
    let mut txn = Transaction::new(
        storage.clone(),
        Some(snapshot.version()),
        operation,
        Isolation::ReadsData,
    )
    .with_read_files(read)
    .with_commit_info(info);
    if let Some(text) = &options.predicate_text {
        txn = txn.with_parameter("predicate", json!(text));
    }
    if let Change::Update(set) = &change {
        // The assignments as Delta Spark shows them: column -> expression.
        let shown: Map<String, Value> = set
            .iter()
            .map(|(c, e)| {
                (
                    c.clone(),
                    json!(serde_json::to_string(e).unwrap_or_default()),
                )
            })
            .collect();
        txn = txn.with_parameter("set", Value::Object(shown));
    }
    if let Some((app, version)) = options.app_transaction.clone() {
        txn = txn.with_app_transaction(app, version);
    }
    txn.add_actions(actions);
    metrics.version = Some(txn.commit().await?);
    Ok(metrics)
}

/// Evaluates the predicate on a file's live rows.
fn read_file(
    task: FileTask,
    batches: Vec<RecordBatch>,
    predicate: Option<&Expr>,
    keep_rows: bool,
) -> DeltaResult<ReadFile> {
    let mut matched = RoaringTreemap::new();
    let mut masks = Vec::with_capacity(batches.len());
    let mut rows = 0u64;
    for batch in &batches {
        rows += batch.num_rows() as u64;
        let mask = match predicate {
            Some(p) => eval::matches(p, batch).map_err(|e| match e {
                DeltaError::InvalidArgument(m) => {
                    DeltaError::InvalidArgument(format!("{m} (in {})", task.path))
                }
                other => other,
            })?,
            None => BooleanArray::from(vec![true; batch.num_rows()]),
        };
        let index = batch
            .column_by_name(ROW_INDEX)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| DeltaError::Internal("a DML read without row indexes".into()))?;
        for i in mask.values().set_indices() {
            matched.insert(index.value(i) as u64);
        }
        masks.push(mask);
    }
    Ok(ReadFile {
        task,
        matched,
        rows,
        batches: if keep_rows { batches } else { Vec::new() },
        masks: if keep_rows { masks } else { Vec::new() },
    })
}

/// `batch` without its trailing row index column, as a batch of `schema`.
fn drop_row_index(batch: &RecordBatch, schema: &SchemaRef) -> DeltaResult<RecordBatch> {
    let n = schema.fields().len();
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        batch.columns()[..n].to_vec(),
        &options,
    )?)
}

/// `batch` with `_change_type` = `kind` in every row.
fn with_change_type(
    batch: &RecordBatch,
    kind: &str,
    schema: &SchemaRef,
) -> DeltaResult<RecordBatch> {
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(StringArray::from(vec![kind; batch.num_rows()])));
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// The rows of `batch` (table columns) with UPDATE's assignments applied.
fn apply(
    batch: &RecordBatch,
    assignments: &[(usize, Expr)],
    table: &Schema,
) -> DeltaResult<RecordBatch> {
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    for (index, value) in assignments {
        let field = table.field(*index);
        let new = eval::evaluate(value, batch).map_err(|e| match e {
            DeltaError::InvalidArgument(m) => DeltaError::InvalidArgument(format!(
                "the new value of column {:?}: {m}",
                field.name()
            )),
            other => other,
        })?;
        columns[*index] = new;
    }
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// A NOT NULL column ("nullable": false in the schema) must hold no nulls ("Column
/// Invariants" of nullability, enforced by every writer).
pub fn check_not_null(table: &Schema, batch: &RecordBatch) -> DeltaResult<()> {
    for (field, column) in table.fields().iter().zip(batch.columns()) {
        if !field.is_nullable() && column.null_count() > 0 {
            return Err(DeltaError::InvalidArgument(format!(
                "NOT NULL constraint violated: column {:?} would hold {} null value(s)",
                field.name(),
                column.null_count()
            )));
        }
    }
    Ok(())
}

/// For the active files of `snapshot` whose (URI-decoded) paths are in `paths`: an `add`
/// that re-adds the logical file unchanged (deletion vector and statistics kept, `tightBounds`
/// false) and the `remove` that removes it, keyed by decoded path.
pub fn file_actions(
    snapshot: &Snapshot,
    paths: &HashSet<String>,
    now: i64,
) -> DeltaResult<HashMap<String, (Value, Value)>> {
    let mut out = HashMap::with_capacity(paths.len());
    for files in snapshot.files() {
        let adds = &files.adds;
        let raw_paths = adds
            .column_by_name("path")
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| DeltaError::Internal("add batch without paths".into()))?;
        for i in 0..adds.len() {
            let raw = raw_paths.value(i);
            let decoded =
                decode_uri_path(raw).map_err(|rule| DeltaError::corrupt(raw, None, rule))?;
            if !paths.contains(decoded.as_ref()) {
                continue;
            }
            let remove = remove_action(adds, i, now)?;
            let mut add = Map::new();
            add.insert("path".into(), json!(raw));
            add.insert(
                "partitionValues".into(),
                json!(crate::model::map_field(adds, "partitionValues", i).unwrap_or_default()),
            );
            for key in [
                "size",
                "modificationTime",
                "baseRowId",
                "defaultRowCommitVersion",
            ] {
                if let Some(v) = crate::model::i64_field(adds, key, i) {
                    add.insert(key.into(), json!(v));
                }
            }
            add.insert("dataChange".into(), json!(true));
            add.insert(
                "stats".into(),
                json!(stats_json_of_parsed(&files.stats, i, false).to_string()),
            );
            if let Some(tags) = crate::model::map_field(adds, "tags", i) {
                add.insert("tags".into(), json!(tags));
            }
            if let Some(p) = crate::model::str_field(adds, "clusteringProvider", i) {
                add.insert("clusteringProvider".into(), json!(p));
            }
            if let Some(dv) = remove["remove"].get("deletionVector") {
                add.insert("deletionVector".into(), dv.clone());
            }
            out.insert(
                decoded.into_owned(),
                (json!({ "add": Value::Object(add) }), remove),
            );
        }
    }
    Ok(out)
}

/// The `remove` action of row `i` of a snapshot's `add` structs: the logical file (path and
/// deletion vector), its partition values, size and row tracking fields
/// (`extendedFileMetadata`), removed at `now`.
pub fn remove_action(adds: &StructArray, i: usize, now: i64) -> DeltaResult<Value> {
    let path = crate::model::str_field(adds, "path", i)
        .ok_or_else(|| DeltaError::Internal("add without a path".into()))?;
    let mut remove = json!({
        "path": path,
        "deletionTimestamp": now,
        "dataChange": true,
        "extendedFileMetadata": true,
        "partitionValues": crate::model::map_field(adds, "partitionValues", i).unwrap_or_default(),
    });
    for key in ["size", "baseRowId", "defaultRowCommitVersion"] {
        if let Some(v) = crate::model::i64_field(adds, key, i) {
            remove[key] = json!(v);
        }
    }
    if let Some(dv) = adds
        .column_by_name("deletionVector")
        .and_then(|c| c.as_struct_opt())
    {
        if let Some(d) = DvDescriptor::from_row(dv, i, path)? {
            remove["deletionVector"] =
                serde_json::to_value(d).map_err(|e| DeltaError::Internal(e.to_string()))?;
        }
    }
    Ok(json!({ "remove": remove }))
}
