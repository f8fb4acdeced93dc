//! DML: statements that change rows in place, and RESTORE.
//!
//! Spec: "Add File and Remove File", "Deletion Vectors" and "Writer Requirement for Deletion
//! Vectors", "Deletion Vector File Storage Format", "Add CDC File", "Row Tracking".
//!
//! - [`delete_update`]: DELETE and UPDATE, with deletion vectors or by rewriting files;
//! - [`merge`]: MERGE (a hash join of a source with the table, clauses, DVs or rewrites);
//! - [`rewrite`]: what the three share: files changed row by row (DVs or copy on write), new
//!   rows written, change data, one commit;
//! - [`engine_changes`]: row changes another engine computed (Spark's DML) as deletion
//!   vectors and change data files;
//! - [`restore`]: RESTORE to an earlier version's content.

pub mod delete_update;
pub mod engine_changes;
pub mod merge;
pub mod restore;
pub mod rewrite;
