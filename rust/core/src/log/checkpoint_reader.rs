//! Reading checkpoints into Arrow batches of the canonical action schema: classic, multi-part
//! and V2 checkpoints in parquet or JSON, and the sidecar files of V2 checkpoints.
//!
//! Spec: "Checkpoints" and "Checkpoint Schema" (actions as struct columns of parquet; missing
//! columns null), "V2 Spec" and "Sidecar Files" (file actions of a V2 checkpoint may live in
//! `_delta_log/_sidecars/`). Only the columns replay needs are read from parquet; row groups
//! whose action columns are proven null by their statistics are skipped.

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};
use futures::stream::{self, StreamExt, TryStreamExt};
use object_store::path::Path;
use parquet::arrow::arrow_reader::{
    ArrowReaderBuilder, ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use parquet::schema::types::SchemaDescriptor;

use crate::conform::conform_batch;
use crate::error::{DeltaError, DeltaResult};
use crate::log::actions::{self, decode_json_actions, names};
use crate::log::path::CheckpointFormat;
use crate::log::segment::CheckpointFiles;
#[cfg(unix)]
use crate::parquet_io::LocalChunkReader;
use crate::parquet_io::StoreFileReader;
use crate::storage::Storage;

use super::reader::{fetch, CONCURRENCY};

/// Rows per batch when decoding checkpoint parquet.
const PARQUET_BATCH_ROWS: usize = 16 * 1024;

/// A checkpoint whose non-file actions have been read; its file actions are read on demand
/// (they are the bulk of it) with [`OpenCheckpoint::read_files`].
#[derive(Debug)]
pub struct OpenCheckpoint {
    /// Batches holding the non-file actions (protocol, metaData, txn, domainMetadata, sidecar,
    /// checkpointMetadata) of every part.
    pub header: Vec<RecordBatch>,
    parts: Vec<Part>,
    sidecars: Vec<(Path, Option<u64>, String)>,
    version: u64,
}

#[derive(Debug)]
enum Part {
    /// A JSON part, decoded whole (header and file actions alike).
    Json(Vec<RecordBatch>),
    /// A parquet part, footer loaded.
    Parquet(ParquetLogFile),
}

/// Opens a complete checkpoint: every part's footer (parquet) or content (JSON), the non-file
/// actions, and the list of sidecars ("V2 Spec": all file actions are either in the checkpoint
/// or all in sidecars).
pub async fn open_checkpoint(
    storage: &Storage,
    checkpoint: &CheckpointFiles,
) -> DeltaResult<OpenCheckpoint> {
    let mut header = Vec::new();
    let mut parts = Vec::new();
    for part in &checkpoint.parts {
        let name = format!("_delta_log/{}", part.name);
        match checkpoint.format {
            CheckpointFormat::Json => {
                let bytes = fetch(storage, part, checkpoint.version).await?;
                let v = checkpoint.version;
                let schema = actions::checkpoint_schema();
                let decoded = tokio::task::spawn_blocking(move || {
                    decode_json_actions(&bytes, &schema, &name, Some(v))
                })
                .await
                .map_err(|e| DeltaError::Internal(format!("decoder task failed: {e}")))??;
                header.extend(decoded.iter().cloned());
                parts.push(Part::Json(decoded));
            }
            CheckpointFormat::Parquet => {
                let file = ParquetLogFile::open(
                    storage,
                    &part.meta.location,
                    Some(part.meta.size),
                    &name,
                    Some(checkpoint.version),
                )
                .await?;
                // Only the few rows that hold one of these actions are kept: the columns are
                // null in every file-action row.
                let batches = file
                    .read_non_null_with(&actions::checkpoint_header_schema(), rows_with_actions)
                    .await?;
                header.extend(batches.into_iter().flatten());
                parts.push(Part::Parquet(file));
            }
        }
    }
    let sidecars = sidecar_paths(storage, &header, checkpoint)?;
    Ok(OpenCheckpoint {
        header,
        parts,
        sidecars,
        version: checkpoint.version,
    })
}

impl OpenCheckpoint {
    /// Reads the file actions (from the sidecars when there are any, from the parts otherwise)
    /// and applies `f` to each batch of [`actions::file_actions_schema`] columns as it is
    /// decoded, concurrently; results come back in file order. Parquet files that keep the
    /// statistics only as structs also give `add.stats_parsed`, read as `stats_type`.
    pub async fn read_files<T, F>(
        &self,
        storage: &Storage,
        stats_type: &DataType,
        f: F,
    ) -> DeltaResult<Vec<T>>
    where
        T: Send + 'static,
        F: Fn(RecordBatch) -> DeltaResult<T> + Clone + Send + Sync + 'static,
    {
        // Parquet is read with the statistics as views of its pages; JSON parts as text.
        let schema = actions::file_actions_view_schema();
        let json_schema = actions::file_actions_schema();
        let parsed_schema = actions::with_stats_parsed(&schema, stats_type);
        let mut out = Vec::new();
        if !self.sidecars.is_empty() {
            let results: Vec<Vec<T>> = stream::iter(self.sidecars.clone())
                .map(|(path, size, name)| {
                    let storage = storage.clone();
                    let schema = schema.clone();
                    let parsed_schema = parsed_schema.clone();
                    let f = f.clone();
                    let version = self.version;
                    async move {
                        let file =
                            ParquetLogFile::open(&storage, &path, size, &name, Some(version))
                                .await?;
                        let schema = if file.stats_only_as_structs() {
                            parsed_schema
                        } else {
                            schema
                        };
                        file.read_with(&schema, f).await
                    }
                })
                .buffered(CONCURRENCY)
                .try_collect()
                .await?;
            out.extend(results.into_iter().flatten());
            return Ok(out);
        }
        for part in &self.parts {
            match part {
                Part::Json(batches) => {
                    for b in batches {
                        out.push(f(conform_batch(b, &json_schema)?)?);
                    }
                }
                Part::Parquet(file) => {
                    let schema = if file.stats_only_as_structs() {
                        &parsed_schema
                    } else {
                        &schema
                    };
                    out.extend(file.read_with(schema, f.clone()).await?)
                }
            }
        }
        Ok(out)
    }
}

/// The rows of `batch` in which some action column is non-null (`None` when there are none).
fn rows_with_actions(batch: RecordBatch) -> DeltaResult<Option<RecordBatch>> {
    let mut any: Option<BooleanArray> = None;
    for column in batch.columns() {
        if column.null_count() == column.len() {
            continue;
        }
        let valid = arrow::compute::is_not_null(column)?;
        any = Some(match any {
            Some(a) => arrow::compute::or(&a, &valid)?,
            None => valid,
        });
    }
    match any {
        None => Ok(None),
        Some(mask) if mask.true_count() == batch.num_rows() => Ok(Some(batch)),
        Some(mask) => Ok(Some(arrow::compute::filter_record_batch(&batch, &mask)?)),
    }
}

/// The sidecar files referenced by `sidecar` actions ("Sidecar File Information"): their
/// location, size (when known) and display name.
fn sidecar_paths(
    storage: &Storage,
    batches: &[RecordBatch],
    checkpoint: &CheckpointFiles,
) -> DeltaResult<Vec<(Path, Option<u64>, String)>> {
    let mut out = Vec::new();
    for batch in batches {
        let Some(col) = batch.column_by_name(names::SIDECAR) else {
            continue;
        };
        let sidecar = col.as_struct();
        let paths = sidecar
            .column_by_name("path")
            .map(|c| c.as_string::<i32>().clone());
        let sizes = sidecar
            .column_by_name("sizeInBytes")
            .map(|c| c.as_primitive::<arrow::datatypes::Int64Type>().clone());
        for row in 0..sidecar.len() {
            if sidecar.is_null(row) {
                continue;
            }
            let file = format!("_delta_log/{}", checkpoint.parts[0].name);
            let Some(raw) = paths
                .as_ref()
                .filter(|p| p.is_valid(row))
                .map(|p| p.value(row))
            else {
                return Err(DeltaError::corrupt(
                    file,
                    Some(checkpoint.version),
                    "a sidecar action has no path (spec: \"Sidecar File Information\")",
                ));
            };
            let decoded = crate::paths::decode_uri_path(raw)
                .map_err(|e| DeltaError::corrupt(file.clone(), Some(checkpoint.version), e))?;
            let location = if decoded.contains("://") || decoded.starts_with('/') {
                storage.resolve_absolute(&decoded).ok_or_else(|| {
                    DeltaError::corrupt(
                        file.clone(),
                        Some(checkpoint.version),
                        format!(
                            "sidecar {raw} is outside this table's _delta_log/_sidecars \
                             (spec: \"Sidecar Files\")"
                        ),
                    )
                })?
            } else {
                storage.log_path(&format!("_sidecars/{decoded}"))
            };
            let size = sizes
                .as_ref()
                .filter(|s| s.is_valid(row))
                .and_then(|s| u64::try_from(s.value(row)).ok());
            let name = format!("_delta_log/_sidecars/{decoded}");
            out.push((location, size, name));
        }
    }
    Ok(out)
}

/// The leaf columns of `parquet` that `wanted` needs: a top-level action column, and within it
/// the fields `wanted` lists (everything below those fields).
fn projection(parquet: &SchemaDescriptor, wanted: &SchemaRef) -> ProjectionMask {
    let leaves = parquet.columns().iter().enumerate().filter_map(|(i, col)| {
        let parts = col.path().parts();
        let top = wanted.field_with_name(parts.first()?).ok()?;
        match (top.data_type(), parts.get(1)) {
            (DataType::Struct(fields), Some(child)) => {
                fields.iter().any(|f| f.name() == child).then_some(i)
            }
            _ => Some(i),
        }
    });
    ProjectionMask::leaves(parquet, leaves.collect::<Vec<_>>())
}

/// A parquet log file (checkpoint part or sidecar) with its footer loaded.
#[derive(Debug, Clone)]
pub struct ParquetLogFile {
    reader: StoreFileReader,
    /// The file itself when it is local: decoded page by page ([`LocalChunkReader`]).
    #[cfg(unix)]
    local: Option<LocalChunkReader>,
    metadata: ArrowReaderMetadata,
    name: String,
    version: Option<u64>,
}

impl ParquetLogFile {
    /// Loads the footer of `location` (`size` bytes; looked up when unknown).
    pub async fn open(
        storage: &Storage,
        location: &Path,
        size: Option<u64>,
        name: &str,
        version: Option<u64>,
    ) -> DeltaResult<Self> {
        let corrupt = |e: &dyn std::fmt::Display| {
            DeltaError::corrupt(name, version, format!("unreadable parquet: {e}"))
        };
        let size = match size {
            Some(s) => s,
            None => match storage.head(location).await {
                Ok(meta) => meta.size,
                Err(object_store::Error::NotFound { .. }) => {
                    return Err(DeltaError::corrupt(
                        name,
                        version,
                        "the file does not exist",
                    ))
                }
                Err(e) => return Err(e.into()),
            },
        };
        let mut reader = StoreFileReader::new(storage.store().clone(), location.clone(), size);
        let metadata = ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
            .await
            .map_err(|e| match e {
                parquet::errors::ParquetError::External(inner) => {
                    match inner.downcast::<object_store::Error>() {
                        Ok(os) if matches!(*os, object_store::Error::NotFound { .. }) => {
                            DeltaError::corrupt(name, version, "the file does not exist")
                        }
                        Ok(os) => DeltaError::Storage(*os),
                        Err(other) => corrupt(&other),
                    }
                }
                other => corrupt(&other),
            })?;
        // Statistics text is read as views of the decoded pages (see
        // `actions::file_actions_view_schema`); a file whose schema does not take the hint is
        // read as it is (and its text converted).
        let metadata = ArrowReaderMetadata::try_new(
            metadata.metadata().clone(),
            ArrowReaderOptions::new().with_schema(actions::with_stats_as_views(metadata.schema())),
        )
        .unwrap_or(metadata);
        #[cfg(unix)]
        let local = match storage.local_path(location) {
            Some(path) => Some(LocalChunkReader::open(&path).map_err(|e| corrupt(&e))?),
            None => None,
        };
        Ok(ParquetLogFile {
            reader,
            #[cfg(unix)]
            local,
            metadata,
            name: name.to_string(),
            version,
        })
    }

    /// Whether the file's adds carry `stats_parsed` but no `stats` text (a checkpoint written
    /// with `delta.checkpoint.writeStatsAsJson` false).
    pub fn stats_only_as_structs(&self) -> bool {
        let schema = self.metadata.schema();
        let Ok(add) = schema.field_with_name(actions::names::ADD) else {
            return false;
        };
        let DataType::Struct(children) = add.data_type() else {
            return false;
        };
        let has = |name: &str| children.iter().any(|c| c.name() == name);
        has(actions::STATS_PARSED) && !has("stats")
    }

    /// Reads the columns of `schema` (missing ones null), decoding row groups concurrently, and
    /// applies `f` to every batch inside the decoding task.
    pub async fn read_with<T, F>(&self, schema: &SchemaRef, f: F) -> DeltaResult<Vec<T>>
    where
        T: Send + 'static,
        F: Fn(RecordBatch) -> DeltaResult<T> + Clone + Send + Sync + 'static,
    {
        self.read_row_groups(schema, false, f).await
    }

    /// [`ParquetLogFile::read_with`], skipping the row groups whose statistics prove every
    /// wanted column null (the header actions of a checkpoint usually sit in one row group).
    pub async fn read_non_null_with<T, F>(&self, schema: &SchemaRef, f: F) -> DeltaResult<Vec<T>>
    where
        T: Send + 'static,
        F: Fn(RecordBatch) -> DeltaResult<T> + Clone + Send + Sync + 'static,
    {
        self.read_row_groups(schema, true, f).await
    }

    async fn read_row_groups<T, F>(
        &self,
        schema: &SchemaRef,
        skip_all_null: bool,
        f: F,
    ) -> DeltaResult<Vec<T>>
    where
        T: Send + 'static,
        F: Fn(RecordBatch) -> DeltaResult<T> + Clone + Send + Sync + 'static,
    {
        let mask = projection(
            self.metadata.metadata().file_metadata().schema_descr(),
            schema,
        );
        let kept: Vec<usize> = (0..self.metadata.metadata().num_row_groups())
            .filter(|&rg| !(skip_all_null && self.all_null(rg, &mask)))
            .collect();
        let row_groups = kept.len();
        // Split the row groups into contiguous runs, one per core: more concurrent runs only
        // hold more decoded row groups in memory at once.
        let cores = crate::available_threads();
        let tasks = row_groups.clamp(1, cores.max(1));
        let per_task = row_groups.div_ceil(tasks).max(1);
        let runs: Vec<Vec<usize>> = kept.chunks(per_task).map(<[usize]>::to_vec).collect();
        // Each row group skips the leaves its statistics prove null; `conform_batch` supplies
        // them as nulls that cost no memory.
        let runs: Vec<Vec<(usize, ProjectionMask)>> = runs
            .into_iter()
            .map(|run| {
                run.into_iter()
                    .map(|rg| (rg, self.without_null_leaves(rg, &mask)))
                    .collect()
            })
            .collect();
        let sink = BatchSink {
            schema: schema.clone(),
            name: self.name.clone(),
            version: self.version,
            f,
        };
        #[cfg(unix)]
        if let Some(local) = &self.local {
            return self.read_local(local, runs, sink).await;
        }
        let handles = runs
            .into_iter()
            .map(|groups| {
                let builders: Vec<_> = groups
                    .into_iter()
                    .map(|(rg, mask)| {
                        one_row_group(
                            ParquetRecordBatchStreamBuilder::new_with_metadata(
                                self.reader.clone(),
                                self.metadata.clone(),
                            ),
                            rg,
                            mask,
                        )
                    })
                    .collect();
                let sink = sink.clone();
                tokio::spawn(async move {
                    let mut out = Applied::default();
                    for builder in builders {
                        let mut stream = builder.build().map_err(|e| sink.unreadable(&e))?;
                        while let Some(raw) =
                            stream.try_next().await.map_err(|e| sink.unreadable(&e))?
                        {
                            out.push_async(&sink, raw).await?;
                        }
                    }
                    out.finish_async().await
                })
            })
            .collect();
        join_runs(handles).await
    }
}

/// `builder` set to decode row group `rg`, the leaves of `mask`, in log-sized batches (the same
/// for the local and the object-store reader).
fn one_row_group<T>(
    builder: ArrowReaderBuilder<T>,
    rg: usize,
    mask: ProjectionMask,
) -> ArrowReaderBuilder<T> {
    builder
        .with_projection(mask)
        .with_row_groups(vec![rg])
        .with_batch_size(PARQUET_BATCH_ROWS)
}

/// What happens to each decoded parquet batch: conformed to the action schema, then `f`.
#[derive(Clone)]
struct BatchSink<F> {
    schema: SchemaRef,
    name: String,
    version: Option<u64>,
    f: F,
}

impl<F> BatchSink<F> {
    fn unreadable(&self, e: &dyn std::fmt::Display) -> DeltaError {
        DeltaError::corrupt(&self.name, self.version, format!("unreadable parquet: {e}"))
    }

    fn apply<T>(&self, raw: RecordBatch) -> DeltaResult<T>
    where
        F: Fn(RecordBatch) -> DeltaResult<T>,
    {
        let batch = conform_batch(&raw, &self.schema).map_err(|e| {
            DeltaError::corrupt(
                &self.name,
                self.version,
                format!("action columns have unexpected types: {e}"),
            )
        })?;
        drop(raw);
        (self.f)(batch)
    }
}

/// Decoded batches handed on to `f` while a run decodes the next ones, at most this many per
/// run at once.
const APPLY_IN_FLIGHT: usize = 2;

/// The results of one run's batches: each decoded batch is conformed and given to `f` on a
/// blocking thread of its own, so that decoding (decompression, levels) and `f` (selection,
/// statistics parsing) proceed in parallel and one long run does not keep the other cores idle
/// once the shorter runs are done. Results stay in batch order.
struct Applied<T> {
    pending: std::collections::VecDeque<tokio::task::JoinHandle<DeltaResult<T>>>,
    done: Vec<T>,
}

impl<T> Default for Applied<T> {
    fn default() -> Self {
        Applied {
            pending: std::collections::VecDeque::new(),
            done: Vec::new(),
        }
    }
}

fn apply_task_failed(e: tokio::task::JoinError) -> DeltaError {
    DeltaError::Internal(format!("checkpoint batch task failed: {e}"))
}

impl<T: Send + 'static> Applied<T> {
    fn spawn<F>(&mut self, sink: &BatchSink<F>, raw: RecordBatch)
    where
        F: Fn(RecordBatch) -> DeltaResult<T> + Clone + Send + Sync + 'static,
    {
        let sink = sink.clone();
        self.pending
            .push_back(tokio::task::spawn_blocking(move || sink.apply(raw)));
    }

    /// From a blocking thread: hands `raw` on, waiting for the oldest batch when too many are
    /// in flight.
    fn push<F>(&mut self, sink: &BatchSink<F>, raw: RecordBatch) -> DeltaResult<()>
    where
        F: Fn(RecordBatch) -> DeltaResult<T> + Clone + Send + Sync + 'static,
    {
        self.spawn(sink, raw);
        while self.pending.len() > APPLY_IN_FLIGHT {
            self.wait_oldest()?;
        }
        Ok(())
    }

    fn wait_oldest(&mut self) -> DeltaResult<()> {
        if let Some(handle) = self.pending.pop_front() {
            let result = futures::executor::block_on(handle).map_err(apply_task_failed)?;
            self.done.push(result?);
        }
        Ok(())
    }

    fn finish(mut self) -> DeltaResult<Vec<T>> {
        while !self.pending.is_empty() {
            self.wait_oldest()?;
        }
        Ok(self.done)
    }

    /// [`Applied::push`] for an async task.
    async fn push_async<F>(&mut self, sink: &BatchSink<F>, raw: RecordBatch) -> DeltaResult<()>
    where
        F: Fn(RecordBatch) -> DeltaResult<T> + Clone + Send + Sync + 'static,
    {
        self.spawn(sink, raw);
        while self.pending.len() > APPLY_IN_FLIGHT {
            if let Some(handle) = self.pending.pop_front() {
                self.done.push(handle.await.map_err(apply_task_failed)??);
            }
        }
        Ok(())
    }

    async fn finish_async(mut self) -> DeltaResult<Vec<T>> {
        while let Some(handle) = self.pending.pop_front() {
            self.done.push(handle.await.map_err(apply_task_failed)??);
        }
        Ok(self.done)
    }
}

/// The results of the decoding tasks, in task order.
async fn join_runs<T>(
    handles: Vec<tokio::task::JoinHandle<DeltaResult<Vec<T>>>>,
) -> DeltaResult<Vec<T>> {
    let mut out = Vec::new();
    for handle in handles {
        out.extend(
            handle
                .await
                .map_err(|e| DeltaError::Internal(format!("parquet task failed: {e}")))??,
        );
    }
    Ok(out)
}

impl ParquetLogFile {
    /// Whether the statistics of row group `rg` show every leaf of `mask` null in every row
    /// (exact: a chunk counts only when its value count equals the row count and its null count
    /// is recorded and equal to it too).
    fn all_null(&self, rg: usize, mask: &ProjectionMask) -> bool {
        let columns = self.metadata.metadata().row_group(rg).num_columns();
        (0..columns)
            .filter(|&i| mask.leaf_included(i))
            .all(|i| self.leaf_all_null(rg, i))
    }

    /// Whether the statistics of leaf `leaf` in row group `rg` prove it null in every row.
    /// For a leaf inside a list or map this means "null or empty": an empty map
    /// (`partitionValues` of an unpartitioned table) has the same null count as a null one.
    /// That still proves that no row holds an action (every action has a non-repeated
    /// required field), but such a leaf is decoded (see [`Self::without_null_leaves`]).
    fn leaf_all_null(&self, rg: usize, leaf: usize) -> bool {
        let group = self.metadata.metadata().row_group(rg);
        let rows = group.num_rows();
        let chunk = group.column(leaf);
        chunk.num_values() == rows
            && u64::try_from(rows).ok().is_some_and(|rows| {
                chunk.statistics().and_then(|s| s.null_count_opt()) == Some(rows)
            })
    }

    /// `mask` without the leaves that row group `rg` proves null: they are not decoded, and
    /// [`conform_batch`] supplies them as nulls that cost no memory.
    fn without_null_leaves(&self, rg: usize, mask: &ProjectionMask) -> ProjectionMask {
        let descr = self.metadata.metadata().file_metadata().schema_descr();
        let leaves = (0..descr.num_columns())
            .filter(|&i| {
                mask.leaf_included(i)
                    && (descr.column(i).max_rep_level() > 0 || !self.leaf_all_null(rg, i))
            })
            .collect::<Vec<_>>();
        ProjectionMask::leaves(descr, leaves)
    }
}

#[cfg(unix)]
impl ParquetLogFile {
    /// [`ParquetLogFile::read_with`] for a local file: each run of row groups is decoded by the
    /// synchronous reader on a blocking thread, reading pages as it needs them.
    async fn read_local<T, F>(
        &self,
        local: &LocalChunkReader,
        runs: Vec<Vec<(usize, ProjectionMask)>>,
        sink: BatchSink<F>,
    ) -> DeltaResult<Vec<T>>
    where
        T: Send + 'static,
        F: Fn(RecordBatch) -> DeltaResult<T> + Clone + Send + Sync + 'static,
    {
        let handles = runs
            .into_iter()
            .map(|groups| {
                let builders: Vec<_> = groups
                    .into_iter()
                    .map(|(rg, mask)| {
                        one_row_group(
                            ParquetRecordBatchReaderBuilder::new_with_metadata(
                                local.clone(),
                                self.metadata.clone(),
                            ),
                            rg,
                            mask,
                        )
                    })
                    .collect();
                let sink = sink.clone();
                tokio::task::spawn_blocking(move || {
                    let mut out = Applied::default();
                    for builder in builders {
                        for raw in builder.build().map_err(|e| sink.unreadable(&e))? {
                            out.push(&sink, raw.map_err(|e| sink.unreadable(&e))?)?;
                        }
                    }
                    out.finish()
                })
            })
            .collect();
        join_runs(handles).await
    }
}

#[cfg(test)]
mod tests;
