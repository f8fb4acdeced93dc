//! Columns of data files as the table's logical columns.
//!
//! Spec: "Reader Requirements for Column Mapping" (mode `none`: by display name; `name`: by
//! `delta.columnMapping.physicalName`; `id`: by parquet field id = `delta.columnMapping.id`;
//! columns a file lacks read as nulls, at every nesting level), "Delta Data Type to Parquet
//! Type Mappings" (int96 or int64 timestamps of any unit, 2- and 3-level lists and maps) and
//! "Timestamp without timezone (TimestampNtz)".
//!
//! [`to_logical`] walks a decoded array and the logical type together: struct children are
//! found by the mode's key and renamed to their logical names, missing ones become nulls, list
//! elements and map entries are converted element-wise, and leaves are converted to the logical
//! type where the conversion cannot lose information (integer widths, float to double,
//! timestamp units and time zone annotation, decimal widening, string encodings). Anything else
//! is an error: a file whose column cannot be reconciled with the table's schema is never read
//! as something else.
//!
//! Output types carry no field metadata and are nullable throughout (map keys excepted): a
//! file may lack a column declared `NOT NULL` (it then reads as nulls), so the declared
//! nullability cannot be promised for every file. Delta Spark's file scans do the same.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, ListArray, MapArray, StructArray,
    TimestampMicrosecondArray,
};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, TimeUnit};

use crate::schema::{
    name_key, ColumnMappingMode, COLUMN_ID_KEY, PARQUET_FIELD_ID_KEY, PHYSICAL_NAME_KEY,
};

/// The output form of a logical type: no field metadata, every field nullable (map keys keep
/// Arrow's non-null rule).
pub fn output_type(logical: &DataType) -> DataType {
    match logical {
        DataType::Struct(fields) => {
            DataType::Struct(fields.iter().map(|f| output_field(f)).collect())
        }
        DataType::List(item) => DataType::List(output_field(item)),
        DataType::Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return logical.clone();
            };
            let kv: Fields = kv
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let f = output_field(f);
                    if i == 0 {
                        Arc::new(f.as_ref().clone().with_nullable(false))
                    } else {
                        f
                    }
                })
                .collect();
            DataType::Map(
                Arc::new(Field::new(entries.name(), DataType::Struct(kv), false)),
                *sorted,
            )
        }
        other => other.clone(),
    }
}

/// [`output_type`] of a field, as a nullable field without metadata.
pub fn output_field(logical: &Field) -> FieldRef {
    Arc::new(Field::new(
        logical.name(),
        output_type(logical.data_type()),
        true,
    ))
}

/// The index of the field of `fields` (as decoded from a data file) that holds `logical`, one
/// of the logical fields `siblings` (the table's columns, or a struct's fields).
///
/// Mode `none` matches the display name, mode `name` the physical name: exactly, or else
/// case-insensitively (Delta column names are case-insensitive; older writers such as Delta
/// Spark may spell a file's column differently from the schema) when that is unambiguous on
/// both sides: one file column matches, and no other sibling has the same name in another
/// case (a table that has both `a` and `A`, which deltalog refuses to create, reads `A` as
/// null from a file holding only `a`). Mode `id` matches the parquet field id.
pub fn find_field(
    fields: &Fields,
    logical: &Field,
    mode: ColumnMappingMode,
    siblings: &Fields,
) -> Option<usize> {
    let physical = |f: &Field| -> String {
        match mode {
            ColumnMappingMode::Name => f
                .metadata()
                .get(PHYSICAL_NAME_KEY)
                .cloned()
                .unwrap_or_else(|| f.name().clone()),
            _ => f.name().clone(),
        }
    };
    match mode {
        ColumnMappingMode::None | ColumnMappingMode::Name => {
            let name = physical(logical);
            if let Some(i) = fields.iter().position(|f| *f.name() == name) {
                return Some(i);
            }
            let key = name_key(&name);
            let others = siblings
                .iter()
                .filter(|s| name_key(&physical(s)) == key)
                .count();
            if others > 1 {
                return None;
            }
            crate::schema::find_column(fields, &name)
        }
        ColumnMappingMode::Id => {
            let id = logical.metadata().get(COLUMN_ID_KEY)?;
            fields
                .iter()
                .position(|f| f.metadata().get(PARQUET_FIELD_ID_KEY) == Some(id))
        }
    }
}

/// Converts `array`, decoded from a data file, to the output form of the logical type
/// `logical` (see the module documentation). The error says what could not be reconciled.
pub fn to_logical(
    array: &ArrayRef,
    logical: &DataType,
    mode: ColumnMappingMode,
) -> Result<ArrayRef, String> {
    match (array.data_type(), logical) {
        (_, DataType::Struct(fields)) => {
            let Some(source) = array.as_struct_opt() else {
                return Err(mismatch(array.data_type(), logical));
            };
            Ok(Arc::new(struct_to_logical(source, fields, mode)?))
        }
        (
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _),
            DataType::List(item),
        ) => {
            // One offset width: large and fixed-size lists become plain lists first.
            let plain = match array.data_type() {
                DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
                    cast_with_options(array, &DataType::List(f.clone()), &strict())
                        .map_err(|e| e.to_string())?
                }
                _ => array.clone(),
            };
            let list = plain.as_list::<i32>();
            let values = to_logical(list.values(), item.data_type(), mode)
                .map_err(|e| format!("list element: {e}"))?;
            Ok(Arc::new(
                ListArray::try_new(
                    output_field(item),
                    list.offsets().clone(),
                    values,
                    list.nulls().cloned(),
                )
                .map_err(|e| e.to_string())?,
            ))
        }
        (DataType::Map(_, _), DataType::Map(entries, _)) => {
            let map = array.as_map();
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(mismatch(array.data_type(), logical));
            };
            let (Some(key_field), Some(value_field)) = (kv.first(), kv.get(1)) else {
                return Err(mismatch(array.data_type(), logical));
            };
            let keys = to_logical(map.keys(), key_field.data_type(), mode)
                .map_err(|e| format!("map key: {e}"))?;
            let values = to_logical(map.values(), value_field.data_type(), mode)
                .map_err(|e| format!("map value: {e}"))?;
            let DataType::Map(out_entries, sorted) = output_type(logical) else {
                return Err(mismatch(array.data_type(), logical));
            };
            let DataType::Struct(out_kv) = out_entries.data_type().clone() else {
                return Err(mismatch(array.data_type(), logical));
            };
            let entries = StructArray::try_new(out_kv, vec![keys, values], None)
                .map_err(|e| e.to_string())?;
            Ok(Arc::new(
                MapArray::try_new(
                    out_entries,
                    map.offsets().clone(),
                    entries,
                    map.nulls().cloned(),
                    sorted,
                )
                .map_err(|e| e.to_string())?,
            ))
        }
        (from, to) if from == to => Ok(array.clone()),
        (DataType::Timestamp(_, from_tz), DataType::Timestamp(TimeUnit::Microsecond, to_tz)) => {
            // Both `timestamp` (int96, or int64 adjusted to UTC) and `timestamp_ntz` hold the
            // same wall-clock or instant value in any unit; only the unit changes.
            let micros = cast_with_options(
                array,
                &DataType::Timestamp(TimeUnit::Microsecond, from_tz.clone()),
                &strict(),
            )
            .map_err(|e| e.to_string())?;
            let micros: TimestampMicrosecondArray = micros
                .as_primitive::<arrow::datatypes::TimestampMicrosecondType>()
                .clone();
            Ok(Arc::new(micros.with_timezone_opt(to_tz.clone())))
        }
        (from, to) if leaf_convertible(from, to) => cast_with_options(array, to, &strict())
            .map_err(|e| format!("values of type {from} do not fit the table's type {to}: {e}")),
        (from, to) => Err(mismatch(from, to)),
    }
}

fn struct_to_logical(
    source: &StructArray,
    fields: &Fields,
    mode: ColumnMappingMode,
) -> Result<StructArray, String> {
    let len = source.len();
    let mut columns = Vec::with_capacity(fields.len());
    for field in fields {
        let column = match find_field(source.fields(), field, mode, fields) {
            Some(i) => to_logical(source.column(i), field.data_type(), mode)
                .map_err(|e| format!("field {:?}: {e}", field.name()))?,
            None => new_null_array(&output_type(field.data_type()), len),
        };
        columns.push(column);
    }
    let out: Fields = fields.iter().map(|f| output_field(f)).collect();
    StructArray::try_new_with_length(out, columns, source.nulls().cloned(), len)
        .map_err(|e| e.to_string())
}

fn strict() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..Default::default()
    }
}

fn mismatch(from: &DataType, to: &DataType) -> String {
    format!("a column of type {from} cannot be read as the table's type {to}")
}

/// Whether a leaf of type `from` may be read as `to`: conversions that keep every value
/// (checked at run time where a narrower integer is stored wider, as old writers did for
/// `byte` and `short`), the widenings the `typeWidening` feature allows, and other encodings of
/// the same strings and bytes.
fn leaf_convertible(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let integer = |t: &DataType| {
        matches!(
            t,
            Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64
        )
    };
    match (from, to) {
        (Null, _) => true,
        (Dictionary(_, value), _) => value.as_ref() == to || leaf_convertible(value, to),
        (f, t) if integer(f) && integer(t) => true,
        (f, Float64) if integer(f) => true,
        (Float32, Float64) => true,
        (f, Decimal128(_, _)) if integer(f) => true,
        (Decimal128(p1, s1) | Decimal64(p1, s1) | Decimal32(p1, s1), Decimal128(p2, s2)) => {
            s2 >= s1 && (i16::from(*p2) - i16::from(*s2)) >= (i16::from(*p1) - i16::from(*s1))
        }
        (Date32, Timestamp(TimeUnit::Microsecond, None)) => true,
        (Utf8View | LargeUtf8, Utf8) => true,
        (BinaryView | LargeBinary | FixedSizeBinary(_), Binary) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, Int64Array, StringArray, TimestampNanosecondArray};
    use arrow::datatypes::{Int64Type, TimestampMicrosecondType};
    use std::collections::HashMap;

    fn with_meta(f: Field, pairs: &[(&str, &str)]) -> Field {
        f.with_metadata(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        )
    }

    #[test]
    fn a_file_column_matches_another_case_only_when_no_sibling_claims_it() {
        let file = Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("id", DataType::Int64, true),
        ]);
        // A schema that spells `id` otherwise still finds it (older writers, Delta Spark).
        let table = Fields::from(vec![
            Field::new("Id", DataType::Int64, true),
            Field::new("a", DataType::Int64, true),
        ]);
        let mode = ColumnMappingMode::None;
        assert_eq!(find_field(&file, &table[0], mode, &table), Some(1));
        // A table with both `a` and `A`: the file's `a` is `a`'s, and `A` is missing.
        let both = Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("A", DataType::Int64, true),
        ]);
        assert_eq!(find_field(&file, &both[0], mode, &both), Some(0));
        assert_eq!(find_field(&file, &both[1], mode, &both), None);
        let a: ArrayRef = Arc::new(Int64Array::from(vec![7]));
        let id: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        let source: ArrayRef = Arc::new(StructArray::new(file.clone(), vec![a, id], None));
        let out = to_logical(&source, &DataType::Struct(both), mode).unwrap();
        let out = out.as_struct();
        assert_eq!(out.column(0).as_primitive::<Int64Type>().value(0), 7);
        assert!(out.column(1).is_null(0));
    }

    #[test]
    fn struct_children_by_mode_missing_ones_null() {
        let logical = Fields::from(vec![
            with_meta(
                Field::new("a", DataType::Int64, false),
                &[(PHYSICAL_NAME_KEY, "col-1"), (COLUMN_ID_KEY, "1")],
            ),
            with_meta(
                Field::new("b", DataType::Int64, true),
                &[(PHYSICAL_NAME_KEY, "col-2"), (COLUMN_ID_KEY, "2")],
            ),
        ]);
        let file_fields = Fields::from(vec![
            with_meta(
                Field::new("col-1", DataType::Int32, true),
                &[(PARQUET_FIELD_ID_KEY, "2")],
            ),
            with_meta(
                Field::new("A", DataType::Int32, true),
                &[(PARQUET_FIELD_ID_KEY, "1")],
            ),
        ]);
        let source: ArrayRef = Arc::new(StructArray::new(
            file_fields,
            vec![
                Arc::new(Int32Array::from(vec![1, 2])),
                Arc::new(Int32Array::from(vec![10, 20])),
            ],
            None,
        ));
        let target = DataType::Struct(logical);
        // name mode: "a" is col-1; "b" (col-2) is missing.
        let out = to_logical(&source, &target, ColumnMappingMode::Name).unwrap();
        let out = out.as_struct();
        assert_eq!(out.column(0).as_primitive::<Int64Type>().values(), &[1, 2]);
        assert_eq!(out.column(1).null_count(), 2);
        assert!(out
            .fields()
            .iter()
            .all(|f| f.is_nullable() && f.metadata().is_empty()));
        // id mode: "a" has id 1 (the field named "A"); "b" has id 2 (named "col-1").
        let out = to_logical(&source, &target, ColumnMappingMode::Id).unwrap();
        let out = out.as_struct();
        assert_eq!(
            out.column(0).as_primitive::<Int64Type>().values(),
            &[10, 20]
        );
        assert_eq!(out.column(1).as_primitive::<Int64Type>().values(), &[1, 2]);
        // none mode: "a" matches "A" case-insensitively.
        let out = to_logical(&source, &target, ColumnMappingMode::None).unwrap();
        assert_eq!(
            out.as_struct()
                .column(0)
                .as_primitive::<Int64Type>()
                .values(),
            &[10, 20]
        );
    }

    #[test]
    fn ambiguous_case_insensitive_names_do_not_match() {
        let fields = Fields::from(vec![
            Field::new("X", DataType::Int32, true),
            Field::new("x ", DataType::Int32, true),
            Field::new("Y", DataType::Int32, true),
            Field::new("y", DataType::Int32, true),
        ]);
        assert_eq!(crate::schema::find_column(&fields, "x"), Some(0));
        assert_eq!(crate::schema::find_column(&fields, "y"), Some(3));
        let two = Fields::from(vec![
            Field::new("Zz", DataType::Int32, true),
            Field::new("zZ", DataType::Int32, true),
        ]);
        assert_eq!(crate::schema::find_column(&two, "zZ"), Some(1));
        assert_eq!(crate::schema::find_column(&two, "ZZ"), None);
    }

    #[test]
    fn timestamps_of_any_unit_become_micros_with_the_logical_zone() {
        let nanos: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![1_500_000_000i64]));
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let out = to_logical(&nanos, &utc, ColumnMappingMode::None).unwrap();
        assert_eq!(out.data_type(), &utc);
        assert_eq!(
            out.as_primitive::<TimestampMicrosecondType>().value(0),
            1_500_000
        );
        let adjusted: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![7i64]).with_timezone("+00:00"));
        let out = to_logical(&adjusted, &utc, ColumnMappingMode::None).unwrap();
        assert_eq!(out.data_type(), &utc);
        assert_eq!(out.as_primitive::<TimestampMicrosecondType>().value(0), 7);
    }

    #[test]
    fn only_lossless_leaf_conversions() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![1, -2]));
        assert!(to_logical(&ints, &DataType::Int64, ColumnMappingMode::None).is_ok());
        assert!(to_logical(&ints, &DataType::Float64, ColumnMappingMode::None).is_ok());
        assert!(to_logical(&ints, &DataType::Decimal128(12, 2), ColumnMappingMode::None).is_ok());
        assert!(to_logical(&ints, &DataType::Utf8, ColumnMappingMode::None).is_err());
        let strings: ArrayRef = Arc::new(StringArray::from(vec!["1"]));
        assert!(to_logical(&strings, &DataType::Int32, ColumnMappingMode::None).is_err());
        // A wider integer that holds a value out of range is an error, not a wrapped value.
        let wide: ArrayRef = Arc::new(Int64Array::from(vec![300]));
        assert!(to_logical(&wide, &DataType::Int8, ColumnMappingMode::None).is_err());
        assert!(to_logical(&wide, &DataType::Int16, ColumnMappingMode::None).is_ok());
        let dec: ArrayRef = Arc::new(
            arrow::array::Decimal128Array::from(vec![12345])
                .with_precision_and_scale(5, 2)
                .unwrap(),
        );
        assert!(to_logical(&dec, &DataType::Decimal128(10, 4), ColumnMappingMode::None).is_ok());
        assert!(to_logical(&dec, &DataType::Decimal128(5, 3), ColumnMappingMode::None).is_err());
    }

    #[test]
    fn lists_and_maps_are_renamed_element_wise() {
        let element = Field::new("array", DataType::Int32, false);
        let list: ArrayRef = Arc::new(ListArray::new(
            Arc::new(element),
            arrow::buffer::OffsetBuffer::from_lengths([2, 0]),
            Arc::new(Int32Array::from(vec![1, 2])),
            None,
        ));
        let logical = DataType::List(Arc::new(Field::new("element", DataType::Int64, false)));
        let out = to_logical(&list, &logical, ColumnMappingMode::None).unwrap();
        assert_eq!(out.data_type(), &output_type(&logical));
        let out = out.as_list::<i32>();
        assert_eq!(out.value(0).as_primitive::<Int64Type>().values(), &[1, 2]);
    }
}
