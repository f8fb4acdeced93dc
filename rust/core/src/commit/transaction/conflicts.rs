//! A commit that won the version this transaction tried, checked against it: a conflict when
//! the winner created the table, belongs to another table, changed the metadata or protocol,
//! committed the same application transaction or metadata domain, or (by isolation level)
//! changed data files this transaction read. The winner's in-commit timestamp and row ID
//! high-water mark carry over to the next attempt.
//!
//! Spec: "Creation of New Log Entries", "Domain Metadata", "Transaction Identifiers".

use std::collections::HashSet;

use serde_json::Value;

use crate::error::{DeltaError, DeltaResult};
use crate::log::path::commit_file_name;

use super::{high_water_mark_of, Isolation, Transaction, ROW_TRACKING_DOMAIN};

impl Transaction {
    /// Checks the commit that won `version` against this transaction; returns the winner's
    /// in-commit timestamp and row ID high-water mark, where it has them, and its actions.
    pub(super) async fn check_winner(
        &self,
        version: u64,
        content: Option<bytes::Bytes>,
    ) -> DeltaResult<(Option<i64>, Option<i64>, Vec<Value>)> {
        let conflict = |reason: String| DeltaError::CommitConflict { version, reason };
        if self.read_version.is_none() {
            return Err(conflict("the table was created concurrently".into()));
        }
        let name = commit_file_name(version);
        let bytes = match content {
            Some(bytes) => bytes,
            None => self.storage.get(&self.storage.log_path(&name)).await?,
        };
        let mut actions = Vec::new();
        for line in bytes.split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: Value = serde_json::from_slice(line).map_err(|e| {
                DeltaError::corrupt(
                    format!("_delta_log/{name}"),
                    Some(version),
                    format!("invalid action JSON: {e}"),
                )
            })?;
            actions.push(value);
        }
        let action = |value: &'_ Value, key: &str| -> Option<Value> {
            value.get(key).filter(|v| !v.is_null()).cloned()
        };
        let winner_mark = actions.iter().find_map(|a| {
            let d = action(a, "domainMetadata")?;
            (d.get("domain").and_then(Value::as_str) == Some(ROW_TRACKING_DOMAIN))
                .then(|| {
                    d.get("configuration")
                        .and_then(Value::as_str)
                        .and_then(high_water_mark_of)
                })
                .flatten()
        });
        let winner_ict = actions.iter().find_map(|a| {
            action(a, "commitInfo").and_then(|c| c.get("inCommitTimestamp").and_then(Value::as_i64))
        });
        // "Domain Metadata": two commits changing one domain conflict.
        let own_domains: HashSet<&str> = self
            .actions
            .iter()
            .filter_map(|a| a.pointer("/domainMetadata/domain").and_then(Value::as_str))
            .collect();
        let winner_blind = actions.iter().any(|a| {
            action(a, "commitInfo")
                .and_then(|c| c.get("isBlindAppend").and_then(Value::as_bool))
                .unwrap_or(false)
        });
        let read_id = self
            .read_snapshot
            .as_ref()
            .and_then(|s| s.metadata().ok())
            .and_then(|m| m.id.clone());
        for value in &actions {
            let winner_id = action(value, "metaData")
                .and_then(|m| m.get("id").and_then(Value::as_str).map(str::to_string));
            if let (Some(read), Some(winner)) = (&read_id, &winner_id) {
                if read != winner {
                    return Err(conflict(format!(
                        "it belongs to another table (id {winner}, not {read}): the table at {} \
                         was replaced",
                        self.storage.url()
                    )));
                }
            }
            if action(value, "metaData").is_some() || action(value, "protocol").is_some() {
                return Err(conflict(
                    "it changed the table's metadata or protocol".into(),
                ));
            }
            if let (Some(txn), Some((app_id, _))) = (action(value, "txn"), &self.app_transaction) {
                if txn.get("appId").and_then(Value::as_str) == Some(app_id) {
                    return Err(conflict(format!(
                        "it committed a transaction of application {app_id:?} too"
                    )));
                }
            }
            if let Some(domain) = action(value, "domainMetadata")
                .and_then(|d| d.get("domain").and_then(Value::as_str).map(str::to_string))
            {
                if own_domains.contains(domain.as_str()) {
                    return Err(conflict(format!(
                        "it changed the metadata domain {domain:?} too"
                    )));
                }
            }
            let data_change = |key: &str| {
                action(value, key)
                    .filter(|a| a.get("dataChange").and_then(Value::as_bool) != Some(false))
            };
            if self.isolation == Isolation::BlindAppend {
                continue;
            }
            if self.isolation == Isolation::RewritesAll
                && (action(value, "add").is_some() || action(value, "remove").is_some())
            {
                return Err(conflict(
                    "it changed data files while every file was being rewritten".into(),
                ));
            }
            match &self.read_files {
                None => {
                    if data_change("add").is_some() || data_change("remove").is_some() {
                        return Err(conflict(
                            "it changed data files this transaction read".into(),
                        ));
                    }
                }
                Some(read) => {
                    if let Some(remove) = action(value, "remove") {
                        let raw = remove.get("path").and_then(Value::as_str).unwrap_or("");
                        let path = crate::paths::decode_uri_path(raw)
                            .map(|p| p.into_owned())
                            .unwrap_or_else(|_| raw.to_string());
                        if read.contains(&path) {
                            return Err(conflict(format!(
                                "it removed or changed the deletion vector of {path}, a file \
                                 this transaction read"
                            )));
                        }
                    }
                    if self.isolation == Isolation::Rearranges {
                        continue;
                    }
                    if !winner_blind && data_change("add").is_some() {
                        return Err(conflict(
                            "it added data files without being a blind append; they may hold \
                             rows this transaction should have read"
                                .into(),
                        ));
                    }
                }
            }
        }
        Ok((winner_ict, winner_mark, actions))
    }
}
