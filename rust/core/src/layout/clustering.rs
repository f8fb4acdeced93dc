//! Clustered tables on the write side.
//!
//! Spec: "Clustered Table" and "Writer Requirements for Clustered Table": the clustering
//! columns (physical names under column mapping) live in the `delta.clustering` metadata
//! domain as `{"clusteringColumns": [...]}`; every file written must have statistics for them;
//! a clustered table has no partition columns. deltalog does not cluster files itself (the
//! spec does not require clustering at any moment), so its `add` actions leave
//! `clusteringProvider` unset and existing providers' files keep theirs.

use serde_json::{json, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::snapshot::Snapshot;

/// The metadata domain of clustering columns.
pub const CLUSTERING_DOMAIN: &str = "delta.clustering";

/// The clustering columns (physical names) of `snapshot`, empty when it is not clustered.
pub fn clustering_columns(snapshot: &Snapshot) -> DeltaResult<Vec<String>> {
    let Some(domain) = snapshot
        .domain_metadata()
        .iter()
        .find(|d| d.domain == CLUSTERING_DOMAIN && !d.removed)
    else {
        return Ok(Vec::new());
    };
    let parsed: Value = serde_json::from_str(&domain.configuration).map_err(|e| {
        DeltaError::corrupt(
            "_delta_log",
            Some(snapshot.version()),
            format!(
                "the {CLUSTERING_DOMAIN} domain is not JSON: {e} (spec: \"Writer Requirements \
                 for Clustered Table\")"
            ),
        )
    })?;
    Ok(parsed
        .get("clusteringColumns")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    // Nested clustering columns are written as name lists.
                    Value::Array(parts) => Some(
                        parts
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("."),
                    ),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default())
}

/// The clustering columns of `snapshot` by their logical names (top-level columns under
/// column mapping are found by their physical names; other paths stay as recorded), empty
/// when it is not clustered.
pub fn logical_clustering_columns(snapshot: &Snapshot) -> DeltaResult<Vec<String>> {
    let physical = clustering_columns(snapshot)?;
    if physical.is_empty() {
        return Ok(physical);
    }
    let schema = snapshot.schema()?;
    let mode = snapshot.column_mapping_mode()?;
    Ok(physical
        .into_iter()
        .map(|p| {
            schema
                .fields()
                .iter()
                .find(|f| {
                    crate::writer_features::column_mapping::physical_name(&schema, f.name(), mode)
                        == p
                })
                .map(|f| f.name().clone())
                .unwrap_or(p)
        })
        .collect())
}

/// The `domainMetadata` action recording `physical` (top-level columns) as the clustering
/// columns, each as the list of its name parts: `{"clusteringColumns": [["col-1"], ["b"]]}`.
/// "Writer Requirements for Clustered Table" asks for "a configuration containing all
/// clustering column names" (its example lists bare strings); Delta Spark 4.4 reads only name
/// lists and fails every later write of a table whose domain holds bare strings
/// (tests/test_delta_spark_reads_ours.py). Both shapes are read (`clustering_columns`).
pub fn domain_action(physical: &[String]) -> Value {
    let paths: Vec<[&String; 1]> = physical.iter().map(|p| [p]).collect();
    let configuration = json!({ "clusteringColumns": paths }).to_string();
    json!({"domainMetadata": {
        "domain": CLUSTERING_DOMAIN,
        "configuration": configuration,
        "removed": false,
    }})
}
