//! Log replay: reconciling actions into the state of one version.
//!
//! Spec: "Action Reconciliation". Commits are replayed newest first; the first `protocol` and
//! `metaData` seen win, the first `txn` per `appId`, the first `domainMetadata` per `domain`
//! (tombstones with `removed = true` suppress older entries and are then dropped), and the first
//! reference to each logical file `(path, deletionVector.uniqueId)` decides whether it is active
//! (`add`) or a tombstone (`remove`). A checkpoint is already reconciled, so its rows are only
//! checked against the keys the newer commits touched and never added to that set.
//!
//! A log compaction file is one more newest-first sequence under the same first-seen-wins rule:
//! its lines are replayed in file order (`log::reader::LineOrder::NewestFirst`), which is
//! right for reconciled compactions (one action per key) and for the unreconciled files
//! Databricks Runtime writes (commits newest first, each commit's actions in their order).

use std::borrow::Cow;
use std::collections::HashMap;

use arrow::array::{
    Array, AsArray, BooleanArray, Int32Array, RecordBatch, StringArray, StructArray,
};
use arrow::compute::filter;
use arrow::datatypes::Int32Type;

use crate::error::{DeltaError, DeltaResult};
use crate::log::actions::names;
use crate::model::{DomainMetadata, Metadata, Protocol, Txn};
use crate::paths::{dv_unique_id, file_key};

/// Where an action was found, for error messages.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The log file (relative to the table root).
    pub file: String,
    /// The version it belongs to.
    pub version: u64,
}

pub use crate::log::file_keys::{FileKeys, HashedKeys};

/// The reconciled state being built.
#[derive(Debug, Default)]
pub struct Reconciler {
    /// Keys of every logical file referenced by the commits replayed so far.
    seen: FileKeys,
    /// The newest `protocol` and where it came from.
    pub protocol: Option<(Protocol, Origin)>,
    /// The newest `metaData`.
    pub metadata: Option<(Metadata, Origin)>,
    /// Newest `txn` per `appId`.
    pub txns: HashMap<String, Txn>,
    /// Newest `domainMetadata` per domain (`None` once a tombstone has been seen).
    domains: HashMap<String, Option<DomainMetadata>>,
    /// Active `add` structs with the rows selected.
    pub adds: Vec<Selected>,
    /// Tombstone `remove` structs (rows all valid).
    pub removes: Vec<StructArray>,
}

/// Rows of a struct array chosen by replay. The array is kept as decoded (sharing its buffers)
/// so that nothing is copied until the rows are used.
#[derive(Debug, Clone)]
pub struct Selected {
    /// The actions (some rows may be null or not selected).
    pub array: StructArray,
    /// The rows to keep; `None` means every row (all of them valid).
    pub mask: Option<BooleanArray>,
    /// Statistics already parsed for every row of `array` (whose `stats` field is then gone).
    pub stats: Option<StructArray>,
}

impl Selected {
    fn from_mask(
        array: &StructArray,
        mask: Vec<bool>,
        stats: Option<&StructArray>,
    ) -> Option<Self> {
        let selected = mask.iter().filter(|b| **b).count();
        if selected == 0 {
            return None;
        }
        let mask = (selected != array.len()).then(|| BooleanArray::from(mask));
        Some(Selected {
            array: array.clone(),
            mask,
            stats: stats.cloned(),
        })
    }

    /// Number of selected rows.
    pub fn len(&self) -> usize {
        self.mask
            .as_ref()
            .map_or(self.array.len(), BooleanArray::true_count)
    }

    /// Whether no row is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The result of selecting rows of one batch of file actions.
#[derive(Debug, Default)]
pub struct FileSelection {
    /// The active adds of the batch.
    pub adds: Option<Selected>,
    /// The tombstones of the batch, compacted.
    pub removes: Option<StructArray>,
}

/// The columns of an `add`/`remove` struct that make up the logical-file key, resolved once
/// per batch.
struct KeyColumns<'a> {
    path: Option<&'a StringArray>,
    dv: Option<(
        &'a StructArray,
        &'a StringArray,
        &'a StringArray,
        Option<&'a Int32Array>,
    )>,
}

impl<'a> KeyColumns<'a> {
    fn new(action: &'a StructArray) -> Self {
        let string = |s: &'a StructArray, name: &str| {
            s.column_by_name(name)
                .and_then(|c| c.as_string_opt::<i32>())
        };
        let dv = action
            .column_by_name("deletionVector")
            .and_then(|c| c.as_struct_opt())
            .filter(|dv| dv.null_count() < dv.len())
            .and_then(|dv| {
                Some((
                    dv,
                    string(dv, "storageType")?,
                    string(dv, "pathOrInlineDv")?,
                    dv.column_by_name("offset")
                        .and_then(|c| c.as_primitive_opt::<Int32Type>()),
                ))
            });
        KeyColumns {
            path: string(action, "path"),
            dv,
        }
    }

    /// The unique id of the deletion vector of row `row`, if it has one.
    fn dv_id(&self, row: usize) -> Option<String> {
        let (dv, storage, path, offset) = self.dv?;
        if dv.is_null(row) || storage.is_null(row) || path.is_null(row) {
            return None;
        }
        let offset = offset.filter(|o| o.is_valid(row)).map(|o| o.value(row));
        Some(dv_unique_id(storage.value(row), path.value(row), offset))
    }

    /// The logical-file key of row `row`, or a corrupt-log error when the row has no path.
    fn key(&self, kind: &str, row: usize, origin: &Origin) -> DeltaResult<Cow<'a, str>> {
        let path = self
            .path
            .filter(|p| p.is_valid(row))
            .map(|p| p.value(row))
            .ok_or_else(|| {
                DeltaError::corrupt(
                    &origin.file,
                    Some(origin.version),
                    format!("an {kind} action has no path (spec: \"Add File and Remove File\")"),
                )
            })?;
        let dv = self.dv_id(row);
        file_key(path, dv.as_deref())
            .map_err(|rule| DeltaError::corrupt(&origin.file, Some(origin.version), rule))
    }
}

fn struct_column<'a>(batch: &'a RecordBatch, name: &str) -> Option<&'a StructArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_struct_opt())
        .filter(|s| s.null_count() < s.len())
}

/// Keeps the rows of `action` where `mask` is true; `None` when none are.
fn compact(action: &StructArray, mask: Vec<bool>) -> DeltaResult<Option<StructArray>> {
    let selected = mask.iter().filter(|b| **b).count();
    if selected == 0 {
        return Ok(None);
    }
    if selected == action.len() {
        return Ok(Some(action.clone()));
    }
    let filtered = filter(action, &BooleanArray::from(mask))?;
    Ok(Some(filtered.as_struct().clone()))
}

impl Reconciler {
    /// Replays one commit or compaction. Must be called newest first. `stats`, when given,
    /// holds per batch the statistics already parsed for its `add` rows, and `add_keys` the
    /// hashed keys of those rows when the decoder computed them.
    pub fn apply_delta(
        &mut self,
        batches: &[RecordBatch],
        stats: &[Option<StructArray>],
        mut add_keys: Vec<Option<HashedKeys>>,
        origin: &Origin,
    ) -> DeltaResult<()> {
        for batch in batches {
            self.apply_non_file_actions(batch, origin)?;
        }
        // File actions: a key first seen here decides the file's fate. Rows are taken in the
        // order given, an `add` and a `remove` row alike (one action per row), so in a file
        // read newest first (a compaction, see `LineOrder::NewestFirst`) the first reference
        // to a file, its newest, wins.
        for (i, batch) in batches.iter().enumerate() {
            let add = struct_column(batch, names::ADD);
            let remove = struct_column(batch, names::REMOVE);
            let hashed = add_keys.get_mut(i).and_then(Option::take);
            let mut add_mask = vec![false; add.map_or(0, |a| a.len())];
            let mut remove_mask = vec![false; remove.map_or(0, |r| r.len())];
            match (add, hashed) {
                // Every row of such a batch is a valid add with its key hashed (the fast path
                // batches hold nothing else).
                (Some(add), Some(hashed))
                    if remove.is_none() && hashed.len() == add.len() && add.null_count() == 0 =>
                {
                    add_mask = self.seen.insert_all(hashed)?;
                }
                _ => {
                    let add_keys = add.map(KeyColumns::new);
                    let remove_keys = remove.map(KeyColumns::new);
                    for row in 0..batch.num_rows() {
                        if let (Some(a), Some(keys)) = (add, &add_keys) {
                            if a.is_valid(row) {
                                add_mask[row] = self.seen.insert(&keys.key("add", row, origin)?)?;
                                continue;
                            }
                        }
                        if let (Some(r), Some(keys)) = (remove, &remove_keys) {
                            if r.is_valid(row) {
                                remove_mask[row] =
                                    self.seen.insert(&keys.key("remove", row, origin)?)?;
                            }
                        }
                    }
                }
            }
            if let Some(add) = add {
                let parsed = stats.get(i).and_then(Option::as_ref);
                self.adds.extend(Selected::from_mask(add, add_mask, parsed));
            }
            if let Some(remove) = remove {
                if let Some(r) = compact(remove, remove_mask)? {
                    self.removes.push(r);
                }
            }
        }
        Ok(())
    }

    /// Takes protocol, metadata, txn and domain metadata from `batch` where no newer one was
    /// seen. Used for commits (newest first) and for the checkpoint (last).
    pub fn apply_non_file_actions(
        &mut self,
        batch: &RecordBatch,
        origin: &Origin,
    ) -> DeltaResult<()> {
        if self.protocol.is_none() {
            if let Some(p) = struct_column(batch, names::PROTOCOL) {
                if let Some(row) = (0..p.len()).find(|r| p.is_valid(*r)) {
                    let protocol = Protocol::from_row(p, row).ok_or_else(|| {
                        DeltaError::corrupt(
                            &origin.file,
                            Some(origin.version),
                            "the protocol action lacks minReaderVersion or minWriterVersion \
                             (spec: \"Protocol Evolution\")",
                        )
                    })?;
                    self.protocol = Some((protocol, origin.clone()));
                }
            }
        }
        if self.metadata.is_none() {
            if let Some(m) = struct_column(batch, names::METADATA) {
                if let Some(row) = (0..m.len()).find(|r| m.is_valid(*r)) {
                    self.metadata = Some((Metadata::from_row(m, row), origin.clone()));
                }
            }
        }
        if let Some(t) = struct_column(batch, names::TXN) {
            for row in (0..t.len()).filter(|r| t.is_valid(*r)) {
                if let Some(txn) = Txn::from_row(t, row) {
                    self.txns.entry(txn.app_id.clone()).or_insert(txn);
                }
            }
        }
        if let Some(d) = struct_column(batch, names::DOMAIN_METADATA) {
            for row in (0..d.len()).filter(|r| d.is_valid(*r)) {
                if let Some(dm) = DomainMetadata::from_row(d, row) {
                    let removed = dm.removed;
                    self.domains
                        .entry(dm.domain.clone())
                        .or_insert((!removed).then_some(dm));
                }
            }
        }
        Ok(())
    }

    /// The keys the replayed commits referenced; the checkpoint is filtered against them
    /// ([`select_checkpoint_files`]). Leaves the reconciler without them.
    pub fn take_seen(&mut self) -> FileKeys {
        std::mem::take(&mut self.seen)
    }

    /// The newest `domainMetadata` per domain among the replayed commits; `None` for a domain
    /// they removed.
    pub fn domain_updates(&self) -> &HashMap<String, Option<DomainMetadata>> {
        &self.domains
    }

    /// The live domain metadata, sorted by domain.
    pub fn domain_metadata(&self) -> Vec<DomainMetadata> {
        let mut out: Vec<DomainMetadata> = self.domains.values().flatten().cloned().collect();
        out.sort_by(|a, b| a.domain.cmp(&b.domain));
        out
    }
}

/// Selects the active adds and tombstones of a checkpoint (or sidecar) batch: rows whose key no
/// newer commit referenced (`seen`). Read-only, so batches can be selected in parallel.
pub fn select_checkpoint_files(
    seen: &FileKeys,
    batch: &RecordBatch,
    origin: &Origin,
) -> DeltaResult<FileSelection> {
    let select = |action: &StructArray, name: &str| unseen(seen, action, name, origin);
    let mut out = FileSelection::default();
    if let Some(add) = struct_column(batch, names::ADD) {
        out.adds = Selected::from_mask(add, select(add, names::ADD)?, None);
    }
    if let Some(remove) = struct_column(batch, names::REMOVE) {
        out.removes = compact(remove, select(remove, names::REMOVE)?)?;
    }
    Ok(out)
}

/// The valid rows of `action` (`add` or `remove` structs, named `kind` in errors) whose
/// logical file no replayed commit referenced: what an older state (a checkpoint, or a previous
/// snapshot's files and tombstones) still contributes ("Action Reconciliation").
pub fn unseen(
    seen: &FileKeys,
    action: &StructArray,
    kind: &str,
    origin: &Origin,
) -> DeltaResult<Vec<bool>> {
    let keys = KeyColumns::new(action);
    let mut mask = vec![false; action.len()];
    for (row, keep) in mask.iter_mut().enumerate() {
        if action.is_valid(row) {
            *keep = seen.is_empty() || !seen.contains(&keys.key(kind, row, origin)?);
        }
    }
    Ok(mask)
}

#[cfg(test)]
pub(crate) mod tests;
