//! Writes and commits: `write_table`, `write_files`, transactions of actions, DML, MERGE,
//! RESTORE, schema changes, and the SQL expressions they take.

use std::collections::HashMap;

use arrow::record_batch::RecordBatchReader;
use deltalog_core::error::DeltaError;
use deltalog_core::predicate::Predicate;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::catalog::PyCatalogClient;
use crate::errors::to_py_err;
use crate::runtime::block_on;
use crate::snapshot::{open_storage, RawSnapshot};

/// Writes the batches of `data` (a `pyarrow.RecordBatchReader` or any Arrow stream) to the
/// table at `uri`, whose latest version the caller loaded as `snapshot` (None: no table yet);
/// returns `(version, written)` (`written` false when nothing was committed).
#[pyfunction]
#[pyo3(signature = (uri, data, mode, snapshot=None, partition_by=None, configuration=None, name=None, description=None, storage_options=None, app_transaction=None, commit_info=None, merge_schema=false, protocol=None, overwrite_schema=false, predicate=None, clustering_columns=None, target_file_size=None, catalog_client=None, adopted_files=None, writer_properties=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_table(
    py: Python<'_>,
    uri: &str,
    data: arrow::pyarrow::PyArrowType<arrow::ffi_stream::RecordBatchStreamReader>,
    mode: &str,
    snapshot: Option<PyRef<'_, RawSnapshot>>,
    partition_by: Option<Vec<String>>,
    configuration: Option<std::collections::BTreeMap<String, String>>,
    name: Option<String>,
    description: Option<String>,
    storage_options: Option<HashMap<String, String>>,
    app_transaction: Option<(String, i64)>,
    commit_info: Option<&str>,
    merge_schema: bool,
    protocol: Option<&str>,
    overwrite_schema: bool,
    predicate: Option<&str>,
    clustering_columns: Option<Vec<String>>,
    target_file_size: Option<u64>,
    catalog_client: Option<Py<PyAny>>,
    adopted_files: Option<Vec<String>>,
    writer_properties: Option<&str>,
) -> PyResult<(u64, bool)> {
    use deltalog_core::write::table::{write_batches, SaveMode, WriteOptions, Written};
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    let catalog = catalog_client
        .map(|c| PyCatalogClient::shared(py, c, &storage))
        .transpose()?;
    let mode = SaveMode::parse(mode).map_err(|e| to_py_err(py, e))?;
    let reader = data.0;
    let schema = reader.schema();
    let commit_info = commit_info_map(commit_info)?;
    let protocol = match protocol {
        Some(text) => Some(
            serde_json::from_str::<serde_json::Value>(text).map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!("protocol must be JSON: {e}"))
            })?,
        ),
        None => None,
    };
    let options = WriteOptions {
        mode,
        partition_by,
        configuration: configuration.unwrap_or_default(),
        name,
        description,
        app_transaction,
        commit_info,
        merge_schema,
        protocol,
        commit: true,
        overwrite_schema,
        replace_where: predicate.map(str::to_string),
        clustering_columns,
        target_file_size,
        catalog,
        adopted_files: adopted_files
            .unwrap_or_default()
            .iter()
            .map(|text| {
                serde_json::from_str::<serde_json::Value>(text).map_err(|e| {
                    pyo3::exceptions::PyValueError::new_err(format!(
                        "an add action must be JSON: {e}"
                    ))
                })
            })
            .collect::<PyResult<_>>()?,
        parquet: writer_properties
            .map(deltalog_core::write::parquet_options::ParquetSettings::from_json)
            .transpose()
            .map_err(|e| to_py_err(py, e))?,
    };
    let batches = reader.map(|b| b.map_err(DeltaError::from));
    let snapshot = snapshot.map(|s| s.snapshot.clone());
    let written = block_on(py, async move {
        write_batches(&storage, snapshot, schema.as_ref(), batches, options).await
    })?;
    Ok(match written {
        Written::Version(v) => (v, true),
        Written::Ignored(v) => (v, false),
        Written::Files(_) => return Err(PyRuntimeError::new_err("files written, not committed")),
    })
}

/// Writes `data` as data files of the table whose latest version is `snapshot`, without
/// committing them; returns their `add` actions as JSON texts.
#[pyfunction]
///
/// With `replace_where` (a SQL predicate), every row must match it (the files are the new
/// rows of a `replaceWhere` overwrite, whose removals [`replace_where_actions`] computes),
/// and `insert` change data files come too when the table's change feed is on.
#[pyo3(signature = (snapshot, data, target_file_size=None, replace_where=None))]
pub(crate) fn write_files(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    data: arrow::pyarrow::PyArrowType<arrow::ffi_stream::RecordBatchStreamReader>,
    target_file_size: Option<u64>,
    replace_where: Option<String>,
) -> PyResult<Vec<String>> {
    use deltalog_core::write::table::{write_batches, SaveMode, WriteOptions, Written};
    let snapshot = snapshot.snapshot.clone();
    let storage = snapshot.storage().clone();
    let reader = data.0;
    let schema = reader.schema();
    let mut options = WriteOptions::new(if replace_where.is_some() {
        SaveMode::Overwrite
    } else {
        SaveMode::Append
    });
    options.commit = false;
    options.replace_where = replace_where;
    options.target_file_size = target_file_size;
    let batches = reader.map(|b| b.map_err(DeltaError::from));
    let written = block_on(py, async move {
        write_batches(&storage, Some(snapshot), schema.as_ref(), batches, options).await
    })?;
    match written {
        Written::Files(actions) => Ok(actions.iter().map(|a| a.to_string()).collect()),
        _ => Err(PyRuntimeError::new_err("expected uncommitted files")),
    }
}

/// The `metaData` action (JSON text) a write of data shaped `schema` commits to the table of
/// `snapshot` under `schema_mode` merge (`merge_schema`) or overwrite (`overwrite_schema`, with
/// `partition_by`), or None when the table's metadata stays.
#[pyfunction]
#[pyo3(signature = (snapshot, schema, merge_schema=false, overwrite_schema=false, partition_by=None))]
pub(crate) fn evolved_metadata(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    schema: arrow::pyarrow::PyArrowType<arrow::datatypes::Schema>,
    merge_schema: bool,
    overwrite_schema: bool,
    partition_by: Option<Vec<String>>,
) -> PyResult<Option<String>> {
    use deltalog_core::write::table::{evolved_metadata, SaveMode, WriteOptions};
    let mut options = WriteOptions::new(if overwrite_schema {
        SaveMode::Overwrite
    } else {
        SaveMode::Append
    });
    options.partition_by = partition_by;
    options.merge_schema = merge_schema;
    options.overwrite_schema = overwrite_schema;
    options.commit = false;
    let action =
        evolved_metadata(&snapshot.snapshot, &schema.0, &options).map_err(|e| to_py_err(py, e))?;
    Ok(action.map(|a| a.to_string()))
}

/// The removals of a `replaceWhere` overwrite of `snapshot` by the SQL predicate `sql`: the
/// actions (JSON texts) and the files read (URI-decoded paths, for the conflict rules).
#[pyfunction]
#[pyo3(signature = (snapshot, sql, target_file_size=None))]
pub(crate) fn replace_where_actions(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    sql: String,
    target_file_size: Option<u64>,
) -> PyResult<(Vec<String>, Vec<String>)> {
    let snapshot = snapshot.snapshot.clone();
    let (actions, read) = block_on(py, async move {
        deltalog_core::write::table::replace_where_actions(&snapshot, &sql, target_file_size).await
    })?;
    Ok((actions.iter().map(|a| a.to_string()).collect(), read))
}

/// Deletion vectors taking rows of `snapshot`'s files away: `masks` holds `(path, live rows,
/// row indexes)` per file (`deltalog_core::dml::rewrite::mask_rows`). Returns the actions
/// (JSON texts), the vectors added and the files removed.
#[pyfunction]
pub(crate) fn mask_rows(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    masks: Vec<(String, u64, Vec<u64>)>,
) -> PyResult<(Vec<String>, u64, u64)> {
    let snapshot = snapshot.snapshot.clone();
    let (actions, counts) = block_on(py, async move {
        deltalog_core::dml::rewrite::mask_rows(&snapshot, masks).await
    })?;
    Ok((
        actions.iter().map(|a| a.to_string()).collect(),
        counts.deletion_vectors_added,
        counts.removed_files - counts.deletion_vectors_added,
    ))
}

/// Change data files of rows another engine changed: `data` holds the table's columns and
/// `_change_type` (`deltalog_core::dml::rewrite::write_change_rows`). Returns the `cdc`
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
        deltalog_core::dml::rewrite::write_change_rows(&snapshot, batches, target_file_size).await
    })?;
    Ok(actions.iter().map(|a| a.to_string()).collect())
}

/// Commits `actions` (JSON texts, one action each) to the table at `uri` as the version after
/// `read_version` (None: creating the table), under the conflict rules of
/// `deltalog_core::commit::transaction`: `blind_append` commutes with other writers;
/// `read_files` (URI-decoded paths) names the files the transaction read, when it read only
/// those. `catalog_client` ratifies version 0 of a new catalog-managed table. Returns the
/// version committed.
#[pyfunction]
#[pyo3(signature = (uri, read_version, operation, actions, parameters=None, blind_append=false, read_files=None, app_transaction=None, commit_info=None, storage_options=None, snapshot=None, enable_in_commit_timestamps=false, catalog_client=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn commit_actions(
    py: Python<'_>,
    uri: &str,
    read_version: Option<u64>,
    operation: &str,
    actions: Vec<String>,
    parameters: Option<&str>,
    blind_append: bool,
    read_files: Option<Vec<String>>,
    app_transaction: Option<(String, i64)>,
    commit_info: Option<&str>,
    storage_options: Option<HashMap<String, String>>,
    snapshot: Option<PyRef<'_, RawSnapshot>>,
    enable_in_commit_timestamps: bool,
    catalog_client: Option<Py<PyAny>>,
) -> PyResult<u64> {
    use deltalog_core::commit::transaction::{Isolation, Transaction};
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    if catalog_client.is_some() && read_version.is_some() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "catalog_client creates a catalog-managed table (read_version None); an existing \
             table commits through its snapshot's catalog",
        ));
    }
    let catalog = catalog_client
        .map(|c| PyCatalogClient::shared(py, c, &storage))
        .transpose()?;
    let parsed = actions
        .iter()
        .map(|a| serde_json::from_str::<serde_json::Value>(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!("an action is not JSON: {e}"))
        })?;
    let isolation = if blind_append {
        Isolation::BlindAppend
    } else {
        Isolation::ReadsData
    };
    let mut txn = Transaction::new(storage, read_version, operation, isolation)
        .with_commit_info(commit_info_map(commit_info)?);
    for (k, v) in commit_info_map(parameters)? {
        txn = txn.with_parameter(&k, v);
    }
    if let Some(files) = read_files {
        txn = txn.with_read_files(files.into_iter().collect());
    }
    if let Some((app, v)) = app_transaction {
        txn = txn.with_app_transaction(app, v);
    }
    if let Some(s) = &snapshot {
        txn = txn.for_table(&s.snapshot);
    }
    if enable_in_commit_timestamps {
        let previous = snapshot
            .as_ref()
            .and_then(|s| s.snapshot.in_commit_timestamp());
        txn = txn.with_in_commit_timestamps(previous, true);
    }
    if let Some(client) = catalog {
        // "Creating a catalog-managed table": version 0 is ratified by the catalog.
        txn = txn.with_catalog(client);
    }
    txn.add_actions(parsed);
    block_on(py, async move { txn.commit().await })
}

/// MERGE of `source` into the table whose loaded version is `snapshot`: `clauses` is the
/// JSON list of `deltalog_core::dml::merge::MergeClause`. Returns the metrics, with
/// `version` None when nothing changed.
#[pyfunction]
#[pyo3(signature = (snapshot, source, predicate, source_alias, target_alias, clauses, app_transaction=None, commit_info=None, target_file_size=None, merge_schema=false))]
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

/// ALTER TABLE ADD COLUMNS: the schema string and configuration of `snapshot`'s table with
/// the fields of `columns` (a pyarrow schema) added.
#[pyfunction]
pub(crate) fn add_columns(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    columns: arrow::pyarrow::PyArrowType<arrow::datatypes::Schema>,
) -> PyResult<(String, std::collections::BTreeMap<String, String>)> {
    deltalog_core::write::table::add_columns(&snapshot.snapshot, &columns.0)
        .map_err(|e| to_py_err(py, e))
}

pub(crate) fn chrono_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How many rows of `snapshot` violate the boolean SQL expression `sql` (false or unknown).
#[pyfunction]
pub(crate) fn count_violations(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    sql: &str,
) -> PyResult<u64> {
    let snapshot = snapshot.snapshot.clone();
    let sql = sql.to_string();
    block_on(py, async move {
        deltalog_core::writer_features::constraints::count_violations(&snapshot, &sql).await
    })
}

/// Whether `sql` parses as a SQL expression deltalog evaluates; the error names what is wrong.
#[pyfunction]
pub(crate) fn parse_expression(py: Python<'_>, sql: &str) -> PyResult<String> {
    let expr = deltalog_core::expr::Expr::parse(sql).map_err(|e| to_py_err(py, e))?;
    serde_json::to_string(&expr).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The file-skipping predicate (JSON) of the SQL expression `sql` over the table of
/// `snapshot`: every row satisfying `sql` satisfies it (`Expr::skipping_predicate`); None when
/// nothing can be skipped.
#[pyfunction]
pub(crate) fn skipping_predicate(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    sql: &str,
) -> PyResult<Option<String>> {
    let build = || -> Result<Option<String>, DeltaError> {
        let schema = snapshot.snapshot.schema()?;
        let expr = deltalog_core::expr::Expr::parse(sql)?.resolve(schema.as_ref())?;
        Ok(expr.skipping_predicate().map(|p| p.to_json()))
    };
    build().map_err(|e| to_py_err(py, e))
}

/// Parses commit metadata given as a JSON object's text.
pub(crate) fn commit_info_map(
    text: Option<&str>,
) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    match text {
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => Ok(map),
            _ => Err(pyo3::exceptions::PyValueError::new_err(
                "commit metadata must be a JSON object",
            )),
        },
        None => Ok(serde_json::Map::new()),
    }
}

/// A SQL expression (`is_sql`) or the JSON form of an `Expr`.
pub(crate) fn expression(
    text: &str,
    is_sql: bool,
) -> Result<deltalog_core::expr::Expr, DeltaError> {
    use deltalog_core::expr::Expr;
    if is_sql {
        Expr::parse(text)
    } else {
        serde_json::from_str::<Expr>(text).map_err(|e| {
            DeltaError::InvalidArgument(format!(
                "not a deltalog expression: {}",
                deltalog_core::predicate::json_error(&e)
            ))
        })
    }
}

/// DELETE (`set` None) or UPDATE of the table whose latest version is `snapshot`, for the
/// rows matching `predicate_sql` (SQL text) or `predicate_json` (a filter predicate's JSON);
/// all rows when both are None. `set` holds `(column, value, is_sql)`: a SQL expression, or
/// an expression's JSON. Returns the metrics, with `version` None when nothing changed.
#[pyfunction]
#[pyo3(signature = (snapshot, predicate_sql=None, predicate_json=None, set=None, app_transaction=None, commit_info=None, predicate_text=None, set_text=None, target_file_size=None))]
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

/// The options of an OPTIMIZE from the binding's arguments.
#[allow(clippy::too_many_arguments)]
fn optimize_options(
    py: Python<'_>,
    partition_filter_sql: Option<&str>,
    partition_filter_text: Option<String>,
    target_size: Option<u64>,
    max_concurrent_tasks: Option<usize>,
    memory_limit: Option<u64>,
    commit_info: Option<&str>,
    writer_properties: Option<&str>,
) -> PyResult<deltalog_core::layout::optimize::OptimizeOptions> {
    use deltalog_core::expr::Expr;
    let partition_filter = partition_filter_sql
        .map(Expr::parse)
        .transpose()
        .map_err(|e| to_py_err(py, e))?;
    Ok(deltalog_core::layout::optimize::OptimizeOptions {
        target_size,
        partition_filter,
        partition_filter_text: partition_filter_text
            .or_else(|| partition_filter_sql.map(str::to_string)),
        max_concurrent_tasks,
        memory_limit,
        commit_info: commit_info_map(commit_info)?,
        parquet: writer_properties
            .map(deltalog_core::write::parquet_options::ParquetSettings::from_json)
            .transpose()
            .map_err(|e| to_py_err(py, e))?
            .map(std::sync::Arc::new),
    })
}

/// deltalake's OPTIMIZE metrics as a dict, with `version` (None when nothing was rewritten),
/// `numRows` and `spilledBytes`.
fn optimize_metrics(
    py: Python<'_>,
    m: &deltalog_core::layout::optimize::OptimizeMetrics,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::layout::optimize::FileSizes;
    let sizes = |s: &FileSizes| -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("min", s.min)?;
        d.set_item("max", s.max)?;
        d.set_item("avg", s.avg)?;
        d.set_item("totalFiles", s.total_files)?;
        d.set_item("totalSize", s.total_size)?;
        Ok(d)
    };
    let out = PyDict::new(py);
    out.set_item("version", m.version)?;
    out.set_item("numFilesAdded", m.num_files_added)?;
    out.set_item("numFilesRemoved", m.num_files_removed)?;
    out.set_item("filesAdded", sizes(&m.files_added)?)?;
    out.set_item("filesRemoved", sizes(&m.files_removed)?)?;
    out.set_item("partitionsOptimized", m.partitions_optimized)?;
    out.set_item("numBatches", m.num_batches)?;
    out.set_item("totalConsideredFiles", m.total_considered_files)?;
    out.set_item("totalFilesSkipped", m.total_files_skipped)?;
    out.set_item("preserveInsertionOrder", true)?;
    out.set_item("numRows", m.num_rows)?;
    out.set_item("spilledBytes", m.spilled_bytes)?;
    Ok(out.unbind())
}

/// OPTIMIZE of the snapshot's table, committed as the next version. `layout`: `compact`
/// (bin-packing; clustering on a clustered table), `zorder` (by `columns`), `cluster`
/// (`full` reclusters every file) or `purge` (REORG PURGE). `partition_filter_sql` is over
/// partition columns only. Returns deltalake's metrics.
#[pyfunction]
#[pyo3(signature = (snapshot, layout, columns=None, full=false, partition_filter_sql=None, target_size=None, max_concurrent_tasks=None, memory_limit=None, commit_info=None, partition_filter_text=None, writer_properties=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn optimize(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    layout: &str,
    columns: Option<Vec<String>>,
    full: bool,
    partition_filter_sql: Option<&str>,
    target_size: Option<u64>,
    max_concurrent_tasks: Option<usize>,
    memory_limit: Option<u64>,
    commit_info: Option<&str>,
    partition_filter_text: Option<String>,
    writer_properties: Option<&str>,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::layout::optimize;
    let options = optimize_options(
        py,
        partition_filter_sql,
        partition_filter_text,
        target_size,
        max_concurrent_tasks,
        memory_limit,
        commit_info,
        writer_properties,
    )?;
    let spec = layout_spec(layout, columns, full)?;
    let snapshot = snapshot.snapshot.clone();
    let m = block_on(py, async move {
        optimize::optimize(&snapshot, &spec, options).await
    })?;
    optimize_metrics(py, &m)
}

/// The [`LayoutSpec`] a binding call names.
fn layout_spec(
    layout: &str,
    columns: Option<Vec<String>>,
    full: bool,
) -> PyResult<deltalog_core::layout::optimize::LayoutSpec> {
    use deltalog_core::layout::optimize::LayoutSpec;
    Ok(match layout {
        "compact" => LayoutSpec::Compact,
        "zorder" => LayoutSpec::ZOrder(columns.unwrap_or_default()),
        "cluster" => LayoutSpec::Cluster { full },
        "purge" => LayoutSpec::Purge,
        // For a REORG of chosen files, `columns` holds their table-relative paths.
        "rewrite" => LayoutSpec::RewriteFiles(columns.unwrap_or_default()),
        "unmap" => LayoutSpec::RemoveColumnMapping,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown OPTIMIZE layout {other:?}"
            )))
        }
    })
}

/// A distributed OPTIMIZE, first step: `(target, units, considered, partitions)`, each unit
/// the paths of the files one rewrite takes.
#[pyfunction]
#[pyo3(signature = (snapshot, layout, columns=None, full=false, partition_filter_sql=None, target_size=None))]
pub(crate) fn optimize_plan(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    layout: &str,
    columns: Option<Vec<String>>,
    full: bool,
    partition_filter_sql: Option<&str>,
    target_size: Option<u64>,
) -> PyResult<(u64, Vec<Vec<String>>, u64, u64)> {
    let spec = layout_spec(layout, columns, full)?;
    let options = optimize_options(
        py,
        partition_filter_sql,
        None,
        target_size,
        None,
        None,
        None,
        None,
    )?;
    let plan = deltalog_core::layout::optimize::plan_units(&snapshot.snapshot, &spec, &options)
        .map_err(|e| to_py_err(py, e))?;
    Ok((plan.target, plan.units, plan.considered, plan.partitions))
}

/// A distributed OPTIMIZE, second step (anywhere, on the planned version): the files `paths`
/// rewritten; `(actions as JSON, rows, spilled bytes)`.
#[pyfunction]
#[pyo3(signature = (snapshot, layout, paths, columns=None, full=false, target_size=None, memory_limit=None, writer_properties=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn optimize_rewrite(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    layout: &str,
    paths: Vec<String>,
    columns: Option<Vec<String>>,
    full: bool,
    target_size: Option<u64>,
    memory_limit: Option<u64>,
    writer_properties: Option<&str>,
) -> PyResult<(Vec<String>, u64, u64, u64)> {
    let spec = layout_spec(layout, columns, full)?;
    let options = optimize_options(
        py,
        None,
        None,
        target_size,
        None,
        memory_limit,
        None,
        writer_properties,
    )?;
    let snapshot = snapshot.snapshot.clone();
    let unit = block_on(py, async move {
        deltalog_core::layout::optimize::rewrite_unit(&snapshot, &spec, &paths, &options).await
    })?;
    Ok((
        unit.actions.iter().map(|a| a.to_string()).collect(),
        unit.rows,
        unit.spilled,
        unit.batches,
    ))
}

/// A distributed OPTIMIZE, last step: the units' rewrites committed as one version after the
/// planned one; deltalake's metrics.
#[pyfunction]
#[pyo3(signature = (snapshot, layout, plan, results, columns=None, full=false, partition_filter_text=None, commit_info=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn optimize_commit(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    layout: &str,
    plan: (u64, Vec<Vec<String>>, u64, u64),
    results: Vec<(Vec<String>, u64, u64, u64)>,
    columns: Option<Vec<String>>,
    full: bool,
    partition_filter_text: Option<String>,
    commit_info: Option<&str>,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::layout::optimize::{commit_units, Plan, UnitResult};
    let spec = layout_spec(layout, columns, full)?;
    let options = optimize_options(
        py,
        None,
        partition_filter_text,
        Some(plan.0),
        None,
        None,
        commit_info,
        None,
    )?;
    let plan = Plan {
        target: plan.0,
        units: plan.1,
        considered: plan.2,
        partitions: plan.3,
    };
    let units = results
        .into_iter()
        .map(|(actions, rows, spilled, batches)| {
            let actions = actions
                .iter()
                .map(|text| {
                    serde_json::from_str::<serde_json::Value>(text).map_err(|e| {
                        pyo3::exceptions::PyValueError::new_err(format!(
                            "an action must be JSON: {e}"
                        ))
                    })
                })
                .collect::<PyResult<Vec<_>>>()?;
            Ok(UnitResult {
                actions,
                rows,
                spilled,
                batches,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let snapshot = snapshot.snapshot.clone();
    let m = block_on(py, async move {
        commit_units(&snapshot, &spec, &options, &plan, units).await
    })?;
    optimize_metrics(py, &m)
}

/// CONVERT TO DELTA, first half: the parquet files under `uri` inspected; returns the table's
/// schema (the files' columns, then the partition columns), its partition columns and one
/// `add` action (JSON) per file. `partition_names` alone: types inferred from the values;
/// `partition_schema`: these columns with these types.
#[pyfunction]
#[pyo3(signature = (uri, partition_names=None, partition_schema=None, configuration=None, collect_stats=true, storage_options=None))]
pub(crate) fn inspect_parquet_directory(
    py: Python<'_>,
    uri: &str,
    partition_names: Option<Vec<String>>,
    partition_schema: Option<arrow::pyarrow::PyArrowType<arrow::datatypes::Schema>>,
    configuration: Option<std::collections::BTreeMap<String, String>>,
    collect_stats: bool,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<(
    arrow::pyarrow::PyArrowType<arrow::datatypes::Schema>,
    Vec<String>,
    Vec<String>,
)> {
    use deltalog_core::table_operations::convert::{inspect, PartitionSpec};
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    let spec = match (partition_schema, partition_names) {
        (Some(schema), _) => PartitionSpec::Typed(
            schema
                .0
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect(),
        ),
        (None, Some(names)) => PartitionSpec::Names(names),
        (None, None) => PartitionSpec::None,
    };
    let configuration = configuration.unwrap_or_default();
    let conversion = block_on(py, async move {
        inspect(&storage, spec, &configuration, collect_stats).await
    })?;
    Ok((
        arrow::pyarrow::PyArrowType(conversion.schema),
        conversion.partition_columns,
        conversion.adds.iter().map(|a| a.to_string()).collect(),
    ))
}

/// CLONE of the snapshot's table (at its version) into a new table at `target_uri`:
/// shallow (adds point at the source's files) or `deep` (files copied). Returns `{version,
/// sourceVersion, numFiles, copiedBytes}`.
#[pyfunction]
#[pyo3(signature = (snapshot, target_uri, deep=false, name=None, description=None, storage_options=None, commit_info=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn clone_table(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    target_uri: &str,
    deep: bool,
    name: Option<String>,
    description: Option<String>,
    storage_options: Option<HashMap<String, String>>,
    commit_info: Option<&str>,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::table_operations::clone::{clone_table, CloneOptions};
    let target = open_storage(target_uri, storage_options).map_err(|e| to_py_err(py, e))?;
    let options = CloneOptions {
        deep,
        name,
        description,
        configuration: Default::default(),
        commit_info: commit_info_map(commit_info)?,
    };
    let snapshot = snapshot.snapshot.clone();
    let m = block_on(
        py,
        async move { clone_table(&snapshot, &target, options).await },
    )?;
    let out = PyDict::new(py);
    out.set_item("version", m.version)?;
    out.set_item("sourceVersion", m.source_version)?;
    out.set_item("numFiles", m.num_files)?;
    out.set_item("copiedBytes", m.copied_bytes)?;
    Ok(out.unbind())
}

/// FSCK REPAIR of the snapshot's table: `(version, missing paths)`; the missing files' adds
/// are removed in one commit unless `dry_run` (then `version` is None).
#[pyfunction]
#[pyo3(signature = (snapshot, dry_run=false, commit_info=None))]
pub(crate) fn repair(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    dry_run: bool,
    commit_info: Option<&str>,
) -> PyResult<(Option<u64>, Vec<String>)> {
    let commit_info = commit_info_map(commit_info)?;
    let snapshot = snapshot.snapshot.clone();
    let report = block_on(py, async move {
        deltalog_core::table_operations::repair::repair(&snapshot, dry_run, commit_info).await
    })?;
    Ok((report.version, report.missing))
}
