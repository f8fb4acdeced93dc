//! A log segment replayed into a [`Snapshot`]: a first pass over the newest commits for the
//! protocol and metadata that type statistics, then the commits (newest first, as they are
//! decoded) and the checkpoint's non-file actions, then the commits' adds parsed and the
//! checkpoint's adds selected against the keys the commits touched.
//!
//! Spec: "Action Reconciliation", "Checkpoints", "V2 Spec", "Version Checksum File",
//! "In-Commit Timestamps".

use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use futures::TryStreamExt;

use crate::error::{DeltaError, DeltaResult};
use crate::header::stats_schema_of;
use crate::log::actions::names;
use crate::log::checkpoint_reader::open_checkpoint;
use crate::log::path::CheckpointNaming;
use crate::log::reader::{commit_info_batches, delta_stream, protocol_and_metadata};
use crate::log::replay::{select_checkpoint_files, Origin, Reconciler, Selected};
use crate::log::segment::{Delta, LogSegment};
use crate::model::{Metadata, Protocol};
use crate::stats::parse::StatsSchema;
use crate::storage::Storage;

use super::files::FileBatch;
use super::{missing_metadata_rule, Snapshot};

/// How replay learns the schema that types statistics before it decodes the commits.
#[derive(Debug, Clone)]
pub(super) enum FirstPass {
    /// From a first pass over the log ([`first_pass`]).
    Scan,
    /// Given (a previous replay found it).
    Known(Arc<StatsSchema>),
    /// Not at all: statistics are parsed after replay.
    Late,
}

/// Commits the first pass searches, newest first, for the protocol and metadata before it
/// assumes that the oldest delta file holds those in force.
const FIRST_PASS_EXACT_FILES: usize = 32;

/// The protocol and metadata to type statistics with while decoding: those of the newest
/// commits that mention them (their lines only, [`protocol_and_metadata`]). A long log whose
/// newest [`FIRST_PASS_EXACT_FILES`] commits hold neither is not read twice: what its oldest
/// delta file holds (typically the table's creation) is assumed, and replay checks it (see
/// [`Snapshot::replay`]). The checkpoint's non-file actions fill what is still missing.
async fn first_pass(storage: &Storage, newest_first: &[Delta]) -> DeltaResult<Reconciler> {
    let (newest, older) = newest_first.split_at(newest_first.len().min(FIRST_PASS_EXACT_FILES));
    let mut found = protocol_and_metadata(storage, newest.to_vec()).await?;
    let Some(oldest) = older.last() else {
        return Ok(found);
    };
    if found.protocol.is_none() || found.metadata.is_none() {
        let assumed = protocol_and_metadata(storage, vec![oldest.clone()]).await?;
        if found.protocol.is_none() {
            found.protocol = assumed.protocol;
        }
        if found.metadata.is_none() {
            found.metadata = assumed.metadata;
        }
    }
    Ok(found)
}

impl Snapshot {
    /// Replays a segment in two passes: the protocol and metadata first (see [`FirstPass`]),
    /// so that the second pass, over every action, parses statistics while it decodes. The
    /// second pass finds the protocol and metadata itself; when they type statistics otherwise
    /// than the first pass assumed, replay runs again with the schema it found.
    pub(super) fn replay(
        storage: Storage,
        segment: LogSegment,
        first: FirstPass,
    ) -> futures::future::BoxFuture<'static, DeltaResult<Self>> {
        Box::pin(async move {
            let newest_first: Vec<Delta> = segment.deltas.iter().rev().cloned().collect();
            let checkpoint = async {
                match &segment.checkpoint {
                    Some(cp) => open_checkpoint(&storage, cp).await.map(Some),
                    None => Ok(None),
                }
            };
            let first_pass = async {
                match &first {
                    FirstPass::Scan => first_pass(&storage, &newest_first).await.map(Some),
                    FirstPass::Known(_) | FirstPass::Late => Ok(None),
                }
            };
            let (first_pass, checkpoint) = futures::try_join!(first_pass, checkpoint)?;
            let checkpoint_origin = segment.checkpoint.as_ref().map(|cp| Origin {
                file: format!("_delta_log/{}", cp.parts[0].name),
                version: cp.version,
            });
            let early = match first_pass {
                Some(mut found) => {
                    if let (Some(open), Some(origin)) = (&checkpoint, &checkpoint_origin) {
                        // Fills only what the commits did not have.
                        for batch in &open.header {
                            found.apply_non_file_actions(batch, origin)?;
                        }
                    }
                    Some(Arc::new(stats_schema_of(
                        found.protocol.as_ref().map(|(p, _)| p),
                        found.metadata.as_ref().map(|(m, _)| m),
                    )))
                }
                None => match &first {
                    FirstPass::Known(schema) => Some(schema.clone()),
                    _ => None,
                },
            };

            // The commits, newest first, replayed as they arrive.
            let mut reconciler = Reconciler::default();
            let mut in_commit_timestamp = replay_deltas(
                &storage,
                newest_first,
                early.clone(),
                &mut reconciler,
                segment.version,
            )
            .await?;
            if let (Some(Delta::Compaction { .. }), Some(last)) =
                (segment.deltas.last(), &segment.last_commit)
            {
                // A compaction holds no `commitInfo`: the version's own commit has its
                // in-commit timestamp.
                let batches = commit_info_batches(&storage, last, segment.version).await?;
                in_commit_timestamp = commit_info_ict(&batches);
            }

            if let (Some(cp), Some(open), Some(origin)) =
                (&segment.checkpoint, &checkpoint, &checkpoint_origin)
            {
                check_checkpoint_header(cp, &open.header, origin)?;
                for batch in &open.header {
                    reconciler.apply_non_file_actions(batch, origin)?;
                }
            }

            let last_file = segment
                .deltas
                .last()
                .map(|d| (format!("_delta_log/{}", d.file().name), d.end_version()));
            let Some((protocol, _)) = reconciler.protocol.take() else {
                let (file, v) = last_file.unwrap_or_else(|| ("_delta_log".into(), segment.version));
                return Err(DeltaError::corrupt(
                    file,
                    Some(v),
                    format!(
                        "no protocol action in versions 0..={} (spec: \"Protocol Evolution\")",
                        segment.version
                    ),
                ));
            };
            let metadata = reconciler.metadata.take().map(|(m, _)| m);
            if metadata.is_none() && protocol.min_reader_version >= 2 {
                let (file, v) = last_file.unwrap_or_else(|| ("_delta_log".into(), segment.version));
                return Err(DeltaError::corrupt(
                    file,
                    Some(v),
                    missing_metadata_rule(segment.version),
                ));
            }

            let mut snapshot = Snapshot {
                storage,
                segment: Arc::new(segment),
                protocol,
                metadata,
                txns: reconciler.txns.drain().collect(),
                domains: reconciler.domain_metadata(),
                files: Arc::new(Vec::new()),
                removes: Arc::new(Vec::new()),
                stats_schema: Arc::new(StatsSchema::empty()),
                in_commit_timestamp,
                catalog: None,
            };
            // Statistics are typed by the schema; a snapshot without a usable one keeps counts only.
            let stats_schema = Arc::new(stats_schema_of(
                Some(&snapshot.protocol),
                snapshot.metadata.as_ref(),
            ));
            if early.as_ref().is_some_and(|e| **e != *stats_schema) {
                // The first pass assumed other metadata than replay found (a long log whose
                // metadata changed before its newest commits, or one that spells action names
                // with JSON escapes): the statistics parsed early are typed by the wrong schema.
                // Replay again with the schema found (or, should that disagree too, parsing
                // statistics after replay).
                let again = match first {
                    FirstPass::Scan => FirstPass::Known(stats_schema),
                    FirstPass::Known(_) | FirstPass::Late => FirstPass::Late,
                };
                return Self::replay(
                    snapshot.storage,
                    Arc::unwrap_or_clone(snapshot.segment),
                    again,
                )
                .await;
            }

            // Loaded from a checkpoint of its own version: its in-commit timestamp still counts.
            if crate::log::timeline::ict_applies(&snapshot.configuration(), snapshot.version()) {
                let ict =
                    crate::log::timeline::unreplayed_ict(&snapshot.storage, &snapshot.segment);
                snapshot.in_commit_timestamp = snapshot.in_commit_timestamp.or(ict.await?);
            }

            // The commits' keys are only needed to filter a checkpoint; free them otherwise.
            let seen = reconciler.take_seen();
            let seen = checkpoint.is_some().then_some(seen);

            // Commit adds: parse their statistics, batches in parallel.
            let commit_adds = std::mem::take(&mut reconciler.adds);
            let mut files = parse_in_parallel(commit_adds, &stats_schema).await?;
            let mut removes = std::mem::take(&mut reconciler.removes);

            // Checkpoint adds: selected against the commits' keys, parsed and compacted batch by
            // batch while they are decoded.
            if let (Some(open), Some(origin), Some(seen)) = (checkpoint, checkpoint_origin, seen) {
                let seen = Arc::new(seen);
                let stats = stats_schema.clone();
                let stats_type = stats_schema.physical_type();
                let selected = open
                    .read_files(&snapshot.storage, &stats_type, move |batch| {
                        let selection = select_checkpoint_files(&seen, &batch, &origin)?;
                        let files = selection
                            .adds
                            .map(|adds| FileBatch::new(adds, &stats))
                            .transpose()?;
                        Ok((files, selection.removes))
                    })
                    .await?;
                for (f, r) in selected {
                    files.extend(f);
                    removes.extend(r);
                }
            }
            snapshot.files = Arc::new(crate::snapshot::files::coalesce(files));
            snapshot.removes = Arc::new(removes);
            snapshot.stats_schema = stats_schema;
            Ok(snapshot)
        })
    }
}

/// The statistics schema the protocol and metadata of version `version`'s checksum file
/// ("Version Checksum File") give; `None` when the file is unreadable or lacks them.
pub(super) async fn checksum_stats_schema(storage: &Storage, version: u64) -> Option<StatsSchema> {
    use crate::maintenance::version_checksum::checksum_file_name;
    let bytes = storage
        .get(&storage.log_path(&checksum_file_name(version)))
        .await
        .ok()?;
    let crc: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let protocol = Protocol::from_json(crc.get("protocol")?)?;
    let metadata = Metadata::from_json(crc.get("metadata")?)?;
    Some(stats_schema_of(Some(&protocol), Some(&metadata)))
}

/// "Checkpoints": protocol and metadata must be in the checkpoint itself; "V2 Spec": a
/// UUID-named checkpoint has a checkpointMetadata action.
fn check_checkpoint_header(
    cp: &crate::log::segment::CheckpointFiles,
    header: &[RecordBatch],
    origin: &Origin,
) -> DeltaResult<()> {
    let has = |name: &str| {
        header.iter().any(|b| {
            b.column_by_name(name)
                .is_some_and(|c| c.null_count() < c.len())
        })
    };
    for (action, what) in [(names::PROTOCOL, "protocol"), (names::METADATA, "metaData")] {
        if !has(action) {
            return Err(DeltaError::corrupt(
                &origin.file,
                Some(cp.version),
                format!(
                    "the checkpoint has no {what} action (spec: \"Checkpoints\": a checkpoint \
                     must contain the protocol and the metadata)"
                ),
            ));
        }
    }
    if matches!(cp.naming, CheckpointNaming::Uuid { .. }) && !has(names::CHECKPOINT_METADATA) {
        return Err(DeltaError::corrupt(
            &origin.file,
            Some(cp.version),
            "a UUID-named checkpoint has no checkpointMetadata action (spec: \"V2 Spec\")",
        ));
    }
    Ok(())
}

/// Replays `newest_first` (commits and compactions, newest first) into `reconciler` as they
/// are decoded, statistics typed by `stats` when known; returns the in-commit timestamp of the
/// commit of `version`, when it was replayed and has one.
pub(super) async fn replay_deltas(
    storage: &Storage,
    newest_first: Vec<Delta>,
    stats: Option<Arc<StatsSchema>>,
    reconciler: &mut Reconciler,
    version: u64,
) -> DeltaResult<Option<i64>> {
    let mut in_commit_timestamp = None;
    let mut deltas = std::pin::pin!(delta_stream(storage, newest_first, stats));
    while let Some((delta, batches)) = deltas.try_next().await? {
        let origin = Origin {
            file: format!("_delta_log/{}", delta.file().name),
            version: delta.end_version(),
        };
        if delta.end_version() == version && matches!(delta, Delta::Commit { .. }) {
            in_commit_timestamp = commit_info_ict(&batches.batches);
        }
        reconciler.apply_delta(&batches.batches, &batches.stats, batches.add_keys, &origin)?;
    }
    Ok(in_commit_timestamp)
}

/// Up to this many `add` rows are parsed on the calling thread.
const INLINE_PARSE_ROWS: usize = 256;

/// Parses the statistics of commit adds, spreading batches over blocking threads.
pub(super) async fn parse_in_parallel(
    adds: Vec<Selected>,
    stats: &Arc<StatsSchema>,
) -> DeltaResult<Vec<FileBatch>> {
    // A commit or two of a few files (an append's replay): parsed here, without a hand-off
    // to another thread.
    if adds.iter().map(|a| a.array.len()).sum::<usize>() <= INLINE_PARSE_ROWS {
        return adds.into_iter().map(|a| FileBatch::new(a, stats)).collect();
    }
    let threads = crate::available_threads();
    let chunk = adds.len().div_ceil(threads).max(1);
    let mut chunks: Vec<Vec<Selected>> = Vec::new();
    let mut iter = adds.into_iter().peekable();
    while iter.peek().is_some() {
        chunks.push(iter.by_ref().take(chunk).collect());
    }
    let handles: Vec<_> = chunks
        .into_iter()
        .map(|part| {
            let stats = stats.clone();
            tokio::task::spawn_blocking(move || {
                part.into_iter()
                    .map(|a| FileBatch::new(a, &stats))
                    .collect::<DeltaResult<Vec<_>>>()
            })
        })
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.extend(
            h.await
                .map_err(|e| DeltaError::Internal(format!("statistics task failed: {e}")))??,
        );
    }
    Ok(out)
}

/// The `inCommitTimestamp` of a commit's `commitInfo`, if any.
fn commit_info_ict(batches: &[arrow::array::RecordBatch]) -> Option<i64> {
    batches.iter().find_map(|b| {
        let ci = b.column_by_name(names::COMMIT_INFO)?.as_struct_opt()?;
        let ict = ci.column_by_name("inCommitTimestamp")?;
        let ict = ict.as_primitive_opt::<Int64Type>()?;
        (0..ci.len()).find_map(|r| (ci.is_valid(r) && ict.is_valid(r)).then(|| ict.value(r)))
    })
}
