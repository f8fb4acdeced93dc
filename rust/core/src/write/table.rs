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
use arrow::datatypes::{DataType, Schema, SchemaRef};
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
use crate::write::data_files::{DataFileOptions, DataFileWriter, WrittenFile};
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
///
/// The steps: the mode's checks (`skipped`), the target table prepared (`prepare`), each
/// batch conformed to it (`Prepared::conform`) and written to data files
/// (`data_file_writer`) or, for replaceWhere, through the rewriter (`Replace`); then the
/// files returned uncommitted (`uncommitted`) or committed (`commit`).
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
    if let Some(written) = skipped(storage, snapshot.as_ref(), &options) {
        return written;
    }
    let mut prepared = prepare(snapshot.as_ref(), schema, &options)?;
    let mut writer = data_file_writer(storage, &prepared, &options)?;
    // replaceWhere: the rows matching the predicate are deleted (DVs or rewrites) and the new
    // rows, which must all match it, written through the same rewriter.
    let mut replace = Replace::of(snapshot.as_ref(), &prepared.table.schema, &options)?;
    for batch in batches {
        let batch = prepared.conform(batch?)?;
        if let Some(replace) = replace.as_mut() {
            replace.write(&batch).await?;
            continue;
        }
        writer
            .write(&to_physical(&batch, &prepared.physical)?)
            .await?;
    }
    let files = writer.finish().await?;
    // "Identity Columns": the high-water marks move with the commit.
    let identity_moved = match prepared.identities.updated_schema(&prepared.table.schema) {
        Some(updated) => {
            prepared.table.schema = updated;
            true
        }
        None => false,
    };
    prepared.table.merged = prepared.table.merged || (identity_moved && snapshot.is_some());
    if !options.commit {
        return uncommitted(snapshot.as_ref(), replace, files, prepared.table.merged).await;
    }
    commit(
        storage,
        snapshot.as_ref(),
        &prepared,
        files,
        replace,
        &options,
        identity_moved,
    )
    .await
}

/// The outcome of a write that does nothing to the existing table `snapshot`: an error for
/// mode `error`, `Ignored` for mode `ignore` or an application transaction already committed
/// (idempotent writes); `None` when the write goes ahead.
fn skipped(
    storage: &Storage,
    snapshot: Option<&Snapshot>,
    options: &WriteOptions,
) -> Option<DeltaResult<Written>> {
    let s = snapshot?;
    match options.mode {
        SaveMode::Error => {
            return Some(Err(DeltaError::InvalidArgument(format!(
                "a table already exists at {} (version {}); use mode=\"append\" or \
                 \"overwrite\"",
                storage.url(),
                s.version()
            ))))
        }
        SaveMode::Ignore => return Some(Ok(Written::Ignored(s.version()))),
        _ => {}
    }
    // Idempotent writes: this app's version is already committed.
    if let Some((app, version)) = &options.app_transaction {
        if s.transactions()
            .get(app)
            .is_some_and(|t| t.version >= *version)
        {
            return Some(Ok(Written::Ignored(s.version())));
        }
    }
    None
}

/// A write's target prepared: the table it produces and how incoming batches become its rows.
struct Prepared {
    /// The table's schema (with the identity columns' new high-water marks once written),
    /// partitioning, configuration, and whether the write changes its schema.
    table: TargetTable,
    /// Defaults, generated columns and constraints of the table's rows.
    rules: TableRules,
    identities: IdentityColumns,
    /// Table columns the data provides (the others are nulls, or computed when generated).
    provided: Vec<bool>,
    /// The table's columns as one struct, the type incoming rows convert to.
    target: DataType,
    /// The table's columns as written (logical names).
    file_schema: SchemaRef,
    /// The data files' columns: physical ("Writer Requirements for Column Mapping").
    physical: SchemaRef,
    /// The clustering columns (physical names).
    clustering: Vec<String>,
}

/// The table a write of data shaped `schema` produces (`snapshot`: the existing table), and
/// how its rows are built; every check on the schema, partitioning, clustering and the
/// table's rules made before anything is written.
fn prepare(
    snapshot: Option<&Snapshot>,
    schema: &Schema,
    options: &WriteOptions,
) -> DeltaResult<Prepared> {
    // "Schema Serialization Format": column names are case-insensitive; data naming one
    // column twice cannot be matched to a table's columns.
    check_unique_names(schema.fields(), "the data")
        .map_err(|e| DeltaError::InvalidArgument(e.0))?;
    let table = target_table(snapshot, schema, options)?;
    let table_schema = &table.schema;
    for p in &table.partition_columns {
        if table_schema.field_with_name(p).is_err() {
            return Err(DeltaError::InvalidArgument(format!(
                "partition column {p:?} is not a column of the table"
            )));
        }
    }
    check_writer_rules(&table.config, snapshot.is_some(), options.mode)?;
    let rules = TableRules::of(table_schema, &table.config)?;
    let identities = IdentityColumns::of(table_schema)?;
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
    let physical = physical_output_schema(table_schema, &file_schema, table.mode)?;
    let clustering = clustering_columns(snapshot, options, &table)?;
    Ok(Prepared {
        table,
        rules,
        identities,
        provided,
        target,
        file_schema,
        physical,
        clustering,
    })
}

/// "Writer Requirements for Clustered Table": the clustering columns (physical names), whose
/// statistics the files must hold: the existing table's, or the new table's requested ones
/// (a table cannot be both partitioned and clustered).
fn clustering_columns(
    snapshot: Option<&Snapshot>,
    options: &WriteOptions,
    table: &TargetTable,
) -> DeltaResult<Vec<String>> {
    let table_schema = &table.schema;
    Ok(match (snapshot, &options.clustering_columns) {
        (Some(s), _) => crate::layout::clustering::clustering_columns(s)?,
        (None, Some(columns)) => {
            if !table.partition_columns.is_empty() {
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
                let name = physical_name(table_schema, table_schema.field(i).name(), table.mode);
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
    })
}

impl Prepared {
    /// An incoming batch as the table's rows: columns by name, converted only where no value
    /// changes meaning (the reader's rules: widening, timestamp units, string encodings);
    /// missing columns are nulls, or filled (identity values, defaults, generated columns);
    /// the table's rules checked.
    fn conform(&mut self, batch: RecordBatch) -> DeltaResult<RecordBatch> {
        let provided = &self.provided;
        let rows = batch.num_rows();
        let data: ArrayRef = Arc::new(StructArray::from(batch));
        let converted = to_logical(&data, &self.target, ColumnMappingMode::None).map_err(|e| {
            DeltaError::InvalidArgument(format!("the data does not fit the table's schema: {e}"))
        })?;
        let columns = converted.as_struct().columns().to_vec();
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(self.file_schema.clone(), columns, &options)?;
        let batch = self.identities.fill(&batch, &|i| provided[i])?;
        let rules = &self.rules;
        let batch = if rules.is_empty() {
            batch
        } else {
            let filled = rules.fill_defaults(&batch, &|i| provided[i])?;
            let filled = rules.fill_generated(&filled, &|i| provided[i])?;
            rules.check(&filled)?;
            filled
        };
        crate::dml::delete_update::check_not_null(&self.table.schema, &batch)?;
        Ok(batch)
    }
}

/// The writer of the data files: partitioned (physical partition columns), with statistics
/// for the indexed and clustering columns, files rolled at the target size, encoded with the
/// options' parquet settings.
fn data_file_writer(
    storage: &Storage,
    prepared: &Prepared,
    options: &WriteOptions,
) -> DeltaResult<DataFileWriter> {
    let TargetTable {
        schema: table_schema,
        partition_columns,
        config,
        mode,
        ..
    } = &prepared.table;
    let mode = *mode;
    let mut file_options = DataFileOptions::data(
        partition_columns
            .iter()
            .map(|p| physical_name(table_schema, p, mode))
            .collect(),
        IndexedColumns::for_table(config, &prepared.physical, &prepared.clustering),
    );
    // Iceberg compatibility: partition values are written into the files too.
    file_options.materialize_partitions =
        crate::writer_features::iceberg::requested(config).is_some();
    file_options.target_file_size =
        crate::write::data_files::target_file_size(options.target_file_size, config)?;
    if let Some(settings) = &options.parquet {
        // Column settings name logical columns; the files hold physical ones.
        let settings = settings.renamed(|name| match table_schema.fields().find(name) {
            Some(_) => physical_name(table_schema, name, mode),
            None => name.to_string(),
        });
        file_options.parquet = Some(Arc::new(settings));
    }
    DataFileWriter::try_new(storage.clone(), &prepared.physical, file_options)
}

/// A replaceWhere overwrite under way: the rows of `snapshot` matching `predicate` are
/// deleted (DVs or rewrites) and the new rows, which must all match it, written through the
/// same rewriter.
struct Replace<'s> {
    snapshot: &'s Snapshot,
    predicate: crate::expr::Expr,
    /// The predicate's SQL text.
    sql: String,
    rewriter: Rewriter,
}

impl<'s> Replace<'s> {
    /// The replaceWhere of `options` on the existing table `snapshot` (`None`: a plain write).
    fn of(
        snapshot: Option<&'s Snapshot>,
        table_schema: &Schema,
        options: &WriteOptions,
    ) -> DeltaResult<Option<Replace<'s>>> {
        Ok(match (snapshot, &options.replace_where) {
            (Some(s), Some(sql)) => {
                let predicate = crate::expr::Expr::parse(sql)?.resolve(table_schema)?;
                let rewriter = Rewriter::try_new(s, options.target_file_size)?;
                Some(Replace {
                    snapshot: s,
                    predicate,
                    sql: sql.clone(),
                    rewriter,
                })
            }
            _ => None,
        })
    }

    /// Writes new rows (with `insert` change rows when the change feed is on); a row that
    /// does not match the predicate is an error.
    async fn write(&mut self, batch: &RecordBatch) -> DeltaResult<()> {
        let fits = crate::expr::eval::matches(&self.predicate, batch)?;
        if fits.false_count() > 0 {
            return Err(DeltaError::InvalidArgument(format!(
                "{} written row(s) do not match the overwrite's predicate {:?} \
                 (replaceWhere): nothing was written",
                fits.false_count(),
                self.sql
            )));
        }
        self.rewriter.write_changes(batch, "insert").await?;
        self.rewriter.write_rows(batch).await
    }
}

/// The `add` actions of files written without a commit (`commit: false`), for a transaction
/// that commits them elsewhere; they must fit an existing table's schema (`merged`: the write
/// changes it).
async fn uncommitted(
    snapshot: Option<&Snapshot>,
    replace: Option<Replace<'_>>,
    files: Vec<WrittenFile>,
    merged: bool,
) -> DeltaResult<Written> {
    if let Some(replace) = replace {
        // replaceWhere's new rows (and their `insert` change rows when the change feed is
        // on); the rows they replace are removed by [`replace_where_actions`].
        if merged {
            return Err(DeltaError::InvalidArgument(
                "files written without a commit must fit an existing table's schema".into(),
            ));
        }
        return Ok(Written::Files(
            replace.rewriter.into_actions(replace.snapshot).await?.0,
        ));
    }
    if snapshot.is_none() || merged {
        return Err(DeltaError::InvalidArgument(
            "files written without a commit must fit an existing table's schema".into(),
        ));
    }
    Ok(Written::Files(
        files.iter().map(|f| f.to_action(true)).collect(),
    ))
}

/// Commits the write: a new table's `protocol` and `metaData` (and clustering domain), a
/// changed schema's `metaData`, the rows replaced (replaceWhere) or every file removed
/// (overwrite), the new files, a conversion's adopted files.
async fn commit(
    storage: &Storage,
    snapshot: Option<&Snapshot>,
    prepared: &Prepared,
    files: Vec<WrittenFile>,
    replace: Option<Replace<'_>>,
    options: &WriteOptions,
    identity_moved: bool,
) -> DeltaResult<Written> {
    let table = &prepared.table;
    let read_version = snapshot.map(Snapshot::version);
    if !options.adopted_files.is_empty() && snapshot.is_some() {
        return Err(DeltaError::InvalidArgument(
            "only a new table adopts existing files (CONVERT TO DELTA)".into(),
        ));
    }
    let (operation, isolation) = match (snapshot, options.mode) {
        (None, _) if !options.adopted_files.is_empty() => ("CONVERT", Isolation::BlindAppend),
        (None, _) if files.is_empty() => ("CREATE TABLE", Isolation::BlindAppend),
        (None, _) => ("CREATE TABLE AS SELECT", Isolation::BlindAppend),
        (Some(_), SaveMode::Overwrite) => ("WRITE", Isolation::ReadsData),
        // Generated identity values: any concurrent write conflicts.
        (Some(_), _) if identity_moved => ("WRITE", Isolation::ReadsData),
        _ => ("WRITE", Isolation::BlindAppend),
    };
    let schema_string = arrow_to_schema_string(&table.schema)
        .map_err(crate::schema::SchemaError::into_invalid_argument)?;
    let txn = Transaction::new(storage.clone(), read_version, operation, isolation);
    let mut txn = configure(txn, snapshot, table, options);
    match snapshot {
        None => add_new_table(
            &mut txn,
            table,
            &prepared.clustering,
            options,
            schema_string,
        ),
        Some(s) if table.merged => {
            // "Change Metadata": the new schema replaces the old in the same commit.
            let m = s.metadata()?;
            txn = txn.with_parameter(
                if table.replace_schema {
                    "overwriteSchema"
                } else {
                    "mergeSchema"
                },
                json!(true),
            );
            txn.add_actions([Metadata {
                schema_string: Some(schema_string),
                partition_columns: table.partition_columns.clone(),
                configuration: table.config.clone(),
                ..m.clone()
            }
            .to_action()]);
        }
        Some(_) => {}
    }
    if let Some(replace) = replace {
        let (actions, read) =
            take_matching(replace.snapshot, &replace.predicate, replace.rewriter).await?;
        txn = txn
            .with_read_files(read)
            .with_parameter("predicate", json!(options.replace_where));
        txn.add_actions(actions);
    } else if let (Some(s), SaveMode::Overwrite) = (snapshot, options.mode) {
        txn.add_actions(remove_all(s)?);
    }
    txn.add_actions(files.iter().map(|f| f.to_action(true)));
    if !options.adopted_files.is_empty() {
        // Delta Spark's CONVERT parameters.
        txn = txn
            .with_parameter("numFiles", json!(options.adopted_files.len()))
            .with_parameter(
                "partitionedBy",
                json!(serde_json::to_string(&table.partition_columns).unwrap_or_default()),
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

/// The write's transaction set up: Delta Spark's commitInfo parameters, the application
/// transaction, the table's state (or a new table's in-commit timestamps, catalog and row
/// tracking).
fn configure(
    txn: Transaction,
    snapshot: Option<&Snapshot>,
    table: &TargetTable,
    options: &WriteOptions,
) -> Transaction {
    let mode_name = match options.mode {
        SaveMode::Overwrite => "Overwrite",
        SaveMode::Append => "Append",
        SaveMode::Error => "ErrorIfExists",
        SaveMode::Ignore => "Ignore",
    };
    let mut txn = txn
        .with_commit_info(options.commit_info.clone())
        .with_parameter("mode", json!(mode_name))
        .with_parameter(
            "partitionBy",
            json!(serde_json::to_string(&table.partition_columns).unwrap_or_default()),
        );
    if let Some((app, version)) = options.app_transaction.clone() {
        txn = txn.with_app_transaction(app, version);
    }
    txn = match snapshot {
        Some(s) => txn.for_table(s),
        None if crate::commit::transaction::in_commit_timestamps_enabled(&table.config) => {
            txn.with_in_commit_timestamps(None, false)
        }
        None => txn,
    };
    if let (None, Some(client)) = (snapshot, &options.catalog) {
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
    txn
}

/// A new table's first actions: its `protocol` (reader 1, writer 2 unless the options give
/// one), its `metaData`, and the clustering domain of a clustered table.
fn add_new_table(
    txn: &mut Transaction,
    table: &TargetTable,
    clustering: &[String],
    options: &WriteOptions,
    schema_string: String,
) {
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
            schema_string: Some(schema_string),
            partition_columns: table.partition_columns.clone(),
            created_time: Some(chrono::Utc::now().timestamp_millis()),
            configuration: table.config.clone(),
        }
        .to_action(),
    ]);
    if options.clustering_columns.is_some() {
        txn.add_actions([crate::layout::clustering::domain_action(clustering)]);
    }
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
