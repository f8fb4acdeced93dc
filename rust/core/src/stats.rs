//! Per-file statistics: the `stats` JSON of `add` actions parsed into typed Arrow columns.
//!
//! Spec: "Per-file Statistics" (`numRecords`, `minValues`, `maxValues`, `nullCount`,
//! `tightBounds`), keyed by physical column names under column mapping ("Reader Requirements for
//! Column Mapping"). Statistics are parsed once, while the snapshot is built, and the JSON text
//! is then dropped: the typed columns are what data skipping and `get_add_actions` use, and
//! they are several times smaller. Statistics that do not parse against the schema are null for
//! that file rather than an error: they are optional ("stats ... optional") and an unreadable
//! one must not hide the table.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, RecordBatch, StructArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use arrow::json::ReaderBuilder;

use crate::error::{DeltaError, DeltaResult};

/// The statistics types derived from a table schema.
#[derive(Debug, Clone)]
pub struct StatsSchema {
    /// `{numRecords, minValues, maxValues, nullCount, tightBounds}` with physical names, as
    /// decoded from JSON.
    physical: SchemaRef,
    /// The same with logical names (and the table's own timestamp zones).
    logical: Fields,
}

/// Whether min/max statistics are kept for a type ("Per-file Statistics": leaf values of
/// primitive columns; binary and boolean columns carry none).
fn has_min_max(dt: &DataType) -> bool {
    !matches!(
        dt,
        DataType::Binary | DataType::Boolean | DataType::List(_) | DataType::Map(_, _)
    )
}

/// The type statistics are decoded as: zoned timestamps with a fixed offset, since the JSON
/// decoder resolves only offsets (`"UTC"` and `"+00:00"` are the same instant; the logical type
/// is restored by [`to_logical`]).
fn json_decodable(dt: &DataType) -> DataType {
    match dt {
        DataType::Timestamp(unit, Some(_)) => DataType::Timestamp(*unit, Some("+00:00".into())),
        other => other.clone(),
    }
}

fn min_max_fields(physical: &Fields, logical: &Fields) -> (Fields, Fields) {
    let mut p_out = Vec::new();
    let mut l_out = Vec::new();
    for (p, l) in physical.iter().zip(logical.iter()) {
        match (p.data_type(), l.data_type()) {
            (DataType::Struct(pc), DataType::Struct(lc)) => {
                let (pf, lf) = min_max_fields(pc, lc);
                if !pf.is_empty() {
                    p_out.push(Field::new(p.name(), DataType::Struct(pf), true));
                    l_out.push(Field::new(l.name(), DataType::Struct(lf), true));
                }
            }
            (dt, _) if has_min_max(dt) => {
                p_out.push(Field::new(p.name(), json_decodable(dt), true));
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
            (DataType::Struct(pc), DataType::Struct(lc)) => {
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

    /// The logical type of the parsed statistics struct.
    pub fn logical_type(&self) -> DataType {
        DataType::Struct(self.logical.clone())
    }

    fn decoder(&self, rows: usize) -> Option<arrow::json::reader::Decoder> {
        ReaderBuilder::new(self.physical.clone())
            .with_batch_size(rows.max(1))
            .build_decoder()
            .ok()
    }

    /// Decodes one JSON document per text, `None` if any of them does not parse.
    fn decode<'a>(&self, texts: impl Iterator<Item = &'a str>, rows: usize) -> Option<RecordBatch> {
        let mut decoder = self.decoder(rows)?;
        for text in texts {
            let bytes = text.as_bytes();
            if decoder.decode(bytes).ok()? != bytes.len() || decoder.decode(b"\n").ok()? != 1 {
                return None;
            }
        }
        decoder.flush().ok()?.filter(|b| b.num_rows() == rows)
    }

    /// Parses a column of `stats` JSON strings (null or empty means no statistics) into a
    /// struct array with physical names: one row per input row, or per selected row when a
    /// `mask` is given. The strings are decoded in place.
    pub fn parse(&self, stats: Option<&ArrayRef>, mask: Option<&BooleanArray>) -> DeltaResult<StructArray> {
        let strings = stats.and_then(|s| s.as_string_opt::<i32>());
        let len = stats.map_or(0, |s| s.len());
        let rows: Vec<usize> = match mask {
            Some(m) => (0..m.len()).filter(|r| m.is_valid(*r) && m.value(*r)).collect(),
            None => (0..len).collect(),
        };
        let text_of = |row: usize| -> &str {
            match strings {
                Some(s) if s.is_valid(row) && !s.value(row).trim().is_empty() => s.value(row),
                _ => "{}",
            }
        };
        let batch = match self.decode(rows.iter().map(|r| text_of(*r)), rows.len()) {
            Some(batch) => batch,
            None => {
                // Slow path: something does not parse; decode row by row, nulls for the bad ones.
                let empty = self.decode(std::iter::once("{}"), 1).ok_or_else(|| {
                    DeltaError::Internal("empty statistics did not decode".into())
                })?;
                let parts: Vec<RecordBatch> = rows
                    .iter()
                    .map(|row| {
                        self.decode(std::iter::once(text_of(*row)), 1)
                            .unwrap_or_else(|| empty.clone())
                    })
                    .collect();
                arrow::compute::concat_batches(&self.physical, &parts)?
            }
        };
        Ok(StructArray::from(batch))
    }

    /// Renames parsed statistics (physical names) to logical names and types.
    pub fn to_logical(&self, parsed: &StructArray) -> ArrayRef {
        let array: ArrayRef = Arc::new(parsed.clone());
        to_logical(&array, &self.logical_type())
    }

    /// All-null statistics of `len` rows, physical names.
    pub fn nulls(&self, len: usize) -> StructArray {
        new_null_array(&DataType::Struct(self.physical.fields().clone()), len)
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::StringArray;
    use arrow::datatypes::{Int64Type, TimeUnit};

    fn schemas() -> (Schema, Schema) {
        let logical = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new(
                "ts",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
            Field::new("flag", DataType::Boolean, true),
        ]);
        let physical = Schema::new(vec![
            Field::new("col-1", DataType::Int64, true),
            Field::new(
                "col-2",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
            Field::new("col-3", DataType::Boolean, true),
        ]);
        (physical, logical)
    }

    #[test]
    fn parses_by_physical_name_and_renames() {
        let (p, l) = schemas();
        let s = StatsSchema::new(&p, &l);
        let col: ArrayRef = Arc::new(StringArray::from(vec![
            Some(r#"{"numRecords":3,"minValues":{"col-1":1,"col-2":"2021-01-01T00:00:00.000Z"},"maxValues":{"col-1":9},"nullCount":{"col-1":0,"col-3":1}}"#),
            None,
            Some("not json"),
        ]));
        let parsed = s.parse(Some(&col), None).unwrap();
        let n = parsed.column_by_name("numRecords").unwrap().as_primitive::<Int64Type>();
        assert_eq!(n.value(0), 3);
        assert!(n.is_null(1));
        assert!(n.is_null(2), "unparsable statistics are null");
        let logical = s.to_logical(&parsed);
        let logical = logical.as_struct();
        let min = logical.column_by_name("minValues").unwrap().as_struct();
        assert_eq!(min.column_by_name("id").unwrap().as_primitive::<Int64Type>().value(0), 1);
        let ts = min.column_by_name("ts").unwrap();
        assert_eq!(
            ts.data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        // Booleans carry no min/max; their null counts are kept.
        assert!(min.column_by_name("flag").is_none());
        let nc = logical.column_by_name("nullCount").unwrap().as_struct();
        assert_eq!(nc.column_by_name("flag").unwrap().as_primitive::<Int64Type>().value(0), 1);
    }

    #[test]
    fn unknown_schema_keeps_counts() {
        let s = StatsSchema::empty();
        let col: ArrayRef = Arc::new(StringArray::from(vec![Some(r#"{"numRecords":7,"minValues":{"a":1}}"#)]));
        let parsed = s.parse(Some(&col), None).unwrap();
        let masked = s.parse(Some(&col), Some(&BooleanArray::from(vec![false]))).unwrap();
        assert_eq!(masked.len(), 0);
        let n = parsed.column_by_name("numRecords").unwrap().as_primitive::<Int64Type>();
        assert_eq!(n.value(0), 7);
    }
}
