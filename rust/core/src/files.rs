//! The active files of a snapshot, as compact Arrow batches.
//!
//! Spec: "Add File and Remove File", "Per-file Statistics". Each [`FileBatch`] holds `add`
//! structs whose rows are all active logical files, without the `stats` JSON text, and the
//! statistics parsed from it row for row ([`crate::stats`]).

use arrow::array::{Array, StructArray};
use arrow::datatypes::Fields;

use crate::error::DeltaResult;
use crate::stats::StatsSchema;

/// Active files: `add` structs (every row valid) and their parsed statistics.
#[derive(Debug, Clone)]
pub struct FileBatch {
    /// The `add` structs, without the `stats` field.
    pub adds: StructArray,
    /// Parsed statistics, physical names ([`StatsSchema`]); one row per add.
    pub stats: StructArray,
}

impl FileBatch {
    /// Parses the statistics of `adds` (all rows active) and drops their JSON text.
    pub fn new(adds: StructArray, stats: &StatsSchema) -> DeltaResult<Self> {
        let parsed = stats.parse(adds.column_by_name("stats"), adds.len())?;
        Ok(FileBatch {
            adds: without_field(&adds, "stats"),
            stats: parsed,
        })
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.adds.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.adds.is_empty()
    }
}

/// `s` without its child `name` (zero-copy for the other children).
fn without_field(s: &StructArray, name: &str) -> StructArray {
    let (fields, columns): (Vec<_>, Vec<_>) = s
        .fields()
        .iter()
        .zip(s.columns())
        .filter(|(f, _)| f.name() != name)
        .map(|(f, c)| (f.clone(), c.clone()))
        .unzip();
    StructArray::try_new_with_length(Fields::from(fields), columns, s.nulls().cloned(), s.len())
        .unwrap_or_else(|_| s.clone())
}
