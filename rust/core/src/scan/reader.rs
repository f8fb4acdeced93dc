//! Reading one data file of a scan into logical record batches.
//!
//! Spec: "Data Files", "Reader Requirements for Column Mapping", "Partition Value
//! Serialization", "Reader Requirements for Deletion Vectors" and "Reader Requirements for Row
//! Tracking". A file is opened once ([`OpenFile::open`]: footer, column resolution, partition
//! values, deletion vector) and then decoded one row group at a time ([`RowGroupRead`]), so
//! row groups of one large file decode in parallel and memory stays bounded by the row groups
//! in flight. Each decoded batch loses its deleted rows (and, in a change feed, the rows a
//! selection vector leaves out), gets its columns converted to the logical types
//! ([`crate::scan::columns`]), its partition, row tracking and change feed columns added, and
//! is filtered by the scan's predicate.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, Int64Array,
    RecordBatch, RecordBatchOptions, StringArray, TimestampMicrosecondArray,
};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Int64Type};
use futures::TryStreamExt;
use parquet::arrow::arrow_reader::{
    ArrowReaderBuilder, ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use roaring::RoaringTreemap;

use crate::error::{DeltaError, DeltaResult};
#[cfg(unix)]
use crate::parquet_io::LocalChunkReader;
use crate::parquet_io::StoreFileReader;
use crate::scan::columns::{find_field, output_type, to_logical};
use crate::scan::partition_values::{parse_partition_value, repeat};
use crate::scan::task::{ColumnSource, FileTask, ReadSpec, CHANGE_TYPE};
use crate::storage::{FileLocation, Storage};

/// Rows per decoded batch.
pub const BATCH_ROWS: usize = 64 * 1024;

/// How one output column of a file is produced.
#[derive(Debug)]
enum Column {
    /// Column `index` of the decoded batch, converted to the logical type.
    File {
        index: usize,
        name: String,
        logical: DataType,
    },
    /// A column the file does not have: nulls.
    Missing(DataType),
    /// The same value in every row (a partition value, a change's version or timestamp), as
    /// a one-element array.
    Constant(ArrayRef),
    /// A row tracking column: the materialized column (decoded column `materialized`) where
    /// present and not null, else `default` (plus the row's index in the file for row IDs).
    RowTracking {
        materialized: Option<usize>,
        default: i64,
        add_row_index: bool,
    },
    /// The row's index in the file.
    RowIndex,
}

/// How the file's bytes are read.
#[derive(Debug, Clone)]
enum Source {
    #[cfg(unix)]
    Local(LocalChunkReader),
    Store(StoreFileReader),
}

/// A data file with its footer read and its columns resolved.
#[derive(Debug)]
pub struct OpenFile {
    name: String,
    spec: Arc<ReadSpec>,
    source: Source,
    metadata: ArrowReaderMetadata,
    mask: ProjectionMask,
    columns: Vec<Column>,
    deleted: Option<RoaringTreemap>,
    /// When set, only these rows (minus `deleted`) are read: a change feed's rows whose
    /// deletion state a new deletion vector changed.
    selected: Option<RoaringTreemap>,
}

/// One row group of an [`OpenFile`] to decode.
#[derive(Debug, Clone)]
pub struct RowGroupRead {
    file: Arc<OpenFile>,
    row_group: usize,
    /// Index in the file of the row group's first row.
    first_row: u64,
}

/// Whether an object-store error means the object does not exist.
fn is_not_found(e: &parquet::errors::ParquetError) -> bool {
    match e {
        parquet::errors::ParquetError::External(inner) => inner
            .downcast_ref::<object_store::Error>()
            .is_some_and(|os| matches!(os, object_store::Error::NotFound { .. })),
        _ => false,
    }
}

impl OpenFile {
    /// Reads the footer of `task`'s file, resolves the spec's columns in it, parses the
    /// partition values and loads the deletion vector.
    pub async fn open(storage: &Storage, spec: Arc<ReadSpec>, task: FileTask) -> DeltaResult<Self> {
        let name = task.path.clone();
        let location = storage.file_location(&task.path)?;
        let not_found = || DeltaError::DataFileNotFound { file: name.clone() };
        let unreadable = |e: &dyn std::fmt::Display| {
            DeltaError::data_file(&name, format!("unreadable parquet: {e}"))
        };
        let options = ArrowReaderOptions::new();
        let (source, metadata) = match location {
            #[cfg(unix)]
            FileLocation::Local(path) => {
                let opened = tokio::task::spawn_blocking(move || {
                    let reader = LocalChunkReader::open(&path)?;
                    let metadata = ArrowReaderMetadata::load(&reader, options);
                    Ok::<_, std::io::Error>((reader, metadata))
                })
                .await
                .map_err(|e| DeltaError::Internal(format!("opening a data file failed: {e}")))?;
                let (reader, metadata) = match opened {
                    Ok(r) => r,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
                    Err(e) => return Err(unreadable(&e)),
                };
                (Source::Local(reader), metadata.map_err(|e| unreadable(&e))?)
            }
            #[cfg(not(unix))]
            FileLocation::Local(path) => {
                return Err(DeltaError::Unsupported(format!(
                    "reading local data files needs a Unix platform: {}",
                    path.display()
                )))
            }
            FileLocation::Store(location) => {
                let size = match task.size {
                    Some(s) => s,
                    None => match storage.head(&location).await {
                        Ok(meta) => meta.size,
                        Err(object_store::Error::NotFound { .. }) => return Err(not_found()),
                        Err(e) => return Err(e.into()),
                    },
                };
                let mut reader = StoreFileReader::new(storage.store().clone(), location, size);
                let metadata = ArrowReaderMetadata::load_async(&mut reader, options)
                    .await
                    .map_err(|e| {
                        if is_not_found(&e) {
                            not_found()
                        } else {
                            unreadable(&e)
                        }
                    })?;
                (Source::Store(reader), metadata)
            }
        };
        let (mask, columns) = resolve_columns(&spec, &task, &metadata, &name)?;
        let deleted = match &task.deletion_vector {
            Some(dv) => Some(dv.load(storage, &name).await?),
            None => None,
        };
        let selected = match task.change.as_ref().and_then(|c| c.only_rows_of.as_ref()) {
            Some(dv) => Some(dv.load(storage, &name).await?),
            None => None,
        };
        Ok(OpenFile {
            name,
            spec,
            source,
            metadata,
            mask,
            columns,
            deleted,
            selected,
        })
    }

    /// The file's row groups, in order, as units of decoding.
    pub fn row_groups(self: &Arc<Self>) -> Vec<RowGroupRead> {
        let mut first_row = 0u64;
        self.metadata
            .metadata()
            .row_groups()
            .iter()
            .enumerate()
            .map(|(row_group, rg)| {
                let read = RowGroupRead {
                    file: self.clone(),
                    row_group,
                    first_row,
                };
                first_row += u64::try_from(rg.num_rows()).unwrap_or(0);
                read
            })
            .filter(|read| !self.all_deleted(read))
            .collect()
    }

    /// Whether the deletion vector removes every row of a row group.
    fn all_deleted(&self, read: &RowGroupRead) -> bool {
        let (Some(deleted), None) = (&self.deleted, &self.selected) else {
            return false;
        };
        let rows = self
            .metadata
            .metadata()
            .row_group(read.row_group)
            .num_rows();
        let rows = u64::try_from(rows).unwrap_or(0);
        rows > 0 && {
            let end = read.first_row + rows;
            // Rows deleted within [first_row, end).
            let before_end = if end == 0 { 0 } else { deleted.rank(end - 1) };
            let before_start = if read.first_row == 0 {
                0
            } else {
                deleted.rank(read.first_row - 1)
            };
            before_end - before_start == rows
        }
    }

    /// Turns one decoded batch, whose first row is row `first_row` of the file, into output:
    /// `None` when the deletion vector removes all its rows.
    fn finish(&self, raw: RecordBatch, first_row: u64) -> DeltaResult<Option<RecordBatch>> {
        let rows = raw.num_rows();
        let keep = keep_mask(
            self.deleted.as_ref(),
            self.selected.as_ref(),
            first_row,
            rows,
        );
        let (raw, row_index) = match &keep {
            Some(keep) if keep.false_count() > 0 => {
                if keep.true_count() == 0 {
                    return Ok(None);
                }
                let index: Option<Int64Array> = self.needs_row_index().then(|| {
                    keep.values()
                        .set_indices()
                        .map(|i| first_row as i64 + i as i64)
                        .collect()
                });
                (filter_record_batch(&raw, keep)?, index)
            }
            _ => {
                let index = self.needs_row_index().then(|| {
                    (0..rows)
                        .map(|i| first_row as i64 + i as i64)
                        .collect::<Int64Array>()
                });
                (raw, index)
            }
        };
        let len = raw.num_rows();
        let mut out = Vec::with_capacity(self.columns.len());
        for column in &self.columns {
            out.push(match column {
                Column::File {
                    index,
                    name,
                    logical,
                } => to_logical(raw.column(*index), logical, self.spec.mode()).map_err(|e| {
                    DeltaError::data_file(&self.name, format!("column {name:?}: {e}"))
                })?,
                Column::Missing(data_type) => new_null_array(data_type, len),
                Column::Constant(value) => repeat(value, len)?,
                Column::RowTracking {
                    materialized,
                    default,
                    add_row_index,
                } => {
                    let materialized = materialized.map(|i| raw.column(i));
                    let index = if *add_row_index {
                        row_index.as_ref()
                    } else {
                        None
                    };
                    row_tracking(materialized, *default, index, len)
                        .map_err(|e| DeltaError::data_file(&self.name, e))?
                }
                Column::RowIndex => match &row_index {
                    Some(index) => Arc::new(index.clone()),
                    None => return Err(DeltaError::Internal("row index not computed".into())),
                },
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(len));
        let read =
            RecordBatch::try_new_with_options(self.spec.read_schema().clone(), out, &options)?;
        let Some(filter) = self.spec.filter() else {
            return Ok(Some(read));
        };
        let keep = filter.filter_mask(&read)?;
        if keep.true_count() == 0 {
            return Ok(None);
        }
        let kept = if keep.false_count() == 0 {
            read
        } else {
            filter_record_batch(&read, &keep)?
        };
        let output = self.spec.output_schema();
        if kept.num_columns() == output.fields().len() {
            return Ok(Some(kept));
        }
        // Drop the columns only the predicate needed.
        let columns = kept.columns()[..output.fields().len()].to_vec();
        let options = RecordBatchOptions::new().with_row_count(Some(kept.num_rows()));
        Ok(Some(RecordBatch::try_new_with_options(
            output.clone(),
            columns,
            &options,
        )?))
    }

    fn needs_row_index(&self) -> bool {
        self.columns.iter().any(|c| {
            matches!(
                c,
                Column::RowTracking {
                    add_row_index: true,
                    ..
                } | Column::RowIndex
            )
        })
    }
}

/// Where the spec's columns are in the file, and the projection that decodes only them.
fn resolve_columns(
    spec: &ReadSpec,
    task: &FileTask,
    metadata: &ArrowReaderMetadata,
    name: &str,
) -> DeltaResult<(ProjectionMask, Vec<Column>)> {
    let file_fields = metadata.schema().fields();
    // Top-level fields of the file to decode, and which output column wants which.
    let mut wanted: Vec<usize> = Vec::new();
    let mut plan: Vec<(Option<usize>, &ColumnSource)> = Vec::new();
    let tracking = spec.row_tracking();
    for source in spec.sources() {
        let root = match source {
            ColumnSource::Data(field) => find_field(
                file_fields,
                field,
                spec.mode(),
                spec.table_schema().fields(),
            ),
            ColumnSource::RowId => tracking
                .and_then(|t| t.materialized_row_id_column.as_deref())
                .and_then(|c| file_fields.iter().position(|f| f.name() == c)),
            ColumnSource::RowCommitVersion => tracking
                .and_then(|t| t.materialized_row_commit_version_column.as_deref())
                .and_then(|c| file_fields.iter().position(|f| f.name() == c)),
            ColumnSource::ChangeType => match task.change.as_ref() {
                // Change data files say each row's change type themselves.
                Some(change) if change.change_type.is_none() => {
                    let found = file_fields.iter().position(|f| f.name() == CHANGE_TYPE);
                    if found.is_none() {
                        return Err(DeltaError::data_file(
                            name,
                            "the change data file has no _change_type column (spec: \"Add CDC File\")",
                        ));
                    }
                    found
                }
                _ => None,
            },
            ColumnSource::Partition { .. }
            | ColumnSource::RowIndex
            | ColumnSource::CommitVersion
            | ColumnSource::CommitTimestamp => None,
        };
        if let Some(r) = root {
            wanted.push(r);
        }
        plan.push((root, source));
    }
    wanted.sort_unstable();
    wanted.dedup();
    // The decoded batch holds the wanted fields in file order.
    let position = |root: usize| wanted.partition_point(|&r| r < root);
    let mut columns = Vec::with_capacity(plan.len());
    for (root, source) in plan {
        columns.push(match source {
            ColumnSource::Data(field) => match root {
                Some(r) => Column::File {
                    index: position(r),
                    name: field.name().clone(),
                    logical: field.data_type().clone(),
                },
                None => Column::Missing(output_type(field.data_type())),
            },
            ColumnSource::Partition { key, data_type } => {
                let text = task.partition_values.get(key).and_then(|v| v.as_deref());
                let value = parse_partition_value(text, data_type).map_err(|e| {
                    DeltaError::data_file(
                        name,
                        format!("partition column {key:?}: {e} (spec: \"Partition Value Serialization\")"),
                    )
                })?;
                Column::Constant(value)
            }
            ColumnSource::RowIndex => Column::RowIndex,
            ColumnSource::RowId => Column::RowTracking {
                materialized: root.map(position),
                default: task.base_row_id.ok_or_else(|| {
                    DeltaError::corrupt(
                        name,
                        None,
                        "the add action has no baseRowId although row tracking is enabled \
                         (spec: \"Row IDs\")",
                    )
                })?,
                add_row_index: true,
            },
            ColumnSource::ChangeType | ColumnSource::CommitVersion | ColumnSource::CommitTimestamp => {
                let change = task.change.as_ref().ok_or_else(|| {
                    DeltaError::InvalidArgument(format!(
                        "the task of {name} is not part of a change feed"
                    ))
                })?;
                match (source, root) {
                    (ColumnSource::ChangeType, Some(r)) => Column::File {
                        index: position(r),
                        name: CHANGE_TYPE.into(),
                        logical: DataType::Utf8,
                    },
                    (ColumnSource::ChangeType, None) => Column::Constant(Arc::new(
                        StringArray::from(vec![change.change_type.clone()]),
                    )),
                    (ColumnSource::CommitVersion, _) => {
                        Column::Constant(Arc::new(Int64Array::from(vec![change.commit_version])))
                    }
                    _ => Column::Constant(Arc::new(
                        TimestampMicrosecondArray::from(vec![change.commit_timestamp * 1000])
                            .with_timezone("UTC"),
                    )),
                }
            }
            ColumnSource::RowCommitVersion => Column::RowTracking {
                materialized: root.map(position),
                default: task.default_row_commit_version.ok_or_else(|| {
                    DeltaError::corrupt(
                        name,
                        None,
                        "the add action has no defaultRowCommitVersion although row tracking \
                         is enabled (spec: \"Row Commit Versions\")",
                    )
                })?,
                add_row_index: false,
            },
        });
    }
    let mask = ProjectionMask::roots(metadata.parquet_schema(), wanted);
    Ok((mask, columns))
}

/// Which of `rows` rows starting at file row `first_row` are read: those of `selected` (all
/// when `None`) that `deleted` does not delete. `None` when every row is.
fn keep_mask(
    deleted: Option<&RoaringTreemap>,
    selected: Option<&RoaringTreemap>,
    first_row: u64,
    rows: usize,
) -> Option<BooleanArray> {
    if deleted.is_none() && selected.is_none() {
        return None;
    }
    let end = first_row + rows as u64;
    // Sets the bits of `bitmap`'s rows within the window to `value`.
    let mark = |bits: &mut BooleanBufferBuilder, bitmap: &RoaringTreemap, value: bool| {
        let mut iter = bitmap.iter();
        iter.advance_to(first_row);
        for row in iter.take_while(|&r| r < end) {
            bits.set_bit((row - first_row) as usize, value);
        }
    };
    let mut bits = BooleanBufferBuilder::new(rows);
    bits.append_n(rows, selected.is_none());
    if let Some(selected) = selected {
        mark(&mut bits, selected, true);
    }
    if let Some(deleted) = deleted {
        mark(&mut bits, deleted, false);
    }
    Some(BooleanArray::new(bits.finish(), None))
}

/// A row tracking column: the materialized value where present, else `default` plus the row
/// index when `row_index` is given (row IDs) or `default` alone (row commit versions).
fn row_tracking(
    materialized: Option<&ArrayRef>,
    default: i64,
    row_index: Option<&Int64Array>,
    len: usize,
) -> Result<ArrayRef, String> {
    let fallback = |i: usize| match row_index {
        Some(index) => default + index.value(i),
        None => default,
    };
    let materialized = match materialized {
        Some(m) => Some(
            arrow::compute::cast(m, &arrow::datatypes::DataType::Int64)
                .map_err(|e| format!("materialized row tracking column: {e}"))?,
        ),
        None => None,
    };
    let values: Int64Array = match &materialized {
        Some(m) => {
            let m = m.as_primitive::<Int64Type>();
            (0..len)
                .map(|i| {
                    Some(if m.is_valid(i) {
                        m.value(i)
                    } else {
                        fallback(i)
                    })
                })
                .collect()
        }
        None => (0..len).map(|i| Some(fallback(i))).collect(),
    };
    Ok(Arc::new(values))
}

fn configure<T>(builder: ArrowReaderBuilder<T>, read: &RowGroupRead) -> ArrowReaderBuilder<T> {
    builder
        .with_projection(read.file.mask.clone())
        .with_row_groups(vec![read.row_group])
        .with_batch_size(BATCH_ROWS)
}

impl RowGroupRead {
    /// Decodes the row group on the runtime's threads (local files on the blocking pool).
    pub async fn run(self) -> DeltaResult<Vec<RecordBatch>> {
        let joined = match self.file.source.clone() {
            #[cfg(unix)]
            Source::Local(reader) => {
                tokio::task::spawn_blocking(move || self.decode_local(reader)).await
            }
            Source::Store(reader) => {
                tokio::spawn(async move { self.decode_store(reader).await }).await
            }
        };
        joined.map_err(|e| DeltaError::Internal(format!("decoding a data file failed: {e}")))?
    }

    fn unreadable(&self, e: &dyn std::fmt::Display) -> DeltaError {
        DeltaError::data_file(&self.file.name, format!("unreadable parquet: {e}"))
    }

    #[cfg(unix)]
    fn decode_local(&self, reader: LocalChunkReader) -> DeltaResult<Vec<RecordBatch>> {
        let builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(reader, self.file.metadata.clone());
        let mut out = Vec::new();
        let mut first_row = self.first_row;
        for raw in configure(builder, self)
            .build()
            .map_err(|e| self.unreadable(&e))?
        {
            let raw = raw.map_err(|e| self.unreadable(&e))?;
            let rows = raw.num_rows() as u64;
            out.extend(self.file.finish(raw, first_row)?);
            first_row += rows;
        }
        Ok(out)
    }

    async fn decode_store(&self, reader: StoreFileReader) -> DeltaResult<Vec<RecordBatch>> {
        let builder =
            ParquetRecordBatchStreamBuilder::new_with_metadata(reader, self.file.metadata.clone());
        let mut stream = configure(builder, self)
            .build()
            .map_err(|e| self.unreadable(&e))?;
        let mut out = Vec::new();
        let mut first_row = self.first_row;
        while let Some(raw) = stream.try_next().await.map_err(|e| self.unreadable(&e))? {
            let rows = raw.num_rows() as u64;
            out.extend(self.file.finish(raw, first_row)?);
            first_row += rows;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_mask_marks_deleted_rows_of_the_window() {
        let deleted: RoaringTreemap = [1u64, 5, 6, 70_000, 1 << 33].into_iter().collect();
        let mask = keep_mask(Some(&deleted), None, 4, 4).unwrap();
        assert_eq!(
            mask.iter().map(Option::unwrap).collect::<Vec<_>>(),
            [true, false, false, true]
        );
        let mask = keep_mask(Some(&deleted), None, 65_536, 8_192).unwrap();
        assert_eq!(mask.false_count(), 1);
        assert!(!mask.value(70_000 - 65_536));
        assert_eq!(
            keep_mask(Some(&deleted), None, 100, 10)
                .unwrap()
                .false_count(),
            0
        );
        assert!(keep_mask(None, None, 0, 10).is_none());
        // Selected rows minus deleted ones: rows 4..8 select {5, 6, 7}, 5 and 6 are deleted.
        let selected: RoaringTreemap = [5u64, 6, 7, 100].into_iter().collect();
        let mask = keep_mask(Some(&deleted), Some(&selected), 4, 4).unwrap();
        assert_eq!(
            mask.iter().map(Option::unwrap).collect::<Vec<_>>(),
            [false, false, false, true]
        );
    }

    #[test]
    fn row_tracking_prefers_materialized_values() {
        let index = Int64Array::from(vec![0, 1, 3]);
        let out = row_tracking(None, 100, Some(&index), 3).unwrap();
        assert_eq!(out.as_primitive::<Int64Type>().values(), &[100, 101, 103]);
        let m: ArrayRef = Arc::new(Int64Array::from(vec![Some(7), None, Some(9)]));
        let out = row_tracking(Some(&m), 100, Some(&index), 3).unwrap();
        assert_eq!(out.as_primitive::<Int64Type>().values(), &[7, 101, 9]);
        let out = row_tracking(Some(&m), 4, None, 3).unwrap();
        assert_eq!(out.as_primitive::<Int64Type>().values(), &[7, 4, 9]);
    }
}
