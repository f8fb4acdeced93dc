//! Writing record batches to a table: create it, append to it, or overwrite it.
//!
//! Spec: "Change Metadata" and "Protocol Evolution" (a new table's first commit holds its
//! `protocol` and `metaData`), "Add File and Remove File" (an overwrite removes every active
//! file), "Data Files" and "Creation of New Log Entries" ([`crate::commit::transaction`]).
//! Incoming columns are matched to the table's by name and converted to its types (e.g.
//! nanosecond timestamps to microseconds); a column the table does not have, or a type that
//! does not convert, is an error before anything is written. Tables with column mapping are
//! not written yet (refused with [`DeltaError::Unsupported`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, RecordBatch, StructArray};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use serde_json::{json, Value};

use crate::commit::transaction::{Isolation, Transaction};
use crate::dml::rewrite::Rewriter;
use crate::error::{DeltaError, DeltaResult};
use crate::model::Metadata;
use crate::scan::columns::{output_field, to_logical};
use crate::schema::{
    arrow_to_schema_string, check_unique_names, find_column, name_key, parse_schema_string,
    ColumnMappingMode,
};
use crate::snapshot::Snapshot;
use crate::stats::collect::IndexedColumns;
use crate::storage::Storage;
use crate::write::data_files::{DataFileOptions, DataFileWriter};
use crate::writer_features::column_mapping::{
    assign_ids, max_id_of, physical_name, physical_output_schema, to_physical, MAX_COLUMN_ID,
};
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

/// Field metadata a new table keeps from the data's schema: generated columns, invariants and
/// comments ("Generated Columns", "Column Invariants").
const KEPT_FIELD_METADATA: [&str; 8] = [
    crate::writer_features::constraints::GENERATION_KEY,
    crate::writer_features::constraints::DEFAULT_KEY,
    crate::writer_features::constraints::INVARIANTS_KEY,
    "comment",
    crate::writer_features::identity::START,
    crate::writer_features::identity::STEP,
    crate::writer_features::identity::HIGH_WATER_MARK,
    crate::writer_features::identity::ALLOW_EXPLICIT_INSERT,
];

/// A table schema for `schema` (the incoming data's): Delta types only; top-level fields keep
/// their nullability (a NOT NULL column stays one, as Delta Spark's CREATE TABLE keeps it).
fn table_schema_of(schema: &Schema) -> DeltaResult<SchemaRef> {
    check_unique_names(schema.fields(), "the data")
        .map_err(|e| DeltaError::InvalidArgument(e.0))?;
    let text = arrow_to_schema_string(&Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| {
                // Field metadata that declares Delta rules or documentation is kept.
                let kept: std::collections::HashMap<String, String> = f
                    .metadata()
                    .iter()
                    .filter(|(k, _)| KEPT_FIELD_METADATA.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                f.as_ref().clone().with_metadata(kept)
            })
            .collect::<Vec<Field>>(),
    ))
    .map_err(|e| DeltaError::InvalidArgument(format!("the data cannot be a Delta table: {e}")))?;
    let parsed =
        parse_schema_string(&text).map_err(crate::schema::SchemaError::into_invalid_argument)?;
    Ok(Arc::new(parsed))
}

/// The table a write produces: its schema, partitioning and configuration, and whether the
/// write changes an existing table's schema (`schema_mode` merge or overwrite).
struct TargetTable {
    schema: SchemaRef,
    partition_columns: Vec<String>,
    config: BTreeMap<String, String>,
    mode: ColumnMappingMode,
    /// The table's schema changes: the commit carries a new `metaData` ("Change Metadata").
    merged: bool,
    /// `schema_mode="overwrite"` on an existing table.
    replace_schema: bool,
}

/// The table a write of data shaped `schema` with `options` goes to (`snapshot`: the existing
/// table, if any): the schema rules of `schema_mode`, partitioning, and column mapping ids for
/// new columns ("Column Mapping").
fn target_table(
    snapshot: Option<&Snapshot>,
    schema: &Schema,
    options: &WriteOptions,
) -> DeltaResult<TargetTable> {
    let replace_schema = options.overwrite_schema && snapshot.is_some();
    if options.overwrite_schema && options.mode != SaveMode::Overwrite {
        return Err(DeltaError::InvalidArgument(
            "schema_mode=\"overwrite\" needs mode=\"overwrite\"".into(),
        ));
    }
    if options.replace_where.is_some() && (options.mode != SaveMode::Overwrite || replace_schema) {
        return Err(DeltaError::InvalidArgument(
            "a predicate (replaceWhere) needs mode=\"overwrite\" and the table's schema".into(),
        ));
    }
    let (table_schema, partition_columns, mut config) = match snapshot {
        Some(s) if replace_schema => {
            let metadata = s.metadata()?;
            let mut config = s.configuration();
            let mut fields = table_schema_of(schema)?.fields().clone();
            let mode = s.column_mapping_mode()?;
            if mode != ColumnMappingMode::None {
                // New columns, new ids: continue after the largest id ever used.
                fields = with_new_ids(&fields, s.schema()?.fields(), &mut config);
            }
            let partitions = options
                .partition_by
                .clone()
                .unwrap_or_else(|| metadata.partition_columns.clone());
            let partitions = resolve_partition_columns(&fields, &partitions)?;
            (Arc::new(Schema::new(fields)), partitions, config)
        }
        Some(s) => {
            let metadata = s.metadata()?;
            if let Some(p) = &options.partition_by {
                // Names as the table spells them (case-insensitive), in the table's order.
                let same = p.len() == metadata.partition_columns.len()
                    && p.iter()
                        .zip(&metadata.partition_columns)
                        .all(|(a, b)| name_key(a) == name_key(b));
                if !same {
                    return Err(DeltaError::InvalidArgument(format!(
                        "the table is partitioned by {:?}, not {p:?}",
                        metadata.partition_columns
                    )));
                }
            }
            (
                s.schema()?,
                metadata.partition_columns.clone(),
                s.configuration(),
            )
        }
        None => {
            let table_schema = table_schema_of(schema)?;
            let partitions = options.partition_by.clone().unwrap_or_default();
            let partitions = resolve_partition_columns(table_schema.fields(), &partitions)?;
            (table_schema, partitions, options.configuration.clone())
        }
    };
    // "Column Mapping": a new table's columns get ids and physical names.
    let mode = match snapshot {
        Some(s) => s.column_mapping_mode()?,
        None => crate::writer_features::column_mapping::mode_of_config(&config)?,
    };
    let table_schema = if snapshot.is_none() && mode != ColumnMappingMode::None {
        let fields = with_new_ids(table_schema.fields(), &Fields::empty(), &mut config);
        Arc::new(Schema::new(fields))
    } else {
        table_schema
    };
    // Upstream "Type Widening": with schema evolution on a table that enables it, a top-level
    // column the data holds in a wider type takes that type (the automatic widenings only).
    let (table_schema, widened) = match snapshot {
        Some(s) if options.merge_schema && !replace_schema && type_widening_enabled(&config) => {
            // A date becomes a timestamp without time zone only where the protocol already
            // supports those ("Timestamp without timezone"); the write does not upgrade it.
            let ntz = s
                .protocol()
                .writer_features
                .iter()
                .flatten()
                .any(|f| f == "timestampNtz");
            widen_columns(&table_schema, schema, &partition_columns, ntz)?
        }
        _ => (table_schema, false),
    };
    // Columns the table does not have: added with schema_mode="merge", an error otherwise.
    let new_fields: Vec<Field> = schema
        .fields()
        .iter()
        .filter(|f| find_column(table_schema.fields(), f.name()).is_none())
        .map(|f| f.as_ref().clone())
        .collect();
    let (table_schema, merged) = match (snapshot, new_fields.is_empty()) {
        (Some(_), _) if replace_schema => (table_schema, true),
        (_, true) | (None, _) => (table_schema, widened),
        (Some(_), false) if options.merge_schema => {
            // Existing rows read the new columns as null.
            let nullable: Vec<Field> = new_fields
                .into_iter()
                .map(|f| f.with_nullable(true))
                .collect();
            let mut added = table_schema_of(&Schema::new(nullable))?;
            if mode != ColumnMappingMode::None {
                let fields = with_new_ids(added.fields(), table_schema.fields(), &mut config);
                added = Arc::new(Schema::new(fields));
            }
            (Arc::new(appended(&table_schema, &added)), true)
        }
        (Some(_), false) => {
            return Err(DeltaError::InvalidArgument(format!(
                "the data has columns the table does not have: {} (pass schema_mode=\"merge\" \
                 to add them)",
                new_fields
                    .iter()
                    .map(|f| format!("{:?}", f.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    for p in &partition_columns {
        if table_schema.field_with_name(p).is_err() {
            return Err(DeltaError::InvalidArgument(format!(
                "partition column {p:?} is not a column of the table"
            )));
        }
    }
    Ok(TargetTable {
        schema: table_schema,
        partition_columns,
        config,
        mode,
        merged,
        replace_schema,
    })
}

/// The `metaData` action a write of data shaped `schema` with `options` commits to the table
/// of `snapshot` when it changes the table's schema or partitioning (`merge_schema`,
/// `overwrite_schema`; spec "Change Metadata"), or `None` when the table's metadata stays.
/// For writers that write files elsewhere ([`WriteOptions::commit`] false) against a snapshot
/// that already has the new metadata, and commit it with them.
pub fn evolved_metadata(
    snapshot: &Snapshot,
    schema: &Schema,
    options: &WriteOptions,
) -> DeltaResult<Option<Value>> {
    check_unique_names(schema.fields(), "the data")
        .map_err(|e| DeltaError::InvalidArgument(e.0))?;
    Ok(evolved_table_metadata(snapshot, schema, options)?.map(|m| m.to_action()))
}

/// [`evolved_metadata`] as a [`Metadata`].
pub fn evolved_table_metadata(
    snapshot: &Snapshot,
    schema: &Schema,
    options: &WriteOptions,
) -> DeltaResult<Option<Metadata>> {
    let target = target_table(Some(snapshot), schema, options)?;
    if !target.merged {
        return Ok(None);
    }
    let schema_string = arrow_to_schema_string(&target.schema)
        .map_err(crate::schema::SchemaError::into_invalid_argument)?;
    Ok(Some(Metadata {
        schema_string: Some(schema_string),
        partition_columns: target.partition_columns,
        configuration: target.config,
        ..snapshot.metadata()?.clone()
    }))
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

/// The partition columns `given` as the table spells them (names are case-insensitive:
/// `partition_by=["ID"]` is the column `id`), refusing unknown columns and any given twice.
fn resolve_partition_columns(fields: &Fields, given: &[String]) -> DeltaResult<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(given.len());
    for p in given {
        let Some(i) = find_column(fields, p) else {
            return Err(DeltaError::InvalidArgument(format!(
                "partition column {p:?} is not a column of the table"
            )));
        };
        let name = fields[i].name().clone();
        if out.contains(&name) {
            return Err(DeltaError::InvalidArgument(format!(
                "partition column {p:?} is given twice (column names are case-insensitive)"
            )));
        }
        out.push(name);
    }
    Ok(out)
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

/// Whether the table property `delta.enableTypeWidening` is true.
fn type_widening_enabled(config: &BTreeMap<String, String>) -> bool {
    config
        .get("delta.enableTypeWidening")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Whether a column of type `from` widens to `to` automatically in schema evolution
/// (upstream "Type Widening": integer to wider integer, float to double, decimal to a decimal
/// with no fewer integer or fraction digits, date to timestamp without time zone; integers
/// to decimal or double only by an explicit type change).
fn widens_automatically(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let width = crate::schema::integer_width;
    match (from, to) {
        (f, t) if width(f).is_some() && width(t).is_some() => width(f) < width(t),
        (Float32, Float64) => true,
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            (p1, s1) != (p2, s2)
                && s2 >= s1
                && i16::from(*p2) - i16::from(*s2) >= i16::from(*p1) - i16::from(*s1)
        }
        (Date32, Timestamp(_, None)) => true,
        _ => false,
    }
}

/// The table's schema with each top-level, non-partition column that `data` holds in a wider
/// type (see [`widens_automatically`]; to a timestamp without time zone only when
/// `timestamp_ntz`, the protocol supporting those) changed to it, the change appended to the
/// column's `delta.typeChanges`; whether any changed.
fn widen_columns(
    table: &SchemaRef,
    data: &Schema,
    partition_columns: &[String],
    timestamp_ntz: bool,
) -> DeltaResult<(SchemaRef, bool)> {
    let mut changed = false;
    let mut fields = Vec::with_capacity(table.fields().len());
    for field in table.fields() {
        let incoming = find_column(data.fields(), field.name()).map(|i| data.field(i).data_type());
        let partition = partition_columns
            .iter()
            .any(|p| name_key(p) == name_key(field.name()));
        match incoming {
            Some(to)
                if !partition
                    && widens_automatically(field.data_type(), to)
                    && (timestamp_ntz || !matches!(to, DataType::Timestamp(_, None))) =>
            {
                let name = |dt: &DataType| {
                    crate::schema::arrow_type_to_delta(dt)
                        .map_err(crate::schema::SchemaError::into_invalid_argument)
                };
                let mut history: Vec<Value> = field
                    .metadata()
                    .get(crate::schema::TYPE_CHANGES_KEY)
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or_default();
                let to_name = name(to)?;
                // The table's own form of the type (timestamps in microseconds).
                let to = crate::schema::delta_type_to_arrow(&to_name)
                    .map_err(crate::schema::SchemaError::into_invalid_argument)?
                    .unwrap_or_else(|| to.clone());
                history.push(json!({"toType": to_name, "fromType": name(field.data_type())?}));
                let mut metadata = field.metadata().clone();
                metadata.insert(
                    crate::schema::TYPE_CHANGES_KEY.to_string(),
                    Value::Array(history).to_string(),
                );
                fields.push(Arc::new(
                    field
                        .as_ref()
                        .clone()
                        .with_data_type(to)
                        .with_metadata(metadata),
                ));
                changed = true;
            }
            _ => fields.push(field.clone()),
        }
    }
    Ok((
        Arc::new(Schema::new_with_metadata(fields, table.metadata().clone())),
        changed,
    ))
}

/// `current`'s fields followed by `added`'s.
fn appended(current: &Schema, added: &Schema) -> Schema {
    Schema::new(
        current
            .fields()
            .iter()
            .chain(added.fields().iter())
            .cloned()
            .collect::<Fields>(),
    )
}

/// `new` fields with column mapping ids and physical names, and (under icebergCompatV2)
/// nested ids, numbered after every id `existing` and `delta.columnMapping.maxColumnId` hold
/// ("Column Mapping": ids are never reused); `config`'s `maxColumnId` moves to the last id
/// given. Column ids and nested ids share the counter.
fn with_new_ids(new: &Fields, existing: &Fields, config: &mut BTreeMap<String, String>) -> Fields {
    let mut max_id = config
        .get(MAX_COLUMN_ID)
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(0)
        .max(max_id_of(existing))
        .max(crate::writer_features::iceberg::max_nested_id(existing));
    let fields = assign_ids(new, &mut max_id);
    let schema = crate::writer_features::iceberg::with_nested_ids(
        Arc::new(Schema::new(fields)),
        config,
        &mut max_id,
    );
    config.insert(MAX_COLUMN_ID.into(), max_id.to_string());
    schema.fields().clone()
}

/// ALTER TABLE ADD COLUMNS ("Change Metadata", "Schema Serialization Format"): the schema
/// string and configuration of `snapshot`'s table with `columns` added at the end. New
/// columns must be nullable (existing rows read them as null) and their names new (Delta
/// column names are case-insensitive); under column mapping they get ids and physical names
/// past `delta.columnMapping.maxColumnId` ("Column Mapping"), and with icebergCompatV2 nested
/// ids.
pub fn add_columns(
    snapshot: &Snapshot,
    columns: &Schema,
) -> DeltaResult<(String, BTreeMap<String, String>)> {
    let current = snapshot.schema()?;
    let mut config = snapshot.configuration();
    if columns.fields().is_empty() {
        return Err(DeltaError::InvalidArgument("no columns to add".into()));
    }
    let mut seen: Vec<String> = current
        .fields()
        .iter()
        .map(|f| name_key(f.name()))
        .collect();
    for f in columns.fields() {
        let lower = name_key(f.name());
        if seen.contains(&lower) {
            return Err(DeltaError::InvalidArgument(format!(
                "the table already has a column named {:?} (column names are case-insensitive)",
                f.name()
            )));
        }
        if !f.is_nullable() {
            return Err(DeltaError::InvalidArgument(format!(
                "column {:?} must be nullable: the table's existing rows have no value for it",
                f.name()
            )));
        }
        seen.push(lower);
    }
    let mut added = table_schema_of(columns)?;
    let mode = snapshot.column_mapping_mode()?;
    if mode != ColumnMappingMode::None {
        added = Arc::new(Schema::new(with_new_ids(
            added.fields(),
            current.fields(),
            &mut config,
        )));
    }
    let text = arrow_to_schema_string(&appended(&current, &added))
        .map_err(crate::schema::SchemaError::into_invalid_argument)?;
    Ok((text, config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;

    #[tokio::test]
    async fn evolved_metadata_follows_the_schema_modes() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(0..3))],
        )
        .unwrap();
        write_batches(
            &storage,
            None,
            &schema,
            [Ok(batch)],
            WriteOptions::new(SaveMode::Error),
        )
        .await
        .unwrap();
        let snapshot = Snapshot::try_new(storage, None).await.unwrap();
        let wider = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("x", DataType::Utf8, false),
        ]);
        // The same columns: nothing changes, merge or not.
        let mut merge = WriteOptions::new(SaveMode::Append);
        merge.merge_schema = true;
        assert_eq!(evolved_metadata(&snapshot, &schema, &merge).unwrap(), None);
        // A new column without merge_schema: the write's error.
        let err = evolved_metadata(&snapshot, &wider, &WriteOptions::new(SaveMode::Append));
        assert!(matches!(err, Err(DeltaError::InvalidArgument(m)) if m.contains("\"x\"")));
        // merge_schema: the column is added, nullable, in a metaData keeping the table's id.
        let action = evolved_metadata(&snapshot, &wider, &merge)
            .unwrap()
            .unwrap();
        let schema_string = action["metaData"]["schemaString"].as_str().unwrap();
        let fields: Value = serde_json::from_str(schema_string).unwrap();
        assert_eq!(fields["fields"][1]["name"], json!("x"));
        assert_eq!(fields["fields"][1]["nullable"], json!(true));
        assert_eq!(
            action["metaData"]["id"],
            json!(snapshot.metadata().unwrap().id.clone())
        );
        // overwrite_schema: the data's schema and partitioning replace the table's.
        let mut overwrite = WriteOptions::new(SaveMode::Overwrite);
        overwrite.overwrite_schema = true;
        overwrite.partition_by = Some(vec!["X".into()]);
        let action = evolved_metadata(&snapshot, &wider, &overwrite)
            .unwrap()
            .unwrap();
        assert_eq!(action["metaData"]["partitionColumns"], json!(["x"]));
        overwrite.mode = SaveMode::Append;
        assert!(evolved_metadata(&snapshot, &wider, &overwrite).is_err());
    }
}
