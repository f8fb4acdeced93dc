//! Interrupting an operation (a user's Ctrl-C) without losing track of its commit.
//!
//! An operation that writes (a write, DML, OPTIMIZE, a commit of files written elsewhere) runs
//! inside [`Operation::run`], which makes the operation current for the future it drives. Its
//! caller may [`Operation::interrupt`] it at any time, from any thread. The operation then:
//!
//! - stops at the next [`check`] (between input batches, between files it rewrites) and at its
//!   commit point ([`commit_point`], before every commit attempt), with
//!   [`DeltaError::Interrupted`]: nothing is committed, and the files it created
//!   ([`created`]: data, change data and deletion vector files) are removed;
//! - once a commit attempt started, runs to its end: the commit's outcome is then the
//!   operation's, and [`Operation::committed`] tells its caller which version landed, so that
//!   an interrupt reported after it never looks like "nothing happened" (a user who retries a
//!   write that landed writes its data twice). Work after the commit that readers do not need
//!   (an automatic checkpoint) is skipped ([`interrupted`]).
//!
//! Files are removed only when no commit attempt started: after one, a file may be referenced
//! by a commit whose outcome is unknown. The same holds for any other error before the commit
//! point (a constraint violated by the fifth batch, a failed input stream): the files the
//! operation created are then garbage and are removed, as they are on an interrupt.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use object_store::ObjectStoreExt;

use crate::error::{DeltaError, DeltaResult};
use crate::storage::Storage;

tokio::task_local! {
    static CURRENT: Arc<Operation>;
}

/// One operation's interrupt state (see the module docs).
#[derive(Debug)]
pub struct Operation {
    interrupted: AtomicBool,
    commit_started: AtomicBool,
    /// The last version this operation committed, -1 before any.
    committed: AtomicI64,
    /// Files created by the operation (table-relative paths), removed if it ends in an error
    /// before its commit point.
    created: Mutex<Vec<(Storage, String)>>,
}

impl Operation {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            interrupted: AtomicBool::new(false),
            commit_started: AtomicBool::new(false),
            committed: AtomicI64::new(-1),
            created: Mutex::new(Vec::new()),
        })
    }

    /// Asks the operation to stop (see the module docs).
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
    }

    /// Whether [`Operation::interrupt`] was called.
    pub fn is_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Whether a commit attempt started (files may then be referenced by a commit).
    pub fn commit_started(&self) -> bool {
        self.commit_started.load(Ordering::SeqCst)
    }

    /// The last version the operation committed.
    pub fn committed(&self) -> Option<u64> {
        u64::try_from(self.committed.load(Ordering::SeqCst)).ok()
    }

    /// Drives `fut` with this operation current; an error before the commit point removes
    /// the files the operation created.
    pub async fn run<F, T>(self: &Arc<Self>, fut: F) -> DeltaResult<T>
    where
        F: std::future::Future<Output = DeltaResult<T>>,
    {
        let out = CURRENT.scope(self.clone(), fut).await;
        if out.is_err() && !self.commit_started() {
            self.remove_created().await;
        }
        out
    }

    async fn remove_created(&self) {
        let created = match self.created.lock() {
            Ok(mut files) => std::mem::take(&mut *files),
            Err(_) => return,
        };
        for (storage, path) in created {
            let location = storage.table_path(&path);
            match storage.store().delete(&location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => log::warn!(
                    "{}: a file written before the operation failed was not removed: {path}: {e}",
                    storage.url()
                ),
            }
        }
    }
}

fn current() -> Option<Arc<Operation>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Stops the current operation if it was interrupted and has not started to commit.
pub fn check() -> DeltaResult<()> {
    match current() {
        Some(op) if op.is_interrupted() && !op.commit_started() => Err(DeltaError::Interrupted),
        _ => Ok(()),
    }
}

/// Whether the current operation was interrupted (work after its commit may be skipped).
pub fn interrupted() -> bool {
    current().is_some_and(|op| op.is_interrupted())
}

/// The commit point: [`check`], then from here on the operation runs to its end.
pub fn commit_point() -> DeltaResult<()> {
    if let Some(op) = current() {
        if op.is_interrupted() && !op.commit_started() {
            return Err(DeltaError::Interrupted);
        }
        op.commit_started.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Records that the current operation committed `version`.
pub fn committed(version: u64) {
    if let Some(op) = current() {
        let v = i64::try_from(version).unwrap_or(i64::MAX);
        op.committed.fetch_max(v, Ordering::SeqCst);
    }
}

/// Records a file the current operation created (`path` relative to the table root of
/// `storage`), to be removed if the operation fails before its commit point.
pub fn created(storage: &Storage, path: &str) {
    if let Some(op) = current() {
        if let Ok(mut files) = op.created.lock() {
            files.push((storage.clone(), path.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage(dir: &std::path::Path) -> Storage {
        Storage::open(dir.to_str().unwrap(), &Default::default()).unwrap()
    }

    #[tokio::test]
    async fn an_error_before_the_commit_point_removes_created_files() {
        let dir = tempfile::tempdir().unwrap();
        let storage = storage(dir.path());
        let op = Operation::new();
        let out: DeltaResult<()> = op
            .run(async {
                storage.put_file("a.parquet", "x".into()).await?;
                created(&storage, "a.parquet");
                created(&storage, "never-written.parquet");
                Err(DeltaError::Interrupted)
            })
            .await;
        assert!(matches!(out, Err(DeltaError::Interrupted)));
        assert!(!dir.path().join("a.parquet").exists());
    }

    #[tokio::test]
    async fn after_the_commit_point_an_interrupt_is_ignored_and_files_stay() {
        let dir = tempfile::tempdir().unwrap();
        let storage = storage(dir.path());
        let op = Operation::new();
        let out: DeltaResult<()> = op
            .run(async {
                storage.put_file("a.parquet", "x".into()).await?;
                created(&storage, "a.parquet");
                check()?;
                commit_point()?;
                // An interrupt now does not stop the operation...
                current().unwrap().interrupt();
                check()?;
                committed(7);
                // ...and an error after the commit point leaves its files alone.
                Err(DeltaError::Internal("after the commit".into()))
            })
            .await;
        assert!(out.is_err());
        assert!(dir.path().join("a.parquet").exists());
        assert_eq!(op.committed(), Some(7));
        assert!(op.is_interrupted());
    }

    #[tokio::test]
    async fn an_interrupt_stops_at_the_commit_point() {
        let op = Operation::new();
        op.interrupt();
        let out: DeltaResult<()> = op.run(async { commit_point() }).await;
        assert!(matches!(out, Err(DeltaError::Interrupted)));
        assert!(!op.commit_started());
        // Outside an operation nothing is checked.
        assert!(check().is_ok() && commit_point().is_ok() && !interrupted());
    }
}
