//! The operations of an attempt: reads from the snapshot, buffered writes, and (under SSN)
//! the read set, node set and read-time stamps they leave behind.
//!
//! ```text
//!   prefetch   the index's validated pass over a step's keys; a later get of a key it
//!              found starts from that record instead of index.get (a dead one: index.get)
//!   get k      own write? answer from it. Else index.get(k):
//!                no record  -> absent (SSN: its leaf and version into the node set)
//!                record r   -> the version of r the snapshot sees: present, a tombstone,
//!                              or none (the absent pseudo-version); SSN: read set += it
//!                              (its pstamp is raised at commit); an absent answer also puts
//!                              its leaf into the node set (r may be reclaimed and the key
//!                              inserted anew)
//!   put k      present at the snapshot -> buffered (a newer committed version: abort now,
//!              first committer wins would fail at commit anyway); absent -> false (a read)
//!   insert k   present -> false (a read). Absent with a record -> buffered write into it.
//!              No record -> new placeholder into the index at once (own node-set entries
//!              for that leaf move from Inserted.before to .after), buffered write
//!   delete k   like put, buffering a tombstone
//!   scan       index scan: every record passed is read as a get reads it, own writes in
//!              the range replace what the index holds; SSN: every leaf into the node set,
//!              its stamp raised to the snapshot
//! ```

use std::sync::atomic::Ordering;

use ordo_storage::{Direction, LeafVersion, TableId};
use ordo_workload::{Aborted, Tx};

use super::super::database::{ABSENT, Table, VERSION_MASK};
use super::super::trace::Trace;
use super::super::writes::recently_found;
use super::chain::{Target, Visible, visible};
use super::{MvccTables, MvccTx, MvccWorker, ReadEntry, WriteKind};
use crate::interleave;

/// What a lookup found.
enum Found {
    /// No record: absent, as the index's leaf (at this version) says.
    NoRecord(LeafVersion),
    /// A record, and the version the snapshot sees; under SSN, for an absent version, the
    /// leaf (and its version) that held the record when it was seen.
    Record { rid: u64, visible: Visible, leaf: Option<LeafVersion> },
}

/// Under SSN, records that leaf `leaf` of `table` was looked at by a snapshot at `snapshot`
/// (into `nodes`, its stamp raised to the snapshot). The caller also folds the table's
/// retired stamp into the attempt's eta ([`absent_creator`]).
fn note_leaf(
    mvcc: &MvccTables,
    snapshot: u64,
    nodes: &mut Vec<(TableId, LeafVersion)>,
    table: TableId,
    leaf: LeafVersion,
) {
    if nodes.last() != Some(&(table, leaf)) {
        nodes.push((table, leaf));
    }
    MvccTables::raise(mvcc.db.table(table).index.stamp(leaf.leaf), snapshot);
}

/// The most recent writer an absence in `table` may have been seen from: the largest stamp of
/// a tombstone reclaimed from it.
fn absent_creator(mvcc: &MvccTables, table: TableId) -> u64 {
    mvcc.retired_cstamp[table as usize].load(Ordering::SeqCst)
}

/// Under SSN, records that the attempt read `visible` of record `rid` (into `reads`; its
/// pstamp is raised when the attempt commits, see [`super::ssn`]), and folds its creator into
/// `eta`.
fn note_version(
    mvcc: &MvccTables,
    reads: &mut Vec<ReadEntry>,
    eta: &mut u64,
    table_id: TableId,
    key: u64,
    rid: u64,
    visible: Visible,
) {
    let entry = ReadEntry { table: table_id, key, rid, target: visible.target, overwritten: false };
    if reads.last() != Some(&entry) {
        reads.push(entry);
    }
    let creator = match visible.target {
        Target::Version(_) => visible.cstamp,
        Target::Absent => absent_creator(mvcc, table_id),
    };
    *eta = (*eta).max(creator);
}

impl MvccWorker {
    /// Under SSN, [`note_leaf`] for a point read.
    fn note_leaf(&mut self, mvcc: &MvccTables, table: TableId, leaf: LeafVersion) {
        if self.ssn {
            note_leaf(mvcc, self.snapshot, &mut self.nodes, table, leaf);
            self.eta_reads = self.eta_reads.max(absent_creator(mvcc, table));
        }
    }

    /// Under SSN, [`note_version`] for a point read.
    fn note_version(&mut self, mvcc: &MvccTables, table: TableId, key: u64, rid: u64, visible: Visible) {
        if self.ssn {
            note_version(mvcc, &mut self.reads, &mut self.eta_reads, table, key, rid, visible);
        }
    }
}

/// The leaf holding `key` in `table`, read together with the key's entry: `Some` if the entry
/// is still record `rid`.
fn leaf_holding(table: &Table, key: u64, rid: u64) -> Option<LeafVersion> {
    let (mut found, mut leaf) = (None, None);
    table.index.scan(
        key,
        key,
        Direction::Ascending,
        &mut |_, value| {
            found = Some(value);
            false
        },
        &mut |reported| leaf = Some(reported),
    );
    if found == Some(rid) { leaf } else { None }
}

impl MvccTx<'_> {
    /// Looks `key` up and finds the version the snapshot sees, copying its row into the
    /// worker's row buffer if asked and present.
    fn find(&mut self, table_id: TableId, key: u64, copy_row: bool) -> Result<Found, Aborted> {
        let mvcc = self.mvcc;
        let table = mvcc.db.table(table_id);
        let worker = &mut *self.worker;
        worker.row.resize(table.row_words, 0);
        let mut lookup = worker.prefetched.lookup(table_id, key);
        loop {
            let rid = match lookup.next(table) {
                Err(leaf) => return Ok(Found::NoRecord(leaf)),
                Ok(rid) => rid,
            };
            let row = copy_row.then_some(&mut worker.row[..]);
            let visible = match visible(&mvcc.slots, table, rid, worker.snapshot, row) {
                Err(cause) => {
                    worker.cause = Some(cause);
                    return Err(Aborted);
                }
                Ok(None) => continue,
                Ok(Some(visible)) => visible,
            };
            if !worker.ssn || visible.present() {
                return Ok(Found::Record { rid, visible, leaf: None });
            }
            if let Some(leaf) = leaf_holding(table, key, rid) {
                return Ok(Found::Record { rid, visible, leaf: Some(leaf) });
            }
        }
    }

    /// [`MvccTx::find`] for a put or a delete. A key among the attempt's last [`RECENT_READS`](crate::tables::writes::RECENT_READS)
    /// point reads that found a record keeps that record, so a read-modify-write (or a read
    /// then delete) does not descend the index twice. The attempt's epoch pin keeps the record from being recycled, so while it
    /// is alive it is still the key's; a dead one, or a version without the row (which under
    /// SSN needs the leaf that holds the key), sends the put to the index as before.
    fn find_written(&mut self, table_id: TableId, key: u64) -> Result<Found, Aborted> {
        let worker = &mut *self.worker;
        if let Some(rid) = recently_found(&worker.found, table_id, key) {
            let table = self.mvcc.db.table(table_id);
            match visible(&self.mvcc.slots, table, rid, worker.snapshot, None) {
                Err(cause) => {
                    worker.cause = Some(cause);
                    return Err(Aborted);
                }
                Ok(Some(visible)) if visible.present() => return Ok(Found::Record { rid, visible, leaf: None }),
                Ok(_) => {}
            }
        }
        self.find(table_id, key, false)
    }

    /// Records what [`MvccTx::find`] found as a read (trace, and SSN's sets); returns whether
    /// the row is present.
    fn note_found(&mut self, table: TableId, key: u64, found: &Found) -> bool {
        let mvcc = self.mvcc;
        let worker = &mut *self.worker;
        match *found {
            Found::NoRecord(leaf) => {
                worker.note_leaf(mvcc, table, leaf);
                worker.trace.absent(table, key);
                false
            }
            Found::Record { rid, visible, leaf } => {
                if let Some(leaf) = leaf {
                    worker.note_leaf(mvcc, table, leaf);
                }
                worker.note_version(mvcc, table, key, rid, visible);
                worker.trace.seen(table, key, visible.seq);
                visible.present()
            }
        }
    }

    /// A write of a row present at the snapshot must overwrite the newest version: if a newer
    /// one is committed already, first committer wins fails, so the attempt stops now.
    fn first_committer(&mut self, visible: &Visible) -> Result<(), Aborted> {
        if visible.newest {
            Ok(())
        } else {
            self.worker.cause = Some(ordo_harness::AbortCause::Conflict);
            Err(Aborted)
        }
    }
}

impl Tx for MvccTx<'_> {
    #[inline]
    fn prefetch(&mut self, table_id: TableId, keys: &[u64]) {
        let table = self.mvcc.db.table(table_id);
        self.worker.prefetched.run(table, table_id, keys);
        // A snapshot read's next miss is the record's newest version when that is a side
        // version: ask for those too, side by side. Under plain SI a linked version is
        // read-only. Under SSN committers keep writing the first line of a hot version
        // (pstamps, readers, the overwriter's sstamp), and asking for that line early pulled
        // it away from them (0.90x on two threads at θ = 0.99), so SSN asks only for the
        // row's lines after it (BENCHMARKS.md, "SSN asks for the row's lines only").
        let from_line = usize::from(self.worker.ssn);
        self.worker.prefetched.prefetch_newest_versions(table, from_line);
    }

    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], _for_update: bool) -> Result<bool, Aborted> {
        interleave::point();
        if let Some(i) = self.worker.find_write(table, key) {
            let write = self.worker.writes[i];
            if !write.kind.present_after() {
                return Ok(false);
            }
            row.copy_from_slice(&self.worker.rows[write.row_at..write.row_at + row.len()]);
            return Ok(true);
        }
        let found = self.find(table, key, true)?;
        if let Found::Record { rid, .. } = found {
            self.worker.found.push((table, key, rid));
        }
        if !self.note_found(table, key, &found) {
            return Ok(false);
        }
        row.copy_from_slice(&self.worker.row[..row.len()]);
        Ok(true)
    }

    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        interleave::point();
        if let Some(i) = self.worker.find_write(table, key) {
            if !self.worker.writes[i].kind.present_after() {
                return Ok(false);
            }
            self.worker.set_row(i, row);
            return Ok(true);
        }
        let found = self.find_written(table, key)?;
        let Found::Record { rid, visible, .. } = found else {
            self.note_found(table, key, &found);
            return Ok(false);
        };
        if !visible.present() {
            self.note_found(table, key, &found);
            return Ok(false);
        }
        self.first_committer(&visible)?;
        let row_words = self.mvcc.db.table(table).row_words;
        self.worker.push_write((table, key, rid, WriteKind::Put, false), row, row_words);
        Ok(true)
    }

    fn insert(&mut self, table_id: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        interleave::point();
        if let Some(i) = self.worker.find_write(table_id, key) {
            let write = &mut self.worker.writes[i];
            write.kind = match write.kind {
                WriteKind::Put | WriteKind::Insert => return Ok(false),
                WriteKind::Delete => WriteKind::Put,
                WriteKind::InsertDelete => WriteKind::Insert,
            };
            self.worker.set_row(i, row);
            return Ok(true);
        }
        let mvcc = self.mvcc;
        let table = mvcc.db.table(table_id);
        loop {
            let found = self.find(table_id, key, false)?;
            match found {
                Found::Record { rid, visible, .. } => {
                    // Present: the insert reads that. Absent: it depends on the absence as a
                    // read until it turns out to overwrite it (if it is deleted again, it
                    // stays a read).
                    if self.note_found(table_id, key, &found) {
                        return Ok(false);
                    }
                    self.first_committer(&visible)?;
                    self.worker.push_write((table_id, key, rid, WriteKind::Insert, false), row, table.row_words);
                    return Ok(true);
                }
                Found::NoRecord(_) => {
                    let Some(rid) = self.new_placeholder(table_id, key) else { continue };
                    let worker = &mut *self.worker;
                    let absent = Visible { target: Target::Absent, seq: ABSENT, cstamp: 0, newest: true };
                    worker.note_version(mvcc, table_id, key, rid, absent);
                    worker.push_write((table_id, key, rid, WriteKind::Insert, true), row, table.row_words);
                    return Ok(true);
                }
            }
        }
    }

    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        interleave::point();
        if let Some(i) = self.worker.find_write(table, key) {
            let write = &mut self.worker.writes[i];
            write.kind = match write.kind {
                WriteKind::Delete | WriteKind::InsertDelete => return Ok(false),
                WriteKind::Put => WriteKind::Delete,
                WriteKind::Insert => WriteKind::InsertDelete,
            };
            return Ok(true);
        }
        let found = self.find_written(table, key)?;
        let Found::Record { rid, visible, .. } = found else {
            self.note_found(table, key, &found);
            return Ok(false);
        };
        if !visible.present() {
            self.note_found(table, key, &found);
            return Ok(false);
        }
        self.first_committer(&visible)?;
        let row_words = self.mvcc.db.table(table).row_words;
        self.worker.push_write((table, key, rid, WriteKind::Delete, false), &[], row_words);
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
        interleave::point();
        if limit == 0 || low > high {
            return Ok(0);
        }
        let mvcc = self.mvcc;
        let table = mvcc.db.table(table_id);
        let worker = &mut *self.worker;
        worker.row.resize(table.row_words, 0);
        worker.in_range.clear();
        for (i, write) in worker.writes.iter().enumerate() {
            if write.table == table_id && (low..=high).contains(&write.key) {
                worker.in_range.push(i);
            }
        }
        // Own writes in scan order. They are merged with the index's entries by key: the
        // record of an own insert may have left the index since (a tombstone reclaimed under
        // it; commit then inserts anew), and the scan must still show it.
        let MvccWorker { reads, nodes, eta_reads, writes, rows, row, in_range, trace, snapshot, ssn, .. } = worker;
        let (snapshot, ssn) = (*snapshot, *ssn);
        match direction {
            Direction::Ascending => in_range.sort_unstable_by_key(|&i| writes[i].key),
            Direction::Descending => in_range.sort_unstable_by_key(|&i| std::cmp::Reverse(writes[i].key)),
        }
        let mut next_own = 0;
        trace.scan_begin(table_id);
        let mut visited = 0;
        // The last key handed to `visit` when the scan stopped early: the range it covered
        // ends there.
        let mut stopped_at = None;
        let mut failed = None;
        // Shows own write `i` to the scan; `false` when the scan is done.
        let own = |i: usize, visited: &mut usize, trace: &mut Trace, visit: &mut dyn FnMut(u64, &[u64]) -> bool| {
            let write = &writes[i];
            if write.kind != WriteKind::InsertDelete {
                trace.scan_own(write.key);
            }
            if write.kind.present_after() {
                *visited += 1;
                return visit(write.key, &rows[write.row_at..write.row_at + table.row_words]) && *visited < limit;
            }
            true
        };
        table.index.scan(
            low,
            high,
            direction,
            &mut |key, rid| {
                while let Some(&i) = in_range.get(next_own) {
                    let own_key = writes[i].key;
                    let before = match direction {
                        Direction::Ascending => own_key < key,
                        Direction::Descending => own_key > key,
                    };
                    if !before && own_key != key {
                        break;
                    }
                    next_own += 1;
                    if !own(i, &mut visited, trace, visit) {
                        stopped_at = Some(own_key);
                        return false;
                    }
                    if own_key == key {
                        return true;
                    }
                }
                let found = match visible(&mvcc.slots, table, rid, snapshot, Some(&mut row[..])) {
                    Err(cause) => {
                        failed = Some(cause);
                        return false;
                    }
                    // A dead record was absent to every snapshot and has left the index since
                    // the leaf was read.
                    Ok(None) => return true,
                    Ok(Some(found)) => found,
                };
                if ssn {
                    note_version(mvcc, reads, eta_reads, table_id, key, rid, found);
                }
                let version = found.seq & VERSION_MASK;
                if !found.present() {
                    if version > 0 {
                        trace.scan_row(key, version);
                    }
                    return true;
                }
                trace.scan_row(key, version);
                visited += 1;
                if !visit(key, row) || visited >= limit {
                    stopped_at = Some(key);
                    return false;
                }
                true
            },
            &mut |leaf| {
                if ssn {
                    note_leaf(mvcc, snapshot, nodes, table_id, leaf);
                }
            },
        );
        if stopped_at.is_none() && failed.is_none() {
            for &i in &in_range[next_own..] {
                if !own(i, &mut visited, trace, visit) {
                    stopped_at = Some(writes[i].key);
                    break;
                }
            }
        }
        if ssn {
            *eta_reads = (*eta_reads).max(absent_creator(mvcc, table_id));
        }
        if let Some(cause) = failed {
            worker.cause = Some(cause);
            return Err(Aborted);
        }
        let (covered_low, covered_high) = match (stopped_at, direction) {
            (None, _) => (low, high),
            (Some(key), Direction::Ascending) => (low, key),
            (Some(key), Direction::Descending) => (key, high),
        };
        worker.trace.scan_end(covered_low, covered_high);
        Ok(visited)
    }
}
