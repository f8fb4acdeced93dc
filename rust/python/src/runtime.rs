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

/// Drives `fut` to completion on `rt` from a blocking caller. A caller already inside the
/// runtime's `block_on` cannot block that thread on the runtime again (Tokio forbids nesting
/// runtimes): that happens when deltalog pulls batches from a Python iterator (a write's
/// input) whose code calls back into deltalog to read. The future then runs on a scoped
/// helper thread while this one waits.
pub(crate) fn drive<F>(rt: &tokio::runtime::Runtime, fut: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return rt.block_on(fut);
    }
    std::thread::scope(|scope| match scope.spawn(|| rt.block_on(fut)).join() {
        Ok(out) => out,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// Runs a future to completion without holding the GIL.
pub(crate) fn block_on<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: std::future::Future<Output = Result<T, DeltaError>> + Send,
    T: Send,
{
    let rt = runtime()?;
    let result = py.detach(|| drive(rt, fut));
    warnings::emit_pending(py);
    result.map_err(|e| to_py_err(py, e))
}
