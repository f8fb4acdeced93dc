//! Per-file statistics: the `stats` JSON of `add` actions parsed into typed Arrow columns.
//!
//! Spec: "Per-file Statistics" (`numRecords`, `minValues`, `maxValues`, `nullCount`,
//! `tightBounds`), keyed by physical column names under column mapping ("Reader Requirements for
//! Column Mapping"). Statistics are parsed once, while the snapshot is built, and the JSON text
//! is then dropped: the typed columns are what data skipping and `get_add_actions` use, and
//! they are several times smaller. Statistics that do not parse against the schema are null (a
//! malformed document: the whole file's statistics; a value of the wrong type: that value)
//! rather than an error: they are optional ("stats ... optional") and an unreadable one must
//! not hide the table.
//!
//! The parser is specialised: one pass of [`crate::stats::json_scan`] per document straight into Arrow
//! builders laid out like the statistics schema.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, PrimitiveArray, StringArray,
    StructArray,
};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::compute::cast;
use arrow::datatypes::{
    ArrowNativeType, DataType, Date32Type, Decimal128Type, Field, Fields, Float32Type, Float64Type,
    Int16Type, Int32Type, Int64Type, Int8Type, Schema, SchemaRef, TimestampMicrosecondType,
};

use crate::error::{DeltaError, DeltaResult};
use crate::nulls::shared_null_array;
use crate::schema::is_variant;
use crate::stats::json_scan::{Scalar, ScanError, ScanResult, Scanner};

/// The statistics types derived from a table schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsSchema {
    /// `{numRecords, minValues, maxValues, nullCount, tightBounds}` with physical names, as
    /// decoded from JSON.
    physical: SchemaRef,
    /// The same with logical names (and the table's own timestamp zones).
    logical: Fields,
}

/// Whether min/max statistics are kept for a type ("Per-file Statistics": leaf values of
/// primitive columns; binary and boolean columns carry none).
pub(crate) fn has_min_max(dt: &DataType) -> bool {
    !matches!(
        dt,
        DataType::Binary | DataType::Boolean | DataType::List(_) | DataType::Map(_, _)
    )
}

fn min_max_fields(physical: &Fields, logical: &Fields) -> (Fields, Fields) {
    let mut p_out = Vec::new();
    let mut l_out = Vec::new();
    for (p, l) in physical.iter().zip(logical.iter()) {
        match (p.data_type(), l.data_type()) {
            // Variants have no min/max ("Variant Data Type": statistics are not collected).
            _ if is_variant(l) => {}
            (DataType::Struct(pc), DataType::Struct(lc)) => {
                let (pf, lf) = min_max_fields(pc, lc);
                if !pf.is_empty() {
                    p_out.push(Field::new(p.name(), DataType::Struct(pf), true));
                    l_out.push(Field::new(l.name(), DataType::Struct(lf), true));
                }
            }
            (dt, _) if has_min_max(dt) => {
                p_out.push(Field::new(p.name(), dt.clone(), true));
                l_out.push(Field::new(l.name(), dt.clone(), true));
            }
            _ => {}
        }
    }
    (Fields::from(p_out), Fields::from(l_out))
}

fn null_count_fields(physical: &Fields, logical: &Fields) -> (Fields, Fields) {
    let mut p_out = Vec::new();
    let mut l_out = Vec::new();
    for (p, l) in physical.iter().zip(logical.iter()) {
        match (p.data_type(), l.data_type()) {
            (DataType::Struct(pc), DataType::Struct(lc)) if !is_variant(l) => {
                let (pf, lf) = null_count_fields(pc, lc);
                p_out.push(Field::new(p.name(), DataType::Struct(pf), true));
                l_out.push(Field::new(l.name(), DataType::Struct(lf), true));
            }
            _ => {
                p_out.push(Field::new(p.name(), DataType::Int64, true));
                l_out.push(Field::new(l.name(), DataType::Int64, true));
            }
        }
    }
    (Fields::from(p_out), Fields::from(l_out))
}

impl StatsSchema {
    /// The statistics of a table with these physical and logical schemas (same shape).
    pub fn new(physical: &Schema, logical: &Schema) -> Self {
        let (mm_p, mm_l) = min_max_fields(physical.fields(), logical.fields());
        let (nc_p, nc_l) = null_count_fields(physical.fields(), logical.fields());
        let stats = |mm: Fields, nc: Fields| {
            vec![
                Field::new("numRecords", DataType::Int64, true),
                Field::new("minValues", DataType::Struct(mm.clone()), true),
                Field::new("maxValues", DataType::Struct(mm), true),
                Field::new("nullCount", DataType::Struct(nc), true),
                Field::new("tightBounds", DataType::Boolean, true),
            ]
        };
        StatsSchema {
            physical: Arc::new(Schema::new(stats(mm_p, nc_p))),
            logical: Fields::from(stats(mm_l, nc_l)),
        }
    }

    /// Statistics of a table whose schema is unknown: only `numRecords` and `tightBounds`.
    pub fn empty() -> Self {
        Self::new(&Schema::empty(), &Schema::empty())
    }

    /// The type of the parsed statistics struct with physical names: what `parse` returns, and
    /// what a checkpoint's `add.stats_parsed` column is read as.
    pub fn physical_type(&self) -> DataType {
        DataType::Struct(self.physical.fields().clone())
    }

    /// The logical type of the parsed statistics struct.
    pub fn logical_type(&self) -> DataType {
        DataType::Struct(self.logical.clone())
    }

    /// Parses a column of `stats` JSON strings (null or empty means no statistics) into a
    /// struct array with physical names: one row per input row, or per selected row when a
    /// `mask` is given. The strings are read in place.
    pub fn parse(
        &self,
        stats: Option<&ArrayRef>,
        mask: Option<&BooleanArray>,
    ) -> DeltaResult<StructArray> {
        let len = stats.map_or(0, |s| s.len());
        let rows = mask.map_or(len, BooleanArray::true_count);
        let mut parser = StatsParser::new(self.physical.fields(), rows);
        // Text (`Utf8`) or views of it (`Utf8View`, as checkpoints are read); anything else
        // carries no statistics.
        let strings = stats.and_then(|s| s.as_string_opt::<i32>());
        let views = stats.and_then(|s| s.as_string_view_opt());
        let mut parse_row = |row: usize| match (strings, views) {
            (Some(s), _) if s.is_valid(row) => parser.push(s.value(row)),
            (_, Some(v)) if v.is_valid(row) => parser.push(v.value(row)),
            _ => parser.push(""),
        };
        match mask {
            Some(m) => (0..m.len())
                .filter(|r| m.is_valid(*r) && m.value(*r))
                .for_each(&mut parse_row),
            None => (0..len).for_each(&mut parse_row),
        }
        parser.finish()
    }

    /// Parses `rows` statistics documents (empty text: no statistics) into a struct array with
    /// physical names.
    pub fn parse_texts<'t>(
        &self,
        rows: usize,
        texts: impl Iterator<Item = &'t str>,
    ) -> DeltaResult<StructArray> {
        let mut parser = StatsParser::new(self.physical.fields(), rows);
        texts.for_each(|t| parser.push(t));
        parser.finish()
    }

    /// Renames parsed statistics (physical names) to logical names and types.
    pub fn to_logical(&self, parsed: &StructArray) -> ArrayRef {
        let array: ArrayRef = Arc::new(parsed.clone());
        to_logical(&array, &self.logical_type())
    }

    /// All-null statistics of `len` rows, physical names.
    pub fn nulls(&self, len: usize) -> StructArray {
        shared_null_array(&DataType::Struct(self.physical.fields().clone()), len)
            .as_struct()
            .clone()
    }
}

/// Gives an array the field names and leaf types of `target` (same shape, by position).
fn to_logical(array: &ArrayRef, target: &DataType) -> ArrayRef {
    match (array.as_struct_opt(), target) {
        (Some(s), DataType::Struct(fields)) => {
            let children: Vec<ArrayRef> = s
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| to_logical(c, f.data_type()))
                .collect();
            match StructArray::try_new_with_length(
                fields.clone(),
                children,
                s.nulls().cloned(),
                s.len(),
            ) {
                Ok(renamed) => Arc::new(renamed),
                // Same shape by construction; keep the physical names if it ever differs.
                Err(_) => array.clone(),
            }
        }
        (None, t) if array.data_type() != t => cast(array, t).unwrap_or_else(|_| array.clone()),
        _ => array.clone(),
    }
}

/// A child of a struct in the parser's layout.
#[derive(Debug, Clone, Copy)]
enum Child {
    Leaf(usize),
    Struct(usize),
}

/// A struct of the statistics layout: its fields and their validity so far.
#[derive(Debug)]
struct StructNode {
    fields: Fields,
    children: Vec<Child>,
    validity: Vec<bool>,
    /// The field after the one found last: documents list their keys in one order, so this
    /// is almost always the next key.
    next: usize,
}

impl StructNode {
    fn child(&mut self, name: &str) -> Option<Child> {
        let index = match self.fields.get(self.next) {
            Some(f) if f.name() == name => self.next,
            _ => self.fields.iter().position(|f| f.name() == name)?,
        };
        self.next = index + 1;
        Some(self.children[index])
    }
}

/// A column of values with validity, built row by row. Unlike Arrow's builders it can be
/// truncated, so a document that turns out malformed half-way is rolled back.
#[derive(Debug, Default)]
struct Column<T> {
    values: Vec<T>,
    valid: Vec<bool>,
}

impl<T: Default> Column<T> {
    fn with_capacity(capacity: usize) -> Self {
        Column {
            values: Vec::with_capacity(capacity),
            valid: Vec::with_capacity(capacity),
        }
    }

    fn push(&mut self, v: Option<T>) {
        self.valid.push(v.is_some());
        self.values.push(v.unwrap_or_default());
    }

    fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
        self.valid.truncate(len);
    }

    fn nulls(valid: Vec<bool>) -> Option<NullBuffer> {
        let nulls = NullBuffer::from(valid);
        (nulls.null_count() > 0).then_some(nulls)
    }
}

impl<T: ArrowNativeType> Column<T> {
    fn finish<P: ArrowPrimitiveType<Native = T>>(self, dt: &DataType) -> ArrayRef {
        let nulls = Self::nulls(self.valid);
        Arc::new(
            PrimitiveArray::<P>::new(ScalarBuffer::from(self.values), nulls)
                .with_data_type(dt.clone()),
        )
    }
}

/// A string column: offsets into one byte buffer.
#[derive(Debug)]
struct StrColumn {
    offsets: Vec<i32>,
    data: Vec<u8>,
    valid: Vec<bool>,
}

/// A typed leaf column.
#[derive(Debug)]
enum Leaf {
    I64(Column<i64>),
    I32(Column<i32>),
    I16(Column<i16>),
    I8(Column<i8>),
    F64(Column<f64>),
    F32(Column<f32>),
    Str(StrColumn),
    Date(Column<i32>),
    Ts(Column<i64>),
    Dec(Column<i128>, u8, i8),
    Bool(Column<bool>),
    /// A type statistics are not kept for: always null.
    Null(usize),
}

fn integer(v: &Scalar<'_>) -> Option<i64> {
    let text = match v {
        Scalar::Number(t) => *t,
        Scalar::String(s) => s.as_ref(),
        _ => return None,
    };
    text.parse::<i64>().ok().or_else(|| {
        let f: f64 = text.parse().ok()?;
        (f.fract() == 0.0 && f >= i64::MIN as f64 && f <= i64::MAX as f64).then_some(f as i64)
    })
}

fn float(v: &Scalar<'_>) -> Option<f64> {
    match v {
        Scalar::Number(t) => t.parse().ok(),
        Scalar::String(s) => match s.as_ref() {
            "NaN" => Some(f64::NAN),
            "Infinity" | "+Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            other => other.parse().ok(),
        },
        _ => None,
    }
}

/// Days since the epoch of `YYYY-MM-DD`.
fn date_days(text: &str) -> Option<i32> {
    let d = chrono::NaiveDate::parse_from_str(text.get(..10)?, "%Y-%m-%d").ok()?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from(d.signed_duration_since(epoch).num_days()).ok()
}

/// Microseconds since the epoch of an ISO-8601 timestamp; without an offset the wall-clock
/// time is read as UTC (as stored for `timestamp_ntz`, and as written by writers that omit the
/// `Z`).
fn timestamp_micros(text: &str) -> Option<i64> {
    if let Some(micros) = iso_timestamp_fast(text.as_bytes()) {
        return Some(micros);
    }
    let text = text.trim();
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(dt.timestamp_micros());
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(text, fmt) {
            return Some(dt.and_utc().timestamp_micros());
        }
    }
    if let Ok(dt) = chrono::DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z") {
        return Some(dt.timestamp_micros());
    }
    None
}

/// The common shape `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (what Delta writers emit),
/// parsed without a general date parser; `None` for anything else (the caller then tries the
/// general formats). Agrees with [`chrono::DateTime::parse_from_rfc3339`] on what it accepts.
fn iso_timestamp_fast(b: &[u8]) -> Option<i64> {
    use chrono::Datelike;
    fn digits(b: &[u8]) -> Option<i64> {
        b.iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    }
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (hour, minute, second) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    // Leap seconds and out-of-range fields go to the general parser.
    if !(1..=12).contains(&month) || day < 1 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut pos = 19;
    let mut micros = 0i64;
    if b[pos] == b'.' {
        let start = pos + 1;
        let end = start + b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        if end == start || end - start > 9 {
            return None;
        }
        let frac = digits(&b[start..end])?;
        // Scale to nanoseconds, then truncate to microseconds.
        micros = frac * 10i64.pow(9 - (end - start) as u32) / 1000;
        pos = end;
    }
    let offset_seconds = match &b[pos..] {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let h = digits(&[*h1, *h2])?;
            let m = digits(&[*m1, *m2])?;
            if h > 23 || m > 59 {
                return None;
            }
            let s = h * 3600 + m * 60;
            if *sign == b'-' {
                -s
            } else {
                s
            }
        }
        _ => return None,
    };
    let date = chrono::NaiveDate::from_ymd_opt(year as i32, month as u32, day as u32)?;
    let days = i64::from(date.num_days_from_ce()) - 719_163; // 1970-01-01 is day 719163
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(seconds * 1_000_000 + micros)
}

impl Leaf {
    fn new(dt: &DataType, capacity: usize) -> Self {
        match dt {
            DataType::Int64 => Leaf::I64(Column::with_capacity(capacity)),
            DataType::Int32 => Leaf::I32(Column::with_capacity(capacity)),
            DataType::Int16 => Leaf::I16(Column::with_capacity(capacity)),
            DataType::Int8 => Leaf::I8(Column::with_capacity(capacity)),
            DataType::Float64 => Leaf::F64(Column::with_capacity(capacity)),
            DataType::Float32 => Leaf::F32(Column::with_capacity(capacity)),
            DataType::Utf8 => {
                let mut offsets = Vec::with_capacity(capacity + 1);
                offsets.push(0);
                Leaf::Str(StrColumn {
                    offsets,
                    data: Vec::with_capacity(capacity * 8),
                    valid: Vec::with_capacity(capacity),
                })
            }
            DataType::Date32 => Leaf::Date(Column::with_capacity(capacity)),
            DataType::Timestamp(_, _) => Leaf::Ts(Column::with_capacity(capacity)),
            DataType::Decimal128(p, s) => Leaf::Dec(Column::with_capacity(capacity), *p, *s),
            DataType::Boolean => Leaf::Bool(Column::with_capacity(capacity)),
            _ => Leaf::Null(0),
        }
    }

    fn len(&self) -> usize {
        match self {
            Leaf::I64(c) | Leaf::Ts(c) => c.valid.len(),
            Leaf::I32(c) | Leaf::Date(c) => c.valid.len(),
            Leaf::I16(c) => c.valid.len(),
            Leaf::I8(c) => c.valid.len(),
            Leaf::F64(c) => c.valid.len(),
            Leaf::F32(c) => c.valid.len(),
            Leaf::Str(c) => c.valid.len(),
            Leaf::Dec(c, _, _) => c.valid.len(),
            Leaf::Bool(c) => c.valid.len(),
            Leaf::Null(n) => *n,
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            Leaf::I64(c) | Leaf::Ts(c) => c.truncate(len),
            Leaf::I32(c) | Leaf::Date(c) => c.truncate(len),
            Leaf::I16(c) => c.truncate(len),
            Leaf::I8(c) => c.truncate(len),
            Leaf::F64(c) => c.truncate(len),
            Leaf::F32(c) => c.truncate(len),
            Leaf::Str(c) => {
                c.valid.truncate(len);
                c.offsets.truncate(len + 1);
                let end = c.offsets.last().map_or(0, |&o| o as usize);
                c.data.truncate(end);
            }
            Leaf::Dec(c, _, _) => c.truncate(len),
            Leaf::Bool(c) => c.truncate(len),
            Leaf::Null(n) => *n = (*n).min(len),
        }
    }

    /// Reads the next value of the document and appends it ([`Leaf::append`]); integers and
    /// strings, the common leaves, are read straight into their columns.
    fn append_next(&mut self, sc: &mut Scanner<'_>) -> ScanResult<()> {
        match self {
            Leaf::I64(c) => {
                if let Some(v) = sc.integer() {
                    c.push(Some(v));
                    return Ok(());
                }
            }
            Leaf::I32(c) => {
                if let Some(v) = sc.integer() {
                    c.push(i32::try_from(v).ok());
                    return Ok(());
                }
            }
            Leaf::Str(c) if sc.at_string() => {
                sc.string_into_bytes(&mut c.data)?;
                let end = i32::try_from(c.data.len()).map_err(|_| ScanError("too much text"))?;
                c.offsets.push(end);
                c.valid.push(true);
                return Ok(());
            }
            _ => {}
        }
        let value = sc.scalar()?;
        self.append(value.as_ref())
    }

    /// Appends `v` converted to the leaf's type, or null when it does not convert. Fails only
    /// when a string column would outgrow its 32-bit offsets.
    fn append(&mut self, v: Option<&Scalar<'_>>) -> ScanResult<()> {
        let Some(v) = v else {
            self.append_null();
            return Ok(());
        };
        match self {
            Leaf::I64(c) => c.push(integer(v)),
            Leaf::I32(c) => c.push(integer(v).and_then(|i| i32::try_from(i).ok())),
            Leaf::I16(c) => c.push(integer(v).and_then(|i| i16::try_from(i).ok())),
            Leaf::I8(c) => c.push(integer(v).and_then(|i| i8::try_from(i).ok())),
            Leaf::F64(c) => c.push(float(v)),
            Leaf::F32(c) => c.push(float(v).map(|f| f as f32)),
            Leaf::Str(c) => {
                if let Scalar::String(s) = v {
                    c.data.extend_from_slice(s.as_bytes());
                }
                let end = i32::try_from(c.data.len()).map_err(|_| ScanError("too much text"))?;
                c.offsets.push(end);
                c.valid.push(matches!(v, Scalar::String(_)));
            }
            Leaf::Date(c) => c.push(match v {
                Scalar::String(s) => date_days(s),
                _ => None,
            }),
            Leaf::Ts(c) => c.push(match v {
                Scalar::String(s) => timestamp_micros(s),
                _ => None,
            }),
            Leaf::Dec(c, p, s) => {
                let text = match v {
                    Scalar::Number(t) => Some(*t),
                    Scalar::String(t) => Some(t.as_ref()),
                    _ => None,
                };
                c.push(text.and_then(|t| {
                    arrow::compute::kernels::cast_utils::parse_decimal::<Decimal128Type>(t, *p, *s)
                        .ok()
                }))
            }
            Leaf::Bool(c) => c.push(match v {
                Scalar::Bool(x) => Some(*x),
                _ => None,
            }),
            Leaf::Null(n) => *n += 1,
        }
        Ok(())
    }

    fn append_null(&mut self) {
        match self {
            Leaf::I64(c) | Leaf::Ts(c) => c.push(None),
            Leaf::I32(c) | Leaf::Date(c) => c.push(None),
            Leaf::I16(c) => c.push(None),
            Leaf::I8(c) => c.push(None),
            Leaf::F64(c) => c.push(None),
            Leaf::F32(c) => c.push(None),
            Leaf::Str(c) => {
                c.offsets.push(c.offsets.last().copied().unwrap_or(0));
                c.valid.push(false);
            }
            Leaf::Dec(c, _, _) => c.push(None),
            Leaf::Bool(c) => c.push(None),
            Leaf::Null(n) => *n += 1,
        }
    }

    fn finish(self, dt: &DataType) -> DeltaResult<ArrayRef> {
        Ok(match self {
            Leaf::I64(c) => c.finish::<Int64Type>(dt),
            Leaf::I32(c) => c.finish::<Int32Type>(dt),
            Leaf::I16(c) => c.finish::<Int16Type>(dt),
            Leaf::I8(c) => c.finish::<Int8Type>(dt),
            Leaf::F64(c) => c.finish::<Float64Type>(dt),
            Leaf::F32(c) => c.finish::<Float32Type>(dt),
            Leaf::Date(c) => c.finish::<Date32Type>(dt),
            Leaf::Ts(c) => c.finish::<TimestampMicrosecondType>(dt),
            Leaf::Dec(c, _, _) => c.finish::<Decimal128Type>(dt),
            Leaf::Str(c) => {
                let nulls = Column::<u8>::nulls(c.valid);
                Arc::new(StringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(c.offsets)),
                    Buffer::from_vec(c.data),
                    nulls,
                )?)
            }
            Leaf::Bool(c) => {
                let nulls = Column::<bool>::nulls(c.valid);
                Arc::new(BooleanArray::new(BooleanBuffer::from(c.values), nulls))
            }
            Leaf::Null(n) => shared_null_array(dt, n),
        })
    }
}

/// Parses statistics documents row by row straight into columns. A document that turns out
/// malformed is rolled back, so it leaves no partial row behind (its statistics are null).
struct StatsParser {
    structs: Vec<StructNode>,
    leaves: Vec<Leaf>,
    /// The type of each leaf, for building the arrays.
    leaf_types: Vec<DataType>,
    rows: usize,
}

impl StatsParser {
    fn new(fields: &Fields, capacity: usize) -> Self {
        let mut parser = StatsParser {
            structs: Vec::new(),
            leaves: Vec::new(),
            leaf_types: Vec::new(),
            rows: 0,
        };
        parser.add_struct(fields, capacity);
        parser
    }

    fn add_struct(&mut self, fields: &Fields, capacity: usize) -> usize {
        let id = self.structs.len();
        self.structs.push(StructNode {
            fields: fields.clone(),
            children: Vec::new(),
            validity: Vec::with_capacity(capacity),
            next: 0,
        });
        let children = fields
            .iter()
            .map(|f| match f.data_type() {
                DataType::Struct(inner) => Child::Struct(self.add_struct(inner, capacity)),
                dt => {
                    self.leaves.push(Leaf::new(dt, capacity));
                    self.leaf_types.push(dt.clone());
                    Child::Leaf(self.leaves.len() - 1)
                }
            })
            .collect();
        self.structs[id].children = children;
        id
    }

    fn scan_struct(&mut self, scanner: &mut Scanner<'_>, id: usize) -> ScanResult<()> {
        if !scanner.begin_object()? {
            return Ok(());
        }
        let row = self.rows;
        if self.structs[id].validity.len() == row {
            self.structs[id].validity.push(true);
        }
        let mut first = true;
        loop {
            // Keys almost always come in schema order: try the expected one in place first.
            let node = &mut self.structs[id];
            let expected = node.next;
            let child = match node.fields.get(expected) {
                Some(f) if scanner.try_key(first, f.name().as_bytes()) => {
                    node.next = expected + 1;
                    Some(node.children[expected])
                }
                _ => match scanner.next_key(first)? {
                    Some(key) => node.child(&key),
                    None => break,
                },
            };
            first = false;
            match child {
                Some(Child::Leaf(leaf)) => {
                    let column = &mut self.leaves[leaf];
                    // The first of duplicate keys wins; objects and arrays read as null.
                    if column.len() == row {
                        column.append_next(scanner)?;
                    } else {
                        scanner.skip_value()?;
                    }
                }
                Some(Child::Struct(child)) => self.scan_struct(scanner, child)?,
                None => scanner.skip_value()?,
            }
        }
        Ok(())
    }

    /// Parses one document (empty text: no statistics).
    fn push(&mut self, text: &str) {
        let row = self.rows;
        if !text.trim().is_empty() {
            let mut scanner = Scanner::new(text);
            let ok = self.scan_struct(&mut scanner, 0).is_ok() && scanner.at_end();
            if !ok {
                for leaf in &mut self.leaves {
                    leaf.truncate(row);
                }
                for node in &mut self.structs {
                    node.validity.truncate(row);
                }
            }
        }
        self.rows += 1;
        for leaf in &mut self.leaves {
            if leaf.len() < self.rows {
                leaf.append_null();
            }
        }
        for node in &mut self.structs {
            if node.validity.len() < self.rows {
                node.validity.push(false);
            }
        }
    }

    fn build_struct(
        &mut self,
        id: usize,
        leaves: &mut Vec<Option<ArrayRef>>,
    ) -> DeltaResult<StructArray> {
        let children = self.structs[id].children.clone();
        let columns = children
            .into_iter()
            .map(|c| match c {
                Child::Leaf(i) => leaves[i]
                    .take()
                    .ok_or_else(|| DeltaError::Internal("statistics leaf built twice".into())),
                Child::Struct(j) => self
                    .build_struct(j, leaves)
                    .map(|s| Arc::new(s) as ArrayRef),
            })
            .collect::<DeltaResult<Vec<_>>>()?;
        let node = &mut self.structs[id];
        let validity = NullBuffer::from(std::mem::take(&mut node.validity));
        Ok(StructArray::try_new_with_length(
            node.fields.clone(),
            columns,
            Some(validity),
            self.rows,
        )?)
    }

    fn finish(mut self) -> DeltaResult<StructArray> {
        let types = std::mem::take(&mut self.leaf_types);
        let mut leaves = std::mem::take(&mut self.leaves)
            .into_iter()
            .zip(types.iter())
            .map(|(l, dt)| l.finish(dt).map(Some))
            .collect::<DeltaResult<Vec<_>>>()?;
        let top = self.build_struct(0, &mut leaves)?;
        // The top level is always valid: a file without statistics has null members.
        let (fields, columns, _) = top.into_parts();
        Ok(StructArray::try_new_with_length(
            fields, columns, None, self.rows,
        )?)
    }
}

#[cfg(test)]
mod tests;
