//! Reading log files into Arrow batches of the canonical action schema.
//!
//! Spec: "Delta Log Entries" (newline-delimited JSON commits), "Log Compaction Files",
//! "Checkpoints" and "Checkpoint Schema" (actions as struct columns of parquet; missing columns
//! null), "V2 Spec" and "Sidecar Files" (file actions of a V2 checkpoint may live in
//! `_delta_log/_sidecars/`). Only the columns replay needs are read from parquet.

//!
//! Here: JSON commits and compactions, and the small reads of them (protocol and metadata,
//! commitInfo); checkpoint parts and sidecars are read by [`super::checkpoint_reader`].

use std::borrow::Cow;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StructArray};
use arrow::datatypes::Schema;
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::error::{DeltaError, DeltaResult};
use crate::log::actions::{self, decode_json_actions, names};
use crate::log::add_lines::{add_field, split_commit};
use crate::log::file_keys::HashedKeys;
use crate::log::segment::{Delta, LogFile};
use crate::snapshot::files::without_field;
use crate::stats::parse::StatsSchema;
use crate::storage::Storage;

/// How many log files are fetched and decoded at once.
pub(crate) const CONCURRENCY: usize = 16;

/// The decoded actions of one commit or compaction.
#[derive(Debug)]
pub struct DeltaBatches {
    /// The newest version the file covers.
    pub version: u64,
    /// Batches of [`actions::commit_schema`]; when statistics were parsed, the `add` column
    /// lacks its `stats` field.
    pub batches: Vec<RecordBatch>,
    /// Per batch, the statistics parsed from its `add` rows (row-aligned), when a statistics
    /// schema was given.
    pub stats: Vec<Option<StructArray>>,
    /// Per batch, the hashed logical-file keys of its `add` rows (row-aligned), when the
    /// decoder computed them ([`crate::log::add_lines`]).
    pub add_keys: Vec<Option<HashedKeys>>,
}

/// How the lines of a log file are ordered relative to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineOrder {
    /// A commit: its actions are one version and not ordered ("Action Reconciliation" allows
    /// at most one file action per logical file in it), so `add` lines may take the fast path.
    Unordered,
    /// A log compaction file, read as a sequence of actions from newest to oldest: its first
    /// action for a logical file `(path, deletionVector.uniqueId)`, an `appId`, a domain, or
    /// its first `protocol` / `metaData`, is the newest ("Action Reconciliation": first seen
    /// wins, as in a newest-first replay of the commits). The spec's compactions are
    /// reconciled (one action per key, so their order does not matter), but the files
    /// Databricks Runtime writes were measured to list their commits newest first, each
    /// commit's actions in their original order, unreconciled (an `add` and a `remove` of one
    /// file both present) and with `cdc` lines; replayed first-seen-wins in file order they
    /// give exactly the state of the commits they replace ("Log Compaction Files"), replayed
    /// last-line-wins they do not. Decoded by the general decoder, rows in file order (a
    /// large file in line-aligned chunks on several threads), so that `add` and `remove` rows
    /// reach replay in one sequence.
    NewestFirst,
}

/// Decodes one commit or compaction file: `add` lines through the fast path, the other lines
/// through the general JSON decoder (statistics split off when a schema is given). Files whose
/// lines are ordered ([`LineOrder::NewestFirst`]) are decoded whole by the general decoder,
/// rows in file order.
pub(crate) fn decode_delta(
    bytes: &[u8],
    stats: Option<&StatsSchema>,
    name: &str,
    version: u64,
    order: LineOrder,
) -> DeltaResult<DeltaBatches> {
    let mut out = DeltaBatches {
        version,
        batches: Vec::new(),
        stats: Vec::new(),
        add_keys: Vec::new(),
    };
    let rest = match order {
        LineOrder::NewestFirst => Cow::Borrowed(bytes),
        LineOrder::Unordered => {
            let split = split_commit(bytes, stats)?;
            if let Some(adds) = split.adds {
                let schema = Arc::new(Schema::new(vec![add_field(&adds)]));
                out.batches.push(RecordBatch::try_new(
                    schema,
                    vec![Arc::new(adds) as ArrayRef],
                )?);
                out.stats.push(split.stats);
                out.add_keys.push(Some(split.keys));
            }
            Cow::Owned(split.rest)
        }
    };
    if rest.is_empty() {
        return Ok(out);
    }
    let min_chunk = match order {
        LineOrder::NewestFirst => PARALLEL_CHUNK_BYTES,
        LineOrder::Unordered => usize::MAX,
    };
    let threads = crate::available_threads();
    for (batch, parsed) in decode_lines_in_order(&rest, stats, name, version, min_chunk, threads)? {
        out.batches.push(batch);
        out.stats.push(parsed);
        out.add_keys.push(None);
    }
    Ok(out)
}

/// A compaction is decoded in line-aligned chunks of at least this many bytes, one thread
/// each (commits are decoded many at once instead).
const PARALLEL_CHUNK_BYTES: usize = 4 << 20;

/// Decodes the lines of `bytes` (statistics split off when a schema is given), batches in file
/// order. Text of at least two `min_chunk` is cut at line ends into chunks (at most
/// `threads`) decoded on scoped threads and their batches concatenated in order; if any chunk
/// fails, the whole text is decoded again serially, so that the error counts rows from the
/// start of the file.
fn decode_lines_in_order(
    bytes: &[u8],
    stats: Option<&StatsSchema>,
    name: &str,
    version: u64,
    min_chunk: usize,
    threads: usize,
) -> DeltaResult<Vec<(RecordBatch, Option<StructArray>)>> {
    let decode = |text: &[u8]| -> DeltaResult<Vec<(RecordBatch, Option<StructArray>)>> {
        decode_json_actions(text, &actions::commit_schema(), name, Some(version))?
            .into_iter()
            .map(|batch| match stats {
                Some(stats) => split_stats(batch, stats),
                None => Ok((batch, None)),
            })
            .collect()
    };
    let chunks = (bytes.len() / min_chunk.max(1)).min(threads);
    if chunks < 2 {
        return decode(bytes);
    }
    // Chunk starts: line starts near equal shares of the text.
    let mut bounds = vec![0];
    for i in 1..chunks {
        let target = (bytes.len() / chunks * i).max(bounds[bounds.len() - 1]);
        match memchr::memchr(b'\n', &bytes[target..]) {
            Some(at) if target + at + 1 < bytes.len() => bounds.push(target + at + 1),
            _ => break,
        }
    }
    bounds.push(bytes.len());
    bounds.dedup();
    let decode = &decode;
    let parts: Vec<DeltaResult<_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let text = &bytes[w[0]..w[1]];
                scope.spawn(move || decode(text))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(DeltaError::Internal("decoding thread failed".into())))
            })
            .collect()
    });
    let mut out = Vec::new();
    for part in parts {
        match part {
            Ok(batches) => out.extend(batches),
            Err(_) => return decode(bytes),
        }
    }
    Ok(out)
}

/// Parses the statistics of the `add` column of `batch` and drops their JSON text.
fn split_stats(
    batch: RecordBatch,
    stats: &StatsSchema,
) -> DeltaResult<(RecordBatch, Option<StructArray>)> {
    let Some(index) = batch.schema().index_of(names::ADD).ok() else {
        return Ok((batch, None));
    };
    let add = batch.column(index).as_struct();
    if add.null_count() == add.len() {
        return Ok((batch, None));
    }
    let parsed = stats.parse(add.column_by_name("stats"), None)?;
    let rest = without_field(add, "stats");
    let mut columns = batch.columns().to_vec();
    let mut fields: Vec<_> = batch.schema().fields().iter().cloned().collect();
    fields[index] = std::sync::Arc::new(arrow::datatypes::Field::new(
        names::ADD,
        rest.data_type().clone(),
        true,
    ));
    columns[index] = std::sync::Arc::new(rest);
    let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(fields));
    Ok((RecordBatch::try_new(schema, columns)?, Some(parsed)))
}

/// Reads and decodes `deltas` concurrently, yielding them in the order given (replay passes
/// them newest first and consumes each as it arrives, so at most a window of decoded files is
/// held at once).
///
/// With a statistics schema, each file's `add` statistics are parsed in the decoding task and
/// their JSON text dropped at once.
pub fn delta_stream(
    storage: &Storage,
    deltas: Vec<Delta>,
    stats: Option<Arc<StatsSchema>>,
) -> impl futures::Stream<Item = DeltaResult<(Delta, DeltaBatches)>> + Send + '_ {
    stream::iter(deltas)
        .map(move |delta| {
            let storage = storage.clone();
            let stats = stats.clone();
            async move {
                let file = delta.file();
                let name = format!("_delta_log/{}", file.name);
                let version = delta.end_version();
                let order = match delta {
                    Delta::Commit { .. } => LineOrder::Unordered,
                    Delta::Compaction { .. } => LineOrder::NewestFirst,
                };
                // Decoded where it is read (mapped when local): nothing keeps the file's bytes.
                let decoded = file
                    .scan(&storage, move |bytes| {
                        decode_delta(bytes, stats.as_deref(), &name, version, order)
                    })
                    .await
                    .map_err(|e| log_file_error(e, file, Some(version)))??;
                Ok::<_, DeltaError>((delta, decoded))
            }
        })
        .buffered(CONCURRENCY)
}

/// The `protocol` and `metaData` actions of `deltas` (newest first): only the lines that
/// mention them are decoded, and reading stops at the newest of each. This first, cheap pass
/// gives replay the schema its statistics are parsed with.
pub async fn protocol_and_metadata(
    storage: &Storage,
    deltas: Vec<Delta>,
) -> DeltaResult<crate::log::replay::Reconciler> {
    use crate::log::replay::{Origin, Reconciler};
    let mut found = Reconciler::default();
    let mut files = std::pin::pin!(stream::iter(deltas)
        .map(|delta| {
            let storage = storage.clone();
            async move {
                // Searched where it is read (mapped when local), files in parallel.
                let lines = delta
                    .file()
                    .scan(&storage, |bytes| {
                        lines_mentioning(bytes, &[b"\"protocol\"", b"\"metaData\""])
                    })
                    .await
                    .map_err(|e| log_file_error(e, delta.file(), Some(delta.end_version())))?;
                Ok::<_, DeltaError>((delta, lines))
            }
        })
        .buffered(CONCURRENCY));
    while let Some((delta, lines)) = files.try_next().await? {
        if lines.is_empty() {
            continue;
        }
        let origin = Origin {
            file: format!("_delta_log/{}", delta.file().name),
            version: delta.end_version(),
        };
        let batches = decode_json_actions(
            &lines,
            &actions::commit_schema(),
            &origin.file,
            Some(origin.version),
        )?;
        // A compaction's lines too, in file order: its first `protocol` / `metaData` is the
        // newest (`LineOrder::NewestFirst`).
        for b in &batches {
            found.apply_non_file_actions(b, &origin)?;
        }
        if found.protocol.is_some() && found.metadata.is_some() {
            break;
        }
    }
    Ok(found)
}

/// The `commitInfo` lines of commit `file` (version `version`), decoded: what a reader needs of
/// a commit that a log compaction replaced (its in-commit timestamp, "In-Commit Timestamps").
pub async fn commit_info_batches(
    storage: &Storage,
    file: &LogFile,
    version: u64,
) -> DeltaResult<Vec<RecordBatch>> {
    let lines = file
        .scan(storage, |bytes| {
            lines_mentioning(bytes, &[b"\"commitInfo\""])
        })
        .await
        .map_err(|e| log_file_error(e, file, Some(version)))?;
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    let name = format!("_delta_log/{}", file.name);
    decode_json_actions(&lines, &actions::commit_schema(), &name, Some(version))
}

/// Line prefixes of the file actions that make up the bulk of a log. Such a line holds no other
/// action ("Delta Log Entries": every action is a single-line JSON document; a line holding
/// two is rejected by [`decode_json_actions`] when the file is replayed), so it is skipped
/// without being searched.
const FILE_ACTION_PREFIXES: [&[u8]; 2] = [b"{\"add\":{", b"{\"remove\":{"];

/// The lines of `text` that contain any of `needles`, joined by newlines (lines that start as
/// file actions are not searched).
fn lines_mentioning(text: &[u8], needles: &[&[u8]]) -> Vec<u8> {
    let finders: Vec<_> = needles.iter().map(memchr::memmem::Finder::new).collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
        let line = &text[start..end];
        start = end + 1;
        if FILE_ACTION_PREFIXES.iter().any(|p| line.starts_with(p)) {
            continue;
        }
        if finders.iter().any(|f| f.find(line).is_some()) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

/// Reads a whole listed log file of `version`.
pub(crate) async fn fetch(
    storage: &Storage,
    file: &LogFile,
    version: u64,
) -> DeltaResult<bytes::Bytes> {
    storage
        .get(&file.meta.location)
        .await
        .map_err(|e| log_file_error(e, file, Some(version)))
}

/// Maps a storage error while reading a listed log file: a file that vanished between listing
/// and reading is reported as a log error naming it.
pub(crate) fn log_file_error(
    e: object_store::Error,
    file: &LogFile,
    version: Option<u64>,
) -> DeltaError {
    match e {
        object_store::Error::NotFound { .. } if file.name.starts_with("_staged_commits/") => {
            DeltaError::corrupt(
                format!("_delta_log/{}", file.name),
                version,
                "the catalog ratified this staged commit, but the file could not be read                  (catalogManaged RFC: \"Staged commit\")",
            )
        }
        object_store::Error::NotFound { .. } => DeltaError::corrupt(
            format!("_delta_log/{}", file.name),
            version,
            "the file was listed but could not be read (removed concurrently?)",
        ),
        other => DeltaError::Storage(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_lines_keep_file_order() {
        // A compaction is decoded whole, rows in file order (first line first), `add` and
        // `remove` rows in one batch; a commit's `add` lines take the fast path.
        let text = br#"{"remove":{"path":"a","deletionTimestamp":2,"dataChange":true}}
{"cdc":{"path":"_change_data/c","partitionValues":{},"size":1,"dataChange":false}}
{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
{"add":{"path":"b","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
"#;
        let decoded = decode_delta(text, None, "x", 3, LineOrder::NewestFirst).unwrap();
        assert_eq!(decoded.batches.len(), 1);
        let batch = &decoded.batches[0];
        let remove = batch.column_by_name(names::REMOVE).unwrap();
        let add = batch.column_by_name(names::ADD).unwrap();
        let kinds: Vec<_> = (0..batch.num_rows())
            .map(|r| match (add.is_valid(r), remove.is_valid(r)) {
                (true, _) => "add",
                (_, true) => "remove",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["remove", "other", "add", "add"]);
        assert!(decoded.add_keys.iter().all(Option::is_none));
        let commit = decode_delta(text, None, "x", 3, LineOrder::Unordered).unwrap();
        assert!(
            commit.add_keys[0].is_some(),
            "a commit's adds take the fast path"
        );
    }

    #[test]
    fn chunked_decoding_keeps_rows_in_order() {
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!(
                "{{\"add\":{{\"path\":\"f{i}\",\"partitionValues\":{{}},\"size\":{i},\"modificationTime\":1,\"dataChange\":true}}}}\n"
            ));
            if i % 7 == 0 {
                text.push_str(&format!(
                    "{{\"remove\":{{\"path\":\"f{i}\",\"deletionTimestamp\":{i},\"dataChange\":true}}}}\n"
                ));
            }
        }
        let decode = |min_chunk, threads| {
            let parts =
                decode_lines_in_order(text.as_bytes(), None, "x", 1, min_chunk, threads).unwrap();
            let batches: Vec<_> = parts.into_iter().map(|(b, _)| b).collect();
            arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
        };
        let serial = decode(usize::MAX, 1);
        assert_eq!(serial.num_rows(), 400 + 58);
        for (min_chunk, threads) in [(64, 4), (1000, 3), (5000, 2), (1, 64)] {
            assert_eq!(decode(min_chunk, threads), serial, "{min_chunk} {threads}");
        }
        // An error in a later chunk counts rows from the start of the file.
        let bad = format!("{text}{{\"add\":{{\"path\":\"z\"}},\"txn\":{{\"appId\":\"a\",\"version\":1}}}}\n{text}");
        let err = |min_chunk, threads| {
            decode_lines_in_order(bad.as_bytes(), None, "x", 1, min_chunk, threads)
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(usize::MAX, 1).contains("JSON object 459 "),
            "{}",
            err(usize::MAX, 1)
        );
        assert_eq!(err(64, 4), err(usize::MAX, 1));
    }

    #[test]
    fn lines_mentioning_keeps_whole_matching_lines_once() {
        let text = b"{\"commitInfo\":{}}\n{\"protocol\":{\"metaData\":1}}\n{\"add\":{}}\n{\"metaData\":{}}";
        let out = lines_mentioning(text, &[b"\"protocol\"", b"\"metaData\""]);
        assert_eq!(
            out,
            b"{\"protocol\":{\"metaData\":1}}\n{\"metaData\":{}}\n".to_vec()
        );
        assert!(lines_mentioning(b"{\"add\":{}}", &[b"\"protocol\""]).is_empty());
        // File-action lines are not searched; other shapes of a line are.
        let text = b"{\"add\":{\"path\":\"protocol\"}}\n{\"remove\":{\"metaData\":1}}\n{\"add\":null,\"metaData\":{}}\n{ \"protocol\":{}}\n";
        assert_eq!(
            lines_mentioning(text, &[b"\"protocol\"", b"\"metaData\""]),
            b"{\"add\":null,\"metaData\":{}}\n{ \"protocol\":{}}\n".to_vec()
        );
    }
}
