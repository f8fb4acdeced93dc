//! The rules every written row must follow: CHECK constraints, column invariants and
//! generated columns.
//!
//! Spec: "CHECK Constraints" (table properties `delta.constraints.{name}` holding a SQL boolean
//! expression; "Writers ... must validate that all rows satisfy them"), "Column Invariants"
//! (column metadata `delta.invariants` holding `{"expression": {"expression": "..."}}`),
//! "Generated Columns" (column metadata `delta.generationExpression`; "writers must ensure
//! `<column> <=> <expression>` holds for every row": a generated column the data does not
//! provide is computed, one it provides is verified). A row whose check is false or unknown
//! (null) violates it, as in Delta Spark. Expressions are parsed with [`crate::expr::sql`];
//! one deltalog cannot evaluate makes the table unwritable ([`DeltaError::Unsupported`])
//! rather than unchecked.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow::compute::is_null;
use arrow::compute::kernels::boolean::{and, or};
use arrow::datatypes::Schema;

use crate::error::{DeltaError, DeltaResult};
use crate::expr::{eval, Expr};
use crate::write::partitions::serialize_partition_value;

/// Table property prefix of CHECK constraints.
pub const CONSTRAINT_PREFIX: &str = "delta.constraints.";
/// Column metadata key of invariants.
pub const INVARIANTS_KEY: &str = "delta.invariants";
/// Column metadata key of generation expressions.
pub const GENERATION_KEY: &str = "delta.generationExpression";
/// Column metadata key of default values ("Default Columns").
pub const DEFAULT_KEY: &str = "CURRENT_DEFAULT";

/// One boolean rule.
#[derive(Debug, Clone)]
struct Check {
    /// `CHECK constraint c` or `invariant of column x`.
    what: String,
    sql: String,
    expr: Expr,
}

/// The rules of one table.
#[derive(Debug, Clone, Default)]
pub struct TableRules {
    checks: Vec<Check>,
    /// Generated columns: column index, name, expression (cast to the column's type).
    generated: Vec<(usize, String, String, Expr)>,
    /// Default values ("Default Columns"): column index, name, expression (cast).
    defaults: Vec<(usize, String, String, Expr)>,
}

fn unsupported(what: &str, sql: &str, e: &DeltaError) -> DeltaError {
    DeltaError::Unsupported(format!(
        "deltalog cannot evaluate the {what} ({sql}): {e}; it refuses to write rather than \
         leave it unchecked"
    ))
}

impl TableRules {
    /// The rules declared by `schema` (the logical table schema) and `config`.
    pub fn of(schema: &Schema, config: &BTreeMap<String, String>) -> DeltaResult<Self> {
        let mut rules = TableRules::default();
        for (key, sql) in config {
            if let Some(name) = key.strip_prefix(CONSTRAINT_PREFIX) {
                let what = format!("CHECK constraint {name}");
                let expr = Expr::parse(sql)
                    .and_then(|e| e.resolve(schema))
                    .map_err(|e| unsupported(&what, sql, &e))?;
                check_is_condition(&what, sql, &expr, schema)?;
                rules.checks.push(Check {
                    what,
                    sql: sql.clone(),
                    expr,
                });
            }
        }
        rules.collect_fields(schema, schema.fields(), "")?;
        for (index, field) in schema.fields().iter().enumerate() {
            for (key, what, list) in [
                (DEFAULT_KEY, "default value", &mut rules.defaults),
                (
                    GENERATION_KEY,
                    "generation expression",
                    &mut rules.generated,
                ),
            ] {
                let Some(sql) = field.metadata().get(key) else {
                    continue;
                };
                let what = format!("{what} of column {}", field.name());
                let expr = Expr::parse(sql)
                    .and_then(|e| e.resolve(schema))
                    .map_err(|e| unsupported(&what, sql, &e))?;
                // The value has the column's type.
                let expr = Expr::Cast {
                    expr: Box::new(expr),
                    to: crate::scan::columns::output_type(field.data_type()),
                };
                list.push((index, field.name().clone(), sql.clone(), expr));
            }
        }
        Ok(rules)
    }

    /// Invariants of `fields` and their nested fields.
    fn collect_fields(
        &mut self,
        schema: &Schema,
        fields: &arrow::datatypes::Fields,
        prefix: &str,
    ) -> DeltaResult<()> {
        for field in fields {
            let path = format!("{prefix}{}", field.name());
            if let Some(text) = field.metadata().get(INVARIANTS_KEY) {
                let what = format!("invariant of column {path}");
                let sql = serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| {
                        v.pointer("/expression/expression")
                            .and_then(|e| e.as_str())
                            .map(str::to_string)
                    })
                    .ok_or_else(|| {
                        DeltaError::corrupt(
                            "_delta_log",
                            None,
                            format!(
                                "the {what} is not {{\"expression\": {{\"expression\": ...}}}}: \
                                 {text} (spec: \"Column Invariants\")"
                            ),
                        )
                    })?;
                let expr = Expr::parse(&sql)
                    .and_then(|e| e.resolve(schema))
                    .map_err(|e| unsupported(&what, &sql, &e))?;
                check_is_condition(&what, &sql, &expr, schema)?;
                self.checks.push(Check { what, sql, expr });
            }
            if let arrow::datatypes::DataType::Struct(children) = field.data_type() {
                self.collect_fields(schema, children, &format!("{path}."))?;
            }
        }
        Ok(())
    }

    /// Whether there is nothing to check or fill.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty() && self.generated.is_empty() && self.defaults.is_empty()
    }

    /// `batch` with the default value in every column that has one and that `provided`
    /// marks false ("Default Columns": writes that leave a column out get its default).
    pub fn fill_defaults(
        &self,
        batch: &RecordBatch,
        provided: &dyn Fn(usize) -> bool,
    ) -> DeltaResult<RecordBatch> {
        fill(&self.defaults, "the default of column", batch, provided)
    }

    /// Whether column `index` is generated.
    pub fn is_generated(&self, index: usize) -> bool {
        self.generated.iter().any(|(i, ..)| *i == index)
    }

    /// `batch` (the table's columns, in order) with the generated columns that `provided`
    /// marks false computed from the others.
    pub fn fill_generated(
        &self,
        batch: &RecordBatch,
        provided: &dyn Fn(usize) -> bool,
    ) -> DeltaResult<RecordBatch> {
        fill(&self.generated, "generated column", batch, provided)
    }

    /// Checks every row of `batch` (the table's columns, in order).
    pub fn check(&self, batch: &RecordBatch) -> DeltaResult<()> {
        for c in &self.checks {
            let result = eval::evaluate_predicate(&c.expr, batch)?;
            // False or unknown violates.
            let ok = match result.nulls() {
                Some(_) => arrow::compute::prep_null_mask_filter(&result),
                None => result,
            };
            if ok.false_count() > 0 {
                return Err(violation(&c.what, &c.sql, batch, &ok, &c.expr.columns()));
            }
        }
        for (index, name, sql, expr) in &self.generated {
            let expected = eval::evaluate(expr, batch)?;
            let actual = batch.column(*index);
            let ok = null_safe_equal(actual, &expected)?;
            if ok.false_count() > 0 {
                let what = format!("generated column {name}");
                let mut shown = expr.columns();
                shown.insert(0, name.clone());
                return Err(violation(
                    &what,
                    &format!("{name} <=> {sql}"),
                    batch,
                    &ok,
                    &shown,
                ));
            }
        }
        Ok(())
    }
}

/// Refuses a CHECK constraint or invariant whose expression is not a condition ("CHECK
/// Constraints": "a SQL expression that evaluates to a boolean"), such as `id + 1`: its type
/// is found by evaluating it over no rows of `schema` (the table's logical schema). Other
/// evaluation errors are left to the rows, which report them with the values involved.
fn check_is_condition(what: &str, sql: &str, expr: &Expr, schema: &Schema) -> DeltaResult<()> {
    let empty = RecordBatch::new_empty(Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| crate::scan::columns::output_field(f))
            .collect::<Vec<_>>(),
    )));
    match eval::evaluate(expr, &empty) {
        Ok(values) => match values.data_type() {
            arrow::datatypes::DataType::Boolean | arrow::datatypes::DataType::Null => Ok(()),
            other => Err(DeltaError::InvalidArgument(format!(
                "the {what} ({sql}) is not a boolean condition: its value is of type {} \
                 (spec: \"CHECK Constraints\")",
                crate::expr::sql::type_name(other)
            ))),
        },
        Err(_) => Ok(()),
    }
}

/// How many rows of `snapshot` violate the boolean SQL expression `sql` (false or unknown),
/// e.g. before a CHECK constraint is added ("CHECK Constraints": existing rows must satisfy
/// it).
pub async fn count_violations(snapshot: &crate::Snapshot, sql: &str) -> DeltaResult<u64> {
    use futures::TryStreamExt;
    let schema = snapshot.schema()?;
    let expr = Expr::parse(sql)?.resolve(&schema)?;
    check_is_condition("CHECK constraint", sql, &expr, &schema)?;
    let columns: Vec<String> = expr
        .columns()
        .iter()
        .map(|c| c.split('.').next().unwrap_or(c).to_string())
        .fold(Vec::new(), |mut acc, c| {
            if !acc.contains(&c) {
                acc.push(c);
            }
            acc
        });
    let scan = crate::scan::Scan::try_new(
        snapshot,
        crate::scan::ScanOptions {
            columns: Some(columns),
            ..Default::default()
        },
    )?;
    let concurrency = crate::available_threads();
    let mut batches = crate::scan::execute(
        snapshot.storage().clone(),
        scan.spec().clone(),
        scan.tasks().to_vec(),
        concurrency,
    );
    let mut bad = 0u64;
    while let Some(batch) = batches.try_next().await? {
        let ok = eval::matches(&expr, &batch)?;
        bad += ok.false_count() as u64;
    }
    Ok(bad)
}

/// `batch` with each column of `computed` (index, name, SQL, expression) that `provided`
/// marks false replaced by the expression's value over the batch.
fn fill(
    computed: &[(usize, String, String, Expr)],
    what: &str,
    batch: &RecordBatch,
    provided: &dyn Fn(usize) -> bool,
) -> DeltaResult<RecordBatch> {
    if computed.iter().all(|(i, ..)| provided(*i)) {
        return Ok(batch.clone());
    }
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    for (index, name, sql, expr) in computed {
        if !provided(*index) {
            columns[*index] = eval::evaluate(expr, batch).map_err(|e| {
                DeltaError::InvalidArgument(format!("computing {what} {name} = {sql}: {e}"))
            })?;
        }
    }
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// `a <=> b`: equal, or both null.
fn null_safe_equal(a: &ArrayRef, b: &ArrayRef) -> DeltaResult<BooleanArray> {
    let eq = crate::predicate::compare(a, crate::predicate::CmpOp::Eq, b)?;
    let eq = match eq.nulls() {
        Some(_) => arrow::compute::prep_null_mask_filter(&eq),
        None => eq,
    };
    let both_null = and(&is_null(a)?, &is_null(b)?)?;
    Ok(or(&eq, &both_null)?)
}

/// The error for the first row of `batch` that `ok` marks false, showing `columns`' values.
fn violation(
    what: &str,
    sql: &str,
    batch: &RecordBatch,
    ok: &BooleanArray,
    columns: &[String],
) -> DeltaError {
    let count = ok.false_count();
    let row = (0..ok.len()).find(|&i| !ok.value(i)).unwrap_or(0);
    let values: Vec<String> = columns
        .iter()
        .filter_map(|c| {
            let top = c.split('.').next().unwrap_or(c);
            let array: &ArrayRef = batch.column_by_name(top)?;
            let value = serialize_partition_value(&Arc::clone(array), row)
                .ok()
                .flatten()
                .unwrap_or_else(|| "null".into());
            Some(format!("{c} = {value}"))
        })
        .collect();
    DeltaError::ConstraintViolation {
        constraint: what.to_string(),
        expression: sql.to_string(),
        detail: format!(
            "{count} row(s) violate it, e.g. the row with {}",
            values.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field};
    use std::collections::HashMap;

    fn schema() -> Schema {
        let invariant = HashMap::from([(
            INVARIANTS_KEY.to_string(),
            r#"{"expression":{"expression":"b < 100"}}"#.to_string(),
        )]);
        let generated = HashMap::from([(GENERATION_KEY.to_string(), "a * 2".to_string())]);
        Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int64, true).with_metadata(invariant),
            Field::new("g", DataType::Int64, true).with_metadata(generated),
        ])
    }

    fn batch(a: Vec<Option<i64>>, b: Vec<Option<i64>>, g: Vec<Option<i64>>) -> RecordBatch {
        let fields: Vec<Field> = schema()
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), f.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            vec![
                Arc::new(Int64Array::from(a)),
                Arc::new(Int64Array::from(b)),
                Arc::new(Int64Array::from(g)),
            ],
        )
        .unwrap()
    }

    #[test]
    fn checks_invariants_and_generated_columns() {
        let config = BTreeMap::from([(
            "delta.constraints.positive".to_string(),
            "a > 0".to_string(),
        )]);
        let rules = TableRules::of(&schema(), &config).unwrap();
        assert!(rules.is_generated(2) && !rules.is_generated(0));
        let good = batch(
            vec![Some(1), Some(2)],
            vec![Some(5), Some(7)],
            vec![None, None],
        );
        // The generated column is computed when the data does not provide it.
        let filled = rules.fill_generated(&good, &|i| i != 2).unwrap();
        rules.check(&filled).unwrap();
        assert_eq!(
            filled.column(2).as_ref(),
            &Int64Array::from(vec![Some(2), Some(4)]) as &dyn Array
        );
        // A provided generated value must match.
        let wrong = batch(vec![Some(1)], vec![Some(1)], vec![Some(3)]);
        let err = rules.check(&wrong).unwrap_err();
        assert!(err.to_string().contains("generated column g"), "{err}");
        // Unknown counts as a violation; the message names the constraint and a row.
        let bad = batch(
            vec![None, Some(-1)],
            vec![Some(1), Some(1)],
            vec![None, Some(-2)],
        );
        let err = rules.check(&bad).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("CHECK constraint positive") && text.contains("2 row(s)"),
            "{text}"
        );
        assert!(text.contains("a = null"), "{text}");
        let invariant = batch(vec![Some(1)], vec![Some(500)], vec![Some(2)]);
        let err = rules.check(&invariant).unwrap_err();
        assert!(err.to_string().contains("invariant of column b"), "{err}");
    }

    #[test]
    fn unevaluable_rules_refuse_writes() {
        let config = BTreeMap::from([(
            "delta.constraints.c".to_string(),
            "some_udf(a) > 0".to_string(),
        )]);
        assert!(matches!(
            TableRules::of(&schema(), &config),
            Err(DeltaError::Unsupported(_))
        ));
    }
}
