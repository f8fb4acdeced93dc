//! Writing: what data files and commits are made of.
//!
//! - [`partitions`]: partition values as `partitionValues` strings, Hive-style directories and
//!   the `path` URIs of the log ("Partition Value Serialization", "Add File and Remove File");
//! - [`stats`]: the statistics of a file being written ("Per-file Statistics");
//! - [`data_files`]: record batches into partitioned parquet files and their `add` actions;
//! - [`encoder`]: row groups encoded as their rows arrive, columns spread over threads;
//! - [`parquet_options`]: how those files are encoded (deltalake's `WriterProperties`);
//! - [`transaction`]: put-if-absent commits, conflict checks and retries;
//! - [`table`]: create, append to and overwrite a table;
//! - [`clustering`]: clustered tables (the `delta.clustering` domain, statistics);
//! - [`constraints`]: CHECK constraints, invariants and generated columns of written rows;
//! - [`identity`]: identity column values and high-water marks;
//! - [`iceberg`]: the writer requirements of icebergCompatV1/V2, checked on every commit;
//! - [`mapping`]: column mapping for writers (ids, physical names, physical batches);
//! - [`merge`]: MERGE (hash join of a source with the table, clauses, DVs or rewrites);
//! - [`restore`]: RESTORE to an earlier version's content;
//! - [`rewrite`]: files changed row by row (DVs or copy on write), new rows, one commit;
//! - [`dml`]: DELETE and UPDATE, with deletion vectors or by rewriting files;
//! - [`optimize`]: OPTIMIZE (compaction, Z-order, clustering), [`zorder`] its curve;
//! - [`repair`]: FSCK REPAIR;
//! - [`convert`]: CONVERT TO DELTA (a parquet directory inspected for its first commit);
//! - [`clone`]: shallow and deep CLONE.

pub mod clone;
pub mod clustering;
pub mod committer;
pub mod constraints;
pub mod convert;
pub mod data_files;
pub mod dml;
pub mod encoder;
pub mod float_stats;
pub mod iceberg;
pub mod identity;
pub mod mapping;
pub mod merge;
pub mod optimize;
pub mod parquet_options;
pub mod partitions;
pub mod repair;
pub mod restore;
pub mod rewrite;
pub mod stats;
pub mod table;
pub mod transaction;
pub mod zorder;
