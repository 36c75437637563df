//! The interface every concurrency-control protocol implements, and the per-worker pieces
//! they share (write buffer, history recording, backoff).
//!
//! A transaction is driven through `begin`, any number of `read`s and `write`s, then `commit`
//! or `abort`. Writes are buffered in the worker and installed by `commit`, so an aborted or
//! user-aborted attempt leaves no trace. Any call may fail with [`Abort`]: the caller must then
//! call `abort` and may retry (`begin` with `restart = true`).
//!
//! The same interface serves the benchmark driver (which runs a workload's stored procedures
//! through it) and the anomaly tests (which interleave two transactions by hand).

use ordo_harness::AbortCause;
use ordo_history::HistoryEntry;
use ordo_workload::{Key, Value};

/// Largest number of workers (history ids interleave by worker).
pub const WORKERS_MAX: usize = 256;

/// A concurrency-control abort: the attempt is void and may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abort(pub AbortCause);

impl Abort {
    pub const CONFLICT: Abort = Abort(AbortCause::Conflict);
    pub const DIE: Abort = Abort(AbortCause::Die);
}

/// A concurrency-control protocol over its own store.
pub trait Protocol: Send + Sync {
    /// Per-worker state: read and write sets, scratch buffers, recorded history.
    type Worker: Send;

    /// Whether transactions may run concurrently (`false`: one worker, no concurrency control).
    const CONCURRENT: bool = true;
    /// Whether `read` takes a `for_update` hint seriously (2PL takes the exclusive lock at once
    /// instead of upgrading a shared one).
    const UPDATE_HINTS: bool = false;

    fn name(&self) -> &'static str;

    /// State for worker `index` (< [`WORKERS_MAX`]); `record_history` keeps every commit.
    fn worker(&self, index: usize, record_history: bool) -> Self::Worker;

    /// Starts an attempt; `restart` when the previous attempt of the same transaction aborted.
    fn begin(&self, worker: &mut Self::Worker, restart: bool);

    /// Hints that `key` will be accessed soon (prefetches its record); no effect on semantics.
    #[inline]
    fn prefetch(&self, _key: Key) {}

    /// Reads `key` (and copies its payload); `for_update` when the transaction will write it.
    fn read(&self, worker: &mut Self::Worker, key: Key, for_update: bool) -> Result<Value, Abort>;

    /// Buffers a write of `value` to `key`.
    fn write(&self, worker: &mut Self::Worker, key: Key, value: Value) -> Result<(), Abort>;

    /// Validates and installs the attempt's writes; on `Err`, nothing was installed.
    fn commit(&self, worker: &mut Self::Worker) -> Result<(), Abort>;

    /// Ends the attempt without installing anything, releasing whatever it holds.
    fn abort(&self, worker: &mut Self::Worker);

    /// The history recorded so far (emptied by the caller).
    fn history(worker: &mut Self::Worker) -> &mut Vec<HistoryEntry>;

    /// The latest committed value of `key` (only meaningful when no transaction is live).
    fn committed_value(&self, key: Key) -> Value;
}

/// A 64-bit summary of a small set of keys: a bit per key's hash. A clear bit proves a key
/// absent, so a lookup scans its list only when the key, or one sharing its bit, is in it; a
/// transaction of 16 distinct keys then skips most of the scans its 16 lookups would make.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyFilter(u64);

impl KeyFilter {
    #[inline]
    fn bit(key: Key) -> u64 {
        1 << (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
    }

    /// Whether `key` may be in the set (`false`: it is not).
    #[inline]
    pub fn may_contain(self, key: Key) -> bool {
        self.0 & Self::bit(key) != 0
    }

    #[inline]
    pub fn add(&mut self, key: Key) {
        self.0 |= Self::bit(key);
    }

    #[inline]
    pub fn clear(&mut self) {
        self.0 = 0;
    }
}

/// Buffered writes of one attempt, in the order given (a key written twice keeps the last).
#[derive(Debug, Default)]
pub struct WriteSet {
    pub entries: Vec<(Key, Value)>,
    filter: KeyFilter,
}

impl WriteSet {
    #[inline]
    pub fn put(&mut self, key: Key, value: Value) {
        if self.filter.may_contain(key)
            && let Some(entry) = self.entries.iter_mut().find(|(k, _)| *k == key)
        {
            entry.1 = value;
            return;
        }
        self.filter.add(key);
        self.entries.push((key, value));
    }

    #[inline]
    pub fn get(&self, key: Key) -> Option<Value> {
        if !self.filter.may_contain(key) {
            return None;
        }
        self.entries.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }

    #[inline]
    pub fn contains(&self, key: Key) -> bool {
        self.filter.may_contain(key) && self.entries.iter().any(|(k, _)| *k == key)
    }

    /// Sorts by key: the global order in which writes are locked.
    #[inline]
    pub fn sort(&mut self) {
        self.entries.sort_unstable_by_key(|&(k, _)| k);
    }

    #[inline]
    pub fn clear(&mut self) {
        self.entries.clear();
        self.filter.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// What a worker records of its committed transactions, when asked to.
#[derive(Debug)]
pub struct Recording {
    enabled: bool,
    next_id: u64,
    reads: Vec<(u64, u64)>,
    writes: Vec<(u64, u64)>,
    pub entries: Vec<HistoryEntry>,
}

impl Recording {
    pub fn new(worker: usize, enabled: bool) -> Self {
        debug_assert!(worker < WORKERS_MAX);
        Recording { enabled, next_id: worker as u64 + 1, reads: Vec::new(), writes: Vec::new(), entries: Vec::new() }
    }

    /// The attempt read version `version` of `key`.
    #[inline]
    pub fn read(&mut self, key: Key, version: u64) {
        if self.enabled {
            self.reads.push((key, version));
        }
    }

    /// The attempt installed version `version` of `key`.
    #[inline]
    pub fn write(&mut self, key: Key, version: u64) {
        if self.enabled {
            self.writes.push((key, version));
        }
    }

    /// The attempt committed (with commit timestamp `ts`, if the protocol has one that orders
    /// it serially).
    #[inline]
    pub fn commit(&mut self, ts: Option<u64>) {
        if self.enabled {
            let mut entry = HistoryEntry::new(self.next_id, self.reads.clone(), self.writes.clone());
            entry.ts = ts;
            self.entries.push(entry);
            self.next_id += WORKERS_MAX as u64;
        }
        self.clear();
    }

    /// Forgets the current attempt.
    #[inline]
    pub fn clear(&mut self) {
        if self.enabled {
            self.reads.clear();
            self.writes.clear();
        }
    }
}

/// Spins for a while, politely: yields the core after a bounded number of spins so a
/// descheduled lock holder can run (never more busy threads than workers).
#[derive(Debug, Default)]
pub struct Spin {
    count: u32,
}

/// Spins between yields.
const SPINS_PER_YIELD: u32 = 4096;

impl Spin {
    #[inline]
    pub fn wait(&mut self) {
        crate::interleave::point();
        self.count += 1;
        if self.count.is_multiple_of(SPINS_PER_YIELD) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}
