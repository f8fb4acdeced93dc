//! OPTIMIZE: the files of a table rewritten into a better layout, in one commit that changes
//! no data ([`optimize`], as [`LayoutSpec`] says). Bin-packing compaction merges each
//! partition's small files into files of about the target size; Z-order and liquid clustering
//! (what compaction does on a clustered table) also sort each partition's rows along the Z-order
//! curve of some columns ([`crate::layout::zorder`]), so each new file covers a narrow range of
//! every one of them; REORG PURGE rewrites the files with deletion vectors. The same pieces run
//! distributed: [`plan_units`], [`rewrite_unit`] anywhere, [`commit_units`].
//!
//! Spec: "Add File and Remove File" (`dataChange: false` on both sides: the rows are only
//! rearranged, so change-feed readers and streams skip the commit), "Per-file Statistics"
//! (recomputed for the new files, always for the Z-order columns), "Deletion Vectors" (a
//! rewritten file's deleted rows are gone for good), "Writer Requirements for Row Tracking"
//! (with row tracking enabled, moved rows keep their row IDs and commit versions in the
//! materialized columns), "Clustered Table" (clustered files say `clusteringProvider`).
//! Conflicts follow Delta Spark's OPTIMIZE: only a concurrent removal of a rewritten file
//! conflicts, so appends land while OPTIMIZE runs ([`Isolation::Rearranges`]).
//!
//! Memory: compaction streams each partition's files through one writer (a file's batches at
//! a time, a few files read ahead). Z-order reads each partition twice: the curve columns for
//! a sample, then every column, routing rows to key ranges buffered in memory up to the
//! budget ([`OptimizeOptions::memory_limit`]) and spilled to local Arrow IPC files beyond it;
//! each range is then sorted and written. At most `max_concurrent_tasks` partitions run at
//! once, sharing the budget.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Map, Value};

use crate::commit::transaction::{Isolation, Transaction};
use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::expr::Expr;
use crate::layout::clustering::logical_clustering_columns;
use crate::layout::zorder::{self, Sampler, ZCurve};
use crate::scan::{self, FileTask, MetadataColumns, ReadSpec, Scan, ScanOptions};
use crate::snapshot::Snapshot;
use crate::writer_features::column_mapping::physical_name;

/// Memory for buffered rows of a Z-order or clustering rewrite when none is given: 128 MiB
/// (measured on 10M rows, 240 MiB of parquet: Z-order peaked at 346 MB and took 9.1 s,
/// against 450 MB and 8.1 s with 256 MiB; the rest spills to local files).
pub const MEMORY_LIMIT: u64 = 128 * 1024 * 1024;
/// The `clusteringProvider` of files clustered by deltalog (Delta Spark's liquid clustering
/// name).
pub const LIQUID: &str = "liquid";
/// The hidden column carrying each buffered row's Z-order key.
const KEY_COLUMN: &str = "_deltalog_zorder_key";
/// Arrow bytes per parquet byte, for sizing Z-order key ranges before reading them.
const EXPANSION: u64 = 4;
/// Rows handed to the writer at a time from a sorted key range.
const WRITE_ROWS: usize = 64 * 1024;

/// What to rewrite and how.
#[derive(Debug, Clone, Default)]
pub struct OptimizeOptions {
    /// Target size of the new files (default: `delta.targetFileSize`, else 100 MiB). For
    /// compaction, files at least this large are left alone unless they have a deletion
    /// vector.
    pub target_size: Option<u64>,
    /// Only partitions matching this predicate over partition columns.
    pub partition_filter: Option<Expr>,
    /// The filter as the user wrote it, for the commit's `operationParameters`.
    pub partition_filter_text: Option<String>,
    /// How many partitions are rewritten at once (default: the number of cores).
    pub max_concurrent_tasks: Option<usize>,
    /// Bytes of rows a Z-order or clustering rewrite buffers in memory (all partitions
    /// together) before spilling to local temporary files (default [`MEMORY_LIMIT`]).
    pub memory_limit: Option<u64>,
    /// Extra `commitInfo` fields.
    pub commit_info: Map<String, Value>,
    /// How the new files are encoded (deltalake's `writer_properties`; default: deltalog's).
    pub parquet: Option<Arc<crate::write::parquet_options::ParquetSettings>>,
}

/// Sizes of a set of files (deltalake's `filesAdded` / `filesRemoved`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileSizes {
    pub min: u64,
    pub max: u64,
    pub avg: f64,
    pub total_files: u64,
    pub total_size: u64,
}

impl FileSizes {
    fn of(sizes: impl IntoIterator<Item = u64>) -> Self {
        let sizes: Vec<u64> = sizes.into_iter().collect();
        if sizes.is_empty() {
            return Self::default();
        }
        let total: u64 = sizes.iter().sum();
        FileSizes {
            min: sizes.iter().copied().min().unwrap_or(0),
            max: sizes.iter().copied().max().unwrap_or(0),
            avg: total as f64 / sizes.len() as f64,
            total_files: sizes.len() as u64,
            total_size: total,
        }
    }
}

/// What OPTIMIZE did (the names of deltalake's metrics).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OptimizeMetrics {
    /// The version committed; `None` when there was nothing to rewrite.
    pub version: Option<u64>,
    pub num_files_added: u64,
    pub num_files_removed: u64,
    pub files_added: FileSizes,
    pub files_removed: FileSizes,
    pub partitions_optimized: u64,
    /// Record batches passed to the writer (deltalake's meaning; deltalog's batches hold up
    /// to 64Ki rows where deltalake's hold 8Ki, so large rewrites count fewer).
    pub num_batches: u64,
    /// Active files the partition filter selected.
    pub total_considered_files: u64,
    /// Considered files left as they are.
    pub total_files_skipped: u64,
    /// Rows written to the new files.
    pub num_rows: u64,
    /// Bytes of rows spilled to temporary files (Z-order and clustering).
    pub spilled_bytes: u64,
}

/// The layout a rewrite produces.
#[derive(Debug, Clone)]
enum Layout {
    /// Small files merged, rows in log order.
    BinPack,
    /// Files with deletion vectors rewritten (REORG PURGE).
    Purge,
    /// These files (table-relative, decoded paths) rewritten, bin-packed.
    Rewrite(HashSet<String>),
    /// Every file rewritten under this snapshot, the table's without column mapping: its
    /// metadata is committed with the new files.
    Unmap(Box<Snapshot>),
    /// Every file of each partition, rows sorted along the curve of these columns (logical,
    /// top-level).
    ZOrder(Vec<String>),
    /// Liquid clustering by the table's clustering columns (logical): the files not yet
    /// clustered, or every file when `full`.
    Cluster { columns: Vec<String>, full: bool },
}

/// The files of one partition to rewrite, in bins of about the target size (Z-order and
/// clustering: one bin of every file).
struct PartitionPlan {
    bins: Vec<Vec<FileTask>>,
}

fn by_partition(tasks: Vec<FileTask>) -> Vec<Vec<FileTask>> {
    let mut partitions: BTreeMap<Vec<(String, Option<String>)>, Vec<FileTask>> = BTreeMap::new();
    for task in tasks {
        let key: Vec<_> = task
            .partition_values
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        partitions.entry(key).or_default().push(task);
    }
    partitions.into_values().collect()
}

/// Groups `tasks` by partition and packs the candidates into bins of at most about `target`
/// bytes, in log order. Candidates: for compaction, files with a deletion vector and files
/// smaller than `target` (a bin of one file without a deletion vector would rewrite it as it
/// is, so it is dropped); for a purge, files with a deletion vector; for a REORG of chosen
/// files, those; for column mapping removal, every file.
fn plan(tasks: Vec<FileTask>, target: u64, layout: &Layout) -> Vec<PartitionPlan> {
    let mut plans = Vec::new();
    for files in by_partition(tasks) {
        let mut bins: Vec<Vec<FileTask>> = Vec::new();
        let mut current: Vec<FileTask> = Vec::new();
        let mut current_size = 0u64;
        for task in files {
            let size = task.size.unwrap_or(0);
            let dv = task.deletion_vector.is_some();
            let candidate = match layout {
                Layout::Purge => dv,
                Layout::Rewrite(paths) => paths.contains(&task.path),
                Layout::Unmap(_) => true,
                _ => dv || size < target,
            };
            if !candidate {
                continue;
            }
            if !current.is_empty() && current_size + size > target {
                bins.push(std::mem::take(&mut current));
                current_size = 0;
            }
            current_size += size;
            current.push(task);
        }
        if !current.is_empty() {
            bins.push(current);
        }
        // Compaction leaves a lone file without deletion vector as it is.
        if matches!(layout, Layout::BinPack) {
            bins.retain(|b| b.len() > 1 || b.iter().any(|t| t.deletion_vector.is_some()));
        }
        if !bins.is_empty() {
            plans.push(PartitionPlan { bins });
        }
    }
    plans
}

/// The `clusteringProvider` of every active file that has one.
fn clustering_providers(snapshot: &Snapshot) -> DeltaResult<HashMap<String, String>> {
    let mut out = HashMap::new();
    for files in snapshot.files() {
        let adds = &files.adds;
        for i in 0..adds.len() {
            let (Some(path), Some(provider)) = (
                crate::model::str_field(adds, "path", i),
                crate::model::str_field(adds, "clusteringProvider", i),
            ) else {
                continue;
            };
            let decoded = crate::paths::decode_uri_path(path)
                .map_err(|rule| DeltaError::corrupt(path, None, rule))?;
            out.insert(decoded.into_owned(), provider.to_string());
        }
    }
    Ok(out)
}

/// Compacts one partition's bins through one rewriter; its actions, the rows written and the
/// batches passed to the writer.
async fn rewrite_partition(
    snapshot: &Snapshot,
    write: &Snapshot,
    spec: Arc<ReadSpec>,
    partition: PartitionPlan,
    target: u64,
    parquet: Option<Arc<crate::write::parquet_options::ParquetSettings>>,
) -> DeltaResult<UnitResult> {
    // Files are read as `snapshot` has them and written as `write` says (the same table but
    // for column mapping removal).
    let mut rewriter = Rewriter::try_new(write, Some(target))?;
    rewriter.set_rearranging();
    rewriter.set_parquet(parquet);
    let storage = snapshot.storage().clone();
    let tasks: Vec<FileTask> = partition.bins.into_iter().flatten().collect();
    // A couple of files read ahead while the current one is written.
    let reads = futures::stream::iter(tasks)
        .map(|task| {
            let (storage, spec) = (storage.clone(), spec.clone());
            async move {
                let batches: Vec<RecordBatch> = scan::execute(storage, spec, vec![task.clone()], 1)
                    .try_collect()
                    .await?;
                Ok::<_, DeltaError>((task, batches))
            }
        })
        .buffered(2);
    futures::pin_mut!(reads);
    let mut written = 0u64;
    while let Some((task, batches)) = reads.try_next().await? {
        written += batches.iter().filter(|b| b.num_rows() > 0).count() as u64;
        rewriter.move_file(task, &batches).await?;
    }
    let rows = rewriter.counts.copied_rows;
    let (actions, _) = rewriter.into_actions(snapshot).await?;
    Ok(UnitResult {
        actions,
        rows,
        spilled: 0,
        batches: written,
    })
}

/// A key range's rows: buffered in memory, or spilled to an Arrow IPC file.
#[derive(Default)]
struct RangeBuffer {
    batches: Vec<RecordBatch>,
    bytes: usize,
    spill: Option<arrow::ipc::writer::FileWriter<std::io::BufWriter<std::fs::File>>>,
    spill_path: Option<std::path::PathBuf>,
}

/// The key ranges of one partition being Z-ordered, within a memory budget.
struct Ranges {
    schema: SchemaRef,
    buffers: Vec<RangeBuffer>,
    in_memory: usize,
    budget: usize,
    dir: Option<tempfile::TempDir>,
    spilled: u64,
}

fn spill_error(e: std::io::Error) -> DeltaError {
    DeltaError::Internal(format!(
        "OPTIMIZE could not spill rows to a temporary file (set TMPDIR to a directory with \
         room, or raise the memory limit): {e}"
    ))
}

impl Ranges {
    fn new(schema: SchemaRef, count: usize, budget: usize) -> Self {
        Ranges {
            schema,
            buffers: (0..count).map(|_| RangeBuffer::default()).collect(),
            in_memory: 0,
            budget,
            dir: None,
            spilled: 0,
        }
    }

    fn push(&mut self, range: usize, batch: RecordBatch) -> DeltaResult<()> {
        let bytes = batch.get_array_memory_size();
        let buffer = &mut self.buffers[range];
        buffer.bytes += bytes;
        buffer.batches.push(batch);
        self.in_memory += bytes;
        while self.in_memory > self.budget {
            if !self.spill_largest()? {
                break;
            }
        }
        Ok(())
    }

    /// Writes the largest in-memory range to its spill file; false when nothing is buffered.
    fn spill_largest(&mut self) -> DeltaResult<bool> {
        let Some((i, _)) = self
            .buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.bytes > 0)
            .max_by_key(|(_, b)| b.bytes)
        else {
            return Ok(false);
        };
        if self.dir.is_none() {
            self.dir = Some(
                tempfile::Builder::new()
                    .prefix("deltalog-optimize-")
                    .tempdir()
                    .map_err(spill_error)?,
            );
        }
        let dir = self.dir.as_ref().map(|d| d.path().to_path_buf());
        let buffer = &mut self.buffers[i];
        if buffer.spill.is_none() {
            let path = dir.unwrap_or_default().join(format!("range-{i}.arrow"));
            let file = std::fs::File::create(&path).map_err(spill_error)?;
            buffer.spill = Some(arrow::ipc::writer::FileWriter::try_new(
                std::io::BufWriter::with_capacity(1 << 20, file),
                &self.schema,
            )?);
            buffer.spill_path = Some(path);
        }
        if let Some(writer) = buffer.spill.as_mut() {
            for batch in buffer.batches.drain(..) {
                writer.write(&batch)?;
            }
        }
        self.spilled += buffer.bytes as u64;
        self.in_memory -= buffer.bytes;
        buffer.bytes = 0;
        Ok(true)
    }

    /// Every row of `range` (its spill file read back), leaving it empty.
    fn take(&mut self, range: usize) -> DeltaResult<Vec<RecordBatch>> {
        let buffer = std::mem::take(&mut self.buffers[range]);
        self.in_memory -= buffer.bytes;
        let mut batches = buffer.batches;
        if let (Some(mut writer), Some(path)) = (buffer.spill, buffer.spill_path) {
            writer.finish()?;
            drop(writer);
            let file = std::fs::File::open(&path).map_err(spill_error)?;
            let reader = arrow::ipc::reader::FileReader::try_new(
                std::io::BufReader::with_capacity(1 << 20, file),
                None,
            )?;
            for batch in reader {
                batches.push(batch?);
            }
            std::fs::remove_file(&path).map_err(spill_error)?;
        }
        Ok(batches)
    }
}

/// What a Z-order rewrite of one partition needs to know.
struct CurveJob {
    /// Reads every column (and the lineage columns under row tracking).
    all: Arc<ReadSpec>,
    /// Reads the curve columns only (the sample pass).
    curve: Arc<ReadSpec>,
    /// The curve columns, as named in the read batches.
    columns: Vec<String>,
    /// Physical names of the curve columns (they get statistics).
    physical: Vec<String>,
    /// Memory budget of this partition.
    budget: usize,
    provider: Option<&'static str>,
    /// How the new files are encoded.
    parquet: Option<Arc<crate::write::parquet_options::ParquetSettings>>,
}

/// Splits read batches into the key ranges of one partition, each row with its key.
struct Router {
    curve: ZCurve,
    /// `ranges - 1` key boundaries.
    bounds: Vec<u64>,
    columns: Vec<String>,
    /// The read schema plus the key column.
    schema: SchemaRef,
}

impl Router {
    fn route(&self, batch: &RecordBatch) -> DeltaResult<Vec<(usize, RecordBatch)>> {
        if batch.num_rows() == 0 {
            return Ok(Vec::new());
        }
        let keys = self
            .curve
            .keys(&zorder::columns_of(batch, &self.columns)?)?;
        let ranges: Vec<usize> = keys
            .values()
            .iter()
            .map(|k| zorder::range_of(&self.bounds, *k))
            .collect();
        let mut columns = batch.columns().to_vec();
        columns.push(Arc::new(keys) as ArrayRef);
        let keyed = RecordBatch::try_new(self.schema.clone(), columns)?;
        if self.bounds.is_empty() {
            return Ok(vec![(0, keyed)]);
        }
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); self.bounds.len() + 1];
        for (row, range) in ranges.into_iter().enumerate() {
            rows[range].push(row as u32);
        }
        let mut out = Vec::new();
        for (range, picked) in rows.into_iter().enumerate() {
            if !picked.is_empty() {
                out.push((
                    range,
                    take_record_batch(&keyed, &UInt32Array::from(picked))?,
                ));
            }
        }
        Ok(out)
    }
}

/// Rewrites one partition's files sorted along the Z-order curve: a sample of the curve
/// columns gives the curve and the key ranges; every row is routed to its range (spilled
/// beyond the budget); each range is sorted by key and written, in order.
async fn zorder_partition(
    snapshot: &Snapshot,
    job: Arc<CurveJob>,
    files: Vec<FileTask>,
    target: u64,
) -> DeltaResult<UnitResult> {
    let storage = snapshot.storage().clone();
    // Pass 1: the curve columns, sampled.
    let mut sampler = Sampler::new(job.curve.output_schema().clone(), zorder::SAMPLE_ROWS);
    let mut stream = scan::execute(storage.clone(), job.curve.clone(), files.clone(), 4);
    while let Some(batch) = stream.try_next().await? {
        sampler.add(&batch)?;
    }
    drop(stream);
    let sample = sampler.finish()?;
    let sampled = zorder::columns_of(&sample, &job.columns)?;
    let curve = ZCurve::from_sample(&sampled)?;
    let mut sample_keys = curve.keys(&sampled)?.values().to_vec();
    // Ranges small enough for half the budget each (so that one range and its sorted copy
    // fit), estimated from the files' sizes.
    let estimate = files.iter().map(|f| f.size.unwrap_or(0)).sum::<u64>() * EXPANSION;
    let wanted = estimate.div_ceil((job.budget as u64 / 2).max(1)).max(1) as usize;
    let count = wanted.min((sample_keys.len() / 16).max(1));
    let bounds = zorder::quantiles(&mut sample_keys, count);

    // Pass 2: every row to its key range (keys computed off the async threads, two batches
    // at a time).
    let mut rewriter = Rewriter::try_new(snapshot, Some(target))?;
    rewriter.set_rearranging();
    rewriter.set_parquet(job.parquet.clone());
    rewriter.index_also(snapshot, &job.physical)?;
    if let Some(provider) = job.provider {
        rewriter.set_clustering_provider(provider);
    }
    let mut fields: Vec<_> = job.all.output_schema().fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new(KEY_COLUMN, DataType::UInt64, false)));
    let keyed_schema = Arc::new(Schema::new(fields));
    let mut ranges = Ranges::new(keyed_schema.clone(), bounds.len() + 1, job.budget);
    let router = Arc::new(Router {
        curve,
        bounds,
        columns: job.columns.clone(),
        schema: keyed_schema.clone(),
    });
    let routed = scan::execute(storage.clone(), job.all.clone(), files.clone(), 2)
        .map(|batch| {
            let router = router.clone();
            async move {
                let batch = batch?;
                tokio::task::spawn_blocking(move || router.route(&batch))
                    .await
                    .map_err(|e| {
                        DeltaError::Internal(format!("computing Z-order keys failed: {e}"))
                    })?
            }
        })
        .buffered(2);
    futures::pin_mut!(routed);
    while let Some(parts) = routed.try_next().await? {
        for (range, part) in parts {
            ranges.push(range, part)?;
        }
    }
    for task in files {
        rewriter.remove_file(task);
    }

    // Pass 3: each range sorted by key, written in order.
    let key_index = keyed_schema.fields().len() - 1;
    let mut written = 0u64;
    for range in 0..=router.bounds.len() {
        let batches = ranges.take(range)?;
        if batches.is_empty() {
            continue;
        }
        let schema = keyed_schema.clone();
        let (data, order) = tokio::task::spawn_blocking(move || {
            let all = concat_batches(&schema, &batches)?;
            drop(batches);
            let keys = all
                .column(key_index)
                .as_any()
                .downcast_ref::<UInt64Array>()
                .ok_or_else(|| DeltaError::Internal("a Z-order key column was lost".into()))?;
            // Unique (key, row) pairs: the order is the stable one by key.
            let mut order: Vec<(u64, u32)> = keys
                .values()
                .iter()
                .enumerate()
                .map(|(row, key)| (*key, row as u32))
                .collect();
            order.sort_unstable();
            let data = all.project(&(0..key_index).collect::<Vec<_>>())?;
            Ok::<_, DeltaError>((data, order))
        })
        .await
        .map_err(|e| DeltaError::Internal(format!("sorting rows for OPTIMIZE failed: {e}")))??;
        for chunk in order.chunks(WRITE_ROWS) {
            let indices = UInt32Array::from_iter_values(chunk.iter().map(|(_, row)| *row));
            let sorted = take_record_batch(&data, &indices)?;
            rewriter.move_rows(&sorted, "the rewritten files").await?;
            written += 1;
        }
    }
    let rows = rewriter.counts.copied_rows;
    let spilled = ranges.spilled;
    let (actions, _) = rewriter.into_actions(snapshot).await?;
    Ok(UnitResult {
        actions,
        rows,
        spilled,
        batches: written,
    })
}

/// Which OPTIMIZE: what [`optimize`] and the distributed pieces ([`plan_units`],
/// [`rewrite_unit`], [`commit_units`]) do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutSpec {
    /// Bin-packing compaction; clustering on a clustered table (as Delta Spark's OPTIMIZE).
    Compact,
    /// Z-order by these columns (top-level, not partition columns).
    ZOrder(Vec<String>),
    /// Clustering of a clustered table: the files not yet clustered, every file when `full`.
    Cluster { full: bool },
    /// REORG ... APPLY (PURGE): the files with deletion vectors.
    Purge,
    /// A REORG of these files (table-relative paths, as `add.path` decoded): rewritten with
    /// the table's current schema, as DROP FEATURE typeWidening does with the files written
    /// before a type change.
    RewriteFiles(Vec<String>),
    /// Every file rewritten with the logical column names, and the metadata without column
    /// mapping committed with them (mode `none`): DROP FEATURE columnMapping's first step.
    RemoveColumnMapping,
}

/// The layout `spec` asks of `snapshot`'s table, its columns checked.
fn resolve(snapshot: &Snapshot, spec: &LayoutSpec) -> DeltaResult<Layout> {
    let clustering = top_level_clustering_columns(snapshot)?;
    Ok(match spec {
        LayoutSpec::Compact if !clustering.is_empty() => Layout::Cluster {
            columns: clustering,
            full: false,
        },
        LayoutSpec::Compact => Layout::BinPack,
        LayoutSpec::Purge => Layout::Purge,
        LayoutSpec::RewriteFiles(paths) => Layout::Rewrite(paths.iter().cloned().collect()),
        LayoutSpec::RemoveColumnMapping => {
            let metadata =
                crate::writer_features::column_mapping::without_column_mapping(snapshot)?;
            Layout::Unmap(Box::new(snapshot.with_metadata(metadata)))
        }
        LayoutSpec::Cluster { .. } if clustering.is_empty() => {
            return Err(DeltaError::InvalidArgument(
                "the table is not clustered (it has no clustering columns; spec \"Clustered \
                 Table\")"
                    .into(),
            ))
        }
        LayoutSpec::Cluster { full } => Layout::Cluster {
            columns: clustering,
            full: *full,
        },
        LayoutSpec::ZOrder(_) if !clustering.is_empty() => {
            return Err(DeltaError::InvalidArgument(
                "ZORDER BY is not supported on a clustered table: OPTIMIZE (compact) clusters \
                 it by its clustering columns (spec \"Clustered Table\")"
                    .into(),
            ))
        }
        LayoutSpec::ZOrder(columns) => Layout::ZOrder(z_order_columns(snapshot, columns)?),
    })
}

/// `columns` resolved as Z-order columns of `snapshot`'s table.
fn z_order_columns(snapshot: &Snapshot, columns: &[String]) -> DeltaResult<Vec<String>> {
    let schema = snapshot.schema()?;
    let partitions = &snapshot.metadata()?.partition_columns;
    let mut resolved: Vec<String> = Vec::new();
    for name in columns {
        let field = schema
            .fields()
            .iter()
            .find(|f| f.name() == name)
            .or_else(|| {
                schema
                    .fields()
                    .iter()
                    .find(|f| f.name().eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| {
                DeltaError::InvalidArgument(format!(
                    "ZORDER BY column {name:?} is not a top-level column of the table"
                ))
            })?;
        if partitions
            .iter()
            .any(|p| p.eq_ignore_ascii_case(field.name()))
        {
            return Err(DeltaError::InvalidArgument(format!(
                "ZORDER BY column {name:?} is a partition column: each partition holds one value \
                 of it already"
            )));
        }
        if resolved.contains(field.name()) {
            return Err(DeltaError::InvalidArgument(format!(
                "ZORDER BY names column {name:?} twice"
            )));
        }
        resolved.push(field.name().clone());
    }
    if resolved.is_empty() || resolved.len() > zorder::MAX_COLUMNS {
        return Err(DeltaError::InvalidArgument(format!(
            "ZORDER BY needs 1 to {} columns",
            zorder::MAX_COLUMNS
        )));
    }
    Ok(resolved)
}

/// OPTIMIZE of `snapshot`'s table as `spec` says, committed as the next version.
pub async fn optimize(
    snapshot: &Snapshot,
    spec: &LayoutSpec,
    options: OptimizeOptions,
) -> DeltaResult<OptimizeMetrics> {
    let layout = resolve(snapshot, spec)?;
    let planned = plan_run(snapshot, &options, &layout)?;
    let metrics = planned.metrics.clone();
    // Column mapping removal commits its metadata even when there is no file to rewrite.
    if planned.plans.is_empty() && !matches!(layout, Layout::Unmap(_)) {
        return Ok(metrics);
    }
    let results = rewrite_plans(snapshot, &options, &layout, planned.plans, planned.target).await?;
    commit_results(
        snapshot,
        &options,
        &layout,
        planned.target,
        metrics,
        results,
    )
    .await
}

/// The units of work of an OPTIMIZE that runs elsewhere (Spark executors): each unit is the
/// paths of the files one rewrite takes (a bin for compaction and purges, a partition's files
/// for Z-order and clustering).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The target file size in force.
    pub target: u64,
    pub units: Vec<Vec<String>>,
    /// Active files the partition filter selected.
    pub considered: u64,
    pub partitions: u64,
}

/// What one unit's rewrite produced: its `remove` and `add` actions, the rows it wrote, the
/// bytes it spilled and the record batches it passed to the writer.
#[derive(Debug, Clone, Default)]
pub struct UnitResult {
    pub actions: Vec<Value>,
    pub rows: u64,
    pub spilled: u64,
    pub batches: u64,
}

/// Plans an OPTIMIZE of `snapshot` whose units are rewritten by [`rewrite_unit`] (anywhere,
/// against the same version) and committed by [`commit_units`].
pub fn plan_units(
    snapshot: &Snapshot,
    spec: &LayoutSpec,
    options: &OptimizeOptions,
) -> DeltaResult<Plan> {
    let layout = resolve(snapshot, spec)?;
    let planned = plan_run(snapshot, options, &layout)?;
    let partitions = planned.plans.len() as u64;
    let units = planned
        .plans
        .into_iter()
        .flat_map(|p| match layout {
            Layout::BinPack | Layout::Purge | Layout::Rewrite(_) | Layout::Unmap(_) => p.bins,
            _ => vec![p.bins.into_iter().flatten().collect()],
        })
        .map(|unit| unit.into_iter().map(|t| t.path).collect())
        .collect();
    Ok(Plan {
        target: planned.target,
        units,
        considered: planned.metrics.total_considered_files,
        partitions,
    })
}

/// Rewrites the files `paths` (one unit of [`plan_units`], planned on the same version) as
/// `spec` says, without committing.
pub async fn rewrite_unit(
    snapshot: &Snapshot,
    spec: &LayoutSpec,
    paths: &[String],
    options: &OptimizeOptions,
) -> DeltaResult<UnitResult> {
    let layout = resolve(snapshot, spec)?;
    let target =
        crate::write::data_files::target_file_size(options.target_size, &snapshot.configuration())?
            as u64;
    let wanted: HashSet<&String> = paths.iter().collect();
    let scan = Scan::try_new(
        snapshot,
        ScanOptions {
            columns: Some(Vec::new()),
            ..Default::default()
        },
    )?;
    let files: Vec<FileTask> = scan
        .tasks()
        .iter()
        .filter(|t| wanted.contains(&t.path))
        .cloned()
        .collect();
    if files.len() != wanted.len() {
        return Err(DeltaError::InvalidArgument(format!(
            "{} of the files to rewrite are not active in version {}",
            wanted.len() - files.len(),
            snapshot.version()
        )));
    }
    let plans = vec![PartitionPlan { bins: vec![files] }];
    let mut one = options.clone();
    one.max_concurrent_tasks = Some(1);
    let mut results = rewrite_plans(snapshot, &one, &layout, plans, target).await?;
    Ok(results.pop().unwrap_or_default())
}

/// Commits the rewrites of the units of `plan` as one OPTIMIZE version after `snapshot` (the
/// version planned on).
pub async fn commit_units(
    snapshot: &Snapshot,
    spec: &LayoutSpec,
    options: &OptimizeOptions,
    plan: &Plan,
    units: Vec<UnitResult>,
) -> DeltaResult<OptimizeMetrics> {
    let layout = resolve(snapshot, spec)?;
    let rewritten: u64 = plan.units.iter().map(|u| u.len() as u64).sum();
    let metrics = OptimizeMetrics {
        total_considered_files: plan.considered,
        total_files_skipped: plan.considered.saturating_sub(rewritten),
        partitions_optimized: plan.partitions,
        ..Default::default()
    };
    if units.is_empty() {
        return Ok(metrics);
    }
    commit_results(snapshot, options, &layout, plan.target, metrics, units).await
}

/// The clustering columns of `snapshot` as logical top-level names (the only ones OPTIMIZE
/// clusters by).
fn top_level_clustering_columns(snapshot: &Snapshot) -> DeltaResult<Vec<String>> {
    let columns = logical_clustering_columns(snapshot)?;
    if columns.is_empty() {
        return Ok(columns);
    }
    let schema = snapshot.schema()?;
    for c in &columns {
        if schema.field_with_name(c).is_err() {
            return Err(DeltaError::Unsupported(format!(
                "clustering column {c:?} is not a top-level column of the table; deltalog \
                 clusters by top-level columns only"
            )));
        }
    }
    Ok(columns)
}

/// A planned OPTIMIZE: the target size, the partitions' bins, and the metrics known so far.
struct Planned {
    target: u64,
    plans: Vec<PartitionPlan>,
    metrics: OptimizeMetrics,
}

fn plan_run(
    snapshot: &Snapshot,
    options: &OptimizeOptions,
    layout: &Layout,
) -> DeltaResult<Planned> {
    let schema = snapshot.schema()?;
    let partition_columns = snapshot.metadata()?.partition_columns.clone();
    let filter = match &options.partition_filter {
        Some(expr) => {
            let resolved = expr.resolve(&schema)?;
            let outside: Vec<String> = resolved
                .columns()
                .into_iter()
                .filter(|c| !partition_columns.iter().any(|p| p.eq_ignore_ascii_case(c)))
                .collect();
            if !outside.is_empty() {
                return Err(DeltaError::InvalidArgument(format!(
                    "OPTIMIZE's partition filter may use partition columns only ({}), not {}",
                    if partition_columns.is_empty() {
                        "the table has none".to_string()
                    } else {
                        partition_columns.join(", ")
                    },
                    outside.join(", ")
                )));
            }
            Some(resolved)
        }
        None => None,
    };
    let target =
        crate::write::data_files::target_file_size(options.target_size, &snapshot.configuration())?
            as u64;
    let scan = Scan::try_new(
        snapshot,
        ScanOptions {
            columns: Some(Vec::new()),
            predicate: filter.as_ref().and_then(Expr::skipping_predicate),
            ..Default::default()
        },
    )?;
    let tasks = scan.tasks().to_vec();
    let mut metrics = OptimizeMetrics {
        total_considered_files: tasks.len() as u64,
        ..Default::default()
    };
    let plans: Vec<PartitionPlan> = match layout {
        Layout::BinPack | Layout::Purge | Layout::Rewrite(_) | Layout::Unmap(_) => {
            plan(tasks, target, layout)
        }
        Layout::ZOrder(_) => by_partition(tasks)
            .into_iter()
            .map(|files| PartitionPlan { bins: vec![files] })
            .collect(),
        Layout::Cluster { full, .. } => {
            let providers = if *full {
                HashMap::new()
            } else {
                clustering_providers(snapshot)?
            };
            by_partition(tasks)
                .into_iter()
                .filter_map(|files| {
                    let unclustered: Vec<FileTask> = files
                        .into_iter()
                        .filter(|t| {
                            *full || providers.get(&t.path).map(String::as_str) != Some(LIQUID)
                        })
                        .collect();
                    (!unclustered.is_empty()).then(|| PartitionPlan {
                        bins: vec![unclustered],
                    })
                })
                .collect()
        }
    };
    let chosen: Vec<&FileTask> = plans.iter().flat_map(|p| p.bins.iter().flatten()).collect();
    metrics.total_files_skipped = metrics.total_considered_files - chosen.len() as u64;
    metrics.partitions_optimized = plans.len() as u64;
    Ok(Planned {
        target,
        plans,
        metrics,
    })
}

/// Rewrites the planned partitions (at most `max_concurrent_tasks` at once); what each one
/// produced.
async fn rewrite_plans(
    snapshot: &Snapshot,
    options: &OptimizeOptions,
    layout: &Layout,
    plans: Vec<PartitionPlan>,
    target: u64,
) -> DeltaResult<Vec<UnitResult>> {
    let schema = snapshot.schema()?;
    let mode = snapshot.column_mapping_mode()?;
    let partition_columns = snapshot.metadata()?.partition_columns.clone();

    // Every column, deletion vectors applied; with row tracking enabled, the rows' lineage.
    let lineage = Rewriter::try_new(snapshot, Some(target))?.lineage_columns();
    let spec = |columns: Option<Vec<String>>, lineage| {
        ReadSpec::try_new(
            snapshot.storage().url().to_string(),
            schema.clone(),
            columns,
            partition_columns.clone(),
            mode,
            MetadataColumns {
                row_tracking: lineage,
                ..Default::default()
            },
            None,
        )
        .map(Arc::new)
    };
    let all = spec(None, lineage)?;
    let concurrency = options
        .max_concurrent_tasks
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let curve_columns = match &layout {
        Layout::ZOrder(columns) | Layout::Cluster { columns, .. } => Some(columns.clone()),
        Layout::BinPack | Layout::Purge | Layout::Rewrite(_) | Layout::Unmap(_) => None,
    };
    let results: Vec<UnitResult> = match &curve_columns {
        None => {
            let write = match layout {
                Layout::Unmap(unmapped) => unmapped.as_ref(),
                _ => snapshot,
            };
            futures::stream::iter(plans)
                .map(|partition| {
                    let parquet = options.parquet.clone();
                    rewrite_partition(snapshot, write, all.clone(), partition, target, parquet)
                })
                .buffer_unordered(concurrency)
                .try_collect()
                .await?
        }
        Some(columns) => {
            let partitions = plans.len().min(concurrency).max(1);
            let limit = options.memory_limit.unwrap_or(MEMORY_LIMIT).max(1 << 20);
            let job = Arc::new(CurveJob {
                all: all.clone(),
                curve: spec(Some(columns.clone()), None)?,
                columns: columns.clone(),
                physical: columns
                    .iter()
                    .map(|c| physical_name(&schema, c, mode))
                    .collect(),
                budget: usize::try_from(limit / partitions as u64).unwrap_or(usize::MAX),
                provider: matches!(layout, Layout::Cluster { .. }).then_some(LIQUID),
                parquet: options.parquet.clone(),
            });
            futures::stream::iter(plans)
                .map(|partition| {
                    let files = partition.bins.into_iter().flatten().collect();
                    zorder_partition(snapshot, job.clone(), files, target)
                })
                .buffer_unordered(concurrency)
                .try_collect()
                .await?
        }
    };
    Ok(results)
}

/// Commits rewritten partitions as one version after `snapshot`; the metrics.
async fn commit_results(
    snapshot: &Snapshot,
    options: &OptimizeOptions,
    layout: &Layout,
    target: u64,
    mut metrics: OptimizeMetrics,
    results: Vec<UnitResult>,
) -> DeltaResult<OptimizeMetrics> {
    let mut read: HashSet<String> = HashSet::new();
    let mut removed_sizes = Vec::new();
    let mut actions = Vec::new();
    let mut added_sizes = Vec::new();
    for unit in results {
        metrics.num_rows += unit.rows;
        metrics.spilled_bytes += unit.spilled;
        metrics.num_batches += unit.batches;
        let part = unit.actions;
        for action in &part {
            if let Some(size) = action
                .get("add")
                .and_then(|a| a.get("size"))
                .and_then(Value::as_u64)
            {
                added_sizes.push(size);
            }
            if let Some(remove) = action.get("remove") {
                removed_sizes.push(remove.get("size").and_then(Value::as_u64).unwrap_or(0));
                let raw = remove
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let path = crate::paths::decode_uri_path(raw)
                    .map_err(|rule| DeltaError::corrupt(raw, Some(snapshot.version()), rule))?;
                read.insert(path.into_owned());
            }
        }
        actions.extend(part);
    }
    metrics.files_added = FileSizes::of(added_sizes);
    metrics.files_removed = FileSizes::of(removed_sizes);
    metrics.num_files_added = metrics.files_added.total_files;
    metrics.num_files_removed = metrics.files_removed.total_files;

    let mut commit_info = options.commit_info.clone();
    let m = &metrics;
    let mut op_metrics = Map::new();
    for (k, v) in [
        ("numRemovedFiles", m.num_files_removed),
        ("numAddedFiles", m.num_files_added),
        ("numRemovedBytes", m.files_removed.total_size),
        ("numAddedBytes", m.files_added.total_size),
        ("minFileSize", m.files_added.min),
        ("maxFileSize", m.files_added.max),
        ("numBatches", m.num_batches),
        ("partitionsOptimized", m.partitions_optimized),
    ] {
        op_metrics.insert(k.into(), json!(v.to_string()));
    }
    commit_info.insert("operationMetrics".into(), Value::Object(op_metrics));
    let predicate = json!(options
        .partition_filter_text
        .as_ref()
        .map(|t| format!("[{t:?}]"))
        .unwrap_or_else(|| "[]".into()));
    let (operation, isolation) = match layout {
        Layout::Purge | Layout::Rewrite(_) => ("REORG", Isolation::Rearranges),
        // Files written concurrently would hold the mapped names the new metadata no longer
        // knows: any concurrent file change conflicts.
        Layout::Unmap(unmapped) => {
            let mut head = vec![unmapped.metadata()?.to_action()];
            let clustering = crate::layout::clustering::logical_clustering_columns(snapshot)?;
            if !clustering.is_empty() {
                // "Clustered Table": the domain names the columns by their physical names,
                // which are now the logical ones.
                head.push(json!({"domainMetadata": {
                    "domain": crate::layout::clustering::CLUSTERING_DOMAIN,
                    "configuration": json!({"clusteringColumns": clustering}).to_string(),
                    "removed": false,
                }}));
            }
            actions.splice(0..0, head);
            ("REMOVE COLUMN MAPPING", Isolation::RewritesAll)
        }
        _ => ("OPTIMIZE", Isolation::Rearranges),
    };
    let mut txn = Transaction::new(
        snapshot.storage().clone(),
        Some(snapshot.version()),
        operation,
        isolation,
    )
    .with_read_files(read)
    .with_commit_info(commit_info)
    .for_table(snapshot)
    .with_parameter("predicate", predicate);
    let names = |c: &[String]| json!(serde_json::to_string(c).unwrap_or_default());
    txn = match &layout {
        Layout::Purge => txn.with_parameter("applyPurge", json!(true)),
        Layout::Rewrite(_) => txn.with_parameter("applyPurge", json!(false)),
        Layout::Unmap(_) => txn,
        Layout::Cluster { columns, full } => txn
            .with_parameter("targetSize", json!(target.to_string()))
            .with_parameter("zOrderBy", json!("[]"))
            .with_parameter("clusterBy", names(columns))
            .with_parameter("isFull", json!(*full))
            .with_parameter("auto", json!(false)),
        Layout::ZOrder(columns) => txn
            .with_parameter("targetSize", json!(target.to_string()))
            .with_parameter("zOrderBy", names(columns))
            .with_parameter("auto", json!(false)),
        Layout::BinPack => txn
            .with_parameter("targetSize", json!(target.to_string()))
            .with_parameter("zOrderBy", json!("[]"))
            .with_parameter("auto", json!(false)),
    };
    txn.add_actions(actions);
    metrics.version = Some(txn.commit().await?);
    Ok(metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(path: &str, part: &str, size: u64, dv: bool) -> FileTask {
        let mut partition_values = BTreeMap::new();
        partition_values.insert("p".to_string(), Some(part.to_string()));
        FileTask {
            path: path.into(),
            size: Some(size),
            partition_values,
            deletion_vector: dv.then(|| crate::deletion_vector::DvDescriptor {
                storage_type: "i".into(),
                path_or_inline_dv: String::new(),
                offset: None,
                size_in_bytes: 0,
                cardinality: 1,
            }),
            base_row_id: None,
            default_row_commit_version: None,
            num_records: None,
            change: None,
        }
    }

    fn names(plans: &[PartitionPlan]) -> Vec<Vec<Vec<String>>> {
        plans
            .iter()
            .map(|p| {
                p.bins
                    .iter()
                    .map(|b| b.iter().map(|t| t.path.clone()).collect())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn bins_are_per_partition_and_about_the_target_size() {
        let tasks = vec![
            task("a1", "a", 40, false),
            task("b1", "b", 10, false),
            task("a2", "a", 40, false),
            task("a3", "a", 40, false),
            task("big", "a", 100, false),
            task("a4", "a", 10, false),
            task("b2", "b", 10, false),
        ];
        // a: [a1, a2] (80), then [a3, a4] (50); the 100-byte file stays; b: [b1, b2].
        assert_eq!(
            names(&plan(tasks, 100, &Layout::BinPack)),
            vec![
                vec![vec!["a1", "a2"], vec!["a3", "a4"]],
                vec![vec!["b1", "b2"]]
            ]
        );
    }

    #[test]
    fn single_files_stay_unless_they_have_deletion_vectors() {
        let tasks = vec![
            task("alone", "a", 10, false),
            task("dv", "b", 500, true),
            task("fine", "c", 500, false),
        ];
        assert_eq!(
            names(&plan(tasks.clone(), 100, &Layout::BinPack)),
            vec![vec![vec!["dv"]]]
        );
        assert_eq!(
            names(&plan(tasks, 100, &Layout::Purge)),
            vec![vec![vec!["dv"]]]
        );
    }

    #[test]
    fn a_rewrite_takes_exactly_the_files_named_alone_or_not() {
        let tasks = vec![
            task("alone", "a", 10, false),
            task("big", "b", 500, false),
            task("other", "b", 10, true),
            task("small", "b", 10, false),
        ];
        let chosen = Layout::Rewrite(["alone", "big", "small"].map(String::from).into());
        assert_eq!(
            names(&plan(tasks, 100, &chosen)),
            vec![vec![vec!["alone"]], vec![vec!["big"], vec!["small"]]]
        );
    }
}
