//! deltalog-core: the pure-Rust core of deltalog.
//!
//! Layers, bottom up (see `docs/architecture.md`):
//! - [`storage`]: an object store plus the table root;
//! - [`log`]: the transaction log: file names, `_last_checkpoint`, the log segment of a
//!   version, decoding log files into Arrow, action reconciliation, history and time travel;
//! - [`conform`]: checkpoint batches conformed to the canonical action schema;
//! - [`paths`], [`model`]: logical-file keys and the typed non-file actions;
//! - [`schema`]: Delta schemas to and from Arrow;
//! - [`snapshot`]: one version of a table; [`add_actions`] its files as a flat Arrow table;
//! - [`deletion_vector`]: deletion vector descriptors, Z85, RoaringBitmap and DV files;
//! - [`predicate`]: the expression type of filters; [`expr`]: SQL expressions (DML, constraints);
//! - [`scan`]: a snapshot's rows: scan planning ([`scan::Scan`]) and parallel file reads;
//! - [`stats`]: per-file statistics, parsed from the log and collected while writing;
//! - [`mod@write`]: data files written (partition values, directories, encoding, `add` actions);
//! - [`writer_features`]: the rules table features impose on writers (constraints, identity,
//!   column mapping, Iceberg compatibility);
//! - [`commit`]: transactions, conflict checks, and the filesystem and catalog committers;
//!   [`interrupt`]: an operation stopped before its commit point, or told it committed;
//! - [`dml`]: DELETE, UPDATE, MERGE and RESTORE;
//! - [`layout`]: OPTIMIZE (compaction, Z-order, liquid clustering);
//! - [`table_operations`]: CONVERT TO DELTA, CLONE, FSCK REPAIR;
//! - [`maintenance`]: checkpoints, log compaction, version checksums, metadata cleanup, VACUUM.

pub mod add_actions;
pub mod commit;
pub mod conform;
pub mod deletion_vector;
pub mod dml;
pub mod error;
pub mod expr;
pub mod header;
pub mod interrupt;
pub mod layout;
pub mod log;
pub mod maintenance;
pub mod model;
pub mod nulls;
pub mod parquet_io;
pub mod paths;
pub mod predicate;
pub mod scan;
pub mod schema;
pub mod snapshot;
pub mod stats;
pub mod storage;
pub mod table_operations;
pub mod write;
pub mod writer_features;

pub use error::{DeltaError, DeltaResult};
pub use snapshot::Snapshot;
pub use storage::Storage;

/// The threads this process may run at once (`std::thread::available_parallelism`, read once:
/// on Linux each call reads the cgroup's CPU quota files, several times per commit otherwise).
pub fn available_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}
