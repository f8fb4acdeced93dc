//! The active files of a snapshot, as compact Arrow batches.
//!
//! Spec: "Add File and Remove File", "Per-file Statistics", "Checkpoint Schema". Each
//! [`FileBatch`] holds `add` structs whose rows are all active logical files, without the
//! `stats` JSON text, and the statistics parsed from it row for row ([`crate::stats`]), or
//! taken from a checkpoint's `stats_parsed` structs where the checkpoint has no text.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StructArray};
use arrow::datatypes::Fields;

use crate::error::DeltaResult;
use crate::log::actions::STATS_PARSED;
use crate::log::replay::Selected;
use crate::nulls::{compact_struct_children, filter_compact};
use crate::stats::parse::StatsSchema;

/// Active files: `add` structs (every row valid) and their parsed statistics.
#[derive(Debug, Clone)]
pub struct FileBatch {
    /// The `add` structs, without the `stats` field.
    pub adds: StructArray,
    /// Parsed statistics, physical names ([`StatsSchema`]); one row per add.
    pub stats: StructArray,
}

impl FileBatch {
    /// Keeps the selected rows of `adds` (compacted, without the `stats` field) and their
    /// parsed statistics. The JSON text is read in place and never copied.
    pub fn new(adds: Selected, stats: &StatsSchema) -> DeltaResult<Self> {
        // Selected rows, compacted (all-null columns are not copied, see `crate::nulls`).
        let keep = |s: &StructArray| -> DeltaResult<StructArray> {
            Ok(match &adds.mask {
                Some(mask) => {
                    let array: ArrayRef = Arc::new(s.clone());
                    filter_compact(&array, mask, mask.true_count())?
                        .as_struct()
                        .clone()
                }
                None => compact_struct_children(s),
            })
        };
        // Columns null in every row (deletion vectors, row tracking, statistics of partition
        // columns, ...) end up holding no buffers of their own.
        let stats = match (&adds.stats, adds.array.column_by_name(STATS_PARSED)) {
            // Parsed while the commit was decoded, aligned with its rows.
            (Some(parsed), _) => keep(parsed)?,
            // A checkpoint that keeps statistics only as structs ("Checkpoint Schema"); read
            // as the physical statistics type.
            (None, Some(parsed)) if parsed.data_type() == &stats.physical_type() => {
                compact_struct_children(&keep(parsed.as_struct())?)
            }
            _ => compact_struct_children(
                &stats.parse(adds.array.column_by_name("stats"), adds.mask.as_ref())?,
            ),
        };
        let adds = keep(&without_field(
            &without_field(&adds.array, "stats"),
            STATS_PARSED,
        ))?;
        Ok(FileBatch { adds, stats })
    }

    /// The rows `mask` selects (`selected` of them), adds and statistics alike.
    pub fn filter(&self, mask: &BooleanArray, selected: usize) -> DeltaResult<Self> {
        let keep = |s: &StructArray| -> DeltaResult<StructArray> {
            let array: ArrayRef = Arc::new(s.clone());
            Ok(filter_compact(&array, mask, selected)?.as_struct().clone())
        };
        Ok(FileBatch {
            adds: keep(&self.adds)?,
            stats: keep(&self.stats)?,
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
pub fn without_field(s: &StructArray, name: &str) -> StructArray {
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
