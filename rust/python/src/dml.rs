//! DML: DELETE, UPDATE, MERGE, RESTORE, and the pieces of row changes made by another engine
//! (deletion vectors, change data, removals); core: `deltalog_core::dml`.

use arrow::record_batch::RecordBatchReader;
use deltalog_core::error::DeltaError;
use deltalog_core::predicate::Predicate;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::commit::{chrono_now_ms, commit_info_map};
use crate::errors::to_py_err;
use crate::expressions::expression;
use crate::runtime::block_on;
use crate::snapshot::RawSnapshot;

/// Deletion vectors taking rows of `snapshot`'s files away: `masks` holds `(path, live rows,
/// row indexes)` per file (`deltalog_core::dml::engine_changes::mask_rows`). Returns the actions
/// (JSON texts), the vectors added and the files removed.
#[pyfunction]
pub(crate) fn mask_rows(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    masks: Vec<(String, u64, Vec<u64>)>,
) -> PyResult<(Vec<String>, u64, u64)> {
    let snapshot = snapshot.snapshot.clone();
    let (actions, counts) = block_on(py, async move {
        deltalog_core::dml::engine_changes::mask_rows(&snapshot, masks).await
    })?;
    Ok((
        actions.iter().map(|a| a.to_string()).collect(),
        counts.deletion_vectors_added,
        counts.removed_files - counts.deletion_vectors_added,
    ))
}

/// Change data files of rows another engine changed: `data` holds the table's columns and
/// `_change_type` (`deltalog_core::dml::engine_changes::write_change_rows`). Returns the `cdc`
/// actions (JSON texts).
#[pyfunction]
#[pyo3(signature = (snapshot, data, target_file_size=None))]
pub(crate) fn write_change_files(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    data: arrow::pyarrow::PyArrowType<arrow::ffi_stream::RecordBatchStreamReader>,
    target_file_size: Option<u64>,
) -> PyResult<Vec<String>> {
    let snapshot = snapshot.snapshot.clone();
    let batches = data.0.map(|b| b.map_err(DeltaError::from));
    let actions = block_on(py, async move {
        deltalog_core::dml::engine_changes::write_change_rows(&snapshot, batches, target_file_size)
            .await
    })?;
    Ok(actions.iter().map(|a| a.to_string()).collect())
}

/// Data files of rows another engine updated or copied, keeping their lineage: `data` holds
/// the table's columns, `_row_id` and `_row_commit_version`
/// (`deltalog_core::dml::engine_changes::write_rows_with_lineage`). Returns the `add`
/// actions (JSON texts).
#[pyfunction]
#[pyo3(signature = (snapshot, data, target_file_size=None))]
pub(crate) fn write_rows_with_lineage(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    data: arrow::pyarrow::PyArrowType<arrow::ffi_stream::RecordBatchStreamReader>,
    target_file_size: Option<u64>,
) -> PyResult<Vec<String>> {
    let snapshot = snapshot.snapshot.clone();
    let batches = data.0.map(|b| b.map_err(DeltaError::from));
    let actions = block_on(py, async move {
        deltalog_core::dml::engine_changes::write_rows_with_lineage(
            &snapshot,
            batches,
            target_file_size,
        )
        .await
    })?;
    Ok(actions.iter().map(|a| a.to_string()).collect())
}

/// MERGE of `source` into the table whose loaded version is `snapshot`: `clauses` is the
/// JSON list of `deltalog_core::dml::merge::MergeClause`. Returns the metrics, with
/// `version` None when nothing changed.
#[pyfunction]
#[pyo3(signature = (snapshot, source, predicate, source_alias, target_alias, clauses, app_transaction=None, commit_info=None, target_file_size=None, merge_schema=false, writer_properties=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    source: arrow::pyarrow::PyArrowType<arrow::ffi_stream::RecordBatchStreamReader>,
    predicate: String,
    source_alias: String,
    target_alias: String,
    clauses: &str,
    app_transaction: Option<(String, i64)>,
    commit_info: Option<&str>,
    target_file_size: Option<u64>,
    merge_schema: bool,
    writer_properties: Option<&str>,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::dml::merge::{merge, MergeClause, MergeSpec};
    let clauses: Vec<MergeClause> = serde_json::from_str(clauses).map_err(|e| {
        pyo3::exceptions::PyValueError::new_err(format!("malformed MERGE clauses: {e}"))
    })?;
    let reader = source.0;
    let source_schema = reader.schema();
    let batches = py
        .detach(|| reader.collect::<Result<Vec<_>, _>>())
        .map_err(|e| to_py_err(py, DeltaError::from(e)))?;
    let spec = MergeSpec {
        source: batches,
        source_schema,
        predicate,
        source_alias,
        target_alias,
        clauses,
        target_file_size,
        merge_schema,
        parquet: parquet_settings(py, writer_properties)?,
    };
    let info = commit_info_map(commit_info)?;
    let snapshot = snapshot.snapshot.clone();
    let m = block_on(py, async move {
        merge(&snapshot, spec, info, app_transaction).await
    })?;
    let out = PyDict::new(py);
    out.set_item("version", m.version)?;
    out.set_item("num_source_rows", m.num_source_rows)?;
    out.set_item("num_target_rows_inserted", m.num_target_rows_inserted)?;
    out.set_item("num_target_rows_updated", m.num_target_rows_updated)?;
    out.set_item("num_target_rows_deleted", m.num_target_rows_deleted)?;
    out.set_item("num_target_rows_copied", m.num_target_rows_copied)?;
    out.set_item("num_target_files_scanned", m.num_target_files_scanned)?;
    out.set_item("num_target_files_added", m.num_target_files_added)?;
    out.set_item("num_target_files_removed", m.num_target_files_removed)?;
    out.set_item("num_deletion_vectors_added", m.num_deletion_vectors_added)?;
    out.set_item("num_added_change_files", m.num_added_change_files)?;
    Ok(out.unbind())
}

/// The actions that restore the content of `target` on top of `current` (the latest version):
/// `(actions as JSON texts, files restored, files removed)`.
#[pyfunction]
pub(crate) fn restore_actions(
    py: Python<'_>,
    current: PyRef<'_, RawSnapshot>,
    target: PyRef<'_, RawSnapshot>,
) -> PyResult<(Vec<String>, u64, u64)> {
    let (actions, restored, removed) =
        deltalog_core::dml::restore::restore_actions(&current.snapshot, &target.snapshot)
            .map_err(|e| to_py_err(py, e))?;
    Ok((
        actions.iter().map(|a| a.to_string()).collect(),
        restored,
        removed,
    ))
}

/// `remove` actions (JSON texts) for active files of `snapshot` (URI-decoded paths).
#[pyfunction]
pub(crate) fn remove_actions(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    paths: Vec<String>,
) -> PyResult<Vec<String>> {
    let wanted: std::collections::HashSet<String> = paths.iter().cloned().collect();
    let now = chrono_now_ms();
    let found = deltalog_core::dml::delete_update::file_actions(&snapshot.snapshot, &wanted, now)
        .map_err(|e| to_py_err(py, e))?;
    paths
        .iter()
        .map(|p| {
            found
                .get(p)
                .map(|(_, remove)| remove.to_string())
                .ok_or_else(|| {
                    to_py_err(
                        py,
                        DeltaError::InvalidArgument(format!("{p} is not an active file")),
                    )
                })
        })
        .collect()
}

/// DELETE (`set` None) or UPDATE of the table whose latest version is `snapshot`, for the
/// rows matching `predicate_sql` (SQL text) or `predicate_json` (a filter predicate's JSON);
/// all rows when both are None. `set` holds `(column, value, is_sql)`: a SQL expression, or
/// an expression's JSON. Returns the metrics, with `version` None when nothing changed.
#[pyfunction]
#[pyo3(signature = (snapshot, predicate_sql=None, predicate_json=None, set=None, app_transaction=None, commit_info=None, predicate_text=None, set_text=None, target_file_size=None, writer_properties=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn dml(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    predicate_sql: Option<&str>,
    predicate_json: Option<&str>,
    set: Option<Vec<(String, String, bool)>>,
    app_transaction: Option<(String, i64)>,
    commit_info: Option<&str>,
    predicate_text: Option<String>,
    set_text: Option<Vec<(String, String)>>,
    target_file_size: Option<u64>,
    writer_properties: Option<&str>,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::dml::delete_update::{execute, Change, DmlOptions};
    use deltalog_core::expr::Expr;
    let build = || -> Result<(Option<Expr>, Change), DeltaError> {
        let predicate = match (predicate_sql, predicate_json) {
            (Some(sql), _) => Some(Expr::parse(sql)?),
            (None, Some(json)) => Some(Expr::from(&Predicate::from_json(json)?)),
            (None, None) => None,
        };
        let change = match set {
            None => Change::Delete,
            Some(set) => Change::Update(
                set.into_iter()
                    .map(|(c, v, sql)| Ok((c, expression(&v, sql)?)))
                    .collect::<Result<_, DeltaError>>()?,
            ),
        };
        Ok((predicate, change))
    };
    let (predicate, change) = build().map_err(|e| to_py_err(py, e))?;
    let options = DmlOptions {
        commit_info: commit_info_map(commit_info)?,
        app_transaction,
        predicate_text: predicate_text
            .or_else(|| predicate_sql.map(str::to_string))
            .or_else(|| predicate_json.map(str::to_string)),
        set_text,
        target_file_size,
        parquet: parquet_settings(py, writer_properties)?,
    };
    let snapshot = snapshot.snapshot.clone();
    let metrics = block_on(py, async move {
        execute(&snapshot, predicate.as_ref(), change, options).await
    })?;
    let out = PyDict::new(py);
    out.set_item("version", metrics.version)?;
    out.set_item("num_deleted_rows", metrics.num_deleted_rows)?;
    out.set_item("num_updated_rows", metrics.num_updated_rows)?;
    out.set_item("num_copied_rows", metrics.num_copied_rows)?;
    out.set_item("num_removed_files", metrics.num_removed_files)?;
    out.set_item("num_added_files", metrics.num_added_files)?;
    out.set_item("num_added_change_files", metrics.num_added_change_files)?;
    out.set_item(
        "num_deletion_vectors_added",
        metrics.num_deletion_vectors_added,
    )?;
    out.set_item("num_files_scanned", metrics.num_files_scanned)?;
    Ok(out.unbind())
}

/// The parquet settings of a `WriterProperties`' JSON (`None`: deltalog's own).
fn parquet_settings(
    py: Python<'_>,
    writer_properties: Option<&str>,
) -> PyResult<Option<std::sync::Arc<deltalog_core::write::parquet_options::ParquetSettings>>> {
    writer_properties
        .map(|json| {
            deltalog_core::write::parquet_options::ParquetSettings::from_json(json)
                .map(std::sync::Arc::new)
        })
        .transpose()
        .map_err(|e| to_py_err(py, e))
}
