//! The optimistic kit: what Silo and TicToc share over tables.
//!
//! Both protocols read without locks (a seqlock copy of a record's meta word, seq word and
//! row), keep a read set of the records they saw and a node set of the leaves they looked
//! at, buffer their writes, insert through absent placeholders and delete through tombstones,
//! and lock their write set in `(table, key)` order at commit. They differ in what their meta
//! word means (Silo's TID, TicToc's `[wts, rts]`), in how they validate, and in how they pick
//! a commit timestamp. This module holds everything up to that difference, once:
//!
//! ```text
//!   MetaWord          the two bits the kit reads (lock, dead), when two meta words observed
//!                     around a copy describe one state, what a new placeholder starts with
//!   read_record       the seqlock copy
//!   lock_record       spin until the record's lock bit is ours (callers lock in key order)
//!   lock_live_record  the same, unless the record is dead (reclamation)
//!   Sets              an attempt's read set, node set, write buffer, placeholders made,
//!                     prefetch hints, row buffer and trace; the operations of `Tx` on them
//!                     (prefetch, get, put, insert, delete, scan), locking and releasing the
//!                     write set
//! ```
//!
//! Each protocol keeps its commit (validation and timestamps) and its own meta word layout;
//! its `Tx` forwards every operation here with its [`MetaWord`].

use std::sync::atomic::{AtomicU64, Ordering, fence};

use ordo_storage::epoch::Guard;
use ordo_storage::{InsertError, LeafVersion, TableId};
use ordo_workload::Aborted;

use super::database::{
    ABSENT, Database, META_WORD, Prefetched, SEQ_WORD, TABLE_HEADER_WORDS, Table, VERSION_MASK, write_record,
};
use super::reclaim::Reclaimer;
use super::scan::{Range, scan_merged};
use super::trace::Trace;
use super::writes::{RECENT_READS, WriteBuffer, WriteKind};
use crate::interleave;
use crate::protocol::Spin;

/// What the kit needs to know of a protocol's meta word.
pub(super) trait MetaWord {
    /// The bit a committer holds while it installs.
    const LOCK: u64;
    /// The bit of a reclaimed record: whoever finds it looks the key up again.
    const DEAD: u64;
    /// Whether the interleaving simulator may switch workers before each lookup, insert and
    /// scan (TicToc's yield points; Silo yields only inside commit and reclamation).
    const YIELD_ON_ACCESS: bool;

    /// Whether meta words `before` and `after`, loaded around a copy, describe the same state
    /// (so the copy is of that state).
    fn same_state(before: u64, after: u64) -> bool;

    /// The meta word of a new absent placeholder for a key of `table`.
    fn placeholder_meta(table: &Table) -> u64;
}

/// A record an attempt read: the meta word it saw and the version (`seq & VERSION_MASK`).
#[derive(Debug, Clone, Copy)]
pub(super) struct ReadEntry {
    pub table: TableId,
    pub key: u64,
    pub rid: u64,
    pub meta: u64,
    pub version: u64,
}

/// A consistent `(meta, seq)` of record `rid`, copying its row into `row` when given and the
/// record is present; `None` if the record is dead (reclaimed: look the key up again). The
/// meta word returned is the later of the two loads around the copy: for TicToc, whose words
/// of one state differ only in a grown `rts`, the later one is as true and saves an
/// extension.
pub(super) fn read_record<W: MetaWord>(table: &Table, rid: u64, mut row: Option<&mut [u64]>) -> Option<(u64, u64)> {
    let words = table.record(rid);
    let mut spin = Spin::default();
    loop {
        let before = words[META_WORD].load(Ordering::Acquire);
        if before & W::LOCK != 0 {
            spin.wait();
            continue;
        }
        if before & W::DEAD != 0 {
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
        let after = words[META_WORD].load(Ordering::Relaxed);
        if W::same_state(before, after) {
            return Some((after, seq));
        }
    }
}

/// Locks record `words` unless it is dead (then `None`); returns the meta word it had.
pub(super) fn lock_live_record<W: MetaWord>(words: &[AtomicU64]) -> Option<u64> {
    let mut spin = Spin::default();
    loop {
        let meta = words[META_WORD].load(Ordering::Relaxed);
        if meta & W::DEAD != 0 {
            return None;
        }
        if meta & W::LOCK == 0
            && words[META_WORD]
                .compare_exchange_weak(meta, meta | W::LOCK, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return Some(meta);
        }
        spin.wait();
    }
}

/// Locks record `words` (spinning; callers lock in a global order, so there is no deadlock)
/// and returns the meta word it had.
pub(super) fn lock_record<W: MetaWord>(words: &[AtomicU64]) -> u64 {
    let mut spin = Spin::default();
    loop {
        let meta = words[META_WORD].load(Ordering::Relaxed);
        if meta & W::LOCK == 0
            && words[META_WORD]
                .compare_exchange_weak(meta, meta | W::LOCK, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return meta;
        }
        spin.wait();
    }
}

/// Records `leaf` in a node set (once in a row).
fn note_leaf(nodes: &mut Vec<(TableId, LeafVersion)>, table: TableId, leaf: LeafVersion) {
    if nodes.last() != Some(&(table, leaf)) {
        nodes.push((table, leaf));
    }
}

/// An attempt's sets and buffers, reused by every attempt of a worker.
#[derive(Debug)]
pub(super) struct Sets {
    pub reads: Vec<ReadEntry>,
    /// Leaves looked at (absent keys, scans) with the version seen: the node set.
    pub nodes: Vec<(TableId, LeafVersion)>,
    pub writes: WriteBuffer,
    pub reclaimer: Reclaimer,
    /// How many of `writes.entries` (sorted) commit has locked.
    pub locked: usize,
    /// What the attempt's latest prefetch pass found.
    prefetched: Prefetched,
    row: Vec<u64>,
    in_range: Vec<usize>,
    pub trace: Trace,
}

impl Sets {
    pub fn new(trace: Trace) -> Self {
        Sets {
            reads: Vec::new(),
            nodes: Vec::new(),
            writes: WriteBuffer::default(),
            reclaimer: Reclaimer::default(),
            locked: 0,
            prefetched: Prefetched::default(),
            row: Vec::new(),
            in_range: Vec::new(),
            trace,
        }
    }

    /// Forgets the attempt (placeholders it made stay with the reclaimer's settled list).
    pub fn clear(&mut self) {
        self.reads.clear();
        self.nodes.clear();
        self.writes.clear();
        self.reclaimer.forget_created();
        self.locked = 0;
        self.prefetched.clear();
        self.trace.clear();
    }

    /// `Tx::prefetch`: the pass, whose finds the point reads after it start from (a simulator
    /// may switch workers between the two).
    pub fn prefetch(&mut self, db: &Database, table: TableId, keys: &[u64]) {
        self.prefetched.run(db.table(table), table, keys);
    }

    /// Puts record `rid` of `key`, seen as `(meta, seq)`, into the read set and the trace.
    pub fn note_read(&mut self, table: TableId, key: u64, rid: u64, meta: u64, seq: u64) {
        self.trace.seen(table, key, seq);
        self.reads.push(ReadEntry { table, key, rid, meta, version: seq & VERSION_MASK });
    }

    /// Looks `key` up: `Some((rid, meta, seq))` for a record, `None` for no record (its leaf
    /// noted in the node set); reads the row into the row buffer if asked.
    fn locate<W: MetaWord>(
        &mut self,
        db: &Database,
        table_id: TableId,
        key: u64,
        copy_row: bool,
    ) -> Option<(u64, u64, u64)> {
        if W::YIELD_ON_ACCESS {
            interleave::point();
        }
        let table = db.table(table_id);
        self.row.resize(table.row_words, 0);
        let mut lookup = self.prefetched.lookup(table_id, key);
        loop {
            match lookup.next(table) {
                Err(leaf) => {
                    note_leaf(&mut self.nodes, table_id, leaf);
                    self.trace.absent(table_id, key);
                    return None;
                }
                Ok(rid) => {
                    let row = copy_row.then_some(&mut self.row[..]);
                    if let Some((meta, seq)) = read_record::<W>(table, rid, row) {
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
    fn locate_written<W: MetaWord>(&mut self, db: &Database, table_id: TableId, key: u64) -> Option<(u64, u64, u64)> {
        let recent = self.reads.iter().rev().take(RECENT_READS).find(|read| read.table == table_id && read.key == key);
        let Some(&ReadEntry { rid, .. }) = recent else { return self.locate::<W>(db, table_id, key, false) };
        match read_record::<W>(db.table(table_id), rid, None) {
            Some((meta, seq)) => Some((rid, meta, seq)),
            // Dead: deleted and unlinked since the read (which fails validation at commit);
            // the index knows what holds the key now.
            None => self.locate::<W>(db, table_id, key, false),
        }
    }

    /// `Tx::get` (which never aborts here: reads are validated at commit).
    pub fn get<W: MetaWord>(&mut self, db: &Database, table: TableId, key: u64, row: &mut [u64]) -> bool {
        if let Some(present) = self.writes.own_get(table, key, row) {
            return present;
        }
        let Some((rid, meta, seq)) = self.locate::<W>(db, table, key, true) else { return false };
        self.note_read(table, key, rid, meta, seq);
        if seq & ABSENT != 0 {
            return false;
        }
        row.copy_from_slice(&self.row[..row.len()]);
        true
    }

    /// `Tx::put`: buffered if `key` has a present record (commit checks it still is).
    pub fn put<W: MetaWord>(&mut self, db: &Database, table: TableId, key: u64, row: &[u64]) -> bool {
        if let Some(present) = self.writes.own_put(table, key, row) {
            return present;
        }
        let Some((rid, meta, seq)) = self.locate_written::<W>(db, table, key) else { return false };
        if seq & ABSENT != 0 {
            self.note_read(table, key, rid, meta, seq);
            return false;
        }
        self.writes.push(table, key, rid, WriteKind::Put, row, db.table(table).row_words);
        true
    }

    /// `Tx::insert`: a present record goes into the read set (and the answer is `false`); an
    /// absent one takes a buffered insert; no record, a new absent placeholder enters the
    /// index at once, and the attempt's node-set entry for its leaf moves past it.
    pub fn insert<W: MetaWord>(
        &mut self,
        db: &Database,
        guard: &Guard,
        table_id: TableId,
        key: u64,
        row: &[u64],
    ) -> Result<bool, Aborted> {
        if let Some(inserted) = self.writes.own_insert(table_id, key, row) {
            return Ok(inserted);
        }
        if W::YIELD_ON_ACCESS {
            interleave::point();
        }
        let table = db.table(table_id);
        loop {
            match table.index.get(key) {
                Ok(rid) => {
                    let Some((meta, seq)) = read_record::<W>(table, rid, None) else { continue };
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
                    self.writes.push(table_id, key, rid, WriteKind::Insert, row, table.row_words);
                    return Ok(true);
                }
                Err(_) => {
                    let meta = W::placeholder_meta(table);
                    let rid = table.records.alloc();
                    write_record(table.record(rid), meta, key, ABSENT, &[]);
                    match table.index.insert(key, rid) {
                        Ok(inserted) => {
                            for (node_table, leaf) in &mut self.nodes {
                                if *node_table == table_id && *leaf == inserted.before {
                                    *leaf = inserted.after;
                                }
                            }
                            self.reclaimer.created(table_id, key, rid, ABSENT);
                            self.writes.push(table_id, key, rid, WriteKind::Insert, row, table.row_words);
                            return Ok(true);
                        }
                        Err(InsertError::Present { .. }) => table.records.retire(rid, guard),
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

    /// `Tx::delete`: a buffered tombstone if `key` has a present record (commit checks it
    /// still is).
    pub fn delete<W: MetaWord>(&mut self, db: &Database, table: TableId, key: u64) -> Result<bool, Aborted> {
        if let Some(deleted) = self.writes.own_delete(table, key) {
            return Ok(deleted);
        }
        let is_index = db.table(table).is_index;
        let Some((rid, meta, seq)) = self.locate::<W>(db, table, key, false) else {
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
        self.writes.push(table, key, rid, WriteKind::Delete, &[], db.table(table).row_words);
        Ok(true)
    }

    /// `Tx::scan`: every leaf the index reports goes into the node set, every record passed
    /// (absent ones too) into the read set; the attempt's own writes in the range replace
    /// what the index holds.
    pub fn scan<W: MetaWord>(
        &mut self,
        db: &Database,
        range: Range,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> usize {
        if range.limit == 0 || range.low > range.high {
            return 0;
        }
        if W::YIELD_ON_ACCESS {
            interleave::point();
        }
        let table_id = range.table;
        let table = db.table(table_id);
        self.row.resize(table.row_words, 0);
        self.writes.in_range(table_id, range.low, range.high, &mut self.in_range);
        let Sets { reads, nodes, writes, row, in_range, trace, .. } = self;
        scan_merged(
            table,
            range,
            writes,
            in_range,
            trace,
            row,
            &mut |key, rid, row| {
                let (meta, seq) = read_record::<W>(table, rid, Some(row))?;
                reads.push(ReadEntry { table: table_id, key, rid, meta, version: seq & VERSION_MASK });
                Some(seq)
            },
            &mut |leaf| note_leaf(nodes, table_id, leaf),
            visit,
        )
    }

    /// Commit's first step: locks the write set in `(table, key)` order, checking that each
    /// record is alive and present (put, delete) or absent (insert) as the attempt saw it.
    /// With `yield_each`, the simulator may switch workers after each lock.
    pub fn lock_writes<W: MetaWord>(&mut self, db: &Database, yield_each: bool) -> Result<(), Aborted> {
        self.writes.sort();
        for i in 0..self.writes.entries.len() {
            let write = &mut self.writes.entries[i];
            let words = db.table(write.table).record(write.rid);
            write.locked_meta = lock_record::<W>(words);
            self.locked = i + 1;
            let absent = words[SEQ_WORD].load(Ordering::Relaxed) & ABSENT != 0;
            if write.locked_meta & W::DEAD != 0 || absent != write.kind.absent_before() {
                return Err(Aborted);
            }
            if yield_each {
                interleave::point();
            }
        }
        Ok(())
    }

    /// Unlocks what commit locked, hands the attempt's placeholders to reclamation (as of
    /// `epoch`) and forgets the attempt.
    pub fn release(&mut self, db: &Database, epoch: u64) {
        for write in &self.writes.entries[..self.locked] {
            let words = db.table(write.table).record(write.rid);
            words[META_WORD].store(write.locked_meta, Ordering::Release);
        }
        self.locked = 0;
        self.reclaimer.abandon_created(epoch);
        self.clear();
    }
}
