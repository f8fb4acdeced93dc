//! Keeping tables fast and small: checkpoints, log compaction, version checksums, metadata
//! cleanup and VACUUM (issue #5).
//!
//! - [`intervals`]: retention durations of table properties;
//! - [`sink`]: large log files written so that no reader sees part of one;
//! - [`checkpoint_rows`]: a snapshot's actions as rows of the checkpoint schema;
//! - [`checkpoint`]: classic and V2 checkpoints, sidecars, `_last_checkpoint`;
//! - [`compaction`]: log compaction files.

pub mod checkpoint;
pub mod checkpoint_rows;
pub mod compaction;
pub mod intervals;
pub mod sink;
