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

/// The rows of `array` that `mask` selects (`selected` of them), compacted like
/// [`compact_nulls`]: an all-null column is not filtered but replaced by shared nulls of the
/// new length, and the children of a struct are filtered one by one so that each all-null child
/// is too.
pub fn filter_compact(
    array: &ArrayRef,
    mask: &arrow::array::BooleanArray,
    selected: usize,
) -> Result<ArrayRef, arrow::error::ArrowError> {
    if array.logical_null_count() == array.len() {
        return Ok(shared_null_array(array.data_type(), selected));
    }
    let Some(s) = array.as_struct_opt() else {
        // Null in every selected row: shared nulls too.
        return Ok(compact_nulls(&arrow::compute::filter(array, mask)?));
    };
    let columns = s
        .columns()
        .iter()
        .map(|c| filter_compact(c, mask, selected))
        .collect::<Result<Vec<_>, _>>()?;
    let nulls = match s.nulls() {
        Some(n) => {
            let valid = arrow::array::BooleanArray::new(n.inner().clone(), None);
            let kept = arrow::compute::filter(&valid, mask)?;
            let kept = arrow::buffer::NullBuffer::new(kept.as_boolean().values().clone());
            (kept.null_count() > 0).then_some(kept)
        }
        None => None,
    };
    Ok(Arc::new(arrow::array::StructArray::try_new_with_length(
        s.fields().clone(),
        columns,
        nulls,
        selected,
    )?))
}

/// `parts` (of one type) end to end, compacted like [`compact_nulls`]: a column null in every
/// part becomes shared nulls of the total length without being copied, and the children of a
/// struct are concatenated one by one so that each such child stays compact.
pub fn concat_compact(parts: &[ArrayRef]) -> Result<ArrayRef, arrow::error::ArrowError> {
    let Some(first) = parts.first() else {
        return Err(arrow::error::ArrowError::InvalidArgumentError(
            "nothing to concatenate".into(),
        ));
    };
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if parts.iter().all(|p| p.logical_null_count() == p.len()) {
        return Ok(shared_null_array(first.data_type(), len));
    }
    let DataType::Struct(fields) = first.data_type() else {
        let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
        return arrow::compute::concat(&refs);
    };
    let structs = parts
        .iter()
        .map(|p| {
            p.as_struct_opt().ok_or_else(|| {
                arrow::error::ArrowError::InvalidArgumentError(
                    "cannot concatenate arrays of different types".into(),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let columns = (0..fields.len())
        .map(|i| {
            let children: Vec<ArrayRef> = structs.iter().map(|s| s.column(i).clone()).collect();
            concat_compact(&children)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let nulls = if structs.iter().any(|s| s.null_count() > 0) {
        let mut valid = arrow::array::BooleanBufferBuilder::new(len);
        for s in &structs {
            match s.nulls() {
                Some(n) => valid.append_buffer(n.inner()),
                None => valid.append_n(s.len(), true),
            }
        }
        Some(arrow::buffer::NullBuffer::new(valid.finish()))
    } else {
        None
    };
    Ok(Arc::new(arrow::array::StructArray::try_new_with_length(
        fields.clone(),
        columns,
        nulls,
        len,
    )?))
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
            crate::log::actions::string_map(),
            crate::log::actions::string_list(),
            DataType::Struct(Fields::from(vec![
                Field::new("a", DataType::Utf8, true),
                Field::new("b", DataType::Int64, true),
                Field::new("m", crate::log::actions::string_map(), true),
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

    #[test]
    fn filtering_compacts_like_filter_then_compact() {
        use arrow::array::{BooleanArray, Int64Array, StringArray, StructArray};
        let dv = StructArray::from(vec![
            (
                Arc::new(Field::new("p", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec![Some("a"), None, None, Some("d")])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("n", DataType::Int64, true)),
                Arc::new(Int64Array::from(vec![None::<i64>; 4])) as ArrayRef,
            ),
        ]);
        let dv = StructArray::try_new(
            dv.fields().clone(),
            dv.columns().to_vec(),
            Some(arrow::buffer::NullBuffer::from(vec![
                true, false, false, true,
            ])),
        )
        .unwrap();
        let top: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new("path", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["w", "x", "y", "z"])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("dv", dv.data_type().clone(), true)),
                Arc::new(dv) as ArrayRef,
            ),
        ]));
        for keep in [
            vec![true, true, true, true],
            vec![false, true, true, false],
            vec![true, false, true, false],
        ] {
            let mask = BooleanArray::from(keep);
            let selected = mask.true_count();
            let ours = filter_compact(&top, &mask, selected).unwrap();
            assert_eq!(&ours, &arrow::compute::filter(&top, &mask).unwrap());
            let ours = ours.as_struct();
            // `dv.n` is null everywhere: shared, never filtered.
            let n = ours.column(1).as_struct().column(1).clone();
            assert!(same_first_buffer(
                &n,
                &shared_null_array(&DataType::Int64, selected)
            ));
            if selected == 2 && ours.column(1).as_struct().is_null(0) {
                // Rows 1 and 2: the deletion vector is null in both, so all of it is shared.
                let p = ours.column(1).as_struct().column(0).clone();
                assert!(same_first_buffer(
                    &p,
                    &shared_null_array(&DataType::Utf8, 2)
                ));
            }
        }
    }

    #[test]
    fn concatenating_compacts_like_concat_then_compact() {
        use arrow::array::{Int64Array, StringArray, StructArray};
        let part = |paths: Vec<&str>, sizes: Vec<Option<i64>>, valid: Option<Vec<bool>>| {
            let n = paths.len();
            let inner = StructArray::try_new(
                Fields::from(vec![
                    Field::new("size", DataType::Int64, true),
                    Field::new("none", DataType::Utf8, true),
                ]),
                vec![
                    Arc::new(Int64Array::from(sizes)) as ArrayRef,
                    Arc::new(StringArray::from(vec![None::<&str>; n])) as ArrayRef,
                ],
                valid.map(arrow::buffer::NullBuffer::from),
            )
            .unwrap();
            Arc::new(StructArray::from(vec![
                (
                    Arc::new(Field::new("path", DataType::Utf8, true)),
                    Arc::new(StringArray::from(paths)) as ArrayRef,
                ),
                (
                    Arc::new(Field::new("inner", inner.data_type().clone(), true)),
                    Arc::new(inner) as ArrayRef,
                ),
            ])) as ArrayRef
        };
        let parts = vec![
            part(vec!["a", "b"], vec![Some(1), None], None),
            part(vec!["c"], vec![None], Some(vec![false])),
            part(
                vec!["d", "e", "f"],
                vec![Some(4), Some(5), None],
                Some(vec![true, false, true]),
            ),
        ];
        let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
        let ours = concat_compact(&parts).unwrap();
        ours.to_data().validate_full().unwrap();
        assert_eq!(&ours, &arrow::compute::concat(&refs).unwrap());
        // `inner.none` is null in every part: shared nulls, not copied.
        let none = ours.as_struct().column(1).as_struct().column(1).clone();
        assert!(same_first_buffer(
            &none,
            &shared_null_array(&DataType::Utf8, 6)
        ));
        // Parts null everywhere give shared nulls; no parts is an error.
        let nulls = vec![
            shared_null_array(&DataType::Int64, 3),
            shared_null_array(&DataType::Int64, 2),
        ];
        assert_eq!(concat_compact(&nulls).unwrap().logical_null_count(), 5);
        assert!(concat_compact(&[]).is_err());
    }
}
