//! SQL expressions: parsed, and turned into file-skipping predicates; core:
//! `deltalog_core::expr`.

use deltalog_core::error::DeltaError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::errors::to_py_err;
use crate::snapshot::RawSnapshot;

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
