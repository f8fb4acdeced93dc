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
//! Here: the snapshot type, opening a version and what a snapshot holds; [`files`]: the
//! snapshot's active files, as compact Arrow batches; `replay`: a log segment replayed into a
//! snapshot (the first pass for the protocol and metadata, the commits, the checkpoint);
//! `advance`: a newer version built by replaying only the new commits onto a snapshot.

mod advance;
pub mod files;
mod replay;

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::StructArray;
use arrow::datatypes::{Schema, SchemaRef};

use crate::error::{DeltaError, DeltaResult};
use crate::header::{data_file_schema, logical_schema, mapping_mode, TableHeader};
use crate::log::catalog::{CatalogClient, CatalogCommits};
use crate::log::published::verify_published;
use crate::log::segment::{load_catalog_segment, load_segment, Delta, LogSegment};
use crate::model::{DomainMetadata, Metadata, Protocol, Txn};
use crate::schema::ColumnMappingMode;
use crate::stats::parse::StatsSchema;
use crate::storage::Storage;
use files::FileBatch;

pub use advance::MAX_INCREMENTAL_COMMITS;
use replay::{checksum_stats_schema, FirstPass};

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

fn missing_metadata_rule(version: u64) -> String {
    format!(
        "no metaData action in versions 0..={version} (spec: \"Change Metadata\": the first \
         version of a table must contain a metaData action)"
    )
}

#[cfg(test)]
mod tests;
