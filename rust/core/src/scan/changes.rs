//! Change data feed: the row-level changes of a range of versions as file tasks.
//!
//! Spec: "Add CDC File" and its "Reader Requirements for AddCDCFile". For each version in the
//! range: when it has `cdc` actions, its changes are exactly the rows of those change data
//! files (their `_change_type` column says insert, delete, update_preimage or
//! update_postimage); otherwise the rows of its `add` actions are inserts and the rows of its
//! `remove` actions deletes (only actions with `dataChange` true change data). A file that is
//! removed and re-added in the same version with another deletion vector changed only the rows
//! whose deletion state changed: the rows the new vector deletes and the old one did not are
//! deletes, the reverse inserts. Every row carries `_commit_version` and `_commit_timestamp`
//! (the in-commit timestamp where enabled, else the commit file's modification time, as for
//! time travel).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::deletion_vector::DvDescriptor;
use crate::error::{DeltaError, DeltaResult};
use crate::log::catalog::joined_listing;
use crate::log::timeline::{ict_applies, monotonic_file_times};
use crate::paths::decode_uri_path;
use crate::scan::task::FileTask;
use crate::snapshot::Snapshot;

/// Change type of inserted rows.
pub const INSERT: &str = "insert";
/// Change type of deleted rows.
pub const DELETE: &str = "delete";

/// What makes a file task part of a change feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// `insert` or `delete`; `None` for change data files, whose `_change_type` column says.
    pub change_type: Option<String>,
    /// The version whose commit made the change.
    pub commit_version: i64,
    /// The commit's timestamp, in milliseconds since the epoch.
    pub commit_timestamp: i64,
    /// Only the rows this deletion vector deletes (minus those of the task's own deletion
    /// vector): the rows whose state a re-added file's new deletion vector changed.
    pub only_rows_of: Option<DvDescriptor>,
}

/// One file action of a commit, as the change feed needs it.
struct FileAction {
    path: String,
    size: Option<u64>,
    partition_values: std::collections::BTreeMap<String, Option<String>>,
    deletion_vector: Option<DvDescriptor>,
}

impl FileAction {
    fn parse(body: &Value, name: &str, version: u64) -> DeltaResult<Self> {
        let corrupt = |rule: String| DeltaError::corrupt(name, Some(version), rule);
        let raw = body
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| corrupt("a file action has no path".into()))?;
        let path = decode_uri_path(raw).map_err(corrupt)?.into_owned();
        let partition_values = body
            .get("partitionValues")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string)))
                    .collect()
            })
            .unwrap_or_default();
        let deletion_vector = match body.get("deletionVector") {
            Some(v) if !v.is_null() => Some(
                serde_json::from_value::<DvDescriptor>(v.clone())
                    .map_err(|e| corrupt(format!("invalid deletionVector of {path}: {e}")))?,
            ),
            _ => None,
        };
        Ok(FileAction {
            size: body.get("size").and_then(Value::as_u64),
            path,
            partition_values,
            deletion_vector,
        })
    }

    fn task(self, change: Change) -> FileTask {
        FileTask {
            path: self.path,
            size: self.size,
            partition_values: self.partition_values,
            deletion_vector: self.deletion_vector,
            base_row_id: None,
            default_row_commit_version: None,
            num_records: None,
            change: Some(change),
        }
    }
}

/// The change feed tasks of versions `start..=end` (`end` is `snapshot`'s version), in
/// version order.
pub async fn change_tasks(snapshot: &Snapshot, start: u64) -> DeltaResult<Vec<FileTask>> {
    let end = snapshot.version();
    if start > end {
        return Err(DeltaError::InvalidArgument(format!(
            "the change feed starts at version {start}, after its end version {end}"
        )));
    }
    let storage = snapshot.storage();
    // A catalog-managed table's change feed includes its unpublished commits.
    let listing = joined_listing(storage, snapshot.catalog()).await?;
    let commits: Vec<_> = monotonic_file_times(&listing)
        .into_iter()
        .filter(|(v, _, _)| (start..=end).contains(v))
        .collect();
    let expected = end - start + 1;
    if commits.len() as u64 != expected || commits.first().map(|c| c.0) != Some(start) {
        let first = commits.first().map_or(end, |c| c.0);
        return Err(DeltaError::version_not_found(format!(
            "the commits of versions {start}..={end} are not all in the log (the earliest \
             available in that range is {first}); the change feed cannot be read from there"
        )));
    }
    // A catalog that records what it ratified: each published commit read here must be the
    // ratified one (`log::published`), checked on the bytes read.
    let digests = match snapshot.catalog() {
        Some(client) => client.published_digests(start, end).await?,
        None => Default::default(),
    };
    let config = snapshot.configuration();
    let mut tasks = Vec::new();
    // Whether each version recorded its changes, decided after the loop: the property in
    // force at `start` comes from a `metaData` of that version, else (no metaData in the
    // range) from the end snapshot, else from a snapshot of `start`.
    let mut recorded_from: Vec<(u64, bool)> = Vec::new();
    for (version, file_time, file) in commits {
        let name = format!("_delta_log/{}", file.name);
        let bytes = file.read(storage).await?;
        if let (None, Some(expected)) = (&file.inline, digests.get(&version)) {
            crate::log::published::check_digest(&file.name, version, &bytes, expected)?;
        }
        let (mut adds, mut removes, mut cdcs) = (Vec::new(), Vec::new(), Vec::new());
        let mut ict = None;
        for line in bytes.split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: Value = serde_json::from_slice(line).map_err(|e| {
                DeltaError::corrupt(&name, Some(version), format!("invalid action JSON: {e}"))
            })?;
            let data_change =
                |b: &Value| b.get("dataChange").and_then(Value::as_bool) != Some(false);
            // A null action field is no action ("Delta Log Entries": one action per line).
            let action = |key: &str| value.get(key).filter(|v| !v.is_null());
            if let Some(b) = action("add") {
                if data_change(b) {
                    adds.push(FileAction::parse(b, &name, version)?);
                }
            } else if let Some(b) = action("remove") {
                if data_change(b) {
                    removes.push(FileAction::parse(b, &name, version)?);
                }
            } else if let Some(b) = action("cdc") {
                cdcs.push(FileAction::parse(b, &name, version)?);
            } else if let Some(ci) = action("commitInfo") {
                ict = ci.get("inCommitTimestamp").and_then(Value::as_i64);
            } else if let Some(m) = action("metaData") {
                let enabled = m
                    .get("configuration")
                    .and_then(|c| c.get(CDF_PROPERTY))
                    .and_then(Value::as_str)
                    .is_some_and(is_true);
                recorded_from.push((version, enabled));
            }
        }
        let timestamp = match ict {
            Some(t) if ict_applies(&config, version) => t,
            _ => file_time,
        };
        let change = |change_type: Option<&str>, only_rows_of: Option<DvDescriptor>| Change {
            change_type: change_type.map(str::to_string),
            commit_version: version as i64,
            commit_timestamp: timestamp,
            only_rows_of,
        };
        if !cdcs.is_empty() {
            // "read only those to get the row-level changes, and skip the remaining add and
            // remove actions in this version".
            tasks.extend(cdcs.into_iter().map(|c| c.task(change(None, None))));
            continue;
        }
        let mut removed: HashMap<String, FileAction> =
            removes.into_iter().map(|r| (r.path.clone(), r)).collect();
        let mut inserted = Vec::new();
        for add in adds {
            let Some(old) = removed.remove(&add.path) else {
                inserted.push(add);
                continue;
            };
            // The same file with a new deletion vector: rows the new vector deletes and the
            // old did not were deleted; rows the old deleted and the new does not, restored.
            let (old_dv, new_dv) = (old.deletion_vector.clone(), add.deletion_vector.clone());
            if old_dv == new_dv {
                continue;
            }
            if let Some(new) = new_dv.clone() {
                let t = FileAction {
                    deletion_vector: old_dv.clone(),
                    ..add
                };
                tasks.push(t.task(change(Some(DELETE), Some(new))));
            }
            if let Some(old_vector) = old_dv {
                let t = FileAction {
                    deletion_vector: new_dv,
                    ..old
                };
                tasks.push(t.task(change(Some(INSERT), Some(old_vector))));
            }
        }
        tasks.extend(
            inserted
                .into_iter()
                .map(|a| a.task(change(Some(INSERT), None))),
        );
        let mut deleted: Vec<FileAction> = removed.into_values().collect();
        deleted.sort_by(|a, b| a.path.cmp(&b.path));
        tasks.extend(
            deleted
                .into_iter()
                .map(|r| r.task(change(Some(DELETE), None))),
        );
    }
    let at_start = match recorded_from.first() {
        Some(&(version, enabled)) if version == start => enabled,
        None => config.get(CDF_PROPERTY).is_some_and(|v| is_true(v)),
        Some(_) => {
            let earlier = Snapshot::try_new(storage.clone(), Some(start)).await?;
            let config = earlier.configuration();
            config.get(CDF_PROPERTY).is_some_and(|v| is_true(v))
        }
    };
    if let Some(version) = first_unrecorded(start, end, at_start, &recorded_from) {
        return Err(DeltaError::ChangeDataNotRecorded {
            start,
            end,
            version,
        });
    }
    Ok(tasks)
}

/// The table property that makes writers record changes.
pub const CDF_PROPERTY: &str = "delta.enableChangeDataFeed";

fn is_true(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("true")
}

/// The first version of `start..=end` whose changes were not recorded, given whether they were
/// at `start` and the versions (ascending) whose `metaData` set the property on or off.
/// Deriving changes from `add` and `remove` actions ("Reader Requirements for AddCDCFile") is
/// only sound where writers had to record `cdc` files for every change that needs them,
/// which is where `delta.enableChangeDataFeed` was true; Delta Spark refuses the rest too.
fn first_unrecorded(start: u64, end: u64, at_start: bool, changes: &[(u64, bool)]) -> Option<u64> {
    if !at_start {
        return Some(start);
    }
    changes
        .iter()
        .find(|&&(version, enabled)| !enabled && (start..=end).contains(&version))
        .map(|&(version, _)| version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unrecorded_versions() {
        // Enabled at the start, never changed.
        assert_eq!(first_unrecorded(0, 5, true, &[]), None);
        // Not enabled at the start.
        assert_eq!(first_unrecorded(2, 5, false, &[]), Some(2));
        // Turned off at 4 (the start's own metaData turned it on).
        assert_eq!(
            first_unrecorded(1, 5, true, &[(1, true), (4, false)]),
            Some(4)
        );
        // Off then on again: the first version off is named.
        assert_eq!(
            first_unrecorded(0, 9, true, &[(3, false), (5, true)]),
            Some(3)
        );
        assert!(is_true(" TRUE") && !is_true("yes"));
    }
}
