//! MERGE's commit step: the new `metaData` (the evolved schema, the identity columns' moved
//! high-water marks), Delta Spark's operation parameters and metrics, the commit, and the
//! statement's metrics completed with the file counts.
//!
//! Spec: as [`crate::dml::rewrite`]; "Identity Columns".

use std::collections::HashSet;

use arrow::datatypes::SchemaRef;
use serde_json::{json, Map, Value};

use crate::dml::rewrite::Rewriter;
use crate::error::DeltaResult;
use crate::snapshot::Snapshot;
use crate::writer_features::identity::IdentityColumns;

use super::{ClauseKind, MergeMetrics, MergeSpec};

/// Puts the commit's `metaData` into `rewriter`: the evolved schema's (`evolved_action`), then
/// the one with the identity columns' new high-water marks.
pub(super) fn set_metadata(
    snapshot: &Snapshot,
    schema: &SchemaRef,
    rewriter: &mut Rewriter,
    evolved_action: Option<Value>,
    identities: &IdentityColumns,
) -> DeltaResult<()> {
    if let Some(action) = evolved_action {
        rewriter.set_metadata(action);
    }
    if let Some(updated) = identities.updated_schema(schema) {
        // "Identity Columns": the high-water marks move with the commit.
        let schema_string = crate::schema::arrow_to_schema_string(&updated)
            .map_err(crate::schema::SchemaError::into_invalid_argument)?;
        rewriter.set_metadata(
            crate::model::Metadata {
                schema_string: Some(schema_string),
                ..snapshot.metadata()?.clone()
            }
            .to_action(),
        );
    }
    Ok(())
}

/// Commits the rewriter's changes as a MERGE having read the files `read`; returns `metrics`
/// with the version and the file counts.
pub(super) async fn commit(
    snapshot: &Snapshot,
    spec: &MergeSpec,
    rewriter: Rewriter,
    mut metrics: MergeMetrics,
    read: HashSet<String>,
    commit_info: Map<String, Value>,
    app_transaction: Option<(String, i64)>,
) -> DeltaResult<MergeMetrics> {
    let mut parameters = Map::new();
    parameters.insert("predicate".into(), json!(spec.predicate));
    let describe = |kind: ClauseKind| -> Value {
        Value::Array(
            spec.clauses
                .iter()
                .filter(|c| c.kind == kind)
                .map(|c| {
                    json!({"actionType": format!("{:?}", c.action).to_lowercase(),
                           "predicate": c.predicate})
                })
                .collect(),
        )
    };
    parameters.insert("matchedPredicates".into(), describe(ClauseKind::Matched));
    parameters.insert(
        "notMatchedPredicates".into(),
        describe(ClauseKind::NotMatched),
    );
    parameters.insert(
        "notMatchedBySourcePredicates".into(),
        describe(ClauseKind::NotMatchedBySource),
    );
    let mut own = Map::new();
    for (k, v) in [
        ("numSourceRows", metrics.num_source_rows),
        ("numTargetRowsInserted", metrics.num_target_rows_inserted),
        ("numTargetRowsUpdated", metrics.num_target_rows_updated),
        ("numTargetRowsDeleted", metrics.num_target_rows_deleted),
    ] {
        own.insert(k.into(), json!(v.to_string()));
    }
    let (version, counts) = rewriter
        .commit(
            snapshot,
            "MERGE",
            read,
            parameters,
            own,
            commit_info,
            app_transaction,
        )
        .await?;
    metrics.version = Some(version);
    metrics.num_target_rows_copied = counts.copied_rows;
    metrics.num_target_files_added = counts.added_files;
    metrics.num_target_files_removed = counts.removed_files;
    metrics.num_deletion_vectors_added = counts.deletion_vectors_added;
    metrics.num_added_change_files = counts.added_change_files;
    Ok(metrics)
}
