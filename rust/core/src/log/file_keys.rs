//! A set of logical-file keys ("Action Reconciliation": `(path, deletionVector.uniqueId)`).
//!
//! Replay inserts one key per file action, a million or more for a large log. The set keeps
//! every key's bytes in arena chunks that are never reallocated (a decoding task's whole
//! [`HashedKeys`] arena becomes one chunk without a copy), and only a 16-byte entry per key in
//! the hash table: chunk, offset, length and 32 bits of the key's hash, enough to grow the
//! table without rereading any key. No allocation per key, a fast non-cryptographic hash with
//! a random seed.

use std::hash::BuildHasher;
use std::sync::OnceLock;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

use crate::error::{DeltaError, DeltaResult};

/// The hasher of every key set of this process (seeded randomly once), so that keys can be
/// hashed ahead of time, in parallel, with [`HashedKeys`].
fn process_hasher() -> RandomState {
    static STATE: OnceLock<RandomState> = OnceLock::new();
    STATE.get_or_init(RandomState::default).clone()
}

/// The 32 bits of a key's hash that the set keeps.
fn short_hash(hasher: &RandomState, key: &[u8]) -> u32 {
    (hasher.hash_one(key) >> 32) as u32
}

/// The table hash of a short hash: spreads its bits over the low bits (bucket index) and the
/// top seven (hashbrown's control byte).
fn table_hash(short: u32) -> u64 {
    u64::from(short).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A key set beyond what the entries can address (4 GiB in one chunk).
fn too_large() -> DeltaError {
    DeltaError::Internal("logical-file keys beyond 4 GiB in one chunk".into())
}

/// Capacity of the chunks single insertions append to.
const CHUNK_BYTES: usize = 1 << 20;

/// Where a key's bytes are, and its short hash.
#[derive(Debug, Clone, Copy)]
struct Entry {
    hash: u32,
    chunk: u32,
    start: u32,
    len: u32,
}

/// A set of keys.
#[derive(Debug, Clone)]
pub struct FileKeys {
    /// Key bytes. A chunk is never reallocated once an entry points into it.
    chunks: Vec<Vec<u8>>,
    /// The chunk single insertions append to (within its capacity).
    open: Option<usize>,
    table: HashTable<Entry>,
    hasher: RandomState,
}

impl Default for FileKeys {
    fn default() -> Self {
        FileKeys {
            chunks: Vec::new(),
            open: None,
            table: HashTable::new(),
            hasher: process_hasher(),
        }
    }
}

/// Keys hashed ahead of time (by decoding tasks), to be inserted into a [`FileKeys`] later.
#[derive(Debug, Clone)]
pub struct HashedKeys {
    arena: Vec<u8>,
    ends: Vec<usize>,
    hashes: Vec<u32>,
    hasher: RandomState,
}

impl Default for HashedKeys {
    fn default() -> Self {
        HashedKeys {
            arena: Vec::new(),
            ends: Vec::new(),
            hashes: Vec::new(),
            hasher: process_hasher(),
        }
    }
}

impl HashedKeys {
    /// Appends `key`.
    pub fn push(&mut self, key: &str) {
        self.hashes.push(short_hash(&self.hasher, key.as_bytes()));
        self.arena.extend_from_slice(key.as_bytes());
        self.ends.push(self.arena.len());
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Byte range of key `i` in the arena.
    fn range(&self, i: usize) -> (usize, usize) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        (start, self.ends[i])
    }
}

/// Whether `entry` holds `key`.
fn holds(chunks: &[Vec<u8>], entry: &Entry, hash: u32, key: &[u8]) -> bool {
    holds_in(&chunks[entry.chunk as usize], entry, hash, key)
}

/// Whether `entry`, whose bytes are in `chunk`, holds `key`.
fn holds_in(chunk: &[u8], entry: &Entry, hash: u32, key: &[u8]) -> bool {
    let start = entry.start as usize;
    entry.hash == hash && entry.len as usize == key.len() && chunk[start..start + key.len()] == *key
}

impl FileKeys {
    /// Whether `key` is in the set.
    pub fn contains(&self, key: &str) -> bool {
        let key = key.as_bytes();
        let hash = short_hash(&self.hasher, key);
        self.table
            .find(table_hash(hash), |e| holds(&self.chunks, e, hash, key))
            .is_some()
    }

    /// Adds `key`; returns whether it was new.
    pub fn insert(&mut self, key: &str) -> DeltaResult<bool> {
        self.insert_bytes(key.as_bytes())
    }

    fn insert_bytes(&mut self, key: &[u8]) -> DeltaResult<bool> {
        let hash = short_hash(&self.hasher, key);
        let chunks = &self.chunks;
        let entry = self.table.entry(
            table_hash(hash),
            |e| holds(chunks, e, hash, key),
            |e| table_hash(e.hash),
        );
        let hashbrown::hash_table::Entry::Vacant(slot) = entry else {
            return Ok(false);
        };
        // Appended to the open chunk within its capacity (never moving it), or to a new one.
        let open = match self.open {
            Some(i) if self.chunks[i].capacity() - self.chunks[i].len() >= key.len() => i,
            _ => {
                self.chunks
                    .push(Vec::with_capacity(CHUNK_BYTES.max(key.len())));
                self.chunks.len() - 1
            }
        };
        self.open = Some(open);
        let chunk = &mut self.chunks[open];
        let (Ok(c), Ok(start), Ok(len)) = (
            u32::try_from(open),
            u32::try_from(chunk.len()),
            u32::try_from(key.len()),
        ) else {
            return Err(too_large());
        };
        slot.insert(Entry {
            hash,
            chunk: c,
            start,
            len,
        });
        chunk.extend_from_slice(key);
        Ok(true)
    }

    /// Adds every key of `keys`; returns, key by key, whether it was new. The keys' arena
    /// becomes one of the set's chunks (nothing is copied) when any key was new.
    pub fn insert_all(&mut self, keys: HashedKeys) -> DeltaResult<Vec<bool>> {
        let HashedKeys {
            arena,
            ends,
            hashes,
            ..
        } = &keys;
        let chunk = self.chunks.len();
        let representable = u32::try_from(arena.len()).is_ok() && u32::try_from(chunk).is_ok();
        if !representable {
            // Too large to adopt: inserted one by one.
            return (0..keys.len())
                .map(|i| {
                    let (s, e) = keys.range(i);
                    self.insert_bytes(&arena[s..e])
                })
                .collect();
        }
        self.table.reserve(ends.len(), |e| table_hash(e.hash));
        let chunks = &self.chunks;
        let mut new = vec![false; ends.len()];
        let mut start = 0usize;
        for (i, (&end, &hash)) in ends.iter().zip(hashes).enumerate() {
            let key = &arena[start..end];
            // Within this batch's own arena, an earlier duplicate is already in the table.
            let entry = self.table.entry(
                table_hash(hash),
                |e| {
                    if e.chunk as usize == chunk {
                        holds_in(arena, e, hash, key)
                    } else {
                        holds(chunks, e, hash, key)
                    }
                },
                |e| table_hash(e.hash),
            );
            if let hashbrown::hash_table::Entry::Vacant(slot) = entry {
                // Both fit in u32: bounded by the arena's length, checked above.
                slot.insert(Entry {
                    hash,
                    chunk: chunk as u32,
                    start: start as u32,
                    len: (end - start) as u32,
                });
                new[i] = true;
            }
            start = end;
        }
        if new.contains(&true) {
            let mut arena = keys.arena;
            arena.shrink_to_fit();
            self.chunks.push(arena);
        }
        Ok(new)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn insert_and_contains() {
        let mut k = FileKeys::default();
        assert!(k.is_empty());
        assert!(k.insert("a").unwrap());
        assert!(!k.insert("a").unwrap());
        assert!(k.insert("a\u{0}uDV@1").unwrap());
        assert!(k.contains("a"));
        assert!(!k.contains("b"));
        assert!(k.insert("").unwrap());
        assert!(k.contains(""));
        assert_eq!(k.len(), 3);
    }

    #[test]
    fn keys_hashed_ahead_insert_like_keys() {
        let mut ahead = HashedKeys::default();
        for k in ["a", "b", "a\u{0}uDV@1", "a"] {
            ahead.push(k);
        }
        assert_eq!(ahead.len(), 4);
        let mut set = FileKeys::default();
        assert!(set.insert("b").unwrap());
        // A duplicate within the batch is not new the second time.
        assert_eq!(set.insert_all(ahead).unwrap(), [true, false, true, false]);
        assert!(set.contains("a\u{0}uDV@1"));
        assert!(set.contains("a"));
        assert_eq!(set.len(), 3);
        // A batch with nothing new leaves no chunk behind.
        let chunks = set.chunks.len();
        let mut again = HashedKeys::default();
        again.push("b");
        assert_eq!(set.insert_all(again).unwrap(), [false]);
        assert_eq!(set.chunks.len(), chunks);
    }

    #[test]
    fn single_insertions_fill_chunks_without_moving_them() {
        let mut set = FileKeys::default();
        let key = "k".repeat(1000);
        for i in 0..3000 {
            assert!(set.insert(&format!("{key}{i}")).unwrap());
        }
        // ~3 MB of keys: several chunks, each within its capacity.
        assert!(set.chunks.len() >= 3);
        assert!(set.chunks.iter().all(|c| c.len() <= CHUNK_BYTES));
        assert!((0..3000).all(|i| set.contains(&format!("{key}{i}"))));
        // A key longer than a chunk gets one of its own.
        let long = "x".repeat(CHUNK_BYTES + 1);
        assert!(set.insert(&long).unwrap());
        assert!(set.contains(&long));
    }

    proptest! {
        #[test]
        fn behaves_like_a_set(
            batches in proptest::collection::vec(
                (any::<bool>(), proptest::collection::vec(".{0,12}", 0..40)),
                0..12,
            )
        ) {
            let mut ours = FileKeys::default();
            let mut std = std::collections::HashSet::new();
            for (hashed_ahead, keys) in &batches {
                let expected: Vec<bool> = keys.iter().map(|k| std.insert(k.clone())).collect();
                let got = if *hashed_ahead {
                    let mut ahead = HashedKeys::default();
                    keys.iter().for_each(|k| ahead.push(k));
                    ours.insert_all(ahead).unwrap()
                } else {
                    keys.iter().map(|k| ours.insert(k).unwrap()).collect()
                };
                prop_assert_eq!(got, expected);
            }
            prop_assert_eq!(ours.len(), std.len());
            for key in &std {
                prop_assert!(ours.contains(key));
            }
            prop_assert!(!ours.contains("not a generated key because it is long"));
        }
    }
}
