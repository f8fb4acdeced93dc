//! OPTIMIZE (compaction, Z-order, clustering), in one process or as the pieces of a
//! distributed run; core: `deltalog_core::layout`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::commit::commit_info_map;
use crate::errors::to_py_err;
use crate::runtime::block_on;
use crate::snapshot::RawSnapshot;

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
