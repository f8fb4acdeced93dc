//! Writing data files: record batches into parquet files, one set per partition, each
//! described by the `add` action that will commit it.
//!
//! Spec: "Data Files" (files under the table root, partitioned tables in Hive-style
//! directories, partition columns not stored in the files), "Add File and Remove File" (the
//! action's fields), "Per-file Statistics" ([`crate::write::stats`]), "Delta Data Type to
//! Parquet Type Mappings" (timestamps as int64 microseconds). Files get unique names
//! (`part-<uuid>.c000.snappy.parquet`), so writers never collide and a writer that dies leaves
//! only orphan files. Nothing here commits: the actions are returned for a transaction.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::datatypes::{Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::{json, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::storage::Storage;
use crate::write::partitions::{partition_directory, path_uri, serialize_partition_value};
use crate::write::stats::{IndexedColumns, StatsCollector};

/// Target size of one data file (bytes of encoded data buffered before a file is closed).
pub const TARGET_FILE_SIZE: usize = 128 * 1024 * 1024;

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
    /// Close a file once this many bytes are buffered.
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
        }
    }
}

/// Rows handed to one encoding step: batches are cut to this size, so that files roll over
/// at the target size and lanes share the work.
const SLICE_ROWS: usize = 128 * 1024;

/// Where an open file's bytes go: straight to a local file (memory stays bounded by the row
/// group being encoded), or a buffer put to an object store when the file is closed.
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

/// One open file of one partition.
struct OpenFile {
    writer: ArrowWriter<Sink>,
    stats: StatsCollector,
    partition_values: Vec<(String, Option<String>)>,
    /// The table-relative path the file gets.
    relative: String,
}

/// The files one encoding lane has open, by partition key.
type LaneFiles = BTreeMap<Vec<Option<String>>, OpenFile>;

/// One lane: its open files, or the blocking task encoding into them (which hands them back
/// with the files it filled).
enum Lane {
    Idle(LaneFiles),
    Busy(tokio::task::JoinHandle<DeltaResult<(LaneFiles, Vec<OpenFile>)>>),
}

/// Writes record batches of one table into data files. Slices of the input are encoded on
/// `available_parallelism` lanes, each a blocking task with its own open files (one per
/// partition), so large writes use every core and produce files of about the target size.
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
    lanes: Vec<Lane>,
    next_lane: usize,
    written: Vec<WrittenFile>,
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
        let file_schema = Arc::new(schema.project(&data_indexes)?);
        let lanes = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(DataFileWriter {
            storage,
            file_schema,
            stats_schema,
            partition_indexes,
            data_indexes,
            options,
            lanes: (0..lanes).map(|_| Lane::Idle(BTreeMap::new())).collect(),
            next_lane: 0,
            written: Vec::new(),
        })
    }

    /// Writes one batch, split by partition.
    pub async fn write(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // Rows of each partition (partitions in key order).
        let mut groups: BTreeMap<Vec<Option<String>>, Vec<u32>> = BTreeMap::new();
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
            let mut offset = 0;
            while offset < part.num_rows() {
                let len = SLICE_ROWS.min(part.num_rows() - offset);
                self.dispatch(key.clone(), part.slice(offset, len)).await?;
                offset += len;
            }
        }
        Ok(())
    }

    /// Hands a slice of one partition to the next lane, once that lane's previous slice is
    /// encoded (closing the files it filled).
    async fn dispatch(&mut self, key: Vec<Option<String>>, slice: RecordBatch) -> DeltaResult<()> {
        let lane = self.next_lane;
        self.next_lane = (self.next_lane + 1) % self.lanes.len();
        let mut files = self.settle(lane).await?;
        let (file_schema, options) = (self.file_schema.clone(), self.options.clone());
        let stats_schema = self.stats_schema.clone();
        let storage = self.storage.clone();
        self.lanes[lane] = Lane::Busy(tokio::task::spawn_blocking(move || {
            if !files.contains_key(&key) {
                let partition_values: Vec<(String, Option<String>)> = options
                    .partition_columns
                    .iter()
                    .cloned()
                    .zip(key.iter().cloned())
                    .collect();
                let relative = file_path(&options, &partition_values);
                let sink = match storage.file_location(&relative)? {
                    crate::storage::FileLocation::Local(path) => {
                        if let Some(dir) = path.parent() {
                            std::fs::create_dir_all(dir).map_err(|e| write_error(&relative, e))?;
                        }
                        let file = std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(&path)
                            .map_err(|e| write_error(&relative, e))?;
                        Sink::Local(std::io::BufWriter::with_capacity(1 << 20, file))
                    }
                    crate::storage::FileLocation::Store(_) => Sink::Memory(Vec::new()),
                };
                let props = WriterProperties::builder()
                    .set_compression(Compression::SNAPPY)
                    .build();
                let writer = ArrowWriter::try_new(sink, file_schema.clone(), Some(props))?;
                let stats = StatsCollector::new(&stats_schema, &options.indexed);
                files.insert(
                    key.clone(),
                    OpenFile {
                        writer,
                        stats,
                        partition_values,
                        relative,
                    },
                );
            }
            let mut full = Vec::new();
            if let Some(file) = files.get_mut(&key) {
                file.writer.write(&slice)?;
                file.stats.update(&slice).map_err(DeltaError::Internal)?;
                if file.writer.in_progress_size() + file.writer.bytes_written()
                    >= options.target_file_size
                {
                    full.extend(files.remove(&key));
                }
            }
            Ok((files, full))
        }));
        Ok(())
    }

    /// Waits for lane `lane`'s encoding, closes the files it filled, and returns its open
    /// files.
    async fn settle(&mut self, lane: usize) -> DeltaResult<LaneFiles> {
        let state = std::mem::replace(&mut self.lanes[lane], Lane::Idle(BTreeMap::new()));
        match state {
            Lane::Idle(files) => Ok(files),
            Lane::Busy(task) => {
                let (files, full) = task.await.map_err(|e| {
                    DeltaError::Internal(format!("encoding a data file failed: {e}"))
                })??;
                for file in full {
                    self.close(file).await?;
                }
                Ok(files)
            }
        }
    }

    async fn close(&mut self, file: OpenFile) -> DeltaResult<()> {
        let OpenFile {
            writer,
            stats,
            partition_values,
            relative,
        } = file;
        let name = relative.clone();
        let (sink, stats) = tokio::task::spawn_blocking(move || {
            let stats = stats.finish().to_string();
            let mut sink = writer.into_inner()?;
            std::io::Write::flush(&mut sink).map_err(|e| write_error(&name, e))?;
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

    /// Closes every open file; the written files in the order they were closed.
    pub async fn finish(mut self) -> DeltaResult<Vec<WrittenFile>> {
        for lane in 0..self.lanes.len() {
            let files = self.settle(lane).await?;
            for (_, file) in files {
                self.close(file).await?;
            }
        }
        Ok(self.written)
    }
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
