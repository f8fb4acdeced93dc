//! Writing data files: record batches into parquet files, one set per partition, each
//! described by the `add` action that will commit it.
//!
//! Spec: "Data Files" (files under the table root, partitioned tables in Hive-style
//! directories, partition columns not stored in the files), "Add File and Remove File" (the
//! action's fields), "Per-file Statistics" ([`crate::stats::collect`]), "Delta Data Type to
//! Parquet Type Mappings" (timestamps as int64 microseconds). Files get unique names
//! (`part-<uuid>.c000.snappy.parquet`), so writers never collide and a writer that dies leaves
//! only orphan files. Nothing here commits: the actions are returned for a transaction.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use serde_json::{json, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::stats::collect::{IndexedColumns, StatsCollector};
use crate::stats::float_footer;
use crate::storage::Storage;
use crate::write::encoder::{ClosingGroup, ColumnEncoders, EncodedGroup, OpenGroup};
use crate::write::partitions::{partition_directory, path_uri, serialize_partition_value};

/// Default target size of one data file, in bytes: 100 MiB, as the `deltalake` package
/// writes (its `target_file_size`). A file is closed once it reaches this size, and a row
/// group that would take it past it starts the next file.
pub const TARGET_FILE_SIZE: usize = 100 * 1024 * 1024;

/// Table property overriding [`TARGET_FILE_SIZE`] (bytes), as Delta Spark and `deltalake`
/// read it.
pub const TARGET_FILE_SIZE_PROPERTY: &str = "delta.targetFileSize";

/// The target file size of a write: the one asked for, else the table's
/// `delta.targetFileSize`, else [`TARGET_FILE_SIZE`].
pub fn target_file_size(
    requested: Option<u64>,
    config: &std::collections::BTreeMap<String, String>,
) -> DeltaResult<usize> {
    let size = match requested {
        Some(n) => n,
        None => match config.get(TARGET_FILE_SIZE_PROPERTY) {
            Some(text) => text.trim().parse::<u64>().map_err(|_| {
                DeltaError::InvalidArgument(format!(
                    "table property {TARGET_FILE_SIZE_PROPERTY} is not a byte count: {text:?}"
                ))
            })?,
            None => TARGET_FILE_SIZE as u64,
        },
    };
    if size == 0 {
        return Err(DeltaError::InvalidArgument(
            "the target file size must be positive".into(),
        ));
    }
    Ok(usize::try_from(size).unwrap_or(usize::MAX))
}

/// An `add` action for a written file.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenFile {
    /// The `path` URI (relative to the table root, percent-encoded).
    pub path: String,
    /// `partitionValues` (physical names).
    pub partition_values: BTreeMap<String, Option<String>>,
    pub size: u64,
    pub modification_time: i64,
    /// The `stats` JSON text.
    pub stats: String,
}

impl WrittenFile {
    /// The `cdc` action of a change data file ("Add CDC File").
    pub fn to_cdc_action(&self) -> Value {
        json!({"cdc": {
            "path": self.path,
            "partitionValues": self.partition_values,
            "size": self.size,
            "dataChange": false,
        }})
    }

    /// The `add` action, as JSON.
    pub fn to_action(&self, data_change: bool) -> Value {
        json!({"add": {
            "path": self.path,
            "partitionValues": self.partition_values,
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": data_change,
            "stats": self.stats,
        }})
    }
}

/// How a table's data files are written.
#[derive(Debug, Clone)]
pub struct DataFileOptions {
    /// Partition columns, in order (names as in the batches).
    pub partition_columns: Vec<String>,
    /// Which columns get statistics.
    pub indexed: IndexedColumns,
    /// Close a file once it holds this many bytes (see [`TARGET_FILE_SIZE`]).
    pub target_file_size: usize,
    /// A directory under the table root the files go to (`_change_data` for change data
    /// files), before the partition directories; the table root when `None`.
    pub directory: Option<String>,
    /// The start of file names: `part` for data files, `cdc` for change data files.
    pub file_prefix: &'static str,
    /// Write the partition columns' values into the files too, after the data columns
    /// (icebergCompatV1/V2: "Writer Requirements for IcebergCompatV2").
    pub materialize_partitions: bool,
    /// Top-level columns written without statistics (the hidden materialized row tracking
    /// columns, which are not part of the table's schema).
    pub unindexed: Vec<String>,
    /// How the parquet files are encoded (SNAPPY and the writer's defaults when `None`);
    /// column names as in the files.
    pub parquet: Option<std::sync::Arc<crate::write::parquet_options::ParquetSettings>>,
    /// Arrow bytes of rows queued for the encoder threads at most ([`QUEUE_BYTES`];
    /// [`REWRITE_QUEUE_BYTES`] for rows decoded from the table's own files, which are held
    /// by nothing but the queue, where a caller's rows are slices of data it holds anyway).
    pub encode_queue_bytes: usize,
}

impl DataFileOptions {
    /// Data files of a table with these partition columns and statistics columns.
    pub fn data(partition_columns: Vec<String>, indexed: IndexedColumns) -> Self {
        DataFileOptions {
            partition_columns,
            indexed,
            target_file_size: TARGET_FILE_SIZE,
            directory: None,
            file_prefix: "part",
            materialize_partitions: false,
            unindexed: Vec::new(),
            parquet: None,
            encode_queue_bytes: QUEUE_BYTES,
        }
    }

    /// Change data files ("Add CDC File": under `_change_data/`, no statistics needed).
    pub fn change_data(partition_columns: Vec<String>) -> Self {
        DataFileOptions {
            partition_columns,
            indexed: IndexedColumns::First(0),
            target_file_size: TARGET_FILE_SIZE,
            directory: Some("_change_data".into()),
            file_prefix: "cdc",
            materialize_partitions: false,
            unindexed: Vec::new(),
            parquet: None,
            encode_queue_bytes: QUEUE_BYTES,
        }
    }
}

/// See [`DataFileOptions::encode_queue_bytes`]: enough to keep the encoder threads busy while
/// the caller cuts the next batches (measured on the 10M-row append: 2 MiB took 1.2 s
/// instead of 0.9 s).
pub const QUEUE_BYTES: usize = 32 * 1024 * 1024;
/// See [`DataFileOptions::encode_queue_bytes`]: rewrites read their rows as fast as they are
/// encoded, so a short queue costs no time (measured: OPTIMIZE compaction of 10M rows peaked
/// at 146 MB instead of 197 MB, no slower).
pub const REWRITE_QUEUE_BYTES: usize = 2 * 1024 * 1024;

/// Rows of one row group at most (the parquet crate's default).
const ROW_GROUP_ROWS: usize = 1024 * 1024;
/// Bytes (Arrow memory) of one row group at most, below the target file size.
const ROW_GROUP_BYTES: usize = 128 * 1024 * 1024;
/// Rows of the open row groups (Arrow bytes, sent to the encoders or not), over all
/// partitions, before the largest partition's row group is closed early (smaller) to bound
/// memory.
const PENDING_BYTES: usize = 512 * 1024 * 1024;
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

/// Where an open file's bytes go: straight to a local file (memory stays bounded by the row
/// groups being encoded), or a buffer put to an object store when the file is closed.
enum Sink {
    Local(std::io::BufWriter<std::fs::File>),
    Memory(Vec<u8>),
}

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Local(f) => f.write(buf),
            Sink::Memory(v) => v.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Local(f) => f.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}

/// The file a partition's rows are going to.
struct OpenFile {
    writer: SerializedFileWriter<Sink>,
    stats: StatsCollector,
    /// The table-relative path the file gets.
    relative: String,
    row_groups: usize,
}

/// One partition of the input: its current row group, and its open file.
struct Partition {
    partition_values: Vec<(String, Option<String>)>,
    /// Rows of the current row group not yet sent to the encoders.
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    pending_bytes: usize,
    /// The current row group, once rows were sent to the encoders.
    group: Option<OpenGroup>,
    /// Rows and Arrow bytes of the current row group, sent or not.
    rows: usize,
    bytes: usize,
    file: Option<OpenFile>,
}

type Key = Vec<Option<String>>;

/// Writes record batches of one table into data files.
///
/// The rows of each partition go to one file at a time, in input order, until the file
/// reaches the target size ("Data Files"; a sorted input gives files with disjoint key
/// ranges, in order). Parallelism never reorders rows: a partition's rows go to its current
/// row group in order, encoded as they arrive by [`ColumnEncoders`] (columns spread over
/// `crate::available_threads()` threads), and row groups are appended to the partition's file in
/// the order they were completed. A row group that would take a file past the target size
/// starts the next file.
pub struct DataFileWriter {
    storage: Storage,
    /// The schema of the files: the batches' schema without the partition columns (or with
    /// them moved last, when materialized).
    file_schema: SchemaRef,
    /// The file columns that get statistics.
    stats_schema: SchemaRef,
    /// Column indexes of the partition columns in the input batches.
    partition_indexes: Vec<usize>,
    /// Column indexes of the stored columns in the input batches.
    data_indexes: Vec<usize>,
    options: DataFileOptions,
    props: Arc<WriterProperties>,
    /// Encodes the row groups (the same column writers for every file of this schema).
    encoders: ColumnEncoders,
    /// Row groups open on the encoders.
    open_groups: usize,
    /// Whether the files hold float columns, whose statistics need
    /// [`crate::stats::float_footer`].
    floats: bool,
    partitions: BTreeMap<Key, Partition>,
    /// Arrow bytes of the open row groups' rows (see [`PENDING_BYTES`]).
    pending_bytes: usize,
    /// Row groups whose rows were all sent to the encoders, in the order they were completed.
    in_flight: VecDeque<(Key, ClosingGroup)>,
    /// Rows of one row group at most ([`ROW_GROUP_ROWS`] unless the settings say otherwise).
    row_group_rows: usize,
    written: Vec<WrittenFile>,
}

fn has_floats(dt: &DataType) -> bool {
    match dt {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => true,
        DataType::Struct(fields) => fields.iter().any(|f| has_floats(f.data_type())),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_floats(f.data_type()),
        _ => false,
    }
}

/// Arrow memory of the rows of `batch` (slices count only their part of shared buffers).
pub(crate) fn batch_bytes(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum()
}

impl DataFileWriter {
    /// A writer of batches of `schema` (the table's columns, names as written).
    pub fn try_new(
        storage: Storage,
        schema: &Schema,
        options: DataFileOptions,
    ) -> DeltaResult<Self> {
        let mut partition_indexes = Vec::new();
        for p in &options.partition_columns {
            let (i, _) = schema.column_with_name(p).ok_or_else(|| {
                DeltaError::InvalidArgument(format!("partition column {p:?} is not in the data"))
            })?;
            partition_indexes.push(i);
        }
        let mut data_indexes: Vec<usize> = (0..schema.fields().len())
            .filter(|i| !partition_indexes.contains(i))
            .collect();
        let stats_schema = Arc::new(Schema::new(
            data_indexes
                .iter()
                .map(|&i| schema.fields()[i].clone())
                .filter(|f| !options.unindexed.contains(f.name()))
                .collect::<Vec<_>>(),
        ));
        if options.materialize_partitions {
            data_indexes.extend(&partition_indexes);
        }
        if data_indexes.is_empty() {
            // A parquet file without columns cannot even record its row count (Delta Spark
            // refuses such tables too: "Cannot use all columns for partition columns").
            return Err(DeltaError::InvalidArgument(
                if partition_indexes.is_empty() {
                    "the data has no columns".into()
                } else {
                    "cannot use all columns as partition columns: a data file must store at least \
                 one column"
                        .into()
                },
            ));
        }
        if options.target_file_size == 0 {
            return Err(DeltaError::InvalidArgument(
                "the target file size must be positive".into(),
            ));
        }
        let file_schema = Arc::new(schema.project(&data_indexes)?);
        let (props, row_group_rows) = match &options.parquet {
            Some(settings) => {
                let leaves: Vec<String> = parquet::arrow::ArrowSchemaConverter::new()
                    .convert(&file_schema)?
                    .columns()
                    .iter()
                    .map(|c| c.path().string())
                    .collect();
                (
                    settings.writer_properties(&leaves)?,
                    settings.row_group_rows()?.unwrap_or(ROW_GROUP_ROWS),
                )
            }
            None => (
                WriterProperties::builder()
                    .set_compression(Compression::SNAPPY)
                    .build(),
                ROW_GROUP_ROWS,
            ),
        };
        let floats = file_schema
            .fields()
            .iter()
            .any(|f| has_floats(f.data_type()));
        let parallelism = crate::available_threads();
        // Dictionaries that overflow are dropped for later row groups unless the caller's
        // settings say how dictionaries are used.
        let adaptive = options
            .parquet
            .as_ref()
            .is_none_or(|p| !p.sets_dictionary());
        let encoders = ColumnEncoders::try_new(
            props.clone(),
            adaptive,
            file_schema.clone(),
            stats_schema.clone(),
            options.indexed.clone(),
            parallelism,
            options.encode_queue_bytes,
        )?;
        Ok(DataFileWriter {
            storage,
            file_schema,
            stats_schema,
            partition_indexes,
            data_indexes,
            options,
            props: Arc::new(props),
            encoders,
            open_groups: 0,
            floats,
            partitions: BTreeMap::new(),
            pending_bytes: 0,
            in_flight: VecDeque::new(),
            row_group_rows,
            written: Vec::new(),
        })
    }

    /// Writes one batch, split by partition.
    pub async fn write(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        // Every batch written (a write's input, a rewrite's rows) is a point where an
        // interrupted operation stops (`crate::interrupt`).
        crate::interrupt::check()?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // Rows of each partition (partitions in key order, rows in input order).
        let mut groups: BTreeMap<Key, Vec<u32>> = BTreeMap::new();
        if self.partition_indexes.is_empty() {
            groups.insert(Vec::new(), Vec::new());
        } else {
            let columns: Vec<&ArrayRef> = self
                .partition_indexes
                .iter()
                .map(|&i| batch.column(i))
                .collect();
            for row in 0..batch.num_rows() {
                let key = columns
                    .iter()
                    .map(|c| serialize_partition_value(c, row))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(DeltaError::InvalidArgument)?;
                groups.entry(key).or_default().push(row as u32);
            }
        }
        let data = batch.project(&self.data_indexes)?;
        let whole = groups.len() == 1;
        for (key, rows) in groups {
            let part = if whole {
                data.clone()
            } else {
                take_record_batch(&data, &UInt32Array::from(rows))?
            };
            self.push(key, part).await?;
        }
        Ok(())
    }

    /// The row group size of this writer, in Arrow bytes.
    fn group_bytes(&self) -> usize {
        self.options.target_file_size.min(ROW_GROUP_BYTES)
    }

    /// Queues rows of one partition, cutting row groups as they fill.
    async fn push(&mut self, key: Key, mut batch: RecordBatch) -> DeltaResult<()> {
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
    async fn cut(&mut self, key: &Key) -> DeltaResult<()> {
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
    async fn append_oldest(&mut self) -> DeltaResult<()> {
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

    /// A new file for partition `key`.
    fn open_file(&self, key: &Key) -> DeltaResult<OpenFile> {
        let partition_values = self
            .partitions
            .get(key)
            .map(|p| p.partition_values.clone())
            .unwrap_or_default();
        let relative = file_path(&self.options, &partition_values);
        // Removed again if the operation fails or is interrupted before its commit point.
        crate::interrupt::created(&self.storage, &relative);
        let sink = match self.storage.file_location(&relative)? {
            crate::storage::FileLocation::Local(path) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| write_error(&relative, e))?;
                }
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .read(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(|e| write_error(&relative, e))?;
                Sink::Local(std::io::BufWriter::with_capacity(1 << 20, file))
            }
            crate::storage::FileLocation::Store(_) => Sink::Memory(Vec::new()),
        };
        let (writer, _) =
            ArrowWriter::try_new(sink, self.file_schema.clone(), Some((*self.props).clone()))?
                .into_serialized_writer()?;
        Ok(OpenFile {
            writer,
            stats: StatsCollector::new(&self.stats_schema, &self.options.indexed),
            relative,
            row_groups: 0,
        })
    }

    /// Closes the open file of partition `key`, if any.
    async fn close_file(&mut self, key: &Key) -> DeltaResult<()> {
        let Some(partition) = self.partitions.get_mut(key) else {
            return Ok(());
        };
        let Some(file) = partition.file.take() else {
            return Ok(());
        };
        let partition_values = partition.partition_values.clone();
        let OpenFile {
            writer,
            stats,
            relative,
            ..
        } = file;
        let name = relative.clone();
        let floats = self.floats;
        let (sink, stats) = tokio::task::spawn_blocking(move || {
            let stats = stats.finish().to_string();
            let mut sink = writer.into_inner()?;
            std::io::Write::flush(&mut sink).map_err(|e| write_error(&name, e))?;
            if floats {
                fix_float_statistics(&mut sink, &name)?;
            }
            Ok::<_, DeltaError>((sink, stats))
        })
        .await
        .map_err(|e| DeltaError::Internal(format!("closing a data file failed: {e}")))??;
        let size = match sink {
            Sink::Local(file) => {
                let file = file
                    .into_inner()
                    .map_err(|e| write_error(&relative, e.into_error()))?;
                file.metadata()
                    .map_err(|e| write_error(&relative, e))?
                    .len()
            }
            Sink::Memory(bytes) => {
                let size = bytes.len() as u64;
                self.storage.put_file(&relative, bytes.into()).await?;
                size
            }
        };
        let modification_time = chrono::Utc::now().timestamp_millis();
        self.written.push(WrittenFile {
            path: path_uri(&relative),
            partition_values: partition_values.into_iter().collect(),
            size,
            modification_time,
            stats,
        });
        Ok(())
    }

    /// Writes what is pending and closes every file; the written files in the order they
    /// were closed (each partition's in the order of its rows).
    pub async fn finish(mut self) -> DeltaResult<Vec<WrittenFile>> {
        let keys: Vec<Key> = self.partitions.keys().cloned().collect();
        for key in &keys {
            self.cut(key).await?;
        }
        while !self.in_flight.is_empty() {
            self.append_oldest().await?;
        }
        for key in &keys {
            self.close_file(key).await?;
        }
        Ok(self.written)
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

/// Rewrites a finished file's footer so that its float statistics are usable by every reader
/// ([`crate::stats::float_footer`]).
fn fix_float_statistics(sink: &mut Sink, name: &str) -> DeltaResult<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let bad = |e: String| DeltaError::Internal(format!("rewriting the footer of {name}: {e}"));
    match sink {
        Sink::Memory(bytes) => {
            float_footer::rewrite_file(bytes).map_err(bad)?;
        }
        Sink::Local(writer) => {
            let file = writer.get_mut();
            let len = file
                .seek(SeekFrom::End(0))
                .map_err(|e| write_error(name, e))?;
            let mut tail8 = [0u8; 8];
            file.seek(SeekFrom::Start(len.saturating_sub(8)))
                .map_err(|e| write_error(name, e))?;
            file.read_exact(&mut tail8)
                .map_err(|e| write_error(name, e))?;
            let meta_len = u64::from(u32::from_le_bytes([tail8[0], tail8[1], tail8[2], tail8[3]]));
            let start = len
                .checked_sub(8 + meta_len)
                .ok_or_else(|| bad("the footer length exceeds the file".into()))?;
            let mut tail = vec![0u8; (len - start) as usize];
            file.seek(SeekFrom::Start(start))
                .map_err(|e| write_error(name, e))?;
            file.read_exact(&mut tail)
                .map_err(|e| write_error(name, e))?;
            if !float_footer::rewrite_file(&mut tail).map_err(bad)? {
                return Ok(());
            }
            file.set_len(start).map_err(|e| write_error(name, e))?;
            file.seek(SeekFrom::Start(start))
                .map_err(|e| write_error(name, e))?;
            file.write_all(&tail).map_err(|e| write_error(name, e))?;
            file.flush().map_err(|e| write_error(name, e))?;
        }
    }
    Ok(())
}

/// The table-relative path of a new file: `[<directory>/][<partition dirs>/]<prefix>-<uuid>...`.
fn file_path(options: &DataFileOptions, partition_values: &[(String, Option<String>)]) -> String {
    let name = format!(
        "{}-{}.c000.snappy.parquet",
        options.file_prefix,
        uuid::Uuid::new_v4()
    );
    let mut relative = if partition_values.is_empty() {
        name
    } else {
        format!("{}/{name}", partition_directory(partition_values))
    };
    if let Some(dir) = &options.directory {
        relative = format!("{dir}/{relative}");
    }
    relative
}

fn write_error(path: &str, e: std::io::Error) -> DeltaError {
    DeltaError::Storage(object_store::Error::Generic {
        store: "LocalFileSystem",
        source: format!("writing {path}: {e}").into(),
    })
}
