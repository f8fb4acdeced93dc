//! Scans: a snapshot's rows as Arrow record batches.
//!
//! Planning and execution are separate, so that files can be read anywhere: [`Scan::try_new`]
//! turns a [`Snapshot`] and [`ScanOptions`] into a [`ReadSpec`] and one [`FileTask`] per active
//! file (both serializable, [`task`]); [`execute`] reads any list of tasks, many files and row
//! groups in parallel, in task order, with memory bounded by the row groups in flight
//! ([`reader`]).
//!
//! - [`task`]: the spec and the tasks;
//! - [`partition_values`]: "Partition Value Serialization";
//! - [`columns`]: file columns as logical columns ("Reader Requirements for Column Mapping");
//! - [`skipping`]: partition pruning and file skipping over statistics;
//! - [`reader`]: one file: projection, deletion vectors, partition and row tracking columns,
//!   the predicate as a row filter;
//! - [`changes`]: change data feed planning ([`Scan::changes`]);
//! - [`file_plan`]: the planned files as another engine's file scan takes them (Spark's,
//!   through deltalog's JVM companion): URIs, typed partition values, decoded deletion vectors.

pub mod changes;
pub mod columns;
pub mod file_plan;
pub mod partition_values;
pub mod reader;
pub mod skipping;
pub mod task;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch, StructArray};
use arrow::datatypes::{Int64Type, Schema};
use futures::stream::{self, BoxStream, StreamExt};

use crate::deletion_vector::DvDescriptor;
use crate::error::{DeltaError, DeltaResult};
use crate::paths::decode_uri_path;
use crate::predicate::Predicate;
use crate::scan::partition_values::{parse_partition_column, partition_texts};
use crate::scan::skipping::{may_match, FileStats};
use crate::schema::find_column;
use crate::snapshot::files::FileBatch;
use crate::snapshot::Snapshot;
use crate::storage::Storage;

pub use reader::{OpenFile, RowGroupRead};
pub use task::{
    FileTask, MetadataColumns, ReadSpec, RowTracking, CHANGE_TYPE, COMMIT_TIMESTAMP,
    COMMIT_VERSION, ROW_COMMIT_VERSION, ROW_ID, ROW_INDEX,
};

/// Table property enabling row tracking ("Row Tracking").
pub const ENABLE_ROW_TRACKING: &str = "delta.enableRowTracking";
/// Table property naming the materialized row ID column.
pub const MATERIALIZED_ROW_ID: &str = "delta.rowTracking.materializedRowIdColumnName";
/// Table property naming the materialized row commit version column.
pub const MATERIALIZED_ROW_COMMIT_VERSION: &str =
    "delta.rowTracking.materializedRowCommitVersionColumnName";

/// What a scan reads.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Logical column names, in output order; all columns when `None`.
    pub columns: Option<Vec<String>>,
    /// Add `_row_id` and `_row_commit_version` ("Reader Requirements for Row Tracking").
    pub row_tracking: bool,
    /// Only rows satisfying this predicate: files are pruned by partition values and
    /// statistics, and the rest filtered row by row.
    pub predicate: Option<Predicate>,
    /// Add [`ROW_INDEX`], each row's index in its data file (for DML).
    pub row_index: bool,
}

/// A planned scan of one snapshot.
#[derive(Debug, Clone)]
pub struct Scan {
    spec: Arc<ReadSpec>,
    tasks: Vec<FileTask>,
    /// Active files before pruning and skipping.
    files_considered: usize,
}

impl Scan {
    /// Plans a scan of `snapshot`.
    pub fn try_new(snapshot: &Snapshot, options: ScanOptions) -> DeltaResult<Self> {
        let row_tracking = if options.row_tracking {
            Some(row_tracking_of(snapshot)?)
        } else {
            None
        };
        let options = resolve_names(snapshot.schema()?.as_ref(), options);
        let predicate = options.predicate.clone();
        let spec = read_spec(snapshot, options, row_tracking, false)?;
        let schema = spec.table_schema().clone();
        let mut tasks = Vec::with_capacity(snapshot.num_files());
        for files in snapshot.files() {
            let keep = match &predicate {
                Some(p) => Some(file_filter(snapshot, &spec, &schema, files, p)?),
                None => None,
            };
            file_tasks(files, keep.as_ref(), &mut tasks)?;
        }
        Ok(Scan {
            spec: Arc::new(spec),
            tasks,
            files_considered: snapshot.num_files(),
        })
    }

    /// Plans the change feed of versions `start..=snapshot.version()` ([`changes`]): the
    /// table's columns (those of `options`) plus `_change_type`, `_commit_version` and
    /// `_commit_timestamp`, filtered row by row by the options' predicate. Row tracking
    /// columns cannot be read from a change feed.
    pub async fn changes(
        snapshot: &Snapshot,
        start: u64,
        options: ScanOptions,
    ) -> DeltaResult<Self> {
        let row_tracking = options.row_tracking.then(RowTracking::default);
        let options = resolve_names(snapshot.schema()?.as_ref(), options);
        let spec = read_spec(snapshot, options, row_tracking, true)?;
        let tasks = changes::change_tasks(snapshot, start).await?;
        Ok(Scan {
            spec: Arc::new(spec),
            files_considered: tasks.len(),
            tasks,
        })
    }

    /// How many files the plan started from: the snapshot's active files (before pruning
    /// and skipping), or a change feed's tasks.
    pub fn files_considered(&self) -> usize {
        self.files_considered
    }

    /// What every file of the scan shares.
    pub fn spec(&self) -> &Arc<ReadSpec> {
        &self.spec
    }

    /// One task per file, in log order.
    pub fn tasks(&self) -> &[FileTask] {
        &self.tasks
    }
}

/// `options` with the column names it gives (selected columns, the predicate's columns) as
/// `schema` spells them: Delta column names are case-insensitive ([`find_column`]), so `ID`
/// selects or filters the column `id`. Unknown names stay as given, for the errors that name
/// them.
fn resolve_names(schema: &Schema, mut options: ScanOptions) -> ScanOptions {
    let resolve = |name: &str| -> String {
        find_column(schema.fields(), name)
            .map_or_else(|| name.to_string(), |i| schema.field(i).name().clone())
    };
    if let Some(columns) = options.columns.as_mut() {
        for c in columns.iter_mut() {
            *c = resolve(c);
        }
    }
    options.predicate = options.predicate.map(|p| p.rename_columns(&resolve));
    options
}

/// The read spec of a scan of `snapshot` with `options`.
fn read_spec(
    snapshot: &Snapshot,
    options: ScanOptions,
    row_tracking: Option<RowTracking>,
    change_data: bool,
) -> DeltaResult<ReadSpec> {
    ReadSpec::try_new(
        snapshot.storage().url().to_string(),
        snapshot.schema()?,
        options.columns,
        snapshot.metadata()?.partition_columns.clone(),
        snapshot.column_mapping_mode()?,
        MetadataColumns {
            row_tracking,
            change_data,
            row_index: options.row_index,
        },
        options.predicate,
    )
}

/// The materialized row tracking columns of a table with row tracking enabled; an error
/// otherwise ("Reader Requirements for Row Tracking" apply only when it is enabled).
fn row_tracking_of(snapshot: &Snapshot) -> DeltaResult<RowTracking> {
    let config = snapshot.configuration();
    let enabled = config
        .get(ENABLE_ROW_TRACKING)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !enabled {
        return Err(DeltaError::InvalidArgument(format!(
            "row tracking is not enabled on this table ({ENABLE_ROW_TRACKING} is not true; \
             spec: \"Row Tracking\")"
        )));
    }
    Ok(RowTracking {
        materialized_row_id_column: config.get(MATERIALIZED_ROW_ID).cloned(),
        materialized_row_commit_version_column: config
            .get(MATERIALIZED_ROW_COMMIT_VERSION)
            .cloned(),
    })
}

/// Which files of `files` may hold rows `predicate` keeps ([`skipping`]).
fn file_filter(
    snapshot: &Snapshot,
    spec: &ReadSpec,
    schema: &Schema,
    files: &FileBatch,
    predicate: &Predicate,
) -> DeltaResult<BooleanArray> {
    let logical = snapshot.stats_schema().to_logical(&files.stats);
    let logical = logical.as_struct_opt();
    let child = |name: &str| {
        logical
            .and_then(|s| s.column_by_name(name))
            .and_then(|c| c.as_struct_opt())
            .cloned()
    };
    let mut partitions = HashMap::new();
    let pv = files
        .adds
        .column_by_name("partitionValues")
        .and_then(|c| c.as_map_opt());
    for column in predicate.columns() {
        let Some((key, data_type)) = spec.partition_key(&column) else {
            continue;
        };
        let texts = partition_texts(pv, files.len(), &key);
        let values = parse_partition_column(texts.iter().copied(), &data_type).map_err(|e| {
            DeltaError::corrupt(
                "_delta_log",
                Some(snapshot.version()),
                format!("partition column {key:?}: {e} (spec: \"Partition Value Serialization\")"),
            )
        })?;
        partitions.insert(column, values);
    }
    let stats = FileStats {
        len: files.len(),
        num_records: logical
            .and_then(|s| s.column_by_name("numRecords"))
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .cloned(),
        min: child("minValues"),
        max: child("maxValues"),
        null_count: child("nullCount"),
        partitions,
    };
    may_match(predicate, schema, &stats)
}

/// Appends one task per file of `files` (only those `keep` marks, when given).
fn file_tasks(
    files: &FileBatch,
    keep: Option<&BooleanArray>,
    out: &mut Vec<FileTask>,
) -> DeltaResult<()> {
    let adds = &files.adds;
    let column = |name: &str| adds.column_by_name(name);
    let paths = column("path")
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or_else(|| DeltaError::Internal("add batch without a path column".into()))?;
    let int64 = |name: &str| column(name).and_then(|c| c.as_primitive_opt::<Int64Type>());
    let (size, base_row_id, default_version) = (
        int64("size"),
        int64("baseRowId"),
        int64("defaultRowCommitVersion"),
    );
    let num_records = files
        .stats
        .column_by_name("numRecords")
        .and_then(|c| c.as_primitive_opt::<Int64Type>());
    let partition_values = column("partitionValues").and_then(|c| c.as_map_opt());
    let dv: Option<&StructArray> = column("deletionVector").and_then(|c| c.as_struct_opt());
    let value = |a: Option<&arrow::array::Int64Array>, i: usize| {
        a.filter(|a| a.is_valid(i)).map(|a| a.value(i))
    };
    for i in 0..adds.len() {
        if keep.is_some_and(|k| !k.value(i)) {
            continue;
        }
        let raw = paths.value(i);
        let path = decode_uri_path(raw)
            .map_err(|rule| DeltaError::corrupt(raw, None, rule))?
            .into_owned();
        let mut values = BTreeMap::new();
        if let Some(map) = partition_values.filter(|m| m.is_valid(i)) {
            let entries = map.value(i);
            let (keys, vals) = (entries.column(0), entries.column(1));
            let (Some(keys), Some(vals)) =
                (keys.as_string_opt::<i32>(), vals.as_string_opt::<i32>())
            else {
                return Err(DeltaError::Internal(
                    "partitionValues is not map<string,string>".into(),
                ));
            };
            for j in 0..keys.len() {
                let v = vals.is_valid(j).then(|| vals.value(j).to_string());
                values.insert(keys.value(j).to_string(), v);
            }
        }
        let deletion_vector = match dv {
            Some(dv) => DvDescriptor::from_row(dv, i, &path)?,
            None => None,
        };
        out.push(FileTask {
            size: value(size, i).and_then(|s| u64::try_from(s).ok()),
            partition_values: values,
            deletion_vector,
            base_row_id: value(base_row_id, i),
            default_row_commit_version: value(default_version, i),
            num_records: value(num_records, i),
            change: None,
            path,
        });
    }
    Ok(())
}

/// Reads `tasks`: footers are fetched a few files ahead, row groups decode `concurrency` at a
/// time on the runtime's threads, and batches come out in task and row order. The first error
/// ends the stream.
pub fn execute(
    storage: Storage,
    spec: Arc<ReadSpec>,
    tasks: Vec<FileTask>,
    concurrency: usize,
) -> BoxStream<'static, DeltaResult<RecordBatch>> {
    let concurrency = concurrency.max(1);
    let opened = stream::iter(tasks)
        .map(move |task| {
            let (storage, spec) = (storage.clone(), spec.clone());
            async move { OpenFile::open(&storage, spec, task).await.map(Arc::new) }
        })
        .buffered(concurrency * 2);
    let row_groups = opened.flat_map(|file| match file {
        Ok(file) => stream::iter(file.row_groups().into_iter().map(Ok)).boxed(),
        Err(e) => stream::once(async move { Err(e) }).boxed(),
    });
    row_groups
        .map(|read| async move { read?.run().await })
        .buffered(concurrency)
        .flat_map(|batches| match batches {
            Ok(batches) => stream::iter(batches.into_iter().map(Ok)).boxed(),
            Err(e) => stream::once(async move { Err(e) }).boxed(),
        })
        .boxed()
}
