//! Unit tests of `Transaction`: conflict checks between concurrent commits.

use std::collections::HashMap;

use serde_json::json;

use super::*;
use crate::log::path::commit_file_name;

fn add(path: &str) -> Value {
    json!({"add": {"path": path, "partitionValues": {}, "size": 1,
                   "modificationTime": 1, "dataChange": true}})
}

async fn table() -> (tempfile::TempDir, Storage) {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
    create(&storage).await;
    (dir, storage)
}

async fn create(storage: &Storage) {
    let mut create = Transaction::new(storage.clone(), None, "CREATE", Isolation::BlindAppend);
    create.add_actions([
        json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json!({"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
               "schemaString": "{\"type\":\"struct\",\"fields\":[]}",
               "partitionColumns": [], "configuration": {}}}),
    ]);
    assert_eq!(create.commit().await.unwrap(), 0);
}

fn txn(storage: &Storage, isolation: Isolation, path: &str) -> Transaction {
    let mut t = Transaction::new(storage.clone(), Some(0), "WRITE", isolation);
    t.add_actions([add(path)]);
    t
}

#[tokio::test]
async fn blind_appends_are_rebased_past_winners() {
    let (_dir, storage) = table().await;
    assert_eq!(
        txn(&storage, Isolation::BlindAppend, "a")
            .commit()
            .await
            .unwrap(),
        1
    );
    // Read version 0 as well: lands at 2 after checking version 1.
    assert_eq!(
        txn(&storage, Isolation::BlindAppend, "b")
            .commit()
            .await
            .unwrap(),
        2
    );
    let text = storage
        .get(&storage.log_path(&commit_file_name(2)))
        .await
        .unwrap();
    let first: Value = serde_json::from_slice(text.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(first["commitInfo"]["readVersion"], 0);
    assert_eq!(first["commitInfo"]["isBlindAppend"], true);
}

#[tokio::test]
async fn a_commit_read_from_a_table_since_deleted_and_created_again_is_refused() {
    let (dir, storage) = table().await;
    let stale = crate::Snapshot::try_new(storage.clone(), None)
        .await
        .unwrap();
    let stale_commit = |storage: &Storage| {
        let mut t = Transaction::new(storage.clone(), Some(0), "WRITE", Isolation::BlindAppend)
            .for_table(&stale);
        t.add_actions([add("stale")]);
        t
    };
    let exists = |v: u64| {
        dir.path()
            .join("_delta_log")
            .join(commit_file_name(v))
            .exists()
    };
    // The table deleted: no `_delta_log` holding only the stale commit.
    std::fs::remove_dir_all(dir.path().join("_delta_log")).unwrap();
    let err = stale_commit(&storage).commit().await.unwrap_err();
    assert!(
        matches!(&err, DeltaError::CommitConflict { version: 1, reason } if reason.contains("no longer exists")),
        "{err}"
    );
    assert!(!exists(1));
    // Created again with as many versions: the read version's commit is another file.
    create(&storage).await;
    let err = stale_commit(&storage).commit().await.unwrap_err();
    assert!(
        matches!(&err, DeltaError::CommitConflict { version: 1, reason } if reason.contains("replaced")),
        "{err}"
    );
    assert!(!exists(1));
    // The loaded snapshot moves to the new table rather than replaying onto the old one.
    txn(&storage, Isolation::BlindAppend, "new")
        .commit()
        .await
        .unwrap();
    let moved = stale.advance(None).await.unwrap();
    assert_eq!(moved.version(), 1);
    assert_eq!(moved.num_files(), 1);
    // A transaction without the read snapshot still needs the read version's commit.
    let mut t = Transaction::new(storage.clone(), Some(5), "WRITE", Isolation::BlindAppend);
    t.add_actions([add("x")]);
    assert!(matches!(
        t.commit().await,
        Err(DeltaError::CommitConflict { version: 6, .. })
    ));
    assert!(!exists(6));
}

#[tokio::test]
async fn readers_of_data_conflict_with_concurrent_data_changes() {
    let (_dir, storage) = table().await;
    txn(&storage, Isolation::BlindAppend, "a")
        .commit()
        .await
        .unwrap();
    let err = txn(&storage, Isolation::ReadsData, "b")
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeltaError::CommitConflict { version: 1, reason } if reason.contains("read")),
        "{err}"
    );
    // Nothing was written for the loser.
    assert!(storage
        .get(&storage.log_path(&commit_file_name(2)))
        .await
        .is_err());
}

#[tokio::test]
async fn rearranging_commutes_with_new_files_but_not_with_removing_its_files() {
    let (_dir, storage) = table().await;
    txn(&storage, Isolation::BlindAppend, "a")
        .commit()
        .await
        .unwrap();
    // A winner that is no blind append: it removes file "a" and adds "b".
    let mut winner = Transaction::new(storage.clone(), Some(1), "UPDATE", Isolation::ReadsData)
        .with_read_files(["a".to_string()].into());
    winner.add_actions([
        json!({"remove": {"path": "a", "dataChange": true}}),
        add("b"),
    ]);
    winner.commit().await.unwrap();
    // OPTIMIZE of other files, planned at version 1: lands past the UPDATE.
    let optimize = |read: &str| {
        let mut t = Transaction::new(storage.clone(), Some(1), "OPTIMIZE", Isolation::Rearranges)
            .with_read_files([read.to_string()].into());
        t.add_actions([json!({"remove": {"path": read, "dataChange": false}})]);
        t
    };
    // (Reading data instead, the same commit would conflict with the UPDATE's new file.)
    let mut reader = Transaction::new(storage.clone(), Some(1), "DELETE", Isolation::ReadsData)
        .with_read_files(["c".to_string()].into());
    reader.add_actions([json!({"remove": {"path": "c", "dataChange": true}})]);
    assert!(reader.commit().await.is_err());
    assert_eq!(optimize("c").commit().await.unwrap(), 3);
    // OPTIMIZE of the file the UPDATE removed conflicts.
    let err = optimize("a").commit().await.unwrap_err();
    assert!(matches!(err, DeltaError::CommitConflict { .. }), "{err}");
}

#[tokio::test]
async fn statements_that_read_files_commute_with_blind_appends_only() {
    let (_dir, storage) = table().await;
    txn(&storage, Isolation::BlindAppend, "a")
        .commit()
        .await
        .unwrap();
    txn(&storage, Isolation::BlindAppend, "b")
        .commit()
        .await
        .unwrap();
    // A DELETE that read version 2's file "a%20x" (decoded: "a x").
    let dml = |storage: &Storage| {
        let mut t = Transaction::new(storage.clone(), Some(2), "DELETE", Isolation::ReadsData)
            .with_read_files(["a x".to_string()].into());
        t.add_actions([json!({"remove": {"path": "a%20x", "dataChange": true}})]);
        t
    };
    // A concurrent blind append commutes.
    txn(&storage, Isolation::BlindAppend, "c")
        .commit()
        .await
        .unwrap();
    assert_eq!(dml(&storage).commit().await.unwrap(), 4);
    // A concurrent removal of a file it read conflicts, naming the file.
    let mut winner = Transaction::new(storage.clone(), Some(4), "DELETE", Isolation::ReadsData);
    winner.add_actions([json!({"remove": {"path": "a%20x", "dataChange": true}})]);
    assert_eq!(winner.commit().await.unwrap(), 5);
    let mut loser = Transaction::new(storage.clone(), Some(4), "DELETE", Isolation::ReadsData)
        .with_read_files(["a x".to_string()].into());
    loser.add_actions([json!({"remove": {"path": "a%20x", "dataChange": true}})]);
    let err = loser.commit().await.unwrap_err();
    assert!(
        matches!(&err, DeltaError::CommitConflict { version: 5, reason } if reason.contains("a x")),
        "{err}"
    );
    // Removing another file is fine, but adding files without being a blind append
    // conflicts (the files might hold rows it should have read).
    let mut other = Transaction::new(storage.clone(), Some(5), "UPDATE", Isolation::ReadsData);
    other.add_actions([
        json!({"remove": {"path": "b", "dataChange": true}}),
        add("b2"),
    ]);
    assert_eq!(other.commit().await.unwrap(), 6);
    let mut late = Transaction::new(storage.clone(), Some(5), "DELETE", Isolation::ReadsData)
        .with_read_files(["c".to_string()].into());
    late.add_actions([json!({"remove": {"path": "c", "dataChange": true}})]);
    let err = late.commit().await.unwrap_err();
    assert!(
        matches!(&err, DeltaError::CommitConflict { version: 6, reason } if reason.contains("blind")),
        "{err}"
    );
}

#[tokio::test]
async fn metadata_changes_and_same_app_ids_conflict_with_everyone() {
    let (_dir, storage) = table().await;
    let mut meta = Transaction::new(
        storage.clone(),
        Some(0),
        "SET TBLPROPERTIES",
        Isolation::ReadsData,
    );
    meta.add_actions([
        json!({"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
        "schemaString": "{\"type\":\"struct\",\"fields\":[]}", "partitionColumns": [],
        "configuration": {"k": "v"}}}),
    ]);
    assert_eq!(meta.commit().await.unwrap(), 1);
    let err = txn(&storage, Isolation::BlindAppend, "a")
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(err, DeltaError::CommitConflict { version: 1, .. }),
        "{err}"
    );

    let (_dir, storage) = table().await;
    let app = |path: &str| {
        txn(&storage, Isolation::BlindAppend, path).with_app_transaction("app".into(), 1)
    };
    assert_eq!(app("a").commit().await.unwrap(), 1);
    let err = app("b").commit().await.unwrap_err();
    assert!(
        matches!(err, DeltaError::CommitConflict { version: 1, .. }),
        "{err}"
    );
    // Creating a table that exists conflicts too.
    let create = Transaction::new(storage.clone(), None, "CREATE", Isolation::BlindAppend);
    assert!(matches!(
        create.commit().await,
        Err(DeltaError::CommitConflict { version: 0, .. })
    ));
}
