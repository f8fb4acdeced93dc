//! The rows of a checkpoint: a snapshot's actions as Arrow batches of the checkpoint schema.
//!
//! Spec: "Checkpoints" (what a checkpoint must hold; `remove` without `stats` and `tags`;
//! `stats` as JSON per `delta.checkpoint.writeStatsAsJson`, `stats_parsed` and
//! `partitionValues_parsed` per `delta.checkpoint.writeStatsAsStruct`), "Checkpoint Schema"
//! (the layout, physical names under column mapping, `readerFeatures`/`writerFeatures` rules),
//! "V2 Spec" (`checkpointMetadata`, `sidecar`), "Sidecar Files" (only `add` and `remove`).
//!
//! The snapshot keeps statistics parsed (see [`crate::stats`]), so the `stats` JSON is written
//! back from the typed columns by arrow-json's encoders, column by column and without
//! intermediate values: `numRecords`, `minValues`, `maxValues`, `nullCount`, `tightBounds` as
//! parsed, timestamps in milliseconds ("Per-file Statistics"). Every row holds exactly one
//! action: the other action columns of a batch are null.

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, RecordBatch, StringBuilder, StructArray,
};
use arrow::compute::cast;
use arrow::datatypes::{
    DataType, Date32Type, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit,
    TimestampMicrosecondType,
};
use arrow::json::writer::{make_encoder, Encoder, EncoderFactory, EncoderOptions, NullableEncoder};
use serde_json::{json, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::log::actions::{self, names, STATS_PARSED};
use crate::model::{DomainMetadata, Protocol, Txn};
use crate::nulls::shared_null_array;
use crate::scan::partition_values::{parse_partition_column, partition_texts};
use crate::schema::physical_schema;
use crate::snapshot::files::FileBatch;
use crate::snapshot::Snapshot;

/// Name of the typed partition values of checkpoint adds.
pub const PARTITION_VALUES_PARSED: &str = "partitionValues_parsed";

/// `delta.checkpoint.writeStatsAsJson` (default true).
pub const WRITE_STATS_AS_JSON: &str = "delta.checkpoint.writeStatsAsJson";
/// `delta.checkpoint.writeStatsAsStruct` (default false).
pub const WRITE_STATS_AS_STRUCT: &str = "delta.checkpoint.writeStatsAsStruct";

/// What the `add` column of a table's checkpoint holds.
#[derive(Debug, Clone)]
pub struct CheckpointLayout {
    /// Partition columns as (key in `partitionValues`, typed field named by that key).
    partitions: Vec<Field>,
    add_fields: Fields,
}

/// `remove` in a checkpoint: no `stats`, no `tags` ("Checkpoint Schema").
pub fn remove_fields() -> Fields {
    actions::remove_fields()
        .iter()
        .filter(|f| f.name() != "tags" && f.name() != "stats")
        .cloned()
        .collect()
}

fn struct_field(name: &str, fields: Fields) -> Field {
    Field::new(name, DataType::Struct(fields), true)
}

impl CheckpointLayout {
    /// The layout of `snapshot`'s checkpoint, from its table properties and schema.
    pub fn for_snapshot(snapshot: &Snapshot) -> DeltaResult<Self> {
        let config = snapshot.configuration();
        let stats_json = crate::maintenance::intervals::flag(&config, WRITE_STATS_AS_JSON, true);
        let stats_struct =
            crate::maintenance::intervals::flag(&config, WRITE_STATS_AS_STRUCT, false);
        let mut partitions = Vec::new();
        if stats_struct {
            if let Ok(metadata) = snapshot.metadata() {
                let logical = snapshot.schema()?;
                let physical =
                    physical_schema(&logical, snapshot.column_mapping_mode()?).map_err(|e| {
                        DeltaError::corrupt("_delta_log", Some(snapshot.version()), e.to_string())
                    })?;
                for column in &metadata.partition_columns {
                    let index = logical
                        .fields()
                        .iter()
                        .position(|f| f.name() == column)
                        .ok_or_else(|| {
                            DeltaError::corrupt(
                                "_delta_log",
                                Some(snapshot.version()),
                                format!("partition column {column} is not in the schema"),
                            )
                        })?;
                    let field = physical.field(index);
                    partitions.push(Field::new(field.name(), field.data_type().clone(), true));
                }
            }
        }
        let stats_type = snapshot.stats_schema().physical_type();
        let mut add_fields: Vec<FieldRef> = actions::add_fields()
            .iter()
            .filter(|f| stats_json || f.name() != "stats")
            .cloned()
            .collect();
        if stats_struct {
            if !partitions.is_empty() {
                add_fields.push(Arc::new(struct_field(
                    PARTITION_VALUES_PARSED,
                    Fields::from(partitions.clone()),
                )));
            }
            add_fields.push(Arc::new(Field::new(STATS_PARSED, stats_type.clone(), true)));
        }
        Ok(CheckpointLayout {
            partitions,
            add_fields: Fields::from(add_fields),
        })
    }

    /// The `add` struct's fields.
    pub fn add_fields(&self) -> &Fields {
        &self.add_fields
    }

    /// The schema of a sidecar: `add` and `remove` only ("Sidecar Files").
    pub fn sidecar_schema(&self) -> SchemaRef {
        Arc::new(Schema::new(vec![
            struct_field(names::ADD, self.add_fields.clone()),
            struct_field(names::REMOVE, remove_fields()),
        ]))
    }

    /// The schema of a checkpoint file: every action of "Checkpoint Schema", and with `v2` the
    /// `checkpointMetadata` and `sidecar` actions of the "V2 Spec".
    pub fn checkpoint_schema(&self, v2: bool) -> SchemaRef {
        let mut fields = vec![
            struct_field(names::TXN, actions::txn_fields()),
            struct_field(names::ADD, self.add_fields.clone()),
            struct_field(names::REMOVE, remove_fields()),
            struct_field(names::METADATA, actions::metadata_fields()),
            struct_field(names::PROTOCOL, actions::protocol_fields()),
            struct_field(names::DOMAIN_METADATA, actions::domain_metadata_fields()),
        ];
        if v2 {
            fields.push(struct_field(
                names::CHECKPOINT_METADATA,
                actions::checkpoint_metadata_fields(),
            ));
            fields.push(struct_field(names::SIDECAR, actions::sidecar_fields()));
        }
        Arc::new(Schema::new(fields))
    }

    /// The files of `files` as checkpoint `add` structs.
    pub fn add_rows(&self, files: &FileBatch) -> DeltaResult<StructArray> {
        let (adds, stats, len) = (&files.adds, &files.stats, files.len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.add_fields.len());
        for field in self.add_fields.iter() {
            let column = match field.name().as_str() {
                "stats" => Arc::new(stats_json(stats)?) as ArrayRef,
                STATS_PARSED => conform(Some(&(Arc::new(stats.clone()) as ArrayRef)), field, len)?,
                PARTITION_VALUES_PARSED => {
                    Arc::new(self.partition_values_parsed(adds, field)?) as ArrayRef
                }
                name => conform(adds.column_by_name(name), field, len)?,
            };
            columns.push(column);
        }
        Ok(StructArray::try_new(
            self.add_fields.clone(),
            columns,
            None,
        )?)
    }

    /// `partitionValues_parsed`: each partition column's value string typed.
    fn partition_values_parsed(
        &self,
        adds: &StructArray,
        field: &Field,
    ) -> DeltaResult<StructArray> {
        let DataType::Struct(fields) = field.data_type() else {
            return Err(DeltaError::Internal(
                "partitionValues_parsed is a struct".into(),
            ));
        };
        let map = adds
            .column_by_name("partitionValues")
            .and_then(|c| c.as_map_opt());
        let mut columns = Vec::with_capacity(self.partitions.len());
        for part in &self.partitions {
            let texts = partition_texts(map, adds.len(), part.name());
            let column = match parse_partition_column(texts.iter().copied(), part.data_type()) {
                Ok(c) => c,
                // A value that does not parse is null here; the string stays in
                // `partitionValues` (readers report it when they read the file).
                Err(_) => {
                    let singles = texts
                        .iter()
                        .map(|t| {
                            parse_partition_column(std::iter::once(*t), part.data_type())
                                .unwrap_or_else(|_| new_null_array(part.data_type(), 1))
                        })
                        .collect::<Vec<_>>();
                    let refs: Vec<&dyn Array> = singles.iter().map(|a| a.as_ref()).collect();
                    if refs.is_empty() {
                        new_null_array(part.data_type(), 0)
                    } else {
                        arrow::compute::concat(&refs)?
                    }
                }
            };
            columns.push(column);
        }
        Ok(StructArray::try_new_with_length(
            fields.clone(),
            columns,
            None,
            adds.len(),
        )?)
    }
}

/// `column` with the type of `field` (cast when it differs, nulls when it is missing).
fn conform(column: Option<&ArrayRef>, field: &Field, len: usize) -> DeltaResult<ArrayRef> {
    Ok(match column {
        Some(c) if c.data_type() == field.data_type() => c.clone(),
        Some(c) if c.null_count() == c.len() => shared_null_array(field.data_type(), len),
        Some(c) => cast(c, field.data_type())?,
        None => shared_null_array(field.data_type(), len),
    })
}

/// Checkpoint `remove` structs of snapshot tombstones (`stats` and `tags` dropped).
pub fn remove_rows(removes: &StructArray) -> DeltaResult<StructArray> {
    let fields = remove_fields();
    let columns = fields
        .iter()
        .map(|f| conform(removes.column_by_name(f.name()), f, removes.len()))
        .collect::<DeltaResult<Vec<_>>>()?;
    Ok(StructArray::try_new_with_length(
        fields,
        columns,
        None,
        removes.len(),
    )?)
}

/// The JSON text of parsed statistics, one per row (null where a file has none).
pub fn stats_json(stats: &StructArray) -> DeltaResult<arrow::array::StringArray> {
    let options = EncoderOptions::default()
        .with_explicit_nulls(false)
        .with_encoder_factory(Arc::new(TemporalEncoders));
    let field: FieldRef = Arc::new(Field::new("stats", stats.data_type().clone(), true));
    let array: ArrayRef = Arc::new(stats.clone());
    let mut encoder = make_encoder(&field, array.as_ref(), &options)?;
    // About 270 bytes for five columns of statistics; the builder grows past this as needed.
    let mut out = StringBuilder::with_capacity(stats.len(), stats.len() * 320);
    let mut buffer = Vec::with_capacity(512);
    for row in 0..stats.len() {
        if stats.is_null(row) || !has_any_value(stats, row) {
            out.append_null();
            continue;
        }
        buffer.clear();
        encoder.encode(row, &mut buffer);
        // The encoder writes valid UTF-8 JSON.
        match std::str::from_utf8(&buffer) {
            Ok(text) => out.append_value(text),
            Err(_) => out.append_null(),
        }
    }
    Ok(out.finish())
}

/// JSON encoders for dates and microsecond timestamps as "Per-file Statistics" writes them
/// (`2024-01-31`, `2024-01-31T12:30:05.123Z`, without `Z` for `timestamp_ntz`), truncated to
/// milliseconds; written directly, without a formatting library or time zone database.
#[derive(Debug)]
struct TemporalEncoders;

impl EncoderFactory for TemporalEncoders {
    fn make_default_encoder<'a>(
        &self,
        _field: &'a FieldRef,
        array: &'a dyn Array,
        _options: &'a EncoderOptions,
    ) -> Result<Option<NullableEncoder<'a>>, arrow::error::ArrowError> {
        let nulls = array.nulls().cloned();
        Ok(match array.data_type() {
            DataType::Timestamp(TimeUnit::Microsecond, tz) => Some(NullableEncoder::new(
                Box::new(TimestampEncoder {
                    values: array.as_primitive::<TimestampMicrosecondType>(),
                    zoned: tz.is_some(),
                }),
                nulls,
            )),
            DataType::Date32 => Some(NullableEncoder::new(
                Box::new(DateEncoder(array.as_primitive::<Date32Type>())),
                nulls,
            )),
            _ => None,
        })
    }
}

struct TimestampEncoder<'a> {
    values: &'a arrow::array::TimestampMicrosecondArray,
    zoned: bool,
}

impl Encoder for TimestampEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let millis = self.values.value(idx).div_euclid(1000);
        let days = millis.div_euclid(86_400_000);
        let in_day = millis.rem_euclid(86_400_000);
        out.push(b'"');
        push_date(days, out);
        out.push(b'T');
        push_digits(in_day / 3_600_000, 2, out);
        out.push(b':');
        push_digits(in_day / 60_000 % 60, 2, out);
        out.push(b':');
        push_digits(in_day / 1000 % 60, 2, out);
        out.push(b'.');
        push_digits(in_day % 1000, 3, out);
        if self.zoned {
            out.push(b'Z');
        }
        out.push(b'"');
    }
}

struct DateEncoder<'a>(&'a arrow::array::Date32Array);

impl Encoder for DateEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        out.push(b'"');
        push_date(i64::from(self.0.value(idx)), out);
        out.push(b'"');
    }
}

/// Non-negative `value` in decimal, zero-padded to `width` digits.
fn push_digits(value: i64, width: usize, out: &mut Vec<u8>) {
    let mut digits = [b'0'; 20];
    let mut v = value.unsigned_abs();
    let mut n = 0;
    while v > 0 || n == 0 {
        digits[19 - n] = b'0' + (v % 10) as u8;
        v /= 10;
        n += 1;
    }
    for _ in n..width {
        out.push(b'0');
    }
    out.extend_from_slice(&digits[20 - n..]);
}

/// The proleptic Gregorian date of `days` since 1970-01-01 as `YYYY-MM-DD` (civil from days;
/// years outside 0..=9999 get a sign, as ISO 8601's expanded years do).
fn push_date(days: i64, out: &mut Vec<u8>) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        out.push(if year < 0 { b'-' } else { b'+' });
    }
    push_digits(year.abs(), 4, out);
    out.push(b'-');
    push_digits(month, 2, out);
    out.push(b'-');
    push_digits(day, 2, out);
}

/// Whether row `row` of parsed statistics holds anything (`numRecords` or a value).
fn has_any_value(stats: &StructArray, row: usize) -> bool {
    stats.columns().iter().any(|c| match c.as_struct_opt() {
        Some(child) => child.is_valid(row) && has_any_value(child, row),
        None => c.is_valid(row),
    })
}

/// The `protocol` action as a checkpoint writes it: `readerFeatures` non-null exactly on
/// reader version 3, `writerFeatures` exactly on writer version 7 ("Checkpoint Schema").
pub fn protocol_action(p: &Protocol) -> Value {
    let reader = (p.min_reader_version >= 3).then(|| p.reader_features.clone().unwrap_or_default());
    let writer = (p.min_writer_version >= 7).then(|| p.writer_features.clone().unwrap_or_default());
    json!({"protocol": {
        "minReaderVersion": p.min_reader_version,
        "minWriterVersion": p.min_writer_version,
        "readerFeatures": reader,
        "writerFeatures": writer,
    }})
}

/// The `txn` action.
pub fn txn_action(t: &Txn) -> Value {
    json!({"txn": {"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated}})
}

/// The `domainMetadata` action of a live domain.
pub fn domain_action(d: &DomainMetadata) -> Value {
    json!({"domainMetadata": {
        "domain": d.domain,
        "configuration": d.configuration,
        "removed": false,
    }})
}

/// The non-file actions of `snapshot` (protocol, metadata, txns, domain metadata), in the order
/// a checkpoint lists them.
pub fn non_file_actions(snapshot: &Snapshot) -> Vec<Value> {
    let mut out = vec![protocol_action(snapshot.protocol())];
    if let Ok(m) = snapshot.metadata() {
        out.push(m.to_action());
    }
    out.extend(snapshot.transactions().values().map(txn_action));
    out.extend(snapshot.domain_metadata().iter().map(domain_action));
    out
}

/// Decodes non-file action JSON values into one batch of `schema` (a handful of rows; the
/// `add` and `remove` columns, typed by the table's statistics, are null).
pub fn actions_batch(actions: &[Value], schema: &SchemaRef) -> DeltaResult<RecordBatch> {
    let decoded: Vec<FieldRef> = schema
        .fields()
        .iter()
        .filter(|f| f.name() != names::ADD && f.name() != names::REMOVE)
        .cloned()
        .collect();
    let decoded = Arc::new(Schema::new(decoded));
    let mut decoder = arrow::json::ReaderBuilder::new(decoded.clone())
        .with_batch_size(actions.len().max(1))
        .build_decoder()?;
    decoder.serialize(actions)?;
    let batch = decoder
        .flush()?
        .unwrap_or_else(|| RecordBatch::new_empty(decoded.clone()));
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            batch
                .column_by_name(f.name())
                .cloned()
                .unwrap_or_else(|| new_null_array(f.data_type(), batch.num_rows()))
        })
        .collect();
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// A batch of `schema` whose column `name` is `array` and whose other columns are null.
pub fn one_action_batch(
    schema: &SchemaRef,
    name: &str,
    array: StructArray,
) -> DeltaResult<RecordBatch> {
    let len = array.len();
    let mut array = Some(Arc::new(array) as ArrayRef);
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            if f.name() == name {
                array
                    .take()
                    .ok_or_else(|| DeltaError::Internal(format!("two {name} columns")))
            } else {
                // Shared zeroed memory: the other actions' columns cost no allocation.
                Ok(shared_null_array(f.data_type(), len))
            }
        })
        .collect::<DeltaResult<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, TimestampMicrosecondArray};

    #[test]
    fn stats_text_from_parsed_columns() {
        let ts: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![Some(1_600_000_000_123_456), None])
                .with_timezone("UTC"),
        );
        let ids: ArrayRef = Arc::new(Int64Array::from(vec![Some(3), None]));
        let min = StructArray::from(vec![
            (
                Arc::new(Field::new("id", DataType::Int64, true)),
                ids.clone(),
            ),
            (Arc::new(Field::new("ts", ts.data_type().clone(), true)), ts),
        ]);
        let stats = StructArray::from(vec![
            (
                Arc::new(Field::new("numRecords", DataType::Int64, true)),
                Arc::new(Int64Array::from(vec![Some(10), None])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("minValues", min.data_type().clone(), true)),
                Arc::new(min) as ArrayRef,
            ),
        ]);
        let text = stats_json(&stats).unwrap();
        assert_eq!(
            text.value(0),
            r#"{"numRecords":10,"minValues":{"id":3,"ts":"2020-09-13T12:26:40.123Z"}}"#
        );
        assert!(text.is_null(1), "no value at all: no statistics");
    }

    #[test]
    fn dates_and_timestamps_agree_with_chrono() {
        for micros in [
            0i64,
            1,
            -1,
            999,
            1_600_000_000_123_456,
            -62_135_596_800_000_000,
            253_402_300_799_999_999,
            951_782_400_000_000,
            -86_400_000_001,
        ] {
            let array = arrow::array::TimestampMicrosecondArray::from(vec![micros]);
            let mut out = Vec::new();
            TimestampEncoder {
                values: &array,
                zoned: true,
            }
            .encode(0, &mut out);
            let t =
                chrono::DateTime::from_timestamp_micros(micros.div_euclid(1000) * 1000).unwrap();
            let expected = format!("\"{}\"", t.format("%Y-%m-%dT%H:%M:%S%.3fZ"));
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{micros}");
        }
        for days in [-719_162i32, -1, 0, 59, 10_957, 11_016, 2_932_896] {
            let array = arrow::array::Date32Array::from(vec![days]);
            let mut out = Vec::new();
            DateEncoder(&array).encode(0, &mut out);
            let d = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()
                + chrono::Duration::days(i64::from(days));
            let expected = format!("\"{}\"", d.format("%Y-%m-%d"));
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[test]
    fn protocol_feature_lists_follow_versions() {
        let legacy = Protocol {
            min_reader_version: 1,
            min_writer_version: 2,
            reader_features: Some(vec![]),
            writer_features: None,
        };
        let v = protocol_action(&legacy);
        assert!(v["protocol"]["readerFeatures"].is_null());
        assert!(v["protocol"]["writerFeatures"].is_null());
        let writer_only = Protocol {
            min_reader_version: 1,
            min_writer_version: 7,
            reader_features: None,
            writer_features: Some(vec!["appendOnly".into()]),
        };
        let v = protocol_action(&writer_only);
        assert!(v["protocol"]["readerFeatures"].is_null());
        assert_eq!(v["protocol"]["writerFeatures"], json!(["appendOnly"]));
        let full = Protocol {
            min_reader_version: 3,
            min_writer_version: 7,
            reader_features: None,
            writer_features: None,
        };
        let v = protocol_action(&full);
        assert_eq!(v["protocol"]["readerFeatures"], json!([]));
    }
}
