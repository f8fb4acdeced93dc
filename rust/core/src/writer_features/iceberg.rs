//! The writer requirements of Iceberg compatibility, checked on every commit.
//!
//! Spec: "Iceberg Compatibility V1" / "Writer Requirements for IcebergCompatV1" and "Iceberg
//! Compatibility V2" / "Writer Requirements for IcebergCompatV2". A version is *active* when
//! its feature is in the protocol's `writerFeatures` and `delta.enableIcebergCompatV1/V2` is
//! true. While one is active, a commit must leave the table:
//! - with column mapping in `name` or `id` mode;
//! - V1: without the `deletionVectors` feature; V2: without deletion vectors active, and
//!   without V1 active;
//! - V1: without array, map or void columns; V2: with only the allow-listed types (no void),
//!   and with `parquet.field.nested.ids` for every array element and map key and value
//!   ([`assign_nested_ids`] gives them to new columns; [`crate::writer_features::column_mapping`] writes them as
//!   parquet field ids);
//! - with the same partition column names as before (no partition evolution);
//! - with `numRecords` in the statistics of every new `add`.
//!
//! Data files carry the partition values too ([`materializes_partitions`]). Enabling a
//! version on a table that already has data files is refused: those files would need
//! rewriting (their partition values and nested ids are not in them).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema};
use serde_json::{Map, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::model::{json_map, json_strings};
use crate::schema::{parse_schema_string, ColumnMappingMode, PHYSICAL_NAME_KEY};
use crate::snapshot::Snapshot;

/// Table property enabling icebergCompatV1.
pub const ENABLE_V1: &str = "delta.enableIcebergCompatV1";
/// Table property enabling icebergCompatV2.
pub const ENABLE_V2: &str = "delta.enableIcebergCompatV2";
/// Column metadata key of the ids of nested array elements and map keys and values.
pub const NESTED_IDS_KEY: &str = "parquet.field.nested.ids";

/// An Iceberg compatibility version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compat {
    V1,
    V2,
}

impl Compat {
    fn feature(self) -> &'static str {
        match self {
            Compat::V1 => "icebergCompatV1",
            Compat::V2 => "icebergCompatV2",
        }
    }

    fn property(self) -> &'static str {
        match self {
            Compat::V1 => ENABLE_V1,
            Compat::V2 => ENABLE_V2,
        }
    }

    fn rule(self) -> &'static str {
        match self {
            Compat::V1 => "Writer Requirements for IcebergCompatV1",
            Compat::V2 => "Writer Requirements for IcebergCompatV2",
        }
    }
}

fn is_true(config: &BTreeMap<String, String>, key: &str) -> bool {
    config
        .get(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The state of a table a commit is checked against: its writer features, properties,
/// schema and partition columns.
#[derive(Debug, Clone, Default)]
pub struct TableState {
    pub writer_features: Vec<String>,
    pub configuration: BTreeMap<String, String>,
    pub schema_string: Option<String>,
    pub partition_columns: Vec<String>,
    /// Whether the table has active files.
    pub has_files: bool,
}

impl TableState {
    /// The state of `snapshot`.
    pub fn of(snapshot: &Snapshot) -> DeltaResult<Self> {
        let metadata = snapshot.metadata()?;
        Ok(TableState {
            writer_features: snapshot
                .protocol()
                .writer_features
                .clone()
                .unwrap_or_default(),
            configuration: metadata.configuration.clone(),
            schema_string: metadata.schema_string.clone(),
            partition_columns: metadata.partition_columns.clone(),
            has_files: snapshot.num_files() > 0,
        })
    }

    fn has_feature(&self, name: &str) -> bool {
        self.writer_features.iter().any(|f| f == name)
    }

    /// The active compatibility versions.
    fn active(&self) -> Vec<Compat> {
        [Compat::V1, Compat::V2]
            .into_iter()
            .filter(|c| self.has_feature(c.feature()) && is_true(&self.configuration, c.property()))
            .collect()
    }

    /// The state after `actions` (the last `protocol` and `metaData` of them win).
    fn after(&self, actions: &[Value]) -> Self {
        let mut next = self.clone();
        for action in actions {
            if let Some(p) = action.get("protocol") {
                next.writer_features = json_strings(p.get("writerFeatures")).unwrap_or_default();
            }
            if let Some(m) = action.get("metaData") {
                next.configuration = json_map(m.get("configuration"));
                next.schema_string = m
                    .get("schemaString")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                next.partition_columns =
                    json_strings(m.get("partitionColumns")).unwrap_or_default();
            }
        }
        next
    }
}

/// Whether new data files of `snapshot` carry partition values (an active version).
pub fn materializes_partitions(snapshot: &Snapshot) -> DeltaResult<bool> {
    Ok(!TableState::of(snapshot)?.active().is_empty())
}

/// Whether a table with `configuration` (a new one, before its protocol exists) asks for an
/// Iceberg compatibility version.
pub fn requested(configuration: &BTreeMap<String, String>) -> Option<Compat> {
    if is_true(configuration, ENABLE_V2) {
        Some(Compat::V2)
    } else if is_true(configuration, ENABLE_V1) {
        Some(Compat::V1)
    } else {
        None
    }
}

fn refuse(compat: Compat, message: String) -> DeltaError {
    DeltaError::InvalidArgument(format!(
        "{} is enabled: {message} (spec: \"{}\")",
        compat.feature(),
        compat.rule()
    ))
}

/// Checks the commit of `actions` to the table in state `before` (`None`: the commit creates
/// the table) against the module's rules.
pub fn check_commit(before: Option<&TableState>, actions: &[Value]) -> DeltaResult<()> {
    let empty = TableState::default();
    let after = before.unwrap_or(&empty).after(actions);
    let active = after.active();
    let Some(&compat) = active.last() else {
        return Ok(());
    };
    if active.len() > 1 {
        return Err(refuse(
            Compat::V2,
            "icebergCompatV1 must not be active at the same time".into(),
        ));
    }
    let config = &after.configuration;
    let mode = ColumnMappingMode::from_property(
        config
            .get(crate::schema::COLUMN_MAPPING_MODE_KEY)
            .map(String::as_str),
    )
    .map_err(|e| DeltaError::InvalidArgument(e.0))?;
    if mode == ColumnMappingMode::None {
        return Err(refuse(
            compat,
            "column mapping must be enabled (delta.columnMapping.mode name or id)".into(),
        ));
    }
    match compat {
        Compat::V1 if after.has_feature("deletionVectors") => {
            return Err(refuse(
                compat,
                "the protocol must not support deletionVectors".into(),
            ))
        }
        Compat::V2
            if after.has_feature("deletionVectors")
                && is_true(config, "delta.enableDeletionVectors") =>
        {
            return Err(refuse(
                compat,
                "deletion vectors must not be enabled (delta.enableDeletionVectors)".into(),
            ))
        }
        _ => {}
    }
    if let Some(text) = &after.schema_string {
        // Void columns are dropped when the schema is parsed: found in the JSON.
        if let Some(column) = void_column(text) {
            return Err(refuse(
                compat,
                format!(
                    "column {column:?} has type void, which Iceberg compatibility does not allow"
                ),
            ));
        }
        let schema = parse_schema_string(text).map_err(|e| {
            DeltaError::corrupt("_delta_log", None, format!("the schemaString: {}", e.0))
        })?;
        check_types(compat, schema.fields())?;
    }
    if let Some(before) = before {
        let was_active = before.active().contains(&compat);
        if !was_active && before.has_files {
            return Err(refuse(
                compat,
                "it cannot be enabled on a table that already has data files (their partition \
                 values and nested field ids are not in them); enable it when creating the \
                 table"
                    .into(),
            ));
        }
        if was_active
            && !before.partition_columns.is_empty()
            && before.partition_columns != after.partition_columns
        {
            return Err(refuse(
                compat,
                format!(
                    "the partition columns cannot change from {:?} to {:?}",
                    before.partition_columns, after.partition_columns
                ),
            ));
        }
    }
    for action in actions {
        let Some(add) = action.get("add") else {
            continue;
        };
        let has_count = add
            .get("stats")
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .is_some_and(|s| s.get("numRecords").is_some_and(Value::is_i64));
        if !has_count {
            return Err(refuse(
                compat,
                format!(
                    "the add action of {} has no numRecords statistic",
                    add.get("path").and_then(Value::as_str).unwrap_or("?")
                ),
            ));
        }
    }
    Ok(())
}

/// The name of a field of type `void` anywhere in the schema string.
fn void_column(schema_string: &str) -> Option<String> {
    fn walk(v: &Value) -> Option<String> {
        match v {
            Value::Object(o) => {
                if let (Some(Value::String(name)), Some(t)) = (o.get("name"), o.get("type")) {
                    if t.as_str() == Some("void") {
                        return Some(name.clone());
                    }
                }
                o.values().find_map(walk)
            }
            Value::Array(a) => a.iter().find_map(walk),
            _ => None,
        }
    }
    walk(&serde_json::from_str::<Value>(schema_string).ok()?)
}

/// The types of `fields` (and their nested fields) against the version's allow-list.
fn check_types(compat: Compat, fields: &Fields) -> DeltaResult<()> {
    for field in fields {
        check_type(compat, field.data_type(), field.name())?;
        if compat == Compat::V2 {
            let wanted = nested_keys(field);
            if !wanted.is_empty() {
                let ids = nested_ids_of(field);
                if let Some(missing) = wanted.iter().find(|k| !ids.contains_key(*k)) {
                    return Err(refuse(
                        compat,
                        format!(
                            "column {:?} has no {NESTED_IDS_KEY} entry {missing:?}",
                            field.name()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn check_type(compat: Compat, dt: &DataType, column: &str) -> DeltaResult<()> {
    let refused = |what: &str| {
        refuse(
            compat,
            format!(
                "column {column:?} has type {what}, which Iceberg compatibility does not allow"
            ),
        )
    };
    match dt {
        DataType::Null => Err(refused("void")),
        DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _)
            if compat == Compat::V1 =>
        {
            Err(refused(if matches!(dt, DataType::Map(_, _)) {
                "map"
            } else {
                "array"
            }))
        }
        DataType::List(item) | DataType::LargeList(item) => {
            check_type(compat, item.data_type(), column)
        }
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) => kv
                .iter()
                .try_for_each(|f| check_type(compat, f.data_type(), column)),
            _ => Ok(()),
        },
        DataType::Struct(children) => check_types(compat, children),
        _ => Ok(()),
    }
}

/// The name nested ids of `field` are prefixed with: its physical name under column mapping.
fn prefix_of(field: &Field) -> String {
    field
        .metadata()
        .get(PHYSICAL_NAME_KEY)
        .cloned()
        .unwrap_or_else(|| field.name().clone())
}

/// The `parquet.field.nested.ids` keys `field` needs: one per array element and map key and
/// value between it and the next struct ("Writer Requirements for IcebergCompatV2").
pub fn nested_keys(field: &Field) -> Vec<String> {
    fn walk(dt: &DataType, path: &str, out: &mut Vec<String>) {
        match dt {
            DataType::List(item) | DataType::LargeList(item) => {
                let p = format!("{path}.element");
                out.push(p.clone());
                walk(item.data_type(), &p, out);
            }
            DataType::Map(entries, _) => {
                if let DataType::Struct(kv) = entries.data_type() {
                    for (child, suffix) in kv.iter().zip(["key", "value"]) {
                        let p = format!("{path}.{suffix}");
                        out.push(p.clone());
                        walk(child.data_type(), &p, out);
                    }
                }
            }
            // A struct's fields hold their own ids.
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(field.data_type(), &prefix_of(field), &mut out);
    out
}

/// The nested ids recorded on `field`.
pub fn nested_ids_of(field: &Field) -> BTreeMap<String, i64> {
    field
        .metadata()
        .get(NESTED_IDS_KEY)
        .and_then(|text| serde_json::from_str::<Map<String, Value>>(text).ok())
        .map(|m| {
            m.into_iter()
                .filter_map(|(k, v)| v.as_i64().map(|v| (k, v)))
                .collect()
        })
        .unwrap_or_default()
}

/// `fields` with `parquet.field.nested.ids` on every field that needs ids it does not have
/// (nested struct fields included), ids counting up from `*max_id + 1` (they share the column
/// mapping ids' counter, so both stay unique).
pub fn assign_nested_ids(fields: &Fields, max_id: &mut i64) -> Fields {
    fields
        .iter()
        .map(|f| {
            let mut field = f.as_ref().clone();
            let keys = nested_keys(&field);
            if !keys.is_empty() {
                let mut ids = nested_ids_of(&field);
                for k in keys {
                    ids.entry(k).or_insert_with(|| {
                        *max_id += 1;
                        *max_id
                    });
                }
                let mut meta = field.metadata().clone();
                let map: Map<String, Value> =
                    ids.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
                meta.insert(NESTED_IDS_KEY.to_string(), Value::Object(map).to_string());
                field = field.with_metadata(meta);
            }
            let data_type = assign_in_type(field.data_type(), max_id);
            Arc::new(field.with_data_type(data_type))
        })
        .collect()
}

fn assign_in_type(dt: &DataType, max_id: &mut i64) -> DataType {
    crate::writer_features::column_mapping::map_nested_structs(dt, &mut |children| {
        assign_nested_ids(children, max_id)
    })
}

/// The largest nested id of `fields` (0 when none).
pub fn max_nested_id(fields: &Fields) -> i64 {
    crate::writer_features::column_mapping::max_over_fields(fields, &|f| {
        nested_ids_of(f).values().copied().max().unwrap_or(0)
    })
}

/// `schema` with nested ids assigned when `configuration` asks for icebergCompatV2, the
/// counter in `*max_id`.
pub fn with_nested_ids(
    schema: Arc<Schema>,
    configuration: &BTreeMap<String, String>,
    max_id: &mut i64,
) -> Arc<Schema> {
    if requested(configuration) != Some(Compat::V2) {
        return schema;
    }
    *max_id = (*max_id).max(max_nested_id(schema.fields()));
    Arc::new(Schema::new(assign_nested_ids(schema.fields(), max_id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(features: &[&str], config: &[(&str, &str)], schema: &str) -> TableState {
        TableState {
            writer_features: features.iter().map(|s| s.to_string()).collect(),
            configuration: config
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            schema_string: Some(schema.to_string()),
            partition_columns: vec!["p".into()],
            has_files: true,
        }
    }

    const FLAT: &str = r#"{"type":"struct","fields":[{"name":"p","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-p"}}]}"#;

    fn add(stats: &str) -> Value {
        json!({"add": {"path": "a.parquet", "stats": stats}})
    }

    #[test]
    fn inactive_tables_are_not_checked() {
        let s = state(&["icebergCompatV2"], &[], FLAT);
        check_commit(Some(&s), &[add("{}")]).unwrap();
    }

    #[test]
    fn active_tables_need_column_mapping_counts_and_no_dvs() {
        let on = [(ENABLE_V2, "true"), ("delta.columnMapping.mode", "name")];
        let s = state(&["icebergCompatV2", "columnMapping"], &on, FLAT);
        check_commit(Some(&s), &[add(r#"{"numRecords":3}"#)]).unwrap();
        let e = check_commit(Some(&s), &[add(r#"{"minValues":{}}"#)]).unwrap_err();
        assert!(e.to_string().contains("numRecords"), "{e}");

        let no_mapping = state(&["icebergCompatV2"], &[(ENABLE_V2, "true")], FLAT);
        let e = check_commit(Some(&no_mapping), &[]).unwrap_err();
        assert!(e.to_string().contains("column mapping"), "{e}");

        let dv = [
            (ENABLE_V2, "true"),
            ("delta.columnMapping.mode", "id"),
            ("delta.enableDeletionVectors", "true"),
        ];
        let s = state(&["icebergCompatV2", "deletionVectors"], &dv, FLAT);
        assert!(check_commit(Some(&s), &[]).is_err());
        // V1 refuses the feature even when not enabled.
        let v1 = [(ENABLE_V1, "true"), ("delta.columnMapping.mode", "id")];
        let s = state(&["icebergCompatV1", "deletionVectors"], &v1, FLAT);
        assert!(check_commit(Some(&s), &[]).is_err());
    }

    #[test]
    fn enabling_on_a_table_with_files_and_partition_changes_are_refused() {
        let cm = [("delta.columnMapping.mode", "name")];
        let before = state(&["icebergCompatV2", "columnMapping"], &cm, FLAT);
        let metadata = |parts: &[&str]| {
            json!({"metaData": {"schemaString": FLAT, "partitionColumns": parts,
                "configuration": {ENABLE_V2: "true", "delta.columnMapping.mode": "name"}}})
        };
        let e = check_commit(Some(&before), &[metadata(&["p"])]).unwrap_err();
        assert!(e.to_string().contains("already has data files"), "{e}");
        let mut empty = before.clone();
        empty.has_files = false;
        check_commit(Some(&empty), &[metadata(&["p"])]).unwrap();

        let on = [(ENABLE_V2, "true"), ("delta.columnMapping.mode", "name")];
        let active = state(&["icebergCompatV2", "columnMapping"], &on, FLAT);
        check_commit(Some(&active), &[metadata(&["p"])]).unwrap();
        let e = check_commit(Some(&active), &[metadata(&[])]).unwrap_err();
        assert!(e.to_string().contains("partition columns"), "{e}");
    }

    #[test]
    fn nested_ids_follow_the_spec_example() {
        // The spec's example: col1 array<array<int>>, col2 map<int, array<int>>,
        // col3 map<int, struct<subcol1 array<int>>>.
        let text = r#"{"type":"struct","fields":[
            {"name":"col1","type":{"type":"array","elementType":{"type":"array","elementType":"integer","containsNull":true},"containsNull":true},"nullable":true,"metadata":{}},
            {"name":"col2","type":{"type":"map","keyType":"integer","valueType":{"type":"array","elementType":"integer","containsNull":true},"valueContainsNull":true},"nullable":true,"metadata":{}},
            {"name":"col3","type":{"type":"map","keyType":"integer","valueType":{"type":"struct","fields":[{"name":"subcol1","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}}]},"valueContainsNull":true},"nullable":true,"metadata":{}}]}"#;
        let schema = parse_schema_string(text).unwrap();
        let mut max = 99;
        let fields = assign_nested_ids(schema.fields(), &mut max);
        assert_eq!(max, 107);
        let ids = |f: &Field| nested_ids_of(f).into_iter().collect::<Vec<_>>();
        assert_eq!(
            ids(&fields[0]),
            [
                ("col1.element".into(), 100),
                ("col1.element.element".into(), 101)
            ]
        );
        assert_eq!(
            ids(&fields[1]),
            [
                ("col2.key".into(), 102),
                ("col2.value".into(), 103),
                ("col2.value.element".into(), 104)
            ]
        );
        assert_eq!(
            ids(&fields[2]),
            [("col3.key".into(), 105), ("col3.value".into(), 106)]
        );
        let DataType::Map(entries, _) = fields[2].data_type() else {
            panic!()
        };
        let DataType::Struct(kv) = entries.data_type() else {
            panic!()
        };
        let DataType::Struct(inner) = kv[1].data_type() else {
            panic!()
        };
        assert_eq!(ids(&inner[0]), [("subcol1.element".into(), 107)]);
        // Assigning again changes nothing; the schema string keeps the map as an object.
        assert_eq!(assign_nested_ids(&fields, &mut max), fields);
        let text = crate::schema::arrow_to_schema_string(&Schema::new(fields.clone())).unwrap();
        assert!(
            text.contains(r#""parquet.field.nested.ids":{"col1.element":100"#),
            "{text}"
        );
        assert_eq!(max_nested_id(&fields), 107);
    }

    #[test]
    fn v1_refuses_arrays_and_v2_refuses_void_and_missing_ids() {
        let on = |p: &str| {
            vec![
                (p.to_string(), "true".to_string()),
                ("delta.columnMapping.mode".into(), "name".into()),
            ]
        };
        let array = r#"{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}}]}"#;
        let mk = |feature: &str, prop: &str, schema: &str| {
            let c = on(prop);
            let c: Vec<(&str, &str)> = c.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            state(&[feature, "columnMapping"], &c, schema)
        };
        let e = check_commit(Some(&mk("icebergCompatV1", ENABLE_V1, array)), &[]).unwrap_err();
        assert!(e.to_string().contains("array"), "{e}");
        let e = check_commit(Some(&mk("icebergCompatV2", ENABLE_V2, array)), &[]).unwrap_err();
        assert!(e.to_string().contains("a.element"), "{e}");
        let void = r#"{"type":"struct","fields":[{"name":"v","type":"void","nullable":true,"metadata":{}}]}"#;
        let e = check_commit(Some(&mk("icebergCompatV2", ENABLE_V2, void)), &[]).unwrap_err();
        assert!(e.to_string().contains("void"), "{e}");
    }
}
