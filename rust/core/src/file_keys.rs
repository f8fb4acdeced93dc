//! A set of logical-file keys ("Action Reconciliation": `(path, deletionVector.uniqueId)`).
//!
//! Replay inserts one key per file action, a million or more for a large log, so the set stores
//! every key's bytes in one arena and only `(offset, length)` pairs in the hash table: no
//! allocation per key, and a fast non-cryptographic hash with a random seed.

use std::hash::BuildHasher;
use std::sync::OnceLock;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

/// The hasher of every key set of this process (seeded randomly once), so that keys can be
/// hashed ahead of time, in parallel, with [`HashedKeys`].
fn process_hasher() -> RandomState {
    static STATE: OnceLock<RandomState> = OnceLock::new();
    STATE.get_or_init(RandomState::default).clone()
}

/// A set of keys.
#[derive(Debug, Clone)]
pub struct FileKeys {
    arena: Vec<u8>,
    /// `(hash, offset, length)` of each key: with the hash kept, growing the table never
    /// rereads the arena.
    table: HashTable<(u64, usize, usize)>,
    hasher: RandomState,
}

impl Default for FileKeys {
    fn default() -> Self {
        FileKeys {
            arena: Vec::new(),
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
    hashes: Vec<u64>,
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
        self.hashes.push(self.hasher.hash_one(key.as_bytes()));
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

    /// Key `i` and its hash.
    pub fn get(&self, i: usize) -> Option<(u64, &[u8])> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some((self.hashes[i], &self.arena[start..end]))
    }
}

impl FileKeys {
    /// Whether `key` is in the set.
    pub fn contains(&self, key: &str) -> bool {
        let hash = self.hasher.hash_one(key.as_bytes());
        self.table
            .find(hash, |&(h, o, l)| {
                h == hash && &self.arena[o..o + l] == key.as_bytes()
            })
            .is_some()
    }

    /// Adds `key`; returns whether it was new.
    pub fn insert(&mut self, key: &str) -> bool {
        let hash = self.hasher.hash_one(key.as_bytes());
        self.insert_hashed(hash, key.as_bytes())
    }

    /// Adds a key hashed by [`HashedKeys`]; returns whether it was new.
    pub fn insert_hashed(&mut self, hash: u64, bytes: &[u8]) -> bool {
        let arena = &self.arena;
        let entry = self.table.entry(
            hash,
            |&(h, o, l)| h == hash && &arena[o..o + l] == bytes,
            |&(h, _, _)| h,
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert((hash, arena.len(), bytes.len()));
                self.arena.extend_from_slice(bytes);
                true
            }
        }
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
        assert!(k.insert("a"));
        assert!(!k.insert("a"));
        assert!(k.insert("a\u{0}uDV@1"));
        assert!(k.contains("a"));
        assert!(!k.contains("b"));
        assert!(k.insert(""));
        assert!(k.contains(""));
        assert_eq!(k.len(), 3);
    }

    #[test]
    fn keys_hashed_ahead_insert_like_keys() {
        let mut ahead = HashedKeys::default();
        for k in ["a", "b", "a\u{0}uDV@1"] {
            ahead.push(k);
        }
        assert_eq!(ahead.len(), 3);
        let mut set = FileKeys::default();
        assert!(set.insert("b"));
        let inserted: Vec<bool> = (0..ahead.len())
            .map(|i| {
                let (hash, key) = ahead.get(i).unwrap();
                set.insert_hashed(hash, key)
            })
            .collect();
        assert_eq!(inserted, [true, false, true]);
        assert!(set.contains("a\u{0}uDV@1"));
        assert!(ahead.get(3).is_none());
    }

    proptest! {
        #[test]
        fn behaves_like_a_set(keys in proptest::collection::vec(".{0,12}", 0..200)) {
            let mut ours = FileKeys::default();
            let mut std = std::collections::HashSet::new();
            for key in &keys {
                prop_assert_eq!(ours.insert(key), std.insert(key.clone()));
            }
            prop_assert_eq!(ours.len(), std.len());
            for key in &keys {
                prop_assert!(ours.contains(key));
            }
        }
    }
}
