//! CLONE: a new table holding the content of another table's version, as Delta Spark's
//! `CREATE TABLE ... [SHALLOW | DEEP] CLONE source [VERSION AS OF v]`.
//!
//! A shallow clone's `add` actions point at the source's files by absolute URI (spec "Add
//! File and Remove File": `path` is a relative path or an absolute URI), and its deletion
//! vectors stored next to the source become absolute ones (storage type `p`, "Deletion Vector
//! Descriptor Schema"); nothing is copied, so vacuuming the source can break the clone. A deep
//! clone copies every data file and deletion vector file under the new table's root, keeping
//! their relative paths. Both commit, as version 0 of the new table, the source's protocol
//! (without `catalogManaged`: the clone is a path-based table), its schema, partitioning,
//! properties and metadata domains under a new table id, and the files with their statistics,
//! deletion vectors and row tracking fields; operation `CLONE`.

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Value};

use crate::commit::transaction::{Isolation, Transaction};
use crate::deletion_vector::DvDescriptor;
use crate::error::{DeltaError, DeltaResult};
use crate::model::Metadata;
use crate::snapshot::Snapshot;
use crate::storage::{FileLocation, Storage};

/// Files copied at once by a deep clone.
const COPIES: usize = 8;
/// The feature a path-based clone leaves out.
const CATALOG_MANAGED: &str = "catalogManaged";

/// How to clone.
#[derive(Debug, Clone, Default)]
pub struct CloneOptions {
    /// Copy the files (deep) instead of pointing at them (shallow).
    pub deep: bool,
    /// The new table's name and description (default: the source's).
    pub name: Option<String>,
    pub description: Option<String>,
    /// Properties set on the clone over the source's.
    pub configuration: std::collections::BTreeMap<String, String>,
    /// Extra `commitInfo` fields.
    pub commit_info: serde_json::Map<String, Value>,
}

/// What a clone did.
#[derive(Debug, Clone, PartialEq)]
pub struct CloneMetrics {
    pub version: u64,
    pub source_version: u64,
    pub num_files: u64,
    /// Bytes copied (deep clones).
    pub copied_bytes: u64,
}

/// `relative` (a table-relative path or absolute URI, as in the log) as an absolute URI
/// under `storage`'s root.
fn absolute_uri(storage: &Storage, raw: &str) -> DeltaResult<String> {
    if url::Url::parse(raw).is_ok() {
        return Ok(raw.to_string());
    }
    let mut base = storage.url().clone();
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    base.join(raw)
        .map(|u| u.to_string())
        .map_err(|e| DeltaError::corrupt(raw, None, format!("not a relative URI path: {e}")))
}

/// Copies the table-relative file `relative` from `source` to `target`; its size.
async fn copy_file(source: &Storage, target: &Storage, relative: &str) -> DeltaResult<u64> {
    crate::interrupt::check()?;
    // A copy is the clone's own file: removed if the clone fails before its commit.
    crate::interrupt::created(target, relative);
    match (
        source.file_location(relative)?,
        target.file_location(relative)?,
    ) {
        (FileLocation::Local(from), FileLocation::Local(to)) => {
            if let Some(dir) = to.parent() {
                tokio::fs::create_dir_all(dir)
                    .await
                    .map_err(|e| DeltaError::Internal(format!("creating {dir:?}: {e}")))?;
            }
            match tokio::fs::copy(&from, &to).await {
                Ok(n) => Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Err(DeltaError::DataFileNotFound {
                        file: relative.to_string(),
                    })
                }
                Err(e) => Err(DeltaError::Internal(format!(
                    "copying {relative} to the clone failed: {e}"
                ))),
            }
        }
        _ => {
            let bytes = source
                .get(&source.table_path(relative))
                .await
                .map_err(|e| match e {
                    object_store::Error::NotFound { .. } => DeltaError::DataFileNotFound {
                        file: relative.to_string(),
                    },
                    other => other.into(),
                })?;
            let n = bytes.len() as u64;
            target.put_file(relative, bytes).await?;
            Ok(n)
        }
    }
}

/// Clones `source` (at its version) into a new table at `target`.
pub async fn clone_table(
    source: &Snapshot,
    target: &Storage,
    options: CloneOptions,
) -> DeltaResult<CloneMetrics> {
    if let Some(existing) = crate::write::table::latest_snapshot(target).await? {
        return Err(DeltaError::InvalidArgument(format!(
            "a table already exists at {} (version {}); a clone makes a new table",
            target.url(),
            existing.version()
        )));
    }
    let src = source.storage();
    let paths: HashSet<String> = crate::add_actions::file_paths(source)?
        .into_iter()
        .collect();
    let now = chrono::Utc::now().timestamp_millis();
    let originals = crate::dml::delete_update::file_actions(source, &paths, now)?;
    let mut adds: Vec<Value> = originals.into_values().map(|(add, _)| add).collect();
    adds.sort_by(|a, b| a["add"]["path"].as_str().cmp(&b["add"]["path"].as_str()));

    let mut copies: Vec<String> = Vec::new();
    for action in &mut adds {
        let add = &mut action["add"];
        let raw = add["path"].as_str().unwrap_or_default().to_string();
        let relative = url::Url::parse(&raw).is_err();
        if options.deep {
            if relative {
                let decoded = crate::paths::decode_uri_path(&raw)
                    .map_err(|rule| DeltaError::corrupt(&raw, Some(source.version()), rule))?;
                copies.push(decoded.into_owned());
            } else {
                return Err(DeltaError::Unsupported(format!(
                    "a deep clone of a table whose files live elsewhere ({raw}) is not supported"
                )));
            }
        } else if relative {
            add["path"] = json!(absolute_uri(src, &raw)?);
        }
        if let Some(dv) = add.get("deletionVector").filter(|d| !d.is_null()).cloned() {
            let descriptor: DvDescriptor = serde_json::from_value(dv)
                .map_err(|e| DeltaError::corrupt(&raw, Some(source.version()), e.to_string()))?;
            if let Some(dv_relative) = descriptor.relative_path(&raw)? {
                if options.deep {
                    copies.push(dv_relative);
                } else {
                    let mut moved = descriptor.clone();
                    moved.storage_type = "p".into();
                    moved.path_or_inline_dv = absolute_uri(src, &dv_relative)?;
                    add["deletionVector"] = serde_json::to_value(&moved)
                        .map_err(|e| DeltaError::Internal(e.to_string()))?;
                }
            }
        }
        add["modificationTime"] = json!(now);
    }
    copies.sort();
    copies.dedup();
    let copied_bytes: u64 = futures::stream::iter(copies)
        .map(|relative| async move { copy_file(src, target, &relative).await })
        .buffer_unordered(COPIES)
        .try_fold(0u64, |sum, n| async move { Ok(sum + n) })
        .await?;

    let protocol = source.protocol();
    let strip = |features: &Option<Vec<String>>| {
        features.as_ref().map(|f| {
            f.iter()
                .filter(|n| n.as_str() != CATALOG_MANAGED)
                .cloned()
                .collect::<Vec<_>>()
        })
    };
    let mut protocol_action = json!({
        "minReaderVersion": protocol.min_reader_version,
        "minWriterVersion": protocol.min_writer_version,
    });
    if let Some(f) = strip(&protocol.reader_features) {
        protocol_action["readerFeatures"] = json!(f);
    }
    if let Some(f) = strip(&protocol.writer_features) {
        protocol_action["writerFeatures"] = json!(f);
    }
    let m = source.metadata()?;
    let mut configuration = m.configuration.clone();
    configuration.extend(options.configuration.clone());
    let metadata = Metadata {
        id: Some(uuid::Uuid::new_v4().to_string()),
        name: options.name.clone().or_else(|| m.name.clone()),
        description: options
            .description
            .clone()
            .or_else(|| m.description.clone()),
        created_time: Some(now),
        configuration: configuration.clone(),
        ..m.clone()
    };
    let num_files = adds.len() as u64;
    let mut txn = Transaction::new(target.clone(), None, "CLONE", Isolation::BlindAppend)
        .with_commit_info(options.commit_info.clone())
        .with_parameter("source", json!(src.url().to_string()))
        .with_parameter("sourceVersion", json!(source.version()))
        .with_parameter("isShallow", json!(!options.deep));
    if crate::commit::transaction::in_commit_timestamps_enabled(&configuration) {
        txn = txn.with_in_commit_timestamps(None, false);
    }
    txn.add_actions([json!({ "protocol": protocol_action }), metadata.to_action()]);
    txn.add_actions(
        source
            .domain_metadata()
            .iter()
            .filter(|d| !d.removed)
            .map(|d| {
                json!({"domainMetadata": {
                    "domain": d.domain,
                    "configuration": d.configuration,
                    "removed": false,
                }})
            }),
    );
    txn.add_actions(adds);
    let version = txn.commit().await?;
    Ok(CloneMetrics {
        version,
        source_version: source.version(),
        num_files,
        copied_bytes,
    })
}
