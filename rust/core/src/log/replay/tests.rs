//! Unit tests of action reconciliation (a separate file: the module is long enough without
//! them); `paths` is shared with the snapshot's tests.

use super::*;
use crate::log::actions::{commit_schema, decode_json_actions};

fn origin(v: u64) -> Origin {
    Origin {
        file: format!("{v}.json"),
        version: v,
    }
}

fn replay(commits: &[&str]) -> Reconciler {
    let mut r = Reconciler::default();
    for (v, text) in commits.iter().enumerate().rev() {
        let batches =
            decode_json_actions(text.as_bytes(), &commit_schema(), "x", Some(v as u64)).unwrap();
        r.apply_delta(&batches, &[], Vec::new(), &origin(v as u64))
            .unwrap();
    }
    r
}

/// The sorted `path` values of `arrays`.
pub(crate) fn paths(arrays: &[StructArray]) -> Vec<String> {
    let mut out: Vec<String> = arrays
        .iter()
        .flat_map(|a| {
            let p = a.column_by_name("path").unwrap().as_string::<i32>();
            (0..p.len())
                .map(|i| p.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

fn selected(s: &[Selected]) -> Vec<StructArray> {
    s.iter()
        .map(|s| match &s.mask {
            Some(m) => filter(&s.array, m).unwrap().as_struct().clone(),
            None => s.array.clone(),
        })
        .collect()
}

const ADD_A: &str =
    r#"{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#;
const ADD_B: &str =
    r#"{"add":{"path":"b","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#;
const REMOVE_A: &str = r#"{"remove":{"path":"a","deletionTimestamp":5,"dataChange":true}}"#;

#[test]
fn latest_protocol_and_metadata_win() {
    let r = replay(&[
        r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"one","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}"#,
        r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}"#,
        r#"{"metaData":{"id":"two","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":["p"],"configuration":{"k":"v"}}}"#,
    ]);
    let (p, o) = r.protocol.unwrap();
    assert_eq!(p.min_reader_version, 3);
    assert_eq!(p.reader_features, Some(vec!["deletionVectors".to_string()]));
    assert_eq!(o.version, 1);
    let (m, _) = r.metadata.unwrap();
    assert_eq!(m.id.as_deref(), Some("two"));
    assert_eq!(m.partition_columns, vec!["p"]);
    assert_eq!(m.configuration.get("k").map(String::as_str), Some("v"));
}

#[test]
fn remove_after_add_makes_tombstone() {
    let r = replay(&[&format!("{ADD_A}\n{ADD_B}"), REMOVE_A]);
    assert_eq!(paths(&selected(&r.adds)), vec!["b"]);
    assert_eq!(paths(&r.removes), vec!["a"]);
}

#[test]
fn re_add_after_remove_is_active_with_newest_fields() {
    let re_add = r#"{"add":{"path":"a","partitionValues":{},"size":99,"modificationTime":7,"dataChange":true}}"#;
    let r = replay(&[ADD_A, REMOVE_A, re_add]);
    assert_eq!(paths(&selected(&r.adds)), vec!["a"]);
    assert!(r.removes.is_empty());
    let size = selected(&r.adds)[0].column_by_name("size").unwrap().clone();
    assert_eq!(
        size.as_primitive::<arrow::datatypes::Int64Type>().value(0),
        99
    );
}

#[test]
fn same_path_different_dv_are_different_files() {
    let with_dv = r#"{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}}}"#;
    // Commit 1 replaces the DV-less file by the same file with a DV.
    let r = replay(&[ADD_A, &format!("{REMOVE_A}\n{with_dv}")]);
    assert_eq!(paths(&selected(&r.adds)), vec!["a"]);
    assert_eq!(paths(&r.removes), vec!["a"]);
    assert!(selected(&r.adds)[0]
        .column_by_name("deletionVector")
        .unwrap()
        .is_valid(0));
}

#[test]
fn encoded_and_decoded_paths_match() {
    let add = r#"{"add":{"path":"special%20p@%23h","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#;
    let remove = r#"{"remove":{"path":"special%20p@%23h","dataChange":true}}"#;
    let r = replay(&[add, remove]);
    assert!(r.adds.is_empty());
    let add = r#"{"add":{"path":"/x/with%20space","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}"#;
    let remove = r#"{"remove":{"path":"file:///x/with%20space","dataChange":true}}"#;
    assert!(replay(&[add, remove]).adds.is_empty());
}

#[test]
fn txn_latest_per_app_and_domains_with_tombstones() {
    let r = replay(&[
        r#"{"txn":{"appId":"app","version":1}}
{"domainMetadata":{"domain":"d1","configuration":"{\"a\":1}","removed":false}}
{"domainMetadata":{"domain":"d2","configuration":"x","removed":false}}"#,
        r#"{"txn":{"appId":"app","version":2}}
{"txn":{"appId":"other","version":9}}
{"domainMetadata":{"domain":"d1","configuration":"{\"a\":2}","removed":false}}
{"domainMetadata":{"domain":"d2","configuration":"x","removed":true}}"#,
    ]);
    assert_eq!(r.txns["app"].version, 2);
    assert_eq!(r.txns["other"].version, 9);
    let d = r.domain_metadata();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].domain, "d1");
    assert_eq!(d[0].configuration, "{\"a\":2}");
}

#[test]
fn checkpoint_rows_filtered_by_newer_commits() {
    let mut r = Reconciler::default();
    let newer = decode_json_actions(REMOVE_A.as_bytes(), &commit_schema(), "x", Some(2)).unwrap();
    r.apply_delta(&newer, &[], Vec::new(), &origin(2)).unwrap();
    let cp = decode_json_actions(
        format!("{ADD_A}\n{ADD_B}").as_bytes(),
        &commit_schema(),
        "cp",
        Some(1),
    )
    .unwrap();
    let seen = r.take_seen();
    let sel = select_checkpoint_files(&seen, &cp[0], &origin(1)).unwrap();
    assert_eq!(paths(&selected(&[sel.adds.unwrap()])), vec!["b"]);
}

#[test]
fn add_without_path_is_corrupt() {
    let batches =
        decode_json_actions(br#"{"add":{"size":1}}"#, &commit_schema(), "x", Some(0)).unwrap();
    let err = Reconciler::default()
        .apply_delta(&batches, &[], Vec::new(), &origin(0))
        .unwrap_err();
    assert!(
        matches!(
            err,
            DeltaError::CorruptLog {
                version: Some(0),
                ..
            }
        ),
        "{err}"
    );
}

// -- log compaction files ("Log Compaction Files"): first seen wins, in file order --------

const DV1: &str = r#""deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}"#;
const DV2: &str = r#""deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":40,"cardinality":7}"#;

fn add(path: &str, dv: Option<&str>, size: u32) -> String {
    let dv = dv.map_or(String::new(), |d| format!(",{d}"));
    format!(
        r#"{{"add":{{"path":"{path}","partitionValues":{{}},"size":{size},"modificationTime":1,"dataChange":true{dv}}}}}"#
    )
}

fn remove(path: &str, dv: Option<&str>, at: u32) -> String {
    let dv = dv.map_or(String::new(), |d| format!(",{d}"));
    format!(r#"{{"remove":{{"path":"{path}","deletionTimestamp":{at},"dataChange":true{dv}}}}}"#)
}

fn meta(step: u32) -> String {
    format!(
        r#"{{"metaData":{{"id":"t","format":{{"provider":"parquet","options":{{}}}},"schemaString":"{{}}","partitionColumns":[],"configuration":{{"step":"{step}"}}}}}}"#
    )
}

/// Eight commits that touch the same files, txns, domains, protocol and metadata again and
/// again: `a` gets two DVs then is removed and re-added, `b` is removed and re-added, `c` is
/// added and removed inside one range.
fn commits() -> Vec<String> {
    let info = |v: u32| format!(r#"{{"commitInfo":{{"timestamp":{v},"operation":"WRITE"}}}}"#);
    let cdc =
        r#"{"cdc":{"path":"_change_data/x","partitionValues":{},"size":1,"dataChange":false}}"#;
    let lines: Vec<Vec<String>> = vec![
        vec![
            info(0),
            r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#.into(),
            meta(0),
            add("a", None, 1),
            add("b", None, 1),
        ],
        vec![info(1), remove("a", None, 1), add("a", Some(DV1), 2), cdc.into()],
        vec![
            info(2),
            add("c", None, 3),
            r#"{"txn":{"appId":"app","version":1}}"#.into(),
            r#"{"domainMetadata":{"domain":"d","configuration":"1","removed":false}}"#.into(),
        ],
        vec![
            info(3),
            remove("b", None, 3),
            remove("c", None, 3),
            r#"{"txn":{"appId":"app","version":2}}"#.into(),
            meta(3),
        ],
        vec![
            info(4),
            remove("a", Some(DV1), 4),
            add("a", Some(DV2), 4),
            r#"{"domainMetadata":{"domain":"d","configuration":"","removed":true}}"#.into(),
            r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}"#.into(),
        ],
        vec![info(5), add("b", None, 5), r#"{"txn":{"appId":"other","version":9}}"#.into()],
        vec![
            info(6),
            remove("a", Some(DV2), 6),
            r#"{"domainMetadata":{"domain":"d","configuration":"6","removed":false}}"#.into(),
            meta(6),
        ],
        vec![info(7), add("a", None, 7), r#"{"txn":{"appId":"app","version":3}}"#.into()],
    ];
    lines.into_iter().map(|c| c.join("\n") + "\n").collect()
}

/// The layout measured on Databricks Runtime's compactions: the commits of the range
/// newest first, each commit's lines in their order, `commitInfo` dropped, nothing
/// reconciled.
fn databricks_layout(range: &[String]) -> String {
    range
        .iter()
        .rev()
        .flat_map(|c| c.lines())
        .filter(|l| !l.starts_with(r#"{"commitInfo""#))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Writes the compaction of a range of commits.
type Layout = fn(&[String]) -> String;

/// A reconciled compaction of `range` (at most one action per key), lines in the order
/// `order` gives them.
fn reconciled_layout(range: &[String], order: impl Fn(&mut Vec<String>)) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for line in range.iter().rev().flat_map(|c| c.lines()) {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let (kind, body) = value.as_object().unwrap().iter().next().unwrap();
        let key = match kind.as_str() {
            "add" | "remove" => format!("file {} {}", body["path"], body["deletionVector"]),
            "txn" => format!("txn {}", body["appId"]),
            "domainMetadata" => format!("domain {}", body["domain"]),
            "protocol" | "metaData" => kind.clone(),
            _ => continue,
        };
        if seen.insert(key) {
            lines.push(line.to_string());
        }
    }
    order(&mut lines);
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// What a replay ended with, comparable.
fn summary(r: &Reconciler) -> String {
    let mut adds: Vec<String> = selected(&r.adds)
        .iter()
        .flat_map(|a| {
            let keys = KeyColumns::new(a);
            (0..a.len()).map(move |row| keys.key("add", row, &origin(0)).unwrap().into_owned())
        })
        .collect();
    adds.sort();
    let mut removes: Vec<String> = r
        .removes
        .iter()
        .flat_map(|a| {
            let keys = KeyColumns::new(a);
            (0..a.len()).map(move |row| keys.key("remove", row, &origin(0)).unwrap().into_owned())
        })
        .collect();
    removes.sort();
    let mut txns: Vec<_> = r
        .txns
        .values()
        .map(|t| (t.app_id.clone(), t.version))
        .collect();
    txns.sort();
    let protocol = r
        .protocol
        .as_ref()
        .map(|(p, _)| (p.min_reader_version, p.min_writer_version));
    let config = r.metadata.as_ref().map(|(m, _)| m.configuration.clone());
    let domains: Vec<_> = r
        .domain_metadata()
        .into_iter()
        .map(|d| (d.domain, d.configuration))
        .collect();
    format!("adds {adds:?}\nremoves {removes:?}\ntxns {txns:?}\ndomains {domains:?}\nprotocol {protocol:?}\nmetadata {config:?}")
}

/// Replays commits `0..=version` newest first, with the compaction `text` of `start..=end`
/// in place of its commits.
fn replay_with_compaction(
    commits: &[String],
    version: usize,
    (start, end): (usize, usize),
    text: &str,
) -> Reconciler {
    let mut r = Reconciler::default();
    let mut v = version;
    loop {
        let (bytes, order, at) = if v == end {
            (
                text.as_bytes(),
                crate::log::reader::LineOrder::NewestFirst,
                start,
            )
        } else {
            (
                commits[v].as_bytes(),
                crate::log::reader::LineOrder::Unordered,
                v,
            )
        };
        let d = crate::log::reader::decode_delta(bytes, None, "x", v as u64, order).unwrap();
        r.apply_delta(&d.batches, &d.stats, d.add_keys, &origin(v as u64))
            .unwrap();
        if at == 0 {
            return r;
        }
        v = at - 1;
    }
}

fn replay_plain(commits: &[String], version: usize) -> Reconciler {
    let refs: Vec<&str> = commits[..=version].iter().map(String::as_str).collect();
    replay(&refs)
}

#[test]
fn compactions_replay_like_their_commits() {
    let commits = commits();
    let n = commits.len();
    let layouts: [(&str, Layout); 4] = [
        ("databricks", databricks_layout),
        ("reconciled, newest first", |r| reconciled_layout(r, |_| {})),
        ("reconciled, reversed", |r| {
            reconciled_layout(r, |l| l.reverse())
        }),
        ("reconciled, sorted", |r| reconciled_layout(r, |l| l.sort())),
    ];
    for start in 0..n {
        for end in start..n {
            for (name, layout) in layouts {
                let text = layout(&commits[start..=end]);
                for version in end..n {
                    let want = summary(&replay_plain(&commits, version));
                    let got = summary(&replay_with_compaction(
                        &commits,
                        version,
                        (start, end),
                        &text,
                    ));
                    assert_eq!(got, want, "{name} compaction {start}..={end} at {version}");
                }
            }
        }
    }
}

#[test]
fn databricks_compaction_first_line_wins() {
    // The whole log in one compaction, newest commit first: `a` was added back last (7),
    // so it is active without a DV although the file also removes it (6) and adds it with
    // two DVs (1, 4); the newest txn, domain, protocol and metadata are the first lines.
    let commits = commits();
    let text = databricks_layout(&commits);
    let r = replay_with_compaction(&commits, 7, (0, 7), &text);
    let state = summary(&r);
    assert!(state.starts_with(r#"adds ["a", "b"]"#), "{state}");
    assert_eq!(r.txns["app"].version, 3);
    assert_eq!(r.domain_metadata()[0].configuration, "6");
    assert_eq!(r.protocol.as_ref().unwrap().0.min_reader_version, 3);
    let config = &r.metadata.as_ref().unwrap().0.configuration;
    assert_eq!(config.get("step").map(String::as_str), Some("6"));
    // Read oldest line first instead, the file gives another state.
    let reversed: String = text.lines().rev().map(|l| format!("{l}\n")).collect();
    let wrong = summary(&replay_with_compaction(&commits, 7, (0, 7), &reversed));
    assert_ne!(wrong, state);
}

/// The first, cheap pass (`protocol` and `metaData` lines only) reads a compaction in file
/// order too: its first `protocol` and `metaData` are the newest.
#[tokio::test]
async fn first_pass_takes_a_compactions_first_protocol_and_metadata() {
    use crate::log::{path::commit_file_name, reader, segment};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let commits = commits();
    for (v, text) in commits.iter().enumerate() {
        std::fs::write(log.join(commit_file_name(v as u64)), text).unwrap();
    }
    let name = "00000000000000000000.00000000000000000007.compacted.json";
    std::fs::write(log.join(name), databricks_layout(&commits)).unwrap();
    let storage =
        crate::storage::Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
    let (seg, _) = segment::load_segment(&storage, None).await.unwrap();
    assert!(matches!(
        seg.deltas[..],
        [segment::Delta::Compaction { .. }]
    ));
    let found = reader::protocol_and_metadata(&storage, seg.deltas)
        .await
        .unwrap();
    assert_eq!(found.protocol.unwrap().0.min_reader_version, 3);
    let config = found.metadata.unwrap().0.configuration;
    assert_eq!(config.get("step").map(String::as_str), Some("6"));
}
