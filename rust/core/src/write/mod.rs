//! Writing: what data files and commits are made of.
//!
//! - [`partitions`]: partition values as `partitionValues` strings, Hive-style directories and
//!   the `path` URIs of the log ("Partition Value Serialization", "Add File and Remove File");
//! - [`stats`]: the statistics of a file being written ("Per-file Statistics").

pub mod partitions;
pub mod stats;
