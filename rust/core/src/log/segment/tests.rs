//! Unit tests of log listings and segments (a separate file: the module is long enough
//! without them).

use super::*;
use chrono::Utc;
use object_store::path::Path;

fn file(name: &str) -> LogFile {
    LogFile {
        kind: classify(name),
        name: name.to_string(),
        meta: ObjectMeta {
            location: Path::from(format!("t/_delta_log/{name}")),
            last_modified: Utc::now(),
            size: 1,
            e_tag: None,
            version: None,
        },
        inline: None,
    }
}

fn listing(names: &[&str]) -> LogListing {
    let mut files: Vec<LogFile> = names.iter().map(|n| file(n)).collect();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    LogListing {
        files,
        complete: true,
    }
}

fn commit(v: u64) -> String {
    format!("{v:020}.json")
}

fn names(range: std::ops::RangeInclusive<u64>) -> Vec<String> {
    range.map(commit).collect()
}

fn versions(seg: &LogSegment) -> Vec<u64> {
    seg.deltas.iter().map(|d| d.end_version()).collect()
}

#[test]
fn commits_only() {
    let n = names(0..=3);
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    let seg = build_segment(&l, None).unwrap();
    assert_eq!(seg.version, 3);
    assert!(seg.checkpoint.is_none());
    assert_eq!(versions(&seg), vec![0, 1, 2, 3]);
    let seg = build_segment(&l, Some(1)).unwrap();
    assert_eq!(versions(&seg), vec![0, 1]);
}

#[test]
fn newest_checkpoint_not_newer_than_target() {
    let mut n = names(0..=12);
    n.push("00000000000000000005.checkpoint.parquet".into());
    n.push("00000000000000000010.checkpoint.parquet".into());
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    let seg = build_segment(&l, None).unwrap();
    assert_eq!(seg.checkpoint.as_ref().unwrap().version, 10);
    assert_eq!(versions(&seg), vec![11, 12]);
    let seg = build_segment(&l, Some(9)).unwrap();
    assert_eq!(seg.checkpoint.as_ref().unwrap().version, 5);
    assert_eq!(versions(&seg), vec![6, 7, 8, 9]);
    let seg = build_segment(&l, Some(10)).unwrap();
    assert_eq!(seg.checkpoint.as_ref().unwrap().version, 10);
    assert!(seg.deltas.is_empty());
}

#[test]
fn incomplete_multi_part_is_ignored() {
    let mut n = names(0..=4);
    n.push("00000000000000000002.checkpoint.parquet".into());
    n.push("00000000000000000004.checkpoint.0000000001.0000000002.parquet".into());
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    let seg = build_segment(&l, None).unwrap();
    assert_eq!(seg.checkpoint.as_ref().unwrap().version, 2);
    n.push("00000000000000000004.checkpoint.0000000002.0000000002.parquet".into());
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    let seg = build_segment(&l, None).unwrap();
    let cp = seg.checkpoint.unwrap();
    assert_eq!(cp.version, 4);
    assert_eq!(cp.parts.len(), 2);
}

#[test]
fn classic_preferred_over_uuid_at_same_version() {
    let mut n = names(0..=3);
    n.push("00000000000000000003.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json".into());
    n.push("00000000000000000003.checkpoint.parquet".into());
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    let seg = build_segment(&l, None).unwrap();
    assert_eq!(seg.checkpoint.unwrap().naming, CheckpointNaming::Classic);
}

#[test]
fn uuid_checkpoint_used_alone() {
    let mut n = names(0..=3);
    n.push("00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json".into());
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    let seg = build_segment(&l, None).unwrap();
    let cp = seg.checkpoint.unwrap();
    assert_eq!(cp.version, 2);
    assert_eq!(cp.format, CheckpointFormat::Json);
}

#[test]
fn non_contiguous_is_corrupt() {
    let l = listing(&[&commit(0), &commit(2)]);
    match build_segment(&l, None) {
        Err(SegmentError::Fatal(DeltaError::CorruptLog { version, rule, .. })) => {
            assert_eq!(version, Some(1));
            assert!(rule.contains("not contiguous"), "{rule}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn cleaned_up_version_is_not_found() {
    let mut n = names(5..=12);
    n.push("00000000000000000010.checkpoint.parquet".into());
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(build_segment(&l, None).is_ok());
    match build_segment(&l, Some(7)) {
        Err(SegmentError::Fatal(DeltaError::VersionNotFound { .. })) => {}
        other => panic!("unexpected {other:?}"),
    }
    match build_segment(&l, Some(13)) {
        Err(SegmentError::Fatal(DeltaError::VersionNotFound { .. })) => {}
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn compaction_replaces_its_range() {
    let mut n = names(0..=6);
    n.push("00000000000000000002.00000000000000000005.compacted.json".into());
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    let seg = build_segment(&l, None).unwrap();
    assert_eq!(versions(&seg), vec![0, 1, 5, 6]);
    assert!(matches!(
        seg.deltas[2],
        Delta::Compaction {
            start: 2,
            end: 5,
            ..
        }
    ));
    // A compaction reaching past the target is not usable.
    let seg = build_segment(&l, Some(4)).unwrap();
    assert_eq!(versions(&seg), vec![0, 1, 2, 3, 4]);
    // Commits inside the compacted range may be gone.
    let mut n: Vec<String> = vec![commit(0), commit(1), commit(6)];
    n.push("00000000000000000002.00000000000000000005.compacted.json".into());
    let l = listing(&n.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        versions(&build_segment(&l, None).unwrap()),
        vec![0, 1, 5, 6]
    );
}

#[test]
fn partial_listing_without_checkpoint_asks_for_full() {
    let l = LogListing {
        files: vec![file(&commit(11))],
        complete: false,
    };
    assert!(matches!(
        build_segment(&l, None),
        Err(SegmentError::NeedFullListing(_))
    ));
}

#[test]
fn checkpoint_without_commit_at_its_version() {
    let l = listing(&[
        &commit(0),
        "00000000000000000001.checkpoint.parquet",
        &commit(2),
    ]);
    let seg = build_segment(&l, None).unwrap();
    assert_eq!(seg.checkpoint.as_ref().unwrap().version, 1);
    assert_eq!(versions(&seg), vec![2]);
}

#[tokio::test]
async fn probing_finds_the_new_commits_by_name_as_a_listing_would() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    for v in [3u64, 4, 5, 6, 8] {
        std::fs::write(log.join(format!("{v:020}.json")), "{}\n").unwrap();
    }
    std::fs::write(log.join(format!("{:020}.checkpoint.parquet", 5)), "x").unwrap();
    std::fs::write(log.join(format!("{:020}.crc", 4)), "{}").unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
    let names = |l: &LogListing| l.files.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    // From 4 until the first missing commit (7): checkpoints kept, checksums not looked for.
    let probed = LogListing::probe(&storage, 4, None).await.unwrap().unwrap();
    let listed = LogListing::list(&storage, Some(4)).await.unwrap();
    assert_eq!(
        names(&probed),
        [
            "00000000000000000004.json",
            "00000000000000000005.checkpoint.parquet",
            "00000000000000000005.json",
            "00000000000000000006.json",
        ]
    );
    for f in &probed.files {
        let same = listed.files.iter().find(|l| l.name == f.name).unwrap();
        assert_eq!(f.meta, same.meta, "{}", f.name);
    }
    assert!(!probed.complete);
    // Up to a version; nothing found; more than the cap: a listing is needed.
    let upto = LogListing::probe(&storage, 3, Some(4))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(upto.commits().keys().copied().collect::<Vec<_>>(), [3, 4]);
    assert!(LogListing::probe(&storage, 9, None)
        .await
        .unwrap()
        .unwrap()
        .files
        .is_empty());
    for v in 9..9 + MAX_PROBED_COMMITS + 1 {
        std::fs::write(log.join(format!("{v:020}.json")), "{}\n").unwrap();
    }
    assert!(LogListing::probe(&storage, 8, None)
        .await
        .unwrap()
        .is_none());
    // Not a local disk: no probing.
    let memory = Storage::open("memory:///t", &HashMap::new()).unwrap();
    assert!(LogListing::probe(&memory, 0, None).await.unwrap().is_none());
}
