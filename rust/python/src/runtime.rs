//! The shared Tokio runtime every blocking call runs on, with the GIL released.

use crate::warnings;
use std::sync::OnceLock;

use deltalog_core::error::DeltaError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::errors::to_py_err;

/// The runtime every blocking call runs on.
pub(crate) fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("deltalog")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| PyRuntimeError::new_err(format!("cannot start the deltalog runtime: {e}")))
}

/// Runs a future to completion without holding the GIL.
pub(crate) fn block_on<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: std::future::Future<Output = Result<T, DeltaError>> + Send,
    T: Send,
{
    let rt = runtime()?;
    let result = py.detach(|| rt.block_on(fut));
    warnings::emit_pending(py);
    result.map_err(|e| to_py_err(py, e))
}
