//! Unit tests of `Snapshot` (a separate file: the module is long enough without them).

use std::collections::HashMap;

use arrow::array::AsArray;
use serde_json::{json, Value};

use super::*;
use crate::commit::transaction::{Isolation, Transaction};

fn add(path: &str, dv: Option<&str>) -> Value {
    let mut a = json!({"add": {"path": path, "partitionValues": {}, "size": 1,
                   "modificationTime": 1, "dataChange": true,
                   "stats": "{\"numRecords\":3}"}});
    if let Some(dv) = dv {
        a["add"]["deletionVector"] = json!({"storageType": "i", "pathOrInlineDv": dv,
            "sizeInBytes": 1, "cardinality": 1});
    }
    a
}

fn remove(path: &str, dv: Option<&str>) -> Value {
    let mut r = json!({"remove": {"path": path, "deletionTimestamp": 5, "dataChange": true,
                      "size": 1}});
    if let Some(dv) = dv {
        r["remove"]["deletionVector"] = json!({"storageType": "i", "pathOrInlineDv": dv,
            "sizeInBytes": 1, "cardinality": 1});
    }
    r
}

/// The `protocol` and `metaData` of a new table with `schema` (a schemaString).
fn created(schema: &str) -> Vec<Value> {
    vec![
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json!({"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
           "schemaString": schema, "partitionColumns": [], "configuration": {}}}),
    ]
}

async fn commit(storage: &Storage, read: Option<u64>, actions: Vec<Value>) -> u64 {
    let mut t = Transaction::new(storage.clone(), read, "WRITE", Isolation::ReadsData);
    t.add_actions(actions);
    t.commit().await.unwrap()
}

/// Sorted `(path, has DV)` of the active files, and sorted tombstone paths.
fn files(s: &Snapshot) -> (Vec<(String, bool)>, Vec<String>) {
    let mut adds = Vec::new();
    for b in s.files() {
        let paths = b.adds.column_by_name("path").unwrap().as_string::<i32>();
        let dv = b.adds.column_by_name("deletionVector");
        for i in 0..b.len() {
            let has_dv = dv.is_some_and(|d| d.is_valid(i));
            adds.push((paths.value(i).to_string(), has_dv));
        }
    }
    adds.sort();
    (adds, crate::log::replay::tests::paths(s.removes()))
}

#[tokio::test]
async fn advance_equals_a_fresh_load() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
    let v0 = commit(
        &storage,
        None,
        [
            created("{\"type\":\"struct\",\"fields\":[]}"),
            vec![add("a", None), add("b", None), add("c", None)],
        ]
        .concat(),
    )
    .await;
    let loaded = Snapshot::try_new(storage.clone(), None).await.unwrap();
    // A DV on "a" (remove + re-add of the same path), "b" removed, "c" removed and re-added
    // (its tombstone must go), a new file, a transaction and a domain.
    let v1 = commit(
        &storage,
        Some(v0),
        vec![
            remove("a", None),
            add("a", Some("dv1")),
            remove("b", None),
            remove("c", None),
        ],
    )
    .await;
    commit(
        &storage,
        Some(v1),
        vec![
            add("c", None),
            add("d", None),
            json!({"txn": {"appId": "app", "version": 3}}),
            json!({"domainMetadata": {"domain": "team", "configuration": "{}",
                   "removed": false}}),
        ],
    )
    .await;
    let advanced = loaded.advance(None).await.unwrap();
    let fresh = Snapshot::try_new(storage.clone(), None).await.unwrap();
    assert_eq!(advanced.version(), 2);
    assert_eq!(files(&advanced), files(&fresh));
    assert_eq!(
        files(&advanced).0,
        vec![
            ("a".to_string(), true),
            ("c".to_string(), false),
            ("d".to_string(), false)
        ]
    );
    assert_eq!(files(&advanced).1, vec!["a".to_string(), "b".to_string()]);
    assert_eq!(advanced.transactions(), fresh.transactions());
    assert_eq!(advanced.domain_metadata(), fresh.domain_metadata());
    // An intermediate version, and nothing new.
    assert_eq!(files(&loaded.advance(Some(1)).await.unwrap()).0.len(), 1);
    let same = advanced.advance(None).await.unwrap();
    assert_eq!(same.version(), 2);
}

/// A catalog holding nothing unpublished, whose latest version is `latest`; it counts how
/// often it is asked.
#[derive(Debug)]
struct Published {
    latest: u64,
    asked: std::sync::atomic::AtomicUsize,
}

impl CatalogClient for Published {
    fn ratified_commits(
        &self,
        _start: Option<u64>,
        _end: Option<u64>,
    ) -> futures::future::BoxFuture<'_, DeltaResult<CatalogCommits>> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let latest = self.latest;
        Box::pin(async move {
            Ok(CatalogCommits {
                commits: Vec::new(),
                latest_version: latest,
                published: None,
            })
        })
    }

    fn commit(
        &self,
        _version: u64,
        _proposal: crate::log::catalog::Proposal,
        _changes: crate::log::catalog::StateChanges,
    ) -> futures::future::BoxFuture<'_, DeltaResult<crate::log::catalog::CommitOutcome>> {
        Box::pin(async { Err(DeltaError::InvalidArgument("read only".into())) })
    }

    fn published(&self, _version: u64) -> futures::future::BoxFuture<'_, DeltaResult<()>> {
        Box::pin(async { Ok(()) })
    }

    fn max_inline_bytes(&self) -> usize {
        0
    }
}

#[tokio::test]
async fn a_published_version_and_a_cached_header_spare_the_catalog_and_the_first_pass() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
    let schema = "{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\
                  \"nullable\":true,\"metadata\":{}}]}";
    let v0 = commit(
        &storage,
        None,
        [created(schema), vec![add("a", None)]].concat(),
    )
    .await;
    let v1 = commit(&storage, Some(v0), vec![add("b", None)]).await;
    commit(&storage, Some(v1), vec![remove("a", None), add("c", None)]).await;
    let catalog = Arc::new(Published {
        latest: 2,
        asked: Default::default(),
    });
    let asked = || catalog.asked.load(std::sync::atomic::Ordering::SeqCst);
    let client: Arc<dyn CatalogClient> = catalog.clone();
    let first = Snapshot::try_new_with_catalog_client(storage.clone(), Some(1), client.clone())
        .await
        .unwrap();
    assert_eq!(asked(), 1);
    // Version 2 is in the published log: the catalog is not asked again.
    let second = first.advance_published(2).await.unwrap();
    let fresh = Snapshot::try_new(storage.clone(), None).await.unwrap();
    assert_eq!((second.version(), asked()), (2, 1));
    assert_eq!(files(&second), files(&fresh));
    assert!(second.catalog().is_some());
    // A version the log does not hold: the catalog says what is latest.
    let latest = second.advance_published(3).await.unwrap();
    assert_eq!((latest.version(), asked()), (2, 2));

    // A cached header that is wrong (another schema) types statistics wrongly at first; replay
    // finds the log's metadata and the snapshot is the log's.
    let wrong = "{\"type\":\"struct\",\"fields\":[{\"name\":\"other\",\"type\":\"string\",\
                 \"nullable\":true,\"metadata\":{}}]}";
    let metadata = json!({"id": "x", "format": {"provider": "parquet", "options": {}},
        "schemaString": wrong, "partitionColumns": [], "configuration": {}});
    let header = crate::header::TableHeader::from_json(
        2,
        r#"{"minReaderVersion":1,"minWriterVersion":2}"#,
        &metadata.to_string(),
    )
    .unwrap();
    let opened = Snapshot::try_new_from_header(storage.clone(), None, client, Some(&header))
        .await
        .unwrap();
    assert_eq!(opened.version(), 2);
    assert_eq!(opened.schema().unwrap(), fresh.schema().unwrap());
    assert_eq!(files(&opened), files(&fresh));
}

#[tokio::test]
async fn many_small_commits_leave_few_batches_and_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
    // No automatic checkpoints: every version comes from the commits.
    let mut first = created("{\"type\":\"struct\",\"fields\":[]}");
    first[1]["metaData"]["configuration"] = json!({"delta.checkpointInterval": "1000"});
    let mut version = commit(&storage, None, first).await;
    let mut snapshot = Snapshot::try_new(storage.clone(), None).await.unwrap();
    for i in 0..40 {
        version = commit(&storage, Some(version), vec![add(&format!("f{i}"), None)]).await;
        snapshot = snapshot.advance(None).await.unwrap();
        assert!(
            snapshot.files().len() < 10,
            "{} batches",
            snapshot.files().len()
        );
    }
    // A remove and a DV update reach into the joined batches.
    version = commit(
        &storage,
        Some(version),
        vec![
            remove("f3", None),
            remove("f30", None),
            add("f30", Some("dv1")),
        ],
    )
    .await;
    snapshot = snapshot.advance(None).await.unwrap();
    let fresh = Snapshot::try_new(storage.clone(), Some(version))
        .await
        .unwrap();
    assert_eq!(files(&snapshot), files(&fresh));
    assert_eq!(snapshot.num_files(), 39);
    // A fresh load of one-file commits is coalesced too.
    assert!(fresh.files().len() < 10, "{} batches", fresh.files().len());
}
