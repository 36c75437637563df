//! The dense index: keys `0..n`, each mapping to itself, fixed after loading.
//!
//! For ablations (`--index array`): a table whose keys are exactly `0..n` and never change
//! needs no search at all, the key is the record id. Since no key is ever inserted or removed,
//! phantom protection is free: the whole key space is one pseudo-leaf whose version never
//! changes ([`DENSE_LEAF`]). Its stamp is a single word shared by every scan and insert, which
//! is fine for tables that are never inserted into.

use std::sync::atomic::AtomicU64;

use super::LeafVersion;
use crate::Direction;

/// The one pseudo-leaf of a dense index, with its never-changing version.
pub const DENSE_LEAF: LeafVersion = LeafVersion { leaf: 0, version: 0 };

/// Keys `0..keys`, key = value (see the module docs).
#[derive(Debug, Default)]
pub struct DenseIndex {
    keys: u64,
    stamp: AtomicU64,
}

impl DenseIndex {
    /// The index of keys `0..keys`.
    pub fn new(keys: u64) -> Self {
        DenseIndex { keys, stamp: AtomicU64::new(0) }
    }

    /// Entries (the number of keys).
    pub fn len(&self) -> u64 {
        self.keys
    }

    /// Whether the index has no keys.
    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }

    /// `key` itself if it is below the key count, else the pseudo-leaf.
    #[inline]
    pub fn get(&self, key: u64) -> Result<u64, LeafVersion> {
        if key < self.keys { Ok(key) } else { Err(DENSE_LEAF) }
    }

    /// The pseudo-leaf.
    pub fn leaf_of(&self, _key: u64) -> LeafVersion {
        DENSE_LEAF
    }

    /// The pseudo-leaf's version (constant).
    pub fn version(&self, _leaf: u32) -> u64 {
        DENSE_LEAF.version
    }

    /// The pseudo-leaf's stamp word.
    pub fn stamp(&self, _leaf: u32) -> &AtomicU64 {
        &self.stamp
    }

    /// Visits keys in `low..=high` below the key count in `direction` until `visit` returns
    /// false; reports the pseudo-leaf once.
    pub fn scan(
        &self,
        low: u64,
        high: u64,
        direction: Direction,
        visit: &mut dyn FnMut(u64, u64) -> bool,
        leaves: &mut dyn FnMut(LeafVersion),
    ) {
        if low > high {
            return;
        }
        leaves(DENSE_LEAF);
        if self.keys == 0 || low >= self.keys {
            return;
        }
        let high = high.min(self.keys - 1);
        match direction {
            Direction::Ascending => {
                for key in low..=high {
                    if !visit(key, key) {
                        return;
                    }
                }
            }
            Direction::Descending => {
                for key in (low..=high).rev() {
                    if !visit(key, key) {
                        return;
                    }
                }
            }
        }
    }
}
