//! RESTORE: a table's content made equal to an earlier version's, as a new commit.
//!
//! Spec: "Add File and Remove File". The files active at the target version but not now are
//! re-added (with the statistics, deletion vectors and row tracking fields they had), the files
//! active now but not then are removed; logical files are compared by path and deletion
//! vector ("the primary key ... is `(path, deletionVector.uniqueId)`"). The metadata of the
//! target version comes back with it; the protocol never goes down ("Protocol Evolution").
//! A restore whose files are gone (vacuumed) fails before anything is committed.

use std::collections::HashSet;

use arrow::array::{Array, AsArray};
use serde_json::Value;

use crate::deletion_vector::DvDescriptor;
use crate::dml::delete_update::file_actions;
use crate::error::{DeltaError, DeltaResult};
use crate::paths::decode_uri_path;
use crate::snapshot::Snapshot;

/// `(decoded path, DV unique id)` of every active file of `snapshot`.
fn logical_files(snapshot: &Snapshot) -> DeltaResult<HashSet<(String, Option<String>)>> {
    let mut out = HashSet::with_capacity(snapshot.num_files());
    for files in snapshot.files() {
        let adds = &files.adds;
        let paths = adds
            .column_by_name("path")
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| DeltaError::Internal("add batch without paths".into()))?;
        let dvs = adds
            .column_by_name("deletionVector")
            .and_then(|c| c.as_struct_opt());
        for i in 0..adds.len() {
            let raw = paths.value(i);
            let path = decode_uri_path(raw)
                .map_err(|rule| DeltaError::corrupt(raw, None, rule))?
                .into_owned();
            let dv = match dvs {
                Some(d) if d.is_valid(i) => {
                    DvDescriptor::from_row(d, i, &path)?.map(|d| d.unique_id())
                }
                _ => None,
            };
            out.insert((path, dv));
        }
    }
    Ok(out)
}

/// The actions that turn `current` (the latest version) into `target`'s content: removes,
/// re-adds, and the target's metadata when it differs. Also the numbers of files restored and
/// removed.
pub fn restore_actions(
    current: &Snapshot,
    target: &Snapshot,
) -> DeltaResult<(Vec<Value>, u64, u64)> {
    let now = chrono::Utc::now().timestamp_millis();
    let (have, want) = (logical_files(current)?, logical_files(target)?);
    let to_remove: HashSet<String> = have.difference(&want).map(|(p, _)| p.clone()).collect();
    let to_add: HashSet<String> = want.difference(&have).map(|(p, _)| p.clone()).collect();
    let mut actions = Vec::new();
    let removes = file_actions(current, &to_remove, now)?;
    let mut removed = 0;
    for (key, _) in have.difference(&want) {
        if let Some((_, remove)) = removes.get(key) {
            actions.push(remove.clone());
            removed += 1;
        }
    }
    let adds = file_actions(target, &to_add, now)?;
    let mut restored = 0;
    for (key, _) in want.difference(&have) {
        if let Some((add, _)) = adds.get(key) {
            // Re-added files must still exist ("Data Files"): a vacuumed version cannot come
            // back.
            if let Ok(crate::storage::FileLocation::Local(p)) = current.storage().file_location(key)
            {
                if !p.exists() {
                    return Err(DeltaError::DataFileNotFound { file: key.clone() });
                }
            }
            actions.push(add.clone());
            restored += 1;
        }
    }
    let (cm, tm) = (current.metadata()?, target.metadata()?);
    if cm != tm {
        actions.push(tm.to_action());
    }
    Ok((actions, restored, removed))
}
