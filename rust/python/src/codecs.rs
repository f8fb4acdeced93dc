//! Codecs exposed for tests and tools: deletion vectors (RoaringBitmap, DV files, Z85) and
//! the `_last_checkpoint` JSON checksum.

use crate::errors::to_py_err;

use deltalog_core::deletion_vector;
use pyo3::prelude::*;

/// The JSON checksum of a `_last_checkpoint` document (spec: "JSON checksum").
#[pyfunction]
pub(crate) fn json_checksum(text: &str) -> PyResult<String> {
    deltalog_core::log::last_checkpoint::json_checksum(text)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.0))
}

/// The rows of a deletion vector as a RoaringTreemap; keys must fit in 63 bits.
pub(crate) fn treemap(rows: Vec<u64>) -> PyResult<roaring::RoaringTreemap> {
    if rows.iter().any(|r| r >> 63 != 0) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "deletion vector rows must be below 2**63 (spec: \"Deletion Vector Format\")",
        ));
    }
    Ok(rows.into_iter().collect())
}

/// Serializes row indexes as a deletion vector: magic number + portable 64-bit RoaringBitmap.
#[pyfunction]
pub(crate) fn dv_serialize(
    py: Python<'_>,
    rows: Vec<u64>,
) -> PyResult<Bound<'_, pyo3::types::PyBytes>> {
    let bitmap = treemap(rows)?;
    Ok(pyo3::types::PyBytes::new(
        py,
        &deletion_vector::serialize_bitmap(&bitmap),
    ))
}

/// The row indexes of a serialized deletion vector (either layout, checked).
#[pyfunction]
pub(crate) fn dv_deserialize(py: Python<'_>, data: &[u8]) -> PyResult<Vec<u64>> {
    deletion_vector::parse_bitmap(data, "<bytes>")
        .map(|b| b.iter().collect())
        .map_err(|e| to_py_err(py, e))
}

/// Decodes a serialized deletion vector and returns how many rows it deletes (no rows are
/// materialized; benchmarks compare this with other RoaringBitmap decoders).
#[pyfunction]
pub(crate) fn dv_cardinality(py: Python<'_>, data: &[u8]) -> PyResult<u64> {
    py.detach(|| deletion_vector::parse_bitmap(data, "<bytes>"))
        .map(|b| b.len())
        .map_err(|e| to_py_err(py, e))
}

/// A DV file holding one deletion vector at offset 1 (version byte, size, vector, CRC-32).
#[pyfunction]
pub(crate) fn dv_file(py: Python<'_>, rows: Vec<u64>) -> PyResult<Bound<'_, pyo3::types::PyBytes>> {
    let bitmap = treemap(rows)?;
    let (file, _) = deletion_vector::dv_file(std::slice::from_ref(&bitmap));
    Ok(pyo3::types::PyBytes::new(py, &file))
}

/// Z85-encodes bytes (padded with zeros to a multiple of four).
#[pyfunction]
pub(crate) fn z85_encode(data: &[u8]) -> String {
    deletion_vector::z85_encode(data)
}

/// Decodes Z85 text.
#[pyfunction]
pub(crate) fn z85_decode<'py>(
    py: Python<'py>,
    text: &str,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    deletion_vector::z85_decode(text)
        .map(|b| pyo3::types::PyBytes::new(py, &b))
        .map_err(pyo3::exceptions::PyValueError::new_err)
}
