//! The planned files of a scan as another engine's file scan takes them.
//!
//! Spark reads a table through deltalog's JVM companion (`jvm/`), which never reads the log:
//! it gets this plan, one Arrow record batch with a row per file, and turns it into Spark's
//! file index and parquet format. Every rule of the protocol is applied here, once:
//!
//! - "Add File and Remove File": `path` is the file's absolute URI (relative paths resolved
//!   against the table root, names taken verbatim and percent-encoded for the URI);
//! - "Partition Value Serialization": `partition` holds the typed values, parsed from the
//!   log's strings by [`parse_partition_column`], one field per partition column (logical
//!   names, in `partitionColumns` order); the files' directory names are never consulted;
//! - "Deletion Vectors": `deleted_rows` holds the file's deleted row indexes as a portable
//!   32-bit RoaringBitmap (the format every Roaring implementation reads), decoded from the
//!   descriptor here (inline, relative or absolute, checksums and cardinality checked), or is
//!   null for a file without a deletion vector.

use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray, StructArray};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use futures::stream::{self, StreamExt, TryStreamExt};
use roaring::RoaringBitmap;

use crate::error::{DeltaError, DeltaResult};
use crate::scan::partition_values::parse_partition_column;
use crate::scan::task::{FileTask, ReadSpec};
use crate::storage::{FileLocation, Storage};

/// Deletion vectors loaded at once.
const CONCURRENCY: usize = 16;

/// The plan's schema for `spec`: `path`, `size`, `deleted_rows` and `partition`.
pub fn file_plan_schema(spec: &ReadSpec) -> DeltaResult<Schema> {
    Ok(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("size", DataType::Int64, false),
        Field::new("deleted_rows", DataType::Binary, true),
        Field::new(
            "partition",
            DataType::Struct(partition_fields(spec)?),
            false,
        ),
    ]))
}

fn partition_fields(spec: &ReadSpec) -> DeltaResult<Fields> {
    spec.partition_columns()
        .iter()
        .map(|c| {
            let (_, data_type) = spec.partition_key(c).ok_or_else(|| {
                DeltaError::Internal(format!("partition column {c} is not in the table's schema"))
            })?;
            Ok(Field::new(c, data_type, true))
        })
        .collect()
}

/// The plan of `tasks` (see the module docs), in task order.
pub async fn file_plan(
    storage: &Storage,
    spec: &ReadSpec,
    tasks: &[FileTask],
) -> DeltaResult<RecordBatch> {
    let schema = Arc::new(file_plan_schema(spec)?);
    let paths = tasks
        .iter()
        .map(|t| file_uri(storage, &t.path))
        .collect::<DeltaResult<Vec<_>>>()?;
    // Each file's size and deletion vector, the files read CONCURRENCY at a time. Owned
    // futures: a closure handing out futures that borrow its argument is not `Send` for every
    // lifetime, which a runtime's `block_on` needs.
    let (sizes, deleted): (Vec<i64>, Vec<Option<Vec<u8>>>) = stream::iter(tasks.to_vec())
        .map(|task| {
            let storage = storage.clone();
            async move {
                let size = file_size(&storage, &task).await?;
                Ok::<_, DeltaError>((size, deleted_rows(&storage, &task).await?))
            }
        })
        .buffered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?
        .into_iter()
        .unzip();
    let DataType::Struct(fields) = schema.field(3).data_type().clone() else {
        return Err(DeltaError::Internal(
            "the plan's partition column is not a struct".into(),
        ));
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields.len());
    for field in fields.iter() {
        let (key, data_type) = spec
            .partition_key(field.name())
            .ok_or_else(|| DeltaError::Internal(format!("no partition column {}", field.name())))?;
        let texts = tasks
            .iter()
            .map(|t| t.partition_values.get(&key).and_then(|v| v.as_deref()));
        let column = parse_partition_column(texts, &data_type).map_err(|e| {
            DeltaError::InvalidArgument(format!(
                "partition column {} (spec: \"Partition Value Serialization\"): {e}",
                field.name()
            ))
        })?;
        columns.push(column);
    }
    let partition = if fields.is_empty() {
        StructArray::new_empty_fields(tasks.len(), None)
    } else {
        StructArray::try_new(fields, columns, None)?
    };
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(paths)),
            Arc::new(Int64Array::from(sizes)),
            Arc::new(deleted.into_iter().collect::<BinaryArray>()),
            Arc::new(partition),
        ],
    )?)
}

/// The absolute URI of a file of the log (URI-decoded, relative to the table root or
/// absolute), percent-encoded so that the strictest URI parser in the chain (Java's
/// `java.net.URI`, RFC 2396) reads back the same name.
pub fn file_uri(storage: &Storage, path: &str) -> DeltaResult<String> {
    let bad = |why: &str| DeltaError::InvalidArgument(format!("file {path}: {why}"));
    match storage.file_location(path)? {
        FileLocation::Local(file) => {
            let text = file
                .to_str()
                .ok_or_else(|| bad("the local path is not UTF-8"))?;
            if !text.starts_with('/') {
                return Err(bad("not an absolute local path"));
            }
            Ok(format!("file://{}", encode_path(text)))
        }
        FileLocation::Store(location) => {
            let root = storage.root().as_ref().to_string();
            let key = location.as_ref();
            let relative = key
                .strip_prefix(root.as_str())
                .map(|r| r.trim_start_matches('/'))
                .ok_or_else(|| bad("outside the table root"))?;
            // The object's key as stored (object_store's `Path`, which is what the store
            // holds, escapes included); the URI percent-encodes it once more.
            let base = storage.url().as_str().trim_end_matches('/');
            Ok(format!("{base}/{}", encode_path(relative)))
        }
    }
}

/// Characters left as they are in a path segment: RFC 2396's unreserved characters and the
/// path's own punctuation (`java.net.URI` refuses `[`, `]`, `{`, `}`, `|`, ... unescaped).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b';')
    .remove(b':')
    .remove(b'@')
    .remove(b'&')
    .remove(b'=')
    .remove(b'+')
    .remove(b'$')
    .remove(b',');

/// `path` with each `/`-separated segment percent-encoded.
fn encode_path(path: &str) -> String {
    path.split('/')
        .map(|segment| percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

async fn file_size(storage: &Storage, task: &FileTask) -> DeltaResult<i64> {
    if let Some(size) = task.size {
        return i64::try_from(size)
            .map_err(|_| DeltaError::InvalidArgument(format!("file {}: size {size}", task.path)));
    }
    let location = match storage.file_location(&task.path)? {
        FileLocation::Local(file) => {
            // Rare (the log records sizes): one blocking stat is cheaper than a thread hop.
            return Ok(std::fs::metadata(&file)
                .map_err(|e| DeltaError::InvalidArgument(format!("file {}: {e}", task.path)))?
                .len() as i64);
        }
        FileLocation::Store(location) => location,
    };
    Ok(storage.head(&location).await?.size as i64)
}

/// The file's deleted rows as a portable 32-bit RoaringBitmap, or `None`.
async fn deleted_rows(storage: &Storage, task: &FileTask) -> DeltaResult<Option<Vec<u8>>> {
    let Some(dv) = &task.deletion_vector else {
        return Ok(None);
    };
    let rows = dv.load(storage, &task.path).await?;
    let narrow = narrow(&rows).ok_or_else(|| {
        DeltaError::Unsupported(format!(
            "the deletion vector of {} deletes row indexes of 2^32 and above, which no 32-bit \
             RoaringBitmap holds",
            task.path
        ))
    })?;
    let mut out = Vec::with_capacity(narrow.serialized_size());
    narrow
        .serialize_into(&mut out)
        .map_err(|e| DeltaError::Internal(format!("serializing a bitmap: {e}")))?;
    Ok(Some(out))
}

/// The rows of a 64-bit bitmap as a 32-bit one, when they all fit.
fn narrow(rows: &roaring::RoaringTreemap) -> Option<RoaringBitmap> {
    let mut out = RoaringBitmap::new();
    for (high, bitmap) in rows.bitmaps() {
        if high != 0 {
            return None;
        }
        out |= bitmap;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn local_storage(dir: &std::path::Path) -> Storage {
        Storage::open(dir.to_str().unwrap_or_default(), &HashMap::new()).expect("storage")
    }

    #[test]
    fn local_uris_are_percent_encoded_and_absolute() {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = local_storage(dir.path());
        let uri = file_uri(&storage, "p=a b%[1]/part 1#é.parquet").expect("uri");
        assert!(uri.starts_with("file:///"), "{uri}");
        assert!(
            uri.ends_with("/p=a%20b%25%5B1%5D/part%201%23%C3%A9.parquet"),
            "{uri}"
        );
        let back = url::Url::parse(&uri)
            .expect("parses")
            .to_file_path()
            .expect("a path");
        assert_eq!(back, dir.path().join("p=a b%[1]").join("part 1#é.parquet"));
    }

    #[test]
    fn store_uris_name_the_stored_key() {
        let options = HashMap::from([
            ("aws_access_key_id".to_string(), "k".to_string()),
            ("aws_secret_access_key".to_string(), "s".to_string()),
            ("aws_region".to_string(), "us-east-1".to_string()),
        ]);
        let storage = Storage::open("s3://bucket/root", &options).expect("storage");
        // deltalog's writers escape `%` in partition directories (`p=50%25`): the object's
        // key holds `%25`, which the URI escapes once more.
        let uri = file_uri(&storage, "p=50%25/part-1.parquet").expect("uri");
        assert_eq!(uri, "s3://bucket/root/p=50%2525/part-1.parquet");
    }

    #[test]
    fn narrow_keeps_32_bit_rows_and_refuses_wider() {
        let mut rows = roaring::RoaringTreemap::new();
        rows.insert(0);
        rows.insert(u64::from(u32::MAX));
        let bitmap = narrow(&rows).expect("fits");
        assert_eq!(bitmap.iter().collect::<Vec<_>>(), vec![0, u32::MAX]);
        rows.insert(1 << 32);
        assert!(narrow(&rows).is_none());
    }
}
