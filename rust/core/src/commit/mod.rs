//! The commit: actions made the table's next version, exactly once.
//!
//! Spec: "Creation of New Log Entries", "Delta Log Entries", "Commit Provenance Information",
//! "In-Commit Timestamps", "Transaction Identifiers", and the catalogManaged RFC's "Commit
//! Protocol".
//!
//! - [`transaction`]: a transaction's actions, conflict checks against concurrent commits
//!   (isolation levels), retries and the post-commit work (checkpoints, checksums, cleanup);
//! - [`committer`]: how a commit becomes version `v`: put-if-absent on a filesystem table,
//!   ratification by the catalog for a catalog-managed one.

pub mod committer;
pub mod transaction;
