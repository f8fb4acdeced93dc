//! What DROP FEATURE needs from the log: where the history a reader can still reach uses a
//! table feature, and truncating the history before a version.
//!
//! The stored protocol ("Table Features") says clients must not remove a supported feature from
//! the `protocol` action. Delta Spark nevertheless removes some features on the user's explicit
//! request (`ALTER TABLE … DROP FEATURE`), and only once no version a reader can time travel to
//! still uses the feature: a reader that lacks the feature then never meets it. This module
//! finds such uses ("traces"); the Python layer (`alter.drop_feature`) removes the traces of
//! the current version, checks the history with [`newest_trace`], commits the protocol without
//! the feature and, when asked, truncates the history before that commit with
//! [`truncate_history`].
//!
//! The history a reader can reach is the state at the oldest complete checkpoint the log still
//! has (or version 0 when its commit remains) and every commit after it, plus the checkpoint
//! files themselves (a V2 checkpoint is itself a use of `v2Checkpoint`). The state's active
//! files and metadata count, its tombstones do not (a reader never reads a removed file).

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, SchemaRef};
use serde_json::Value;

use crate::error::{DeltaError, DeltaResult};
use crate::log::actions::names;
use crate::log::checkpoint_reader::open_checkpoint;
use crate::log::path::CheckpointNaming;
use crate::log::segment::{CheckpointFiles, LogListing};
use crate::snapshot::Snapshot;

/// A feature whose uses can be found in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TracedFeature {
    /// `deletionVectors`: adds or removes with a `deletionVector`, or
    /// `delta.enableDeletionVectors = true` ("Deletion Vectors").
    DeletionVectors,
    /// `v2Checkpoint`: `delta.checkpointPolicy = v2`, or a checkpoint in the V2 spec
    /// ("V2 Checkpoint Table Feature").
    V2Checkpoint,
    /// `typeWidening`: a schema with `delta.typeChanges` field metadata (upstream "Type
    /// Widening"; files of the narrower types are rewritten before the metadata goes).
    TypeWidening,
    /// `columnMapping`: a `delta.columnMapping.mode` other than `none` ("Column Mapping").
    ColumnMapping,
    /// A feature that leaves nothing in the log (`vacuumProtocolCheck`).
    Nothing,
}

impl TracedFeature {
    /// The feature of a protocol feature name, `None` for features DROP FEATURE does not
    /// support.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "deletionVectors" => Self::DeletionVectors,
            "v2Checkpoint" => Self::V2Checkpoint,
            "typeWidening" | "typeWidening-preview" => Self::TypeWidening,
            "columnMapping" => Self::ColumnMapping,
            "vacuumProtocolCheck" => Self::Nothing,
            _ => return None,
        })
    }

    /// Why a `metaData` action (as JSON) uses the feature, if it does.
    fn metadata_use(&self, metadata: &Value) -> Option<String> {
        let config = |key: &str| {
            metadata
                .get("configuration")
                .and_then(|c| c.get(key))
                .and_then(Value::as_str)
                .map(|v| v.trim().to_ascii_lowercase())
        };
        match self {
            Self::DeletionVectors => (config("delta.enableDeletionVectors").as_deref()
                == Some("true"))
            .then(|| "delta.enableDeletionVectors is true".to_string()),
            Self::V2Checkpoint => (config("delta.checkpointPolicy").as_deref() == Some("v2"))
                .then(|| "delta.checkpointPolicy is v2".to_string()),
            Self::ColumnMapping => config("delta.columnMapping.mode")
                .filter(|m| m != "none")
                .map(|m| format!("delta.columnMapping.mode is {m}")),
            Self::TypeWidening => {
                let schema: Value = metadata
                    .get("schemaString")
                    .and_then(Value::as_str)
                    .and_then(|s| serde_json::from_str(s).ok())?;
                schema_has_type_changes(&schema)
                    .then(|| "the schema records type changes (delta.typeChanges)".to_string())
            }
            Self::Nothing => None,
        }
    }

    /// Why one action line of a commit uses the feature, if it does.
    fn action_use(&self, action: &Value) -> Option<String> {
        if let Some(metadata) = action.get(names::METADATA) {
            return self.metadata_use(metadata);
        }
        if *self == Self::DeletionVectors {
            for kind in [names::ADD, names::REMOVE] {
                if let Some(file) = action.get(kind) {
                    let dv = file.get("deletionVector");
                    if dv.is_some_and(|d| !d.is_null()) {
                        let path = file.get("path").and_then(Value::as_str).unwrap_or("?");
                        return Some(format!("{kind} of {path} has a deletion vector"));
                    }
                }
            }
        }
        None
    }
}

/// Whether any field of a Delta schema (JSON) carries `delta.typeChanges`.
fn schema_has_type_changes(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            if map
                .get("metadata")
                .and_then(|m| m.get("delta.typeChanges"))
                .is_some()
            {
                return true;
            }
            map.values().any(schema_has_type_changes)
        }
        Value::Array(items) => items.iter().any(schema_has_type_changes),
        _ => false,
    }
}

/// A place in the history that uses a feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The version that uses it.
    pub version: u64,
    /// That version's commit time (in-commit timestamp or file time), milliseconds.
    pub timestamp_ms: i64,
    /// What uses it, for the error message.
    pub reason: String,
}

/// The newest use of `feature` in the history `snapshot`'s table keeps (see the module docs),
/// up to the snapshot's version; `None` when nothing uses it.
pub async fn newest_trace(
    snapshot: &Snapshot,
    feature: TracedFeature,
) -> DeltaResult<Option<Trace>> {
    let storage = snapshot.storage();
    let listing = LogListing::list(storage, None).await?;
    let times: std::collections::HashMap<u64, i64> =
        crate::maintenance::cleanup::commit_times(snapshot, &listing)
            .await?
            .into_iter()
            .collect();
    let commits = listing.commits();
    let checkpoints: Vec<CheckpointFiles> = listing
        .complete_checkpoints()
        .into_iter()
        .filter(|c| c.version <= snapshot.version())
        .collect();
    // A version whose commit file is gone (only its checkpoint is left) is dated by the
    // checkpoint's file.
    let time_of = |version: u64| {
        times.get(&version).copied().unwrap_or_else(|| {
            checkpoints
                .iter()
                .filter(|c| c.version == version)
                .flat_map(|c| c.parts.iter())
                .map(|p| p.meta.last_modified.timestamp_millis())
                .max()
                .unwrap_or(0)
        })
    };
    // The oldest version a reader can load: version 0 while its commit exists, else the
    // oldest complete checkpoint.
    let oldest = if commits.contains_key(&0) {
        0
    } else {
        match checkpoints.first() {
            Some(c) => c.version,
            None => return Ok(None),
        }
    };
    let mut newest: Option<Trace> = None;
    let mut note = |version: u64, reason: String| {
        if newest.as_ref().is_none_or(|t| version >= t.version) {
            newest = Some(Trace {
                version,
                timestamp_ms: time_of(version),
                reason,
            });
        }
    };

    // The state at the oldest version (a checkpoint holds the uses of all commits before it).
    if oldest > 0 {
        let state = Snapshot::try_new(storage.clone(), Some(oldest)).await?;
        if let Some(reason) = state_use(&state, feature)? {
            note(oldest, reason);
        }
    }
    // Every commit after it (a checkpoint's own commit is not read: the checkpoint is).
    let first = if oldest > 0 { oldest + 1 } else { 0 };
    let later = commits
        .iter()
        .filter(|(v, _)| **v >= first && **v <= snapshot.version());
    for (&version, file) in later {
        let bytes = file.read(storage).await?;
        for (line_no, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let action: Value = serde_json::from_slice(line).map_err(|e| {
                DeltaError::corrupt(
                    format!("_delta_log/{}", file.name),
                    Some(version),
                    format!("line {} is not a JSON action: {e}", line_no + 1),
                )
            })?;
            if let Some(reason) = feature.action_use(&action) {
                note(version, reason);
                break;
            }
        }
    }
    // V2 checkpoints are themselves uses of v2Checkpoint.
    if feature == TracedFeature::V2Checkpoint {
        for checkpoint in checkpoints.iter().filter(|c| c.version >= oldest) {
            if let Some(reason) = v2_checkpoint(snapshot, checkpoint).await? {
                note(checkpoint.version, reason);
            }
        }
    }
    Ok(newest)
}

/// Why the state of `snapshot` uses `feature`, if it does.
fn state_use(snapshot: &Snapshot, feature: TracedFeature) -> DeltaResult<Option<String>> {
    let metadata = snapshot.metadata()?;
    let as_json = serde_json::json!({
        "configuration": snapshot.configuration(),
        "schemaString": metadata.schema_string,
    });
    if let Some(reason) = feature.metadata_use(&as_json) {
        return Ok(Some(reason));
    }
    if feature == TracedFeature::DeletionVectors {
        for batch in snapshot.files() {
            if let Some(dv) = batch.adds.column_by_name("deletionVector") {
                if dv.null_count() < dv.len() {
                    return Ok(Some("files with deletion vectors".to_string()));
                }
            }
        }
    }
    Ok(None)
}

/// Why a checkpoint is in the V2 spec, if it is: UUID-named, or with a `checkpointMetadata`
/// action ("V2 Spec Checkpoints").
async fn v2_checkpoint(
    snapshot: &Snapshot,
    checkpoint: &CheckpointFiles,
) -> DeltaResult<Option<String>> {
    if matches!(checkpoint.naming, CheckpointNaming::Uuid { .. }) {
        return Ok(Some(format!(
            "the UUID-named checkpoint of version {}",
            checkpoint.version
        )));
    }
    let open = open_checkpoint(snapshot.storage(), checkpoint).await?;
    let v2 = open.header.iter().any(|batch| {
        batch
            .column_by_name(names::CHECKPOINT_METADATA)
            .and_then(|c| c.as_struct_opt())
            .is_some_and(|c| c.null_count() < c.len())
    });
    Ok(v2.then(|| {
        format!(
            "the checkpoint of version {} is in the V2 spec (checkpointMetadata)",
            checkpoint.version
        )
    }))
}

/// Deletes every log file of the versions before `version` (commits, checkpoints, checksums,
/// compaction files, staged commits and the sidecars no remaining checkpoint references), as
/// DROP FEATURE … TRUNCATE HISTORY does. `version` must have a complete checkpoint, so that it
/// stays loadable; returns the `_delta_log`-relative names deleted.
pub async fn truncate_history(
    snapshot: &Snapshot,
    version: u64,
    now_ms: i64,
) -> DeltaResult<Vec<String>> {
    let storage = snapshot.storage();
    let listing = LogListing::list(storage, None).await?;
    if !listing
        .complete_checkpoints()
        .iter()
        .any(|c| c.version == version)
    {
        return Err(DeltaError::InvalidArgument(format!(
            "cannot truncate the history before version {version}: it has no complete checkpoint"
        )));
    }
    crate::maintenance::cleanup::delete_before(snapshot, &listing, version, now_ms).await
}

/// The active files (decoded table-relative paths) holding a column in a narrower type than
/// the table's, as files written before a type widening do: they must be rewritten before the
/// `typeWidening` feature can go. Only the footers are read.
pub async fn files_with_narrower_types(snapshot: &Snapshot) -> DeltaResult<Vec<String>> {
    let table = snapshot.physical_schema()?;
    let storage = snapshot.storage();
    let mut out = Vec::new();
    for path in crate::add_actions::file_paths(snapshot)? {
        let file = file_schema(storage, &path).await?;
        let narrower = table.fields().iter().any(|field| {
            file.field_with_name(field.name())
                .is_ok_and(|f| narrower_type(f.data_type(), field.data_type()))
        });
        if narrower {
            out.push(path);
        }
    }
    Ok(out)
}

/// The Arrow schema of a data file's footer.
async fn file_schema(storage: &crate::storage::Storage, path: &str) -> DeltaResult<SchemaRef> {
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    let unreadable = |e: &dyn std::fmt::Display| {
        DeltaError::data_file(path, format!("unreadable parquet footer: {e}"))
    };
    let metadata = match storage.file_location(path)? {
        crate::storage::FileLocation::Local(local) => {
            let opened = tokio::task::spawn_blocking(move || {
                let file = std::fs::File::open(&local)?;
                Ok::<_, std::io::Error>(ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()))
            })
            .await
            .map_err(|e| DeltaError::Internal(format!("reading a footer failed: {e}")))?;
            match opened {
                Ok(m) => m.map_err(|e| unreadable(&e))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(DeltaError::DataFileNotFound {
                        file: path.to_string(),
                    })
                }
                Err(e) => return Err(unreadable(&e)),
            }
        }
        crate::storage::FileLocation::Store(location) => {
            let size = storage.head(&location).await?.size;
            let mut reader =
                crate::parquet_io::StoreFileReader::new(storage.store().clone(), location, size);
            ArrowReaderMetadata::load_async(&mut reader, ArrowReaderOptions::new())
                .await
                .map_err(|e| unreadable(&e))?
        }
    };
    Ok(metadata.schema().clone())
}

/// Whether a file's `file` type is a narrower form of the table's `table` type at some leaf:
/// a narrower integer, float for double, an integer or a smaller decimal for a decimal, an
/// integer for a double, a date for a timestamp without time zone (upstream "Type Widening").
fn narrower_type(file: &DataType, table: &DataType) -> bool {
    use DataType::*;
    let width = crate::schema::integer_width;
    match (file, table) {
        (Struct(f), Struct(t)) => t.iter().any(|tf| {
            f.iter()
                .find(|ff| ff.name() == tf.name())
                .is_some_and(|ff| narrower_type(ff.data_type(), tf.data_type()))
        }),
        (List(f) | LargeList(f), List(t) | LargeList(t)) => {
            narrower_type(f.data_type(), t.data_type())
        }
        (Map(f, _), Map(t, _)) => narrower_type(f.data_type(), t.data_type()),
        (Dictionary(_, f), t) => narrower_type(f, t),
        (f, t) if width(f).is_some() && width(t).is_some() => width(f) < width(t),
        (f, Float64) => width(f).is_some() || *f == Float32,
        (f, Decimal128(..)) if width(f).is_some() => true,
        (Decimal128(p1, s1), Decimal128(p2, s2)) => p1 != p2 || s1 != s2,
        (Date32, Timestamp(_, None)) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deletion_vectors_show_in_adds_removes_and_the_enabling_property() {
        let f = TracedFeature::DeletionVectors;
        let dv =
            json!({"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1});
        assert!(f
            .action_use(&json!({"add": {"path": "a", "deletionVector": dv}}))
            .is_some());
        assert!(f
            .action_use(&json!({"remove": {"path": "a", "deletionVector": dv}}))
            .is_some());
        assert!(f
            .action_use(&json!({"add": {"path": "a", "deletionVector": null}}))
            .is_none());
        assert!(f.action_use(&json!({"add": {"path": "a"}})).is_none());
        let meta =
            |v: &str| json!({"metaData": {"configuration": {"delta.enableDeletionVectors": v}}});
        assert!(f.action_use(&meta("true")).is_some());
        assert!(f.action_use(&meta("false")).is_none());
    }

    #[test]
    fn type_changes_are_found_at_any_depth() {
        let nested = json!({"type": "struct", "fields": [{"name": "s", "nullable": true,
            "metadata": {}, "type": {"type": "struct", "fields": [{"name": "a", "type": "long",
            "nullable": true, "metadata": {"delta.typeChanges": [
                {"fromType": "integer", "toType": "long"}]}}]}}]});
        let action = json!({"metaData": {"schemaString": nested.to_string()}});
        assert!(TracedFeature::TypeWidening.action_use(&action).is_some());
        let plain = json!({"type": "struct", "fields": [{"name": "a", "type": "long",
            "nullable": true, "metadata": {"comment": "delta.typeChanges"}}]});
        let action = json!({"metaData": {"schemaString": plain.to_string()}});
        assert!(TracedFeature::TypeWidening.action_use(&action).is_none());
    }

    #[test]
    fn column_mapping_and_checkpoint_policy_are_read_case_insensitively() {
        let meta = |k: &str, v: &str| json!({"metaData": {"configuration": {k: v}}});
        let cm = TracedFeature::ColumnMapping;
        assert!(cm
            .action_use(&meta("delta.columnMapping.mode", "Name"))
            .is_some());
        assert!(cm
            .action_use(&meta("delta.columnMapping.mode", "none"))
            .is_none());
        let v2 = TracedFeature::V2Checkpoint;
        assert!(v2
            .action_use(&meta("delta.checkpointPolicy", "V2"))
            .is_some());
        assert!(v2
            .action_use(&meta("delta.checkpointPolicy", "classic"))
            .is_none());
        assert!(TracedFeature::Nothing
            .action_use(&meta("delta.checkpointPolicy", "v2"))
            .is_none());
    }

    #[test]
    fn narrower_leaves_are_found_in_nested_types_too() {
        use arrow::datatypes::{Field, Fields, TimeUnit};
        use std::sync::Arc;
        assert!(narrower_type(&DataType::Int32, &DataType::Int64));
        assert!(!narrower_type(&DataType::Int64, &DataType::Int64));
        assert!(narrower_type(&DataType::Float32, &DataType::Float64));
        assert!(narrower_type(&DataType::Int16, &DataType::Float64));
        assert!(narrower_type(
            &DataType::Int32,
            &DataType::Decimal128(10, 0)
        ));
        assert!(narrower_type(
            &DataType::Decimal128(5, 2),
            &DataType::Decimal128(10, 4)
        ));
        assert!(narrower_type(
            &DataType::Date32,
            &DataType::Timestamp(TimeUnit::Microsecond, None)
        ));
        assert!(!narrower_type(&DataType::Utf8, &DataType::LargeUtf8));
        let list = |t: DataType| DataType::List(Arc::new(Field::new("element", t, true)));
        assert!(narrower_type(
            &list(DataType::Int16),
            &list(DataType::Int32)
        ));
        let st = |t: DataType| {
            DataType::Struct(Fields::from(vec![
                Field::new("a", DataType::Utf8, true),
                Field::new("b", t, true),
            ]))
        };
        assert!(narrower_type(
            &st(DataType::Float32),
            &st(DataType::Float64)
        ));
        assert!(!narrower_type(
            &st(DataType::Float64),
            &st(DataType::Float64)
        ));
    }

    #[test]
    fn only_the_features_drop_feature_supports_have_traces() {
        assert_eq!(
            TracedFeature::from_name("vacuumProtocolCheck"),
            Some(TracedFeature::Nothing)
        );
        assert_eq!(TracedFeature::from_name("rowTracking"), None);
    }
}
