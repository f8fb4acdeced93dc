//! Maintenance of catalog-managed tables (catalogManaged RFC, "Maintenance Operations on
//! Catalog-managed Tables"): checkpoints and log compaction only of published versions, a
//! checksum file for any ratified version, and every operation (automatic checkpoints,
//! metadata cleanup, VACUUM) cleared with the table's catalog first. Filesystem tables have no
//! catalog to ask: everything is allowed.

use std::sync::Arc;

use crate::commit::committer::publish;
use crate::error::{DeltaError, DeltaResult};
use crate::log::catalog::{CatalogClient, Maintenance};
use crate::snapshot::Snapshot;

/// Whether the catalog (if any) allows `operation` at `version`, for the best-effort work
/// after a commit: a catalog that cannot be asked is taken as a no (with a warning).
pub async fn allowed(
    catalog: Option<&Arc<dyn CatalogClient>>,
    operation: Maintenance,
    version: u64,
) -> bool {
    let Some(client) = catalog else {
        return true;
    };
    match client.allows(operation, version).await {
        Ok(allowed) => allowed,
        Err(e) => {
            log::warn!(
                "{} of version {version} skipped: its catalog could not be asked: {e}",
                operation.name()
            );
            false
        }
    }
}

/// Clears `operation` on `snapshot`'s version with the table's catalog before an explicit
/// maintenance call: refused when the catalog says no. Then every ratified commit up to the
/// version is published (any client may publish, "Publishing Commits"), so that checkpoints
/// and compactions cover published versions only and cleanup never deletes a staged commit
/// the catalog still hands to readers.
pub async fn clear(snapshot: &Snapshot, operation: Maintenance) -> DeltaResult<()> {
    let Some(client) = snapshot.catalog() else {
        return Ok(());
    };
    let version = snapshot.version();
    if !client.allows(operation, version).await? {
        return Err(DeltaError::Catalog {
            table: snapshot.storage().url().to_string(),
            reason: format!(
                "the catalog does not allow {} of version {version} now (catalogManaged RFC: \
                 \"Maintenance Operations on Catalog-managed Tables\")",
                operation.name()
            ),
        });
    }
    publish(snapshot.storage(), client, version).await
}
