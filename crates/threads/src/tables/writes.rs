//! The write buffer every single-version protocol over tables keeps (Silo, TicToc, 2PL,
//! serial): an attempt's updates, inserts and deletes, held in the worker until commit, and
//! the attempt's own view of them.
//!
//! ```text
//!   entries: [ (table, key, rid, kind, row_at, locked_meta) ... ]   in operation order
//!   rows:    [ row words of entry 0 | row words of entry 1 | ... ]  flat, reused
//!
//!   kind      before    after     own insert        own delete
//!   Put       present   present   -> false          -> Delete
//!   Insert    absent    present   -> false          -> InsertDelete
//!   Delete    present   absent    -> Put            -> false
//!   InsertDel absent    absent    -> Insert         -> false
//! ```
//!
//! An attempt that touches a key twice keeps one entry: what the key must be before (present
//! or absent, checked at commit by the protocol) never changes, and what it is after follows
//! the last operation. Lookups are linear: write sets are small, and a flat vector beats a
//! hash map until they are not.

use std::sync::atomic::{AtomicU64, Ordering};

use ordo_storage::TableId;

use super::database::{ABSENT, SEQ_WORD, TABLE_HEADER_WORDS, Table, VERSION_MASK};
use super::trace::WriteEffect;

/// How many of an attempt's latest reads a put searches, newest first, for the record of its
/// key (Silo and TicToc search their read sets; 2PL and the MVCC protocols the point reads
/// that found a record): a read-modify-write's put follows its read closely, and a bound
/// keeps the search short in attempts that read thousands of rows.
pub const RECENT_READS: usize = 32;

/// The record the newest of the last [`RECENT_READS`] entries of `found` (`(table, key,
/// record)` of the point reads that found one, newest last) holds for `key` of `table`.
#[inline]
pub fn recently_found(found: &[(TableId, u64, u64)], table: TableId, key: u64) -> Option<u64> {
    found.iter().rev().take(RECENT_READS).find(|&&(t, k, _)| t == table && k == key).map(|&(_, _, rid)| rid)
}

/// What a buffered write does, and what it needs at commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Present before and after.
    Put,
    /// Absent before, present after.
    Insert,
    /// Present before, absent after.
    Delete,
    /// Absent before and after (an own insert deleted again).
    InsertDelete,
}

impl WriteKind {
    /// Whether the key must be absent when the write is installed.
    #[inline]
    pub fn absent_before(self) -> bool {
        matches!(self, WriteKind::Insert | WriteKind::InsertDelete)
    }

    /// Whether the key is present once the write is installed.
    #[inline]
    pub fn present_after(self) -> bool {
        matches!(self, WriteKind::Put | WriteKind::Insert)
    }

    /// What installing it does to the row, for histories.
    pub fn effect(self) -> WriteEffect {
        match self {
            WriteKind::Put => WriteEffect::Update,
            WriteKind::Insert => WriteEffect::Insert,
            WriteKind::Delete | WriteKind::InsertDelete => WriteEffect::Delete,
        }
    }
}

/// One buffered write.
#[derive(Debug, Clone, Copy)]
pub struct WriteEntry {
    pub table: TableId,
    pub key: u64,
    pub rid: u64,
    pub kind: WriteKind,
    /// Where the row is in the buffer's rows.
    pub row_at: usize,
    /// The protocol's meta word seen when commit locked the record (optimistic protocols).
    pub locked_meta: u64,
}

/// An attempt's buffered writes (see the module docs).
#[derive(Debug, Default)]
pub struct WriteBuffer {
    pub entries: Vec<WriteEntry>,
    pub rows: Vec<u64>,
}

impl WriteBuffer {
    /// The entry of `key` in `table`, if the attempt wrote it.
    #[inline]
    pub fn find(&self, table: TableId, key: u64) -> Option<usize> {
        self.entries.iter().position(|w| w.table == table && w.key == key)
    }

    /// Buffers a write whose row is `row`, padded with zeros to `row_words`.
    pub fn push(&mut self, table: TableId, key: u64, rid: u64, kind: WriteKind, row: &[u64], row_words: usize) {
        let row_at = self.rows.len();
        self.rows.extend_from_slice(row);
        self.rows.resize(row_at + row_words.max(row.len()), 0);
        self.entries.push(WriteEntry { table, key, rid, kind, row_at, locked_meta: 0 });
    }

    /// The buffered row of entry `index`, `row_words` long.
    #[inline]
    pub fn row(&self, index: usize, row_words: usize) -> &[u64] {
        let at = self.entries[index].row_at;
        &self.rows[at..at + row_words]
    }

    fn set_row(&mut self, index: usize, row: &[u64]) {
        let at = self.entries[index].row_at;
        self.rows[at..at + row.len()].copy_from_slice(row);
    }

    /// A get of `key` answered from the buffer: `None` if the attempt did not write it, else
    /// whether it is present (its row copied into `row`).
    #[inline]
    pub fn own_get(&self, table: TableId, key: u64, row: &mut [u64]) -> Option<bool> {
        let i = self.find(table, key)?;
        let write = self.entries[i];
        if !write.kind.present_after() {
            return Some(false);
        }
        row.copy_from_slice(&self.rows[write.row_at..write.row_at + row.len()]);
        Some(true)
    }

    /// A put of `key` applied to the buffer: `None` if the attempt did not write it.
    #[inline]
    pub fn own_put(&mut self, table: TableId, key: u64, row: &[u64]) -> Option<bool> {
        let i = self.find(table, key)?;
        if !self.entries[i].kind.present_after() {
            return Some(false);
        }
        self.set_row(i, row);
        Some(true)
    }

    /// An insert of `key` applied to the buffer: `None` if the attempt did not write it.
    pub fn own_insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Option<bool> {
        let i = self.find(table, key)?;
        let write = &mut self.entries[i];
        write.kind = match write.kind {
            WriteKind::Put | WriteKind::Insert => return Some(false),
            WriteKind::Delete => WriteKind::Put,
            WriteKind::InsertDelete => WriteKind::Insert,
        };
        self.set_row(i, row);
        Some(true)
    }

    /// A delete of `key` applied to the buffer: `None` if the attempt did not write it.
    pub fn own_delete(&mut self, table: TableId, key: u64) -> Option<bool> {
        let i = self.find(table, key)?;
        let write = &mut self.entries[i];
        write.kind = match write.kind {
            WriteKind::Delete | WriteKind::InsertDelete => return Some(false),
            WriteKind::Put => WriteKind::Delete,
            WriteKind::Insert => WriteKind::InsertDelete,
        };
        Some(true)
    }

    /// Indexes of the entries of `table` with keys in `low..=high`, into `out` (cleared).
    pub fn in_range(&self, table: TableId, low: u64, high: u64, out: &mut Vec<usize>) {
        out.clear();
        out.extend(
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, w)| w.table == table && (low..=high).contains(&w.key))
                .map(|(i, _)| i),
        );
    }

    /// Sorts the entries by `(table, key)`: the global order in which commits lock them.
    pub fn sort(&mut self) {
        self.entries.sort_unstable_by_key(|w| (w.table, w.key));
    }

    /// The entry of `key` in `table` once sorted.
    #[inline]
    pub fn find_sorted(&self, table: TableId, key: u64) -> Option<&WriteEntry> {
        self.entries.binary_search_by_key(&(table, key), |w| (w.table, w.key)).ok().map(|i| &self.entries[i])
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.rows.clear();
    }
}

/// The version the install of a `kind` write gives record `words` of `table` (whose writer
/// holds it): one above the record's, and above the table's `retired_version_max` when the
/// key was absent (a record made after the key's earlier record was reclaimed).
#[inline]
pub fn next_version(table: &Table, words: &[AtomicU64], kind: WriteKind) -> u64 {
    let mut version = words[SEQ_WORD].load(Ordering::Relaxed) & VERSION_MASK;
    if kind.absent_before() {
        version = version.max(table.retired_version_max.load(Ordering::Acquire));
    }
    version + 1
}

/// Installs `write` at `version` into record `words` of `table` (whose writer holds it): the
/// buffered row and a present seq word, or an absent seq word (a tombstone). Returns the seq
/// word. Publishing it to readers (the meta word) is the protocol's.
#[inline]
pub fn install(table: &Table, words: &[AtomicU64], write: &WriteEntry, rows: &[u64], version: u64) -> u64 {
    if write.kind.present_after() {
        let row = &rows[write.row_at..write.row_at + table.row_words];
        for (word, &value) in words[TABLE_HEADER_WORDS..].iter().zip(row) {
            word.store(value, Ordering::Relaxed);
        }
        words[SEQ_WORD].store(version, Ordering::Relaxed);
        version
    } else {
        words[SEQ_WORD].store(version | ABSENT, Ordering::Relaxed);
        version | ABSENT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_operations_follow_the_kind_table() {
        let mut buffer = WriteBuffer::default();
        let mut row = [0u64; 2];
        assert_eq!(buffer.own_get(0, 5, &mut row), None);
        buffer.push(0, 5, 9, WriteKind::Insert, &[1], 2);
        assert_eq!(buffer.own_get(0, 5, &mut row), Some(true));
        assert_eq!(row, [1, 0], "rows are padded to the table's width");
        assert_eq!(buffer.own_insert(0, 5, &[2, 2]), Some(false));
        assert_eq!(buffer.own_delete(0, 5), Some(true));
        assert_eq!(buffer.entries[0].kind, WriteKind::InsertDelete);
        assert_eq!(buffer.own_put(0, 5, &[3, 3]), Some(false));
        assert_eq!(buffer.own_get(0, 5, &mut row), Some(false));
        assert_eq!(buffer.own_insert(0, 5, &[4, 4]), Some(true));
        assert_eq!(buffer.entries[0].kind, WriteKind::Insert);
        assert_eq!(buffer.row(0, 2), &[4, 4]);
        buffer.push(1, 3, 7, WriteKind::Delete, &[], 2);
        assert_eq!(buffer.own_insert(1, 3, &[6, 6]), Some(true));
        assert_eq!(buffer.entries[1].kind, WriteKind::Put);
        let mut range = Vec::new();
        buffer.in_range(0, 0, 10, &mut range);
        assert_eq!(range, vec![0]);
        buffer.sort();
        assert_eq!(buffer.find_sorted(1, 3).map(|w| w.rid), Some(7));
    }
}
