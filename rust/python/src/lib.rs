//! `deltalog._native`: the thin PyO3 layer over `deltalog-core`.
//!
//! Everything here converts: Python arguments to core calls (run on a shared Tokio runtime with
//! the GIL released), core results to Python objects (Arrow data through the C data interface,
//! zero-copy), and core errors to the exception classes of `deltalog.exceptions`.

mod warnings;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{RecordBatch, RecordBatchIterator};
use arrow::pyarrow::{IntoPyArrow, ToPyArrow};
use arrow::record_batch::RecordBatchReader;
use deltalog_core::add_actions::{add_actions_table, file_paths};
use deltalog_core::deletion_vector;
use deltalog_core::error::DeltaError;
use deltalog_core::predicate::Predicate;
use deltalog_core::scan::{self, FileTask, ReadSpec, Scan, ScanOptions};
use deltalog_core::timeline;
use deltalog_core::{Snapshot, Storage};
use futures::stream::{BoxStream, StreamExt};
use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

/// Log replay allocates and frees large buffers from several threads at once; the system
/// allocator fragments under that pattern (measured: ~200 MB more peak memory opening a
/// 1M-file log). Every buffer handed to Python is released through the Arrow C data
/// interface's release callback, i.e. by this same allocator.
#[cfg(not(any(windows, target_env = "musl")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's compile-time options, read before its first allocation (`_RJEM_MALLOC_CONF` in
/// the environment still overrides them). `oversize_threshold:0` keeps large allocations in
/// the ordinary arenas: by default those of 8 MiB and more go to an arena that returns freed
/// memory to the kernel at once, so the column chunks of every row group written and the
/// batches of every log part read were faulted in afresh (measured: a 10M-row append took
/// 1.45 s of CPU instead of 1.06 s, opening a 1M-file checkpoint 0.74 s instead of 0.60 s;
/// peak memory unchanged).
#[cfg(not(any(windows, target_env = "musl")))]
#[export_name = "_rjem_malloc_conf"]
pub static MALLOC_CONF: Option<&'static std::ffi::c_char> = {
    const CONF: &std::ffi::CStr = c"oversize_threshold:0";
    // SAFETY: a pointer to the first byte of a static, NUL-terminated string.
    Some(unsafe { &*CONF.as_ptr() })
};

/// The runtime every blocking call runs on.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
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
fn block_on<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: std::future::Future<Output = Result<T, DeltaError>> + Send,
    T: Send,
{
    let rt = runtime()?;
    let result = py.detach(|| rt.block_on(fut));
    warnings::emit_pending(py);
    result.map_err(|e| to_py_err(py, e))
}

/// Maps a core error onto the matching `deltalog.exceptions` class.
fn to_py_err(py: Python<'_>, err: DeltaError) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let module = py.import("deltalog.exceptions")?;
        let message = err.to_string();
        let (class, kwargs) = match &err {
            DeltaError::TableNotFound { .. } => ("TableNotFoundError", None),
            DeltaError::CorruptLog {
                file,
                version,
                rule,
            } => {
                let kw = PyDict::new(py);
                kw.set_item("file", file)?;
                kw.set_item("version", version)?;
                kw.set_item("rule", rule)?;
                ("CorruptLogError", Some(kw))
            }
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
            DeltaError::VersionNotFound { .. } => ("VersionNotFoundError", None),
            DeltaError::Unsupported(_) => ("UnsupportedFeatureError", None),
            DeltaError::InvalidArgument(_) => ("InvalidArgumentError", None),
            DeltaError::Storage(_) => ("StorageError", None),
            DeltaError::Arrow(_) | DeltaError::Parquet(_) | DeltaError::Internal(_) => {
                ("DeltaError", None)
            }
        };
        let ty = module.getattr(class)?.cast_into::<PyType>()?;
        let instance = ty.call((message,), kwargs.as_ref())?;
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|e| e)
}

fn open_storage(
    uri: &str,
    storage_options: Option<HashMap<String, String>>,
) -> Result<Storage, DeltaError> {
    Storage::open(uri, &storage_options.unwrap_or_default())
}

fn to_version(version: Option<i64>) -> Result<Option<u64>, DeltaError> {
    version
        .map(|v| {
            u64::try_from(v).map_err(|_| {
                DeltaError::InvalidArgument(format!("a table version cannot be negative: {v}"))
            })
        })
        .transpose()
}

/// A loaded snapshot of a table.
#[pyclass(frozen, module = "deltalog._native")]
struct RawSnapshot {
    snapshot: Snapshot,
}

#[pymethods]
impl RawSnapshot {
    /// Opens `version` (latest when None) of the table at `uri`.
    #[staticmethod]
    #[pyo3(signature = (uri, version=None, storage_options=None))]
    fn open(
        py: Python<'_>,
        uri: &str,
        version: Option<i64>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
        let version = to_version(version).map_err(|e| to_py_err(py, e))?;
        let snapshot = block_on(py, Snapshot::try_new(storage, version))?;
        Ok(RawSnapshot { snapshot })
    }

    /// The latest version of the table at `uri` committed at or before `timestamp_ms`.
    #[staticmethod]
    #[pyo3(signature = (uri, timestamp_ms, storage_options=None))]
    fn resolve_timestamp(
        py: Python<'_>,
        uri: &str,
        timestamp_ms: i64,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<u64> {
        let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
        block_on(py, async move {
            timeline::version_at_timestamp(&storage, timestamp_ms).await
        })
    }

    /// Opens another version of the same table, reusing its storage.
    fn load_version(&self, py: Python<'_>, version: Option<i64>) -> PyResult<Self> {
        let version = to_version(version).map_err(|e| to_py_err(py, e))?;
        let storage = self.snapshot.storage().clone();
        let snapshot = block_on(py, Snapshot::try_new(storage, version))?;
        Ok(RawSnapshot { snapshot })
    }

    /// A newer version (the latest when None): the commits after this one replayed onto
    /// this snapshot (`Snapshot::advance`).
    fn advance(&self, py: Python<'_>, version: Option<i64>) -> PyResult<Self> {
        let version = to_version(version).map_err(|e| to_py_err(py, e))?;
        let snapshot = self.snapshot.clone();
        let snapshot = block_on(py, async move { snapshot.advance(version).await })?;
        Ok(RawSnapshot { snapshot })
    }

    /// The latest version committed at or before `timestamp_ms`.
    fn version_at_timestamp(&self, py: Python<'_>, timestamp_ms: i64) -> PyResult<u64> {
        let storage = self.snapshot.storage().clone();
        block_on(py, async move {
            timeline::version_at_timestamp(&storage, timestamp_ms).await
        })
    }

    /// `(version, timestamp_ms, commitInfo JSON or None)`, newest first.
    #[pyo3(signature = (limit=None))]
    fn history(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
    ) -> PyResult<Vec<(u64, i64, Option<String>)>> {
        let snapshot = self.snapshot.clone();
        let entries = block_on(py, async move { timeline::history(&snapshot, limit).await })?;
        Ok(entries
            .into_iter()
            .map(|e| (e.version, e.timestamp, e.commit_info.map(|c| c.to_string())))
            .collect())
    }

    /// The table root URI.
    fn table_uri(&self) -> String {
        self.snapshot.storage().url().to_string()
    }

    fn version(&self) -> u64 {
        self.snapshot.version()
    }

    /// `(min_reader_version, min_writer_version, reader_features, writer_features)`.
    fn protocol(&self) -> (i32, i32, Option<Vec<String>>, Option<Vec<String>>) {
        let p = self.snapshot.protocol();
        (
            p.min_reader_version,
            p.min_writer_version,
            p.reader_features.clone(),
            p.writer_features.clone(),
        )
    }

    /// The metadata as a dict of its fields.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.snapshot.metadata().map_err(|e| to_py_err(py, e))?;
        let d = PyDict::new(py);
        d.set_item("id", &m.id)?;
        d.set_item("name", &m.name)?;
        d.set_item("description", &m.description)?;
        d.set_item("format_provider", &m.format_provider)?;
        d.set_item("format_options", m.format_options.clone())?;
        d.set_item("schema_string", &m.schema_string)?;
        d.set_item("partition_columns", m.partition_columns.clone())?;
        d.set_item("created_time", m.created_time)?;
        d.set_item("configuration", m.configuration.clone())?;
        Ok(d)
    }

    /// The logical schema as a `pyarrow.Schema`.
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let schema = self.snapshot.schema().map_err(|e| to_py_err(py, e))?;
        schema.as_ref().to_pyarrow(py)
    }

    /// The schema of the data files (physical names, field ids in id mode).
    fn physical_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let schema = self
            .snapshot
            .physical_schema()
            .map_err(|e| to_py_err(py, e))?;
        schema.to_pyarrow(py)
    }

    /// `none`, `name` or `id`.
    fn column_mapping_mode(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.snapshot
            .column_mapping_mode()
            .map(|m| m.as_str())
            .map_err(|e| to_py_err(py, e))
    }

    /// The active files as a `pyarrow.RecordBatchReader` (see `deltalog_core::add_actions`).
    fn add_actions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let snapshot = self.snapshot.clone();
        let (schema, batches) = py
            .detach(|| add_actions_table(&snapshot))
            .map_err(|e| to_py_err(py, e))?;
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(RecordBatchIterator::new(
            batches.into_iter().map(Ok),
            schema,
        ));
        reader.into_pyarrow(py)
    }

    /// The decoded paths of the active files.
    fn files(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let snapshot = self.snapshot.clone();
        py.detach(|| file_paths(&snapshot))
            .map_err(|e| to_py_err(py, e))
    }

    fn num_files(&self) -> usize {
        self.snapshot.num_files()
    }

    /// `{appId: (version, lastUpdated)}`.
    fn transactions(&self) -> HashMap<String, (i64, Option<i64>)> {
        self.snapshot
            .transactions()
            .values()
            .map(|t| (t.app_id.clone(), (t.version, t.last_updated)))
            .collect()
    }

    /// `[(domain, configuration)]`, sorted by domain.
    fn domain_metadata(&self) -> Vec<(String, String)> {
        self.snapshot
            .domain_metadata()
            .iter()
            .map(|d| (d.domain.clone(), d.configuration.clone()))
            .collect()
    }

    /// The commit timestamp of this version in ms, when known.
    fn timestamp(&self) -> Option<i64> {
        self.snapshot.timestamp()
    }

    /// Plans a scan of `columns` (all when None), with the row tracking columns when asked,
    /// of the rows satisfying `predicate` (the JSON form of `deltalog_core::predicate`).
    #[pyo3(signature = (columns=None, row_tracking=false, predicate=None))]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        row_tracking: bool,
        predicate: Option<&str>,
    ) -> PyResult<RawScan> {
        let snapshot = self.snapshot.clone();
        let predicate = predicate
            .map(Predicate::from_json)
            .transpose()
            .map_err(|e| to_py_err(py, e))?;
        let options = ScanOptions {
            columns,
            row_tracking,
            predicate,
            row_index: false,
        };
        let planned = py
            .detach(|| Scan::try_new(&snapshot, options))
            .map_err(|e| to_py_err(py, e))?;
        Ok(RawScan {
            storage: snapshot.storage().clone(),
            spec: planned.spec().clone(),
            tasks: planned.tasks().to_vec(),
            files_considered: planned.files_considered(),
        })
    }

    /// Plans the change feed of versions `start..=self.version()` (see
    /// `deltalog_core::scan::changes`).
    #[pyo3(signature = (start, columns=None, predicate=None))]
    fn changes(
        &self,
        py: Python<'_>,
        start: i64,
        columns: Option<Vec<String>>,
        predicate: Option<&str>,
    ) -> PyResult<RawScan> {
        let snapshot = self.snapshot.clone();
        let build = || -> Result<ScanOptions, DeltaError> {
            Ok(ScanOptions {
                columns,
                row_tracking: false,
                predicate: predicate.map(Predicate::from_json).transpose()?,
                row_index: false,
            })
        };
        let options = build().map_err(|e| to_py_err(py, e))?;
        let start = u64::try_from(start).map_err(|_| {
            to_py_err(
                py,
                DeltaError::InvalidArgument(format!("a version cannot be negative: {start}")),
            )
        })?;
        let planned = block_on(py, async move {
            let planned = Scan::changes(&snapshot, start, options).await?;
            Ok((snapshot, planned))
        })?;
        let (snapshot, planned) = planned;
        Ok(RawScan {
            storage: snapshot.storage().clone(),
            spec: planned.spec().clone(),
            tasks: planned.tasks().to_vec(),
            files_considered: planned.files_considered(),
        })
    }
}

/// How many row groups decode at once.
fn scan_concurrency() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// A planned scan: the read spec and the file tasks, with the storage to read them from.
#[pyclass(frozen, module = "deltalog._native")]
struct RawScan {
    storage: Storage,
    spec: Arc<ReadSpec>,
    tasks: Vec<FileTask>,
    /// Active files before pruning and skipping.
    files_considered: usize,
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
struct RawBatchStream {
    stream: Mutex<Option<BoxStream<'static, Result<RecordBatch, DeltaError>>>>,
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
            let next = rt.block_on(stream.next());
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

/// The JSON checksum of a `_last_checkpoint` document (spec: "JSON checksum").
#[pyfunction]
fn json_checksum(text: &str) -> PyResult<String> {
    deltalog_core::last_checkpoint::json_checksum(text)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.0))
}

/// Writes the batches of `data` (a `pyarrow.RecordBatchReader` or any Arrow stream) to the
/// table at `uri`, whose latest version the caller loaded as `snapshot` (None: no table yet);
/// returns `(version, written)` (`written` false when nothing was committed).
#[pyfunction]
#[pyo3(signature = (uri, data, mode, snapshot=None, partition_by=None, configuration=None, name=None, description=None, storage_options=None, app_transaction=None, commit_info=None, merge_schema=false, protocol=None, overwrite_schema=false, predicate=None, clustering_columns=None, target_file_size=None))]
#[allow(clippy::too_many_arguments)]
fn write_table(
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
) -> PyResult<(u64, bool)> {
    use deltalog_core::write::table::{write_batches, SaveMode, WriteOptions, Written};
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
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
#[pyo3(signature = (snapshot, data, target_file_size=None))]
fn write_files(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    data: arrow::pyarrow::PyArrowType<arrow::ffi_stream::RecordBatchStreamReader>,
    target_file_size: Option<u64>,
) -> PyResult<Vec<String>> {
    use deltalog_core::write::table::{write_batches, SaveMode, WriteOptions, Written};
    let snapshot = snapshot.snapshot.clone();
    let storage = snapshot.storage().clone();
    let reader = data.0;
    let schema = reader.schema();
    let options = WriteOptions {
        mode: SaveMode::Append,
        partition_by: None,
        configuration: Default::default(),
        name: None,
        description: None,
        app_transaction: None,
        commit_info: Default::default(),
        merge_schema: false,
        protocol: None,
        commit: false,
        overwrite_schema: false,
        replace_where: None,
        clustering_columns: None,
        target_file_size,
    };
    let batches = reader.map(|b| b.map_err(DeltaError::from));
    let written = block_on(py, async move {
        write_batches(&storage, Some(snapshot), schema.as_ref(), batches, options).await
    })?;
    match written {
        Written::Files(actions) => Ok(actions.iter().map(|a| a.to_string()).collect()),
        _ => Err(PyRuntimeError::new_err("expected uncommitted files")),
    }
}

/// Commits `actions` (JSON texts, one action each) to the table at `uri` as the version after
/// `read_version` (None: creating the table), under the conflict rules of
/// `deltalog_core::write::transaction`: `blind_append` commutes with other writers;
/// `read_files` (URI-decoded paths) names the files the transaction read, when it read only
/// those. Returns the version committed.
#[pyfunction]
#[pyo3(signature = (uri, read_version, operation, actions, parameters=None, blind_append=false, read_files=None, app_transaction=None, commit_info=None, storage_options=None, snapshot=None, enable_in_commit_timestamps=false))]
#[allow(clippy::too_many_arguments)]
fn commit_actions(
    py: Python<'_>,
    uri: &str,
    read_version: Option<u64>,
    operation: &str,
    actions: Vec<String>,
    parameters: Option<&str>,
    blind_append: bool,
    read_files: Option<Vec<String>>,
    app_transaction: Option<(String, i64)>,
    commit_info: Option<&str>,
    storage_options: Option<HashMap<String, String>>,
    snapshot: Option<PyRef<'_, RawSnapshot>>,
    enable_in_commit_timestamps: bool,
) -> PyResult<u64> {
    use deltalog_core::write::transaction::{Isolation, Transaction};
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    let parsed = actions
        .iter()
        .map(|a| serde_json::from_str::<serde_json::Value>(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!("an action is not JSON: {e}"))
        })?;
    let isolation = if blind_append {
        Isolation::BlindAppend
    } else {
        Isolation::ReadsData
    };
    let mut txn = Transaction::new(storage, read_version, operation, isolation)
        .with_commit_info(commit_info_map(commit_info)?);
    for (k, v) in commit_info_map(parameters)? {
        txn = txn.with_parameter(&k, v);
    }
    if let Some(files) = read_files {
        txn = txn.with_read_files(files.into_iter().collect());
    }
    if let Some((app, v)) = app_transaction {
        txn = txn.with_app_transaction(app, v);
    }
    if let Some(s) = &snapshot {
        txn = txn.for_table(&s.snapshot);
    }
    if enable_in_commit_timestamps {
        let previous = snapshot
            .as_ref()
            .and_then(|s| s.snapshot.in_commit_timestamp());
        txn = txn.with_in_commit_timestamps(previous, true);
    }
    txn.add_actions(parsed);
    block_on(py, async move { txn.commit().await })
}

/// MERGE of `source` into the table whose loaded version is `snapshot`: `clauses` is the
/// JSON list of `deltalog_core::write::merge::MergeClause`. Returns the metrics, with
/// `version` None when nothing changed.
#[pyfunction]
#[pyo3(signature = (snapshot, source, predicate, source_alias, target_alias, clauses, app_transaction=None, commit_info=None, target_file_size=None))]
#[allow(clippy::too_many_arguments)]
fn merge(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    source: arrow::pyarrow::PyArrowType<arrow::ffi_stream::RecordBatchStreamReader>,
    predicate: String,
    source_alias: String,
    target_alias: String,
    clauses: &str,
    app_transaction: Option<(String, i64)>,
    commit_info: Option<&str>,
    target_file_size: Option<u64>,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::write::merge::{merge, MergeClause, MergeSpec};
    let clauses: Vec<MergeClause> = serde_json::from_str(clauses).map_err(|e| {
        pyo3::exceptions::PyValueError::new_err(format!("malformed MERGE clauses: {e}"))
    })?;
    let reader = source.0;
    let source_schema = reader.schema();
    let batches = py
        .detach(|| reader.collect::<Result<Vec<_>, _>>())
        .map_err(|e| to_py_err(py, DeltaError::from(e)))?;
    let spec = MergeSpec {
        source: batches,
        source_schema,
        predicate,
        source_alias,
        target_alias,
        clauses,
        target_file_size,
    };
    let info = commit_info_map(commit_info)?;
    let snapshot = snapshot.snapshot.clone();
    let m = block_on(py, async move {
        merge(&snapshot, spec, info, app_transaction).await
    })?;
    let out = PyDict::new(py);
    out.set_item("version", m.version)?;
    out.set_item("num_source_rows", m.num_source_rows)?;
    out.set_item("num_target_rows_inserted", m.num_target_rows_inserted)?;
    out.set_item("num_target_rows_updated", m.num_target_rows_updated)?;
    out.set_item("num_target_rows_deleted", m.num_target_rows_deleted)?;
    out.set_item("num_target_rows_copied", m.num_target_rows_copied)?;
    out.set_item("num_target_files_scanned", m.num_target_files_scanned)?;
    out.set_item("num_target_files_added", m.num_target_files_added)?;
    out.set_item("num_target_files_removed", m.num_target_files_removed)?;
    out.set_item("num_deletion_vectors_added", m.num_deletion_vectors_added)?;
    out.set_item("num_added_change_files", m.num_added_change_files)?;
    Ok(out.unbind())
}

/// The actions that restore the content of `target` on top of `current` (the latest version):
/// `(actions as JSON texts, files restored, files removed)`.
#[pyfunction]
fn restore_actions(
    py: Python<'_>,
    current: PyRef<'_, RawSnapshot>,
    target: PyRef<'_, RawSnapshot>,
) -> PyResult<(Vec<String>, u64, u64)> {
    let (actions, restored, removed) =
        deltalog_core::write::restore::restore_actions(&current.snapshot, &target.snapshot)
            .map_err(|e| to_py_err(py, e))?;
    Ok((
        actions.iter().map(|a| a.to_string()).collect(),
        restored,
        removed,
    ))
}

/// `remove` actions (JSON texts) for active files of `snapshot` (URI-decoded paths).
#[pyfunction]
fn remove_actions(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    paths: Vec<String>,
) -> PyResult<Vec<String>> {
    let wanted: std::collections::HashSet<String> = paths.iter().cloned().collect();
    let now = chrono_now_ms();
    let found = deltalog_core::write::dml::file_actions(&snapshot.snapshot, &wanted, now)
        .map_err(|e| to_py_err(py, e))?;
    paths
        .iter()
        .map(|p| {
            found
                .get(p)
                .map(|(_, remove)| remove.to_string())
                .ok_or_else(|| {
                    to_py_err(
                        py,
                        DeltaError::InvalidArgument(format!("{p} is not an active file")),
                    )
                })
        })
        .collect()
}

/// ALTER TABLE ADD COLUMNS: the schema string and configuration of `snapshot`'s table with
/// the fields of `columns` (a pyarrow schema) added.
#[pyfunction]
fn add_columns(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    columns: arrow::pyarrow::PyArrowType<arrow::datatypes::Schema>,
) -> PyResult<(String, std::collections::BTreeMap<String, String>)> {
    deltalog_core::write::table::add_columns(&snapshot.snapshot, &columns.0)
        .map_err(|e| to_py_err(py, e))
}

fn chrono_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How many rows of `snapshot` violate the boolean SQL expression `sql` (false or unknown).
#[pyfunction]
fn count_violations(py: Python<'_>, snapshot: PyRef<'_, RawSnapshot>, sql: &str) -> PyResult<u64> {
    let snapshot = snapshot.snapshot.clone();
    let sql = sql.to_string();
    block_on(py, async move {
        deltalog_core::write::constraints::count_violations(&snapshot, &sql).await
    })
}

/// Whether `sql` parses as a SQL expression deltalog evaluates; the error names what is wrong.
#[pyfunction]
fn parse_expression(py: Python<'_>, sql: &str) -> PyResult<String> {
    let expr = deltalog_core::expr::Expr::parse(sql).map_err(|e| to_py_err(py, e))?;
    serde_json::to_string(&expr).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// Parses commit metadata given as a JSON object's text.
fn commit_info_map(text: Option<&str>) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    match text {
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => Ok(map),
            _ => Err(pyo3::exceptions::PyValueError::new_err(
                "commit metadata must be a JSON object",
            )),
        },
        None => Ok(serde_json::Map::new()),
    }
}

/// A SQL expression (`is_sql`) or the JSON form of an `Expr`.
fn expression(text: &str, is_sql: bool) -> Result<deltalog_core::expr::Expr, DeltaError> {
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

/// DELETE (`set` None) or UPDATE of the table whose latest version is `snapshot`, for the
/// rows matching `predicate_sql` (SQL text) or `predicate_json` (a filter predicate's JSON);
/// all rows when both are None. `set` holds `(column, value, is_sql)`: a SQL expression, or
/// an expression's JSON. Returns the metrics, with `version` None when nothing changed.
#[pyfunction]
#[pyo3(signature = (snapshot, predicate_sql=None, predicate_json=None, set=None, app_transaction=None, commit_info=None, predicate_text=None, set_text=None, target_file_size=None))]
#[allow(clippy::too_many_arguments)]
fn dml(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    predicate_sql: Option<&str>,
    predicate_json: Option<&str>,
    set: Option<Vec<(String, String, bool)>>,
    app_transaction: Option<(String, i64)>,
    commit_info: Option<&str>,
    predicate_text: Option<String>,
    set_text: Option<Vec<(String, String)>>,
    target_file_size: Option<u64>,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::expr::Expr;
    use deltalog_core::write::dml::{execute, Change, DmlOptions};
    let build = || -> Result<(Option<Expr>, Change), DeltaError> {
        let predicate = match (predicate_sql, predicate_json) {
            (Some(sql), _) => Some(Expr::parse(sql)?),
            (None, Some(json)) => Some(Expr::from(&Predicate::from_json(json)?)),
            (None, None) => None,
        };
        let change = match set {
            None => Change::Delete,
            Some(set) => Change::Update(
                set.into_iter()
                    .map(|(c, v, sql)| Ok((c, expression(&v, sql)?)))
                    .collect::<Result<_, DeltaError>>()?,
            ),
        };
        Ok((predicate, change))
    };
    let (predicate, change) = build().map_err(|e| to_py_err(py, e))?;
    let options = DmlOptions {
        commit_info: commit_info_map(commit_info)?,
        app_transaction,
        predicate_text: predicate_text
            .or_else(|| predicate_sql.map(str::to_string))
            .or_else(|| predicate_json.map(str::to_string)),
        set_text,
        target_file_size,
    };
    let snapshot = snapshot.snapshot.clone();
    let metrics = block_on(py, async move {
        execute(&snapshot, predicate.as_ref(), change, options).await
    })?;
    let out = PyDict::new(py);
    out.set_item("version", metrics.version)?;
    out.set_item("num_deleted_rows", metrics.num_deleted_rows)?;
    out.set_item("num_updated_rows", metrics.num_updated_rows)?;
    out.set_item("num_copied_rows", metrics.num_copied_rows)?;
    out.set_item("num_removed_files", metrics.num_removed_files)?;
    out.set_item("num_added_files", metrics.num_added_files)?;
    out.set_item("num_added_change_files", metrics.num_added_change_files)?;
    out.set_item(
        "num_deletion_vectors_added",
        metrics.num_deletion_vectors_added,
    )?;
    out.set_item("num_files_scanned", metrics.num_files_scanned)?;
    Ok(out.unbind())
}

/// Writes a checkpoint of `snapshot`'s version (`kind`: classic, v2, v2-parquet, v2-json;
/// None follows `delta.checkpointPolicy`); returns what was written.
#[pyfunction]
#[pyo3(signature = (snapshot, kind=None, sidecars=None, now_ms=None, classic_copy=true))]
fn create_checkpoint(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    kind: Option<&str>,
    sidecars: Option<usize>,
    now_ms: Option<i64>,
    classic_copy: bool,
) -> PyResult<Py<PyDict>> {
    use deltalog_core::maintenance::checkpoint::{
        write_checkpoint, CheckpointKind, CheckpointOptions,
    };
    let kind = kind
        .map(CheckpointKind::parse)
        .transpose()
        .map_err(|e| to_py_err(py, e))?;
    let options = CheckpointOptions {
        kind,
        sidecars,
        now_ms: now_ms.unwrap_or_else(chrono_now_ms),
        classic_copy,
    };
    let snapshot = snapshot.snapshot.clone();
    let written = block_on(
        py,
        async move { write_checkpoint(&snapshot, &options).await },
    )?;
    let out = PyDict::new(py);
    out.set_item("version", written.version)?;
    out.set_item("files", written.files)?;
    out.set_item("num_actions", written.num_actions)?;
    out.set_item("num_add_files", written.num_add_files)?;
    out.set_item("size_in_bytes", written.size_in_bytes)?;
    Ok(out.unbind())
}

/// Writes the log compaction of commits `start..=end` of `snapshot`'s table (defaults: the
/// commits after the snapshot's checkpoint, up to its version); returns the file's path.
#[pyfunction]
#[pyo3(signature = (snapshot, start=None, end=None))]
fn compact_logs(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    start: Option<u64>,
    end: Option<u64>,
) -> PyResult<String> {
    let snapshot = snapshot.snapshot.clone();
    let version = snapshot.version();
    let start = start.unwrap_or_else(|| {
        snapshot
            .segment()
            .checkpoint
            .as_ref()
            .map_or(0, |c| c.version + 1)
    });
    let end = end.unwrap_or(version);
    if end > version {
        return Err(to_py_err(
            py,
            DeltaError::InvalidArgument(format!(
                "cannot compact up to version {end}: the loaded version is {version}"
            )),
        ));
    }
    block_on(py, async move {
        deltalog_core::maintenance::compaction::write_compaction(snapshot.storage(), start, end)
            .await
    })
}

/// Metadata cleanup of `snapshot`'s table as of `now_ms`; the `_delta_log` names deleted.
#[pyfunction]
#[pyo3(signature = (snapshot, now_ms=None))]
fn cleanup_metadata(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    now_ms: Option<i64>,
) -> PyResult<Vec<String>> {
    let snapshot = snapshot.snapshot.clone();
    let now = now_ms.unwrap_or_else(chrono_now_ms);
    block_on(py, async move {
        deltalog_core::maintenance::cleanup::cleanup_metadata(&snapshot, now).await
    })
}

/// The files VACUUM would delete from `snapshot`'s table: `(path, size)` pairs. `retention_ms`
/// None means `delta.deletedFileRetentionDuration`; a shorter one is refused unless
/// `enforce_retention` is false.
#[pyfunction]
#[pyo3(signature = (snapshot, retention_ms=None, enforce_retention=true, now_ms=None))]
fn vacuum_plan(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    retention_ms: Option<i64>,
    enforce_retention: bool,
    now_ms: Option<i64>,
) -> PyResult<Vec<(String, u64)>> {
    use deltalog_core::maintenance::intervals::{duration_ms, DELETED_FILE_RETENTION};
    let snapshot = snapshot.snapshot.clone();
    let configured = duration_ms(&snapshot.configuration(), DELETED_FILE_RETENTION)
        .map_err(|e| to_py_err(py, e))?;
    let retention = retention_ms.unwrap_or(configured);
    if retention < 0 {
        return Err(to_py_err(
            py,
            DeltaError::InvalidArgument("the retention cannot be negative".into()),
        ));
    }
    if enforce_retention && retention < configured {
        return Err(to_py_err(
            py,
            DeltaError::InvalidArgument(format!(
                "a retention of {} hours is shorter than the table's \
                 delta.deletedFileRetentionDuration ({} hours): concurrent readers and writers \
                 of older versions could lose files; pass enforce_retention_duration=False to \
                 vacuum anyway",
                retention / 3_600_000,
                configured / 3_600_000
            )),
        ));
    }
    let now = now_ms.unwrap_or_else(chrono_now_ms);
    let expired = block_on(py, async move {
        deltalog_core::maintenance::vacuum::expired_files(&snapshot, retention, now).await
    })?;
    Ok(expired.into_iter().map(|e| (e.path, e.size)).collect())
}

/// A table property of `snapshot` that holds an interval (`delta.deletedFileRetentionDuration`,
/// `delta.logRetentionDuration`), in milliseconds; its default when unset.
#[pyfunction]
fn duration_property_ms(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    key: &str,
) -> PyResult<i64> {
    use deltalog_core::maintenance::intervals::{
        duration_ms, CHECKPOINT_RETENTION, DELETED_FILE_RETENTION, LOG_RETENTION,
    };
    let property = [DELETED_FILE_RETENTION, LOG_RETENTION, CHECKPOINT_RETENTION]
        .into_iter()
        .find(|p| p.0 == key)
        .ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("{key} is not an interval property"))
        })?;
    duration_ms(&snapshot.snapshot.configuration(), property).map_err(|e| to_py_err(py, e))
}

/// Milliseconds of an interval table property's value (`interval 7 days`); a `ValueError`
/// saying why when it is not one (`maintenance::intervals`).
#[pyfunction]
fn interval_ms(text: &str) -> PyResult<i64> {
    deltalog_core::maintenance::intervals::parse_interval_ms(text)
        .map_err(pyo3::exceptions::PyValueError::new_err)
}

/// Deletes table-relative `paths` of `snapshot`'s table; returns how many were processed.
#[pyfunction]
fn delete_files(
    py: Python<'_>,
    snapshot: PyRef<'_, RawSnapshot>,
    paths: Vec<String>,
) -> PyResult<usize> {
    let snapshot = snapshot.snapshot.clone();
    block_on(py, async move {
        deltalog_core::maintenance::vacuum::delete_files(snapshot.storage(), &paths).await
    })
}

/// Checks `snapshot` against its version's `.crc` file: False when there is none.
#[pyfunction]
fn validate_checksum(py: Python<'_>, snapshot: PyRef<'_, RawSnapshot>) -> PyResult<bool> {
    let snapshot = snapshot.snapshot.clone();
    block_on(py, async move {
        deltalog_core::maintenance::version_checksum::validate(&snapshot).await
    })
}

/// The rows of a deletion vector as a RoaringTreemap; keys must fit in 63 bits.
fn treemap(rows: Vec<u64>) -> PyResult<roaring::RoaringTreemap> {
    if rows.iter().any(|r| r >> 63 != 0) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "deletion vector rows must be below 2**63 (spec: \"Deletion Vector Format\")",
        ));
    }
    Ok(rows.into_iter().collect())
}

/// Serializes row indexes as a deletion vector: magic number + portable 64-bit RoaringBitmap.
#[pyfunction]
fn dv_serialize(py: Python<'_>, rows: Vec<u64>) -> PyResult<Bound<'_, pyo3::types::PyBytes>> {
    let bitmap = treemap(rows)?;
    Ok(pyo3::types::PyBytes::new(
        py,
        &deletion_vector::serialize_bitmap(&bitmap),
    ))
}

/// The row indexes of a serialized deletion vector (either layout, checked).
#[pyfunction]
fn dv_deserialize(py: Python<'_>, data: &[u8]) -> PyResult<Vec<u64>> {
    deletion_vector::parse_bitmap(data, "<bytes>")
        .map(|b| b.iter().collect())
        .map_err(|e| to_py_err(py, e))
}

/// Decodes a serialized deletion vector and returns how many rows it deletes (no rows are
/// materialized; benchmarks compare this with other RoaringBitmap decoders).
#[pyfunction]
fn dv_cardinality(py: Python<'_>, data: &[u8]) -> PyResult<u64> {
    py.detach(|| deletion_vector::parse_bitmap(data, "<bytes>"))
        .map(|b| b.len())
        .map_err(|e| to_py_err(py, e))
}

/// A DV file holding one deletion vector at offset 1 (version byte, size, vector, CRC-32).
#[pyfunction]
fn dv_file(py: Python<'_>, rows: Vec<u64>) -> PyResult<Bound<'_, pyo3::types::PyBytes>> {
    let bitmap = treemap(rows)?;
    let (file, _) = deletion_vector::dv_file(std::slice::from_ref(&bitmap));
    Ok(pyo3::types::PyBytes::new(py, &file))
}

/// Z85-encodes bytes (padded with zeros to a multiple of four).
#[pyfunction]
fn z85_encode(data: &[u8]) -> String {
    deletion_vector::z85_encode(data)
}

/// Decodes Z85 text.
#[pyfunction]
fn z85_decode<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    deletion_vector::z85_decode(text)
        .map(|b| pyo3::types::PyBytes::new(py, &b))
        .map_err(pyo3::exceptions::PyValueError::new_err)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    warnings::install();
    m.add_class::<RawSnapshot>()?;
    m.add_class::<RawScan>()?;
    m.add_class::<RawBatchStream>()?;
    m.add_function(wrap_pyfunction!(json_checksum, m)?)?;
    m.add_function(wrap_pyfunction!(duration_property_ms, m)?)?;
    m.add_function(wrap_pyfunction!(interval_ms, m)?)?;
    m.add_function(wrap_pyfunction!(write_table, m)?)?;
    m.add_function(wrap_pyfunction!(dml, m)?)?;
    m.add_function(wrap_pyfunction!(write_files, m)?)?;
    m.add_function(wrap_pyfunction!(commit_actions, m)?)?;
    m.add_function(wrap_pyfunction!(count_violations, m)?)?;
    m.add_function(wrap_pyfunction!(restore_actions, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(remove_actions, m)?)?;
    m.add_function(wrap_pyfunction!(add_columns, m)?)?;
    m.add_function(wrap_pyfunction!(parse_expression, m)?)?;
    m.add_function(wrap_pyfunction!(dv_serialize, m)?)?;
    m.add_function(wrap_pyfunction!(dv_deserialize, m)?)?;
    m.add_function(wrap_pyfunction!(dv_cardinality, m)?)?;
    m.add_function(wrap_pyfunction!(dv_file, m)?)?;
    m.add_function(wrap_pyfunction!(z85_encode, m)?)?;
    m.add_function(wrap_pyfunction!(z85_decode, m)?)?;
    m.add_function(wrap_pyfunction!(create_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(compact_logs, m)?)?;
    m.add_function(wrap_pyfunction!(cleanup_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(vacuum_plan, m)?)?;
    m.add_function(wrap_pyfunction!(delete_files, m)?)?;
    m.add_function(wrap_pyfunction!(validate_checksum, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
