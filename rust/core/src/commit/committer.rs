//! How a transaction's commit becomes version `v`: one commit path, two committers.
//!
//! - A filesystem table: `<v>.json` is written only if it does not exist ("Creation of New Log
//!   Entries": object_store's create-only put).
//! - A catalog-managed table (catalogManaged RFC, "Commit Protocol"): the commit is proposed to
//!   the table's catalog, staged as `_delta_log/_staged_commits/<v>.<uuid>.json` (a fresh file
//!   per attempt: "the staged file's version is authoritative", never reused) or inline when
//!   the catalog takes small commits; the catalog ratifies it or answers with the commits that
//!   won. A ratified commit is then published ("Publishing Commits"): every ratified commit up
//!   to it is copied to `<v>.json` in order (a file already there with the same content counts
//!   as published), and the catalog is told.
//!
//! The transaction ([`crate::commit::transaction`]) keeps the conflict rules, rebasing and
//! retries for both.

use std::sync::Arc;

use bytes::Bytes;
use object_store::{PutMode, PutOptions, PutPayload};

use crate::error::{DeltaError, DeltaResult};
use crate::log::catalog::{
    commit_file, CatalogClient, CommitOutcome, Proposal, RatifiedCommit, StateChanges,
};
use crate::log::path::commit_file_name;
use crate::log::reader::log_file_error;
use crate::storage::Storage;

/// The result of one attempt at a version.
#[derive(Debug)]
pub enum Attempt {
    /// The commit is version `v`; `published` when `<v>.json` exists (always for filesystem
    /// tables; for catalog-managed ones once publishing succeeded).
    Committed { published: bool },
    /// The catalog took the commit into a transaction over several tables that it ratifies
    /// later (all of its commits or none): the version is the commit's if that transaction
    /// succeeds. Nothing more may be done for it now (no publishing, checksum or
    /// checkpoint).
    Deferred,
    /// Other commits won the version and, from a catalog's answer, the versions after it up
    /// to the latest ratified one: each with its content when the committer has it at hand,
    /// else it is read from `<v>.json`. Ascending, starting at the version attempted.
    Lost { winners: Vec<(u64, Option<Bytes>)> },
}

/// Tries to make `text` version `version`, through `catalog` for a catalog-managed table.
pub async fn attempt(
    storage: &Storage,
    catalog: Option<&Arc<dyn CatalogClient>>,
    version: u64,
    text: String,
) -> DeltaResult<Attempt> {
    match catalog {
        None => put_if_absent(storage, version, text).await,
        Some(client) => propose(storage, client, version, text).await,
    }
}

async fn put_if_absent(storage: &Storage, version: u64, text: String) -> DeltaResult<Attempt> {
    let location = storage.log_path(&commit_file_name(version));
    let options = PutOptions::from(PutMode::Create);
    match storage
        .store()
        .put_opts(&location, PutPayload::from(text.into_bytes()), options)
        .await
    {
        Ok(_) => Ok(Attempt::Committed { published: true }),
        Err(object_store::Error::AlreadyExists { .. }) => Ok(Attempt::Lost {
            winners: vec![(version, None)],
        }),
        Err(e) => Err(e.into()),
    }
}

async fn propose(
    storage: &Storage,
    client: &Arc<dyn CatalogClient>,
    version: u64,
    text: String,
) -> DeltaResult<Attempt> {
    let changes = StateChanges::of_commit(&text)?;
    let content = Bytes::from(text.into_bytes());
    let own = content.clone();
    let proposal = if content.len() <= client.max_inline_bytes() {
        Proposal::Inline(content)
    } else {
        let name = format!("{version:020}.{}.json", uuid::Uuid::new_v4());
        let location = storage.log_path(&format!("_staged_commits/{name}"));
        storage
            .store()
            .put_opts(
                &location,
                PutPayload::from(content),
                PutOptions::from(PutMode::Create),
            )
            .await?;
        Proposal::Staged(name)
    };
    match client.commit(version, proposal, changes).await? {
        CommitOutcome::Deferred => Ok(Attempt::Deferred),
        CommitOutcome::Ratified => {
            let published = match publish_with(storage, client, version, Some(own)).await {
                Ok(()) => true,
                Err(e) => {
                    // The commit stands (ratified); the next writer or reader publishes it.
                    log::warn!(
                        "{}: version {version} committed, but publishing it failed: {e}",
                        storage.url()
                    );
                    false
                }
            };
            Ok(Attempt::Committed { published })
        }
        CommitOutcome::Conflict(latest) => {
            // Every winner up to the latest ratified version, so that the writer rebases past
            // all of them at once ("Commit Protocol": the conflict answer carries the latest
            // ratified commits).
            let mut winners = Vec::new();
            for v in version..=latest.latest_version.max(version) {
                let content = match latest.commits.iter().find(|c| c.version == v) {
                    Some(commit) => Some(content_of(storage, commit).await?),
                    // Already published: read from `<v>.json`.
                    None => None,
                };
                winners.push((v, content));
            }
            Ok(Attempt::Lost { winners })
        }
    }
}

/// The content of a ratified commit: inline, or its staged file.
pub async fn content_of(storage: &Storage, commit: &RatifiedCommit) -> DeltaResult<Bytes> {
    let file = commit_file(storage, storage.url().as_str(), commit)?;
    match file.inline {
        Some(content) => Ok(content),
        None => storage
            .get(&file.meta.location)
            .await
            .map_err(|e| log_file_error(e, &file, Some(commit.version))),
    }
}

/// Publishes every ratified commit up to `version` in order ("Publishing Commits": copied to
/// `<v>.json`; a file already there with the same content counts as published), then tells
/// the catalog. Any client may publish; a writer publishes right after its own commit.
pub async fn publish(
    storage: &Storage,
    client: &Arc<dyn CatalogClient>,
    version: u64,
) -> DeltaResult<()> {
    publish_with(storage, client, version, None).await
}

/// [`publish`], with the content of `version` itself at hand (the writer's own commit: its
/// staged file is not read back).
async fn publish_with(
    storage: &Storage,
    client: &Arc<dyn CatalogClient>,
    version: u64,
    own: Option<Bytes>,
) -> DeltaResult<()> {
    let held = client.ratified_commits(None, Some(version)).await?;
    for commit in held.commits.iter().filter(|c| c.version <= version) {
        let content = match &own {
            Some(content) if commit.version == version => content.clone(),
            _ => content_of(storage, commit).await?,
        };
        let name = commit_file_name(commit.version);
        let location = storage.log_path(&name);
        let options = PutOptions::from(PutMode::Create);
        match storage
            .store()
            .put_opts(&location, PutPayload::from(content.clone()), options)
            .await
        {
            Ok(_) => {}
            Err(object_store::Error::AlreadyExists { .. }) => {
                let existing = storage.get(&location).await?;
                if existing != content {
                    return Err(DeltaError::corrupt(
                        format!("_delta_log/{name}"),
                        Some(commit.version),
                        "a published commit differs from the commit the catalog ratified for \
                         its version (catalogManaged RFC: \"Publishing Commits\": the content \
                         of a ratified commit is immutable)",
                    ));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    client.published(version).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::catalog::{CatalogCommits, RatifiedSource};
    use futures::future::BoxFuture;
    use std::sync::Mutex;

    /// A catalog in memory: ratification at most once and in order; with `defer`, proposals
    /// are only recorded (a transaction over several tables).
    #[derive(Debug, Default)]
    struct Memory {
        state: Mutex<(Vec<RatifiedCommit>, u64)>,
        inline: usize,
        defer: bool,
        changes: Mutex<Vec<StateChanges>>,
    }

    impl CatalogClient for Memory {
        fn ratified_commits(
            &self,
            start: Option<u64>,
            end: Option<u64>,
        ) -> BoxFuture<'_, DeltaResult<CatalogCommits>> {
            let (held, latest) = self.state.lock().unwrap().clone();
            let commits = held
                .into_iter()
                .filter(|c| {
                    start.is_none_or(|s| c.version >= s) && end.is_none_or(|e| c.version <= e)
                })
                .collect();
            Box::pin(async move {
                Ok(CatalogCommits {
                    commits,
                    latest_version: latest,
                    published: None,
                })
            })
        }

        fn commit(
            &self,
            version: u64,
            proposal: Proposal,
            changes: StateChanges,
        ) -> BoxFuture<'_, DeltaResult<CommitOutcome>> {
            self.changes.lock().unwrap().push(changes);
            if self.defer {
                return Box::pin(async { Ok(CommitOutcome::Deferred) });
            }
            let mut state = self.state.lock().unwrap();
            let outcome = if version != state.1 + 1 {
                CommitOutcome::Conflict(CatalogCommits {
                    commits: state
                        .0
                        .iter()
                        .filter(|c| c.version >= version)
                        .cloned()
                        .collect(),
                    latest_version: state.1,
                    published: None,
                })
            } else {
                let source = match proposal {
                    Proposal::Staged(name) => RatifiedSource::Staged(name),
                    Proposal::Inline(content) => RatifiedSource::Inline(content),
                };
                state.0.push(RatifiedCommit {
                    version,
                    source,
                    timestamp: None,
                    sha256: None,
                });
                state.1 = version;
                CommitOutcome::Ratified
            };
            Box::pin(async move { Ok(outcome) })
        }

        fn published(&self, version: u64) -> BoxFuture<'_, DeltaResult<()>> {
            self.state.lock().unwrap().0.retain(|c| c.version > version);
            Box::pin(async { Ok(()) })
        }

        fn max_inline_bytes(&self) -> usize {
            self.inline
        }
    }

    #[tokio::test]
    async fn ratified_commits_are_published_and_losers_get_the_winner() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let memory = Arc::new(Memory {
            inline: 8,
            ..Default::default()
        });
        let client: Arc<dyn CatalogClient> = memory.clone();
        // Version 1 staged (too large for inline), published at once.
        let attempt1 = attempt(&storage, Some(&client), 1, "{\"a\":1}\n".repeat(2)).await;
        assert!(matches!(
            attempt1.unwrap(),
            Attempt::Committed { published: true }
        ));
        let published = storage.get(&storage.log_path(&commit_file_name(1))).await;
        assert_eq!(published.unwrap(), Bytes::from("{\"a\":1}\n".repeat(2)));
        assert!(memory.state.lock().unwrap().0.is_empty());
        // Version 2 inline (small); a second proposal for 2 loses and sees the winner.
        memory.state.lock().unwrap().1 = 1;
        let _ = client
            .commit(
                2,
                Proposal::Inline(Bytes::from("{}\n")),
                StateChanges::default(),
            )
            .await;
        let lost = attempt(&storage, Some(&client), 2, "{\"b\":2}\n".into()).await;
        match lost.unwrap() {
            Attempt::Lost { winners } => {
                assert_eq!(winners, vec![(2, Some(Bytes::from("{}\n")))])
            }
            other => panic!("{other:?}"),
        }
        // The next commit publishes the unpublished 2 first, then itself.
        let attempt3 = attempt(&storage, Some(&client), 3, "{\"c\":3}\n".into()).await;
        assert!(matches!(
            attempt3.unwrap(),
            Attempt::Committed { published: true }
        ));
        for v in [2u64, 3] {
            assert!(storage
                .head(&storage.log_path(&commit_file_name(v)))
                .await
                .is_ok());
        }
        // A published file that differs from the ratified content is reported.
        memory.state.lock().unwrap().0.push(RatifiedCommit {
            version: 3,
            source: RatifiedSource::Inline(Bytes::from("other\n")),
            timestamp: None,
            sha256: None,
        });
        let err = publish(&storage, &client, 3).await.unwrap_err();
        assert!(err.to_string().contains("immutable"), "{err}");
    }

    #[tokio::test]
    async fn deferred_commits_are_neither_published_nor_ratified() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let memory = Arc::new(Memory {
            defer: true,
            ..Default::default()
        });
        let client: Arc<dyn CatalogClient> = memory.clone();
        let text = "{\"protocol\":{\"minReaderVersion\":3}}\n{\"add\":{}}\n".to_string();
        let outcome = attempt(&storage, Some(&client), 1, text).await.unwrap();
        assert!(matches!(outcome, Attempt::Deferred), "{outcome:?}");
        // Staged (no inline), not published, and the catalog was told the new protocol.
        assert!(storage
            .head(&storage.log_path(&commit_file_name(1)))
            .await
            .is_err());
        assert!(memory.state.lock().unwrap().0.is_empty());
        let changes = memory.changes.lock().unwrap();
        assert_eq!(
            changes[0].protocol.as_deref(),
            Some("{\"minReaderVersion\":3}")
        );
        assert_eq!(changes[0].metadata, None);
    }
}
