//! The shared Tokio runtime every blocking call runs on, with the GIL released.

use crate::warnings;
use std::sync::OnceLock;

use deltalog_core::error::DeltaError;
use deltalog_core::interrupt::Operation;
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

/// How often a call waiting on the main thread runs Python's signal handlers.
const SIGNAL_CHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs a future to completion without holding the GIL, as one interruptible operation
/// (`deltalog_core::interrupt`).
///
/// Python runs signal handlers only on the main thread, between bytecodes: a thread inside
/// this call would otherwise see a Ctrl-C only after the call, after a write had committed.
/// So the waiting thread runs the handlers every [`SIGNAL_CHECK`] (a no-op off the main
/// thread). A handler's exception (`KeyboardInterrupt`) interrupts the operation: before its
/// commit point it stops, its files are removed and the exception is raised as it was;
/// once a commit attempt started it runs to its end, and an interrupt after a commit is
/// raised as `deltalog.InterruptedAfterCommit` carrying the committed version, never as a
/// bare `KeyboardInterrupt` a user would take for "nothing happened".
pub(crate) fn block_on<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: std::future::Future<Output = Result<T, DeltaError>> + Send,
    T: Send,
{
    let rt = runtime()?;
    let op = Operation::new();
    let caught: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    let result = py.detach(|| {
        let fut = op.run(fut);
        if tokio::runtime::Handle::try_current().is_ok() {
            // Called back from inside a call (see `drive`): the outer call watches signals.
            drive(rt, fut)
        } else {
            rt.block_on(watching_signals(fut, &op, &caught))
        }
    });
    warnings::emit_pending(py);
    // A signal that arrived after the last check belongs to this call too.
    let late = py.check_signals().err();
    let caught = caught.into_inner().ok().flatten().or(late);
    match caught {
        None => result.map_err(|e| to_py_err(py, e)),
        Some(interrupt) => Err(interrupted(py, &op, result.err(), interrupt)),
    }
}

/// Drives `fut`, running Python's signal handlers every [`SIGNAL_CHECK`] until one raises;
/// that interrupts `op` and its exception is kept in `caught`.
async fn watching_signals<T>(
    fut: impl std::future::Future<Output = T>,
    op: &Operation,
    caught: &std::sync::Mutex<Option<PyErr>>,
) -> T {
    let mut fut = std::pin::pin!(fut);
    let start = tokio::time::Instant::now() + SIGNAL_CHECK;
    let mut ticks = tokio::time::interval_at(start, SIGNAL_CHECK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            biased;
            out = &mut fut => return out,
            _ = ticks.tick(), if !op.is_interrupted() => {
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    if let Ok(mut slot) = caught.lock() {
                        *slot = Some(e);
                    }
                    op.interrupt();
                }
            }
        }
    }
}

/// The exception an interrupted call raises: `deltalog.InterruptedAfterCommit` when it
/// committed, the error of a commit attempt that did not (a conflict, an unknown outcome: what
/// happened to the commit matters more than the interrupt), else the interrupt itself.
fn interrupted(
    py: Python<'_>,
    op: &Operation,
    error: Option<DeltaError>,
    interrupt: PyErr,
) -> PyErr {
    if let Some(version) = op.committed() {
        let after = py
            .import("deltalog.exceptions")
            .and_then(|m| m.getattr("InterruptedAfterCommit"))
            .and_then(|class| class.call1((version,)));
        return match after {
            Ok(instance) => {
                let err = PyErr::from_value(instance);
                err.set_cause(py, Some(interrupt));
                err
            }
            Err(e) => e,
        };
    }
    match error {
        Some(e) if op.commit_started() && !matches!(e, DeltaError::Interrupted) => to_py_err(py, e),
        _ => interrupt,
    }
}
