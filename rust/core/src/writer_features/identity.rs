//! Identity columns: values generated for rows that do not provide them.
//!
//! Spec: "Identity Columns". A column whose metadata has `delta.identity.start` and
//! `delta.identity.step` gets, in every written row that does not provide it, the next values
//! `start + k * step` beyond `delta.identity.highWaterMark` (the largest generated value, the
//! smallest for a negative step); the high-water mark moves with the commit (a new `metaData`
//! in the same commit, so two concurrent writers of one identity column conflict rather than
//! generate the same values). Rows may provide their own values only when
//! `delta.identity.allowExplicitInsert` is true. Overflow is an error, never a wrap.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{Field, Schema, SchemaRef};

use crate::error::{DeltaError, DeltaResult};

/// Column metadata keys of identity columns.
pub const START: &str = "delta.identity.start";
pub const STEP: &str = "delta.identity.step";
pub const HIGH_WATER_MARK: &str = "delta.identity.highWaterMark";
pub const ALLOW_EXPLICIT_INSERT: &str = "delta.identity.allowExplicitInsert";

/// One identity column.
#[derive(Debug, Clone)]
struct Identity {
    index: usize,
    name: String,
    start: i64,
    step: i64,
    high_water_mark: Option<i64>,
    allow_explicit: bool,
    /// Whether this write generated values (the high-water mark moved).
    moved: bool,
}

/// The identity columns of a table, and the values generated so far by one write.
#[derive(Debug, Clone, Default)]
pub struct IdentityColumns {
    columns: Vec<Identity>,
}

fn number(field: &Field, key: &str) -> DeltaResult<Option<i64>> {
    match field.metadata().get(key) {
        None => Ok(None),
        Some(text) => text.trim().parse::<i64>().map(Some).map_err(|_| {
            DeltaError::corrupt(
                "_delta_log",
                None,
                format!(
                    "{key} of column {:?} is not a long: {text:?} (spec: \"Identity Columns\")",
                    field.name()
                ),
            )
        }),
    }
}

impl IdentityColumns {
    /// The identity columns of the table schema `schema` (top-level columns).
    pub fn of(schema: &Schema) -> DeltaResult<Self> {
        let mut columns = Vec::new();
        for (index, field) in schema.fields().iter().enumerate() {
            let (Some(start), Some(step)) = (number(field, START)?, number(field, STEP)?) else {
                continue;
            };
            if step == 0 {
                return Err(DeltaError::corrupt(
                    "_delta_log",
                    None,
                    format!(
                        "{STEP} of column {:?} is 0 (spec: \"Identity Columns\": it cannot be 0)",
                        field.name()
                    ),
                ));
            }
            columns.push(Identity {
                index,
                name: field.name().clone(),
                start,
                step,
                high_water_mark: number(field, HIGH_WATER_MARK)?,
                allow_explicit: field
                    .metadata()
                    .get(ALLOW_EXPLICIT_INSERT)
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
                moved: false,
            });
        }
        Ok(IdentityColumns { columns })
    }

    /// Whether the table has identity columns.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Whether column `index` is an identity column that refuses explicit values.
    pub fn refuses_values(&self, index: usize) -> bool {
        self.columns
            .iter()
            .any(|c| c.index == index && !c.allow_explicit)
    }

    /// `batch` (the table's columns, in order) with generated values in the identity
    /// columns `provided` marks false; a provided value where explicit inserts are not allowed
    /// is an error.
    pub fn fill(
        &mut self,
        batch: &RecordBatch,
        provided: &dyn Fn(usize) -> bool,
    ) -> DeltaResult<RecordBatch> {
        if self.columns.is_empty() || batch.num_rows() == 0 {
            return Ok(batch.clone());
        }
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        for c in &mut self.columns {
            if provided(c.index) {
                if !c.allow_explicit {
                    return Err(DeltaError::InvalidArgument(format!(
                        "column {:?} is an identity column without \
                         delta.identity.allowExplicitInsert: its values are generated, leave it \
                         out of the data (spec: \"Identity Columns\")",
                        c.name
                    )));
                }
                continue;
            }
            let overflow = || {
                DeltaError::InvalidArgument(format!(
                    "identity column {:?} overflows a long (start {}, step {}, high-water mark \
                     {:?}); nothing was written (spec: \"Identity Columns\")",
                    c.name, c.start, c.step, c.high_water_mark
                ))
            };
            let first = match c.high_water_mark {
                None => c.start,
                Some(h) => {
                    // The next value on the grid start + k*step beyond the mark: the grid
                    // value at or before the mark (in the step's direction), plus a step.
                    let (h, start, step) = (i128::from(h), i128::from(c.start), i128::from(c.step));
                    let base = if step > 0 {
                        h - (h - start).rem_euclid(step)
                    } else {
                        h + (start - h).rem_euclid(-step)
                    };
                    i64::try_from(base + step).map_err(|_| overflow())?
                }
            };
            let n = batch.num_rows() as i64;
            let last = (n - 1)
                .checked_mul(c.step)
                .and_then(|d| first.checked_add(d))
                .ok_or_else(overflow)?;
            let values: Int64Array = (0..n).map(|k| first + k * c.step).collect();
            let target = batch.schema().field(c.index).data_type().clone();
            columns[c.index] = cast(&(Arc::new(values) as ArrayRef), &target)?;
            c.high_water_mark = Some(last);
            c.moved = true;
        }
        Ok(RecordBatch::try_new(batch.schema(), columns)?)
    }

    /// The table schema with the high-water marks this write moved, when it moved any.
    pub fn updated_schema(&self, schema: &SchemaRef) -> Option<SchemaRef> {
        if !self.columns.iter().any(|c| c.moved) {
            return None;
        }
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .enumerate()
            .map(
                |(i, f)| match self.columns.iter().find(|c| c.index == i && c.moved) {
                    Some(c) => {
                        let mut meta: HashMap<String, String> = f
                            .metadata()
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        if let Some(h) = c.high_water_mark {
                            meta.insert(HIGH_WATER_MARK.into(), h.to_string());
                        }
                        f.as_ref().clone().with_metadata(meta)
                    }
                    None => f.as_ref().clone(),
                },
            )
            .collect();
        Some(Arc::new(Schema::new(fields)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::AsArray;
    use arrow::datatypes::{DataType, Int64Type};

    fn schema(start: i64, step: i64, hwm: Option<i64>) -> Schema {
        let mut meta = HashMap::from([
            (START.to_string(), start.to_string()),
            (STEP.to_string(), step.to_string()),
        ]);
        if let Some(h) = hwm {
            meta.insert(HIGH_WATER_MARK.into(), h.to_string());
        }
        Schema::new(vec![
            Field::new("id", DataType::Int64, true).with_metadata(meta),
            Field::new("v", DataType::Int64, true),
        ])
    }

    fn generate(s: Schema, rows: usize) -> DeltaResult<(Vec<i64>, IdentityColumns)> {
        let schema = Arc::new(s);
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::new_null(rows)),
                Arc::new(Int64Array::from(vec![0; rows])),
            ],
        )?;
        let mut ids = IdentityColumns::of(&schema)?;
        let out = ids.fill(&batch, &|i| i != 0)?;
        Ok((
            out.column(0).as_primitive::<Int64Type>().values().to_vec(),
            ids,
        ))
    }

    #[test]
    fn values_follow_start_step_and_the_high_water_mark() {
        assert_eq!(generate(schema(1, 1, None), 3).unwrap().0, [1, 2, 3]);
        assert_eq!(generate(schema(10, 5, Some(20)), 2).unwrap().0, [25, 30]);
        // A mark off the grid: the next grid value beyond it.
        assert_eq!(generate(schema(10, 5, Some(21)), 1).unwrap().0, [25]);
        assert_eq!(generate(schema(-1, -2, Some(-5)), 2).unwrap().0, [-7, -9]);
        let (_, ids) = generate(schema(1, 1, None), 3).unwrap();
        let updated = ids.updated_schema(&Arc::new(schema(1, 1, None))).unwrap();
        assert_eq!(updated.field(0).metadata()[HIGH_WATER_MARK], "3");
    }

    #[test]
    fn overflow_and_explicit_values_are_refused() {
        let err = generate(schema(1, 1, Some(i64::MAX - 1)), 2).unwrap_err();
        assert!(err.to_string().contains("overflows"), "{err}");
        let s = Arc::new(schema(1, 1, None));
        let batch = RecordBatch::try_new(
            s.clone(),
            vec![
                Arc::new(Int64Array::from(vec![7])),
                Arc::new(Int64Array::from(vec![0])),
            ],
        )
        .unwrap();
        let mut ids = IdentityColumns::of(&s).unwrap();
        assert!(ids.fill(&batch, &|_| true).is_err());
    }
}
