//! Commit timestamps, time travel by timestamp, and history (the commits it lists are shared
//! with [`crate::log::version_changes`]).
//!
//! Spec: "In-Commit Timestamps" and "Recommendations for Readers of Tables with In-Commit
//! Timestamps". Without in-commit timestamps a commit's timestamp is the modification time of
//! its `n.json`; since file times can go backwards (clock skew, copies), they are made strictly
//! increasing in version order (a commit older than its predecessor is taken as one millisecond
//! after it), as Delta Spark does. With in-commit timestamps enabled, versions at or after
//! `delta.inCommitTimestampEnablementVersion` use `commitInfo.inCommitTimestamp`.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use serde_json::Value;

use crate::error::{DeltaError, DeltaResult};
use crate::log::catalog::{joined_listing, CatalogClient};
use crate::log::checkpoint_reader::open_checkpoint;
use crate::log::reader::protocol_and_metadata;
use crate::log::replay::Origin;
use crate::log::segment::{
    build_segment, not_a_table, LogFile, LogListing, LogSegment, SegmentError,
};
use crate::maintenance::version_checksum::checksum_file_name;
use crate::snapshot::Snapshot;
use crate::storage::Storage;

const ENABLE_ICT: &str = "delta.enableInCommitTimestamps";
const ICT_VERSION: &str = "delta.inCommitTimestampEnablementVersion";
const ICT_TIMESTAMP: &str = "delta.inCommitTimestampEnablementTimestamp";

/// In-commit timestamp settings of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IctSettings {
    /// First version with in-commit timestamps (0 when the table had them from the start).
    pub enablement_version: u64,
    /// The in-commit timestamp of that version, when recorded.
    pub enablement_timestamp: Option<i64>,
}

/// The in-commit timestamp settings, when the feature is enabled by the table properties.
pub fn ict_settings(config: &BTreeMap<String, String>) -> Option<IctSettings> {
    let enabled = config
        .get(ENABLE_ICT)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !enabled {
        return None;
    }
    Some(IctSettings {
        enablement_version: config
            .get(ICT_VERSION)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0),
        enablement_timestamp: config
            .get(ICT_TIMESTAMP)
            .and_then(|v| v.trim().parse().ok()),
    })
}

/// Whether `version`'s timestamp is its in-commit timestamp.
pub fn ict_applies(config: &BTreeMap<String, String>, version: u64) -> bool {
    ict_settings(config).is_some_and(|s| version >= s.enablement_version)
}

/// Commit files with their monotonized modification times, ascending by version.
pub fn monotonic_file_times(listing: &LogListing) -> Vec<(u64, i64, LogFile)> {
    let mut out: Vec<(u64, i64, LogFile)> = Vec::new();
    for (version, file) in listing.commits() {
        let mut ts = file.meta.last_modified.timestamp_millis();
        if let Some((_, prev, _)) = out.last() {
            if ts <= *prev {
                ts = prev + 1;
            }
        }
        out.push((version, ts, file.clone()));
    }
    out
}

/// The first line of a commit that holds `commitInfo`, parsed; `None` when it has none.
pub async fn read_commit_info(
    storage: &Storage,
    file: &LogFile,
    version: u64,
) -> DeltaResult<Option<Value>> {
    let bytes = file.read(storage).await?;
    let name = format!("_delta_log/{}", file.name);
    for line in bytes.split(|b| *b == b'\n') {
        // Cheap pre-filter: only lines mentioning commitInfo are parsed.
        if !line.windows(12).any(|w| w == b"\"commitInfo\"") {
            continue;
        }
        let value: Value = serde_json::from_slice(line).map_err(|e| {
            DeltaError::corrupt(&name, Some(version), format!("invalid action JSON: {e}"))
        })?;
        if let Some(ci) = value.get("commitInfo") {
            return Ok(Some(ci.clone()));
        }
    }
    Ok(None)
}

/// The in-commit timestamp of commit `version` (an error when it has none).
async fn read_ict(storage: &Storage, file: &LogFile, version: u64) -> DeltaResult<i64> {
    read_commit_info(storage, file, version)
        .await?
        .and_then(|ci| ci.get("inCommitTimestamp").and_then(Value::as_i64))
        .ok_or_else(|| {
            DeltaError::corrupt(
                format!("_delta_log/{}", file.name),
                Some(version),
                "in-commit timestamps are enabled but the commit has no \
                 commitInfo.inCommitTimestamp (spec: \"Writer Requirements for In-Commit \
                 Timestamps\")",
            )
        })
}

/// The in-commit timestamp of `segment.version` when replay read no commit of that version (the
/// snapshot starts at a checkpoint of that version): "Recommendations for Readers of Tables
/// with In-Commit Timestamps" make it the timestamp of the version whichever file the state
/// came from. It is taken from the version's commit file `<v>.json` when listed; else (the
/// commit was cleaned up) from the version checksum file's `inCommitTimestampOpt` (a checkpoint
/// holds no `commitInfo`: "Checkpoints" must not preserve commit provenance information).
/// `None` when neither has one, or when a commit of that version was replayed (its own
/// `commitInfo` was read then).
pub async fn unreplayed_ict(storage: &Storage, segment: &LogSegment) -> DeltaResult<Option<i64>> {
    let replayed = segment
        .deltas
        .last()
        .is_some_and(|d| d.end_version() >= segment.version);
    if replayed {
        return Ok(None);
    }
    if let Some(file) = &segment.last_commit {
        return Ok(read_commit_info(storage, file, segment.version)
            .await?
            .and_then(|ci| ci.get("inCommitTimestamp").and_then(Value::as_i64)));
    }
    // The checksum file is a hint: unreadable or malformed, it gives no timestamp.
    let crc = checksum_file_name(segment.version);
    let Ok(bytes) = storage.get(&storage.log_path(&crc)).await else {
        return Ok(None);
    };
    Ok(serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("inCommitTimestampOpt").and_then(Value::as_i64)))
}

/// The version to load for "the table as of `timestamp_ms`": the latest version committed at
/// or before it. Before the first commit is an error; after the latest commit gives the latest.
///
/// A catalog-managed table (`catalog`) is read with its unpublished commits, and its versions
/// are found by in-commit timestamps only (catalogManaged RFC, "Writer Requirements for
/// Catalog-managed tables": in-commit timestamps are mandatory; a held commit has no file
/// time).
pub async fn version_at_timestamp(
    storage: &Storage,
    catalog: Option<&Arc<dyn CatalogClient>>,
    timestamp_ms: i64,
) -> DeltaResult<u64> {
    let listing = joined_listing(storage, catalog).await?;
    if listing.files.is_empty() {
        return Err(not_a_table(storage).await);
    }
    let (latest_version, config) = latest_configuration(storage, &listing).await?;
    if catalog.is_some() && ict_settings(&config).is_none() {
        return Err(DeltaError::corrupt(
            "_delta_log",
            Some(latest_version),
            "a catalog-managed table must have in-commit timestamps enabled \
             (catalogManaged RFC: \"Writer Requirements for Catalog-managed tables\"); its \
             versions cannot be found by timestamp without them",
        ));
    }
    let commits = monotonic_file_times(&listing);

    if let Some(ict) = ict_settings(&config) {
        let use_ict = ict
            .enablement_timestamp
            .is_none_or(|enabled_at| timestamp_ms >= enabled_at);
        if use_ict {
            let candidates: Vec<&(u64, i64, LogFile)> = commits
                .iter()
                .filter(|(v, _, _)| *v >= ict.enablement_version)
                .collect();
            // In-commit timestamps increase with the version: binary search on them.
            let (mut lo, mut hi) = (0usize, candidates.len());
            while lo < hi {
                let mid = (lo + hi) / 2;
                let (v, _, file) = candidates[mid];
                if read_ict(storage, file, *v).await? <= timestamp_ms {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo > 0 {
                return Ok(candidates[lo - 1].0);
            }
            if ict.enablement_version == 0 || ict.enablement_timestamp.is_none() {
                return Err(before_first(timestamp_ms, candidates.first().map(|c| c.0)));
            }
            // Earlier than the first in-commit timestamp: fall back to file times below.
        }
        let before: Vec<&(u64, i64, LogFile)> = commits
            .iter()
            .filter(|(v, _, _)| *v < ict.enablement_version)
            .collect();
        return before
            .iter()
            .rev()
            .find(|(_, ts, _)| *ts <= timestamp_ms)
            .map(|(v, _, _)| *v)
            .ok_or_else(|| before_first(timestamp_ms, before.first().map(|c| c.0)));
    }

    let found = commits
        .iter()
        .rev()
        .find(|(_, ts, _)| *ts <= timestamp_ms)
        .map(|(v, _, _)| *v);
    match found {
        Some(v) => Ok(v),
        None if commits.is_empty() => Ok(latest_version),
        None => Err(before_first(timestamp_ms, commits.first().map(|c| c.0))),
    }
}

/// The latest version and its table properties, from the protocol/metadata pass only (the
/// newest commits' lines that mention them, then the checkpoint's non-file actions): time
/// travel needs the in-commit-timestamp settings, not the files.
async fn latest_configuration(
    storage: &Storage,
    listing: &LogListing,
) -> DeltaResult<(u64, BTreeMap<String, String>)> {
    let segment = match build_segment(listing, None) {
        Ok(segment) => segment,
        Err(SegmentError::Fatal(e)) => return Err(e),
        Err(SegmentError::NeedFullListing(reason)) => {
            return Err(DeltaError::corrupt("_delta_log", None, reason))
        }
    };
    let newest_first = segment.deltas.iter().rev().cloned().collect();
    let mut found = protocol_and_metadata(storage, newest_first).await?;
    if found.metadata.is_none() {
        if let Some(cp) = &segment.checkpoint {
            let origin = Origin {
                file: format!("_delta_log/{}", cp.parts[0].name),
                version: cp.version,
            };
            for batch in &open_checkpoint(storage, cp).await?.header {
                found.apply_non_file_actions(batch, &origin)?;
            }
        }
    }
    let config = found
        .metadata
        .map(|(m, _)| m.configuration)
        .unwrap_or_default();
    Ok((segment.version, config))
}

fn before_first(timestamp_ms: i64, first: Option<u64>) -> DeltaError {
    let ts = chrono::DateTime::from_timestamp_millis(timestamp_ms)
        .map(|d| d.to_rfc3339())
        .unwrap_or_else(|| timestamp_ms.to_string());
    DeltaError::version_not_found(format!(
        "no version of the table was committed at or before {ts}{}",
        first.map_or(String::new(), |v| format!(
            " (the earliest available commit is version {v})"
        ))
    ))
}

/// One entry of the table history.
#[derive(Debug, Clone)]
pub struct HistoryEntry {
    /// The version.
    pub version: u64,
    /// The commit timestamp (in-commit timestamp or monotonized file time), ms since epoch.
    pub timestamp: i64,
    /// The commit's `commitInfo`, when it has one.
    pub commit_info: Option<Value>,
}

/// A commit of the history, as [`history`] and
/// [`version_changes`](crate::log::version_changes::version_changes) choose them.
#[derive(Debug, Clone)]
pub struct HistoryCommit {
    /// The version.
    pub version: u64,
    /// The monotonized modification time of its file ([`monotonic_file_times`]).
    pub file_time: i64,
    /// The commit file (an unpublished commit of a catalog-managed table included).
    pub file: LogFile,
    /// The table's in-commit timestamp settings, as of the snapshot.
    ict: Option<IctSettings>,
}

impl HistoryCommit {
    /// The commit's timestamp given its `commitInfo`: the in-commit timestamp when they apply
    /// to this version and the commit has one, else the monotonized file time.
    pub fn timestamp(&self, commit_info: Option<&Value>) -> i64 {
        self.ict
            .filter(|s| self.version >= s.enablement_version)
            .and(commit_info)
            .and_then(|ci| ci.get("inCommitTimestamp"))
            .and_then(Value::as_i64)
            .unwrap_or(self.file_time)
    }
}

/// `read` of each commit of `snapshot`'s table up to its version, newest first, at most
/// `limit` of them, 16 read at a time.
///
/// A catalog-managed table's commits include its unpublished ones.
pub async fn map_history<T, F, Fut>(
    snapshot: &Snapshot,
    limit: Option<usize>,
    mut read: F,
) -> DeltaResult<Vec<T>>
where
    F: FnMut(Storage, HistoryCommit) -> Fut,
    Fut: Future<Output = DeltaResult<T>>,
{
    let storage = snapshot.storage();
    let listing = joined_listing(storage, snapshot.catalog()).await?;
    let ict = ict_settings(&snapshot.configuration());
    let commits: Vec<(u64, i64, LogFile)> = monotonic_file_times(&listing)
        .into_iter()
        .filter(|(v, _, _)| *v <= snapshot.version())
        .collect();
    let take = limit.unwrap_or(usize::MAX).min(commits.len());
    let chosen = commits
        .into_iter()
        .rev()
        .take(take)
        .map(|(version, file_time, file)| HistoryCommit {
            version,
            file_time,
            file,
            ict,
        });
    stream::iter(chosen)
        .map(|commit| read(storage.clone(), commit))
        .buffered(16)
        .try_collect()
        .await
}

/// The history of `snapshot`'s table up to its version, newest first, at most `limit` entries.
///
/// A catalog-managed table's history includes its unpublished commits.
pub async fn history(snapshot: &Snapshot, limit: Option<usize>) -> DeltaResult<Vec<HistoryEntry>> {
    map_history(snapshot, limit, |storage, commit| async move {
        let commit_info = read_commit_info(&storage, &commit.file, commit.version).await?;
        Ok(HistoryEntry {
            version: commit.version,
            timestamp: commit.timestamp(commit_info.as_ref()),
            commit_info,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ict_settings_from_properties() {
        let mut c = BTreeMap::new();
        assert!(ict_settings(&c).is_none());
        c.insert(ENABLE_ICT.to_string(), "true".to_string());
        assert_eq!(
            ict_settings(&c),
            Some(IctSettings {
                enablement_version: 0,
                enablement_timestamp: None
            })
        );
        c.insert(ICT_VERSION.to_string(), "5".to_string());
        c.insert(ICT_TIMESTAMP.to_string(), "1700000000000".to_string());
        let s = ict_settings(&c).unwrap();
        assert_eq!(s.enablement_version, 5);
        assert_eq!(s.enablement_timestamp, Some(1_700_000_000_000));
        assert!(ict_applies(&c, 5));
        assert!(!ict_applies(&c, 4));
        c.insert(ENABLE_ICT.to_string(), "false".to_string());
        assert!(!ict_applies(&c, 7));
    }
}
