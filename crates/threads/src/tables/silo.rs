//! Silo (Tu et al., SOSP 2013) over tables, with phantom protection by node-set validation
//! (Silo §4.6), inserts through absent placeholder records and deletes through tombstones.
//!
//! ```text
//!   meta (TID word):  [ lock:1 | latest:1 | dead:1 | epoch:29 | sequence:32 ]
//!   seq word:         [ absent:1 | version:63 ]
//!
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
use ordo_storage::{Direction, InsertError, LeafVersion, TableId};
use ordo_workload::{Aborted, Tx};

use crate::interleave;
use crate::protocol::Spin;

use super::database::{
    ABSENT, Database, Index, LoadError, META_WORD, SEQ_WORD, TABLE_HEADER_WORDS, Table, VERSION_MASK, write_record,
};
use super::epoch::Epochs;
use super::protocol::{Committed, TableProtocol, WorkerOptions};
pub use super::reclaim::RECLAIM_PER_BEGIN_MAX;
use super::reclaim::{Claim, Reclaimer};
use super::scan::{Range, scan_merged};
use super::trace::Trace;
use super::writes::{RECENT_READS, WriteBuffer, WriteKind, install, next_version};
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

#[derive(Debug, Clone, Copy)]
struct ReadEntry {
    table: TableId,
    key: u64,
    rid: u64,
    meta: u64,
}

/// A worker's state, reused by every attempt.
#[derive(Debug)]
pub struct SiloWorker {
    reads: Vec<ReadEntry>,
    nodes: Vec<(TableId, LeafVersion)>,
    writes: WriteBuffer,
    reclaimer: Reclaimer,
    locked: usize,
    last_tid: u64,
    row: Vec<u64>,
    in_range: Vec<usize>,
    trace: Trace,
}

impl SiloWorker {
    /// The history recorded so far.
    pub fn history(&mut self) -> &mut Vec<HistoryEntry> {
        self.trace.entries()
    }

    /// Reclamation candidates waiting for their epoch to pass.
    pub fn pending_reclaims(&self) -> usize {
        self.reclaimer.len()
    }

    fn clear_attempt(&mut self) {
        self.reads.clear();
        self.nodes.clear();
        self.writes.clear();
        self.reclaimer.forget_created();
        self.locked = 0;
        self.trace.clear();
    }
}

/// Records `leaf` in a node set (once in a row).
fn note_leaf(nodes: &mut Vec<(TableId, LeafVersion)>, table: TableId, leaf: LeafVersion) {
    if nodes.last() != Some(&(table, leaf)) {
        nodes.push((table, leaf));
    }
}

/// A consistent `(meta, seq)` of record `rid`, copying its row into `row` when given and the
/// record is present; `None` if the record is dead (reclaimed: look the key up again).
fn read_record(table: &Table, rid: u64, mut row: Option<&mut [u64]>) -> Option<(u64, u64)> {
    let words = table.record(rid);
    let mut spin = Spin::default();
    loop {
        let before = words[META_WORD].load(Ordering::Acquire);
        if before & LOCK != 0 {
            spin.wait();
            continue;
        }
        if before & DEAD != 0 {
            return None;
        }
        let seq = words[SEQ_WORD].load(Ordering::Relaxed);
        if seq & ABSENT == 0
            && let Some(row) = row.as_deref_mut()
        {
            for (out, word) in row.iter_mut().zip(&words[TABLE_HEADER_WORDS..]) {
                *out = word.load(Ordering::Relaxed);
            }
        }
        fence(Ordering::Acquire);
        if words[META_WORD].load(Ordering::Relaxed) == before {
            return Some((before, seq));
        }
    }
}

/// Locks record `words` unless it is dead (then `None`); returns the meta word it had.
fn lock_live_record(words: &[std::sync::atomic::AtomicU64]) -> Option<u64> {
    let mut spin = Spin::default();
    loop {
        let meta = words[META_WORD].load(Ordering::Relaxed);
        if meta & DEAD != 0 {
            return None;
        }
        if meta & LOCK == 0
            && words[META_WORD].compare_exchange_weak(meta, meta | LOCK, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            return Some(meta);
        }
        spin.wait();
    }
}

/// Locks record `words` (spinning; callers lock in a global order, so there is no deadlock)
/// and returns the meta word it had.
fn lock_record(words: &[std::sync::atomic::AtomicU64]) -> u64 {
    let mut spin = Spin::default();
    loop {
        let meta = words[META_WORD].load(Ordering::Relaxed);
        if meta & LOCK == 0
            && words[META_WORD].compare_exchange_weak(meta, meta | LOCK, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            return meta;
        }
        spin.wait();
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
        SiloWorker {
            reads: Vec::new(),
            nodes: Vec::new(),
            writes: WriteBuffer::default(),
            reclaimer: Reclaimer::default(),
            locked: 0,
            last_tid: 0,
            row: Vec::new(),
            in_range: Vec::new(),
            trace: Trace::new(options.index, options.workers, options.record_history),
        }
    }

    /// Starts an attempt on `worker` (after reclaiming what is due). The attempt holds an
    /// epoch guard until it commits, aborts or is dropped (dropping aborts).
    pub fn begin<'a>(&'a self, worker: &'a mut SiloWorker) -> SiloTx<'a> {
        worker.clear_attempt();
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
        worker.reclaimer.reclaim(
            &self.db,
            guard,
            everything,
            |words| {
                let claim = lock_live_record(words).map_or(Claim::Dead, Claim::Locked);
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
        &mut worker.trace
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
            .field("writes", &self.worker.writes.entries.len())
            .field("reads", &self.worker.reads.len())
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
        let worker = &mut *self.worker;
        for write in &worker.writes.entries[..worker.locked] {
            let words = self.silo.db.table(write.table).record(write.rid);
            words[META_WORD].store(write.locked_meta, Ordering::Release);
        }
        worker.reclaimer.abandon_created(self.silo.epoch());
        worker.clear_attempt();
    }

    fn try_commit(&mut self) -> Result<Committed, Aborted> {
        let db = &self.silo.db;
        let worker = &mut *self.worker;
        worker.writes.sort();
        for i in 0..worker.writes.entries.len() {
            let write = &mut worker.writes.entries[i];
            let words = db.table(write.table).record(write.rid);
            write.locked_meta = lock_record(words);
            worker.locked = i + 1;
            let absent = words[SEQ_WORD].load(Ordering::Relaxed) & ABSENT != 0;
            if write.locked_meta & DEAD != 0 || absent != write.kind.absent_before() {
                return Err(Aborted);
            }
            interleave::point();
        }
        fence(Ordering::SeqCst);
        let epoch = self.silo.epoch();
        let mut tid_max = worker.last_tid;
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
        worker.last_tid = tid;
        // Silo's TIDs follow write-read and write-write dependencies but not anti-dependencies,
        // so they are no serial order: the history carries no timestamp.
        worker.trace.committed(None);
        // An own insert deleted again left its placeholder absent: reclaim it like a tombstone.
        worker.reclaimer.settle_created(db, epoch);
        worker.clear_attempt();
        Ok(Committed { epoch })
    }

    /// Looks `key` up: `Ok(Some((rid, meta, seq)))` for a record, `Ok(None)` for no record
    /// (its leaf noted in the node set); reads the row into the worker's row buffer if asked.
    fn locate(&mut self, table_id: TableId, key: u64, copy_row: bool) -> Option<(u64, u64, u64)> {
        let table = self.silo.db.table(table_id);
        let worker = &mut *self.worker;
        worker.row.resize(table.row_words, 0);
        loop {
            match table.index.get(key) {
                Err(leaf) => {
                    note_leaf(&mut worker.nodes, table_id, leaf);
                    worker.trace.absent(table_id, key);
                    return None;
                }
                Ok(rid) => {
                    let row = copy_row.then_some(&mut worker.row[..]);
                    if let Some((meta, seq)) = read_record(table, rid, row) {
                        return Some((rid, meta, seq));
                    }
                }
            }
        }
    }

    /// [`Self::locate`] for a put. A key among the attempt's last [`RECENT_READS`] reads keeps
    /// the record that read found, so the index is not searched a second time (a
    /// read-modify-write would otherwise descend the tree twice). The attempt's epoch pin keeps
    /// that record from being recycled; if it was deleted or replaced since the read, the
    /// read's validation fails at commit.
    fn locate_written(&mut self, table_id: TableId, key: u64) -> Option<(u64, u64, u64)> {
        let recent =
            self.worker.reads.iter().rev().take(RECENT_READS).find(|read| read.table == table_id && read.key == key);
        let Some(&ReadEntry { rid, .. }) = recent else { return self.locate(table_id, key, false) };
        let table = self.silo.db.table(table_id);
        match read_record(table, rid, None) {
            Some((meta, seq)) => Some((rid, meta, seq)),
            // Dead: deleted and unlinked since the read (which fails validation at commit);
            // the index knows what holds the key now.
            None => self.locate(table_id, key, false),
        }
    }

    fn note_read(&mut self, table: TableId, key: u64, rid: u64, meta: u64, seq: u64) {
        let version = seq & VERSION_MASK;
        if seq & ABSENT == 0 {
            self.worker.trace.read(table, key, version);
        } else {
            self.worker.trace.absent_at(table, key, version);
        }
        self.worker.reads.push(ReadEntry { table, key, rid, meta });
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
        self.silo.db.table(table).prefetch(keys);
    }

    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], _for_update: bool) -> Result<bool, Aborted> {
        if let Some(present) = self.worker.writes.own_get(table, key, row) {
            return Ok(present);
        }
        let Some((rid, meta, seq)) = self.locate(table, key, true) else { return Ok(false) };
        self.note_read(table, key, rid, meta, seq);
        if seq & ABSENT != 0 {
            return Ok(false);
        }
        row.copy_from_slice(&self.worker.row[..row.len()]);
        Ok(true)
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        if let Some(present) = self.worker.writes.own_put(table, key, row) {
            return Ok(present);
        }
        let Some((rid, meta, seq)) = self.locate_written(table, key) else { return Ok(false) };
        if seq & ABSENT != 0 {
            self.note_read(table, key, rid, meta, seq);
            return Ok(false);
        }
        let row_words = self.silo.db.table(table).row_words;
        self.worker.writes.push(table, key, rid, WriteKind::Put, row, row_words);
        Ok(true)
    }

    fn insert(&mut self, table_id: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        if let Some(inserted) = self.worker.writes.own_insert(table_id, key, row) {
            return Ok(inserted);
        }
        let table = self.silo.db.table(table_id);
        loop {
            match table.index.get(key) {
                Ok(rid) => {
                    let Some((meta, seq)) = read_record(table, rid, None) else { continue };
                    if seq & ABSENT == 0 {
                        if table.is_index {
                            // The base row was absent in this attempt's view, yet its index
                            // entry is present: another transaction committed the row since,
                            // and this attempt cannot commit. Stop before the base and its
                            // index disagree.
                            return Err(Aborted);
                        }
                        self.note_read(table_id, key, rid, meta, seq);
                        return Ok(false);
                    }
                    self.worker.writes.push(table_id, key, rid, WriteKind::Insert, row, table.row_words);
                    return Ok(true);
                }
                Err(_) => {
                    let rid = table.records.alloc();
                    write_record(table.record(rid), INITIAL_META, key, ABSENT, &[]);
                    match table.index.insert(key, rid) {
                        Ok(inserted) => {
                            for (node_table, leaf) in &mut self.worker.nodes {
                                if *node_table == table_id && *leaf == inserted.before {
                                    *leaf = inserted.after;
                                }
                            }
                            self.worker.reclaimer.created(table_id, key, rid, ABSENT);
                            self.worker.writes.push(table_id, key, rid, WriteKind::Insert, row, table.row_words);
                            return Ok(true);
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
        }
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        if let Some(deleted) = self.worker.writes.own_delete(table, key) {
            return Ok(deleted);
        }
        let is_index = self.silo.db.table(table).is_index;
        let Some((rid, meta, seq)) = self.locate(table, key, false) else {
            // As in `insert`: a present base row without its index entry is a view that
            // cannot commit.
            return if is_index { Err(Aborted) } else { Ok(false) };
        };
        if seq & ABSENT != 0 {
            if is_index {
                return Err(Aborted);
            }
            self.note_read(table, key, rid, meta, seq);
            return Ok(false);
        }
        let row_words = self.silo.db.table(table).row_words;
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
        let table = self.silo.db.table(table_id);
        let worker = &mut *self.worker;
        worker.row.resize(table.row_words, 0);
        worker.writes.in_range(table_id, low, high, &mut worker.in_range);
        let SiloWorker { reads, nodes, writes, row, in_range, trace, .. } = worker;
        let visited = scan_merged(
            table,
            Range { table: table_id, low, high, direction, limit },
            writes,
            in_range,
            trace,
            row,
            &mut |key, rid, row| {
                let (meta, seq) = read_record(table, rid, Some(row))?;
                reads.push(ReadEntry { table: table_id, key, rid, meta });
                Some(seq)
            },
            &mut |leaf| note_leaf(nodes, table_id, leaf),
            visit,
        );
        Ok(visited)
    }
}
