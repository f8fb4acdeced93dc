//! OPTIMIZE, bin-packing compaction: the small files of each partition rewritten into files of
//! about the target size, in one commit that changes no data.
//!
//! Spec: "Add File and Remove File" (`dataChange: false` on both sides: the rows are only
//! rearranged, so change-feed readers and streams skip the commit), "Per-file Statistics"
//! (recomputed for the new files), "Deletion Vectors" (a rewritten file's deleted rows are
//! gone for good), "Writer Requirements for Row Tracking" (with row tracking enabled, moved
//! rows keep their row IDs and commit versions in the materialized columns). Conflicts follow
//! Delta Spark's OPTIMIZE: only a concurrent removal of a compacted file conflicts, so appends
//! land while OPTIMIZE runs ([`Isolation::Rearranges`]).
//!
//! Memory: each partition streams its files through one writer (a file's batches at a time,
//! a few files read ahead), and at most `max_concurrent_tasks` partitions run at once.

use std::collections::{BTreeMap, HashSet};

use arrow::array::RecordBatch;
use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Map, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::expr::Expr;
use crate::scan::{self, FileTask, MetadataColumns, ReadSpec, Scan, ScanOptions};
use crate::snapshot::Snapshot;
use crate::write::rewrite::Rewriter;
use crate::write::transaction::{Isolation, Transaction};

/// What to compact and how.
#[derive(Debug, Clone, Default)]
pub struct OptimizeOptions {
    /// Target size of the new files (default: `delta.targetFileSize`, else 100 MiB). Files
    /// at least this large are left alone unless they have a deletion vector.
    pub target_size: Option<u64>,
    /// Only partitions matching this predicate over partition columns.
    pub partition_filter: Option<Expr>,
    /// The filter as the user wrote it, for the commit's `operationParameters`.
    pub partition_filter_text: Option<String>,
    /// How many partitions are rewritten at once (default: the number of cores).
    pub max_concurrent_tasks: Option<usize>,
    /// Extra `commitInfo` fields.
    pub commit_info: Map<String, Value>,
}

/// Sizes of a set of files (deltalake's `filesAdded` / `filesRemoved`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileSizes {
    pub min: u64,
    pub max: u64,
    pub avg: f64,
    pub total_files: u64,
    pub total_size: u64,
}

impl FileSizes {
    fn of(sizes: impl IntoIterator<Item = u64>) -> Self {
        let sizes: Vec<u64> = sizes.into_iter().collect();
        if sizes.is_empty() {
            return Self::default();
        }
        let total: u64 = sizes.iter().sum();
        FileSizes {
            min: sizes.iter().copied().min().unwrap_or(0),
            max: sizes.iter().copied().max().unwrap_or(0),
            avg: total as f64 / sizes.len() as f64,
            total_files: sizes.len() as u64,
            total_size: total,
        }
    }
}

/// What OPTIMIZE did (the names of deltalake's metrics).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OptimizeMetrics {
    /// The version committed; `None` when there was nothing to compact.
    pub version: Option<u64>,
    pub num_files_added: u64,
    pub num_files_removed: u64,
    pub files_added: FileSizes,
    pub files_removed: FileSizes,
    pub partitions_optimized: u64,
    /// Bins rewritten (groups of files compacted together).
    pub num_batches: u64,
    /// Active files the partition filter selected.
    pub total_considered_files: u64,
    /// Considered files left as they are.
    pub total_files_skipped: u64,
    /// Rows written to the new files.
    pub num_rows: u64,
}

/// The files of one partition to compact, in bins of about the target size.
struct PartitionPlan {
    bins: Vec<Vec<FileTask>>,
}

/// Groups `tasks` by partition and packs the candidates (smaller than `target`, or with a
/// deletion vector) into bins of at most about `target` bytes, in log order. A bin of one file
/// without a deletion vector would rewrite it as it is, so it is dropped.
fn plan(tasks: Vec<FileTask>, target: u64) -> Vec<PartitionPlan> {
    let mut partitions: BTreeMap<Vec<(String, Option<String>)>, Vec<FileTask>> = BTreeMap::new();
    for task in tasks {
        let key: Vec<_> = task
            .partition_values
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        partitions.entry(key).or_default().push(task);
    }
    let mut plans = Vec::new();
    for (_, files) in partitions {
        let mut bins: Vec<Vec<FileTask>> = Vec::new();
        let mut current: Vec<FileTask> = Vec::new();
        let mut current_size = 0u64;
        for task in files {
            let size = task.size.unwrap_or(0);
            if size >= target && task.deletion_vector.is_none() {
                continue;
            }
            if !current.is_empty() && current_size + size > target {
                bins.push(std::mem::take(&mut current));
                current_size = 0;
            }
            current_size += size;
            current.push(task);
        }
        if !current.is_empty() {
            bins.push(current);
        }
        bins.retain(|b| b.len() > 1 || b.iter().any(|t| t.deletion_vector.is_some()));
        if !bins.is_empty() {
            plans.push(PartitionPlan { bins });
        }
    }
    plans
}

/// Compacts one partition's bins through one rewriter; its actions and the rows written.
async fn rewrite_partition(
    snapshot: &Snapshot,
    spec: std::sync::Arc<ReadSpec>,
    partition: PartitionPlan,
    target: u64,
) -> DeltaResult<(Vec<Value>, u64)> {
    let mut rewriter = Rewriter::try_new(snapshot, Some(target))?;
    rewriter.set_rearranging();
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
    while let Some((task, batches)) = reads.try_next().await? {
        rewriter.move_file(task, &batches).await?;
    }
    let rows = rewriter.counts.copied_rows;
    let (actions, _) = rewriter.into_actions(snapshot).await?;
    Ok((actions, rows))
}

/// OPTIMIZE (bin-packing) of `snapshot`'s table, committed as the next version.
pub async fn compact(
    snapshot: &Snapshot,
    options: OptimizeOptions,
) -> DeltaResult<OptimizeMetrics> {
    let schema = snapshot.schema()?;
    let partition_columns = snapshot.metadata()?.partition_columns.clone();
    let filter = match &options.partition_filter {
        Some(expr) => {
            let resolved = expr.resolve(&schema)?;
            let outside: Vec<String> = resolved
                .columns()
                .into_iter()
                .filter(|c| !partition_columns.iter().any(|p| p.eq_ignore_ascii_case(c)))
                .collect();
            if !outside.is_empty() {
                return Err(DeltaError::InvalidArgument(format!(
                    "OPTIMIZE's partition filter may use partition columns only ({}), not {}",
                    if partition_columns.is_empty() {
                        "the table has none".to_string()
                    } else {
                        partition_columns.join(", ")
                    },
                    outside.join(", ")
                )));
            }
            Some(resolved)
        }
        None => None,
    };
    let target =
        crate::write::data_files::target_file_size(options.target_size, &snapshot.configuration())?
            as u64;
    let scan = Scan::try_new(
        snapshot,
        ScanOptions {
            columns: Some(Vec::new()),
            predicate: filter.as_ref().and_then(Expr::skipping_predicate),
            ..Default::default()
        },
    )?;
    let tasks = scan.tasks().to_vec();
    let mut metrics = OptimizeMetrics {
        total_considered_files: tasks.len() as u64,
        ..Default::default()
    };
    let plans = plan(tasks, target);
    let chosen: Vec<&FileTask> = plans.iter().flat_map(|p| p.bins.iter().flatten()).collect();
    metrics.total_files_skipped = metrics.total_considered_files - chosen.len() as u64;
    if plans.is_empty() {
        return Ok(metrics);
    }
    metrics.num_batches = plans.iter().map(|p| p.bins.len() as u64).sum();
    metrics.partitions_optimized = plans.len() as u64;
    let read: HashSet<String> = chosen.iter().map(|t| t.path.clone()).collect();
    metrics.files_removed = FileSizes::of(chosen.iter().map(|t| t.size.unwrap_or(0)));

    // Every column, deletion vectors applied; with row tracking enabled, the rows' lineage.
    let lineage = Rewriter::try_new(snapshot, Some(target))?.lineage_columns();
    let spec = std::sync::Arc::new(ReadSpec::try_new(
        snapshot.storage().url().to_string(),
        schema.clone(),
        None,
        partition_columns.clone(),
        snapshot.column_mapping_mode()?,
        MetadataColumns {
            row_tracking: lineage,
            ..Default::default()
        },
        None,
    )?);
    let concurrency = options
        .max_concurrent_tasks
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let results: Vec<(Vec<Value>, u64)> = futures::stream::iter(plans)
        .map(|partition| rewrite_partition(snapshot, spec.clone(), partition, target))
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
    let mut actions = Vec::new();
    let mut added_sizes = Vec::new();
    for (part, rows) in results {
        metrics.num_rows += rows;
        for action in &part {
            if let Some(size) = action
                .get("add")
                .and_then(|a| a.get("size"))
                .and_then(Value::as_u64)
            {
                added_sizes.push(size);
            }
        }
        actions.extend(part);
    }
    metrics.files_added = FileSizes::of(added_sizes);
    metrics.num_files_added = metrics.files_added.total_files;
    metrics.num_files_removed = metrics.files_removed.total_files;

    let mut commit_info = options.commit_info.clone();
    let m = &metrics;
    let mut op_metrics = Map::new();
    for (k, v) in [
        ("numRemovedFiles", m.num_files_removed),
        ("numAddedFiles", m.num_files_added),
        ("numRemovedBytes", m.files_removed.total_size),
        ("numAddedBytes", m.files_added.total_size),
        ("minFileSize", m.files_added.min),
        ("maxFileSize", m.files_added.max),
        ("numBatches", m.num_batches),
        ("partitionsOptimized", m.partitions_optimized),
    ] {
        op_metrics.insert(k.into(), json!(v.to_string()));
    }
    commit_info.insert("operationMetrics".into(), Value::Object(op_metrics));
    let mut txn = Transaction::new(
        snapshot.storage().clone(),
        Some(snapshot.version()),
        "OPTIMIZE",
        Isolation::Rearranges,
    )
    .with_read_files(read)
    .with_commit_info(commit_info)
    .for_table(snapshot)
    .with_parameter(
        "predicate",
        json!(options
            .partition_filter_text
            .as_ref()
            .map(|t| format!("[{t:?}]"))
            .unwrap_or_else(|| "[]".into())),
    )
    .with_parameter("targetSize", json!(target.to_string()))
    .with_parameter("zOrderBy", json!("[]"))
    .with_parameter("auto", json!(false));
    txn.add_actions(actions);
    metrics.version = Some(txn.commit().await?);
    Ok(metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(path: &str, part: &str, size: u64, dv: bool) -> FileTask {
        let mut partition_values = BTreeMap::new();
        partition_values.insert("p".to_string(), Some(part.to_string()));
        FileTask {
            path: path.into(),
            size: Some(size),
            partition_values,
            deletion_vector: dv.then(|| crate::deletion_vector::DvDescriptor {
                storage_type: "i".into(),
                path_or_inline_dv: String::new(),
                offset: None,
                size_in_bytes: 0,
                cardinality: 1,
            }),
            base_row_id: None,
            default_row_commit_version: None,
            num_records: None,
            change: None,
        }
    }

    fn names(plans: &[PartitionPlan]) -> Vec<Vec<Vec<String>>> {
        plans
            .iter()
            .map(|p| {
                p.bins
                    .iter()
                    .map(|b| b.iter().map(|t| t.path.clone()).collect())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn bins_are_per_partition_and_about_the_target_size() {
        let tasks = vec![
            task("a1", "a", 40, false),
            task("b1", "b", 10, false),
            task("a2", "a", 40, false),
            task("a3", "a", 40, false),
            task("big", "a", 100, false),
            task("a4", "a", 10, false),
            task("b2", "b", 10, false),
        ];
        // a: [a1, a2] (80), then [a3, a4] (50); the 100-byte file stays; b: [b1, b2].
        assert_eq!(
            names(&plan(tasks, 100)),
            vec![
                vec![vec!["a1", "a2"], vec!["a3", "a4"]],
                vec![vec!["b1", "b2"]]
            ]
        );
    }

    #[test]
    fn single_files_stay_unless_they_have_deletion_vectors() {
        let tasks = vec![
            task("alone", "a", 10, false),
            task("dv", "b", 500, true),
            task("fine", "c", 500, false),
        ];
        assert_eq!(names(&plan(tasks, 100)), vec![vec![vec!["dv"]]]);
    }
}
