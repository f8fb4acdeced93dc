//! A set of logical-file keys ("Action Reconciliation": `(path, deletionVector.uniqueId)`).
//!
//! Replay inserts one key per file action, a million or more for a large log, so the set stores
//! every key's bytes in one arena and only `(offset, length)` pairs in the hash table: no
//! allocation per key, and a fast non-cryptographic hash with a random seed.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

/// A set of keys.
#[derive(Debug, Default, Clone)]
pub struct FileKeys {
    arena: Vec<u8>,
    table: HashTable<(usize, usize)>,
    hasher: RandomState,
}

impl FileKeys {
    /// Whether `key` is in the set.
    pub fn contains(&self, key: &str) -> bool {
        let hash = self.hasher.hash_one(key.as_bytes());
        self.table
            .find(hash, |&(o, l)| &self.arena[o..o + l] == key.as_bytes())
            .is_some()
    }

    /// Adds `key`; returns whether it was new.
    pub fn insert(&mut self, key: &str) -> bool {
        let bytes = key.as_bytes();
        let hash = self.hasher.hash_one(bytes);
        if self
            .table
            .find(hash, |&(o, l)| &self.arena[o..o + l] == bytes)
            .is_some()
        {
            return false;
        }
        let offset = self.arena.len();
        self.arena.extend_from_slice(bytes);
        let (arena, hasher, table) = (&self.arena, &self.hasher, &mut self.table);
        table.insert_unique(hash, (offset, bytes.len()), |&(o, l)| {
            hasher.hash_one(&arena[o..o + l])
        });
        true
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
