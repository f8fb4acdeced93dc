//! Column mapping on the write side: physical names and ids for new columns, and batches of
//! logical columns turned into the physical columns data files store.
//!
//! Spec: "Column Mapping" and "Writer Requirements for Column Mapping": every column (nested
//! fields included) gets a unique `delta.columnMapping.id` and a `delta.columnMapping.physicalName`
//! when the table is created with mode `name` or `id` (and when columns are added later), the
//! largest id is kept in `delta.columnMapping.maxColumnId`; data files use the physical names,
//! and parquet field ids equal to the column ids (required in `id` mode, written in `name`
//! mode too, as Delta Spark does); statistics and `partitionValues` use physical names.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{make_array, Array, ArrayData, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};

use crate::error::{DeltaError, DeltaResult};
use crate::model::Metadata;
use crate::schema::{
    ColumnMappingMode, COLUMN_ID_KEY, COLUMN_MAPPING_MODE_KEY, PARQUET_FIELD_ID_KEY,
    PHYSICAL_NAME_KEY,
};

/// Table property holding the largest column id in use.
pub const MAX_COLUMN_ID: &str = "delta.columnMapping.maxColumnId";

/// The column mapping mode a new table's configuration asks for.
pub fn mode_of_config(config: &BTreeMap<String, String>) -> DeltaResult<ColumnMappingMode> {
    ColumnMappingMode::from_property(config.get(COLUMN_MAPPING_MODE_KEY).map(String::as_str))
        .map_err(|e| DeltaError::InvalidArgument(e.0))
}

/// `fields` with an id and a physical name on every field that has none (nested struct fields
/// included), ids counting up from `*max_id + 1`; `*max_id` ends at the largest id used.
pub fn assign_ids(fields: &Fields, max_id: &mut i64) -> Fields {
    fields
        .iter()
        .map(|f| {
            let mut meta = f.metadata().clone();
            if !meta.contains_key(COLUMN_ID_KEY) {
                *max_id += 1;
                meta.insert(COLUMN_ID_KEY, max_id.to_string());
            }
            if !meta.contains_key(PHYSICAL_NAME_KEY) {
                meta.insert(PHYSICAL_NAME_KEY, format!("col-{}", uuid::Uuid::new_v4()));
            }
            let data_type = assign_in_type(f.data_type(), max_id);
            Arc::new(
                f.as_ref()
                    .clone()
                    .with_data_type(data_type)
                    .with_metadata(meta),
            )
        })
        .collect()
}

fn assign_in_type(dt: &DataType, max_id: &mut i64) -> DataType {
    map_nested_structs(dt, &mut |children| assign_ids(children, max_id))
}

/// `dt` with `f` applied to the fields of every struct nested in it: directly, as a list's
/// element, or as a map's key or value. Map entries themselves are not Delta fields ("Schema
/// Serialization Format": a map has a key type and a value type), so `f` never sees them.
pub(crate) fn map_nested_structs(dt: &DataType, f: &mut dyn FnMut(&Fields) -> Fields) -> DataType {
    let inner = |field: &FieldRef, f: &mut dyn FnMut(&Fields) -> Fields| {
        Arc::new(
            field
                .as_ref()
                .clone()
                .with_data_type(map_nested_structs(field.data_type(), f)),
        )
    };
    match dt {
        DataType::Struct(children) => DataType::Struct(f(children)),
        DataType::List(item) => DataType::List(inner(item, f)),
        DataType::Map(entries, sorted) => match entries.data_type() {
            DataType::Struct(kv) => {
                let kv: Fields = kv.iter().map(|field| inner(field, f)).collect();
                map_with_entries(entries, kv, *sorted)
            }
            _ => dt.clone(),
        },
        other => other.clone(),
    }
}

/// A map type like the one of `entries` with key and value fields `kv`.
fn map_with_entries(entries: &FieldRef, kv: Fields, sorted: bool) -> DataType {
    DataType::Map(
        Arc::new(
            entries
                .as_ref()
                .clone()
                .with_data_type(DataType::Struct(kv)),
        ),
        sorted,
    )
}

/// The largest column id of `fields` (0 when none has one).
pub fn max_id_of(fields: &Fields) -> i64 {
    max_over_fields(fields, &|f| {
        f.metadata()
            .get(COLUMN_ID_KEY)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
    })
}

/// The largest `own(field)` over `fields` and every field nested in them (struct children,
/// list elements, map entries and their keys and values); 0 when there are none.
pub(crate) fn max_over_fields(fields: &Fields, own: &dyn Fn(&Field) -> i64) -> i64 {
    fields
        .iter()
        .map(|f| {
            let nested = match f.data_type() {
                DataType::Struct(c) => max_over_fields(c, own),
                DataType::List(item) => max_over_fields(&Fields::from(vec![item.clone()]), own),
                DataType::Map(entries, _) => {
                    max_over_fields(&Fields::from(vec![entries.clone()]), own)
                }
                _ => 0,
            };
            own(f).max(nested)
        })
        .max()
        .unwrap_or(0)
}

/// The physical field for output field `output` of logical field `logical`: the physical
/// name, the column id as the parquet field id, nested fields likewise.
fn physical_field(
    logical: &Field,
    output: &Field,
    mode: ColumnMappingMode,
) -> DeltaResult<FieldRef> {
    let meta = logical.metadata();
    let name = meta.get(PHYSICAL_NAME_KEY).ok_or_else(|| {
        DeltaError::corrupt(
            "_delta_log",
            None,
            format!(
                "column {:?} has no {PHYSICAL_NAME_KEY} although column mapping mode is {} \
                 (spec: \"Column Mapping\")",
                logical.name(),
                mode.as_str()
            ),
        )
    })?;
    let mut out_meta = HashMap::new();
    if let Some(id) = meta.get(COLUMN_ID_KEY) {
        out_meta.insert(PARQUET_FIELD_ID_KEY.to_string(), id.clone());
    }
    let data_type = physical_type(logical.data_type(), output.data_type(), mode)?;
    // icebergCompatV2: array elements and map keys and values carry their nested ids as
    // parquet field ids ("Writer Requirements for IcebergCompatV2").
    let ids = crate::writer_features::iceberg::nested_ids_of(logical);
    let data_type = if ids.is_empty() {
        data_type
    } else {
        with_nested_field_ids(&data_type, name, &ids)
    };
    Ok(Arc::new(
        Field::new(name, data_type, output.is_nullable()).with_metadata(out_meta),
    ))
}

fn physical_type(
    logical: &DataType,
    output: &DataType,
    mode: ColumnMappingMode,
) -> DeltaResult<DataType> {
    Ok(match (logical, output) {
        (DataType::Struct(l), DataType::Struct(o)) => DataType::Struct(
            l.iter()
                .zip(o.iter())
                .map(|(l, o)| physical_field(l, o, mode))
                .collect::<DeltaResult<Vec<_>>>()?
                .into(),
        ),
        (DataType::List(l), DataType::List(o)) => DataType::List(Arc::new(
            o.as_ref()
                .clone()
                .with_data_type(physical_type(l.data_type(), o.data_type(), mode)?),
        )),
        // Map entries: key and value are not Delta fields (no physical names of their own);
        // only the types inside them map.
        (DataType::Map(l, _), DataType::Map(o, sorted)) => match (l.data_type(), o.data_type()) {
            (DataType::Struct(lkv), DataType::Struct(okv)) if lkv.len() == okv.len() => {
                let kv: Fields = lkv
                    .iter()
                    .zip(okv.iter())
                    .map(|(l, o)| {
                        Ok(Arc::new(o.as_ref().clone().with_data_type(physical_type(
                            l.data_type(),
                            o.data_type(),
                            mode,
                        )?)))
                    })
                    .collect::<DeltaResult<Vec<FieldRef>>>()?
                    .into();
                DataType::Map(
                    Arc::new(o.as_ref().clone().with_data_type(DataType::Struct(kv))),
                    *sorted,
                )
            }
            _ => output.clone(),
        },
        // Map entries: key and value are not Delta fields; only their types map.
        _ => output.clone(),
    })
}

/// `dt` with the parquet field ids of `ids` (keyed by path under `path`) on its array
/// elements and map keys and values, down to the next struct.
fn with_nested_field_ids(
    dt: &DataType,
    path: &str,
    ids: &std::collections::BTreeMap<String, i64>,
) -> DataType {
    let tagged = |f: &Field, key: String| -> FieldRef {
        let inner = with_nested_field_ids(f.data_type(), &key, ids);
        let mut meta = f.metadata().clone();
        if let Some(id) = ids.get(&key) {
            meta.insert(PARQUET_FIELD_ID_KEY.to_string(), id.to_string());
        }
        Arc::new(f.clone().with_data_type(inner).with_metadata(meta))
    };
    match dt {
        DataType::List(item) => DataType::List(tagged(item, format!("{path}.element"))),
        DataType::LargeList(item) => DataType::LargeList(tagged(item, format!("{path}.element"))),
        DataType::Map(entries, sorted) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                let kv: Fields = vec![
                    tagged(&kv[0], format!("{path}.key")),
                    tagged(&kv[1], format!("{path}.value")),
                ]
                .into();
                map_with_entries(entries, kv, *sorted)
            }
            _ => dt.clone(),
        },
        _ => dt.clone(),
    }
}

/// The physical schema of data files holding the output columns `output` of the logical
/// table schema `logical` (same order); `output` itself when there is no column mapping.
pub fn physical_output_schema(
    logical: &Schema,
    output: &SchemaRef,
    mode: ColumnMappingMode,
) -> DeltaResult<SchemaRef> {
    if mode == ColumnMappingMode::None {
        return Ok(output.clone());
    }
    let fields = output
        .fields()
        .iter()
        .map(|o| {
            let l = logical.field_with_name(o.name()).map_err(|_| {
                DeltaError::Internal(format!("output column {:?} is not in the table", o.name()))
            })?;
            physical_field(l, o, mode)
        })
        .collect::<DeltaResult<Vec<_>>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// The physical name of top-level column `name` (itself without column mapping).
pub fn physical_name(logical: &Schema, name: &str, mode: ColumnMappingMode) -> String {
    if mode == ColumnMappingMode::None {
        return name.to_string();
    }
    logical
        .field_with_name(name)
        .ok()
        .and_then(|f| f.metadata().get(PHYSICAL_NAME_KEY).cloned())
        .unwrap_or_else(|| name.to_string())
}

/// `data` with its type replaced by `target`, which differs only in field names and metadata.
fn retype(data: ArrayData, target: &DataType) -> DeltaResult<ArrayData> {
    let children: Vec<ArrayData> = match target {
        DataType::Struct(fields) => data
            .child_data()
            .iter()
            .zip(fields.iter())
            .map(|(c, f)| retype(c.clone(), f.data_type()))
            .collect::<DeltaResult<_>>()?,
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => data
            .child_data()
            .iter()
            .map(|c| retype(c.clone(), f.data_type()))
            .collect::<DeltaResult<_>>()?,
        _ => data.child_data().to_vec(),
    };
    Ok(data
        .into_builder()
        .data_type(target.clone())
        .child_data(children)
        .build()?)
}

/// `batch` (output columns) as a batch of `physical` ([`physical_output_schema`]).
pub fn to_physical(batch: &RecordBatch, physical: &SchemaRef) -> DeltaResult<RecordBatch> {
    if batch.schema().as_ref() == physical.as_ref() {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .zip(physical.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(c.clone())
            } else {
                retype(c.to_data(), f.data_type()).map(make_array)
            }
        })
        .collect::<DeltaResult<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        physical.clone(),
        columns,
        &options,
    )?)
}

/// The table's metadata without column mapping: mode `none`, no `maxColumnId`, and no column
/// ids, physical names or nested ids in the schema (DROP FEATURE columnMapping; the files must
/// be rewritten with the logical names in the same commit).
pub fn without_column_mapping(snapshot: &crate::snapshot::Snapshot) -> DeltaResult<Metadata> {
    if snapshot.column_mapping_mode()? == ColumnMappingMode::None {
        return Err(DeltaError::InvalidArgument(
            "the table does not use column mapping (delta.columnMapping.mode is none)".into(),
        ));
    }
    let metadata = snapshot.metadata()?.clone();
    let text = metadata.schema_string.clone().unwrap_or_default();
    let mut schema: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        DeltaError::corrupt("schemaString", Some(snapshot.version()), e.to_string())
    })?;
    strip_mapping(&mut schema);
    let mut configuration = metadata.configuration.clone();
    configuration.insert(COLUMN_MAPPING_MODE_KEY.to_string(), "none".to_string());
    configuration.remove(MAX_COLUMN_ID);
    Ok(Metadata {
        schema_string: Some(schema.to_string()),
        configuration,
        ..metadata
    })
}

/// Removes the column mapping keys from every field's metadata, at any depth.
fn strip_mapping(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(meta)) = map.get_mut("metadata") {
                meta.retain(|k, _| {
                    !k.starts_with("delta.columnMapping.") && k != PARQUET_FIELD_ID_KEY
                });
            }
            for (key, child) in map.iter_mut() {
                if key != "metadata" {
                    strip_mapping(child);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_mapping),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, StructArray};

    #[test]
    fn map_entries_get_no_ids_but_structs_inside_do() {
        let value = DataType::Struct(Fields::from(vec![Field::new("v", DataType::Int32, true)]));
        let map = crate::schema::map_type(DataType::Utf8, value, true);
        let mut max = 0;
        let fields = assign_ids(&Fields::from(vec![Field::new("m", map, true)]), &mut max);
        assert_eq!(
            max, 2,
            "the map column and the struct field inside its value"
        );
        let DataType::Map(entries, _) = fields[0].data_type() else {
            panic!("a map")
        };
        let DataType::Struct(kv) = entries.data_type() else {
            panic!("entries")
        };
        assert!(kv.iter().all(|f| !f.metadata().contains_key(COLUMN_ID_KEY)));
        let DataType::Struct(inner) = kv[1].data_type() else {
            panic!("value struct")
        };
        assert_eq!(
            inner[0].metadata().get(COLUMN_ID_KEY).map(String::as_str),
            Some("2")
        );
    }

    #[test]
    fn ids_and_physical_names_for_every_field() {
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new(
                "s",
                DataType::Struct(vec![Field::new("x", DataType::Int64, true)].into()),
                true,
            ),
        ]);
        let mut max = 0;
        let assigned = assign_ids(&fields, &mut max);
        assert_eq!(max, 3);
        assert_eq!(max_id_of(&assigned), 3);
        let DataType::Struct(inner) = assigned[1].data_type() else {
            panic!()
        };
        assert_eq!(inner[0].metadata()[COLUMN_ID_KEY], "3");
        assert!(inner[0].metadata()[PHYSICAL_NAME_KEY].starts_with("col-"));
        // Already mapped fields keep their ids.
        let again = assign_ids(&assigned, &mut max);
        assert_eq!(again, assigned);

        let logical = Schema::new(assigned.clone());
        let output = Arc::new(Schema::new(
            assigned
                .iter()
                .map(|f| crate::scan::columns::output_field(f))
                .collect::<Vec<_>>(),
        ));
        let physical = physical_output_schema(&logical, &output, ColumnMappingMode::Id).unwrap();
        assert_eq!(physical.field(0).metadata()[PARQUET_FIELD_ID_KEY], "1");
        assert_eq!(
            physical.field(0).name(),
            &assigned[0].metadata()[PHYSICAL_NAME_KEY]
        );
        let inner_array = StructArray::from(vec![(
            Arc::new(Field::new("x", DataType::Int64, true)),
            Arc::new(Int64Array::from(vec![5])) as ArrayRef,
        )]);
        let batch = RecordBatch::try_new(
            output.clone(),
            vec![Arc::new(Int64Array::from(vec![1])), Arc::new(inner_array)],
        )
        .unwrap();
        let converted = to_physical(&batch, &physical).unwrap();
        assert_eq!(converted.schema(), physical);
        assert_eq!(converted.column(1).as_ref().len(), 1);
    }
}
