//! Reading log files into Arrow batches of the canonical action schema.
//!
//! Spec: "Delta Log Entries" (newline-delimited JSON commits), "Log Compaction Files",
//! "Checkpoints" and "Checkpoint Schema" (actions as struct columns of parquet; missing columns
//! null), "V2 Spec" and "Sidecar Files" (file actions of a V2 checkpoint may live in
//! `_delta_log/_sidecars/`). Only the columns replay needs are read from parquet.

use std::borrow::Cow;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, StructArray};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use futures::stream::{self, StreamExt, TryStreamExt};
use object_store::path::Path;
use parquet::arrow::arrow_reader::{
    ArrowReaderBuilder, ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use parquet::schema::types::SchemaDescriptor;

use crate::conform::conform_batch;
use crate::error::{DeltaError, DeltaResult};
use crate::files::without_field;
use crate::log::actions::{self, decode_json_actions, names};
use crate::log::add_lines::{add_field, split_commit};
use crate::log::file_keys::HashedKeys;
use crate::log::path::CheckpointFormat;
use crate::log::segment::{CheckpointFiles, Delta, LogFile};
#[cfg(unix)]
use crate::parquet_io::LocalChunkReader;
use crate::parquet_io::StoreFileReader;
use crate::stats::parse::StatsSchema;
use crate::storage::Storage;

/// How many log files are fetched and decoded at once.
const CONCURRENCY: usize = 16;
/// Rows per batch when decoding checkpoint parquet.
const PARQUET_BATCH_ROWS: usize = 16 * 1024;

/// The decoded actions of one commit or compaction.
#[derive(Debug)]
pub struct DeltaBatches {
    /// The newest version the file covers.
    pub version: u64,
    /// Batches of [`actions::commit_schema`]; when statistics were parsed, the `add` column
    /// lacks its `stats` field.
    pub batches: Vec<RecordBatch>,
    /// Per batch, the statistics parsed from its `add` rows (row-aligned), when a statistics
    /// schema was given.
    pub stats: Vec<Option<StructArray>>,
    /// Per batch, the hashed logical-file keys of its `add` rows (row-aligned), when the
    /// decoder computed them ([`crate::log::add_lines`]).
    pub add_keys: Vec<Option<HashedKeys>>,
}

/// How the lines of a log file are ordered relative to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineOrder {
    /// A commit: its actions are one version and not ordered ("Action Reconciliation" allows
    /// at most one file action per logical file in it), so `add` lines may take the fast path.
    Unordered,
    /// A log compaction file, read as a sequence of actions from newest to oldest: its first
    /// action for a logical file `(path, deletionVector.uniqueId)`, an `appId`, a domain, or
    /// its first `protocol` / `metaData`, is the newest ("Action Reconciliation": first seen
    /// wins, as in a newest-first replay of the commits). The spec's compactions are
    /// reconciled (one action per key, so their order does not matter), but the files
    /// Databricks Runtime writes were measured to list their commits newest first, each
    /// commit's actions in their original order, unreconciled (an `add` and a `remove` of one
    /// file both present) and with `cdc` lines; replayed first-seen-wins in file order they
    /// give exactly the state of the commits they replace ("Log Compaction Files"), replayed
    /// last-line-wins they do not. Decoded by the general decoder, rows in file order (a
    /// large file in line-aligned chunks on several threads), so that `add` and `remove` rows
    /// reach replay in one sequence.
    NewestFirst,
}

/// Decodes one commit or compaction file: `add` lines through the fast path, the other lines
/// through the general JSON decoder (statistics split off when a schema is given). Files whose
/// lines are ordered ([`LineOrder::NewestFirst`]) are decoded whole by the general decoder,
/// rows in file order.
pub(crate) fn decode_delta(
    bytes: &[u8],
    stats: Option<&StatsSchema>,
    name: &str,
    version: u64,
    order: LineOrder,
) -> DeltaResult<DeltaBatches> {
    let mut out = DeltaBatches {
        version,
        batches: Vec::new(),
        stats: Vec::new(),
        add_keys: Vec::new(),
    };
    let rest = match order {
        LineOrder::NewestFirst => Cow::Borrowed(bytes),
        LineOrder::Unordered => {
            let split = split_commit(bytes, stats)?;
            if let Some(adds) = split.adds {
                let schema = Arc::new(Schema::new(vec![add_field(&adds)]));
                out.batches.push(RecordBatch::try_new(
                    schema,
                    vec![Arc::new(adds) as ArrayRef],
                )?);
                out.stats.push(split.stats);
                out.add_keys.push(Some(split.keys));
            }
            Cow::Owned(split.rest)
        }
    };
    if rest.is_empty() {
        return Ok(out);
    }
    let min_chunk = match order {
        LineOrder::NewestFirst => PARALLEL_CHUNK_BYTES,
        LineOrder::Unordered => usize::MAX,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (batch, parsed) in decode_lines_in_order(&rest, stats, name, version, min_chunk, threads)? {
        out.batches.push(batch);
        out.stats.push(parsed);
        out.add_keys.push(None);
    }
    Ok(out)
}

/// A compaction is decoded in line-aligned chunks of at least this many bytes, one thread
/// each (commits are decoded many at once instead).
const PARALLEL_CHUNK_BYTES: usize = 4 << 20;

/// Decodes the lines of `bytes` (statistics split off when a schema is given), batches in file
/// order. Text of at least two `min_chunk` is cut at line ends into chunks (at most
/// `threads`) decoded on scoped threads and their batches concatenated in order; if any chunk
/// fails, the whole text is decoded again serially, so that the error counts rows from the
/// start of the file.
fn decode_lines_in_order(
    bytes: &[u8],
    stats: Option<&StatsSchema>,
    name: &str,
    version: u64,
    min_chunk: usize,
    threads: usize,
) -> DeltaResult<Vec<(RecordBatch, Option<StructArray>)>> {
    let decode = |text: &[u8]| -> DeltaResult<Vec<(RecordBatch, Option<StructArray>)>> {
        decode_json_actions(text, &actions::commit_schema(), name, Some(version))?
            .into_iter()
            .map(|batch| match stats {
                Some(stats) => split_stats(batch, stats),
                None => Ok((batch, None)),
            })
            .collect()
    };
    let chunks = (bytes.len() / min_chunk.max(1)).min(threads);
    if chunks < 2 {
        return decode(bytes);
    }
    // Chunk starts: line starts near equal shares of the text.
    let mut bounds = vec![0];
    for i in 1..chunks {
        let target = (bytes.len() / chunks * i).max(bounds[bounds.len() - 1]);
        match memchr::memchr(b'\n', &bytes[target..]) {
            Some(at) if target + at + 1 < bytes.len() => bounds.push(target + at + 1),
            _ => break,
        }
    }
    bounds.push(bytes.len());
    bounds.dedup();
    let decode = &decode;
    let parts: Vec<DeltaResult<_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let text = &bytes[w[0]..w[1]];
                scope.spawn(move || decode(text))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(DeltaError::Internal("decoding thread failed".into())))
            })
            .collect()
    });
    let mut out = Vec::new();
    for part in parts {
        match part {
            Ok(batches) => out.extend(batches),
            Err(_) => return decode(bytes),
        }
    }
    Ok(out)
}

/// Parses the statistics of the `add` column of `batch` and drops their JSON text.
fn split_stats(
    batch: RecordBatch,
    stats: &StatsSchema,
) -> DeltaResult<(RecordBatch, Option<StructArray>)> {
    let Some(index) = batch.schema().index_of(names::ADD).ok() else {
        return Ok((batch, None));
    };
    let add = batch.column(index).as_struct();
    if add.null_count() == add.len() {
        return Ok((batch, None));
    }
    let parsed = stats.parse(add.column_by_name("stats"), None)?;
    let rest = without_field(add, "stats");
    let mut columns = batch.columns().to_vec();
    let mut fields: Vec<_> = batch.schema().fields().iter().cloned().collect();
    fields[index] = std::sync::Arc::new(arrow::datatypes::Field::new(
        names::ADD,
        rest.data_type().clone(),
        true,
    ));
    columns[index] = std::sync::Arc::new(rest);
    let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(fields));
    Ok((RecordBatch::try_new(schema, columns)?, Some(parsed)))
}

/// Reads and decodes `deltas` concurrently, yielding them in the order given (replay passes
/// them newest first and consumes each as it arrives, so at most a window of decoded files is
/// held at once).
///
/// With a statistics schema, each file's `add` statistics are parsed in the decoding task and
/// their JSON text dropped at once.
pub fn delta_stream(
    storage: &Storage,
    deltas: Vec<Delta>,
    stats: Option<Arc<StatsSchema>>,
) -> impl futures::Stream<Item = DeltaResult<(Delta, DeltaBatches)>> + Send + '_ {
    stream::iter(deltas)
        .map(move |delta| {
            let storage = storage.clone();
            let stats = stats.clone();
            async move {
                let file = delta.file();
                let name = format!("_delta_log/{}", file.name);
                let version = delta.end_version();
                let order = match delta {
                    Delta::Commit { .. } => LineOrder::Unordered,
                    Delta::Compaction { .. } => LineOrder::NewestFirst,
                };
                // Decoded where it is read (mapped when local): nothing keeps the file's bytes.
                let decoded = file
                    .scan(&storage, move |bytes| {
                        decode_delta(bytes, stats.as_deref(), &name, version, order)
                    })
                    .await
                    .map_err(|e| log_file_error(e, file, Some(version)))??;
                Ok::<_, DeltaError>((delta, decoded))
            }
        })
        .buffered(CONCURRENCY)
}

/// The `protocol` and `metaData` actions of `deltas` (newest first): only the lines that
/// mention them are decoded, and reading stops at the newest of each. This first, cheap pass
/// gives replay the schema its statistics are parsed with.
pub async fn protocol_and_metadata(
    storage: &Storage,
    deltas: Vec<Delta>,
) -> DeltaResult<crate::log::replay::Reconciler> {
    use crate::log::replay::{Origin, Reconciler};
    let mut found = Reconciler::default();
    let mut files = std::pin::pin!(stream::iter(deltas)
        .map(|delta| {
            let storage = storage.clone();
            async move {
                // Searched where it is read (mapped when local), files in parallel.
                let lines = delta
                    .file()
                    .scan(&storage, |bytes| {
                        lines_mentioning(bytes, &[b"\"protocol\"", b"\"metaData\""])
                    })
                    .await
                    .map_err(|e| log_file_error(e, delta.file(), Some(delta.end_version())))?;
                Ok::<_, DeltaError>((delta, lines))
            }
        })
        .buffered(CONCURRENCY));
    while let Some((delta, lines)) = files.try_next().await? {
        if lines.is_empty() {
            continue;
        }
        let origin = Origin {
            file: format!("_delta_log/{}", delta.file().name),
            version: delta.end_version(),
        };
        let batches = decode_json_actions(
            &lines,
            &actions::commit_schema(),
            &origin.file,
            Some(origin.version),
        )?;
        // A compaction's lines too, in file order: its first `protocol` / `metaData` is the
        // newest (`LineOrder::NewestFirst`).
        for b in &batches {
            found.apply_non_file_actions(b, &origin)?;
        }
        if found.protocol.is_some() && found.metadata.is_some() {
            break;
        }
    }
    Ok(found)
}

/// The `commitInfo` lines of commit `file` (version `version`), decoded: what a reader needs of
/// a commit that a log compaction replaced (its in-commit timestamp, "In-Commit Timestamps").
pub async fn commit_info_batches(
    storage: &Storage,
    file: &LogFile,
    version: u64,
) -> DeltaResult<Vec<RecordBatch>> {
    let lines = file
        .scan(storage, |bytes| {
            lines_mentioning(bytes, &[b"\"commitInfo\""])
        })
        .await
        .map_err(|e| log_file_error(e, file, Some(version)))?;
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    let name = format!("_delta_log/{}", file.name);
    decode_json_actions(&lines, &actions::commit_schema(), &name, Some(version))
}

/// Line prefixes of the file actions that make up the bulk of a log. Such a line holds no other
/// action ("Delta Log Entries": every action is a single-line JSON document; a line holding
/// two is rejected by [`decode_json_actions`] when the file is replayed), so it is skipped
/// without being searched.
const FILE_ACTION_PREFIXES: [&[u8]; 2] = [b"{\"add\":{", b"{\"remove\":{"];

/// The lines of `text` that contain any of `needles`, joined by newlines (lines that start as
/// file actions are not searched).
fn lines_mentioning(text: &[u8], needles: &[&[u8]]) -> Vec<u8> {
    let finders: Vec<_> = needles.iter().map(memchr::memmem::Finder::new).collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
        let line = &text[start..end];
        start = end + 1;
        if FILE_ACTION_PREFIXES.iter().any(|p| line.starts_with(p)) {
            continue;
        }
        if finders.iter().any(|f| f.find(line).is_some()) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

/// Reads a whole listed log file of `version`.
async fn fetch(storage: &Storage, file: &LogFile, version: u64) -> DeltaResult<bytes::Bytes> {
    storage
        .get(&file.meta.location)
        .await
        .map_err(|e| log_file_error(e, file, Some(version)))
}

/// Maps a storage error while reading a listed log file: a file that vanished between listing
/// and reading is reported as a log error naming it.
pub(crate) fn log_file_error(
    e: object_store::Error,
    file: &LogFile,
    version: Option<u64>,
) -> DeltaError {
    match e {
        object_store::Error::NotFound { .. } if file.name.starts_with("_staged_commits/") => {
            DeltaError::corrupt(
                format!("_delta_log/{}", file.name),
                version,
                "the catalog ratified this staged commit, but the file could not be read                  (catalogManaged RFC: \"Staged commit\")",
            )
        }
        object_store::Error::NotFound { .. } => DeltaError::corrupt(
            format!("_delta_log/{}", file.name),
            version,
            "the file was listed but could not be read (removed concurrently?)",
        ),
        other => DeltaError::Storage(other),
    }
}

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
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
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
mod tests {
    use super::*;
    use arrow::datatypes::{Field, Fields, Schema};
    use parquet::arrow::ArrowSchemaConverter;
    use std::sync::Arc;

    #[test]
    fn compaction_lines_keep_file_order() {
        // A compaction is decoded whole, rows in file order (first line first), `add` and
        // `remove` rows in one batch; a commit's `add` lines take the fast path.
        let text = br#"{"remove":{"path":"a","deletionTimestamp":2,"dataChange":true}}
{"cdc":{"path":"_change_data/c","partitionValues":{},"size":1,"dataChange":false}}
{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
{"add":{"path":"b","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
"#;
        let decoded = decode_delta(text, None, "x", 3, LineOrder::NewestFirst).unwrap();
        assert_eq!(decoded.batches.len(), 1);
        let batch = &decoded.batches[0];
        let remove = batch.column_by_name(names::REMOVE).unwrap();
        let add = batch.column_by_name(names::ADD).unwrap();
        let kinds: Vec<_> = (0..batch.num_rows())
            .map(|r| match (add.is_valid(r), remove.is_valid(r)) {
                (true, _) => "add",
                (_, true) => "remove",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["remove", "other", "add", "add"]);
        assert!(decoded.add_keys.iter().all(Option::is_none));
        let commit = decode_delta(text, None, "x", 3, LineOrder::Unordered).unwrap();
        assert!(
            commit.add_keys[0].is_some(),
            "a commit's adds take the fast path"
        );
    }

    #[test]
    fn chunked_decoding_keeps_rows_in_order() {
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!(
                "{{\"add\":{{\"path\":\"f{i}\",\"partitionValues\":{{}},\"size\":{i},\"modificationTime\":1,\"dataChange\":true}}}}\n"
            ));
            if i % 7 == 0 {
                text.push_str(&format!(
                    "{{\"remove\":{{\"path\":\"f{i}\",\"deletionTimestamp\":{i},\"dataChange\":true}}}}\n"
                ));
            }
        }
        let decode = |min_chunk, threads| {
            let parts =
                decode_lines_in_order(text.as_bytes(), None, "x", 1, min_chunk, threads).unwrap();
            let batches: Vec<_> = parts.into_iter().map(|(b, _)| b).collect();
            arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
        };
        let serial = decode(usize::MAX, 1);
        assert_eq!(serial.num_rows(), 400 + 58);
        for (min_chunk, threads) in [(64, 4), (1000, 3), (5000, 2), (1, 64)] {
            assert_eq!(decode(min_chunk, threads), serial, "{min_chunk} {threads}");
        }
        // An error in a later chunk counts rows from the start of the file.
        let bad = format!("{text}{{\"add\":{{\"path\":\"z\"}},\"txn\":{{\"appId\":\"a\",\"version\":1}}}}\n{text}");
        let err = |min_chunk, threads| {
            decode_lines_in_order(bad.as_bytes(), None, "x", 1, min_chunk, threads)
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(usize::MAX, 1).contains("JSON object 459 "),
            "{}",
            err(usize::MAX, 1)
        );
        assert_eq!(err(64, 4), err(usize::MAX, 1));
    }

    #[test]
    fn lines_mentioning_keeps_whole_matching_lines_once() {
        let text = b"{\"commitInfo\":{}}\n{\"protocol\":{\"metaData\":1}}\n{\"add\":{}}\n{\"metaData\":{}}";
        let out = lines_mentioning(text, &[b"\"protocol\"", b"\"metaData\""]);
        assert_eq!(
            out,
            b"{\"protocol\":{\"metaData\":1}}\n{\"metaData\":{}}\n".to_vec()
        );
        assert!(lines_mentioning(b"{\"add\":{}}", &[b"\"protocol\""]).is_empty());
        // File-action lines are not searched; other shapes of a line are.
        let text = b"{\"add\":{\"path\":\"protocol\"}}\n{\"remove\":{\"metaData\":1}}\n{\"add\":null,\"metaData\":{}}\n{ \"protocol\":{}}\n";
        assert_eq!(
            lines_mentioning(text, &[b"\"protocol\"", b"\"metaData\""]),
            b"{\"add\":null,\"metaData\":{}}\n{ \"protocol\":{}}\n".to_vec()
        );
    }

    #[test]
    fn header_rows_are_the_rows_with_an_action() {
        let schema = actions::checkpoint_header_schema();
        let text = br#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{}
{"txn":{"appId":"a","version":3}}
{}
"#;
        let batch = actions::decode_json_actions(text, &schema, "x", Some(0))
            .unwrap()
            .remove(0);
        let kept = rows_with_actions(batch).unwrap().unwrap();
        assert_eq!(kept.num_rows(), 2);
        let empty = actions::decode_json_actions(b"{}\n{}\n", &schema, "x", Some(0))
            .unwrap()
            .remove(0);
        assert!(rows_with_actions(empty).unwrap().is_none());
    }

    /// The first batch `text` decodes to with `schema`.
    fn decode_one(schema: &SchemaRef, text: &str) -> RecordBatch {
        actions::decode_json_actions(text.as_bytes(), schema, "x", Some(0))
            .unwrap()
            .remove(0)
    }

    /// Writes `batches` as `cp.parquet` in `dir` (two rows per row group, with statistics) and
    /// opens it as a log file.
    async fn parquet_log_file(
        dir: &std::path::Path,
        schema: &SchemaRef,
        batches: &[&RecordBatch],
    ) -> ParquetLogFile {
        use parquet::arrow::ArrowWriter;
        use parquet::file::properties::WriterProperties;
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(2))
            .build();
        let file = std::fs::File::create(dir.join("cp.parquet")).unwrap();
        let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).unwrap();
        for batch in batches {
            writer.write(batch).unwrap();
        }
        writer.close().unwrap();
        let storage = Storage::open(dir.to_str().unwrap(), &Default::default()).unwrap();
        let location = storage.table_path("cp.parquet");
        ParquetLogFile::open(&storage, &location, None, "cp.parquet", Some(1))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn header_pass_skips_row_groups_proven_null() {
        let dir = tempfile::tempdir().unwrap();
        let schema = actions::checkpoint_header_schema();
        let with_protocol = decode_one(
            &schema,
            "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n{}\n",
        );
        let empty = decode_one(&schema, "{}\n{}\n{}\n");
        let file = parquet_log_file(dir.path(), &schema, &[&with_protocol, &empty]).await;
        let rows = |v: Vec<usize>| v.into_iter().sum::<usize>();
        let all = file.read_with(&schema, |b| Ok(b.num_rows())).await.unwrap();
        assert_eq!(rows(all), 5);
        let non_null = file
            .read_non_null_with(&schema, |b| Ok(b.num_rows()))
            .await
            .unwrap();
        assert_eq!(rows(non_null), 2);
    }

    #[tokio::test]
    async fn leaves_null_in_a_row_group_are_supplied_as_nulls() {
        let dir = tempfile::tempdir().unwrap();
        let schema = actions::file_actions_schema();
        // Row group 0 has a deletion vector and tags; row group 1 has neither.
        let first = decode_one(
            &schema,
            concat!(
                r#"{"add":{"path":"a","size":1,"tags":{"k":"v"},"deletionVector":{"storageType":"u","pathOrInlineDv":"x","offset":1,"sizeInBytes":2,"cardinality":3}}}"#,
                "\n",
                r#"{"add":{"path":"b","size":2}}"#,
                "\n"
            ),
        );
        let second = decode_one(
            &schema,
            "{\"add\":{\"path\":\"c\",\"size\":3}}\n{\"remove\":{\"path\":\"d\"}}\n",
        );
        let expected = arrow::compute::concat_batches(&schema, [&first, &second]).unwrap();
        #[allow(unused_mut)]
        let mut file = parquet_log_file(dir.path(), &schema, &[&first, &second]).await;
        let read_all = |file: ParquetLogFile| {
            let schema = schema.clone();
            async move {
                let batches = file.read_with(&schema, Ok).await.unwrap();
                arrow::compute::concat_batches(&schema, batches.iter()).unwrap()
            }
        };
        assert_eq!(read_all(file.clone()).await, expected);
        // The same through the object-store reader (the path remote stores take).
        #[cfg(unix)]
        {
            file.local = None;
            assert_eq!(read_all(file).await, expected);
        }
    }

    #[tokio::test]
    async fn statistics_are_read_as_views_and_parse_like_text() {
        use crate::stats::parse::StatsSchema;
        let dir = tempfile::tempdir().unwrap();
        let schema = actions::file_actions_schema();
        let text = concat!(
            r#"{"add":{"path":"a","size":1,"stats":"{\"numRecords\":3,\"minValues\":{\"x\":-2,\"s\":\"a long enough string value\"}}"}}"#,
            "\n",
            r#"{"add":{"path":"b","size":2}}"#,
            "\n",
            r#"{"remove":{"path":"c"}}"#,
            "\n",
            r#"{"add":{"path":"d","size":2,"stats":"{\"numRecords\":1,\"maxValues\":{\"s\":\"z\"}}"}}"#,
            "\n",
        );
        let batch = decode_one(&schema, text);
        #[allow(unused_mut)]
        let mut file = parquet_log_file(dir.path(), &schema, &[&batch]).await;
        let table = Schema::new(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]);
        let stats_schema = StatsSchema::new(&table, &table);
        let add_stats = |b: &RecordBatch| {
            b.column_by_name("add")
                .unwrap()
                .as_struct()
                .column_by_name("stats")
                .unwrap()
                .clone()
        };
        let expected = stats_schema.parse(Some(&add_stats(&batch)), None).unwrap();
        let view_schema = actions::file_actions_view_schema();
        let read = |file: ParquetLogFile| {
            let schema = view_schema.clone();
            async move {
                let batches = file.read_with(&schema, Ok).await.unwrap();
                arrow::compute::concat_batches(&schema, batches.iter()).unwrap()
            }
        };
        let got = read(file.clone()).await;
        assert_eq!(add_stats(&got).data_type(), &DataType::Utf8View);
        assert_eq!(
            stats_schema.parse(Some(&add_stats(&got)), None).unwrap(),
            expected
        );
        assert_eq!(
            expected
                .column(0)
                .as_primitive::<arrow::datatypes::Int64Type>()
                .value(3),
            1
        );
        #[cfg(unix)]
        {
            file.local = None;
            let got = read(file).await;
            assert_eq!(
                stats_schema.parse(Some(&add_stats(&got)), None).unwrap(),
                expected
            );
        }
    }

    #[test]
    fn projection_keeps_wanted_fields_only() {
        let file_schema = Schema::new(vec![
            Field::new(
                "add",
                DataType::Struct(Fields::from(vec![
                    Field::new("path", DataType::Utf8, true),
                    Field::new(
                        "stats_parsed",
                        DataType::Struct(Fields::from(vec![Field::new(
                            "numRecords",
                            DataType::Int64,
                            true,
                        )])),
                        true,
                    ),
                ])),
                true,
            ),
            Field::new(
                "commitInfo",
                DataType::Struct(Fields::from(vec![Field::new("x", DataType::Int64, true)])),
                true,
            ),
        ]);
        let descr = ArrowSchemaConverter::new().convert(&file_schema).unwrap();
        let wanted = Arc::new(Schema::new(vec![Field::new(
            "add",
            DataType::Struct(Fields::from(vec![Field::new("path", DataType::Utf8, true)])),
            true,
        )]));
        let mask = projection(&descr, &wanted);
        assert!(mask.leaf_included(0));
        assert!(!mask.leaf_included(1));
        assert!(!mask.leaf_included(2));
    }
}
