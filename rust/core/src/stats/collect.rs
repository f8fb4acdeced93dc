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
mod tests;
