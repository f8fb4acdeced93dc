//! The schema and metadata a write gives a table: a new table's schema from the data,
//! `schema_mode` merge (columns added, types widened where the table enables type widening)
//! and overwrite, partition columns, and column mapping ids and physical names for new
//! columns; also ALTER TABLE ADD COLUMNS.
//!
//! Spec: "Change Metadata", "Schema Serialization Format", "Column Mapping" / "Writer
//! Requirements for Column Mapping" (new columns get ids above `delta.columnMapping.maxColumnId`),
//! upstream "Type Widening" (automatic widening on write where the table enables it).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use serde_json::{json, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::model::Metadata;
use crate::schema::{
    arrow_to_schema_string, check_unique_names, find_column, name_key, parse_schema_string,
    ColumnMappingMode,
};
use crate::snapshot::Snapshot;
use crate::write::table::{SaveMode, WriteOptions};
use crate::writer_features::column_mapping::{assign_ids, max_id_of, MAX_COLUMN_ID};

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
pub(crate) struct TargetTable {
    pub(crate) schema: SchemaRef,
    pub(crate) partition_columns: Vec<String>,
    pub(crate) config: BTreeMap<String, String>,
    pub(crate) mode: ColumnMappingMode,
    /// The table's schema changes: the commit carries a new `metaData` ("Change Metadata").
    pub(crate) merged: bool,
    /// `schema_mode="overwrite"` on an existing table.
    pub(crate) replace_schema: bool,
}

/// The table a write of data shaped `schema` with `options` goes to (`snapshot`: the existing
/// table, if any): the schema rules of `schema_mode`, partitioning, and column mapping ids for
/// new columns ("Column Mapping").
pub(crate) fn target_table(
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
    use crate::storage::Storage;
    use crate::write::table::write_batches;
    use arrow::array::Int64Array;
    use arrow::array::RecordBatch;

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
