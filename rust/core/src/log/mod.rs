//! The transaction log: everything between a table's `_delta_log` directory and the
//! reconciled state of one version.
//!
//! Bottom up:
//! - [`path`]: what each file name in `_delta_log` is (commits, checkpoints, compactions,
//!   checksums, staged commits);
//! - [`last_checkpoint`]: the `_last_checkpoint` hint and its JSON checksum;
//! - [`segment`]: which files reconstruct a version (listing, checkpoint choice, compactions);
//!   [`catalog`]: the commits a catalog-managed table's catalog supplies, joined with them;
//! - [`actions`], [`reader`], [`checkpoint_reader`]: log files decoded into Arrow batches of
//!   the action schema (commits and compactions; checkpoints and sidecars; [`add_lines`]: the
//!   fast path for commits' `add` lines);
//! - [`file_keys`], [`replay`]: action reconciliation;
//! - [`timeline`]: commit timestamps, timestamp time travel and history; [`version_changes`]:
//!   what each version of the history added and removed;
//! - [`proposal`]: a commit proposed to a catalog, checked as the reader will read it.

pub mod actions;
pub mod add_lines;
pub mod catalog;
pub mod checkpoint_reader;
pub mod file_keys;
pub mod last_checkpoint;
pub mod path;
pub mod proposal;
pub mod published;
pub mod reader;
pub mod replay;
pub mod segment;
pub mod timeline;
pub mod version_changes;
