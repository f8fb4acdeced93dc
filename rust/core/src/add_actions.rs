//! The active files of a snapshot as one flat Arrow table, with parsed statistics.
//!
//! Spec: "Add File and Remove File" (fields), "Per-file Statistics" (`numRecords`,
//! `minValues`, `maxValues`, `nullCount`, `tightBounds`; keyed by physical column names under
//! column mapping, see "Reader Requirements for Column Mapping"), "Deletion Vector Descriptor
//! Schema". Paths are URI-decoded. Statistics that do not parse against the table schema are
//! reported as null for that file rather than failing the whole listing: they are an optional
//! optimisation ("stats ... optional"), not table content.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, RecordBatch, StringArray, StructArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use arrow::json::ReaderBuilder;

use crate::error::{DeltaError, DeltaResult};
use crate::paths::decode_uri_path;
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

/// The statistics types derived from a table schema: physical names (as in the log) and
/// logical names (as shown to users), field for field in the same positions.
#[derive(Debug, Clone)]
struct StatsTypes {
    /// `{numRecords, minValues, maxValues, nullCount, tightBounds}` with physical names.
    json_schema: SchemaRef,
    min_max_logical: DataType,
    null_count_logical: DataType,
}

/// Whether min/max statistics are kept for a type ("Per-file Statistics": leaf values of
/// primitive columns; binary and boolean columns carry none in practice).
fn has_min_max(dt: &DataType) -> bool {
    !matches!(
        dt,
        DataType::Binary | DataType::Boolean | DataType::List(_) | DataType::Map(_, _)
    )
}

/// Min/max type of a physical/logical field pair, `None` when the field has no min/max.
fn min_max_fields(physical: &Fields, logical: &Fields) -> (Fields, Fields) {
    let mut p_out = Vec::new();
    let mut l_out = Vec::new();
    for (p, l) in physical.iter().zip(logical.iter()) {
        match (p.data_type(), l.data_type()) {
            (DataType::Struct(pc), DataType::Struct(lc)) => {
                let (pf, lf) = min_max_fields(pc, lc);
                if !pf.is_empty() {
                    p_out.push(Field::new(p.name(), DataType::Struct(pf), true));
                    l_out.push(Field::new(l.name(), DataType::Struct(lf), true));
                }
            }
            (dt, _) if has_min_max(dt) => {
                p_out.push(Field::new(p.name(), json_decodable(dt), true));
                l_out.push(Field::new(l.name(), dt.clone(), true));
            }
            _ => {}
        }
    }
    (Fields::from(p_out), Fields::from(l_out))
}

/// The type statistics are decoded as: zoned timestamps with a fixed offset, since the JSON
/// decoder resolves only offsets (`"UTC"` and `"+00:00"` are the same instant; the logical type
/// is restored by [`rename`]).
fn json_decodable(dt: &DataType) -> DataType {
    match dt {
        DataType::Timestamp(unit, Some(_)) => DataType::Timestamp(*unit, Some("+00:00".into())),
        other => other.clone(),
    }
}

fn null_count_fields(physical: &Fields, logical: &Fields) -> (Fields, Fields) {
    let mut p_out = Vec::new();
    let mut l_out = Vec::new();
    for (p, l) in physical.iter().zip(logical.iter()) {
        match (p.data_type(), l.data_type()) {
            (DataType::Struct(pc), DataType::Struct(lc)) => {
                let (pf, lf) = null_count_fields(pc, lc);
                p_out.push(Field::new(p.name(), DataType::Struct(pf), true));
                l_out.push(Field::new(l.name(), DataType::Struct(lf), true));
            }
            _ => {
                p_out.push(Field::new(p.name(), DataType::Int64, true));
                l_out.push(Field::new(l.name(), DataType::Int64, true));
            }
        }
    }
    (Fields::from(p_out), Fields::from(l_out))
}

fn stats_types(physical: &Schema, logical: &Schema) -> StatsTypes {
    let (mm_p, mm_l) = min_max_fields(physical.fields(), logical.fields());
    let (nc_p, nc_l) = null_count_fields(physical.fields(), logical.fields());
    let json_schema = Arc::new(Schema::new(vec![
        Field::new("numRecords", DataType::Int64, true),
        Field::new("minValues", DataType::Struct(mm_p.clone()), true),
        Field::new("maxValues", DataType::Struct(mm_p), true),
        Field::new("nullCount", DataType::Struct(nc_p), true),
        Field::new("tightBounds", DataType::Boolean, true),
    ]));
    StatsTypes {
        json_schema,
        min_max_logical: DataType::Struct(mm_l),
        null_count_logical: DataType::Struct(nc_l),
    }
}

/// Gives a struct array the field names and leaf types of `target` (same shape, by position).
fn rename(array: &ArrayRef, target: &DataType) -> ArrayRef {
    match (array.as_struct_opt(), target) {
        (Some(s), DataType::Struct(fields)) => {
            let children: Vec<ArrayRef> = s
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| rename(c, f.data_type()))
                .collect();
            match StructArray::try_new_with_length(
                fields.clone(),
                children,
                s.nulls().cloned(),
                s.len(),
            ) {
                Ok(renamed) => Arc::new(renamed),
                // Same shape by construction; keep the physical names if it ever differs.
                Err(_) => array.clone(),
            }
        }
        (None, t) if array.data_type() != t => cast(array, t).unwrap_or_else(|_| array.clone()),
        _ => array.clone(),
    }
}

/// Decodes the `stats` strings of one add batch; rows whose statistics are absent or do not
/// parse are null.
fn decode_stats(
    stats: Option<&ArrayRef>,
    len: usize,
    types: &StatsTypes,
) -> DeltaResult<RecordBatch> {
    let strings = stats.and_then(|s| s.as_string_opt::<i32>());
    let text_of = |row: usize| -> &str {
        match strings {
            Some(s) if s.is_valid(row) && !s.value(row).trim().is_empty() => s.value(row),
            _ => "{}",
        }
    };
    let decode =
        |text: &[u8], rows: usize| -> Result<Option<RecordBatch>, arrow::error::ArrowError> {
            let mut decoder = ReaderBuilder::new(types.json_schema.clone())
                .with_batch_size(rows.max(1))
                .build_decoder()?;
            decoder.decode(text)?;
            let batch = decoder.flush()?;
            Ok(batch.filter(|b| b.num_rows() == rows))
        };
    let mut buf = Vec::with_capacity(len * 64);
    for row in 0..len {
        buf.extend_from_slice(text_of(row).as_bytes());
        buf.push(b'\n');
    }
    if let Ok(Some(batch)) = decode(&buf, len) {
        return Ok(batch);
    }
    // Slow path: something does not parse; decode row by row and null out the bad rows.
    let mut parts = Vec::with_capacity(len);
    let empty = decode(b"{}\n", 1)?
        .ok_or_else(|| DeltaError::Internal("empty statistics did not decode".into()))?;
    for row in 0..len {
        let one = decode(text_of(row).as_bytes(), 1).ok().flatten();
        parts.push(one.unwrap_or_else(|| empty.clone()));
    }
    Ok(arrow::compute::concat_batches(&types.json_schema, &parts)?)
}

/// The output schema for a table whose statistics have the given logical types.
fn output_schema(types: &StatsTypes, add_fields: &Fields) -> SchemaRef {
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
        Field::new(columns::NULL_COUNT, types.null_count_logical.clone(), true),
        Field::new(columns::MIN, types.min_max_logical.clone(), true),
        Field::new(columns::MAX, types.min_max_logical.clone(), true),
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
    if !paths.iter().flatten().any(|p| p.contains('%')) {
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
pub fn add_actions_table(snapshot: &Snapshot) -> DeltaResult<(SchemaRef, Vec<RecordBatch>)> {
    // Without a usable schema (legacy logs), statistics are not interpreted.
    let (physical, logical) = match (snapshot.physical_schema(), snapshot.schema()) {
        (Ok(p), Ok(l)) => (p, l.as_ref().clone()),
        _ => (Schema::empty(), Schema::empty()),
    };
    let types = stats_types(&physical, &logical);
    let add_fields = crate::actions::add_fields();
    let schema = output_schema(&types, &add_fields);
    let adds = snapshot.adds();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(adds.len().max(1));
    let chunk = adds.len().div_ceil(threads).max(1);
    let results: Vec<DeltaResult<Vec<RecordBatch>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = adds
            .chunks(chunk)
            .map(|part| {
                let schema = schema.clone();
                let types = &types;
                scope.spawn(move || {
                    part.iter()
                        .map(|add| flatten_adds(add, types, &schema))
                        .collect::<DeltaResult<Vec<_>>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(DeltaError::Internal("statistics thread panicked".into()))
                })
            })
            .collect()
    });
    let mut batches = Vec::with_capacity(adds.len());
    for r in results {
        batches.extend(r?);
    }
    Ok((schema, batches))
}

fn flatten_adds(
    add: &StructArray,
    types: &StatsTypes,
    schema: &SchemaRef,
) -> DeltaResult<RecordBatch> {
    let len = add.len();
    let col = |name: &str| add.column_by_name(name).cloned();
    let or_null = |c: Option<ArrayRef>, dt: &DataType| -> DeltaResult<ArrayRef> {
        Ok(match c {
            Some(c) if c.data_type() == dt => c,
            Some(c) => cast(&c, dt)?,
            None => new_null_array(dt, len),
        })
    };
    let stats = decode_stats(add.column_by_name("stats"), len, types)?;
    let stat = |name: &str| stats.column_by_name(name).cloned();
    let dv_type = schema
        .field_with_name(columns::DELETION_VECTOR)?
        .data_type()
        .clone();
    let dv = match (col("deletionVector"), &dv_type) {
        (Some(dv), DataType::Struct(fields)) => rename(&dv, &DataType::Struct(fields.clone())),
        _ => new_null_array(&dv_type, len),
    };
    let field_type = |name: &str| -> DeltaResult<DataType> {
        Ok(schema.field_with_name(name)?.data_type().clone())
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
        or_null(stat("numRecords"), &DataType::Int64)?,
        logical_stat(&stats, "nullCount", &types.null_count_logical, len),
        logical_stat(&stats, "minValues", &types.min_max_logical, len),
        logical_stat(&stats, "maxValues", &types.min_max_logical, len),
        or_null(stat("tightBounds"), &DataType::Boolean)?,
        dv,
        or_null(col("baseRowId"), &DataType::Int64)?,
        or_null(col("defaultRowCommitVersion"), &DataType::Int64)?,
        or_null(col("tags"), &field_type(columns::TAGS)?)?,
        or_null(col("clusteringProvider"), &DataType::Utf8)?,
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// A statistics struct with logical names (null when the statistics lack it).
fn logical_stat(stats: &RecordBatch, name: &str, logical: &DataType, len: usize) -> ArrayRef {
    match stats.column_by_name(name) {
        Some(c) => rename(c, logical),
        None => new_null_array(logical, len),
    }
}

/// The decoded paths of the active files.
pub fn file_paths(snapshot: &Snapshot) -> DeltaResult<Vec<String>> {
    let mut out = Vec::with_capacity(snapshot.num_files());
    for add in snapshot.adds() {
        let paths = decoded_paths(add, "add.path")?;
        let paths = paths.as_string::<i32>();
        out.extend(paths.iter().flatten().map(str::to_string));
    }
    Ok(out)
}
