//! Durations of table properties such as `delta.logRetentionDuration` and
//! `delta.deletedFileRetentionDuration`.
//!
//! Spec: "Metadata Cleanup" (the log retention threshold) and the retention of `remove`
//! tombstones ("Add File and Remove File": tombstones are kept "until they are expired"). Delta
//! writers store these as Spark calendar-interval strings, e.g. `interval 30 days`,
//! `interval 1 week`, `interval 2 days 12 hours`: an optional `interval` keyword, then pairs of
//! a number and a unit. Months and years have no fixed length and are refused, as Delta Spark
//! refuses them for retention properties.

use std::collections::BTreeMap;

use crate::error::{DeltaError, DeltaResult};

const MS_PER_DAY: i64 = 86_400_000;

/// `delta.logRetentionDuration`: how long commits stay (default 30 days).
pub const LOG_RETENTION: (&str, i64) = ("delta.logRetentionDuration", 30 * MS_PER_DAY);
/// `delta.deletedFileRetentionDuration`: how long tombstones and removed files stay
/// (default 7 days).
pub const DELETED_FILE_RETENTION: (&str, i64) =
    ("delta.deletedFileRetentionDuration", 7 * MS_PER_DAY);
/// `delta.checkpointRetentionDuration`: how long checkpoints stay (default 2 days).
pub const CHECKPOINT_RETENTION: (&str, i64) = ("delta.checkpointRetentionDuration", 2 * MS_PER_DAY);

/// Milliseconds of a calendar-interval string (see the module docs).
pub fn parse_interval_ms(text: &str) -> Result<i64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    if words.first() == Some(&"interval") {
        words.remove(0);
    }
    if words.is_empty() || !words.len().is_multiple_of(2) {
        return Err(format!(
            "{text:?} is not an interval such as 'interval 7 days'"
        ));
    }
    let mut total: i64 = 0;
    for pair in words.chunks(2) {
        let amount: i64 = pair[0]
            .parse()
            .map_err(|_| format!("{text:?}: {:?} is not a whole number", pair[0]))?;
        let unit_ms: i64 = match pair[1].trim_end_matches('s') {
            "week" => 7 * MS_PER_DAY,
            "day" => MS_PER_DAY,
            "hour" => 3_600_000,
            "minute" => 60_000,
            "second" => 1_000,
            "millisecond" => 1,
            "microsecond" => {
                total = total.saturating_add(amount / 1000);
                continue;
            }
            "month" | "year" => {
                return Err(format!(
                    "{text:?}: months and years have no fixed length; use days or weeks"
                ))
            }
            other => return Err(format!("{text:?}: unknown unit {other:?}")),
        };
        total = total.saturating_add(amount.saturating_mul(unit_ms));
    }
    if total < 0 {
        return Err(format!("{text:?} is negative"));
    }
    Ok(total)
}

/// The duration `property` sets in `config`, or its default; a value that does not parse is
/// an [`DeltaError::InvalidArgument`] naming the property.
pub fn duration_ms(
    config: &BTreeMap<String, String>,
    (property, default_ms): (&str, i64),
) -> DeltaResult<i64> {
    match config.get(property) {
        None => Ok(default_ms),
        Some(text) => parse_interval_ms(text)
            .map_err(|e| DeltaError::InvalidArgument(format!("table property {property}: {e}"))),
    }
}

/// A boolean table property (`true`/`false`, any case), or `default` when absent or unparsable.
pub fn flag(config: &BTreeMap<String, String>, property: &str, default: bool) -> bool {
    match config.get(property).map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if v == "true" => true,
        Some(v) if v == "false" => false,
        _ => default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_interval_strings() {
        assert_eq!(parse_interval_ms("interval 30 days"), Ok(30 * MS_PER_DAY));
        assert_eq!(parse_interval_ms("interval 1 week"), Ok(7 * MS_PER_DAY));
        assert_eq!(parse_interval_ms("INTERVAL 2 WEEKS"), Ok(14 * MS_PER_DAY));
        assert_eq!(parse_interval_ms("7 days"), Ok(7 * MS_PER_DAY));
        assert_eq!(
            parse_interval_ms("interval 1 day 12 hours"),
            Ok(MS_PER_DAY + 12 * 3_600_000)
        );
        assert_eq!(parse_interval_ms("interval 0 seconds"), Ok(0));
        assert_eq!(parse_interval_ms("interval 1500 milliseconds"), Ok(1500));
    }

    #[test]
    fn bad_intervals() {
        for bad in [
            "",
            "interval",
            "interval 3",
            "interval x days",
            "interval 1 month",
            "interval 1 fortnight",
            "interval -1 days",
        ] {
            assert!(parse_interval_ms(bad).is_err(), "{bad}");
        }
        let config = BTreeMap::from([(DELETED_FILE_RETENTION.0.to_string(), "soon".to_string())]);
        let err = duration_ms(&config, DELETED_FILE_RETENTION).unwrap_err();
        assert!(
            err.to_string().contains("deletedFileRetentionDuration"),
            "{err}"
        );
    }

    #[test]
    fn defaults_and_flags() {
        let config = BTreeMap::new();
        assert_eq!(
            duration_ms(&config, LOG_RETENTION).unwrap(),
            30 * MS_PER_DAY
        );
        assert!(flag(&config, "delta.enableExpiredLogCleanup", true));
        let config = BTreeMap::from([("k".to_string(), "FALSE".to_string())]);
        assert!(!flag(&config, "k", true));
    }
}
