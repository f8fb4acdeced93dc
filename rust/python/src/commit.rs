//! Commits: actions committed as the next version (`commit_actions`) and the commit metadata
//! every operation carries; core: `deltalog_core::commit`.

use std::collections::HashMap;

use pyo3::prelude::*;

use crate::catalog::PyCatalogClient;
use crate::errors::to_py_err;
use crate::runtime::block_on;
use crate::snapshot::{open_storage, RawSnapshot};

/// Commits `actions` (JSON texts, one action each) to the table at `uri` as the version after
/// `read_version` (None: creating the table), under the conflict rules of
/// `deltalog_core::commit::transaction`: `blind_append` commutes with other writers;
/// `read_files` (URI-decoded paths) names the files the transaction read, when it read only
/// those. `catalog_client` ratifies version 0 of a new catalog-managed table. Returns the
/// version committed.
#[pyfunction]
#[pyo3(signature = (uri, read_version, operation, actions, parameters=None, blind_append=false, read_files=None, app_transaction=None, commit_info=None, storage_options=None, snapshot=None, enable_in_commit_timestamps=false, catalog_client=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn commit_actions(
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
    catalog_client: Option<Py<PyAny>>,
) -> PyResult<u64> {
    use deltalog_core::commit::transaction::{Isolation, Transaction};
    let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
    if catalog_client.is_some() && read_version.is_some() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "catalog_client creates a catalog-managed table (read_version None); an existing \
             table commits through its snapshot's catalog",
        ));
    }
    let catalog = catalog_client
        .map(|c| PyCatalogClient::shared(py, c, &storage))
        .transpose()?;
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
    if let Some(client) = catalog {
        // "Creating a catalog-managed table": version 0 is ratified by the catalog.
        txn = txn.with_catalog(client);
    }
    txn.add_actions(parsed);
    block_on(py, async move { txn.commit().await })
}

pub(crate) fn chrono_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Parses commit metadata given as a JSON object's text.
pub(crate) fn commit_info_map(
    text: Option<&str>,
) -> PyResult<serde_json::Map<String, serde_json::Value>> {
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
