//! Transactions: actions committed atomically as the next version, under optimistic
//! concurrency.
//!
//! Spec: "Creation of New Log Entries" (a commit file is written only if it does not exist:
//! object_store's create-only put, an atomic no-replace link on a local disk), "Delta Log
//! Entries", "Commit Provenance Information" (every commit carries a `commitInfo`). When
//! another writer won the version, the winning commits are read and checked: a transaction
//! conflicts with a winner that changed the metadata or protocol, used the same application
//! transaction id, or (unless this transaction is a blind append, which commutes with other
//! data changes) added or removed data files. A transaction without conflicts is retried at
//! the next version, up to [`MAX_ATTEMPTS`] times; otherwise the commit fails with
//! [`DeltaError::CommitConflict`] naming the winning version and the reason. The table is never
//! left with a partial commit: the commit file is written in one put.
//!
//! Here: the transaction, its builder and its commit loop; `text`: the commit file written
//! (commitInfo, application transaction, actions with in-commit timestamp enablement and row
//! IDs); `conflicts`: a winning commit checked against the transaction; `post_commit`: the
//! version checksum and the automatic checkpoint and cleanup after a commit.

mod conflicts;
mod post_commit;
mod text;

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::commit::committer::{self, Attempt};
use crate::error::{DeltaError, DeltaResult};
use crate::log::catalog::{CatalogClient, Maintenance};
use crate::maintenance::catalog_policy::allowed;
use crate::maintenance::version_checksum::VersionChecksum;
use crate::storage::Storage;

/// Table property enabling in-commit timestamps ("In-Commit Timestamps").
pub const ENABLE_IN_COMMIT_TIMESTAMPS: &str = "delta.enableInCommitTimestamps";

/// Whether `config` turns in-commit timestamps on.
pub fn in_commit_timestamps_enabled(config: &std::collections::BTreeMap<String, String>) -> bool {
    config
        .get(ENABLE_IN_COMMIT_TIMESTAMPS)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// How many versions a transaction tries before giving up.
pub const MAX_ATTEMPTS: usize = 100;

/// `delta.checkpointInterval`: a checkpoint every this many commits.
pub const CHECKPOINT_INTERVAL: &str = "delta.checkpointInterval";
/// The interval when the property is absent (Delta Spark's default).
pub const DEFAULT_CHECKPOINT_INTERVAL: u64 = 10;

/// What a transaction read, for conflict checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Only adds new files and read nothing: commutes with other data changes.
    BlindAppend,
    /// Read the table's data (overwrite, delete, ...): any concurrent data change conflicts.
    ReadsData,
    /// Rearranges the rows of the files it read without changing data (OPTIMIZE): only a
    /// concurrent removal of one of those files conflicts; concurrent appends and other new
    /// files land (Delta Spark's OPTIMIZE conflict rule).
    Rearranges,
    /// Rewrites every file in a new form (column mapping removal): any concurrent add or
    /// remove conflicts, even one that changes no data.
    RewritesAll,
}

/// A transaction started from version `read_version` (`None`: creating the table).
#[derive(Debug, Clone)]
pub struct Transaction {
    storage: Storage,
    read_version: Option<u64>,
    isolation: Isolation,
    operation: String,
    operation_parameters: Map<String, Value>,
    actions: Vec<Value>,
    app_transaction: Option<(String, i64)>,
    engine_info: String,
    /// User fields added to the commitInfo (never replacing deltalog's own).
    custom: Map<String, Value>,
    /// The files (URI-decoded paths) the transaction read, when it read only those.
    read_files: Option<Arc<HashSet<String>>>,
    /// In-commit timestamps ("In-Commit Timestamps"), when the table has them enabled.
    ict: Option<InCommitTimestamps>,
    /// The row ID high-water mark (-1: none assigned yet) when the table supports row
    /// tracking ("Writer Requirements for Row Tracking").
    row_id_high_water_mark: Option<i64>,
    /// The read version's protocol and metadata, for the rules a commit must keep
    /// ([`crate::writer_features::iceberg`]).
    table: Option<crate::writer_features::iceberg::TableState>,
    /// The snapshot read (`for_table`): its table properties drive the automatic checkpoint,
    /// which advances it to the new version; its summary starts the new version's checksum.
    read_snapshot: Option<crate::Snapshot>,
    /// The catalog a new catalog-managed table is created through (an existing one commits
    /// through the catalog of the snapshot read).
    catalog: Option<Arc<dyn CatalogClient>>,
}

/// [`crate::log::segment::version_stands`] as a [`DeltaError::CommitConflict`] at the version
/// after `read`: a transaction that read `read` cannot commit when it does not stand. Also
/// checked before a statement reads the data of its snapshot (DELETE, UPDATE, MERGE), so that
/// a table deleted and created again is reported as such rather than as a missing data file.
pub async fn check_version_stands(
    storage: &Storage,
    read: u64,
    segment: Option<&crate::log::segment::LogSegment>,
) -> DeltaResult<()> {
    match crate::log::segment::version_stands(storage, read, segment).await? {
        Ok(()) => Ok(()),
        Err(why) => Err(DeltaError::CommitConflict {
            version: read + 1,
            reason: format!(
                "the table at {} is not the one this transaction read at version {read}: \
                 {why}; load the table again",
                storage.url()
            ),
        }),
    }
}

/// The metadata domain of row tracking's high-water mark.
pub const ROW_TRACKING_DOMAIN: &str = "delta.rowTracking";

/// The `highWaterMark` of a `delta.rowTracking` domain configuration.
fn high_water_mark_of(configuration: &str) -> Option<i64> {
    serde_json::from_str::<Value>(configuration)
        .ok()?
        .get("highWaterMark")?
        .as_i64()
}

/// The in-commit timestamp state of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InCommitTimestamps {
    /// The previous commit's in-commit timestamp (none before the table's first such commit).
    previous: Option<i64>,
    /// This commit enables the feature: its `metaData` gets the enablement properties.
    enabling: bool,
}

impl Transaction {
    /// A transaction on the table in `storage` that read version `read_version`.
    pub fn new(
        storage: Storage,
        read_version: Option<u64>,
        operation: impl Into<String>,
        isolation: Isolation,
    ) -> Self {
        Transaction {
            storage,
            read_version,
            isolation,
            operation: operation.into(),
            operation_parameters: Map::new(),
            actions: Vec::new(),
            app_transaction: None,
            engine_info: format!("deltalog/{}", env!("CARGO_PKG_VERSION")),
            custom: Map::new(),
            read_files: None,
            ict: None,
            row_id_high_water_mark: None,
            table: None,
            read_snapshot: None,
            catalog: None,
        }
    }

    /// Commits through `client`, the catalog of a catalog-managed table this transaction
    /// creates (catalogManaged RFC, "Creating and Dropping Catalog-managed Tables": the
    /// catalog registers the table as it ratifies version 0).
    pub fn with_catalog(mut self, client: Arc<dyn CatalogClient>) -> Self {
        self.catalog = Some(client);
        self
    }

    /// Assigns fresh row IDs and row commit versions ("Writer Requirements for Row Tracking"):
    /// every new `add` without a `baseRowId` gets the next IDs after `high_water_mark` (-1
    /// when none were assigned yet) and its commit's version as `defaultRowCommitVersion`, and
    /// the commit records the new mark in the `delta.rowTracking` domain. After a lost race the
    /// winners' mark is taken, so concurrent writers never assign the same IDs.
    pub fn with_row_tracking(mut self, high_water_mark: i64) -> Self {
        self.row_id_high_water_mark = Some(high_water_mark);
        self
    }

    /// Follows the rules `snapshot` (the read version) sets for every commit: in-commit
    /// timestamps when `delta.enableInCommitTimestamps` is true.
    pub fn for_table(mut self, snapshot: &crate::Snapshot) -> Self {
        self.table = crate::writer_features::iceberg::TableState::of(snapshot).ok();
        self.read_snapshot = Some(snapshot.clone());
        let this = if in_commit_timestamps_enabled(&snapshot.configuration()) {
            let previous = snapshot.in_commit_timestamp();
            self.with_in_commit_timestamps(previous, false)
        } else {
            self
        };
        let tracked = snapshot
            .protocol()
            .writer_features
            .as_ref()
            .is_some_and(|f| f.iter().any(|n| n == "rowTracking"));
        if !tracked {
            return this;
        }
        let mark = snapshot
            .domain_metadata()
            .iter()
            .find(|d| d.domain == ROW_TRACKING_DOMAIN && !d.removed)
            .and_then(|d| high_water_mark_of(&d.configuration))
            .unwrap_or(-1);
        this.with_row_tracking(mark)
    }

    /// Writes in-commit timestamps ("Writer Requirements for In-Commit Timestamps"): the
    /// commitInfo comes first and carries `inCommitTimestamp`, greater than `previous` (the
    /// read version's; the winners' after a lost race) and at least the clock's time. With
    /// `enabling`, this commit turns the feature on: its `metaData` action records
    /// `delta.inCommitTimestampEnablementVersion` and `...EnablementTimestamp`.
    pub fn with_in_commit_timestamps(mut self, previous: Option<i64>, enabling: bool) -> Self {
        self.ict = Some(InCommitTimestamps { previous, enabling });
        self
    }

    /// Records that the transaction read exactly these files (URI-decoded paths) and nothing
    /// else of the table, for the conflict rules of the module docs.
    pub fn with_read_files(mut self, files: HashSet<String>) -> Self {
        self.read_files = Some(Arc::new(files));
        self
    }

    /// Adds user fields to the commitInfo ("Commit Provenance Information": implementations
    /// may add any fields); deltalog's own fields take precedence.
    pub fn with_commit_info(mut self, fields: Map<String, Value>) -> Self {
        self.custom.extend(fields);
        self
    }

    /// Sets an operation parameter shown in the commitInfo.
    pub fn with_parameter(mut self, key: &str, value: Value) -> Self {
        self.operation_parameters.insert(key.into(), value);
        self
    }

    /// Records an application transaction (`txn` action, "Transaction Identifiers").
    pub fn with_app_transaction(mut self, app_id: String, version: i64) -> Self {
        self.app_transaction = Some((app_id, version));
        self
    }

    /// Adds actions (JSON objects with one action each).
    pub fn add_actions(&mut self, actions: impl IntoIterator<Item = Value>) {
        self.actions.extend(actions);
    }

    /// Writes the commit; returns the version it got.
    pub async fn commit(self) -> DeltaResult<u64> {
        // The table's standing rules (Iceberg compatibility) hold after this commit; a
        // commit to an existing table without its state (no `for_table`) changes no metadata
        // the rules look at unless it carries `protocol` or `metaData`.
        if self.read_version.is_none() || self.table.is_some() {
            crate::writer_features::iceberg::check_commit(self.table.as_ref(), &self.actions)?;
        }
        // A catalog-managed table commits through its catalog (catalogManaged RFC, "Writer
        // Requirements for Catalog-managed tables"), which orders its versions itself.
        let catalog = self.catalog.clone().or_else(|| {
            self.read_snapshot
                .as_ref()
                .and_then(|s| s.catalog().cloned())
        });
        if let (Some(read), None) = (self.read_version, &catalog) {
            self.check_read_version(read).await?;
        }
        if catalog.is_some() && self.ict.is_none() {
            // "Writer Requirements for Catalog-managed tables": in-commit timestamps "must be
            // supported and active".
            return Err(DeltaError::CorruptLog {
                file: "_delta_log".into(),
                version: self.read_version,
                rule: "a catalog-managed table must have in-commit timestamps enabled \
                       (delta.enableInCommitTimestamps = true; catalogManaged RFC: \"Writer \
                       Requirements for Catalog-managed tables\")"
                    .into(),
            });
        }
        let mut version = self.read_version.map_or(0, |v| v + 1);
        let txn_id = uuid::Uuid::new_v4().to_string();
        let mut ict = self.ict;
        let mut mark = self.row_id_high_water_mark;
        // The state of the version before the one being attempted, for its checksum file: the
        // read version's (a new table: nothing), then each winner's actions applied in turn.
        let mut before = match (&self.read_snapshot, self.read_version) {
            (Some(read), Some(_)) => Some(VersionChecksum::of(read)),
            (_, None) => Some(VersionChecksum::empty()),
            _ => None,
        };
        for _ in 0..MAX_ATTEMPTS {
            let text = self.commit_text(&txn_id, version, ict, mark)?;
            let written = text.clone();
            // An interrupted operation stops here, before anything could be committed; from
            // here on it runs to its end and says what it committed (`crate::interrupt`).
            crate::interrupt::commit_point()?;
            match committer::attempt(&self.storage, catalog.as_ref(), version, text).await? {
                Attempt::Committed { published } => {
                    crate::interrupt::committed(version);
                    // "Maintenance Operations on Catalog-managed Tables": a checksum for any
                    // ratified version, checkpoints of published versions only, each if the
                    // catalog allows it.
                    if let Some(before) = before {
                        if allowed(catalog.as_ref(), Maintenance::Checksum, version).await {
                            self.write_checksum(before, version, &txn_id, &written)
                                .await;
                        }
                    }
                    if published {
                        self.checkpoint_if_due(version, catalog.as_ref()).await;
                    }
                    return Ok(version);
                }
                // Ratified (or not) later with the other tables of a catalog transaction.
                Attempt::Deferred => return Ok(version),
                Attempt::Lost { winners } => {
                    for (winner_version, content) in winners {
                        let (winner_ict, winner_mark, winner) =
                            self.check_winner(winner_version, content).await?;
                        // A winner whose removes lack sizes leaves the state unknown.
                        before = before.and_then(|mut state| state.apply(&winner).then_some(state));
                        if let (Some(state), Some(t)) = (ict.as_mut(), winner_ict) {
                            state.previous = Some(state.previous.map_or(t, |p| p.max(t)));
                        }
                        if let (Some(m), Some(w)) = (mark.as_mut(), winner_mark) {
                            *m = (*m).max(w);
                        }
                        version = winner_version + 1;
                    }
                }
            }
        }
        Err(DeltaError::CommitConflict {
            version,
            reason: format!("no free version after {MAX_ATTEMPTS} attempts"),
        })
    }

    /// Checks that the version this transaction read still stands in the log
    /// ([`crate::log::segment::version_stands`]), so that the commit follows it ("Delta Log
    /// Entries": versions are contiguous): a table deleted and created anew at the same
    /// location fails this check, instead of getting a commit `read + 1` next to its own
    /// versions (which would leave a log that does not open, or one holding only that
    /// commit).
    async fn check_read_version(&self, read: u64) -> DeltaResult<()> {
        let segment = self.read_snapshot.as_ref().map(|s| s.segment());
        check_version_stands(&self.storage, read, segment).await
    }
}

#[cfg(test)]
mod tests;
