//! All-null arrays that cost no memory of their own.
//!
//! A large table's file actions carry many columns that are null in every row: deletion
//! vectors, row tracking, tags, clustering, the statistics of partition columns. Decoders and
//! builders materialize a value buffer for each of them (8 bytes per row for a `long`), and for
//! a million files those buffers add up to tens of megabytes. Here an entirely-null array is
//! rebuilt over slices of one shared zeroed allocation instead: Arrow allows buffers to be
//! shared, zero is a valid value for every fixed-width type, zero offsets are valid empty
//! strings and lists, and the validity bitmap (all zero) says every slot is null.

use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{
    make_array, new_empty_array, new_null_array, Array, ArrayData, ArrayRef, AsArray,
};
use arrow::buffer::{Buffer, MutableBuffer};
use arrow::datatypes::DataType;

/// A zeroed buffer of at least `len` bytes, shared by every caller.
fn zeros(len: usize) -> Buffer {
    static SHARED: OnceLock<Mutex<Buffer>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| Mutex::new(Buffer::from(MutableBuffer::new(0))));
    let mut guard = match shared.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    if guard.len() < len {
        // Grown geometrically so that a few allocations serve every size. Freshly mapped zero
        // pages that are only ever read do not add to the resident set.
        let size = len.max(guard.len() * 2).max(1 << 16);
        *guard = Buffer::from(MutableBuffer::from_len_zeroed(size));
    }
    guard.slice_with_length(0, len)
}

/// The bytes per value of a fixed-width type.
fn width(dt: &DataType) -> Option<usize> {
    dt.primitive_width().or(match dt {
        DataType::FixedSizeBinary(n) => usize::try_from(*n).ok(),
        _ => None,
    })
}

fn null_data(dt: &DataType, len: usize) -> Option<ArrayData> {
    let bitmap = zeros(len.div_ceil(8));
    let builder = ArrayData::builder(dt.clone())
        .len(len)
        .null_count(len)
        .null_bit_buffer(Some(bitmap));
    let builder = match dt {
        DataType::Null => return Some(ArrayData::new_null(dt, len)),
        DataType::Boolean => builder.add_buffer(zeros(len.div_ceil(8))),
        DataType::Utf8 | DataType::Binary => builder
            .add_buffer(zeros((len + 1) * 4))
            .add_buffer(Buffer::from(MutableBuffer::new(0))),
        DataType::LargeUtf8 | DataType::LargeBinary => builder
            .add_buffer(zeros((len + 1) * 8))
            .add_buffer(Buffer::from(MutableBuffer::new(0))),
        DataType::List(f) | DataType::Map(f, _) => builder
            .add_buffer(zeros((len + 1) * 4))
            .add_child_data(new_empty_array(f.data_type()).to_data()),
        DataType::LargeList(f) => builder
            .add_buffer(zeros((len + 1) * 8))
            .add_child_data(new_empty_array(f.data_type()).to_data()),
        DataType::Struct(fields) => {
            let children = fields
                .iter()
                .map(|f| null_data(f.data_type(), len))
                .collect::<Option<Vec<_>>>()?;
            builder.child_data(children)
        }
        other => builder.add_buffer(zeros(len.checked_mul(width(other)?)?)),
    };
    builder.build().ok()
}

/// An array of `len` nulls of type `dt` over shared zeroed memory (a plain null array for the
/// few types this does not cover).
pub fn shared_null_array(dt: &DataType, len: usize) -> ArrayRef {
    match null_data(dt, len) {
        Some(data) => make_array(data),
        None => new_null_array(dt, len),
    }
}

/// `array` itself, or a shared all-null equivalent when every slot is null, so that the
/// decoded value buffers can be freed; the children of a struct that is not all null are
/// compacted in turn.
pub fn compact_nulls(array: &ArrayRef) -> ArrayRef {
    if array.is_empty() {
        return array.clone();
    }
    if array.logical_null_count() == array.len() {
        return shared_null_array(array.data_type(), array.len());
    }
    match array.as_struct_opt() {
        Some(s) => Arc::new(compact_struct_children(s)),
        None => array.clone(),
    }
}

/// [`compact_nulls`] applied to the children of a struct (whose own nulls are kept).
pub fn compact_struct_children(s: &arrow::array::StructArray) -> arrow::array::StructArray {
    let columns: Vec<ArrayRef> = s.columns().iter().map(compact_nulls).collect();
    arrow::array::StructArray::try_new_with_length(
        s.fields().clone(),
        columns,
        s.nulls().cloned(),
        s.len(),
    )
    .unwrap_or_else(|_| s.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{Field, Fields, TimeUnit};

    /// Whether `a` and `b` share their first buffer.
    fn same_first_buffer(a: &ArrayRef, b: &ArrayRef) -> bool {
        let (a, b) = (a.to_data(), b.to_data());
        match (a.buffers().first(), b.buffers().first()) {
            (Some(x), Some(y)) => x.as_ptr() == y.as_ptr(),
            _ => false,
        }
    }

    fn types() -> Vec<DataType> {
        vec![
            DataType::Int64,
            DataType::Int32,
            DataType::Boolean,
            DataType::Utf8,
            DataType::Binary,
            DataType::Decimal128(10, 2),
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            DataType::Date32,
            DataType::FixedSizeBinary(3),
            crate::actions::string_map(),
            crate::actions::string_list(),
            DataType::Struct(Fields::from(vec![
                Field::new("a", DataType::Utf8, true),
                Field::new("b", DataType::Int64, true),
                Field::new("m", crate::actions::string_map(), true),
            ])),
            DataType::Null,
        ]
    }

    #[test]
    fn shared_nulls_are_valid_and_equal_plain_nulls() {
        for dt in types() {
            for len in [0, 1, 7, 8, 9, 1000] {
                let shared = shared_null_array(&dt, len);
                shared.to_data().validate_full().unwrap();
                assert_eq!(shared.data_type(), &dt);
                assert_eq!(shared.len(), len);
                assert_eq!(shared.logical_null_count(), len, "{dt}");
                assert_eq!(&shared, &new_null_array(&dt, len), "{dt} x {len}");
            }
        }
    }

    #[test]
    fn all_null_arrays_are_compacted_and_share_memory() {
        let a: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![None::<i64>; 100]));
        let b: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![None::<i64>; 50]));
        let (ca, cb) = (compact_nulls(&a), compact_nulls(&b));
        assert_eq!(&ca, &a);
        assert!(same_first_buffer(&ca, &cb));
        let some: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![Some(1), None]));
        assert!(Arc::ptr_eq(&compact_nulls(&some), &some));
        // A struct with some valid rows keeps them; its all-null children are shared.
        let s = arrow::array::StructArray::from(vec![
            (Arc::new(Field::new("x", DataType::Int64, true)), a.clone()),
            (Arc::new(Field::new("y", DataType::Int64, true)), {
                let v: ArrayRef = Arc::new(arrow::array::Int64Array::from(
                    (0..100).collect::<Vec<i64>>(),
                ));
                v
            }),
        ]);
        let c = compact_struct_children(&s);
        assert_eq!(&c, &s);
        assert_eq!(
            c.column(1)
                .as_primitive::<arrow::datatypes::Int64Type>()
                .value(5),
            5
        );
    }
}
