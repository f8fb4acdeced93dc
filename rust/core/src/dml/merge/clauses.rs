//! MERGE's clauses: compiled against the joined target and source columns
//! (`<alias>.<column>`) and grouped by kind, the first clause whose condition holds chosen per
//! row, and the rows each kind of clause produces (updated, inserted, kept); a target file's
//! matched rows acted on.
//!
//! Spec: as [`crate::dml::rewrite`]; "Row Tracking" (updated rows keep their row ids).

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, RecordBatch, RecordBatchOptions,
    UInt32Array,
};
use arrow::compute::{cast_with_options, take, CastOptions};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};

use crate::dml::delete_update::drop_row_index;
use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::expr::{eval, Expr};
use crate::predicate::Literal;
use crate::schema::name_key;
use crate::writer_features::constraints::TableRules;
use crate::writer_features::identity::IdentityColumns;

use super::{ClauseAction, ClauseKind, MergeClause, MergeMetrics};

/// A clause compiled against the joined columns.
pub(super) struct Compiled {
    pub(super) kind: ClauseKind,
    pub(super) delete: bool,
    pub(super) predicate: Option<Expr>,
    /// Per target column (table order): its new value, or `None` to keep (update) / null
    /// (insert).
    pub(super) values: Vec<Option<Expr>>,
}

/// The compiled clauses by kind, each in the statement's order.
pub(super) struct Clauses {
    pub(super) matched: Vec<Compiled>,
    pub(super) not_matched: Vec<Compiled>,
    pub(super) by_source: Vec<Compiled>,
}

impl Clauses {
    pub(super) fn by_kind(compiled: Vec<Compiled>) -> Clauses {
        let mut clauses = Clauses {
            matched: Vec::new(),
            not_matched: Vec::new(),
            by_source: Vec::new(),
        };
        for clause in compiled {
            match clause.kind {
                ClauseKind::Matched => clauses.matched.push(clause),
                ClauseKind::NotMatched => clauses.not_matched.push(clause),
                ClauseKind::NotMatchedBySource => clauses.by_source.push(clause),
            }
        }
        clauses
    }
}

/// Compiles the statement's clauses against the joined columns: each clause's action checked
/// against its kind, its condition and values compiled reading only the sides it has rows of;
/// `UPDATE SET *` / `INSERT *` take the source's column of each target column's name
/// (generated columns may lack one).
pub(super) fn compile(
    clauses: &[MergeClause],
    names: &Names,
    rules: &TableRules,
) -> DeltaResult<Vec<Compiled>> {
    let data_schema = &names.target;
    let n_target = data_schema.fields().len();
    let (ta, sa) = (
        format!("{}.", names.target_alias),
        format!("{}.", names.source_alias),
    );
    let mut compiled: Vec<Compiled> = Vec::new();
    for clause in clauses {
        let (allow_target, allow_source) = match clause.kind {
            ClauseKind::Matched => (true, true),
            ClauseKind::NotMatched => (false, true),
            ClauseKind::NotMatchedBySource => (true, false),
        };
        let valid = matches!(
            (clause.kind, clause.action),
            (
                ClauseKind::Matched,
                ClauseAction::Update | ClauseAction::UpdateAll | ClauseAction::Delete
            ) | (
                ClauseKind::NotMatched,
                ClauseAction::Insert | ClauseAction::InsertAll
            ) | (
                ClauseKind::NotMatchedBySource,
                ClauseAction::Update | ClauseAction::Delete
            )
        );
        if !valid {
            return Err(bad(format!(
                "a {:?} clause cannot {:?}",
                clause.kind, clause.action
            )));
        }
        let predicate = clause
            .predicate
            .as_deref()
            .map(|p| names.compile(p, allow_target, allow_source))
            .transpose()?;
        let mut values: Vec<Option<Expr>> = vec![None; n_target];
        match clause.action {
            ClauseAction::Update | ClauseAction::Insert => {
                for (column, sql) in &clause.set {
                    let target = column.strip_prefix(&ta).unwrap_or(column);
                    let index = data_schema
                        .fields()
                        .iter()
                        .position(|f| f.name() == target)
                        .or_else(|| {
                            data_schema
                                .fields()
                                .iter()
                                .position(|f| name_key(f.name()) == name_key(target))
                        })
                        .ok_or_else(|| bad(format!("MERGE sets an unknown column {column:?}")))?;
                    if values[index].is_some() {
                        return Err(bad(format!("MERGE sets column {column:?} twice")));
                    }
                    values[index] = Some(names.compile(sql, allow_target, allow_source)?);
                }
            }
            ClauseAction::UpdateAll | ClauseAction::InsertAll => {
                for (i, f) in data_schema.fields().iter().enumerate() {
                    let from = names
                        .source
                        .fields()
                        .iter()
                        .find(|s| name_key(s.name()) == name_key(f.name()));
                    match from {
                        Some(s) => values[i] = Some(Expr::Column(format!("{}{}", sa, s.name()))),
                        None if rules.is_generated(i) => {}
                        None => {
                            return Err(bad(format!(
                                "the source has no column {:?} for UPDATE SET * / INSERT *",
                                f.name()
                            )))
                        }
                    }
                }
            }
            ClauseAction::Delete => {}
        }
        compiled.push(Compiled {
            kind: clause.kind,
            delete: clause.action == ClauseAction::Delete,
            predicate,
            values,
        });
    }
    Ok(compiled)
}

/// A MATCHED or NOT MATCHED BY SOURCE clause may not set an identity column that refuses
/// explicit values (it would update the column's generated values; "Identity Columns").
pub(super) fn check_identity_updates(
    compiled: &[Compiled],
    identities: &IdentityColumns,
    data_schema: &SchemaRef,
) -> DeltaResult<()> {
    let n_target = data_schema.fields().len();
    for clause in compiled {
        if clause.kind != ClauseKind::NotMatched {
            if let Some(i) =
                (0..n_target).find(|&i| clause.values[i].is_some() && identities.refuses_values(i))
            {
                return Err(bad(format!(
                    "MERGE cannot update identity column {:?} (its values are generated)",
                    data_schema.field(i).name()
                )));
            }
        }
    }
    Ok(())
}

pub(super) fn bad(message: String) -> DeltaError {
    DeltaError::InvalidArgument(message)
}

/// The joined column names: `<alias>.<column>` for both sides.
pub(super) struct Names {
    pub(super) target_alias: String,
    pub(super) source_alias: String,
    pub(super) target: SchemaRef,
    pub(super) source: SchemaRef,
}

impl Names {
    pub(super) fn qualified_schema(&self) -> Schema {
        let t = self.target.fields().iter().map(|f| {
            Field::new(
                format!("{}.{}", self.target_alias, f.name()),
                f.data_type().clone(),
                true,
            )
        });
        let s = self.source.fields().iter().map(|f| {
            Field::new(
                format!("{}.{}", self.source_alias, f.name()),
                f.data_type().clone(),
                true,
            )
        });
        Schema::new(t.chain(s).collect::<Vec<_>>())
    }

    /// Parses `sql` and resolves its columns to qualified names; unqualified names resolve
    /// where one side alone has them. `allow_source`/`allow_target`: which sides it may read.
    pub(super) fn compile(
        &self,
        sql: &str,
        allow_target: bool,
        allow_source: bool,
    ) -> DeltaResult<Expr> {
        let expr = Expr::parse(sql)?;
        let lower = |s: &str| s.to_ascii_lowercase();
        let (ta, sa) = (lower(&self.target_alias), lower(&self.source_alias));
        let has = |schema: &Schema, c: &str| {
            let top = c.split('.').next().unwrap_or(c);
            schema
                .fields()
                .iter()
                .any(|f| name_key(f.name()) == name_key(top))
        };
        let mut problem: Option<String> = None;
        let renamed = expr.rename_columns(&|c| {
            let l = lower(c);
            if l.starts_with(&format!("{ta}.")) || l.starts_with(&format!("{sa}.")) {
                return c.to_string();
            }
            match (has(&self.target, c), has(&self.source, c)) {
                (true, false) => format!("{}.{c}", self.target_alias),
                (false, true) => format!("{}.{c}", self.source_alias),
                _ => c.to_string(),
            }
        });
        let schema = self.qualified_schema();
        let resolved = renamed.resolve(&schema).map_err(|e| {
            bad(format!(
                "{e}; in MERGE, name columns {}.<column> or {}.<column>",
                self.target_alias, self.source_alias
            ))
        })?;
        for c in resolved.columns() {
            let l = lower(&c);
            if l.starts_with(&format!("{ta}.")) && !allow_target {
                problem.get_or_insert(format!("{c} (the target has no row here)"));
            }
            if l.starts_with(&format!("{sa}.")) && !allow_source {
                problem.get_or_insert(format!("{c} (the source has no row here)"));
            }
        }
        match problem {
            Some(p) => Err(bad(format!("{sql:?} cannot read {p}"))),
            None => Ok(resolved),
        }
    }
}

/// A joined batch: target rows `t` and source rows `s` side by side (`None`: nulls).
pub(super) fn joined(
    names: &Names,
    schema: &SchemaRef,
    target: Option<(&RecordBatch, &UInt32Array)>,
    source: Option<(&RecordBatch, &UInt32Array)>,
    len: usize,
) -> DeltaResult<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (side, fields) in [
        (target, names.target.fields()),
        (source, names.source.fields()),
    ] {
        for (i, f) in fields.iter().enumerate() {
            columns.push(match side {
                Some((batch, rows)) => take(batch.column(i), rows, None)?,
                None => new_null_array(f.data_type(), len),
            });
        }
    }
    let options = RecordBatchOptions::new().with_row_count(Some(len));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// Rows of the target table built from a joined batch: per target column, the clause's value
/// cast to the column's type, else the target's own (`keep`) or null.
pub(super) fn build_rows(
    data_schema: &SchemaRef,
    joined: &RecordBatch,
    clause: &Compiled,
    target_offset: Option<usize>,
) -> DeltaResult<RecordBatch> {
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let mut columns = Vec::with_capacity(data_schema.fields().len());
    for (i, field) in data_schema.fields().iter().enumerate() {
        let value = match (&clause.values[i], target_offset) {
            (Some(expr), _) => {
                let v = eval::evaluate(expr, joined).map_err(|e| match e {
                    DeltaError::InvalidArgument(m) => {
                        bad(format!("the new value of column {:?}: {m}", field.name()))
                    }
                    other => other,
                })?;
                cast_with_options(&v, field.data_type(), &strict)
                    .map_err(|e| bad(format!("the new value of column {:?}: {e}", field.name())))?
            }
            (None, Some(offset)) => joined.column(offset + i).clone(),
            (None, None) => new_null_array(field.data_type(), joined.num_rows()),
        };
        columns.push(value);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(joined.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        data_schema.clone(),
        columns,
        &options,
    )?)
}

/// New target rows of `clause` after the table's rules: inserted rows take the defaults of
/// the columns the clause leaves out, generated columns follow, and every rule is checked.
pub(super) fn finish_rows(
    rules: &TableRules,
    rows: RecordBatch,
    clause: &Compiled,
) -> DeltaResult<RecordBatch> {
    let rows = if clause.kind == ClauseKind::NotMatched {
        rules.fill_defaults(&rows, &|i| clause.values[i].is_some())?
    } else {
        rows
    };
    let rows = rules.fill_generated(&rows, &|i| {
        !rules.is_generated(i) || clause.values[i].is_some()
    })?;
    rules.check(&rows)?;
    Ok(rows)
}

/// Applies a MATCHED or NOT MATCHED BY SOURCE clause to the target rows of `sub` (joined
/// rows, the target's columns first): deletes them, or writes their updated versions.
pub(super) async fn act_on_target(
    rewriter: &mut Rewriter,
    data_schema: &SchemaRef,
    sub: &RecordBatch,
    row_ids: Option<&ArrayRef>,
    clause: &Compiled,
    rules: &TableRules,
    metrics: &mut MergeMetrics,
) -> DeltaResult<()> {
    let before = drop_row_index(sub, data_schema)?;
    if clause.delete {
        metrics.num_target_rows_deleted += sub.num_rows() as u64;
        return rewriter.write_changes(&before, "delete").await;
    }
    let after = finish_rows(
        rules,
        build_rows(data_schema, sub, clause, Some(0))?,
        clause,
    )?;
    metrics.num_target_rows_updated += sub.num_rows() as u64;
    rewriter.write_changes(&before, "update_preimage").await?;
    rewriter.write_changes(&after, "update_postimage").await?;
    rewriter.write_updated_rows(&after, row_ids).await
}

/// The `_row_id` values (read with row tracking enabled) of rows `targets` of `batch`.
pub(super) fn row_ids_of(batch: &RecordBatch, targets: Vec<u32>) -> DeltaResult<Option<ArrayRef>> {
    batch
        .column_by_name(crate::scan::ROW_ID)
        .map(|ids| {
            Ok(arrow::compute::take(
                ids,
                &UInt32Array::from(targets),
                None,
            )?)
        })
        .transpose()
}

/// For each row of `batch`, the index of the first clause of `clauses` whose condition holds
/// (`None`: no clause acts).
pub(super) fn first_clause(
    clauses: &[Compiled],
    batch: &RecordBatch,
) -> DeltaResult<Vec<Option<usize>>> {
    let mut chosen: Vec<Option<usize>> = vec![None; batch.num_rows()];
    for (k, clause) in clauses.iter().enumerate() {
        let holds = match &clause.predicate {
            Some(p) => eval::matches(p, batch)?,
            None => BooleanArray::from(vec![true; batch.num_rows()]),
        };
        for (i, c) in chosen.iter_mut().enumerate() {
            if c.is_none() && holds.value(i) {
                *c = Some(k);
            }
        }
    }
    Ok(chosen)
}

/// A literal of row `i` of `array`, for pruning by the source's key range.
pub(super) fn literal_of(array: &ArrayRef, i: usize) -> Option<Literal> {
    if array.is_null(i) {
        return None;
    }
    Some(match array.data_type() {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let a = arrow::compute::cast(array, &DataType::Int64).ok()?;
            Literal::Int(a.as_primitive::<Int64Type>().value(i))
        }
        DataType::Utf8 => Literal::String(array.as_string::<i32>().value(i).to_string()),
        DataType::Date32 => Literal::Date(
            array
                .as_primitive::<arrow::datatypes::Date32Type>()
                .value(i),
        ),
        _ => return None,
    })
}
