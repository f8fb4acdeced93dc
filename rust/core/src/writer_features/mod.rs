//! The rules table features impose on writers, applied to every write.
//!
//! Spec: "Table Features", "CHECK Constraints", "Column Invariants", "Generated Columns",
//! "Identity Columns", "Column Mapping" / "Writer Requirements for Column Mapping",
//! "Iceberg Compatibility V1/V2".
//!
//! - [`constraints`]: CHECK constraints, invariants and generated columns of written rows;
//! - [`identity`]: identity column values and high-water marks;
//! - [`column_mapping`]: ids and physical names for new columns, physical batches;
//! - [`iceberg`]: the writer requirements of icebergCompatV1/V2, checked on every commit.

pub mod column_mapping;
pub mod constraints;
pub mod iceberg;
pub mod identity;
