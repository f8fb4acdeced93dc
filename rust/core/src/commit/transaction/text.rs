//! The commit file of a version: the `commitInfo` first ("Commit Provenance Information";
//! with `inCommitTimestamp` first of all, "In-Commit Timestamps"), the application
//! transaction ("Transaction Identifiers"), then the actions, one per line: a `metaData` that
//! enables in-commit timestamps gets the enablement properties, new `add`s get fresh row IDs
//! and the commit records the new high-water mark ("Writer Requirements for Row Tracking").

use serde_json::{json, Map, Value};

use crate::error::{DeltaError, DeltaResult};

use super::{InCommitTimestamps, Isolation, Transaction, ROW_TRACKING_DOMAIN};

/// `operationParameters` with every array or object value as its JSON text. The protocol
/// leaves `commitInfo` free-form ("Commit Provenance Information"), but Delta Spark reads
/// `operationParameters` as a map of strings, and a nested value there fails its DESCRIBE
/// HISTORY and every MERGE that looks at the table's history ("Cannot deserialize value of type
/// `java.lang.String` from Object value", tests/test_delta_spark_reads_ours.py). Strings,
/// numbers and booleans stay as they are: Delta Spark reads those as strings.
fn string_parameters(parameters: &Map<String, Value>) -> Map<String, Value> {
    parameters
        .iter()
        .map(|(k, v)| match v {
            Value::Array(_) | Value::Object(_) => (k.clone(), Value::String(v.to_string())),
            _ => (k.clone(), v.clone()),
        })
        .collect()
}

impl Transaction {
    /// The commit file of `version`: commitInfo first, then the actions, one per line.
    pub(super) fn commit_text(
        &self,
        txn_id: &str,
        version: u64,
        ict: Option<InCommitTimestamps>,
        row_id_high_water_mark: Option<i64>,
    ) -> DeltaResult<String> {
        let mut mark = row_id_high_water_mark;
        let mut assigned = false;
        let now = chrono::Utc::now().timestamp_millis();
        let in_commit = ict.map(|s| s.previous.map_or(now, |p| now.max(p + 1)));
        let mut info = Map::new();
        if let Some(t) = in_commit {
            // "inCommitTimestamp" first, and the commit's timestamp is the same instant.
            info.insert("inCommitTimestamp".into(), json!(t));
        }
        info.insert("timestamp".into(), json!(in_commit.unwrap_or(now)));
        info.insert("operation".into(), json!(self.operation));
        info.insert(
            "operationParameters".into(),
            Value::Object(string_parameters(&self.operation_parameters)),
        );
        if let Some(v) = self.read_version {
            info.insert("readVersion".into(), json!(v));
        }
        info.insert(
            "isBlindAppend".into(),
            json!(self.isolation == Isolation::BlindAppend),
        );
        info.insert("engineInfo".into(), json!(self.engine_info));
        info.insert("txnId".into(), json!(txn_id));
        for (k, v) in &self.custom {
            info.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let mut lines = vec![json!({ "commitInfo": info }).to_string()];
        if let Some((app_id, v)) = &self.app_transaction {
            lines.push(
                json!({"txn": {"appId": app_id, "version": v,
                       "lastUpdated": chrono::Utc::now().timestamp_millis()}})
                .to_string(),
            );
        }
        for action in &self.actions {
            if !action.is_object() {
                return Err(DeltaError::InvalidArgument(format!(
                    "an action must be a JSON object: {action}"
                )));
            }
            match (ict, in_commit, action.get("metaData")) {
                (Some(InCommitTimestamps { enabling: true, .. }), Some(t), Some(_)) => {
                    let mut action = action.clone();
                    if let Some(config) = action
                        .pointer_mut("/metaData/configuration")
                        .and_then(Value::as_object_mut)
                    {
                        config.insert(
                            "delta.inCommitTimestampEnablementVersion".into(),
                            json!(version.to_string()),
                        );
                        config.insert(
                            "delta.inCommitTimestampEnablementTimestamp".into(),
                            json!(t.to_string()),
                        );
                    }
                    lines.push(action.to_string());
                }
                _ => match (mark.as_mut(), action.get("add")) {
                    (Some(m), Some(add)) if add.get("baseRowId").is_none() => {
                        // Fresh row IDs for the file's physical rows.
                        let records = add
                            .get("stats")
                            .and_then(Value::as_str)
                            .and_then(|s| serde_json::from_str::<Value>(s).ok())
                            .and_then(|s| s.get("numRecords").and_then(Value::as_i64))
                            .ok_or_else(|| {
                                DeltaError::Internal(
                                    "an add without numRecords cannot get row IDs".into(),
                                )
                            })?;
                        let mut action = action.clone();
                        action["add"]["baseRowId"] = json!(*m + 1);
                        action["add"]["defaultRowCommitVersion"] = json!(version);
                        *m += records;
                        assigned = true;
                        lines.push(action.to_string());
                    }
                    _ => lines.push(action.to_string()),
                },
            }
        }
        if let (true, Some(m)) = (assigned, mark) {
            let configuration = json!({ "highWaterMark": m }).to_string();
            lines.push(
                json!({"domainMetadata": {"domain": ROW_TRACKING_DOMAIN,
                       "configuration": configuration, "removed": false}})
                .to_string(),
            );
        }
        let mut text = lines.join("\n");
        text.push('\n');
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_operation_parameters_are_written_as_json_text() {
        let mut p = Map::new();
        p.insert("predicate".into(), json!("id = 1"));
        p.insert("set".into(), json!({"s": "upper(s)"}));
        p.insert("partitionBy".into(), json!(["a", "b"]));
        p.insert("mergeSchema".into(), json!(true));
        p.insert("numFiles".into(), json!(6));
        let out = string_parameters(&p);
        assert_eq!(out["predicate"], json!("id = 1"));
        assert_eq!(out["set"], json!(r#"{"s":"upper(s)"}"#));
        assert_eq!(out["partitionBy"], json!(r#"["a","b"]"#));
        assert_eq!(out["mergeSchema"], json!(true));
        assert_eq!(out["numFiles"], json!(6));
    }
}
