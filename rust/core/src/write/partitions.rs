//! Partition values for writing: Arrow values as `partitionValues` strings, and the
//! Hive-style directory a partitioned file is written under.
//!
//! Spec: "Partition Value Serialization" (the string forms; `timestamp` values written as
//! ISO-8601 adjusted to UTC, which the spec recommends for modern writers; an empty string is a
//! null), "Add File and Remove File" (`path` is an RFC 2396 URI: the relative path is
//! percent-encoded once more in the log). Directory names follow Hive's escaping
//! (`col=value`, with `%XX` for characters that are special in paths, and
//! `__HIVE_DEFAULT_PARTITION__` for null), as Delta Spark writes them.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimeUnit, TimestampMicrosecondType,
};
use chrono::{DateTime, NaiveDate};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

/// The directory name of a null partition value.
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// The `partitionValues` string of row `row` of `array` (`None` for null, and for an empty
/// string, which the spec reads as null). Errors name what cannot be serialized.
pub fn serialize_partition_value(array: &ArrayRef, row: usize) -> Result<Option<String>, String> {
    if array.is_null(row) {
        return Ok(None);
    }
    let text = match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(row).to_string(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).to_string(),
        DataType::Utf8View => array.as_string_view().value(row).to_string(),
        DataType::Boolean => array.as_boolean().value(row).to_string(),
        DataType::Int8 => array.as_primitive::<Int8Type>().value(row).to_string(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(row).to_string(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).to_string(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::Float32 => java_text(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => java_text(array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal128(_, _) => array
            .as_primitive::<arrow::datatypes::Decimal128Type>()
            .value_as_string(row),
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(row);
            format_date(days)
                .ok_or_else(|| format!("date {days} days from the epoch is out of range"))?
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let micros = array.as_primitive::<TimestampMicrosecondType>().value(row);
            let t = DateTime::from_timestamp_micros(micros)
                .ok_or_else(|| format!("timestamp {micros} µs is out of range"))?;
            if tz.is_some() {
                t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
            } else {
                t.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string()
            }
        }
        DataType::Binary => {
            let bytes = array.as_binary::<i32>().value(row);
            std::str::from_utf8(bytes)
                .map_err(|_| {
                    "a binary partition value must be valid UTF-8 to be serialized".to_string()
                })?
                .to_string()
        }
        other => return Err(format!("{other} columns cannot be partition columns")),
    };
    Ok((!text.is_empty()).then_some(text))
}

/// `{year}-{month}-{day}` of a date given as days since the epoch (`None` out of range).
pub fn format_date(days: i32) -> Option<String> {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
    let date = epoch.checked_add_signed(chrono::Duration::days(i64::from(days)))?;
    Some(date.format("%Y-%m-%d").to_string())
}

/// A float or double as Java's `Float.toString` / `Double.toString` prints it, which is how
/// Delta Spark serializes them ("Partition Value Serialization" leaves the form to the
/// writer): `NaN`, `Infinity`, `-Infinity`; plain decimals with at least one fractional digit
/// for magnitudes in [10^-3, 10^7) (`0.001`, `1.0`, `1234567.0`); otherwise scientific
/// notation (`1.0E-300`, `-1.5E300`, `1.0E7`). The digits are the shortest that round-trip
/// at the value's own precision, but at least two significant ones (Java 19+: of those, the
/// closest to the value, so `4.9E-324` rather than `5.0E-324`). Every Delta reader
/// (deltalog's included) parses both this form and plain decimal text.
fn java_text<F: std::fmt::LowerExp + Copy + Into<f64>>(v: F) -> String {
    // Digits at the value's own precision (an f32's shortest digits, not its f64 widening's).
    let wide: f64 = v.into();
    java_float_text(
        wide.is_nan(),
        wide.is_infinite(),
        wide < 0.0,
        format!("{v:e}"),
        || format!("{v:.1e}"),
    )
}

/// The text of [`java_text`] from the value's class, `scientific` (Rust's `{:e}` form:
/// `1.5e300`, `-1e-300`; shortest digits) and `two_digits` (its `{:.1e}` form, correctly
/// rounded), used when the shortest has one digit.
fn java_float_text(
    nan: bool,
    infinite: bool,
    negative: bool,
    scientific: String,
    two_digits: impl FnOnce() -> String,
) -> String {
    if nan {
        return "NaN".into();
    }
    if infinite {
        return if negative { "-Infinity" } else { "Infinity" }.into();
    }
    let scientific = match scientific.split_once('e') {
        Some((mantissa, _)) if mantissa.trim_start_matches('-').len() == 1 => two_digits(),
        _ => scientific,
    };
    let unsigned = scientific.trim_start_matches('-');
    let sign = if scientific.starts_with('-') { "-" } else { "" };
    let (mantissa, exponent) = unsigned.split_once('e').unwrap_or((unsigned, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    if digits.is_empty() {
        return format!("{sign}0.0");
    }
    let (first, rest) = digits.split_at(1);
    if (-3..7).contains(&exponent) {
        let text = if exponent >= 0 {
            let int_len = exponent as usize + 1;
            if digits.len() <= int_len {
                format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exponent - 1) as usize))
        };
        format!("{sign}{text}")
    } else {
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{sign}{first}.{rest}E{exponent}")
    }
}

/// Characters Hive escapes in partition directory names (`FileUtils.escapePathName`): control
/// characters and `"#%'*/:=?\{[]^` and DEL.
const HIVE_ESCAPED: &AsciiSet = &CONTROLS
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'\'')
    .add(b'*')
    .add(b'/')
    .add(b':')
    .add(b'=')
    .add(b'?')
    .add(b'\\')
    .add(b'{')
    .add(b'[')
    .add(b']')
    .add(b'^');

/// `text` escaped for a Hive partition directory name.
pub fn escape_hive(text: &str) -> String {
    utf8_percent_encode(text, HIVE_ESCAPED).to_string()
}

/// The directory of a file with these partition values: `col=value/...` in partition column
/// order, using physical names where column mapping gives them.
pub fn partition_directory(values: &[(String, Option<String>)]) -> String {
    values
        .iter()
        .map(|(column, value)| {
            let value = value
                .as_deref()
                .map_or(NULL_PARTITION.to_string(), escape_hive);
            format!("{}={}", escape_hive(column), value)
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Characters percent-encoded in the `path` URIs of the log: everything but unreserved
/// characters, `/` and the sub-delimiters Delta Spark leaves as they are.
const URI_PATH: &AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'=')
    .remove(b'@')
    .remove(b'+')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b',')
    .remove(b';')
    .remove(b'(')
    .remove(b')');

/// A relative file path as the `path` URI of an `add` action.
pub fn path_uri(relative: &str) -> String {
    utf8_percent_encode(relative, URI_PATH).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::decode_uri_path;
    use crate::scan::partition_values::parse_partition_value;
    use arrow::array::{
        BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
        Int8Array, StringArray, TimestampMicrosecondArray,
    };
    use proptest::prelude::*;
    use std::sync::Arc;

    fn one(array: ArrayRef) -> Option<String> {
        serialize_partition_value(&array, 0).unwrap()
    }

    #[test]
    fn every_type_serializes_as_the_spec_says() {
        assert_eq!(
            one(Arc::new(Int8Array::from(vec![-5]))).as_deref(),
            Some("-5")
        );
        assert_eq!(
            one(Arc::new(BooleanArray::from(vec![true]))).as_deref(),
            Some("true")
        );
        assert_eq!(
            one(Arc::new(Date32Array::from(vec![0]))).as_deref(),
            Some("1970-01-01")
        );
        assert_eq!(
            one(Arc::new(
                TimestampMicrosecondArray::from(vec![123_456]).with_timezone("UTC")
            ))
            .as_deref(),
            Some("1970-01-01T00:00:00.123456Z")
        );
        assert_eq!(
            one(Arc::new(TimestampMicrosecondArray::from(vec![1_000_000]))).as_deref(),
            Some("1970-01-01 00:00:01.000000")
        );
        let dec = Decimal128Array::from(vec![-1_234_500])
            .with_precision_and_scale(12, 5)
            .unwrap();
        assert_eq!(one(Arc::new(dec)).as_deref(), Some("-12.34500"));
        assert_eq!(
            one(Arc::new(Float64Array::from(vec![f64::NAN]))).as_deref(),
            Some("NaN")
        );
        assert_eq!(
            one(Arc::new(Float64Array::from(vec![f64::NEG_INFINITY]))).as_deref(),
            Some("-Infinity")
        );
        assert_eq!(one(Arc::new(StringArray::from(vec![""]))), None);
        assert_eq!(one(Arc::new(StringArray::from(vec![None::<&str>]))), None);
        assert_eq!(
            one(Arc::new(BinaryArray::from(vec![b"ab".as_slice()]))).as_deref(),
            Some("ab")
        );
        let bad: ArrayRef = Arc::new(BinaryArray::from(vec![[0xffu8].as_slice()]));
        assert!(serialize_partition_value(&bad, 0).is_err());
    }

    #[test]
    fn directories_escape_like_hive_and_paths_like_uris() {
        let dir =
            partition_directory(&[("a".into(), Some("x/y=z:1 2".into())), ("b".into(), None)]);
        assert_eq!(dir, "a=x%2Fy%3Dz%3A1 2/b=__HIVE_DEFAULT_PARTITION__");
        let uri = path_uri(&format!("{dir}/part-0.parquet"));
        assert_eq!(
            uri,
            "a=x%252Fy%253Dz%253A1%202/b=__HIVE_DEFAULT_PARTITION__/part-0.parquet"
        );
        // The log's path decodes back to the name on disk.
        assert_eq!(
            decode_uri_path(&uri).unwrap(),
            format!("{dir}/part-0.parquet")
        );
    }

    #[test]
    fn floats_serialize_as_java_prints_them() {
        let double = |v: f64| one(Arc::new(Float64Array::from(vec![v]))).unwrap();
        let float = |v: f32| one(Arc::new(Float32Array::from(vec![v]))).unwrap();
        for (v, text) in [
            (1e-300, "1.0E-300"),
            (-1.5e300, "-1.5E300"),
            (1.0, "1.0"),
            (0.001, "0.001"),
            (0.000_999, "9.99E-4"),
            (1e7, "1.0E7"),
            (9_999_999.5, "9999999.5"),
            (1_234_567.0, "1234567.0"),
            (-0.5, "-0.5"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (100.25, "100.25"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (5e-324, "4.9E-324"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::INFINITY, "Infinity"),
        ] {
            assert_eq!(double(v), text, "{v:e}");
        }
        // Floats print their own shortest digits, not those of the widened double.
        for (v, text) in [
            (0.1f32, "0.1"),
            (1e-30, "1.0E-30"),
            (-3.4028235e38, "-3.4028235E38"),
            (16_777_216.0, "1.6777216E7"),
            (f32::NAN, "NaN"),
        ] {
            assert_eq!(float(v), text, "{v:e}");
        }
    }

    proptest! {
        #[test]
        fn values_round_trip_through_the_reader(
            i in any::<i64>(),
            f in any::<f64>(),
            g in any::<f32>(),
            s in "\\PC{1,12}",
            micros in -62_000_000_000_000_000i64..250_000_000_000_000_000,
            days in -700_000i32..2_900_000,
        ) {
            let cases: Vec<ArrayRef> = vec![
                Arc::new(arrow::array::Int64Array::from(vec![i])),
                Arc::new(Float64Array::from(vec![f])),
                Arc::new(Float32Array::from(vec![g])),
                Arc::new(StringArray::from(vec![s.as_str()])),
                Arc::new(TimestampMicrosecondArray::from(vec![micros]).with_timezone("UTC")),
                Arc::new(TimestampMicrosecondArray::from(vec![micros])),
                Arc::new(Date32Array::from(vec![days])),
            ];
            for array in cases {
                let text = serialize_partition_value(&array, 0).unwrap();
                let back = parse_partition_value(text.as_deref(), array.data_type()).unwrap();
                if let Some(v) = array.as_primitive_opt::<Float64Type>() {
                    let b = back.as_primitive::<Float64Type>().value(0);
                    prop_assert!(v.value(0).to_bits() == b.to_bits() || (v.value(0).is_nan() && b.is_nan()));
                } else if let Some(v) = array.as_primitive_opt::<Float32Type>() {
                    let b = back.as_primitive::<Float32Type>().value(0);
                    prop_assert!(v.value(0).to_bits() == b.to_bits() || (v.value(0).is_nan() && b.is_nan()));
                } else {
                    prop_assert_eq!(back.as_ref(), array.as_ref());
                }
                // Any value makes a directory name without `/` other than the separator.
                let dir = partition_directory(&[("c".into(), text)]);
                prop_assert!(!dir.contains('/'));
            }
        }
    }
}
