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

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::commit::committer::{self, Attempt};
use crate::error::{DeltaError, DeltaResult};
use crate::log::catalog::{CatalogClient, Maintenance};
use crate::log::path::commit_file_name;
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

    /// Writes `<version>.crc` (see [`crate::maintenance::version_checksum`]): `before` (the
    /// state of the previous version) plus this commit's actions. Best effort: the file is
    /// optional.
    async fn write_checksum(
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
    async fn checkpoint_if_due(&self, version: u64, catalog: Option<&Arc<dyn CatalogClient>>) {
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

    /// The commit file of `version`: commitInfo first, then the actions, one per line.
    fn commit_text(
        &self,
        txn_id: &str,
        version: u64,
        ict: Option<InCommitTimestamps>,
        row_id_high_water_mark: Option<i64>,
    ) -> DeltaResult<String> {
        let mut mark = row_id_high_water_mark;
        let mut assigned = false;
        let now = chrono::Utc::now().timestamp_millis();
        let in_commit = ict.map(|s| s.previous.map_or(now, |p| now.max(p + 1)));
        let mut info = Map::new();
        if let Some(t) = in_commit {
            // "inCommitTimestamp" first, and the commit's timestamp is the same instant.
            info.insert("inCommitTimestamp".into(), json!(t));
        }
        info.insert("timestamp".into(), json!(in_commit.unwrap_or(now)));
        info.insert("operation".into(), json!(self.operation));
        info.insert(
            "operationParameters".into(),
            Value::Object(self.operation_parameters.clone()),
        );
        if let Some(v) = self.read_version {
            info.insert("readVersion".into(), json!(v));
        }
        info.insert(
            "isBlindAppend".into(),
            json!(self.isolation == Isolation::BlindAppend),
        );
        info.insert("engineInfo".into(), json!(self.engine_info));
        info.insert("txnId".into(), json!(txn_id));
        for (k, v) in &self.custom {
            info.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let mut lines = vec![json!({ "commitInfo": info }).to_string()];
        if let Some((app_id, v)) = &self.app_transaction {
            lines.push(
                json!({"txn": {"appId": app_id, "version": v,
                       "lastUpdated": chrono::Utc::now().timestamp_millis()}})
                .to_string(),
            );
        }
        for action in &self.actions {
            if !action.is_object() {
                return Err(DeltaError::InvalidArgument(format!(
                    "an action must be a JSON object: {action}"
                )));
            }
            match (ict, in_commit, action.get("metaData")) {
                (Some(InCommitTimestamps { enabling: true, .. }), Some(t), Some(_)) => {
                    let mut action = action.clone();
                    if let Some(config) = action
                        .pointer_mut("/metaData/configuration")
                        .and_then(Value::as_object_mut)
                    {
                        config.insert(
                            "delta.inCommitTimestampEnablementVersion".into(),
                            json!(version.to_string()),
                        );
                        config.insert(
                            "delta.inCommitTimestampEnablementTimestamp".into(),
                            json!(t.to_string()),
                        );
                    }
                    lines.push(action.to_string());
                }
                _ => match (mark.as_mut(), action.get("add")) {
                    (Some(m), Some(add)) if add.get("baseRowId").is_none() => {
                        // Fresh row IDs for the file's physical rows.
                        let records = add
                            .get("stats")
                            .and_then(Value::as_str)
                            .and_then(|s| serde_json::from_str::<Value>(s).ok())
                            .and_then(|s| s.get("numRecords").and_then(Value::as_i64))
                            .ok_or_else(|| {
                                DeltaError::Internal(
                                    "an add without numRecords cannot get row IDs".into(),
                                )
                            })?;
                        let mut action = action.clone();
                        action["add"]["baseRowId"] = json!(*m + 1);
                        action["add"]["defaultRowCommitVersion"] = json!(version);
                        *m += records;
                        assigned = true;
                        lines.push(action.to_string());
                    }
                    _ => lines.push(action.to_string()),
                },
            }
        }
        if let (true, Some(m)) = (assigned, mark) {
            let configuration = json!({ "highWaterMark": m }).to_string();
            lines.push(
                json!({"domainMetadata": {"domain": ROW_TRACKING_DOMAIN,
                       "configuration": configuration, "removed": false}})
                .to_string(),
            );
        }
        let mut text = lines.join("\n");
        text.push('\n');
        Ok(text)
    }

    /// Checks the commit that won `version` against this transaction; returns the winner's
    /// in-commit timestamp and row ID high-water mark, where it has them, and its actions.
    async fn check_winner(
        &self,
        version: u64,
        content: Option<bytes::Bytes>,
    ) -> DeltaResult<(Option<i64>, Option<i64>, Vec<Value>)> {
        let conflict = |reason: String| DeltaError::CommitConflict { version, reason };
        if self.read_version.is_none() {
            return Err(conflict("the table was created concurrently".into()));
        }
        let name = commit_file_name(version);
        let bytes = match content {
            Some(bytes) => bytes,
            None => self.storage.get(&self.storage.log_path(&name)).await?,
        };
        let mut actions = Vec::new();
        for line in bytes.split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: Value = serde_json::from_slice(line).map_err(|e| {
                DeltaError::corrupt(
                    format!("_delta_log/{name}"),
                    Some(version),
                    format!("invalid action JSON: {e}"),
                )
            })?;
            actions.push(value);
        }
        let action = |value: &'_ Value, key: &str| -> Option<Value> {
            value.get(key).filter(|v| !v.is_null()).cloned()
        };
        let winner_mark = actions.iter().find_map(|a| {
            let d = action(a, "domainMetadata")?;
            (d.get("domain").and_then(Value::as_str) == Some(ROW_TRACKING_DOMAIN))
                .then(|| {
                    d.get("configuration")
                        .and_then(Value::as_str)
                        .and_then(high_water_mark_of)
                })
                .flatten()
        });
        let winner_ict = actions.iter().find_map(|a| {
            action(a, "commitInfo").and_then(|c| c.get("inCommitTimestamp").and_then(Value::as_i64))
        });
        // "Domain Metadata": two commits changing one domain conflict.
        let own_domains: HashSet<&str> = self
            .actions
            .iter()
            .filter_map(|a| a.pointer("/domainMetadata/domain").and_then(Value::as_str))
            .collect();
        let winner_blind = actions.iter().any(|a| {
            action(a, "commitInfo")
                .and_then(|c| c.get("isBlindAppend").and_then(Value::as_bool))
                .unwrap_or(false)
        });
        let read_id = self
            .read_snapshot
            .as_ref()
            .and_then(|s| s.metadata().ok())
            .and_then(|m| m.id.clone());
        for value in &actions {
            let winner_id = action(value, "metaData")
                .and_then(|m| m.get("id").and_then(Value::as_str).map(str::to_string));
            if let (Some(read), Some(winner)) = (&read_id, &winner_id) {
                if read != winner {
                    return Err(conflict(format!(
                        "it belongs to another table (id {winner}, not {read}): the table at {} \
                         was replaced",
                        self.storage.url()
                    )));
                }
            }
            if action(value, "metaData").is_some() || action(value, "protocol").is_some() {
                return Err(conflict(
                    "it changed the table's metadata or protocol".into(),
                ));
            }
            if let (Some(txn), Some((app_id, _))) = (action(value, "txn"), &self.app_transaction) {
                if txn.get("appId").and_then(Value::as_str) == Some(app_id) {
                    return Err(conflict(format!(
                        "it committed a transaction of application {app_id:?} too"
                    )));
                }
            }
            if let Some(domain) = action(value, "domainMetadata")
                .and_then(|d| d.get("domain").and_then(Value::as_str).map(str::to_string))
            {
                if own_domains.contains(domain.as_str()) {
                    return Err(conflict(format!(
                        "it changed the metadata domain {domain:?} too"
                    )));
                }
            }
            let data_change = |key: &str| {
                action(value, key)
                    .filter(|a| a.get("dataChange").and_then(Value::as_bool) != Some(false))
            };
            if self.isolation == Isolation::BlindAppend {
                continue;
            }
            if self.isolation == Isolation::RewritesAll
                && (action(value, "add").is_some() || action(value, "remove").is_some())
            {
                return Err(conflict(
                    "it changed data files while every file was being rewritten".into(),
                ));
            }
            match &self.read_files {
                None => {
                    if data_change("add").is_some() || data_change("remove").is_some() {
                        return Err(conflict(
                            "it changed data files this transaction read".into(),
                        ));
                    }
                }
                Some(read) => {
                    if let Some(remove) = action(value, "remove") {
                        let raw = remove.get("path").and_then(Value::as_str).unwrap_or("");
                        let path = crate::paths::decode_uri_path(raw)
                            .map(|p| p.into_owned())
                            .unwrap_or_else(|_| raw.to_string());
                        if read.contains(&path) {
                            return Err(conflict(format!(
                                "it removed or changed the deletion vector of {path}, a file \
                                 this transaction read"
                            )));
                        }
                    }
                    if self.isolation == Isolation::Rearranges {
                        continue;
                    }
                    if !winner_blind && data_change("add").is_some() {
                        return Err(conflict(
                            "it added data files without being a blind append; they may hold \
                             rows this transaction should have read"
                                .into(),
                        ));
                    }
                }
            }
        }
        Ok((winner_ict, winner_mark, actions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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
        let first: Value =
            serde_json::from_slice(text.split(|b| *b == b'\n').next().unwrap()).unwrap();
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
            let mut t =
                Transaction::new(storage.clone(), Some(1), "OPTIMIZE", Isolation::Rearranges)
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
}
