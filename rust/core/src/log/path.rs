//! Names of the files in `_delta_log`.
//!
//! Spec: "Delta Log Entries", "Checkpoints" (classic, multi-part and UUID-named), "Log
//! Compaction Files", "Last Checkpoint File", and the `catalogManaged` RFC's staged commits
//! (`_delta_log/_staged_commits/<v>.<uuid>.json`). Anything else is [`LogFileKind::Unknown`]
//! and ignored by readers.

/// Storage format of a checkpoint file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckpointFormat {
    Parquet,
    Json,
}

/// The three checkpoint naming schemes ("Checkpoint Naming Scheme").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CheckpointNaming {
    /// `n.checkpoint.parquet`
    Classic,
    /// `n.checkpoint.o.p.parquet`, part `part` (1-based) of `parts`.
    MultiPart { part: u32, parts: u32 },
    /// `n.checkpoint.<uuid>.{json,parquet}` (always V2 spec).
    Uuid { uuid: String },
}

/// What a file in `_delta_log` is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LogFileKind {
    /// `n.json`
    Commit { version: u64 },
    /// Any checkpoint file.
    Checkpoint {
        version: u64,
        naming: CheckpointNaming,
        format: CheckpointFormat,
    },
    /// `x.y.compacted.json`, the reconciled actions of commits `[start, end]`.
    Compaction { start: u64, end: u64 },
    /// `n.crc`, the version checksum file.
    Crc { version: u64 },
    /// `_last_checkpoint`
    LastCheckpoint,
    /// `_staged_commits/n.<uuid>.json` (catalogManaged RFC).
    StagedCommit { version: u64, uuid: String },
    /// Anything else: ignored by readers.
    Unknown,
}

impl LogFileKind {
    /// The table version the file belongs to, if it has one (the end version for compactions).
    pub fn version(&self) -> Option<u64> {
        match self {
            LogFileKind::Commit { version }
            | LogFileKind::Checkpoint { version, .. }
            | LogFileKind::Crc { version }
            | LogFileKind::StagedCommit { version, .. } => Some(*version),
            LogFileKind::Compaction { end, .. } => Some(*end),
            LogFileKind::LastCheckpoint | LogFileKind::Unknown => None,
        }
    }
}

/// Parses exactly `width` ASCII digits.
fn fixed_digits(s: &str, width: usize) -> Option<u64> {
    if s.len() != width || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A 20-digit zero-padded version.
fn version20(s: &str) -> Option<u64> {
    fixed_digits(s, 20)
}

fn looks_like_uuid(s: &str) -> bool {
    // Canonical 8-4-4-4-12 hex form; the spec only says "a UUID", so accept either case.
    let groups: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    groups.len() == 5
        && groups
            .iter()
            .zip(lens)
            .all(|(g, l)| g.len() == l && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Classifies a path relative to `_delta_log/` (e.g. `00000000000000000003.json` or
/// `_staged_commits/00000000000000000001.<uuid>.json`).
pub fn classify(relative: &str) -> LogFileKind {
    if let Some(name) = relative.strip_prefix("_staged_commits/") {
        return classify_staged(name);
    }
    if relative.contains('/') {
        return LogFileKind::Unknown;
    }
    if relative == "_last_checkpoint" {
        return LogFileKind::LastCheckpoint;
    }
    let parts: Vec<&str> = relative.split('.').collect();
    match parts.as_slice() {
        [v, "json"] => version20(v).map_or(LogFileKind::Unknown, |version| LogFileKind::Commit {
            version,
        }),
        [v, "crc"] => {
            version20(v).map_or(LogFileKind::Unknown, |version| LogFileKind::Crc { version })
        }
        [v, "checkpoint", "parquet"] => {
            version20(v).map_or(LogFileKind::Unknown, |version| LogFileKind::Checkpoint {
                version,
                naming: CheckpointNaming::Classic,
                format: CheckpointFormat::Parquet,
            })
        }
        [v, "checkpoint", u, ext @ ("json" | "parquet")] if looks_like_uuid(u) => version20(v)
            .map_or(LogFileKind::Unknown, |version| LogFileKind::Checkpoint {
                version,
                naming: CheckpointNaming::Uuid {
                    uuid: (*u).to_string(),
                },
                format: if *ext == "json" {
                    CheckpointFormat::Json
                } else {
                    CheckpointFormat::Parquet
                },
            }),
        [v, "checkpoint", o, p, "parquet"] => {
            match (version20(v), fixed_digits(o, 10), fixed_digits(p, 10)) {
                (Some(version), Some(part), Some(parts))
                    if parts > 1 && part >= 1 && part <= parts && parts <= u32::MAX as u64 =>
                {
                    LogFileKind::Checkpoint {
                        version,
                        naming: CheckpointNaming::MultiPart {
                            part: part as u32,
                            parts: parts as u32,
                        },
                        format: CheckpointFormat::Parquet,
                    }
                }
                _ => LogFileKind::Unknown,
            }
        }
        [x, y, "compacted", "json"] => match (version20(x), version20(y)) {
            (Some(start), Some(end)) if start <= end => LogFileKind::Compaction { start, end },
            _ => LogFileKind::Unknown,
        },
        _ => LogFileKind::Unknown,
    }
}

fn classify_staged(name: &str) -> LogFileKind {
    let parts: Vec<&str> = name.split('.').collect();
    match parts.as_slice() {
        [v, u, "json"] if looks_like_uuid(u) => match version20(v) {
            Some(version) => LogFileKind::StagedCommit {
                version,
                uuid: (*u).to_string(),
            },
            None => LogFileKind::Unknown,
        },
        _ => LogFileKind::Unknown,
    }
}

/// The file name of commit `version`.
pub fn commit_file_name(version: u64) -> String {
    format!("{version:020}.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "80a083e8-7026-4e79-81be-64bd76c43a11";

    #[test]
    fn commits() {
        assert_eq!(
            classify("00000000000000000000.json"),
            LogFileKind::Commit { version: 0 }
        );
        assert_eq!(
            classify("00000000000000000123.json"),
            LogFileKind::Commit { version: 123 }
        );
        // Not zero-padded to 20 digits: not a commit.
        assert_eq!(classify("123.json"), LogFileKind::Unknown);
        assert_eq!(classify("0000000000000000000a.json"), LogFileKind::Unknown);
        assert_eq!(
            classify("00000000000000000001.json.tmp"),
            LogFileKind::Unknown
        );
    }

    #[test]
    fn classic_checkpoint() {
        assert_eq!(
            classify("00000000000000000010.checkpoint.parquet"),
            LogFileKind::Checkpoint {
                version: 10,
                naming: CheckpointNaming::Classic,
                format: CheckpointFormat::Parquet
            }
        );
    }

    #[test]
    fn multi_part_checkpoint() {
        assert_eq!(
            classify("00000000000000000010.checkpoint.0000000002.0000000003.parquet"),
            LogFileKind::Checkpoint {
                version: 10,
                naming: CheckpointNaming::MultiPart { part: 2, parts: 3 },
                format: CheckpointFormat::Parquet
            }
        );
        // p must be > 1 and o within 1..=p; widths are fixed at 10.
        assert_eq!(
            classify("00000000000000000010.checkpoint.0000000001.0000000001.parquet"),
            LogFileKind::Unknown
        );
        assert_eq!(
            classify("00000000000000000010.checkpoint.0000000004.0000000003.parquet"),
            LogFileKind::Unknown
        );
        assert_eq!(
            classify("00000000000000000010.checkpoint.1.3.parquet"),
            LogFileKind::Unknown
        );
    }

    #[test]
    fn uuid_checkpoints() {
        assert_eq!(
            classify(&format!("00000000000000000010.checkpoint.{UUID}.json")),
            LogFileKind::Checkpoint {
                version: 10,
                naming: CheckpointNaming::Uuid {
                    uuid: UUID.to_string()
                },
                format: CheckpointFormat::Json
            }
        );
        assert_eq!(
            classify(&format!("00000000000000000020.checkpoint.{UUID}.parquet")),
            LogFileKind::Checkpoint {
                version: 20,
                naming: CheckpointNaming::Uuid {
                    uuid: UUID.to_string()
                },
                format: CheckpointFormat::Parquet
            }
        );
        assert_eq!(
            classify("00000000000000000010.checkpoint.not-a-uuid.json"),
            LogFileKind::Unknown
        );
    }

    #[test]
    fn compaction_crc_last_checkpoint_staged() {
        assert_eq!(
            classify("00000000000000000004.00000000000000000006.compacted.json"),
            LogFileKind::Compaction { start: 4, end: 6 }
        );
        assert_eq!(
            classify("00000000000000000006.00000000000000000004.compacted.json"),
            LogFileKind::Unknown
        );
        assert_eq!(
            classify("00000000000000000007.crc"),
            LogFileKind::Crc { version: 7 }
        );
        assert_eq!(classify("_last_checkpoint"), LogFileKind::LastCheckpoint);
        assert_eq!(
            classify(&format!("_staged_commits/00000000000000000008.{UUID}.json")),
            LogFileKind::StagedCommit {
                version: 8,
                uuid: UUID.to_string()
            }
        );
        assert_eq!(classify("_sidecars/abc.parquet"), LogFileKind::Unknown);
        assert_eq!(
            classify(".00000000000000000000.json.crc"),
            LogFileKind::Unknown
        );
        assert_eq!(classify("_commits"), LogFileKind::Unknown);
    }

    #[test]
    fn versions() {
        assert_eq!(classify("00000000000000000007.crc").version(), Some(7));
        assert_eq!(
            classify("00000000000000000004.00000000000000000006.compacted.json").version(),
            Some(6)
        );
        assert_eq!(LogFileKind::Unknown.version(), None);
        assert_eq!(commit_file_name(5), "00000000000000000005.json");
    }
}
