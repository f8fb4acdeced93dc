//! Log compaction files: the reconciled actions of a commit range.
//!
//! Spec: "Log Compaction Files". `<x>.<y>.compacted.json` holds the result of "Action
//! Reconciliation" over commits `x..=y`: the newest `protocol` and `metaData`, the newest `txn`
//! per application, the newest `domainMetadata` per domain (a removal too: it must still hide
//! older entries), and per logical file `(path, deletionVector.uniqueId)` its newest action:
//! an `add` if the file is live at `y`, else the `remove` (a tombstone that cancels an older
//! add). `commitInfo` and `cdc` are not state and are dropped. Actions are copied as they were
//! written (statistics text included), in the order of the spec's example: adds, removes, then
//! the non-file actions. Readers use the file instead of the range's commits (`segment`).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::error::{DeltaError, DeltaResult};
use crate::log::path::commit_file_name;
use crate::maintenance::sink::FileSink;
use crate::paths::{dv_unique_id, file_key};
use crate::storage::Storage;

/// The name of the compaction of `start..=end`.
pub fn compaction_file_name(start: u64, end: u64) -> String {
    format!("{start:020}.{end:020}.compacted.json")
}

/// The logical-file key of an `add`/`remove` action object.
fn action_key(action: &Value, file: &str, version: u64) -> DeltaResult<String> {
    let path = action.get("path").and_then(Value::as_str).ok_or_else(|| {
        DeltaError::corrupt(
            file,
            Some(version),
            "a file action without a path (\"Add File and Remove File\")",
        )
    })?;
    let dv = action
        .get("deletionVector")
        .filter(|d| !d.is_null())
        .map(|d| {
            dv_unique_id(
                d.get("storageType")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                d.get("pathOrInlineDv")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                d.get("offset")
                    .and_then(Value::as_i64)
                    .and_then(|o| i32::try_from(o).ok()),
            )
        });
    file_key(path, dv.as_deref())
        .map(|k| k.into_owned())
        .map_err(|e| DeltaError::corrupt(file, Some(version), e))
}

/// Reconciles commits `start..=end` of the table in `storage` and writes their compaction;
/// returns its table-relative path. Every commit of the range must exist.
pub async fn write_compaction(storage: &Storage, start: u64, end: u64) -> DeltaResult<String> {
    if start > end {
        return Err(DeltaError::InvalidArgument(format!(
            "a log compaction needs start <= end, got {start}..{end}"
        )));
    }
    // Newest first: the first action seen for a key wins ("Action Reconciliation").
    let mut seen_files: HashSet<String> = HashSet::new();
    let mut adds: Vec<String> = Vec::new();
    let mut removes: Vec<String> = Vec::new();
    let mut protocol: Option<String> = None;
    let mut metadata: Option<String> = None;
    let mut txns: HashMap<String, String> = HashMap::new();
    let mut domains: HashMap<String, String> = HashMap::new();
    for version in (start..=end).rev() {
        let name = commit_file_name(version);
        let file = format!("_delta_log/{name}");
        let bytes = match storage.get(&storage.log_path(&name)).await {
            Ok(b) => b,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(DeltaError::version_not_found(format!(
                    "commit {version} is missing: a compaction of {start}..={end} needs every \
                     commit of the range"
                )))
            }
            Err(e) => return Err(e.into()),
        };
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| DeltaError::corrupt(&file, Some(version), "not UTF-8"))?;
        // Within one commit no two actions reconcile with each other ("Delta Log Entries"),
        // so the order inside the file does not matter.
        let mut version_adds = Vec::new();
        let mut version_removes = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let value: Value = serde_json::from_str(line).map_err(|e| {
                DeltaError::corrupt(&file, Some(version), format!("invalid action JSON: {e}"))
            })?;
            let Some(object) = value.as_object() else {
                return Err(DeltaError::corrupt(
                    &file,
                    Some(version),
                    "an action is not a JSON object",
                ));
            };
            let Some((kind, action)) = object.iter().find(|(_, v)| !v.is_null()) else {
                continue;
            };
            match kind.as_str() {
                "add" | "remove" => {
                    let key = action_key(action, &file, version)?;
                    if seen_files.insert(key) {
                        if kind == "add" {
                            version_adds.push(line.to_string());
                        } else {
                            version_removes.push(line.to_string());
                        }
                    }
                }
                "protocol" if protocol.is_none() => protocol = Some(line.to_string()),
                "metaData" if metadata.is_none() => metadata = Some(line.to_string()),
                "txn" => {
                    if let Some(app) = action.get("appId").and_then(Value::as_str) {
                        txns.entry(app.to_string())
                            .or_insert_with(|| line.to_string());
                    }
                }
                "domainMetadata" => {
                    if let Some(domain) = action.get("domain").and_then(Value::as_str) {
                        domains
                            .entry(domain.to_string())
                            .or_insert_with(|| line.to_string());
                    }
                }
                // commitInfo, cdc and actions this version does not know are not table state.
                _ => {}
            }
        }
        // Keep ascending commit order in the output (newer files last).
        adds.splice(0..0, version_adds);
        removes.splice(0..0, version_removes);
    }
    let mut lines: Vec<String> = Vec::with_capacity(adds.len() + removes.len() + 4);
    lines.extend(adds);
    lines.extend(removes);
    lines.extend(protocol);
    lines.extend(metadata);
    let mut txns: Vec<(String, String)> = txns.into_iter().collect();
    txns.sort();
    lines.extend(txns.into_iter().map(|(_, l)| l));
    let mut domains: Vec<(String, String)> = domains.into_iter().collect();
    domains.sort();
    lines.extend(domains.into_iter().map(|(_, l)| l));

    let target = format!("_delta_log/{}", compaction_file_name(start, end));
    let mut sink = FileSink::create(storage, &target).await?;
    for line in &lines {
        std::io::Write::write_all(&mut sink, line.as_bytes())
            .and_then(|_| std::io::Write::write_all(&mut sink, b"\n"))
            .map_err(|e| DeltaError::Internal(format!("writing {target}: {e}")))?;
        sink.drain().await?;
    }
    sink.commit().await?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(dir: &std::path::Path, version: u64, lines: &[&str]) {
        let log = dir.join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        std::fs::write(log.join(commit_file_name(version)), lines.join("\n") + "\n").unwrap();
    }

    /// The example of "Log Compaction Files".
    #[tokio::test]
    async fn spec_example() {
        let dir = tempfile::tempdir().unwrap();
        commit(
            dir.path(),
            4,
            &[
                r#"{"commitInfo":{"operation":"WRITE"}}"#,
                r#"{"add":{"path":"f2","size":1}}"#,
                r#"{"remove":{"path":"f1"}}"#,
            ],
        );
        commit(
            dir.path(),
            5,
            &[
                r#"{"commitInfo":{"operation":"WRITE"}}"#,
                r#"{"add":{"path":"f3","size":1}}"#,
                r#"{"add":{"path":"f4","size":1}}"#,
                r#"{"txn":{"appId":"3ae45b72-24e1-865a-a211-34987ae02f2a","version":4389}}"#,
            ],
        );
        commit(
            dir.path(),
            6,
            &[
                r#"{"commitInfo":{"operation":"WRITE"}}"#,
                r#"{"remove":{"path":"f3"}}"#,
                r#"{"txn":{"appId":"3ae45b72-24e1-865a-a211-34987ae02f2a","version":4390}}"#,
            ],
        );
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let target = write_compaction(&storage, 4, 6).await.unwrap();
        assert_eq!(
            target,
            "_delta_log/00000000000000000004.00000000000000000006.compacted.json"
        );
        let text = std::fs::read_to_string(dir.path().join(&target)).unwrap();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            vec![
                r#"{"add":{"path":"f2","size":1}}"#,
                r#"{"add":{"path":"f4","size":1}}"#,
                r#"{"remove":{"path":"f1"}}"#,
                r#"{"remove":{"path":"f3"}}"#,
                r#"{"txn":{"appId":"3ae45b72-24e1-865a-a211-34987ae02f2a","version":4390}}"#,
            ]
        );
        let err = write_compaction(&storage, 3, 6).await.unwrap_err();
        assert!(err.to_string().contains("commit 3 is missing"), "{err}");
        assert!(write_compaction(&storage, 6, 4).await.is_err());
    }
}
