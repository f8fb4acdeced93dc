//! Version checksum files: `<v>.crc` summarizing the state of version `v`.
//!
//! Spec: the Delta protocol's "Version Checksum File" (not in the copy under `../shared/spec`;
//! the `catalogManaged` RFC refers to it and its "Metadata Cleanup" amendment deletes them).
//! A JSON object with `tableSizeBytes`, `numFiles`, `numMetadata`, `numProtocol`, `metadata`,
//! `protocol`, `setTransactions`, `domainMetadata`, `inCommitTimestampOpt`, `txnId` and a
//! `fileSizeHistogram` (`sortedBinBoundaries`, `fileCounts`, `totalBytes`).
//!
//! Writers derive the checksum of the version they commit from the version they read plus
//! their own actions, so it costs no replay; after a lost race (winners in between) or with a
//! `remove` whose size is unknown no checksum is written (the file is optional). A snapshot can
//! be checked against its version's checksum ([`validate`]).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use object_store::{PutMode, PutOptions, PutPayload};
use serde_json::{json, Map, Value};

use crate::error::{DeltaError, DeltaResult};
use crate::maintenance::checkpoint_rows::{domain_action, protocol_action, txn_action};
use crate::snapshot::Snapshot;
use crate::storage::Storage;

/// Bin boundaries of the file size histogram, the ones Delta's own writers use (so that
/// histograms of one table compare bin for bin): each value starts a bin. 0; powers of two
/// from 8 KiB to 4 MiB; steps of 4 MiB to 40 MiB, of 8 MiB to 120 MiB, of 4 MiB to 144 MiB, of
/// 16 MiB to 576 MiB, of 64 MiB to 1408 MiB, of 128 MiB to 2 GiB and of 256 MiB to 4 GiB; then
/// powers of two to 256 GiB: 95 bins.
fn boundaries() -> &'static [i64] {
    static BOUNDARIES: OnceLock<Vec<i64>> = OnceLock::new();
    BOUNDARIES.get_or_init(|| {
        const MIB: i64 = 1 << 20;
        let mut out = vec![0];
        let mut b: i64 = 8 << 10;
        while b <= 4 * MIB {
            out.push(b);
            b *= 2;
        }
        for (step, last) in [
            (4, 40),
            (8, 120),
            (4, 144),
            (16, 576),
            (64, 1408),
            (128, 2048),
            (256, 4096),
        ] {
            let mut b = *out.last().unwrap_or(&0) + step * MIB;
            while b <= last * MIB {
                out.push(b);
                b += step * MIB;
            }
        }
        let mut b = 8 << 30;
        while b <= 256 << 30 {
            out.push(b);
            b *= 2;
        }
        out
    })
}

/// The state a checksum file records.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionChecksum {
    pub table_size_bytes: i64,
    pub num_files: i64,
    /// The `metaData` action's body.
    pub metadata: Value,
    /// The `protocol` action's body.
    pub protocol: Value,
    /// `txn` bodies by application id.
    pub txns: BTreeMap<String, Value>,
    /// Live `domainMetadata` bodies by domain.
    pub domains: BTreeMap<String, Value>,
    pub in_commit_timestamp: Option<i64>,
    /// Files and bytes per histogram bin.
    pub file_counts: Vec<i64>,
    pub total_bytes: Vec<i64>,
}

fn body(action: Value, key: &str) -> Value {
    action.get(key).cloned().unwrap_or(Value::Null)
}

impl VersionChecksum {
    /// The checksum of a version with no files, no metadata and no protocol yet.
    pub fn empty() -> Self {
        let bins = boundaries().len();
        VersionChecksum {
            table_size_bytes: 0,
            num_files: 0,
            metadata: Value::Null,
            protocol: Value::Null,
            txns: BTreeMap::new(),
            domains: BTreeMap::new(),
            in_commit_timestamp: None,
            file_counts: vec![0; bins],
            total_bytes: vec![0; bins],
        }
    }

    /// The checksum of `snapshot`'s version.
    pub fn of(snapshot: &Snapshot) -> Self {
        let mut out = Self::empty();
        for batch in snapshot.files() {
            if let Some(sizes) = batch
                .adds
                .column_by_name("size")
                .and_then(|c| c.as_primitive_opt::<Int64Type>())
            {
                for i in 0..sizes.len() {
                    out.add_file(if sizes.is_valid(i) { sizes.value(i) } else { 0 });
                }
            } else {
                for _ in 0..batch.len() {
                    out.add_file(0);
                }
            }
        }
        if let Ok(m) = snapshot.metadata() {
            out.metadata = body(m.to_action(), "metaData");
        }
        out.protocol = body(protocol_action(snapshot.protocol()), "protocol");
        for (app, t) in snapshot.transactions() {
            out.txns.insert(app.clone(), body(txn_action(t), "txn"));
        }
        for d in snapshot.domain_metadata() {
            out.domains
                .insert(d.domain.clone(), body(domain_action(d), "domainMetadata"));
        }
        out.in_commit_timestamp = snapshot.in_commit_timestamp();
        out
    }

    /// The histogram bin of a file of `size` bytes: the last boundary not above it.
    fn bin(size: i64) -> usize {
        boundaries()
            .partition_point(|&b| b <= size)
            .saturating_sub(1)
    }

    fn add_file(&mut self, size: i64) {
        let bin = Self::bin(size);
        self.num_files += 1;
        self.table_size_bytes += size;
        self.file_counts[bin] += 1;
        self.total_bytes[bin] += size;
    }

    /// Applies one commit's actions; `false` when the result cannot be known (a `remove`
    /// without its size).
    pub fn apply(&mut self, actions: &[Value]) -> bool {
        for action in actions {
            if let Some(add) = action.get("add").filter(|a| !a.is_null()) {
                self.add_file(add.get("size").and_then(Value::as_i64).unwrap_or(0));
            } else if let Some(remove) = action.get("remove").filter(|a| !a.is_null()) {
                let Some(size) = remove.get("size").and_then(Value::as_i64) else {
                    return false;
                };
                let bin = Self::bin(size);
                self.num_files -= 1;
                self.table_size_bytes -= size;
                self.file_counts[bin] -= 1;
                self.total_bytes[bin] -= size;
            } else if let Some(m) = action.get("metaData").filter(|a| !a.is_null()) {
                self.metadata = m.clone();
            } else if let Some(p) = action.get("protocol").filter(|a| !a.is_null()) {
                self.protocol = p.clone();
            } else if let Some(t) = action.get("txn").filter(|a| !a.is_null()) {
                if let Some(app) = t.get("appId").and_then(Value::as_str) {
                    self.txns.insert(app.to_string(), t.clone());
                }
            } else if let Some(d) = action.get("domainMetadata").filter(|a| !a.is_null()) {
                let Some(domain) = d.get("domain").and_then(Value::as_str) else {
                    continue;
                };
                if d.get("removed").and_then(Value::as_bool) == Some(true) {
                    self.domains.remove(domain);
                } else {
                    self.domains.insert(domain.to_string(), d.clone());
                }
            } else if let Some(c) = action.get("commitInfo").filter(|a| !a.is_null()) {
                if let Some(t) = c.get("inCommitTimestamp").and_then(Value::as_i64) {
                    self.in_commit_timestamp = Some(t);
                }
            }
        }
        self.num_files >= 0
    }

    /// The checksum file's JSON.
    pub fn to_json(&self, txn_id: Option<&str>) -> Value {
        let mut out = Map::new();
        if let Some(id) = txn_id {
            out.insert("txnId".into(), json!(id));
        }
        out.insert("tableSizeBytes".into(), json!(self.table_size_bytes));
        out.insert("numFiles".into(), json!(self.num_files));
        out.insert("numMetadata".into(), json!(1));
        out.insert("numProtocol".into(), json!(1));
        if let Some(t) = self.in_commit_timestamp {
            out.insert("inCommitTimestampOpt".into(), json!(t));
        }
        out.insert(
            "setTransactions".into(),
            Value::Array(self.txns.values().cloned().collect()),
        );
        out.insert(
            "domainMetadata".into(),
            Value::Array(self.domains.values().cloned().collect()),
        );
        out.insert("metadata".into(), self.metadata.clone());
        out.insert("protocol".into(), self.protocol.clone());
        out.insert(
            "fileSizeHistogram".into(),
            json!({
                "sortedBinBoundaries": boundaries(),
                "fileCounts": self.file_counts,
                "totalBytes": self.total_bytes,
            }),
        );
        Value::Object(out)
    }
}

/// The name of version `version`'s checksum file.
pub fn checksum_file_name(version: u64) -> String {
    format!("{version:020}.crc")
}

/// Writes `<version>.crc` unless it exists (a checksum file, like a commit, is never replaced).
pub async fn write_checksum(storage: &Storage, version: u64, value: &Value) -> DeltaResult<()> {
    let location = storage.log_path(&checksum_file_name(version));
    let payload = PutPayload::from(value.to_string().into_bytes());
    match storage
        .store()
        .put_opts(&location, payload, PutOptions::from(PutMode::Create))
        .await
    {
        Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Checks `snapshot` against its version's checksum file: `Ok(false)` when there is none, a
/// [`DeltaError::CorruptLog`] naming the first field that differs.
pub async fn validate(snapshot: &Snapshot) -> DeltaResult<bool> {
    let name = checksum_file_name(snapshot.version());
    let file = format!("_delta_log/{name}");
    let bytes = match snapshot
        .storage()
        .get(&snapshot.storage().log_path(&name))
        .await
    {
        Ok(b) => b,
        Err(object_store::Error::NotFound { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let stored: Value = serde_json::from_slice(&bytes).map_err(|e| {
        DeltaError::corrupt(
            &file,
            Some(snapshot.version()),
            format!("invalid JSON: {e}"),
        )
    })?;
    let actual = VersionChecksum::of(snapshot).to_json(None);
    let mismatch = |field: &str, want: &Value, got: &Value| {
        DeltaError::corrupt(
            &file,
            Some(snapshot.version()),
            format!(
                "the version checksum says {field} = {want}, the log gives {got} (\"Version \
                 Checksum File\")"
            ),
        )
    };
    for field in ["numFiles", "tableSizeBytes"] {
        if let Some(want) = stored.get(field) {
            if want != &actual[field] {
                return Err(mismatch(field, want, &actual[field]));
            }
        }
    }
    for (field, key) in [
        ("metadata", "id"),
        ("metadata", "schemaString"),
        ("protocol", "minReaderVersion"),
        ("protocol", "minWriterVersion"),
    ] {
        if let Some(want) = stored.get(field).and_then(|m| m.get(key)) {
            let got = &actual[field][key];
            if want != got {
                return Err(mismatch(&format!("{field}.{key}"), want, got));
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bins_and_incremental_updates() {
        let mut c = VersionChecksum::empty();
        assert!(c.apply(&[
            json!({"add": {"path": "a", "size": 100}}),
            json!({"add": {"path": "b", "size": 10_000}}),
            json!({"add": {"path": "c", "size": 3 << 20}}),
        ]));
        assert_eq!(
            (c.num_files, c.table_size_bytes),
            (3, 100 + 10_000 + (3 << 20))
        );
        assert_eq!(c.file_counts[0], 1);
        assert_eq!(c.file_counts[1], 1); // [8 KiB, 16 KiB)
        assert_eq!(c.file_counts[VersionChecksum::bin(3 << 20)], 1);
        assert!(c.apply(&[json!({"remove": {"path": "a", "size": 100}})]));
        assert_eq!((c.num_files, c.file_counts[0], c.total_bytes[0]), (2, 0, 0));
        assert!(
            !c.apply(&[json!({"remove": {"path": "b"}})]),
            "size unknown"
        );
        let b = boundaries();
        assert_eq!(b.len(), 95);
        assert!(b.windows(2).all(|w| w[0] < w[1]));
        const MIB: i64 = 1 << 20;
        for (i, want) in [
            (1, 8 << 10),
            (10, 4 * MIB),
            (11, 8 * MIB),
            (19, 40 * MIB),
            (20, 48 * MIB),
            (29, 120 * MIB),
            (30, 124 * MIB),
            (35, 144 * MIB),
            (36, 160 * MIB),
            (62, 576 * MIB),
            (63, 640 * MIB),
            (75, 1408 * MIB),
            (76, 1536 * MIB),
            (80, 2048 * MIB),
            (81, 2304 * MIB),
            (88, 4096 * MIB),
            (89, 8 << 30),
            (94, 256 << 30),
        ] {
            assert_eq!(b[i], want, "boundary {i}");
        }
        for size in [
            0i64,
            1,
            8191,
            8192,
            16_383,
            16_384,
            130 * MIB,
            1 << 40,
            i64::MAX,
        ] {
            let b = boundaries();
            let expected = b.iter().rposition(|&x| size >= x).unwrap_or(0);
            assert_eq!(VersionChecksum::bin(size), expected, "{size}");
        }
        let v = VersionChecksum::empty().to_json(Some("t"));
        assert_eq!(v["numFiles"], 0);
        assert_eq!(v["fileSizeHistogram"]["sortedBinBoundaries"][1], 8192);
    }
}
