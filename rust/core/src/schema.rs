//! Delta schemas: the JSON of `metaData.schemaString` to and from Arrow.
//!
//! Spec: "Schema Serialization Format" (primitive, struct, array and map types; `void` columns
//! dropped on read), "Column Metadata" (kept as Arrow field metadata), "Column Mapping"
//! (physical names and ids; [`physical_schema`]).
//!
//! Arrow mapping: string→Utf8, long→Int64, integer→Int32, short→Int16, byte→Int8,
//! float→Float32, double→Float64, boolean→Boolean, binary→Binary, date→Date32,
//! timestamp→Timestamp(µs, "UTC"), timestamp_ntz→Timestamp(µs, none), decimal(p,s)→
//! Decimal128(p,s), array→List (item "element"), map→Map (entries "key_value"). Column metadata
//! values are stored as Arrow metadata strings: JSON strings as their text, other JSON values as
//! their JSON serialization; going back, only the keys the spec types as numbers, booleans or
//! objects are parsed, every other value stays a string ([`metadata_value_to_json`]).
//!
//! `variant` (the upstream protocol's "Variant Data Type", table feature `variantType`, not in
//! the stored spec) is read unshredded: a struct of two required binary fields, `metadata` and
//! `value`, in the Parquet variant encoding. Its Arrow field carries the canonical extension
//! name `arrow.parquet.variant` ([`is_variant`]), which is how it goes back to `variant`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, TimeUnit};
use serde_json::{Map, Value};

/// Column metadata key of the physical name ("Column Mapping").
pub const PHYSICAL_NAME_KEY: &str = "delta.columnMapping.physicalName";
/// The byte width of a signed integer type, `None` for other types (integer widening,
/// upstream "Type Widening").
pub fn integer_width(dt: &DataType) -> Option<u8> {
    match dt {
        DataType::Int8 => Some(1),
        DataType::Int16 => Some(2),
        DataType::Int32 => Some(4),
        DataType::Int64 => Some(8),
        _ => None,
    }
}

/// Column metadata key of a field's type changes (upstream "Type Widening": a JSON array of
/// `{fromType, toType[, fieldPath]}` objects, oldest first).
pub const TYPE_CHANGES_KEY: &str = "delta.typeChanges";
/// Column metadata key of the column id ("Column Mapping").
pub const COLUMN_ID_KEY: &str = "delta.columnMapping.id";
/// Arrow metadata key the parquet crate uses for field ids.
pub const PARQUET_FIELD_ID_KEY: &str = "PARQUET:field_id";
/// Table property naming the column mapping mode.
pub const COLUMN_MAPPING_MODE_KEY: &str = "delta.columnMapping.mode";
/// Arrow field metadata key of an extension type's name.
pub const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// Arrow field metadata key of an extension type's parameters.
pub const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";
/// The canonical Arrow extension name of Parquet variant values.
pub const VARIANT_EXTENSION: &str = "arrow.parquet.variant";

/// The storage type of an unshredded variant: `struct<metadata: binary not null, value:
/// binary not null>` (upstream protocol, "Variant Data Type").
pub fn variant_storage_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("metadata", DataType::Binary, false),
        Field::new("value", DataType::Binary, false),
    ]))
}

/// Whether a field holds variant values (its extension name says so).
pub fn is_variant(field: &Field) -> bool {
    field
        .metadata()
        .get(EXTENSION_NAME_KEY)
        .is_some_and(|n| n == VARIANT_EXTENSION)
}

/// `field` marked as a variant when its Delta type is `variant`.
fn mark_variant(field: Field, delta_type: &Value) -> Field {
    if delta_type.as_str() != Some("variant") {
        return field;
    }
    let mut metadata = field.metadata().clone();
    metadata.insert(
        EXTENSION_NAME_KEY.to_string(),
        VARIANT_EXTENSION.to_string(),
    );
    metadata.insert(EXTENSION_METADATA_KEY.to_string(), String::new());
    field.with_metadata(metadata)
}

/// Why a schema could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

impl SchemaError {
    /// The error of a schema a caller asked to write: an invalid argument.
    pub fn into_invalid_argument(self) -> crate::error::DeltaError {
        crate::error::DeltaError::InvalidArgument(format!("the table schema: {}", self.0))
    }

    /// Whether the schema was refused for nesting deeper than deltalog reads.
    pub fn is_too_deep(&self) -> bool {
        self.0.starts_with(TOO_DEEP)
    }
}

/// The start of the message of schemas that nest too deeply.
const TOO_DEEP: &str = "the schema nests deeper than deltalog supports";

fn err<T>(msg: impl Into<String>) -> Result<T, SchemaError> {
    Err(SchemaError(msg.into()))
}

/// Column names compare case-insensitively in Delta, as in Spark (`Locale.ROOT` lower case):
/// the key two names share when they name the same column.
pub fn name_key(name: &str) -> String {
    name.to_lowercase()
}

/// The index of the field of `fields` that `name` names: the field spelled exactly so, else
/// the only field whose name equals it case-insensitively ([`name_key`]); `None` when there is
/// none, or several and none exact.
pub fn find_column(fields: &Fields, name: &str) -> Option<usize> {
    if let Some(i) = fields.iter().position(|f| f.name() == name) {
        return Some(i);
    }
    let key = name_key(name);
    let mut matches = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| name_key(f.name()) == key);
    match (matches.next(), matches.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

/// Refuses fields whose names differ only in case, at any depth (struct fields, also inside
/// arrays and maps): Delta column names are case-insensitive, so such a schema names one
/// column twice (Delta Spark refuses it as a duplicate column). `what` says whose fields
/// they are, for the message.
pub fn check_unique_names(fields: &Fields, what: &str) -> Result<(), SchemaError> {
    fn visit(fields: &Fields, prefix: &str, what: &str) -> Result<(), SchemaError> {
        let mut seen: HashMap<String, &str> = HashMap::new();
        for f in fields {
            if let Some(first) = seen.insert(name_key(f.name()), f.name()) {
                return err(format!(
                    "{what} has the columns {:?} and {:?}, whose names differ only in case: \
                     Delta column names are case-insensitive",
                    format!("{prefix}{first}"),
                    format!("{prefix}{}", f.name())
                ));
            }
            nested(f.data_type(), &format!("{prefix}{}.", f.name()), what)?;
        }
        Ok(())
    }
    fn nested(dt: &DataType, prefix: &str, what: &str) -> Result<(), SchemaError> {
        match dt {
            DataType::Struct(children) => visit(children, prefix, what),
            DataType::List(item)
            | DataType::LargeList(item)
            | DataType::FixedSizeList(item, _)
            | DataType::ListView(item)
            | DataType::LargeListView(item) => nested(item.data_type(), prefix, what),
            DataType::Map(entries, _) => nested(entries.data_type(), prefix, what),
            _ => Ok(()),
        }
    }
    visit(fields, "", what)
}

/// Parses `schemaString` into an Arrow schema with logical names.
pub fn parse_schema_string(schema_string: &str) -> Result<Schema, SchemaError> {
    let value: Value = serde_json::from_str(schema_string).map_err(|e| {
        // serde_json stops at 128 levels of JSON nesting (each struct level is three) rather
        // than overflow the stack.
        if e.to_string().starts_with("recursion limit exceeded") {
            SchemaError(format!(
                "{TOO_DEEP}: about 40 levels of struct, array and map types (the schema's JSON \
                 may nest at most 128 levels)"
            ))
        } else {
            SchemaError(format!("schemaString is not JSON: {e}"))
        }
    })?;
    match delta_type_to_arrow(&value)? {
        Some(DataType::Struct(fields)) => Ok(Schema::new(fields)),
        _ => err("schemaString must be a struct type (spec: \"Schema Serialization Format\")"),
    }
}

/// Converts a Delta type to Arrow; `Ok(None)` for `void`, which readers drop.
pub fn delta_type_to_arrow(value: &Value) -> Result<Option<DataType>, SchemaError> {
    match value {
        Value::String(name) => primitive(name),
        Value::Object(obj) => match obj.get("type").and_then(Value::as_str) {
            Some("struct") => {
                let fields = obj
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(|| SchemaError("struct type without a fields array".into()))?;
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    if let Some(field) = delta_field_to_arrow(f)? {
                        out.push(field);
                    }
                }
                Ok(Some(DataType::Struct(Fields::from(out))))
            }
            Some("array") => {
                let element = obj
                    .get("elementType")
                    .ok_or_else(|| SchemaError("array type without elementType".into()))?;
                let contains_null = obj
                    .get("containsNull")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                let Some(element_type) = delta_type_to_arrow(element)? else {
                    return Ok(None);
                };
                Ok(Some(DataType::List(Arc::new(mark_variant(
                    Field::new("element", element_type, contains_null),
                    element,
                )))))
            }
            Some("map") => {
                let key = obj
                    .get("keyType")
                    .ok_or_else(|| SchemaError("map type without keyType".into()))?;
                let value = obj
                    .get("valueType")
                    .ok_or_else(|| SchemaError("map type without valueType".into()))?;
                let value_null = obj
                    .get("valueContainsNull")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                let (Some(key_type), Some(value_type)) =
                    (delta_type_to_arrow(key)?, delta_type_to_arrow(value)?)
                else {
                    return Ok(None);
                };
                let value_field = mark_variant(Field::new("value", value_type, value_null), value);
                Ok(Some(map_of(
                    Field::new("key", key_type, false),
                    value_field,
                )))
            }
            Some(other) => err(format!("unknown complex type {other:?}")),
            None => err("a type object has no \"type\""),
        },
        other => err(format!("invalid type {other}")),
    }
}

/// `map<key, value>` with Delta's entry layout.
pub fn map_type(key: DataType, value: DataType, value_nullable: bool) -> DataType {
    map_of(
        Field::new("key", key, false),
        Field::new("value", value, value_nullable),
    )
}

fn map_of(key: Field, value: Field) -> DataType {
    DataType::Map(
        Arc::new(Field::new(
            "key_value",
            DataType::Struct(Fields::from(vec![key, value])),
            false,
        )),
        false,
    )
}

fn primitive(name: &str) -> Result<Option<DataType>, SchemaError> {
    Ok(Some(match name {
        "string" => DataType::Utf8,
        "long" => DataType::Int64,
        "integer" => DataType::Int32,
        "short" => DataType::Int16,
        "byte" => DataType::Int8,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "boolean" => DataType::Boolean,
        "binary" => DataType::Binary,
        "date" => DataType::Date32,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "variant" => variant_storage_type(),
        "void" => return Ok(None),
        other => {
            if let Some(args) = other
                .strip_prefix("decimal(")
                .and_then(|s| s.strip_suffix(')'))
            {
                let (p, s) = args
                    .split_once(',')
                    .ok_or_else(|| SchemaError(format!("invalid decimal type {other:?}")))?;
                let p: u8 = p
                    .trim()
                    .parse()
                    .map_err(|_| SchemaError(format!("invalid decimal precision in {other:?}")))?;
                let s: i8 = s
                    .trim()
                    .parse()
                    .map_err(|_| SchemaError(format!("invalid decimal scale in {other:?}")))?;
                if p == 0 || p > 38 || s < 0 || s as u8 > p {
                    return err(format!(
                        "decimal {other:?} out of range: precision 1..=38, scale 0..=precision"
                    ));
                }
                DataType::Decimal128(p, s)
            } else if other == "decimal" {
                // Spark's default for an unparameterised decimal.
                DataType::Decimal128(10, 0)
            } else {
                return err(format!("unknown primitive type {other:?}"));
            }
        }
    }))
}

fn delta_field_to_arrow(value: &Value) -> Result<Option<Field>, SchemaError> {
    let obj = value
        .as_object()
        .ok_or_else(|| SchemaError("a struct field is not an object".into()))?;
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| SchemaError("a struct field has no name".into()))?;
    let ty = obj
        .get("type")
        .ok_or_else(|| SchemaError(format!("field {name:?} has no type")))?;
    let nullable = obj.get("nullable").and_then(Value::as_bool).unwrap_or(true);
    let Some(data_type) =
        delta_type_to_arrow(ty).map_err(|e| SchemaError(format!("field {name:?}: {}", e.0)))?
    else {
        return Ok(None);
    };
    let mut metadata = HashMap::new();
    if let Some(Value::Object(meta)) = obj.get("metadata") {
        for (k, v) in meta {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            metadata.insert(k.clone(), text);
        }
    }
    Ok(Some(mark_variant(
        Field::new(name, data_type, nullable).with_metadata(metadata),
        ty,
    )))
}

/// Serializes an Arrow schema as a Delta `schemaString`.
pub fn arrow_to_schema_string(schema: &Schema) -> Result<String, SchemaError> {
    Ok(struct_to_delta(schema.fields())?.to_string())
}

fn struct_to_delta(fields: &Fields) -> Result<Value, SchemaError> {
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let mut meta = Map::new();
        let mut keys: Vec<&String> = f.metadata().keys().collect();
        keys.sort();
        for k in keys {
            if k == PARQUET_FIELD_ID_KEY || k == EXTENSION_NAME_KEY || k == EXTENSION_METADATA_KEY {
                continue;
            }
            let value = metadata_value_to_json(k, &f.metadata()[k]);
            meta.insert(k.clone(), value);
        }
        if meta.contains_key("delta.identity.start") {
            // "Identity Columns" lists `delta.identity.allowExplicitInsert` with start and step,
            // and Delta Spark refuses a column without it (DELTA_IDENTITY_COLUMN_INCONSISTENT_
            // METADATA): its absence means what deltalog reads it as, no explicit values.
            meta.entry("delta.identity.allowExplicitInsert")
                .or_insert(Value::Bool(false));
        }
        let mut field = Map::new();
        field.insert("name".into(), Value::String(f.name().clone()));
        let delta_type = field_type_to_delta(f)
            .map_err(|e| SchemaError(format!("column {:?}: {}", f.name(), e.0)))?;
        field.insert("type".into(), delta_type);
        field.insert("nullable".into(), Value::Bool(f.is_nullable()));
        field.insert("metadata".into(), Value::Object(meta));
        out.push(Value::Object(field));
    }
    let mut s = Map::new();
    s.insert("type".into(), Value::String("struct".into()));
    s.insert("fields".into(), Value::Array(out));
    Ok(Value::Object(s))
}

/// Column metadata keys whose values the spec defines as JSON numbers, booleans, arrays or
/// objects ("Column Mapping", "Identity Columns", "Writer Requirements for IcebergCompatV2",
/// and the upstream protocol's "Type Change Metadata", an array of objects); every other key's
/// Arrow metadata value goes back to Delta as a JSON string.
const TYPED_METADATA_KEYS: &[&str] = &[
    COLUMN_ID_KEY,
    TYPE_CHANGES_KEY,
    "delta.columnMapping.nested.ids",
    "parquet.field.nested.ids",
    "delta.identity.start",
    "delta.identity.step",
    "delta.identity.highWaterMark",
    "delta.identity.allowExplicitInsert",
];

/// The JSON value of an Arrow metadata entry when written back to a Delta schema.
pub fn metadata_value_to_json(key: &str, text: &str) -> Value {
    if TYPED_METADATA_KEYS.contains(&key) {
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            if !v.is_string() {
                return v;
            }
        }
    }
    Value::String(text.to_string())
}

/// The Delta type of a field's values (`variant` for fields marked as such).
fn field_type_to_delta(field: &Field) -> Result<Value, SchemaError> {
    if is_variant(field) {
        return Ok(Value::String("variant".into()));
    }
    arrow_type_to_delta(field.data_type())
}

/// Converts an Arrow type to a Delta type.
pub fn arrow_type_to_delta(dt: &DataType) -> Result<Value, SchemaError> {
    let prim = |s: &str| Ok(Value::String(s.to_string()));
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => prim("string"),
        DataType::Int64 => prim("long"),
        DataType::Int32 => prim("integer"),
        DataType::Int16 => prim("short"),
        DataType::Int8 => prim("byte"),
        DataType::Float32 => prim("float"),
        DataType::Float64 => prim("double"),
        DataType::Boolean => prim("boolean"),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => prim("binary"),
        DataType::Date32 => prim("date"),
        DataType::Timestamp(_, Some(_)) => prim("timestamp"),
        DataType::Timestamp(_, None) => prim("timestamp_ntz"),
        DataType::Decimal128(p, s) if *s >= 0 => prim(&format!("decimal({p},{s})")),
        DataType::Struct(fields) => struct_to_delta(fields),
        DataType::List(item) | DataType::LargeList(item) | DataType::ListView(item) => {
            let mut m = Map::new();
            m.insert("type".into(), Value::String("array".into()));
            m.insert("elementType".into(), field_type_to_delta(item)?);
            m.insert("containsNull".into(), Value::Bool(item.is_nullable()));
            Ok(Value::Object(m))
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return err("map entries must be a struct");
            };
            if kv.len() != 2 {
                return err("map entries must have a key and a value");
            }
            let mut m = Map::new();
            m.insert("type".into(), Value::String("map".into()));
            m.insert("keyType".into(), arrow_type_to_delta(kv[0].data_type())?);
            m.insert("valueType".into(), field_type_to_delta(&kv[1])?);
            m.insert("valueContainsNull".into(), Value::Bool(kv[1].is_nullable()));
            Ok(Value::Object(m))
        }
        DataType::Dictionary(_, value) => arrow_type_to_delta(value),
        other => err(format!(
            "Arrow type {other} has no Delta equivalent (Delta has no unsigned integers, \
             half floats, durations or times of day; cast the column first)"
        )),
    }
}

/// The column mapping mode of a table ("Column Mapping").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnMappingMode {
    None,
    Name,
    Id,
}

impl ColumnMappingMode {
    /// Parses the `delta.columnMapping.mode` property (absent means `none`).
    pub fn from_property(value: Option<&str>) -> Result<Self, SchemaError> {
        match value.map(str::to_ascii_lowercase).as_deref() {
            None | Some("none") => Ok(ColumnMappingMode::None),
            Some("name") => Ok(ColumnMappingMode::Name),
            Some("id") => Ok(ColumnMappingMode::Id),
            Some(other) => err(format!("unknown delta.columnMapping.mode {other:?}")),
        }
    }

    /// The property value.
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnMappingMode::None => "none",
            ColumnMappingMode::Name => "name",
            ColumnMappingMode::Id => "id",
        }
    }
}

/// The schema as stored in data files: fields renamed to their physical names (modes `name`
/// and `id`), with the column id as the parquet field id (mode `id`). In mode `none` the
/// logical schema is returned unchanged.
pub fn physical_schema(logical: &Schema, mode: ColumnMappingMode) -> Result<Schema, SchemaError> {
    if mode == ColumnMappingMode::None {
        return Ok(logical.clone());
    }
    let fields = logical
        .fields()
        .iter()
        .map(|f| physical_field(f, mode))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Schema::new(fields))
}

fn physical_field(field: &FieldRef, mode: ColumnMappingMode) -> Result<Field, SchemaError> {
    let meta = field.metadata();
    let physical = meta.get(PHYSICAL_NAME_KEY).ok_or_else(|| {
        SchemaError(format!(
            "column {:?} has no {PHYSICAL_NAME_KEY} although column mapping mode is {} \
             (spec: \"Column Mapping\")",
            field.name(),
            mode.as_str()
        ))
    })?;
    let mut new_meta = meta.clone();
    if mode == ColumnMappingMode::Id {
        let id = meta.get(COLUMN_ID_KEY).ok_or_else(|| {
            SchemaError(format!(
                "column {:?} has no {COLUMN_ID_KEY} although column mapping mode is id",
                field.name()
            ))
        })?;
        new_meta.insert(PARQUET_FIELD_ID_KEY.to_string(), id.clone());
    }
    // A variant's `metadata` and `value` are not Delta fields: they keep their names.
    let data_type = if is_variant(field) {
        field.data_type().clone()
    } else {
        physical_type(field.data_type(), mode)?
    };
    Ok(Field::new(physical, data_type, field.is_nullable()).with_metadata(new_meta))
}

/// The physical form of a type: struct fields renamed; list elements and map keys/values are
/// not Delta fields (they have no physical names), only their types are mapped.
fn physical_type(dt: &DataType, mode: ColumnMappingMode) -> Result<DataType, SchemaError> {
    Ok(match dt {
        DataType::Struct(fields) => DataType::Struct(Fields::from(
            fields
                .iter()
                .map(|f| physical_field(f, mode))
                .collect::<Result<Vec<_>, _>>()?,
        )),
        DataType::List(item) if is_variant(item) => dt.clone(),
        DataType::List(item) => DataType::List(Arc::new(
            item.as_ref()
                .clone()
                .with_data_type(physical_type(item.data_type(), mode)?),
        )),
        DataType::Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return err("map entries must be a struct");
            };
            let kv = kv
                .iter()
                .map(|f| {
                    if is_variant(f) {
                        return Ok(f.as_ref().clone());
                    }
                    Ok(f.as_ref()
                        .clone()
                        .with_data_type(physical_type(f.data_type(), mode)?))
                })
                .collect::<Result<Vec<_>, SchemaError>>()?;
            DataType::Map(
                Arc::new(
                    entries
                        .as_ref()
                        .clone()
                        .with_data_type(DataType::Struct(Fields::from(kv))),
                ),
                *sorted,
            )
        }
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_EXAMPLE: &str = r#"{"type":"struct","fields":[
        {"name":"a","type":"integer","nullable":false,"metadata":{}},
        {"name":"b","type":{"type":"struct","fields":[{"name":"d","type":"integer","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}},
        {"name":"c","type":{"type":"array","elementType":"integer","containsNull":false},"nullable":true,"metadata":{}},
        {"name":"e","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"d","type":"integer","nullable":false,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}},
        {"name":"f","type":{"type":"map","keyType":"string","valueType":"string","valueContainsNull":true},"nullable":true,"metadata":{}}
    ]}"#;

    #[test]
    fn identity_columns_are_written_with_allow_explicit_insert() {
        let meta = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>()
        };
        let schema = Schema::new(vec![
            Field::new("k", DataType::Int64, true).with_metadata(meta(&[
                ("delta.identity.start", "1"),
                ("delta.identity.step", "1"),
            ])),
            Field::new("e", DataType::Int64, true).with_metadata(meta(&[
                ("delta.identity.start", "1"),
                ("delta.identity.step", "2"),
                ("delta.identity.allowExplicitInsert", "true"),
            ])),
        ]);
        let v: Value = serde_json::from_str(&arrow_to_schema_string(&schema).unwrap()).unwrap();
        let md = |i: usize| v["fields"][i]["metadata"].clone();
        assert_eq!(
            md(0)["delta.identity.allowExplicitInsert"],
            Value::Bool(false)
        );
        assert_eq!(md(0)["delta.identity.start"], serde_json::json!(1));
        assert_eq!(
            md(1)["delta.identity.allowExplicitInsert"],
            Value::Bool(true)
        );
    }

    #[test]
    fn names_resolve_case_insensitively_and_case_duplicates_are_found() {
        let fields = Fields::from(vec![
            Field::new("Id", DataType::Int64, true),
            Field::new("ÄBC", DataType::Int64, true),
            Field::new("x", DataType::Int64, true),
            Field::new("X", DataType::Int64, true),
        ]);
        assert_eq!(find_column(&fields, "Id"), Some(0));
        assert_eq!(find_column(&fields, "ID"), Some(0));
        // Unicode lower case, as Spark's `toLowerCase(Locale.ROOT)`.
        assert_eq!(find_column(&fields, "äbc"), Some(1));
        // Exact wins; otherwise two candidates are no match.
        assert_eq!(find_column(&fields, "X"), Some(3));
        assert_eq!(
            find_column(
                &Fields::from(vec![fields[2].clone(), fields[3].clone()]),
                "x"
            ),
            Some(0)
        );
        assert_eq!(
            find_column(&fields[2..].iter().cloned().collect(), "Y"),
            None
        );
        let dup = check_unique_names(&fields, "the data").unwrap_err();
        assert!(dup.0.contains("\"x\" and \"X\""), "{dup}");
        assert!(check_unique_names(&fields[..3].iter().cloned().collect(), "t").is_ok());
        // Nested: struct fields, also inside lists and maps.
        let inner = DataType::Struct(Fields::from(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("K", DataType::Int32, true),
        ]));
        for dt in [
            inner.clone(),
            DataType::List(Arc::new(Field::new("element", inner.clone(), true))),
            map_type(DataType::Utf8, inner.clone(), true),
        ] {
            let nested = Fields::from(vec![Field::new("s", dt, true)]);
            let e = check_unique_names(&nested, "the data").unwrap_err();
            // Map values are named by their entry field: `s.value.k`.
            assert!(e.0.contains("\"s.") && e.0.contains("k\" and \"s."), "{e}");
        }
    }

    #[test]
    fn type_changes_stay_an_array_of_objects_through_arrow() {
        // A metadata value that is an array must come back as one (Delta Spark reads the
        // type changes as an array); other keys' values come back as JSON strings.
        let text = r#"{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{"delta.typeChanges":[{"toType":"long","fromType":"integer"}],"comment":"[1]"}}]}"#;
        let schema = parse_schema_string(text).unwrap();
        let back: Value = serde_json::from_str(&arrow_to_schema_string(&schema).unwrap()).unwrap();
        let meta = &back["fields"][0]["metadata"];
        assert_eq!(
            meta["delta.typeChanges"],
            serde_json::json!([{"toType": "long", "fromType": "integer"}])
        );
        assert_eq!(meta["comment"], Value::String("[1]".into()));
    }

    #[test]
    fn spec_example_parses() {
        let s = parse_schema_string(SPEC_EXAMPLE).unwrap();
        assert_eq!(s.fields().len(), 5);
        assert_eq!(s.field(0).data_type(), &DataType::Int32);
        assert!(!s.field(0).is_nullable());
        let DataType::List(item) = s.field(2).data_type() else {
            panic!()
        };
        assert!(!item.is_nullable());
        assert!(matches!(s.field(4).data_type(), DataType::Map(_, _)));
    }

    #[test]
    fn every_primitive() {
        for (name, dt) in [
            ("string", DataType::Utf8),
            ("long", DataType::Int64),
            ("integer", DataType::Int32),
            ("short", DataType::Int16),
            ("byte", DataType::Int8),
            ("float", DataType::Float32),
            ("double", DataType::Float64),
            ("boolean", DataType::Boolean),
            ("binary", DataType::Binary),
            ("date", DataType::Date32),
            (
                "timestamp",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            ),
            (
                "timestamp_ntz",
                DataType::Timestamp(TimeUnit::Microsecond, None),
            ),
            ("decimal(38,18)", DataType::Decimal128(38, 18)),
            ("decimal(5, 2)", DataType::Decimal128(5, 2)),
        ] {
            assert_eq!(primitive(name).unwrap(), Some(dt.clone()), "{name}");
            let back = arrow_type_to_delta(&dt).unwrap();
            assert_eq!(
                back.as_str().unwrap().replace(' ', ""),
                name.replace(' ', "")
            );
        }
        assert!(primitive("decimal(39,1)").is_err());
        assert!(primitive("decimal(5,6)").is_err());
        assert!(primitive("interval").is_err());
    }

    #[test]
    fn variants_read_unshredded_and_round_trip() {
        let text = r#"{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{"comment":"c"}},{"name":"a","type":{"type":"array","elementType":"variant","containsNull":true},"nullable":true,"metadata":{}},{"name":"m","type":{"type":"map","keyType":"string","valueType":"variant","valueContainsNull":true},"nullable":true,"metadata":{}}]}"#;
        let schema = parse_schema_string(text).unwrap();
        let v = schema.field(0);
        assert!(is_variant(v));
        assert_eq!(v.data_type(), &variant_storage_type());
        assert_eq!(v.metadata()["comment"], "c");
        let DataType::List(item) = schema.field(1).data_type() else {
            panic!("not a list")
        };
        assert!(is_variant(item));
        let back: Value = serde_json::from_str(&arrow_to_schema_string(&schema).unwrap()).unwrap();
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, expected);
        // A plain struct of the same shape stays a struct.
        let plain = Field::new("s", variant_storage_type(), true);
        assert_eq!(field_type_to_delta(&plain).unwrap()["type"], "struct");
    }

    #[test]
    fn void_columns_are_dropped() {
        let s = parse_schema_string(
            r#"{"type":"struct","fields":[{"name":"a","type":"void","nullable":true,"metadata":{}},{"name":"b","type":"long","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        assert_eq!(s.fields().len(), 1);
        assert_eq!(s.field(0).name(), "b");
    }

    #[test]
    fn round_trip_keeps_metadata_and_nullability() {
        let text = r#"{"type":"struct","fields":[{"name":"x","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"decimal(10,2)","containsNull":false},"valueContainsNull":false},"nullable":false,"metadata":{"comment":"hi","delta.columnMapping.id":5,"delta.columnMapping.physicalName":"col-1","delta.invariants":"{\"expression\":{\"expression\":\"x > 3\"}}"}}]}"#;
        let s = parse_schema_string(text).unwrap();
        let back = arrow_to_schema_string(&s).unwrap();
        let a: Value = serde_json::from_str(text).unwrap();
        let b: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(a, b);
        assert_eq!(s.field(0).metadata()[COLUMN_ID_KEY], "5");
    }

    #[test]
    fn physical_schema_by_mode() {
        let text = r#"{"type":"struct","fields":[{"name":"a","type":{"type":"struct","fields":[{"name":"b","type":"integer","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b"}}]},"nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a"}}]}"#;
        let s = parse_schema_string(text).unwrap();
        let p = physical_schema(&s, ColumnMappingMode::Name).unwrap();
        assert_eq!(p.field(0).name(), "col-a");
        let DataType::Struct(inner) = p.field(0).data_type() else {
            panic!()
        };
        assert_eq!(inner[0].name(), "col-b");
        assert!(!p.field(0).metadata().contains_key(PARQUET_FIELD_ID_KEY));
        let p = physical_schema(&s, ColumnMappingMode::Id).unwrap();
        assert_eq!(p.field(0).metadata()[PARQUET_FIELD_ID_KEY], "1");
        assert_eq!(physical_schema(&s, ColumnMappingMode::None).unwrap(), s);
        // Map keys/values and list elements carry no physical names; nested structs inside do.
        let nested = parse_schema_string(
            r#"{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-x"}}]},"containsNull":true},"valueContainsNull":true},"nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-m"}}]}"#,
        )
        .unwrap();
        let p = physical_schema(&nested, ColumnMappingMode::Name).unwrap();
        assert_eq!(p.field(0).name(), "col-m");
        let DataType::Map(entries, _) = p.field(0).data_type() else {
            panic!()
        };
        let DataType::Struct(kv) = entries.data_type() else {
            panic!()
        };
        assert_eq!(kv[0].name(), "key");
        let DataType::List(item) = kv[1].data_type() else {
            panic!()
        };
        let DataType::Struct(inner) = item.data_type() else {
            panic!()
        };
        assert_eq!(inner[0].name(), "col-x");
        let unmapped = parse_schema_string(
            r#"{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        assert!(physical_schema(&unmapped, ColumnMappingMode::Name).is_err());
    }

    #[test]
    fn bad_schemas_are_errors() {
        assert!(parse_schema_string("nope").is_err());
        assert!(parse_schema_string(r#""integer""#).is_err());
        assert!(parse_schema_string(r#"{"type":"struct"}"#).is_err());
        assert!(parse_schema_string(r#"{"type":"struct","fields":[{"type":"long"}]}"#).is_err());
    }
}
