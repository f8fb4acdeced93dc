//! Row groups encoded as their rows arrive, column by column, on a few worker threads.
//!
//! A [`ColumnEncoders`] belongs to one [`crate::write::data_files::DataFileWriter`]. Each row
//! group it opens gets the parquet crate's column writers (one per leaf column,
//! "Delta Data Type to Parquet Type Mappings" being the Arrow writer's), and each top-level
//! column of the row group, with its writers and the statistics of its leaves ("Per-file
//! Statistics"), goes to one worker thread. Batches of rows are then sent to the workers of
//! their row group as they arrive, so a row group's rows are encoded while the next ones are
//! still being read: memory holds the encoded pages of the open row groups, not their Arrow
//! rows. Closing a row group returns its column chunks, in column order, ready to be appended
//! to a file.
//!
//! Columns are assigned to workers by the time each took per row in the last row group
//! (longest first, to the least loaded worker), so that one costly column does not leave the
//! other cores idle. Batches waiting for the workers are bounded by a byte budget: sending
//! waits while the budget is spent. Each worker handles its jobs in the order they were sent,
//! so every column writer sees its rows in input order.
//!
//! Unless the caller's settings say how dictionaries are used, a leaf column whose dictionary
//! outgrew its page limit in a row group (the writer then falls back to plain pages, having
//! interned the values for nothing) is written without a dictionary in the writer's later row
//! groups: random keys and measurements fall back in every row group, and interning them is a
//! fifth of a rewrite's time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef};
use futures::channel::oneshot;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Encoding, PageType};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{DeltaError, DeltaResult};
use crate::stats::collect::{IndexedColumns, StatsCollector};
use crate::write::data_files::batch_bytes;

/// One top-level column of an open row group, on its worker.
struct Column {
    /// Index of the column in the file schema.
    index: usize,
    writers: Vec<ArrowColumnWriter>,
    stats: StatsCollector,
    /// Time spent encoding this column's values and collecting their statistics.
    nanos: u64,
}

/// A worker's share of one row group.
struct Share {
    columns: Vec<Column>,
    /// The first error, after which the share's later batches are ignored (it is reported
    /// when the row group is closed).
    error: Option<DeltaError>,
}

/// The closed columns of one worker's share.
struct ClosedShare {
    columns: Vec<(usize, Vec<ArrowColumnChunk>, StatsCollector, u64)>,
}

enum Job {
    Open {
        group: u64,
        columns: Vec<Column>,
    },
    Write {
        group: u64,
        batch: RecordBatch,
        /// Returned to the budget when every worker of the row group has the batch encoded.
        _permit: Arc<OwnedSemaphorePermit>,
    },
    Close {
        group: u64,
        reply: oneshot::Sender<DeltaResult<ClosedShare>>,
    },
}

/// A row group being encoded: its rows so far, and the workers holding its columns.
#[derive(Debug)]
pub struct OpenGroup {
    id: u64,
    workers: Vec<usize>,
    rows: usize,
}

impl OpenGroup {
    /// Rows sent to the row group so far.
    pub fn rows(&self) -> usize {
        self.rows
    }
}

/// A row group whose rows were all sent: its column chunks once the workers have encoded them.
pub struct ClosingGroup {
    replies: Vec<oneshot::Receiver<DeltaResult<ClosedShare>>>,
    /// Shares already answered (see [`ClosingGroup::is_ready`]).
    received: Vec<DeltaResult<ClosedShare>>,
    rows: usize,
    stats: StatsCollector,
}

/// An encoded row group: its column chunks (in file order), not yet in any file.
pub struct EncodedGroup {
    pub chunks: Vec<ArrowColumnChunk>,
    pub stats: StatsCollector,
    /// Encoded bytes.
    pub bytes: usize,
    rows: usize,
    /// Time each column took, by column index.
    nanos: Vec<(usize, u64)>,
}

/// The worker threads of one writer, and what they learned about the columns' costs.
pub struct ColumnEncoders {
    /// Each worker's queue; a worker's thread starts when it is first given work (a small
    /// write, one row group of a column or two, starts one thread, not one per core).
    workers: Vec<Option<mpsc::Sender<Job>>>,
    cancelled: Arc<AtomicBool>,
    factory: Arc<ArrowRowGroupWriterFactory>,
    /// The file schema, and the settings the factory was made from when they may change (see
    /// [`ColumnEncoders::learn`]).
    schema: SchemaRef,
    adaptive: Option<WriterProperties>,
    /// Path of each leaf column, and whether it is written without a dictionary now.
    leaf_paths: Vec<ColumnPath>,
    plain: Vec<bool>,
    stats_schema: SchemaRef,
    indexed: IndexedColumns,
    /// Leaf columns of each top-level column.
    leaves: Vec<usize>,
    /// Nanoseconds per row of each column (a guess by type until measured).
    cost: Vec<f64>,
    /// Arrow bytes of batches sent to the workers and not yet encoded, at most (in KiB, the
    /// unit of the budget's permits).
    budget: Arc<Semaphore>,
    budget_kib: usize,
    next_group: u64,
}

impl Drop for ColumnEncoders {
    fn drop(&mut self) {
        // Workers skip what is still queued and stop once their channel is empty.
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

/// A first guess of a column's encoding cost, relative to a fixed-width value.
fn guessed_cost(dt: &DataType, leaves: usize) -> f64 {
    let per_leaf = match dt {
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView => 3.0,
        _ => 1.0,
    };
    per_leaf * leaves.max(1) as f64
}

/// Whether a column chunk's writer gave up its dictionary: it has a dictionary page and data
/// pages not encoded with it.
fn fell_back(meta: &ColumnChunkMetaData) -> bool {
    if meta.dictionary_page_offset().is_none() {
        return false;
    }
    let dictionary =
        |e: Encoding| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY);
    match (meta.page_encoding_stats(), meta.page_encoding_stats_mask()) {
        (Some(stats), _) => stats.iter().any(|s| {
            matches!(s.page_type, PageType::DATA_PAGE | PageType::DATA_PAGE_V2)
                && !dictionary(s.encoding)
        }),
        (None, Some(mask)) => {
            !(mask.is_only(Encoding::PLAIN_DICTIONARY) || mask.is_only(Encoding::RLE_DICTIONARY))
        }
        (None, None) => false,
    }
}

/// The column writers' factory for files of `schema` written with `props`.
fn factory(schema: &SchemaRef, props: WriterProperties) -> DeltaResult<ArrowRowGroupWriterFactory> {
    let (_, factory) =
        ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props))?.into_serialized_writer()?;
    Ok(factory)
}

impl ColumnEncoders {
    /// Encoders of row groups of `schema` (the file schema), written with `props`, with
    /// `threads` workers; statistics are collected for the columns of `stats_schema`. Batches
    /// sent and not yet encoded hold `queue_bytes` (Arrow memory) at most. `adaptive`: columns
    /// whose dictionary overflowed are written plain from then on (see the module docs).
    #[allow(clippy::too_many_arguments)]
    pub fn try_new(
        props: WriterProperties,
        adaptive: bool,
        schema: SchemaRef,
        stats_schema: SchemaRef,
        indexed: IndexedColumns,
        threads: usize,
        queue_bytes: usize,
    ) -> DeltaResult<Self> {
        let budget_kib = (queue_bytes / 1024).clamp(1, u32::MAX as usize);
        let parquet_schema = parquet::arrow::ArrowSchemaConverter::new().convert(&schema)?;
        let leaf_paths: Vec<ColumnPath> = parquet_schema
            .columns()
            .iter()
            .map(|c| c.path().clone())
            .collect();
        let plain = vec![false; leaf_paths.len()];
        let factory = Arc::new(factory(&schema, props.clone())?);
        let mut leaves = vec![0usize; schema.fields().len()];
        for leaf in 0..parquet_schema.num_columns() {
            let root = parquet_schema.get_column_root_idx(leaf);
            if let Some(n) = leaves.get_mut(root) {
                *n += 1;
            }
        }
        let cost = schema
            .fields()
            .iter()
            .zip(&leaves)
            .map(|(f, &n)| guessed_cost(f.data_type(), n))
            .collect();
        let cancelled = Arc::new(AtomicBool::new(false));
        let workers = (0..threads.max(1)).map(|_| None).collect();
        Ok(ColumnEncoders {
            workers,
            cancelled,
            factory,
            schema,
            adaptive: adaptive.then_some(props),
            leaf_paths,
            plain,
            stats_schema,
            indexed,
            leaves,
            cost,
            budget: Arc::new(Semaphore::new(budget_kib)),
            budget_kib,
            next_group: 0,
        })
    }

    /// Starts `worker`'s thread unless it runs already.
    fn start(&mut self, worker: usize) -> DeltaResult<()> {
        let slot = self
            .workers
            .get_mut(worker)
            .ok_or_else(|| DeltaError::Internal("no such encoder thread".into()))?;
        if slot.is_none() {
            let (sender, receiver) = mpsc::channel();
            let (schema, cancelled) = (self.schema.clone(), self.cancelled.clone());
            std::thread::Builder::new()
                .name(format!("deltalog-encode-{worker}"))
                .spawn(move || work(receiver, schema, cancelled))
                .map_err(|e| DeltaError::Internal(format!("starting an encoder thread: {e}")))?;
            *slot = Some(sender);
        }
        Ok(())
    }

    fn send(&self, worker: usize, job: Job) -> DeltaResult<()> {
        self.workers
            .get(worker)
            .and_then(Option::as_ref)
            .ok_or_else(|| DeltaError::Internal("no such encoder thread".into()))?
            .send(job)
            .map_err(|_| DeltaError::Internal("an encoder thread stopped".into()))
    }

    /// Opens a row group: its columns go to the workers, costliest first, each to the one
    /// with the least work so far.
    pub fn open(&mut self) -> DeltaResult<OpenGroup> {
        let id = self.next_group;
        self.next_group += 1;
        let mut writers = self.factory.create_column_writers(0)?.into_iter();
        let mut columns: Vec<Column> = Vec::with_capacity(self.leaves.len());
        for (index, &n) in self.leaves.iter().enumerate() {
            let mine: Vec<ArrowColumnWriter> = writers.by_ref().take(n).collect();
            if mine.len() != n {
                return Err(DeltaError::Internal(
                    "fewer column writers than leaf columns".into(),
                ));
            }
            columns.push(Column {
                index,
                writers: mine,
                stats: StatsCollector::new(&self.stats_schema, &self.indexed),
                nanos: 0,
            });
        }
        columns.sort_by(|a, b| self.cost[b.index].total_cmp(&self.cost[a.index]));
        let threads = self.workers.len();
        let mut load = vec![0.0f64; threads];
        let mut shares: Vec<Vec<Column>> = (0..threads).map(|_| Vec::new()).collect();
        // Ties start at a different worker for each row group, so that row groups of one
        // column still take turns.
        let first = (id as usize) % threads;
        for column in columns {
            let worker = (0..threads)
                .map(|k| (first + k) % threads)
                .min_by(|&a, &b| load[a].total_cmp(&load[b]))
                .unwrap_or(0);
            load[worker] += self.cost[column.index];
            shares[worker].push(column);
        }
        let mut workers = Vec::new();
        for (worker, columns) in shares.into_iter().enumerate() {
            if !columns.is_empty() {
                self.start(worker)?;
                self.send(worker, Job::Open { group: id, columns })?;
                workers.push(worker);
            }
        }
        Ok(OpenGroup {
            id,
            workers,
            rows: 0,
        })
    }

    /// Sends rows to an open row group; waits while the workers' queues hold the budget.
    pub async fn write(&self, group: &mut OpenGroup, batch: RecordBatch) -> DeltaResult<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let kib = (batch_bytes(&batch) / 1024).clamp(1, self.budget_kib) as u32;
        let permit = Arc::new(
            self.budget
                .clone()
                .acquire_many_owned(kib)
                .await
                .map_err(|e| DeltaError::Internal(format!("the encoder budget closed: {e}")))?,
        );
        group.rows += batch.num_rows();
        for &worker in &group.workers {
            self.send(
                worker,
                Job::Write {
                    group: group.id,
                    batch: batch.clone(),
                    _permit: permit.clone(),
                },
            )?;
        }
        Ok(())
    }

    /// Closes a row group: every row was sent.
    pub fn close(&self, group: OpenGroup) -> DeltaResult<ClosingGroup> {
        let mut replies = Vec::new();
        for &worker in &group.workers {
            let (reply, receiver) = oneshot::channel();
            self.send(
                worker,
                Job::Close {
                    group: group.id,
                    reply,
                },
            )?;
            replies.push(receiver);
        }
        let mut stats = StatsCollector::new(&self.stats_schema, &self.indexed);
        stats.add_rows(group.rows);
        Ok(ClosingGroup {
            replies,
            received: Vec::new(),
            rows: group.rows,
            stats,
        })
    }

    /// Takes the measured cost of an encoded row group's columns into account for the next
    /// row groups, and, when adaptive, which columns' dictionaries overflowed.
    pub fn learn(&mut self, encoded: &EncodedGroup) -> DeltaResult<()> {
        if encoded.rows == 0 {
            return Ok(());
        }
        if let Some(props) = &self.adaptive {
            let mut changed = false;
            for (leaf, chunk) in encoded.chunks.iter().enumerate() {
                if let Some(plain) = self.plain.get_mut(leaf) {
                    if !*plain && fell_back(&chunk.close().metadata) {
                        *plain = true;
                        changed = true;
                    }
                }
            }
            if changed {
                let mut builder = props.clone().into_builder();
                for (path, _) in self.leaf_paths.iter().zip(&self.plain).filter(|(_, p)| **p) {
                    builder = builder.set_column_dictionary_enabled(path.clone(), false);
                }
                self.factory = Arc::new(factory(&self.schema, builder.build())?);
            }
        }
        for &(index, nanos) in &encoded.nanos {
            if let Some(cost) = self.cost.get_mut(index) {
                let measured = nanos as f64 / encoded.rows as f64;
                *cost = if *cost > 0.0 && encoded.rows < 4096 {
                    // Too few rows to trust alone.
                    (*cost + measured) / 2.0
                } else {
                    measured.max(f64::MIN_POSITIVE)
                };
            }
        }
        Ok(())
    }

    /// Leaf columns written without a dictionary from now on.
    #[cfg(test)]
    fn plain_columns(&self) -> Vec<String> {
        self.leaf_paths
            .iter()
            .zip(&self.plain)
            .filter(|(_, p)| **p)
            .map(|(path, _)| path.string())
            .collect()
    }
}

impl ClosingGroup {
    /// Whether every worker has closed its share (then [`ClosingGroup::finish`] does not
    /// wait). A worker that stopped counts as answered: `finish` reports it.
    pub fn is_ready(&mut self) -> bool {
        let mut waiting = Vec::with_capacity(self.replies.len());
        for mut reply in std::mem::take(&mut self.replies) {
            match reply.try_recv() {
                Ok(Some(share)) => self.received.push(share),
                Ok(None) => waiting.push(reply),
                Err(_) => self.received.push(Err(stopped())),
            }
        }
        self.replies = waiting;
        self.replies.is_empty()
    }

    /// Waits for the workers and puts the row group's column chunks in file order.
    pub async fn finish(self) -> DeltaResult<EncodedGroup> {
        let ClosingGroup {
            replies,
            received,
            rows,
            mut stats,
        } = self;
        let mut columns = Vec::new();
        for share in received {
            columns.extend(share?.columns);
        }
        for reply in replies {
            let share = reply.await.map_err(|_| stopped())??;
            columns.extend(share.columns);
        }
        columns.sort_by_key(|(index, ..)| *index);
        let mut chunks = Vec::new();
        let mut nanos = Vec::with_capacity(columns.len());
        for (index, column_chunks, column_stats, took) in columns {
            stats.merge(&column_stats);
            chunks.extend(column_chunks);
            nanos.push((index, took));
        }
        let bytes = chunks
            .iter()
            .map(|c| usize::try_from(c.close().metadata.compressed_size()).unwrap_or(0))
            .sum();
        Ok(EncodedGroup {
            chunks,
            stats,
            bytes,
            rows,
            nanos,
        })
    }
}

impl Column {
    fn write(&mut self, schema: &SchemaRef, batch: &RecordBatch) -> DeltaResult<()> {
        let start = Instant::now();
        let field = schema.field(self.index);
        let leaves = compute_leaves(field, batch.column(self.index))?;
        if leaves.len() != self.writers.len() {
            return Err(DeltaError::Internal(format!(
                "column {} has {} leaf columns but {} writers",
                field.name(),
                leaves.len(),
                self.writers.len()
            )));
        }
        for (writer, leaf) in self.writers.iter_mut().zip(&leaves) {
            writer.write(leaf)?;
        }
        self.stats
            .update_column(batch, field.name())
            .map_err(DeltaError::Internal)?;
        self.nanos += start.elapsed().as_nanos() as u64;
        Ok(())
    }
}

fn stopped() -> DeltaError {
    DeltaError::Internal("an encoder thread stopped".into())
}

/// A worker: encodes its columns of each open row group, job after job.
fn work(jobs: mpsc::Receiver<Job>, schema: SchemaRef, cancelled: Arc<AtomicBool>) {
    let mut shares: HashMap<u64, Share> = HashMap::new();
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Open { group, columns } => {
                shares.insert(
                    group,
                    Share {
                        columns,
                        error: None,
                    },
                );
            }
            Job::Write { group, batch, .. } => {
                if cancelled.load(Ordering::Relaxed) {
                    continue;
                }
                if let Some(share) = shares.get_mut(&group) {
                    if share.error.is_none() {
                        for column in &mut share.columns {
                            if let Err(e) = column.write(&schema, &batch) {
                                share.error = Some(e);
                                break;
                            }
                        }
                    }
                }
            }
            Job::Close { group, reply } => {
                let closed = match shares.remove(&group) {
                    Some(Share { error: Some(e), .. }) => Err(e),
                    Some(Share { columns, .. }) => columns
                        .into_iter()
                        .map(|c| {
                            let chunks = c
                                .writers
                                .into_iter()
                                .map(|w| w.close())
                                .collect::<Result<Vec<_>, _>>()?;
                            Ok((c.index, chunks, c.stats, c.nanos))
                        })
                        .collect::<DeltaResult<Vec<_>>>()
                        .map(|columns| ClosedShare { columns }),
                    None => Err(DeltaError::Internal(format!(
                        "row group {group} is not open on this encoder thread"
                    ))),
                };
                // The writer may have given up on the row group already.
                let _ = reply.send(closed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, ListArray, StringArray, StructArray};
    use arrow::compute::concat_batches;
    use arrow::datatypes::{Field, Fields, Int64Type, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::writer::SerializedFileWriter;

    fn schema() -> SchemaRef {
        let inner = Fields::from(vec![Field::new("x", DataType::Int64, true)]);
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("s", DataType::Struct(inner), true),
            Field::new(
                "tags",
                DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
                true,
            ),
        ]))
    }

    /// Rows `start..start + n`, with nulls in every nullable column.
    fn rows(start: i64, n: i64) -> RecordBatch {
        let ids: Vec<i64> = (start..start + n).collect();
        let names: Vec<Option<String>> = ids
            .iter()
            .map(|i| (i % 7 != 0).then(|| format!("name-{}", i % 13)))
            .collect();
        let inner = Fields::from(vec![Field::new("x", DataType::Int64, true)]);
        let s = StructArray::new(
            inner,
            vec![Arc::new(Int64Array::from_iter(
                ids.iter().map(|i| (i % 5 != 0).then_some(-i)),
            ))],
            None,
        );
        let tags = ListArray::from_iter_primitive::<Int64Type, _, _>(
            ids.iter()
                .map(|&i| (i % 3 != 0).then(move || (0..i % 4).map(move |k| Some(i * 10 + k)))),
        );
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
                Arc::new(s),
                Arc::new(tags),
            ],
        )
        .unwrap()
    }

    fn encoders(threads: usize, queue_bytes: usize) -> ColumnEncoders {
        ColumnEncoders::try_new(
            WriterProperties::default(),
            true,
            schema(),
            schema(),
            IndexedColumns::First(-1),
            threads,
            queue_bytes,
        )
        .unwrap()
    }

    /// Appends an encoded row group to a file.
    fn append(file: &mut SerializedFileWriter<Vec<u8>>, encoded: EncodedGroup) {
        let mut writer = file.next_row_group().unwrap();
        for chunk in encoded.chunks {
            chunk.append_to_row_group(&mut writer).unwrap();
        }
        writer.close().unwrap();
    }

    /// The rows of a finished file, as one batch.
    fn read_back(file: SerializedFileWriter<Vec<u8>>) -> RecordBatch {
        let bytes = bytes::Bytes::from(file.into_inner().unwrap());
        let read: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        concat_batches(&schema(), &read).unwrap()
    }

    /// Row groups encoded batch by batch on several threads, through a queue smaller than one
    /// batch, read back as the rows sent, in order, with the statistics of one collector fed
    /// every row.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn row_groups_encoded_as_rows_arrive_read_back_in_order() {
        for threads in [1, 3] {
            let mut encoders = encoders(threads, 1024);
            let (mut file, _) = ArrowWriter::try_new(Vec::new(), schema(), None)
                .unwrap()
                .into_serialized_writer()
                .unwrap();
            let mut sent = Vec::new();
            let mut whole = StatsCollector::new(&schema(), &IndexedColumns::First(-1));
            let mut file_stats = StatsCollector::new(&schema(), &IndexedColumns::First(-1));
            let mut start = 0;
            for group_batches in [vec![100, 1, 3000], vec![5], vec![2048, 700]] {
                let mut group = encoders.open().unwrap();
                for n in group_batches {
                    let batch = rows(start, n);
                    start += n;
                    whole.update(&batch).unwrap();
                    sent.push(batch.clone());
                    encoders.write(&mut group, batch).await.unwrap();
                }
                let expected_rows = group.rows();
                let encoded = encoders.close(group).unwrap().finish().await.unwrap();
                assert_eq!(encoded.rows, expected_rows);
                encoders.learn(&encoded).unwrap();
                file_stats.merge(&encoded.stats);
                append(&mut file, encoded);
            }
            assert_eq!(read_back(file), concat_batches(&schema(), &sent).unwrap());
            assert_eq!(file_stats.finish(), whole.finish());
        }
    }

    /// A column whose dictionary overflowed in one row group is written plain in the next
    /// (the low-cardinality column keeps its dictionary), unless the settings are the
    /// caller's; the file reads back as written either way.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn overflowed_dictionaries_are_dropped_for_later_row_groups() {
        let props = WriterProperties::builder()
            .set_dictionary_page_size_limit(1024)
            .build();
        for adaptive in [true, false] {
            let mut encoders = ColumnEncoders::try_new(
                props.clone(),
                adaptive,
                schema(),
                schema(),
                IndexedColumns::First(-1),
                2,
                1 << 20,
            )
            .unwrap();
            let (mut file, _) = ArrowWriter::try_new(Vec::new(), schema(), Some(props.clone()))
                .unwrap()
                .into_serialized_writer()
                .unwrap();
            let mut groups = Vec::new();
            for start in [0, 3000] {
                let mut group = encoders.open().unwrap();
                encoders.write(&mut group, rows(start, 3000)).await.unwrap();
                let encoded = encoders.close(group).unwrap().finish().await.unwrap();
                encoders.learn(&encoded).unwrap();
                let dictionaries: Vec<(bool, bool)> = encoded
                    .chunks
                    .iter()
                    .map(|c| {
                        let meta = &c.close().metadata;
                        (meta.dictionary_page_offset().is_some(), fell_back(meta))
                    })
                    .collect();
                groups.push(dictionaries);
                append(&mut file, encoded);
            }
            // Leaves: id, name, s.x, tags.element. `id` overflows 1 KiB; `name` has 13 values.
            assert_eq!(groups[0][0], (true, true));
            assert_eq!(groups[0][1], (true, false));
            if adaptive {
                assert_eq!(groups[1][0], (false, false));
                assert!(encoders.plain_columns().contains(&"id".to_string()));
            } else {
                assert_eq!(groups[1][0], (true, true));
                assert!(encoders.plain_columns().is_empty());
            }
            assert_eq!(groups[1][1], (true, false));
            let sent = concat_batches(&schema(), &[rows(0, 3000), rows(3000, 3000)]).unwrap();
            assert_eq!(read_back(file), sent);
        }
    }

    /// Encoders dropped with batches still queued (a writer that failed elsewhere) stop
    /// without encoding them, and a row group closed before its workers saw any rows is
    /// an empty one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropped_encoders_stop_and_empty_groups_close() {
        let mut encoders = encoders(2, 64 * 1024 * 1024);
        let group = encoders.open().unwrap();
        let mut closing = encoders.close(group).unwrap();
        let encoded = loop {
            if closing.is_ready() {
                break closing.finish().await.unwrap();
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(encoded.rows, 0);
        let mut group = encoders.open().unwrap();
        for i in 0..50 {
            encoders
                .write(&mut group, rows(i * 1000, 1000))
                .await
                .unwrap();
        }
        drop(encoders);
    }
}
