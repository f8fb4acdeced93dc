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
//! Here: the clause types, the metrics and the statement, run step by step: `join` (the
//! match: the condition split into join keys, the source hashed on them, the candidate target
//! files and each batch's matching pairs), `clauses` (the clauses compiled against the joined
//! columns, the rows they produce), `write` (each candidate file's rows acted on, the
//! unmatched source rows inserted) and `commit` (the new metadata, the operation's
//! parameters and metrics, the commit).

mod clauses;
mod commit;
mod join;
mod write;

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::dml::rewrite::Rewriter;
use crate::error::DeltaResult;
use crate::model::Metadata;
use crate::snapshot::Snapshot;
use crate::writer_features::constraints::TableRules;
use crate::writer_features::identity::IdentityColumns;

use clauses::{bad, Clauses, Names};

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
    /// How the rewritten and inserted files are encoded (`None`: deltalog's settings).
    pub parquet: Option<std::sync::Arc<crate::write::parquet_options::ParquetSettings>>,
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
    check_append_only(snapshot, &spec)?;
    if already_applied(snapshot, &app_transaction) {
        return Ok(MergeMetrics::default());
    }
    check_statement(&spec)?;
    // Schema evolution: the statement runs against the version with the new schema in force
    // (existing rows read the new columns as null) and commits that schema with its files.
    let evolved_snapshot;
    let mut evolved_action = None;
    let snapshot = match evolved_metadata(snapshot, &spec)? {
        Some(metadata) => {
            evolved_action = Some(metadata.to_action());
            evolved_snapshot = snapshot.with_metadata(metadata);
            &evolved_snapshot
        }
        None => snapshot,
    };
    let mut rewriter = Rewriter::for_statement(snapshot, spec.target_file_size).await?;
    rewriter.set_parquet(spec.parquet.clone());
    let schema = snapshot.schema()?;
    let source = if spec.source.is_empty() {
        RecordBatch::new_empty(spec.source_schema.clone())
    } else {
        concat_batches(&spec.source_schema, &spec.source)?
    };
    let names = Names {
        target_alias: spec.target_alias.clone(),
        source_alias: spec.source_alias.clone(),
        target: rewriter.data_schema().clone(),
        source: source.schema(),
    };
    let joined_schema = Arc::new(names.qualified_schema());

    // The condition: equality keys for the hash join, the whole condition checked per pair.
    let condition = join::Condition::split(&names, &spec.predicate)?;
    // Clauses, compiled against the joined columns.
    let compiled = clauses::compile(&spec.clauses, &names, rewriter.rules())?;
    let mut identities = IdentityColumns::of(&schema)?;
    clauses::check_identity_updates(&compiled, &identities, &names.target)?;
    let clauses = Clauses::by_kind(compiled);
    // The source, hashed on its keys (converted to the target's key types).
    let index = join::SourceIndex::build(&condition.keys, &names, &source)?;
    let plan = Plan {
        names,
        joined_schema,
        source,
        condition,
        clauses,
        index,
        rules: rewriter.rules().clone(),
    };

    // Candidate target files, read a few at a time.
    let tasks = join::candidate_tasks(snapshot, &schema, &plan)?;
    let reads = join::read_files(snapshot, &schema, rewriter.lineage_columns(), &tasks)?;
    let mut metrics = MergeMetrics {
        num_source_rows: plan.source.num_rows() as u64,
        num_target_files_scanned: tasks.len() as u64,
        ..Default::default()
    };
    let mut writer = write::Writer {
        plan: &plan,
        rewriter: &mut rewriter,
        metrics: &mut metrics,
    };
    let source_matched = writer.rewrite_files(reads).await?;
    // WHEN NOT MATCHED: source rows no target row matched.
    writer
        .insert_unmatched(&mut identities, &source_matched)
        .await?;
    if rewriter.is_empty() {
        return Ok(metrics);
    }
    commit::set_metadata(
        snapshot,
        &schema,
        &mut rewriter,
        evolved_action,
        &identities,
    )?;
    let read: HashSet<String> = tasks.iter().map(|t| t.path.clone()).collect();
    commit::commit(
        snapshot,
        &spec,
        rewriter,
        metrics,
        read,
        commit_info,
        app_transaction,
    )
    .await
}

/// The statement compiled: what the match, clause and write steps read.
struct Plan {
    /// The joined column names; `names.target` is the table's data schema.
    names: Names,
    /// The joined batches' schema: the target's columns, then the source's, qualified.
    joined_schema: SchemaRef,
    /// The source's rows, in one batch.
    source: RecordBatch,
    condition: join::Condition,
    clauses: Clauses,
    index: join::SourceIndex,
    /// The table's rules (defaults, generated columns, constraints) for new rows.
    rules: TableRules,
}

impl Plan {
    /// The table's data columns (table order), as the rewriter writes them.
    fn data_schema(&self) -> &SchemaRef {
        &self.names.target
    }
}

/// An append-only table only takes inserts ("Append-only Tables").
fn check_append_only(snapshot: &Snapshot, spec: &MergeSpec) -> DeltaResult<()> {
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
    Ok(())
}

/// Whether the application transaction `app_transaction` already committed this version.
fn already_applied(snapshot: &Snapshot, app_transaction: &Option<(String, i64)>) -> bool {
    if let Some((app, version)) = app_transaction {
        if snapshot
            .transactions()
            .get(app)
            .is_some_and(|t| t.version >= *version)
        {
            return true;
        }
    }
    false
}

/// At least one clause, and two different aliases.
fn check_statement(spec: &MergeSpec) -> DeltaResult<()> {
    if spec.clauses.is_empty() {
        return Err(bad("MERGE needs at least one WHEN clause".into()));
    }
    if spec.source_alias.eq_ignore_ascii_case(&spec.target_alias) {
        return Err(bad("the source and target aliases must differ".into()));
    }
    Ok(())
}

/// The table's metadata with the source's new columns, when the statement evolves the schema
/// (`merge_schema` with an `UPDATE SET *` or `INSERT *` clause) and the source has any.
fn evolved_metadata(snapshot: &Snapshot, spec: &MergeSpec) -> DeltaResult<Option<Metadata>> {
    let evolves = spec.merge_schema
        && spec
            .clauses
            .iter()
            .any(|c| matches!(c.action, ClauseAction::UpdateAll | ClauseAction::InsertAll));
    if !evolves {
        return Ok(None);
    }
    let mut options = crate::write::table::WriteOptions::new(crate::write::table::SaveMode::Append);
    options.merge_schema = true;
    crate::write::schema_evolution::evolved_table_metadata(snapshot, &spec.source_schema, &options)
}
