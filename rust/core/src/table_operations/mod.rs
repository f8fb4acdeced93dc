//! Whole-table operations: tables made from other data, and tables repaired.
//!
//! Spec: "Data Files", "Add File and Remove File", "Partition Value Serialization".
//!
//! - [`convert`]: CONVERT TO DELTA (a parquet directory adopted as a table in place);
//! - [`clone`]: shallow and deep CLONE of a table's version;
//! - [`repair`]: FSCK REPAIR (files missing from storage removed from the table).

pub mod clone;
pub mod convert;
pub mod repair;
