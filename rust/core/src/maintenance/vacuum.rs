//! VACUUM: which files under the table root no version inside the retention window needs.
//!
//! Spec: "Add File and Remove File" (a `remove` is a tombstone kept until it expires, so that
//! the versions before it can still be read), "Deletion Vector File Storage Format" (DV files
//! live beside the data), "Add CDC File" (change data files are not part of any snapshot's
//! state) and "VACUUM Protocol Check" (checked by the caller before planning).
//!
//! A file is kept when the latest snapshot references it (an active `add` or its deletion
//! vector), when a tombstone younger than the retention references it (versions inside the
//! window still read it), or when it was modified within the retention (a writer may be about
//! to commit it). Everything else under the table root is deleted: data files, DV files and
//! `_change_data/` files. `_delta_log/` and other hidden paths (names starting with `_` or
//! `.`, except `_change_data` and partition directories of columns whose names start with
//! `_`) are never touched.

use std::collections::HashSet;

use arrow::array::{Array, AsArray, StructArray};
use arrow::datatypes::Int64Type;
use futures::TryStreamExt;

use crate::deletion_vector::DvDescriptor;
use crate::error::{DeltaError, DeltaResult};
use crate::paths::decode_uri_path;
use crate::snapshot::Snapshot;
use crate::storage::Storage;

/// A file VACUUM would delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    /// Path relative to the table root, as stored (not URI-encoded).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
}

/// The table-relative path a log path names, when it is inside the table.
fn relative(storage: &Storage, raw: &str) -> Option<String> {
    let decoded = decode_uri_path(raw).ok()?;
    let decoded = decoded.as_ref();
    if !decoded.contains("://") && !decoded.starts_with('/') && !decoded.starts_with("file:") {
        return Some(decoded.to_string());
    }
    let location = storage.resolve_absolute(decoded)?;
    store_relative(&location, storage.root())
}

/// `location` relative to `root`, parts percent-decoded (object_store encodes some
/// characters of path parts).
fn store_relative(
    location: &object_store::path::Path,
    root: &object_store::path::Path,
) -> Option<String> {
    let parts: Vec<String> = location
        .prefix_match(root)?
        .map(|p| {
            percent_encoding::percent_decode_str(p.as_ref())
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect();
    Some(parts.join("/"))
}

/// Adds the paths (and DV files) of the rows of `actions` selected by `keep` to `valid`.
fn collect(
    storage: &Storage,
    actions: &StructArray,
    keep: impl Fn(usize) -> bool,
    valid: &mut HashSet<String>,
) -> DeltaResult<()> {
    let Some(paths) = actions
        .column_by_name("path")
        .and_then(|c| c.as_string_opt::<i32>())
    else {
        return Ok(());
    };
    let dvs = actions
        .column_by_name("deletionVector")
        .and_then(|c| c.as_struct_opt())
        .filter(|d| d.null_count() < d.len());
    for row in 0..actions.len() {
        if paths.is_null(row) || !keep(row) {
            continue;
        }
        let path = paths.value(row);
        if let Some(p) = relative(storage, path) {
            valid.insert(p);
        }
        if let Some(dv) = dvs {
            if let Some(descriptor) = DvDescriptor::from_row(dv, row, path)? {
                if let Some(p) = descriptor.relative_path(path)? {
                    valid.insert(p);
                } else if descriptor.storage_type == "p" {
                    if let Some(p) = relative(storage, &descriptor.path_or_inline_dv) {
                        valid.insert(p);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether a path component hides what is below it from VACUUM.
fn hidden(component: &str, partition_columns: &[String]) -> bool {
    if component == "_change_data" {
        return false;
    }
    if !(component.starts_with('_') || component.starts_with('.')) {
        return false;
    }
    // `_col=value` is a partition directory when `_col` is a partition column.
    !component
        .split_once('=')
        .is_some_and(|(col, _)| partition_columns.iter().any(|p| p == col))
}

/// Every file under the table root, outside hidden directories: (relative path, size, mtime).
async fn list_files(
    storage: &Storage,
    partition_columns: &[String],
) -> DeltaResult<Vec<(String, u64, i64)>> {
    let visible = |rel: &str| {
        let parts: Vec<&str> = rel.split('/').collect();
        parts.first() != Some(&"_delta_log") && !parts.iter().any(|c| hidden(c, partition_columns))
    };
    if let Ok(root) = storage.url().to_file_path() {
        // Local tables: names exactly as on disk (see "File names are verbatim").
        let mut out = Vec::new();
        let mut stack = vec![(root.clone(), String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(DeltaError::InvalidArgument(format!("listing {dir:?}: {e}"))),
            };
            for entry in entries {
                let entry = entry
                    .map_err(|e| DeltaError::InvalidArgument(format!("listing {dir:?}: {e}")))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let rel = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}/{name}")
                };
                if !visible(&rel) {
                    continue;
                }
                let meta = entry
                    .metadata()
                    .map_err(|e| DeltaError::InvalidArgument(format!("reading {rel}: {e}")))?;
                if meta.is_dir() {
                    stack.push((entry.path(), rel));
                } else if meta.is_file() {
                    let mtime = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_millis() as i64);
                    out.push((rel, meta.len(), mtime));
                }
            }
        }
        return Ok(out);
    }
    let root = storage.root().clone();
    let metas: Vec<object_store::ObjectMeta> =
        storage.store().list(Some(&root)).try_collect().await?;
    Ok(metas
        .into_iter()
        .filter_map(|m| {
            let rel = store_relative(&m.location, &root)?;
            visible(&rel).then(|| (rel, m.size, m.last_modified.timestamp_millis()))
        })
        .collect())
}

/// The files VACUUM deletes as of `now_ms` with `retention_ms` (see the module docs), sorted.
pub async fn expired_files(
    snapshot: &Snapshot,
    retention_ms: i64,
    now_ms: i64,
) -> DeltaResult<Vec<Expired>> {
    let storage = snapshot.storage();
    let cutoff = now_ms.saturating_sub(retention_ms);
    let mut valid: HashSet<String> = HashSet::new();
    for batch in snapshot.files() {
        collect(storage, &batch.adds, |_| true, &mut valid)?;
    }
    for removes in snapshot.removes() {
        let ts = removes
            .column_by_name("deletionTimestamp")
            .and_then(|c| c.as_primitive_opt::<Int64Type>());
        // A tombstone without a timestamp never expires.
        let young = |row: usize| ts.is_none_or(|t| t.is_null(row) || t.value(row) > cutoff);
        collect(storage, removes, young, &mut valid)?;
    }
    let partition_columns = snapshot
        .metadata()
        .map(|m| m.partition_columns.clone())
        .unwrap_or_default();
    let mut out: Vec<Expired> = list_files(storage, &partition_columns)
        .await?
        .into_iter()
        .filter(|(path, _, mtime)| *mtime < cutoff && !valid.contains(path))
        .map(|(path, size, _)| Expired { path, size })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Deletes table-relative `paths`; a file already gone is not an error. Returns how many.
pub async fn delete_files(storage: &Storage, paths: &[String]) -> DeltaResult<usize> {
    if let Ok(root) = storage.url().to_file_path() {
        for p in paths {
            match std::fs::remove_file(root.join(p)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(DeltaError::Storage(object_store::Error::Generic {
                        store: "LocalFileSystem",
                        source: format!("deleting {p}: {e}").into(),
                    }))
                }
            }
        }
        return Ok(paths.len());
    }
    let locations = paths.iter().map(|p| storage.table_path(p)).collect();
    crate::maintenance::cleanup::delete_all(storage, locations).await?;
    Ok(paths.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_paths() {
        let parts = vec!["_p".to_string()];
        assert!(hidden("_delta_log", &parts));
        assert!(hidden(".hidden", &parts));
        assert!(hidden("_tmp", &parts));
        assert!(!hidden("_change_data", &parts));
        assert!(!hidden("_p=1", &parts));
        assert!(hidden("_q=1", &parts));
        assert!(!hidden("part=1", &parts));
    }
}
