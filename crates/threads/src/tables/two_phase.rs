//! Two-phase locking over tables, in its two deadlock-free flavours: `no_wait` (a busy lock
//! aborts the requester) and `wait_die` (Rosenkrantz et al. 1978: an older requester waits, a
//! younger one dies with [`AbortCause::Die`]; a transaction keeps its timestamp across
//! restarts, so it eventually becomes the oldest and cannot starve). Phantom protection is
//! next-key locking (ARIES/KVL, Mohan VLDB 1990), on the records the index holds.
//!
//! ```text
//!   lock word (meta):  [ exclusive:1 | dead:1 | readers:14 | oldest holder timestamp:48 ]
//!   end-of-table lock: one word per table, the "next key" of the table's last record
//!
//!   get k        lock k's record (shared; exclusive when for_update) and read it
//!                no record: lock the gap, as a scan of k..=k
//!   put k        lock k's record exclusively; buffered if present
//!   scan lo..hi  lock every record in range (absent ones too), then the records after hi up
//!                to the first present one (or the end-of-table lock); then check every leaf
//!                read is unchanged (else scan again, keeping the locks); deliver the rows
//!   insert k     no record: a placeholder, locked exclusively, enters the index; then lock
//!                exclusively the records after k up to the first present one (or end). An
//!                absent record: lock it exclusively, then the same
//!   delete k     lock k's record exclusively; buffered tombstone if present
//!   commit       epoch = global epoch (every lock held): the serialization point; install,
//!                release every lock
//! ```
//!
//! ## Why next-key locks stop phantoms
//! A scan holds a lock on every record in its range and on the records after it up to the
//! first present one. An insert into the range, after its own placeholder went into the
//! index, walks from its key up to the first present record locking each exclusively: the
//! walk meets a record the scanner holds (every record between the new key and the scanner's
//! locks is absent, and any absent record made after the scan belongs to a transaction that
//! did the same walk), so the insert waits or aborts until the scanner commits. A delete
//! locks its own record, which the scanner holds. A scan that started after a placeholder
//! went in finds it in the index, locked by its inserter. Records leave the index only
//! through reclamation, which takes the record's exclusive lock first, so a held record never
//! vanishes from under its holder. The scan's last step closes the race with an insert that
//! lands between reading a leaf and locking what it held: once every lock is held, unchanged
//! leaf versions mean the scan saw every record of its range.
//!
//! ## Worked timeline (a scan racing an insert into its range)
//! ```text
//!   T1 (ts 1): scan items 30..=50: S-lock 30, 40, 50, then 60 (the next present record)
//!   T2 (ts 2):                insert 35: placeholder 35 (X) into the index, then X-lock 40:
//!                             held shared by T1 -> no_wait: abort; wait_die: T2 is younger,
//!                             dies (its placeholder is released, absent, for reclamation)
//!   T1: commit, release. T2 retries (wait_die: still ts 2), inserts 35, commits after T1.
//! ```
//! Had T2 been older, under wait_die it would have waited for T1's commit and then inserted.
//!
//! The lock word keeps the smallest timestamp among its holders, so wait-die decides from one
//! atomic load; when holders leave, the stored minimum may be older than the remaining
//! holders, which only makes a requester die where it could have waited (never the reverse),
//! so no wait cycle can form. Reads are plain loads: a held lock excludes writers. Writes are
//! buffered and installed at commit (the exclusive locks are taken when the write is made),
//! so aborting is releasing. Versions count per key, as in Silo; histories carry no
//! timestamp (the lock point order is a serial order, but versions are not timestamps).

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::utils::CachePadded;
use ordo_harness::AbortCause;
use ordo_history::HistoryEntry;
use ordo_storage::epoch::{Guard, pin};
use ordo_storage::{Direction, InsertError, LeafVersion, TableId};
use ordo_workload::{Aborted, TableWorkload, Tx};

use super::database::{
    ABSENT, Database, Index, LoadError, META_WORD, Prefetched, SEQ_WORD, TABLE_HEADER_WORDS, VERSION_MASK, write_record,
};
use super::epoch::Epochs;
use super::protocol::{Committed, TableProtocol, WorkerOptions};
use super::reclaim::{Claim, Reclaimer};
use super::trace::Trace;
use super::writes::{WriteBuffer, WriteKind, install, next_version, recently_found};
use crate::config::ProtocolKind;
use crate::interleave;
use crate::protocol::{Spin, TimestampBlock, TimestampClock};

const EXCLUSIVE: u64 = 1 << 63;
const DEAD: u64 = 1 << 62;
const READER_SHIFT: u32 = 48;
const READER_ONE: u64 = 1 << READER_SHIFT;
const READERS_MAX: u64 = (1 << 14) - 1;
const TS_MASK: u64 = READER_ONE - 1;
/// The word of a free lock: no holders, no timestamp.
const FREE: u64 = TS_MASK;
/// The record id standing for a table's end-of-table lock.
const END_OF_TABLE: u64 = u64::MAX;
/// Scans of one range before giving up when every one found its leaves changed (inserts
/// outside the range but in its leaves); each keeps the locks of the ones before.
const RESCANS_MAX: usize = 8;

#[inline]
fn readers(word: u64) -> u64 {
    (word >> READER_SHIFT) & READERS_MAX
}

/// 2PL over a [`Database`].
#[derive(Debug)]
pub struct TwoPhaseTables {
    db: Database,
    wait_die: bool,
    /// Source of transaction timestamps (taken once per transaction, kept across restarts).
    clock: TimestampClock,
    /// One end-of-table lock per table.
    ends: Vec<CachePadded<AtomicU64>>,
}

/// A lock a worker holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    table: TableId,
    rid: u64,
    exclusive: bool,
}

/// What a scan's locking pass found, to deliver once its leaves validate.
#[derive(Debug, Clone, Copy)]
enum Item {
    /// A record (locked), its key and seq word.
    Record { key: u64, rid: u64, seq: u64 },
    /// The attempt's own write, by its index in the write buffer.
    Own(usize),
}

/// A worker's state, reused by every attempt.
#[derive(Debug)]
pub struct TwoPhaseWorker {
    ts: u64,
    /// The worker's block of timestamps from the shared clock.
    timestamps: TimestampBlock,
    locks: Vec<Held>,
    writes: WriteBuffer,
    reclaimer: Reclaimer,
    items: Vec<Item>,
    leaves: Vec<(TableId, LeafVersion)>,
    /// `(table, key, record)` of every point read that found a record, newest last: a put
    /// looks here before it descends the index (see `TwoPhaseTx::lookup_written`).
    found: Vec<(TableId, u64, u64)>,
    /// What the attempt's latest prefetch pass found: a lookup starts from it.
    prefetched: Prefetched,
    row: Vec<u64>,
    in_range: Vec<usize>,
    /// Why the attempt's last failed operation failed.
    cause: AbortCause,
    trace: Trace,
}

impl TwoPhaseWorker {
    /// The transaction's wait-die timestamp (smaller is older).
    pub fn timestamp(&self) -> u64 {
        self.ts
    }

    /// Locks held by the current attempt.
    pub fn locks_held(&self) -> usize {
        self.locks.len()
    }

    /// The history recorded so far.
    pub fn history(&mut self) -> &mut Vec<HistoryEntry> {
        self.trace.entries()
    }

    fn clear_attempt(&mut self) {
        debug_assert!(self.locks.is_empty(), "an attempt ends without locks");
        self.writes.clear();
        self.found.clear();
        self.prefetched.clear();
        self.reclaimer.forget_created();
        self.cause = AbortCause::Conflict;
        self.trace.clear();
    }
}

/// What acquiring a lock did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Acquired {
    /// Taken now (or upgraded).
    Granted,
    /// Held already in a sufficient mode.
    Held,
    /// The record was reclaimed: look the key up again.
    Dead,
}

impl TwoPhaseTables {
    /// Loads `workload` into a new database (see [`Database::load`]) with epoch clock
    /// `epochs`, for `protocol` ([`ProtocolKind::NoWait`] or [`ProtocolKind::WaitDie`]).
    pub fn load(
        workload: &dyn TableWorkload,
        index: Index,
        load_threads: usize,
        epochs: Epochs,
        protocol: ProtocolKind,
    ) -> Result<Self, LoadError> {
        assert!(matches!(protocol, ProtocolKind::NoWait | ProtocolKind::WaitDie), "{protocol} is not 2PL");
        let db = Database::load(workload, index, load_threads, FREE, epochs)?;
        Ok(<Self as TableProtocol>::over(db, protocol))
    }

    #[inline]
    fn word(&self, table: TableId, rid: u64) -> &AtomicU64 {
        if rid == END_OF_TABLE { &self.ends[table as usize] } else { &self.db.table(table).record(rid)[META_WORD] }
    }

    /// Takes (or upgrades to) the lock of `rid` in `table` for `worker`.
    fn acquire(
        &self,
        worker: &mut TwoPhaseWorker,
        table: TableId,
        rid: u64,
        exclusive: bool,
    ) -> Result<Acquired, AbortCause> {
        let word = self.word(table, rid);
        let ts = worker.ts;
        // Whether (and how) this worker holds the lock, looked up only when someone does.
        let mut mine: Option<Option<usize>> = None;
        let mut spin = Spin::default();
        loop {
            let current = word.load(Ordering::Acquire);
            if current & DEAD != 0 {
                return Ok(Acquired::Dead);
            }
            let held_by_anyone = current & EXCLUSIVE != 0 || readers(current) > 0;
            let held = if held_by_anyone {
                *mine.get_or_insert_with(|| worker.locks.iter().rposition(|h| h.table == table && h.rid == rid))
            } else {
                None
            };
            let next = match held {
                Some(i) if worker.locks[i].exclusive || !exclusive => return Ok(Acquired::Held),
                // An upgrade: this worker must be the only reader.
                Some(_) => {
                    (current & EXCLUSIVE == 0 && readers(current) == 1).then(|| EXCLUSIVE | (current & TS_MASK).min(ts))
                }
                None if exclusive => (!held_by_anyone).then_some(EXCLUSIVE | ts),
                None => (current & EXCLUSIVE == 0 && readers(current) < READERS_MAX).then(|| {
                    let oldest = if held_by_anyone { (current & TS_MASK).min(ts) } else { ts };
                    ((current & !TS_MASK) + READER_ONE) | oldest
                }),
            };
            if let Some(next) = next {
                if word.compare_exchange_weak(current, next, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    match held {
                        Some(i) => worker.locks[i].exclusive = true,
                        None => worker.locks.push(Held { table, rid, exclusive }),
                    }
                    return Ok(Acquired::Granted);
                }
                continue;
            }
            if !self.wait_die {
                return Err(AbortCause::Conflict);
            }
            if ts < current & TS_MASK {
                spin.wait();
            } else {
                return Err(AbortCause::Die);
            }
        }
    }

    /// Releases every lock `worker` holds.
    fn release_all(&self, worker: &mut TwoPhaseWorker) {
        for held in worker.locks.drain(..) {
            let word = self.word(held.table, held.rid);
            let mut current = word.load(Ordering::Relaxed);
            loop {
                let next = if held.exclusive {
                    debug_assert!(current & EXCLUSIVE != 0, "releasing an exclusive lock not held");
                    FREE
                } else {
                    debug_assert!(readers(current) > 0, "releasing a shared lock not held");
                    let left = current - READER_ONE;
                    if readers(left) == 0 { FREE } else { left }
                };
                match word.compare_exchange_weak(current, next, Ordering::Release, Ordering::Relaxed) {
                    Ok(_) => break,
                    Err(actual) => current = actual,
                }
            }
        }
    }

    /// Reclaims every candidate of `worker` that no transaction holds, whatever its epoch.
    pub fn reclaim_all(&self, worker: &mut TwoPhaseWorker) {
        let guard = pin();
        self.reclaim(worker, &guard, true);
    }

    fn reclaim(&self, worker: &mut TwoPhaseWorker, guard: &Guard, everything: bool) {
        worker.reclaimer.reclaim(
            &self.db,
            guard,
            everything,
            |words| {
                let meta = words[META_WORD].load(Ordering::Relaxed);
                if meta & DEAD != 0 {
                    Claim::Dead
                } else if meta & EXCLUSIVE != 0 || readers(meta) > 0 {
                    Claim::Busy
                } else {
                    // Timestamp 0: every requester is younger and dies instead of waiting.
                    match words[META_WORD].compare_exchange(meta, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed) {
                        Ok(_) => Claim::Locked(meta),
                        Err(_) => Claim::Busy,
                    }
                }
            },
            |words, _, dead| words[META_WORD].store(if dead { FREE | DEAD } else { FREE }, Ordering::Release),
        );
    }
}

impl TableProtocol for TwoPhaseTables {
    type Worker = TwoPhaseWorker;
    type Attempt<'a> = TwoPhaseTx<'a>;

    const INITIAL_META: u64 = FREE;

    fn over(db: Database, kind: ProtocolKind) -> Self {
        assert!(matches!(kind, ProtocolKind::NoWait | ProtocolKind::WaitDie), "{kind} is not 2PL");
        let ends = db.tables().iter().map(|_| CachePadded::new(AtomicU64::new(FREE))).collect();
        TwoPhaseTables { db, wait_die: kind == ProtocolKind::WaitDie, clock: TimestampClock::default(), ends }
    }

    fn kind(&self) -> ProtocolKind {
        if self.wait_die { ProtocolKind::WaitDie } else { ProtocolKind::NoWait }
    }

    fn database(&self) -> &Database {
        &self.db
    }

    fn worker(&self, options: WorkerOptions) -> TwoPhaseWorker {
        TwoPhaseWorker {
            ts: 0,
            timestamps: TimestampBlock::default(),
            locks: Vec::new(),
            writes: WriteBuffer::default(),
            reclaimer: Reclaimer::default(),
            items: Vec::new(),
            leaves: Vec::new(),
            found: Vec::new(),
            prefetched: Prefetched::default(),
            row: Vec::new(),
            in_range: Vec::new(),
            cause: AbortCause::Conflict,
            trace: Trace::new(options.index, options.workers, options.record_history),
        }
    }

    fn begin<'a>(&'a self, worker: &'a mut TwoPhaseWorker, restart: bool) -> TwoPhaseTx<'a> {
        worker.clear_attempt();
        if !restart || worker.ts == 0 {
            worker.ts = self.clock.take(&mut worker.timestamps) & TS_MASK;
        }
        let guard = pin();
        self.reclaim(worker, &guard, false);
        TwoPhaseTx { two_phase: self, worker, guard, done: false }
    }

    fn commit(mut attempt: TwoPhaseTx<'_>) -> Result<Committed, AbortCause> {
        attempt.done = true;
        Ok(attempt.install())
    }

    fn abort(mut attempt: TwoPhaseTx<'_>) -> AbortCause {
        attempt.done = true;
        let cause = attempt.worker.cause;
        attempt.release();
        cause
    }

    fn trace(worker: &mut TwoPhaseWorker) -> &mut Trace {
        &mut worker.trace
    }

    fn quiesce(&self, worker: &mut TwoPhaseWorker) {
        self.reclaim_all(worker);
    }
}

/// One attempt of a transaction on [`TwoPhaseTables`].
pub struct TwoPhaseTx<'a> {
    two_phase: &'a TwoPhaseTables,
    worker: &'a mut TwoPhaseWorker,
    guard: Guard,
    done: bool,
}

impl std::fmt::Debug for TwoPhaseTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoPhaseTx")
            .field("ts", &self.worker.ts)
            .field("locks", &self.worker.locks.len())
            .field("writes", &self.worker.writes.entries.len())
            .finish()
    }
}

/// How far a scan's locking pass got.
#[derive(Debug, Clone, Copy)]
struct Covered {
    low: u64,
    high: u64,
}

impl TwoPhaseTx<'_> {
    /// Releases every lock and hands this attempt's placeholders to reclamation.
    fn release(&mut self) {
        self.two_phase.release_all(self.worker);
        self.worker.reclaimer.abandon_created(self.two_phase.db.epoch());
        self.worker.clear_attempt();
    }

    fn install(&mut self) -> Committed {
        let db = &self.two_phase.db;
        interleave::point();
        // Every lock is held: the serialization point.
        let epoch = db.epoch();
        let worker = &mut *self.worker;
        for write in &worker.writes.entries {
            if write.kind == WriteKind::InsertDelete {
                continue;
            }
            let table = db.table(write.table);
            let words = table.record(write.rid);
            let version = next_version(table, words, write.kind);
            let seq = install(table, words, write, &worker.writes.rows, version);
            if !write.kind.present_after() {
                worker.reclaimer.left_absent(write.table, write.key, write.rid, seq, epoch);
            }
            let row = &worker.writes.rows[write.row_at..write.row_at + table.row_words];
            worker.trace.installed(write.table, write.kind.effect(), write.key, version, row);
        }
        interleave::point();
        self.two_phase.release_all(worker);
        worker.trace.committed(None);
        worker.reclaimer.settle_created(db, epoch);
        worker.clear_attempt();
        Committed { epoch }
    }

    /// Fails the attempt with `cause`.
    fn fail(&mut self, cause: AbortCause) -> Aborted {
        self.worker.cause = cause;
        Aborted
    }

    /// Locks `rid` and returns its seq word, or `None` if it was reclaimed.
    fn lock_record(&mut self, table: TableId, rid: u64, exclusive: bool) -> Result<Option<u64>, Aborted> {
        match self.two_phase.acquire(self.worker, table, rid, exclusive) {
            Ok(Acquired::Dead) => Ok(None),
            Ok(_) => Ok(Some(self.two_phase.db.table(table).record(rid)[SEQ_WORD].load(Ordering::Relaxed))),
            Err(cause) => Err(self.fail(cause)),
        }
    }

    /// `key`'s record, locked (`exclusive` or shared), with its seq word; `None` when the key
    /// has no record, its gap locked shared (as a scan of `key..=key`). Starts from the record
    /// the attempt's prefetch pass found for `key`, if any (see [`Prefetched`]): once its lock
    /// is held and it is not dead, it is the key's.
    fn lookup(&mut self, table_id: TableId, key: u64, exclusive: bool) -> Result<Option<(u64, u64)>, Aborted> {
        interleave::point();
        let table = self.two_phase.db.table(table_id);
        let mut lookup = self.worker.prefetched.lookup(table_id, key);
        loop {
            match lookup.next(table) {
                Ok(rid) => {
                    if let Some(seq) = self.lock_record(table_id, rid, exclusive)? {
                        return Ok(Some((rid, seq)));
                    }
                }
                Err(_) => {
                    self.lock_range(table_id, key, key, Direction::Ascending, 1)?;
                    let found = self.worker.items.iter().find_map(|item| match *item {
                        Item::Record { rid, .. } => Some(rid),
                        Item::Own(_) => None,
                    });
                    let Some(rid) = found else { return Ok(None) };
                    // A record appeared since the lookup (now locked shared).
                    if let Some(seq) = self.lock_record(table_id, rid, exclusive)? {
                        return Ok(Some((rid, seq)));
                    }
                }
            }
        }
    }

    /// [`Self::lookup`] for a put. A key among the attempt's last [`RECENT_READS`](super::writes::RECENT_READS) point reads
    /// that found a record keeps that record, so a read-modify-write does not descend the
    /// index twice. The read still holds the record's lock, so nobody has deleted or reclaimed
    /// it since: its lock is taken exclusively (an upgrade, or nothing if held so already).
    fn lookup_written(&mut self, table_id: TableId, key: u64) -> Result<Option<(u64, u64)>, Aborted> {
        if let Some(rid) = recently_found(&self.worker.found, table_id, key) {
            interleave::point();
            if let Some(seq) = self.lock_record(table_id, rid, true)? {
                return Ok(Some((rid, seq)));
            }
        }
        self.lookup(table_id, key, true)
    }

    /// Locks exclusively (or shared) the records after `key` up to the first present one, or
    /// the table's end-of-table lock when none is; notes the leaves read in the worker's
    /// leaves when `note`.
    fn lock_next(&mut self, table_id: TableId, key: u64, exclusive: bool, note: bool) -> Result<(), Aborted> {
        let two_phase = self.two_phase;
        let table = two_phase.db.table(table_id);
        let worker = &mut *self.worker;
        let mut failed = None;
        let mut present_found = false;
        if key < u64::MAX {
            let mut leaves = std::mem::take(&mut worker.leaves);
            table.index.scan(
                key + 1,
                u64::MAX,
                Direction::Ascending,
                &mut |_, rid| match two_phase.acquire(worker, table_id, rid, exclusive) {
                    Ok(Acquired::Dead) => true,
                    Ok(_) => {
                        present_found = table.record(rid)[SEQ_WORD].load(Ordering::Relaxed) & ABSENT == 0;
                        !present_found
                    }
                    Err(cause) => {
                        failed = Some(cause);
                        false
                    }
                },
                &mut |leaf| {
                    if note {
                        leaves.push((table_id, leaf));
                    }
                },
            );
            worker.leaves = leaves;
        }
        if let Some(cause) = failed {
            return Err(self.fail(cause));
        }
        if !present_found && let Err(cause) = two_phase.acquire(self.worker, table_id, END_OF_TABLE, exclusive) {
            return Err(self.fail(cause));
        }
        Ok(())
    }

    /// Locks the records of `low..=high` (shared) in `direction` until `limit` present rows
    /// (own writes counted), then the next records (see the module docs), and rescans until
    /// the leaves read are unchanged with every lock held. Leaves what to deliver in the
    /// worker's items.
    fn lock_range(
        &mut self,
        table_id: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
    ) -> Result<Covered, Aborted> {
        let two_phase = self.two_phase;
        let table = two_phase.db.table(table_id);
        self.worker.writes.in_range(table_id, low, high, &mut self.worker.in_range);
        for _ in 0..RESCANS_MAX {
            let worker = &mut *self.worker;
            worker.items.clear();
            worker.leaves.clear();
            let mut failed = None;
            let mut stopped_at = None;
            let mut counted = 0;
            let mut items = std::mem::take(&mut worker.items);
            let mut leaves = std::mem::take(&mut worker.leaves);
            table.index.scan(
                low,
                high,
                direction,
                &mut |key, rid| {
                    let own = worker.in_range.iter().copied().find(|&i| worker.writes.entries[i].key == key);
                    let present = if let Some(i) = own {
                        items.push(Item::Own(i));
                        worker.writes.entries[i].kind.present_after()
                    } else {
                        match two_phase.acquire(worker, table_id, rid, false) {
                            Ok(Acquired::Dead) => return true,
                            Ok(_) => {
                                let seq = table.record(rid)[SEQ_WORD].load(Ordering::Relaxed);
                                items.push(Item::Record { key, rid, seq });
                                seq & ABSENT == 0
                            }
                            Err(cause) => {
                                failed = Some(cause);
                                return false;
                            }
                        }
                    };
                    if present {
                        counted += 1;
                        if counted >= limit {
                            stopped_at = Some(key);
                            return false;
                        }
                    }
                    true
                },
                &mut |leaf| leaves.push((table_id, leaf)),
            );
            worker.items = items;
            worker.leaves = leaves;
            if let Some(cause) = failed {
                return Err(self.fail(cause));
            }
            let covered = match (stopped_at, direction) {
                (None, _) => Covered { low, high },
                (Some(key), Direction::Ascending) => Covered { low, high: key },
                (Some(key), Direction::Descending) => Covered { low: key, high },
            };
            // The next records protect the gap above the covered range; an ascending scan
            // cut short ends at a record it holds.
            if stopped_at.is_none() || direction == Direction::Descending {
                self.lock_next(table_id, high, false, true)?;
            }
            let index = &table.index;
            if self.worker.leaves.iter().all(|&(_, leaf)| index.version(leaf.leaf) == leaf.version) {
                return Ok(covered);
            }
            interleave::point();
        }
        Err(self.fail(AbortCause::Conflict))
    }
}

impl Drop for TwoPhaseTx<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.release();
        }
    }
}

impl Tx for TwoPhaseTx<'_> {
    #[inline]
    fn prefetch(&mut self, table: TableId, keys: &[u64]) {
        self.worker.prefetched.run(self.two_phase.db.table(table), table, keys);
    }

    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], for_update: bool) -> Result<bool, Aborted> {
        if let Some(present) = self.worker.writes.own_get(table, key, row) {
            return Ok(present);
        }
        let Some((rid, seq)) = self.lookup(table, key, for_update)? else {
            self.worker.trace.absent(table, key);
            return Ok(false);
        };
        self.worker.found.push((table, key, rid));
        self.worker.trace.seen(table, key, seq);
        if seq & ABSENT != 0 {
            return Ok(false);
        }
        let words = self.two_phase.db.table(table).record(rid);
        for (out, word) in row.iter_mut().zip(&words[TABLE_HEADER_WORDS..]) {
            *out = word.load(Ordering::Relaxed);
        }
        Ok(true)
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        if let Some(present) = self.worker.writes.own_put(table, key, row) {
            return Ok(present);
        }
        let Some((rid, seq)) = self.lookup_written(table, key)? else {
            self.worker.trace.absent(table, key);
            return Ok(false);
        };
        if seq & ABSENT != 0 {
            self.worker.trace.seen(table, key, seq);
            return Ok(false);
        }
        let row_words = self.two_phase.db.table(table).row_words;
        self.worker.writes.push(table, key, rid, WriteKind::Put, row, row_words);
        Ok(true)
    }

    fn insert(&mut self, table_id: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        if let Some(inserted) = self.worker.writes.own_insert(table_id, key, row) {
            return Ok(inserted);
        }
        interleave::point();
        let table = self.two_phase.db.table(table_id);
        let rid = loop {
            match table.index.get(key) {
                Ok(rid) => {
                    let Some(seq) = self.lock_record(table_id, rid, true)? else { continue };
                    if seq & ABSENT == 0 {
                        self.worker.trace.seen(table_id, key, seq);
                        return Ok(false);
                    }
                    break rid;
                }
                Err(_) => {
                    let rid = table.records.alloc();
                    write_record(table.record(rid), EXCLUSIVE | self.worker.ts, key, ABSENT, &[]);
                    match table.index.insert(key, rid) {
                        Ok(_) => {
                            self.worker.locks.push(Held { table: table_id, rid, exclusive: true });
                            self.worker.reclaimer.created(table_id, key, rid, ABSENT);
                            break rid;
                        }
                        Err(InsertError::Present { .. }) => table.records.retire(rid, &self.guard),
                        Err(InsertError::Fixed) => {
                            // A dense index backs only tables with dense keys, which take no inserts: a run
                            // refuses `--index array` for any other table before it starts.
                            unreachable!("insert into dense table {table_id}");
                        }
                    }
                }
            }
        };
        self.lock_next(table_id, key, true, false)?;
        self.worker.writes.push(table_id, key, rid, WriteKind::Insert, row, table.row_words);
        Ok(true)
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        if let Some(deleted) = self.worker.writes.own_delete(table, key) {
            return Ok(deleted);
        }
        let Some((rid, seq)) = self.lookup_written(table, key)? else {
            self.worker.trace.absent(table, key);
            return Ok(false);
        };
        if seq & ABSENT != 0 {
            self.worker.trace.seen(table, key, seq);
            return Ok(false);
        }
        let row_words = self.two_phase.db.table(table).row_words;
        self.worker.writes.push(table, key, rid, WriteKind::Delete, &[], row_words);
        Ok(true)
    }

    fn scan(
        &mut self,
        table_id: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted> {
        if limit == 0 || low > high {
            return Ok(0);
        }
        interleave::point();
        let covered = self.lock_range(table_id, low, high, direction, limit)?;
        let table = self.two_phase.db.table(table_id);
        let worker = &mut *self.worker;
        worker.row.resize(table.row_words, 0);
        let TwoPhaseWorker { writes, items, row, trace, .. } = worker;
        trace.scan_begin(table_id);
        let mut visited = 0;
        let mut stopped_at = None;
        for item in items.iter() {
            let (key, present) = match *item {
                Item::Own(i) => {
                    let write = &writes.entries[i];
                    if write.kind != WriteKind::InsertDelete {
                        trace.scan_own(write.key);
                    }
                    if write.kind.present_after() {
                        visited += 1;
                        if !visit(write.key, writes.row(i, table.row_words)) {
                            stopped_at = Some(write.key);
                            break;
                        }
                    }
                    (write.key, write.kind.present_after())
                }
                Item::Record { key, rid, seq } => {
                    let version = seq & VERSION_MASK;
                    if seq & ABSENT != 0 {
                        if version > 0 {
                            trace.scan_row(key, version);
                        }
                        continue;
                    }
                    trace.scan_row(key, version);
                    let words = table.record(rid);
                    for (out, word) in row.iter_mut().zip(&words[TABLE_HEADER_WORDS..]) {
                        *out = word.load(Ordering::Relaxed);
                    }
                    visited += 1;
                    if !visit(key, row) {
                        stopped_at = Some(key);
                        break;
                    }
                    (key, true)
                }
            };
            if present && visited >= limit {
                stopped_at = Some(key);
                break;
            }
        }
        let (covered_low, covered_high) = match (stopped_at, direction) {
            (None, _) => (covered.low, covered.high),
            (Some(key), Direction::Ascending) => (covered.low, key),
            (Some(key), Direction::Descending) => (key, covered.high),
        };
        trace.scan_end(covered_low, covered_high);
        Ok(visited)
    }

    fn wants_update_hints(&self) -> bool {
        true
    }
}
