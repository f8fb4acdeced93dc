//! OPTIMIZE: the files of a table rewritten into a better layout, in one commit that changes
//! no data ([`optimize`], as [`LayoutSpec`] says). Bin-packing compaction merges each
//! partition's small files into files of about the target size; Z-order and liquid clustering
//! (what compaction does on a clustered table) also sort each partition's rows along the Z-order
//! curve of some columns ([`crate::layout::zorder`]), so each new file covers a narrow range of
//! every one of them; REORG PURGE rewrites the files with deletion vectors. The same pieces run
//! distributed: [`plan_units`], [`rewrite_unit`] anywhere, [`commit_units`].
//!
//! Spec: "Add File and Remove File" (`dataChange: false` on both sides: the rows are only
//! rearranged, so change-feed readers and streams skip the commit), "Per-file Statistics"
//! (recomputed for the new files, always for the Z-order columns), "Deletion Vectors" (a
//! rewritten file's deleted rows are gone for good), "Writer Requirements for Row Tracking"
//! (with row tracking enabled, moved rows keep their row IDs and commit versions in the
//! materialized columns), "Clustered Table" (clustered files say `clusteringProvider`).
//! Conflicts follow Delta Spark's OPTIMIZE: only a concurrent removal of a rewritten file
//! conflicts, so appends land while OPTIMIZE runs ([`Isolation::Rearranges`]).
//!
//! Memory: compaction streams each partition's files through one writer (a file's batches at
//! a time, a few files read ahead). Z-order reads each partition twice: the curve columns for
//! a sample, then every column, routing rows to key ranges buffered in memory up to the
//! budget ([`OptimizeOptions::memory_limit`]) and spilled to local Arrow IPC files beyond it;
//! each range is then sorted and written. At most `max_concurrent_tasks` partitions run at
//! once, sharing the budget.
//!
//! Here: the options, metrics and entry points, and the commit; `plan` chooses the files of
//! each rewrite, `compact` bin-packs them, `curve` sorts them along the Z-order curve.

mod compact;
mod curve;
mod plan;

use std::collections::HashSet;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Map, Value};

use crate::commit::transaction::{Isolation, Transaction};
use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::expr::Expr;
use crate::scan::{FileTask, MetadataColumns, ReadSpec, Scan, ScanOptions};
use crate::snapshot::Snapshot;
use crate::writer_features::column_mapping::physical_name;

use compact::rewrite_partition;
use curve::{zorder_partition, CurveJob};
use plan::{plan_run, resolve, Layout, PartitionPlan};

/// Memory for buffered rows of a Z-order or clustering rewrite when none is given: 128 MiB
/// (measured on 10M rows, 240 MiB of parquet: Z-order peaked at 346 MB and took 9.1 s,
/// against 450 MB and 8.1 s with 256 MiB; the rest spills to local files).
pub const MEMORY_LIMIT: u64 = 128 * 1024 * 1024;

/// The `clusteringProvider` of files clustered by deltalog (Delta Spark's liquid clustering
/// name).
pub const LIQUID: &str = "liquid";

/// What to rewrite and how.
#[derive(Debug, Clone, Default)]
pub struct OptimizeOptions {
    /// Target size of the new files (default: `delta.targetFileSize`, else 100 MiB). For
    /// compaction, files at least this large are left alone unless they have a deletion
    /// vector.
    pub target_size: Option<u64>,
    /// Only partitions matching this predicate over partition columns.
    pub partition_filter: Option<Expr>,
    /// The filter as the user wrote it, for the commit's `operationParameters`.
    pub partition_filter_text: Option<String>,
    /// How many partitions are rewritten at once (default: the number of cores).
    pub max_concurrent_tasks: Option<usize>,
    /// Bytes of rows a Z-order or clustering rewrite buffers in memory (all partitions
    /// together) before spilling to local temporary files (default [`MEMORY_LIMIT`]).
    pub memory_limit: Option<u64>,
    /// Extra `commitInfo` fields.
    pub commit_info: Map<String, Value>,
    /// How the new files are encoded (deltalake's `writer_properties`; default: deltalog's).
    pub parquet: Option<Arc<crate::write::parquet_options::ParquetSettings>>,
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
    /// The version committed; `None` when there was nothing to rewrite.
    pub version: Option<u64>,
    pub num_files_added: u64,
    pub num_files_removed: u64,
    pub files_added: FileSizes,
    pub files_removed: FileSizes,
    pub partitions_optimized: u64,
    /// Record batches passed to the writer (deltalake's meaning; deltalog's batches hold up
    /// to 64Ki rows where deltalake's hold 8Ki, so large rewrites count fewer).
    pub num_batches: u64,
    /// Active files the partition filter selected.
    pub total_considered_files: u64,
    /// Considered files left as they are.
    pub total_files_skipped: u64,
    /// Rows written to the new files.
    pub num_rows: u64,
    /// Bytes of rows spilled to temporary files (Z-order and clustering).
    pub spilled_bytes: u64,
}

/// Which OPTIMIZE: what [`optimize`] and the distributed pieces ([`plan_units`],
/// [`rewrite_unit`], [`commit_units`]) do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutSpec {
    /// Bin-packing compaction; clustering on a clustered table (as Delta Spark's OPTIMIZE).
    Compact,
    /// Z-order by these columns (top-level, not partition columns).
    ZOrder(Vec<String>),
    /// Clustering of a clustered table: the files not yet clustered, every file when `full`.
    Cluster { full: bool },
    /// REORG ... APPLY (PURGE): the files with deletion vectors.
    Purge,
    /// A REORG of these files (table-relative paths, as `add.path` decoded): rewritten with
    /// the table's current schema, as DROP FEATURE typeWidening does with the files written
    /// before a type change.
    RewriteFiles(Vec<String>),
    /// Every file rewritten with the logical column names, and the metadata without column
    /// mapping committed with them (mode `none`): DROP FEATURE columnMapping's first step.
    RemoveColumnMapping,
}

/// OPTIMIZE of `snapshot`'s table as `spec` says, committed as the next version.
pub async fn optimize(
    snapshot: &Snapshot,
    spec: &LayoutSpec,
    options: OptimizeOptions,
) -> DeltaResult<OptimizeMetrics> {
    let layout = resolve(snapshot, spec)?;
    let planned = plan_run(snapshot, &options, &layout)?;
    let metrics = planned.metrics.clone();
    // Column mapping removal commits its metadata even when there is no file to rewrite.
    if planned.plans.is_empty() && !matches!(layout, Layout::Unmap(_)) {
        return Ok(metrics);
    }
    let results = rewrite_plans(snapshot, &options, &layout, planned.plans, planned.target).await?;
    commit_results(
        snapshot,
        &options,
        &layout,
        planned.target,
        metrics,
        results,
    )
    .await
}

/// The units of work of an OPTIMIZE that runs elsewhere (Spark executors): each unit is the
/// paths of the files one rewrite takes (a bin for compaction and purges, a partition's files
/// for Z-order and clustering).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The target file size in force.
    pub target: u64,
    pub units: Vec<Vec<String>>,
    /// Active files the partition filter selected.
    pub considered: u64,
    pub partitions: u64,
}

/// What one unit's rewrite produced: its `remove` and `add` actions, the rows it wrote, the
/// bytes it spilled and the record batches it passed to the writer.
#[derive(Debug, Clone, Default)]
pub struct UnitResult {
    pub actions: Vec<Value>,
    pub rows: u64,
    pub spilled: u64,
    pub batches: u64,
}

/// Plans an OPTIMIZE of `snapshot` whose units are rewritten by [`rewrite_unit`] (anywhere,
/// against the same version) and committed by [`commit_units`].
pub fn plan_units(
    snapshot: &Snapshot,
    spec: &LayoutSpec,
    options: &OptimizeOptions,
) -> DeltaResult<Plan> {
    let layout = resolve(snapshot, spec)?;
    let planned = plan_run(snapshot, options, &layout)?;
    let partitions = planned.plans.len() as u64;
    let units = planned
        .plans
        .into_iter()
        .flat_map(|p| match layout {
            Layout::BinPack | Layout::Purge | Layout::Rewrite(_) | Layout::Unmap(_) => p.bins,
            _ => vec![p.bins.into_iter().flatten().collect()],
        })
        .map(|unit| unit.into_iter().map(|t| t.path).collect())
        .collect();
    Ok(Plan {
        target: planned.target,
        units,
        considered: planned.metrics.total_considered_files,
        partitions,
    })
}

/// Rewrites the files `paths` (one unit of [`plan_units`], planned on the same version) as
/// `spec` says, without committing.
pub async fn rewrite_unit(
    snapshot: &Snapshot,
    spec: &LayoutSpec,
    paths: &[String],
    options: &OptimizeOptions,
) -> DeltaResult<UnitResult> {
    let layout = resolve(snapshot, spec)?;
    let target =
        crate::write::data_files::target_file_size(options.target_size, &snapshot.configuration())?
            as u64;
    let wanted: HashSet<&String> = paths.iter().collect();
    let scan = Scan::try_new(
        snapshot,
        ScanOptions {
            columns: Some(Vec::new()),
            ..Default::default()
        },
    )?;
    let files: Vec<FileTask> = scan
        .tasks()
        .iter()
        .filter(|t| wanted.contains(&t.path))
        .cloned()
        .collect();
    if files.len() != wanted.len() {
        return Err(DeltaError::InvalidArgument(format!(
            "{} of the files to rewrite are not active in version {}",
            wanted.len() - files.len(),
            snapshot.version()
        )));
    }
    let plans = vec![PartitionPlan { bins: vec![files] }];
    let mut one = options.clone();
    one.max_concurrent_tasks = Some(1);
    let mut results = rewrite_plans(snapshot, &one, &layout, plans, target).await?;
    Ok(results.pop().unwrap_or_default())
}

/// Commits the rewrites of the units of `plan` as one OPTIMIZE version after `snapshot` (the
/// version planned on).
pub async fn commit_units(
    snapshot: &Snapshot,
    spec: &LayoutSpec,
    options: &OptimizeOptions,
    plan: &Plan,
    units: Vec<UnitResult>,
) -> DeltaResult<OptimizeMetrics> {
    let layout = resolve(snapshot, spec)?;
    let rewritten: u64 = plan.units.iter().map(|u| u.len() as u64).sum();
    let metrics = OptimizeMetrics {
        total_considered_files: plan.considered,
        total_files_skipped: plan.considered.saturating_sub(rewritten),
        partitions_optimized: plan.partitions,
        ..Default::default()
    };
    if units.is_empty() {
        return Ok(metrics);
    }
    commit_results(snapshot, options, &layout, plan.target, metrics, units).await
}

/// Rewrites the planned partitions (at most `max_concurrent_tasks` at once); what each one
/// produced.
async fn rewrite_plans(
    snapshot: &Snapshot,
    options: &OptimizeOptions,
    layout: &Layout,
    plans: Vec<PartitionPlan>,
    target: u64,
) -> DeltaResult<Vec<UnitResult>> {
    let schema = snapshot.schema()?;
    let mode = snapshot.column_mapping_mode()?;
    let partition_columns = snapshot.metadata()?.partition_columns.clone();

    // Every column, deletion vectors applied; with row tracking enabled, the rows' lineage.
    let lineage = Rewriter::try_new(snapshot, Some(target))?.lineage_columns();
    let spec = |columns: Option<Vec<String>>, lineage| {
        ReadSpec::try_new(
            snapshot.storage().url().to_string(),
            schema.clone(),
            columns,
            partition_columns.clone(),
            mode,
            MetadataColumns {
                row_tracking: lineage,
                ..Default::default()
            },
            None,
        )
        .map(Arc::new)
    };
    let all = spec(None, lineage)?;
    let concurrency = options
        .max_concurrent_tasks
        .unwrap_or_else(crate::available_threads)
        .max(1);
    let curve_columns = match &layout {
        Layout::ZOrder(columns) | Layout::Cluster { columns, .. } => Some(columns.clone()),
        Layout::BinPack | Layout::Purge | Layout::Rewrite(_) | Layout::Unmap(_) => None,
    };
    let results: Vec<UnitResult> = match &curve_columns {
        None => {
            let write = match layout {
                Layout::Unmap(unmapped) => unmapped.as_ref(),
                _ => snapshot,
            };
            futures::stream::iter(plans)
                .map(|partition| {
                    let parquet = options.parquet.clone();
                    rewrite_partition(snapshot, write, all.clone(), partition, target, parquet)
                })
                .buffer_unordered(concurrency)
                .try_collect()
                .await?
        }
        Some(columns) => {
            let partitions = plans.len().min(concurrency).max(1);
            let limit = options.memory_limit.unwrap_or(MEMORY_LIMIT).max(1 << 20);
            let job = Arc::new(CurveJob {
                all: all.clone(),
                curve: spec(Some(columns.clone()), None)?,
                columns: columns.clone(),
                physical: columns
                    .iter()
                    .map(|c| physical_name(&schema, c, mode))
                    .collect(),
                budget: usize::try_from(limit / partitions as u64).unwrap_or(usize::MAX),
                provider: matches!(layout, Layout::Cluster { .. }).then_some(LIQUID),
                parquet: options.parquet.clone(),
            });
            futures::stream::iter(plans)
                .map(|partition| {
                    let files = partition.bins.into_iter().flatten().collect();
                    zorder_partition(snapshot, job.clone(), files, target)
                })
                .buffer_unordered(concurrency)
                .try_collect()
                .await?
        }
    };
    Ok(results)
}

/// Commits rewritten partitions as one version after `snapshot`; the metrics.
async fn commit_results(
    snapshot: &Snapshot,
    options: &OptimizeOptions,
    layout: &Layout,
    target: u64,
    mut metrics: OptimizeMetrics,
    results: Vec<UnitResult>,
) -> DeltaResult<OptimizeMetrics> {
    let mut read: HashSet<String> = HashSet::new();
    let mut removed_sizes = Vec::new();
    let mut actions = Vec::new();
    let mut added_sizes = Vec::new();
    for unit in results {
        metrics.num_rows += unit.rows;
        metrics.spilled_bytes += unit.spilled;
        metrics.num_batches += unit.batches;
        let part = unit.actions;
        for action in &part {
            if let Some(size) = action
                .get("add")
                .and_then(|a| a.get("size"))
                .and_then(Value::as_u64)
            {
                added_sizes.push(size);
            }
            if let Some(remove) = action.get("remove") {
                removed_sizes.push(remove.get("size").and_then(Value::as_u64).unwrap_or(0));
                let raw = remove
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let path = crate::paths::decode_uri_path(raw)
                    .map_err(|rule| DeltaError::corrupt(raw, Some(snapshot.version()), rule))?;
                read.insert(path.into_owned());
            }
        }
        actions.extend(part);
    }
    metrics.files_added = FileSizes::of(added_sizes);
    metrics.files_removed = FileSizes::of(removed_sizes);
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
    let predicate = json!(options
        .partition_filter_text
        .as_ref()
        .map(|t| format!("[{t:?}]"))
        .unwrap_or_else(|| "[]".into()));
    let (operation, isolation) = match layout {
        Layout::Purge | Layout::Rewrite(_) => ("REORG", Isolation::Rearranges),
        // Files written concurrently would hold the mapped names the new metadata no longer
        // knows: any concurrent file change conflicts.
        Layout::Unmap(unmapped) => {
            let mut head = vec![unmapped.metadata()?.to_action()];
            let clustering = crate::layout::clustering::logical_clustering_columns(snapshot)?;
            if !clustering.is_empty() {
                // "Clustered Table": the domain names the columns by their physical names,
                // which are now the logical ones.
                head.push(crate::layout::clustering::domain_action(&clustering));
            }
            actions.splice(0..0, head);
            ("REMOVE COLUMN MAPPING", Isolation::RewritesAll)
        }
        _ => ("OPTIMIZE", Isolation::Rearranges),
    };
    let mut txn = Transaction::new(
        snapshot.storage().clone(),
        Some(snapshot.version()),
        operation,
        isolation,
    )
    .with_read_files(read)
    .with_commit_info(commit_info)
    .for_table(snapshot)
    .with_parameter("predicate", predicate);
    let names = |c: &[String]| json!(serde_json::to_string(c).unwrap_or_default());
    txn = match &layout {
        Layout::Purge => txn.with_parameter("applyPurge", json!(true)),
        Layout::Rewrite(_) => txn.with_parameter("applyPurge", json!(false)),
        Layout::Unmap(_) => txn,
        Layout::Cluster { columns, full } => txn
            .with_parameter("targetSize", json!(target.to_string()))
            .with_parameter("zOrderBy", json!("[]"))
            .with_parameter("clusterBy", names(columns))
            .with_parameter("isFull", json!(*full))
            .with_parameter("auto", json!(false)),
        Layout::ZOrder(columns) => txn
            .with_parameter("targetSize", json!(target.to_string()))
            .with_parameter("zOrderBy", names(columns))
            .with_parameter("auto", json!(false)),
        Layout::BinPack => txn
            .with_parameter("targetSize", json!(target.to_string()))
            .with_parameter("zOrderBy", json!("[]"))
            .with_parameter("auto", json!(false)),
    };
    txn.add_actions(actions);
    metrics.version = Some(txn.commit().await?);
    Ok(metrics)
}
