//! Multi-version concurrency control over tables: snapshot isolation (`mvcc_si`, first
//! committer wins, ERMIA-SI's guarantee) and serializable snapshot isolation by the Serial
//! Safety Net (`ssi`: Wang, Johnson, Fekete and Pandis, "Efficiently making (almost) any
//! concurrency control mechanism serializable", VLDB Journal 2017, as ERMIA runs it, Kim et
//! al., SIGMOD 2016).
//!
//! ## Versions and snapshots
//! Every record is a head and a chain of versions, newest first (layout:
//! [`super::database::versioned`]). A version carries the commit stamp of its writer
//! (`cstamp`), SSN's `pstamp` (the latest stamp of a reader), `sstamp` (the pi of its
//! overwriter) and `readers` (a bit per committing reader), and `seq`, the version number
//! histories use; a deleted row is a tombstone version. An attempt takes the clock as its
//! snapshot `S` when it begins and reads, of every record, the newest version with
//! `cstamp <= S` (no such version: the key was absent then, the record's *absent
//! pseudo-version*, whose SSN words live in the head). Writes are buffered. Inserts go through
//! absent placeholder records put into the index at once, as in Silo over tables.
//!
//! ## Commit without a latch
//! An update transaction locks its written heads in (table, key) order and checks that the
//! newest version of each is visible to its snapshot (first committer wins), draws its stamp
//! `c` from the clock with one `fetch_add`, and links a new version per write. Nothing else
//! is shared by all committers. A reader that meets a locked head asks the lock holder's
//! status word (`slots`): a holder stamped above the reader's snapshot installs a version
//! the reader would skip anyway, so it reads past the lock; otherwise (unstamped, or stamped
//! at or below its snapshot) it waits until the install is done. Because a committer locks
//! before it draws its stamp, every committer stamped at or below a snapshot is already
//! visible as a lock (or as its version) to a reader of that snapshot: snapshots are
//! consistent. A read-only transaction takes no stamp (under `ssi` it raises the pstamps of
//! what it read to its snapshot at commit, and checks them).
//!
//! `ssi` adds SSN's exclusion window, computed in parallel as in ERMIA (module `ssn`): each
//! committer marks what it overwrites and registers as a reader of what it read before
//! drawing its stamp, waits only for the pi of overwriters stamped before it, and aborts when
//! `pi <= eta`. Read-only transactions are serialized at their snapshot and check only loads.
//!
//! ## A worked timeline: write skew
//! ```text
//!   x@5, y@7 (cstamp 5 and 7, sstamp none); clock 10
//!   T1 begins, S = 10                        T2 begins, S = 10
//!   T1 reads x@5, y@7                        T2 reads x@5, y@7
//!   T1 writes x                              T2 writes y
//!   T1 commits: lock x; x@5 is newest and 5 <= 10 (first committer wins: fine)
//!     mark x@5.sstamp = T1; y@7.readers += T1; c1 = 11
//!     pi  = min(11, sstamp(y@7) = none)               = 11
//!     eta = max(5, 7, pstamp(x@5) = 5)                = 7      11 > 7: commit
//!     link x@11; x@5.sstamp = 11; y@7.pstamp = 11; leave y@7.readers
//!                                            T2 commits: lock y; y@7 newest, 7 <= 10: fine
//!                                              mark y@7.sstamp = T2; x@5.readers += T2; c2 = 12
//!                                              pi  = min(12, sstamp(x@5) = 11)   = 11
//!                                              eta = max(5, 7, pstamp(y@7) = 11) = 11
//!                                              pi <= eta: abort (serialization)
//! ```
//! Had T2 committed while T1 was still deciding, T2 would have found T1's mark on x@5, seen
//! T1 stamped 11 < 12 and waited for T1's pi; had T1 been stamped after T2, T1 would have
//! found T2's bit in x@5's readers and taken T2's stamp into its eta. Under `mvcc_si` both
//! commit (each wrote a different row, first committer wins is satisfied): write skew, which
//! snapshot isolation allows.
//!
//! ## Phantoms
//! `mvcc_si` reads scans from the snapshot and has no phantom protection (a predicate write
//! skew commits; `tests/tables_mvcc_anomalies.rs` shows it). `ssi` protects predicates by
//! node-set validation as ERMIA does (every leaf a scan or an absent read looked at, with its
//! version, checked at commit) plus leaf stamps as SSN's pstamp for phantoms: a reader raises
//! `stamp(leaf)` to its snapshot when it looks and a committing scanner to its stamp before
//! it validates; a transaction that put a new key into the index folds the key's
//! `stamp(leaf)` into its eta, as if it overwrote a version the scanner read. A scan that
//! passes a record absent at its snapshot (a placeholder, a tombstone, or a row inserted
//! later) registers on that record's version or absent pseudo-version like any read, so an
//! insert into an existing record is caught by the version words instead.
//!
//! ## Memory
//! An overwrite leaves the overwritten version to its writer's collector: at the start of a
//! later transaction, once the low-water mark (the smallest snapshot any worker publishes)
//! has passed the overwrite's stamp, the worker cuts the record's chain below the newest
//! version the mark can see. A tombstone (or an aborted insert's placeholder) leaves the index
//! once it is older than the low-water mark and an epoch has passed, as in Silo over tables.
//! So memory holds the live rows plus the versions written since the oldest running snapshot
//! began: a long reader holds reclamation back. Whatever the readers, no chain keeps more than
//! `versions_max` versions: one that grows beyond it is cut to half at once (versions below
//! the low-water mark first). A reader whose version was cut that way walks to a `truncated`
//! link and aborts with [`AbortCause::SnapshotTooOld`]; it never reads a wrong version, since
//! a cut chain ends in that marker rather than in an older version.
//!
//! ## Histories
//! Reads record the version the snapshot saw (an older one, under concurrency), scans their
//! rows and tombstones, installs their new version; `mvcc_si`'s histories pass
//! `ordo_history::check_snapshot_isolation` (cycles, such as write skew's, only with two
//! anti-dependencies in a row), `ssi`'s pass `ordo_history::check`.
//! Commit stamps are not a serial order under SSN (anti-dependencies may point backwards), so
//! entries carry no timestamp. `Committed.epoch` is the epoch read right after the stamp is
//! drawn (a read-only transaction: at commit).

mod chain;
mod slots;
mod ssn;
mod tx;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering, fence};

use crossbeam::utils::CachePadded;
use ordo_harness::AbortCause;
use ordo_history::HistoryEntry;
use ordo_storage::epoch::{Guard, pin};
use ordo_storage::{InsertError, LeafVersion, TableId};
use ordo_workload::TableWorkload;

use self::chain::{Cuttings, Target, cut, lock_live, retire_chain, unlock};
use self::slots::{Phase, Slots};
use self::ssn::CommitWords;
pub use self::ssn::SSN_WORKERS_MAX;
use super::database::versioned::{COUNT, CSTAMP, NEWEST, NO_VERSION};
use super::database::{
    ABSENT, Database, Index, KEY_WORD, Layout, LoadError, Prefetched, SEQ_WORD, Table, VERSION_MASK, versioned,
    write_version,
};
use super::durable::CheckpointSource;
use super::epoch::Epochs;
use super::protocol::{Committed, TableProtocol, WorkerOptions};
use super::silo::TABLE_WORKERS_MAX;
use super::trace::{Trace, WriteEffect};
use crate::config::ProtocolKind;
use crate::interleave;

/// Most versions a record keeps unless configured otherwise.
pub const VERSIONS_DEFAULT: usize = 8;
/// Fewest versions a record may be limited to.
pub const VERSIONS_MIN: usize = 2;
/// Most chains a worker trims when a transaction begins.
pub const TRIMS_PER_BEGIN_MAX: usize = 64;
/// Most tombstones and placeholders a worker reclaims when a transaction begins.
pub const RECLAIM_PER_BEGIN_MAX: usize = 16;
/// Most unreachable versions a worker keeps per table for reuse (more go back to the arena
/// through the epoch).
pub const SPARE_VERSIONS_MAX: usize = 4096;
/// Retirements through the epoch after which a worker flushes them to the collector
/// (crossbeam collects a bounded number per pin; a worker that retires faster must push).
const DEFERRED_PER_FLUSH: usize = 64;
const NO_SUCCESSOR: u64 = versioned::NO_SUCCESSOR;

/// Which guarantee a [`MvccTables`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Snapshot isolation, first committer wins (`mvcc_si`).
    Snapshot,
    /// Serializable, by the Serial Safety Net (`ssi`).
    SerialSafetyNet,
}

/// MVCC over a multi-version [`Database`].
#[derive(Debug)]
pub struct MvccTables {
    db: Database,
    isolation: Isolation,
    clock: CachePadded<AtomicU64>,
    slots: Arc<Slots>,
    versions_max: u64,
    /// Per table: the largest stamp of a tombstone reclaimed from it (what an absent key
    /// without a version was last written by, at most).
    retired_cstamp: Vec<CachePadded<AtomicU64>>,
}

/// What a buffered write does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteKind {
    /// Present before and after.
    Put,
    /// Absent before, present after.
    Insert,
    /// Present before, absent after.
    Delete,
    /// Absent before and after (an own insert deleted again): installs nothing.
    InsertDelete,
}

impl WriteKind {
    fn present_before(self) -> bool {
        matches!(self, WriteKind::Put | WriteKind::Delete)
    }

    fn present_after(self) -> bool {
        matches!(self, WriteKind::Put | WriteKind::Insert)
    }

    fn effect(self) -> WriteEffect {
        match self {
            WriteKind::Put => WriteEffect::Update,
            WriteKind::Insert => WriteEffect::Insert,
            WriteKind::Delete | WriteKind::InsertDelete => WriteEffect::Delete,
        }
    }
}

/// A version (or absent pseudo-version) an SSN attempt read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ReadEntry {
    table: TableId,
    key: u64,
    rid: u64,
    target: Target,
    /// The attempt overwrites this very version itself (set at commit, by `announce`).
    overwritten: bool,
}

#[derive(Debug, Clone, Copy)]
struct WriteEntry {
    table: TableId,
    key: u64,
    rid: u64,
    kind: WriteKind,
    /// Where the row is in the worker's row buffer.
    row_at: usize,
    /// The attempt put this key into the index (a new placeholder).
    new_entry: bool,
    /// What it overwrites, known once locked.
    target: Target,
    /// The head's seq word when locked.
    seq_before: u64,
}

impl WriteEntry {
    /// Whether commit locks and installs it (an insert deleted again does neither).
    fn locks(&self) -> bool {
        self.kind != WriteKind::InsertDelete
    }
}

/// A record this worker left absent: a tombstone, or a placeholder no version was installed
/// into.
#[derive(Debug, Clone, Copy)]
struct Pending {
    table: TableId,
    key: u64,
    rid: u64,
    /// The head's seq word when left (a record changed since is not reclaimed).
    seq: u64,
    /// The head's newest version when left ([`NO_VERSION`] for a placeholder).
    newest: u64,
    /// The tombstone's stamp (0 for a placeholder).
    cstamp: u64,
    epoch: u64,
}

/// A record whose versions below the one stamped `cstamp` become garbage once no snapshot
/// is older than `cstamp`.
#[derive(Debug, Clone, Copy)]
struct Trim {
    table: TableId,
    rid: u64,
    cstamp: u64,
}

/// A worker's state, reused by every attempt.
#[derive(Debug)]
pub struct MvccWorker {
    slot: usize,
    slots: Arc<Slots>,
    ssn: bool,
    attempt: u64,
    snapshot: u64,
    /// SSN: versions read, leaves looked at, and the largest creator stamp read.
    reads: Vec<ReadEntry>,
    nodes: Vec<(TableId, LeafVersion)>,
    eta_reads: u64,
    /// `(table, key, record)` of every point read that found a record, newest last: a put or
    /// a delete looks here before it descends the index (see `MvccTx::find_written`).
    found: Vec<(TableId, u64, u64)>,
    /// What the attempt's latest prefetch pass found: a lookup starts from it.
    prefetched: Prefetched,
    writes: Vec<WriteEntry>,
    rows: Vec<u64>,
    /// Placeholders this attempt put into an index.
    created: Vec<Pending>,
    pending: VecDeque<Pending>,
    trims: VecDeque<Trim>,
    /// Per table: versions cut off below the low-water mark, reused by the next installs.
    spare: Vec<Vec<u64>>,
    /// Ids retired through the epoch since the last flush.
    deferred: usize,
    /// Writes `..locked` (in sorted order) whose heads this attempt may hold.
    locked: usize,
    /// Whether the attempt entered its commit (its slot left `Active`).
    committing: bool,
    /// SSN: whether marks and reader bits are out.
    announced: bool,
    /// The low-water mark as last computed (it only grows).
    low_water: u64,
    /// Why an operation aborted the attempt.
    cause: Option<AbortCause>,
    row: Vec<u64>,
    in_range: Vec<usize>,
    trace: Trace,
}

impl Drop for MvccWorker {
    fn drop(&mut self) {
        self.slots.release(self.slot);
    }
}

impl MvccWorker {
    /// The history recorded so far.
    pub fn history(&mut self) -> &mut Vec<HistoryEntry> {
        self.trace.entries()
    }

    /// Records this worker still has to reclaim, and chains it still has to trim.
    pub fn pending_collection(&self) -> (usize, usize) {
        (self.pending.len(), self.trims.len())
    }

    fn find_write(&self, table: TableId, key: u64) -> Option<usize> {
        self.writes.iter().position(|w| w.table == table && w.key == key)
    }

    /// The write of `(table, key)` that commit locks, in the sorted write set.
    fn locked_write(&self, table: TableId, key: u64) -> Option<usize> {
        self.writes.binary_search_by_key(&(table, key), |w| (w.table, w.key)).ok().filter(|&i| self.writes[i].locks())
    }

    fn push_write(&mut self, entry: (TableId, u64, u64, WriteKind, bool), row: &[u64], row_words: usize) {
        let (table, key, rid, kind, new_entry) = entry;
        let row_at = self.rows.len();
        self.rows.extend_from_slice(row);
        self.rows.resize(row_at + row_words.max(row.len()), 0);
        self.writes.push(WriteEntry {
            table,
            key,
            rid,
            kind,
            row_at,
            new_entry,
            target: Target::Absent,
            seq_before: ABSENT,
        });
    }

    fn set_row(&mut self, index: usize, row: &[u64]) {
        let at = self.writes[index].row_at;
        self.rows[at..at + row.len()].copy_from_slice(row);
    }

    fn clear_attempt(&mut self) {
        self.reads.clear();
        self.nodes.clear();
        self.eta_reads = 0;
        self.found.clear();
        self.prefetched.clear();
        self.writes.clear();
        self.rows.clear();
        self.created.clear();
        self.locked = 0;
        self.committing = false;
        self.announced = false;
        self.cause = None;
        self.trace.clear();
    }
}

impl MvccTables {
    /// Loads `workload` into a new multi-version database (see [`Database::load_versioned`])
    /// with epoch clock `epochs`; no record keeps more than `versions_max` versions.
    ///
    /// # Panics
    /// If `versions_max` is below [`VERSIONS_MIN`] (callers validate it first).
    pub fn load(
        workload: &dyn TableWorkload,
        index: Index,
        load_threads: usize,
        epochs: Epochs,
        isolation: Isolation,
        versions_max: usize,
    ) -> Result<Self, LoadError> {
        assert!(versions_max >= VERSIONS_MIN, "at least {VERSIONS_MIN} versions per record, not {versions_max}");
        let db = Database::load_versioned(workload, index, load_threads, epochs)?;
        Ok(Self::over_with(db, isolation, versions_max))
    }

    /// MVCC with `isolation` over the multi-version `db` (loaded, or recovered from a log:
    /// either way every row is one version stamped 0, so the clock starts at 0); no record
    /// keeps more than `versions_max` versions.
    ///
    /// # Panics
    /// If `db` is not multi-version, or `versions_max` is below [`VERSIONS_MIN`] (callers
    /// validate it first).
    pub fn over_with(db: Database, isolation: Isolation, versions_max: usize) -> Self {
        assert!(versions_max >= VERSIONS_MIN, "at least {VERSIONS_MIN} versions per record, not {versions_max}");
        assert_eq!(db.layout(), Layout::Versioned, "MVCC runs over multi-version tables");
        let retired_cstamp = db.tables().iter().map(|_| CachePadded::new(AtomicU64::new(0))).collect();
        MvccTables {
            db,
            isolation,
            clock: CachePadded::new(AtomicU64::new(0)),
            slots: Arc::new(Slots::new(TABLE_WORKERS_MAX)),
            versions_max: versions_max as u64,
            retired_cstamp,
        }
    }

    /// The tables.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Which guarantee this instance gives.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    fn ssn(&self) -> bool {
        self.isolation == Isolation::SerialSafetyNet
    }

    /// The last commit stamp handed out.
    pub fn clock(&self) -> u64 {
        self.clock.load(Ordering::SeqCst)
    }

    /// State for worker `options.index`.
    ///
    /// # Panics
    /// If another live worker has the same index, or (under SSN) the index is
    /// [`SSN_WORKERS_MAX`] or more: callers validate their thread counts first.
    pub fn worker(&self, options: WorkerOptions) -> MvccWorker {
        assert!(
            !self.ssn() || options.index < SSN_WORKERS_MAX,
            "ssi runs at most {SSN_WORKERS_MAX} workers (worker {})",
            options.index
        );
        let attempt = self.slots.claim(options.index);
        MvccWorker {
            slot: options.index,
            slots: Arc::clone(&self.slots),
            ssn: self.ssn(),
            attempt,
            snapshot: 0,
            reads: Vec::new(),
            nodes: Vec::new(),
            eta_reads: 0,
            found: Vec::new(),
            prefetched: Prefetched::default(),
            writes: Vec::new(),
            rows: Vec::new(),
            created: Vec::new(),
            pending: VecDeque::new(),
            trims: VecDeque::new(),
            spare: vec![Vec::new(); self.db.tables().len()],
            deferred: 0,
            locked: 0,
            committing: false,
            announced: false,
            low_water: 0,
            cause: None,
            row: Vec::new(),
            in_range: Vec::new(),
            trace: Trace::new(options.index, options.workers.max(options.index + 1), options.record_history),
        }
    }

    /// Starts an attempt on `worker` (after collecting what is due). The attempt holds an
    /// epoch guard until it commits, aborts or is dropped (dropping aborts).
    pub fn begin<'a>(&'a self, worker: &'a mut MvccWorker) -> MvccTx<'a> {
        worker.clear_attempt();
        let guard = pin();
        worker.attempt += 1;
        worker.snapshot = self.slots.begin(worker.slot, worker.attempt, &self.clock);
        self.collect(worker, &guard, false);
        MvccTx { mvcc: self, worker, guard, done: false }
    }

    /// Collects everything `worker` holds that no snapshot can see any more, whatever the
    /// epoch (for tests and shutdown); withdraws its snapshot.
    pub fn collect_all(&self, worker: &mut MvccWorker) {
        let guard = pin();
        self.slots.rest(worker.slot);
        worker.low_water = 0;
        self.collect(worker, &guard, true);
    }

    /// Trims chains and reclaims records that are due (all due ones, when `everything`).
    fn collect(&self, worker: &mut MvccWorker, guard: &Guard, everything: bool) {
        let mut refreshed = false;
        let mut due = |worker: &mut MvccWorker, cstamp: u64| {
            if cstamp > worker.low_water && !refreshed {
                worker.low_water = worker.low_water.max(self.slots.low_water(&self.clock));
                refreshed = true;
            }
            cstamp <= worker.low_water
        };
        let mut budget = if everything { worker.trims.len() } else { TRIMS_PER_BEGIN_MAX };
        while budget > 0 {
            let Some(&trim) = worker.trims.front() else { break };
            if !due(worker, trim.cstamp) {
                break;
            }
            worker.trims.pop_front();
            budget -= 1;
            let table = self.db.table(trim.table);
            let head = table.record(trim.rid);
            if lock_live(head, worker.slot).is_some() {
                let spare = &mut worker.spare[trim.table as usize];
                let mut cuttings = Cuttings { unreachable: spare, guard, deferred: &mut worker.deferred };
                cut(table, head, worker.low_water, u64::MAX, &mut cuttings);
                unlock(head);
                let excess = spare.len().saturating_sub(SPARE_VERSIONS_MAX);
                for id in spare.drain(..excess) {
                    table.versions().retire(id, guard);
                    worker.deferred += 1;
                }
            }
        }
        let epoch = self.db.epoch();
        let mut budget = if everything { worker.pending.len() } else { RECLAIM_PER_BEGIN_MAX };
        while budget > 0 {
            let Some(&candidate) = worker.pending.front() else { break };
            if (!everything && candidate.epoch + 1 >= epoch) || !due(worker, candidate.cstamp) {
                break;
            }
            worker.pending.pop_front();
            budget -= 1;
            let table = self.db.table(candidate.table);
            let head = table.record(candidate.rid);
            // A dead record was reclaimed by another worker and may be recycled at any time.
            if lock_live(head, worker.slot).is_none() {
                continue;
            }
            let unchanged = head[KEY_WORD].load(Ordering::Relaxed) == candidate.key
                && head[SEQ_WORD].load(Ordering::Relaxed) == candidate.seq
                && head[NEWEST].load(Ordering::Relaxed) == candidate.newest;
            let removed = unchanged && {
                table.raise_retired_version(candidate.seq & VERSION_MASK);
                self.retired_cstamp[candidate.table as usize].fetch_max(candidate.cstamp, Ordering::SeqCst);
                table.index.remove(candidate.key, candidate.rid)
            };
            if removed {
                head[super::database::META_WORD].store(chain::DEAD, Ordering::Release);
                worker.deferred += retire_chain(table, candidate.newest, guard) as usize + 1;
                table.records.retire(candidate.rid, guard);
            } else {
                unlock(head);
            }
        }
        if worker.deferred >= DEFERRED_PER_FLUSH {
            guard.flush();
            worker.deferred = 0;
        }
    }
}

impl TableProtocol for MvccTables {
    type Worker = MvccWorker;
    type Attempt<'a> = MvccTx<'a>;

    /// A head's meta word: unlocked, no owner.
    const INITIAL_META: u64 = 0;
    const LAYOUT: Layout = Layout::Versioned;

    /// `mvcc_si` or `ssi` (any other kind: snapshot isolation) over `database`, with
    /// [`VERSIONS_DEFAULT`] versions per record at most ([`MvccTables::over_with`] sets it).
    fn over(database: Database, kind: ProtocolKind) -> Self {
        let isolation = if kind == ProtocolKind::Ssi { Isolation::SerialSafetyNet } else { Isolation::Snapshot };
        Self::over_with(database, isolation, VERSIONS_DEFAULT)
    }

    fn kind(&self) -> ProtocolKind {
        match self.isolation {
            Isolation::Snapshot => ProtocolKind::MvccSi,
            Isolation::SerialSafetyNet => ProtocolKind::Ssi,
        }
    }

    fn database(&self) -> &Database {
        &self.db
    }

    fn checkpoint_source(&self) -> &dyn CheckpointSource {
        self
    }

    fn worker(&self, options: WorkerOptions) -> MvccWorker {
        MvccTables::worker(self, options)
    }

    fn begin<'a>(&'a self, worker: &'a mut MvccWorker, _restart: bool) -> MvccTx<'a> {
        MvccTables::begin(self, worker)
    }

    fn commit(attempt: MvccTx<'_>) -> Result<Committed, AbortCause> {
        attempt.commit()
    }

    fn abort(attempt: MvccTx<'_>) -> AbortCause {
        attempt.abort()
    }

    fn trace(worker: &mut MvccWorker) -> &mut Trace {
        &mut worker.trace
    }

    fn quiesce(&self, worker: &mut MvccWorker) {
        self.collect_all(worker);
    }
}

/// A checkpoint reads every row at a snapshot it publishes (`Slots::pin_reader`), as a
/// reader of the committed state: no chain is trimmed below what that snapshot sees, so no
/// version it reads is reused under it, and it waits for a committer that may be stamped at
/// or below it, as any reader does. A snapshot taken after the checkpoint began sees every
/// transaction of an epoch before the checkpoint's begin epoch (each installed before its
/// epoch closed, and drew its stamp before that); what committed later is in the log. A
/// version the cap cut off makes it renew the snapshot and read the record again.
impl CheckpointSource for MvccTables {
    fn table_count(&self) -> usize {
        self.db.tables().len()
    }

    fn checkpoint_rows(
        &self,
        table: TableId,
        from: u64,
        rows_max: usize,
        row: &mut Vec<u64>,
        sink: &mut dyn FnMut(u64, u64, &[u64]),
    ) -> Option<u64> {
        let mut pin = self.slots.pin_reader(&self.clock);
        let mut read = |table: &Table, _key: u64, rid: u64, row: &mut [u64]| loop {
            match chain::visible(&self.slots, table, rid, pin.snapshot(), Some(&mut *row)) {
                Ok(Some(visible)) if visible.present() => return Some(visible.seq & VERSION_MASK),
                // Absent at the snapshot, or the record left the index (only absent records do).
                Ok(_) => return None,
                Err(cause) => {
                    debug_assert_eq!(cause, AbortCause::SnapshotTooOld);
                    pin.renew(&self.clock);
                }
            }
        };
        self.db.scan_records(table, from, rows_max, row, &mut read, sink)
    }
}

/// One attempt of a transaction on [`MvccTables`]: the engine's [`ordo_workload::Tx`].
pub struct MvccTx<'a> {
    mvcc: &'a MvccTables,
    worker: &'a mut MvccWorker,
    guard: Guard,
    done: bool,
}

impl std::fmt::Debug for MvccTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MvccTx")
            .field("snapshot", &self.worker.snapshot)
            .field("reads", &self.worker.reads.len())
            .field("writes", &self.worker.writes.len())
            .finish()
    }
}

impl Drop for MvccTx<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.release();
        }
    }
}

impl MvccTx<'_> {
    /// The attempt's snapshot.
    pub fn snapshot(&self) -> u64 {
        self.worker.snapshot
    }

    /// Validates and installs the attempt's writes; on `Err` nothing was installed and the
    /// cause says why.
    pub fn commit(mut self) -> Result<Committed, AbortCause> {
        self.done = true;
        let result = self.try_commit();
        if result.is_err() {
            self.release();
        }
        result
    }

    /// Ends the attempt without installing anything; returns why it failed (the cause an
    /// operation reported, or [`AbortCause::Conflict`]).
    pub fn abort(mut self) -> AbortCause {
        self.done = true;
        let cause = self.worker.cause.unwrap_or(AbortCause::Conflict);
        self.release();
        cause
    }

    /// Withdraws what commit announced, unlocks what it locked, and hands this attempt's
    /// placeholders to reclamation.
    fn release(&mut self) {
        let mvcc = self.mvcc;
        let worker = &mut *self.worker;
        if worker.committing {
            mvcc.slots.set_phase(worker.slot, worker.attempt, Phase::Aborted);
        }
        if worker.ssn {
            mvcc.withdraw(worker);
        }
        for write in worker.writes[..worker.locked].iter().filter(|w| w.locks()) {
            unlock(mvcc.db.table(write.table).record(write.rid));
        }
        worker.locked = 0;
        let epoch = mvcc.db.epoch();
        for mut placeholder in worker.created.drain(..) {
            placeholder.epoch = epoch;
            worker.pending.push_back(placeholder);
        }
        worker.clear_attempt();
    }

    fn try_commit(&mut self) -> Result<Committed, AbortCause> {
        let mvcc = self.mvcc;
        interleave::point();
        if !self.worker.writes.iter().any(WriteEntry::locks) {
            if mvcc.ssn() {
                mvcc.check_read_only(self.worker)?;
            }
            let epoch = mvcc.db.epoch();
            self.finish(epoch);
            return Ok(Committed { epoch });
        }
        let worker = &mut *self.worker;
        worker.writes.sort_unstable_by_key(|w| (w.table, w.key));
        mvcc.slots.set_phase(worker.slot, worker.attempt, Phase::Committing);
        worker.committing = true;
        self.lock_writes()?;
        interleave::point();
        let worker = &mut *self.worker;
        let words = mvcc.ssn().then(|| mvcc.announce(worker));
        fence(Ordering::SeqCst);
        let cstamp = mvcc.clock.fetch_add(1, Ordering::SeqCst) + 1;
        mvcc.slots.stamp(worker.slot, worker.attempt, cstamp);
        let epoch = mvcc.db.epoch();
        interleave::point();
        let pi = match &words {
            Some(words) => mvcc.exclusion_window(self.worker, words, cstamp)?,
            None => NO_SUCCESSOR,
        };
        mvcc.slots.decide(self.worker.slot, self.worker.attempt, pi);
        interleave::point();
        self.install(cstamp, pi, words.as_ref(), epoch);
        if let Some(words) = &words {
            interleave::point();
            mvcc.post_commit(self.worker, words, cstamp);
        }
        mvcc.slots.set_phase(self.worker.slot, self.worker.attempt, Phase::Idle);
        self.finish(epoch);
        Ok(Committed { epoch })
    }

    /// Records the commit and hands placeholders that stayed empty to reclamation.
    fn finish(&mut self, epoch: u64) {
        let worker = &mut *self.worker;
        for write in &worker.writes {
            if write.kind == WriteKind::InsertDelete
                && let Some(placeholder) = worker.created.iter().find(|p| p.table == write.table && p.key == write.key)
            {
                worker.pending.push_back(Pending { epoch, ..*placeholder });
            }
        }
        worker.created.clear();
        worker.trace.committed(None);
        worker.clear_attempt();
    }

    /// Locks the written heads in (table, key) order; each must not be dead, its newest
    /// version must be visible to the snapshot (first committer wins), and the row must be
    /// present or absent as the write expects.
    fn lock_writes(&mut self) -> Result<(), AbortCause> {
        let mvcc = self.mvcc;
        let slot = self.worker.slot;
        for i in 0..self.worker.writes.len() {
            if !self.worker.writes[i].locks() {
                continue;
            }
            let table = mvcc.db.table(self.worker.writes[i].table);
            while lock_live(table.record(self.worker.writes[i].rid), slot).is_none() {
                // The record left the index since. A row present at the snapshot cannot have
                // (only absent records are reclaimed, and only once every snapshot sees them
                // absent): first committer wins fails. An insert goes to whatever record holds
                // the key now, or to a new placeholder.
                let write = self.worker.writes[i];
                if write.kind.present_before() {
                    return Err(AbortCause::Conflict);
                }
                let (rid, new_entry) = match table.index.get(write.key) {
                    Ok(rid) => (rid, false),
                    Err(_) => match self.new_placeholder(write.table, write.key) {
                        Some(rid) => (rid, true),
                        None => continue,
                    },
                };
                let worker = &mut *self.worker;
                worker.writes[i].rid = rid;
                worker.writes[i].new_entry |= new_entry;
            }
            let worker = &mut *self.worker;
            let write = worker.writes[i];
            let head = table.record(write.rid);
            worker.locked = i + 1;
            let newest = head[NEWEST].load(Ordering::Relaxed);
            let (target, cstamp) = if newest == NO_VERSION {
                (Target::Absent, 0)
            } else {
                (Target::Version(newest), table.version(newest)[CSTAMP].load(Ordering::Relaxed))
            };
            let seq = head[SEQ_WORD].load(Ordering::Relaxed);
            if cstamp > worker.snapshot || (seq & ABSENT == 0) != write.kind.present_before() {
                return Err(AbortCause::Conflict);
            }
            worker.writes[i].target = target;
            worker.writes[i].seq_before = seq;
        }
        Ok(())
    }

    /// Puts a new absent placeholder for `key` into `table_id`'s index (moving the attempt's
    /// node-set entries for its leaf past its own insert) and returns its record, or `None`
    /// if the key has a record (look it up again).
    fn new_placeholder(&mut self, table_id: TableId, key: u64) -> Option<u64> {
        let table = self.mvcc.db.table(table_id);
        let rid = table.records.alloc();
        super::database::write_head(table.record(rid), key, ABSENT, NO_VERSION, 0);
        match table.index.insert(key, rid) {
            Ok(inserted) => {
                let worker = &mut *self.worker;
                for (node_table, leaf) in &mut worker.nodes {
                    if *node_table == table_id && *leaf == inserted.before {
                        *leaf = inserted.after;
                    }
                }
                worker.created.push(Pending {
                    table: table_id,
                    key,
                    rid,
                    seq: ABSENT,
                    newest: NO_VERSION,
                    cstamp: 0,
                    epoch: 0,
                });
                Some(rid)
            }
            Err(InsertError::Present { .. }) => {
                table.records.retire(rid, &self.guard);
                None
            }
            Err(InsertError::Fixed) => unreachable!("a dense table has no absent keys to insert"),
        }
    }

    /// Links a version stamped `cstamp` for every locked write and unlocks it; under SSN
    /// the overwritten version's sstamp becomes `pi`.
    fn install(&mut self, cstamp: u64, pi: u64, words: Option<&CommitWords<'_>>, epoch: u64) {
        let mvcc = self.mvcc;
        let worker = &mut *self.worker;
        let keep = mvcc.versions_max.div_ceil(2);
        for (index, write) in worker.writes.iter().enumerate() {
            if !write.locks() {
                continue;
            }
            let table = mvcc.db.table(write.table);
            let head = table.record(write.rid);
            let mut version = write.seq_before & VERSION_MASK;
            if !write.kind.present_before() {
                version = version.max(table.retired_version_max.load(Ordering::Acquire));
            }
            version += 1;
            let seq = if write.kind.present_after() { version } else { version | ABSENT };
            let older = match write.target {
                Target::Version(id) => id,
                Target::Absent => NO_VERSION,
            };
            let id = chain::new_version(table, write.rid, head, &mut worker.spare[write.table as usize]);
            let row = write.kind.present_after().then(|| &worker.rows[write.row_at..write.row_at + table.row_words]);
            write_version(table.version(id), cstamp, seq, older, row);
            if let Some(overwritten) = words.and_then(|words| words.write(index)) {
                overwritten.sstamp.store(pi, Ordering::SeqCst);
            }
            head[SEQ_WORD].store(seq, Ordering::Relaxed);
            head[NEWEST].store(id, Ordering::Release);
            let count = head[COUNT].load(Ordering::Relaxed) + 1;
            head[COUNT].store(count, Ordering::Relaxed);
            if count & !versioned::INLINE_BUSY > mvcc.versions_max {
                let mut cuttings = Cuttings {
                    unreachable: &mut worker.spare[write.table as usize],
                    guard: &self.guard,
                    deferred: &mut worker.deferred,
                };
                cut(table, head, worker.low_water, keep, &mut cuttings);
            }
            unlock(head);
            let row = &worker.rows[write.row_at..write.row_at + table.row_words];
            worker.trace.installed(write.table, write.kind.effect(), write.key, version, row);
            if older != NO_VERSION {
                worker.trims.push_back(Trim { table: write.table, rid: write.rid, cstamp });
            }
            if !write.kind.present_after() {
                worker.pending.push_back(Pending {
                    table: write.table,
                    key: write.key,
                    rid: write.rid,
                    seq,
                    newest: id,
                    cstamp,
                    epoch,
                });
            }
        }
        worker.locked = 0;
    }
}
