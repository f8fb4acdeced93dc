//! Partition pruning and file skipping: which files may hold rows a predicate keeps.
//!
//! Spec: "Per-file Statistics" (`minValues`, `maxValues`, `nullCount`, `numRecords`,
//! `tightBounds`) and "Partition Value Serialization". A file is skipped only when its
//! partition values or statistics prove that no row satisfies the predicate; missing
//! statistics never skip. The rules hold for wide bounds too (`tightBounds` false: min/max
//! still bound every valid value, and a `nullCount` of 0 or of `numRecords` still means
//! "no nulls" or "all null"); other null counts are not used. Timestamp statistics are
//! truncated to milliseconds, so a maximum is widened by 999 µs before it is compared.
//!
//! Evaluation is vectorized over a batch of files: every leaf yields a "may match" boolean per
//! file, combined with AND/OR after negations are pushed down to the leaves.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, Scalar, StructArray};
use arrow::compute::kernels::boolean::{and, or};
use arrow::compute::{cast, is_not_null, is_null};
use arrow::datatypes::{DataType, Int64Type, Schema, TimeUnit};

use crate::error::{DeltaError, DeltaResult};
use crate::predicate::{compare, literal_array, CmpOp, Literal, Predicate};
use crate::stats::collect::STRING_PREFIX;

/// The statistics and partition values of a batch of files, by logical column name.
#[derive(Debug, Default)]
pub struct FileStats {
    /// Number of files.
    pub len: usize,
    /// `numRecords` per file.
    pub num_records: Option<Int64Array>,
    /// `minValues`, `maxValues` and `nullCount` structs (logical names).
    pub min: Option<StructArray>,
    pub max: Option<StructArray>,
    pub null_count: Option<StructArray>,
    /// The typed partition value of each file, per partition column the predicate uses.
    pub partitions: HashMap<String, ArrayRef>,
}

/// A predicate with negations pushed down to the leaves.
enum Leaf<'a> {
    Compare(&'a str, CmpOp, &'a Literal),
    IsNull(&'a str, bool),
    In(&'a str, &'a [Literal], bool),
    And(Vec<Leaf<'a>>),
    Or(Vec<Leaf<'a>>),
}

fn push_down(p: &Predicate, negate: bool) -> Leaf<'_> {
    match p {
        Predicate::Compare { column, op, value } => {
            Leaf::Compare(column, if negate { op.negated() } else { *op }, value)
        }
        Predicate::IsNull { column } => Leaf::IsNull(column, !negate),
        Predicate::In { column, values } => Leaf::In(column, values, !negate),
        Predicate::And(children) | Predicate::Or(children) => {
            let leaves = children.iter().map(|c| push_down(c, negate)).collect();
            // De Morgan: NOT (a AND b) = NOT a OR NOT b.
            if matches!(p, Predicate::And(_)) != negate {
                Leaf::And(leaves)
            } else {
                Leaf::Or(leaves)
            }
        }
        Predicate::Not(child) => push_down(child, !negate),
    }
}

/// Which files may hold rows `predicate` keeps (true: read the file).
pub fn may_match(
    predicate: &Predicate,
    schema: &Schema,
    stats: &FileStats,
) -> DeltaResult<BooleanArray> {
    let leaf = push_down(predicate, false);
    Evaluator { schema, stats }.eval(&leaf)
}

struct Evaluator<'a> {
    schema: &'a Schema,
    stats: &'a FileStats,
}

/// `array` with nulls as `value`.
fn fill(array: BooleanArray, value: bool) -> BooleanArray {
    if array.null_count() == 0 {
        return array;
    }
    array.iter().map(|v| Some(v.unwrap_or(value))).collect()
}

impl Evaluator<'_> {
    fn all(&self, value: bool) -> BooleanArray {
        BooleanArray::from(vec![value; self.stats.len])
    }

    fn eval(&self, leaf: &Leaf<'_>) -> DeltaResult<BooleanArray> {
        Ok(match leaf {
            Leaf::And(children) => {
                let mut out = self.all(true);
                for c in children {
                    out = and(&out, &self.eval(c)?)?;
                }
                out
            }
            Leaf::Or(children) => {
                let mut out = self.all(false);
                for c in children {
                    out = or(&out, &self.eval(c)?)?;
                }
                out
            }
            Leaf::Compare(column, op, value) => self.compare(column, *op, value)?,
            Leaf::In(column, values, positive) => {
                // IN: any value may match; NOT IN: every inequality must be possible.
                let mut out = self.all(!*positive);
                for v in values.iter() {
                    let op = if *positive { CmpOp::Eq } else { CmpOp::Ne };
                    let m = self.compare(column, op, v)?;
                    out = if *positive {
                        or(&out, &m)?
                    } else {
                        and(&out, &m)?
                    };
                }
                out
            }
            Leaf::IsNull(column, positive) => self.is_null(column, *positive)?,
        })
    }

    fn column_type(&self, column: &str) -> DeltaResult<DataType> {
        self.schema
            .field_with_name(column)
            .map(|f| f.data_type().clone())
            .map_err(|_| {
                DeltaError::InvalidArgument(format!(
                    "the predicate names an unknown column {column:?}"
                ))
            })
    }

    fn literal(&self, column: &str, value: &Literal) -> DeltaResult<ArrayRef> {
        let dt = self.column_type(column)?;
        literal_array(value, &dt).map_err(|e| {
            DeltaError::InvalidArgument(format!("predicate on column {column:?}: {e}"))
        })
    }

    fn stat<'s>(struct_: &'s Option<StructArray>, column: &str) -> Option<&'s ArrayRef> {
        struct_.as_ref()?.column_by_name(column)
    }

    /// Files whose null count equals their record count (every row null in this column).
    fn all_null(&self, column: &str) -> DeltaResult<Option<BooleanArray>> {
        let (Some(nulls), Some(records)) = (
            Self::stat(&self.stats.null_count, column)
                .and_then(|c| c.as_primitive_opt::<Int64Type>()),
            &self.stats.num_records,
        ) else {
            return Ok(None);
        };
        Ok(Some(fill(compare(nulls, CmpOp::Eq, records)?, false)))
    }

    fn compare(&self, column: &str, op: CmpOp, value: &Literal) -> DeltaResult<BooleanArray> {
        let literal = self.literal(column, value)?;
        if literal.is_null(0) {
            // A comparison with null is never true.
            return Ok(self.all(false));
        }
        let v = Scalar::new(literal);
        if let Some(values) = self.stats.partitions.get(column) {
            // Exact: the file's one value decides (null partition values never compare true).
            return Ok(fill(compare(values, op, &v)?, false));
        }
        let min = Self::stat(&self.stats.min, column);
        let max = match Self::stat(&self.stats.max, column) {
            Some(m) => Some(widened_max(m)?),
            None => None,
        };
        // Each rule names the files it proves cannot match; unknown statistics prove nothing.
        let proves = |a: Option<&ArrayRef>, op: CmpOp| -> DeltaResult<BooleanArray> {
            Ok(match a {
                Some(a) => fill(compare(a, op, &v)?, false),
                None => self.all(false),
            })
        };
        let skip = match op {
            CmpOp::Eq => or(&proves(min, CmpOp::Gt)?, &proves(max.as_ref(), CmpOp::Lt)?)?,
            CmpOp::Ne => and(&proves(min, CmpOp::Eq)?, &proves(max.as_ref(), CmpOp::Eq)?)?,
            CmpOp::Lt => proves(min, CmpOp::Ge)?,
            CmpOp::Le => proves(min, CmpOp::Gt)?,
            CmpOp::Gt => proves(max.as_ref(), CmpOp::Le)?,
            CmpOp::Ge => proves(max.as_ref(), CmpOp::Lt)?,
        };
        let skip = match self.all_null(column)? {
            Some(all_null) => or(&skip, &all_null)?,
            None => skip,
        };
        Ok(arrow::compute::not(&skip)?)
    }

    fn is_null(&self, column: &str, positive: bool) -> DeltaResult<BooleanArray> {
        self.column_type(column)?;
        if let Some(values) = self.stats.partitions.get(column) {
            return Ok(if positive {
                is_null(values)?
            } else {
                is_not_null(values)?
            });
        }
        let skip = if positive {
            // No nulls in the file.
            match Self::stat(&self.stats.null_count, column)
                .and_then(|c| c.as_primitive_opt::<Int64Type>())
            {
                Some(nulls) => fill(
                    compare(nulls, CmpOp::Eq, &Scalar::new(Int64Array::from(vec![0])))?,
                    false,
                ),
                None => self.all(false),
            }
        } else {
            self.all_null(column)?.unwrap_or_else(|| self.all(false))
        };
        Ok(arrow::compute::not(&skip)?)
    }
}

/// A string maximum as an upper bound. Writers cut string statistics to a prefix of
/// [`STRING_PREFIX`] characters and append a tie-breaker (U+10FFFF, or U+FFFF in older
/// writers, which is below every supplementary character), so a maximum of that length or
/// longer may be below the values it stands for. Their first [`STRING_PREFIX`] characters are
/// the values' prefix, so the next string after every string with that prefix bounds them:
/// the prefix up to its last character that is not U+10FFFF, that character incremented.
/// `None` (unknown) when there is no such character. Shorter maxima are exact.
fn string_max_bound(max: &str) -> Option<String> {
    let head: Vec<(usize, char)> = max.char_indices().take(STRING_PREFIX).collect();
    if head.len() < STRING_PREFIX {
        return Some(max.to_string());
    }
    head.iter().rev().find_map(|&(at, c)| {
        let next = match c {
            char::MAX => return None,
            '\u{D7FF}' => '\u{E000}',
            c => char::from_u32(u32::from(c) + 1)?,
        };
        Some(format!("{}{next}", &max[..at]))
    })
}

/// Maximum statistics as bounds: timestamps are truncated to milliseconds when written
/// ("Per-file Statistics"), so the true maximum may be up to 999 µs above the stored one.
/// A float maximum bounds only the numbers: writers leave NaN out of it (parquet statistics
/// exclude NaN, and writers deriving Delta statistics from them do too), while in Spark SQL's
/// order, which comparisons follow, NaN is above every number. So a file whose float maximum
/// is a number may still hold NaN rows that `f > x` keeps: the maximum is widened to NaN
/// (never skips `>`, `>=`, `!=` or `= NaN`; `<`, `<=` and `=` still skip on the minimum).
fn widened_max(max: &ArrayRef) -> DeltaResult<ArrayRef> {
    if let DataType::Float32 | DataType::Float64 = max.data_type() {
        let nan: ArrayRef = Arc::new(arrow::array::Float64Array::from(vec![f64::NAN]));
        let nan = cast(&nan, max.data_type())?;
        let filled = arrow::compute::kernels::zip::zip(
            &is_not_null(max)?,
            &arrow::array::Scalar::new(nan),
            max,
        )?;
        return Ok(filled);
    }
    if let DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View = max.data_type() {
        let text = cast(max, &DataType::Utf8)?;
        let widened: arrow::array::StringArray = text
            .as_string::<i32>()
            .iter()
            .map(|v| v.and_then(string_max_bound))
            .collect();
        return Ok(cast(&(Arc::new(widened) as ArrayRef), max.data_type())?);
    }
    let DataType::Timestamp(TimeUnit::Microsecond, _) = max.data_type() else {
        return Ok(max.clone());
    };
    let micros = cast(max, &DataType::Int64)?;
    let widened: Int64Array = micros
        .as_primitive::<Int64Type>()
        .iter()
        .map(|v| v.map(|v| v.saturating_add(999)))
        .collect();
    Ok(cast(&(Arc::new(widened) as ArrayRef), max.data_type())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_maxima_of_the_cut_length_are_widened() {
        let top = char::MAX.to_string();
        assert_eq!(string_max_bound("abc").unwrap(), "abc");
        // A maximum cut by an older writer (U+FFFF tie-breaker) is below a value with a
        // supplementary character after the prefix; the widened bound is above it.
        let prefix = "a".repeat(STRING_PREFIX);
        let stored = format!("{prefix}\u{FFFF}");
        let value = format!("{prefix}\u{1F600}tail");
        assert!(stored < value);
        let bound = string_max_bound(&stored).unwrap();
        assert!(bound > value, "{bound:?}");
        assert_eq!(bound, format!("{}b", "a".repeat(STRING_PREFIX - 1)));
        // U+10FFFF runs are skipped, the surrogate gap jumped, all-U+10FFFF is unknown.
        let v = format!("{}\u{D7FF}{}", "x".repeat(STRING_PREFIX - 3), top.repeat(2));
        assert_eq!(
            string_max_bound(&v).unwrap(),
            format!("{}\u{E000}", "x".repeat(STRING_PREFIX - 3))
        );
        assert_eq!(string_max_bound(&top.repeat(STRING_PREFIX + 1)), None);
    }
    use arrow::array::TimestampMicrosecondArray;
    use arrow::datatypes::{Field, Fields};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("p", DataType::Utf8, true),
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
        ])
    }

    /// Four files: x in [0,10], [20,30], unknown, all-null; p = a, b, null, a.
    fn stats() -> FileStats {
        let fields = Fields::from(vec![
            Field::new("x", DataType::Int64, true),
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
        ]);
        let ts = |v: Vec<Option<i64>>| -> ArrayRef {
            Arc::new(TimestampMicrosecondArray::from(v).with_timezone("UTC"))
        };
        let min = StructArray::new(
            fields.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(0), Some(20), None, None])),
                ts(vec![Some(1_000), None, None, None]),
            ],
            None,
        );
        let max = StructArray::new(
            fields.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(10), Some(30), None, None])),
                ts(vec![Some(5_000), None, None, None]),
            ],
            None,
        );
        let null_fields = Fields::from(vec![
            Field::new("x", DataType::Int64, true),
            Field::new("t", DataType::Int64, true),
        ]);
        let null_count = StructArray::new(
            null_fields,
            vec![
                Arc::new(Int64Array::from(vec![Some(0), Some(1), None, Some(7)])),
                Arc::new(Int64Array::from(vec![Some(0), None, None, None])),
            ],
            None,
        );
        let mut partitions = HashMap::new();
        partitions.insert(
            "p".to_string(),
            Arc::new(arrow::array::StringArray::from(vec![
                Some("a"),
                Some("b"),
                None,
                Some("a"),
            ])) as ArrayRef,
        );
        FileStats {
            len: 4,
            num_records: Some(Int64Array::from(vec![5, 5, 5, 7])),
            min: Some(min),
            max: Some(max),
            null_count: Some(null_count),
            partitions,
        }
    }

    fn keep(p: Predicate) -> Vec<bool> {
        may_match(&p, &schema(), &stats())
            .unwrap()
            .iter()
            .map(Option::unwrap)
            .collect()
    }

    use Predicate as P;

    #[test]
    fn min_max_rules() {
        assert_eq!(
            keep(P::compare("x", CmpOp::Eq, Literal::Int(5))),
            [true, false, true, false]
        );
        assert_eq!(
            keep(P::compare("x", CmpOp::Gt, Literal::Int(10))),
            [false, true, true, false]
        );
        assert_eq!(
            keep(P::compare("x", CmpOp::Ge, Literal::Int(10))),
            [true, true, true, false]
        );
        assert_eq!(
            keep(P::compare("x", CmpOp::Lt, Literal::Int(20))),
            [true, false, true, false]
        );
        assert_eq!(
            keep(P::compare("x", CmpOp::Le, Literal::Int(20))),
            [true, true, true, false]
        );
        assert_eq!(
            keep(P::compare("x", CmpOp::Ne, Literal::Int(5))),
            [true, true, true, false]
        );
        // NOT (x < 20) is x >= 20.
        let not = Predicate::Not(Box::new(P::compare("x", CmpOp::Lt, Literal::Int(20))));
        assert_eq!(keep(not), [false, true, true, false]);
        assert_eq!(keep(P::compare("x", CmpOp::Eq, Literal::Null)), [false; 4]);
    }

    #[test]
    fn null_counts_and_partitions() {
        let is_null = Predicate::IsNull { column: "x".into() };
        assert_eq!(keep(is_null.clone()), [false, true, true, true]);
        assert_eq!(
            keep(Predicate::Not(Box::new(is_null))),
            [true, true, true, false]
        );
        assert_eq!(
            keep(P::compare("p", CmpOp::Eq, Literal::String("a".into()))),
            [true, false, false, true]
        );
        assert_eq!(
            keep(Predicate::IsNull { column: "p".into() }),
            [false, false, true, false]
        );
        let within = Predicate::In {
            column: "p".into(),
            values: vec![Literal::String("b".into()), Literal::Null],
        };
        assert_eq!(keep(within.clone()), [false, true, false, false]);
        // NOT IN with a null never holds (p != NULL is unknown); without it, it prunes.
        assert_eq!(keep(Predicate::Not(Box::new(within))), [false; 4]);
        let not_b = Predicate::Not(Box::new(Predicate::In {
            column: "p".into(),
            values: vec![Literal::String("b".into())],
        }));
        assert_eq!(keep(not_b), [true, false, false, true]);
        let either = Predicate::Or(vec![
            P::compare("p", CmpOp::Eq, Literal::String("b".into())),
            P::compare("x", CmpOp::Lt, Literal::Int(3)),
        ]);
        assert_eq!(keep(either.clone()), [true, true, true, false]);
        // NOT (p = b OR x < 3) = p != b AND x >= 3.
        assert_eq!(
            keep(Predicate::Not(Box::new(either))),
            [true, false, false, false]
        );
    }

    #[test]
    fn timestamp_maxima_are_widened_to_the_millisecond() {
        // max is 5_000 µs, stored truncated: a row at 5_500 µs may exist.
        assert!(keep(P::compare("t", CmpOp::Ge, Literal::Timestamp(5_500)))[0]);
        assert!(!keep(P::compare("t", CmpOp::Ge, Literal::Timestamp(6_000)))[0]);
        assert!(!keep(P::compare("t", CmpOp::Lt, Literal::Timestamp(1_000)))[0]);
    }

    #[test]
    fn unknown_columns_are_errors() {
        let p = P::compare("nope", CmpOp::Eq, Literal::Int(1));
        assert!(may_match(&p, &schema(), &stats()).is_err());
    }
}
