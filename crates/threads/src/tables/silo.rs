//! Silo (Tu et al., SOSP 2013) over tables, with phantom protection by node-set validation
//! (Silo §4.6), inserts through absent placeholder records and deletes through tombstones.
//!
//! ```text
//!   meta (TID word):  [ lock:1 | latest:1 | dead:1 | epoch:29 | sequence:32 ]
//!   seq word:         [ absent:1 | version:63 ]
//!
//!   prefetch   the index's validated pass over a step's keys; a later get of a key it
//!              found starts from that record instead of index.get (a dead one: index.get)
//!   get k      own write? answer from it. Else index.get(k):
//!                no record  -> node set += (leaf, version) the index reported; false
//!                record r   -> seqlock copy (meta, seq, row); read set += (r, meta);
//!                              answer "present" from the absent bit
//!   put k      blind: buffered if k has a present record (commit re-checks presence)
//!   insert k   present record -> read set += it; false. Absent record -> buffered write.
//!              No record -> new absent placeholder put into the index at once (node-set
//!              entry for that leaf moves from Inserted.before to .after), buffered write
//!   delete k   buffered tombstone if k has a present record (commit re-checks presence)
//!   scan       index scan: every leaf reported -> node set, every record passed (absent
//!              ones too) -> read set; own buffered writes in the range replace what the
//!              index holds
//!   commit     1. lock the write set in (table, key) order; each record must not be dead
//!                 and must be present (put, delete) or absent (insert)
//!              2. epoch = global epoch (after a fence): the serialization point
//!              3. read set: TID unchanged and not locked by another; node set: every leaf
//!                 version unchanged
//!              4. tid = max(observed TIDs + 1, last TID + 1, epoch.0); install rows and
//!                 seq words (version + 1), publish tid (unlocks)
//! ```
//!
//! Why this is serializable with inserts: a transaction that saw a key absent either read an
//! absent record (its TID changes when anyone installs into it) or recorded the leaf where the
//! key would be (its version changes when anyone puts a record for the key into the index,
//! which every inserter does before it commits). A scan records every leaf it examined, so any
//! insert into its range after the scan changes a recorded version. A transaction's own
//! placeholder inserts are not phantoms to it: it updates its node-set entry from the version
//! just before its insert to the one just after. When that insert had to split the leaf
//! first, the recorded version is stale and the attempt fails validation and retries (as in
//! Silo): rare, since only a full leaf splits, but a lone worker can see it.
//!
//! Inconsistent views end early: Silo's reads are validated only at commit, so a procedure
//! can see a base row absent and then its secondary-index entry present (a concurrent insert
//! committed in between), or the reverse for deletes. Such an attempt cannot commit, and
//! continuing would let the base table and its index disagree inside it, so an insert into an
//! index table that finds its entry present, or a delete that finds it absent, aborts at once.
//!
//! Reclamation: a committed delete leaves a tombstone, an aborted insert an absent
//! placeholder. Both stay in the index (a later insert of the key reuses them) until the
//! worker that made them reclaims them, at least one epoch later, at the start of one of its
//! transactions: lock the record unless it is dead, check it still holds the key and the absent
//! seq word it was left with (else it was reused or reclaimed elsewhere), raise the table's
//! `retired_version_max` to its version, remove it from the index, mark it dead (every reader
//! and validator then fails on it) and retire its id through the epoch guard. Workers pin the
//! epoch for the whole of each attempt, so a record id found in the index is not recycled
//! while the attempt can still look at it.
//!
//! The epoch is the database's ([`super::epoch`]): a clock of the engine's choosing, or a
//! manual one that tests and the simulator advance themselves.
//!
//! Yield points ([`crate::interleave::point`], a no-op outside the interleaving simulator):
//! after each lock and after read-set and node-set validation in commit, after each install,
//! and in reclamation once a candidate is locked, so the simulator can run other workers
//! between those phases. [`SiloFaults`] switches validation steps off, for the tests that show
//! the simulator catches the broken protocol.

use std::sync::atomic::{Ordering, fence};

use ordo_harness::AbortCause;
use ordo_history::HistoryEntry;
use ordo_storage::epoch::{Guard, pin};
use ordo_storage::{Direction, TableId};
use ordo_workload::{Aborted, Tx};

use crate::interleave;

use super::database::{Database, Index, LoadError, META_WORD, Table};
use super::epoch::Epochs;
use super::optimistic::{MetaWord, Sets, lock_live_record};
use super::protocol::{Committed, TableProtocol, WorkerOptions};
use super::reclaim::Claim;
pub use super::reclaim::RECLAIM_PER_BEGIN_MAX;
use super::scan::Range;
use super::trace::Trace;
use super::writes::{WriteKind, install, next_version};
use crate::config::ProtocolKind;

/// Silo's epoch period.
pub const EPOCH_MS_DEFAULT: u64 = 40;
/// Largest number of workers (history ids interleave by worker).
pub const TABLE_WORKERS_MAX: usize = 256;
const LOCK: u64 = 1 << 63;
const LATEST: u64 = 1 << 62;
const DEAD: u64 = 1 << 61;
const TID_MASK: u64 = DEAD - 1;
const EPOCH_SHIFT: u32 = 32;

/// The meta word of a loaded record: unlocked, latest, TID 0.
pub const INITIAL_META: u64 = LATEST;

/// Silo over a [`Database`].
#[derive(Debug)]
pub struct SiloTables {
    db: Database,
    faults: SiloFaults,
}

/// Validation steps a test may switch off, to show that the interleaving simulator and the
/// checker catch the protocol that results (fault injection, as for a log device; nothing
/// outside tests sets them). The default injects nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SiloFaults {
    /// Skip node-set validation at commit: scans and reads of absent keys lose their phantom
    /// protection.
    pub skip_node_validation: bool,
    /// Skip read-set validation at commit: reads of present rows may go stale.
    pub skip_read_validation: bool,
    /// In read-set validation, ignore a record locked by another committer whose TID has not
    /// changed yet (Silo §4.4 aborts): two committers that each read what the other writes can
    /// then both commit. Only an interleaving that stops a committer between validation and
    /// install shows it.
    pub ignore_foreign_locks: bool,
}

/// Silo's meta word, for the optimistic kit.
struct Tid;

impl MetaWord for Tid {
    const LOCK: u64 = LOCK;
    const DEAD: u64 = DEAD;
    const YIELD_ON_ACCESS: bool = false;

    fn same_state(before: u64, after: u64) -> bool {
        before == after
    }

    fn placeholder_meta(_table: &Table) -> u64 {
        INITIAL_META
    }
}

/// A worker's state, reused by every attempt.
#[derive(Debug)]
pub struct SiloWorker {
    sets: Sets,
    last_tid: u64,
}

impl SiloWorker {
    /// The history recorded so far.
    pub fn history(&mut self) -> &mut Vec<HistoryEntry> {
        self.sets.trace.entries()
    }

    /// Reclamation candidates waiting for their epoch to pass.
    pub fn pending_reclaims(&self) -> usize {
        self.sets.reclaimer.len()
    }
}

impl SiloTables {
    /// Loads `workload` into a new database (see [`Database::load`]) with epoch clock
    /// `epochs`.
    pub fn load(
        workload: &dyn ordo_workload::TableWorkload,
        index: Index,
        load_threads: usize,
        epochs: Epochs,
    ) -> Result<Self, LoadError> {
        let db = Database::load(workload, index, load_threads, INITIAL_META, epochs)?;
        Ok(<Self as TableProtocol>::over(db, ProtocolKind::Silo))
    }

    /// The same protocol with `faults` injected (tests only: see [`SiloFaults`]).
    #[must_use]
    pub fn with_faults(mut self, faults: SiloFaults) -> Self {
        self.faults = faults;
        self
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The current global epoch.
    pub fn epoch(&self) -> u64 {
        self.db.epoch()
    }

    /// State for worker `index` (< [`TABLE_WORKERS_MAX`]).
    pub fn worker(&self, index: usize, record_history: bool) -> SiloWorker {
        Self::worker_with(WorkerOptions { index, workers: TABLE_WORKERS_MAX, record_history })
    }

    fn worker_with(options: WorkerOptions) -> SiloWorker {
        assert!(options.workers <= TABLE_WORKERS_MAX, "{} workers, at most {TABLE_WORKERS_MAX}", options.workers);
        SiloWorker { sets: Sets::new(Trace::new(options.index, options.workers, options.record_history)), last_tid: 0 }
    }

    /// Starts an attempt on `worker` (after reclaiming what is due). The attempt holds an
    /// epoch guard until it commits, aborts or is dropped (dropping aborts).
    pub fn begin<'a>(&'a self, worker: &'a mut SiloWorker) -> SiloTx<'a> {
        worker.sets.clear();
        let guard = pin();
        self.reclaim(worker, &guard, false);
        SiloTx { silo: self, worker, guard, done: false }
    }

    /// Reclaims every candidate of `worker` whatever its epoch (for tests and shutdown).
    pub fn reclaim_all(&self, worker: &mut SiloWorker) {
        let guard = pin();
        self.reclaim(worker, &guard, true);
    }

    /// Reclaims up to [`RECLAIM_PER_BEGIN_MAX`] candidates at least one epoch old (all, when
    /// `everything`).
    fn reclaim(&self, worker: &mut SiloWorker, guard: &Guard, everything: bool) {
        worker.sets.reclaimer.reclaim(
            &self.db,
            guard,
            everything,
            |words| {
                let claim = lock_live_record::<Tid>(words).map_or(Claim::Dead, Claim::Locked);
                interleave::point();
                claim
            },
            |words, meta, dead| {
                let meta = if dead { (meta | DEAD) & !LOCK } else { meta };
                words[META_WORD].store(meta, Ordering::Release);
            },
        );
    }
}

impl TableProtocol for SiloTables {
    type Worker = SiloWorker;
    type Attempt<'a> = SiloTx<'a>;

    const INITIAL_META: u64 = INITIAL_META;

    fn over(db: Database, _kind: ProtocolKind) -> Self {
        SiloTables { db, faults: SiloFaults::default() }
    }

    fn kind(&self) -> ProtocolKind {
        ProtocolKind::Silo
    }

    fn database(&self) -> &Database {
        &self.db
    }

    fn worker(&self, options: WorkerOptions) -> SiloWorker {
        Self::worker_with(options)
    }

    fn begin<'a>(&'a self, worker: &'a mut SiloWorker, _restart: bool) -> SiloTx<'a> {
        SiloTables::begin(self, worker)
    }

    fn commit(attempt: SiloTx<'_>) -> Result<Committed, AbortCause> {
        attempt.commit().map_err(|Aborted| AbortCause::Conflict)
    }

    fn abort(attempt: SiloTx<'_>) -> AbortCause {
        attempt.abort();
        AbortCause::Conflict
    }

    fn trace(worker: &mut SiloWorker) -> &mut Trace {
        &mut worker.sets.trace
    }

    fn quiesce(&self, worker: &mut SiloWorker) {
        self.reclaim_all(worker);
    }
}

/// One attempt of a transaction on [`SiloTables`]: the engine's [`Tx`].
pub struct SiloTx<'a> {
    silo: &'a SiloTables,
    worker: &'a mut SiloWorker,
    guard: Guard,
    done: bool,
}

impl std::fmt::Debug for SiloTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SiloTx")
            .field("writes", &self.worker.sets.writes.entries.len())
            .field("reads", &self.worker.sets.reads.len())
            .finish()
    }
}

impl SiloTx<'_> {
    /// Validates and installs the attempt's writes; on `Err` nothing was installed.
    pub fn commit(mut self) -> Result<Committed, Aborted> {
        self.done = true;
        let result = self.try_commit();
        if result.is_err() {
            self.release();
        }
        result
    }

    /// Ends the attempt without installing anything.
    pub fn abort(mut self) {
        self.done = true;
        self.release();
    }

    /// Unlocks what commit locked and hands this attempt's placeholders to reclamation.
    fn release(&mut self) {
        self.worker.sets.release(&self.silo.db, self.silo.epoch());
    }

    fn try_commit(&mut self) -> Result<Committed, Aborted> {
        let db = &self.silo.db;
        let SiloWorker { sets: worker, last_tid } = &mut *self.worker;
        worker.lock_writes::<Tid>(db, true)?;
        fence(Ordering::SeqCst);
        let epoch = self.silo.epoch();
        let mut tid_max = *last_tid;
        let faults = self.silo.faults;
        for read in &worker.reads {
            let meta = db.table(read.table).record(read.rid)[META_WORD].load(Ordering::Acquire);
            if meta & !LOCK != read.meta && !faults.skip_read_validation {
                return Err(Aborted);
            }
            if meta & LOCK != 0
                && !faults.skip_read_validation
                && !faults.ignore_foreign_locks
                && worker.writes.find_sorted(read.table, read.key).map(|w| w.rid) != Some(read.rid)
            {
                return Err(Aborted);
            }
            tid_max = tid_max.max(read.meta & TID_MASK);
        }
        interleave::point();
        for &(table, leaf) in &worker.nodes {
            if db.table(table).index.version(leaf.leaf) != leaf.version && !faults.skip_node_validation {
                return Err(Aborted);
            }
        }
        interleave::point();
        for write in &worker.writes.entries {
            tid_max = tid_max.max(write.locked_meta & TID_MASK);
        }
        let tid = (tid_max + 1).max(epoch << EPOCH_SHIFT);
        debug_assert!(tid & !TID_MASK == 0, "TID overflowed into the flag bits");
        fence(Ordering::Release);
        for write in &worker.writes.entries {
            let table = db.table(write.table);
            let words = table.record(write.rid);
            if write.kind == WriteKind::InsertDelete {
                // Absent before and after: nothing to install, no version to add (readers of
                // the absence still fail validation on the TID published below).
                words[META_WORD].store(tid | LATEST, Ordering::Release);
                continue;
            }
            let version = next_version(table, words, write.kind);
            let seq = install(table, words, write, &worker.writes.rows, version);
            if !write.kind.present_after() {
                worker.reclaimer.left_absent(write.table, write.key, write.rid, seq, epoch);
            }
            words[META_WORD].store(tid | LATEST, Ordering::Release);
            let row = &worker.writes.rows[write.row_at..write.row_at + table.row_words];
            worker.trace.installed(write.table, write.kind.effect(), write.key, version, row);
            interleave::point();
        }
        worker.locked = 0;
        *last_tid = tid;
        // Silo's TIDs follow write-read and write-write dependencies but not anti-dependencies,
        // so they are no serial order: the history carries no timestamp.
        worker.trace.committed(None);
        // An own insert deleted again left its placeholder absent: reclaim it like a tombstone.
        worker.reclaimer.settle_created(db, epoch);
        worker.clear();
        Ok(Committed { epoch })
    }
}

impl Drop for SiloTx<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.release();
        }
    }
}

impl Tx for SiloTx<'_> {
    #[inline]
    fn prefetch(&mut self, table: TableId, keys: &[u64]) {
        self.worker.sets.prefetch(&self.silo.db, table, keys);
    }

    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], _for_update: bool) -> Result<bool, Aborted> {
        Ok(self.worker.sets.get::<Tid>(&self.silo.db, table, key, row))
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        Ok(self.worker.sets.put::<Tid>(&self.silo.db, table, key, row))
    }

    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        self.worker.sets.insert::<Tid>(&self.silo.db, &self.guard, table, key, row)
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        self.worker.sets.delete::<Tid>(&self.silo.db, table, key)
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
        Ok(self.worker.sets.scan::<Tid>(&self.silo.db, Range { table, low, high, direction, limit }, visit))
    }
}
