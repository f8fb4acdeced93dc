//! Z-order and liquid clustering of one partition: a sample of the curve columns gives the
//! curve and its key ranges; every row is routed to its range, buffered within the memory
//! budget and spilled to local Arrow IPC files beyond it; each range is sorted by key and
//! written in order.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};

use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::layout::zorder::{self, Sampler, ZCurve};
use crate::scan::{self, FileTask, ReadSpec};
use crate::snapshot::Snapshot;

use super::UnitResult;

/// The hidden column carrying each buffered row's Z-order key.
const KEY_COLUMN: &str = "_deltalog_zorder_key";

/// Arrow bytes per parquet byte, for sizing Z-order key ranges before reading them.
const EXPANSION: u64 = 4;

/// Rows handed to the writer at a time from a sorted key range.
const WRITE_ROWS: usize = 64 * 1024;

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
pub(super) struct CurveJob {
    /// Reads every column (and the lineage columns under row tracking).
    pub(super) all: Arc<ReadSpec>,
    /// Reads the curve columns only (the sample pass).
    pub(super) curve: Arc<ReadSpec>,
    /// The curve columns, as named in the read batches.
    pub(super) columns: Vec<String>,
    /// Physical names of the curve columns (they get statistics).
    pub(super) physical: Vec<String>,
    /// Memory budget of this partition.
    pub(super) budget: usize,
    pub(super) provider: Option<&'static str>,
    /// How the new files are encoded.
    pub(super) parquet: Option<Arc<crate::write::parquet_options::ParquetSettings>>,
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
pub(super) async fn zorder_partition(
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
