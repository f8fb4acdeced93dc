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
//! the planned files for the conflict rules of [`crate::commit::transaction`].
//!
//! Row tracking ("Writer Requirements for Row Tracking"): re-added files keep their
//! `baseRowId` and `defaultRowCommitVersion`; with `delta.enableRowTracking` true, rows copied
//! to new files keep their stable row ID and commit version in the hidden materialized columns
//! (`delta.rowTracking.materialized*ColumnName`), updated rows keep their row ID and take the
//! commit's version, and the commitInfo says `delta.rowTracking.preserved`. Small deletion
//! vectors are stored inline in the log (`INLINE_DV_LIMIT`).
//!
//! Rows another engine changed (Spark's DML) become deletion vectors and change data files
//! through [`super::engine_changes`].

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, StringArray};
use arrow::compute::{filter_record_batch, not};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use roaring::RoaringTreemap;
use serde_json::{json, Map, Value};

use crate::commit::transaction::{Isolation, Transaction};
use crate::deletion_vector::{dv_file, serialize_bitmap, z85_encode, DvDescriptor};
use crate::dml::delete_update::{
    check_not_null, drop_row_index, file_actions, writes_deletion_vectors,
};
use crate::error::{DeltaError, DeltaResult};
use crate::scan::columns::output_field;
use crate::scan::{
    FileTask, RowTracking, ENABLE_ROW_TRACKING, MATERIALIZED_ROW_COMMIT_VERSION,
    MATERIALIZED_ROW_ID, ROW_COMMIT_VERSION, ROW_ID,
};
use crate::schema::ColumnMappingMode;
use crate::snapshot::Snapshot;
use crate::stats::collect::IndexedColumns;
use crate::storage::Storage;
use crate::write::data_files::{DataFileOptions, DataFileWriter, WrittenFile, REWRITE_QUEUE_BYTES};
use crate::writer_features::column_mapping::{physical_name, physical_output_schema, to_physical};
use crate::writer_features::constraints::TableRules;

/// Table property: write change data files ("Add CDC File").
pub const ENABLE_CHANGE_DATA_FEED: &str = "delta.enableChangeDataFeed";

/// Deletion vectors of at most this many serialized bytes are stored inline in the log (a
/// few deleted rows: about 80 characters of Z85 instead of a file read per data file).
const INLINE_DV_LIMIT: usize = 64;

/// The change type column of change data files.
pub(crate) const CHANGE_TYPE: &str = "_change_type";

/// The materialized row tracking columns of a table with row tracking enabled.
#[derive(Debug, Clone)]
struct RowLineage {
    row_id_column: String,
    commit_version_column: String,
}

impl RowLineage {
    /// `Some` when `delta.enableRowTracking` is true; the column names must be assigned then
    /// ("Writer Requirements for Row Tracking").
    fn of(snapshot: &Snapshot) -> DeltaResult<Option<Self>> {
        if !snapshot_tracks_rows(snapshot) {
            return Ok(None);
        }
        let config = snapshot.configuration();
        let enabled = config
            .get(ENABLE_ROW_TRACKING)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        if !enabled {
            return Ok(None);
        }
        let name = |key: &str| {
            config.get(key).cloned().ok_or_else(|| {
                DeltaError::corrupt(
                    "_delta_log",
                    Some(snapshot.version()),
                    format!(
                        "row tracking is enabled but {key} is not set (spec: \"Writer \
                         Requirements for Row Tracking\")"
                    ),
                )
            })
        };
        Ok(Some(RowLineage {
            row_id_column: name(MATERIALIZED_ROW_ID)?,
            commit_version_column: name(MATERIALIZED_ROW_COMMIT_VERSION)?,
        }))
    }
}

/// Whether the protocol supports row tracking (the `rowTracking` writer feature).
fn snapshot_tracks_rows(snapshot: &Snapshot) -> bool {
    snapshot
        .protocol()
        .writer_features
        .as_ref()
        .is_some_and(|f| f.iter().any(|n| n == "rowTracking"))
}

/// The `_row_id` and `_row_commit_version` columns of a batch read with row tracking.
pub(crate) fn lineage_of(batch: &RecordBatch) -> (Option<ArrayRef>, Option<ArrayRef>) {
    (
        batch.column_by_name(ROW_ID).cloned(),
        batch.column_by_name(ROW_COMMIT_VERSION).cloned(),
    )
}

fn missing_lineage(path: &str) -> DeltaError {
    DeltaError::Internal(format!(
        "rows of {path} were read without their row IDs on a table with row tracking"
    ))
}

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
    /// The columns of new data files: `data_physical`, then the materialized row tracking
    /// columns when row tracking is enabled.
    file_physical: SchemaRef,
    /// The materialized row tracking columns (no statistics).
    unindexed: Vec<String>,
    cdc_physical: SchemaRef,
    /// Row tracking enabled: the materialized column names rows keep their lineage in.
    lineage: Option<RowLineage>,
    partitions: Vec<String>,
    indexed: IndexedColumns,
    use_dv: bool,
    cdf: bool,
    rules: TableRules,
    data_writer: Option<DataFileWriter>,
    change_writer: Option<DataFileWriter>,
    removed: Vec<FileTask>,
    new_vectors: Vec<(FileTask, RoaringTreemap)>,
    /// Rows written by [`Rewriter::write_updated_rows`].
    updated_rows: u64,
    /// Partition values go into the data files too (icebergCompatV1/V2).
    materialize_partitions: bool,
    /// A `metaData` action the commit carries (identity high-water marks moved).
    metadata: Option<Value>,
    /// Target size of new data and change data files.
    target_file_size: usize,
    /// Whether the adds and removes change data (false: rows only rearranged, as by
    /// OPTIMIZE; spec "Add File and Remove File": `dataChange`).
    data_change: bool,
    /// `clusteringProvider` of the new data files.
    clustering_provider: Option<String>,
    /// How new files are encoded (`None`: deltalog's settings), physical column names.
    parquet: Option<Arc<crate::write::parquet_options::ParquetSettings>>,
    mapping_mode: ColumnMappingMode,
    /// The counts so far.
    pub counts: FileCounts,
}

impl Rewriter {
    /// A rewriter of `snapshot`'s files.
    pub fn try_new(snapshot: &Snapshot, target_file_size: Option<u64>) -> DeltaResult<Self> {
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
        let lineage = RowLineage::of(snapshot)?;
        // With row tracking enabled, data files carry the hidden materialized columns after
        // the table's ("Writer Requirements for Row Tracking").
        let (file_physical, unindexed) = match &lineage {
            Some(l) => {
                let mut fields: Vec<_> = data_physical.fields().iter().cloned().collect();
                for name in [&l.row_id_column, &l.commit_version_column] {
                    fields.push(Arc::new(Field::new(name.as_str(), DataType::Int64, true)));
                }
                (
                    Arc::new(Schema::new(fields)),
                    vec![l.row_id_column.clone(), l.commit_version_column.clone()],
                )
            }
            None => (data_physical.clone(), Vec::new()),
        };
        let indexed = IndexedColumns::for_table(
            &config,
            &data_physical,
            &crate::layout::clustering::clustering_columns(snapshot)?,
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
            file_physical,
            unindexed,
            cdc_physical,
            lineage,
            partitions,
            indexed,
            use_dv: writes_deletion_vectors(snapshot),
            cdf: config
                .get(ENABLE_CHANGE_DATA_FEED)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
            schema,
            data_writer: None,
            change_writer: None,
            updated_rows: 0,
            materialize_partitions: crate::writer_features::iceberg::materializes_partitions(
                snapshot,
            )?,
            removed: Vec::new(),
            new_vectors: Vec::new(),
            metadata: None,
            target_file_size: crate::write::data_files::target_file_size(
                target_file_size,
                &config,
            )?,
            data_change: true,
            clustering_provider: None,
            parquet: None,
            mapping_mode: mode,
            counts: FileCounts::default(),
        })
    }

    /// Marks the rewrite as one that only rearranges rows (OPTIMIZE, REORG): its adds and
    /// removes say `dataChange: false`, so readers of the change feed and streams skip them.
    pub fn set_rearranging(&mut self) {
        self.data_change = false;
    }

    /// Encodes the new files with `parquet` (compression, row groups, statistics and bloom
    /// filters as the caller set them, columns by logical name) instead of deltalog's
    /// settings.
    pub fn set_parquet(
        &mut self,
        parquet: Option<Arc<crate::write::parquet_options::ParquetSettings>>,
    ) {
        self.parquet = parquet.map(|settings| {
            let (schema, mode) = (&self.schema, self.mapping_mode);
            Arc::new(settings.renamed(|name| physical_name(schema, name, mode)))
        });
    }

    /// Marks the new data files as clustered by `provider` (`clusteringProvider`, spec
    /// "Clustered Table"; `liquid` for liquid clustering).
    pub fn set_clustering_provider(&mut self, provider: &str) {
        self.clustering_provider = Some(provider.to_string());
    }

    /// Collects statistics for the top-level columns `physical` too (Z-order columns: a
    /// layout by columns without statistics could not skip any file).
    pub fn index_also(&mut self, snapshot: &Snapshot, physical: &[String]) -> DeltaResult<()> {
        let mut required = crate::layout::clustering::clustering_columns(snapshot)?;
        required.extend(physical.iter().cloned());
        self.indexed =
            IndexedColumns::for_table(&snapshot.configuration(), &self.data_physical, &required);
        Ok(())
    }

    /// Moves every live row of an existing file to new files and removes it (compaction):
    /// `batches` are its live rows (deletion vector applied) with, when row tracking is
    /// enabled, `_row_id` and `_row_commit_version` as read with
    /// [`Rewriter::lineage_columns`], which the rows keep.
    pub async fn move_file(&mut self, task: FileTask, batches: &[RecordBatch]) -> DeltaResult<()> {
        for batch in batches {
            self.move_rows(batch, &task.path).await?;
        }
        self.remove_file(task);
        Ok(())
    }

    /// Writes rows moved from existing files (read as for [`Rewriter::move_file`], from the
    /// file `origin` or several), keeping their lineage.
    pub async fn move_rows(&mut self, batch: &RecordBatch, origin: &str) -> DeltaResult<()> {
        self.counts.copied_rows += batch.num_rows() as u64;
        let (ids, versions) = lineage_of(batch);
        let (ids, versions) = if self.lineage.is_some() {
            (
                Some(ids.ok_or_else(|| missing_lineage(origin))?),
                Some(versions.ok_or_else(|| missing_lineage(origin))?),
            )
        } else {
            (None, None)
        };
        self.write_with_lineage(batch, ids.as_ref(), versions.as_ref())
            .await
    }

    /// Removes an existing file whose rows were moved with [`Rewriter::move_rows`].
    pub fn remove_file(&mut self, task: FileTask) {
        self.removed.push(task);
    }

    /// A rewriter for a statement that reads `snapshot`'s data (DELETE, UPDATE, MERGE): it
    /// first checks that the read version still stands, so that a table deleted and created
    /// again is reported as such rather than as a missing data file.
    pub async fn for_statement(
        snapshot: &Snapshot,
        target_file_size: Option<u64>,
    ) -> DeltaResult<Self> {
        // The table's rules are parsed up front: one deltalog cannot evaluate fails here.
        let rewriter = Self::try_new(snapshot, target_file_size)?;
        // A catalog-managed table's versions are the catalog's, not (only) files.
        if snapshot.catalog().is_none() {
            crate::commit::transaction::check_version_stands(
                snapshot.storage(),
                snapshot.version(),
                Some(snapshot.segment()),
            )
            .await?;
        }
        Ok(rewriter)
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

    /// The row tracking columns a read must add for [`Rewriter::change_file`] and
    /// [`Rewriter::write_updated_rows`] to keep rows' lineage: `Some` when row tracking is
    /// enabled on the table.
    pub fn lineage_columns(&self) -> Option<RowTracking> {
        self.lineage.as_ref().map(|l| RowTracking {
            materialized_row_id_column: Some(l.row_id_column.clone()),
            materialized_row_commit_version_column: Some(l.commit_version_column.clone()),
        })
    }

    /// Writes new (inserted) rows to new data files: the leading columns of `batch` are the
    /// table's output columns. Their row IDs and commit versions are fresh ones.
    pub async fn write_rows(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        self.write_with_lineage(batch, None, None).await
    }

    /// Writes updated rows: like [`Rewriter::write_rows`], keeping the stable row IDs
    /// `row_ids` (the `_row_id` values read with the rows before the update) when row
    /// tracking is enabled; their commit version becomes the commit's ("Row Commit
    /// Versions": an updated row gets the version of the commit that adds it).
    pub async fn write_updated_rows(
        &mut self,
        batch: &RecordBatch,
        row_ids: Option<&ArrayRef>,
    ) -> DeltaResult<()> {
        self.updated_rows += batch.num_rows() as u64;
        self.write_with_lineage(batch, row_ids, None).await
    }

    /// Writes rows another engine updated or copied with the row IDs and commit versions
    /// given (null: fresh), as [`Rewriter::move_rows`] and [`Rewriter::write_updated_rows`]
    /// keep them.
    pub async fn write_with_lineage_kept(
        &mut self,
        batch: &RecordBatch,
        row_ids: &ArrayRef,
        versions: &ArrayRef,
    ) -> DeltaResult<()> {
        self.write_with_lineage(batch, Some(row_ids), Some(versions))
            .await
    }

    /// Writes rows with the materialized row IDs and commit versions given (null: fresh).
    async fn write_with_lineage(
        &mut self,
        batch: &RecordBatch,
        row_ids: Option<&ArrayRef>,
        versions: Option<&ArrayRef>,
    ) -> DeltaResult<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let data = drop_row_index(batch, &self.data_schema)?;
        check_not_null(&self.schema, &data)?;
        if self.data_writer.is_none() {
            let mut options = DataFileOptions::data(self.partitions.clone(), self.indexed.clone());
            options.unindexed = self.unindexed.clone();
            options.materialize_partitions = self.materialize_partitions;
            options.target_file_size = self.target_file_size;
            options.encode_queue_bytes = REWRITE_QUEUE_BYTES;
            options.parquet = self.parquet.clone();
            self.data_writer = Some(DataFileWriter::try_new(
                self.storage.clone(),
                &self.file_physical,
                options,
            )?);
        }
        let physical = to_physical(&data, &self.data_physical)?;
        let physical = if self.lineage.is_some() {
            let rows = batch.num_rows();
            let column = |given: Option<&ArrayRef>| -> DeltaResult<ArrayRef> {
                match given {
                    Some(a) if a.len() == rows => Ok(arrow::compute::cast(a, &DataType::Int64)?),
                    Some(_) => Err(DeltaError::Internal(
                        "row tracking values do not line up with their rows".into(),
                    )),
                    None => Ok(arrow::array::new_null_array(&DataType::Int64, rows)),
                }
            };
            let mut columns = physical.columns().to_vec();
            columns.push(column(row_ids)?);
            columns.push(column(versions)?);
            RecordBatch::try_new(self.file_physical.clone(), columns)?
        } else {
            physical
        };
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
            let mut options = DataFileOptions::change_data(self.partitions.clone());
            options.target_file_size = self.target_file_size;
            options.encode_queue_bytes = REWRITE_QUEUE_BYTES;
            options.parquet = self.parquet.clone();
            self.change_writer = Some(DataFileWriter::try_new(
                self.storage.clone(),
                &self.cdc_physical,
                options,
            )?);
        }
        let physical = to_physical(
            &drop_row_index(batch, &self.data_schema)?,
            &self.data_physical,
        )?;
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
    /// columns first, then, with row tracking enabled, `_row_id` and `_row_commit_version`
    /// as read with [`Rewriter::lineage_columns`]) with a mask of the rows that go, needed
    /// only for copy on write.
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
            // Copied rows keep their stable row IDs and commit versions ("Writer Requirements
            // for Row Tracking").
            let (ids, versions) = lineage_of(&rest);
            let (ids, versions) = if self.lineage.is_some() {
                (
                    Some(ids.ok_or_else(|| missing_lineage(&task.path))?),
                    Some(versions.ok_or_else(|| missing_lineage(&task.path))?),
                )
            } else {
                (None, None)
            };
            self.write_with_lineage(&rest, ids.as_ref(), versions.as_ref())
                .await?;
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
            let mut remove = original(&task.path)?.1.clone();
            if !self.data_change {
                remove["remove"]["dataChange"] = json!(false);
            }
            actions.push(remove);
        }
        self.counts.removed_files += self.removed.len() as u64;
        if !self.new_vectors.is_empty() {
            // Small vectors go inline into the log (storage type `i`), the others into one
            // DV file for the commit ("Deletion Vector Descriptor Schema").
            let serialized: Vec<Vec<u8>> = self
                .new_vectors
                .iter()
                .map(|(_, b)| serialize_bitmap(b))
                .collect();
            let in_file: Vec<RoaringTreemap> = self
                .new_vectors
                .iter()
                .zip(&serialized)
                .filter(|(_, bytes)| bytes.len() > INLINE_DV_LIMIT)
                .map(|((_, b), _)| b.clone())
                .collect();
            let mut places = Vec::new().into_iter();
            let mut encoded = String::new();
            if !in_file.is_empty() {
                let (bytes, file_places) = dv_file(&in_file);
                let id = uuid::Uuid::new_v4();
                let name = format!("deletion_vector_{id}.bin");
                crate::interrupt::created(&self.storage, &name);
                self.storage.put_file(&name, bytes.into()).await?;
                encoded = z85_encode(id.as_bytes());
                places = file_places.into_iter();
            }
            for ((task, bitmap), bytes) in self.new_vectors.iter().zip(&serialized) {
                let (add, remove) = original(&task.path)?;
                let descriptor = if bytes.len() > INLINE_DV_LIMIT {
                    let (offset, size) = places.next().ok_or_else(|| {
                        DeltaError::Internal("a deletion vector lost its place".into())
                    })?;
                    DvDescriptor {
                        storage_type: "u".into(),
                        path_or_inline_dv: encoded.clone(),
                        offset: Some(offset),
                        size_in_bytes: size,
                        cardinality: bitmap.len() as i64,
                    }
                } else {
                    DvDescriptor {
                        storage_type: "i".into(),
                        path_or_inline_dv: z85_encode(bytes),
                        offset: None,
                        size_in_bytes: bytes.len() as i32,
                        cardinality: bitmap.len() as i64,
                    }
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
        for file in &written {
            let mut add = file.to_action(self.data_change);
            if let Some(provider) = &self.clustering_provider {
                add["add"]["clusteringProvider"] = json!(provider);
            }
            actions.push(add);
        }
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
        let (tracked, updated_rows) = (self.lineage.is_some(), self.updated_rows);
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
        if snapshot_tracks_rows(snapshot) {
            // "Writers should set delta.rowTracking.preserved in the tags of the commitInfo":
            // with row tracking enabled every moved row kept its lineage; merely supported,
            // copied or updated rows got fresh IDs.
            let preserved = tracked || (c.copied_rows == 0 && updated_rows == 0);
            let tags = commit_info
                .entry("tags")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(tags) = tags {
                tags.insert(
                    "delta.rowTracking.preserved".into(),
                    json!(preserved.to_string()),
                );
            }
        }
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
