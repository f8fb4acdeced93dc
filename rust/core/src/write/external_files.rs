//! `add` actions for parquet files another writer put into a table's storage (Spark's native
//! parquet writer writing a deltalog table's files), described from their footers alone, for
//! a transaction to commit.
//!
//! Spec: "Add File and Remove File" (one `add` per file: `path` the file's location relative to
//! the table root as a URI, percent-encoded as deltalog's writer encodes it; `partitionValues`
//! keyed by physical names; `size`; `modificationTime`; `dataChange` true), "Partition Value
//! Serialization" (the caller's values, checked against the partition columns' types; an empty
//! string is a null), "Per-file Statistics" (read from each file's footer by
//! [`crate::stats::footer`], as deltalog's writer would have collected them).
//!
//! Nothing but footers is read: a remote file costs one ranged GET of its last
//! [`FOOTER_PREFETCH`] bytes (which also gives its size and modification time), a second only
//! when its footer is larger; a local file two positioned reads. [`FOOTERS_IN_FLIGHT`] files
//! are read at once. A file that is missing, is not parquet or does not fit the table's schema
//! fails the whole call with an error naming it; nothing is committed here.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use serde_json::Value;

use crate::error::{DeltaError, DeltaResult};
use crate::scan::columns::output_type;
use crate::scan::partition_values::parse_partition_value;
use crate::schema::name_key;
use crate::snapshot::Snapshot;
use crate::stats::footer::FooterStats;
use crate::storage::{FileLocation, Storage};
use crate::write::data_files::WrittenFile;
use crate::write::partitions::path_uri;
use crate::writer_features::column_mapping::physical_name;

/// Bytes read from the end of a remote file at first: the footer of most files, whose
/// `FileMetaData` takes a few KiB (a second read fetches a larger one).
pub const FOOTER_PREFETCH: u64 = 64 * 1024;

/// Files whose footers are read at once.
pub const FOOTERS_IN_FLIGHT: usize = 32;

/// A data file already in the table's storage, to be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalFile {
    /// The file's path relative to the table root, as stored (not URI-encoded), e.g.
    /// `p=a/part-00000-….snappy.parquet`.
    pub path: String,
    /// The file's partition values by partition column (logical or physical name), serialized
    /// as "Partition Value Serialization" says (`None` or an empty string: null).
    pub partition_values: BTreeMap<String, Option<String>>,
}

/// A file's footer, size and modification time (ms since the epoch).
struct Footer {
    size: u64,
    modified: i64,
    metadata: ParquetMetaData,
}

/// The table's partition columns: logical name, physical name, type.
struct PartitionColumns(Vec<(String, String, arrow::datatypes::DataType)>);

impl PartitionColumns {
    fn of(snapshot: &Snapshot) -> DeltaResult<Self> {
        let schema = snapshot.schema()?;
        let mode = snapshot.column_mapping_mode()?;
        let mut out = Vec::new();
        for p in &snapshot.metadata()?.partition_columns {
            let field = schema.field_with_name(p).map_err(|_| {
                DeltaError::corrupt(
                    "_delta_log",
                    Some(snapshot.version()),
                    format!(
                        "partition column {p:?} is not in the schema (spec: \"Change Metadata\")"
                    ),
                )
            })?;
            out.push((
                p.clone(),
                physical_name(&schema, p, mode),
                output_type(field.data_type()),
            ));
        }
        Ok(PartitionColumns(out))
    }

    /// `given` as the `partitionValues` of an `add`: keyed by physical names, every partition
    /// column once, each value of its column's type.
    fn values(
        &self,
        file: &str,
        given: &BTreeMap<String, Option<String>>,
    ) -> DeltaResult<BTreeMap<String, Option<String>>> {
        let bad = |why: String| DeltaError::InvalidArgument(format!("{file}: {why}"));
        let mut out = BTreeMap::new();
        for (key, value) in given {
            let column = self
                .0
                .iter()
                .find(|(logical, _, _)| logical == key)
                .or_else(|| self.0.iter().find(|(_, physical, _)| physical == key))
                .or_else(|| {
                    let mut same = self
                        .0
                        .iter()
                        .filter(|(logical, _, _)| name_key(logical) == name_key(key));
                    same.next().filter(|_| same.next().is_none())
                });
            let Some((logical, physical, data_type)) = column else {
                return Err(bad(format!(
                    "{key:?} is not a partition column of the table (partition columns: {:?})",
                    self.0.iter().map(|c| &c.0).collect::<Vec<_>>()
                )));
            };
            let value = value.clone().filter(|v| !v.is_empty());
            parse_partition_value(value.as_deref(), data_type)
                .map_err(|e| bad(format!("partition column {logical:?}: {e}")))?;
            if out.insert(physical.clone(), value).is_some() {
                return Err(bad(format!("partition column {logical:?} is given twice")));
            }
        }
        let missing: Vec<&String> = self
            .0
            .iter()
            .filter(|(_, physical, _)| !out.contains_key(physical))
            .map(|(logical, _, _)| logical)
            .collect();
        if !missing.is_empty() {
            return Err(bad(format!(
                "no value for partition column(s) {missing:?} (null is given as None)"
            )));
        }
        Ok(out)
    }
}

/// Checks that `path` names a file under the table root: relative, no `..`, not in the log.
fn check_path(path: &str) -> DeltaResult<()> {
    let bad = |why: &str| DeltaError::InvalidArgument(format!("{path:?}: {why}"));
    if path.is_empty() {
        return Err(bad("a file path is empty"));
    }
    if path.starts_with('/') || path.contains("://") || path.starts_with("file:") {
        return Err(bad("file paths are relative to the table root"));
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(bad(
            "a file path has no empty, `.` or `..` parts (files live under the table root)",
        ));
    }
    if parts[0] == "_delta_log" {
        return Err(bad("files in _delta_log are not data files"));
    }
    Ok(())
}

fn not_parquet(file: &str, e: &ParquetError) -> DeltaError {
    DeltaError::data_file(file, format!("not a readable parquet file: {e}"))
}

/// The footer of a local file (two positioned reads), size and modification time.
#[cfg(unix)]
fn local_footer(file: &str, path: &std::path::Path) -> DeltaResult<Footer> {
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => DeltaError::DataFileNotFound {
            file: file.to_string(),
        },
        _ => DeltaError::Storage(object_store::Error::Generic {
            store: "LocalFileSystem",
            source: format!("reading {}: {e}", path.display()).into(),
        }),
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(DeltaError::data_file(file, "not a file"));
    }
    let modified = chrono::DateTime::<chrono::Utc>::from(meta.modified().map_err(io)?);
    let reader = crate::parquet_io::LocalChunkReader::open(path).map_err(io)?;
    let metadata = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Skip)
        .parse_and_finish(&reader)
        .map_err(|e| not_parquet(file, &e))?;
    Ok(Footer {
        size: meta.len(),
        modified: modified.timestamp_millis(),
        metadata,
    })
}

/// The footer of a file in an object store: its last [`FOOTER_PREFETCH`] bytes (the same GET
/// gives the size and modification time), then, only when the footer is larger, the rest of
/// it (from the same version of the object).
async fn store_footer(
    store: &Arc<dyn ObjectStore>,
    file: &str,
    location: &Path,
) -> DeltaResult<Footer> {
    store_footer_with(store, file, location, FOOTER_PREFETCH).await
}

/// [`store_footer`] reading the last `prefetch` bytes first.
async fn store_footer_with(
    store: &Arc<dyn ObjectStore>,
    file: &str,
    location: &Path,
    prefetch: u64,
) -> DeltaResult<Footer> {
    let storage_error = |e: object_store::Error| match e {
        object_store::Error::NotFound { .. } => DeltaError::DataFileNotFound {
            file: file.to_string(),
        },
        e => DeltaError::Storage(e),
    };
    let got = store
        .get_opts(
            location,
            GetOptions {
                range: Some(GetRange::Suffix(prefetch)),
                ..Default::default()
            },
        )
        .await
        .map_err(storage_error)?;
    let meta = got.meta.clone();
    let tail = got.bytes().await.map_err(storage_error)?;
    let mut reader = ParquetMetaDataReader::new().with_page_index_policy(PageIndexPolicy::Skip);
    match reader.try_parse_sized(&tail, meta.size) {
        Ok(()) => {}
        Err(ParquetError::NeedMoreData(needed)) => {
            let start = meta.size.saturating_sub(needed as u64);
            let more = store
                .get_opts(
                    location,
                    GetOptions {
                        range: Some(GetRange::Bounded(start..meta.size)),
                        if_match: meta.e_tag.clone(),
                        ..Default::default()
                    },
                )
                .await
                .map_err(storage_error)?
                .bytes()
                .await
                .map_err(storage_error)?;
            reader
                .try_parse_sized(&more, meta.size)
                .map_err(|e| not_parquet(file, &e))?;
        }
        Err(e) => return Err(not_parquet(file, &e)),
    }
    let metadata = reader.finish().map_err(|e| not_parquet(file, &e))?;
    Ok(Footer {
        size: meta.size,
        modified: meta.last_modified.timestamp_millis(),
        metadata,
    })
}

/// The `add` action of one file.
async fn add_action(
    storage: &Storage,
    stats: Arc<FooterStats>,
    file: ExternalFile,
    partition_values: BTreeMap<String, Option<String>>,
) -> DeltaResult<Value> {
    let action = |footer: &Footer, stats: &FooterStats| -> DeltaResult<Value> {
        let stats = stats.stats(&file.path, &footer.metadata)?;
        Ok(WrittenFile {
            path: path_uri(&file.path),
            partition_values: partition_values.clone(),
            size: footer.size,
            modification_time: footer.modified,
            stats: stats.to_string(),
        }
        .to_action(true))
    };
    match storage.file_location(&file.path)? {
        #[cfg(unix)]
        FileLocation::Local(path) => {
            let name = file.path.clone();
            let footer = tokio::task::spawn_blocking(move || local_footer(&name, &path))
                .await
                .map_err(|e| DeltaError::Internal(format!("reading a footer failed: {e}")))??;
            action(&footer, &stats)
        }
        #[cfg(not(unix))]
        FileLocation::Local(path) => Err(DeltaError::Unsupported(format!(
            "reading local data files needs a Unix platform: {}",
            path.display()
        ))),
        FileLocation::Store(location) => {
            let footer = store_footer(storage.store(), &file.path, &location).await?;
            action(&footer, &stats)
        }
    }
}

/// One `add` action (`{"add": {...}}`, in `files`' order) per file of `files`, already in the
/// storage of `snapshot`'s table, with statistics from its footer (see the module
/// documentation). Errors: a bad path or partition value ([`DeltaError::InvalidArgument`]), a
/// missing file ([`DeltaError::DataFileNotFound`]), a file that is not parquet or does not fit
/// the table's schema ([`DeltaError::CorruptDataFile`]), each naming the file.
pub async fn add_actions_from_footers(
    snapshot: &Snapshot,
    files: Vec<ExternalFile>,
) -> DeltaResult<Vec<Value>> {
    let partitions = PartitionColumns::of(snapshot)?;
    let mut seen = HashSet::new();
    let mut jobs = Vec::with_capacity(files.len());
    for file in files {
        check_path(&file.path)?;
        if !seen.insert(file.path.clone()) {
            return Err(DeltaError::InvalidArgument(format!(
                "{:?} is given twice",
                file.path
            )));
        }
        let values = partitions.values(&file.path, &file.partition_values)?;
        jobs.push((file, values));
    }
    let stats = Arc::new(FooterStats::of(snapshot)?);
    let storage = snapshot.storage();
    futures::stream::iter(jobs)
        .map(|(file, values)| add_action(storage, stats.clone(), file, values))
        .buffered(FOOTERS_IN_FLIGHT)
        .try_collect()
        .await
}

#[cfg(test)]
mod tests;
