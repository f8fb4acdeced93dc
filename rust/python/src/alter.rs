//! ALTER TABLE: columns added, and the rows a new constraint would reject; core:
//! `deltalog_core::schema`, `deltalog_core::writer_features::constraints`.

use pyo3::prelude::*;

use crate::errors::to_py_err;
use crate::runtime::block_on;
use crate::snapshot::RawSnapshot;

/// ALTER TABLE ADD COLUMNS: the schema string and configuration of `snapshot`'s table with
/// the fields of `columns` (a pyarrow schema) added.
#[pyfunction]
pub(crate) fn add_columns(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    columns: arrow::pyarrow::PyArrowType<arrow::datatypes::Schema>,
) -> PyResult<(String, std::collections::BTreeMap<String, String>)> {
    deltalog_core::write::schema_evolution::add_columns(&snapshot.snapshot, &columns.0)
        .map_err(|e| to_py_err(py, e))
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
