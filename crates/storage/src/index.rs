//! Indexes: from a `u64` key to a `u64` value (a record id), with what concurrency control
//! needs to protect ranges from phantoms.
//!
//! * [`OrderedIndex`]: a concurrent B+tree with optimistic lock coupling (inserts, removes,
//!   scans in both directions), whose leaves carry versions and stamps (see [`ordered`]).
//! * [`DenseIndex`]: keys `0..n` mapping to themselves, fixed after loading (ablations).
//! * [`PrimaryIndex`]: either of them behind one set of methods, so engines can switch with
//!   `--index tree|array`.
//!
//! Node-set validation (Silo §4.6): a transaction records the [`LeafVersion`]s its reads and
//! scans reported and, at commit, checks each leaf's [`OrderedIndex::version`] still equals the
//! recorded version; an insert or remove in a recorded leaf's range since then fails the check.

pub mod dense;
pub mod node;
pub mod ordered;

use std::sync::atomic::AtomicU64;

pub use dense::{DENSE_LEAF, DenseIndex};
pub use ordered::{LoadError, OrderedIndex, TreeShape};

use crate::Direction;

/// A leaf of an index and a version of it: what a transaction records for node-set
/// validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeafVersion {
    pub leaf: u32,
    pub version: u64,
}

/// What an insert did to its leaf: the version of the leaf the entry went into just before it
/// went in, and just after (`after.version` is `before.version` plus one lock cycle, since
/// nothing else can change a locked leaf). A transaction that had recorded `before` in its
/// node set may replace it by `after`: its own insert is not a phantom to it. `split` says the
/// insert first split a node on its way (then `before` is the version after the split);
/// node-set entries recorded for the split leaf before that are stale, and a transaction that
/// holds one fails its validation, as Silo's does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inserted {
    pub before: LeafVersion,
    pub after: LeafVersion,
    pub split: bool,
}

/// An insert into a [`PrimaryIndex`] that did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InsertError {
    /// The key is present, with this value.
    #[error("key present with value {value}")]
    Present { value: u64 },
    /// A dense index's keys are fixed.
    #[error("a dense index takes no inserts")]
    Fixed,
}

/// The primary index of a table: an ordered tree or, for ablations, a dense array.
// One per table, so the tree's inline directory is not worth a box (and its indirection).
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum PrimaryIndex {
    Ordered(OrderedIndex),
    Dense(DenseIndex),
}

impl PrimaryIndex {
    /// See [`OrderedIndex::get`].
    #[inline]
    pub fn get(&self, key: u64) -> Result<u64, LeafVersion> {
        match self {
            PrimaryIndex::Ordered(index) => index.get(key),
            PrimaryIndex::Dense(index) => index.get(key),
        }
    }

    /// See [`OrderedIndex::prefetch`]; a dense index has nothing to load and reports each key
    /// it holds at once.
    #[inline]
    pub fn prefetch(&self, keys: &[u64], mut found: impl FnMut(usize, u64)) {
        match self {
            PrimaryIndex::Ordered(index) => index.prefetch(keys, found),
            PrimaryIndex::Dense(index) => {
                for (i, &key) in keys.iter().enumerate() {
                    if let Ok(value) = index.get(key) {
                        found(i, value);
                    }
                }
            }
        }
    }

    /// See [`OrderedIndex::insert`]; a dense index refuses every insert.
    pub fn insert(&self, key: u64, value: u64) -> Result<Inserted, InsertError> {
        match self {
            PrimaryIndex::Ordered(index) => index.insert(key, value).map_err(|value| InsertError::Present { value }),
            PrimaryIndex::Dense(index) => match index.get(key) {
                Ok(value) => Err(InsertError::Present { value }),
                Err(_) => Err(InsertError::Fixed),
            },
        }
    }

    /// See [`OrderedIndex::remove`]; a dense index removes nothing (returns false).
    pub fn remove(&self, key: u64, value: u64) -> bool {
        match self {
            PrimaryIndex::Ordered(index) => index.remove(key, value),
            PrimaryIndex::Dense(_) => false,
        }
    }

    /// See [`OrderedIndex::scan`].
    pub fn scan(
        &self,
        low: u64,
        high: u64,
        direction: Direction,
        visit: &mut dyn FnMut(u64, u64) -> bool,
        leaves: &mut dyn FnMut(LeafVersion),
    ) {
        match self {
            PrimaryIndex::Ordered(index) => index.scan(low, high, direction, visit, leaves),
            PrimaryIndex::Dense(index) => index.scan(low, high, direction, visit, leaves),
        }
    }

    /// See [`OrderedIndex::version`].
    #[inline]
    pub fn version(&self, leaf: u32) -> u64 {
        match self {
            PrimaryIndex::Ordered(index) => index.version(leaf),
            PrimaryIndex::Dense(index) => index.version(leaf),
        }
    }

    /// See [`OrderedIndex::stamp`].
    pub fn stamp(&self, leaf: u32) -> &AtomicU64 {
        match self {
            PrimaryIndex::Ordered(index) => index.stamp(leaf),
            PrimaryIndex::Dense(index) => index.stamp(leaf),
        }
    }

    /// See [`OrderedIndex::leaf_of`].
    pub fn leaf_of(&self, key: u64) -> LeafVersion {
        match self {
            PrimaryIndex::Ordered(index) => index.leaf_of(key),
            PrimaryIndex::Dense(index) => index.leaf_of(key),
        }
    }

    /// See [`OrderedIndex::len`].
    pub fn len(&self) -> u64 {
        match self {
            PrimaryIndex::Ordered(index) => index.len(),
            PrimaryIndex::Dense(index) => index.len(),
        }
    }

    /// Whether the index has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
