//! Maintenance: checkpoints, log compaction, metadata cleanup, VACUUM planning, version
//! checksums, and the duration properties they read.

use crate::commit::chrono_now_ms;

use deltalog_core::error::DeltaError;
use deltalog_core::log::catalog::Maintenance;
use deltalog_core::maintenance::catalog_policy::clear;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py_err;
use crate::runtime::block_on;
use crate::snapshot::RawSnapshot;

/// Writes a checkpoint of `snapshot`'s version (`kind`: classic, v2, v2-parquet, v2-json;
/// None follows `delta.checkpointPolicy`); returns what was written.
#[pyfunction]
#[pyo3(signature = (snapshot, kind=None, sidecars=None, now_ms=None, classic_copy=true))]
pub(crate) fn create_checkpoint(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    kind: Option<&str>,
    sidecars: Option<usize>,
    now_ms: Option<i64>,
    classic_copy: bool,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::maintenance::checkpoint::{
        write_checkpoint, CheckpointKind, CheckpointOptions,
    };
    let kind = kind
        .map(CheckpointKind::parse)
        .transpose()
        .map_err(|e| to_py_err(py, e))?;
    let options = CheckpointOptions {
        kind,
        sidecars,
        now_ms: now_ms.unwrap_or_else(chrono_now_ms),
        classic_copy,
    };
    let snapshot = snapshot.snapshot.clone();
    let written = block_on(py, async move {
        clear(&snapshot, Maintenance::Checkpoint).await?;
        write_checkpoint(&snapshot, &options).await
    })?;
    let out = PyDict::new(py);
    out.set_item("version", written.version)?;
    out.set_item("files", written.files)?;
    out.set_item("num_actions", written.num_actions)?;
    out.set_item("num_add_files", written.num_add_files)?;
    out.set_item("size_in_bytes", written.size_in_bytes)?;
    Ok(out.unbind())
}

/// Writes the log compaction of commits `start..=end` of `snapshot`'s table (defaults: the
/// commits after the snapshot's checkpoint, up to its version); returns the file's path.
#[pyfunction]
#[pyo3(signature = (snapshot, start=None, end=None))]
pub(crate) fn compact_logs(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    start: Option<u64>,
    end: Option<u64>,
) -> PyResult<String> {
    let snapshot = snapshot.snapshot.clone();
    let version = snapshot.version();
    let start = start.unwrap_or_else(|| {
        snapshot
            .segment()
            .checkpoint
            .as_ref()
            .map_or(0, |c| c.version + 1)
    });
    let end = end.unwrap_or(version);
    if end > version {
        return Err(to_py_err(
            py,
            DeltaError::InvalidArgument(format!(
                "cannot compact up to version {end}: the loaded version is {version}"
            )),
        ));
    }
    block_on(py, async move {
        clear(&snapshot, Maintenance::LogCompaction).await?;
        deltalog_core::maintenance::compaction::write_compaction(snapshot.storage(), start, end)
            .await
    })
}

/// Metadata cleanup of `snapshot`'s table as of `now_ms`; the `_delta_log` names deleted.
#[pyfunction]
#[pyo3(signature = (snapshot, now_ms=None))]
pub(crate) fn cleanup_metadata(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    now_ms: Option<i64>,
) -> PyResult<Vec<String>> {
    let snapshot = snapshot.snapshot.clone();
    let now = now_ms.unwrap_or_else(chrono_now_ms);
    block_on(py, async move {
        clear(&snapshot, Maintenance::MetadataCleanup).await?;
        deltalog_core::maintenance::cleanup::cleanup_metadata(&snapshot, now).await
    })
}

/// The files VACUUM would delete from `snapshot`'s table: `(path, size)` pairs. `retention_ms`
/// None means `delta.deletedFileRetentionDuration`; a shorter one is refused unless
/// `enforce_retention` is false.
#[pyfunction]
#[pyo3(signature = (snapshot, retention_ms=None, enforce_retention=true, now_ms=None))]
pub(crate) fn vacuum_plan(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    retention_ms: Option<i64>,
    enforce_retention: bool,
    now_ms: Option<i64>,
) -> PyResult<Vec<(String, u64)>> {
    use deltalog_core::maintenance::intervals::{duration_ms, DELETED_FILE_RETENTION};
    let snapshot = snapshot.snapshot.clone();
    let configured = duration_ms(&snapshot.configuration(), DELETED_FILE_RETENTION)
        .map_err(|e| to_py_err(py, e))?;
    let retention = retention_ms.unwrap_or(configured);
    if retention < 0 {
        return Err(to_py_err(
            py,
            DeltaError::InvalidArgument("the retention cannot be negative".into()),
        ));
    }
    if enforce_retention && retention < configured {
        return Err(to_py_err(
            py,
            DeltaError::InvalidArgument(format!(
                "a retention of {} hours is shorter than the table's \
                 delta.deletedFileRetentionDuration ({} hours): concurrent readers and writers \
                 of older versions could lose files; pass enforce_retention_duration=False to \
                 vacuum anyway",
                retention / 3_600_000,
                configured / 3_600_000
            )),
        ));
    }
    let now = now_ms.unwrap_or_else(chrono_now_ms);
    let expired = block_on(py, async move {
        clear(&snapshot, Maintenance::Vacuum).await?;
        deltalog_core::maintenance::vacuum::expired_files(&snapshot, retention, now).await
    })?;
    Ok(expired.into_iter().map(|e| (e.path, e.size)).collect())
}

/// A table property of `snapshot` that holds an interval (`delta.deletedFileRetentionDuration`,
/// `delta.logRetentionDuration`), in milliseconds; its default when unset.
#[pyfunction]
pub(crate) fn duration_property_ms(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    key: &str,
) -> PyResult<i64> {
    use deltalog_core::maintenance::intervals::{
        duration_ms, CHECKPOINT_RETENTION, DELETED_FILE_RETENTION, LOG_RETENTION,
    };
    let property = [DELETED_FILE_RETENTION, LOG_RETENTION, CHECKPOINT_RETENTION]
        .into_iter()
        .find(|p| p.0 == key)
        .ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("{key} is not an interval property"))
        })?;
    duration_ms(&snapshot.snapshot.configuration(), property).map_err(|e| to_py_err(py, e))
}

/// Milliseconds of an interval table property's value (`interval 7 days`); a `ValueError`
/// saying why when it is not one (`maintenance::intervals`).
#[pyfunction]
pub(crate) fn interval_ms(text: &str) -> PyResult<i64> {
    deltalog_core::maintenance::intervals::parse_interval_ms(text)
        .map_err(pyo3::exceptions::PyValueError::new_err)
}

/// Deletes table-relative `paths` of `snapshot`'s table; returns how many were processed.
#[pyfunction]
pub(crate) fn delete_files(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    paths: Vec<String>,
) -> PyResult<usize> {
    let snapshot = snapshot.snapshot.clone();
    block_on(py, async move {
        deltalog_core::maintenance::vacuum::delete_files(snapshot.storage(), &paths).await
    })
}

/// Checks `snapshot` against its version's `.crc` file: False when there is none.
#[pyfunction]
pub(crate) fn validate_checksum(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
) -> PyResult<bool> {
    let snapshot = snapshot.snapshot.clone();
    block_on(py, async move {
        deltalog_core::maintenance::version_checksum::validate(&snapshot).await
    })
}

fn traced_feature(
    py: Python<'_>,
    feature: &str,
) -> PyResult<deltalog_core::maintenance::feature_removal::TracedFeature> {
    deltalog_core::maintenance::feature_removal::TracedFeature::from_name(feature).ok_or_else(
        || {
            to_py_err(
                py,
                DeltaError::InvalidArgument(format!(
                    "DROP FEATURE does not support the feature {feature:?}"
                )),
            )
        },
    )
}

/// The newest use of `feature` in the history `snapshot`'s table keeps: `(version,
/// commit time ms, what)`, or None.
#[pyfunction]
pub(crate) fn feature_trace(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    feature: &str,
) -> PyResult<Option<(u64, i64, String)>> {
    let feature = traced_feature(py, feature)?;
    let snapshot = snapshot.snapshot.clone();
    let trace = block_on(py, async move {
        deltalog_core::maintenance::feature_removal::newest_trace(&snapshot, feature).await
    })?;
    Ok(trace.map(|t| (t.version, t.timestamp_ms, t.reason)))
}

/// Deletes the log files of the versions before `version` (which has a complete checkpoint);
/// the `_delta_log` names deleted.
#[pyfunction]
#[pyo3(signature = (snapshot, version, now_ms=None))]
pub(crate) fn truncate_history(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    version: u64,
    now_ms: Option<i64>,
) -> PyResult<Vec<String>> {
    let snapshot = snapshot.snapshot.clone();
    let now = now_ms.unwrap_or_else(chrono_now_ms);
    block_on(py, async move {
        clear(&snapshot, Maintenance::MetadataCleanup).await?;
        deltalog_core::maintenance::feature_removal::truncate_history(&snapshot, version, now).await
    })
}

/// The active files holding a column in a narrower type than the table's (written before a
/// type widening).
#[pyfunction]
pub(crate) fn files_with_narrower_types(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
) -> PyResult<Vec<String>> {
    let snapshot = snapshot.snapshot.clone();
    block_on(py, async move {
        deltalog_core::maintenance::feature_removal::files_with_narrower_types(&snapshot).await
    })
}
