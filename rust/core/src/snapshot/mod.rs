//! One version of a table: protocol, metadata, transactions, domain metadata and files.
//!
//! Built from a [`LogSegment`]: the deltas after the checkpoint are read in parallel and
//! replayed newest first, then the checkpoint (and its sidecars) is filtered against the keys
//! those deltas touched (spec: "Action Reconciliation", "Checkpoints").
//!
//! Requirements checked while opening:
//! - a `protocol` action must exist ("Protocol Evolution");
//! - a checkpoint must contain `protocol` and `metaData` ("Checkpoints": "The checkpoint
//!   **must** contain all information regarding ... the protocol version ... the metadata");
//! - a `metaData` action must exist ("Change Metadata": "The first version of a table must
//!   contain a `metaData` action"). Tables on reader version 1 need nothing from the metadata to
//!   list their files, so such a legacy table still opens and the error is raised when its
//!   metadata or schema is asked for; from reader version 2 on (column mapping, table features)
//!   the metadata is needed to interpret the table and its absence fails the open.
//!
//! [`files`]: the snapshot's active files, as compact Arrow batches.

pub mod files;

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch, StructArray};
use arrow::datatypes::{Int64Type, Schema, SchemaRef};
use futures::TryStreamExt;

use crate::error::{DeltaError, DeltaResult};
use crate::header::{data_file_schema, logical_schema, mapping_mode, stats_schema_of, TableHeader};
use crate::log::actions::names;
use crate::log::catalog::{CatalogClient, CatalogCommits};
use crate::log::checkpoint_reader::open_checkpoint;
use crate::log::path::CheckpointNaming;
use crate::log::published::verify_published;
use crate::log::reader::{commit_info_batches, delta_stream, protocol_and_metadata};
use crate::log::replay::{select_checkpoint_files, unseen, Origin, Reconciler, Selected};
use crate::log::segment::{
    build_segment, last_checkpoint_hint, load_catalog_segment, load_segment, Delta, LogListing,
    LogSegment,
};
use crate::model::{DomainMetadata, Metadata, Protocol, Txn};
use crate::nulls::filter_compact;
use crate::schema::ColumnMappingMode;
use crate::stats::parse::StatsSchema;
use crate::storage::Storage;
use files::FileBatch;

/// One reconstructed version of a Delta table.
#[derive(Debug, Clone)]
pub struct Snapshot {
    storage: Storage,
    segment: Arc<LogSegment>,
    protocol: Protocol,
    metadata: Option<Metadata>,
    txns: BTreeMap<String, Txn>,
    domains: Vec<DomainMetadata>,
    files: Arc<Vec<FileBatch>>,
    removes: Arc<Vec<StructArray>>,
    stats_schema: Arc<StatsSchema>,
    in_commit_timestamp: Option<i64>,
    /// The catalog of a catalog-managed table opened through it: later versions are read,
    /// and commits made, through it (catalogManaged RFC).
    catalog: Option<Arc<dyn CatalogClient>>,
}

/// How replay learns the schema that types statistics before it decodes the commits.
#[derive(Debug, Clone)]
enum FirstPass {
    /// From a first pass over the log ([`first_pass`]).
    Scan,
    /// Given (a previous replay found it).
    Known(Arc<StatsSchema>),
    /// Not at all: statistics are parsed after replay.
    Late,
}

/// [`Snapshot::advance`] replays at most this many commits onto a snapshot; a longer range is
/// loaded afresh (from its newest checkpoint).
pub const MAX_INCREMENTAL_COMMITS: u64 = 100;

/// Updates look new commits up by name while the snapshot's segment holds fewer commits than
/// this; a longer segment lists the log instead, to start again from its newest checkpoint.
const PROBE_SEGMENT_DELTAS: usize = 256;

/// Commits the first pass searches, newest first, for the protocol and metadata before it
/// assumes that the oldest delta file holds those in force.
const FIRST_PASS_EXACT_FILES: usize = 32;

/// The protocol and metadata to type statistics with while decoding: those of the newest
/// commits that mention them (their lines only, [`protocol_and_metadata`]). A long log whose
/// newest [`FIRST_PASS_EXACT_FILES`] commits hold neither is not read twice: what its oldest
/// delta file holds (typically the table's creation) is assumed, and replay checks it (see
/// [`Snapshot::replay`]). The checkpoint's non-file actions fill what is still missing.
async fn first_pass(storage: &Storage, newest_first: &[Delta]) -> DeltaResult<Reconciler> {
    let (newest, older) = newest_first.split_at(newest_first.len().min(FIRST_PASS_EXACT_FILES));
    let mut found = protocol_and_metadata(storage, newest.to_vec()).await?;
    let Some(oldest) = older.last() else {
        return Ok(found);
    };
    if found.protocol.is_none() || found.metadata.is_none() {
        let assumed = protocol_and_metadata(storage, vec![oldest.clone()]).await?;
        if found.protocol.is_none() {
            found.protocol = assumed.protocol;
        }
        if found.metadata.is_none() {
            found.metadata = assumed.metadata;
        }
    }
    Ok(found)
}

impl Snapshot {
    /// Opens version `version` (the latest when `None`) of the table in `storage`.
    pub async fn try_new(storage: Storage, version: Option<u64>) -> DeltaResult<Self> {
        Self::open(storage, version, None, None, None).await
    }

    /// Opens `version` (the latest ratified one when `None`) of a catalog-managed table
    /// through `client`, which this snapshot keeps: its later versions and its commits go
    /// through the catalog too.
    pub async fn try_new_with_catalog_client(
        storage: Storage,
        version: Option<u64>,
        client: Arc<dyn CatalogClient>,
    ) -> DeltaResult<Self> {
        Self::try_new_from_header(storage, version, client, None).await
    }

    /// [`Snapshot::try_new_with_catalog_client`], starting from what the catalog cached of the
    /// table (`header`): when that is the version opened, its protocol and metadata type the
    /// statistics from the start and the first pass over the newest commits is skipped
    /// (catalogManaged RFC, "Catalog Responsibilities": the catalog's copy lets clients skip
    /// replay). Replay still finds them in the log, and replays again should they differ: a
    /// stale or wrong header costs time, never a wrong snapshot.
    pub async fn try_new_from_header(
        storage: Storage,
        version: Option<u64>,
        client: Arc<dyn CatalogClient>,
        header: Option<&TableHeader>,
    ) -> DeltaResult<Self> {
        let commits = client.ratified_commits(None, None).await?;
        let mut snapshot =
            Self::open(storage, version, Some(&commits), Some(&client), header).await?;
        snapshot.catalog = Some(client);
        Ok(snapshot)
    }

    /// `target` loaded afresh, through this snapshot's catalog when it has one.
    async fn reopen(&self, target: Option<u64>) -> DeltaResult<Snapshot> {
        match &self.catalog {
            Some(client) => {
                Self::try_new_with_catalog_client(self.storage.clone(), target, client.clone())
                    .await
            }
            None => Self::try_new(self.storage.clone(), target).await,
        }
    }

    /// The catalog this catalog-managed table was opened through, if any.
    pub fn catalog(&self) -> Option<&Arc<dyn CatalogClient>> {
        self.catalog.as_ref()
    }

    async fn open(
        storage: Storage,
        version: Option<u64>,
        catalog: Option<&CatalogCommits>,
        client: Option<&Arc<dyn CatalogClient>>,
        header: Option<&TableHeader>,
    ) -> DeltaResult<Self> {
        let (segment, listing) = match catalog {
            Some(catalog) => {
                let (mut segment, listing) =
                    load_catalog_segment(&storage, version, catalog).await?;
                // The published commits replayed are the ones the catalog ratified
                // (`log::published`), read once from the bytes checked.
                let files = segment.deltas.iter_mut().filter_map(|d| match d {
                    Delta::Commit { file, .. } => Some(file),
                    Delta::Compaction { .. } => None,
                });
                verify_published(&storage, catalog, client, files.collect()).await?;
                (segment, listing)
            }
            None => load_segment(&storage, version).await?,
        };
        if let Some(header) = header.filter(|h| h.version == segment.version) {
            let known = FirstPass::Known(Arc::new(header.stats_schema()));
            return Self::replay(storage, segment, known).await;
        }
        // The version's checksum file, when there is one, names the protocol and metadata:
        // the first pass over the newest commits is not needed (replay still checks them).
        let has_checksum = listing.files.iter().any(|f| {
            matches!(f.kind, crate::log::path::LogFileKind::Crc { version } if version == segment.version)
        });
        if has_checksum {
            if let Some(schema) = checksum_stats_schema(&storage, segment.version).await {
                return Self::replay(storage, segment, FirstPass::Known(Arc::new(schema))).await;
            }
        }
        Self::from_segment(storage, segment).await
    }

    /// Replays a segment.
    pub async fn from_segment(storage: Storage, segment: LogSegment) -> DeltaResult<Self> {
        Self::replay(storage, segment, FirstPass::Scan).await
    }

    /// Replays a segment in two passes: the protocol and metadata first (see [`FirstPass`]),
    /// so that the second pass, over every action, parses statistics while it decodes. The
    /// second pass finds the protocol and metadata itself; when they type statistics otherwise
    /// than the first pass assumed, replay runs again with the schema it found.
    fn replay(
        storage: Storage,
        segment: LogSegment,
        first: FirstPass,
    ) -> futures::future::BoxFuture<'static, DeltaResult<Self>> {
        Box::pin(async move {
            let newest_first: Vec<Delta> = segment.deltas.iter().rev().cloned().collect();
            let checkpoint = async {
                match &segment.checkpoint {
                    Some(cp) => open_checkpoint(&storage, cp).await.map(Some),
                    None => Ok(None),
                }
            };
            let first_pass = async {
                match &first {
                    FirstPass::Scan => first_pass(&storage, &newest_first).await.map(Some),
                    FirstPass::Known(_) | FirstPass::Late => Ok(None),
                }
            };
            let (first_pass, checkpoint) = futures::try_join!(first_pass, checkpoint)?;
            let checkpoint_origin = segment.checkpoint.as_ref().map(|cp| Origin {
                file: format!("_delta_log/{}", cp.parts[0].name),
                version: cp.version,
            });
            let early = match first_pass {
                Some(mut found) => {
                    if let (Some(open), Some(origin)) = (&checkpoint, &checkpoint_origin) {
                        // Fills only what the commits did not have.
                        for batch in &open.header {
                            found.apply_non_file_actions(batch, origin)?;
                        }
                    }
                    Some(Arc::new(stats_schema_of(
                        found.protocol.as_ref().map(|(p, _)| p),
                        found.metadata.as_ref().map(|(m, _)| m),
                    )))
                }
                None => match &first {
                    FirstPass::Known(schema) => Some(schema.clone()),
                    _ => None,
                },
            };

            // The commits, newest first, replayed as they arrive.
            let mut reconciler = Reconciler::default();
            let mut in_commit_timestamp = replay_deltas(
                &storage,
                newest_first,
                early.clone(),
                &mut reconciler,
                segment.version,
            )
            .await?;
            if let (Some(Delta::Compaction { .. }), Some(last)) =
                (segment.deltas.last(), &segment.last_commit)
            {
                // A compaction holds no `commitInfo`: the version's own commit has its
                // in-commit timestamp.
                let batches = commit_info_batches(&storage, last, segment.version).await?;
                in_commit_timestamp = commit_info_ict(&batches);
            }

            if let (Some(cp), Some(open), Some(origin)) =
                (&segment.checkpoint, &checkpoint, &checkpoint_origin)
            {
                check_checkpoint_header(cp, &open.header, origin)?;
                for batch in &open.header {
                    reconciler.apply_non_file_actions(batch, origin)?;
                }
            }

            let last_file = segment
                .deltas
                .last()
                .map(|d| (format!("_delta_log/{}", d.file().name), d.end_version()));
            let Some((protocol, _)) = reconciler.protocol.take() else {
                let (file, v) = last_file.unwrap_or_else(|| ("_delta_log".into(), segment.version));
                return Err(DeltaError::corrupt(
                    file,
                    Some(v),
                    format!(
                        "no protocol action in versions 0..={} (spec: \"Protocol Evolution\")",
                        segment.version
                    ),
                ));
            };
            let metadata = reconciler.metadata.take().map(|(m, _)| m);
            if metadata.is_none() && protocol.min_reader_version >= 2 {
                let (file, v) = last_file.unwrap_or_else(|| ("_delta_log".into(), segment.version));
                return Err(DeltaError::corrupt(
                    file,
                    Some(v),
                    missing_metadata_rule(segment.version),
                ));
            }

            let mut snapshot = Snapshot {
                storage,
                segment: Arc::new(segment),
                protocol,
                metadata,
                txns: reconciler.txns.drain().collect(),
                domains: reconciler.domain_metadata(),
                files: Arc::new(Vec::new()),
                removes: Arc::new(Vec::new()),
                stats_schema: Arc::new(StatsSchema::empty()),
                in_commit_timestamp,
                catalog: None,
            };
            // Statistics are typed by the schema; a snapshot without a usable one keeps counts only.
            let stats_schema = Arc::new(stats_schema_of(
                Some(&snapshot.protocol),
                snapshot.metadata.as_ref(),
            ));
            if early.as_ref().is_some_and(|e| **e != *stats_schema) {
                // The first pass assumed other metadata than replay found (a long log whose
                // metadata changed before its newest commits, or one that spells action names
                // with JSON escapes): the statistics parsed early are typed by the wrong schema.
                // Replay again with the schema found (or, should that disagree too, parsing
                // statistics after replay).
                let again = match first {
                    FirstPass::Scan => FirstPass::Known(stats_schema),
                    FirstPass::Known(_) | FirstPass::Late => FirstPass::Late,
                };
                return Self::replay(
                    snapshot.storage,
                    Arc::unwrap_or_clone(snapshot.segment),
                    again,
                )
                .await;
            }

            // Loaded from a checkpoint of its own version: its in-commit timestamp still counts.
            if crate::log::timeline::ict_applies(&snapshot.configuration(), snapshot.version()) {
                let ict =
                    crate::log::timeline::unreplayed_ict(&snapshot.storage, &snapshot.segment);
                snapshot.in_commit_timestamp = snapshot.in_commit_timestamp.or(ict.await?);
            }

            // The commits' keys are only needed to filter a checkpoint; free them otherwise.
            let seen = reconciler.take_seen();
            let seen = checkpoint.is_some().then_some(seen);

            // Commit adds: parse their statistics, batches in parallel.
            let commit_adds = std::mem::take(&mut reconciler.adds);
            let mut files = parse_in_parallel(commit_adds, &stats_schema).await?;
            let mut removes = std::mem::take(&mut reconciler.removes);

            // Checkpoint adds: selected against the commits' keys, parsed and compacted batch by
            // batch while they are decoded.
            if let (Some(open), Some(origin), Some(seen)) = (checkpoint, checkpoint_origin, seen) {
                let seen = Arc::new(seen);
                let stats = stats_schema.clone();
                let stats_type = stats_schema.physical_type();
                let selected = open
                    .read_files(&snapshot.storage, &stats_type, move |batch| {
                        let selection = select_checkpoint_files(&seen, &batch, &origin)?;
                        let files = selection
                            .adds
                            .map(|adds| FileBatch::new(adds, &stats))
                            .transpose()?;
                        Ok((files, selection.removes))
                    })
                    .await?;
                for (f, r) in selected {
                    files.extend(f);
                    removes.extend(r);
                }
            }
            snapshot.files = Arc::new(crate::snapshot::files::coalesce(files));
            snapshot.removes = Arc::new(removes);
            snapshot.stats_schema = stats_schema;
            Ok(snapshot)
        })
    }

    /// A newer version of the same table (the latest when `target` is `None`), built by
    /// replaying only the commits after this version onto this snapshot's state ("Action
    /// Reconciliation": this snapshot's files and tombstones stand where a checkpoint would):
    /// after a write, this costs the new commits, not a reload of the whole table.
    ///
    /// Falls back to opening `target` afresh ([`Snapshot::try_new`]) when that is the only
    /// exact answer or clearly cheaper: this version's own commit gone or replaced (the table
    /// deleted and created again), an older target, a commit of the range missing (cleaned
    /// up; a newer checkpoint covers it), a `protocol` or `metaData` change in the range (it
    /// may retype statistics), or more than [`MAX_INCREMENTAL_COMMITS`] commits to replay.
    /// The result equals a fresh load, except that tombstones a newer checkpoint dropped as
    /// expired may still be listed.
    pub async fn advance(&self, target: Option<u64>) -> DeltaResult<Snapshot> {
        let current = self.version();
        if target.is_some_and(|t| t < current) {
            return self.reopen(target).await;
        }
        let (listing, latest) = match &self.catalog {
            Some(client) => {
                // The catalog knows the versions the listing does not ("Reading
                // Catalog-managed Tables"): its commits joined with the newer part of the log.
                // Only the commits after this version: those up to it are part of this
                // snapshot already (and a staged one would be read again to be verified).
                let held = client.ratified_commits(Some(current + 1), None).await?;
                let mut listing = self.news(current + 1, None, false).await?;
                held.apply(&self.storage, &mut listing)?;
                // The new published commits as the catalog ratified them (`log::published`).
                let new = listing
                    .files
                    .iter_mut()
                    .filter(|f| f.kind.version().is_some_and(|v| v > current));
                verify_published(&self.storage, &held, Some(client), new.collect()).await?;
                (listing, held.latest_version.max(current))
            }
            None => {
                // From this version on: its own commit is checked too. When that is gone or
                // another file, the table was deleted and created again (or its log cleaned
                // up past this version), and nothing of this snapshot carries over: the
                // target is loaded afresh.
                let listing = if self.segment.last_commit.is_some() {
                    self.news(current, None, true).await?
                } else {
                    LogListing::list(&self.storage, Some(current)).await?
                };
                let commits = listing.commits();
                let loaded_stands = match (&self.segment.last_commit, commits.get(&current)) {
                    (Some(loaded), Some(listed)) => {
                        crate::log::segment::same_object(&loaded.meta, &listed.meta)
                    }
                    (Some(_), None) => false,
                    (None, Some(_)) => true,
                    (None, None) => self.segment.checkpoint.as_ref().is_some_and(|c| {
                        c.parts
                            .iter()
                            .all(|p| listing.files.iter().any(|f| f.name == p.name))
                    }),
                };
                if !loaded_stands {
                    return Self::try_new(self.storage.clone(), target).await;
                }
                let latest = listing.latest_version().map_or(current, |v| v.max(current));
                (listing, latest)
            }
        };
        self.replay_onto(listing, target.unwrap_or(latest), latest)
            .await
    }

    /// [`Snapshot::advance`] to `target`, a version this process knows is published (a
    /// writer's own commit, published with every ratified commit before it): the published
    /// log answers alone ("Publishing Commits": `<v>.json` is the ratified commit `v`, whose
    /// content is immutable), so a catalog-managed table does not ask its catalog again.
    /// Otherwise (a table without a catalog, whose listing is as cheap; a log that does not
    /// hold every commit up to `target` after all, such as a commit the catalog ratifies
    /// later with others) this is `advance(None)`: the latest version.
    pub async fn advance_published(&self, target: u64) -> DeltaResult<Snapshot> {
        let current = self.version();
        if self.catalog.is_none() || target <= current {
            return self.advance(None).await;
        }
        let listing = self.news(current + 1, Some(target), false).await?;
        let commits = listing.commits();
        if (current + 1..=target).any(|v| !commits.contains_key(&v)) {
            return self.advance(None).await;
        }
        drop(commits);
        self.replay_onto(listing, target, target).await
    }

    /// The log from version `from` on (up to `upto`), for an update of this snapshot: on a
    /// local disk the new commits are looked up by name ([`LogListing::probe`]) while this
    /// snapshot's segment is short, so that an update costs what is new, not the size of the
    /// log; otherwise (and to pick up a newer checkpoint once the segment grew) a listing.
    /// With `check_gap`, finding nothing new by name is confirmed with the `_last_checkpoint`
    /// hint: the commits right after this version may be gone (cleaned up behind a newer
    /// checkpoint) while newer ones stand, and a hint past this version means listing.
    async fn news(&self, from: u64, upto: Option<u64>, check_gap: bool) -> DeltaResult<LogListing> {
        if self.segment.deltas.len() < PROBE_SEGMENT_DELTAS {
            if let Some(listing) = LogListing::probe(&self.storage, from, upto).await? {
                let current = self.version();
                if !check_gap
                    || listing.latest_version().is_some_and(|v| v > current)
                    || last_checkpoint_hint(&self.storage)
                        .await
                        .is_none_or(|hint| hint <= current)
                {
                    return Ok(listing);
                }
            }
        }
        LogListing::list(&self.storage, Some(from)).await
    }

    /// `target` (at most `latest`), from this snapshot and the commits after it in
    /// `listing`: [`Snapshot::advance`] once it knows what to replay.
    async fn replay_onto(
        &self,
        listing: LogListing,
        target: u64,
        latest: u64,
    ) -> DeltaResult<Snapshot> {
        let current = self.version();
        let commits = listing.commits();
        if target == current {
            return Ok(self.clone());
        }
        let fresh = || self.reopen(Some(target));
        if target > latest || target - current > MAX_INCREMENTAL_COMMITS {
            return fresh().await;
        }
        let mut deltas = Vec::new();
        for version in current + 1..=target {
            match commits.get(&version) {
                Some(file) => deltas.push(Delta::Commit {
                    version,
                    file: (*file).clone(),
                }),
                None => return fresh().await,
            }
        }
        // The segment of `target`: from a checkpoint newer than this version when the listing
        // has one, else this snapshot's segment followed by the new commits.
        let segment = match build_segment(&listing, Some(target)) {
            Ok(segment) => segment,
            Err(_) => LogSegment {
                version: target,
                checkpoint: self.segment.checkpoint.clone(),
                deltas: self.segment.deltas.iter().chain(&deltas).cloned().collect(),
                last_commit: commits.get(&target).map(|f| (*f).clone()),
            },
        };

        let stats_schema = self.stats_schema.clone();
        let mut reconciler = Reconciler::default();
        let in_commit_timestamp = replay_deltas(
            &self.storage,
            deltas.into_iter().rev().collect(),
            Some(stats_schema.clone()),
            &mut reconciler,
            target,
        )
        .await?;
        if reconciler.protocol.is_some() || reconciler.metadata.is_some() {
            return fresh().await;
        }

        // This snapshot's files and tombstones, less those the new commits referenced.
        let seen = reconciler.take_seen();
        let origin = Origin {
            file: format!("_delta_log/{current:020}.json"),
            version: current,
        };
        let mut files =
            parse_in_parallel(std::mem::take(&mut reconciler.adds), &stats_schema).await?;
        let mut removes = std::mem::take(&mut reconciler.removes);
        for batch in self.files.iter() {
            let mask = unseen(&seen, &batch.adds, "add", &origin)?;
            let kept = mask.iter().filter(|k| **k).count();
            if kept == batch.len() {
                files.push(batch.clone());
            } else if kept > 0 {
                files.push(batch.filter(&BooleanArray::from(mask), kept)?);
            }
        }
        for batch in self.removes.iter() {
            let mask = unseen(&seen, batch, "remove", &origin)?;
            let kept = mask.iter().filter(|k| **k).count();
            if kept == batch.len() {
                removes.push(batch.clone());
            } else if kept > 0 {
                let array: arrow::array::ArrayRef = Arc::new(batch.clone());
                let filtered = filter_compact(&array, &BooleanArray::from(mask), kept)?;
                removes.push(filtered.as_struct().clone());
            }
        }

        let mut txns = self.txns.clone();
        txns.extend(reconciler.txns.drain());
        let mut domains: BTreeMap<String, DomainMetadata> = self
            .domains
            .iter()
            .map(|d| (d.domain.clone(), d.clone()))
            .collect();
        for (domain, update) in reconciler.domain_updates() {
            match update {
                Some(d) => domains.insert(domain.clone(), d.clone()),
                None => domains.remove(domain),
            };
        }
        Ok(Snapshot {
            storage: self.storage.clone(),
            segment: Arc::new(segment),
            protocol: self.protocol.clone(),
            metadata: self.metadata.clone(),
            txns,
            domains: domains.into_values().collect(),
            files: Arc::new(crate::snapshot::files::coalesce(files)),
            removes: Arc::new(removes),
            stats_schema,
            in_commit_timestamp,
            catalog: self.catalog.clone(),
        })
    }

    /// The table's storage.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The version of this snapshot.
    pub fn version(&self) -> u64 {
        self.segment.version
    }

    /// The files the snapshot was built from.
    pub fn segment(&self) -> &LogSegment {
        &self.segment
    }

    /// The `protocol` in force.
    pub fn protocol(&self) -> &Protocol {
        &self.protocol
    }

    /// This version with `metadata` in force instead of its own: what a statement that
    /// changes the schema as it writes (MERGE with schema evolution) reads and writes with,
    /// its commit carrying the new `metaData` ("Change Metadata"). The files and their parsed
    /// statistics stay this version's.
    pub fn with_metadata(&self, metadata: Metadata) -> Snapshot {
        let mut out = self.clone();
        out.metadata = Some(metadata);
        out
    }

    /// The `metaData` in force; an error for legacy logs that have none.
    pub fn metadata(&self) -> DeltaResult<&Metadata> {
        self.metadata.as_ref().ok_or_else(|| {
            DeltaError::corrupt(
                "_delta_log",
                Some(self.version()),
                missing_metadata_rule(self.version()),
            )
        })
    }

    /// The table properties (empty without metadata).
    pub fn configuration(&self) -> BTreeMap<String, String> {
        self.metadata
            .as_ref()
            .map(|m| m.configuration.clone())
            .unwrap_or_default()
    }

    /// The logical schema.
    pub fn schema(&self) -> DeltaResult<SchemaRef> {
        logical_schema(self.metadata()?, self.version())
    }

    /// The column mapping mode in force ("Column Mapping": the property is honoured only when
    /// the protocol supports the `columnMapping` feature).
    pub fn column_mapping_mode(&self) -> DeltaResult<ColumnMappingMode> {
        mapping_mode(&self.protocol, &self.configuration(), self.version())
    }

    /// The schema of the data files (physical names; field ids in id mode).
    pub fn physical_schema(&self) -> DeltaResult<Schema> {
        data_file_schema(
            self.schema()?.as_ref(),
            self.column_mapping_mode()?,
            self.version(),
        )
    }

    /// The latest `txn` per application id.
    pub fn transactions(&self) -> &BTreeMap<String, Txn> {
        &self.txns
    }

    /// The live domain metadata, sorted by domain.
    pub fn domain_metadata(&self) -> &[DomainMetadata] {
        &self.domains
    }

    /// The active files: `add` structs of [`crate::log::actions::add_fields`] (without `stats`)
    /// with their parsed statistics.
    pub fn files(&self) -> &[FileBatch] {
        &self.files
    }

    /// The types of the parsed statistics.
    pub fn stats_schema(&self) -> &StatsSchema {
        &self.stats_schema
    }

    /// The `remove` tombstones, as struct arrays of [`crate::log::actions::remove_fields`].
    pub fn removes(&self) -> &[StructArray] {
        &self.removes
    }

    /// Number of active logical files.
    pub fn num_files(&self) -> usize {
        self.files.iter().map(FileBatch::len).sum()
    }

    /// The `inCommitTimestamp` of this version's commit, when it has one.
    pub fn in_commit_timestamp(&self) -> Option<i64> {
        self.in_commit_timestamp
    }

    /// When this version was committed, in milliseconds since the epoch: the in-commit
    /// timestamp when the table has them enabled for this version, the commit file's
    /// modification time otherwise ("Recommendations for Readers of Tables with In-Commit
    /// Timestamps").
    pub fn timestamp(&self) -> Option<i64> {
        let config = self.configuration();
        if crate::log::timeline::ict_applies(&config, self.version()) {
            if let Some(ict) = self.in_commit_timestamp {
                return Some(ict);
            }
        }
        self.segment
            .last_commit
            .as_ref()
            .map(|f| f.meta.last_modified.timestamp_millis())
    }
}

/// The statistics schema the protocol and metadata of version `version`'s checksum file
/// ("Version Checksum File") give; `None` when the file is unreadable or lacks them.
async fn checksum_stats_schema(storage: &Storage, version: u64) -> Option<StatsSchema> {
    use crate::maintenance::version_checksum::checksum_file_name;
    let bytes = storage
        .get(&storage.log_path(&checksum_file_name(version)))
        .await
        .ok()?;
    let crc: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let protocol = Protocol::from_json(crc.get("protocol")?)?;
    let metadata = Metadata::from_json(crc.get("metadata")?)?;
    Some(stats_schema_of(Some(&protocol), Some(&metadata)))
}

fn missing_metadata_rule(version: u64) -> String {
    format!(
        "no metaData action in versions 0..={version} (spec: \"Change Metadata\": the first \
         version of a table must contain a metaData action)"
    )
}

/// "Checkpoints": protocol and metadata must be in the checkpoint itself; "V2 Spec": a
/// UUID-named checkpoint has a checkpointMetadata action.
fn check_checkpoint_header(
    cp: &crate::log::segment::CheckpointFiles,
    header: &[RecordBatch],
    origin: &Origin,
) -> DeltaResult<()> {
    let has = |name: &str| {
        header.iter().any(|b| {
            b.column_by_name(name)
                .is_some_and(|c| c.null_count() < c.len())
        })
    };
    for (action, what) in [(names::PROTOCOL, "protocol"), (names::METADATA, "metaData")] {
        if !has(action) {
            return Err(DeltaError::corrupt(
                &origin.file,
                Some(cp.version),
                format!(
                    "the checkpoint has no {what} action (spec: \"Checkpoints\": a checkpoint \
                     must contain the protocol and the metadata)"
                ),
            ));
        }
    }
    if matches!(cp.naming, CheckpointNaming::Uuid { .. }) && !has(names::CHECKPOINT_METADATA) {
        return Err(DeltaError::corrupt(
            &origin.file,
            Some(cp.version),
            "a UUID-named checkpoint has no checkpointMetadata action (spec: \"V2 Spec\")",
        ));
    }
    Ok(())
}

/// Replays `newest_first` (commits and compactions, newest first) into `reconciler` as they
/// are decoded, statistics typed by `stats` when known; returns the in-commit timestamp of the
/// commit of `version`, when it was replayed and has one.
async fn replay_deltas(
    storage: &Storage,
    newest_first: Vec<Delta>,
    stats: Option<Arc<StatsSchema>>,
    reconciler: &mut Reconciler,
    version: u64,
) -> DeltaResult<Option<i64>> {
    let mut in_commit_timestamp = None;
    let mut deltas = std::pin::pin!(delta_stream(storage, newest_first, stats));
    while let Some((delta, batches)) = deltas.try_next().await? {
        let origin = Origin {
            file: format!("_delta_log/{}", delta.file().name),
            version: delta.end_version(),
        };
        if delta.end_version() == version && matches!(delta, Delta::Commit { .. }) {
            in_commit_timestamp = commit_info_ict(&batches.batches);
        }
        reconciler.apply_delta(&batches.batches, &batches.stats, batches.add_keys, &origin)?;
    }
    Ok(in_commit_timestamp)
}

/// Up to this many `add` rows are parsed on the calling thread.
const INLINE_PARSE_ROWS: usize = 256;

/// Parses the statistics of commit adds, spreading batches over blocking threads.
async fn parse_in_parallel(
    adds: Vec<Selected>,
    stats: &Arc<StatsSchema>,
) -> DeltaResult<Vec<FileBatch>> {
    // A commit or two of a few files (an append's replay): parsed here, without a hand-off
    // to another thread.
    if adds.iter().map(|a| a.array.len()).sum::<usize>() <= INLINE_PARSE_ROWS {
        return adds.into_iter().map(|a| FileBatch::new(a, stats)).collect();
    }
    let threads = crate::available_threads();
    let chunk = adds.len().div_ceil(threads).max(1);
    let mut chunks: Vec<Vec<Selected>> = Vec::new();
    let mut iter = adds.into_iter().peekable();
    while iter.peek().is_some() {
        chunks.push(iter.by_ref().take(chunk).collect());
    }
    let handles: Vec<_> = chunks
        .into_iter()
        .map(|part| {
            let stats = stats.clone();
            tokio::task::spawn_blocking(move || {
                part.into_iter()
                    .map(|a| FileBatch::new(a, &stats))
                    .collect::<DeltaResult<Vec<_>>>()
            })
        })
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.extend(
            h.await
                .map_err(|e| DeltaError::Internal(format!("statistics task failed: {e}")))??,
        );
    }
    Ok(out)
}

/// The `inCommitTimestamp` of a commit's `commitInfo`, if any.
fn commit_info_ict(batches: &[arrow::array::RecordBatch]) -> Option<i64> {
    batches.iter().find_map(|b| {
        let ci = b.column_by_name(names::COMMIT_INFO)?.as_struct_opt()?;
        let ict = ci.column_by_name("inCommitTimestamp")?;
        let ict = ict.as_primitive_opt::<Int64Type>()?;
        (0..ci.len()).find_map(|r| (ci.is_valid(r) && ict.is_valid(r)).then(|| ict.value(r)))
    })
}

#[cfg(test)]
mod tests;
