//! Metadata cleanup: deleting log files that no version inside the retention window needs.
//!
//! Spec: "Metadata Cleanup", with the `catalogManaged` RFC's amendment. With `cutOffTimestamp`
//! the midnight (UTC) of the day `delta.logRetentionDuration` (default 30 days) before now:
//! 1. the `cutoffCommit` is the newest commit not newer than `cutOffTimestamp`;
//! 2. the `cutOffCheckpoint` is the newest complete checkpoint not newer than it (none: nothing
//!    is cleaned up);
//! 3. commits, checkpoints and version checksums before the `cutOffCheckpoint` are deleted, and
//!    so are compaction files starting at or before its version and staged commits at or
//!    below it;
//! 4. sidecars referenced by any remaining checkpoint are kept; other sidecars are deleted once
//!    they are a day old (as of midnight UTC), so that checkpoints being written keep theirs.
//!
//! Temporary files of writers that died (`.<name>.<uuid>.tmp`, see `sink`) go once a day old;
//! object_store's local staging files (`<name>#<n>`, e.g. `5.json#1`) once older than the
//! retention cutoff and a day, with or without a cutoff checkpoint.
//! Every version from the `cutOffCheckpoint` on stays readable, so time travel inside the
//! retention window never breaks. Commit times are the files' modification times, or the
//! in-commit timestamps where the table has them enabled ("In-Commit Timestamps").

use std::collections::HashSet;

use arrow::array::{Array, AsArray};
use futures::StreamExt;
use object_store::ObjectMeta;

use crate::error::DeltaResult;
use crate::log::actions::names;
use crate::log::checkpoint_reader::open_checkpoint;
use crate::log::path::{classify, CheckpointNaming, LogFileKind};
use crate::log::segment::{CheckpointFiles, LogListing};
use crate::maintenance::intervals::{duration_ms, flag, LOG_RETENTION};
use crate::snapshot::Snapshot;
use crate::storage::Storage;

const DAY_MS: i64 = 86_400_000;

/// `delta.enableExpiredLogCleanup`: whether cleanup runs after automatic checkpoints.
pub const ENABLE_EXPIRED_LOG_CLEANUP: &str = "delta.enableExpiredLogCleanup";

/// Whether the table asks for cleanup after checkpoints (default true).
pub fn cleanup_enabled(snapshot: &Snapshot) -> bool {
    flag(&snapshot.configuration(), ENABLE_EXPIRED_LOG_CLEANUP, true)
}

/// The commit timestamps cleanup compares with the cutoff, ascending by version.
pub(crate) async fn commit_times(
    snapshot: &Snapshot,
    listing: &LogListing,
) -> DeltaResult<Vec<(u64, i64)>> {
    let times = crate::log::timeline::monotonic_file_times(listing);
    let config = snapshot.configuration();
    let Some(ict) = crate::log::timeline::ict_settings(&config) else {
        return Ok(times.into_iter().map(|(v, t, _)| (v, t)).collect());
    };
    // From the enablement version on, a commit's time is its in-commit timestamp.
    let mut out = Vec::with_capacity(times.len());
    for (version, file_time, file) in times {
        if version < ict.enablement_version {
            out.push((version, file_time));
            continue;
        }
        let info =
            crate::log::timeline::read_commit_info(snapshot.storage(), &file, version).await?;
        let t = info
            .as_ref()
            .and_then(|c| c.get("inCommitTimestamp"))
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(file_time);
        out.push((version, t));
    }
    Ok(out)
}

/// The sidecar file names a checkpoint references ("Sidecar File Information").
async fn referenced_sidecars(
    storage: &Storage,
    checkpoint: &CheckpointFiles,
) -> DeltaResult<Vec<String>> {
    let open = open_checkpoint(storage, checkpoint).await?;
    let mut out = Vec::new();
    for batch in &open.header {
        let Some(sidecar) = batch
            .column_by_name(names::SIDECAR)
            .and_then(|c| c.as_struct_opt())
        else {
            continue;
        };
        let Some(paths) = sidecar
            .column_by_name("path")
            .and_then(|c| c.as_string_opt::<i32>())
        else {
            continue;
        };
        for i in 0..sidecar.len() {
            if sidecar.is_valid(i) && paths.is_valid(i) {
                let path = paths.value(i);
                out.push(path.rsplit('/').next().unwrap_or(path).to_string());
            }
        }
    }
    Ok(out)
}

/// Deletes the expired log files of the table `snapshot` belongs to (see the module docs), as
/// of `now_ms`; returns the `_delta_log`-relative names deleted.
pub async fn cleanup_metadata(snapshot: &Snapshot, now_ms: i64) -> DeltaResult<Vec<String>> {
    let storage = snapshot.storage();
    let retention = duration_ms(&snapshot.configuration(), LOG_RETENTION)?;
    let cutoff_ts = (now_ms - retention).div_euclid(DAY_MS) * DAY_MS;
    let midnight = now_ms.div_euclid(DAY_MS) * DAY_MS;
    // Staging files of killed writers are no version's: removed whatever the checkpoints.
    let staging = remove_stale_staging(storage, cutoff_ts.min(midnight - DAY_MS))?;
    let mut deleted = cleanup_versions(snapshot, storage, cutoff_ts, midnight).await?;
    deleted.extend(staging);
    Ok(deleted)
}

/// The part of [`cleanup_metadata`] that needs a cutoff checkpoint: versions, compactions,
/// checksums, staged commits, sidecars and hidden temporary files.
async fn cleanup_versions(
    snapshot: &Snapshot,
    storage: &Storage,
    cutoff_ts: i64,
    midnight: i64,
) -> DeltaResult<Vec<String>> {
    let listing = LogListing::list(storage, None).await?;
    // Only versions up to the snapshot's are considered: a newer commit is someone else's.
    let times = commit_times(snapshot, &listing).await?;
    let Some(cutoff_commit) = times
        .iter()
        .filter(|(v, t)| *t <= cutoff_ts && *v <= snapshot.version())
        .map(|(v, _)| *v)
        .next_back()
    else {
        return Ok(Vec::new());
    };
    let Some(cutoff_checkpoint) = listing
        .complete_checkpoints()
        .iter()
        .filter(|c| c.version <= cutoff_commit)
        .map(|c| c.version)
        .next_back()
    else {
        return Ok(Vec::new());
    };
    delete_before_checkpoint(storage, &listing, cutoff_checkpoint, midnight).await
}

/// Deletes the log files of the versions before `version`, which has a complete checkpoint
/// (commits, checkpoints, checksums, compactions starting at or before it, staged commits up
/// to it, sidecars no remaining checkpoint references once a day old, dead writers' temporary
/// files); returns the `_delta_log`-relative names deleted. DROP FEATURE's history truncation.
pub(crate) async fn delete_before(
    snapshot: &Snapshot,
    listing: &LogListing,
    version: u64,
    now_ms: i64,
) -> DeltaResult<Vec<String>> {
    let midnight = now_ms.div_euclid(DAY_MS) * DAY_MS;
    delete_before_checkpoint(snapshot.storage(), listing, version, midnight).await
}

async fn delete_before_checkpoint(
    storage: &Storage,
    listing: &LogListing,
    cutoff_checkpoint: u64,
    midnight: i64,
) -> DeltaResult<Vec<String>> {
    let checkpoints = listing.complete_checkpoints();
    // Everything else in `_delta_log`, with its kind.
    let all: Vec<ObjectMeta> = storage.list_log(None).await?;
    let mut doomed: Vec<(String, ObjectMeta)> = Vec::new();
    let mut sidecars: Vec<(String, ObjectMeta)> = Vec::new();
    let stale_tmp = |meta: &ObjectMeta| meta.last_modified.timestamp_millis() < midnight - DAY_MS;
    for meta in all {
        let Some(name) = storage.relative_to_log(&meta.location) else {
            continue;
        };
        if let Some(side) = name.strip_prefix("_sidecars/") {
            if !side.contains('/') {
                sidecars.push((side.to_string(), meta));
            }
            continue;
        }
        let base = name.rsplit('/').next().unwrap_or(&name);
        if base.starts_with('.') && base.ends_with(".tmp") {
            if stale_tmp(&meta) {
                doomed.push((name, meta));
            }
            continue;
        }
        let delete = match classify(&name) {
            LogFileKind::Commit { version }
            | LogFileKind::Crc { version }
            | LogFileKind::Checkpoint { version, .. } => version < cutoff_checkpoint,
            LogFileKind::Compaction { start, .. } => start <= cutoff_checkpoint,
            LogFileKind::StagedCommit { version, .. } => version <= cutoff_checkpoint,
            _ => false,
        };
        if delete {
            doomed.push((name, meta));
        }
    }

    // Sidecars of the checkpoints that stay are protected.
    let doomed_names: HashSet<&str> = doomed.iter().map(|(n, _)| n.as_str()).collect();
    let mut protected: HashSet<String> = HashSet::new();
    for cp in checkpoints.iter().filter(|c| {
        c.parts
            .iter()
            .all(|p| !doomed_names.contains(p.name.as_str()))
    }) {
        if matches!(cp.naming, CheckpointNaming::MultiPart { .. }) {
            continue; // multi-part checkpoints are V1: no sidecars
        }
        protected.extend(referenced_sidecars(storage, cp).await?);
    }
    for (name, meta) in sidecars {
        if !protected.contains(&name) && stale_tmp(&meta) {
            doomed.push((format!("_sidecars/{name}"), meta));
        }
    }

    // Oldest first: a cleanup that stops half-way leaves a log without holes at the front.
    doomed.sort_by(|a, b| a.0.cmp(&b.0));
    delete_all(
        storage,
        doomed.iter().map(|(_, m)| m.location.clone()).collect(),
    )
    .await?;
    Ok(doomed.into_iter().map(|(n, _)| n).collect())
}

/// Removes the staging files of local writes last modified before `older_than_ms`; returns
/// their `_delta_log`-relative names.
///
/// On the local file system object_store writes `<name>#<n>` and then links (put-if-absent:
/// commits, checksums) or renames (overwrites: checkpoints, `_last_checkpoint`) it to `<name>`;
/// a writer killed in between leaves the staging file behind, and listings never show it. A
/// live writer's staging file is the one it is writing now, so only files older than the log
/// retention cutoff, and at least a day old, are removed; only names of log files are touched.
/// Object stores have no such files.
fn remove_stale_staging(storage: &Storage, older_than_ms: i64) -> DeltaResult<Vec<String>> {
    let Some(log_dir) = storage.local_path(&storage.log_dir()) else {
        return Ok(Vec::new());
    };
    let mut removed = Vec::new();
    for prefix in ["", "_sidecars/", "_staged_commits/"] {
        let Ok(entries) = std::fs::read_dir(log_dir.join(prefix)) else {
            continue;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str() else {
                continue;
            };
            let Some((base, n)) = name.rsplit_once('#') else {
                continue;
            };
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let log_file = match prefix {
                "_sidecars/" => base.ends_with(".parquet"),
                _ => {
                    base == "_last_checkpoint"
                        || !matches!(classify(&format!("{prefix}{base}")), LogFileKind::Unknown)
                }
            };
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .and_then(|d| i64::try_from(d.as_millis()).ok());
            let stale = modified.is_some_and(|m| m < older_than_ms);
            if !(log_file && meta.is_file() && stale) {
                continue;
            }
            match std::fs::remove_file(entry.path()) {
                Ok(()) => removed.push(format!("{prefix}{name}")),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(object_store::Error::Generic {
                        store: "LocalFileSystem",
                        source: format!(
                            "cannot remove the stale staging file _delta_log/{prefix}{name}: {e}"
                        )
                        .into(),
                    }
                    .into())
                }
            }
        }
    }
    removed.sort();
    Ok(removed)
}

/// Deletes `locations` (in bulk where the store can); a file already gone is not an error.
pub async fn delete_all(
    storage: &Storage,
    locations: Vec<object_store::path::Path>,
) -> DeltaResult<()> {
    let stream = futures::stream::iter(locations.into_iter().map(Ok));
    let mut results = storage.store().delete_stream(Box::pin(stream));
    while let Some(result) = results.next().await {
        match result {
            Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
