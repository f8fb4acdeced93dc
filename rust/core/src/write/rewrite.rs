//! The shared machinery of DELETE, UPDATE and MERGE: files changed row by row, new rows
//! written, and one commit.
//!
//! Spec: "Add File and Remove File", "Deletion Vectors" ("Writer Requirement for Deletion
//! Vectors"), "Deletion Vector File Storage Format", "Add CDC File", "Writer Requirements for
//! Column Mapping", "Per-file Statistics" (a re-added file keeps its statistics with
//! `tightBounds` false). A [`Rewriter`] is told, file by file, which live rows of an existing
//! file go away ([`Rewriter::change_file`]): every row means the file is removed; with deletion
//! vectors the rows join the file's vector (all new vectors of the commit share one DV file);
//! otherwise (copy on write) the surviving rows are written to new files and the file removed.
//! New rows (updated or inserted) and change data rows are written as they come; the commit
//! ([`Rewriter::commit`]) then removes and re-adds files and adds the new ones, reading exactly
//! the planned files for the conflict rules of [`crate::write::transaction`].

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch, RecordBatchOptions, StringArray};
use arrow::compute::{filter_record_batch, not};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use roaring::RoaringTreemap;
use serde_json::{json, Map, Value};

use crate::deletion_vector::{dv_file, z85_encode, DvDescriptor};
use crate::error::{DeltaError, DeltaResult};
use crate::scan::columns::output_field;
use crate::scan::FileTask;
use crate::snapshot::Snapshot;
use crate::storage::Storage;
use crate::write::constraints::TableRules;
use crate::write::data_files::{DataFileOptions, DataFileWriter, WrittenFile};
use crate::write::dml::{check_not_null, file_actions, writes_deletion_vectors};
use crate::write::mapping::{physical_name, physical_output_schema, to_physical};
use crate::write::stats::IndexedColumns;
use crate::write::transaction::{Isolation, Transaction};

/// Table property: write change data files ("Add CDC File").
pub const ENABLE_CHANGE_DATA_FEED: &str = "delta.enableChangeDataFeed";
/// The change type column of change data files.
const CHANGE_TYPE: &str = "_change_type";

/// File-level counts of a rewrite.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileCounts {
    /// Unchanged rows rewritten into new files (copy on write).
    pub copied_rows: u64,
    pub removed_files: u64,
    pub added_files: u64,
    pub added_change_files: u64,
    pub deletion_vectors_added: u64,
}

/// Rewrites files of one snapshot and commits the result.
pub struct Rewriter {
    storage: Storage,
    /// The table's logical schema.
    schema: SchemaRef,
    /// Output columns of the table (the batches callers hand in).
    data_schema: SchemaRef,
    data_physical: SchemaRef,
    cdc_physical: SchemaRef,
    partitions: Vec<String>,
    indexed: IndexedColumns,
    use_dv: bool,
    cdf: bool,
    rules: TableRules,
    data_writer: Option<DataFileWriter>,
    change_writer: Option<DataFileWriter>,
    removed: Vec<FileTask>,
    new_vectors: Vec<(FileTask, RoaringTreemap)>,
    /// A `metaData` action the commit carries (identity high-water marks moved).
    metadata: Option<Value>,
    /// The counts so far.
    pub counts: FileCounts,
}

impl Rewriter {
    /// A rewriter of `snapshot`'s files.
    pub fn try_new(snapshot: &Snapshot) -> DeltaResult<Self> {
        if snapshot
            .protocol()
            .writer_features
            .as_ref()
            .is_some_and(|f| f.iter().any(|n| n == "rowTracking"))
        {
            // "Row Tracking": rows that move to new files (updated or copied) must keep their
            // row IDs through the materialized columns, which deltalog does not write yet.
            return Err(DeltaError::Unsupported(
                "DELETE, UPDATE, MERGE and replaceWhere on a table with row tracking would \
                 have to keep the row IDs of moved rows in materialized columns, which \
                 deltalog does not write yet (appends and overwrites work)"
                    .into(),
            ));
        }
        let config = snapshot.configuration();
        let schema = snapshot.schema()?;
        let mode = snapshot.column_mapping_mode()?;
        let data_schema = Arc::new(Schema::new(
            schema
                .fields()
                .iter()
                .map(|f| output_field(f))
                .collect::<Vec<_>>(),
        ));
        // Files hold physical columns ("Writer Requirements for Column Mapping").
        let data_physical = physical_output_schema(&schema, &data_schema, mode)?;
        let cdc_physical = {
            let mut fields: Vec<_> = data_physical.fields().iter().cloned().collect();
            fields.push(Arc::new(Field::new(CHANGE_TYPE, DataType::Utf8, true)));
            Arc::new(Schema::new(fields))
        };
        let indexed = IndexedColumns::for_table(
            &config,
            &data_physical,
            &crate::write::clustering::clustering_columns(snapshot)?,
        );
        let partitions = snapshot
            .metadata()?
            .partition_columns
            .iter()
            .map(|p| physical_name(&schema, p, mode))
            .collect();
        Ok(Rewriter {
            storage: snapshot.storage().clone(),
            rules: TableRules::of(&schema, &config)?,
            data_schema,
            data_physical,
            cdc_physical,
            partitions,
            indexed,
            use_dv: writes_deletion_vectors(snapshot),
            cdf: config
                .get(ENABLE_CHANGE_DATA_FEED)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
            schema,
            data_writer: None,
            change_writer: None,
            removed: Vec::new(),
            new_vectors: Vec::new(),
            metadata: None,
            counts: FileCounts::default(),
        })
    }

    /// The table's output columns: the schema of the batches callers hand in.
    pub fn data_schema(&self) -> &SchemaRef {
        &self.data_schema
    }

    /// The table's rules (CHECK constraints, invariants, generated columns).
    pub fn rules(&self) -> &TableRules {
        &self.rules
    }

    /// Whether changed rows go to change data files.
    pub fn writes_changes(&self) -> bool {
        self.cdf
    }

    /// Whether files keep their unchanged rows through deletion vectors (so callers need not
    /// read columns only a rewrite would need).
    pub fn uses_deletion_vectors(&self) -> bool {
        self.use_dv
    }

    /// Writes new rows (table output columns) to new data files, after the table's rules.
    pub async fn write_rows(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        check_not_null(&self.schema, batch)?;
        if self.data_writer.is_none() {
            self.data_writer = Some(DataFileWriter::try_new(
                self.storage.clone(),
                &self.data_physical,
                DataFileOptions::data(self.partitions.clone(), self.indexed.clone()),
            )?);
        }
        let physical = to_physical(batch, &self.data_physical)?;
        if let Some(w) = self.data_writer.as_mut() {
            w.write(&physical).await?;
        }
        Ok(())
    }

    /// Records changed rows (`delete`, `insert`, `update_preimage`, `update_postimage`) in
    /// change data files, when the table has the change feed enabled.
    pub async fn write_changes(&mut self, batch: &RecordBatch, kind: &str) -> DeltaResult<()> {
        if !self.cdf || batch.num_rows() == 0 {
            return Ok(());
        }
        if self.change_writer.is_none() {
            self.change_writer = Some(DataFileWriter::try_new(
                self.storage.clone(),
                &self.cdc_physical,
                DataFileOptions::change_data(self.partitions.clone()),
            )?);
        }
        let physical = to_physical(batch, &self.data_physical)?;
        let mut columns = physical.columns().to_vec();
        columns.push(Arc::new(StringArray::from(vec![kind; batch.num_rows()])));
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        let with_kind =
            RecordBatch::try_new_with_options(self.cdc_physical.clone(), columns, &options)?;
        if let Some(w) = self.change_writer.as_mut() {
            w.write(&with_kind).await?;
        }
        Ok(())
    }

    /// Takes rows of one existing file away: `gone` holds their indexes in the file, `live`
    /// the number of live rows the file had, and `batches` its live rows (table output
    /// columns) with a mask of the rows that go, needed only for copy on write.
    pub async fn change_file(
        &mut self,
        task: FileTask,
        gone: &RoaringTreemap,
        live: u64,
        batches: &[(RecordBatch, BooleanArray)],
    ) -> DeltaResult<()> {
        if gone.is_empty() {
            return Ok(());
        }
        if gone.len() == live {
            self.removed.push(task);
            return Ok(());
        }
        if self.use_dv {
            let mut bitmap = match &task.deletion_vector {
                Some(dv) => dv.load(&self.storage, &task.path).await?,
                None => RoaringTreemap::new(),
            };
            bitmap |= gone;
            self.new_vectors.push((task, bitmap));
            return Ok(());
        }
        // Copy on write: the surviving rows move to new files.
        for (batch, mask) in batches {
            let rest = if mask.true_count() == 0 {
                batch.clone()
            } else {
                filter_record_batch(batch, &not(mask)?)?
            };
            self.counts.copied_rows += rest.num_rows() as u64;
            self.write_rows(&rest).await?;
        }
        self.removed.push(task);
        Ok(())
    }

    /// Puts a `metaData` action into the commit (e.g. with moved identity high-water marks).
    pub fn set_metadata(&mut self, action: Value) {
        self.metadata = Some(action);
    }

    /// Whether anything changed.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.new_vectors.is_empty() && self.data_writer.is_none()
    }

    /// The actions of the changes so far (removes, re-adds with new deletion vectors, new data
    /// and change files), after closing every file and writing the DV file.
    pub async fn into_actions(
        mut self,
        snapshot: &Snapshot,
    ) -> DeltaResult<(Vec<Value>, FileCounts)> {
        let now = chrono::Utc::now().timestamp_millis();
        let touched: HashSet<String> = self
            .removed
            .iter()
            .chain(self.new_vectors.iter().map(|(t, _)| t))
            .map(|t| t.path.clone())
            .collect();
        let originals = file_actions(snapshot, &touched, now)?;
        let original = |path: &str| {
            originals
                .get(path)
                .ok_or_else(|| DeltaError::Internal(format!("{path} is not an active file")))
        };
        let mut actions: Vec<Value> = self.metadata.take().into_iter().collect();
        for task in &self.removed {
            actions.push(original(&task.path)?.1.clone());
        }
        self.counts.removed_files += self.removed.len() as u64;
        if !self.new_vectors.is_empty() {
            let bitmaps: Vec<RoaringTreemap> =
                self.new_vectors.iter().map(|(_, b)| b.clone()).collect();
            let (bytes, places) = dv_file(&bitmaps);
            let id = uuid::Uuid::new_v4();
            self.storage
                .put_file(&format!("deletion_vector_{id}.bin"), bytes.into())
                .await?;
            let encoded = z85_encode(id.as_bytes());
            for ((task, bitmap), (offset, size)) in self.new_vectors.iter().zip(places) {
                let (add, remove) = original(&task.path)?;
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
            let n = self.new_vectors.len() as u64;
            self.counts.deletion_vectors_added += n;
            self.counts.removed_files += n;
            self.counts.added_files += n;
        }
        let written: Vec<WrittenFile> = match self.data_writer.take() {
            Some(w) => w.finish().await?,
            None => Vec::new(),
        };
        self.counts.added_files += written.len() as u64;
        actions.extend(written.iter().map(|f| f.to_action(true)));
        let changes: Vec<WrittenFile> = match self.change_writer.take() {
            Some(w) => w.finish().await?,
            None => Vec::new(),
        };
        self.counts.added_change_files += changes.len() as u64;
        actions.extend(changes.iter().map(WrittenFile::to_cdc_action));

        Ok((actions, self.counts))
    }

    /// Commits the changes as the version after `snapshot`'s, having read the files `read`.
    /// `metrics` are the operation's own (`numDeletedRows`, ...); the file counts are added.
    #[allow(clippy::too_many_arguments)]
    pub async fn commit(
        self,
        snapshot: &Snapshot,
        operation: &str,
        read: HashSet<String>,
        parameters: Map<String, Value>,
        mut metrics: Map<String, Value>,
        mut commit_info: Map<String, Value>,
        app_transaction: Option<(String, i64)>,
    ) -> DeltaResult<(u64, FileCounts)> {
        let storage = self.storage.clone();
        let (actions, counts) = self.into_actions(snapshot).await?;
        // Delta Spark's operationMetrics (values as strings).
        let c = &counts;
        for (k, v) in [
            ("numCopiedRows", c.copied_rows),
            ("numRemovedFiles", c.removed_files),
            ("numAddedFiles", c.added_files),
            ("numAddedChangeFiles", c.added_change_files),
            ("numDeletionVectorsAdded", c.deletion_vectors_added),
        ] {
            metrics.insert(k.into(), json!(v.to_string()));
        }
        commit_info.insert("operationMetrics".into(), Value::Object(metrics));
        let mut txn = Transaction::new(
            storage,
            Some(snapshot.version()),
            operation,
            Isolation::ReadsData,
        )
        .with_read_files(read)
        .with_commit_info(commit_info)
        .for_table(snapshot);
        for (k, v) in parameters {
            txn = txn.with_parameter(&k, v);
        }
        if let Some((app, version)) = app_transaction {
            txn = txn.with_app_transaction(app, version);
        }
        txn.add_actions(actions);
        let version = txn.commit().await?;
        Ok((version, counts))
    }
}
