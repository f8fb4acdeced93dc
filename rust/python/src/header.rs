//! `RawHeader`: what a catalog caches of a table (its latest version's protocol and metadata,
//! `deltalog_core::header::TableHeader`), answering what a table is without opening it; and
//! the Python forms of a protocol and a metadata that `RawSnapshot` shares.

use std::collections::HashMap;

use arrow::pyarrow::ToPyArrow;
use deltalog_core::header::TableHeader;
use deltalog_core::model::{Metadata, Protocol};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py_err;
use crate::snapshot::open_storage;

/// `(min_reader_version, min_writer_version, reader_features, writer_features)`.
pub(crate) type ProtocolTuple = (i32, i32, Option<Vec<String>>, Option<Vec<String>>);

pub(crate) fn protocol_tuple(p: &Protocol) -> ProtocolTuple {
    (
        p.min_reader_version,
        p.min_writer_version,
        p.reader_features.clone(),
        p.writer_features.clone(),
    )
}

/// The metadata as a dict of its fields.
pub(crate) fn metadata_dict<'py>(py: Python<'py>, m: &Metadata) -> PyResult<Bound<'py, PyDict>> {
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

/// A table's protocol and metadata at one version, as its catalog cached them.
#[pyclass(frozen, module = "deltalog._native")]
pub(crate) struct RawHeader {
    pub(crate) header: TableHeader,
    /// The table root as a URI, as a snapshot of the table names it.
    table_uri: String,
}

#[pymethods]
impl RawHeader {
    /// The table at `uri` at `version`, from the bodies of a `protocol` and a `metaData`
    /// action as JSON.
    #[new]
    #[pyo3(signature = (uri, version, protocol, metadata, storage_options=None))]
    fn new(
        py: Python<'_>,
        uri: &str,
        version: u64,
        protocol: &str,
        metadata: &str,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let storage = open_storage(uri, storage_options).map_err(|e| to_py_err(py, e))?;
        let header =
            TableHeader::from_json(version, protocol, metadata).map_err(|e| to_py_err(py, e))?;
        Ok(RawHeader {
            header,
            table_uri: storage.url().to_string(),
        })
    }

    fn table_uri(&self) -> String {
        self.table_uri.clone()
    }

    fn version(&self) -> u64 {
        self.header.version
    }

    fn protocol(&self) -> ProtocolTuple {
        protocol_tuple(&self.header.protocol)
    }

    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        metadata_dict(py, &self.header.metadata)
    }

    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let schema = self.header.schema().map_err(|e| to_py_err(py, e))?;
        schema.as_ref().to_pyarrow(py)
    }

    fn physical_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let schema = self
            .header
            .physical_schema()
            .map_err(|e| to_py_err(py, e))?;
        schema.to_pyarrow(py)
    }

    fn column_mapping_mode(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.header
            .column_mapping_mode()
            .map(|m| m.as_str())
            .map_err(|e| to_py_err(py, e))
    }
}
