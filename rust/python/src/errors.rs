//! Core errors as the exception classes of `deltalog.exceptions`.

use deltalog_core::error::DeltaError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

/// Maps a core error onto the matching `deltalog.exceptions` class.
///
/// An exception a Python catalog client raised ([`DeltaError::CatalogRaised`]) comes back as
/// itself when it is a `deltalog.exceptions.DeltaError` (its class and attributes are the
/// client's answer: a refusal, an unknown commit outcome, a conflict); any other exception
/// becomes a `CatalogError` naming the call, with the original as its `__cause__`.
pub(crate) fn to_py_err(py: Python<'_>, err: DeltaError) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let module = py.import("deltalog.exceptions")?;
        // The class says "invalid argument" / "unsupported": the message is the reason alone,
        // however many layers repeated the prefix on the way.
        let message = match &err {
            DeltaError::InvalidArgument(reason) => strip_prefixes(reason, "invalid argument: "),
            DeltaError::Unsupported(reason) => strip_prefixes(reason, "unsupported: "),
            _ => err.to_string(),
        };
        if let DeltaError::CatalogRaised { table, error, .. } = &err {
            let raised = error.downcast_ref::<PyErr>().map(|e| e.clone_ref(py));
            if let Some(raised) = &raised {
                if raised.is_instance(py, &module.getattr("DeltaError")?) {
                    return Ok(raised.clone_ref(py));
                }
            }
            let kw = PyDict::new(py);
            kw.set_item("table", table)?;
            let instance = module
                .getattr("CatalogError")?
                .call((message,), Some(&kw))?;
            let wrapped = PyErr::from_value(instance);
            wrapped.set_cause(py, raised);
            return Ok(wrapped);
        }
        if let DeltaError::Interrupted = &err {
            // Normally replaced by the interrupt that caused it (`runtime::block_on`).
            return Ok(pyo3::exceptions::PyKeyboardInterrupt::new_err(message));
        }
        let (class, kwargs) = match &err {
            DeltaError::TableNotFound { .. } => ("TableNotFoundError", None),
            DeltaError::CorruptLog {
                file,
                version,
                rule,
            } => (
                "CorruptLogError",
                Some(log_kwargs(py, file, *version, rule)?),
            ),
            DeltaError::LogTampered {
                file,
                version,
                rule,
            } => (
                "LogIntegrityError",
                Some(log_kwargs(py, file, Some(*version), rule)?),
            ),
            DeltaError::CorruptDeletionVector { file, reason } => {
                let kw = PyDict::new(py);
                kw.set_item("file", file)?;
                kw.set_item("reason", reason)?;
                ("CorruptDeletionVectorError", Some(kw))
            }
            DeltaError::DataFileNotFound { file } => {
                let kw = PyDict::new(py);
                kw.set_item("file", file)?;
                ("DataFileNotFoundError", Some(kw))
            }
            DeltaError::CorruptDataFile { file, reason } => {
                let kw = PyDict::new(py);
                kw.set_item("file", file)?;
                kw.set_item("reason", reason)?;
                ("CorruptDataFileError", Some(kw))
            }
            DeltaError::CommitConflict { version, reason } => {
                let kw = PyDict::new(py);
                kw.set_item("version", version)?;
                kw.set_item("reason", reason)?;
                ("CommitConflictError", Some(kw))
            }
            DeltaError::ConstraintViolation {
                constraint,
                expression,
                ..
            } => {
                let kw = PyDict::new(py);
                kw.set_item("constraint", constraint)?;
                kw.set_item("expression", expression)?;
                ("ConstraintViolationError", Some(kw))
            }
            DeltaError::ChangeDataNotRecorded {
                start,
                end,
                version,
            } => {
                let kw = PyDict::new(py);
                kw.set_item("start", start)?;
                kw.set_item("end", end)?;
                kw.set_item("version", version)?;
                ("ChangeDataNotRecordedError", Some(kw))
            }
            DeltaError::Catalog { table, .. } | DeltaError::CatalogRaised { table, .. } => {
                let kw = PyDict::new(py);
                kw.set_item("table", table)?;
                ("CatalogError", Some(kw))
            }
            DeltaError::VersionNotFound { .. } => ("VersionNotFoundError", None),
            DeltaError::Unsupported(_) => ("UnsupportedFeatureError", None),
            DeltaError::InvalidArgument(_) => ("InvalidArgumentError", None),
            DeltaError::Storage(_) => ("StorageError", None),
            DeltaError::Arrow(_)
            | DeltaError::Parquet(_)
            | DeltaError::Internal(_)
            | DeltaError::Interrupted => ("DeltaError", None),
        };
        let ty = module.getattr(class)?.cast_into::<PyType>()?;
        let instance = ty.call((message,), kwargs.as_ref())?;
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|e| e)
}

/// `text` without every leading repetition of `prefix`.
fn strip_prefixes(text: &str, prefix: &str) -> String {
    let mut rest = text;
    while let Some(stripped) = rest.strip_prefix(prefix) {
        rest = stripped;
    }
    rest.to_string()
}

/// The attributes of a `CorruptLogError` (and its subclass `LogIntegrityError`).
fn log_kwargs<'py>(
    py: Python<'py>,
    file: &str,
    version: Option<u64>,
    rule: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let kw = PyDict::new(py);
    kw.set_item("file", file)?;
    kw.set_item("version", version)?;
    kw.set_item("rule", rule)?;
    Ok(kw)
}
