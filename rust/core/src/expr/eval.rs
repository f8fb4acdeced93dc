//! Evaluating an [`Expr`] over a record batch with Arrow's kernels.
//!
//! SQL semantics: nulls propagate through arithmetic and comparisons, `AND`/`OR`/`NOT` use
//! three-valued (Kleene) logic, `x IN (..)` is unknown when no element equals `x` and one is
//! null. Operands of different types meet at a common type (integers widen, an integer meets
//! a decimal as a decimal, anything meets a float as a double, a date meets a timestamp as a
//! timestamp); untyped literals take the type of the operand they meet, so `d = '2024-01-01'`
//! compares dates and `ts > '2024-01-01T10:00:00Z'` timestamps ("Partition Value
//! Serialization" texts are accepted, as for the scan's predicates). `/` divides as doubles
//! (as Spark does) unless an operand is a decimal. Overflow, division by zero and failed casts
//! are errors (Spark's ANSI mode), never wrong values.

//!
//! The SQL functions themselves (string, date, math) live in [`super::functions`].

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, Datum, Float64Array, Int64Array,
    RecordBatch, Scalar, StringArray,
};
use arrow::compute::kernels::boolean::{and_kleene, not, or_kleene};
use arrow::compute::kernels::{comparison, concat_elements, numeric, zip::zip};
use arrow::compute::{cast_with_options, is_not_null, is_null, prep_null_mask_filter, CastOptions};
use arrow::datatypes::{DataType, TimeUnit};

use super::functions::call;
use crate::error::{DeltaError, DeltaResult};
use crate::expr::{BinaryOp, Expr};
use crate::predicate::{compare, CmpOp, Literal};
use crate::scan::partition_values::repeat;

/// An intermediate value: a column of the batch's length, one value for every row, or a
/// literal still waiting for a type.
#[derive(Debug, Clone)]
pub(super) enum Value {
    Array(ArrayRef),
    Scalar(ArrayRef),
    Untyped(Literal),
}

pub(super) type Res<T> = Result<T, String>;

/// The expression's value for every row of `batch`.
pub fn evaluate(expr: &Expr, batch: &RecordBatch) -> DeltaResult<ArrayRef> {
    let n = batch.num_rows();
    eval(expr, batch)
        .and_then(|v| materialize(v, n))
        .map_err(|e| DeltaError::InvalidArgument(format!("evaluating {}: {e}", describe(expr))))
}

/// A boolean expression's three-valued result on every row of `batch`.
pub fn evaluate_predicate(expr: &Expr, batch: &RecordBatch) -> DeltaResult<BooleanArray> {
    let out = evaluate(expr, batch)?;
    match out.data_type() {
        DataType::Boolean => Ok(out.as_boolean().clone()),
        DataType::Null => Ok(BooleanArray::new_null(out.len())),
        other => Err(DeltaError::InvalidArgument(format!(
            "{} is a {other}, not a condition",
            describe(expr)
        ))),
    }
}

/// The rows of `batch` where the condition is true (unknown counts as false).
pub fn matches(expr: &Expr, batch: &RecordBatch) -> DeltaResult<BooleanArray> {
    let result = evaluate_predicate(expr, batch)?;
    Ok(match result.nulls() {
        Some(_) => prep_null_mask_filter(&result),
        None => result,
    })
}

/// The expression's JSON form, shortened, for error messages.
fn describe(expr: &Expr) -> String {
    let text = serde_json::to_string(expr).unwrap_or_default();
    let mut short: String = text.chars().take(200).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

pub(super) fn strict() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..Default::default()
    }
}

pub(super) fn data_type(v: &Value) -> Option<DataType> {
    match v {
        Value::Array(a) | Value::Scalar(a) => Some(a.data_type().clone()),
        Value::Untyped(_) => None,
    }
}

/// A literal's own type: integers are bigints, decimals as written, strings strings.
fn natural(lit: &Literal) -> Res<ArrayRef> {
    Ok(match lit {
        Literal::Null => new_null_array(&DataType::Null, 1),
        Literal::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
        Literal::Int(i) => Arc::new(Int64Array::from(vec![*i])),
        Literal::Float(f) => Arc::new(Float64Array::from(vec![*f])),
        Literal::String(s) => Arc::new(StringArray::from(vec![s.as_str()])),
        Literal::Decimal(text) => {
            let digits = text.chars().filter(char::is_ascii_digit).count();
            let scale = text.split_once('.').map_or(0, |(_, f)| f.len());
            let precision = digits.max(scale + 1).clamp(1, 38) as u8;
            let dt = DataType::Decimal128(precision, scale.min(38) as i8);
            let text: ArrayRef = Arc::new(StringArray::from(vec![text.as_str()]));
            cast_with_options(&text, &dt, &strict()).map_err(|e| e.to_string())?
        }
        Literal::Date(d) => Arc::new(arrow::array::Date32Array::from(vec![*d])),
        Literal::Timestamp(t) => {
            Arc::new(arrow::array::TimestampMicrosecondArray::from(vec![*t]).with_timezone("UTC"))
        }
        Literal::Binary(b) => Arc::new(arrow::array::BinaryArray::from(vec![b.as_slice()])),
    })
}

/// `v` with a type: an untyped literal converted to `like` where it converts (its text read
/// as a value of that type), else its own type.
fn typed(v: Value, like: Option<&DataType>) -> Res<Value> {
    match v {
        Value::Untyped(lit) => {
            if let Some(dt) = like {
                if let Ok(a) = crate::predicate::literal_array(&lit, dt) {
                    return Ok(Value::Scalar(a));
                }
            }
            Ok(Value::Scalar(natural(&lit)?))
        }
        other => Ok(other),
    }
}

pub(super) fn materialize(v: Value, n: usize) -> Res<ArrayRef> {
    match typed(v, None)? {
        Value::Array(a) => Ok(a),
        Value::Scalar(a) => repeat(&a, n).map_err(|e| e.to_string()),
        Value::Untyped(_) => Err("untyped value".into()),
    }
}

pub(super) fn cast_value(v: Value, to: &DataType) -> Res<Value> {
    let cast = |a: &ArrayRef| cast_with_options(a, to, &strict()).map_err(|e| e.to_string());
    Ok(match typed(v, Some(to))? {
        Value::Array(a) if a.data_type() == to => Value::Array(a),
        Value::Scalar(a) if a.data_type() == to => Value::Scalar(a),
        Value::Array(a) => Value::Array(cast(&a)?),
        Value::Scalar(a) => Value::Scalar(cast(&a)?),
        Value::Untyped(_) => return Err("untyped value".into()),
    })
}

fn int_digits(dt: &DataType) -> Option<u8> {
    Some(match dt {
        DataType::Int8 => 3,
        DataType::Int16 => 5,
        DataType::Int32 => 10,
        DataType::Int64 => 19,
        _ => return None,
    })
}

pub(super) fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// The type two operands meet at, if any.
fn common_type(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType::*;
    if a == b {
        return Some(a.clone());
    }
    Some(match (a, b) {
        (Null, x) | (x, Null) => x.clone(),
        (x, y) if is_string(x) && is_string(y) => Utf8,
        (Binary | LargeBinary | BinaryView, Binary | LargeBinary | BinaryView) => Binary,
        (Date32, Timestamp(_, tz)) | (Timestamp(_, tz), Date32) => {
            Timestamp(TimeUnit::Microsecond, tz.clone())
        }
        (Timestamp(_, x), Timestamp(_, y)) if x.is_some() == y.is_some() => {
            Timestamp(TimeUnit::Microsecond, x.clone())
        }
        (Float32 | Float64, y) | (y, Float32 | Float64) if y.is_numeric() => Float64,
        (Decimal128(_, _), _) | (_, Decimal128(_, _)) => {
            let parts = |dt: &DataType| match dt {
                Decimal128(p, s) => Some((*p as i32 - *s as i32, *s as i32)),
                other => int_digits(other).map(|d| (d as i32, 0)),
            };
            let ((ia, sa), (ib, sb)) = (parts(a)?, parts(b)?);
            let scale = sa.max(sb);
            let precision = (ia.max(ib) + scale).min(38);
            Decimal128(precision as u8, scale.min(precision) as i8)
        }
        (x, y) => {
            let (dx, dy) = (int_digits(x)?, int_digits(y)?);
            if dx >= dy {
                x.clone()
            } else {
                y.clone()
            }
        }
    })
}

/// Both operands at their common type.
fn coerce(a: Value, b: Value) -> Res<(Value, Value)> {
    let (a, b) = match (data_type(&a), data_type(&b)) {
        (None, Some(tb)) => (typed(a, Some(&tb))?, b),
        (Some(ta), None) => {
            let b = typed(b, Some(&ta))?;
            (a, b)
        }
        _ => (typed(a, None)?, typed(b, None)?),
    };
    let (Some(ta), Some(tb)) = (data_type(&a), data_type(&b)) else {
        return Err("untyped value".into());
    };
    if ta == tb {
        return Ok((a, b));
    }
    let common = common_type(&ta, &tb).ok_or_else(|| format!("a {ta} cannot meet a {tb}"))?;
    Ok((cast_value(a, &common)?, cast_value(b, &common)?))
}

/// Applies a kernel on two datums; the result is a scalar when both operands are.
fn binary_kernel(
    a: &Value,
    b: &Value,
    f: impl Fn(&dyn Datum, &dyn Datum) -> Result<ArrayRef, arrow::error::ArrowError>,
) -> Res<Value> {
    let scalar = |v: &ArrayRef| Scalar::new(v.clone());
    let out = match (a, b) {
        (Value::Array(x), Value::Array(y)) => f(x, y),
        (Value::Array(x), Value::Scalar(y)) => f(x, &scalar(y)),
        (Value::Scalar(x), Value::Array(y)) => f(&scalar(x), y),
        (Value::Scalar(x), Value::Scalar(y)) => {
            return f(&scalar(x), &scalar(y))
                .map(Value::Scalar)
                .map_err(|e| e.to_string())
        }
        _ => return Err("untyped value".into()),
    };
    out.map(Value::Array).map_err(|e| e.to_string())
}

fn boolean(v: Value, n: usize, what: &str) -> Res<BooleanArray> {
    let a = materialize(v, n)?;
    match a.data_type() {
        DataType::Boolean => Ok(a.as_boolean().clone()),
        DataType::Null => Ok(BooleanArray::new_null(n)),
        other => Err(format!("{what} needs booleans, not {other}")),
    }
}

fn comparison(a: Value, op: CmpOp, b: Value) -> Res<Value> {
    let (a, b) = coerce(a, b)?;
    binary_kernel(&a, &b, |x, y| {
        compare(x, op, y).map(|r| Arc::new(r) as ArrayRef)
    })
}

pub(super) fn arithmetic(op: BinaryOp, a: Value, b: Value) -> Res<Value> {
    let (mut a, mut b) = coerce(a, b)?;
    if op == BinaryOp::Divide {
        let decimal = matches!(data_type(&a), Some(DataType::Decimal128(_, _)));
        if !decimal {
            a = cast_value(a, &DataType::Float64)?;
            b = cast_value(b, &DataType::Float64)?;
        }
    }
    if let Some(dt) = data_type(&a) {
        if !(dt.is_numeric() || matches!(dt, DataType::Null)) {
            return Err(format!("arithmetic on a {dt}"));
        }
    }
    binary_kernel(&a, &b, |x, y| match op {
        BinaryOp::Plus => numeric::add(x, y),
        BinaryOp::Minus => numeric::sub(x, y),
        BinaryOp::Multiply => numeric::mul(x, y),
        BinaryOp::Divide => numeric::div(x, y),
        _ => numeric::rem(x, y),
    })
}

pub(super) fn strings(v: Value, n: usize) -> Res<StringArray> {
    let a = materialize(v, n)?;
    let a = cast_with_options(&a, &DataType::Utf8, &strict()).map_err(|e| e.to_string())?;
    Ok(a.as_string::<i32>().clone())
}

/// Column `name` of `batch`: a column of that name, else the longest prefix of its dotted
/// parts that names a column (which may itself hold dots, as `target.x` does in MERGE),
/// followed by struct fields.
fn column(batch: &RecordBatch, name: &str) -> Res<ArrayRef> {
    if let Some(c) = batch.column_by_name(name) {
        return Ok(c.clone());
    }
    let missing = || format!("no column {name:?}");
    let dots: Vec<usize> = name.match_indices('.').map(|(i, _)| i).collect();
    let (mut current, rest) = dots
        .iter()
        .rev()
        .find_map(|&i| {
            batch
                .column_by_name(&name[..i])
                .map(|c| (c.clone(), &name[i + 1..]))
        })
        .ok_or_else(missing)?;
    for part in rest.split('.') {
        let s = current.as_struct_opt().ok_or_else(missing)?;
        let child = s.column_by_name(part).ok_or_else(missing)?;
        // A null struct makes its fields null.
        current = match s.nulls() {
            Some(nulls) if nulls.null_count() > 0 => {
                let data = child.to_data().into_builder().nulls(Some(
                    arrow::buffer::NullBuffer::union(Some(nulls), child.nulls())
                        .unwrap_or_else(|| nulls.clone()),
                ));
                arrow::array::make_array(data.build().map_err(|e| e.to_string())?)
            }
            _ => child.clone(),
        };
    }
    Ok(current)
}

fn eval(e: &Expr, batch: &RecordBatch) -> Res<Value> {
    let n = batch.num_rows();
    Ok(match e {
        Expr::Column(name) => Value::Array(column(batch, name)?),
        Expr::Literal(lit) => Value::Untyped(lit.clone()),
        Expr::Binary { op, left, right } => {
            let (a, b) = (eval(left, batch)?, eval(right, batch)?);
            match op {
                BinaryOp::Cmp(c) => comparison(a, *c, b)?,
                BinaryOp::And | BinaryOp::Or => {
                    let what = if *op == BinaryOp::And { "AND" } else { "OR" };
                    let (x, y) = (boolean(a, n, what)?, boolean(b, n, what)?);
                    let out = if *op == BinaryOp::And {
                        and_kleene(&x, &y)
                    } else {
                        or_kleene(&x, &y)
                    };
                    Value::Array(Arc::new(out.map_err(|e| e.to_string())?))
                }
                BinaryOp::Concat => concat(vec![a, b], n)?,
                _ => arithmetic(*op, a, b)?,
            }
        }
        Expr::Not(inner) => {
            let x = boolean(eval(inner, batch)?, n, "NOT")?;
            Value::Array(Arc::new(not(&x).map_err(|e| e.to_string())?))
        }
        Expr::Negative(inner) => {
            let a = materialize(eval(inner, batch)?, n)?;
            Value::Array(numeric::neg(&a).map_err(|e| e.to_string())?)
        }
        Expr::IsNull { expr, negated } => {
            let a = materialize(eval(expr, batch)?, n)?;
            let out = if *negated {
                is_not_null(&a)
            } else {
                is_null(&a)
            };
            Value::Array(Arc::new(out.map_err(|e| e.to_string())?))
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let x = eval(expr, batch)?;
            let mut out = BooleanArray::from(vec![false; n]);
            for item in list {
                let eq = comparison(x.clone(), CmpOp::Eq, eval(item, batch)?)?;
                out = or_kleene(&out, &boolean(eq, n, "IN")?).map_err(|e| e.to_string())?;
            }
            if *negated {
                out = not(&out).map_err(|e| e.to_string())?;
            }
            Value::Array(Arc::new(out))
        }
        Expr::Between {
            expr,
            low,
            high,
            negated,
        } => {
            let x = eval(expr, batch)?;
            let ge = comparison(x.clone(), CmpOp::Ge, eval(low, batch)?)?;
            let le = comparison(x, CmpOp::Le, eval(high, batch)?)?;
            let mut out = and_kleene(&boolean(ge, n, "BETWEEN")?, &boolean(le, n, "BETWEEN")?)
                .map_err(|e| e.to_string())?;
            if *negated {
                out = not(&out).map_err(|e| e.to_string())?;
            }
            Value::Array(Arc::new(out))
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => {
            let x = Value::Array(Arc::new(strings(eval(expr, batch)?, n)?));
            let p = match eval(pattern, batch)? {
                Value::Untyped(Literal::String(s)) => {
                    Value::Scalar(Arc::new(StringArray::from(vec![s])))
                }
                other => Value::Array(Arc::new(strings(other, n)?)),
            };
            binary_kernel(&x, &p, |a, b| {
                let out = match (negated, case_insensitive) {
                    (false, false) => comparison::like(a, b),
                    (true, false) => comparison::nlike(a, b),
                    (false, true) => comparison::ilike(a, b),
                    (true, true) => comparison::nilike(a, b),
                };
                out.map(|r| Arc::new(r) as ArrayRef)
            })?
        }
        Expr::Case {
            operand,
            branches,
            otherwise,
        } => case(operand.as_deref(), branches, otherwise.as_deref(), batch)?,
        Expr::Cast { expr, to } => cast_value(eval(expr, batch)?, to)?,
        Expr::Function { function, args } => {
            let args = args
                .iter()
                .map(|a| eval(a, batch))
                .collect::<Res<Vec<_>>>()?;
            call(*function, args, n)?
        }
    })
}

/// The common type of values, untyped literals taking the others' type.
pub(super) fn common_of(values: &[Value]) -> Res<DataType> {
    let mut common: Option<DataType> = None;
    for v in values {
        if let Some(t) = data_type(v) {
            common = Some(match common {
                None => t,
                Some(c) => common_type(&c, &t).ok_or_else(|| format!("a {c} cannot meet a {t}"))?,
            });
        }
    }
    match common {
        Some(c) => Ok(c),
        None => {
            // Only untyped literals: their own types.
            let typed = values
                .iter()
                .map(|v| typed(v.clone(), None))
                .collect::<Res<Vec<_>>>()?;
            if typed.iter().all(|v| data_type(v).is_none()) {
                return Ok(DataType::Null);
            }
            common_of(&typed)
        }
    }
}

fn case(
    operand: Option<&Expr>,
    branches: &[(Expr, Expr)],
    otherwise: Option<&Expr>,
    batch: &RecordBatch,
) -> Res<Value> {
    let n = batch.num_rows();
    let operand = operand.map(|o| eval(o, batch)).transpose()?;
    let mut conditions = Vec::with_capacity(branches.len());
    let mut results = Vec::with_capacity(branches.len() + 1);
    for (when, then) in branches {
        let w = eval(when, batch)?;
        let cond = match &operand {
            Some(o) => comparison(o.clone(), CmpOp::Eq, w)?,
            None => w,
        };
        let cond = boolean(cond, n, "WHEN")?;
        conditions.push(match cond.nulls() {
            Some(_) => prep_null_mask_filter(&cond),
            None => cond,
        });
        results.push(eval(then, batch)?);
    }
    results.push(match otherwise {
        Some(o) => eval(o, batch)?,
        None => Value::Untyped(Literal::Null),
    });
    let dt = common_of(&results)?;
    let mut results = results
        .into_iter()
        .map(|r| cast_value(r, &dt).and_then(|v| materialize(v, n)))
        .collect::<Res<Vec<_>>>()?;
    let mut out = results.pop().ok_or("CASE without branches")?;
    for (cond, then) in conditions.iter().zip(results).rev() {
        out = zip(cond, &then, &out).map_err(|e| e.to_string())?;
    }
    Ok(Value::Array(out))
}

pub(super) fn concat(args: Vec<Value>, n: usize) -> Res<Value> {
    let mut out: Option<StringArray> = None;
    for a in args {
        let s = strings(a, n)?;
        out = Some(match out {
            None => s,
            Some(prev) => {
                concat_elements::concat_elements_utf8(&prev, &s).map_err(|e| e.to_string())?
            }
        });
    }
    let out = out.ok_or("concat of nothing")?;
    Ok(Value::Array(Arc::new(out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::functions::{
        add_interval, chrono_format, round, spark_substring, truncate_micros,
    };
    use arrow::array::{Date32Array, Int32Array, StructArray};
    use arrow::datatypes::{Field, Schema};

    #[test]
    fn substrings_follow_spark() {
        assert_eq!(spark_substring("hello", 2, Some(3)), "ell");
        assert_eq!(spark_substring("hello", 0, Some(2)), "he");
        assert_eq!(spark_substring("hello", -3, None), "llo");
        assert_eq!(spark_substring("hello", -9, Some(3)), "");
        assert_eq!(spark_substring("hello", 9, None), "");
        assert_eq!(spark_substring("hello", 2, Some(-1)), "");
        assert_eq!(spark_substring("Straße", 5, None), "ße");
    }

    #[test]
    fn date_patterns_truncation_and_intervals() {
        assert_eq!(
            chrono_format("yyyy-MM-dd HH:mm:ss").expect("pattern"),
            "%Y-%m-%d %H:%M:%S"
        );
        assert_eq!(chrono_format("dd/MM/yy").expect("pattern"), "%d/%m/%y");
        assert!(chrono_format("yyyy-QQ").is_err());
        let at = |y, mo, d, h, mi, s| {
            chrono::NaiveDate::from_ymd_opt(y, mo, d)
                .and_then(|d| d.and_hms_opt(h, mi, s))
                .map(|t| t.and_utc().timestamp_micros())
                .expect("a valid time")
        };
        let t = at(2026, 11, 25, 8, 5, 3) + 42;
        assert_eq!(truncate_micros(t, "month"), Ok(at(2026, 11, 1, 0, 0, 0)));
        assert_eq!(truncate_micros(t, "quarter"), Ok(at(2026, 10, 1, 0, 0, 0)));
        assert_eq!(truncate_micros(t, "week"), Ok(at(2026, 11, 23, 0, 0, 0)));
        assert_eq!(truncate_micros(t, "minute"), Ok(at(2026, 11, 25, 8, 5, 0)));
        assert!(truncate_micros(t, "fortnight").is_err());
        // Before the epoch too.
        let old = at(1969, 12, 31, 23, 59, 59);
        assert_eq!(truncate_micros(old, "hour"), Ok(at(1969, 12, 31, 23, 0, 0)));
        // A month later clamps to the month's last day.
        let jan31: ArrayRef = Arc::new(Date32Array::from(vec![Some(20484), None]));
        let feb = add_interval(jan31, 1, 0, 0).expect("interval");
        let feb = feb.as_primitive::<arrow::datatypes::Date32Type>();
        assert_eq!(feb.value(0), 20484 + 28);
        assert!(feb.is_null(1));
    }

    #[test]
    fn rounding_is_half_up() {
        let f: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(2.5),
            Some(-2.5),
            Some(1.25),
            None,
        ]));
        let r = round(&f, 0).expect("round");
        assert_eq!(
            r.as_primitive::<arrow::datatypes::Float64Type>()
                .iter()
                .collect::<Vec<_>>(),
            vec![Some(3.0), Some(-3.0), Some(1.0), None]
        );
        let i: ArrayRef = Arc::new(Int64Array::from(vec![15, -15, 149, 150]));
        let r = round(&i, -2).expect("round");
        assert_eq!(
            r.as_primitive::<arrow::datatypes::Int64Type>()
                .values()
                .to_vec(),
            vec![0, 0, 100, 200]
        );
        let d: ArrayRef = Arc::new(
            arrow::array::Decimal128Array::from(vec![12345, -12355])
                .with_precision_and_scale(10, 3)
                .expect("decimal"),
        );
        let r = round(&d, 1).expect("round");
        assert_eq!(r.data_type(), &DataType::Decimal128(10, 1));
        assert_eq!(
            r.as_primitive::<arrow::datatypes::Decimal128Type>()
                .values()
                .to_vec(),
            vec![123, -124]
        );
    }

    fn batch() -> RecordBatch {
        let inner = StructArray::from(vec![(
            Arc::new(Field::new("x", DataType::Int32, true)),
            Arc::new(Int32Array::from(vec![Some(1), None, Some(3), Some(4)])) as ArrayRef,
        )]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("d", DataType::Date32, true),
            Field::new("f", DataType::Float64, true),
            Field::new("n", inner.data_type().clone(), true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![Some(1), Some(5), None, Some(-9)])),
                Arc::new(StringArray::from(vec![
                    Some("ab"),
                    None,
                    Some("Abc"),
                    Some("x"),
                ])),
                Arc::new(Date32Array::from(vec![Some(0), Some(1), Some(2), None])),
                Arc::new(Float64Array::from(vec![
                    Some(0.5),
                    Some(1.5),
                    None,
                    Some(2.0),
                ])),
                Arc::new(inner),
            ],
        )
        .unwrap()
    }

    fn rows(sql: &str) -> Vec<Option<bool>> {
        evaluate_predicate(&Expr::parse(sql).unwrap(), &batch())
            .unwrap()
            .iter()
            .collect()
    }

    fn values(sql: &str) -> ArrayRef {
        evaluate(&Expr::parse(sql).unwrap(), &batch()).unwrap()
    }

    const T: Option<bool> = Some(true);
    const F: Option<bool> = Some(false);
    const U: Option<bool> = None;

    #[test]
    fn three_valued_logic() {
        assert_eq!(rows("id > 1"), [F, T, U, F]);
        assert_eq!(rows("NOT id > 1"), [T, F, U, T]);
        assert_eq!(rows("id > 1 OR s = 'ab'"), [T, T, U, F]);
        assert_eq!(rows("id > 1 AND s = 'ab'"), [F, U, F, F]);
        assert_eq!(rows("id IN (1, NULL)"), [T, U, U, U]);
        assert_eq!(rows("id NOT IN (1, 5)"), [F, F, U, T]);
        assert_eq!(rows("id IS NULL"), [F, F, T, F]);
        assert_eq!(rows("id BETWEEN 0 AND 5"), [T, T, U, F]);
        assert_eq!(rows("s LIKE 'a%'"), [T, U, F, F]);
        assert_eq!(rows("s ILIKE 'a%'"), [T, U, T, F]);
        assert_eq!(rows("(id > 1) IS TRUE"), [F, T, F, F]);
        assert_eq!(rows("(id > 1) IS NOT FALSE"), [F, T, T, F]);
        let m = matches(&Expr::parse("id > 1 OR s = 'ab'").unwrap(), &batch()).unwrap();
        assert_eq!(m.null_count(), 0);
        assert_eq!(m.true_count(), 2);
    }

    #[test]
    fn literals_take_the_column_type() {
        assert_eq!(rows("d >= '1970-01-02'"), [F, T, T, U]);
        assert_eq!(rows("d = DATE '1970-01-01'"), [T, F, F, U]);
        assert_eq!(rows("f > 1"), [F, T, U, T]);
        assert_eq!(rows("id > 1.5"), [F, T, U, F]);
        assert_eq!(rows("n.x = 3"), [F, U, T, F]);
        assert_eq!(rows("id % 2 = 1"), [T, T, U, F]);
        assert!(evaluate(&Expr::parse("s = 1").unwrap(), &batch()).is_err());
        assert!(evaluate(&Expr::parse("id AND s").unwrap(), &batch()).is_err());
    }

    #[test]
    fn arithmetic_functions_and_case() {
        let v = values("id * 2 + 1");
        assert_eq!(v.data_type(), &DataType::Int64);
        let v = v.as_primitive::<arrow::datatypes::Int64Type>();
        assert_eq!(
            v.iter().collect::<Vec<_>>(),
            [Some(3), Some(11), None, Some(-17)]
        );
        let v = values("id / 2");
        assert_eq!(v.data_type(), &DataType::Float64);
        let v = values("coalesce(id, 0) + 0.5");
        assert_eq!(v.data_type(), &DataType::Decimal128(21, 1));
        let v = values("upper(s) || '-' || CAST(id AS string)");
        assert_eq!(
            v.as_string::<i32>().iter().collect::<Vec<_>>(),
            [Some("AB-1"), None, None, Some("X--9")]
        );
        let v = values("CASE WHEN id > 1 THEN 'big' WHEN id IS NULL THEN NULL ELSE 'small' END");
        assert_eq!(
            v.as_string::<i32>().iter().collect::<Vec<_>>(),
            [Some("small"), Some("big"), None, Some("small")]
        );
        let v = values("CASE id WHEN 1 THEN f ELSE 0 END");
        assert_eq!(
            v.as_primitive::<arrow::datatypes::Float64Type>()
                .iter()
                .collect::<Vec<_>>(),
            [Some(0.5), Some(0.0), Some(0.0), Some(0.0)]
        );
        let v = values("abs(id)");
        assert_eq!(
            v.as_primitive::<arrow::datatypes::Int64Type>()
                .iter()
                .collect::<Vec<_>>(),
            [Some(1), Some(5), None, Some(9)]
        );
        let v = values("year(d) * 100 + month(d) + day(d)");
        assert_eq!(
            v.as_primitive::<arrow::datatypes::Int32Type>()
                .iter()
                .collect::<Vec<_>>(),
            [Some(197002), Some(197003), Some(197004), None]
        );
        let v = values("length(s)");
        assert_eq!(
            v.as_primitive::<arrow::datatypes::Int32Type>()
                .iter()
                .collect::<Vec<_>>(),
            [Some(2), None, Some(3), Some(1)]
        );
        assert_eq!(values("-id").len(), 4);
        assert_eq!(values("42").len(), 4);
    }

    #[test]
    fn errors_instead_of_wrong_values() {
        for sql in [
            "id + 9223372036854775807",
            "id % 0",
            "CAST(s AS int)",
            "CAST('x' AS date)",
        ] {
            let err = evaluate(&Expr::parse(sql).unwrap(), &batch()).unwrap_err();
            assert!(
                matches!(err, DeltaError::InvalidArgument(_)),
                "{sql}: {err}"
            );
        }
    }
}
