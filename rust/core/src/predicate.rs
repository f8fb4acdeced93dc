//! Predicates: one small expression type for partition pruning, file skipping and row filters.
//!
//! A [`Predicate`] compares top-level columns (logical names) with literals: `= != < <= > >=`,
//! `IS NULL`, `IN`, combined with `AND`, `OR`, `NOT`. It serializes to JSON (the form the
//! Python layer builds and file tasks carry). [`Predicate::bind`] types it against a schema,
//! turning every literal into a value of its column's type; a [`BoundPredicate`] then filters
//! rows exactly with SQL semantics (a comparison with null is unknown, and unknown rows are
//! dropped). File skipping over statistics lives in [`crate::scan::skipping`].

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, BooleanArray, Date32Array, Float64Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow::compute::kernels::boolean::{and_kleene, not, or_kleene};
use arrow::compute::kernels::cmp;
use arrow::compute::{cast_with_options, is_null, CastOptions};
use arrow::datatypes::{DataType, Schema, TimeUnit};
use serde::{Deserialize, Serialize};

use crate::error::{DeltaError, DeltaResult};
use crate::scan::partition_values::parse_partition_value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpOp {
    #[serde(rename = "=")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl CmpOp {
    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> Self {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }

    /// The operator of the negated comparison (`NOT a < b` is `a >= b` for non-null values).
    pub fn negated(self) -> Self {
        match self {
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
        }
    }
}

/// A literal value; converted to its column's type when the predicate is bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Text: a string, or any value in its "Partition Value Serialization" form (dates,
    /// timestamps, decimals, numbers).
    String(String),
    /// Days since the epoch.
    Date(i32),
    /// Microseconds since the epoch (an instant for `timestamp` columns, a wall-clock time
    /// for `timestamp_ntz` columns).
    Timestamp(i64),
    /// A decimal number as text.
    Decimal(String),
    Binary(Vec<u8>),
}

/// A predicate over top-level columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Predicate {
    /// `column op value`.
    Compare {
        column: String,
        op: CmpOp,
        value: Literal,
    },
    /// `column IS NULL`.
    IsNull {
        column: String,
    },
    /// `column IN (values)`.
    In {
        column: String,
        values: Vec<Literal>,
    },
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
    Not(Box<Predicate>),
}

impl Predicate {
    /// `column op value`.
    pub fn compare(column: impl Into<String>, op: CmpOp, value: Literal) -> Self {
        Predicate::Compare {
            column: column.into(),
            op,
            value,
        }
    }

    /// `a AND b`, with the children of either side that is itself a conjunction taken in
    /// (so that predicates built pairwise stay flat).
    pub fn and_flat(a: Predicate, b: Predicate) -> Self {
        let mut parts = Vec::new();
        for p in [a, b] {
            match p {
                Predicate::And(children) => parts.extend(children),
                other => parts.push(other),
            }
        }
        Predicate::And(parts)
    }

    /// `a OR b`, flattened like [`Predicate::and_flat`].
    pub fn or_flat(a: Predicate, b: Predicate) -> Self {
        let mut parts = Vec::new();
        for p in [a, b] {
            match p {
                Predicate::Or(children) => parts.extend(children),
                other => parts.push(other),
            }
        }
        Predicate::Or(parts)
    }

    /// Parses the JSON form. Nesting is bounded by serde_json's recursion limit (128 levels
    /// of JSON), beyond which the predicate is an [`DeltaError::InvalidArgument`] (and
    /// every walker over a parsed predicate therefore recurses boundedly).
    pub fn from_json(text: &str) -> DeltaResult<Self> {
        serde_json::from_str(text).map_err(|e| {
            DeltaError::InvalidArgument(format!("not a deltalog predicate: {}", json_error(&e)))
        })
    }

    /// The JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The columns the predicate reads, each once, in order of appearance.
    pub fn columns(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.visit_columns(&mut |c| {
            if !out.iter().any(|o: &String| o == c) {
                out.push(c.to_string());
            }
        });
        out
    }

    /// The predicate with every column name `c` replaced by `rename(c)`.
    pub fn rename_columns(&self, rename: &dyn Fn(&str) -> String) -> Predicate {
        match self {
            Predicate::Compare { column, op, value } => Predicate::Compare {
                column: rename(column),
                op: *op,
                value: value.clone(),
            },
            Predicate::IsNull { column } => Predicate::IsNull {
                column: rename(column),
            },
            Predicate::In { column, values } => Predicate::In {
                column: rename(column),
                values: values.clone(),
            },
            Predicate::And(children) => {
                Predicate::And(children.iter().map(|c| c.rename_columns(rename)).collect())
            }
            Predicate::Or(children) => {
                Predicate::Or(children.iter().map(|c| c.rename_columns(rename)).collect())
            }
            Predicate::Not(child) => Predicate::Not(Box::new(child.rename_columns(rename))),
        }
    }

    fn visit_columns(&self, f: &mut impl FnMut(&str)) {
        match self {
            Predicate::Compare { column, .. }
            | Predicate::IsNull { column }
            | Predicate::In { column, .. } => f(column),
            Predicate::And(children) | Predicate::Or(children) => {
                children.iter().for_each(|c| c.visit_columns(f))
            }
            Predicate::Not(child) => child.visit_columns(f),
        }
    }

    /// Types the predicate against `schema` (whose fields are the columns it may name).
    pub fn bind(&self, schema: &Schema) -> DeltaResult<BoundPredicate> {
        let column = |name: &str| -> DeltaResult<(usize, DataType)> {
            let (i, f) = schema.column_with_name(name).ok_or_else(|| {
                DeltaError::InvalidArgument(format!(
                    "the predicate names an unknown column {name:?}"
                ))
            })?;
            Ok((i, f.data_type().clone()))
        };
        let value = |name: &str, dt: &DataType, lit: &Literal| {
            literal_array(lit, dt).map_err(|e| {
                DeltaError::InvalidArgument(format!("predicate on column {name:?}: {e}"))
            })
        };
        Ok(match self {
            Predicate::Compare {
                column: name,
                op,
                value: lit,
            } => {
                let (index, dt) = column(name)?;
                BoundPredicate::Compare {
                    column: name.clone(),
                    index,
                    op: *op,
                    value: value(name, &dt, lit)?,
                }
            }
            Predicate::IsNull { column: name } => {
                let (index, _) = column(name)?;
                BoundPredicate::IsNull {
                    column: name.clone(),
                    index,
                }
            }
            Predicate::In {
                column: name,
                values,
            } => {
                let (index, dt) = column(name)?;
                BoundPredicate::In {
                    column: name.clone(),
                    index,
                    values: values
                        .iter()
                        .map(|v| value(name, &dt, v))
                        .collect::<DeltaResult<_>>()?,
                }
            }
            Predicate::And(children) => BoundPredicate::And(
                children
                    .iter()
                    .map(|c| c.bind(schema))
                    .collect::<DeltaResult<_>>()?,
            ),
            Predicate::Or(children) => BoundPredicate::Or(
                children
                    .iter()
                    .map(|c| c.bind(schema))
                    .collect::<DeltaResult<_>>()?,
            ),
            Predicate::Not(child) => BoundPredicate::Not(Box::new(child.bind(schema)?)),
        })
    }
}

/// A predicate whose literals have their columns' types; columns are found by index in the
/// schema it was bound to.
#[derive(Debug, Clone)]
pub enum BoundPredicate {
    Compare {
        column: String,
        index: usize,
        op: CmpOp,
        /// One value of the column's type.
        value: ArrayRef,
    },
    IsNull {
        column: String,
        index: usize,
    },
    In {
        column: String,
        index: usize,
        values: Vec<ArrayRef>,
    },
    And(Vec<BoundPredicate>),
    Or(Vec<BoundPredicate>),
    Not(Box<BoundPredicate>),
}

/// A serde_json error, with its recursion limit named.
pub fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if text.contains("recursion limit exceeded") {
        format!(
            "{text}: nested deeper than the limit of 128 levels of JSON (build long \
             conjunctions and disjunctions as flat lists)"
        )
    } else {
        text
    }
}

/// `a op b` with Arrow's comparison kernels (`b` may be a one-element scalar), with SQL's
/// floating-point equality: Arrow orders floats totally (`-0.0 < 0.0`), SQL, Spark and pyarrow
/// treat the two zeros as equal, so both sides have their zeros (and NaNs) normalized first
/// ([`normalize_floats`]). NaN keeps Spark SQL's rules, which Arrow's total order already
/// has: NaN equals NaN and is above every other value.
pub fn compare(
    a: &dyn arrow::array::Datum,
    op: CmpOp,
    b: &dyn arrow::array::Datum,
) -> Result<BooleanArray, arrow::error::ArrowError> {
    let normalized = |d: &dyn arrow::array::Datum| -> Option<Box<dyn arrow::array::Datum>> {
        let (array, is_scalar) = d.get();
        if !matches!(array.data_type(), DataType::Float32 | DataType::Float64) {
            return None;
        }
        let out = normalize_floats(&arrow::array::make_array(array.to_data()));
        Some(if is_scalar {
            Box::new(arrow::array::Scalar::new(out))
        } else {
            Box::new(out)
        })
    };
    let (na, nb) = (normalized(a), normalized(b));
    let a: &dyn arrow::array::Datum = match &na {
        Some(n) => n.as_ref(),
        None => a,
    };
    let b: &dyn arrow::array::Datum = match &nb {
        Some(n) => n.as_ref(),
        None => b,
    };
    match op {
        CmpOp::Eq => cmp::eq(a, b),
        CmpOp::Ne => cmp::neq(a, b),
        CmpOp::Lt => cmp::lt(a, b),
        CmpOp::Le => cmp::lt_eq(a, b),
        CmpOp::Gt => cmp::gt(a, b),
        CmpOp::Ge => cmp::gt_eq(a, b),
    }
}

/// A float array with `-0.0` as `0.0` and every NaN as the one positive NaN, so that Arrow's
/// total order and byte-wise row keys (MERGE's join) agree with SQL equality; other arrays as
/// they are.
pub fn normalize_floats(array: &ArrayRef) -> ArrayRef {
    use arrow::array::AsArray;
    use arrow::datatypes::{Float32Type, Float64Type};
    // `x + 0.0` is `0.0` for both zeros and `x` otherwise.
    match array.data_type() {
        DataType::Float64 => Arc::new(
            array
                .as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|v| if v.is_nan() { f64::NAN } else { v + 0.0 }),
        ),
        DataType::Float32 => Arc::new(
            array
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|v| if v.is_nan() { f32::NAN } else { v + 0.0 }),
        ),
        _ => array.clone(),
    }
}

impl BoundPredicate {
    /// The predicate's three-valued result on every row of `batch` (the schema it was bound
    /// to): true, false, or null for unknown.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray, arrow::error::ArrowError> {
        match self {
            BoundPredicate::Compare {
                index, op, value, ..
            } => compare(
                batch.column(*index),
                *op,
                &arrow::array::Scalar::new(value.clone()),
            ),
            BoundPredicate::IsNull { index, .. } => is_null(batch.column(*index)),
            BoundPredicate::In { index, values, .. } => {
                let column = batch.column(*index);
                let mut out: Option<BooleanArray> = None;
                for v in values {
                    let eq = compare(column, CmpOp::Eq, &arrow::array::Scalar::new(v.clone()))?;
                    out = Some(match out {
                        Some(o) => or_kleene(&o, &eq)?,
                        None => eq,
                    });
                }
                Ok(out.unwrap_or_else(|| BooleanArray::from(vec![false; batch.num_rows()])))
            }
            BoundPredicate::And(children) => {
                let mut out = BooleanArray::from(vec![true; batch.num_rows()]);
                for c in children {
                    out = and_kleene(&out, &c.evaluate(batch)?)?;
                }
                Ok(out)
            }
            BoundPredicate::Or(children) => {
                let mut out = BooleanArray::from(vec![false; batch.num_rows()]);
                for c in children {
                    out = or_kleene(&out, &c.evaluate(batch)?)?;
                }
                Ok(out)
            }
            BoundPredicate::Not(child) => not(&child.evaluate(batch)?),
        }
    }

    /// The rows of `batch` the predicate keeps (true; unknown counts as false).
    pub fn filter_mask(
        &self,
        batch: &RecordBatch,
    ) -> Result<BooleanArray, arrow::error::ArrowError> {
        let result = self.evaluate(batch)?;
        Ok(match result.nulls() {
            Some(_) => arrow::compute::prep_null_mask_filter(&result),
            None => result,
        })
    }
}

/// `literal` as one value of type `dt`. Values convert where no information is lost or the
/// text is the value's serialized form; anything else is an error.
pub fn literal_array(literal: &Literal, dt: &DataType) -> Result<ArrayRef, String> {
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let numeric = |dt: &DataType| dt.is_numeric() || matches!(dt, DataType::Decimal128(_, _));
    let convert =
        |array: ArrayRef| cast_with_options(&array, dt, &strict).map_err(|e| format!("{e}"));
    let mismatch = || format!("the literal {literal:?} cannot be compared with a {dt} column");
    match (literal, dt) {
        (Literal::Null, _) => Ok(new_null_array(dt, 1)),
        (Literal::Bool(b), DataType::Boolean) => Ok(Arc::new(BooleanArray::from(vec![*b]))),
        (Literal::Int(i), dt) if numeric(dt) => convert(Arc::new(Int64Array::from(vec![*i]))),
        (Literal::Float(f), DataType::Float32 | DataType::Float64 | DataType::Decimal128(_, _)) => {
            convert(Arc::new(Float64Array::from(vec![*f])))
        }
        (Literal::String(s), DataType::Utf8) => Ok(Arc::new(StringArray::from(vec![s.as_str()]))),
        (Literal::String(s), _) => {
            if s.is_empty() {
                return Err(mismatch());
            }
            parse_partition_value(Some(s), dt).map_err(|_| {
                format!(
                    "the text {s:?} is not a {dt} value (text compared with a column of \
                     another type must be that type's text form, e.g. \"3\", \"2.5\", \
                     \"2026-01-31\")"
                )
            })
        }
        (Literal::Decimal(s), dt) if numeric(dt) => {
            convert(Arc::new(StringArray::from(vec![s.as_str()])))
        }
        (Literal::Date(d), DataType::Date32) => Ok(Arc::new(Date32Array::from(vec![*d]))),
        (Literal::Date(d), DataType::Timestamp(TimeUnit::Microsecond, tz)) => Ok(Arc::new(
            TimestampMicrosecondArray::from(vec![i64::from(*d) * 86_400_000_000])
                .with_timezone_opt(tz.clone()),
        )),
        (Literal::Timestamp(t), DataType::Timestamp(TimeUnit::Microsecond, tz)) => Ok(Arc::new(
            TimestampMicrosecondArray::from(vec![*t]).with_timezone_opt(tz.clone()),
        )),
        (Literal::Binary(b), DataType::Binary) => Ok(Arc::new(arrow::array::BinaryArray::from(
            vec![b.as_slice()],
        ))),
        _ => Err(mismatch()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("d", DataType::Date32, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![Some(1), Some(5), None, Some(9)])),
                Arc::new(StringArray::from(vec![
                    Some("x"),
                    None,
                    Some("y"),
                    Some("x"),
                ])),
                Arc::new(Date32Array::from(vec![Some(0), Some(1), Some(2), None])),
            ],
        )
        .unwrap()
    }

    fn rows(p: &Predicate) -> Vec<bool> {
        let b = batch();
        let bound = p.bind(b.schema().as_ref()).unwrap();
        bound
            .filter_mask(&b)
            .unwrap()
            .iter()
            .map(|v| v.unwrap())
            .collect()
    }

    use Predicate as P;

    #[test]
    fn comparisons_with_sql_null_semantics() {
        assert_eq!(
            rows(&P::compare("a", CmpOp::Gt, Literal::Int(1))),
            [false, true, false, true]
        );
        assert_eq!(
            rows(&P::compare("a", CmpOp::Ne, Literal::Int(5))),
            [true, false, false, true]
        );
        // NOT of an unknown is unknown: the null row stays out.
        let not = Predicate::Not(Box::new(P::compare("a", CmpOp::Gt, Literal::Int(1))));
        assert_eq!(rows(&not), [true, false, false, false]);
        assert_eq!(
            rows(&Predicate::IsNull { column: "s".into() }),
            [false, true, false, false]
        );
        let within = Predicate::In {
            column: "a".into(),
            values: vec![Literal::Int(9), Literal::Null, Literal::Int(1)],
        };
        assert_eq!(rows(&within), [true, false, false, true]);
        let both = Predicate::And(vec![
            P::compare("s", CmpOp::Eq, Literal::String("x".into())),
            P::compare("a", CmpOp::Lt, Literal::Int(5)),
        ]);
        assert_eq!(rows(&both), [true, false, false, false]);
        let either = Predicate::Or(vec![
            P::compare("s", CmpOp::Eq, Literal::String("y".into())),
            P::compare("a", CmpOp::Ge, Literal::Int(9)),
        ]);
        assert_eq!(rows(&either), [false, false, true, true]);
        // Dates compare with date literals or their text.
        assert_eq!(
            rows(&P::compare("d", CmpOp::Ge, Literal::Date(1))),
            [false, true, true, false]
        );
        assert_eq!(
            rows(&P::compare(
                "d",
                CmpOp::Ge,
                Literal::String("1970-01-02".into())
            )),
            [false, true, true, false]
        );
    }

    #[test]
    fn binding_checks_columns_and_literal_types() {
        let b = batch();
        let schema = b.schema();
        assert!(P::compare("zz", CmpOp::Eq, Literal::Int(1))
            .bind(&schema)
            .is_err());
        assert!(P::compare("a", CmpOp::Eq, Literal::Bool(true))
            .bind(&schema)
            .is_err());
        assert!(P::compare("a", CmpOp::Eq, Literal::String("seven".into()))
            .bind(&schema)
            .is_err());
        assert!(P::compare("d", CmpOp::Eq, Literal::Int(3))
            .bind(&schema)
            .is_err());
        assert!(P::compare("a", CmpOp::Eq, Literal::String("7".into()))
            .bind(&schema)
            .is_ok());
    }

    #[test]
    fn json_round_trip_and_columns() {
        let p = Predicate::Or(vec![
            Predicate::Not(Box::new(Predicate::IsNull { column: "b".into() })),
            Predicate::And(vec![
                P::compare("a", CmpOp::Le, Literal::Timestamp(5)),
                Predicate::In {
                    column: "b".into(),
                    values: vec![Literal::Decimal("1.5".into()), Literal::Binary(vec![1, 2])],
                },
            ]),
        ]);
        assert_eq!(Predicate::from_json(&p.to_json()).unwrap(), p);
        assert_eq!(p.columns(), ["b", "a"]);
        let text = r#"{"compare":{"column":"x","op":">=","value":{"int":3}}}"#;
        assert_eq!(
            Predicate::from_json(text).unwrap(),
            P::compare("x", CmpOp::Ge, Literal::Int(3))
        );
        assert!(Predicate::from_json(r#"{"compare":{"column":"x","op":"~"}}"#).is_err());
    }
}
