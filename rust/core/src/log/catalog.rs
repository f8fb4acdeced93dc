//! Commits supplied by a table's managing catalog, and how they join the published log.
//!
//! Spec: the `catalogManaged` RFC (`000_…`): "Terminology: Commits" (staged, inline, ratified
//! and published commits), "Reading Catalog-managed Tables" and "Reader Requirements for
//! Catalog-managed tables". The catalog is the source of truth: its commit for a version wins
//! over a published `<v>.json`, files of versions past its latest ratified version are ignored,
//! and a staged file it did not return is never read.

use bytes::Bytes;
use futures::future::BoxFuture;
use object_store::ObjectMeta;

use crate::error::{DeltaError, DeltaResult};
use crate::log::path::{classify, commit_file_name, LogFileKind};
use crate::log::reader::log_file_error;
use crate::log::segment::{LogFile, LogListing};
use crate::storage::Storage;

/// A proposed commit as the writer hands it to the catalog ("Commit Protocol": option 1, a
/// staged commit file; option 2, an inline commit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposal {
    /// The commit was written to `_delta_log/_staged_commits/<name>`.
    Staged(String),
    /// The commit's content, for the catalog to hold.
    Inline(Bytes),
}

/// What a proposed commit changes of the table's latest state: the JSON of its `protocol` and
/// `metaData` actions, when it has them. Catalogs are encouraged to keep the latest protocol
/// and metadata so that clients can skip log replay (catalogManaged RFC, "Catalog
/// Responsibilities").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateChanges {
    /// The commit's `protocol` action (the object inside `{"protocol": ...}`), as JSON.
    pub protocol: Option<String>,
    /// The commit's `metaData` action (the object inside `{"metaData": ...}`), as JSON.
    pub metadata: Option<String>,
}

impl StateChanges {
    /// The protocol and metadata a commit's newline-delimited JSON carries.
    pub fn of_commit(text: &str) -> DeltaResult<Self> {
        let mut changes = StateChanges::default();
        for line in text.lines() {
            // Only the lines that can hold them are parsed.
            let (is_protocol, is_metadata) =
                (line.contains("\"protocol\""), line.contains("\"metaData\""));
            if !is_protocol && !is_metadata {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
                DeltaError::InvalidArgument(format!("a proposed commit has a bad line: {e}"))
            })?;
            if let Some(p) = value.get("protocol").filter(|v| !v.is_null()) {
                changes.protocol = Some(p.to_string());
            }
            if let Some(m) = value.get("metaData").filter(|v| !v.is_null()) {
                changes.metadata = Some(m.to_string());
            }
        }
        Ok(changes)
    }
}

/// The catalog's answer to a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// The proposal is version `v` now.
    Ratified,
    /// Another commit was ratified for that version first; the catalog's ratified commits
    /// from that version on, so that the writer can rebase without asking again.
    Conflict(CatalogCommits),
    /// The catalog took the proposal into a transaction over several tables (ratified
    /// together with the others, or not at all, when that transaction ends). It is not
    /// ratified yet: it is neither published nor followed by any maintenance now.
    Deferred,
}

/// A maintenance operation, which a client must clear with the catalog of a catalog-managed
/// table before running it (catalogManaged RFC, "Maintenance Operations on Catalog-managed
/// Tables": "Delta clients must consult the catalog before running any maintenance job").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maintenance {
    /// A checkpoint (of a published version).
    Checkpoint,
    /// A log compaction file (of published versions).
    LogCompaction,
    /// A version checksum file (`<v>.crc`, any ratified version).
    Checksum,
    /// Metadata cleanup (expired log files and staged commits).
    MetadataCleanup,
    /// VACUUM (expired data files).
    Vacuum,
}

impl Maintenance {
    /// The operation's name as catalog clients see it.
    pub fn name(self) -> &'static str {
        match self {
            Maintenance::Checkpoint => "checkpoint",
            Maintenance::LogCompaction => "log_compaction",
            Maintenance::Checksum => "checksum",
            Maintenance::MetadataCleanup => "metadata_cleanup",
            Maintenance::Vacuum => "vacuum",
        }
    }
}

/// The client side of the catalog that manages a catalog-managed table: what deltalog needs
/// from it to read and write the table ("Catalog Responsibilities"; the RFC's "Sample Catalog
/// Client API"). Implemented in the Python binding over any Python catalog client.
pub trait CatalogClient: Send + Sync + std::fmt::Debug {
    /// The ratified commits the catalog holds with versions in `[start, end]` (all when both
    /// are `None`), ascending and contiguous, and the latest ratified version.
    fn ratified_commits(
        &self,
        start: Option<u64>,
        end: Option<u64>,
    ) -> BoxFuture<'_, DeltaResult<CatalogCommits>>;

    /// Proposes `proposal` as version `version`: ratified, or a conflict carrying the
    /// ratified commits that won. The catalog ratifies `version` at most once and only after
    /// `version - 1` ("Commit Protocol").
    ///
    /// `changes` is the protocol and metadata the commit sets, for the catalog to keep.
    fn commit(
        &self,
        version: u64,
        proposal: Proposal,
        changes: StateChanges,
    ) -> BoxFuture<'_, DeltaResult<CommitOutcome>>;

    /// Tells the catalog that every version up to `version` is published as `<v>.json`, so it
    /// may stop holding those commits ("Publishing Commits").
    fn published(&self, version: u64) -> BoxFuture<'_, DeltaResult<()>>;

    /// Commits of at most this many bytes are proposed inline (the catalog holds their
    /// content; nothing is written before ratification); 0 when the catalog takes staged
    /// commits only.
    fn max_inline_bytes(&self) -> usize {
        0
    }

    /// The SHA-256 the catalog recorded for each published version in `[start, end]` it has
    /// one for (for [`crate::log::published`]: the versions a reader replays that
    /// [`CatalogCommits::published`] left out). Catalogs that record none answer nothing.
    fn published_digests(
        &self,
        start: u64,
        end: u64,
    ) -> BoxFuture<'_, DeltaResult<std::collections::BTreeMap<u64, String>>> {
        let _ = (start, end);
        Box::pin(async { Ok(Default::default()) })
    }

    /// Whether the catalog allows `operation` on the table at `version` now. Catalogs
    /// without maintenance policies allow everything.
    fn allows(&self, operation: Maintenance, version: u64) -> BoxFuture<'_, DeltaResult<bool>> {
        let _ = (operation, version);
        Box::pin(async { Ok(true) })
    }
}

/// A [`CatalogClient`] whose answers are checked against the content the catalog ratified
/// ([`CatalogCommits::verified`]) before anything reads them: the table's reads, publishing
/// and a writer's rebase onto the winners of a conflict all see the ratified content or an
/// error naming the file, never a file changed since.
#[derive(Debug)]
pub struct VerifyingClient {
    inner: std::sync::Arc<dyn CatalogClient>,
    storage: Storage,
}

impl VerifyingClient {
    /// `inner`, checked against the table at `storage`.
    pub fn wrap(
        inner: std::sync::Arc<dyn CatalogClient>,
        storage: Storage,
    ) -> std::sync::Arc<dyn CatalogClient> {
        std::sync::Arc::new(VerifyingClient { inner, storage })
    }
}

impl CatalogClient for VerifyingClient {
    fn ratified_commits(
        &self,
        start: Option<u64>,
        end: Option<u64>,
    ) -> BoxFuture<'_, DeltaResult<CatalogCommits>> {
        Box::pin(async move {
            let answer = self.inner.ratified_commits(start, end).await?;
            answer.verified(&self.storage).await
        })
    }

    fn commit(
        &self,
        version: u64,
        proposal: Proposal,
        changes: StateChanges,
    ) -> BoxFuture<'_, DeltaResult<CommitOutcome>> {
        Box::pin(async move {
            match self.inner.commit(version, proposal, changes).await? {
                CommitOutcome::Conflict(winners) => Ok(CommitOutcome::Conflict(
                    winners.verified(&self.storage).await?,
                )),
                other => Ok(other),
            }
        })
    }

    fn published(&self, version: u64) -> BoxFuture<'_, DeltaResult<()>> {
        self.inner.published(version)
    }

    fn published_digests(
        &self,
        start: u64,
        end: u64,
    ) -> BoxFuture<'_, DeltaResult<std::collections::BTreeMap<u64, String>>> {
        self.inner.published_digests(start, end)
    }

    fn max_inline_bytes(&self) -> usize {
        self.inner.max_inline_bytes()
    }

    fn allows(&self, operation: Maintenance, version: u64) -> BoxFuture<'_, DeltaResult<bool>> {
        self.inner.allows(operation, version)
    }
}

/// Where a ratified commit's content is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RatifiedSource {
    /// A staged commit file: its name in `_delta_log/_staged_commits/`, or its full URI.
    Staged(String),
    /// An inline commit: the newline-delimited JSON the catalog holds.
    Inline(Bytes),
}

/// A commit the managing catalog ratified ("Ratified commit"); it may also be published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RatifiedCommit {
    /// The table version it is.
    pub version: u64,
    /// Its content's location or the content itself.
    pub source: RatifiedSource,
    /// When the catalog ratified it, in milliseconds since the epoch, if it says.
    pub timestamp: Option<i64>,
    /// The SHA-256 (lowercase hex) of the content the catalog ratified, if it recorded it:
    /// the content is checked against it before it is read ([`CatalogCommits::verified`]).
    pub sha256: Option<String>,
}

/// What the catalog returned for a table: the ratified commits it still holds, ascending and
/// contiguous, and the latest ratified version, which is authoritative ("Getting Ratified
/// Commits from the Catalog").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogCommits {
    /// The commits, ascending and contiguous (possibly empty: everything is published).
    pub commits: Vec<RatifiedCommit>,
    /// The table's latest ratified version.
    pub latest_version: u64,
    /// The SHA-256 (lowercase hex) the catalog recorded for published versions: some of those
    /// the request covered (the catalog may leave any out; [`CatalogClient::published_digests`]
    /// gives the rest). `None`: the catalog records none, and published commits are read
    /// unchecked ([`crate::log::published`]).
    pub published: Option<std::collections::BTreeMap<u64, String>>,
}

impl CatalogCommits {
    /// Checks the catalog's answer: versions ascending, contiguous and none past
    /// `latest_version`; staged commits named as files of `_delta_log/_staged_commits/` for
    /// their own version. `table` names the table in errors.
    pub fn validate(&self, table: &str) -> DeltaResult<()> {
        let bad = |version: u64, rule: String| {
            DeltaError::corrupt(
                format!("the catalog's ratified commits of {table}"),
                Some(version),
                format!(
                    "{rule} (catalogManaged RFC: \"Getting Ratified Commits from the Catalog\")"
                ),
            )
        };
        for pair in self.commits.windows(2) {
            if pair[1].version != pair[0].version + 1 {
                return Err(bad(
                    pair[1].version,
                    format!(
                        "ratified commits must be ascending and contiguous, but version {} \
                         follows version {}",
                        pair[1].version, pair[0].version
                    ),
                ));
            }
        }
        if let Some(last) = self.commits.last() {
            if last.version > self.latest_version {
                return Err(bad(
                    last.version,
                    format!(
                        "a ratified commit of version {} is past the latest ratified version {}",
                        last.version, self.latest_version
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The commits with every recorded SHA-256 checked against their content: a staged
    /// commit's file is read (and its content kept, so that it is not read again), an inline
    /// commit's content hashed ("Publishing Commits": the content of a ratified commit is
    /// immutable; a staged file rewritten after ratification is refused, never read).
    pub async fn verified(mut self, storage: &Storage) -> DeltaResult<Self> {
        for commit in &mut self.commits {
            let Some(expected) = commit.sha256.clone() else {
                continue;
            };
            let (name, content) = match &commit.source {
                RatifiedSource::Inline(content) => {
                    (commit_file_name(commit.version), content.clone())
                }
                RatifiedSource::Staged(_) => {
                    let file = commit_file(storage, storage.url().as_str(), commit)?;
                    let content = storage
                        .get(&file.meta.location)
                        .await
                        .map_err(|e| log_file_error(e, &file, Some(commit.version)))?;
                    (file.name, content)
                }
            };
            let found = crate::log::proposal::sha256_hex(&content);
            if !found.eq_ignore_ascii_case(&expected) {
                return Err(DeltaError::corrupt(
                    format!("_delta_log/{name}"),
                    Some(commit.version),
                    format!(
                        "the content differs from the commit the catalog ratified (SHA-256 \
                         {found}, ratified {expected}): the content of a ratified commit is \
                         immutable (catalogManaged RFC: \"Publishing Commits\")"
                    ),
                ));
            }
            commit.source = RatifiedSource::Inline(content);
        }
        Ok(self)
    }

    /// The versions the catalog holds commits for.
    pub fn versions(&self) -> Option<(u64, u64)> {
        Some((self.commits.first()?.version, self.commits.last()?.version))
    }

    /// Joins the catalog's commits with a listing of the published log ("Reading
    /// Catalog-managed Tables"): files of versions past the latest ratified version go, as do
    /// every staged file and the compactions that cover a version the catalog holds; each
    /// catalog commit takes the place of that version's published file.
    pub fn apply(&self, storage: &Storage, listing: &mut LogListing) -> DeltaResult<()> {
        let table = storage.url().to_string();
        self.validate(&table)?;
        let latest = self.latest_version;
        let held = self.versions();
        // A catalog that records what it ratified has every published commit read and checked
        // ([`crate::log::published`]), never a compaction standing for some of them.
        let checked = self.published.is_some();
        listing.files.retain(|f| {
            let past = f.kind.version().is_some_and(|v| v > latest);
            let overridden = match (&f.kind, held) {
                (LogFileKind::Compaction { .. }, _) if checked => true,
                (LogFileKind::Commit { version }, Some((lo, hi))) => (lo..=hi).contains(version),
                (LogFileKind::Compaction { start, end }, Some((lo, hi))) => {
                    *start <= hi && lo <= *end
                }
                _ => false,
            };
            !(past || overridden || matches!(f.kind, LogFileKind::StagedCommit { .. }))
        });
        for commit in &self.commits {
            listing.files.push(commit_file(storage, &table, commit)?);
        }
        listing.files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(())
    }
}

/// The whole log of a table as readers see it: the listing of `_delta_log`, joined with the
/// commits its catalog holds when it is catalog-managed ([`CatalogCommits::apply`]), so that
/// history, the change feed and time travel by timestamp see unpublished commits too ("Reading
/// Catalog-managed Tables").
pub async fn joined_listing(
    storage: &Storage,
    client: Option<&std::sync::Arc<dyn CatalogClient>>,
) -> DeltaResult<LogListing> {
    let mut listing = LogListing::list(storage, None).await?;
    if let Some(client) = client {
        client
            .ratified_commits(None, None)
            .await?
            .apply(storage, &mut listing)?;
    }
    Ok(listing)
}

/// The log file a ratified commit is read from (its staged file, or its inline content).
pub(crate) fn commit_file(
    storage: &Storage,
    table: &str,
    commit: &RatifiedCommit,
) -> DeltaResult<LogFile> {
    let version = commit.version;
    let last_modified = commit
        .timestamp
        .and_then(chrono::DateTime::from_timestamp_millis)
        .unwrap_or_default();
    let meta = |name: &str| ObjectMeta {
        location: storage.log_path(name),
        last_modified,
        size: 0,
        e_tag: None,
        version: None,
    };
    match &commit.source {
        RatifiedSource::Inline(content) => Ok(LogFile {
            kind: LogFileKind::Commit { version },
            name: format!(
                "{} (inline, held by the catalog)",
                commit_file_name(version)
            ),
            meta: meta(&commit_file_name(version)),
            inline: Some(content.clone()),
        }),
        RatifiedSource::Staged(path) => {
            let name = staged_name(storage, path).ok_or_else(|| {
                DeltaError::corrupt(
                    format!("the catalog's ratified commits of {table}"),
                    Some(version),
                    format!(
                        "the staged commit {path:?} is not a file of the table's \
                         _delta_log/_staged_commits/ (catalogManaged RFC: \"Staged commit\")"
                    ),
                )
            })?;
            match classify(&name) {
                LogFileKind::StagedCommit { version: v, .. } if v == version => Ok(LogFile {
                    kind: LogFileKind::Commit { version },
                    meta: meta(&name),
                    name,
                    inline: None,
                }),
                _ => Err(DeltaError::corrupt(
                    format!("the catalog's ratified commits of {table}"),
                    Some(version),
                    format!(
                        "the staged commit {path:?} of version {version} is not named \
                         <version>.<uuid>.json for that version (catalogManaged RFC: \"Staged \
                         commit\": the version in its name is authoritative)"
                    ),
                )),
            }
        }
    }
}

/// The `_delta_log`-relative name of a staged commit given as a file name or a full URI.
fn staged_name(storage: &Storage, path: &str) -> Option<String> {
    if !path.contains('/') {
        return Some(format!("_staged_commits/{path}"));
    }
    let log = format!(
        "{}/_delta_log/",
        storage.url().as_str().trim_end_matches('/')
    );
    let rest = path.strip_prefix(&log).or_else(|| {
        // A local path rather than a file:// URI.
        let local = storage.url().to_file_path().ok()?;
        let prefix = format!(
            "{}/_delta_log/",
            local.to_string_lossy().trim_end_matches('/')
        );
        path.strip_prefix(&prefix)
    })?;
    (rest.starts_with("_staged_commits/") && rest.matches('/').count() == 1)
        .then(|| rest.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    const U8: &str = "7d17ac10-5cc3-401b-bd1a-9c82dd2ea032";

    #[test]
    fn state_changes_are_the_protocol_and_metadata_lines() {
        let text = "{\"commitInfo\":{\"operation\":\"WRITE\",\"note\":\"\\\"protocol\\\"\"}}\n\
                    {\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7}}\n\
                    {\"metaData\":{\"id\":\"x\"}}\n\
                    {\"add\":{\"path\":\"a\"}}\n";
        let changes = StateChanges::of_commit(text).unwrap();
        assert_eq!(
            changes.protocol.as_deref(),
            Some("{\"minReaderVersion\":3,\"minWriterVersion\":7}")
        );
        assert_eq!(changes.metadata.as_deref(), Some("{\"id\":\"x\"}"));
        let none = StateChanges::of_commit("{\"add\":{\"path\":\"a\"}}\n").unwrap();
        assert_eq!(none, StateChanges::default());
        assert!(StateChanges::of_commit("{\"metaData\": oops\n").is_err());
    }

    fn staged(version: u64, uuid: &str) -> RatifiedCommit {
        RatifiedCommit {
            version,
            source: RatifiedSource::Staged(format!("{version:020}.{uuid}.json")),
            timestamp: None,
            sha256: None,
        }
    }

    fn listed(storage: &Storage, name: &str) -> LogFile {
        LogFile {
            kind: classify(name),
            name: name.into(),
            meta: ObjectMeta {
                location: storage.log_path(name),
                last_modified: Utc::now(),
                size: 1,
                e_tag: None,
                version: None,
            },
            inline: None,
        }
    }

    #[test]
    fn the_catalog_wins_and_later_files_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let names = [
            "00000000000000000006.json".to_string(),
            "00000000000000000007.json".to_string(),
            "00000000000000000003.00000000000000000005.compacted.json".to_string(),
            "00000000000000000006.00000000000000000008.compacted.json".to_string(),
            "00000000000000000010.json".to_string(),
            "00000000000000000010.checkpoint.parquet".to_string(),
            format!("_staged_commits/00000000000000000008.{U8}.json"),
            format!(
                "_staged_commits/00000000000000000008.{}.json",
                uuid::Uuid::new_v4()
            ),
        ];
        let mut listing = LogListing {
            files: names.iter().map(|n| listed(&storage, n)).collect(),
            complete: true,
        };
        let catalog = CatalogCommits {
            commits: vec![
                staged(7, "016ae953-37a9-438e-8683-9a9a4a79a395"),
                staged(8, U8),
                RatifiedCommit {
                    version: 9,
                    source: RatifiedSource::Inline(Bytes::from_static(b"{}\n")),
                    timestamp: Some(5),
                    sha256: None,
                },
            ],
            latest_version: 9,
            published: None,
        };
        catalog.apply(&storage, &mut listing).unwrap();
        let kept: Vec<(&str, bool)> = listing
            .files
            .iter()
            .map(|f| (f.name.as_str(), f.inline.is_some()))
            .collect();
        assert_eq!(
            kept,
            vec![
                ("00000000000000000003.00000000000000000005.compacted.json", false),
                ("00000000000000000006.json", false),
                (
                    "00000000000000000009.json (inline, held by the catalog)",
                    true
                ),
                (
                    "_staged_commits/00000000000000000007.016ae953-37a9-438e-8683-9a9a4a79a395.json",
                    false
                ),
                (&*format!("_staged_commits/00000000000000000008.{U8}.json"), false),
            ]
        );
        let commits = listing.commits();
        assert_eq!(
            commits.keys().copied().collect::<Vec<_>>(),
            vec![6, 7, 8, 9]
        );
    }

    #[test]
    fn malformed_answers_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let gap = CatalogCommits {
            commits: vec![staged(3, U8), staged(5, U8)],
            latest_version: 5,
            published: None,
        };
        let err = gap.apply(&storage, &mut LogListing::default()).unwrap_err();
        assert!(err.to_string().contains("contiguous"), "{err}");
        let past = CatalogCommits {
            commits: vec![staged(3, U8)],
            latest_version: 2,
            published: None,
        };
        assert!(past.validate("t").is_err());
        // The staged file's name must be of its own version.
        let wrong = CatalogCommits {
            commits: vec![RatifiedCommit {
                version: 4,
                source: RatifiedSource::Staged(format!("00000000000000000003.{U8}.json")),
                timestamp: None,
                sha256: None,
            }],
            latest_version: 4,
            published: None,
        };
        let err = wrong
            .apply(&storage, &mut LogListing::default())
            .unwrap_err();
        assert!(err.to_string().contains("authoritative"), "{err}");
        // Outside the staging directory.
        let outside = CatalogCommits {
            commits: vec![RatifiedCommit {
                version: 4,
                source: RatifiedSource::Staged("/elsewhere/x.json".into()),
                timestamp: None,
                sha256: None,
            }],
            latest_version: 4,
            published: None,
        };
        assert!(outside.apply(&storage, &mut LogListing::default()).is_err());
        // A full URI inside the table is accepted.
        let uri = format!(
            "{}/_delta_log/_staged_commits/00000000000000000004.{U8}.json",
            storage.url().as_str().trim_end_matches('/')
        );
        let full = CatalogCommits {
            commits: vec![RatifiedCommit {
                version: 4,
                source: RatifiedSource::Staged(uri),
                timestamp: None,
                sha256: None,
            }],
            latest_version: 4,
            published: None,
        };
        let mut listing = LogListing::default();
        full.apply(&storage, &mut listing).unwrap();
        assert_eq!(listing.files.len(), 1);
    }

    #[tokio::test]
    async fn ratified_content_is_checked_against_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let staged_dir = dir.path().join("_delta_log/_staged_commits");
        std::fs::create_dir_all(&staged_dir).unwrap();
        let name = format!("00000000000000000001.{U8}.json");
        std::fs::write(staged_dir.join(&name), b"{\"commitInfo\":{}}\n").unwrap();
        let good = crate::log::proposal::sha256_hex(b"{\"commitInfo\":{}}\n");
        let commits = |sha256: &str, source: RatifiedSource| CatalogCommits {
            commits: vec![RatifiedCommit {
                version: 1,
                source,
                timestamp: None,
                sha256: Some(sha256.to_string()),
            }],
            latest_version: 1,
            published: None,
        };
        // A staged file that still holds what was ratified is read once and kept.
        let checked = commits(&good, RatifiedSource::Staged(name.clone()))
            .verified(&storage)
            .await
            .unwrap();
        assert_eq!(
            checked.commits[0].source,
            RatifiedSource::Inline(Bytes::from_static(b"{\"commitInfo\":{}}\n"))
        );
        // Rewritten after ratification: refused, naming the file and the rule.
        std::fs::write(staged_dir.join(&name), b"{\"metaData\":{}}\n").unwrap();
        let err = commits(&good, RatifiedSource::Staged(name.clone()))
            .verified(&storage)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(&name) && err.contains("immutable"), "{err}");
        // Inline content is checked too; commits without a hash are taken as they are.
        let inline = RatifiedSource::Inline(Bytes::from_static(b"other\n"));
        assert!(commits(&good, inline.clone())
            .verified(&storage)
            .await
            .is_err());
        let mut unhashed = commits(&good, inline);
        unhashed.commits[0].sha256 = None;
        assert!(unhashed.verified(&storage).await.is_ok());
    }
}
