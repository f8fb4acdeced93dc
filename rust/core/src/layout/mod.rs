//! Layout: the files of a table rewritten into a better arrangement, changing no data.
//!
//! Spec: "Add File and Remove File" (`dataChange: false`), "Per-file Statistics" (what a good
//! layout lets data skipping prune), "Clustered Table" and "Writer Requirements for Clustered
//! Table".
//!
//! - [`optimize`]: OPTIMIZE: bin-packing compaction, Z-order, liquid clustering, REORG PURGE,
//!   and the pieces of a distributed run;
//! - [`zorder`]: the Z-order curve (ranks from a sample, interleaved bits, key ranges);
//! - [`clustering`]: clustered tables on the write side (the `delta.clustering` domain).

pub mod clustering;
pub mod optimize;
pub mod zorder;
