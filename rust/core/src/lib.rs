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
//! - [`mod@write`]: the pieces of data files and commits (partition values, directories, paths);
//! - [`maintenance`]: checkpoints, log compaction, version checksums, metadata cleanup, VACUUM.

pub mod add_actions;
pub mod conform;
pub mod deletion_vector;
pub mod error;
pub mod expr;
pub mod files;
pub mod json_scan;
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
pub mod write;

pub use error::{DeltaError, DeltaResult};
pub use snapshot::Snapshot;
pub use storage::Storage;
