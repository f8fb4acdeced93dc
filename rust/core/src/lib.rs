//! deltalog-core: the pure-Rust core of deltalog.
//!
//! Layers, bottom up (see `docs/architecture.md`):
//! - [`storage`]: an object store plus the table root;
//! - [`log_path`]: what each file name in `_delta_log` is;
//! - [`last_checkpoint`]: the `_last_checkpoint` hint and its JSON checksum;
//! - [`segment`]: which files reconstruct a version;
//! - [`actions`], [`log_reader`], [`conform`]: log files decoded into Arrow ([`add_lines`]: the
//!   fast path for commits' `add` lines);
//! - [`paths`], [`model`], [`replay`]: action reconciliation;
//! - [`schema`]: Delta schemas to and from Arrow;
//! - [`snapshot`]: one version of a table; [`add_actions`] its files as a flat Arrow table;
//! - [`timeline`]: commit timestamps, timestamp time travel and history;
//! - [`deletion_vector`]: deletion vector descriptors, Z85, RoaringBitmap and DV files;
//! - [`predicate`]: the expression type of filters; [`expr`]: SQL expressions (DML, constraints);
//! - [`scan`]: a snapshot's rows: scan planning ([`scan::Scan`]) and parallel file reads;
//! - [`write`]: the pieces of data files and commits (partition values, directories, paths);
//! - [`maintenance`]: checkpoints, log compaction, version checksums, metadata cleanup, VACUUM.

pub mod actions;
pub mod add_actions;
pub mod add_lines;
pub mod conform;
pub mod deletion_vector;
pub mod error;
pub mod expr;
pub mod file_keys;
pub mod files;
pub mod json_scan;
pub mod last_checkpoint;
pub mod log_path;
pub mod log_reader;
pub mod maintenance;
pub mod model;
pub mod nulls;
pub mod parquet_io;
pub mod paths;
pub mod predicate;
pub mod replay;
pub mod scan;
pub mod schema;
pub mod segment;
pub mod snapshot;
pub mod stats;
pub mod storage;
pub mod timeline;
pub mod write;

pub use error::{DeltaError, DeltaResult};
pub use snapshot::Snapshot;
pub use storage::Storage;
