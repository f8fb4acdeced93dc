//! Writing data files: record batches into parquet files and the `add` actions describing
//! them.
//!
//! Spec: "Data Files", "Add File and Remove File", "Partition Value Serialization",
//! "Per-file Statistics" (collected by [`crate::stats::collect`]).
//!
//! - [`partitions`]: partition values as `partitionValues` strings, Hive-style directories and
//!   the `path` URIs of the log;
//! - [`data_files`]: record batches into partitioned parquet files and their `add` actions;
//! - [`external_files`]: `add` actions for parquet files another writer put into the table
//!   (statistics from their footers);
//! - [`encoder`]: row groups encoded as their rows arrive, columns spread over threads;
//! - [`parquet_options`]: how those files are encoded (deltalake's `WriterProperties`);
//! - [`table`]: create, append to and overwrite a table;
//! - [`schema_evolution`]: the schema a write gives the table (new, merged, overwritten,
//!   widened; ids for new columns), and ALTER TABLE ADD COLUMNS.
//!
//! The other write paths live by concept: [`crate::commit`] (transactions and committers),
//! [`crate::dml`] (DELETE, UPDATE, MERGE, RESTORE), [`crate::layout`] (OPTIMIZE, Z-order,
//! clustering), [`crate::table_operations`] (CONVERT, CLONE, FSCK) and
//! [`crate::writer_features`] (constraints, identity, column mapping, Iceberg compatibility).

pub mod data_files;
pub mod encoder;
pub mod external_files;
pub mod parquet_options;
pub mod partitions;
pub mod schema_evolution;
pub mod table;
