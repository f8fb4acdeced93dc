//! MERGE's write step: each candidate target file's batches matched against the source, the
//! MATCHED and NOT MATCHED BY SOURCE clauses applied to its rows (deleted rows and the old
//! versions of updated ones taken out of the file, updated versions written), the file changed
//! through [`Rewriter`]; then the source rows no target row matched inserted by the NOT
//! MATCHED clauses.
//!
//! Spec: as [`crate::dml::rewrite`]; "Identity Columns" (inserted rows take generated values).

use std::collections::HashMap;

use arrow::array::{AsArray, BooleanArray, Int64Array, RecordBatch, UInt32Array};
use arrow::datatypes::Int64Type;
use futures::{Stream, TryStreamExt};
use roaring::RoaringTreemap;

use crate::dml::delete_update::drop_row_index;
use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::scan::{FileTask, ROW_INDEX};
use crate::writer_features::identity::IdentityColumns;

use super::clauses::{
    act_on_target, bad, build_rows, finish_rows, first_clause, joined, row_ids_of, Compiled,
};
use super::{join, MergeMetrics, Plan};

/// The write step's state: the statement, the rewriter writing its changes, the metrics.
pub(super) struct Writer<'a> {
    pub(super) plan: &'a Plan,
    pub(super) rewriter: &'a mut Rewriter,
    pub(super) metrics: &'a mut MergeMetrics,
}

/// A batch of a target file as the clauses act on it.
struct TargetRows<'b> {
    /// As read: the table's columns, the row index, the row tracking columns.
    batch: &'b RecordBatch,
    /// Each row's index in its file.
    row_index: Int64Array,
    /// The rows that leave the file (copy on write keeps the others).
    mask: Vec<bool>,
    /// The file's rows that leave it, by index in the file.
    gone: &'b mut RoaringTreemap,
}

impl Writer<'_> {
    /// Rewrites each file of `reads` (as [`join::read_files`] reads them) whose rows the clauses
    /// change. Returns the source rows some target row matched.
    pub(super) async fn rewrite_files(
        &mut self,
        reads: impl Stream<Item = DeltaResult<(FileTask, Vec<RecordBatch>)>>,
    ) -> DeltaResult<RoaringTreemap> {
        futures::pin_mut!(reads);
        let mut source_matched = RoaringTreemap::new();
        while let Some((task, batches)) = reads.try_next().await? {
            let mut gone = RoaringTreemap::new();
            let mut live = 0u64;
            let mut parts: Vec<(RecordBatch, BooleanArray)> = Vec::with_capacity(batches.len());
            for batch in &batches {
                live += batch.num_rows() as u64;
                let mask = self
                    .rewrite_batch(&task, batch, &mut gone, &mut source_matched)
                    .await?;
                // The whole batch: copied rows keep their row tracking columns.
                parts.push((batch.clone(), BooleanArray::from(mask)));
            }
            self.rewriter.change_file(task, &gone, live, &parts).await?;
        }
        Ok(source_matched)
    }

    /// One batch of the file `task`: matched against the source (the source rows matched
    /// added to `source_matched`), acted on by the MATCHED and NOT MATCHED BY SOURCE clauses
    /// (the rows that leave the file added to `gone`). Returns the mask of those rows.
    async fn rewrite_batch(
        &mut self,
        task: &FileTask,
        batch: &RecordBatch,
        gone: &mut RoaringTreemap,
        source_matched: &mut RoaringTreemap,
    ) -> DeltaResult<Vec<bool>> {
        let plan = self.plan;
        let row_index = batch
            .column_by_name(ROW_INDEX)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| DeltaError::Internal("a MERGE read without row indexes".into()))?
            .clone();
        let table_part = drop_row_index(batch, plan.data_schema())?;
        // Candidate pairs by key, then the whole condition.
        let (pairs, pt, ps) = join::matching_pairs(plan, &table_part)?;
        let mut hit_count: HashMap<u32, u32> = HashMap::new();
        for (&t, &s) in pt.values().iter().zip(ps.values()) {
            source_matched.insert(u64::from(s));
            *hit_count.entry(t).or_default() += 1;
        }
        let mut target = TargetRows {
            batch,
            row_index,
            mask: vec![false; table_part.num_rows()],
            gone,
        };
        // WHEN MATCHED.
        let matched = &plan.clauses.matched;
        if !matched.is_empty() && pairs.num_rows() > 0 {
            let ambiguity = Some((&hit_count, task.path.as_str()));
            self.act(matched, &pairs, &pt, ambiguity, &mut target)
                .await?;
        }
        // WHEN NOT MATCHED BY SOURCE.
        let by_source = &plan.clauses.by_source;
        if !by_source.is_empty() {
            let unmatched: Vec<u32> = (0..table_part.num_rows() as u32)
                .filter(|t| !hit_count.contains_key(t))
                .collect();
            let rows = UInt32Array::from(unmatched);
            let alone = joined(
                &plan.names,
                &plan.joined_schema,
                Some((&table_part, &rows)),
                None,
                rows.len(),
            )?;
            self.act(by_source, &alone, &rows, None, &mut target)
                .await?;
        }
        Ok(target.mask)
    }

    /// Applies `clauses` (MATCHED or NOT MATCHED BY SOURCE ones) to the rows of `joined`, whose
    /// target rows are `targets`: each row is acted on by the first clause whose condition
    /// holds, and leaves its file. `ambiguity` (MATCHED clauses): how many source rows matched
    /// each target row, and the file's path; a target row matched more than once is an error.
    async fn act(
        &mut self,
        clauses: &[Compiled],
        joined: &RecordBatch,
        targets: &UInt32Array,
        ambiguity: Option<(&HashMap<u32, u32>, &str)>,
        rows: &mut TargetRows<'_>,
    ) -> DeltaResult<()> {
        let plan = self.plan;
        let chosen = first_clause(clauses, joined)?;
        for (k, clause) in clauses.iter().enumerate() {
            let picked: Vec<u32> = (0..joined.num_rows() as u32)
                .filter(|&r| chosen[r as usize] == Some(k))
                .collect();
            if picked.is_empty() {
                continue;
            }
            let mut of_target = Vec::with_capacity(picked.len());
            for &r in &picked {
                let t = targets.value(r as usize);
                of_target.push(t);
                if let Some((hit_count, path)) = ambiguity {
                    if hit_count.get(&t).copied().unwrap_or(0) > 1 {
                        return Err(bad(format!(
                            "MERGE is ambiguous: several source rows match the same target \
                             row (in {path}) and a MATCHED clause would modify it"
                        )));
                    }
                }
                rows.mask[t as usize] = true;
                rows.gone.insert(rows.row_index.value(t as usize) as u64);
            }
            let sub = arrow::compute::take_record_batch(joined, &UInt32Array::from(picked))?;
            let ids = row_ids_of(rows.batch, of_target)?;
            act_on_target(
                self.rewriter,
                plan.data_schema(),
                &sub,
                ids.as_ref(),
                clause,
                &plan.rules,
                self.metrics,
            )
            .await?;
        }
        Ok(())
    }

    /// WHEN NOT MATCHED: the source rows outside `source_matched` inserted by the first NOT
    /// MATCHED clause whose condition holds (identity columns filled from `identities`).
    pub(super) async fn insert_unmatched(
        &mut self,
        identities: &mut IdentityColumns,
        source_matched: &RoaringTreemap,
    ) -> DeltaResult<()> {
        let plan = self.plan;
        let insert_clauses = &plan.clauses.not_matched;
        if insert_clauses.is_empty() {
            return Ok(());
        }
        let source = &plan.source;
        let unmatched: Vec<u32> = (0..source.num_rows() as u32)
            .filter(|&s| !source_matched.contains(u64::from(s)))
            .collect();
        let rows = UInt32Array::from(unmatched);
        let alone = joined(
            &plan.names,
            &plan.joined_schema,
            None,
            Some((source, &rows)),
            rows.len(),
        )?;
        let chosen = first_clause(insert_clauses, &alone)?;
        for (k, clause) in insert_clauses.iter().enumerate() {
            let picked: Vec<u32> = (0..alone.num_rows() as u32)
                .filter(|&r| chosen[r as usize] == Some(k))
                .collect();
            if picked.is_empty() {
                continue;
            }
            let sub = arrow::compute::take_record_batch(&alone, &UInt32Array::from(picked))?;
            let built = build_rows(plan.data_schema(), &sub, clause, None)?;
            let built = identities.fill(&built, &|i| clause.values[i].is_some())?;
            let new_rows = finish_rows(&plan.rules, built, clause)?;
            self.metrics.num_target_rows_inserted += new_rows.num_rows() as u64;
            self.rewriter.write_changes(&new_rows, "insert").await?;
            self.rewriter.write_rows(&new_rows).await?;
        }
        Ok(())
    }
}
