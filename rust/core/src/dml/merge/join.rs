//! MERGE's match step: the merge condition split into the equality keys of the hash join and
//! the target-only conditions that prune files; the source hashed on its keys; the candidate
//! target files (pruned by those conditions and by the range of the source's keys), read a few
//! at a time; and, per batch of a target file, the (target row, source row) pairs that satisfy
//! the whole condition.
//!
//! Spec: as [`crate::dml::rewrite`]; "Writer Requirements for Row Tracking" (rows that move keep
//! their row IDs, so the files are read with them).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use arrow::compute::{cast_with_options, filter_record_batch, CastOptions};
use arrow::datatypes::{DataType, SchemaRef, UInt32Type};
use arrow::row::{RowConverter, SortField};
use futures::{Stream, StreamExt, TryStreamExt};

use crate::error::{DeltaError, DeltaResult};
use crate::expr::{eval, BinaryOp, Expr};
use crate::predicate::{CmpOp, Predicate};
use crate::scan::{self, FileTask, MetadataColumns, ReadSpec, RowTracking, Scan, ScanOptions};
use crate::snapshot::Snapshot;

use super::clauses::{bad, joined, literal_of, Names};
use super::Plan;

/// The merge condition, compiled against the joined columns and split.
pub(super) struct Condition {
    /// The whole condition, checked on each candidate pair.
    pub(super) expr: Expr,
    /// The equality conditions `target.k = source.k`: (target column, source column) indexes.
    pub(super) keys: Vec<(usize, usize)>,
    /// The conditions on target columns alone (unqualified names), for pruning files.
    pub(super) target_only: Vec<Expr>,
}

impl Condition {
    /// Compiles `predicate` and splits it; at least one equality key is required.
    pub(super) fn split(names: &Names, predicate: &str) -> DeltaResult<Condition> {
        let data_schema = &names.target;
        let condition = names.compile(predicate, true, true)?;
        let (ta, sa) = (
            format!("{}.", names.target_alias),
            format!("{}.", names.source_alias),
        );
        let column_index = |c: &str, prefix: &str, of: &SchemaRef| -> Option<usize> {
            let rest = c.strip_prefix(prefix)?;
            of.index_of(rest).ok()
        };
        let mut keys: Vec<(usize, usize)> = Vec::new();
        let mut target_only: Vec<Expr> = Vec::new();
        for part in condition.conjuncts() {
            if let Expr::Binary {
                op: BinaryOp::Cmp(CmpOp::Eq),
                left,
                right,
            } = part
            {
                if let (Expr::Column(l), Expr::Column(r)) = (left.as_ref(), right.as_ref()) {
                    let pair = match (
                        column_index(l, &ta, data_schema),
                        column_index(r, &sa, &names.source),
                        column_index(r, &ta, data_schema),
                        column_index(l, &sa, &names.source),
                    ) {
                        (Some(t), Some(s), _, _) | (_, _, Some(t), Some(s)) => Some((t, s)),
                        _ => None,
                    };
                    if let Some(p) = pair {
                        keys.push(p);
                        continue;
                    }
                }
            }
            if part.columns().iter().all(|c| c.starts_with(&ta)) {
                target_only.push(part.rename_columns(&|c| c[ta.len()..].to_string()));
            }
        }
        if keys.is_empty() {
            return Err(DeltaError::Unsupported(format!(
                "MERGE needs an equality between a target and a source column in its condition \
                 ({predicate:?}), e.g. {ta}id = {sa}id"
            )));
        }
        Ok(Condition {
            expr: condition,
            keys,
            target_only,
        })
    }
}

/// The source hashed on its join keys (converted to the target's key types).
pub(super) struct SourceIndex {
    /// Converts key columns (in the target's types) to comparable rows.
    converter: RowConverter,
    /// The source's key columns, converted and with floats normalized.
    keys: Vec<ArrayRef>,
    /// Key row -> the source rows with that key (null keys left out).
    rows: HashMap<Box<[u8]>, Vec<u32>>,
}

impl SourceIndex {
    /// Hashes `source` on the source columns of `keys`.
    pub(super) fn build(
        keys: &[(usize, usize)],
        names: &Names,
        source: &RecordBatch,
    ) -> DeltaResult<SourceIndex> {
        let data_schema = &names.target;
        let key_types: Vec<DataType> = keys
            .iter()
            .map(|(t, _)| data_schema.field(*t).data_type().clone())
            .collect();
        let converter = RowConverter::new(key_types.iter().cloned().map(SortField::new).collect())?;
        let strict = CastOptions {
            safe: false,
            ..Default::default()
        };
        let source_keys: Vec<ArrayRef> = keys
            .iter()
            .zip(&key_types)
            .map(|((_, s), dt)| {
                cast_with_options(source.column(*s), dt, &strict).map_err(|e| {
                    bad(format!(
                        "the source's join key {:?} does not convert to the target's {dt}: {e}",
                        names.source.field(*s).name()
                    ))
                })
            })
            .collect::<DeltaResult<_>>()?;
        // Row keys compare bytes: -0.0 and 0.0 (and NaNs) made equal first, as SQL has them.
        let source_keys: Vec<ArrayRef> = source_keys
            .iter()
            .map(crate::predicate::normalize_floats)
            .collect();
        let source_rows = converter.convert_columns(&source_keys)?;
        let mut index: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        for i in 0..source.num_rows() {
            if source_keys.iter().any(|k| k.is_null(i)) {
                continue; // a null key equals nothing
            }
            index
                .entry(source_rows.row(i).as_ref().into())
                .or_default()
                .push(i as u32);
        }
        Ok(SourceIndex {
            converter,
            keys: source_keys,
            rows: index,
        })
    }
}

/// The target files that may hold matching rows: all of them when a NOT MATCHED BY SOURCE
/// clause needs every row, none when the source is empty and no such clause exists.
pub(super) fn candidate_tasks(
    snapshot: &Snapshot,
    schema: &SchemaRef,
    plan: &Plan,
) -> DeltaResult<Vec<FileTask>> {
    let by_source_empty = plan.clauses.by_source.is_empty();
    let skipping = if by_source_empty {
        skipping_predicate(schema, plan)?
    } else {
        None
    };
    Ok(if plan.source.num_rows() == 0 && by_source_empty {
        Vec::new()
    } else {
        Scan::try_new(
            snapshot,
            ScanOptions {
                columns: Some(Vec::new()),
                predicate: skipping,
                ..Default::default()
            },
        )?
        .tasks()
        .to_vec()
    })
}

/// The pruning predicate: the condition's target-only conditions, and each join key between
/// the least and the greatest of the source's keys.
fn skipping_predicate(schema: &SchemaRef, plan: &Plan) -> DeltaResult<Option<Predicate>> {
    let data_schema = plan.data_schema();
    let mut parts = plan.condition.target_only.clone();
    for ((t, _), key) in plan.condition.keys.iter().zip(&plan.index.keys) {
        let present: Vec<usize> = (0..key.len()).filter(|&i| key.is_valid(i)).collect();
        if present.is_empty() {
            continue;
        }
        let sorted = arrow::compute::sort_to_indices(key, None, None)?;
        let valid: Vec<u32> = sorted
            .values()
            .iter()
            .copied()
            .filter(|&i| key.is_valid(i as usize))
            .collect();
        let (Some(lo), Some(hi)) = (valid.first(), valid.last()) else {
            continue;
        };
        if let (Some(lo), Some(hi)) = (literal_of(key, *lo as usize), literal_of(key, *hi as usize))
        {
            let column = Expr::Column(data_schema.field(*t).name().clone());
            parts.push(Expr::Between {
                expr: Box::new(column),
                low: Box::new(Expr::Literal(lo)),
                high: Box::new(Expr::Literal(hi)),
                negated: false,
            });
        }
    }
    Ok(parts
        .into_iter()
        .reduce(|a, b| Expr::binary(BinaryOp::And, a, b))
        .and_then(|e| e.resolve(schema).ok())
        .and_then(|e| e.skipping_predicate()))
}

/// Reads `tasks` whole, a few files at a time, in order: each file's rows with their row
/// indexes and (with row tracking, `lineage`) their row IDs and commit versions.
pub(super) fn read_files(
    snapshot: &Snapshot,
    schema: &SchemaRef,
    lineage: Option<RowTracking>,
    tasks: &[FileTask],
) -> DeltaResult<impl Stream<Item = DeltaResult<(FileTask, Vec<RecordBatch>)>>> {
    let read_spec = Arc::new(ReadSpec::try_new(
        snapshot.storage().url().to_string(),
        schema.clone(),
        None,
        snapshot.metadata()?.partition_columns.clone(),
        snapshot.column_mapping_mode()?,
        MetadataColumns {
            row_index: true,
            // Rows that move keep their row IDs ("Writer Requirements for Row Tracking").
            row_tracking: lineage,
            ..Default::default()
        },
        None,
    )?);
    let storage = snapshot.storage().clone();
    let concurrency = crate::available_threads();
    Ok(futures::stream::iter(tasks.to_vec())
        .map(move |task| {
            let (storage, spec) = (storage.clone(), read_spec.clone());
            async move {
                let batches: Vec<RecordBatch> = scan::execute(storage, spec, vec![task.clone()], 1)
                    .try_collect()
                    .await?;
                Ok::<_, DeltaError>((task, batches))
            }
        })
        .buffered(concurrency))
}

/// The pairs of rows of `table_part` (a target batch, the table's columns) and of the source
/// that satisfy the whole condition: candidates found by key, then the condition checked.
/// Returns the joined pairs, their target rows and their source rows.
pub(super) fn matching_pairs(
    plan: &Plan,
    table_part: &RecordBatch,
) -> DeltaResult<(RecordBatch, UInt32Array, UInt32Array)> {
    let target_keys: Vec<ArrayRef> = plan
        .condition
        .keys
        .iter()
        .map(|(t, _)| crate::predicate::normalize_floats(table_part.column(*t)))
        .collect();
    let target_rows = plan.index.converter.convert_columns(&target_keys)?;
    let (mut pt, mut ps) = (Vec::new(), Vec::new());
    for i in 0..table_part.num_rows() {
        if target_keys.iter().any(|k| k.is_null(i)) {
            continue;
        }
        if let Some(hits) = plan.index.rows.get(target_rows.row(i).as_ref()) {
            for &s in hits {
                pt.push(i as u32);
                ps.push(s);
            }
        }
    }
    let (pt, ps) = (UInt32Array::from(pt), UInt32Array::from(ps));
    let pairs = joined(
        &plan.names,
        &plan.joined_schema,
        Some((table_part, &pt)),
        Some((&plan.source, &ps)),
        pt.len(),
    )?;
    let real = eval::matches(&plan.condition.expr, &pairs)?;
    let pairs = filter_record_batch(&pairs, &real)?;
    let pt = arrow::compute::filter(&pt, &real)?;
    let ps = arrow::compute::filter(&ps, &real)?;
    Ok((
        pairs,
        pt.as_primitive::<UInt32Type>().clone(),
        ps.as_primitive::<UInt32Type>().clone(),
    ))
}
