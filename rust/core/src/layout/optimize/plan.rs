//! OPTIMIZE's plan: which files each rewrite takes, per partition, for each layout (bins of
//! about the target size for compaction, every file of a partition for Z-order, the files not
//! yet clustered for liquid clustering), and the columns a layout sorts by.
//!
//! Spec: "Clustered Table" (the clustering columns, `clusteringProvider` of clustered files),
//! "Deletion Vectors" (a lone file is rewritten only when it has one to purge).

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow::array::Array;

use crate::error::{DeltaError, DeltaResult};
use crate::expr::Expr;
use crate::layout::clustering::logical_clustering_columns;
use crate::layout::zorder;
use crate::scan::{FileTask, Scan, ScanOptions};
use crate::snapshot::Snapshot;

use super::{LayoutSpec, OptimizeMetrics, OptimizeOptions, LIQUID};

/// The layout a rewrite produces.
#[derive(Debug, Clone)]
pub(super) enum Layout {
    /// Small files merged, rows in log order.
    BinPack,
    /// Files with deletion vectors rewritten (REORG PURGE).
    Purge,
    /// These files (table-relative, decoded paths) rewritten, bin-packed.
    Rewrite(HashSet<String>),
    /// Every file rewritten under this snapshot, the table's without column mapping: its
    /// metadata is committed with the new files.
    Unmap(Box<Snapshot>),
    /// Every file of each partition, rows sorted along the curve of these columns (logical,
    /// top-level).
    ZOrder(Vec<String>),
    /// Liquid clustering by the table's clustering columns (logical): the files not yet
    /// clustered, or every file when `full`.
    Cluster { columns: Vec<String>, full: bool },
}

/// The files of one partition to rewrite, in bins of about the target size (Z-order and
/// clustering: one bin of every file).
pub(super) struct PartitionPlan {
    pub(super) bins: Vec<Vec<FileTask>>,
}

fn by_partition(tasks: Vec<FileTask>) -> Vec<Vec<FileTask>> {
    let mut partitions: BTreeMap<Vec<(String, Option<String>)>, Vec<FileTask>> = BTreeMap::new();
    for task in tasks {
        let key: Vec<_> = task
            .partition_values
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        partitions.entry(key).or_default().push(task);
    }
    partitions.into_values().collect()
}

/// Groups `tasks` by partition and packs the candidates into bins of at most about `target`
/// bytes, in log order. Candidates: for compaction, files with a deletion vector and files
/// smaller than `target` (a bin of one file without a deletion vector would rewrite it as it
/// is, so it is dropped); for a purge, files with a deletion vector; for a REORG of chosen
/// files, those; for column mapping removal, every file.
fn plan(tasks: Vec<FileTask>, target: u64, layout: &Layout) -> Vec<PartitionPlan> {
    let mut plans = Vec::new();
    for files in by_partition(tasks) {
        let mut bins: Vec<Vec<FileTask>> = Vec::new();
        let mut current: Vec<FileTask> = Vec::new();
        let mut current_size = 0u64;
        for task in files {
            let size = task.size.unwrap_or(0);
            let dv = task.deletion_vector.is_some();
            let candidate = match layout {
                Layout::Purge => dv,
                Layout::Rewrite(paths) => paths.contains(&task.path),
                Layout::Unmap(_) => true,
                _ => dv || size < target,
            };
            if !candidate {
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
        // Compaction leaves a lone file without deletion vector as it is.
        if matches!(layout, Layout::BinPack) {
            bins.retain(|b| b.len() > 1 || b.iter().any(|t| t.deletion_vector.is_some()));
        }
        if !bins.is_empty() {
            plans.push(PartitionPlan { bins });
        }
    }
    plans
}

/// The `clusteringProvider` of every active file that has one.
fn clustering_providers(snapshot: &Snapshot) -> DeltaResult<HashMap<String, String>> {
    let mut out = HashMap::new();
    for files in snapshot.files() {
        let adds = &files.adds;
        for i in 0..adds.len() {
            let (Some(path), Some(provider)) = (
                crate::model::str_field(adds, "path", i),
                crate::model::str_field(adds, "clusteringProvider", i),
            ) else {
                continue;
            };
            let decoded = crate::paths::decode_uri_path(path)
                .map_err(|rule| DeltaError::corrupt(path, None, rule))?;
            out.insert(decoded.into_owned(), provider.to_string());
        }
    }
    Ok(out)
}

/// The layout `spec` asks of `snapshot`'s table, its columns checked.
pub(super) fn resolve(snapshot: &Snapshot, spec: &LayoutSpec) -> DeltaResult<Layout> {
    let clustering = top_level_clustering_columns(snapshot)?;
    Ok(match spec {
        LayoutSpec::Compact if !clustering.is_empty() => Layout::Cluster {
            columns: clustering,
            full: false,
        },
        LayoutSpec::Compact => Layout::BinPack,
        LayoutSpec::Purge => Layout::Purge,
        LayoutSpec::RewriteFiles(paths) => Layout::Rewrite(paths.iter().cloned().collect()),
        LayoutSpec::RemoveColumnMapping => {
            let metadata =
                crate::writer_features::column_mapping::without_column_mapping(snapshot)?;
            Layout::Unmap(Box::new(snapshot.with_metadata(metadata)))
        }
        LayoutSpec::Cluster { .. } if clustering.is_empty() => {
            return Err(DeltaError::InvalidArgument(
                "the table is not clustered (it has no clustering columns; spec \"Clustered \
                 Table\")"
                    .into(),
            ))
        }
        LayoutSpec::Cluster { full } => Layout::Cluster {
            columns: clustering,
            full: *full,
        },
        LayoutSpec::ZOrder(_) if !clustering.is_empty() => {
            return Err(DeltaError::InvalidArgument(
                "ZORDER BY is not supported on a clustered table: OPTIMIZE (compact) clusters \
                 it by its clustering columns (spec \"Clustered Table\")"
                    .into(),
            ))
        }
        LayoutSpec::ZOrder(columns) => Layout::ZOrder(z_order_columns(snapshot, columns)?),
    })
}

/// `columns` resolved as Z-order columns of `snapshot`'s table.
fn z_order_columns(snapshot: &Snapshot, columns: &[String]) -> DeltaResult<Vec<String>> {
    let schema = snapshot.schema()?;
    let partitions = &snapshot.metadata()?.partition_columns;
    let mut resolved: Vec<String> = Vec::new();
    for name in columns {
        let field = schema
            .fields()
            .iter()
            .find(|f| f.name() == name)
            .or_else(|| {
                schema
                    .fields()
                    .iter()
                    .find(|f| f.name().eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| {
                DeltaError::InvalidArgument(format!(
                    "ZORDER BY column {name:?} is not a top-level column of the table"
                ))
            })?;
        if partitions
            .iter()
            .any(|p| p.eq_ignore_ascii_case(field.name()))
        {
            return Err(DeltaError::InvalidArgument(format!(
                "ZORDER BY column {name:?} is a partition column: each partition holds one value \
                 of it already"
            )));
        }
        if resolved.contains(field.name()) {
            return Err(DeltaError::InvalidArgument(format!(
                "ZORDER BY names column {name:?} twice"
            )));
        }
        resolved.push(field.name().clone());
    }
    if resolved.is_empty() || resolved.len() > zorder::MAX_COLUMNS {
        return Err(DeltaError::InvalidArgument(format!(
            "ZORDER BY needs 1 to {} columns",
            zorder::MAX_COLUMNS
        )));
    }
    Ok(resolved)
}

/// The clustering columns of `snapshot` as logical top-level names (the only ones OPTIMIZE
/// clusters by).
pub(super) fn top_level_clustering_columns(snapshot: &Snapshot) -> DeltaResult<Vec<String>> {
    let columns = logical_clustering_columns(snapshot)?;
    if columns.is_empty() {
        return Ok(columns);
    }
    let schema = snapshot.schema()?;
    for c in &columns {
        if schema.field_with_name(c).is_err() {
            return Err(DeltaError::Unsupported(format!(
                "clustering column {c:?} is not a top-level column of the table; deltalog \
                 clusters by top-level columns only"
            )));
        }
    }
    Ok(columns)
}

/// A planned OPTIMIZE: the target size, the partitions' bins, and the metrics known so far.
pub(super) struct Planned {
    pub(super) target: u64,
    pub(super) plans: Vec<PartitionPlan>,
    pub(super) metrics: OptimizeMetrics,
}

pub(super) fn plan_run(
    snapshot: &Snapshot,
    options: &OptimizeOptions,
    layout: &Layout,
) -> DeltaResult<Planned> {
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
    let plans: Vec<PartitionPlan> = match layout {
        Layout::BinPack | Layout::Purge | Layout::Rewrite(_) | Layout::Unmap(_) => {
            plan(tasks, target, layout)
        }
        Layout::ZOrder(_) => by_partition(tasks)
            .into_iter()
            .map(|files| PartitionPlan { bins: vec![files] })
            .collect(),
        Layout::Cluster { full, .. } => {
            let providers = if *full {
                HashMap::new()
            } else {
                clustering_providers(snapshot)?
            };
            by_partition(tasks)
                .into_iter()
                .filter_map(|files| {
                    let unclustered: Vec<FileTask> = files
                        .into_iter()
                        .filter(|t| {
                            *full || providers.get(&t.path).map(String::as_str) != Some(LIQUID)
                        })
                        .collect();
                    (!unclustered.is_empty()).then(|| PartitionPlan {
                        bins: vec![unclustered],
                    })
                })
                .collect()
        }
    };
    let chosen: Vec<&FileTask> = plans.iter().flat_map(|p| p.bins.iter().flatten()).collect();
    metrics.total_files_skipped = metrics.total_considered_files - chosen.len() as u64;
    metrics.partitions_optimized = plans.len() as u64;
    Ok(Planned {
        target,
        plans,
        metrics,
    })
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
            names(&plan(tasks, 100, &Layout::BinPack)),
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
        assert_eq!(
            names(&plan(tasks.clone(), 100, &Layout::BinPack)),
            vec![vec![vec!["dv"]]]
        );
        assert_eq!(
            names(&plan(tasks, 100, &Layout::Purge)),
            vec![vec![vec!["dv"]]]
        );
    }

    #[test]
    fn a_rewrite_takes_exactly_the_files_named_alone_or_not() {
        let tasks = vec![
            task("alone", "a", 10, false),
            task("big", "b", 500, false),
            task("other", "b", 10, true),
            task("small", "b", 10, false),
        ];
        let chosen = Layout::Rewrite(["alone", "big", "small"].map(String::from).into());
        assert_eq!(
            names(&plan(tasks, 100, &chosen)),
            vec![vec![vec!["alone"]], vec![vec!["big"], vec!["small"]]]
        );
    }
}
