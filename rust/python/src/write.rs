//! Writing data files: `write_table`, `write_files`, and the metadata and removals of writes
//! that commit elsewhere (schema evolution, `replaceWhere`); core: `deltalog_core::write`.

use std::collections::HashMap;

use arrow::record_batch::RecordBatchReader;
use deltalog_core::error::DeltaError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::catalog::PyCatalogClient;
use crate::commit::commit_info_map;
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

/// `add` actions (JSON texts, in order) for parquet files another writer put into the table of
/// `snapshot`: `files` holds `(path relative to the table root, as stored; partition values
/// by column, None for null)`. Only each file's footer is read: statistics as deltalog's
/// writer collects them, where the footer has them (see
/// `deltalog_core::write::external_files`). Nothing is committed.
#[pyfunction]
pub(crate) fn add_actions_from_footers(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    files: Vec<(String, std::collections::BTreeMap<String, Option<String>>)>,
) -> PyResult<Vec<String>> {
    use deltalog_core::write::external_files::{add_actions_from_footers, ExternalFile};
    let snapshot = snapshot.snapshot.clone();
    let files = files
        .into_iter()
        .map(|(path, partition_values)| ExternalFile {
            path,
            partition_values,
        })
        .collect();
    let actions = block_on(py, async move {
        add_actions_from_footers(&snapshot, files).await
    })?;
    Ok(actions.iter().map(|a| a.to_string()).collect())
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
    use deltalog_core::write::schema_evolution::evolved_metadata;
    use deltalog_core::write::table::{SaveMode, WriteOptions};
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
