//! TicToc (Yu et al., SIGMOD 2016) over tables: optimistic concurrency control whose commit
//! timestamps come from the data. Every record carries the interval `[wts, rts]` in which its
//! current state (a row, or an absence) is known valid; a transaction picks the smallest
//! timestamp its observations allow instead of taking one from a global counter.
//!
//! ```text
//!   meta:  [ lock:1 | dead:1 | delta:14 | wts:48 ]      rts = wts + delta
//!   seq:   [ absent:1 | version:63 ]                      version = the writer's history stamp
//!   stamp: [ commit_ts:39 | depth:4 | worker:8 | sequence:12 ]
//!
//!   get / scan   seqlock copy of (meta, seq, row); read set += (record, wts, rts, version).
//!                No record: node set += (leaf, version), as in Silo. Scans: every leaf
//!                reported -> node set, every record passed (absent too) -> read set
//!   insert       no record: an absent placeholder [wts = rts = retired + 1] enters the index
//!                at once (own node-set entry moves from Inserted.before to .after)
//!   commit    1. lock the write set in (table, key) order; check dead / present / absent
//!             2. epoch = global epoch (after a fence)
//!             3. ts = max( last ts of this worker,  writes: rts + 1,  reads: wts,
//!                          inserts: stamp(leaf_of(k)) + 1,  node-set tables: retired + 1 )
//!             4. node set: stamp(leaf) = max(stamp, ts), fence, then every leaf version must
//!                be unchanged
//!             5. reads with rts < ts: wts unchanged and not locked by another, else abort;
//!                extend rts to ts (CAS)
//!             6. install rows, seq words at the history stamp, meta [ts, ts] (unlocks)
//! ```
//!
//! ## Phantom protection: node-set validation plus leaf read stamps
//! A scan or an absent get records the leaves it read, as Silo does, so an insert into its
//! range before it commits fails its validation. That alone is not enough with data-driven
//! timestamps: an insert that commits *after* the scanner validated could still choose a
//! timestamp below the scanner's, and be ordered before a scan that did not see it (a cycle).
//! So at commit a scanner first raises `stamp(leaf)` to its commit timestamp, then checks the
//! leaf version; an inserter's timestamp is above `stamp(leaf_of(k))`, read at commit, after
//! its own physical insert. Either the scanner's version check comes after the insert (and
//! fails), or its stamp comes before the inserter reads it (and the inserter is later).
//! Placeholders already in a scanned range are records like any other: the scan read them
//! absent and extends their `rts`, so the insert that fills one commits above it.
//!
//! A key whose record was reclaimed has no record at all, and its absence is as old as the
//! delete that left the tombstone: a transaction that saw a leaf (an absent get, a scan)
//! commits above the table's `retired_version_max`, and a new placeholder starts there, so no
//! absence is ever ordered before the delete that made it.
//!
//! ## Worked timeline (a scan racing an insert into its range)
//! ```text
//!   T1: scan items 30..=50 (leaf L, version 7), put other[0]
//!   T2:                      insert 35: placeholder into L (L -> version 8)
//!   T2:                      commit: ts2 = stamp(L) + 1 = 1, install, unlock
//!   T1: commit: ts1 = 1; stamp(L) = 1; L is at version 8, not 7: abort, retry, sees 35
//!
//!   or, T1 validating first:
//!   T1: commit: ts1 = 1; stamp(L) = 1; L still at 7: commit at 1
//!   T2:                      insert 35 (L -> 8); commit: ts2 = stamp(L) + 1 = 2 > ts1
//! ```
//! Either way the history has T1 before T2 with T2's 35 unseen by T1, or T2 first and seen.
//!
//! ## History stamps: the commit timestamp made distinct
//! TicToc's timestamps order transactions serially but are shared: a reader commits at the
//! `wts` of what it read, the writer's own timestamp. Histories carry a distinct stamp that
//! refines it: `commit_ts` first; then `depth`, one more than the deepest version read that
//! was written at the same `commit_ts` (so a writer comes before the readers of its
//! versions, the only order among transactions sharing a timestamp: overwriting something
//! read, or inserting into something scanned, takes a strictly larger one); then the worker
//! and a per-worker sequence. A worker's `commit_ts` never decreases, so its sequence keeps
//! its stamps apart; a depth or sequence that would overflow moves the commit to `ts + 1`.
//! Versions are these stamps, so `ordo check --timestamps` verifies that the timestamp
//! order is a valid serial order.
//!
//! When `ts - wts` does not fit the 14-bit delta, the extension also raises `wts` (as the
//! paper does): the state stays valid up to `ts`, and concurrent readers that saw the old
//! `wts` fail validation, which is safe. Reclamation and inconsistent views are Silo's (see
//! [`super::silo`]), with TicToc's lock and dead bits.

use std::sync::atomic::{Ordering, fence};

use ordo_harness::AbortCause;
use ordo_history::HistoryEntry;
use ordo_storage::epoch::{Guard, pin};
use ordo_storage::{Direction, TableId};
use ordo_workload::{Aborted, TableWorkload, Tx};

use super::database::{Database, Index, LoadError, META_WORD, SEQ_WORD, Table, VERSION_MASK};
use super::epoch::Epochs;
use super::optimistic::{MetaWord, Sets, lock_live_record};
use super::protocol::{Committed, TableProtocol, WorkerOptions};
use super::reclaim::Claim;
use super::scan::Range;
use super::silo::TABLE_WORKERS_MAX;
use super::trace::Trace;
use super::writes::{WriteKind, install};
use crate::config::ProtocolKind;
use crate::interleave;

const LOCK: u64 = 1 << 63;
const DEAD: u64 = 1 << 62;
const DELTA_SHIFT: u32 = 48;
const DELTA_MAX: u64 = (1 << 14) - 1;
const WTS_MASK: u64 = (1 << DELTA_SHIFT) - 1;
/// The bits of a meta word that change when its record's state changes (a read that sees
/// only `rts` move in between still copied one state).
const STATE_BITS: u64 = LOCK | DEAD | WTS_MASK;

/// History stamp layout, low to high: sequence, worker, depth, commit timestamp.
const SEQUENCE_BITS: u32 = 12;
const WORKER_BITS: u32 = 8;
const DEPTH_BITS: u32 = 4;
const STAMP_LOW_BITS: u32 = SEQUENCE_BITS + WORKER_BITS + DEPTH_BITS;
const SEQUENCE_MAX: u64 = (1 << SEQUENCE_BITS) - 1;
const DEPTH_MAX: u64 = (1 << DEPTH_BITS) - 1;
/// Largest commit timestamp: a stamp must fit a version (63 bits), a `wts` its 48.
pub const COMMIT_TS_MAX: u64 = (1 << (63 - STAMP_LOW_BITS)) - 1;

const _: () = assert!(TABLE_WORKERS_MAX <= 1 << WORKER_BITS);

#[inline]
fn wts(meta: u64) -> u64 {
    meta & WTS_MASK
}

#[inline]
fn rts(meta: u64) -> u64 {
    wts(meta) + ((meta >> DELTA_SHIFT) & DELTA_MAX)
}

/// The unlocked, live meta word of `[wts, rts]`, raising `wts` if the delta does not fit.
#[inline]
fn pack(wts: u64, rts: u64) -> u64 {
    debug_assert!(rts >= wts && rts <= COMMIT_TS_MAX);
    let wts = wts.max(rts.saturating_sub(DELTA_MAX));
    ((rts - wts) << DELTA_SHIFT) | wts
}

/// The commit timestamp of a history stamp (a version).
#[inline]
fn stamp_ts(version: u64) -> u64 {
    version >> STAMP_LOW_BITS
}

/// The depth of a history stamp.
#[inline]
fn stamp_depth(version: u64) -> u64 {
    (version >> (SEQUENCE_BITS + WORKER_BITS)) & DEPTH_MAX
}

#[inline]
fn stamp(commit_ts: u64, depth: u64, worker: u64, sequence: u64) -> u64 {
    (commit_ts << STAMP_LOW_BITS) | (depth << (SEQUENCE_BITS + WORKER_BITS)) | (worker << SEQUENCE_BITS) | sequence
}

/// TicToc over a [`Database`].
#[derive(Debug)]
pub struct TicTocTables {
    db: Database,
}

/// TicToc's meta word, for the optimistic kit.
struct Interval;

impl MetaWord for Interval {
    const LOCK: u64 = LOCK;
    const DEAD: u64 = DEAD;
    const YIELD_ON_ACCESS: bool = true;

    /// Only `rts` may have grown in between: the same state, valid for longer.
    fn same_state(before: u64, after: u64) -> bool {
        after & STATE_BITS == before & STATE_BITS
    }

    /// The key's absence is no older than the last delete reclaimed in its table.
    fn placeholder_meta(table: &Table) -> u64 {
        let since = stamp_ts(table.retired_version_max.load(Ordering::Acquire)) + 1;
        pack(since, since)
    }
}

/// A worker's state, reused by every attempt.
#[derive(Debug)]
pub struct TicTocWorker {
    index: u64,
    sets: Sets,
    /// The commit timestamp and sequence of this worker's last commit.
    last_ts: u64,
    last_sequence: u64,
}

impl TicTocWorker {
    /// The history recorded so far.
    pub fn history(&mut self) -> &mut Vec<HistoryEntry> {
        self.sets.trace.entries()
    }
}

impl TicTocTables {
    /// Loads `workload` into a new database (see [`Database::load`]) with epoch clock
    /// `epochs`; every record starts valid over `[0, 0]`.
    pub fn load(
        workload: &dyn TableWorkload,
        index: Index,
        load_threads: usize,
        epochs: Epochs,
    ) -> Result<Self, LoadError> {
        debug_assert_eq!(pack(0, 0), Self::INITIAL_META);
        Ok(TicTocTables { db: Database::load(workload, index, load_threads, Self::INITIAL_META, epochs)? })
    }

    /// Reclaims every candidate of `worker` whatever its epoch (for tests and shutdown).
    pub fn reclaim_all(&self, worker: &mut TicTocWorker) {
        let guard = pin();
        self.reclaim(worker, &guard, true);
    }

    fn reclaim(&self, worker: &mut TicTocWorker, guard: &Guard, everything: bool) {
        worker.sets.reclaimer.reclaim(
            &self.db,
            guard,
            everything,
            |words| lock_live_record::<Interval>(words).map_or(Claim::Dead, Claim::Locked),
            |words, meta, dead| words[META_WORD].store(if dead { meta | DEAD } else { meta }, Ordering::Release),
        );
    }
}

impl TableProtocol for TicTocTables {
    type Worker = TicTocWorker;
    type Attempt<'a> = TicTocTx<'a>;

    // `pack(0, 0)`: wts = rts = 0, unlocked.
    const INITIAL_META: u64 = 0;

    fn over(db: Database, _kind: ProtocolKind) -> Self {
        TicTocTables { db }
    }

    /// Valid from the recovered version's commit timestamp on: later writes commit above it,
    /// so versions keep growing across a restart.
    fn recovered_meta(version: u64) -> u64 {
        let ts = stamp_ts(version);
        pack(ts, ts)
    }

    fn kind(&self) -> ProtocolKind {
        ProtocolKind::TicToc
    }

    fn database(&self) -> &Database {
        &self.db
    }

    fn worker(&self, options: WorkerOptions) -> TicTocWorker {
        assert!(options.workers <= TABLE_WORKERS_MAX, "{} workers, at most {TABLE_WORKERS_MAX}", options.workers);
        TicTocWorker {
            index: options.index as u64,
            sets: Sets::new(Trace::new(options.index, options.workers, options.record_history)),
            last_ts: 0,
            last_sequence: 0,
        }
    }

    fn begin<'a>(&'a self, worker: &'a mut TicTocWorker, _restart: bool) -> TicTocTx<'a> {
        worker.sets.clear();
        let guard = pin();
        self.reclaim(worker, &guard, false);
        TicTocTx { tictoc: self, worker, guard, done: false }
    }

    fn commit(mut attempt: TicTocTx<'_>) -> Result<Committed, AbortCause> {
        attempt.done = true;
        let result = attempt.try_commit();
        if result.is_err() {
            attempt.release();
        }
        result.map_err(|Aborted| AbortCause::Conflict)
    }

    fn abort(mut attempt: TicTocTx<'_>) -> AbortCause {
        attempt.done = true;
        attempt.release();
        AbortCause::Conflict
    }

    fn trace(worker: &mut TicTocWorker) -> &mut Trace {
        &mut worker.sets.trace
    }

    fn quiesce(&self, worker: &mut TicTocWorker) {
        self.reclaim_all(worker);
    }
}

/// One attempt of a transaction on [`TicTocTables`].
pub struct TicTocTx<'a> {
    tictoc: &'a TicTocTables,
    worker: &'a mut TicTocWorker,
    guard: Guard,
    done: bool,
}

impl std::fmt::Debug for TicTocTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicTocTx")
            .field("writes", &self.worker.sets.writes.entries.len())
            .field("reads", &self.worker.sets.reads.len())
            .finish()
    }
}

impl TicTocTx<'_> {
    /// Unlocks what commit locked and hands this attempt's placeholders to reclamation.
    fn release(&mut self) {
        self.worker.sets.release(&self.tictoc.db, self.tictoc.db.epoch());
    }

    fn try_commit(&mut self) -> Result<Committed, Aborted> {
        let db = &self.tictoc.db;
        let TicTocWorker { index: worker_index, sets: worker, last_ts, last_sequence } = &mut *self.worker;
        interleave::point();
        // 1. Lock the write set.
        worker.lock_writes::<Interval>(db, false)?;
        // 2. The serialization point.
        fence(Ordering::SeqCst);
        let epoch = db.epoch();
        interleave::point();
        // 3. The commit timestamp.
        let mut ts = *last_ts;
        for write in &worker.writes.entries {
            ts = ts.max(rts(write.locked_meta) + 1);
            if write.kind == WriteKind::Insert {
                let index = &db.table(write.table).index;
                ts = ts.max(index.stamp(index.leaf_of(write.key).leaf).load(Ordering::SeqCst) + 1);
            }
        }
        for read in &worker.reads {
            ts = ts.max(wts(read.meta));
        }
        let mut last_table = None;
        for &(table, _) in &worker.nodes {
            if last_table != Some(table) {
                last_table = Some(table);
                let retired = db.table(table).retired_version_max.load(Ordering::Acquire);
                ts = ts.max(stamp_ts(retired) + 1);
            }
        }
        let mut depth = 0;
        for read in &worker.reads {
            if read.version != 0 && stamp_ts(read.version) == ts {
                depth = depth.max(stamp_depth(read.version) + 1);
            }
        }
        if depth > DEPTH_MAX {
            ts += 1;
            depth = 0;
        }
        let mut sequence = if ts == *last_ts { *last_sequence + 1 } else { 0 };
        if sequence > SEQUENCE_MAX {
            ts += 1;
            depth = 0;
            sequence = 0;
        }
        assert!(ts <= COMMIT_TS_MAX, "TicToc commit timestamp {ts} exceeds {COMMIT_TS_MAX}");
        let version = stamp(ts, depth, *worker_index, sequence);
        // 4. Leaf stamps, then node-set validation.
        for &(table, leaf) in &worker.nodes {
            db.table(table).index.stamp(leaf.leaf).fetch_max(ts, Ordering::SeqCst);
        }
        fence(Ordering::SeqCst);
        for &(table, leaf) in &worker.nodes {
            if db.table(table).index.version(leaf.leaf) != leaf.version {
                return Err(Aborted);
            }
        }
        interleave::point();
        // 5. Read validation and rts extension.
        for read in &worker.reads {
            if rts(read.meta) >= ts {
                continue;
            }
            let word = &db.table(read.table).record(read.rid)[META_WORD];
            let mut current = word.load(Ordering::Acquire);
            loop {
                if wts(current) != wts(read.meta) || current & DEAD != 0 {
                    return Err(Aborted);
                }
                if current & LOCK != 0 {
                    let mine = worker.writes.find_sorted(read.table, read.key).is_some_and(|w| w.rid == read.rid);
                    if mine {
                        break;
                    }
                    return Err(Aborted);
                }
                if rts(current) >= ts {
                    break;
                }
                match word.compare_exchange_weak(current, pack(wts(current), ts), Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => break,
                    Err(actual) => current = actual,
                }
            }
        }
        interleave::point();
        // 6. Install.
        for write in &worker.writes.entries {
            let table = db.table(write.table);
            let words = table.record(write.rid);
            if write.kind == WriteKind::InsertDelete {
                // Absent before and after: nothing installed; the absence holds up to ts.
                words[META_WORD].store(pack(wts(write.locked_meta), ts), Ordering::Release);
                continue;
            }
            debug_assert!(version > words[SEQ_WORD].load(Ordering::Relaxed) & VERSION_MASK, "versions grow");
            let seq = install(table, words, write, &worker.writes.rows, version);
            if !write.kind.present_after() {
                worker.reclaimer.left_absent(write.table, write.key, write.rid, seq, epoch);
            }
            words[META_WORD].store(pack(ts, ts), Ordering::Release);
            let row = &worker.writes.rows[write.row_at..write.row_at + table.row_words];
            worker.trace.installed(write.table, write.kind.effect(), write.key, version, row);
        }
        worker.locked = 0;
        *last_ts = ts;
        *last_sequence = sequence;
        worker.trace.committed(Some(version));
        worker.reclaimer.settle_created(db, epoch);
        worker.clear();
        Ok(Committed { epoch })
    }
}

impl Drop for TicTocTx<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.release();
        }
    }
}

impl Tx for TicTocTx<'_> {
    #[inline]
    fn prefetch(&mut self, table: TableId, keys: &[u64]) {
        self.worker.sets.prefetch(&self.tictoc.db, table, keys);
    }

    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], _for_update: bool) -> Result<bool, Aborted> {
        Ok(self.worker.sets.get::<Interval>(&self.tictoc.db, table, key, row))
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        Ok(self.worker.sets.put::<Interval>(&self.tictoc.db, table, key, row))
    }

    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        self.worker.sets.insert::<Interval>(&self.tictoc.db, &self.guard, table, key, row)
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        self.worker.sets.delete::<Interval>(&self.tictoc.db, table, key)
    }

    fn scan(
        &mut self,
        table: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted> {
        Ok(self.worker.sets.scan::<Interval>(&self.tictoc.db, Range { table, low, high, direction, limit }, visit))
    }
}

#[cfg(test)]
mod tests {
    use super::super::database::ABSENT;
    use super::*;

    #[test]
    fn meta_words_and_history_stamps_round_trip() {
        let meta = pack(5, 9);
        assert_eq!((wts(meta), rts(meta)), (5, 9));
        let far = pack(1, 1 + DELTA_MAX + 10);
        assert_eq!(rts(far), 1 + DELTA_MAX + 10);
        assert_eq!(wts(far), 11, "a delta that does not fit raises wts");
        let version = stamp(77, 3, 200, 4000);
        assert_eq!((stamp_ts(version), stamp_depth(version)), (77, 3));
        assert!(stamp(77, 3, 0, 0) > stamp(77, 2, 255, SEQUENCE_MAX), "depth orders before worker");
        assert!(stamp(78, 0, 0, 0) > stamp(77, DEPTH_MAX, 255, SEQUENCE_MAX), "the timestamp orders first");
        assert!(stamp(COMMIT_TS_MAX, DEPTH_MAX, 255, SEQUENCE_MAX) & ABSENT == 0, "a stamp fits a version");
    }
}
