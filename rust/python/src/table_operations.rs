//! CONVERT TO DELTA (the directory inspected), CLONE and FSCK REPAIR; core:
//! `deltalog_core::table_operations`.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::commit::commit_info_map;
use crate::errors::to_py_err;
use crate::runtime::block_on;
use crate::snapshot::{open_storage, RawSnapshot};

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
