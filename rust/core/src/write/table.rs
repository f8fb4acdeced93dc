//! Writing record batches to a table: create it, append to it, or overwrite it.
//!
//! Spec: "Change Metadata" and "Protocol Evolution" (a new table's first commit holds its
//! `protocol` and `metaData`), "Add File and Remove File" (an overwrite removes every active
//! file), "Data Files" and "Creation of New Log Entries" ([`crate::commit::transaction`]).
//! Incoming columns are matched to the table's by name and converted to its types (e.g.
//! nanosecond timestamps to microseconds); a column the table does not have, or a type that
//! does not convert, is an error before anything is written. Tables with column mapping are
//! not written yet (refused with [`DeltaError::Unsupported`]).
//!
//! The schema a write gives the table (a new table's, merged, overwritten, widened) is
//! worked out in [`super::schema_evolution`].

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, RecordBatch, StructArray};
use arrow::datatypes::{DataType, Schema};
use serde_json::{json, Value};

use crate::commit::transaction::{Isolation, Transaction};
use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::model::Metadata;
use crate::scan::columns::{output_field, to_logical};
use crate::schema::{arrow_to_schema_string, check_unique_names, find_column, ColumnMappingMode};
use crate::snapshot::Snapshot;
use crate::stats::collect::IndexedColumns;
use crate::storage::Storage;
use crate::write::data_files::{DataFileOptions, DataFileWriter};
use crate::write::schema_evolution::{target_table, TargetTable};
use crate::writer_features::column_mapping::{physical_name, physical_output_schema, to_physical};
use crate::writer_features::constraints::TableRules;
use crate::writer_features::identity::IdentityColumns;

/// What to do when the table exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveMode {
    /// Fail.
    Error,
    /// Add the rows.
    Append,
    /// Replace the table's rows.
    Overwrite,
    /// Do nothing.
    Ignore,
}

impl SaveMode {
    /// Parses `error`, `append`, `overwrite` or `ignore`.
    pub fn parse(text: &str) -> DeltaResult<Self> {
        Ok(match text {
            "error" | "errorifexists" => SaveMode::Error,
            "append" => SaveMode::Append,
            "overwrite" => SaveMode::Overwrite,
            "ignore" => SaveMode::Ignore,
            other => {
                return Err(DeltaError::InvalidArgument(format!(
                    "unknown mode {other:?} (error, append, overwrite, ignore)"
                )))
            }
        })
    }
}

/// How to write.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub mode: SaveMode,
    /// Partition columns of a new table (must match an existing table's when given).
    pub partition_by: Option<Vec<String>>,
    /// Table properties of a new table.
    pub configuration: BTreeMap<String, String>,
    pub name: Option<String>,
    pub description: Option<String>,
    /// An application transaction `(appId, version)` ("Transaction Identifiers"): the write is
    /// skipped when the table already holds that version (or a later one) for the app.
    pub app_transaction: Option<(String, i64)>,
    /// Extra commitInfo fields.
    pub commit_info: serde_json::Map<String, Value>,
    /// Add the data's columns the table does not have (`schema_mode="merge"`), as nullable
    /// columns at the end of the schema, with a new `metaData` in the same commit.
    pub merge_schema: bool,
    /// The `protocol` action of a new table (`None`: reader 1, writer 2). The caller computes
    /// it from the features the table uses ("Protocol Evolution", table features).
    pub protocol: Option<Value>,
    /// Replace the table's schema (and partitioning, with `partition_by`) by the data's
    /// (`schema_mode="overwrite"`, with mode overwrite only).
    pub overwrite_schema: bool,
    /// Overwrite only the rows matching this SQL predicate (Delta's `replaceWhere`); every
    /// written row must match it.
    pub replace_where: Option<String>,
    /// Clustering columns of a new table (logical names; "Clustered Table"); the caller puts
    /// the `clustering` and `domainMetadata` features into the protocol.
    pub clustering_columns: Option<Vec<String>>,
    /// Commit the files (`true`), or only write them and return their `add` actions
    /// ([`Written::Files`]) for a transaction that commits them elsewhere.
    pub commit: bool,
    /// Target size of data files in bytes (`None`: the table's `delta.targetFileSize`, else
    /// [`crate::write::data_files::TARGET_FILE_SIZE`]).
    pub target_file_size: Option<u64>,
    /// A new catalog-managed table is created through this catalog (its version 0 ratified
    /// by it); writes to an existing table follow the snapshot's own catalog.
    pub catalog: Option<std::sync::Arc<dyn crate::log::catalog::CatalogClient>>,
    /// `add` actions of files already under a new table's root that its first commit adopts
    /// (CONVERT TO DELTA, [`crate::table_operations::convert`]); the commit's operation is `CONVERT`.
    pub adopted_files: Vec<Value>,
    /// How the data files are encoded (compression, row groups, bloom filters...); column
    /// names are the table's (logical) ones.
    pub parquet: Option<crate::write::parquet_options::ParquetSettings>,
}

impl WriteOptions {
    /// Options of a `mode` write with nothing else set: no partitioning, properties, name,
    /// application transaction or schema change; committed; the default file size.
    pub fn new(mode: SaveMode) -> Self {
        WriteOptions {
            mode,
            partition_by: None,
            configuration: BTreeMap::new(),
            name: None,
            description: None,
            app_transaction: None,
            commit_info: Default::default(),
            merge_schema: false,
            protocol: None,
            overwrite_schema: false,
            replace_where: None,
            clustering_columns: None,
            commit: true,
            target_file_size: None,
            catalog: None,
            adopted_files: Vec::new(),
            parquet: None,
        }
    }
}

/// The table a write goes to: the latest snapshot, or none when the table does not exist.
pub async fn latest_snapshot(storage: &Storage) -> DeltaResult<Option<Snapshot>> {
    match Snapshot::try_new(storage.clone(), None).await {
        Ok(s) => Ok(Some(s)),
        Err(DeltaError::TableNotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The outcome of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Committed as this version.
    Version(u64),
    /// Nothing written (`ignore` on an existing table, or an application transaction that is
    /// already committed).
    Ignored(u64),
    /// Data files written but not committed (`commit: false`): their `add` actions.
    Files(Vec<Value>),
}

/// Writes `batches` (all of `schema`) to the table in `storage` (see the module docs).
/// `snapshot` is the table's latest version as the caller loaded it ([`latest_snapshot`];
/// `None` when there is no table yet), so that the log is replayed once per write; commits
/// that land after it are checked as concurrent winners.
pub async fn write_batches<I>(
    storage: &Storage,
    snapshot: Option<Snapshot>,
    schema: &Schema,
    batches: I,
    options: WriteOptions,
) -> DeltaResult<Written>
where
    I: IntoIterator<Item = DeltaResult<RecordBatch>>,
{
    if let Some(s) = &snapshot {
        match options.mode {
            SaveMode::Error => {
                return Err(DeltaError::InvalidArgument(format!(
                    "a table already exists at {} (version {}); use mode=\"append\" or \
                     \"overwrite\"",
                    storage.url(),
                    s.version()
                )))
            }
            SaveMode::Ignore => return Ok(Written::Ignored(s.version())),
            _ => {}
        }
        // Idempotent writes: this app's version is already committed.
        if let Some((app, version)) = &options.app_transaction {
            if s.transactions()
                .get(app)
                .is_some_and(|t| t.version >= *version)
            {
                return Ok(Written::Ignored(s.version()));
            }
        }
    }
    // "Schema Serialization Format": column names are case-insensitive; data naming one
    // column twice cannot be matched to a table's columns.
    check_unique_names(schema.fields(), "the data")
        .map_err(|e| DeltaError::InvalidArgument(e.0))?;
    let TargetTable {
        schema: table_schema,
        partition_columns,
        config,
        mode,
        merged,
        replace_schema,
    } = target_table(snapshot.as_ref(), schema, &options)?;
    for p in &partition_columns {
        if table_schema.field_with_name(p).is_err() {
            return Err(DeltaError::InvalidArgument(format!(
                "partition column {p:?} is not a column of the table"
            )));
        }
    }
    check_writer_rules(&config, snapshot.is_some(), options.mode)?;
    let rules = TableRules::of(&table_schema, &config)?;
    let mut identities = IdentityColumns::of(&table_schema)?;
    // Table columns the data provides (the others are nulls, or computed when generated).
    let provided: Vec<bool> = table_schema
        .fields()
        .iter()
        .map(|f| find_column(schema.fields(), f.name()).is_some())
        .collect();
    let target = DataType::Struct(table_schema.fields().clone());
    let file_schema = Arc::new(Schema::new(
        table_schema
            .fields()
            .iter()
            .map(|f| output_field(f))
            .collect::<Vec<_>>(),
    ));
    // Data files hold physical columns ("Writer Requirements for Column Mapping").
    let physical = physical_output_schema(&table_schema, &file_schema, mode)?;
    // "Writer Requirements for Clustered Table": statistics for the clustering columns.
    let clustering: Vec<String> = match (&snapshot, &options.clustering_columns) {
        (Some(s), _) => crate::layout::clustering::clustering_columns(s)?,
        (None, Some(columns)) => {
            if !partition_columns.is_empty() {
                return Err(DeltaError::InvalidArgument(
                    "a table cannot be both partitioned and clustered (spec: \"Writer \
                     Requirements for Clustered Table\")"
                        .into(),
                ));
            }
            let mut out: Vec<String> = Vec::new();
            for c in columns {
                let Some(i) = find_column(table_schema.fields(), c) else {
                    return Err(DeltaError::InvalidArgument(format!(
                        "clustering column {c:?} is not a column of the table"
                    )));
                };
                let name = physical_name(&table_schema, table_schema.field(i).name(), mode);
                if out.contains(&name) {
                    return Err(DeltaError::InvalidArgument(format!(
                        "clustering column {c:?} is given twice"
                    )));
                }
                out.push(name);
            }
            out
        }
        (None, None) => Vec::new(),
    };
    let mut file_options = DataFileOptions::data(
        partition_columns
            .iter()
            .map(|p| physical_name(&table_schema, p, mode))
            .collect(),
        IndexedColumns::for_table(&config, &physical, &clustering),
    );
    // Iceberg compatibility: partition values are written into the files too.
    file_options.materialize_partitions =
        crate::writer_features::iceberg::requested(&config).is_some();
    file_options.target_file_size =
        crate::write::data_files::target_file_size(options.target_file_size, &config)?;
    if let Some(settings) = &options.parquet {
        // Column settings name logical columns; the files hold physical ones.
        let settings = settings.renamed(|name| match table_schema.fields().find(name) {
            Some(_) => physical_name(&table_schema, name, mode),
            None => name.to_string(),
        });
        file_options.parquet = Some(Arc::new(settings));
    }
    let mut writer = DataFileWriter::try_new(storage.clone(), &physical, file_options)?;
    // replaceWhere: the rows matching the predicate are deleted (DVs or rewrites) and the new
    // rows, which must all match it, written through the same rewriter.
    let replace = match (&snapshot, &options.replace_where) {
        (Some(s), Some(sql)) => {
            let predicate = crate::expr::Expr::parse(sql)?.resolve(&table_schema)?;
            let rewriter = Rewriter::try_new(s, options.target_file_size)?;
            Some((s, predicate, rewriter))
        }
        _ => None,
    };
    let mut replace = replace;
    let replace_text = options.replace_where.clone();
    for batch in batches {
        let batch = batch?;
        // Columns by name, converted only where no value changes meaning (the reader's rules:
        // widening, timestamp units, string encodings); missing columns are nulls.
        let rows = batch.num_rows();
        let data: ArrayRef = Arc::new(StructArray::from(batch));
        let converted = to_logical(&data, &target, ColumnMappingMode::None).map_err(|e| {
            DeltaError::InvalidArgument(format!("the data does not fit the table's schema: {e}"))
        })?;
        let columns = converted.as_struct().columns().to_vec();
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(file_schema.clone(), columns, &options)?;
        let batch = identities.fill(&batch, &|i| provided[i])?;
        let batch = if rules.is_empty() {
            batch
        } else {
            let filled = rules.fill_defaults(&batch, &|i| provided[i])?;
            let filled = rules.fill_generated(&filled, &|i| provided[i])?;
            rules.check(&filled)?;
            filled
        };
        crate::dml::delete_update::check_not_null(&table_schema, &batch)?;
        if let Some((_, predicate, rewriter)) = replace.as_mut() {
            let fits = crate::expr::eval::matches(predicate, &batch)?;
            if fits.false_count() > 0 {
                return Err(DeltaError::InvalidArgument(format!(
                    "{} written row(s) do not match the overwrite's predicate {:?} \
                     (replaceWhere): nothing was written",
                    fits.false_count(),
                    replace_text.as_deref().unwrap_or_default()
                )));
            }
            rewriter.write_changes(&batch, "insert").await?;
            rewriter.write_rows(&batch).await?;
            continue;
        }
        writer.write(&to_physical(&batch, &physical)?).await?;
    }
    let files = writer.finish().await?;
    // "Identity Columns": the high-water marks move with the commit.
    let (table_schema, identity_moved) = match identities.updated_schema(&table_schema) {
        Some(updated) => (updated, true),
        None => (table_schema, false),
    };
    let merged = merged || (identity_moved && snapshot.is_some());
    if !options.commit {
        if let Some((s, _, rewriter)) = replace {
            // replaceWhere's new rows (and their `insert` change rows when the change feed is
            // on); the rows they replace are removed by [`replace_where_actions`].
            if merged {
                return Err(DeltaError::InvalidArgument(
                    "files written without a commit must fit an existing table's schema".into(),
                ));
            }
            return Ok(Written::Files(rewriter.into_actions(s).await?.0));
        }
        if snapshot.is_none() || merged {
            return Err(DeltaError::InvalidArgument(
                "files written without a commit must fit an existing table's schema".into(),
            ));
        }
        return Ok(Written::Files(
            files.iter().map(|f| f.to_action(true)).collect(),
        ));
    }

    let read_version = snapshot.as_ref().map(Snapshot::version);
    if !options.adopted_files.is_empty() && snapshot.is_some() {
        return Err(DeltaError::InvalidArgument(
            "only a new table adopts existing files (CONVERT TO DELTA)".into(),
        ));
    }
    let (operation, isolation) = match (&snapshot, options.mode) {
        (None, _) if !options.adopted_files.is_empty() => ("CONVERT", Isolation::BlindAppend),
        (None, _) if files.is_empty() => ("CREATE TABLE", Isolation::BlindAppend),
        (None, _) => ("CREATE TABLE AS SELECT", Isolation::BlindAppend),
        (Some(_), SaveMode::Overwrite) => ("WRITE", Isolation::ReadsData),
        // Generated identity values: any concurrent write conflicts.
        (Some(_), _) if identity_moved => ("WRITE", Isolation::ReadsData),
        _ => ("WRITE", Isolation::BlindAppend),
    };
    let mode_name = match options.mode {
        SaveMode::Overwrite => "Overwrite",
        SaveMode::Append => "Append",
        SaveMode::Error => "ErrorIfExists",
        SaveMode::Ignore => "Ignore",
    };
    let schema_string = arrow_to_schema_string(&table_schema)
        .map_err(crate::schema::SchemaError::into_invalid_argument)?;
    let mut txn = Transaction::new(storage.clone(), read_version, operation, isolation)
        .with_commit_info(options.commit_info.clone())
        .with_parameter("mode", json!(mode_name))
        .with_parameter(
            "partitionBy",
            json!(serde_json::to_string(&partition_columns).unwrap_or_default()),
        );
    if let Some((app, version)) = options.app_transaction.clone() {
        txn = txn.with_app_transaction(app, version);
    }
    txn = match &snapshot {
        Some(s) => txn.for_table(s),
        None if crate::commit::transaction::in_commit_timestamps_enabled(&config) => {
            txn.with_in_commit_timestamps(None, false)
        }
        None => txn,
    };
    if let (None, Some(client)) = (&snapshot, &options.catalog) {
        txn = txn.with_catalog(client.clone());
    }
    // A new table that supports row tracking gets fresh row IDs from its first commit.
    let tracked = options
        .protocol
        .as_ref()
        .and_then(|p| p.get("writerFeatures"))
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|n| n.as_str() == Some("rowTracking")));
    if snapshot.is_none() && tracked {
        txn = txn.with_row_tracking(-1);
    }
    if snapshot.is_none() {
        txn.add_actions([
            json!({"protocol": options.protocol.clone().unwrap_or_else(
                || json!({"minReaderVersion": 1, "minWriterVersion": 2}),
            )}),
            Metadata {
                id: Some(uuid::Uuid::new_v4().to_string()),
                name: options.name.clone(),
                description: options.description.clone(),
                format_provider: Some("parquet".into()),
                format_options: BTreeMap::new(),
                schema_string: Some(schema_string.clone()),
                partition_columns: partition_columns.clone(),
                created_time: Some(chrono::Utc::now().timestamp_millis()),
                configuration: config.clone(),
            }
            .to_action(),
        ]);
        if options.clustering_columns.is_some() {
            txn.add_actions([crate::layout::clustering::domain_action(&clustering)]);
        }
    }
    if let (Some(s), true) = (&snapshot, merged) {
        // "Change Metadata": the new schema replaces the old in the same commit.
        let m = s.metadata()?;
        txn = txn.with_parameter(
            if replace_schema {
                "overwriteSchema"
            } else {
                "mergeSchema"
            },
            json!(true),
        );
        txn.add_actions([Metadata {
            schema_string: Some(schema_string.clone()),
            partition_columns: partition_columns.clone(),
            configuration: config.clone(),
            ..m.clone()
        }
        .to_action()]);
    }
    if let Some((s, predicate, rewriter)) = replace {
        let (actions, read) = take_matching(s, &predicate, rewriter).await?;
        txn = txn
            .with_read_files(read)
            .with_parameter("predicate", json!(options.replace_where));
        txn.add_actions(actions);
    } else if let (Some(s), SaveMode::Overwrite) = (&snapshot, options.mode) {
        txn.add_actions(remove_all(s)?);
    }
    txn.add_actions(files.iter().map(|f| f.to_action(true)));
    if !options.adopted_files.is_empty() {
        // Delta Spark's CONVERT parameters.
        txn = txn
            .with_parameter("numFiles", json!(options.adopted_files.len()))
            .with_parameter(
                "partitionedBy",
                json!(serde_json::to_string(&partition_columns).unwrap_or_default()),
            )
            .with_parameter(
                "collectStats",
                json!(options
                    .adopted_files
                    .iter()
                    .all(|a| a["add"].get("stats").is_some())),
            );
        txn.add_actions(options.adopted_files.iter().cloned());
    }
    Ok(Written::Version(txn.commit().await?))
}

/// The part of a `replaceWhere` overwrite that removes the rows of `snapshot` matching the
/// SQL predicate `sql` (deletion vectors or rewritten files, with `delete` change rows when
/// the change feed is on): its actions and the files it read, for a transaction that also
/// commits the new rows written elsewhere ([`WriteOptions::commit`] false with
/// [`WriteOptions::replace_where`]).
pub async fn replace_where_actions(
    snapshot: &Snapshot,
    sql: &str,
    target_file_size: Option<u64>,
) -> DeltaResult<(Vec<Value>, Vec<String>)> {
    let predicate = crate::expr::Expr::parse(sql)?.resolve(snapshot.schema()?.as_ref())?;
    let rewriter = Rewriter::try_new(snapshot, target_file_size)?;
    let (actions, read) = take_matching(snapshot, &predicate, rewriter).await?;
    Ok((actions, read.into_iter().collect()))
}

/// replaceWhere's removal: the rows of `snapshot` matching `predicate` taken away through
/// `rewriter` (which may already hold the overwrite's new rows); every action of the
/// rewriter and the files the predicate read.
async fn take_matching(
    snapshot: &Snapshot,
    predicate: &crate::expr::Expr,
    mut rewriter: Rewriter,
) -> DeltaResult<(Vec<Value>, std::collections::HashSet<String>)> {
    let applied = crate::dml::delete_update::apply_change(
        snapshot,
        Some(predicate),
        &crate::dml::delete_update::Change::Delete,
        &[],
        &mut rewriter,
    )
    .await?;
    let (actions, _) = rewriter.into_actions(snapshot).await?;
    Ok((actions, applied.read))
}

/// "Append-only Tables": no overwrite of an existing table when `delta.appendOnly` is true.
/// (Row rules, CHECK constraints, invariants and generated columns, are
/// [`crate::writer_features::constraints`].)
fn check_writer_rules(
    config: &BTreeMap<String, String>,
    exists: bool,
    mode: SaveMode,
) -> DeltaResult<()> {
    let append_only = config
        .get("delta.appendOnly")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if exists && append_only && mode == SaveMode::Overwrite {
        return Err(DeltaError::InvalidArgument(
            "the table is append-only (delta.appendOnly = true): it cannot be overwritten \
             (spec: \"Append-only Tables\")"
                .into(),
        ));
    }
    Ok(())
}

/// `remove` actions for every active file of `snapshot`.
fn remove_all(snapshot: &Snapshot) -> DeltaResult<Vec<Value>> {
    let now = chrono::Utc::now().timestamp_millis();
    let mut out = Vec::with_capacity(snapshot.num_files());
    for files in snapshot.files() {
        for i in 0..files.len() {
            out.push(crate::dml::delete_update::remove_action(
                &files.adds,
                i,
                now,
            )?);
        }
    }
    Ok(out)
}
