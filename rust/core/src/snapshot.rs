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

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, StructArray};
use arrow::datatypes::{Int64Type, Schema, SchemaRef};

use crate::actions::names;
use crate::error::{DeltaError, DeltaResult};
use crate::log_reader::{read_checkpoint, read_deltas};
use crate::model::{DomainMetadata, Metadata, Protocol, Txn};
use crate::replay::{Origin, Reconciler};
use crate::schema::{parse_schema_string, physical_schema, ColumnMappingMode};
use crate::segment::{load_segment, LogSegment};
use crate::storage::Storage;

/// One reconstructed version of a Delta table.
#[derive(Debug, Clone)]
pub struct Snapshot {
    storage: Storage,
    segment: Arc<LogSegment>,
    protocol: Protocol,
    metadata: Option<Metadata>,
    txns: BTreeMap<String, Txn>,
    domains: Vec<DomainMetadata>,
    adds: Arc<Vec<StructArray>>,
    removes: Arc<Vec<StructArray>>,
    in_commit_timestamp: Option<i64>,
}

impl Snapshot {
    /// Opens version `version` (the latest when `None`) of the table in `storage`.
    pub async fn try_new(storage: Storage, version: Option<u64>) -> DeltaResult<Self> {
        let (segment, _listing) = load_segment(&storage, version).await?;
        Self::from_segment(storage, segment).await
    }

    /// Replays a segment.
    pub async fn from_segment(storage: Storage, segment: LogSegment) -> DeltaResult<Self> {
        // Read the checkpoint while the deltas are fetched and decoded.
        let checkpoint = async {
            match &segment.checkpoint {
                Some(cp) => read_checkpoint(&storage, cp).await.map(Some),
                None => Ok(None),
            }
        };
        let (deltas, checkpoint) =
            futures::try_join!(read_deltas(&storage, &segment.deltas), checkpoint)?;

        let mut reconciler = Reconciler::default();
        let mut in_commit_timestamp = None;
        for (delta, batches) in segment.deltas.iter().zip(deltas.iter()).rev() {
            let origin = Origin {
                file: format!("_delta_log/{}", delta.file().name),
                version: delta.end_version(),
            };
            if delta.end_version() == segment.version
                && matches!(delta, crate::segment::Delta::Commit { .. })
            {
                in_commit_timestamp = commit_info_ict(&batches.batches);
            }
            reconciler.apply_delta(&batches.batches, &origin)?;
        }
        drop(deltas);

        if let (Some(cp), Some(data)) = (&segment.checkpoint, checkpoint) {
            let origin = Origin {
                file: format!("_delta_log/{}", cp.parts[0].name),
                version: cp.version,
            };
            // "Checkpoints": protocol and metadata must be in the checkpoint itself.
            let has = |name: &str| {
                data.batches.iter().any(|b| {
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
                            "the checkpoint has no {what} action (spec: \"Checkpoints\": a \
                             checkpoint must contain the protocol and the metadata)"
                        ),
                    ));
                }
            }
            if matches!(cp.naming, crate::log_path::CheckpointNaming::Uuid { .. })
                && !has(names::CHECKPOINT_METADATA)
            {
                return Err(DeltaError::corrupt(
                    &origin.file,
                    Some(cp.version),
                    "a UUID-named checkpoint has no checkpointMetadata action (spec: \"V2 Spec\")",
                ));
            }
            for batch in &data.batches {
                reconciler.apply_non_file_actions(batch, &origin)?;
            }
            let selections = data
                .batches
                .iter()
                .chain(data.sidecar_batches.iter())
                .map(|b| reconciler.select_checkpoint_files(b, &origin))
                .collect::<DeltaResult<Vec<_>>>()?;
            for s in selections {
                reconciler.adds.extend(s.adds);
                reconciler.removes.extend(s.removes);
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
                format!(
                    "no metaData action in versions 0..={} (spec: \"Change Metadata\": the first \
                     version of a table must contain a metaData action)",
                    segment.version
                ),
            ));
        }
        let domains = reconciler.domain_metadata();
        let txns = reconciler.txns.drain().collect();
        Ok(Snapshot {
            storage,
            segment: Arc::new(segment),
            protocol,
            metadata,
            txns,
            domains,
            adds: Arc::new(std::mem::take(&mut reconciler.adds)),
            removes: Arc::new(std::mem::take(&mut reconciler.removes)),
            in_commit_timestamp,
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

    /// The `metaData` in force; an error for legacy logs that have none.
    pub fn metadata(&self) -> DeltaResult<&Metadata> {
        self.metadata.as_ref().ok_or_else(|| {
            DeltaError::corrupt(
                "_delta_log",
                Some(self.version()),
                format!(
                    "no metaData action in versions 0..={} (spec: \"Change Metadata\": the first \
                     version of a table must contain a metaData action)",
                    self.version()
                ),
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
        let metadata = self.metadata()?;
        let text = metadata.schema_string.as_deref().ok_or_else(|| {
            DeltaError::corrupt(
                "_delta_log",
                Some(self.version()),
                "the metaData action has no schemaString (spec: \"Change Metadata\")",
            )
        })?;
        parse_schema_string(text).map(Arc::new).map_err(|e| {
            DeltaError::corrupt(
                "_delta_log",
                Some(self.version()),
                format!("invalid schemaString: {e} (spec: \"Schema Serialization Format\")"),
            )
        })
    }

    /// The column mapping mode in force ("Column Mapping": the property is honoured only when
    /// the protocol supports the `columnMapping` feature).
    pub fn column_mapping_mode(&self) -> DeltaResult<ColumnMappingMode> {
        let p = &self.protocol;
        let supported = p.min_reader_version == 2
            || (p.min_reader_version >= 3
                && p.reader_features
                    .as_ref()
                    .is_some_and(|f| f.iter().any(|n| n == "columnMapping")));
        if !supported {
            return Ok(ColumnMappingMode::None);
        }
        let config = self.configuration();
        ColumnMappingMode::from_property(
            config
                .get(crate::schema::COLUMN_MAPPING_MODE_KEY)
                .map(String::as_str),
        )
        .map_err(|e| DeltaError::corrupt("_delta_log", Some(self.version()), e.0))
    }

    /// The schema of the data files (physical names; field ids in id mode).
    pub fn physical_schema(&self) -> DeltaResult<Schema> {
        let mode = self.column_mapping_mode()?;
        physical_schema(self.schema()?.as_ref(), mode)
            .map_err(|e| DeltaError::corrupt("_delta_log", Some(self.version()), e.0))
    }

    /// The latest `txn` per application id.
    pub fn transactions(&self) -> &BTreeMap<String, Txn> {
        &self.txns
    }

    /// The live domain metadata, sorted by domain.
    pub fn domain_metadata(&self) -> &[DomainMetadata] {
        &self.domains
    }

    /// The active `add` actions, as struct arrays of [`crate::actions::add_fields`].
    pub fn adds(&self) -> &[StructArray] {
        &self.adds
    }

    /// The `remove` tombstones, as struct arrays of [`crate::actions::remove_fields`].
    pub fn removes(&self) -> &[StructArray] {
        &self.removes
    }

    /// Number of active logical files.
    pub fn num_files(&self) -> usize {
        self.adds.iter().map(Array::len).sum()
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
        if crate::timeline::ict_applies(&config, self.version()) {
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

/// The `inCommitTimestamp` of a commit's `commitInfo`, if any.
fn commit_info_ict(batches: &[arrow::array::RecordBatch]) -> Option<i64> {
    batches.iter().find_map(|b| {
        let ci = b.column_by_name(names::COMMIT_INFO)?.as_struct_opt()?;
        let ict = ci.column_by_name("inCommitTimestamp")?;
        let ict = ict.as_primitive_opt::<Int64Type>()?;
        (0..ci.len()).find_map(|r| (ci.is_valid(r) && ict.is_valid(r)).then(|| ict.value(r)))
    })
}
