//! Published commits of a catalog-managed table checked against what its catalog ratified.
//!
//! The catalog is the source of truth of a catalog-managed table (catalogManaged RFC,
//! "Catalog-managed Tables"), and "Publishing Commits" makes a published `<v>.json` a copy of
//! the ratified commit `v`, whose content is immutable. A catalog that records the SHA-256 of
//! every commit it ratifies (deltalog's do, for good) lets a reader hold the published log to
//! that: storage write access is not catalog authority, so a `<v>.json` rewritten after it was
//! published (a forged owner tag, `delta.appendOnly` switched on, version 0 without
//! `catalogManaged`) must not become the table's state for the catalog's readers.
//!
//! A reader that goes through such a catalog therefore reads every published commit it
//! replays (version 0 when there is no checkpoint, and the commits after the checkpoint it
//! starts from) as bytes it has hashed: each is read once, checked against the catalog's
//! digest ([`CatalogCommits::published`], and [`CatalogClient::published_digests`] for the
//! versions the catalog's answer left out), and replayed from those same bytes (the file
//! becomes in-memory content), so a file changed between the check and the read cannot slip
//! in. A mismatch is [`DeltaError::LogTampered`], naming the version. Log compactions are not
//! used for such a table ([`CatalogCommits::apply`] drops them): a compaction is not a
//! ratified commit, and the commits it stands for are read and checked instead.
//!
//! What this does not cover, and the catalog's documentation says: checkpoints (derived state
//! the catalog never sees; their protocol and metadata are checked against the catalog's
//! cached state where a reader has it), data files, and catalogs that record no digests
//! (then nothing is checked).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::stream::{StreamExt, TryStreamExt};

use crate::error::{DeltaError, DeltaResult};
use crate::log::catalog::{CatalogClient, CatalogCommits};
use crate::log::path::LogFileKind;
use crate::log::reader::log_file_error;
use crate::log::segment::LogFile;
use crate::storage::Storage;

/// How many published commits are read and hashed at once.
const CONCURRENT_READS: usize = 16;

/// Checks `files` (log files a reader is about to replay) against the catalog's digests:
/// every published commit among them (not one the catalog still holds, which
/// [`CatalogCommits::verified`] checked) is read, hashed and kept in memory. Does nothing when
/// the catalog gave no digests ([`CatalogCommits::published`] is `None`).
pub async fn verify_published(
    storage: &Storage,
    catalog: &CatalogCommits,
    client: Option<&Arc<dyn CatalogClient>>,
    files: Vec<&mut LogFile>,
) -> DeltaResult<()> {
    let Some(known) = &catalog.published else {
        return Ok(());
    };
    let mut published: Vec<(u64, &mut LogFile)> = files
        .into_iter()
        .filter_map(|f| match f.kind {
            LogFileKind::Commit { version } if f.inline.is_none() => Some((version, f)),
            _ => None,
        })
        .collect();
    if published.is_empty() {
        return Ok(());
    }
    let mut digests: BTreeMap<u64, String> = known.clone();
    let missing: Vec<u64> = published
        .iter()
        .map(|(v, _)| *v)
        .filter(|v| !digests.contains_key(v))
        .collect();
    if let (Some(client), Some(lo), Some(hi)) = (client, missing.first(), missing.last()) {
        digests.extend(client.published_digests(*lo, *hi).await?);
    }
    published.retain(|(v, _)| digests.contains_key(v));
    // Owned inputs for the reads (no borrow of `published` lives in the futures).
    let reads: Vec<(usize, u64, LogFile, String)> = published
        .iter()
        .enumerate()
        .map(|(i, (version, file))| {
            let expected = digests.get(version).cloned().unwrap_or_default();
            (i, *version, (**file).clone(), expected)
        })
        .collect();
    let checked: Vec<(usize, bytes::Bytes)> = futures::stream::iter(reads)
        .map(|(i, version, file, expected)| {
            let storage = storage.clone();
            async move {
                let content = storage
                    .get(&file.meta.location)
                    .await
                    .map_err(|e| log_file_error(e, &file, Some(version)))?;
                check_digest(&file.name, version, &content, &expected)?;
                Ok::<_, DeltaError>((i, content))
            }
        })
        .buffer_unordered(CONCURRENT_READS)
        .try_collect()
        .await?;
    for (i, content) in checked {
        published[i].1.inline = Some(content);
    }
    Ok(())
}

/// Refuses `content` read as `_delta_log/<name>` (version `version`) unless its SHA-256 is
/// `expected` (lowercase hex).
pub fn check_digest(name: &str, version: u64, content: &[u8], expected: &str) -> DeltaResult<()> {
    let found = crate::log::proposal::sha256_hex(content);
    if found.eq_ignore_ascii_case(expected) {
        return Ok(());
    }
    Err(DeltaError::LogTampered {
        file: format!("_delta_log/{name}"),
        version,
        rule: format!(
            "the published commit differs from the commit the catalog ratified for version \
             {version} (SHA-256 {found}, ratified {expected}): it was changed after it was \
             published, and its content is the table's only when it is the ratified commit's \
             (catalogManaged RFC: \"Publishing Commits\"); an administrator can republish the \
             ratified commit or roll the table back (docs/catalogs.md, \"Repairing a table\")"
        ),
    })
}

/// Refuses `snapshot` when its protocol or governing metadata (schema, partitioning,
/// properties, name, description, id) differ from `header`'s, the catalog's state of the
/// same version.
pub fn check_header(
    snapshot: &crate::Snapshot,
    header: &crate::header::TableHeader,
) -> DeltaResult<()> {
    if header.version != snapshot.version() {
        return Ok(());
    }
    let ours = snapshot.metadata()?;
    let theirs = &header.metadata;
    let differs = if *snapshot.protocol() != header.protocol {
        Some("protocol")
    } else if ours.schema_string != theirs.schema_string
        || ours.partition_columns != theirs.partition_columns
    {
        Some("schema or partitioning")
    } else if ours.configuration != theirs.configuration {
        Some("table properties")
    } else if (&ours.id, &ours.name, &ours.description)
        != (&theirs.id, &theirs.name, &theirs.description)
    {
        Some("id, name or description")
    } else {
        None
    };
    match differs {
        None => Ok(()),
        Some(what) => Err(DeltaError::LogTampered {
            file: "_delta_log".into(),
            version: snapshot.version(),
            rule: format!(
                "the table's {what} in its log (checkpoint and published commits) differ from \
                 what its catalog ratified for version {}: the log was changed in storage \
                 (catalogManaged RFC: the catalog is the source of truth of a catalog-managed \
                 table); an administrator can repair it (docs/catalogs.md, \"Repairing a \
                 table\")",
                snapshot.version()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::segment::LogListing;

    async fn table(dir: &std::path::Path, commits: &[&str]) -> (Storage, LogListing) {
        let log = dir.join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        for (v, text) in commits.iter().enumerate() {
            std::fs::write(log.join(format!("{v:020}.json")), text).unwrap();
        }
        let storage = Storage::open(dir.to_str().unwrap(), &Default::default()).unwrap();
        let listing = LogListing::list(&storage, None).await.unwrap();
        (storage, listing)
    }

    fn digests(texts: &[&str]) -> BTreeMap<u64, String> {
        texts
            .iter()
            .enumerate()
            .map(|(v, t)| (v as u64, crate::log::proposal::sha256_hex(t.as_bytes())))
            .collect()
    }

    #[tokio::test]
    async fn published_commits_are_read_once_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let texts = ["{\"a\":0}\n", "{\"a\":1}\n"];
        let (storage, mut listing) = table(dir.path(), &texts).await;
        let catalog = CatalogCommits {
            commits: vec![],
            latest_version: 1,
            published: Some(digests(&texts)),
        };
        verify_published(&storage, &catalog, None, listing.files.iter_mut().collect())
            .await
            .unwrap();
        assert!(listing.files.iter().all(|f| f.inline.is_some()));
        assert_eq!(
            listing.files[1].inline.as_deref(),
            Some(texts[1].as_bytes())
        );
    }

    #[tokio::test]
    async fn a_rewritten_published_commit_is_refused_naming_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let texts = ["{\"a\":0}\n", "{\"a\":1}\n"];
        let (storage, mut listing) = table(dir.path(), &["{\"a\":0}\n", "{\"forged\":1}\n"]).await;
        let catalog = CatalogCommits {
            commits: vec![],
            latest_version: 1,
            published: Some(digests(&texts)),
        };
        let err = verify_published(&storage, &catalog, None, listing.files.iter_mut().collect())
            .await
            .unwrap_err();
        match err {
            DeltaError::LogTampered { version, file, .. } => {
                assert_eq!(version, 1);
                assert!(file.ends_with("00000000000000000001.json"));
            }
            other => panic!("{other}"),
        }
    }

    #[tokio::test]
    async fn without_digests_or_for_held_commits_nothing_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let (storage, mut listing) = table(dir.path(), &["{\"a\":0}\n"]).await;
        let mut catalog = CatalogCommits {
            commits: vec![],
            latest_version: 0,
            published: None,
        };
        verify_published(&storage, &catalog, None, listing.files.iter_mut().collect())
            .await
            .unwrap();
        assert!(listing.files[0].inline.is_none());
        // A version with no recorded digest is not checked (nothing to check against).
        catalog.published = Some(BTreeMap::new());
        verify_published(&storage, &catalog, None, listing.files.iter_mut().collect())
            .await
            .unwrap();
        assert!(listing.files[0].inline.is_none());
    }
}
