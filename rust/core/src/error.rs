//! Error type of the core crate.
//!
//! Every variant that concerns the log names the file and, where known, the version and the
//! protocol rule that was broken, so callers can report bad input precisely.

use std::any::Any;
use std::sync::Arc;

use thiserror::Error;

/// Result alias used throughout the crate.
pub type DeltaResult<T> = Result<T, DeltaError>;

/// Everything that can go wrong while reading a Delta table.
#[derive(Debug, Error)]
pub enum DeltaError {
    /// The location holds no Delta table (no `_delta_log`, or an empty one).
    #[error("no Delta table at {path}: {reason}")]
    TableNotFound { path: String, reason: String },

    /// A log file is malformed or violates a protocol rule.
    #[error("corrupt Delta log: {file} (version {version}): {rule}", version = fmt_version(*.version))]
    CorruptLog {
        file: String,
        version: Option<u64>,
        rule: String,
    },

    /// A published commit of a catalog-managed table is not the commit its catalog ratified
    /// for that version (its SHA-256 differs): the file was changed after publishing
    /// ([`crate::log::published`]).
    #[error("tampered Delta log: {file} (version {version}): {rule}")]
    LogTampered {
        file: String,
        version: u64,
        rule: String,
    },

    /// A deletion vector is malformed or disagrees with its descriptor ("Deletion Vector
    /// Format", "Deletion Vector File Storage Format").
    #[error("corrupt deletion vector {file}: {reason}")]
    CorruptDeletionVector { file: String, reason: String },

    /// A data file named by the log does not exist ("Data Files"; nothing is silently skipped).
    #[error("data file not found: {file}")]
    DataFileNotFound { file: String },

    /// A data file cannot be read, or holds data that cannot be reconciled with the table's
    /// schema (a column of an incompatible type, a partition value that does not parse).
    #[error("unreadable data file {file}: {reason}")]
    CorruptDataFile { file: String, reason: String },

    /// Another writer committed a conflicting change first ("Creation of New Log Entries").
    #[error("commit conflict at version {version}: {reason}")]
    CommitConflict { version: u64, reason: String },

    /// Written rows break a rule of the table: a CHECK constraint, a column invariant or a
    /// generated column's expression ("CHECK Constraints", "Column Invariants", "Generated
    /// Columns"); nothing was committed.
    #[error("{constraint} ({expression}) violated: {detail}")]
    ConstraintViolation {
        constraint: String,
        expression: String,
        detail: String,
    },

    /// The change data feed was not recorded for `version`, one of the versions of the range
    /// `start..=end` asked for: `delta.enableChangeDataFeed` was not `true` there ("Writer
    /// Requirements for AddCDCFile": only then must writers record every change).
    #[error(
        "change data was not recorded for version {version} of the range {start}..={end}: \
         the table property delta.enableChangeDataFeed was not true there; read the change \
         feed from a later version (history() shows when the property was set), or set it \
         with alter.set_properties to record changes from now on"
    )]
    ChangeDataNotRecorded { start: u64, end: u64, version: u64 },

    /// The requested version or timestamp cannot be served.
    #[error("version not found: {message}")]
    VersionNotFound { message: String },

    /// The managing catalog of a catalog-managed table failed a call (unreachable, refused,
    /// or raised); `table` is the table's location.
    #[error("catalog error for {table}: {reason}")]
    Catalog { table: String, reason: String },

    /// A catalog client (implemented outside the core, e.g. in Python) raised an error of its
    /// own while deltalog called it. The core passes it along unchanged (through commit
    /// retries, publishing, maintenance), so that whoever implemented the client gets back the
    /// very error it raised, whatever its kind: a refusal, an unknown commit outcome, or a bug.
    /// `table` is the table's location; `reason` names the call and describes the error.
    #[error("catalog error for {table}: {reason}")]
    CatalogRaised {
        table: String,
        reason: String,
        error: ForeignError,
    },

    /// The caller passed an argument that cannot be honoured.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The table uses something this build cannot handle (reported with the reason).
    #[error("unsupported: {0}")]
    Unsupported(String),

    /// A bug or a failed background task; never expected.
    #[error("internal error: {0}")]
    Internal(String),

    /// The operation was interrupted before its commit point: nothing was committed and the
    /// files it wrote were removed ([`crate::interrupt`]).
    #[error("interrupted before the commit: nothing was committed")]
    Interrupted,

    /// Failure of the underlying object store.
    #[error("storage error: {0}")]
    Storage(#[from] object_store::Error),

    /// Failure building or converting Arrow data.
    #[error("arrow error: {0}")]
    Arrow(#[from] arrow::error::ArrowError),

    /// Failure reading a parquet file that is not attributable to a log file.
    #[error("parquet error: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// An error value from outside the core, carried through it untouched; only the layer that
/// created it knows its type and gets it back with [`ForeignError::downcast_ref`]. Keeps the
/// core free of any binding's types.
#[derive(Clone)]
pub struct ForeignError(Arc<dyn Any + Send + Sync>);

impl ForeignError {
    /// Wraps `error`.
    pub fn new<T: Any + Send + Sync>(error: T) -> Self {
        ForeignError(Arc::new(error))
    }

    /// The wrapped error, when it is a `T`.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl std::fmt::Debug for ForeignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ForeignError(..)")
    }
}

fn fmt_version(v: Option<u64>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "unknown".to_string(),
    }
}

impl DeltaError {
    /// A [`DeltaError::CorruptLog`] for `file` at `version` breaking `rule`.
    pub fn corrupt(file: impl Into<String>, version: Option<u64>, rule: impl Into<String>) -> Self {
        DeltaError::CorruptLog {
            file: file.into(),
            version,
            rule: rule.into(),
        }
    }

    /// A [`DeltaError::CorruptDataFile`] for `file` with `reason`.
    pub fn data_file(file: impl Into<String>, reason: impl Into<String>) -> Self {
        DeltaError::CorruptDataFile {
            file: file.into(),
            reason: reason.into(),
        }
    }

    /// A [`DeltaError::VersionNotFound`] with a message.
    pub fn version_not_found(message: impl Into<String>) -> Self {
        DeltaError::VersionNotFound {
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_error_comes_back_as_the_value_it_was() {
        let error = DeltaError::CatalogRaised {
            table: "file:///t".into(),
            reason: "commit raised Refused: no".into(),
            error: ForeignError::new(String::from("the client's own error")),
        };
        assert_eq!(
            error.to_string(),
            "catalog error for file:///t: commit raised Refused: no"
        );
        let DeltaError::CatalogRaised { error, .. } = error else {
            panic!("not CatalogRaised");
        };
        assert_eq!(
            error.clone().downcast_ref::<String>().map(String::as_str),
            Some("the client's own error")
        );
        assert!(error.downcast_ref::<u32>().is_none());
    }
}
