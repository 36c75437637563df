//! The layout of a B+tree node in its arena record, and its version word (optimistic lock).
//!
//! Leaves and inner nodes share one arena (one stride, [`NODE_LINES`] cache lines):
//!
//! ```text
//!   word   0        1                  2       3      4 ..              .. NODE_WORDS
//!   leaf   version  meta(level 0,count) stamp   -      keys[LEAF_KEYS_MAX]  values[LEAF_KEYS_MAX]
//!   inner  version  meta(level,count)   -       -      keys[INNER_KEYS_MAX] children[INNER_KEYS_MAX + 1]
//!
//!   meta   = level << 32 | count      (count = keys in use; an inner node has count + 1 children)
//!   inner: child i holds the keys in [keys[i-1], keys[i])   (keys[-1] = the node's low fence,
//!                                                            keys[count] = its high fence)
//! ```
//!
//! The version word (Leis et al., "The ART of Practical Synchronization", DaMoN 2016, §4):
//!
//! ```text
//!   bit 63 ........................ 2      1        0
//!       change counter                 locked   obsolete
//! ```
//!
//! A writer locks by compare-and-swap from a version it read unlocked (`v → v + 2`), so it
//! also proves nothing changed since it read; unlocking adds 2 more, which clears the lock bit
//! and carries into the counter, so every locked section leaves a strictly larger version.
//! Retiring a node unlocks it with `+3` instead, leaving the obsolete bit set; when the arena
//! recycles the node, it starts at the next multiple of 4. The version of a node id therefore
//! only ever grows, across reuse too, and an optimistic reader that saw version `v` and sees
//! `v` again knows the node was neither written, locked, retired nor recycled in between. A
//! locked or obsolete version never equals an unlocked one, since those bits differ.
//!
//! Readers load the version with acquire ordering, read words relaxed, then an acquire fence
//! and the version again (the seqlock recipe of Boehm, MSPC 2012); writers fence after taking
//! the lock and release on unlock.

use std::sync::atomic::{AtomicU64, Ordering, fence};

/// Cache lines per node, chosen by measurement with the `index_bench` example (single thread,
/// uniform random lookups; the machine was shared, so callgrind counts plus the minimum of
/// several wall-clock runs; measured before point lookups stopped computing fences, which
/// took 16 lines from 479 to 400 instructions):
///
/// ```text
///   node lines (leaf keys)     4 (14)   8 (30)   16 (62)   8+1 segmented (32, pivots in line 0)
///   200k keys, instr/lookup      636      553      479        631
///   200k keys, ns/lookup         104       94       71        107    (tree in cache)
///   10M keys,  ns/lookup         575      652      650        741    (tree in memory)
/// ```
///
/// Wider nodes mean fewer levels and fewer instructions; in memory the sizes were within
/// noise except the segmented layout (a header line of pivots so that a search touches three
/// lines per node), which saved simulated cache misses but not time, and was dropped. Since
/// then every search first touches all lines of its node ([`Node::touch_lines`]), so a node
/// not in cache costs about one miss's latency whatever its size (not re-measured for other
/// sizes).
pub const NODE_LINES: usize = 16;
/// Words per node.
pub const NODE_WORDS: usize = NODE_LINES * 8;
/// Header words before the keys.
pub const HEADER_WORDS: usize = 4;
/// Keys (and values) in a full leaf.
pub const LEAF_KEYS_MAX: usize = (NODE_WORDS - HEADER_WORDS) / 2;
/// Separator keys in a full inner node (it then has one more child).
pub const INNER_KEYS_MAX: usize = (NODE_WORDS - HEADER_WORDS - 1) / 2;

const VERSION: usize = 0;
const META: usize = 1;
const STAMP: usize = 2;
const KEYS: usize = HEADER_WORDS;
const LEAF_VALUES: usize = KEYS + LEAF_KEYS_MAX;
const INNER_CHILDREN: usize = KEYS + INNER_KEYS_MAX;

/// The lock bit of a version word.
pub const LOCKED: u64 = 0b10;
/// The obsolete bit of a version word.
pub const OBSOLETE: u64 = 0b01;

/// A node: its id in the arena and its words.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub id: u32,
    words: &'a [AtomicU64; NODE_WORDS],
}

impl<'a> Node<'a> {
    /// The node `id` whose record words are `words` (at least [`NODE_WORDS`] of them).
    #[inline]
    pub fn new(id: u32, words: &'a [AtomicU64]) -> Node<'a> {
        let words = words[..NODE_WORDS].try_into().expect("node record holds NODE_WORDS words");
        Node { id, words }
    }

    // ---- version word ----

    /// The version, if the node is neither locked nor obsolete.
    #[inline]
    pub fn read_version(self) -> Option<u64> {
        let version = self.words[VERSION].load(Ordering::Acquire);
        (version & (LOCKED | OBSOLETE) == 0).then_some(version)
    }

    /// The version word as it is now (maybe locked or obsolete).
    #[inline]
    pub fn version_now(self) -> u64 {
        self.words[VERSION].load(Ordering::Acquire)
    }

    /// Whether the node still has `version`: everything read since `read_version` returned it
    /// is a consistent snapshot.
    #[inline]
    pub fn validate(self, version: u64) -> bool {
        fence(Ordering::Acquire);
        self.words[VERSION].load(Ordering::Relaxed) == version
    }

    /// Locks the node if it still has `version` (unlocked).
    #[inline]
    pub fn try_lock(self, version: u64) -> bool {
        debug_assert_eq!(version & (LOCKED | OBSOLETE), 0);
        let locked = self.words[VERSION]
            .compare_exchange(version, version + LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if locked {
            fence(Ordering::Release);
        }
        locked
    }

    /// Unlocks the node, returning its new version.
    #[inline]
    pub fn unlock(self) -> u64 {
        let before = self.words[VERSION].fetch_add(LOCKED, Ordering::Release);
        debug_assert_eq!(before & (LOCKED | OBSOLETE), LOCKED, "unlock of a node that is not locked");
        before + LOCKED
    }

    /// Unlocks the node and marks it obsolete (it is being retired).
    pub fn unlock_obsolete(self) {
        let before = self.words[VERSION].fetch_add(LOCKED + OBSOLETE, Ordering::Release);
        debug_assert_eq!(before & (LOCKED | OBSOLETE), LOCKED, "retire of a node that is not locked");
    }

    /// Makes a fresh or recycled node an empty, unlocked node of `level`, with a version above
    /// every version it had before. Only for nodes no other thread can reach yet.
    pub fn init(self, level: u32) {
        let old = self.words[VERSION].load(Ordering::Relaxed);
        debug_assert!(old & LOCKED == 0, "init of a locked node");
        self.words[META].store(u64::from(level) << 32, Ordering::Relaxed);
        self.words[STAMP].store(0, Ordering::Relaxed);
        self.words[VERSION].store((old | (LOCKED | OBSOLETE)) + 1, Ordering::Release);
    }

    /// The version word itself.
    pub fn version_word(self) -> &'a AtomicU64 {
        &self.words[VERSION]
    }

    // ---- header ----

    /// 0 for a leaf, its height above the leaves for an inner node.
    #[inline]
    pub fn level(self) -> u32 {
        (self.words[META].load(Ordering::Relaxed) >> 32) as u32
    }

    /// Keys in the leaf, clamped to the leaf's capacity (a racing read may see anything).
    #[inline]
    pub fn leaf_count(self) -> usize {
        (self.words[META].load(Ordering::Relaxed) as u32 as usize).min(LEAF_KEYS_MAX)
    }

    /// Separator keys in the inner node, clamped to its capacity.
    #[inline]
    pub fn inner_count(self) -> usize {
        (self.words[META].load(Ordering::Relaxed) as u32 as usize).min(INNER_KEYS_MAX)
    }

    /// Sets the key count (only under the lock or before publication).
    #[inline]
    pub fn set_count(self, count: usize) {
        let level = u64::from(self.level());
        self.words[META].store(level << 32 | count as u64, Ordering::Relaxed);
    }

    /// The stamp word of a leaf (for protocols).
    #[inline]
    pub fn stamp(self) -> &'a AtomicU64 {
        &self.words[STAMP]
    }

    // ---- keys, values, children ----

    #[inline]
    pub fn key(self, index: usize) -> u64 {
        self.words[KEYS + index].load(Ordering::Relaxed)
    }

    #[inline]
    pub fn set_key(self, index: usize, key: u64) {
        self.words[KEYS + index].store(key, Ordering::Relaxed);
    }

    #[inline]
    pub fn value(self, index: usize) -> u64 {
        self.words[LEAF_VALUES + index].load(Ordering::Relaxed)
    }

    #[inline]
    pub fn set_value(self, index: usize, value: u64) {
        self.words[LEAF_VALUES + index].store(value, Ordering::Relaxed);
    }

    #[inline]
    pub fn child(self, index: usize) -> u64 {
        self.words[INNER_CHILDREN + index].load(Ordering::Relaxed)
    }

    #[inline]
    pub fn set_child(self, index: usize, child: u64) {
        self.words[INNER_CHILDREN + index].store(child, Ordering::Relaxed);
    }

    /// The first position among the first `count` keys whose key is `>= key` (leaf search).
    /// Touches every line of the node first (see [`Node::touch_lines`]).
    #[inline]
    pub fn lower_bound(self, count: usize, key: u64) -> usize {
        self.touch_lines();
        self.lower_bound_untouched(count, key)
    }

    /// The number of the first `count` keys that are `<= key`: in an inner node, the child
    /// that holds `key`. Touches every line of the node first (see [`Node::touch_lines`]).
    #[inline]
    pub fn upper_bound(self, count: usize, key: u64) -> usize {
        self.touch_lines();
        self.upper_bound_untouched(count, key)
    }

    /// [`Node::lower_bound`] without touching the node's lines first: for a node whose lines
    /// were asked for already ([`Node::prefetch`]).
    #[inline]
    pub fn lower_bound_untouched(self, count: usize, key: u64) -> usize {
        self.words[KEYS..KEYS + count].partition_point(|probe| probe.load(Ordering::Relaxed) < key)
    }

    /// [`Node::upper_bound`] without touching the node's lines first.
    #[inline]
    pub fn upper_bound_untouched(self, count: usize, key: u64) -> usize {
        self.words[KEYS..KEYS + count].partition_point(|probe| probe.load(Ordering::Relaxed) <= key)
    }

    /// Asks the CPU for the lines a search of the node reads: its header and keys, not its
    /// values or children (a hint, see [`crate::prefetch`]).
    #[inline]
    pub fn prefetch_keys(self) {
        crate::prefetch::lines(&self.words[..KEYS + LEAF_KEYS_MAX.max(INNER_KEYS_MAX)]);
    }

    /// Asks the CPU for the line holding child `index` of an inner node.
    #[inline]
    pub fn prefetch_child(self, index: usize) {
        crate::prefetch::line(&self.words[INNER_CHILDREN + index]);
    }

    /// Asks the CPU for the line holding value `index` of a leaf.
    #[inline]
    pub fn prefetch_value(self, index: usize) {
        crate::prefetch::line(&self.words[LEAF_VALUES + index]);
    }

    /// Loads one word of every cache line of the node after the first, each load independent
    /// of the others and of the search that follows. For a node that is not in cache the
    /// lines' misses then overlap (the core keeps many misses in flight) instead of following
    /// one another down a binary search, whose every probe waits for the line the previous
    /// probe chose, and the value or child the search ends at is already on its way. This is
    /// the software prefetch of the node that safe Rust cannot issue, done with plain loads:
    /// 16 lines cost about one miss's latency and 1 KiB of bandwidth. Measured with
    /// `index_bench` (10M keys, uniform lookups, interleaved runs on a loaded machine): 1589
    /// -> 966 ns per lookup; in cache (200k keys) 297 -> 189 ns. A count of keys below the
    /// search key over all keys (no binary search) was between the two, with or without the
    /// touch.
    #[inline]
    pub fn touch_lines(self) {
        let mut touched = 0;
        for line in 1..NODE_LINES {
            touched |= self.words[line * 8].load(Ordering::Relaxed);
        }
        std::hint::black_box(touched);
    }

    /// Inserts `key`, `value` at `index` in a leaf of `count` keys (locked, not full).
    pub fn leaf_insert_at(self, count: usize, index: usize, key: u64, value: u64) {
        debug_assert!(count < LEAF_KEYS_MAX && index <= count);
        for moved in (index..count).rev() {
            self.set_key(moved + 1, self.key(moved));
            self.set_value(moved + 1, self.value(moved));
        }
        self.set_key(index, key);
        self.set_value(index, value);
        self.set_count(count + 1);
    }

    /// Removes the entry at `index` of a leaf of `count` keys (locked).
    pub fn leaf_remove_at(self, count: usize, index: usize) {
        debug_assert!(index < count);
        for moved in index + 1..count {
            self.set_key(moved - 1, self.key(moved));
            self.set_value(moved - 1, self.value(moved));
        }
        self.set_count(count - 1);
    }

    /// Inserts separator `key` with `right` as the child just right of it, into an inner node
    /// (locked, not full) where `key` falls in child `index`.
    pub fn inner_insert_at(self, count: usize, index: usize, key: u64, right: u64) {
        debug_assert!(count < INNER_KEYS_MAX && index <= count);
        for moved in (index..count).rev() {
            self.set_key(moved + 1, self.key(moved));
            self.set_child(moved + 2, self.child(moved + 1));
        }
        self.set_key(index, key);
        self.set_child(index + 1, right);
        self.set_count(count + 1);
    }

    /// Removes child `index` of an inner node of `count` keys (locked, at least two children)
    /// with the separator on its left (or, for child 0, on its right), so that its range
    /// joins its left (or right) neighbour's.
    pub fn inner_remove_child(self, count: usize, index: usize) {
        debug_assert!(count >= 1 && index <= count);
        let key_index = index.saturating_sub(1);
        for moved in key_index + 1..count {
            self.set_key(moved - 1, self.key(moved));
        }
        for moved in index + 1..=count {
            self.set_child(moved - 1, self.child(moved));
        }
        self.set_count(count - 1);
    }
}
