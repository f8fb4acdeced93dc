//! The active files of a snapshot as one flat Arrow table.
//!
//! Spec: "Add File and Remove File" (fields; paths URI-decoded), "Per-file Statistics" (parsed
//! once by [`crate::stats`], shown here by logical column name), "Deletion Vector Descriptor
//! Schema". Columns are shared with the snapshot, so the table costs no copy but for paths that
//! need decoding.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray, StructArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::error::{DeltaError, DeltaResult};
use crate::nulls::shared_null_array;
use crate::paths::decode_uri_path;
use crate::snapshot::files::FileBatch;
use crate::snapshot::Snapshot;

/// Column names of the output.
pub mod columns {
    pub const PATH: &str = "path";
    pub const SIZE: &str = "size";
    pub const MODIFICATION_TIME: &str = "modification_time";
    pub const DATA_CHANGE: &str = "data_change";
    pub const PARTITION_VALUES: &str = "partition_values";
    pub const NUM_RECORDS: &str = "num_records";
    pub const NULL_COUNT: &str = "null_count";
    pub const MIN: &str = "min";
    pub const MAX: &str = "max";
    pub const TIGHT_BOUNDS: &str = "tight_bounds";
    pub const DELETION_VECTOR: &str = "deletion_vector";
    pub const BASE_ROW_ID: &str = "base_row_id";
    pub const DEFAULT_ROW_COMMIT_VERSION: &str = "default_row_commit_version";
    pub const TAGS: &str = "tags";
    pub const CLUSTERING_PROVIDER: &str = "clustering_provider";
}

/// The output schema for a table whose statistics have the given logical type.
fn output_schema(stats: &DataType, add_fields: &Fields) -> SchemaRef {
    let stat = |name: &str| match stats {
        DataType::Struct(f) => f
            .iter()
            .find(|f| f.name() == name)
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Null),
        _ => DataType::Null,
    };
    let field_type = |name: &str| {
        add_fields
            .iter()
            .find(|f| f.name() == name)
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Null)
    };
    let dv_fields = Fields::from(vec![
        Field::new("storage_type", DataType::Utf8, true),
        Field::new("path_or_inline_dv", DataType::Utf8, true),
        Field::new("offset", DataType::Int32, true),
        Field::new("size_in_bytes", DataType::Int32, true),
        Field::new("cardinality", DataType::Int64, true),
    ]);
    Arc::new(Schema::new(vec![
        Field::new(columns::PATH, DataType::Utf8, false),
        Field::new(columns::SIZE, DataType::Int64, true),
        Field::new(
            columns::MODIFICATION_TIME,
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new(columns::DATA_CHANGE, DataType::Boolean, true),
        Field::new(
            columns::PARTITION_VALUES,
            field_type("partitionValues"),
            true,
        ),
        Field::new(columns::NUM_RECORDS, DataType::Int64, true),
        Field::new(columns::NULL_COUNT, stat("nullCount"), true),
        Field::new(columns::MIN, stat("minValues"), true),
        Field::new(columns::MAX, stat("maxValues"), true),
        Field::new(columns::TIGHT_BOUNDS, DataType::Boolean, true),
        Field::new(columns::DELETION_VECTOR, DataType::Struct(dv_fields), true),
        Field::new(columns::BASE_ROW_ID, DataType::Int64, true),
        Field::new(columns::DEFAULT_ROW_COMMIT_VERSION, DataType::Int64, true),
        Field::new(columns::TAGS, field_type("tags"), true),
        Field::new(columns::CLUSTERING_PROVIDER, DataType::Utf8, true),
    ]))
}

/// Decoded paths of an add batch; the input column is reused when nothing needs decoding.
fn decoded_paths(add: &StructArray, origin: &str) -> DeltaResult<ArrayRef> {
    let col = add
        .column_by_name("path")
        .ok_or_else(|| DeltaError::Internal("add without path column".into()))?;
    let paths = col.as_string::<i32>();
    // One search over the column's bytes rather than one per path.
    let offsets = paths.value_offsets();
    let (first, last) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
    if memchr::memchr(b'%', &paths.value_data()[first..last]).is_none() {
        return Ok(col.clone());
    }
    let decoded = paths
        .iter()
        .map(|p| {
            p.map(|p| decode_uri_path(p).map(|c| c.into_owned()))
                .transpose()
        })
        .collect::<Result<Vec<Option<String>>, String>>()
        .map_err(|rule| DeltaError::corrupt(origin, None, rule))?;
    Ok(Arc::new(StringArray::from(decoded)))
}

/// Builds the add-actions table of `snapshot`: one batch per internal batch of active files.
/// Columns are shared with the snapshot (zero-copy) except decoded paths.
pub fn add_actions_table(snapshot: &Snapshot) -> DeltaResult<(SchemaRef, Vec<RecordBatch>)> {
    let stats_type = snapshot.stats_schema().logical_type();
    let schema = output_schema(&stats_type, &crate::log::actions::add_fields());
    let batches = snapshot
        .files()
        .iter()
        .map(|f| flatten(f, snapshot, &schema))
        .collect::<DeltaResult<Vec<_>>>()?;
    Ok((schema, batches))
}

fn flatten(files: &FileBatch, snapshot: &Snapshot, schema: &SchemaRef) -> DeltaResult<RecordBatch> {
    let add = &files.adds;
    let len = add.len();
    let col = |name: &str| add.column_by_name(name).cloned();
    let field_type = |name: &str| -> DeltaResult<DataType> {
        Ok(schema.field_with_name(name)?.data_type().clone())
    };
    let or_null = |c: Option<ArrayRef>, dt: &DataType| -> DeltaResult<ArrayRef> {
        Ok(match c {
            Some(c) if c.data_type() == dt => c,
            Some(c) => cast(&c, dt)?,
            None => shared_null_array(dt, len),
        })
    };
    let stats = snapshot.stats_schema().to_logical(&files.stats);
    let stats = stats.as_struct();
    let dv_type = field_type(columns::DELETION_VECTOR)?;
    let dv = match (col("deletionVector"), &dv_type) {
        (Some(dv), DataType::Struct(fields)) => {
            let dv = dv.as_struct();
            Arc::new(StructArray::try_new_with_length(
                fields.clone(),
                dv.columns().to_vec(),
                dv.nulls().cloned(),
                len,
            )?) as ArrayRef
        }
        _ => shared_null_array(&dv_type, len),
    };
    let columns: Vec<ArrayRef> = vec![
        decoded_paths(add, "add.path")?,
        or_null(col("size"), &DataType::Int64)?,
        or_null(
            col("modificationTime"),
            &field_type(columns::MODIFICATION_TIME)?,
        )?,
        or_null(col("dataChange"), &DataType::Boolean)?,
        or_null(
            col("partitionValues"),
            &field_type(columns::PARTITION_VALUES)?,
        )?,
        or_null(
            stats.column_by_name("numRecords").cloned(),
            &DataType::Int64,
        )?,
        or_null(
            stats.column_by_name("nullCount").cloned(),
            &field_type(columns::NULL_COUNT)?,
        )?,
        or_null(
            stats.column_by_name("minValues").cloned(),
            &field_type(columns::MIN)?,
        )?,
        or_null(
            stats.column_by_name("maxValues").cloned(),
            &field_type(columns::MAX)?,
        )?,
        or_null(
            stats.column_by_name("tightBounds").cloned(),
            &DataType::Boolean,
        )?,
        dv,
        or_null(col("baseRowId"), &DataType::Int64)?,
        or_null(col("defaultRowCommitVersion"), &DataType::Int64)?,
        or_null(col("tags"), &field_type(columns::TAGS)?)?,
        or_null(col("clusteringProvider"), &DataType::Utf8)?,
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// The decoded paths of the active files.
pub fn file_paths(snapshot: &Snapshot) -> DeltaResult<Vec<String>> {
    let mut out = Vec::with_capacity(snapshot.num_files());
    for files in snapshot.files() {
        let paths = decoded_paths(&files.adds, "add.path")?;
        let paths = paths.as_string::<i32>();
        out.extend(paths.iter().flatten().map(str::to_string));
    }
    Ok(out)
}
