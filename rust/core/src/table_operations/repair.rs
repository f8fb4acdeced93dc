//! FSCK REPAIR: the table's `add` actions whose data files are missing from storage are
//! removed in one commit, so that the table can be read again (deltalake's `repair`).
//!
//! Spec: "Add File and Remove File" (a `remove` per missing file, `dataChange: true`: its rows
//! are gone). Conflicts: only a concurrent removal of one of those files conflicts
//! ([`Isolation::Rearranges`]); appends land.

use std::collections::HashSet;

use arrow::array::{Array, AsArray};
use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Map, Value};

use crate::commit::transaction::{Isolation, Transaction};
use crate::dml::delete_update::file_actions;
use crate::error::{DeltaError, DeltaResult};
use crate::paths::decode_uri_path;
use crate::snapshot::Snapshot;
use crate::storage::FileLocation;

/// How many files are checked at once.
const CHECKS_IN_FLIGHT: usize = 64;

/// What FSCK found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The version committed; `None` on a dry run or when no file is missing.
    pub version: Option<u64>,
    /// The missing files (URI-decoded paths, as in the log), sorted.
    pub missing: Vec<String>,
}

/// Whether the data file at `path` (URI-decoded, relative or absolute) exists.
async fn exists(snapshot: &Snapshot, path: &str) -> DeltaResult<bool> {
    match snapshot.storage().file_location(path)? {
        FileLocation::Local(file) => Ok(tokio::fs::try_exists(&file).await.unwrap_or(false)),
        FileLocation::Store(location) => match snapshot.storage().head(&location).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(DeltaError::Storage(e)),
        },
    }
}

/// Finds the active files missing from storage and, unless `dry_run`, removes them in one
/// commit after `snapshot`'s version.
pub async fn repair(
    snapshot: &Snapshot,
    dry_run: bool,
    commit_info: Map<String, Value>,
) -> DeltaResult<RepairReport> {
    let mut paths = Vec::new();
    for files in snapshot.files() {
        let raw = files
            .adds
            .column_by_name("path")
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| DeltaError::Internal("add batch without paths".into()))?;
        for i in 0..raw.len() {
            let decoded = decode_uri_path(raw.value(i))
                .map_err(|rule| DeltaError::corrupt(raw.value(i), None, rule))?;
            paths.push(decoded.into_owned());
        }
    }
    let checks: Vec<(String, bool)> = futures::stream::iter(paths)
        .map(|path| async move {
            let found = exists(snapshot, &path).await?;
            Ok::<_, DeltaError>((path, found))
        })
        .buffer_unordered(CHECKS_IN_FLIGHT)
        .try_collect()
        .await?;
    let mut missing: Vec<String> = checks
        .into_iter()
        .filter(|(_, found)| !found)
        .map(|(p, _)| p)
        .collect();
    missing.sort();
    if dry_run || missing.is_empty() {
        return Ok(RepairReport {
            version: None,
            missing,
        });
    }
    let wanted: HashSet<String> = missing.iter().cloned().collect();
    let now = chrono::Utc::now().timestamp_millis();
    let originals = file_actions(snapshot, &wanted, now)?;
    let removes: Vec<Value> = missing
        .iter()
        .filter_map(|p| originals.get(p).map(|(_, remove)| remove.clone()))
        .collect();
    let mut info = commit_info;
    info.insert(
        "operationMetrics".into(),
        json!({"numFilesRemoved": missing.len().to_string()}),
    );
    let mut txn = Transaction::new(
        snapshot.storage().clone(),
        Some(snapshot.version()),
        "FSCK",
        Isolation::Rearranges,
    )
    .with_read_files(wanted)
    .with_commit_info(info)
    .for_table(snapshot);
    txn.add_actions(removes);
    let version = txn.commit().await?;
    Ok(RepairReport {
        version: Some(version),
        missing,
    })
}
