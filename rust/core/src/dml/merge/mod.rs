//! MERGE: a source's rows matched against the table's, then updated, deleted or inserted by
//! clauses, as Delta Spark's `MERGE INTO`.
//!
//! `WHEN MATCHED [AND cond] THEN UPDATE SET ... | UPDATE SET * | DELETE`,
//! `WHEN NOT MATCHED [AND cond] THEN INSERT (...) | INSERT *`,
//! `WHEN NOT MATCHED BY SOURCE [AND cond] THEN UPDATE SET ... | DELETE`; within a kind the
//! first clause whose condition holds acts. Columns are named `<alias>.<column>` (unqualified
//! names are accepted where only one side has the column).
//!
//! Execution: the source is held in memory and hashed on the equality conditions of the merge
//! predicate (`target.k = source.k AND ...`; at least one is required); the rest of the
//! predicate is evaluated on each candidate pair. Target files are pruned by the predicate's
//! target-only conditions and by the range of the source's join keys (unless a NOT MATCHED BY
//! SOURCE clause needs every row). Each candidate file is read whole, its changed rows removed
//! through [`Rewriter`] (deletion vectors or copy on write) and the new rows written; unmatched
//! source rows are inserted last. A target row matched by two source rows that a MATCHED
//! clause would modify is an error (the merge is ambiguous), as in Delta Spark.
//!
//! Spec: as [`crate::dml::rewrite`]; "Add CDC File" (`insert`, `delete`, `update_preimage`,
//! `update_postimage` rows when the change feed is enabled).
//!
//! Here: the clause types, the metrics and the statement; [`clauses`] compiles the clauses
//! against the joined columns and builds the rows they produce.

mod clauses;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, UInt32Array};
use arrow::compute::{cast_with_options, concat_batches, filter_record_batch, CastOptions};
use arrow::datatypes::{DataType, Int64Type, SchemaRef};
use arrow::row::{RowConverter, SortField};
use futures::{StreamExt, TryStreamExt};
use roaring::RoaringTreemap;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::dml::delete_update::drop_row_index;
use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::expr::{eval, BinaryOp, Expr};
use crate::predicate::CmpOp;
use crate::scan::{self, FileTask, MetadataColumns, ReadSpec, Scan, ScanOptions, ROW_INDEX};
use crate::schema::name_key;
use crate::snapshot::Snapshot;

use clauses::{
    act_on_target, bad, build_rows, finish_rows, first_clause, joined, literal_of, row_ids_of,
    Compiled, Names,
};

/// Which rows a clause applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClauseKind {
    Matched,
    NotMatched,
    NotMatchedBySource,
}

/// What a clause does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClauseAction {
    Update,
    UpdateAll,
    Delete,
    Insert,
    InsertAll,
}

/// One `WHEN ... THEN ...` clause, in SQL text.
#[derive(Debug, Clone, Deserialize)]
pub struct MergeClause {
    pub kind: ClauseKind,
    pub action: ClauseAction,
    /// The clause's extra condition.
    #[serde(default)]
    pub predicate: Option<String>,
    /// Target column -> SQL expression (UPDATE SET / INSERT).
    #[serde(default)]
    pub set: Vec<(String, String)>,
}

/// A MERGE statement.
#[derive(Debug, Clone)]
pub struct MergeSpec {
    /// The source rows.
    pub source: Vec<RecordBatch>,
    pub source_schema: SchemaRef,
    /// The merge condition, SQL text.
    pub predicate: String,
    pub source_alias: String,
    pub target_alias: String,
    pub clauses: Vec<MergeClause>,
    /// Target size of the files written (`None`: the table's `delta.targetFileSize`, else
    /// the default).
    pub target_file_size: Option<u64>,
    /// Schema evolution: with `UPDATE SET *` or `INSERT *` clauses, the source's columns the
    /// table lacks are added (nullable, at the end) in the MERGE's own commit.
    pub merge_schema: bool,
}

/// What a MERGE did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeMetrics {
    /// The committed version; `None` when nothing changed.
    pub version: Option<u64>,
    pub num_source_rows: u64,
    pub num_target_rows_inserted: u64,
    pub num_target_rows_updated: u64,
    pub num_target_rows_deleted: u64,
    pub num_target_rows_copied: u64,
    pub num_target_files_scanned: u64,
    pub num_target_files_added: u64,
    pub num_target_files_removed: u64,
    pub num_deletion_vectors_added: u64,
    pub num_added_change_files: u64,
}

/// Runs `spec` on the latest version `snapshot` of its table.
pub async fn merge(
    snapshot: &Snapshot,
    spec: MergeSpec,
    commit_info: Map<String, Value>,
    app_transaction: Option<(String, i64)>,
) -> DeltaResult<MergeMetrics> {
    let config = snapshot.configuration();
    if config
        .get("delta.appendOnly")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        && spec
            .clauses
            .iter()
            .any(|c| !matches!(c.action, ClauseAction::Insert | ClauseAction::InsertAll))
    {
        return Err(bad(
            "the table is append-only (delta.appendOnly = true): MERGE may only insert (spec: \
             \"Append-only Tables\")"
                .into(),
        ));
    }
    if let Some((app, version)) = &app_transaction {
        if snapshot
            .transactions()
            .get(app)
            .is_some_and(|t| t.version >= *version)
        {
            return Ok(MergeMetrics::default());
        }
    }
    if spec.clauses.is_empty() {
        return Err(bad("MERGE needs at least one WHEN clause".into()));
    }
    if spec.source_alias.eq_ignore_ascii_case(&spec.target_alias) {
        return Err(bad("the source and target aliases must differ".into()));
    }
    // Schema evolution: the statement runs against the version with the new schema in force
    // (existing rows read the new columns as null) and commits that schema with its files.
    let evolved_snapshot;
    let mut evolved_action = None;
    let evolves = spec.merge_schema
        && spec
            .clauses
            .iter()
            .any(|c| matches!(c.action, ClauseAction::UpdateAll | ClauseAction::InsertAll));
    let evolved = if evolves {
        let mut options =
            crate::write::table::WriteOptions::new(crate::write::table::SaveMode::Append);
        options.merge_schema = true;
        crate::write::schema_evolution::evolved_table_metadata(
            snapshot,
            &spec.source_schema,
            &options,
        )?
    } else {
        None
    };
    let snapshot = match evolved {
        Some(metadata) => {
            evolved_action = Some(metadata.to_action());
            evolved_snapshot = snapshot.with_metadata(metadata);
            &evolved_snapshot
        }
        None => snapshot,
    };
    let mut rewriter = Rewriter::for_statement(snapshot, spec.target_file_size).await?;
    let schema = snapshot.schema()?;
    let data_schema = rewriter.data_schema().clone();
    let source = if spec.source.is_empty() {
        RecordBatch::new_empty(spec.source_schema.clone())
    } else {
        concat_batches(&spec.source_schema, &spec.source)?
    };
    let names = Names {
        target_alias: spec.target_alias.clone(),
        source_alias: spec.source_alias.clone(),
        target: data_schema.clone(),
        source: source.schema(),
    };
    let joined_schema = Arc::new(names.qualified_schema());
    let n_target = data_schema.fields().len();

    // The condition: equality keys for the hash join, the whole condition checked per pair.
    let condition = names.compile(&spec.predicate, true, true)?;
    let (ta, sa) = (
        format!("{}.", spec.target_alias),
        format!("{}.", spec.source_alias),
    );
    let column_index = |c: &str, prefix: &str, of: &SchemaRef| -> Option<usize> {
        let rest = c.strip_prefix(prefix)?;
        of.index_of(rest).ok()
    };
    let mut keys: Vec<(usize, usize)> = Vec::new();
    let mut target_only: Vec<Expr> = Vec::new();
    for part in condition.conjuncts() {
        if let Expr::Binary {
            op: BinaryOp::Cmp(CmpOp::Eq),
            left,
            right,
        } = part
        {
            if let (Expr::Column(l), Expr::Column(r)) = (left.as_ref(), right.as_ref()) {
                let pair = match (
                    column_index(l, &ta, &data_schema),
                    column_index(r, &sa, &names.source),
                    column_index(r, &ta, &data_schema),
                    column_index(l, &sa, &names.source),
                ) {
                    (Some(t), Some(s), _, _) | (_, _, Some(t), Some(s)) => Some((t, s)),
                    _ => None,
                };
                if let Some(p) = pair {
                    keys.push(p);
                    continue;
                }
            }
        }
        if part.columns().iter().all(|c| c.starts_with(&ta)) {
            target_only.push(part.rename_columns(&|c| c[ta.len()..].to_string()));
        }
    }
    if keys.is_empty() {
        return Err(DeltaError::Unsupported(format!(
            "MERGE needs an equality between a target and a source column in its condition \
             ({:?}), e.g. {ta}id = {sa}id",
            spec.predicate
        )));
    }

    // Clauses, compiled against the joined columns.
    let mut compiled: Vec<Compiled> = Vec::new();
    for clause in &spec.clauses {
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
                        None if rewriter.rules().is_generated(i) => {}
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
    let mut identities = crate::writer_features::identity::IdentityColumns::of(&schema)?;
    for clause in &compiled {
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
    let of_kind = |k: ClauseKind| compiled.iter().filter(|c| c.kind == k).collect::<Vec<_>>();
    let (matched_clauses, insert_clauses, by_source_clauses) = (
        of_kind(ClauseKind::Matched),
        of_kind(ClauseKind::NotMatched),
        of_kind(ClauseKind::NotMatchedBySource),
    );

    // The source, hashed on its keys (converted to the target's key types).
    let key_types: Vec<DataType> = keys
        .iter()
        .map(|(t, _)| data_schema.field(*t).data_type().clone())
        .collect();
    let converter = RowConverter::new(key_types.iter().cloned().map(SortField::new).collect())?;
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let source_keys: Vec<ArrayRef> = keys
        .iter()
        .zip(&key_types)
        .map(|((_, s), dt)| {
            cast_with_options(source.column(*s), dt, &strict).map_err(|e| {
                bad(format!(
                    "the source's join key {:?} does not convert to the target's {dt}: {e}",
                    names.source.field(*s).name()
                ))
            })
        })
        .collect::<DeltaResult<_>>()?;
    // Row keys compare bytes: -0.0 and 0.0 (and NaNs) made equal first, as SQL has them.
    let source_keys: Vec<ArrayRef> = source_keys
        .iter()
        .map(crate::predicate::normalize_floats)
        .collect();
    let source_rows = converter.convert_columns(&source_keys)?;
    let mut index: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
    for i in 0..source.num_rows() {
        if source_keys.iter().any(|k| k.is_null(i)) {
            continue; // a null key equals nothing
        }
        index
            .entry(source_rows.row(i).as_ref().into())
            .or_default()
            .push(i as u32);
    }

    // Candidate target files.
    let skipping = if by_source_clauses.is_empty() {
        let mut parts = target_only.clone();
        for ((t, _), key) in keys.iter().zip(&source_keys) {
            let present: Vec<usize> = (0..key.len()).filter(|&i| key.is_valid(i)).collect();
            if present.is_empty() {
                continue;
            }
            let sorted = arrow::compute::sort_to_indices(key, None, None)?;
            let valid: Vec<u32> = sorted
                .values()
                .iter()
                .copied()
                .filter(|&i| key.is_valid(i as usize))
                .collect();
            let (Some(lo), Some(hi)) = (valid.first(), valid.last()) else {
                continue;
            };
            if let (Some(lo), Some(hi)) =
                (literal_of(key, *lo as usize), literal_of(key, *hi as usize))
            {
                let column = Expr::Column(data_schema.field(*t).name().clone());
                parts.push(Expr::Between {
                    expr: Box::new(column),
                    low: Box::new(Expr::Literal(lo)),
                    high: Box::new(Expr::Literal(hi)),
                    negated: false,
                });
            }
        }
        parts
            .into_iter()
            .reduce(|a, b| Expr::binary(BinaryOp::And, a, b))
            .and_then(|e| e.resolve(&schema).ok())
            .and_then(|e| e.skipping_predicate())
    } else {
        None
    };
    let tasks: Vec<FileTask> = if source.num_rows() == 0 && by_source_clauses.is_empty() {
        Vec::new()
    } else {
        Scan::try_new(
            snapshot,
            ScanOptions {
                columns: Some(Vec::new()),
                predicate: skipping,
                ..Default::default()
            },
        )?
        .tasks()
        .to_vec()
    };
    let read_spec = Arc::new(ReadSpec::try_new(
        snapshot.storage().url().to_string(),
        schema.clone(),
        None,
        snapshot.metadata()?.partition_columns.clone(),
        snapshot.column_mapping_mode()?,
        MetadataColumns {
            row_index: true,
            // Rows that move keep their row IDs ("Writer Requirements for Row Tracking").
            row_tracking: rewriter.lineage_columns(),
            ..Default::default()
        },
        None,
    )?);
    let storage = snapshot.storage().clone();
    let concurrency = crate::available_threads();
    let reads = futures::stream::iter(tasks.clone())
        .map(|task| {
            let (storage, spec) = (storage.clone(), read_spec.clone());
            async move {
                let batches: Vec<RecordBatch> = scan::execute(storage, spec, vec![task.clone()], 1)
                    .try_collect()
                    .await?;
                Ok::<_, DeltaError>((task, batches))
            }
        })
        .buffered(concurrency);
    futures::pin_mut!(reads);

    let mut metrics = MergeMetrics {
        num_source_rows: source.num_rows() as u64,
        num_target_files_scanned: tasks.len() as u64,
        ..Default::default()
    };
    let rules = rewriter.rules().clone();
    let mut source_matched = RoaringTreemap::new();
    while let Some((task, batches)) = reads.try_next().await? {
        let mut gone = RoaringTreemap::new();
        let mut live = 0u64;
        let mut parts: Vec<(RecordBatch, BooleanArray)> = Vec::with_capacity(batches.len());
        for batch in &batches {
            live += batch.num_rows() as u64;
            let row_index = batch
                .column_by_name(ROW_INDEX)
                .and_then(|c| c.as_primitive_opt::<Int64Type>())
                .ok_or_else(|| DeltaError::Internal("a MERGE read without row indexes".into()))?
                .clone();
            let table_part = drop_row_index(batch, &data_schema)?;
            // Candidate pairs by key, then the whole condition.
            let target_keys: Vec<ArrayRef> = keys
                .iter()
                .map(|(t, _)| crate::predicate::normalize_floats(table_part.column(*t)))
                .collect();
            let target_rows = converter.convert_columns(&target_keys)?;
            let (mut pt, mut ps) = (Vec::new(), Vec::new());
            for i in 0..table_part.num_rows() {
                if target_keys.iter().any(|k| k.is_null(i)) {
                    continue;
                }
                if let Some(hits) = index.get(target_rows.row(i).as_ref()) {
                    for &s in hits {
                        pt.push(i as u32);
                        ps.push(s);
                    }
                }
            }
            let (pt, ps) = (UInt32Array::from(pt), UInt32Array::from(ps));
            let pairs = joined(
                &names,
                &joined_schema,
                Some((&table_part, &pt)),
                Some((&source, &ps)),
                pt.len(),
            )?;
            let real = eval::matches(&condition, &pairs)?;
            let pairs = filter_record_batch(&pairs, &real)?;
            let pt = arrow::compute::filter(&pt, &real)?;
            let ps = arrow::compute::filter(&ps, &real)?;
            let (pt, ps) = (
                pt.as_primitive::<arrow::datatypes::UInt32Type>(),
                ps.as_primitive::<arrow::datatypes::UInt32Type>(),
            );
            let mut hit_count: HashMap<u32, u32> = HashMap::new();
            for (&t, &s) in pt.values().iter().zip(ps.values()) {
                source_matched.insert(u64::from(s));
                *hit_count.entry(t).or_default() += 1;
            }
            let mut mask = vec![false; table_part.num_rows()];
            // WHEN MATCHED.
            if !matched_clauses.is_empty() && pairs.num_rows() > 0 {
                let chosen = first_clause(&matched_clauses, &pairs)?;
                for (k, clause) in matched_clauses.iter().enumerate() {
                    let rows: Vec<u32> = (0..pairs.num_rows() as u32)
                        .filter(|&r| chosen[r as usize] == Some(k))
                        .collect();
                    if rows.is_empty() {
                        continue;
                    }
                    let mut targets = Vec::with_capacity(rows.len());
                    for &r in &rows {
                        let t = pt.value(r as usize);
                        targets.push(t);
                        if hit_count.get(&t).copied().unwrap_or(0) > 1 {
                            return Err(bad(format!(
                                "MERGE is ambiguous: several source rows match the same target \
                                 row (in {}) and a MATCHED clause would modify it",
                                task.path
                            )));
                        }
                        mask[t as usize] = true;
                        gone.insert(row_index.value(t as usize) as u64);
                    }
                    let sub = arrow::compute::take_record_batch(&pairs, &UInt32Array::from(rows))?;
                    let ids = row_ids_of(batch, targets)?;
                    act_on_target(
                        &mut rewriter,
                        &data_schema,
                        &sub,
                        ids.as_ref(),
                        clause,
                        &rules,
                        &mut metrics,
                    )
                    .await?;
                }
            }
            // WHEN NOT MATCHED BY SOURCE.
            if !by_source_clauses.is_empty() {
                let unmatched: Vec<u32> = (0..table_part.num_rows() as u32)
                    .filter(|t| !hit_count.contains_key(t))
                    .collect();
                let rows = UInt32Array::from(unmatched);
                let alone = joined(
                    &names,
                    &joined_schema,
                    Some((&table_part, &rows)),
                    None,
                    rows.len(),
                )?;
                let chosen = first_clause(&by_source_clauses, &alone)?;
                for (k, clause) in by_source_clauses.iter().enumerate() {
                    let picked: Vec<u32> = (0..alone.num_rows() as u32)
                        .filter(|&r| chosen[r as usize] == Some(k))
                        .collect();
                    if picked.is_empty() {
                        continue;
                    }
                    let mut targets = Vec::with_capacity(picked.len());
                    for &r in &picked {
                        let t = rows.value(r as usize);
                        targets.push(t);
                        mask[t as usize] = true;
                        gone.insert(row_index.value(t as usize) as u64);
                    }
                    let sub =
                        arrow::compute::take_record_batch(&alone, &UInt32Array::from(picked))?;
                    let ids = row_ids_of(batch, targets)?;
                    act_on_target(
                        &mut rewriter,
                        &data_schema,
                        &sub,
                        ids.as_ref(),
                        clause,
                        &rules,
                        &mut metrics,
                    )
                    .await?;
                }
            }
            // The whole batch: copied rows keep their row tracking columns.
            parts.push((batch.clone(), BooleanArray::from(mask)));
        }
        rewriter.change_file(task, &gone, live, &parts).await?;
    }

    // WHEN NOT MATCHED: source rows no target row matched.
    if !insert_clauses.is_empty() {
        let unmatched: Vec<u32> = (0..source.num_rows() as u32)
            .filter(|&s| !source_matched.contains(u64::from(s)))
            .collect();
        let rows = UInt32Array::from(unmatched);
        let alone = joined(
            &names,
            &joined_schema,
            None,
            Some((&source, &rows)),
            rows.len(),
        )?;
        let chosen = first_clause(&insert_clauses, &alone)?;
        for (k, clause) in insert_clauses.iter().enumerate() {
            let picked: Vec<u32> = (0..alone.num_rows() as u32)
                .filter(|&r| chosen[r as usize] == Some(k))
                .collect();
            if picked.is_empty() {
                continue;
            }
            let sub = arrow::compute::take_record_batch(&alone, &UInt32Array::from(picked))?;
            let built = build_rows(&data_schema, &sub, clause, None)?;
            let built = identities.fill(&built, &|i| clause.values[i].is_some())?;
            let new_rows = finish_rows(&rules, built, clause)?;
            metrics.num_target_rows_inserted += new_rows.num_rows() as u64;
            rewriter.write_changes(&new_rows, "insert").await?;
            rewriter.write_rows(&new_rows).await?;
        }
    }
    if rewriter.is_empty() {
        return Ok(metrics);
    }
    if let Some(action) = evolved_action {
        rewriter.set_metadata(action);
    }
    if let Some(updated) = identities.updated_schema(&schema) {
        // "Identity Columns": the high-water marks move with the commit.
        let schema_string = crate::schema::arrow_to_schema_string(&updated)
            .map_err(crate::schema::SchemaError::into_invalid_argument)?;
        rewriter.set_metadata(
            crate::model::Metadata {
                schema_string: Some(schema_string),
                ..snapshot.metadata()?.clone()
            }
            .to_action(),
        );
    }
    let mut parameters = Map::new();
    parameters.insert("predicate".into(), json!(spec.predicate));
    let describe = |kind: ClauseKind| -> Value {
        Value::Array(
            spec.clauses
                .iter()
                .filter(|c| c.kind == kind)
                .map(|c| {
                    json!({"actionType": format!("{:?}", c.action).to_lowercase(),
                           "predicate": c.predicate})
                })
                .collect(),
        )
    };
    parameters.insert("matchedPredicates".into(), describe(ClauseKind::Matched));
    parameters.insert(
        "notMatchedPredicates".into(),
        describe(ClauseKind::NotMatched),
    );
    parameters.insert(
        "notMatchedBySourcePredicates".into(),
        describe(ClauseKind::NotMatchedBySource),
    );
    let mut own = Map::new();
    for (k, v) in [
        ("numSourceRows", metrics.num_source_rows),
        ("numTargetRowsInserted", metrics.num_target_rows_inserted),
        ("numTargetRowsUpdated", metrics.num_target_rows_updated),
        ("numTargetRowsDeleted", metrics.num_target_rows_deleted),
    ] {
        own.insert(k.into(), json!(v.to_string()));
    }
    let read: HashSet<String> = tasks.iter().map(|t| t.path.clone()).collect();
    let (version, counts) = rewriter
        .commit(
            snapshot,
            "MERGE",
            read,
            parameters,
            own,
            commit_info,
            app_transaction,
        )
        .await?;
    metrics.version = Some(version);
    metrics.num_target_rows_copied = counts.copied_rows;
    metrics.num_target_files_added = counts.added_files;
    metrics.num_target_files_removed = counts.removed_files;
    metrics.num_deletion_vectors_added = counts.deletion_vectors_added;
    metrics.num_added_change_files = counts.added_change_files;
    Ok(metrics)
}
