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
//! a concurrent change of one of its files conflicts ([`crate::commit::transaction`]). Files are
//! written before the commit: a writer that dies leaves orphan files only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, RecordBatch, RecordBatchOptions, StructArray,
};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{Int64Type, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};
use roaring::RoaringTreemap;
use serde_json::{json, Map, Value};

use crate::deletion_vector::DvDescriptor;
use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::expr::{eval, Expr};
use crate::paths::decode_uri_path;
use crate::scan::columns::output_field;
use crate::scan::{self, FileTask, MetadataColumns, ReadSpec, Scan, ScanOptions, ROW_INDEX};
use crate::snapshot::Snapshot;
use crate::stats::collect::stats_json_of_parsed;

/// Table property: write deletion vectors ("Deletion Vectors").
pub const ENABLE_DELETION_VECTORS: &str = "delta.enableDeletionVectors";

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
    /// UPDATE's assignments as the user wrote them (column, SQL), for the commitInfo; when
    /// `None` the expressions' own form is shown.
    pub set_text: Option<Vec<(String, String)>>,
    /// Target size of the files written (`None`: the table's `delta.targetFileSize`, else
    /// the default).
    pub target_file_size: Option<u64>,
    /// How the rewritten files are encoded (compression, row groups, statistics, bloom
    /// filters; `None`: deltalog's settings).
    pub parquet: Option<std::sync::Arc<crate::write::parquet_options::ParquetSettings>>,
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
    let config = snapshot.configuration();
    let schema = snapshot.schema()?;
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
    let mut rewriter = Rewriter::for_statement(snapshot, options.target_file_size).await?;
    rewriter.set_parquet(options.parquet.clone());
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
            let identities = crate::writer_features::identity::IdentityColumns::of(&schema)?;
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
                if identities.refuses_values(index) {
                    return Err(DeltaError::InvalidArgument(format!(
                        "UPDATE cannot set identity column {column:?} (its values are \
                         generated; spec: \"Identity Columns\")"
                    )));
                }
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
    let applied = apply_change(
        snapshot,
        predicate.as_ref(),
        &change,
        &assignments,
        &mut rewriter,
    )
    .await?;
    let mut metrics = DmlMetrics {
        num_files_scanned: applied.files_scanned,
        ..Default::default()
    };
    let (deleted, updated_rows) = match change {
        Change::Delete => (applied.changed_rows, 0),
        Change::Update(_) => (0, applied.changed_rows),
    };
    metrics.num_deleted_rows = deleted;
    metrics.num_updated_rows = updated_rows;
    if rewriter.is_empty() {
        return Ok(metrics);
    }
    let mut parameters = Map::new();
    if let Some(text) = &options.predicate_text {
        parameters.insert("predicate".into(), json!(text));
    }
    if let Some(texts) = &options.set_text {
        // The assignments as Delta Spark shows them: column -> SQL expression.
        let shown: Map<String, Value> = texts
            .iter()
            .map(|(c, sql)| (c.clone(), json!(sql)))
            .collect();
        parameters.insert("set".into(), Value::Object(shown));
    } else if let Change::Update(set) = &change {
        let shown: Map<String, Value> = set
            .iter()
            .map(|(c, e)| {
                (
                    c.clone(),
                    json!(serde_json::to_string(e).unwrap_or_default()),
                )
            })
            .collect();
        parameters.insert("set".into(), Value::Object(shown));
    }
    let mut own = Map::new();
    own.insert("numDeletedRows".into(), json!(deleted.to_string()));
    own.insert("numUpdatedRows".into(), json!(updated_rows.to_string()));
    let read = applied.read;
    let (version, counts) = rewriter
        .commit(
            snapshot,
            operation,
            read,
            parameters,
            own,
            options.commit_info.clone(),
            options.app_transaction.clone(),
        )
        .await?;
    metrics.version = Some(version);
    metrics.num_copied_rows = counts.copied_rows;
    metrics.num_removed_files = counts.removed_files;
    metrics.num_added_files = counts.added_files;
    metrics.num_added_change_files = counts.added_change_files;
    metrics.num_deletion_vectors_added = counts.deletion_vectors_added;
    Ok(metrics)
}

/// What [`apply_change`] did.
pub struct Applied {
    /// The files read (URI-decoded paths), for the conflict rules.
    pub read: HashSet<String>,
    pub files_scanned: u64,
    /// Rows deleted or updated.
    pub changed_rows: u64,
}

/// Applies `change` to the rows of `snapshot` matching `predicate` (resolved against the
/// table; every row when `None`) through `rewriter`, which the caller commits. UPDATE's
/// `assignments` are table column indexes with their (cast) values.
pub async fn apply_change(
    snapshot: &Snapshot,
    predicate: Option<&Expr>,
    change: &Change,
    assignments: &[(usize, Expr)],
    rewriter: &mut Rewriter,
) -> DeltaResult<Applied> {
    let storage = snapshot.storage().clone();
    let schema = snapshot.schema()?;
    let partition_columns = snapshot.metadata()?.partition_columns.clone();
    let mode = snapshot.column_mapping_mode()?;
    let writes_files = rewriter.writes_changes()
        || !rewriter.uses_deletion_vectors()
        || matches!(change, Change::Update(_));

    // Plan: the files the predicate may match.
    let skipping = predicate.and_then(Expr::skipping_predicate);
    let planned = Scan::try_new(
        snapshot,
        ScanOptions {
            columns: Some(Vec::new()),
            predicate: skipping,
            ..Default::default()
        },
    )?;
    let tasks = planned.tasks().to_vec();
    // Read: every live row, all columns unless only the predicate's are needed.
    let columns = if writes_files {
        None
    } else {
        Some(predicate.map(Expr::columns).unwrap_or_default())
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
            // Rows that move keep their row IDs ("Writer Requirements for Row Tracking").
            row_tracking: if writes_files {
                rewriter.lineage_columns()
            } else {
                None
            },
            ..Default::default()
        },
        None,
    )?);
    let concurrency = crate::available_threads();
    let keep_rows = writes_files;
    let reads = futures::stream::iter(tasks.clone())
        .map(|task| {
            let (storage, spec, predicate) = (storage.clone(), spec.clone(), predicate.cloned());
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
    let data_schema = rewriter.data_schema().clone();
    let mut changed_rows = 0u64;
    while let Some(file) = reads.try_next().await? {
        if file.matched.is_empty() {
            continue;
        }
        let mut parts: Vec<(RecordBatch, BooleanArray)> = Vec::with_capacity(file.batches.len());
        for (batch, mask) in file.batches.iter().zip(&file.masks) {
            let table_part = drop_row_index(batch, &data_schema)?;
            if mask.true_count() > 0 {
                let hit = filter_record_batch(&table_part, mask)?;
                match change {
                    Change::Delete => rewriter.write_changes(&hit, "delete").await?,
                    Change::Update(_) => {
                        let rules = rewriter.rules();
                        let updated = apply(&hit, assignments, &schema)?;
                        // Generated columns follow the columns they come from, unless set.
                        let updated = rules.fill_generated(&updated, &|i| {
                            !rules.is_generated(i) || assignments.iter().any(|(a, _)| *a == i)
                        })?;
                        rules.check(&updated)?;
                        rewriter.write_changes(&hit, "update_preimage").await?;
                        rewriter.write_changes(&updated, "update_postimage").await?;
                        let ids = batch
                            .column_by_name(scan::ROW_ID)
                            .map(|ids| arrow::compute::filter(ids, mask))
                            .transpose()?;
                        rewriter.write_updated_rows(&updated, ids.as_ref()).await?;
                    }
                }
            }
            // The whole batch: copied rows keep their row tracking columns.
            parts.push((batch.clone(), mask.clone()));
        }
        changed_rows += file.matched.len();
        rewriter
            .change_file(file.task, &file.matched, file.rows, &parts)
            .await?;
    }
    Ok(Applied {
        read: tasks.iter().map(|t| t.path.clone()).collect(),
        files_scanned: tasks.len() as u64,
        changed_rows,
    })
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

/// The leading columns of `batch` as a batch of `schema` (a scan's table columns without the
/// row index and row tracking columns after them; a MERGE pair's target side).
pub(crate) fn drop_row_index(batch: &RecordBatch, schema: &SchemaRef) -> DeltaResult<RecordBatch> {
    let n = schema.fields().len();
    if batch.num_columns() < n {
        return Err(DeltaError::Internal(format!(
            "a batch of {} columns where the table has {n}",
            batch.num_columns()
        )));
    }
    if batch.num_columns() == n && batch.schema() == *schema {
        return Ok(batch.clone());
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        batch.columns()[..n].to_vec(),
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
