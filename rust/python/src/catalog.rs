//! Catalog-managed tables: the ratified commits a Python catalog client returned, as the
//! core's [`CatalogCommits`].

use std::sync::Arc;

use bytes::Bytes;
use deltalog_core::error::{DeltaError, DeltaResult, ForeignError};
use deltalog_core::log::catalog::{
    CatalogClient, CatalogCommits, CommitOutcome, Maintenance, Proposal, RatifiedCommit,
    RatifiedSource, StateChanges, VerifyingClient,
};
use futures::future::BoxFuture;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::to_py_err;
use crate::runtime::block_on;
use crate::snapshot::open_storage;

/// One ratified commit as Python passes it: `(version, staged path or None, inline content or
/// None, timestamp in ms or None, SHA-256 of the content or None)`.
pub(crate) type PyRatifiedCommit = (
    i64,
    Option<String>,
    Option<Vec<u8>>,
    Option<i64>,
    Option<String>,
);

/// The catalog's answer as Python passes it: `(latest_version, commits, published)`, where
/// `published` maps published versions to the SHA-256 the catalog recorded (None: it records
/// none).
pub(crate) type PyCatalogCommits = (
    i64,
    Vec<PyRatifiedCommit>,
    Option<std::collections::BTreeMap<i64, String>>,
);

fn version(v: i64) -> Result<u64, DeltaError> {
    u64::try_from(v).map_err(|_| {
        DeltaError::InvalidArgument(format!(
            "a ratified commit's version cannot be negative: {v}"
        ))
    })
}

/// Converts the catalog's answer; a commit must be either staged or inline.
pub(crate) fn catalog_commits(answer: PyCatalogCommits) -> Result<CatalogCommits, DeltaError> {
    let (latest, commits, published) = answer;
    let commits = commits
        .into_iter()
        .map(|(v, path, content, timestamp, sha256)| {
            let source = match (path, content) {
                (Some(path), None) => RatifiedSource::Staged(path),
                (None, Some(content)) => RatifiedSource::Inline(Bytes::from(content)),
                _ => {
                    return Err(DeltaError::InvalidArgument(format!(
                        "ratified commit {v} must have either a staged path or inline content"
                    )))
                }
            };
            Ok(RatifiedCommit {
                version: version(v)?,
                source,
                timestamp,
                sha256,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let published = published
        .map(|digests| {
            digests
                .into_iter()
                .map(|(v, digest)| Ok((version(v)?, digest)))
                .collect::<Result<_, DeltaError>>()
        })
        .transpose()?;
    Ok(CatalogCommits {
        commits,
        latest_version: version(latest)?,
        published,
    })
}

/// A Python catalog client (`deltalog.catalog.CatalogClient`) as the core's
/// [`CatalogClient`]: each call runs on a blocking thread that takes the GIL.
#[derive(Debug)]
pub(crate) struct PyCatalogClient {
    client: Arc<Py<PyAny>>,
    table: String,
    max_inline: usize,
    /// Whether the client has maintenance policies (an `allow_maintenance` method).
    has_policy: bool,
    /// Whether the client answers `published_digests` (the digests of published versions).
    has_digests: bool,
}

/// What a client's `commit` answers for a proposal it ratifies later, in a transaction over
/// several tables.
const DEFERRED: &str = "deferred";

impl PyCatalogClient {
    /// Wraps `client` for the table at `table`; its optional `max_inline_commit_bytes`
    /// attribute says how large a commit it takes inline (0, the default: staged only).
    pub(crate) fn new(py: Python<'_>, client: Py<PyAny>, table: String) -> PyResult<Self> {
        let max_inline = match client.getattr(py, "max_inline_commit_bytes") {
            Ok(value) if !value.is_none(py) => value.extract::<usize>(py)?,
            _ => 0,
        };
        let has_policy = client.bind(py).hasattr("allow_maintenance")?;
        let has_digests = client.bind(py).hasattr("published_digests")?;
        Ok(PyCatalogClient {
            client: Arc::new(client),
            table,
            max_inline,
            has_policy,
            has_digests,
        })
    }

    /// [`PyCatalogClient::new`] for the table at `storage`, as the core takes a client.
    pub(crate) fn shared(
        py: Python<'_>,
        client: Py<PyAny>,
        storage: &deltalog_core::storage::Storage,
    ) -> PyResult<Arc<dyn CatalogClient>> {
        let inner: Arc<dyn CatalogClient> =
            Arc::new(Self::new(py, client, storage.url().to_string())?);
        // Whatever the client answers is checked against the content the catalog ratified.
        Ok(VerifyingClient::wrap(inner, storage.clone()))
    }

    /// Runs `call` with the GIL on a blocking thread; a Python exception becomes a
    /// [`DeltaError::CatalogRaised`] naming what was called and carrying the exception.
    fn call<T, F>(&self, what: &'static str, call: F) -> BoxFuture<'_, DeltaResult<T>>
    where
        T: Send + 'static,
        F: FnOnce(Python<'_>, &Py<PyAny>) -> Result<T, CallError> + Send + 'static,
    {
        let client = self.client.clone();
        let table = self.table.clone();
        Box::pin(async move {
            let table_for_error = table.clone();
            tokio::task::spawn_blocking(move || {
                Python::attach(|py| {
                    call(py, &client).map_err(|e| match e {
                        CallError::Delta(e) => e,
                        // Carried through the core as raised: `to_py_err` hands a
                        // `deltalog.exceptions.DeltaError` back unchanged, anything else as a
                        // `CatalogError` naming the call with the original as its cause.
                        CallError::Python(e) => DeltaError::CatalogRaised {
                            table,
                            reason: format!("{what} raised {}", describe(py, &e)),
                            error: ForeignError::new(e),
                        },
                    })
                })
            })
            .await
            .map_err(|e| DeltaError::Catalog {
                table: table_for_error,
                reason: format!("{what} did not complete: {e}"),
            })?
        })
    }
}

/// What went wrong in a call to the Python client.
pub(crate) enum CallError {
    Delta(DeltaError),
    Python(PyErr),
}

impl From<PyErr> for CallError {
    fn from(e: PyErr) -> Self {
        CallError::Python(e)
    }
}

impl From<DeltaError> for CallError {
    fn from(e: DeltaError) -> Self {
        CallError::Delta(e)
    }
}

fn describe(py: Python<'_>, e: &PyErr) -> String {
    let name = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an exception".into());
    format!("{name}: {}", e.value(py))
}

/// `RatifiedCommits` (a Python object with `native()`) as the core's value.
fn ratified(answer: &Bound<'_, PyAny>) -> Result<CatalogCommits, CallError> {
    let native = answer.call_method0("native").map_err(|_| {
        CallError::Delta(DeltaError::InvalidArgument(format!(
            "the catalog client must answer with deltalog.catalog.RatifiedCommits, not {}",
            answer
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        )))
    })?;
    Ok(catalog_commits(native.extract::<PyCatalogCommits>()?)?)
}

impl CatalogClient for PyCatalogClient {
    fn ratified_commits(
        &self,
        start: Option<u64>,
        end: Option<u64>,
    ) -> BoxFuture<'_, DeltaResult<CatalogCommits>> {
        let table = self.table.clone();
        self.call("get_ratified_commits", move |py, client| {
            let answer = client.call_method1(py, "get_ratified_commits", (start, end))?;
            let latest = answer
                .bind(py)
                .getattr("latest_version")
                .and_then(|l| l.extract::<i64>())
                .unwrap_or(0);
            if latest < 0 {
                // The catalog has not ratified any version: there is no table yet.
                return Err(CallError::Delta(DeltaError::TableNotFound {
                    path: table,
                    reason: "its catalog has not ratified any version of it".into(),
                }));
            }
            ratified(answer.bind(py))
        })
    }

    fn commit(
        &self,
        version: u64,
        proposal: Proposal,
        changes: StateChanges,
    ) -> BoxFuture<'_, DeltaResult<CommitOutcome>> {
        self.call("commit", move |py, client| {
            let kwargs = PyDict::new(py);
            match &proposal {
                Proposal::Staged(name) => kwargs.set_item("path", name)?,
                Proposal::Inline(content) => {
                    kwargs.set_item("content", PyBytes::new(py, content))?
                }
            }
            // Only a commit that changes them passes them (most commits change neither).
            if let Some(protocol) = &changes.protocol {
                kwargs.set_item("protocol", protocol)?;
            }
            if let Some(metadata) = &changes.metadata {
                kwargs.set_item("metadata", metadata)?;
            }
            match client.call_method(py, "commit", (version,), Some(&kwargs)) {
                // A client taking part in a transaction over several tables answers
                // "deferred": it ratifies the proposal later, with the others.
                Ok(answer) if answer.bind(py).eq(DEFERRED).unwrap_or(false) => {
                    Ok(CommitOutcome::Deferred)
                }
                Ok(_) => Ok(CommitOutcome::Ratified),
                Err(e) => {
                    let conflict = py
                        .import("deltalog.exceptions")?
                        .getattr("CommitConflictError")?;
                    if e.is_instance(py, &conflict) {
                        let latest = e.value(py).getattr("ratified")?;
                        if latest.is_none() {
                            // A conflict without the winners: asked for them.
                            let answer = client.call_method1(
                                py,
                                "get_ratified_commits",
                                (Some(version), None::<u64>),
                            )?;
                            return Ok(CommitOutcome::Conflict(ratified(answer.bind(py))?));
                        }
                        Ok(CommitOutcome::Conflict(ratified(&latest)?))
                    } else {
                        Err(e.into())
                    }
                }
            }
        })
    }

    fn published(&self, version: u64) -> BoxFuture<'_, DeltaResult<()>> {
        self.call("published", move |py, client| {
            client.call_method1(py, "published", (version,))?;
            Ok(())
        })
    }

    fn published_digests(
        &self,
        start: u64,
        end: u64,
    ) -> BoxFuture<'_, DeltaResult<std::collections::BTreeMap<u64, String>>> {
        if !self.has_digests {
            return Box::pin(async { Ok(Default::default()) });
        }
        self.call("published_digests", move |py, client| {
            let answer = client.call_method1(py, "published_digests", (start, end))?;
            let digests: std::collections::BTreeMap<i64, String> = answer.extract(py)?;
            Ok(digests
                .into_iter()
                .map(|(v, digest)| Ok((version(v)?, digest)))
                .collect::<Result<_, DeltaError>>()?)
        })
    }

    fn max_inline_bytes(&self) -> usize {
        self.max_inline
    }

    fn allows(&self, operation: Maintenance, version: u64) -> BoxFuture<'_, DeltaResult<bool>> {
        if !self.has_policy {
            return Box::pin(async { Ok(true) });
        }
        self.call("allow_maintenance", move |py, client| {
            let answer =
                client.call_method1(py, "allow_maintenance", (operation.name(), version))?;
            Ok(answer.bind(py).is_truthy()?)
        })
    }
}

/// The directories directly under `uri` (a directory catalog's tables).
#[pyfunction]
#[pyo3(signature = (uri, storage_options=None))]
pub(crate) fn child_directories(
    py: Python<'_>,
    uri: &str,
    storage_options: Option<std::collections::HashMap<String, String>>,
) -> PyResult<Vec<String>> {
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    block_on(py, async move { storage.child_directories().await })
}

/// Deletes everything under `uri` (a dropped table's directory).
#[pyfunction]
#[pyo3(signature = (uri, storage_options=None))]
pub(crate) fn delete_tree(
    py: Python<'_>,
    uri: &str,
    storage_options: Option<std::collections::HashMap<String, String>>,
) -> PyResult<()> {
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    block_on(py, async move { storage.delete_all().await })
}

/// Publishes every commit the catalog (`catalog_client`) ratified for the table at `uri` up to
/// `version`, in order, and tells the catalog ("Publishing Commits").
#[pyfunction]
#[pyo3(signature = (uri, version, catalog_client, storage_options=None))]
pub(crate) fn publish(
    py: Python<'_>,
    uri: &str,
    version: u64,
    catalog_client: Py<PyAny>,
    storage_options: Option<std::collections::HashMap<String, String>>,
) -> PyResult<()> {
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    let client = PyCatalogClient::shared(py, catalog_client, &storage)?;
    block_on(py, async move {
        deltalog_core::commit::committer::publish(&storage, &client, version).await
    })
}

/// The bytes of the file `relative` under the `_delta_log/` of the table at `uri` (e.g.
/// `_staged_commits/<v>.<uuid>.json` or a published `<v>.json`), or `None` when it does not
/// exist. A catalog server reads a staged commit with it before ratifying it, and checks that a
/// version is published before it forgets it.
#[pyfunction]
#[pyo3(signature = (uri, relative, storage_options=None))]
pub(crate) fn read_log_file<'py>(
    py: Python<'py>,
    uri: &str,
    relative: &str,
    storage_options: Option<std::collections::HashMap<String, String>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    if relative.is_empty()
        || relative.starts_with('/')
        || relative.split('/').any(|p| p.is_empty() || p == "..")
    {
        return Err(to_py_err(
            py,
            DeltaError::InvalidArgument(format!(
                "not a path inside the table's _delta_log: {relative:?}"
            )),
        ));
    }
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    let path = storage.log_path(relative);
    let bytes = block_on(py, async move {
        match storage.get(&path).await {
            Ok(b) => Ok(Some(b)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(DeltaError::Storage(e)),
        }
    })?;
    Ok(bytes.map(|b| PyBytes::new(py, &b)))
}

/// The table version a `_delta_log` file name belongs to (a commit's, checksum's or
/// checkpoint's version; a compaction's last version), or `None` for any other name
/// (`deltalog_core::log::path::classify`).
#[pyfunction]
pub(crate) fn log_file_version(name: &str) -> Option<u64> {
    deltalog_core::log::path::classify(name).version()
}

/// Checks a commit proposed as `version` of the table at `uri` as deltalog's reader will read
/// it, before a catalog ratifies it (`deltalog_core::log::proposal`): the reader's decoding,
/// one action a line, no integer outside 64 bits, `commitInfo`'s in-commit timestamp and
/// `txnId`, paths inside the table and (with `check_files`) the files that exist. Returns what
/// the catalog decides on: `sha256`, `in_commit_timestamp`, `txn_id`, `commit_info_first`,
/// `protocol`, `metadata` (compact JSON), `domains` (`[(domain, configuration or None)]`),
/// `actions`, `files_checked`.
#[pyfunction]
#[pyo3(signature = (uri, version, content, storage_options=None, check_files=true))]
pub(crate) fn check_proposal<'py>(
    py: Python<'py>,
    uri: &str,
    version: u64,
    content: Vec<u8>,
    storage_options: Option<std::collections::HashMap<String, String>>,
    check_files: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    let report = block_on(py, async move {
        deltalog_core::log::proposal::check_proposal(&storage, version, &content, check_files).await
    })?;
    let out = PyDict::new(py);
    out.set_item("sha256", report.sha256)?;
    out.set_item("in_commit_timestamp", report.in_commit_timestamp)?;
    out.set_item("txn_id", report.txn_id)?;
    out.set_item("commit_info_first", report.commit_info_first)?;
    out.set_item("protocol", report.protocol)?;
    out.set_item("metadata", report.metadata)?;
    out.set_item("domains", report.domains)?;
    out.set_item("actions", report.actions)?;
    out.set_item("files_checked", report.files_checked)?;
    Ok(out)
}
