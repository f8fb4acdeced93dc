//! Collecting the statistics of a data file being written, as the `stats` JSON of its `add`
//! (or of a file another writer wrote, from its footer: [`crate::stats::footer`]).
//!
//! Spec: "Per-file Statistics". `numRecords`, and per leaf column (nested struct fields
//! included, keyed by the names the file uses, i.e. physical names under column mapping):
//! `nullCount` for every leaf, `minValues`/`maxValues` for numbers, decimals, dates, timestamps
//! and strings. Strings are cut to a prefix of [`STRING_PREFIX`] characters; a cut maximum must
//! still be an upper bound in Delta's order (UTF-8 bytes, i.e. code points), see
//! [`truncated_max`], and is left out when none exists. Timestamps are
//! truncated down to milliseconds. Floating-point columns holding a NaN get no min/max (no
//! bound can be written for them in JSON). Which leaves get statistics follows
//! `delta.dataSkippingNumIndexedCols` (the first N leaves, 32 by default, -1 for all) or
//! `delta.dataSkippingStatsColumns` (named columns, which wins when set).

use std::cmp::Ordering;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, Schema, TimeUnit, TimestampMicrosecondType,
};
use serde_json::{Map, Value};

use crate::write::partitions::format_date;

/// Characters of a string statistic.
pub const STRING_PREFIX: usize = 32;
/// Default number of leaf columns with statistics.
pub const DEFAULT_INDEXED_COLUMNS: i64 = 32;
/// Table property: how many leading leaf columns get statistics.
pub const NUM_INDEXED_COLS: &str = "delta.dataSkippingNumIndexedCols";
/// Table property: which columns get statistics (comma-separated names).
pub const STATS_COLUMNS: &str = "delta.dataSkippingStatsColumns";

/// Which leaf columns get statistics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexedColumns {
    /// The first N leaves in schema order (all when negative).
    First(i64),
    /// The named columns (dotted paths; a struct names all its leaves).
    Named(Vec<String>),
}

impl IndexedColumns {
    /// From the table properties, widened so that `required` top-level columns (physical
    /// names, in `schema` order: a clustered table's clustering columns, "Writer Requirements
    /// for Clustered Table") get statistics too: named columns are added to a
    /// `dataSkippingStatsColumns` list; a leaf count that may not reach them becomes "all".
    pub fn for_table(
        config: &std::collections::BTreeMap<String, String>,
        schema: &Schema,
        required: &[String],
    ) -> Self {
        match Self::from_config(config) {
            _ if required.is_empty() => Self::from_config(config),
            IndexedColumns::Named(mut names) => {
                for r in required {
                    if !names.contains(r) {
                        names.push(r.clone());
                    }
                }
                IndexedColumns::Named(names)
            }
            IndexedColumns::First(n) if n < 0 => IndexedColumns::First(n),
            IndexedColumns::First(n) => {
                // Leaves before the last required column, counted generously (one per
                // top-level column before it, plus its own nested leaves).
                let last = required
                    .iter()
                    .filter_map(|r| schema.index_of(r).ok())
                    .max()
                    .unwrap_or(0);
                let nested = schema
                    .fields()
                    .iter()
                    .take(last + 1)
                    .any(|f| matches!(f.data_type(), DataType::Struct(_)));
                if nested || (last as i64) >= n {
                    IndexedColumns::First(-1)
                } else {
                    IndexedColumns::First(n)
                }
            }
        }
    }

    /// From the table properties.
    pub fn from_config(config: &std::collections::BTreeMap<String, String>) -> Self {
        if let Some(names) = config.get(STATS_COLUMNS) {
            return IndexedColumns::Named(
                names
                    .split(',')
                    .map(|n| n.trim().trim_matches('`').to_string())
                    .filter(|n| !n.is_empty())
                    .collect(),
            );
        }
        let n = config
            .get(NUM_INDEXED_COLS)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_INDEXED_COLUMNS);
        IndexedColumns::First(n)
    }
}

/// A min or max value.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    Int(i64),
    Float(f64),
    Decimal(i128, i8),
    Date(i32),
    Timestamp(i64, bool),
    Str(String),
}

impl Bound {
    fn cmp(&self, other: &Bound) -> Option<Ordering> {
        match (self, other) {
            (Bound::Int(a), Bound::Int(b)) => Some(a.cmp(b)),
            // Total order: of the two zeros the minimum keeps -0.0 and the maximum 0.0 (NaN
            // never gets here: a column holding one gets no bounds).
            (Bound::Float(a), Bound::Float(b)) => Some(a.total_cmp(b)),
            (Bound::Decimal(a, _), Bound::Decimal(b, _)) => Some(a.cmp(b)),
            (Bound::Date(a), Bound::Date(b)) => Some(a.cmp(b)),
            (Bound::Timestamp(a, _), Bound::Timestamp(b, _)) => Some(a.cmp(b)),
            (Bound::Str(a), Bound::Str(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    /// The JSON value; `None` where no exact JSON number can be written.
    fn to_json(&self, is_max: bool) -> Option<Value> {
        Some(match self {
            Bound::Int(v) => Value::from(*v),
            Bound::Float(v) => Value::Number(serde_json::Number::from_f64(*v)?),
            Bound::Decimal(v, scale) => {
                // JSON numbers are read as doubles by many readers (and stored as f64 here):
                // only decimals with at most 15 significant digits survive that exactly.
                if v.unsigned_abs() >= 10u128.pow(15) {
                    return None;
                }
                let text = <Decimal128Type as arrow::datatypes::DecimalType>::format_decimal(
                    *v, 38, *scale,
                );
                Value::Number(serde_json::from_str::<serde_json::Number>(&text).ok()?)
            }
            Bound::Date(days) => Value::String(format_date(*days)?),
            Bound::Timestamp(micros, zoned) => {
                // Truncated down to milliseconds ("Per-file Statistics").
                let millis = micros.div_euclid(1000) * 1000;
                let t = chrono::DateTime::from_timestamp_micros(millis)?;
                Value::String(if *zoned {
                    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
                } else {
                    t.naive_utc().format("%Y-%m-%dT%H:%M:%S%.3f").to_string()
                })
            }
            Bound::Str(s) if is_max => Value::String(truncated_max(s)?),
            Bound::Str(s) => Value::String(truncated_min(s).to_string()),
        })
    }
}

/// A minimum string statistic: the first [`STRING_PREFIX`] characters of `s`, a prefix and
/// therefore never above `s`.
pub fn truncated_min(s: &str) -> &str {
    match s.char_indices().nth(STRING_PREFIX) {
        Some((end, _)) => &s[..end],
        None => s,
    }
}

/// A maximum string statistic of at most [`STRING_PREFIX`] + 1 characters that is `>= s` in
/// Delta's string order (UTF-8 bytes, which is code point order): `s` itself when it is short
/// enough, else its longest prefix `p` of at most [`STRING_PREFIX`] characters whose next
/// character `c` is not U+10FFFF, followed by U+10FFFF (`p + U+10FFFF > p + c + ...`).
/// `None` when a longer value's first [`STRING_PREFIX`] + 1 characters are all U+10FFFF: no
/// such bound exists, and a maximum is left out rather than understated ("Per-file
/// Statistics": bounds must hold for every value).
pub fn truncated_max(s: &str) -> Option<String> {
    let head: Vec<(usize, char)> = s.char_indices().take(STRING_PREFIX + 2).collect();
    // Up to STRING_PREFIX + 1 characters the value is its own bound (which also makes the
    // cut idempotent: a cut maximum re-written from parsed statistics stays the same).
    if head.len() <= STRING_PREFIX + 1 {
        return Some(s.to_string());
    }
    head[..=STRING_PREFIX]
        .iter()
        .rev()
        .find(|(_, c)| *c != char::MAX)
        .map(|&(end, _)| format!("{}{}", &s[..end], char::MAX))
}

/// The statistics of one leaf column so far.
#[derive(Debug)]
struct Leaf {
    path: Vec<String>,
    min_max: bool,
    min: Option<Bound>,
    max: Option<Bound>,
    /// A NaN was seen: no min/max can be written.
    nan: bool,
    nulls: i64,
    /// Whether `nulls` is known (a parquet footer may not say, see
    /// [`StatsCollector::set_leaf`]); an unknown count is left out of `nullCount`.
    nulls_known: bool,
}

/// Accumulates the statistics of the batches of one data file.
#[derive(Debug)]
pub struct StatsCollector {
    leaves: Vec<Leaf>,
    rows: i64,
}

fn collect_leaves(
    fields: &[std::sync::Arc<Field>],
    prefix: &[String],
    out: &mut Vec<(Vec<String>, DataType)>,
) {
    for f in fields {
        let mut path = prefix.to_vec();
        path.push(f.name().clone());
        match f.data_type() {
            DataType::Struct(children) => collect_leaves(children, &path, out),
            dt => out.push((path, dt.clone())),
        }
    }
}

impl StatsCollector {
    /// A collector for files of `schema` (the names and types written to the file).
    pub fn new(schema: &Schema, indexed: &IndexedColumns) -> Self {
        let mut all = Vec::new();
        collect_leaves(schema.fields(), &[], &mut all);
        let leaves = all
            .into_iter()
            .enumerate()
            .filter(|(i, (path, _))| match indexed {
                IndexedColumns::First(n) => *n < 0 || (*i as i64) < *n,
                IndexedColumns::Named(names) => {
                    let dotted = path.join(".");
                    names
                        .iter()
                        .any(|n| dotted == *n || dotted.starts_with(&format!("{n}.")))
                }
            })
            .map(|(_, (path, dt))| Leaf {
                path,
                // The types the reader keeps min/max statistics for.
                min_max: crate::stats::parse::has_min_max(&dt),
                min: None,
                max: None,
                nan: false,
                nulls: 0,
                nulls_known: true,
            })
            .collect();
        StatsCollector { leaves, rows: 0 }
    }

    /// Adds a batch of the file.
    pub fn update(&mut self, batch: &RecordBatch) -> Result<(), String> {
        self.rows += batch.num_rows() as i64;
        self.update_leaves(batch, None)
    }

    /// Adds the values of one top-level column of a batch, without counting its rows (see
    /// [`StatsCollector::add_rows`]): collectors of disjoint columns of the same rows are
    /// then [merged](StatsCollector::merge) into one of every column.
    pub fn update_column(&mut self, batch: &RecordBatch, column: &str) -> Result<(), String> {
        self.update_leaves(batch, Some(column))
    }

    /// Counts `rows` more rows (the rows whose values [`StatsCollector::update_column`] added).
    pub fn add_rows(&mut self, rows: usize) {
        self.rows += rows as i64;
    }

    fn update_leaves(&mut self, batch: &RecordBatch, column: Option<&str>) -> Result<(), String> {
        for leaf in &mut self.leaves {
            if column.is_some_and(|c| leaf.path.first().map(String::as_str) != Some(c)) {
                continue;
            }
            let Some((array, nulls)) = leaf_array(batch, &leaf.path) else {
                return Err(format!("the batch has no column {}", leaf.path.join(".")));
            };
            let null_count = nulls.as_ref().map_or(0, NullBuffer::null_count);
            leaf.nulls += null_count as i64;
            if !leaf.min_max || null_count == array.len() {
                continue;
            }
            let values: Vec<Bound> = bounds(&array, nulls.as_ref(), &mut leaf.nan)?;
            for v in values {
                if leaf
                    .min
                    .as_ref()
                    .is_none_or(|m| v.cmp(m) == Some(Ordering::Less))
                {
                    leaf.min = Some(v.clone());
                }
                if leaf
                    .max
                    .as_ref()
                    .is_none_or(|m| v.cmp(m) == Some(Ordering::Greater))
                {
                    leaf.max = Some(v);
                }
            }
        }
        Ok(())
    }

    /// The paths of the leaf columns that get statistics (names as in the file), in the
    /// order [`StatsCollector::set_leaf`] numbers them.
    pub fn leaf_paths(&self) -> impl Iterator<Item = &[String]> {
        self.leaves.iter().map(|l| l.path.as_slice())
    }

    /// Sets the statistics of leaf `index` (of [`StatsCollector::leaf_paths`]) over the whole
    /// file from what is known of it without its values, e.g. from a parquet footer
    /// ([`crate::stats::footer`]): `values` are values of the leaf's type whose smallest and
    /// largest valid ones bound every value of the file (`None`: no bounds are known; a NaN
    /// among them leaves the bounds out, as a NaN in the data does), `nulls` its null count
    /// (`None`: unknown, left out of `nullCount`). Rows are counted by
    /// [`StatsCollector::add_rows`].
    pub fn set_leaf(
        &mut self,
        index: usize,
        values: Option<&ArrayRef>,
        nulls: Option<i64>,
    ) -> Result<(), String> {
        let leaf = self
            .leaves
            .get_mut(index)
            .ok_or_else(|| format!("no statistics leaf {index}"))?;
        leaf.nulls = nulls.unwrap_or(0);
        leaf.nulls_known = nulls.is_some();
        leaf.nan = false;
        let found = match values {
            Some(values) if leaf.min_max => {
                let valid = values.logical_nulls();
                bounds(values, valid.as_ref(), &mut leaf.nan)?
            }
            _ => Vec::new(),
        };
        leaf.min = found.first().cloned();
        leaf.max = found.last().cloned();
        Ok(())
    }

    /// Adds the statistics `other` collected over more rows of the same file (a collector
    /// made with the same schema and indexed columns).
    pub fn merge(&mut self, other: &StatsCollector) {
        self.rows += other.rows;
        for (leaf, theirs) in self.leaves.iter_mut().zip(&other.leaves) {
            leaf.nulls += theirs.nulls;
            leaf.nulls_known &= theirs.nulls_known;
            leaf.nan |= theirs.nan;
            if let Some(v) = &theirs.min {
                if leaf
                    .min
                    .as_ref()
                    .is_none_or(|m| v.cmp(m) == Some(Ordering::Less))
                {
                    leaf.min = Some(v.clone());
                }
            }
            if let Some(v) = &theirs.max {
                if leaf
                    .max
                    .as_ref()
                    .is_none_or(|m| v.cmp(m) == Some(Ordering::Greater))
                {
                    leaf.max = Some(v.clone());
                }
            }
        }
    }

    /// The `stats` JSON document.
    pub fn finish(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("numRecords".into(), Value::from(self.rows));
        let (mut mins, mut maxs, mut nulls) = (Map::new(), Map::new(), Map::new());
        for leaf in &self.leaves {
            if leaf.nulls_known {
                insert(&mut nulls, &leaf.path, Value::from(leaf.nulls));
            }
            if leaf.nan {
                continue;
            }
            // Each bound on its own: a string maximum may have no valid truncation.
            if let Some(min) = leaf.min.as_ref().and_then(|m| m.to_json(false)) {
                insert(&mut mins, &leaf.path, min);
            }
            if let Some(max) = leaf.max.as_ref().and_then(|m| m.to_json(true)) {
                insert(&mut maxs, &leaf.path, max);
            }
        }
        doc.insert("minValues".into(), Value::Object(mins));
        doc.insert("maxValues".into(), Value::Object(maxs));
        doc.insert("nullCount".into(), Value::Object(nulls));
        Value::Object(doc)
    }
}

fn insert(map: &mut Map<String, Value>, path: &[String], value: Value) {
    match path {
        [] => {}
        [last] => {
            map.insert(last.clone(), value);
        }
        [first, rest @ ..] => {
            let child = map
                .entry(first.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(child) = child {
                insert(child, rest, value);
            }
        }
    }
}

/// The leaf column at `path` and its logical nulls (a null parent struct makes its children
/// null).
fn leaf_array(batch: &RecordBatch, path: &[String]) -> Option<(ArrayRef, Option<NullBuffer>)> {
    let (first, rest) = path.split_first()?;
    let mut array = batch.column_by_name(first)?.clone();
    let mut nulls = array.logical_nulls();
    for name in rest {
        let child = array.as_struct_opt()?.column_by_name(name)?.clone();
        nulls = NullBuffer::union(nulls.as_ref(), child.logical_nulls().as_ref());
        array = child;
    }
    Some((array, nulls))
}

/// The `stats` JSON of row `row` of parsed statistics (the [`crate::stats::parse::StatsSchema`]
/// structs a snapshot keeps: `numRecords`, `minValues`, `maxValues`, `nullCount`, physical
/// names), for an `add` that re-adds a file, e.g. with a new deletion vector. `tightBounds` is
/// `tight_bounds` ("Per-file Statistics": with deletion vectors the bounds may be wide).
pub fn stats_json_of_parsed(
    stats: &arrow::array::StructArray,
    row: usize,
    tight_bounds: bool,
) -> Value {
    fn values(s: &arrow::array::StructArray, row: usize, is_max: bool) -> Map<String, Value> {
        let mut out = Map::new();
        for (field, column) in s.fields().iter().zip(s.columns()) {
            if let Some(child) = column.as_struct_opt() {
                let inner = values(child, row, is_max);
                if !inner.is_empty() {
                    out.insert(field.name().clone(), Value::Object(inner));
                }
                continue;
            }
            if !column.is_valid(row) {
                continue;
            }
            let one = column.slice(row, 1);
            let mut nan = false;
            let Ok(found) = bounds(&one, None, &mut nan) else {
                continue;
            };
            let bound = if is_max { found.last() } else { found.first() };
            if let Some(v) = bound.and_then(|b| b.to_json(is_max)) {
                out.insert(field.name().clone(), v);
            }
        }
        out
    }
    fn counts(s: &arrow::array::StructArray, row: usize) -> Map<String, Value> {
        let mut out = Map::new();
        for (field, column) in s.fields().iter().zip(s.columns()) {
            if let Some(child) = column.as_struct_opt() {
                let inner = counts(child, row);
                if !inner.is_empty() {
                    out.insert(field.name().clone(), Value::Object(inner));
                }
            } else if let Some(c) = column.as_primitive_opt::<Int64Type>() {
                if c.is_valid(row) {
                    out.insert(field.name().clone(), Value::from(c.value(row)));
                }
            }
        }
        out
    }
    let mut out = Map::new();
    if let Some(n) = stats
        .column_by_name("numRecords")
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .filter(|c| c.is_valid(row))
    {
        out.insert("numRecords".into(), Value::from(n.value(row)));
    }
    for (key, is_max) in [("minValues", false), ("maxValues", true)] {
        if let Some(s) = stats.column_by_name(key).and_then(|c| c.as_struct_opt()) {
            let v = values(s, row, is_max);
            if !v.is_empty() {
                out.insert(key.into(), Value::Object(v));
            }
        }
    }
    if let Some(s) = stats
        .column_by_name("nullCount")
        .and_then(|c| c.as_struct_opt())
    {
        let v = counts(s, row);
        if !v.is_empty() {
            out.insert("nullCount".into(), Value::Object(v));
        }
    }
    out.insert("tightBounds".into(), Value::Bool(tight_bounds));
    Value::Object(out)
}

/// The smallest and largest of the values at the valid positions (`nulls`: `None` when every
/// position is valid), in one pass over the value slice: no per-value indirection, nothing
/// collected.
fn extremes<T: Copy + PartialOrd>(values: &[T], nulls: Option<&NullBuffer>) -> Option<(T, T)> {
    let step = |(lo, hi): (T, T), v: T| (if v < lo { v } else { lo }, if v > hi { v } else { hi });
    match nulls {
        None => {
            let (&first, rest) = values.split_first()?;
            Some(rest.iter().copied().fold((first, first), step))
        }
        Some(n) => {
            let mut valid = n.valid_indices().filter_map(|i| values.get(i).copied());
            let first = valid.next()?;
            Some(valid.fold((first, first), step))
        }
    }
}

/// The smallest and largest strings at the valid positions of a string array.
fn string_extremes<'a>(
    len: usize,
    value: impl Fn(usize) -> &'a str,
    nulls: Option<&NullBuffer>,
) -> Option<(&'a str, &'a str)> {
    fn fold<'a>(mut values: impl Iterator<Item = &'a str>) -> Option<(&'a str, &'a str)> {
        let first = values.next()?;
        Some(values.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
    }
    match nulls {
        None => fold((0..len).map(value)),
        Some(n) => fold(n.valid_indices().map(value)),
    }
}

/// The bounds of the values of a leaf at the positions `nulls` marks valid (`None`: all):
/// its minimum and maximum, or nothing when there are no values or, for floats, when one is
/// NaN (then `nan` is set; "Per-file Statistics").
fn bounds(
    array: &ArrayRef,
    nulls: Option<&NullBuffer>,
    nan: &mut bool,
) -> Result<Vec<Bound>, String> {
    macro_rules! primitive {
        ($t:ty, $make:expr) => {{
            extremes(array.as_primitive::<$t>().values(), nulls)
                .map(|(lo, hi)| vec![$make(lo), $make(hi)])
                .unwrap_or_default()
        }};
    }
    /// Floats: NaN has no place among bounds, and the zeros are equal (SQL); writing the
    /// outer one of each (min -0.0, max 0.0) keeps the bounds valid for readers that order
    /// floats totally as well.
    fn floats<T: Copy + PartialOrd + Into<f64>>(
        values: &[T],
        nulls: Option<&NullBuffer>,
        nan: &mut bool,
    ) -> Vec<Bound> {
        let is_nan = |v: &T| {
            let f: f64 = (*v).into();
            f.is_nan()
        };
        let any_nan = match nulls {
            None => values.iter().any(is_nan),
            Some(n) => n.valid_indices().any(|i| values.get(i).is_some_and(is_nan)),
        };
        if any_nan {
            *nan = true;
            return Vec::new();
        }
        let Some((lo, hi)) = extremes(values, nulls) else {
            return Vec::new();
        };
        let (lo, hi): (f64, f64) = (lo.into(), hi.into());
        let lo = if lo == 0.0 { -0.0 } else { lo };
        let hi = if hi == 0.0 { 0.0 } else { hi };
        vec![Bound::Float(lo), Bound::Float(hi)]
    }
    let texts = |extremes: Option<(&str, &str)>| {
        extremes
            .map(|(lo, hi)| vec![Bound::Str(lo.to_string()), Bound::Str(hi.to_string())])
            .unwrap_or_default()
    };
    Ok(match array.data_type() {
        DataType::Int8 => primitive!(Int8Type, |v: i8| Bound::Int(i64::from(v))),
        DataType::Int16 => primitive!(Int16Type, |v: i16| Bound::Int(i64::from(v))),
        DataType::Int32 => primitive!(Int32Type, |v: i32| Bound::Int(i64::from(v))),
        DataType::Int64 => primitive!(Int64Type, Bound::Int),
        DataType::Float32 => floats(array.as_primitive::<Float32Type>().values(), nulls, nan),
        DataType::Float64 => floats(array.as_primitive::<Float64Type>().values(), nulls, nan),
        DataType::Decimal128(_, scale) => {
            let scale = *scale;
            primitive!(Decimal128Type, |v: i128| Bound::Decimal(v, scale))
        }
        DataType::Date32 => primitive!(Date32Type, Bound::Date),
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let zoned = tz.is_some();
            primitive!(TimestampMicrosecondType, |v: i64| Bound::Timestamp(
                v, zoned
            ))
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            texts(string_extremes(a.len(), |i| a.value(i), nulls))
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            texts(string_extremes(a.len(), |i| a.value(i), nulls))
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            texts(string_extremes(a.len(), |i| a.value(i), nulls))
        }
        other => return Err(format!("no statistics for {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::parse::StatsSchema;
    use arrow::array::{
        Float64Array, Int32Array, Int64Array, StringArray, StructArray, TimestampMicrosecondArray,
    };
    use arrow::datatypes::Fields;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn batch() -> RecordBatch {
        let inner = Fields::from(vec![Field::new("b", DataType::Int32, true)]);
        let nested = StructArray::new(
            inner.clone(),
            vec![Arc::new(Int32Array::from(vec![Some(7), Some(-2), None]))],
            Some(NullBuffer::from(vec![true, true, false])),
        );
        let schema = Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("f", DataType::Float64, true),
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
            Field::new("a", DataType::Struct(inner), true),
        ]);
        let long = "x".repeat(40);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int32Array::from(vec![Some(3), None, Some(-1)])),
                Arc::new(StringArray::from(vec![
                    Some("b"),
                    Some(long.as_str()),
                    None,
                ])),
                Arc::new(Float64Array::from(vec![1.5, f64::NAN, 0.0])),
                Arc::new(
                    TimestampMicrosecondArray::from(vec![Some(1_999), Some(5_500), None])
                        .with_timezone("UTC"),
                ),
                Arc::new(nested),
            ],
        )
        .unwrap()
    }

    #[test]
    fn statistics_of_a_batch() {
        let b = batch();
        let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
        c.update(&b).unwrap();
        let stats = c.finish();
        assert_eq!(stats["numRecords"], 3);
        assert_eq!(stats["minValues"]["i"], -1);
        assert_eq!(stats["maxValues"]["i"], 3);
        assert_eq!(stats["nullCount"]["i"], 1);
        assert_eq!(stats["minValues"]["s"], "b");
        // The 40-character maximum is cut to 32 and bounded with U+10FFFF.
        let max = stats["maxValues"]["s"].as_str().unwrap();
        assert_eq!(max.chars().count(), 33);
        assert!(max > "x".repeat(40).as_str());
        // NaN: no bounds for f, but its null count.
        assert!(stats["minValues"].get("f").is_none());
        assert_eq!(stats["nullCount"]["f"], 0);
        assert_eq!(stats["minValues"]["t"], "1970-01-01T00:00:00.001Z");
        assert_eq!(stats["maxValues"]["t"], "1970-01-01T00:00:00.005Z");
        // The struct's null row makes its child null.
        assert_eq!(stats["nullCount"]["a"]["b"], 1);
        assert_eq!(stats["minValues"]["a"]["b"], -2);
    }

    #[test]
    fn per_column_collectors_merge_into_the_whole() {
        let b = batch();
        let schema = b.schema();
        let mut whole = StatsCollector::new(&schema, &IndexedColumns::First(-1));
        whole.update(&b).unwrap();
        whole.update(&b.slice(1, 2)).unwrap();
        let mut merged = StatsCollector::new(&schema, &IndexedColumns::First(-1));
        merged.add_rows(b.num_rows() + 2);
        for field in schema.fields() {
            let mut one = StatsCollector::new(&schema, &IndexedColumns::First(-1));
            one.update_column(&b, field.name()).unwrap();
            one.update_column(&b.slice(1, 2), field.name()).unwrap();
            merged.merge(&one);
        }
        assert_eq!(merged.finish(), whole.finish());
        assert_eq!(merged.finish()["numRecords"], 5);
    }

    #[test]
    fn leaves_set_from_elsewhere_leave_out_what_is_unknown() {
        let b = batch();
        let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
        let paths: Vec<String> = c.leaf_paths().map(|p| p.join(".")).collect();
        assert_eq!(paths, ["i", "s", "f", "t", "a.b"]);
        c.add_rows(3);
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(4), None, Some(-1), Some(9)]));
        c.set_leaf(0, Some(&ints), Some(1)).unwrap();
        // Unknown null count, no bounds.
        c.set_leaf(1, None, None).unwrap();
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![1.0, f64::NAN]));
        c.set_leaf(2, Some(&floats), Some(0)).unwrap();
        let stats = c.finish();
        assert_eq!(stats["numRecords"], 3);
        assert_eq!(stats["minValues"]["i"], -1);
        assert_eq!(stats["maxValues"]["i"], 9);
        assert_eq!(stats["nullCount"]["i"], 1);
        assert!(stats["nullCount"].get("s").is_none());
        assert!(stats["minValues"].get("f").is_none());
        assert_eq!(stats["nullCount"]["f"], 0);
        assert!(c.set_leaf(9, None, None).is_err());
    }

    #[test]
    fn indexed_columns_limit_the_leaves() {
        let b = batch();
        let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(2));
        c.update(&b).unwrap();
        let stats = c.finish();
        assert_eq!(stats["nullCount"].as_object().unwrap().len(), 2);
        let named = IndexedColumns::Named(vec!["a".into(), "t".into()]);
        let mut c = StatsCollector::new(&b.schema(), &named);
        c.update(&b).unwrap();
        let stats = c.finish();
        let keys: Vec<_> = stats["nullCount"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["t", "a"]);
        let config = [(STATS_COLUMNS.to_string(), "a, `t`".to_string())].into();
        assert_eq!(IndexedColumns::from_config(&config), named);
        let config = [(NUM_INDEXED_COLS.to_string(), "-1".to_string())].into();
        assert_eq!(
            IndexedColumns::from_config(&config),
            IndexedColumns::First(-1)
        );
    }

    #[test]
    fn statistics_parse_back_with_the_reader() {
        let b = batch();
        let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
        c.update(&b).unwrap();
        c.update(&b).unwrap();
        let text = c.finish().to_string();
        let schema = StatsSchema::new(&b.schema(), &b.schema());
        let column: ArrayRef = Arc::new(StringArray::from(vec![text.as_str()]));
        let parsed = schema.parse(Some(&column), None).unwrap();
        assert_eq!(
            parsed
                .column_by_name("numRecords")
                .unwrap()
                .as_primitive::<Int64Type>()
                .value(0),
            6
        );
        let min = parsed.column_by_name("minValues").unwrap().as_struct();
        let t = min.column_by_name("t").unwrap();
        assert_eq!(t.as_primitive::<TimestampMicrosecondType>().value(0), 1_000);
        let i = min.column_by_name("i").unwrap();
        assert_eq!(i.as_primitive::<Int32Type>().value(0), -1);
    }

    #[test]
    fn parsed_statistics_write_back_as_the_same_json() {
        let b = batch();
        let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
        c.update(&b).unwrap();
        let written = c.finish();
        let schema = StatsSchema::new(&b.schema(), &b.schema());
        let column: ArrayRef = Arc::new(StringArray::from(vec![
            written.to_string(),
            written.to_string(),
        ]));
        let parsed = schema.parse(Some(&column), None).unwrap();
        let mut back = stats_json_of_parsed(&parsed, 1, false);
        assert_eq!(back["tightBounds"], Value::Bool(false));
        back.as_object_mut().unwrap().remove("tightBounds");
        assert_eq!(back, written);
    }

    #[test]
    fn decimals_are_exact_json_numbers_or_absent() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("d", DataType::Decimal128(10, 3), true),
            Field::new("w", DataType::Decimal128(38, 0), true),
        ]));
        let d = arrow::array::Decimal128Array::from(vec![-12_345, 7])
            .with_precision_and_scale(10, 3)
            .unwrap();
        let w = arrow::array::Decimal128Array::from(vec![10i128.pow(20), 1])
            .with_precision_and_scale(38, 0)
            .unwrap();
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(d), Arc::new(w)]).unwrap();
        let mut c = StatsCollector::new(&schema, &IndexedColumns::First(-1));
        c.update(&b).unwrap();
        let stats = c.finish();
        assert_eq!(stats["minValues"]["d"].to_string(), "-12.345");
        assert_eq!(stats["maxValues"]["d"].to_string(), "0.007");
        // Each bound on its own: the small minimum is exact, the maximum is not.
        assert_eq!(stats["minValues"]["w"], 1);
        assert!(stats["maxValues"].get("w").is_none());
        assert_eq!(stats["nullCount"]["w"], 0);
    }

    #[test]
    fn string_maxima_stay_upper_bounds() {
        let top = char::MAX.to_string();
        // 40 x U+10FFFF: no bound of at most 33 characters exists.
        assert_eq!(truncated_max(&top.repeat(40)), None);
        // 31 ASCII characters + 9 x U+10FFFF: the prefix before the U+10FFFF run.
        let v = format!("{}{}", "a".repeat(31), top.repeat(9));
        let max = truncated_max(&v).unwrap();
        assert_eq!(max, format!("{}{}", "a".repeat(30), top));
        assert!(max.as_str() >= v.as_str());
        // Short values are their own bounds; the usual cut keeps 32 characters + U+10FFFF.
        assert_eq!(truncated_max("abc").unwrap(), "abc");
        let long = "x".repeat(40);
        assert_eq!(
            truncated_max(&long).unwrap(),
            format!("{}{top}", "x".repeat(32))
        );
        assert_eq!(truncated_min(&long), "x".repeat(32));

        // Through the collector, nested columns included: the maximum is left out when no
        // bound exists, the minimum is still a prefix.
        let inner = Fields::from(vec![Field::new("s", DataType::Utf8, true)]);
        let values = vec![top.repeat(40), v.clone()];
        let strings: ArrayRef = Arc::new(StringArray::from(values.clone()));
        let nested = StructArray::new(inner.clone(), vec![strings.clone()], None);
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("n", DataType::Struct(inner), true),
        ]));
        let b = RecordBatch::try_new(schema.clone(), vec![strings, Arc::new(nested)]).unwrap();
        let mut c = StatsCollector::new(&schema, &IndexedColumns::First(-1));
        c.update(&b).unwrap();
        let stats = c.finish();
        assert!(stats["maxValues"].get("s").is_none(), "{stats}");
        assert!(stats["maxValues"].get("n").is_none(), "{stats}");
        assert_eq!(stats["minValues"]["s"], truncated_min(&v));
        assert_eq!(stats["minValues"]["n"]["s"], truncated_min(&v));
        let mut c = StatsCollector::new(&schema, &IndexedColumns::First(-1));
        c.update(&b.slice(1, 1)).unwrap();
        let stats = c.finish();
        assert_eq!(stats["maxValues"]["s"], max.as_str());
        assert_eq!(stats["maxValues"]["n"]["s"], max.as_str());
    }

    /// Characters around the edges that matter: ASCII, the last BMP characters before and after
    /// the surrogate range, U+FFFF, the first supplementary character and U+10FFFF.
    fn edge_char() -> impl Strategy<Value = char> {
        prop_oneof![
            prop::sample::select(vec![
                'a',
                'z',
                '\u{7f}',
                '\u{80}',
                '\u{7ff}',
                '\u{800}',
                '\u{d7ff}',
                '\u{e000}',
                '\u{fffd}',
                '\u{ffff}',
                '\u{10000}',
                '\u{10fffe}',
                char::MAX,
            ]),
            any::<char>(),
        ]
    }

    #[test]
    fn values_under_a_null_parent_are_no_bounds() {
        // Row 2's struct is null: its child value 100 is not in the table.
        let inner = Fields::from(vec![Field::new("b", DataType::Int32, true)]);
        let nested = StructArray::new(
            inner.clone(),
            vec![Arc::new(Int32Array::from(vec![
                Some(7),
                Some(-2),
                Some(100),
            ]))],
            Some(NullBuffer::from(vec![true, true, false])),
        );
        let schema = Schema::new(vec![Field::new("a", DataType::Struct(inner), true)]);
        let b = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(nested)]).unwrap();
        let mut c = StatsCollector::new(&b.schema(), &IndexedColumns::First(-1));
        c.update(&b).unwrap();
        let stats = c.finish();
        assert_eq!(stats["maxValues"]["a"]["b"], 7);
        assert_eq!(stats["minValues"]["a"]["b"], -2);
        assert_eq!(stats["nullCount"]["a"]["b"], 1);
    }

    proptest! {
        /// The bounds of a column are the smallest and largest of its valid values (floats:
        /// none when a valid value is NaN, zeros widened to -0.0 / 0.0), for any null mask.
        #[test]
        fn bounds_are_the_extremes_of_the_valid_values(
            rows in prop::collection::vec(
                (
                    any::<i64>(),
                    prop_oneof![
                        Just(f64::NAN),
                        Just(-0.0f64),
                        Just(0.0f64),
                        Just(f64::INFINITY),
                        Just(f64::NEG_INFINITY),
                        -1e6f64..1e6,
                    ],
                    "[a-c\u{e9}]{0,4}",
                    any::<bool>(),
                ),
                0..40,
            ),
            masked in any::<bool>(),
        ) {
            let valid: Vec<bool> = rows.iter().map(|r| r.3 || !masked).collect();
            let nulls = masked.then(|| NullBuffer::from(valid.clone()));
            let ints: ArrayRef = Arc::new(Int64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()));
            let floats: ArrayRef = Arc::new(Float64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>()));
            let texts: ArrayRef = Arc::new(StringArray::from(rows.iter().map(|r| r.2.as_str()).collect::<Vec<_>>()));
            let kept = |i: &usize| valid[*i];
            let idx: Vec<usize> = (0..rows.len()).filter(kept).collect();

            let mut nan = false;
            let got = bounds(&ints, nulls.as_ref(), &mut nan).unwrap();
            let want: Vec<Bound> = match (idx.iter().map(|&i| rows[i].0).min(), idx.iter().map(|&i| rows[i].0).max()) {
                (Some(lo), Some(hi)) => vec![Bound::Int(lo), Bound::Int(hi)],
                _ => vec![],
            };
            prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));

            let mut nan = false;
            let got = bounds(&floats, nulls.as_ref(), &mut nan).unwrap();
            let values: Vec<f64> = idx.iter().map(|&i| rows[i].1).collect();
            let has_nan = values.iter().any(|v| v.is_nan());
            prop_assert_eq!(nan, has_nan);
            if has_nan || values.is_empty() {
                prop_assert!(got.is_empty());
            } else {
                let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let lo = if lo == 0.0 { -0.0 } else { lo };
                let hi = if hi == 0.0 { 0.0 } else { hi };
                prop_assert_eq!(format!("{got:?}"), format!("{:?}", vec![Bound::Float(lo), Bound::Float(hi)]));
            }

            let mut nan = false;
            let got = bounds(&texts, nulls.as_ref(), &mut nan).unwrap();
            let want: Vec<Bound> = match (idx.iter().map(|&i| rows[i].2.as_str()).min(), idx.iter().map(|&i| rows[i].2.as_str()).max()) {
                (Some(lo), Some(hi)) => vec![Bound::Str(lo.into()), Bound::Str(hi.into())],
                _ => vec![],
            };
            prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));
        }
    }

    proptest! {
        /// Truncated minima are `<=` and truncated maxima `>=` every value of the column, in
        /// UTF-8 byte order as Delta compares strings.
        #[test]
        fn truncated_bounds_bound_every_value(
            values in prop::collection::vec(
                // Runs of U+10FFFF at any position, long enough to reach past the cut.
                (
                    prop::collection::vec(edge_char(), 0..40),
                    0..45usize,
                    prop::collection::vec(edge_char(), 0..6),
                )
                    .prop_map(|(head, run, tail)| {
                        let mut s: String = head.into_iter().collect();
                        s.extend(std::iter::repeat_n(char::MAX, run));
                        s.extend(tail);
                        s
                    }),
                1..6,
            )
        ) {
            let lo = values.iter().min().unwrap();
            let hi = values.iter().max().unwrap();
            let min = truncated_min(lo);
            prop_assert!(min.chars().count() <= STRING_PREFIX);
            for v in &values {
                prop_assert!(min.as_bytes() <= v.as_bytes());
            }
            match truncated_max(hi) {
                Some(max) => {
                    prop_assert!(max.chars().count() <= STRING_PREFIX + 1);
                    for v in &values {
                        prop_assert!(max.as_bytes() >= v.as_bytes(), "{:?} < {:?}", max, v);
                    }
                }
                // Only when a longer value starts with STRING_PREFIX + 1 U+10FFFF characters.
                None => prop_assert!(hi.chars().take(STRING_PREFIX + 1).all(|c| c == char::MAX)
                    && hi.chars().count() > STRING_PREFIX + 1),
            }
        }
    }
}
