//! Keeping tables fast and small: checkpoints, log compaction, version checksums, metadata
//! cleanup and VACUUM (issue #5).
//!
//! - [`catalog_policy`]: what the catalog of a catalog-managed table allows, and publishing
//!   before maintenance;
//! - [`intervals`]: retention durations of table properties;
//! - [`sink`]: large log files written so that no reader sees part of one;
//! - [`checkpoint_rows`]: a snapshot's actions as rows of the checkpoint schema;
//! - [`checkpoint`]: classic and V2 checkpoints, sidecars, `_last_checkpoint`;
//! - [`compaction`]: log compaction files;
//! - [`cleanup`]: metadata cleanup (expired commits, checkpoints, sidecars);
//! - [`feature_removal`]: where the kept history uses a table feature, and history truncation
//!   (DROP FEATURE);
//! - [`vacuum`]: data, DV and change data files no version in the retention window needs;
//! - [`version_checksum`]: `<v>.crc` files.

pub mod catalog_policy;
pub mod checkpoint;
pub mod checkpoint_rows;
pub mod cleanup;
pub mod compaction;
pub mod feature_removal;
pub mod intervals;
pub mod sink;
pub mod vacuum;
pub mod version_checksum;
