//! A commit proposed to a catalog, checked as deltalog's reader will read it.
//!
//! A catalog that manages a table ratifies each commit once, and then readers and publishers
//! take its content as it is ("Commit Protocol", "Publishing Commits": the content of a
//! ratified commit is immutable). A catalog that ratifies content a reader cannot parse, or
//! that names files no reader can read, damages the table for good. So before ratifying, a
//! catalog checks the proposal here, with the same decoder the reader uses
//! ([`crate::log::reader::decode_delta`]) and the rules of the protocol:
//!
//! - "Delta Log Entries": every line is one JSON object holding one action of a kind a commit
//!   may carry (`add`, `remove`, `cdc`, `metaData`, `protocol`, `txn`, `commitInfo`,
//!   `domainMetadata`); no `NaN`/`Infinity`, no integer outside 64 bits;
//! - "Commit Provenance Information" and the catalogManaged RFC ("Writer Requirements for
//!   Catalog-managed tables"): at most one `commitInfo`, whose `inCommitTimestamp` is a `long`
//!   ("In-Commit Timestamps": and the first action when present) and whose `txnId` is a string;
//! - "Add File and Remove File", "Add CDC File", "Deletion Vectors": every path is inside the
//!   table's root (relative without `..`, or absolute under the root), every `add`'s and `cdc`'s
//!   file exists with the size the action says, and every deletion vector file exists (checked
//!   concurrently); inline deletion vectors decode. A file is looked for where the reader opens
//!   it ([`Storage::file_location`]: the path URI-decoded once, its name taken verbatim, so a
//!   Hive-escaped partition directory `region=a b%2Fc`, logged as `region=a%20b%252Fc`, is found
//!   on disk as it is). On the local file system a file must be a regular file, not a symbolic
//!   link, whose real path (every link of its directories resolved) lies under the table's real
//!   root: a link would make the table show another table's rows.
//!
//! What the catalog itself knows (the previous commit's in-commit timestamp, the txnIds it has
//! ratified, the governance over protocol, metadata and domains) it checks with the
//! [`ProposalReport`] returned here.

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::deletion_vector::{DvDescriptor, DvLocation};
use crate::error::{DeltaError, DeltaResult};
use crate::log::reader::{decode_delta, LineOrder};
use crate::paths::decode_uri_path;
use crate::storage::{FileLocation, Storage};

/// The actions a commit may carry ("Actions"; `sidecar` and `checkpointMetadata` belong to
/// checkpoints only).
const COMMIT_ACTIONS: [&str; 8] = [
    "add",
    "remove",
    "cdc",
    "metaData",
    "protocol",
    "txn",
    "commitInfo",
    "domainMetadata",
];

/// How many files are checked at once.
const CONCURRENCY: usize = 64;

/// What a checked proposal holds that a catalog decides on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProposalReport {
    /// The SHA-256 of the content (lowercase hex): what the catalog binds the version to.
    pub sha256: String,
    /// The `commitInfo.inCommitTimestamp`, when present.
    pub in_commit_timestamp: Option<i64>,
    /// The `commitInfo.txnId`, when present.
    pub txn_id: Option<String>,
    /// Whether the `commitInfo` action is the commit's first action.
    pub commit_info_first: bool,
    /// The `protocol` action's object, as compact JSON.
    pub protocol: Option<String>,
    /// The `metaData` action's object, as compact JSON.
    pub metadata: Option<String>,
    /// Each `domainMetadata` action: its domain, and its `configuration` (`None` when it
    /// removes the domain).
    pub domains: Vec<(String, Option<String>)>,
    /// How many actions the commit holds.
    pub actions: usize,
    /// How many data, change-data and deletion-vector files were checked to exist.
    pub files_checked: usize,
}

/// The SHA-256 of `content`, lowercase hex.
pub fn sha256_hex(content: &[u8]) -> String {
    let digest = Sha256::digest(content);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks `content`, proposed as `version` of the table at `storage` (see the module docs).
/// With `check_files`, every file an `add` or `cdc` (and their deletion vectors) names must
/// exist.
pub async fn check_proposal(
    storage: &Storage,
    version: u64,
    content: &[u8],
    check_files: bool,
) -> DeltaResult<ProposalReport> {
    let file = format!("proposed commit {version}");
    let bad = |rule: String| DeltaError::corrupt(file.clone(), Some(version), rule);
    let text = std::str::from_utf8(content).map_err(|e| {
        bad(format!(
            "the commit is not UTF-8 ({e}) (\"Delta Log Entries\")"
        ))
    })?;
    // The reader's own decoding: what it cannot decode is refused here, not met later.
    decode_delta(content, None, &file, version, LineOrder::Unordered)?;

    let mut report = ProposalReport {
        sha256: sha256_hex(content),
        ..Default::default()
    };
    let mut to_check: Vec<(FileLocation, Option<u64>, String)> = Vec::new();
    let mut seen_paths: HashSet<String> = HashSet::new();
    for (number, line) in text.split('\n').enumerate() {
        let number = number + 1;
        if line.trim().is_empty() {
            continue;
        }
        let at = |rule: String| bad(format!("line {number}: {rule}"));
        let value: Value = serde_json::from_str(line)
            .map_err(|e| at(format!("not a JSON document ({e}) (\"Delta Log Entries\")")))?;
        if let Some(path) = oversized_integer(&value, String::new()) {
            return Err(at(format!(
                "{path} is an integer outside 64 bits (\"Primitive Types\": long)"
            )));
        }
        let Value::Object(object) = value else {
            return Err(at("an action is a JSON object".into()));
        };
        if object.len() != 1 {
            return Err(at(format!(
                "a line holds exactly one action, not {} (\"Delta Log Entries\")",
                object.len()
            )));
        }
        let Some((kind, body)) = object.into_iter().next() else {
            continue;
        };
        if !COMMIT_ACTIONS.contains(&kind.as_str()) {
            return Err(at(format!(
                "{kind:?} is not an action a commit carries (\"Actions\")"
            )));
        }
        let Value::Object(body) = body else {
            return Err(at(format!("the {kind} action is not a JSON object")));
        };
        report.actions += 1;
        match kind.as_str() {
            "commitInfo" => {
                if report.commit_info_first || report.in_commit_timestamp.is_some() {
                    return Err(at("a commit holds at most one commitInfo action".into()));
                }
                report.commit_info_first = report.actions == 1;
                if let Some(ict) = body.get("inCommitTimestamp") {
                    report.in_commit_timestamp = Some(ict.as_i64().ok_or_else(|| {
                        at(format!(
                            "commitInfo.inCommitTimestamp is {ict}, not a long (\"In-Commit \
                             Timestamps\")"
                        ))
                    })?);
                }
                if let Some(id) = body.get("txnId") {
                    let id = id.as_str().filter(|s| !s.is_empty()).ok_or_else(|| {
                        at(format!(
                            "commitInfo.txnId is {id}, not a non-empty string (catalogManaged \
                             RFC: \"Commit Provenance Information\")"
                        ))
                    })?;
                    report.txn_id = Some(id.to_string());
                }
            }
            "protocol" | "metaData" => {
                let slot = if kind == "protocol" {
                    &mut report.protocol
                } else {
                    &mut report.metadata
                };
                if slot.is_some() {
                    return Err(at(format!("a commit holds at most one {kind} action")));
                }
                *slot = Some(Value::Object(body).to_string());
            }
            "domainMetadata" => {
                let domain = body.get("domain").and_then(Value::as_str).ok_or_else(|| {
                    at("domainMetadata.domain is not a string (\"Domain Metadata\")".into())
                })?;
                let removed = body
                    .get("removed")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let configuration = body.get("configuration").map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                report.domains.push((
                    domain.to_string(),
                    (!removed).then_some(configuration).flatten(),
                ));
            }
            "add" | "remove" | "cdc" => {
                let raw = body.get("path").and_then(Value::as_str).ok_or_else(|| {
                    at(format!(
                        "{kind}.path is not a string (\"Add File and Remove File\")"
                    ))
                })?;
                let location =
                    inside_table(storage, raw).map_err(|rule| at(format!("{kind}: {rule}")))?;
                if kind == "remove" {
                    continue;
                }
                if !seen_paths.insert(location_key(&location)) && kind == "add" {
                    return Err(at(format!(
                        "{raw:?} is added twice in one commit (\"Add File and Remove File\")"
                    )));
                }
                let size = match body.get("size") {
                    Some(size) => Some(size.as_u64().ok_or_else(|| {
                        at(format!("{kind}.size is {size}, not a size in bytes"))
                    })?),
                    None => None,
                };
                to_check.push((location, size, raw.to_string()));
                if let Some(dv) = body.get("deletionVector").filter(|v| !v.is_null()) {
                    if let Some(dv_file) = deletion_vector_file(storage, dv, raw)
                        .map_err(|rule| at(format!("{kind}.deletionVector: {rule}")))?
                    {
                        to_check.push((dv_file, None, format!("deletion vector of {raw}")));
                    }
                }
            }
            _ => {}
        }
    }
    if report.actions == 0 {
        return Err(bad("a commit holds at least one action".into()));
    }
    if check_files {
        report.files_checked = to_check.len();
        stream_check(storage, to_check, &bad).await?;
    }
    Ok(report)
}

async fn stream_check(
    storage: &Storage,
    files: Vec<(FileLocation, Option<u64>, String)>,
    bad: &(dyn Fn(String) -> DeltaError + Sync),
) -> DeltaResult<()> {
    // The table's real root: a local file's real path must lie under it.
    let root = storage
        .url()
        .to_file_path()
        .ok()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p));
    let root = root.as_deref();
    futures::stream::iter(files)
        .map(|(location, size, what)| async move {
            let found = match location {
                FileLocation::Store(location) => match storage.head(&location).await {
                    Ok(meta) => Ok(meta.size),
                    Err(object_store::Error::NotFound { .. }) => Err(format!(
                        "{what} names a file that does not exist ({location}): a reader could \
                         not read the table"
                    )),
                    Err(e) => return Err(DeltaError::Storage(e)),
                },
                FileLocation::Local(file) => {
                    let root = root.map(std::path::Path::to_path_buf);
                    let what = what.clone();
                    tokio::task::spawn_blocking(move || local_file(root.as_deref(), &file, &what))
                        .await
                        .map_err(|e| {
                            DeltaError::Internal(format!("checking a proposed file failed: {e}"))
                        })??
                }
            };
            match (found, size) {
                (Err(rule), _) => Err(bad(rule)),
                (Ok(actual), Some(expected)) if actual != expected => Err(bad(format!(
                    "{what} is {actual} bytes, not the {expected} the action says (\"Add File \
                     and Remove File\": size)"
                ))),
                _ => Ok(()),
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// The size of the local file `file` a proposal names, or the rule it breaks (`Ok(Err)`): it
/// exists, is a regular file and not a symbolic link, and its real path lies under the table's
/// real `root` (a link anywhere on the way, to another table's file or directory, is refused:
/// the table would show that table's rows). An I/O failure other than "not found" is the
/// storage's (`Err`).
fn local_file(
    root: Option<&std::path::Path>,
    file: &std::path::Path,
    what: &str,
) -> DeltaResult<Result<u64, String>> {
    let io = |e: std::io::Error| {
        DeltaError::Storage(object_store::Error::Generic {
            store: "LocalFileSystem",
            source: format!("checking {}: {e}", file.display()).into(),
        })
    };
    let meta = match std::fs::symlink_metadata(file) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Err(format!(
                "{what} names a file that does not exist ({}): a reader could not read the \
                 table",
                file.display()
            )))
        }
        Err(e) => return Err(io(e)),
    };
    if meta.file_type().is_symlink() {
        return Ok(Err(format!(
            "{what} is a symbolic link ({}): a catalog-managed table's files are its own \
             regular files, never links (\"Add File and Remove File\": a path inside the \
             table's root)",
            file.display()
        )));
    }
    if !meta.is_file() {
        return Ok(Err(format!(
            "{what} is not a regular file ({})",
            file.display()
        )));
    }
    if let Some(root) = root {
        let real = match std::fs::canonicalize(file) {
            Ok(real) => real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Err(format!(
                    "{what} names a file that does not exist ({})",
                    file.display()
                )))
            }
            Err(e) => return Err(io(e)),
        };
        if !real.starts_with(root) || real == root {
            return Ok(Err(format!(
                "{what} ({}) resolves through a symbolic link to {}, outside the table's real \
                 root {}: a catalog-managed table's files are its own (\"Add File and Remove \
                 File\": a path inside the table's root)",
                file.display(),
                real.display(),
                root.display()
            )));
        }
    }
    Ok(Ok(meta.len()))
}

/// A key naming one file, to find a file added twice.
fn location_key(location: &FileLocation) -> String {
    match location {
        FileLocation::Local(path) => format!("local:{}", path.display()),
        FileLocation::Store(path) => format!("store:{path}"),
    }
}

/// The first integer of `value` outside the signed 64-bit range, as a JSON path.
fn oversized_integer(value: &Value, at: String) -> Option<String> {
    match value {
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => Some(at),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| oversized_integer(v, format!("{at}[{i}]"))),
        Value::Object(fields) => fields.iter().find_map(|(k, v)| {
            let path = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            oversized_integer(v, path)
        }),
        _ => None,
    }
}

/// Where a file action's `path` (URI-encoded, "Add File and Remove File") is, for the reader
/// ([`Storage::file_location`]: decoded once, its name verbatim), when it lies inside the
/// table's root: relative without `..`, or an absolute path or URI under the root. Anything
/// else is another table's file, or no file at all.
fn inside_table(storage: &Storage, raw: &str) -> Result<FileLocation, String> {
    if raw.is_empty() {
        return Err("the path is empty".into());
    }
    let decoded = decode_uri_path(raw)?;
    if decoded.chars().any(|c| c == '\0' || c.is_control()) {
        return Err(format!("the path {raw:?} holds control characters"));
    }
    let locate = |decoded: &str| {
        storage
            .file_location(decoded)
            .map_err(|e| format!("{raw:?}: {e}"))
    };
    let absolute =
        decoded.starts_with('/') || decoded.contains("://") || decoded.starts_with("file:");
    if !absolute {
        if decoded.split('/').any(|p| p == ".." || p == ".") {
            return Err(format!(
                "the path {raw:?} leaves the table's directory ('..' or '.' segments)"
            ));
        }
        return locate(&decoded);
    }
    if decoded.split('/').any(|p| p == "..") {
        return Err(format!("the path {raw:?} holds '..' segments"));
    }
    let resolved = storage.resolve_absolute(&decoded).ok_or_else(|| {
        format!(
            "{raw:?} is not a file of the table's store ({})",
            storage.url()
        )
    })?;
    let root = storage.root().as_ref().trim_end_matches('/');
    let inside = resolved.as_ref().strip_prefix(root).is_some_and(|rest| {
        (root.is_empty() || rest.starts_with('/')) && !rest.trim_start_matches('/').is_empty()
    });
    if !inside {
        return Err(format!(
            "{raw:?} lies outside the table's root ({}): a catalog-managed table's files are \
             its own",
            storage.url()
        ));
    }
    locate(&decoded)
}

/// The file of a deletion vector stored in a file (`u`, `p`), checked to lie inside the table;
/// `None` for an inline one (decoded here, as a reader would).
fn deletion_vector_file(
    storage: &Storage,
    dv: &Value,
    data_file: &str,
) -> Result<Option<FileLocation>, String> {
    let text = |field: &str| dv.get(field).and_then(Value::as_str).map(str::to_string);
    let int = |field: &str| dv.get(field).and_then(Value::as_i64);
    let descriptor = DvDescriptor {
        storage_type: text("storageType").ok_or("storageType is not a string")?,
        path_or_inline_dv: text("pathOrInlineDv").ok_or("pathOrInlineDv is not a string")?,
        offset: int("offset")
            .map(|o| i32::try_from(o).map_err(|_| format!("offset {o} out of range")))
            .transpose()?,
        size_in_bytes: int("sizeInBytes")
            .and_then(|s| i32::try_from(s).ok())
            .ok_or("sizeInBytes is not a 32-bit size")?,
        cardinality: int("cardinality").ok_or("cardinality is not a long")?,
    };
    match descriptor.location(data_file).map_err(|e| e.to_string())? {
        DvLocation::Inline => {
            descriptor
                .decode_inline(data_file)
                .map_err(|e| e.to_string())?;
            Ok(None)
        }
        DvLocation::Relative { .. } => {
            let relative = descriptor
                .relative_path(data_file)
                .map_err(|e| e.to_string())?
                .ok_or("no relative path")?;
            inside_table(storage, &relative).map(Some)
        }
        DvLocation::Absolute(uri) => inside_table(storage, &uri).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> (tempfile::TempDir, Storage) {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        (dir, storage)
    }

    const INFO: &str =
        r#"{"commitInfo":{"inCommitTimestamp":1700000000000,"txnId":"t-1","operation":"WRITE"}}"#;

    fn add(path: &str, size: u64) -> String {
        format!(
            r#"{{"add":{{"path":"{path}","partitionValues":{{}},"size":{size},"modificationTime":1,"dataChange":true}}}}"#
        )
    }

    async fn check(storage: &Storage, text: &str) -> DeltaResult<ProposalReport> {
        check_proposal(storage, 1, text.as_bytes(), true).await
    }

    #[tokio::test]
    async fn a_good_commit_reports_what_the_catalog_needs() {
        let (dir, storage) = table();
        std::fs::write(dir.path().join("part-0.parquet"), b"12345").unwrap();
        let text = format!(
            "{INFO}\n{}\n{}\n",
            add("part-0.parquet", 5),
            r#"{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[]}","removed":false}}"#
        );
        let report = check(&storage, &text).await.unwrap();
        assert_eq!(report.in_commit_timestamp, Some(1_700_000_000_000));
        assert_eq!(report.txn_id.as_deref(), Some("t-1"));
        assert!(report.commit_info_first);
        assert_eq!(report.actions, 3);
        assert_eq!(report.files_checked, 1);
        assert_eq!(report.sha256, sha256_hex(text.as_bytes()));
        assert_eq!(
            report.domains,
            vec![(
                "delta.clustering".to_string(),
                Some("{\"clusteringColumns\":[]}".to_string())
            )]
        );
    }

    #[tokio::test]
    async fn what_a_reader_cannot_read_is_refused() {
        let (dir, storage) = table();
        std::fs::write(dir.path().join("a.parquet"), b"123").unwrap();
        let cases = [
            (format!("{INFO}\n{{\"add\":\"a.parquet\"}}\n"), ""),
            (format!("{INFO}\n{{\"add\":[1]}}\n"), ""),
            (
                format!("{INFO}\n{{\"txn\":{{\"appId\":\"a\",\"version\":NaN}}}}\n"),
                "",
            ),
            (
                format!(
                    "{INFO}\n{{\"txn\":{{\"appId\":\"a\",\"version\":9223372036854775808}}}}\n"
                ),
                "",
            ),
            (
                r#"{"commitInfo":{"inCommitTimestamp":"1700000000000"}}"#.to_string(),
                "not a long",
            ),
            (r#"{"commitInfo":{"txnId":7}}"#.to_string(), "txnId"),
            (format!("{INFO}\n{INFO}\n"), "at most one commitInfo"),
            (
                format!("{INFO}\n{}\n", add("missing.parquet", 3)),
                "does not exist",
            ),
            (format!("{INFO}\n{}\n", add("a.parquet", 4)), "not the 4"),
            (
                format!("{INFO}\n{}\n", add("../other/a.parquet", 3)),
                "leaves the table",
            ),
            (
                format!("{INFO}\n{}\n", add("/etc/passwd", 3)),
                "outside the table",
            ),
            (format!("{INFO}\n{{\"sidecar\":{{}}}}\n"), "not an action"),
            (
                format!("{INFO}\n{{\"add\":{{}},\"remove\":{{}}}}\n"),
                "more than one action",
            ),
            (String::new(), "at least one action"),
        ];
        for (text, needle) in cases {
            let err = check(&storage, &text).await.unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(err.contains("proposed commit 1"), "{err}");
        }
    }

    #[tokio::test]
    async fn absolute_paths_inside_the_root_and_deletion_vectors() {
        let (dir, storage) = table();
        std::fs::write(dir.path().join("b.parquet"), b"1").unwrap();
        let absolute = format!("{}/b.parquet", dir.path().display());
        let text = format!("{INFO}\n{}\n", add(&absolute, 1));
        assert_eq!(check(&storage, &text).await.unwrap().files_checked, 1);
        // A file DV must exist; an inline one must decode.
        let with_dv = r#"{"add":{"path":"b.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":36,"cardinality":2}}}"#;
        let err = check(&storage, &format!("{INFO}\n{with_dv}\n"))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("deletion vector of b.parquet"),
            "{err}"
        );
        let bad_inline = r#"{"add":{"path":"b.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"!!!!","sizeInBytes":4,"cardinality":1}}}"#;
        assert!(check(&storage, &format!("{INFO}\n{bad_inline}\n"))
            .await
            .is_err());
        // Files are not checked when the caller says so.
        let text = format!("{INFO}\n{}\n", add("gone.parquet", 1));
        let report = check_proposal(&storage, 1, text.as_bytes(), false)
            .await
            .unwrap();
        assert_eq!(report.files_checked, 0);
    }

    #[tokio::test]
    async fn escaped_partition_directories_are_found_as_the_reader_finds_them() {
        // "Add File and Remove File": the path is a URI; the Hive-escaped directory
        // `region=a b%2Fc` is logged URI-encoded as `region=a%20b%252Fc`.
        let (dir, storage) = table();
        for (on_disk, logged) in [
            ("region=a b%2Fc", "region=a%20b%252Fc"),
            ("pct=50%25", "pct=50%2525"),
            ("k=%3D%25x", "k=%253D%2525x"),
            ("city=Z\u{fc}rich", "city=Z%C3%BCrich"),
        ] {
            std::fs::create_dir_all(dir.path().join(on_disk)).unwrap();
            std::fs::write(dir.path().join(on_disk).join("p.parquet"), b"12").unwrap();
            let text = format!("{INFO}\n{}\n", add(&format!("{logged}/p.parquet"), 2));
            let report = check(&storage, &text)
                .await
                .unwrap_or_else(|e| panic!("{logged}: {e}"));
            assert_eq!(report.files_checked, 1);
        }
        // Decoded one level too many, the file is not there.
        let text = format!("{INFO}\n{}\n", add("region=a%20b%2Fc/p.parquet", 2));
        assert!(check(&storage, &text).await.is_err());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symbolic_links_are_refused() {
        let (dir, storage) = table();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("theirs.parquet"), b"123").unwrap();
        std::fs::create_dir_all(other.path().join("part=1")).unwrap();
        std::fs::write(other.path().join("part=1/x.parquet"), b"123").unwrap();
        std::os::unix::fs::symlink(
            other.path().join("theirs.parquet"),
            dir.path().join("mine.parquet"),
        )
        .unwrap();
        std::os::unix::fs::symlink(other.path().join("part=1"), dir.path().join("part=1")).unwrap();
        std::fs::write(dir.path().join("own.parquet"), b"123").unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("own.parquet"),
            dir.path().join("alias.parquet"),
        )
        .unwrap();
        for (path, needle) in [
            ("mine.parquet", "symbolic link"),
            ("alias.parquet", "symbolic link"),
            ("part=1/x.parquet", "outside the table's real root"),
        ] {
            let text = format!("{INFO}\n{}\n", add(path, 3));
            let err = check(&storage, &text).await.unwrap_err().to_string();
            assert!(err.contains(needle), "{path}: {err}");
            assert!(err.contains(path), "{path}: {err}");
        }
        let text = format!("{INFO}\n{}\n", add("own.parquet", 3));
        assert_eq!(check(&storage, &text).await.unwrap().files_checked, 1);
    }
}
