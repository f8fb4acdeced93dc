//! Statistics, read and written.
//!
//! Spec: "Per-file Statistics" (`numRecords`, `minValues`, `maxValues`, `nullCount`,
//! `tightBounds`), keyed by physical names under column mapping ("Reader Requirements for
//! Column Mapping"); "Writer Requirements for Clustered Table" (statistics for the clustering
//! columns).
//!
//! - [`parse`]: the `stats` JSON of `add` actions parsed into typed Arrow columns (read once,
//!   while a snapshot is built; used by data skipping and `get_add_actions`);
//! - [`collect`]: the statistics of a data file being written, as its `stats` JSON;
//! - [`float_footer`]: the float and double statistics of a written parquet footer, in the
//!   form other parquet readers use for row-group pruning;
//! - [`footer`]: the statistics of a file another writer wrote, from its parquet footer alone;
//! - [`json_scan`]: the allocation-free JSON scanner the `stats` texts are parsed with (here
//!   and by [`crate::log::add_lines`]).

pub mod collect;
pub mod float_footer;
pub mod footer;
pub mod json_scan;
pub mod parse;
