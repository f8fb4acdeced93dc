//! Choosing the log files that make up one version of a table: the log segment.
//!
//! Spec: "Delta Log Entries" (contiguous versions), "Checkpoints" (newest complete checkpoint not
//! newer than the target version; incomplete multi-part sets ignored), "Log Compaction Files"
//! (a compaction replaces its commit range), "Last Checkpoint File" (a hint to list from near
//! the end; stale, corrupt or wrong hints fall back to a full listing).

use std::collections::{BTreeMap, HashMap};

use object_store::ObjectMeta;

use crate::error::{DeltaError, DeltaResult};
use crate::log::catalog::CatalogCommits;
use crate::log::last_checkpoint::parse_last_checkpoint;
use crate::log::path::{classify, CheckpointFormat, CheckpointNaming, LogFileKind};
use crate::storage::Storage;

/// One file of `_delta_log`, classified.
#[derive(Debug, Clone)]
pub struct LogFile {
    /// What the file is.
    pub kind: LogFileKind,
    /// Path relative to `_delta_log/` (e.g. `00000000000000000003.json`).
    pub name: String,
    /// Location, size and modification time.
    pub meta: ObjectMeta,
    /// The content of a commit the managing catalog holds itself (an inline commit,
    /// catalogManaged RFC): there is no file to read.
    pub inline: Option<bytes::Bytes>,
}

impl LogFile {
    /// Runs `f` over the file's bytes: the inline content, or the object (memory-mapped when
    /// local, see [`Storage::scan`]).
    pub async fn scan<T, F>(&self, storage: &Storage, f: F) -> Result<T, object_store::Error>
    where
        T: Send + 'static,
        F: FnOnce(&[u8]) -> T + Send + 'static,
    {
        match &self.inline {
            Some(content) => {
                let content = content.clone();
                tokio::task::spawn_blocking(move || f(&content))
                    .await
                    .map_err(|e| object_store::Error::Generic {
                        store: "catalog",
                        source: Box::new(e),
                    })
            }
            None => storage.scan(&self.meta.location, f).await,
        }
    }

    /// The file's bytes: the inline content, or the object.
    pub async fn read(&self, storage: &Storage) -> DeltaResult<bytes::Bytes> {
        match &self.inline {
            Some(content) => Ok(content.clone()),
            None => Ok(storage.get(&self.meta.location).await?),
        }
    }
}

/// Whether two listings (or a listing and a `HEAD`) of one log file name saw the same object:
/// the same size and entity tag when the store gives both tags (a local file's tag includes
/// its inode, so a file written anew differs), else the same size and modification second
/// (object stores list modification times more precisely than `HEAD` reports them). Log files
/// are never rewritten in place, so a difference means the table was deleted and created
/// again at the same location.
pub fn same_object(a: &ObjectMeta, b: &ObjectMeta) -> bool {
    a.size == b.size
        && match (&a.e_tag, &b.e_tag) {
            (Some(x), Some(y)) => x == y,
            _ => a.last_modified.timestamp() == b.last_modified.timestamp(),
        }
}

/// Whether `version` still stands in the log of `storage` as `segment` (the files a snapshot
/// of that version was built from, when known) saw it: its commit file exists and, when the
/// segment listed it, is the same file ([`same_object`]); for a version read from a
/// checkpoint without its commit, the checkpoint exists. `Ok(Err(why))` when it does not:
/// the table was deleted (and perhaps created again) at the same location, or its log cleaned
/// up past that version. One `HEAD` request, no listing (two for a checkpoint-only version).
pub async fn version_stands(
    storage: &Storage,
    version: u64,
    segment: Option<&LogSegment>,
) -> DeltaResult<Result<(), String>> {
    let listed = segment
        .filter(|s| s.version == version)
        .and_then(|s| s.last_commit.as_ref());
    let name = crate::log::path::commit_file_name(version);
    match storage.head(&storage.log_path(&name)).await {
        Ok(meta) => Ok(match listed {
            // A commit the snapshot read from its catalog (staged or inline) has since been
            // published: publishing checks the content, so any `<v>.json` is that commit.
            Some(file) if file.name == name && !same_object(&file.meta, &meta) => Err(format!(
                "its commit file {name} was replaced (the table was deleted and created again)"
            )),
            _ => Ok(()),
        }),
        Err(object_store::Error::NotFound { .. }) => {
            let checkpoint = segment
                .filter(|s| s.version == version && listed.is_none())
                .and_then(|s| s.checkpoint.as_ref())
                .filter(|c| c.version == version)
                .and_then(|c| c.parts.first());
            if let Some(part) = checkpoint {
                if storage.head(&storage.log_path(&part.name)).await.is_ok() {
                    return Ok(Ok(()));
                }
            }
            Ok(Err(format!(
                "its commit file {name} no longer exists (the table was deleted, or its log \
                 cleaned up past that version)"
            )))
        }
        Err(e) => Err(e.into()),
    }
}

/// A complete checkpoint: one file, or every part of a multi-part set.
#[derive(Debug, Clone)]
pub struct CheckpointFiles {
    /// The table version the checkpoint represents.
    pub version: u64,
    /// Its naming scheme.
    pub naming: CheckpointNaming,
    /// JSON or parquet.
    pub format: CheckpointFormat,
    /// The files, in part order.
    pub parts: Vec<LogFile>,
}

/// What to replay after the checkpoint: a single commit, or a compaction of a range.
#[derive(Debug, Clone)]
pub enum Delta {
    /// `n.json`
    Commit { version: u64, file: LogFile },
    /// `x.y.compacted.json`
    Compaction { start: u64, end: u64, file: LogFile },
}

impl Delta {
    /// The newest version the delta covers.
    pub fn end_version(&self) -> u64 {
        match self {
            Delta::Commit { version, .. } => *version,
            Delta::Compaction { end, .. } => *end,
        }
    }

    /// The file to read.
    pub fn file(&self) -> &LogFile {
        match self {
            Delta::Commit { file, .. } | Delta::Compaction { file, .. } => file,
        }
    }
}

/// The files that reconstruct one version.
#[derive(Debug, Clone)]
pub struct LogSegment {
    /// The version reconstructed.
    pub version: u64,
    /// The checkpoint replay starts from, if any.
    pub checkpoint: Option<CheckpointFiles>,
    /// Commits and compactions after the checkpoint, ascending.
    pub deltas: Vec<Delta>,
    /// The commit file of `version` itself when it was listed (for its timestamp).
    pub last_commit: Option<LogFile>,
}

/// [`LogListing::probe`] looks up at most this many new commits by name; beyond, a listing.
const MAX_PROBED_COMMITS: u64 = 64;

/// A listing of `_delta_log`, sorted by name, with every file classified.
#[derive(Debug, Clone, Default)]
pub struct LogListing {
    /// The classified files (unknown ones dropped).
    pub files: Vec<LogFile>,
    /// Whether the listing started at version 0 (a full listing) or at a hint.
    pub complete: bool,
}

impl LogListing {
    /// Lists `_delta_log`, starting at `from_version` when given (spec: "Last Checkpoint
    /// File": lexicographic listing from the checkpoint's version).
    pub async fn list(storage: &Storage, from_version: Option<u64>) -> DeltaResult<Self> {
        let offset = from_version
            .filter(|v| *v > 0)
            .map(|v| format!("{:020}", v - 1));
        let metas = storage.list_log_files(offset.as_deref()).await?;
        let mut files = Vec::with_capacity(metas.len());
        for meta in metas {
            let Some(name) = storage.relative_to_log(&meta.location) else {
                continue;
            };
            let kind = classify(&name);
            if matches!(kind, LogFileKind::Unknown) {
                continue;
            }
            if let (Some(from), Some(v)) = (from_version, kind.version()) {
                if v < from {
                    continue;
                }
            }
            files.push(LogFile {
                kind,
                name,
                meta,
                inline: None,
            });
        }
        Ok(LogListing {
            files,
            complete: from_version.unwrap_or(0) == 0,
        })
    }

    /// The commits from `from` on (to `upto` at most, and until one is missing) with their
    /// classic checkpoints, looked up by name on a local disk
    /// ([`Storage::probe_log_commits`]): what a listing from `from` would give an incremental
    /// update, without reading the whole directory. `None` where a listing is needed instead.
    pub async fn probe(
        storage: &Storage,
        from: u64,
        upto: Option<u64>,
    ) -> DeltaResult<Option<Self>> {
        let Some(metas) = storage
            .probe_log_commits(from, upto, MAX_PROBED_COMMITS)
            .await?
        else {
            return Ok(None);
        };
        let files = metas
            .into_iter()
            .filter_map(|meta| {
                let name = storage.relative_to_log(&meta.location)?;
                let kind = classify(&name);
                Some(LogFile {
                    kind,
                    name,
                    meta,
                    inline: None,
                })
            })
            .collect();
        Ok(Some(LogListing {
            files,
            complete: false,
        }))
    }

    /// The commit files (`n.json`), ascending by version.
    pub fn commits(&self) -> BTreeMap<u64, &LogFile> {
        self.files
            .iter()
            .filter_map(|f| match f.kind {
                LogFileKind::Commit { version } => Some((version, f)),
                _ => None,
            })
            .collect()
    }

    /// Every complete checkpoint, ascending by version (several may share a version).
    pub fn complete_checkpoints(&self) -> Vec<CheckpointFiles> {
        let mut singles: Vec<CheckpointFiles> = Vec::new();
        // (version, parts) -> part number -> file
        let mut multi: BTreeMap<(u64, u32), HashMap<u32, &LogFile>> = BTreeMap::new();
        for f in &self.files {
            if let LogFileKind::Checkpoint {
                version,
                naming,
                format,
            } = &f.kind
            {
                match naming {
                    CheckpointNaming::MultiPart { part, parts } => {
                        multi
                            .entry((*version, *parts))
                            .or_default()
                            .insert(*part, f);
                    }
                    _ => singles.push(CheckpointFiles {
                        version: *version,
                        naming: naming.clone(),
                        format: *format,
                        parts: vec![f.clone()],
                    }),
                }
            }
        }
        // "readers must ignore multi-part checkpoints with missing parts"
        for ((version, parts), found) in multi {
            if (1..=parts).all(|p| found.contains_key(&p)) {
                let mut files: Vec<LogFile> = (1..=parts)
                    .filter_map(|p| found.get(&p).map(|f| (*f).clone()))
                    .collect();
                files.sort_by(|a, b| a.name.cmp(&b.name));
                singles.push(CheckpointFiles {
                    version,
                    naming: CheckpointNaming::MultiPart { part: 1, parts },
                    format: CheckpointFormat::Parquet,
                    parts: files,
                });
            }
        }
        singles.sort_by_key(|c| (c.version, preference(&c.naming, c.format)));
        singles
    }

    /// The newest version any file of the listing represents.
    pub fn latest_version(&self) -> Option<u64> {
        self.files
            .iter()
            .filter_map(|f| match &f.kind {
                LogFileKind::Commit { version } => Some(*version),
                LogFileKind::Checkpoint { version, .. } => Some(*version),
                _ => None,
            })
            .max()
    }
}

/// Among complete checkpoints of one version, which to prefer (higher wins): a classic file is
/// one read; a UUID-named parquet next; JSON and multi-part sets last.
fn preference(naming: &CheckpointNaming, format: CheckpointFormat) -> u8 {
    match (naming, format) {
        (CheckpointNaming::Classic, _) => 3,
        (CheckpointNaming::Uuid { .. }, CheckpointFormat::Parquet) => 2,
        (CheckpointNaming::MultiPart { .. }, _) => 1,
        (CheckpointNaming::Uuid { .. }, CheckpointFormat::Json) => 0,
    }
}

/// Why a segment could not be built from a listing.
#[derive(Debug)]
pub enum SegmentError {
    /// A real error to report.
    Fatal(DeltaError),
    /// The listing (a partial one) is insufficient: list everything and try again.
    NeedFullListing(String),
}

impl From<DeltaError> for SegmentError {
    fn from(e: DeltaError) -> Self {
        SegmentError::Fatal(e)
    }
}

/// Builds the segment of `target` (the latest version when `None`) from `listing`.
pub fn build_segment(
    listing: &LogListing,
    target: Option<u64>,
) -> Result<LogSegment, SegmentError> {
    let commits = listing.commits();
    let Some(latest) = listing.latest_version() else {
        return Err(if listing.complete {
            SegmentError::Fatal(DeltaError::TableNotFound {
                path: "_delta_log".into(),
                reason: "the log has no commit or checkpoint".into(),
            })
        } else {
            SegmentError::NeedFullListing("nothing listed after the checkpoint hint".into())
        });
    };
    let version = match target {
        Some(v) if v > latest => {
            return Err(SegmentError::Fatal(DeltaError::version_not_found(format!(
                "version {v} does not exist; the latest version is {latest}"
            ))))
        }
        Some(v) => v,
        None => latest,
    };
    let checkpoint = listing
        .complete_checkpoints()
        .into_iter()
        .rev()
        .find(|c| c.version <= version);
    if checkpoint.is_none() && !listing.complete {
        return Err(SegmentError::NeedFullListing(
            "no complete checkpoint at or after the hinted version".into(),
        ));
    }
    let start = checkpoint.as_ref().map_or(0, |c| c.version + 1);

    // Compactions inside (start..=version), longest first for each start version.
    let mut compactions: BTreeMap<u64, (u64, &LogFile)> = BTreeMap::new();
    for f in &listing.files {
        if let LogFileKind::Compaction { start: s, end: e } = f.kind {
            if s >= start && e <= version {
                let entry = compactions.entry(s).or_insert((e, f));
                if e > entry.0 {
                    *entry = (e, f);
                }
            }
        }
    }

    let mut deltas = Vec::new();
    let mut v = start;
    while v <= version {
        if let Some((end, file)) = compactions.get(&v) {
            // Prefer a compaction only when it saves reading more than one commit.
            if *end > v {
                deltas.push(Delta::Compaction {
                    start: v,
                    end: *end,
                    file: (*file).clone(),
                });
                v = end + 1;
                continue;
            }
        }
        match commits.get(&v) {
            Some(file) => {
                deltas.push(Delta::Commit {
                    version: v,
                    file: (*file).clone(),
                });
                v += 1;
            }
            None => {
                return Err(missing_version(
                    listing,
                    &commits,
                    checkpoint.as_ref(),
                    v,
                    version,
                    target,
                ))
            }
        }
    }
    let last_commit = commits.get(&version).map(|f| (*f).clone());
    Ok(LogSegment {
        version,
        checkpoint,
        deltas,
        last_commit,
    })
}

/// The error for a version `missing` that no commit, compaction or checkpoint provides.
fn missing_version(
    listing: &LogListing,
    commits: &BTreeMap<u64, &LogFile>,
    checkpoint: Option<&CheckpointFiles>,
    missing: u64,
    version: u64,
    target: Option<u64>,
) -> SegmentError {
    if !listing.complete {
        return SegmentError::NeedFullListing(format!("commit {missing} not listed"));
    }
    let earliest = commits.keys().next().copied();
    let before_any_commit = earliest.is_none_or(|e| e > missing);
    let nothing_older_listed = commits.range(..missing).next().is_none()
        && checkpoint.is_none_or(|c| c.version + 1 == missing);
    if before_any_commit && nothing_older_listed && checkpoint.is_none() && target.is_some() {
        // Early commits were cleaned up and no checkpoint covers the requested version.
        return SegmentError::Fatal(DeltaError::version_not_found(format!(
            "version {version} cannot be reconstructed: the log's earliest commit is {} and no \
             checkpoint at or before version {version} exists (spec: \"Metadata Cleanup\")",
            earliest.map_or("none".to_string(), |e| e.to_string())
        )));
    }
    let file = format!("_delta_log/{missing:020}.json");
    let rule = match (
        commits.range(..missing).next_back(),
        commits.range(missing + 1..).next(),
    ) {
        (Some((before, _)), Some((after, _))) => format!(
            "versions are not contiguous: commit {missing} is missing between {before} and {after} \
             (spec: \"Delta Log Entries\")"
        ),
        _ => format!(
            "commit {missing} is missing and no checkpoint covers it; version {version} needs it \
             (spec: \"Delta Log Entries\", \"Checkpoints\")"
        ),
    };
    SegmentError::Fatal(DeltaError::corrupt(file, Some(missing), rule))
}

/// Reads `_last_checkpoint` and returns the hinted version, or `None` when the file is absent
/// or unusable. Any failure only loses the hint: the full listing that follows reports real
/// storage problems itself.
pub async fn last_checkpoint_hint(storage: &Storage) -> Option<u64> {
    let bytes = storage
        .get(&storage.log_path("_last_checkpoint"))
        .await
        .ok()?;
    parse_last_checkpoint(&bytes).ok().map(|h| h.version)
}

/// Lists and selects the segment of `target`, using the `_last_checkpoint` hint when it helps.
pub async fn load_segment(
    storage: &Storage,
    target: Option<u64>,
) -> DeltaResult<(LogSegment, LogListing)> {
    if let Some(hint) = last_checkpoint_hint(storage).await {
        if target.is_none_or(|t| t >= hint) {
            let listing = LogListing::list(storage, Some(hint)).await?;
            match build_segment(&listing, target) {
                Ok(segment) => return Ok((segment, listing)),
                Err(SegmentError::Fatal(e)) => return Err(e),
                Err(SegmentError::NeedFullListing(_)) => {}
            }
        }
    }
    let listing = LogListing::list(storage, None).await?;
    if listing.files.is_empty() {
        return Err(not_a_table(storage).await);
    }
    match build_segment(&listing, target) {
        Ok(segment) => Ok((segment, listing)),
        Err(SegmentError::Fatal(e)) => Err(e),
        Err(SegmentError::NeedFullListing(reason)) => Err(DeltaError::corrupt(
            "_delta_log",
            target,
            format!("cannot build a log segment: {reason}"),
        )),
    }
}

/// [`load_segment`] for a catalog-managed table: the listing joined with the commits its
/// catalog returned ([`CatalogCommits::apply`]); the `_last_checkpoint` hint is used only when
/// it is not past the catalog's latest version, which is also the default target.
pub async fn load_catalog_segment(
    storage: &Storage,
    target: Option<u64>,
    catalog: &CatalogCommits,
) -> DeltaResult<(LogSegment, LogListing)> {
    let latest = catalog.latest_version;
    let version = target.unwrap_or(latest);
    if version > latest {
        return Err(DeltaError::version_not_found(format!(
            "version {version} does not exist; the catalog's latest ratified version is {latest}"
        )));
    }
    if let Some(hint) = last_checkpoint_hint(storage).await {
        if hint <= version {
            let mut listing = LogListing::list(storage, Some(hint)).await?;
            catalog.apply(storage, &mut listing)?;
            match build_segment(&listing, Some(version)) {
                Ok(segment) => return Ok((segment, listing)),
                Err(SegmentError::Fatal(e)) => return Err(e),
                Err(SegmentError::NeedFullListing(_)) => {}
            }
        }
    }
    let mut listing = LogListing::list(storage, None).await?;
    catalog.apply(storage, &mut listing)?;
    if listing.files.is_empty() {
        return Err(not_a_table(storage).await);
    }
    match build_segment(&listing, Some(version)) {
        Ok(segment) => Ok((segment, listing)),
        Err(SegmentError::Fatal(e)) => Err(e),
        Err(SegmentError::NeedFullListing(reason)) => Err(DeltaError::corrupt(
            "_delta_log",
            Some(version),
            format!("cannot build a log segment: {reason}"),
        )),
    }
}

/// The error for a location whose `_delta_log` holds nothing usable.
pub async fn not_a_table(storage: &Storage) -> DeltaError {
    let location = storage.url().to_string();
    let reason = match storage.root_has_entries().await {
        Ok(true) => "the directory has no _delta_log with commits or checkpoints",
        Ok(false) => "the location does not exist or is empty",
        Err(_) => "the location cannot be listed",
    };
    DeltaError::TableNotFound {
        path: location,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests;
