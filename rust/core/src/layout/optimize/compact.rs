//! Bin-packing compaction: each partition's bins streamed through one rewriter, a file's
//! batches at a time, a couple of files read ahead.

use std::sync::Arc;

use arrow::array::RecordBatch;
use futures::{StreamExt, TryStreamExt};

use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::scan::{self, FileTask, ReadSpec};
use crate::snapshot::Snapshot;

use super::plan::PartitionPlan;
use super::UnitResult;

/// Compacts one partition's bins through one rewriter; its actions, the rows written and the
/// batches passed to the writer.
pub(super) async fn rewrite_partition(
    snapshot: &Snapshot,
    write: &Snapshot,
    spec: Arc<ReadSpec>,
    partition: PartitionPlan,
    target: u64,
    parquet: Option<Arc<crate::write::parquet_options::ParquetSettings>>,
) -> DeltaResult<UnitResult> {
    // Files are read as `snapshot` has them and written as `write` says (the same table but
    // for column mapping removal).
    let mut rewriter = Rewriter::try_new(write, Some(target))?;
    rewriter.set_rearranging();
    rewriter.set_parquet(parquet);
    let storage = snapshot.storage().clone();
    let tasks: Vec<FileTask> = partition.bins.into_iter().flatten().collect();
    // A couple of files read ahead while the current one is written.
    let reads = futures::stream::iter(tasks)
        .map(|task| {
            let (storage, spec) = (storage.clone(), spec.clone());
            async move {
                let batches: Vec<RecordBatch> = scan::execute(storage, spec, vec![task.clone()], 1)
                    .try_collect()
                    .await?;
                Ok::<_, DeltaError>((task, batches))
            }
        })
        .buffered(2);
    futures::pin_mut!(reads);
    let mut written = 0u64;
    while let Some((task, batches)) = reads.try_next().await? {
        written += batches.iter().filter(|b| b.num_rows() > 0).count() as u64;
        rewriter.move_file(task, &batches).await?;
    }
    let rows = rewriter.counts.copied_rows;
    let (actions, _) = rewriter.into_actions(snapshot).await?;
    Ok(UnitResult {
        actions,
        rows,
        spilled: 0,
        batches: written,
    })
}
