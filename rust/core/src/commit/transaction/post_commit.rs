//! After a commit: the version checksum file ("Version Checksum File") and, when due, the
//! automatic checkpoint ("Checkpoints") and metadata cleanup ("Metadata Cleanup"); each best
//! effort, the commit standing whatever happens here.

use std::sync::Arc;

use serde_json::Value;

use crate::log::catalog::{CatalogClient, Maintenance};
use crate::maintenance::catalog_policy::allowed;
use crate::maintenance::version_checksum::VersionChecksum;

use super::{Transaction, CHECKPOINT_INTERVAL, DEFAULT_CHECKPOINT_INTERVAL};

impl Transaction {
    /// Writes `<version>.crc` (see [`crate::maintenance::version_checksum`]): `before` (the
    /// state of the previous version) plus this commit's actions. Best effort: the file is
    /// optional.
    pub(super) async fn write_checksum(
        &self,
        before: VersionChecksum,
        version: u64,
        txn_id: &str,
        text: &str,
    ) {
        use crate::maintenance::version_checksum::write_checksum;
        let actions: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let mut checksum = before;
        if checksum.apply(&actions) {
            if let Err(e) =
                write_checksum(&self.storage, version, &checksum.to_json(Some(txn_id))).await
            {
                log::warn!(
                    "{}: version {version} committed, but its checksum file was not written: {e}",
                    self.storage.url()
                );
            }
        }
    }

    /// Writes a checkpoint of `version` when `delta.checkpointInterval` (default 10) divides
    /// it ("Checkpoints": writers are encouraged to checkpoint reasonably frequently), with the
    /// kind `delta.checkpointPolicy` asks for, then cleans up expired log files. The commit
    /// has already succeeded: a checkpoint that cannot be written is left for the next one,
    /// and readers do not need it.
    pub(super) async fn checkpoint_if_due(
        &self,
        version: u64,
        catalog: Option<&Arc<dyn CatalogClient>>,
    ) {
        use crate::maintenance::checkpoint::{write_checkpoint, CheckpointOptions};
        // The properties this commit sets, else those of the version it read.
        let committed: Option<std::collections::BTreeMap<String, String>> =
            self.actions.iter().rev().find_map(|a| {
                let config = a.pointer("/metaData/configuration")?.as_object()?;
                Some(
                    config
                        .iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect(),
                )
            });
        let config = committed
            .or_else(|| self.read_snapshot.as_ref().map(|s| s.configuration()))
            .unwrap_or_default();
        let interval = config
            .get(CHECKPOINT_INTERVAL)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|i| *i > 0)
            .unwrap_or(DEFAULT_CHECKPOINT_INTERVAL);
        if version == 0 || !version.is_multiple_of(interval) {
            return;
        }
        if crate::interrupt::interrupted() {
            // The user asked to stop: the commit stands, the optional checkpoint waits for
            // the next commit that is due one.
            return;
        }
        if !allowed(catalog, Maintenance::Checkpoint, version).await {
            return;
        }
        let table = self.storage.url();
        // Failures are reported as warnings (the `log` facade; the Python package forwards
        // them to the `deltalog` logger): the commit itself stands.
        // From the snapshot read, only the commits since are replayed.
        let loaded = match &self.read_snapshot {
            Some(read) => read.advance(Some(version)).await,
            None => crate::Snapshot::try_new(self.storage.clone(), Some(version)).await,
        };
        let snapshot = match loaded {
            Ok(snapshot) => snapshot,
            Err(e) => {
                log::warn!("{table}: automatic checkpoint of version {version} skipped: {e}");
                return;
            }
        };
        let now = chrono::Utc::now().timestamp_millis();
        if let Err(e) = write_checkpoint(&snapshot, &CheckpointOptions::new(now)).await {
            log::warn!("{table}: automatic checkpoint of version {version} failed: {e}");
            return;
        }
        if crate::maintenance::cleanup::cleanup_enabled(&snapshot)
            && allowed(catalog, Maintenance::MetadataCleanup, version).await
        {
            // "Metadata Cleanup" after a checkpoint, when `delta.enableExpiredLogCleanup`
            // (default true) allows it; best effort like the checkpoint itself.
            if let Err(e) = crate::maintenance::cleanup::cleanup_metadata(&snapshot, now).await {
                log::warn!("{table}: metadata cleanup after version {version} failed: {e}");
            }
        }
    }
}
