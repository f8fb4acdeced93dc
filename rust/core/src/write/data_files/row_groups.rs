//! Each partition's rows cut into row groups: queued as they arrive, fed to the column
//! encoders in batches ([`FEED_ROWS`]), a row group closed when it is full (or early, when the
//! open row groups hold too much memory), and the encoded row groups appended to the
//! partition's file in the order they were completed, a file closed once it reaches the
//! target size ("Data Files").

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;

use crate::error::{DeltaError, DeltaResult};
use crate::write::encoder::{EncodedGroup, OpenGroup};

use super::open_files::OpenFile;
use super::{batch_bytes, DataFileWriter};

/// Rows of one row group at most (the parquet crate's default).
pub(super) const ROW_GROUP_ROWS: usize = 1024 * 1024;
/// Bytes (Arrow memory) of one row group at most, below the target file size.
const ROW_GROUP_BYTES: usize = 128 * 1024 * 1024;
/// Rows of the open row groups (Arrow bytes, sent to the encoders or not), over all
/// partitions, before the largest partition's row group is closed early (smaller) to bound
/// memory.
pub(super) const PENDING_BYTES: usize = 512 * 1024 * 1024;
/// A partition's rows are sent to the encoders once this many are waiting (or
/// [`FEED_BYTES`]), in batches of at most this many rows.
const FEED_ROWS: usize = 32 * 1024;
/// See [`FEED_ROWS`] (Arrow bytes).
const FEED_BYTES: usize = 4 * 1024 * 1024;
/// Row groups being encoded as their rows arrive at once, at most; the rows of further
/// partitions wait as Arrow rows until their row group is complete.
const MAX_OPEN_GROUPS: usize = 16;
/// Closed row groups still being encoded at once, at most (see [`DataFileWriter::cut`]).
const MAX_CLOSING: usize = 1;

/// One partition of the input: its current row group, and its open file.
pub(super) struct Partition {
    pub(super) partition_values: Vec<(String, Option<String>)>,
    /// Rows of the current row group not yet sent to the encoders.
    pub(super) pending: Vec<RecordBatch>,
    pub(super) pending_rows: usize,
    pub(super) pending_bytes: usize,
    /// The current row group, once rows were sent to the encoders.
    pub(super) group: Option<OpenGroup>,
    /// Rows and Arrow bytes of the current row group, sent or not.
    pub(super) rows: usize,
    pub(super) bytes: usize,
    pub(super) file: Option<OpenFile>,
}

pub(super) type Key = Vec<Option<String>>;

impl DataFileWriter {
    /// The row group size of this writer, in Arrow bytes.
    fn group_bytes(&self) -> usize {
        self.options.target_file_size.min(ROW_GROUP_BYTES)
    }

    /// Queues rows of one partition, cutting row groups as they fill.
    pub(super) async fn push(&mut self, key: Key, mut batch: RecordBatch) -> DeltaResult<()> {
        let group_bytes = self.group_bytes();
        while batch.num_rows() > 0 {
            // A large batch is many row groups: an interrupt stops between them.
            crate::interrupt::check()?;
            let bytes_per_row = (batch_bytes(&batch) / batch.num_rows()).max(1);
            let columns = &self.options.partition_columns;
            let partition = self
                .partitions
                .entry(key.clone())
                .or_insert_with(|| Partition {
                    partition_values: columns.iter().cloned().zip(key.iter().cloned()).collect(),
                    pending: Vec::new(),
                    pending_rows: 0,
                    pending_bytes: 0,
                    group: None,
                    rows: 0,
                    bytes: 0,
                    file: None,
                });
            let room_rows = self.row_group_rows.saturating_sub(partition.rows);
            let room_bytes = group_bytes.saturating_sub(partition.bytes);
            let take = batch
                .num_rows()
                .min(room_rows)
                .min((room_bytes / bytes_per_row).max(1));
            partition.pending.push(batch.slice(0, take));
            partition.pending_rows += take;
            partition.pending_bytes += take * bytes_per_row;
            partition.rows += take;
            partition.bytes += take * bytes_per_row;
            self.pending_bytes += take * bytes_per_row;
            batch = batch.slice(take, batch.num_rows() - take);
            if partition.rows >= self.row_group_rows || partition.bytes >= group_bytes {
                self.cut(&key).await?;
            } else if partition.pending_rows >= FEED_ROWS || partition.pending_bytes >= FEED_BYTES {
                self.feed(&key, false).await?;
            }
            if self.pending_bytes > PENDING_BYTES {
                let largest = self
                    .partitions
                    .iter()
                    .max_by_key(|(_, p)| p.bytes)
                    .map(|(k, _)| k.clone());
                if let Some(k) = largest {
                    self.cut(&k).await?;
                }
            }
        }
        Ok(())
    }

    /// Sends the waiting rows of partition `key` to its row group on the encoders, opening
    /// one unless [`MAX_OPEN_GROUPS`] are open (then the rows keep waiting, unless `force`).
    async fn feed(&mut self, key: &Key, force: bool) -> DeltaResult<()> {
        self.append_ready().await?;
        let Some(partition) = self.partitions.get_mut(key) else {
            return Ok(());
        };
        if partition.pending_rows == 0 {
            return Ok(());
        }
        if partition.group.is_none() {
            if !force && self.open_groups >= MAX_OPEN_GROUPS {
                return Ok(());
            }
            partition.group = Some(self.encoders.open()?);
            self.open_groups += 1;
        }
        let batches = std::mem::take(&mut partition.pending);
        partition.pending_rows = 0;
        partition.pending_bytes = 0;
        let Some(group) = partition.group.as_mut() else {
            return Ok(());
        };
        for piece in feed_batches(&self.file_schema, batches)? {
            self.encoders.write(group, piece).await?;
        }
        Ok(())
    }

    /// Completes the current row group of partition `key`; waits for the oldest row group
    /// when more than [`MAX_CLOSING`] are being completed already.
    pub(super) async fn cut(&mut self, key: &Key) -> DeltaResult<()> {
        self.feed(key, true).await?;
        let Some(partition) = self.partitions.get_mut(key) else {
            return Ok(());
        };
        self.pending_bytes = self.pending_bytes.saturating_sub(partition.bytes);
        partition.rows = 0;
        partition.bytes = 0;
        let Some(group) = partition.group.take() else {
            return Ok(());
        };
        self.open_groups = self.open_groups.saturating_sub(1);
        let closing = self.encoders.close(group)?;
        self.in_flight.push_back((key.clone(), closing));
        // Each closed row group holds its encoded pages until it is in its file: one may
        // still be encoding its last rows while the next is fed, no more.
        while self.in_flight.len() > MAX_CLOSING {
            self.append_oldest().await?;
        }
        Ok(())
    }

    /// Appends the closed row groups whose encoding is done, oldest first, without waiting.
    async fn append_ready(&mut self) -> DeltaResult<()> {
        while let Some((_, closing)) = self.in_flight.front_mut() {
            if !closing.is_ready() {
                break;
            }
            self.append_oldest().await?;
        }
        Ok(())
    }

    /// Waits for the oldest row group being encoded and appends it to its partition's file
    /// (closing the file first when the row group would take it past the target size, and
    /// after, when it reached it).
    pub(super) async fn append_oldest(&mut self) -> DeltaResult<()> {
        let Some((key, closing)) = self.in_flight.pop_front() else {
            return Ok(());
        };
        let encoded = closing.finish().await?;
        self.encoders.learn(&encoded)?;
        let target = self.options.target_file_size;
        let full = match self.partitions.get(&key).and_then(|p| p.file.as_ref()) {
            Some(f) => f.row_groups > 0 && f.writer.bytes_written() + encoded.bytes > target,
            None => false,
        };
        if full {
            self.close_file(&key).await?;
        }
        let file = match self.partitions.get_mut(&key).and_then(|p| p.file.take()) {
            Some(f) => f,
            None => self.open_file(&key)?,
        };
        let file = tokio::task::spawn_blocking(move || -> DeltaResult<OpenFile> {
            let mut file = file;
            let EncodedGroup { chunks, stats, .. } = encoded;
            let mut group = file.writer.next_row_group()?;
            for chunk in chunks {
                chunk.append_to_row_group(&mut group)?;
            }
            group.close()?;
            file.stats.merge(&stats);
            file.row_groups += 1;
            Ok(file)
        })
        .await
        .map_err(|e| DeltaError::Internal(format!("writing a data file failed: {e}")))??;
        let reached = file.writer.bytes_written() >= target;
        if let Some(p) = self.partitions.get_mut(&key) {
            p.file = Some(file);
        }
        if reached {
            self.close_file(&key).await?;
        }
        Ok(())
    }
}

/// The rows of `batches` in batches for the encoders: large ones cut to [`FEED_ROWS`] rows,
/// runs of small ones put together (each batch sent costs a message and a pass per column).
fn feed_batches(schema: &SchemaRef, batches: Vec<RecordBatch>) -> DeltaResult<Vec<RecordBatch>> {
    const SMALL: usize = FEED_ROWS / 8;
    let mut out = Vec::new();
    let mut run: Vec<RecordBatch> = Vec::new();
    let mut run_rows = 0;
    let flush = |run: &mut Vec<RecordBatch>, out: &mut Vec<RecordBatch>| -> DeltaResult<()> {
        match run.len() {
            0 => {}
            1 => out.append(run),
            _ => {
                out.push(concat_batches(schema, run.iter())?);
                run.clear();
            }
        }
        Ok(())
    };
    for batch in batches {
        let mut offset = 0;
        while offset < batch.num_rows() {
            let n = (batch.num_rows() - offset).min(FEED_ROWS);
            let piece = batch.slice(offset, n);
            offset += n;
            if n >= SMALL {
                flush(&mut run, &mut out)?;
                run_rows = 0;
                out.push(piece);
            } else {
                run.push(piece);
                run_rows += n;
                if run_rows >= SMALL {
                    flush(&mut run, &mut out)?;
                    run_rows = 0;
                }
            }
        }
    }
    flush(&mut run, &mut out)?;
    Ok(out)
}
