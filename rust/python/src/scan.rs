//! Scans: planned file tasks and the Arrow batch streams that read them.

use crate::runtime::runtime;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use arrow::pyarrow::{IntoPyArrow, ToPyArrow};
use deltalog_core::error::DeltaError;
use deltalog_core::scan::{self, FileTask, ReadSpec};
use deltalog_core::Storage;
use futures::stream::{BoxStream, StreamExt};
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;

use crate::errors::to_py_err;
use crate::runtime::block_on;
use crate::snapshot::open_storage;

/// How many row groups decode at once.
pub(crate) fn scan_concurrency() -> usize {
    deltalog_core::available_threads()
}

/// A planned scan: the read spec and the file tasks, with the storage to read them from.
#[pyclass(frozen, module = "deltalog._native")]
pub(crate) struct RawScan {
    pub(crate) storage: Storage,
    pub(crate) spec: Arc<ReadSpec>,
    pub(crate) tasks: Vec<FileTask>,
    /// Active files before pruning and skipping.
    pub(crate) files_considered: usize,
}

#[pymethods]
impl RawScan {
    /// A scan of tasks serialized by `spec_json` / `task_jsons`, reading from the table root
    /// the spec names with `storage_options`.
    #[staticmethod]
    #[pyo3(signature = (spec, tasks, storage_options=None))]
    fn from_json(
        py: Python<'_>,
        spec: &str,
        tasks: Vec<String>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let build = || -> Result<RawScan, DeltaError> {
            let spec = ReadSpec::from_json(spec)?;
            let storage = open_storage(spec.table_root(), storage_options)?;
            let tasks = tasks
                .iter()
                .map(|t| FileTask::from_json(t))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(RawScan {
                storage,
                spec: Arc::new(spec),
                files_considered: tasks.len(),
                tasks,
            })
        };
        build().map_err(|e| to_py_err(py, e))
    }

    /// The schema of the batches the scan produces.
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.spec.output_schema().as_ref().to_pyarrow(py)
    }

    /// The read spec as JSON.
    fn spec_json(&self, py: Python<'_>) -> PyResult<String> {
        self.spec.to_json().map_err(|e| to_py_err(py, e))
    }

    /// Each file task as JSON.
    fn task_jsons(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.tasks
            .iter()
            .map(FileTask::to_json)
            .collect::<Result<_, _>>()
            .map_err(|e| to_py_err(py, e))
    }

    fn num_tasks(&self) -> usize {
        self.tasks.len()
    }

    fn files_considered(&self) -> usize {
        self.files_considered
    }

    /// Reads every task into a `pyarrow.Table` (files decoded in parallel, GIL released).
    fn to_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.stream();
        let batches: Vec<RecordBatch> = block_on(py, async move {
            let mut stream = stream;
            let mut out = Vec::new();
            while let Some(batch) = stream.next().await {
                out.push(batch?);
            }
            Ok(out)
        })?;
        let table = arrow::pyarrow::Table::try_new(batches, self.spec.output_schema().clone())
            .map_err(|e| to_py_err(py, e.into()))?;
        table.into_pyarrow(py)
    }

    /// The planned files as an Arrow IPC stream for another engine's file scan
    /// (`deltalog_core::scan::file_plan`): absolute URIs, sizes, typed partition values and
    /// the decoded deletion vectors as portable RoaringBitmaps.
    fn file_plan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let (storage, spec, tasks) = (self.storage.clone(), self.spec.clone(), self.tasks.clone());
        let batch = block_on(py, async move {
            scan::file_plan::file_plan(&storage, &spec, &tasks).await
        })?;
        let bytes = py
            .detach(|| -> Result<Vec<u8>, arrow::error::ArrowError> {
                let mut out = Vec::new();
                let mut writer =
                    arrow::ipc::writer::StreamWriter::try_new(&mut out, &batch.schema())?;
                writer.write(&batch)?;
                writer.finish()?;
                drop(writer);
                Ok(out)
            })
            .map_err(|e| to_py_err(py, e.into()))?;
        Ok(pyo3::types::PyBytes::new(py, &bytes))
    }

    /// The batches one by one, as a `RawBatchStream`.
    fn to_stream(&self) -> RawBatchStream {
        RawBatchStream {
            stream: Mutex::new(Some(self.stream())),
        }
    }
}

impl RawScan {
    fn stream(&self) -> BoxStream<'static, Result<RecordBatch, DeltaError>> {
        scan::execute(
            self.storage.clone(),
            self.spec.clone(),
            self.tasks.clone(),
            scan_concurrency(),
        )
    }
}

/// An iterator of `pyarrow.RecordBatch` over a running scan; errors raise the typed
/// `deltalog.exceptions` classes.
#[pyclass(module = "deltalog._native")]
pub(crate) struct RawBatchStream {
    pub(crate) stream: Mutex<Option<BoxStream<'static, Result<RecordBatch, DeltaError>>>>,
}

#[pymethods]
impl RawBatchStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rt = runtime()?;
        let next = py.detach(|| {
            let mut guard = match self.stream.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            let stream = guard.as_mut()?;
            let next = crate::runtime::drive(rt, stream.next());
            if !matches!(next, Some(Ok(_))) {
                // Finished or failed: nothing more to read.
                *guard = None;
            }
            next
        });
        match next {
            Some(Ok(batch)) => batch.to_pyarrow(py),
            Some(Err(e)) => Err(to_py_err(py, e)),
            None => Err(PyStopIteration::new_err(())),
        }
    }
}
