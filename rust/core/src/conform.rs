//! Bringing Arrow data read from the log to the canonical action schema.
//!
//! Spec: "Checkpoints" ("Any missing column should be treated as null") and "Protocol Evolution"
//! (unknown fields are ignored). Checkpoints written by different engines differ in which
//! optional fields they carry, in integer widths, in map entry names and in string encodings;
//! [`conform`] turns whatever a file holds into exactly the type replay expects.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, MapArray, RecordBatch, StructArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, FieldRef, Fields, SchemaRef};
use arrow::error::ArrowError;

use crate::nulls::shared_null_array;

/// Converts `array` to `target`: struct children matched by name (missing ones null, extra ones
/// dropped), lists and maps converted element-wise, everything else through Arrow's `cast`.
pub fn conform(array: &ArrayRef, target: &DataType) -> Result<ArrayRef, ArrowError> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    match (array.data_type(), target) {
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let source = array.as_struct();
            conform_struct(source, fields).map(|s| Arc::new(s) as ArrayRef)
        }
        (DataType::Map(_, _), DataType::Map(entry_field, sorted)) => {
            let source = array.as_map();
            let DataType::Struct(entry_fields) = entry_field.data_type() else {
                return Err(ArrowError::SchemaError(
                    "map entries must be a struct".into(),
                ));
            };
            let entries = conform_struct(source.entries(), entry_fields)?;
            Ok(Arc::new(MapArray::try_new(
                entry_field.clone(),
                source.offsets().clone(),
                entries,
                source.nulls().cloned(),
                *sorted,
            )?))
        }
        (DataType::List(_), DataType::List(item)) => {
            let source = array.as_list::<i32>();
            let values = conform(source.values(), item.data_type())?;
            Ok(Arc::new(ListArray::try_new(
                item.clone(),
                source.offsets().clone(),
                values,
                source.nulls().cloned(),
            )?))
        }
        (DataType::LargeList(_), DataType::List(_))
        | (DataType::ListView(_), DataType::List(_)) => {
            let as_list = cast(array, &DataType::List(list_item_of(array)?))?;
            conform(&as_list, target)
        }
        _ => cast(array, target),
    }
}

fn list_item_of(array: &ArrayRef) -> Result<FieldRef, ArrowError> {
    match array.data_type() {
        DataType::LargeList(f) | DataType::ListView(f) | DataType::List(f) => Ok(f.clone()),
        other => Err(ArrowError::SchemaError(format!("not a list: {other}"))),
    }
}

/// Struct-to-struct conversion by field name.
pub fn conform_struct(source: &StructArray, fields: &Fields) -> Result<StructArray, ArrowError> {
    let len = source.len();
    let columns = fields
        .iter()
        .map(|f| match source.column_by_name(f.name()) {
            Some(col) => conform(col, f.data_type()),
            None => Ok(shared_null_array(f.data_type(), len)),
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Children of a struct are nullable in the canonical schema, so nulls inherited from a
    // source that lacks a field are always legal.
    StructArray::try_new_with_length(fields.clone(), columns, source.nulls().cloned(), len)
}

/// Converts a whole batch to `schema` (columns by name, missing columns null).
pub fn conform_batch(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
    let columns = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(col) => conform(col, f.data_type()),
            None => Ok(shared_null_array(f.data_type(), batch.num_rows())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    #[test]
    fn missing_fields_become_null_and_ints_widen() {
        let source = StructArray::from(vec![(
            Arc::new(Field::new("a", DataType::Int32, true)),
            Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
        )]);
        let target = DataType::Struct(Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ]));
        let out = conform(&(Arc::new(source) as ArrayRef), &target).unwrap();
        let s = out.as_struct();
        assert_eq!(s.column(0).data_type(), &DataType::Int64);
        assert_eq!(s.column(1).null_count(), 2);
    }

    #[test]
    fn batch_gets_missing_columns() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Utf8, true)]));
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("y", DataType::Utf8, true)])),
            vec![Arc::new(StringArray::from(vec!["q"])) as ArrayRef],
        )
        .unwrap();
        let out = conform_batch(&batch, &schema).unwrap();
        assert_eq!(out.num_rows(), 1);
        assert!(out.column(0).is_null(0));
    }
}
