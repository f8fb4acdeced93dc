//! Catalog-managed tables: the ratified commits a Python catalog client returned, as the
//! core's [`CatalogCommits`].

use bytes::Bytes;
use deltalog_core::error::DeltaError;
use deltalog_core::log::catalog::{CatalogCommits, RatifiedCommit, RatifiedSource};

/// One ratified commit as Python passes it: `(version, staged path or None, inline content or
/// None, timestamp in ms or None)`.
pub(crate) type PyRatifiedCommit = (i64, Option<String>, Option<Vec<u8>>, Option<i64>);

/// The catalog's answer as Python passes it: `(latest_version, commits)`.
pub(crate) type PyCatalogCommits = (i64, Vec<PyRatifiedCommit>);

fn version(v: i64) -> Result<u64, DeltaError> {
    u64::try_from(v).map_err(|_| {
        DeltaError::InvalidArgument(format!(
            "a ratified commit's version cannot be negative: {v}"
        ))
    })
}

/// Converts the catalog's answer; a commit must be either staged or inline.
pub(crate) fn catalog_commits(answer: PyCatalogCommits) -> Result<CatalogCommits, DeltaError> {
    let (latest, commits) = answer;
    let commits = commits
        .into_iter()
        .map(|(v, path, content, timestamp)| {
            let source = match (path, content) {
                (Some(path), None) => RatifiedSource::Staged(path),
                (None, Some(content)) => RatifiedSource::Inline(Bytes::from(content)),
                _ => {
                    return Err(DeltaError::InvalidArgument(format!(
                        "ratified commit {v} must have either a staged path or inline content"
                    )))
                }
            };
            Ok(RatifiedCommit {
                version: version(v)?,
                source,
                timestamp,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CatalogCommits {
        commits,
        latest_version: version(latest)?,
    })
}
