//! The interface every concurrency-control protocol implements, and the per-worker pieces
//! they share (write buffer, history recording, backoff).
//!
//! A transaction is driven through `begin`, any number of `read`s and `write`s, then `commit`
//! or `abort`. Writes are buffered in the worker and installed by `commit`, so an aborted or
//! user-aborted attempt leaves no trace. Any call may fail with [`Abort`]: the caller must then
//! call `abort` and may retry (`begin` with `restart = true`).
//!
//! A one-shot transaction (every request known before it runs, [`Requests`]) may instead be
//! handed over whole, `begin` then `run_requests`: by default a read and a write per request,
//! then `commit`.
//!
//! The same interface serves the benchmark driver (which runs a workload's stored procedures
//! through it) and the anomaly tests (which interleave two transactions by hand).

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::utils::CachePadded;
use ordo_harness::AbortCause;
use ordo_history::HistoryEntry;
use ordo_workload::{Key, KeyFilter, Requests, Value, WorkloadRng};
use rand::Rng;

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

    /// Runs a one-shot transaction, from a fresh attempt (`begin` called) through its commit,
    /// request by request: a request's read (with the update hint when it writes), then its
    /// write, then the next request; then `commit`. That is an order a stored procedure
    /// could ask for, so every protocol runs it correctly as it is; a protocol may override it
    /// with a shorter way that uses what [`Requests`] promises (distinct keys, every access
    /// known at the start). On `Err` the caller calls `abort`, as after any other call.
    #[inline]
    fn run_requests(&self, worker: &mut Self::Worker, requests: Requests<'_>) -> Result<(), Abort> {
        for (i, &key) in requests.keys.iter().enumerate() {
            if let Some(&next) = requests.keys.get(i + 1) {
                self.prefetch(next);
            }
            let read =
                if requests.reads(i) { self.read(worker, key, Self::UPDATE_HINTS && requests.writes(i))? } else { 0 };
            if requests.writes(i) {
                self.write(worker, key, requests.written_value(i, read))?;
            }
        }
        self.commit(worker)
    }

    /// Validates and installs the attempt's writes; on `Err`, nothing was installed.
    fn commit(&self, worker: &mut Self::Worker) -> Result<(), Abort>;

    /// Ends the attempt without installing anything, releasing whatever it holds.
    fn abort(&self, worker: &mut Self::Worker);

    /// The history recorded so far (emptied by the caller).
    fn history(worker: &mut Self::Worker) -> &mut Vec<HistoryEntry>;

    /// The latest committed value of `key` (only meaningful when no transaction is live).
    fn committed_value(&self, key: Key) -> Value;
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

    /// Buffers a write of a key the set does not hold yet (a one-shot transaction's keys are
    /// distinct), without looking for it.
    #[inline]
    pub fn push_new(&mut self, key: Key, value: Value) {
        debug_assert!(!self.contains(key), "key {key} is already in the write set");
        self.filter.add(key);
        self.entries.push((key, value));
    }

    #[inline]
    pub fn get(&self, key: Key) -> Option<Value> {
        if self.entries.is_empty() || !self.filter.may_contain(key) {
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

    /// Whether this worker records its history.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled
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
            self.record_commit(ts);
        }
    }

    /// [`Self::commit`] when recording, out of line: left for the compiler to place, the whole
    /// of it became a call on every commit, recording or not (17 instructions of a ycsb
    /// transaction, callgrind).
    #[inline(never)]
    fn record_commit(&mut self, ts: Option<u64>) {
        let mut entry = HistoryEntry::new(self.next_id, self.reads.clone(), self.writes.clone());
        entry.ts = ts;
        self.entries.push(entry);
        self.next_id += WORKERS_MAX as u64;
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

/// Timestamps a worker takes in one grab from [`TimestampClock`].
const TIMESTAMP_BLOCK: u64 = 64;

/// Wait-die's timestamp source, handing out blocks of 64 timestamps so that workers
/// touch the shared counter once per 64 transactions instead of on every one (on its own cache
/// line, so nothing else a worker reads moves with it).
///
/// Blocks go out in increasing order, so a timestamp is smaller than every timestamp of every
/// block taken after its own: a transaction that keeps its timestamp across restarts has
/// finitely many older ones, and once they are done it is the oldest and cannot die. Two
/// workers' transactions are ordered by block rather than by start time, which wait-die does
/// not need (any fixed total order keeps it deadlock-free).
#[derive(Debug)]
pub struct TimestampClock {
    next: CachePadded<AtomicU64>,
}

/// A worker's current block of timestamps: `next..end`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TimestampBlock {
    next: u64,
    end: u64,
}

impl Default for TimestampClock {
    fn default() -> Self {
        TimestampClock { next: CachePadded::new(AtomicU64::new(1)) }
    }
}

impl TimestampClock {
    /// The next timestamp of `block`, taking a new block when it is used up (never 0).
    #[inline]
    pub fn take(&self, block: &mut TimestampBlock) -> u64 {
        if block.next == block.end {
            block.next = self.next.fetch_add(TIMESTAMP_BLOCK, Ordering::Relaxed);
            block.end = block.next + TIMESTAMP_BLOCK;
        }
        block.next += 1;
        block.next - 1
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

/// Backoff after the n-th abort of a transaction spins up to `2^min(n, BACKOFF_SHIFT_MAX)` times.
const BACKOFF_SHIFT_MAX: u32 = 10;

/// Waits between a transaction's `restarts`-th aborted attempt and its next: a random number
/// of spins below `2^min(restarts, 10)`, so the first retries go almost at once and a long run
/// of aborts (a lock holder that lost its core) spreads its retries out. Both thread engines'
/// drivers call it.
///
/// A spin (`pause`) takes 27.6 ns on the AMD EPYC host. Starting at `2^(n + 4)` instead, the
/// first retry waited about 440 ns on average, most of a contended transaction's time: with
/// `2^n` (2026-12-03, 16 interleaved rounds, ycsb 10M records, 16 ops, θ = 0.99, two threads,
/// `--index array`) no-wait ran 1.16x, Silo 1.04x, TicToc 1.05x and wait-die 1.02x (medians of
/// the per-round ratios), and on the tables with four threads on the two cores (1M records)
/// no-wait 1.24x and Silo 1.10x. The cells without aborts do not reach this code.
#[inline]
pub fn back_off(restarts: u32, rng: &mut WorkloadRng) {
    let spins = rng.random_range(0..1u32 << restarts.min(BACKOFF_SHIFT_MAX));
    (0..spins).for_each(|_| std::hint::spin_loop());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_blocks_are_disjoint_increasing_and_never_zero() {
        let clock = TimestampClock::default();
        let (mut a, mut b) = (TimestampBlock::default(), TimestampBlock::default());
        let first_a: Vec<u64> = (0..TIMESTAMP_BLOCK).map(|_| clock.take(&mut a)).collect();
        let first_b = clock.take(&mut b);
        assert!(first_a.windows(2).all(|w| w[0] + 1 == w[1]) && first_a[0] > 0);
        // b's block came after a's: every one of a's is older.
        assert!(first_a.iter().all(|&ts| ts < first_b));
        // a's next block comes after b's.
        let next_a = clock.take(&mut a);
        assert!(next_a > first_b + TIMESTAMP_BLOCK - 1);
    }

    #[test]
    fn key_filters_never_deny_a_key_they_hold() {
        let mut filter = KeyFilter::default();
        let keys: Vec<u64> = (0..40).map(|i| i * 7919).collect();
        for &key in &keys {
            filter.add(key);
        }
        assert!(keys.iter().all(|&key| filter.may_contain(key)));
        filter.clear();
        assert!(keys.iter().all(|&key| !filter.may_contain(key)));
        let mut writes = WriteSet::default();
        for &key in &keys {
            writes.put(key, key as Value);
            writes.put(key, key as Value + 1);
        }
        assert_eq!(writes.entries.len(), keys.len());
        assert!(keys.iter().all(|&key| writes.get(key) == Some(key as Value + 1)));
    }
}
