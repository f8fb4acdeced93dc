//! What each version of a table's history changed (issue #47): the files and bytes its commit
//! added and removed, the deletion vectors it added, whether it changed the metadata or the
//! protocol, with its timestamp and `commitInfo`.
//!
//! The commits are those [`timeline::history`] lists, chosen and timed the same way
//! ([`timeline::map_history`]). Each commit file is read once, and each of its lines is decoded
//! into a small struct that keeps only what is summed here (serde skips every other field without
//! building it).

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{DeltaError, DeltaResult};
use crate::log::timeline::{self, HistoryCommit};
use crate::snapshot::Snapshot;
use crate::storage::Storage;

/// What one version's commit changed.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionChange {
    /// The version.
    pub version: u64,
    /// The commit timestamp, ms since epoch, as [`timeline::history`] gives it.
    pub timestamp: i64,
    /// The commit's `commitInfo` (the first one, as [`timeline::read_commit_info`] reads it).
    pub commit_info: Option<Value>,
    /// The number of `add` actions.
    pub files_added: u64,
    /// The sum of their `size`.
    pub bytes_added: u64,
    /// The number of `remove` actions.
    pub files_removed: u64,
    /// The sum of the `size` of those that have one.
    pub bytes_removed: u64,
    /// The number of `remove` actions without a `size` (it is optional in "Add File and Remove
    /// File"), not in `bytes_removed`.
    pub removed_without_size: u64,
    /// The number of `add` actions carrying a `deletionVector`.
    pub deletion_vectors_added: u64,
    /// Whether the commit holds a `metaData` action.
    pub metadata_changed: bool,
    /// Whether the commit holds a `protocol` action.
    pub protocol_changed: bool,
}

/// What each version of `snapshot`'s table up to its version changed, newest first, at most
/// `limit` entries: the versions and timestamps of [`timeline::history`] (a catalog-managed
/// table's unpublished commits included).
pub async fn version_changes(
    snapshot: &Snapshot,
    limit: Option<usize>,
) -> DeltaResult<Vec<VersionChange>> {
    timeline::map_history(snapshot, limit, read_change).await
}

async fn read_change(storage: Storage, commit: HistoryCommit) -> DeltaResult<VersionChange> {
    let bytes = commit.file.read(&storage).await?;
    let name = format!("_delta_log/{}", commit.file.name);
    let mut change = tally(&bytes, &name, commit.version)?;
    change.timestamp = commit.timestamp(change.commit_info.as_ref());
    Ok(change)
}

/// One line of a commit, reduced to what [`tally`] needs. Unknown fields (other actions,
/// other fields of these) are skipped; a `null` action or deletion vector counts as absent.
#[derive(Deserialize)]
struct Line {
    add: Option<AddSize>,
    remove: Option<RemoveSize>,
    #[serde(rename = "metaData")]
    metadata: Option<IgnoredAny>,
    protocol: Option<IgnoredAny>,
    #[serde(rename = "commitInfo")]
    commit_info: Option<Value>,
}

#[derive(Deserialize)]
struct AddSize {
    /// Required ("Add File and Remove File"): a missing one makes the line corrupt.
    size: i64,
    #[serde(rename = "deletionVector")]
    deletion_vector: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct RemoveSize {
    size: Option<i64>,
}

/// The changes of the commit `bytes` (the file `file` of `version`); `timestamp` is left 0.
fn tally(bytes: &[u8], file: &str, version: u64) -> DeltaResult<VersionChange> {
    let corrupt = |line_no: usize, reason: String| {
        DeltaError::corrupt(file, Some(version), format!("line {line_no}: {reason}"))
    };
    let mut change = VersionChange {
        version,
        timestamp: 0,
        commit_info: None,
        files_added: 0,
        bytes_added: 0,
        files_removed: 0,
        bytes_removed: 0,
        removed_without_size: 0,
        deletion_vectors_added: 0,
        metadata_changed: false,
        protocol_changed: false,
    };
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line_no = index + 1;
        let Some(first) = line.iter().find(|b| !b.is_ascii_whitespace()) else {
            continue; // blank lines (and the one after the final newline) hold no action
        };
        // serde would take a JSON array for the struct too: an action is an object.
        if *first != b'{' {
            return Err(corrupt(
                line_no,
                "an action must be a JSON object (spec: \"Delta Log Entries\")".to_string(),
            ));
        }
        let parsed: Line = serde_json::from_slice(line)
            .map_err(|e| corrupt(line_no, format!("invalid action JSON: {e}")))?;
        if let Some(add) = parsed.add {
            let size = non_negative(add.size)
                .ok_or_else(|| corrupt(line_no, format!("add.size is negative: {}", add.size)))?;
            change.files_added += 1;
            change.bytes_added = change
                .bytes_added
                .checked_add(size)
                .ok_or_else(|| corrupt(line_no, "the add sizes sum past 2^64".to_string()))?;
            if add.deletion_vector.is_some() {
                change.deletion_vectors_added += 1;
            }
        }
        if let Some(remove) = parsed.remove {
            change.files_removed += 1;
            match remove.size {
                Some(size) => {
                    let size = non_negative(size).ok_or_else(|| {
                        corrupt(line_no, format!("remove.size is negative: {size}"))
                    })?;
                    change.bytes_removed =
                        change.bytes_removed.checked_add(size).ok_or_else(|| {
                            corrupt(line_no, "the remove sizes sum past 2^64".to_string())
                        })?;
                }
                None => change.removed_without_size += 1,
            }
        }
        change.metadata_changed |= parsed.metadata.is_some();
        change.protocol_changed |= parsed.protocol.is_some();
        if change.commit_info.is_none() {
            change.commit_info = parsed.commit_info;
        }
    }
    Ok(change)
}

fn non_negative(size: i64) -> Option<u64> {
    u64::try_from(size).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "_delta_log/00000000000000000007.json";

    fn tally_text(text: &str) -> DeltaResult<VersionChange> {
        tally(text.as_bytes(), FILE, 7)
    }

    #[test]
    fn a_commit_is_summed() {
        let text = concat!(
            r#"{"commitInfo":{"timestamp":5,"operation":"DELETE","operationParameters":{"p":"x"}}}"#,
            "\n",
            r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}"#,
            "\n",
            r#"{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}"#,
            "\r\n\n   \n",
            r#"{"add":{"path":"a.parquet","partitionValues":{},"size":100,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":3}","unknown":{"deep":[1,{"size":9}]}}}"#,
            "\n",
            r#"{"add":{"path":"b.parquet","partitionValues":{},"size":20,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":36,"cardinality":2}}}"#,
            "\n",
            r#"{"add":{"path":"c.parquet","partitionValues":{},"size":3,"modificationTime":1,"dataChange":true,"deletionVector":null}}"#,
            "\n",
            r#"{"remove":{"path":"d.parquet","deletionTimestamp":1,"dataChange":true,"size":40}}"#,
            "\n",
            r#"{"remove":{"path":"e.parquet","deletionTimestamp":1,"dataChange":true}}"#,
            "\n",
            r#"{"remove":{"path":"f.parquet","deletionTimestamp":1,"dataChange":true,"size":null}}"#,
            "\n",
            r#"{"cdc":{"path":"_change_data/c","partitionValues":{},"size":1000,"dataChange":false}}"#,
            "\n",
            r#"{"txn":{"appId":"a","version":1}}"#,
            "\n",
            r#"{"commitInfo":{"second":true}}"#,
        );
        let change = tally_text(text).unwrap();
        assert_eq!(
            change,
            VersionChange {
                version: 7,
                timestamp: 0,
                commit_info: Some(serde_json::json!({
                    "timestamp": 5, "operation": "DELETE", "operationParameters": {"p": "x"}
                })),
                files_added: 3,
                bytes_added: 123,
                files_removed: 3,
                bytes_removed: 40,
                removed_without_size: 2,
                deletion_vectors_added: 1,
                metadata_changed: true,
                protocol_changed: true,
            }
        );
        // The fields keep the order the writer gave them (history shows commitInfo as written).
        assert_eq!(
            change.commit_info.unwrap().to_string(),
            r#"{"timestamp":5,"operation":"DELETE","operationParameters":{"p":"x"}}"#
        );

        let empty = tally_text("").unwrap();
        assert_eq!((empty.files_added, empty.commit_info), (0, None));
        assert!(!empty.metadata_changed && !empty.protocol_changed);
    }

    #[test]
    fn a_corrupt_line_names_the_file_version_and_line() {
        let good = r#"{"add":{"path":"a","size":1}}"#;
        let cases = [
            (
                format!("{good}\n{{\"add\":{{\"path\":\"b\",\"size\":1"),
                2,
                "invalid action JSON",
            ),
            (
                format!("{good}\n{{\"add\":{{\"size\":\"big\"}}}}"),
                2,
                "invalid action JSON",
            ),
            (
                format!("{good}\n{{\"add\":{{\"path\":\"b\"}}}}"),
                2,
                "missing field `size`",
            ),
            (
                format!("{good}\n{{\"add\":{{\"size\":-1}}}}"),
                2,
                "add.size is negative",
            ),
            (
                format!("{{\"remove\":{{\"size\":-2}}}}\n{good}"),
                1,
                "remove.size is negative",
            ),
            (
                format!("{good}\n[{{\"size\":1}},null]"),
                2,
                "must be a JSON object",
            ),
            (format!("{good}\n{good}{good}"), 2, "invalid action JSON"),
            (
                format!("{{\"add\":{{\"size\":{}}}}}\n{good}", i64::MAX)
                    + &format!("\n{{\"add\":{{\"size\":{}}}}}", i64::MAX)
                    + &format!("\n{{\"add\":{{\"size\":{}}}}}", i64::MAX),
                4,
                "sum past 2^64",
            ),
        ];
        for (text, line, reason) in cases {
            match tally_text(&text).unwrap_err() {
                DeltaError::CorruptLog {
                    file,
                    version,
                    rule,
                } => {
                    assert_eq!(file, FILE, "{text}");
                    assert_eq!(version, Some(7), "{text}");
                    assert!(rule.starts_with(&format!("line {line}: ")), "{rule}");
                    assert!(rule.contains(reason), "{rule}");
                }
                other => panic!("{text}: {other}"),
            }
        }
    }

    /// Against [`timeline::history`] on a table: the same versions, timestamps (in-commit
    /// timestamps from version 1, file times before) and `commitInfo`, and `limit`.
    #[tokio::test]
    async fn versions_and_timestamps_are_those_of_history() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        let add = |path: &str, size: u64| {
            format!(
                r#"{{"add":{{"path":"{path}","partitionValues":{{}},"size":{size},"modificationTime":1,"dataChange":true}}}}"#
            )
        };
        let metadata = |config: &str| {
            format!(
                r#"{{"metaData":{{"id":"t","format":{{"provider":"parquet","options":{{}}}},"schemaString":"{{\"type\":\"struct\",\"fields\":[{{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{{}}}}]}}","partitionColumns":[],"configuration":{{{config}}}}}}}"#
            )
        };
        let commits = [
            [
                r#"{"commitInfo":{"operation":"CREATE TABLE"}}"#.to_string(),
                r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["inCommitTimestamp"]}}"#.to_string(),
                metadata(""),
                add("a.parquet", 10),
            ]
            .join("\n"),
            [
                r#"{"commitInfo":{"inCommitTimestamp":1700000000000,"operation":"SET TBLPROPERTIES"}}"#.to_string(),
                metadata(r#""delta.enableInCommitTimestamps":"true","delta.inCommitTimestampEnablementVersion":"1","delta.inCommitTimestampEnablementTimestamp":"1700000000000""#),
            ]
            .join("\n"),
            [
                r#"{"commitInfo":{"inCommitTimestamp":1700000000500,"operation":"WRITE"}}"#.to_string(),
                add("b.parquet", 20),
                add("c.parquet", 30),
                r#"{"remove":{"path":"a.parquet","deletionTimestamp":1,"dataChange":true,"size":10}}"#.to_string(),
            ]
            .join("\n"),
        ];
        for (v, text) in commits.iter().enumerate() {
            std::fs::write(log.join(format!("{v:020}.json")), format!("{text}\n")).unwrap();
        }
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let snapshot = Snapshot::try_new(storage, None).await.unwrap();

        let changes = version_changes(&snapshot, None).await.unwrap();
        let history = timeline::history(&snapshot, None).await.unwrap();
        let summary: Vec<_> = changes
            .iter()
            .map(|c| (c.version, c.timestamp, c.commit_info.clone()))
            .collect();
        let expected: Vec<_> = history
            .iter()
            .map(|h| (h.version, h.timestamp, h.commit_info.clone()))
            .collect();
        assert_eq!(summary, expected);
        assert_eq!(
            changes.iter().map(|c| c.version).collect::<Vec<_>>(),
            [2, 1, 0]
        );
        assert_eq!(changes[0].timestamp, 1_700_000_000_500);
        assert_eq!(changes[1].timestamp, 1_700_000_000_000);
        let added: u64 = changes.iter().map(|c| c.bytes_added).sum();
        let removed: u64 = changes.iter().map(|c| c.bytes_removed).sum();
        assert_eq!((added, removed), (60, 10));
        assert_eq!(
            changes
                .iter()
                .map(|c| (
                    c.files_added,
                    c.files_removed,
                    c.metadata_changed,
                    c.protocol_changed
                ))
                .collect::<Vec<_>>(),
            [
                (2, 1, false, false),
                (0, 0, true, false),
                (1, 0, true, true)
            ]
        );

        let limited = version_changes(&snapshot, Some(2)).await.unwrap();
        assert_eq!(limited, changes[..2]);
        assert!(version_changes(&snapshot, Some(0))
            .await
            .unwrap()
            .is_empty());
        // A snapshot of an earlier version stops at it.
        let storage = snapshot.storage().clone();
        let older = Snapshot::try_new(storage, Some(1)).await.unwrap();
        assert_eq!(version_changes(&older, None).await.unwrap(), changes[1..]);
    }
}
