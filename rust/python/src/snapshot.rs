//! `RawSnapshot`: one loaded version of a table, and what Python asks of it (metadata, files,
//! history, changes, scans).

use std::collections::HashMap;

use arrow::array::RecordBatchIterator;
use arrow::pyarrow::{IntoPyArrow, ToPyArrow};
use arrow::record_batch::RecordBatchReader;
use deltalog_core::add_actions::{add_actions_table, file_paths};
use deltalog_core::error::DeltaError;
use deltalog_core::log::{timeline, version_changes};
use deltalog_core::predicate::Predicate;
use deltalog_core::scan::{Scan, ScanOptions};
use deltalog_core::{Snapshot, Storage};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::catalog::PyCatalogClient;
use crate::errors::to_py_err;
use crate::header::{metadata_dict, protocol_tuple, ProtocolTuple, RawHeader};
use crate::runtime::block_on;
use crate::scan::RawScan;

pub(crate) fn open_storage(
    uri: &str,
    storage_options: Option<HashMap<String, String>>,
) -> Result<Storage, DeltaError> {
    Storage::open(uri, &storage_options.unwrap_or_default())
}

pub(crate) fn to_version(version: Option<i64>) -> Result<Option<u64>, DeltaError> {
    version
        .map(|v| {
            u64::try_from(v).map_err(|_| {
                DeltaError::InvalidArgument(format!("a table version cannot be negative: {v}"))
            })
        })
        .transpose()
}

/// A [`version_changes::VersionChange`] as Python receives it (`commitInfo` as JSON).
type VersionChangeTuple = (
    u64,
    i64,
    Option<String>,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    bool,
    bool,
);

/// A loaded snapshot of a table.
#[pyclass(frozen, module = "deltalog._native")]
pub(crate) struct RawSnapshot {
    pub(crate) snapshot: Snapshot,
}

#[pymethods]
impl RawSnapshot {
    /// Opens `version` (latest when None) of the table at `uri`; of a catalog-managed table
    /// through `catalog_client` (a `deltalog.catalog.CatalogClient`), which the snapshot keeps
    /// for later versions and commits, starting from what the catalog cached of it (`header`)
    /// when that is the version opened (`Snapshot::try_new_from_header`). With `vouched`, the
    /// header is the state of a catalog that records what it ratified: the log must agree with
    /// it (`log::published::check_header`; a rewritten checkpoint is refused), where it
    /// otherwise only spares work.
    #[staticmethod]
    #[pyo3(signature = (uri, version=None, storage_options=None, catalog_client=None, header=None, vouched=false))]
    fn open(
        py: Python<'_>,
        uri: &str,
        version: Option<i64>,
        storage_options: Option<HashMap<String, String>>,
        catalog_client: Option<Py<PyAny>>,
        header: Option<PyRef<'_, RawHeader>>,
        vouched: bool,
    ) -> PyResult<Self> {
        let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
        let version = to_version(version).map_err(|e| to_py_err(py, e))?;
        let header = header.map(|h| h.header.clone());
        let snapshot = match catalog_client {
            Some(client) => {
                let client = PyCatalogClient::shared(py, client, &storage)?;
                block_on(py, async move {
                    let snapshot =
                        Snapshot::try_new_from_header(storage, version, client, header.as_ref())
                            .await?;
                    if let (true, Some(header)) = (vouched, &header) {
                        deltalog_core::log::published::check_header(&snapshot, header)?;
                    }
                    Ok(snapshot)
                })?
            }
            None => block_on(py, Snapshot::try_new(storage, version))?,
        };
        Ok(RawSnapshot { snapshot })
    }

    /// The latest version of the table at `uri` committed at or before `timestamp_ms`.
    #[staticmethod]
    /// A catalog-managed table's (`catalog_client`) unpublished commits count too.
    #[pyo3(signature = (uri, timestamp_ms, storage_options=None, catalog_client=None))]
    fn resolve_timestamp(
        py: Python<'_>,
        uri: &str,
        timestamp_ms: i64,
        storage_options: Option<HashMap<String, String>>,
        catalog_client: Option<Py<PyAny>>,
    ) -> PyResult<u64> {
        let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
        let client = catalog_client
            .map(|c| PyCatalogClient::shared(py, c, &storage))
            .transpose()?;
        block_on(py, async move {
            timeline::version_at_timestamp(&storage, client.as_ref(), timestamp_ms).await
        })
    }

    /// Opens another version of the same table, reusing its storage.
    fn load_version(&self, py: Python<'_>, version: Option<i64>) -> PyResult<Self> {
        let version = to_version(version).map_err(|e| to_py_err(py, e))?;
        let storage = self.snapshot.storage().clone();
        let snapshot = match self.snapshot.catalog() {
            Some(client) => block_on(
                py,
                Snapshot::try_new_with_catalog_client(storage, version, client.clone()),
            )?,
            None => block_on(py, Snapshot::try_new(storage, version))?,
        };
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

    /// After this process committed `version`: the latest version, except that a
    /// catalog-managed table whose log holds every commit up to `version` moves to it without
    /// asking its catalog again (`Snapshot::advance_published`).
    fn advance_published(&self, py: Python<'_>, version: i64) -> PyResult<Self> {
        let version = to_version(Some(version))
            .map_err(|e| to_py_err(py, e))?
            .unwrap_or_default();
        let snapshot = self.snapshot.clone();
        let snapshot = block_on(py, async move { snapshot.advance_published(version).await })?;
        Ok(RawSnapshot { snapshot })
    }

    /// Whether this snapshot was opened through a catalog (its commits go through it).
    fn has_catalog(&self) -> bool {
        self.snapshot.catalog().is_some()
    }

    /// The latest version committed at or before `timestamp_ms`.
    fn version_at_timestamp(&self, py: Python<'_>, timestamp_ms: i64) -> PyResult<u64> {
        let snapshot = self.snapshot.clone();
        block_on(py, async move {
            timeline::version_at_timestamp(snapshot.storage(), snapshot.catalog(), timestamp_ms)
                .await
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

    /// What each version changed, newest first: `(version, timestamp_ms, commitInfo JSON or
    /// None, files_added, bytes_added, files_removed, bytes_removed, removed_without_size,
    /// deletion_vectors_added, metadata_changed, protocol_changed)`, for the versions and
    /// timestamps of `history` (`deltalog_core::log::version_changes`).
    #[pyo3(signature = (limit=None))]
    fn version_changes(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
    ) -> PyResult<Vec<VersionChangeTuple>> {
        let snapshot = self.snapshot.clone();
        let changes = block_on(py, async move {
            version_changes::version_changes(&snapshot, limit).await
        })?;
        Ok(changes
            .into_iter()
            .map(|c| {
                (
                    c.version,
                    c.timestamp,
                    c.commit_info.map(|ci| ci.to_string()),
                    c.files_added,
                    c.bytes_added,
                    c.files_removed,
                    c.bytes_removed,
                    c.removed_without_size,
                    c.deletion_vectors_added,
                    c.metadata_changed,
                    c.protocol_changed,
                )
            })
            .collect())
    }

    /// The version of the checkpoint this snapshot's log segment starts from; None when it was
    /// replayed from commits only.
    fn checkpoint_version(&self) -> Option<u64> {
        self.snapshot
            .segment()
            .checkpoint
            .as_ref()
            .map(|c| c.version)
    }

    /// The table root URI.
    fn table_uri(&self) -> String {
        self.snapshot.storage().url().to_string()
    }

    fn version(&self) -> u64 {
        self.snapshot.version()
    }

    /// `(min_reader_version, min_writer_version, reader_features, writer_features)`.
    fn protocol(&self) -> ProtocolTuple {
        protocol_tuple(self.snapshot.protocol())
    }

    /// The metadata as a dict of its fields.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.snapshot.metadata().map_err(|e| to_py_err(py, e))?;
        metadata_dict(py, m)
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

    /// The clustering columns (logical names for top-level columns), empty when the table is
    /// not clustered.
    fn clustering_columns(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        deltalog_core::layout::clustering::logical_clustering_columns(&self.snapshot)
            .map_err(|e| to_py_err(py, e))
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
