//! Writing checkpoints: classic (V1 or V2 spec), UUID-named V2 with sidecars, and the
//! `_last_checkpoint` hint.
//!
//! Spec: "Checkpoints" under "Requirements for Writers", "Checkpoint Specs" (V1, V2),
//! "Checkpoint Naming Scheme" (classic `n.checkpoint.parquet`, UUID-named
//! `n.checkpoint.u.{json,parquet}`; multi-part checkpoints are deprecated and never written),
//! "Handling Backward compatibility while moving to UUID-named v2 Checkpoints" (a classic-named
//! copy of each UUID-named checkpoint for older readers), "Sidecar Files", "Last Checkpoint
//! File Schema" and "JSON checksum".
//!
//! The checkpoint is streamed: the snapshot's active files (already in memory as Arrow batches)
//! are cut into row-group units of zero-copy slices, which worker threads (one per core)
//! convert to checkpoint rows and encode; finished row groups go straight to the output file
//! ([`FileSink`]) in order, so the extra memory is a few row groups per core, not a second copy
//! of the table's state. Files appear in an order that keeps
//! the table readable after a crash at any point: sidecars, then the UUID-named file, then the
//! classic copy, then `_last_checkpoint` (each one complete before it is visible).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch, StructArray};
use arrow::datatypes::{Int64Type, SchemaRef};
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use serde_json::{json, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::log::actions::names;
use crate::log::last_checkpoint::{parse_last_checkpoint, write_last_checkpoint};
use crate::log::path::CheckpointFormat;
use crate::maintenance::checkpoint_rows::{
    actions_batch, non_file_actions, one_action_batch, remove_rows, CheckpointLayout,
};
use crate::maintenance::intervals::{duration_ms, DELETED_FILE_RETENTION};
use crate::maintenance::sink::FileSink;
use crate::schema::arrow_to_schema_string;
use crate::snapshot::files::FileBatch;
use crate::snapshot::Snapshot;

/// Rows converted per step (bounds the memory of the conversion).
const CHUNK_ROWS: usize = 32_768;
/// Rows per parquet row group (readers decode row groups in parallel).
const ROW_GROUP_ROWS: usize = 65_536;
/// File actions per sidecar when the caller does not say how many sidecars to write; smaller
/// checkpoints keep their file actions inline.
const AUTO_SIDECAR_ACTIONS: usize = 1_000_000;
const AUTO_INLINE_ACTIONS: usize = 100_000;

/// `delta.checkpointPolicy`: `classic` (default) or `v2`.
pub const CHECKPOINT_POLICY: &str = "delta.checkpointPolicy";

/// Which checkpoint to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointKind {
    /// `n.checkpoint.parquet`: V1 spec, or V2 spec (with `checkpointMetadata`) on tables with
    /// the `v2Checkpoint` feature.
    Classic,
    /// `n.checkpoint.<uuid>.<format>` (V2 spec) plus a classic-named copy.
    V2(CheckpointFormat),
}

impl CheckpointKind {
    /// Parses `classic`, `v2` (parquet), `v2-parquet` or `v2-json`.
    pub fn parse(text: &str) -> DeltaResult<Self> {
        match text.to_ascii_lowercase().as_str() {
            "classic" | "v1" => Ok(CheckpointKind::Classic),
            "v2" | "v2-parquet" => Ok(CheckpointKind::V2(CheckpointFormat::Parquet)),
            "v2-json" => Ok(CheckpointKind::V2(CheckpointFormat::Json)),
            other => Err(DeltaError::InvalidArgument(format!(
                "unknown checkpoint kind {other:?} (expected classic, v2, v2-parquet or v2-json)"
            ))),
        }
    }
}

/// How to write a checkpoint.
#[derive(Debug, Clone)]
pub struct CheckpointOptions {
    /// The kind; `None` follows `delta.checkpointPolicy` (`v2`: UUID-named parquet).
    pub kind: Option<CheckpointKind>,
    /// Sidecar files for the file actions (V2 spec only); `None`: for UUID-named checkpoints
    /// one per million actions (none below 100,000), `Some(0)`: file actions inside the
    /// checkpoint itself.
    pub sidecars: Option<usize>,
    /// The current time in milliseconds (tombstones older than
    /// `delta.deletedFileRetentionDuration` before it are dropped).
    pub now_ms: i64,
    /// Whether a UUID-named checkpoint also gets its classic-named copy.
    pub classic_copy: bool,
}

impl CheckpointOptions {
    /// Options with the table's policy, automatic sidecars and the current time.
    pub fn new(now_ms: i64) -> Self {
        CheckpointOptions {
            kind: None,
            sidecars: None,
            now_ms,
            classic_copy: true,
        }
    }
}

/// What was written.
#[derive(Debug, Clone)]
pub struct CheckpointWritten {
    /// The checkpointed version.
    pub version: u64,
    /// Table-relative paths of the files written, in the order they were made visible.
    pub files: Vec<String>,
    /// Actions in the checkpoint (its own rows and its sidecars').
    pub num_actions: u64,
    /// `add` actions in the checkpoint.
    pub num_add_files: u64,
    /// Bytes of the checkpoint and its sidecars (without the classic copy).
    pub size_in_bytes: u64,
}

/// Whether the protocol supports V2 checkpoints ("V2 Checkpoint Table Feature").
fn supports_v2(snapshot: &Snapshot) -> bool {
    let p = snapshot.protocol();
    let has = |list: &Option<Vec<String>>| list.iter().flatten().any(|f| f == "v2Checkpoint");
    has(&p.reader_features) && has(&p.writer_features)
}

/// The kind `delta.checkpointPolicy` asks for.
pub fn policy_kind(snapshot: &Snapshot) -> CheckpointKind {
    match snapshot
        .configuration()
        .get(CHECKPOINT_POLICY)
        .map(|p| p.to_ascii_lowercase())
    {
        Some(p) if p == "v2" && supports_v2(snapshot) => {
            CheckpointKind::V2(CheckpointFormat::Parquet)
        }
        _ => CheckpointKind::Classic,
    }
}

fn writer_properties() -> WriterProperties {
    let unique = |path: &[&str]| ColumnPath::new(path.iter().map(|s| s.to_string()).collect());
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        // Column-chunk statistics let readers skip chunks that are all null (see log_reader).
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_statistics_truncate_length(Some(64))
        // Min/max of the long unique strings serve no reader; their null counts would only
        // let a reader skip them where they are null, which costs nothing to decode.
        .set_column_statistics_enabled(unique(&["add", "path"]), EnabledStatistics::None)
        .set_column_statistics_enabled(unique(&["add", "stats"]), EnabledStatistics::None)
        // Values unique per row gain nothing from dictionaries.
        .set_column_dictionary_enabled(unique(&["add", "path"]), false)
        .set_column_dictionary_enabled(unique(&["add", "stats"]), false)
        .set_column_dictionary_enabled(unique(&["remove", "path"]), false)
        .set_column_dictionary_enabled(unique(&["add", "modificationTime"]), false)
        .set_column_dictionary_enabled(unique(&["add", "size"]), false)
        .build()
}

/// A run of file actions not yet converted to checkpoint rows (zero-copy slices).
enum Piece {
    /// Active files.
    Adds(FileBatch),
    /// Tombstones, already in checkpoint shape.
    Removes(StructArray),
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Adds(files) => files.len(),
            Piece::Removes(r) => r.len(),
        }
    }

    /// The piece as (`add` or `remove`, checkpoint structs).
    fn convert(&self, layout: &CheckpointLayout) -> DeltaResult<(&'static str, StructArray)> {
        Ok(match self {
            Piece::Adds(files) => (names::ADD, layout.add_rows(files)?),
            Piece::Removes(r) => (names::REMOVE, r.clone()),
        })
    }
}

/// The file actions of the checkpoint in order (active files, then tombstones), cut into
/// pieces of at most [`CHUNK_ROWS`] rows without converting them.
struct FileActions<'a> {
    files: &'a [FileBatch],
    removes: Vec<StructArray>,
    batch: usize,
    offset: usize,
    remove: usize,
    remove_offset: usize,
}

impl<'a> FileActions<'a> {
    fn new(snapshot: &'a Snapshot, cutoff_ms: i64) -> DeltaResult<Self> {
        // "Files that were recently removed and have not yet expired".
        let mut removes = Vec::new();
        for r in snapshot.removes() {
            let keep: BooleanArray = match r
                .column_by_name("deletionTimestamp")
                .and_then(|c| c.as_primitive_opt::<Int64Type>())
            {
                Some(ts) => (0..r.len())
                    .map(|i| Some(ts.is_null(i) || ts.value(i) > cutoff_ms))
                    .collect(),
                None => BooleanArray::from(vec![true; r.len()]),
            };
            let kept = arrow::compute::filter(r, &keep)?;
            if !kept.is_empty() {
                removes.push(remove_rows(kept.as_struct())?);
            }
        }
        Ok(FileActions {
            files: snapshot.files(),
            removes,
            batch: 0,
            offset: 0,
            remove: 0,
            remove_offset: 0,
        })
    }

    fn num_adds(&self) -> usize {
        self.files.iter().map(|f| f.len()).sum()
    }

    fn num_removes(&self) -> usize {
        self.removes.iter().map(|r| r.len()).sum()
    }

    /// The next piece, at most `max` rows.
    fn next_piece(&mut self, max: usize) -> Option<Piece> {
        let max = max.min(CHUNK_ROWS);
        while self.batch < self.files.len() {
            let batch = &self.files[self.batch];
            if self.offset < batch.len() {
                let len = (batch.len() - self.offset).min(max);
                let piece = Piece::Adds(FileBatch {
                    adds: batch.adds.slice(self.offset, len),
                    stats: batch.stats.slice(self.offset, len),
                });
                self.offset += len;
                return Some(piece);
            }
            self.batch += 1;
            self.offset = 0;
        }
        while self.remove < self.removes.len() {
            let r = &self.removes[self.remove];
            if self.remove_offset < r.len() {
                let len = (r.len() - self.remove_offset).min(max);
                let piece = Piece::Removes(r.slice(self.remove_offset, len));
                self.remove_offset += len;
                return Some(piece);
            }
            self.remove += 1;
            self.remove_offset = 0;
        }
        None
    }

    /// The pieces of the next `rows` rows (fewer at the end; empty when done).
    fn next_unit(&mut self, rows: usize) -> Vec<Piece> {
        let mut unit = Vec::new();
        let mut taken = 0;
        while taken < rows {
            let Some(piece) = self.next_piece(rows - taken) else {
                break;
            };
            taken += piece.len();
            unit.push(piece);
        }
        unit
    }
}

/// Encodes `batches` with a row group's column `writers` (every leaf, in schema order).
fn encode_batches(
    schema: &SchemaRef,
    mut writers: Vec<ArrowColumnWriter>,
    batches: &[RecordBatch],
) -> DeltaResult<Vec<ArrowColumnChunk>> {
    for batch in batches {
        let mut next = writers.iter_mut();
        for (field, column) in schema.fields().iter().zip(batch.columns()) {
            for leaf in compute_leaves(field, column)? {
                next.next()
                    .ok_or_else(|| DeltaError::Internal("more leaves than column writers".into()))?
                    .write(&leaf)?;
            }
        }
    }
    Ok(writers
        .into_iter()
        .map(|w| w.close())
        .collect::<Result<Vec<_>, _>>()?)
}

/// A row group's encoded column chunks and its row count.
type Encoded = DeltaResult<(Vec<ArrowColumnChunk>, usize)>;

/// Converts a unit of file actions to checkpoint rows and encodes them as one row group.
fn encode_unit(
    layout: &CheckpointLayout,
    schema: &SchemaRef,
    unit: Vec<Piece>,
    writers: Vec<ArrowColumnWriter>,
) -> Encoded {
    let mut batches = Vec::with_capacity(unit.len());
    let mut rows = 0;
    for piece in unit {
        let (action, structs) = piece.convert(layout)?;
        rows += structs.len();
        batches.push(one_action_batch(schema, action, structs)?);
    }
    Ok((encode_batches(schema, writers, &batches)?, rows))
}

/// A parquet file being written into a [`FileSink`], a row group at a time; row groups of
/// file actions are converted and encoded on several threads at once and appended in order.
struct ParquetOut {
    writer: SerializedFileWriter<FileSink>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    row_groups: usize,
    rows: u64,
}

impl ParquetOut {
    async fn create(snapshot: &Snapshot, target: &str, schema: &SchemaRef) -> DeltaResult<Self> {
        let sink = FileSink::create(snapshot.storage(), target).await?;
        let (writer, factory) =
            ArrowWriter::try_new(sink, schema.clone(), Some(writer_properties()))?
                .into_serialized_writer()?;
        Ok(ParquetOut {
            writer,
            factory,
            schema: schema.clone(),
            row_groups: 0,
            rows: 0,
        })
    }

    fn append(&mut self, chunks: Vec<ArrowColumnChunk>, rows: usize) -> DeltaResult<()> {
        let mut group = self.writer.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut group)?;
        }
        group.close()?;
        self.row_groups += 1;
        self.rows += rows as u64;
        Ok(())
    }

    /// Writes `batch` as one row group.
    async fn write(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        let writers = self.factory.create_column_writers(self.row_groups)?;
        let chunks = encode_batches(&self.schema, writers, std::slice::from_ref(batch))?;
        self.append(chunks, batch.num_rows())?;
        self.writer.inner_mut().drain().await
    }

    /// Writes each unit of file actions as one row group. Units are converted and encoded
    /// on worker threads, as many at once as there are cores, while finished row groups are
    /// appended in order; memory holds at most that many units.
    async fn write_units(
        &mut self,
        layout: &CheckpointLayout,
        mut units: impl Iterator<Item = Vec<Piece>>,
    ) -> DeltaResult<()> {
        let threads = crate::available_threads().clamp(1, 8);
        let mut in_flight: VecDeque<std::thread::JoinHandle<Encoded>> = VecDeque::new();
        let mut next_index = self.row_groups;
        let mut start = |unit: Vec<Piece>, this: &Self| -> DeltaResult<_> {
            let writers = this.factory.create_column_writers(next_index)?;
            next_index += 1;
            let (layout, schema) = (layout.clone(), this.schema.clone());
            Ok(std::thread::spawn(move || {
                encode_unit(&layout, &schema, unit, writers)
            }))
        };
        loop {
            while in_flight.len() < threads {
                let Some(unit) = units.next() else {
                    break;
                };
                in_flight.push_back(start(unit, self)?);
            }
            let Some(handle) = in_flight.pop_front() else {
                return Ok(());
            };
            let (chunks, rows) = handle.join().unwrap_or_else(|_| {
                Err(DeltaError::Internal("a checkpoint encoder panicked".into()))
            })?;
            // Keep every core busy while this row group is appended.
            if let Some(unit) = units.next() {
                in_flight.push_back(start(unit, self)?);
            }
            self.append(chunks, rows)?;
            self.writer.inner_mut().drain().await?;
        }
    }

    async fn finish(self) -> DeltaResult<u64> {
        // Writes the footer and hands back the sink.
        let sink = self.writer.into_inner()?;
        sink.commit().await
    }
}

/// A JSON (newline-delimited) checkpoint being written into a [`FileSink`].
struct JsonOut {
    sink: FileSink,
    rows: u64,
}

impl JsonOut {
    fn write_values(&mut self, values: &[Value]) -> DeltaResult<()> {
        use std::io::Write;
        for v in values {
            let line = serde_json::to_string(v)
                .map_err(|e| DeltaError::Internal(format!("serializing an action: {e}")))?;
            self.sink
                .write_all(line.as_bytes())
                .and_then(|_| self.sink.write_all(b"\n"))
                .map_err(|e| {
                    DeltaError::Internal(format!("writing {}: {e}", self.sink.target()))
                })?;
        }
        self.rows += values.len() as u64;
        Ok(())
    }

    async fn write_structs(&mut self, name: &str, rows: StructArray) -> DeltaResult<()> {
        let len = rows.len();
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            arrow::datatypes::Field::new(name, rows.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(rows)])?;
        let mut writer = arrow::json::LineDelimitedWriter::new(&mut self.sink);
        writer.write(&batch)?;
        writer.finish()?;
        self.rows += len as u64;
        self.sink.drain().await
    }
}

/// Writes a checkpoint of `snapshot` (see the module docs).
pub async fn write_checkpoint(
    snapshot: &Snapshot,
    options: &CheckpointOptions,
) -> DeltaResult<CheckpointWritten> {
    let version = snapshot.version();
    // "Checkpoints": a checkpoint must hold the metadata; a legacy log without one cannot
    // have a checkpoint (the error names the rule).
    snapshot.metadata()?;
    // A checkpoint of this snapshot is the state of `version` only while that version stands
    // (a table deleted and created again would get the old table's state as its own).
    if let Err(why) =
        crate::log::segment::version_stands(snapshot.storage(), version, Some(snapshot.segment()))
            .await?
    {
        return Err(DeltaError::CommitConflict {
            version,
            reason: format!(
                "no checkpoint written: the table at {} is not the one loaded at version \
                 {version}: {why}; load the table again",
                snapshot.storage().url()
            ),
        });
    }
    let v2_supported = supports_v2(snapshot);
    let kind = options.kind.unwrap_or_else(|| policy_kind(snapshot));
    if matches!(kind, CheckpointKind::V2(_)) && !v2_supported {
        return Err(DeltaError::InvalidArgument(
            "UUID-named V2 checkpoints need the v2Checkpoint table feature (\"V2 Checkpoint \
             Table Feature\"); add it with alter.add_feature('v2Checkpoint')"
                .into(),
        ));
    }
    // A table with v2Checkpoint gets V2-spec checkpoints, classic-named ones included.
    let v2_spec = v2_supported;
    let sidecars =
        match (options.sidecars, kind) {
            (Some(n), _) if n > 0 && !v2_spec => return Err(DeltaError::InvalidArgument(
                "sidecar files belong to V2-spec checkpoints (\"V2 Spec\"): the table needs the \
                 v2Checkpoint feature"
                    .into(),
            )),
            (Some(n), _) => n,
            (None, CheckpointKind::V2(_)) => usize::MAX, // decided below from the action count
            (None, CheckpointKind::Classic) => 0,
        };
    let layout = CheckpointLayout::for_snapshot(snapshot)?;
    let retention = duration_ms(&snapshot.configuration(), DELETED_FILE_RETENTION)?;
    let cutoff = options.now_ms.saturating_sub(retention);
    let mut actions = FileActions::new(snapshot, cutoff)?;
    let num_adds = actions.num_adds();
    let total_file_actions = num_adds + actions.num_removes();
    let sidecars = if sidecars == usize::MAX {
        if total_file_actions < AUTO_INLINE_ACTIONS {
            0
        } else {
            total_file_actions.div_ceil(AUTO_SIDECAR_ACTIONS)
        }
    } else if total_file_actions == 0 {
        0
    } else {
        sidecars.min(total_file_actions)
    };
    let top_schema = layout.checkpoint_schema(v2_spec);
    let mut header = Vec::new();
    if v2_spec {
        header.push(json!({"checkpointMetadata": {"version": version}}));
    }
    header.extend(non_file_actions(snapshot));

    let mut written = Vec::new();
    let mut size_in_bytes = 0u64;
    let mut num_actions = 0u64;

    // Sidecars first: nothing references them until the checkpoint itself is visible.
    if sidecars > 0 {
        let per_sidecar = total_file_actions.div_ceil(sidecars).max(1);
        let sidecar_schema = layout.sidecar_schema();
        for _ in 0..sidecars {
            let name = format!("{}.parquet", uuid::Uuid::new_v4());
            let target = format!("_delta_log/_sidecars/{name}");
            let mut out = ParquetOut::create(snapshot, &target, &sidecar_schema).await?;
            let mut left = per_sidecar;
            let units = std::iter::from_fn(|| {
                let unit = actions.next_unit(left.min(ROW_GROUP_ROWS));
                left -= unit.iter().map(Piece::len).sum::<usize>();
                (!unit.is_empty()).then_some(unit)
            });
            out.write_units(&layout, units).await?;
            num_actions += out.rows;
            let size = out.finish().await?;
            size_in_bytes += size;
            header.push(json!({"sidecar": {
                "path": name,
                "sizeInBytes": size,
                "modificationTime": chrono::Utc::now().timestamp_millis(),
            }}));
            written.push(target);
        }
    }

    let header_batch = actions_batch(&header, &top_schema)?;
    let classic_name = format!("_delta_log/{version:020}.checkpoint.parquet");
    let main_target = match kind {
        CheckpointKind::Classic => classic_name.clone(),
        CheckpointKind::V2(format) => format!(
            "_delta_log/{version:020}.checkpoint.{}.{}",
            uuid::Uuid::new_v4(),
            if format == CheckpointFormat::Json {
                "json"
            } else {
                "parquet"
            }
        ),
    };
    let json_main = matches!(kind, CheckpointKind::V2(CheckpointFormat::Json));
    let main_size = if json_main {
        let mut out = JsonOut {
            sink: FileSink::create(snapshot.storage(), &main_target).await?,
            rows: 0,
        };
        out.write_values(&header)?;
        if sidecars == 0 {
            while let Some(piece) = actions.next_piece(CHUNK_ROWS) {
                let (action, structs) = piece.convert(&layout)?;
                out.write_structs(action, structs).await?;
            }
        }
        num_actions += out.rows;
        out.sink.commit().await?
    } else {
        let mut out = ParquetOut::create(snapshot, &main_target, &top_schema).await?;
        out.write(&header_batch).await?;
        if sidecars == 0 {
            let units = std::iter::from_fn(|| {
                let unit = actions.next_unit(ROW_GROUP_ROWS);
                (!unit.is_empty()).then_some(unit)
            });
            out.write_units(&layout, units).await?;
        }
        num_actions += out.rows;
        out.finish().await?
    };
    size_in_bytes += main_size;
    written.push(main_target.clone());

    // "Handling Backward compatibility while moving to UUID-named v2 Checkpoints": the same
    // content under the classic name, which older clients find.
    if main_target != classic_name && options.classic_copy {
        let mut out = ParquetOut::create(snapshot, &classic_name, &top_schema).await?;
        out.write(&header_batch).await?;
        if sidecars == 0 {
            let mut again = FileActions::new(snapshot, cutoff)?;
            let units = std::iter::from_fn(|| {
                let unit = again.next_unit(ROW_GROUP_ROWS);
                (!unit.is_empty()).then_some(unit)
            });
            out.write_units(&layout, units).await?;
        }
        out.finish().await?;
        written.push(classic_name);
    }

    write_hint(
        snapshot,
        version,
        num_actions,
        size_in_bytes,
        num_adds as u64,
        &top_schema,
    )
    .await?;
    Ok(CheckpointWritten {
        version,
        files: written,
        num_actions,
        num_add_files: num_adds as u64,
        size_in_bytes,
    })
}

/// Writes `_last_checkpoint` ("Last Checkpoint File Schema", with the "JSON checksum") unless
/// it already points at a newer checkpoint.
async fn write_hint(
    snapshot: &Snapshot,
    version: u64,
    size: u64,
    size_in_bytes: u64,
    num_add_files: u64,
    schema: &SchemaRef,
) -> DeltaResult<()> {
    let storage = snapshot.storage();
    let location = storage.log_path("_last_checkpoint");
    match storage.get(&location).await {
        Ok(bytes) => {
            if let Ok(hint) = parse_last_checkpoint(&bytes) {
                if hint.version > version {
                    return Ok(());
                }
            }
        }
        Err(object_store::Error::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let mut fields = BTreeMap::new();
    fields.insert("version".to_string(), json!(version));
    fields.insert("size".to_string(), json!(size));
    fields.insert("sizeInBytes".to_string(), json!(size_in_bytes));
    fields.insert("numOfAddFiles".to_string(), json!(num_add_files));
    if let Ok(text) = arrow_to_schema_string(schema) {
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            fields.insert("checkpointSchema".to_string(), value);
        }
    }
    let text = write_last_checkpoint(&fields);
    let mut sink = FileSink::create(storage, "_delta_log/_last_checkpoint").await?;
    std::io::Write::write_all(&mut sink, text.as_bytes())
        .map_err(|e| DeltaError::Internal(format!("writing _last_checkpoint: {e}")))?;
    sink.commit().await?;
    Ok(())
}
