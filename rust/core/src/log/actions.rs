//! The Arrow shape of log actions, and decoding commit files into it.
//!
//! Spec: "Actions" (every action's fields), "Protocol Evolution" (unknown actions and fields are
//! ignored: the JSON decoder is not strict, and only the columns listed here are materialized),
//! "Checkpoint Schema" (checkpoints carry the same actions as columns).

use std::sync::{Arc, OnceLock};

use arrow::array::{Array, RecordBatch};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use arrow::json::ReaderBuilder;

use crate::error::{DeltaError, DeltaResult};

/// `map<string, string>` as the log stores `partitionValues`, `tags`, `configuration`, ...
pub fn string_map() -> DataType {
    DataType::Map(
        Arc::new(Field::new(
            "key_value",
            DataType::Struct(Fields::from(vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::Utf8, true),
            ])),
            false,
        )),
        false,
    )
}

/// `array<string>`
pub fn string_list() -> DataType {
    DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)))
}

fn utf8(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
}
fn int64(name: &str) -> Field {
    Field::new(name, DataType::Int64, true)
}
fn int32(name: &str) -> Field {
    Field::new(name, DataType::Int32, true)
}
fn boolean(name: &str) -> Field {
    Field::new(name, DataType::Boolean, true)
}
fn map(name: &str) -> Field {
    Field::new(name, string_map(), true)
}

/// "Deletion Vector Descriptor Schema"
pub fn deletion_vector_fields() -> Fields {
    Fields::from(vec![
        utf8("storageType"),
        utf8("pathOrInlineDv"),
        int32("offset"),
        int32("sizeInBytes"),
        int64("cardinality"),
    ])
}

/// The `add` action ("Add File and Remove File").
pub fn add_fields() -> Fields {
    Fields::from(vec![
        utf8("path"),
        map("partitionValues"),
        int64("size"),
        int64("modificationTime"),
        boolean("dataChange"),
        utf8("stats"),
        map("tags"),
        Field::new(
            "deletionVector",
            DataType::Struct(deletion_vector_fields()),
            true,
        ),
        int64("baseRowId"),
        int64("defaultRowCommitVersion"),
        utf8("clusteringProvider"),
    ])
}

/// The `remove` action ("Add File and Remove File").
pub fn remove_fields() -> Fields {
    Fields::from(vec![
        utf8("path"),
        int64("deletionTimestamp"),
        boolean("dataChange"),
        boolean("extendedFileMetadata"),
        map("partitionValues"),
        int64("size"),
        map("tags"),
        Field::new(
            "deletionVector",
            DataType::Struct(deletion_vector_fields()),
            true,
        ),
        int64("baseRowId"),
        int64("defaultRowCommitVersion"),
    ])
}

/// "Change Metadata"
pub fn metadata_fields() -> Fields {
    Fields::from(vec![
        utf8("id"),
        utf8("name"),
        utf8("description"),
        Field::new(
            "format",
            DataType::Struct(Fields::from(vec![utf8("provider"), map("options")])),
            true,
        ),
        utf8("schemaString"),
        Field::new("partitionColumns", string_list(), true),
        int64("createdTime"),
        map("configuration"),
    ])
}

/// "Protocol Evolution"
pub fn protocol_fields() -> Fields {
    Fields::from(vec![
        int32("minReaderVersion"),
        int32("minWriterVersion"),
        Field::new("readerFeatures", string_list(), true),
        Field::new("writerFeatures", string_list(), true),
    ])
}

/// "Transaction Identifiers"
pub fn txn_fields() -> Fields {
    Fields::from(vec![utf8("appId"), int64("version"), int64("lastUpdated")])
}

/// "Domain Metadata"
pub fn domain_metadata_fields() -> Fields {
    Fields::from(vec![
        utf8("domain"),
        utf8("configuration"),
        boolean("removed"),
    ])
}

/// The parts of "Commit Provenance Information" that replay needs ("In-Commit Timestamps").
pub fn commit_info_fields() -> Fields {
    Fields::from(vec![int64("inCommitTimestamp"), int64("timestamp")])
}

/// "Sidecar File Information"
pub fn sidecar_fields() -> Fields {
    Fields::from(vec![
        utf8("path"),
        int64("sizeInBytes"),
        int64("modificationTime"),
        map("tags"),
    ])
}

/// "Checkpoint Metadata"
pub fn checkpoint_metadata_fields() -> Fields {
    Fields::from(vec![int64("version"), map("tags")])
}

/// Column names of the actions, as they appear in commits and checkpoints.
pub mod names {
    pub const ADD: &str = "add";
    pub const REMOVE: &str = "remove";
    pub const METADATA: &str = "metaData";
    pub const PROTOCOL: &str = "protocol";
    pub const TXN: &str = "txn";
    pub const DOMAIN_METADATA: &str = "domainMetadata";
    pub const COMMIT_INFO: &str = "commitInfo";
    pub const SIDECAR: &str = "sidecar";
    pub const CHECKPOINT_METADATA: &str = "checkpointMetadata";
}

/// The struct column of action `name`.
fn action_field(name: &str) -> Field {
    let fields = match name {
        names::ADD => add_fields(),
        names::REMOVE => remove_fields(),
        names::METADATA => metadata_fields(),
        names::PROTOCOL => protocol_fields(),
        names::TXN => txn_fields(),
        names::DOMAIN_METADATA => domain_metadata_fields(),
        names::COMMIT_INFO => commit_info_fields(),
        names::SIDECAR => sidecar_fields(),
        names::CHECKPOINT_METADATA => checkpoint_metadata_fields(),
        // Only the names above are passed (private helper); an unknown one reads as empty.
        _ => Fields::empty(),
    };
    Field::new(name, DataType::Struct(fields), true)
}

fn schema_of(actions: &[&str]) -> SchemaRef {
    Arc::new(Schema::new(
        actions.iter().map(|a| action_field(a)).collect::<Vec<_>>(),
    ))
}

/// The schema of `actions`, built once per `cell`.
fn cached(cell: &'static OnceLock<SchemaRef>, actions: &[&str]) -> SchemaRef {
    cell.get_or_init(|| schema_of(actions)).clone()
}

/// Every action replay reads from a commit file.
pub fn commit_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    use names::*;
    cached(
        &S,
        &[
            ADD,
            REMOVE,
            METADATA,
            PROTOCOL,
            TXN,
            DOMAIN_METADATA,
            COMMIT_INFO,
            SIDECAR,
            CHECKPOINT_METADATA,
        ],
    )
}

/// Every action a checkpoint may hold ("Checkpoints", "V2 Spec").
pub fn checkpoint_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    use names::*;
    cached(
        &S,
        &[
            ADD,
            REMOVE,
            METADATA,
            PROTOCOL,
            TXN,
            DOMAIN_METADATA,
            SIDECAR,
            CHECKPOINT_METADATA,
        ],
    )
}

/// The non-file actions of a checkpoint (read in a first, cheap pass).
pub fn checkpoint_header_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    use names::*;
    cached(
        &S,
        &[
            METADATA,
            PROTOCOL,
            TXN,
            DOMAIN_METADATA,
            SIDECAR,
            CHECKPOINT_METADATA,
        ],
    )
}

/// The file actions of a checkpoint or sidecar.
pub fn file_actions_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    cached(&S, &[names::ADD, names::REMOVE])
}

/// [`file_actions_schema`] with `add.stats` as `Utf8View`: how parquet checkpoints and sidecars
/// are read, so that the statistics text is parsed where the decompressed pages hold it instead
/// of being copied into a string column first (it is dropped once parsed).
pub fn file_actions_view_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    S.get_or_init(|| with_stats_as_views(&file_actions_schema()))
        .clone()
}

/// `schema` with a `stats_parsed` field of type `stats` added to its `add` struct: how a
/// checkpoint that keeps statistics only as structs ("Checkpoint Schema": `stats_parsed`,
/// written when `delta.checkpoint.writeStatsAsJson` is false) is read.
pub fn with_stats_parsed(schema: &Schema, stats: &DataType) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|top| match top.data_type() {
            DataType::Struct(children) if top.name() == names::ADD => {
                let mut children: Vec<Field> =
                    children.iter().map(|c| c.as_ref().clone()).collect();
                children.push(Field::new(STATS_PARSED, stats.clone(), true));
                top.as_ref()
                    .clone()
                    .with_data_type(DataType::Struct(Fields::from(children)))
            }
            _ => top.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Name of the struct-typed statistics column of checkpoint adds.
pub const STATS_PARSED: &str = "stats_parsed";

/// `schema` with the `stats` field of its `add` struct (when it is a string) as `Utf8View`.
pub fn with_stats_as_views(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|top| match top.data_type() {
            DataType::Struct(children) if top.name() == names::ADD => {
                let children: Vec<Field> = children
                    .iter()
                    .map(|c| match c.data_type() {
                        DataType::Utf8 | DataType::LargeUtf8 if c.name() == "stats" => {
                            c.as_ref().clone().with_data_type(DataType::Utf8View)
                        }
                        _ => c.as_ref().clone(),
                    })
                    .collect();
                top.as_ref()
                    .clone()
                    .with_data_type(DataType::Struct(Fields::from(children)))
            }
            _ => top.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Rows decoded per batch from newline-delimited JSON.
const JSON_BATCH_ROWS: usize = 8192;

/// Decodes newline-delimited JSON actions (a commit, a compaction or a JSON checkpoint) into
/// batches of `schema`. Errors name `file` and `version`.
pub fn decode_json_actions(
    bytes: &[u8],
    schema: &SchemaRef,
    file: &str,
    version: Option<u64>,
) -> DeltaResult<Vec<RecordBatch>> {
    // Building a decoder for the action schema costs more than decoding a small commit, so
    // each thread keeps one per schema and reuses it (a decoder is empty again after `flush`;
    // one that failed is dropped).
    thread_local! {
        static DECODERS: std::cell::RefCell<Vec<(SchemaRef, arrow::json::reader::Decoder)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let cached = DECODERS.with(|d| {
        let mut d = d.borrow_mut();
        d.iter()
            .position(|(s, _)| Arc::ptr_eq(s, schema))
            .map(|i| d.swap_remove(i).1)
    });
    let mut decoder = match cached {
        Some(d) => d,
        None => ReaderBuilder::new(schema.clone())
            .with_batch_size(JSON_BATCH_ROWS)
            .build_decoder()
            .map_err(|e| DeltaError::corrupt(file, version, format!("JSON decoder: {e}")))?,
    };
    let out = decode_with(&mut decoder, bytes, file, version)?;
    DECODERS.with(|d| {
        let mut d = d.borrow_mut();
        if d.len() < 4 {
            d.push((schema.clone(), decoder));
        }
    });
    Ok(out)
}

/// [`decode_json_actions`] with a given (empty) decoder, which is empty again on success.
fn decode_with(
    decoder: &mut arrow::json::reader::Decoder,
    bytes: &[u8],
    file: &str,
    version: Option<u64>,
) -> DeltaResult<Vec<RecordBatch>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let read = decoder
            .decode(rest)
            .map_err(|e| DeltaError::corrupt(file, version, format!("invalid action JSON: {e}")))?;
        if read == 0 {
            // The decoder is full: drain it, then continue.
            if let Some(batch) = decoder.flush().map_err(|e| {
                DeltaError::corrupt(file, version, format!("invalid action JSON: {e}"))
            })? {
                out.push(batch);
                continue;
            }
            return Err(DeltaError::corrupt(
                file,
                version,
                "JSON decoder made no progress",
            ));
        }
        rest = &rest[read..];
    }
    if let Some(batch) = decoder.flush().map_err(|e| {
        DeltaError::corrupt(
            file,
            version,
            format!("invalid or truncated action JSON: {e}"),
        )
    })? {
        out.push(batch);
    }
    let mut first_row = 0;
    for batch in &out {
        if let Some(row) = row_with_two_actions(batch) {
            return Err(DeltaError::corrupt(
                file,
                version,
                format!(
                    "JSON object {} holds more than one action (spec: \"Delta Log Entries\": \
                     every action is stored as a single-line JSON document)",
                    first_row + row + 1
                ),
            ));
        }
        first_row += batch.num_rows();
    }
    Ok(out)
}

/// The first row of `batch` in which more than one action column is non-null.
fn row_with_two_actions(batch: &RecordBatch) -> Option<usize> {
    let mut seen: Option<BooleanBuffer> = None;
    let mut twice: Option<BooleanBuffer> = None;
    for column in batch.columns() {
        let valid = match column.logical_nulls() {
            Some(nulls) => nulls.into_inner(),
            None => BooleanBuffer::new_set(batch.num_rows()),
        };
        if let Some(seen) = &seen {
            let both = seen & &valid;
            twice = Some(match twice {
                Some(t) => &t | &both,
                None => both,
            });
        }
        seen = Some(match seen {
            Some(s) => &s | &valid,
            None => valid,
        });
    }
    twice?.set_indices().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};

    #[test]
    fn a_line_with_two_actions_is_corrupt() {
        // A null action beside another is one action.
        let ok = br#"{"add":null,"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#;
        assert!(decode_json_actions(ok, &commit_schema(), "0.json", Some(0)).is_ok());
        let text = br#"{"commitInfo":{"timestamp":5}}
{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true},"metaData":{"id":"x"}}
"#;
        let err = decode_json_actions(text, &commit_schema(), "3.json", Some(3)).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(
                err,
                DeltaError::CorruptLog {
                    version: Some(3),
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            message.contains("JSON object 2 holds more than one action"),
            "{message}"
        );
        assert!(message.contains("3.json"), "{message}");
    }

    #[test]
    fn decodes_known_actions_and_ignores_unknown() {
        let text = br#"{"commitInfo":{"timestamp":5,"operation":"WRITE","extra":{"x":1}}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"someFutureAction":{"a":1}}
{"add":{"path":"a.parquet","partitionValues":{"p":"1","q":null},"size":10,"modificationTime":7,"dataChange":true,"unknownField":3}}
"#;
        let batches = decode_json_actions(text, &commit_schema(), "0.json", Some(0)).unwrap();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 4);
        let add = batches[0].column_by_name("add").unwrap().as_struct();
        assert!(add.is_valid(3));
        assert_eq!(
            add.column_by_name("path")
                .unwrap()
                .as_string::<i32>()
                .value(3),
            "a.parquet"
        );
        assert!(add.is_null(0));
    }

    #[test]
    fn truncated_line_is_corrupt_log() {
        let text = br#"{"add":{"path":"a.parquet","size":1"#;
        let err =
            decode_json_actions(text, &commit_schema(), "_delta_log/3.json", Some(3)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("3.json") && msg.contains("version 3"), "{msg}");
    }

    #[test]
    fn non_json_is_corrupt_log() {
        let err = decode_json_actions(b"hello\n", &commit_schema(), "x", Some(1)).unwrap_err();
        assert!(matches!(err, DeltaError::CorruptLog { .. }));
    }

    #[test]
    fn wrong_type_is_corrupt_log() {
        let text = br#"{"add":{"path":"a","size":"big"}}"#;
        let err = decode_json_actions(text, &commit_schema(), "x", Some(1)).unwrap_err();
        assert!(matches!(err, DeltaError::CorruptLog { .. }));
    }
}
