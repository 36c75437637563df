//! `serial` over tables: one worker, no concurrency control. The per-core bound every
//! protocol's single-thread number is measured against: what is left of a transaction once
//! nothing is locked, validated or stamped.
//!
//! ```text
//!   get / scan   read the record directly (nobody else writes it); own writes first; a get
//!                of a key the prefetch pass found starts from the record it found
//!   put          buffered if the key is present
//!   insert       absent record: buffered; no record: an absent placeholder goes into the
//!                index at once (so own scans find it), buffered
//!   delete       buffered tombstone if the key is present
//!   commit       epoch = global epoch; install rows and seq words (version + 1)
//! ```
//!
//! Writes are still buffered, so a user abort (TPC-C's rolled-back NewOrder) leaves nothing,
//! and inserts and deletes go through placeholders and tombstones reclaimed an epoch later,
//! exactly as in the concurrent protocols: the difference measured is concurrency control
//! alone. Phantom protection: nothing to protect, one transaction runs at a time. Commit order
//! is the serial order; versions count per key, so histories carry no timestamp.
//!
//! Two transactions never conflict, so there is no timeline of a conflict to walk: T1 scans
//! items 30..=50 and commits, then T2 inserts 35 and commits; T1 is simply first.

use std::sync::atomic::Ordering;

use ordo_harness::AbortCause;
use ordo_storage::epoch::{Guard, pin};
use ordo_storage::{Direction, InsertError, TableId};
use ordo_workload::{Aborted, TableWorkload, Tx};

use super::database::{
    ABSENT, Database, Index, LoadError, META_WORD, Prefetched, SEQ_WORD, TABLE_HEADER_WORDS, Table, write_record,
};
use super::epoch::Epochs;
use super::protocol::{Committed, TableProtocol, WorkerOptions};
use super::reclaim::{Claim, Reclaimer};
use super::scan::{Range, scan_merged};
use super::trace::Trace;
use super::writes::{WriteBuffer, WriteKind, install, next_version};
use crate::config::ProtocolKind;
use crate::interleave;

/// The meta word of a reclaimed record (every other record's is 0).
const DEAD: u64 = 1 << 63;

/// `serial` over a [`Database`].
#[derive(Debug)]
pub struct SerialTables {
    db: Database,
}

/// The one worker's state.
#[derive(Debug)]
pub struct SerialWorker {
    writes: WriteBuffer,
    reclaimer: Reclaimer,
    /// What the attempt's latest prefetch pass found: a lookup starts from it (nothing
    /// unlinks a record while the one worker's attempt runs).
    prefetched: Prefetched,
    row: Vec<u64>,
    in_range: Vec<usize>,
    trace: Trace,
}

impl SerialWorker {
    fn clear_attempt(&mut self) {
        self.writes.clear();
        self.reclaimer.forget_created();
        self.prefetched.clear();
        self.trace.clear();
    }
}

/// The seq word of record `rid`, copying its row into `row` when the record is present.
#[inline]
fn read_record(table: &Table, rid: u64, row: &mut [u64]) -> u64 {
    let words = table.record(rid);
    let seq = words[SEQ_WORD].load(Ordering::Relaxed);
    if seq & ABSENT == 0 {
        for (out, word) in row.iter_mut().zip(&words[TABLE_HEADER_WORDS..]) {
            *out = word.load(Ordering::Relaxed);
        }
    }
    seq
}

impl SerialTables {
    /// Loads `workload` into a new database (see [`Database::load`]) with epoch clock
    /// `epochs`.
    pub fn load(
        workload: &dyn TableWorkload,
        index: Index,
        load_threads: usize,
        epochs: Epochs,
    ) -> Result<Self, LoadError> {
        Ok(SerialTables { db: Database::load(workload, index, load_threads, 0, epochs)? })
    }

    fn reclaim(&self, worker: &mut SerialWorker, guard: &Guard, everything: bool) {
        worker.reclaimer.reclaim(
            &self.db,
            guard,
            everything,
            |words| {
                let meta = words[META_WORD].load(Ordering::Relaxed);
                if meta & DEAD != 0 { Claim::Dead } else { Claim::Locked(meta) }
            },
            |words, meta, dead| words[META_WORD].store(if dead { meta | DEAD } else { meta }, Ordering::Release),
        );
    }
}

impl TableProtocol for SerialTables {
    type Worker = SerialWorker;
    type Attempt<'a> = SerialTx<'a>;

    const INITIAL_META: u64 = 0;

    fn over(db: Database, _kind: ProtocolKind) -> Self {
        SerialTables { db }
    }
    const CONCURRENT: bool = false;

    fn kind(&self) -> ProtocolKind {
        ProtocolKind::Serial
    }

    fn database(&self) -> &Database {
        &self.db
    }

    fn worker(&self, options: WorkerOptions) -> SerialWorker {
        SerialWorker {
            writes: WriteBuffer::default(),
            reclaimer: Reclaimer::default(),
            prefetched: Prefetched::default(),
            row: Vec::new(),
            in_range: Vec::new(),
            trace: Trace::new(options.index, options.workers, options.record_history),
        }
    }

    fn begin<'a>(&'a self, worker: &'a mut SerialWorker, _restart: bool) -> SerialTx<'a> {
        worker.clear_attempt();
        let guard = pin();
        self.reclaim(worker, &guard, false);
        SerialTx { serial: self, worker, guard, done: false }
    }

    fn commit(mut attempt: SerialTx<'_>) -> Result<Committed, AbortCause> {
        attempt.done = true;
        Ok(attempt.install())
    }

    fn abort(mut attempt: SerialTx<'_>) -> AbortCause {
        attempt.done = true;
        attempt.release();
        AbortCause::Conflict
    }

    fn trace(worker: &mut SerialWorker) -> &mut Trace {
        &mut worker.trace
    }

    fn quiesce(&self, worker: &mut SerialWorker) {
        let guard = pin();
        self.reclaim(worker, &guard, true);
    }
}

/// One attempt on [`SerialTables`].
pub struct SerialTx<'a> {
    serial: &'a SerialTables,
    worker: &'a mut SerialWorker,
    guard: Guard,
    done: bool,
}

impl std::fmt::Debug for SerialTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SerialTx").field("writes", &self.worker.writes.entries.len()).finish()
    }
}

impl SerialTx<'_> {
    /// Hands this attempt's placeholders to reclamation.
    fn release(&mut self) {
        self.worker.reclaimer.abandon_created(self.serial.db.epoch());
        self.worker.clear_attempt();
    }

    fn install(&mut self) -> Committed {
        let db = &self.serial.db;
        let worker = &mut *self.worker;
        let epoch = db.epoch();
        for write in &worker.writes.entries {
            let table = db.table(write.table);
            let words = table.record(write.rid);
            if write.kind == WriteKind::InsertDelete {
                // Absent before and after: nothing to install (an own placeholder is settled
                // below).
                continue;
            }
            let version = next_version(table, words, write.kind);
            let seq = install(table, words, write, &worker.writes.rows, version);
            if !write.kind.present_after() {
                worker.reclaimer.left_absent(write.table, write.key, write.rid, seq, epoch);
            }
            let row = &worker.writes.rows[write.row_at..write.row_at + table.row_words];
            worker.trace.installed(write.table, write.kind.effect(), write.key, version, row);
        }
        worker.trace.committed(None);
        worker.reclaimer.settle_created(db, epoch);
        worker.clear_attempt();
        Committed { epoch }
    }

    /// `key`'s record and seq word, or `None` (traced as an absence) if it has none.
    fn locate(&mut self, table_id: TableId, key: u64) -> Option<(u64, u64)> {
        interleave::point();
        let table = self.serial.db.table(table_id);
        match self.worker.prefetched.lookup(table_id, key).next(table) {
            Ok(rid) => {
                debug_assert_eq!(
                    table.record(rid)[META_WORD].load(Ordering::Relaxed) & DEAD,
                    0,
                    "a hinted record died"
                );
                Some((rid, table.record(rid)[SEQ_WORD].load(Ordering::Relaxed)))
            }
            Err(_) => {
                self.worker.trace.absent(table_id, key);
                None
            }
        }
    }
}

impl Drop for SerialTx<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.release();
        }
    }
}

impl Tx for SerialTx<'_> {
    #[inline]
    fn prefetch(&mut self, table: TableId, keys: &[u64]) {
        self.worker.prefetched.run(self.serial.db.table(table), table, keys);
    }

    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], _for_update: bool) -> Result<bool, Aborted> {
        if let Some(present) = self.worker.writes.own_get(table, key, row) {
            return Ok(present);
        }
        let Some((rid, _)) = self.locate(table, key) else { return Ok(false) };
        let seq = read_record(self.serial.db.table(table), rid, row);
        self.worker.trace.seen(table, key, seq);
        Ok(seq & ABSENT == 0)
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        if let Some(present) = self.worker.writes.own_put(table, key, row) {
            return Ok(present);
        }
        let Some((rid, seq)) = self.locate(table, key) else { return Ok(false) };
        if seq & ABSENT != 0 {
            self.worker.trace.seen(table, key, seq);
            return Ok(false);
        }
        let row_words = self.serial.db.table(table).row_words;
        self.worker.writes.push(table, key, rid, WriteKind::Put, row, row_words);
        Ok(true)
    }

    fn insert(&mut self, table_id: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        if let Some(inserted) = self.worker.writes.own_insert(table_id, key, row) {
            return Ok(inserted);
        }
        interleave::point();
        let table = self.serial.db.table(table_id);
        let rid = match table.index.get(key) {
            Ok(rid) => {
                let seq = table.record(rid)[SEQ_WORD].load(Ordering::Relaxed);
                if seq & ABSENT == 0 {
                    self.worker.trace.seen(table_id, key, seq);
                    return Ok(false);
                }
                rid
            }
            Err(_) => {
                let rid = table.records.alloc();
                write_record(table.record(rid), 0, key, ABSENT, &[]);
                match table.index.insert(key, rid) {
                    Ok(_) => self.worker.reclaimer.created(table_id, key, rid, ABSENT),
                    Err(error) => {
                        table.records.retire(rid, &self.guard);
                        // One worker: nobody else put the key in; only a dense index refuses.
                        debug_assert!(matches!(error, InsertError::Fixed), "insert into table {table_id}: {error}");
                        return Ok(false);
                    }
                }
                rid
            }
        };
        self.worker.writes.push(table_id, key, rid, WriteKind::Insert, row, table.row_words);
        Ok(true)
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        if let Some(deleted) = self.worker.writes.own_delete(table, key) {
            return Ok(deleted);
        }
        let Some((rid, seq)) = self.locate(table, key) else { return Ok(false) };
        if seq & ABSENT != 0 {
            self.worker.trace.seen(table, key, seq);
            return Ok(false);
        }
        let row_words = self.serial.db.table(table).row_words;
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
        let table = self.serial.db.table(table_id);
        let worker = &mut *self.worker;
        worker.row.resize(table.row_words, 0);
        worker.writes.in_range(table_id, low, high, &mut worker.in_range);
        let SerialWorker { writes, row, in_range, trace, .. } = worker;
        Ok(scan_merged(
            table,
            Range { table: table_id, low, high, direction, limit },
            writes,
            in_range,
            trace,
            row,
            &mut |_, rid, row| Some(read_record(table, rid, row)),
            &mut |_| {},
            visit,
        ))
    }
}
