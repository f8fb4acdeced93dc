//! A fast path for the `add` lines of commit files.
//!
//! Spec: "Add File and Remove File", "Per-file Statistics", "Deletion Vector Descriptor
//! Schema". Commits of large tables are mostly `add` lines (one per data file). A general JSON
//! reader builds a tape of every line and then copies each value, including the `stats` text,
//! into Arrow arrays; this scanner reads each `add` line once, straight into builders: its
//! statistics are unescaped into a reused buffer and parsed into typed columns (the text is
//! never materialized as a column), and the logical-file key of each row is computed and hashed
//! here, in the parallel decoding task, rather than in the sequential replay.
//!
//! Only lines of the exact shape `{"add":{...}}` whose fields have their expected JSON types
//! take this path; every other line (other actions, unexpected types, invalid JSON, paths that
//! do not URI-decode) is left to [`crate::log::actions::decode_json_actions`], which decodes it (or
//! reports it) exactly as before.

use std::borrow::Cow;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayBuilder, ArrayRef, BooleanBufferBuilder, BooleanBuilder, Int32Builder,
    Int64Builder, MapArray, StringBuilder, StructArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, Fields};

use crate::error::DeltaResult;
use crate::log::actions::{add_fields, deletion_vector_fields, string_map};
use crate::log::file_keys::HashedKeys;
use crate::nulls::compact_struct_children;
use crate::paths::{dv_unique_id, file_key};
use crate::stats::json_scan::{Scalar, ScanError, ScanResult, Scanner};
use crate::stats::parse::StatsSchema;

/// A `map<string, string>` column being built.
#[derive(Debug, Default)]
struct MapColumn {
    keys: StringBuilder,
    values: StringBuilder,
    offsets: Vec<usize>,
    validity: Vec<bool>,
}

impl MapColumn {
    fn with_capacity(rows: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        MapColumn {
            keys: StringBuilder::new(),
            values: StringBuilder::new(),
            offsets,
            validity: Vec::with_capacity(rows),
        }
    }

    fn push(&mut self, entries: Option<&[Entry<'_>]>) {
        if let Some(entries) = entries {
            for (k, v) in entries {
                self.keys.append_value(k);
                self.values.append_option(v.as_deref());
            }
        }
        self.offsets.push(self.keys.len());
        self.validity.push(entries.is_some());
    }

    fn finish(self) -> DeltaResult<ArrayRef> {
        let DataType::Map(entry_field, sorted) = string_map() else {
            unreachable!("string_map() is a map type")
        };
        let DataType::Struct(entry_fields) = entry_field.data_type().clone() else {
            unreachable!("map entries are a struct")
        };
        let entries = StructArray::try_new(
            entry_fields,
            vec![
                // Copies of exactly the bytes used: the builders grew by doubling.
                Arc::new(self.keys.finish_cloned()) as ArrayRef,
                Arc::new(self.values.finish_cloned()),
            ],
            None,
        )?;
        let nulls = NullBuffer::from(self.validity);
        let offsets = self
            .offsets
            .iter()
            .map(|&o| i32::try_from(o))
            .collect::<Result<Vec<i32>, _>>()
            .map_err(|_| crate::error::DeltaError::Internal("map column too large".into()))?;
        Ok(Arc::new(MapArray::try_new(
            entry_field,
            OffsetBuffer::new(offsets.into()),
            entries,
            (nulls.null_count() > 0).then_some(nulls),
            sorted,
        )?))
    }
}

/// A map entry as scanned.
type Entry<'a> = (Cow<'a, str>, Option<Cow<'a, str>>);

/// One `add` line, scanned but not yet appended (strings borrowed from the line unless they
/// contain escapes).
#[derive(Debug, Default)]
struct Row<'a> {
    path: Option<Cow<'a, str>>,
    partition_values: Option<Vec<Entry<'a>>>,
    size: Option<i64>,
    modification_time: Option<i64>,
    data_change: Option<bool>,
    /// `(start, end)` of the unescaped statistics in the shared text buffer.
    stats: Option<(usize, usize)>,
    tags: Option<Vec<Entry<'a>>>,
    dv: Option<Dv<'a>>,
    base_row_id: Option<i64>,
    default_row_commit_version: Option<i64>,
    clustering_provider: Option<Cow<'a, str>>,
}

#[derive(Debug, Default)]
struct Dv<'a> {
    storage_type: Option<Cow<'a, str>>,
    path_or_inline_dv: Option<Cow<'a, str>>,
    offset: Option<i32>,
    size_in_bytes: Option<i32>,
    cardinality: Option<i64>,
}

fn string_or_null<'a>(sc: &mut Scanner<'a>) -> ScanResult<Option<Cow<'a, str>>> {
    match sc.scalar()? {
        Some(Scalar::String(s)) => Ok(Some(s)),
        Some(Scalar::Null) => Ok(None),
        _ => Err(ScanError("not a string")),
    }
}

fn int_or_null(sc: &mut Scanner<'_>) -> ScanResult<Option<i64>> {
    match sc.scalar()? {
        Some(Scalar::Null) => Ok(None),
        // Plain integers only; anything else is the general decoder's to judge.
        Some(Scalar::Number(t)) => t.parse().map(Some).map_err(|_| ScanError("not an integer")),
        _ => Err(ScanError("not an integer")),
    }
}

fn bool_or_null(sc: &mut Scanner<'_>) -> ScanResult<Option<bool>> {
    match sc.scalar()? {
        Some(Scalar::Null) => Ok(None),
        Some(Scalar::Bool(b)) => Ok(Some(b)),
        _ => Err(ScanError("not a boolean")),
    }
}

fn string_map_or_null<'a>(sc: &mut Scanner<'a>) -> ScanResult<Option<Vec<Entry<'a>>>> {
    if !sc.begin_object()? {
        return Ok(None);
    }
    let mut entries = Vec::new();
    let mut first = true;
    while let Some(key) = sc.next_key(first)? {
        first = false;
        entries.push((key, string_or_null(sc)?));
    }
    Ok(Some(entries))
}

fn dv_or_null<'a>(sc: &mut Scanner<'a>) -> ScanResult<Option<Dv<'a>>> {
    if !sc.begin_object()? {
        return Ok(None);
    }
    let mut dv = Dv::default();
    let mut seen = 0u8;
    let mut first = true;
    while let Some(key) = sc.next_key(first)? {
        first = false;
        let bit = match key.as_ref() {
            "storageType" => {
                dv.storage_type = string_or_null(sc)?;
                1
            }
            "pathOrInlineDv" => {
                dv.path_or_inline_dv = string_or_null(sc)?;
                2
            }
            "offset" => {
                dv.offset = int_or_null(sc)?
                    .map(i32::try_from)
                    .transpose()
                    .map_err(|_| ScanError("offset out of range"))?;
                4
            }
            "sizeInBytes" => {
                dv.size_in_bytes = int_or_null(sc)?
                    .map(i32::try_from)
                    .transpose()
                    .map_err(|_| ScanError("size out of range"))?;
                8
            }
            "cardinality" => {
                dv.cardinality = int_or_null(sc)?;
                16
            }
            _ => {
                sc.skip_value()?;
                0
            }
        };
        if seen & bit != 0 {
            return Err(ScanError("duplicate key"));
        }
        seen |= bit;
    }
    Ok(Some(dv))
}

/// The fields of `add` the fast path reads, in the order writers usually emit them (the
/// fields of [`add_fields`], checked by a test).
const ADD_KEYS: [&str; 11] = [
    "path",
    "partitionValues",
    "size",
    "modificationTime",
    "dataChange",
    "stats",
    "tags",
    "deletionVector",
    "baseRowId",
    "defaultRowCommitVersion",
    "clusteringProvider",
];

/// Scans one line; statistics text is appended to `stats_text`.
fn scan_line<'a>(line: &'a str, stats_text: &mut Vec<u8>) -> ScanResult<Row<'a>> {
    let mut sc = Scanner::new(line);
    if !sc.begin_object()? || !sc.try_key(true, b"add") {
        return Err(ScanError("not an add line"));
    }
    if !sc.begin_object()? {
        return Err(ScanError("null add"));
    }
    let mut row = Row::default();
    let mut seen = 0u16;
    let mut first = true;
    let mut expected = 0;
    loop {
        // The expected next key is taken in place; any other goes the general way.
        let index = match ADD_KEYS.get(expected) {
            Some(k) if sc.try_key(first, k.as_bytes()) => Some(expected),
            _ => match sc.next_key(first)? {
                Some(key) => ADD_KEYS.iter().position(|k| *k == key),
                None => break,
            },
        };
        first = false;
        let Some(index) = index else {
            sc.skip_value()?;
            continue;
        };
        expected = index + 1;
        match index {
            0 => row.path = string_or_null(&mut sc)?,
            1 => row.partition_values = string_map_or_null(&mut sc)?,
            2 => row.size = int_or_null(&mut sc)?,
            3 => row.modification_time = int_or_null(&mut sc)?,
            4 => row.data_change = bool_or_null(&mut sc)?,
            5 => {
                if !sc.null()? {
                    let start = stats_text.len();
                    sc.string_into_bytes(stats_text)?;
                    row.stats = Some((start, stats_text.len()));
                }
            }
            6 => row.tags = string_map_or_null(&mut sc)?,
            7 => row.dv = dv_or_null(&mut sc)?,
            8 => row.base_row_id = int_or_null(&mut sc)?,
            9 => row.default_row_commit_version = int_or_null(&mut sc)?,
            _ => row.clustering_provider = string_or_null(&mut sc)?,
        }
        let bit = 1u16 << index;
        if seen & bit != 0 {
            return Err(ScanError("duplicate key"));
        }
        seen |= bit;
    }
    // Exactly one action per line.
    if sc.next_key(false)?.is_some() || !sc.at_end() {
        return Err(ScanError("more than one action on the line"));
    }
    Ok(row)
}

/// The `add` actions taken by the fast path, and the lines left for the general decoder.
#[derive(Debug)]
pub struct SplitCommit {
    /// `add` structs: the fields of [`add_fields`], without `stats` when statistics were
    /// parsed. `None` when no line took the fast path.
    pub adds: Option<StructArray>,
    /// Parsed statistics of `adds`, row for row (when a statistics schema was given).
    pub stats: Option<StructArray>,
    /// The logical-file key of every row of `adds`, hashed.
    pub keys: HashedKeys,
    /// The other lines, newline-terminated, in their original order.
    pub rest: Vec<u8>,
}

/// Builders of the add columns.
#[derive(Debug)]
struct AddColumns {
    path: StringBuilder,
    partition_values: MapColumn,
    size: Int64Builder,
    modification_time: Int64Builder,
    data_change: BooleanBuilder,
    tags: MapColumn,
    dv_valid: BooleanBufferBuilder,
    dv_storage_type: StringBuilder,
    dv_path: StringBuilder,
    dv_offset: Int32Builder,
    dv_size: Int32Builder,
    dv_cardinality: Int64Builder,
    base_row_id: Int64Builder,
    default_row_commit_version: Int64Builder,
    clustering_provider: StringBuilder,
    /// Statistics ranges (only used when they are kept as text).
    stats: Vec<Option<(usize, usize)>>,
    rows: usize,
}

impl AddColumns {
    /// Builders for up to `rows` rows (string data grows as needed and is copied out exactly
    /// by [`AddColumns::finish`], so no slack is kept in the arrays).
    fn with_capacity(rows: usize) -> Self {
        AddColumns {
            path: StringBuilder::new(),
            partition_values: MapColumn::with_capacity(rows),
            size: Int64Builder::with_capacity(rows),
            modification_time: Int64Builder::with_capacity(rows),
            data_change: BooleanBuilder::with_capacity(rows),
            tags: MapColumn::with_capacity(rows),
            dv_valid: BooleanBufferBuilder::new(rows),
            dv_storage_type: StringBuilder::new(),
            dv_path: StringBuilder::new(),
            dv_offset: Int32Builder::with_capacity(rows),
            dv_size: Int32Builder::with_capacity(rows),
            dv_cardinality: Int64Builder::with_capacity(rows),
            base_row_id: Int64Builder::with_capacity(rows),
            default_row_commit_version: Int64Builder::with_capacity(rows),
            clustering_provider: StringBuilder::new(),
            stats: Vec::with_capacity(rows),
            rows: 0,
        }
    }

    fn push(&mut self, row: Row<'_>) {
        self.partition_values.push(row.partition_values.as_deref());
        self.tags.push(row.tags.as_deref());
        self.path.append_option(row.path);
        self.size.append_option(row.size);
        self.modification_time.append_option(row.modification_time);
        self.data_change.append_option(row.data_change);
        self.dv_valid.append(row.dv.is_some());
        let dv = row.dv.unwrap_or_default();
        self.dv_storage_type.append_option(dv.storage_type);
        self.dv_path.append_option(dv.path_or_inline_dv);
        self.dv_offset.append_option(dv.offset);
        self.dv_size.append_option(dv.size_in_bytes);
        self.dv_cardinality.append_option(dv.cardinality);
        self.base_row_id.append_option(row.base_row_id);
        self.default_row_commit_version
            .append_option(row.default_row_commit_version);
        self.clustering_provider
            .append_option(row.clustering_provider);
        self.stats.push(row.stats);
        self.rows += 1;
    }

    /// The struct array; `stats_text` gives the `stats` column when `keep_text` is set.
    fn finish(mut self, stats_text: Option<&str>) -> DeltaResult<StructArray> {
        let dv_nulls = NullBuffer::new(self.dv_valid.finish());
        let dv = StructArray::try_new(
            deletion_vector_fields(),
            vec![
                Arc::new(self.dv_storage_type.finish_cloned()) as ArrayRef,
                Arc::new(self.dv_path.finish_cloned()),
                Arc::new(self.dv_offset.finish()),
                Arc::new(self.dv_size.finish()),
                Arc::new(self.dv_cardinality.finish()),
            ],
            (dv_nulls.null_count() > 0).then_some(dv_nulls),
        )?;
        let stats_column = stats_text.map(|text| {
            let mut b = StringBuilder::with_capacity(self.rows, text.len());
            for range in &self.stats {
                b.append_option(range.and_then(|(s, e)| text.get(s..e)));
            }
            Arc::new(b.finish()) as ArrayRef
        });
        let mut fields = Vec::new();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for field in add_fields().iter() {
            let column: ArrayRef = match field.name().as_str() {
                "path" => Arc::new(self.path.finish_cloned()),
                "partitionValues" => std::mem::take(&mut self.partition_values).finish()?,
                "size" => Arc::new(self.size.finish()),
                "modificationTime" => Arc::new(self.modification_time.finish()),
                "dataChange" => Arc::new(self.data_change.finish()),
                "stats" => match &stats_column {
                    Some(c) => c.clone(),
                    None => continue,
                },
                "tags" => std::mem::take(&mut self.tags).finish()?,
                "deletionVector" => Arc::new(dv.clone()),
                "baseRowId" => Arc::new(self.base_row_id.finish()),
                "defaultRowCommitVersion" => Arc::new(self.default_row_commit_version.finish()),
                "clusteringProvider" => Arc::new(self.clustering_provider.finish_cloned()),
                other => {
                    return Err(crate::error::DeltaError::Internal(format!(
                        "add field {other} has no fast-path column"
                    )))
                }
            };
            fields.push(field.clone());
            columns.push(column);
        }
        Ok(StructArray::try_new(Fields::from(fields), columns, None)?)
    }
}

/// The key of a scanned row (`None` when it has no path or the path does not decode: the
/// general decoder and replay then report it).
fn row_key<'r>(row: &'r Row<'_>) -> Option<Cow<'r, str>> {
    let path = row.path.as_deref()?;
    let dv_id = row.dv.as_ref().and_then(|dv| {
        Some(dv_unique_id(
            dv.storage_type.as_deref()?,
            dv.path_or_inline_dv.as_deref()?,
            dv.offset,
        ))
    });
    file_key(path, dv_id.as_deref()).ok()
}

/// Splits a commit file into its `add` lines (decoded, statistics parsed with `stats` when
/// given, kept as text otherwise) and the rest.
pub fn split_commit(bytes: &[u8], stats: Option<&StatsSchema>) -> DeltaResult<SplitCommit> {
    let mut keys = HashedKeys::default();
    let Ok(text) = std::str::from_utf8(bytes) else {
        // Not UTF-8: the general decoder reports it.
        return Ok(SplitCommit {
            adds: None,
            stats: None,
            keys,
            rest: bytes.to_vec(),
        });
    };
    let lines = memchr::memchr_iter(b'\n', bytes).count() + 1;
    let mut columns = AddColumns::with_capacity(lines);
    // The unescaped statistics are shorter than the file: one allocation, never regrown.
    let mut stats_text = Vec::with_capacity(bytes.len());
    let mut rest = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(text.len(), |i| start + i + 1);
        // Ends at a newline (ASCII) or the end: a character boundary.
        let line = &text[start..end];
        start = end;
        let trimmed = line.trim_start();
        if !trimmed.starts_with("{\"add\"") {
            rest.extend_from_slice(line.as_bytes());
            if !line.ends_with('\n') {
                rest.push(b'\n');
            }
            continue;
        }
        let mark = stats_text.len();
        let scanned = scan_line(line, &mut stats_text).ok().and_then(|row| {
            let key = row_key(&row)?;
            keys.push(&key);
            Some(row)
        });
        match scanned {
            Some(row) => columns.push(row),
            None => {
                stats_text.truncate(mark);
                rest.extend_from_slice(line.as_bytes());
                if !line.ends_with('\n') {
                    rest.push(b'\n');
                }
            }
        }
    }
    if columns.rows == 0 {
        return Ok(SplitCommit {
            adds: None,
            stats: None,
            keys,
            rest,
        });
    }
    // Decoded from valid UTF-8 (escapes decode to characters): validated once, not per row.
    let stats_text = std::str::from_utf8(&stats_text).map_err(|e| {
        crate::error::DeltaError::Internal(format!("statistics text is not UTF-8: {e}"))
    })?;
    let (adds, parsed) = match stats {
        Some(schema) => {
            let ranges = std::mem::take(&mut columns.stats);
            let parsed = schema.parse_texts(
                ranges.len(),
                ranges
                    .iter()
                    .map(|r| r.and_then(|(s, e)| stats_text.get(s..e)).unwrap_or("")),
            )?;
            (columns.finish(None)?, Some(parsed))
        }
        None => (columns.finish(Some(stats_text))?, None),
    };
    // Columns null in every row give their buffers back at once (see `crate::nulls`).
    Ok(SplitCommit {
        adds: Some(compact_struct_children(&adds)),
        stats: parsed.as_ref().map(compact_struct_children),
        keys,
        rest,
    })
}

/// The `add` field of a commit batch for `adds` (its own type).
pub fn add_field(adds: &StructArray) -> Field {
    Field::new(
        crate::log::actions::names::ADD,
        adds.data_type().clone(),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::actions::{commit_schema, decode_json_actions};
    use arrow::array::AsArray;
    use arrow::compute::{concat, filter, is_not_null};
    use proptest::prelude::*;

    /// The `add` rows of `text` as the general decoder reads them.
    fn general_adds(text: &[u8]) -> StructArray {
        let batches = decode_json_actions(text, &commit_schema(), "t", Some(0)).unwrap();
        let parts: Vec<ArrayRef> = batches
            .iter()
            .map(|b| {
                let add = b.column_by_name("add").unwrap();
                filter(add, &is_not_null(add).unwrap()).unwrap()
            })
            .collect();
        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        concat(&refs).unwrap().as_struct().clone()
    }

    fn assert_fast_path_matches(text: &str, fast_rows: usize) {
        let split = split_commit(text.as_bytes(), None).unwrap();
        let expected = general_adds(text.as_bytes());
        let fast = split
            .adds
            .clone()
            .unwrap_or_else(|| StructArray::new_empty_fields(0, None));
        assert_eq!(fast.len(), fast_rows, "{text}");
        assert_eq!(split.keys.len(), fast_rows);
        // Fast rows first, then what the general decoder makes of the rest.
        let rest = if split.rest.is_empty() {
            None
        } else {
            Some(general_adds(&split.rest))
        };
        let mut got: Vec<ArrayRef> = Vec::new();
        if fast_rows > 0 {
            got.push(Arc::new(fast));
        }
        if let Some(r) = rest.filter(|r| !r.is_empty()) {
            got.push(Arc::new(r));
        }
        let refs: Vec<&dyn Array> = got.iter().map(|a| a.as_ref()).collect();
        let got = concat(&refs).unwrap();
        assert_eq!(got.data_type(), expected.data_type(), "{text}");
        // Lines the fast path leaves to the general decoder come after its own rows, so the
        // order within a commit may differ (it carries no meaning: "Action Reconciliation"
        // keys files by path and deletion vector, and a commit adds a file once).
        let rows = |a: &StructArray| {
            let mut out: Vec<String> = (0..a.len())
                .map(|i| format!("{:?}", a.slice(i, 1)))
                .collect();
            out.sort();
            out
        };
        assert_eq!(rows(got.as_struct()), rows(&expected), "{text}");
    }

    #[test]
    fn lines_left_to_the_general_decoder_keep_their_rows() {
        // proptest's minimal case: "%A0" is no percent-encoded UTF-8, so the fast path leaves
        // the line to the general decoder and the rows come out in another order.
        assert_fast_path_matches(
            "{\"add\":{\"path\":\"%A0\"}}\n{\"add\":{\"path\":\"\"}}\n",
            1,
        );
    }

    #[test]
    fn fast_path_keys_are_the_add_fields() {
        let names: Vec<String> = add_fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ADD_KEYS);
    }

    #[test]
    fn add_lines_decode_like_the_general_decoder() {
        let text = concat!(
            r#"{"commitInfo":{"timestamp":5}}"#,
            "\n",
            r#"{"add":{"path":"p%20q/a.parquet","partitionValues":{"p":"1","q":null},"size":10,"modificationTime":7,"dataChange":true,"stats":"{\"numRecords\":3,\"minValues\":{\"a\":\"x\\\"y\"}}","tags":{"t":"v"},"unknown":{"deep":[1,2,{"x":"}"}]}}}"#,
            "\n",
            r#"{"add":{"path":"b.parquet","partitionValues":{},"size":1,"modificationTime":2,"dataChange":false,"stats":null,"tags":null,"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":4,"sizeInBytes":40,"cardinality":6},"baseRowId":7,"defaultRowCommitVersion":8,"clusteringProvider":"liquid"}}"#,
            "\n",
            r#"{"remove":{"path":"c.parquet","deletionTimestamp":1,"dataChange":true}}"#,
            "\n",
            r#"  {"add":{"path":"\u00e9\ud83d\ude00.parquet","size":3}}"#,
            "\n",
            r#"{"add":{"path":"d.parquet","deletionVector":null,"partitionValues":{"k":"a\nb"}}}"#
        );
        assert_fast_path_matches(text, 4);
    }

    #[test]
    fn unusual_lines_take_the_general_path() {
        for (line, fast) in [
            // Two actions on a line, an add that is null, a path that does not URI-decode,
            // numbers the fast path does not read, a duplicate key.
            (r#"{"add":{"path":"a","size":1},"commitInfo":{}}"#, 0),
            (r#"{"add":null}"#, 0),
            (r#"{"add":{"path":"bad%FF","size":1}}"#, 0),
            (r#"{"add":{"path":"a","size":1.0}}"#, 0),
            (r#"{"add":{"path":"a","size":"12"}}"#, 0),
            (r#"{"add":{"path":"a","path":"b"}}"#, 0),
            (r#"{"add":{"path":"a","size":1}}"#, 1),
        ] {
            let split = split_commit(line.as_bytes(), None).unwrap();
            let rows = split.adds.as_ref().map_or(0, |a| a.len());
            assert_eq!(rows, fast, "{line}");
            assert_eq!(split.rest.is_empty(), fast == 1, "{line}");
        }
        // Invalid JSON is left for the general decoder to report.
        let split = split_commit(br#"{"add":{"path":"a","size":1"#, None).unwrap();
        assert!(split.adds.is_none());
        assert!(decode_json_actions(&split.rest, &commit_schema(), "t", Some(1)).is_err());
        let split = split_commit(b"{\"add\":{\"path\":\"\xff\"}}\n", None).unwrap();
        assert!(split.adds.is_none() && !split.rest.is_empty());
    }

    #[test]
    fn statistics_are_parsed_when_a_schema_is_given() {
        use arrow::datatypes::{Int64Type, Schema};
        let schema = Schema::new(vec![Field::new("id", DataType::Int64, true)]);
        let stats = StatsSchema::new(&schema, &schema);
        let text = concat!(
            r#"{"add":{"path":"a","stats":"{\"numRecords\":3,\"minValues\":{\"id\":-2}}"}}"#,
            "\n",
            r#"{"add":{"path":"b"}}"#,
            "\n"
        );
        let split = split_commit(text.as_bytes(), Some(&stats)).unwrap();
        let adds = split.adds.unwrap();
        assert!(adds.column_by_name("stats").is_none());
        let parsed = split.stats.unwrap();
        let n = parsed.column_by_name("numRecords").unwrap();
        assert_eq!(n.as_primitive::<Int64Type>().value(0), 3);
        assert!(n.is_null(1));
        let min = parsed.column_by_name("minValues").unwrap().as_struct();
        assert_eq!(min.column(0).as_primitive::<Int64Type>().value(0), -2);
    }

    fn arb_string() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9=/._-]{0,12}", ".{0,8}", Just("a%20b".to_string()),]
    }

    fn arb_opt<T: std::fmt::Debug + Clone + 'static>(
        s: impl Strategy<Value = T> + 'static,
    ) -> impl Strategy<Value = Option<T>> {
        proptest::option::of(s)
    }

    proptest! {
        #[test]
        fn random_add_lines_match_the_general_decoder(
            rows in proptest::collection::vec(
                (
                    arb_string(),
                    arb_opt(proptest::collection::vec((arb_string(), arb_opt(arb_string())), 0..3)),
                    arb_opt(any::<i64>()),
                    arb_opt(any::<bool>()),
                    arb_opt(arb_string()),
                    arb_opt((arb_string(), arb_string(), arb_opt(any::<i32>()), any::<i64>())),
                ),
                1..6,
            )
        ) {
            let mut text = String::new();
            for (path, pv, size, dc, stats, dv) in &rows {
                let mut add = serde_json::Map::new();
                add.insert("path".into(), path.clone().into());
                if let Some(pv) = pv {
                    let m: serde_json::Map<String, serde_json::Value> = pv
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone().map_or(serde_json::Value::Null, Into::into)))
                        .collect();
                    add.insert("partitionValues".into(), m.into());
                }
                if let Some(s) = size { add.insert("size".into(), (*s).into()); }
                if let Some(d) = dc { add.insert("dataChange".into(), (*d).into()); }
                if let Some(s) = stats { add.insert("stats".into(), s.clone().into()); }
                if let Some((st, p, off, card)) = dv {
                    add.insert("deletionVector".into(), serde_json::json!({
                        "storageType": st, "pathOrInlineDv": p, "offset": off, "cardinality": card,
                    }));
                }
                let line = serde_json::json!({ "add": add });
                text.push_str(&line.to_string());
                text.push('\n');
            }
            // Paths that do not URI-decode fall back; everything decodes to the same rows.
            let fast = rows.iter().filter(|r| crate::paths::decode_uri_path(&r.0).is_ok()).count();
            assert_fast_path_matches(&text, fast);
        }
    }
}
