//! Which shard of a sharded structure the current thread uses.
//!
//! Free lists of the record arenas and the entry counters of the index are split into
//! [`SHARDS`] cache-line-padded parts so that threads do not contend on one line. Each thread
//! gets a slot number once (the order in which threads first ask), and uses shard
//! `slot % SHARDS`; up to `SHARDS` threads therefore never share a shard.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

/// Number of shards of each sharded structure (free lists, counters).
pub const SHARDS: usize = 16;

static NEXT_THREAD_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The shard of the calling thread, in `0..SHARDS`.
#[inline]
pub fn thread_shard() -> usize {
    THREAD_SHARD.with(|shard| {
        let current = shard.get();
        if current != usize::MAX {
            return current;
        }
        let assigned = NEXT_THREAD_SLOT.fetch_add(1, Ordering::Relaxed) % SHARDS;
        shard.set(assigned);
        assigned
    })
}

/// A signed counter split over [`SHARDS`] cache lines: each thread adds to its own shard, a
/// reader sums them (exact when no thread is adding).
#[derive(Debug, Default)]
pub struct ShardedCounter {
    shards: [CachePadded<AtomicI64>; SHARDS],
}

impl ShardedCounter {
    /// Adds `delta` on the calling thread's shard.
    #[inline]
    pub fn add(&self, delta: i64) {
        self.shards[thread_shard()].fetch_add(delta, Ordering::Relaxed);
    }

    /// Sets the total to `value` (no other thread may be adding).
    pub fn reset(&self, value: i64) {
        for (index, shard) in self.shards.iter().enumerate() {
            shard.store(if index == 0 { value } else { 0 }, Ordering::Relaxed);
        }
    }

    /// The sum over all shards.
    pub fn sum(&self) -> i64 {
        self.shards.iter().map(|shard| shard.load(Ordering::Relaxed)).sum()
    }
}
