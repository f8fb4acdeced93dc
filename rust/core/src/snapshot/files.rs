//! The active files of a snapshot, as compact Arrow batches.
//!
//! Spec: "Add File and Remove File", "Per-file Statistics", "Checkpoint Schema". Each
//! [`FileBatch`] holds `add` structs whose rows are all active logical files, without the
//! `stats` JSON text, and the statistics parsed from it row for row ([`crate::stats`]), or
//! taken from a checkpoint's `stats_parsed` structs where the checkpoint has no text.
//!
//! Every commit replayed onto a snapshot brings a batch of its own, usually of a file or two.
//! [`coalesce`] joins runs of such small batches, so that a table written by many small
//! appends keeps a few batches instead of one per commit: the work per batch (replay's
//! checks, checksums, scans, checkpoints) stays proportional to the files, not the commits.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StructArray};
use arrow::datatypes::Fields;

use crate::error::DeltaResult;
use crate::log::actions::STATS_PARSED;
use crate::log::replay::Selected;
use crate::nulls::{compact_struct_children, concat_compact, filter_compact};
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

/// A batch of fewer files than this is small: [`coalesce`] joins it with its small neighbours.
/// (A checkpoint's batches are larger, and left alone.)
const SMALL_BATCH: usize = 256;

/// [`coalesce`] joins a run of at least this many small batches (so that a run is copied once
/// per this many commits, not at every one).
const MIN_RUN: usize = 8;

/// A joined batch holds at most this many files.
const MAX_JOINED: usize = 4096;

/// `batches` with each run of at least [`MIN_RUN`] adjacent small batches (of one type, at most
/// [`MAX_JOINED`] files together) joined into one batch; the order of the files is kept. A run
/// that cannot be joined stays as it is. Each file is copied a bounded number of times: a
/// joined batch of [`SMALL_BATCH`] files or more is not small any more.
pub fn coalesce(batches: Vec<FileBatch>) -> Vec<FileBatch> {
    if batches.iter().filter(|b| b.len() < SMALL_BATCH).count() < MIN_RUN {
        return batches;
    }
    let mut out: Vec<FileBatch> = Vec::with_capacity(batches.len());
    let mut run: Vec<FileBatch> = Vec::new();
    let mut run_files = 0;
    let flush = |run: &mut Vec<FileBatch>, out: &mut Vec<FileBatch>| {
        if run.len() >= MIN_RUN {
            if let Ok(joined) = join(run) {
                out.push(joined);
                run.clear();
                return;
            }
        }
        out.append(run);
    };
    for batch in batches {
        let small = batch.len() < SMALL_BATCH;
        let fits = small
            && run_files + batch.len() <= MAX_JOINED
            && run.first().is_none_or(|first| {
                first.adds.data_type() == batch.adds.data_type()
                    && first.stats.data_type() == batch.stats.data_type()
            });
        if !fits {
            flush(&mut run, &mut out);
            run_files = 0;
        }
        if small {
            run_files += batch.len();
            run.push(batch);
        } else {
            out.push(batch);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// The files of `run` as one batch.
fn join(run: &[FileBatch]) -> Result<FileBatch, arrow::error::ArrowError> {
    let column = |pick: fn(&FileBatch) -> &StructArray| {
        let parts: Vec<ArrayRef> = run
            .iter()
            .map(|b| Arc::new(pick(b).clone()) as ArrayRef)
            .collect();
        concat_compact(&parts)?
            .as_struct_opt()
            .cloned()
            .ok_or_else(|| arrow::error::ArrowError::CastError("not a struct".into()))
    };
    Ok(FileBatch {
        adds: column(|b| &b.adds)?,
        stats: column(|b| &b.stats)?,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field};

    fn batch(first: i64, n: usize) -> FileBatch {
        let paths: Vec<String> = (first..first + n as i64).map(|i| format!("f{i}")).collect();
        let adds = StructArray::from(vec![(
            Arc::new(Field::new("path", DataType::Utf8, false)),
            Arc::new(StringArray::from(paths)) as ArrayRef,
        )]);
        let stats = StructArray::from(vec![(
            Arc::new(Field::new("numRecords", DataType::Int64, true)),
            Arc::new(Int64Array::from(
                (first..first + n as i64).collect::<Vec<_>>(),
            )) as ArrayRef,
        )]);
        FileBatch { adds, stats }
    }

    fn paths(batches: &[FileBatch]) -> Vec<String> {
        batches
            .iter()
            .flat_map(|b| {
                let p = b.adds.column(0).as_string::<i32>();
                (0..p.len())
                    .map(|i| p.value(i).to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn runs_of_small_batches_are_joined_in_order() {
        // 20 one-file batches, a large one, then 3 small ones (too few to join).
        let mut batches: Vec<FileBatch> = (0..20).map(|i| batch(i, 1)).collect();
        batches.push(batch(100, SMALL_BATCH));
        batches.extend((0..3).map(|i| batch(10_000 + i, 2)));
        let before = paths(&batches);
        let after = coalesce(batches);
        assert_eq!(
            after.iter().map(FileBatch::len).collect::<Vec<_>>(),
            vec![20, SMALL_BATCH, 2, 2, 2]
        );
        assert_eq!(paths(&after), before);
        let stats = after[0]
            .stats
            .column(0)
            .as_primitive::<arrow::datatypes::Int64Type>();
        assert_eq!(stats.values().to_vec(), (0..20).collect::<Vec<i64>>());
        // A joined batch holds MAX_JOINED files at most: 40 batches of 200 give two of 4,000.
        let many: Vec<FileBatch> = (0..40).map(|i| batch(i * 200, 200)).collect();
        let before = paths(&many);
        let joined = coalesce(many);
        assert_eq!(
            joined.iter().map(FileBatch::len).collect::<Vec<_>>(),
            vec![4000, 4000]
        );
        assert_eq!(paths(&joined), before);
        // Few small batches: left alone.
        let few: Vec<FileBatch> = (0..MIN_RUN as i64 - 1).map(|i| batch(i, 1)).collect();
        assert_eq!(coalesce(few).len(), MIN_RUN - 1);
    }

    #[test]
    fn batches_of_other_types_are_not_joined() {
        let mut batches: Vec<FileBatch> = (0..10).map(|i| batch(i, 1)).collect();
        let mut other = batch(50, 1);
        other.stats = StructArray::from(vec![(
            Arc::new(Field::new("numRecords", DataType::Int32, true)),
            Arc::new(arrow::array::Int32Array::from(vec![1])) as ArrayRef,
        )]);
        batches.insert(5, other);
        let before = paths(&batches);
        let after = coalesce(batches);
        // Runs of 5 and 5 around the odd one: each too short to join.
        assert_eq!(after.len(), 11);
        assert_eq!(paths(&after), before);
        let mut batches: Vec<FileBatch> = (0..30).map(|i| batch(i, 1)).collect();
        let mut other = batch(50, 1);
        other.stats = after[5].stats.clone();
        batches.insert(15, other);
        let after = coalesce(batches);
        assert_eq!(
            after.iter().map(FileBatch::len).collect::<Vec<_>>(),
            vec![15, 1, 15]
        );
    }
}
