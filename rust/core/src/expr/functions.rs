//! The SQL functions of deltalog's expressions, as Spark defines them: `coalesce`, string
//! functions (`substring`, `upper`, `concat`, …), dates and timestamps (`date_format`,
//! `date_trunc`, intervals), math (`round` half up, `abs`, …). Errors instead of wrong
//! values, as Spark's ANSI mode.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Float64Array, Int32Array, Int64Array, Scalar,
    StringArray, TimestampMicrosecondArray,
};
use arrow::compute::kernels::{cmp, numeric, zip::zip};
use arrow::compute::{cast_with_options, is_not_null, prep_null_mask_filter};
use arrow::datatypes::DataType;

use crate::expr::Function;
use crate::predicate::Literal;

use super::eval::{
    cast_value, common_of, concat, is_string, materialize, strict, strings, Res, Value,
};

pub(super) fn call(function: Function, args: Vec<Value>, n: usize) -> Res<Value> {
    let one = |args: &[Value]| args.first().cloned().ok_or("a function without arguments");
    Ok(match function {
        Function::Coalesce => {
            let dt = common_of(&args)?;
            let mut arrays = args
                .into_iter()
                .map(|a| cast_value(a, &dt).and_then(|v| materialize(v, n)));
            let mut out = arrays.next().ok_or("coalesce of nothing")??;
            for next in arrays {
                let next = next?;
                let present = is_not_null(&out).map_err(|e| e.to_string())?;
                out = zip(&present, &out, &next).map_err(|e| e.to_string())?;
            }
            Value::Array(out)
        }
        Function::Lower | Function::Upper => {
            let s = strings(one(&args)?, n)?;
            let out: StringArray = s
                .iter()
                .map(|v| {
                    v.map(|t| {
                        if function == Function::Lower {
                            t.to_lowercase()
                        } else {
                            t.to_uppercase()
                        }
                    })
                })
                .collect();
            Value::Array(Arc::new(out))
        }
        Function::Length => {
            let a = materialize(one(&args)?, n)?;
            let out: Int32Array = match a.data_type() {
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
                    let b = cast_with_options(&a, &DataType::Binary, &strict())
                        .map_err(|e| e.to_string())?;
                    b.as_binary::<i32>()
                        .iter()
                        .map(|v| v.map(|b| b.len() as i32))
                        .collect()
                }
                _ => strings(Value::Array(a), n)?
                    .iter()
                    .map(|v| v.map(|t| t.chars().count() as i32))
                    .collect(),
            };
            Value::Array(Arc::new(out))
        }
        Function::Concat => concat(args, n)?,
        Function::Year
        | Function::Month
        | Function::Day
        | Function::Hour
        | Function::Minute
        | Function::Second => {
            use arrow::compute::kernels::temporal::{date_part, DatePart};
            let a = materialize(one(&args)?, n)?;
            let part = match function {
                Function::Year => DatePart::Year,
                Function::Month => DatePart::Month,
                Function::Day => DatePart::Day,
                Function::Hour => DatePart::Hour,
                Function::Minute => DatePart::Minute,
                _ => DatePart::Second,
            };
            let a = match a.data_type() {
                t if is_string(t) => cast_with_options(&a, &DataType::Date32, &strict())
                    .map_err(|e| e.to_string())?,
                _ => a,
            };
            Value::Array(date_part(&a, part).map_err(|e| e.to_string())?)
        }
        Function::CurrentDate => {
            let now = chrono::Utc::now().timestamp_micros();
            let days = now.div_euclid(MICROS_PER_DAY) as i32;
            Value::Scalar(Arc::new(Date32Array::from(vec![days])))
        }
        Function::CurrentTimestamp => {
            let now = chrono::Utc::now().timestamp_micros();
            Value::Scalar(Arc::new(
                TimestampMicrosecondArray::from(vec![now]).with_timezone("UTC"),
            ))
        }
        Function::DateAdd | Function::DateSub | Function::DateDiff => {
            let mut it = args.into_iter();
            let (a, b) = (
                it.next().ok_or("a missing argument")?,
                it.next().ok_or("a missing argument")?,
            );
            let a = day_numbers(dates(a, n)?)?;
            let b = match function {
                Function::DateDiff => day_numbers(dates(b, n)?)?,
                _ => {
                    let b = materialize(b, n)?;
                    if !b.data_type().is_integer() {
                        return Err(format!(
                            "{function:?} needs a number of days, not a {}",
                            b.data_type()
                        ));
                    }
                    cast_with_options(&b, &DataType::Int32, &strict()).map_err(|e| e.to_string())?
                }
            };
            let out = match function {
                Function::DateSub | Function::DateDiff => numeric::sub(&a, &b),
                _ => numeric::add(&a, &b),
            }
            .map_err(|e| e.to_string())?;
            if function == Function::DateDiff {
                Value::Array(out)
            } else {
                Value::Array(
                    cast_with_options(&out, &DataType::Date32, &strict())
                        .map_err(|e| e.to_string())?,
                )
            }
        }
        Function::ToDate => {
            let mut it = args.into_iter();
            let text = it.next().ok_or("a missing argument")?;
            match it.next() {
                None => Value::Array(dates(text, n)?),
                Some(pattern) => {
                    let pattern = literal_text(&pattern, "to_date's pattern")?;
                    let format = chrono_format(&pattern)?;
                    let texts = strings(text, n)?;
                    let out: Date32Array = texts
                        .iter()
                        .map(|v| {
                            v.map(|t| {
                                chrono::NaiveDate::parse_from_str(t.trim(), &format)
                                    .or_else(|_| {
                                        chrono::NaiveDateTime::parse_from_str(t.trim(), &format)
                                            .map(|d| d.date())
                                    })
                                    .map(|d| d.signed_duration_since(epoch()).num_days() as i32)
                                    .map_err(|_| {
                                        format!("{t:?} does not match the date pattern {pattern:?}")
                                    })
                            })
                            .transpose()
                        })
                        .collect::<Res<_>>()?;
                    Value::Array(Arc::new(out))
                }
            }
        }
        Function::DateTrunc => {
            let mut it = args.into_iter();
            let unit = literal_text(&it.next().ok_or("a missing argument")?, "date_trunc's unit")?;
            let a = materialize(it.next().ok_or("a missing argument")?, n)?;
            let tz = match a.data_type() {
                DataType::Timestamp(_, tz) => tz.clone(),
                _ => Some("UTC".into()),
            };
            let target = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, tz.clone());
            let a = cast_with_options(&a, &target, &strict()).map_err(|e| e.to_string())?;
            let unit = unit.to_ascii_lowercase();
            let out: TimestampMicrosecondArray = a
                .as_primitive::<arrow::datatypes::TimestampMicrosecondType>()
                .iter()
                .map(|v| v.map(|t| truncate_micros(t, &unit)).transpose())
                .collect::<Res<_>>()?;
            Value::Array(Arc::new(match tz {
                Some(tz) => out.with_timezone(tz),
                None => out,
            }))
        }
        Function::Substring => {
            let mut it = args.into_iter();
            let text = strings(it.next().ok_or("a missing argument")?, n)?;
            let pos = integers(it.next().ok_or("a missing argument")?, n)?;
            let len = it.next().map(|l| integers(l, n)).transpose()?;
            let out: StringArray = (0..n)
                .map(|i| {
                    if text.is_null(i)
                        || pos.is_null(i)
                        || len.as_ref().is_some_and(|l| l.is_null(i))
                    {
                        return None;
                    }
                    Some(spark_substring(
                        text.value(i),
                        pos.value(i),
                        len.as_ref().map(|l| l.value(i)),
                    ))
                })
                .collect();
            Value::Array(Arc::new(out))
        }
        Function::Trim | Function::LTrim | Function::RTrim => {
            let s = strings(one(&args)?, n)?;
            let out: StringArray = s
                .iter()
                .map(|v| {
                    v.map(|t| match function {
                        Function::LTrim => t.trim_start_matches(' '),
                        Function::RTrim => t.trim_end_matches(' '),
                        _ => t.trim_matches(' '),
                    })
                })
                .collect();
            Value::Array(Arc::new(out))
        }
        Function::Round => {
            let mut it = args.into_iter();
            let a = materialize(it.next().ok_or("a missing argument")?, n)?;
            let digits = match it.next() {
                None => 0,
                Some(Value::Untyped(Literal::Int(d))) => {
                    i32::try_from(d).map_err(|_| format!("round to {d} digits"))?
                }
                Some(_) => return Err("round's digits must be an integer literal".into()),
            };
            Value::Array(round(&a, digits)?)
        }
        Function::RLike => {
            let mut it = args.into_iter();
            let text = strings(it.next().ok_or("a missing argument")?, n)?;
            let pattern =
                literal_text(&it.next().ok_or("a missing argument")?, "the RLIKE pattern")?;
            let out =
                arrow::compute::kernels::regexp::regexp_is_match_scalar(&text, &pattern, None)
                    .map_err(|e| format!("bad regular expression {pattern:?}: {e}"))?;
            Value::Array(Arc::new(out))
        }
        Function::AddInterval => {
            let mut it = args.into_iter();
            let x = materialize(it.next().ok_or("a missing argument")?, n)?;
            let mut part = || match it.next() {
                Some(Value::Untyped(Literal::Int(v))) => Ok(v),
                _ => Err("an interval part is not an integer literal".to_string()),
            };
            let (months, days, micros) = (part()?, part()?, part()?);
            Value::Array(add_interval(x, months, days, micros)?)
        }
        Function::Abs => {
            let a = materialize(one(&args)?, n)?;
            if !a.data_type().is_numeric() {
                return Err(format!("abs of a {}", a.data_type()));
            }
            let zero = cast_with_options(
                &(Arc::new(Int64Array::from(vec![0])) as ArrayRef),
                a.data_type(),
                &strict(),
            )
            .map_err(|e| e.to_string())?;
            let negative = cmp::lt(&a, &Scalar::new(zero)).map_err(|e| e.to_string())?;
            let negative = prep_null_mask_filter(&negative);
            let flipped = numeric::neg(&a).map_err(|e| e.to_string())?;
            Value::Array(zip(&negative, &flipped, &a).map_err(|e| e.to_string())?)
        }
    })
}

const MICROS_PER_DAY: i64 = 86_400_000_000;

pub(super) fn epoch() -> chrono::NaiveDate {
    chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
}

/// Dates of a value: dates as they are, timestamps at their (UTC) date, text parsed.
fn dates(v: Value, n: usize) -> Res<ArrayRef> {
    let a = materialize(v, n)?;
    match a.data_type() {
        DataType::Date32 => Ok(a),
        t if matches!(t, DataType::Timestamp(_, _) | DataType::Date64) || is_string(t) => {
            cast_with_options(&a, &DataType::Date32, &strict()).map_err(|e| e.to_string())
        }
        other => Err(format!("a date is needed, not a {other}")),
    }
}

/// Days since the epoch of dates, as int32.
fn day_numbers(dates: ArrayRef) -> Res<ArrayRef> {
    cast_with_options(&dates, &DataType::Int32, &strict()).map_err(|e| e.to_string())
}

pub(super) fn integers(v: Value, n: usize) -> Res<Int64Array> {
    let a = materialize(v, n)?;
    if !a.data_type().is_integer() {
        return Err(format!("an integer is needed, not a {}", a.data_type()));
    }
    let a = cast_with_options(&a, &DataType::Int64, &strict()).map_err(|e| e.to_string())?;
    Ok(a.as_primitive::<arrow::datatypes::Int64Type>().clone())
}

/// The text of a string literal argument.
fn literal_text(v: &Value, what: &str) -> Res<String> {
    match v {
        Value::Untyped(Literal::String(s)) => Ok(s.clone()),
        Value::Scalar(a) if is_string(a.data_type()) && a.len() == 1 && !a.is_null(0) => {
            let a = cast_with_options(a, &DataType::Utf8, &strict()).map_err(|e| e.to_string())?;
            Ok(a.as_string::<i32>().value(0).to_string())
        }
        _ => Err(format!("{what} must be a string literal")),
    }
}

/// A Spark datetime pattern (`yyyy-MM-dd HH:mm:ss`) as a chrono format.
pub(super) fn chrono_format(pattern: &str) -> Res<String> {
    let mut out = String::new();
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let mut run = 1;
        while i + run < chars.len() && chars[i + run] == c {
            run += 1;
        }
        let piece = match (c, run) {
            ('y', 4) | ('y', 1) => "%Y",
            ('y', 2) => "%y",
            ('M', 2) | ('M', 1) => "%m",
            ('M', 3) => "%b",
            ('d', 2) | ('d', 1) => "%d",
            ('H', 2) | ('H', 1) => "%H",
            ('m', 2) | ('m', 1) => "%M",
            ('s', 2) | ('s', 1) => "%S",
            (c, _) if c.is_ascii_alphabetic() => {
                return Err(format!("the date pattern letter {c:?} is not supported"))
            }
            ('%', _) => "%%",
            _ => {
                for _ in 0..run {
                    out.push(c);
                }
                i += run;
                continue;
            }
        };
        out.push_str(piece);
        i += run;
    }
    Ok(out)
}

/// `t` (microseconds since the epoch) truncated to `unit`.
pub(super) fn truncate_micros(t: i64, unit: &str) -> Res<i64> {
    use chrono::Datelike;
    let day = t.div_euclid(MICROS_PER_DAY);
    let within = t.rem_euclid(MICROS_PER_DAY);
    let date = epoch()
        .checked_add_signed(chrono::Duration::days(day))
        .ok_or("a timestamp out of range")?;
    let from_date =
        |d: chrono::NaiveDate| d.signed_duration_since(epoch()).num_days() * MICROS_PER_DAY;
    Ok(match unit {
        "year" | "yyyy" | "yy" => from_date(date.with_ordinal(1).ok_or("a bad date")?),
        "quarter" => {
            let month = (date.month0() / 3) * 3 + 1;
            from_date(chrono::NaiveDate::from_ymd_opt(date.year(), month, 1).ok_or("a bad date")?)
        }
        "month" | "mon" | "mm" => from_date(date.with_day(1).ok_or("a bad date")?),
        "week" => {
            from_date(date - chrono::Duration::days(date.weekday().num_days_from_monday() as i64))
        }
        "day" | "dd" => from_date(date),
        "hour" | "minute" | "second" => {
            let per = match unit {
                "hour" => 3_600_000_000,
                "minute" => 60_000_000,
                _ => 1_000_000,
            };
            day * MICROS_PER_DAY + within - within % per
        }
        other => {
            return Err(format!(
                "date_trunc unit {other:?} is not one of year, quarter, month, week, day, hour, \
                 minute, second"
            ));
        }
    })
}

/// Spark's `substring`: 1-based `pos` (0 acts as 1, negative counts from the end), up to
/// `len` characters (none when negative).
pub(super) fn spark_substring(text: &str, pos: i64, len: Option<i64>) -> String {
    let chars: Vec<char> = text.chars().collect();
    let count = chars.len() as i64;
    let start = if pos > 0 {
        pos - 1
    } else if pos < 0 {
        count + pos
    } else {
        0
    };
    let end = match len {
        Some(l) if l < 0 => start,
        Some(l) => start.saturating_add(l),
        None => count,
    };
    let (start, end) = (start.clamp(0, count), end.clamp(0, count));
    if end <= start {
        return String::new();
    }
    chars[start as usize..end as usize].iter().collect()
}

/// `round(x, digits)`, half up (away from zero), as Spark rounds.
pub(super) fn round(a: &ArrayRef, digits: i32) -> Res<ArrayRef> {
    use arrow::datatypes::{Decimal128Type, Float64Type};
    match a.data_type() {
        DataType::Float32 | DataType::Float64 => {
            let f =
                cast_with_options(a, &DataType::Float64, &strict()).map_err(|e| e.to_string())?;
            let scale = 10f64.powi(digits);
            let out: Float64Array = f
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| {
                    v.map(|x| {
                        if x.is_finite() {
                            (x * scale).round() / scale
                        } else {
                            x
                        }
                    })
                })
                .collect();
            cast_with_options(&(Arc::new(out) as ArrayRef), a.data_type(), &strict())
                .map_err(|e| e.to_string())
        }
        t if t.is_integer() => {
            if digits >= 0 {
                return Ok(a.clone());
            }
            let ints =
                cast_with_options(a, &DataType::Int64, &strict()).map_err(|e| e.to_string())?;
            let factor = 10i64
                .checked_pow(digits.unsigned_abs())
                .ok_or("round to too many digits")?;
            let out: Int64Array = ints
                .as_primitive::<arrow::datatypes::Int64Type>()
                .iter()
                .map(|v| {
                    v.map(|x| {
                        let r = x % factor;
                        let base = x - r;
                        let up = r.abs() * 2 >= factor;
                        if up {
                            base.checked_add(factor * x.signum())
                        } else {
                            Some(base)
                        }
                        .ok_or_else(|| "round overflowed".to_string())
                    })
                    .transpose()
                })
                .collect::<Res<_>>()?;
            cast_with_options(&(Arc::new(out) as ArrayRef), a.data_type(), &strict())
                .map_err(|e| e.to_string())
        }
        DataType::Decimal128(p, s) => {
            let (p, s) = (*p, *s);
            let target = digits.clamp(0, s as i32) as i8;
            if target >= s {
                return Ok(a.clone());
            }
            let factor = 10i128.pow((s - target) as u32);
            let out: arrow::array::Decimal128Array = a
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| {
                    v.map(|x| {
                        let (q, r) = (x / factor, x % factor);
                        if r.abs() * 2 >= factor {
                            q + x.signum()
                        } else {
                            q
                        }
                    })
                })
                .collect();
            let out = out
                .with_precision_and_scale(p, target)
                .map_err(|e| e.to_string())?;
            Ok(Arc::new(out))
        }
        other => Err(format!("round of a {other}")),
    }
}

/// `x + INTERVAL`: dates stay dates unless the interval has a time part; timestamps move in
/// UTC; months clamp to the month's last day (Spark's rule).
pub(super) fn add_interval(x: ArrayRef, months: i64, days: i64, micros: i64) -> Res<ArrayRef> {
    let months = i32::try_from(months).map_err(|_| "the interval is too large")?;
    let shift_date = |d: chrono::NaiveDate| -> Res<chrono::NaiveDate> {
        let moved = if months >= 0 {
            d.checked_add_months(chrono::Months::new(months as u32))
        } else {
            d.checked_sub_months(chrono::Months::new(months.unsigned_abs()))
        };
        moved
            .and_then(|d| d.checked_add_signed(chrono::Duration::days(days)))
            .ok_or_else(|| "a date out of range".to_string())
    };
    let x = if is_string(x.data_type()) {
        let to = if micros == 0 {
            DataType::Date32
        } else {
            DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()))
        };
        cast_with_options(&x, &to, &strict()).map_err(|e| e.to_string())?
    } else {
        x
    };
    match x.data_type() {
        DataType::Date32 if micros == 0 => {
            let out: Date32Array = x
                .as_primitive::<arrow::datatypes::Date32Type>()
                .iter()
                .map(|v| {
                    v.map(|d| {
                        let date = epoch() + chrono::Duration::days(d as i64);
                        shift_date(date).map(|s| s.signed_duration_since(epoch()).num_days() as i32)
                    })
                    .transpose()
                })
                .collect::<Res<_>>()?;
            Ok(Arc::new(out))
        }
        DataType::Date32 | DataType::Timestamp(_, _) => {
            let tz = match x.data_type() {
                DataType::Timestamp(_, tz) => tz.clone(),
                _ => Some("UTC".into()),
            };
            let target = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, tz.clone());
            let ts = cast_with_options(&x, &target, &strict()).map_err(|e| e.to_string())?;
            let out: TimestampMicrosecondArray = ts
                .as_primitive::<arrow::datatypes::TimestampMicrosecondType>()
                .iter()
                .map(|v| {
                    v.map(|t| {
                        let day = t.div_euclid(MICROS_PER_DAY);
                        let within = t.rem_euclid(MICROS_PER_DAY);
                        let date = shift_date(epoch() + chrono::Duration::days(day))?;
                        (date.signed_duration_since(epoch()).num_days())
                            .checked_mul(MICROS_PER_DAY)
                            .and_then(|m| m.checked_add(within))
                            .and_then(|m| m.checked_add(micros))
                            .ok_or_else(|| "a timestamp out of range".to_string())
                    })
                    .transpose()
                })
                .collect::<Res<_>>()?;
            Ok(Arc::new(match tz {
                Some(tz) => out.with_timezone(tz),
                None => out,
            }))
        }
        other => Err(format!("INTERVAL arithmetic on a {other}")),
    }
}
