//! The per-key version order: every committed write, sorted by `(table, key, version)`.
//!
//! Both checkers start here. Sorting puts the versions of one key next to each other in
//! increasing order, so "the writer of version v" and "the writer of the next version after v"
//! are neighbours, and a version with two writers shows up as two equal neighbours (a key is
//! `(table, key)`; updates, inserts and deletes are all writes here, each remembering which):
//!
//! ```text
//!  writes, sorted:  (k1, 3, T1) (k1, 7, T2) (k1, 9, T4) (k2, 2, T2) (k2, 5, T5) ...
//!                   └──── versions of k1 ──────────────┘ └── versions of k2 ──
//! ```
//!
//! Transactions are referred to by their position in the checked slice (a `u32`, so that the
//! sorted tables stay small). Before the tables mean anything, [`check_unique_ids`] and
//! [`check_writes`] reject a duplicate id, a write of version 0 and a transaction writing one
//! key twice; each checker runs them in its own single pass over the entries.
//!
//! [`KeyIndex`] lists each written key once, sorted, with where its versions sit in the writes
//! and which of its versions are absences (version 0 when the first write is an insert, every
//! delete): the scans look keys up in it by binary search over a range.

use crate::entry::{Access, HistoryEntry, TableId, WriteEffect, first_key_written_twice};
use crate::violation::Violation;

/// Position of a transaction in the checked slice of entries.
pub(crate) type TxnIndex = u32;

/// Largest number of transactions, and of reads plus writes, one check accepts (positions and
/// operation indexes are `u32`s). A history that large does not fit in memory anyway.
pub(crate) const OPERATIONS_MAX: usize = u32::MAX as usize;

/// What an [`Operation`] is: a write of some effect, or a read and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Detail {
    Write(WriteEffect),
    /// A point read.
    Read,
    /// A row listed by the scan of this index (in [`ScanIndex`] order).
    ScanRow(u32),
    /// A key the scan of this index saw absent; the version is its only absent version.
    ScanAbsent(u32),
}

/// Global position of a scan: `(transaction, position in its entry's scans)`.
pub(crate) type ScanIndex = Vec<(TxnIndex, u32)>;

/// One read or write: `(table, key, version)` by the transaction at position `txn`.
///
/// Ordered by table, key, version, then transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Operation {
    pub table: TableId,
    pub key: u64,
    pub version: u64,
    pub txn: TxnIndex,
    pub detail: Detail,
}

impl Operation {
    pub fn new(access: Access, txn: TxnIndex, detail: Detail) -> Self {
        Operation { table: access.table, key: access.key, version: access.version, txn, detail }
    }

    /// `(table, key)`.
    pub fn row(&self) -> (TableId, u64) {
        (self.table, self.key)
    }

    /// Whether this operation is on the same key and version as `other`.
    pub fn same_version(&self, other: &Operation) -> bool {
        self.row() == other.row() && self.version == other.version
    }
}

/// Rejects a history too large for `u32` positions.
///
/// # Panics
///
/// If `entries` or `operations` exceed [`OPERATIONS_MAX`].
pub(crate) fn assert_within_limits(transactions: usize, operations: usize) {
    assert!(
        transactions <= OPERATIONS_MAX && operations <= OPERATIONS_MAX,
        "a history of {transactions} transactions and {operations} operations is too large to check (limit {OPERATIONS_MAX})"
    );
}

/// Rejects an id used by two entries, naming the first two positions that share it.
pub(crate) fn check_unique_ids(entries: &[HistoryEntry]) -> Result<(), Violation> {
    assert_within_limits(entries.len(), 0);
    let mut ids: Vec<(u64, TxnIndex)> = entries.iter().zip(0..).map(|(entry, position)| (entry.id, position)).collect();
    ids.sort_unstable();
    match ids.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        Some(pair) => Err(Violation::DuplicateTransaction {
            id: pair[0].0,
            first_position: pair[0].1 as usize,
            second_position: pair[1].1 as usize,
        }),
        None => Ok(()),
    }
}

/// Rejects a write (of any effect) of version 0 and a key written twice by one transaction.
/// `scratch` is reused across entries.
pub(crate) fn check_writes(entry: &HistoryEntry, scratch: &mut Vec<Access>) -> Result<(), Violation> {
    if let Some((access, _)) = entry.all_writes().find(|(access, _)| access.version == 0) {
        return Err(Violation::InitialVersionWritten { id: entry.id, table: access.table, key: access.key });
    }
    if let Some((table, key, first_version, second_version)) = first_key_written_twice(entry, scratch) {
        return Err(Violation::KeyWrittenTwice { id: entry.id, table, key, first_version, second_version });
    }
    Ok(())
}

/// Pushes every write of `entry` (at position `txn`) onto `writes`.
pub(crate) fn gather_writes(entry: &HistoryEntry, txn: TxnIndex, writes: &mut Vec<Operation>) {
    writes.extend(entry.all_writes().map(|(access, effect)| Operation::new(access, txn, Detail::Write(effect))));
}

/// Every write of a history, sorted by `(key, version)`, each version written once.
#[derive(Debug)]
pub(crate) struct VersionOrder {
    pub writes: Vec<Operation>,
}

impl VersionOrder {
    /// Sorts `writes` (gathered from `entries`, each entry passed by [`check_writes`]) and
    /// rejects a version with two writers, naming them in entry order.
    pub fn sort(mut writes: Vec<Operation>, entries: &[HistoryEntry]) -> Result<Self, Violation> {
        writes.sort_unstable();
        if let Some(pair) = writes.windows(2).find(|pair| pair[0].same_version(&pair[1])) {
            return Err(Violation::DuplicateVersion {
                table: pair[0].table,
                key: pair[0].key,
                version: pair[0].version,
                first_id: entries[pair[0].txn as usize].id,
                second_id: entries[pair[1].txn as usize].id,
            });
        }
        Ok(VersionOrder { writes })
    }
}

/// One written key: where its versions sit in the sorted writes, and its absent versions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WrittenKey {
    pub table: TableId,
    pub key: u64,
    /// `writes[first_write..end_write]` are its versions, in increasing order.
    pub first_write: u32,
    pub end_write: u32,
    /// How many of its versions (counting version 0) are absences.
    pub absent_versions: u32,
    /// Its absent version when there is exactly one.
    pub sole_absent_version: u64,
}

impl WrittenKey {
    /// Version 0 was absent: the first write made the key present.
    pub fn initially_absent(&self, writes: &[Operation]) -> bool {
        writes[self.first_write as usize].detail == Detail::Write(WriteEffect::Insert)
    }
}

/// Every written key once, sorted by `(table, key)`.
#[derive(Debug)]
pub(crate) struct KeyIndex {
    pub keys: Vec<WrittenKey>,
}

impl KeyIndex {
    /// One linear pass over the sorted writes.
    pub fn build(writes: &[Operation]) -> Self {
        let mut keys: Vec<WrittenKey> = Vec::new();
        for (index, write) in (0u32..).zip(writes) {
            let fresh = keys.last().is_none_or(|last| (last.table, last.key) != write.row());
            if fresh {
                let initially_absent = write.detail == Detail::Write(WriteEffect::Insert);
                keys.push(WrittenKey {
                    table: write.table,
                    key: write.key,
                    first_write: index,
                    end_write: index,
                    absent_versions: u32::from(initially_absent),
                    sole_absent_version: 0,
                });
            }
            let last = keys.last_mut().expect("pushed above");
            last.end_write = index + 1;
            if write.detail == Detail::Write(WriteEffect::Delete) {
                last.absent_versions += 1;
                last.sole_absent_version = write.version;
            }
        }
        KeyIndex { keys }
    }

    /// The written keys of `table` in `low..=high` (empty when `low > high`).
    pub fn range(&self, table: TableId, low: u64, high: u64) -> &[WrittenKey] {
        if low > high {
            return &[];
        }
        let start = self.keys.partition_point(|key| (key.table, key.key) < (table, low));
        let end = self.keys.partition_point(|key| (key.table, key.key) <= (table, high));
        &self.keys[start..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes_of(entries: &[HistoryEntry]) -> Vec<Operation> {
        let mut writes = Vec::new();
        for (entry, txn) in entries.iter().zip(0..) {
            gather_writes(entry, txn, &mut writes);
        }
        writes
    }

    #[test]
    fn rejects_what_makes_the_version_order_meaningless() {
        let duplicate_id = [
            HistoryEntry::new(3, vec![], vec![]),
            HistoryEntry::new(4, vec![], vec![]),
            HistoryEntry::new(3, vec![], vec![]),
        ];
        assert_eq!(
            check_unique_ids(&duplicate_id),
            Err(Violation::DuplicateTransaction { id: 3, first_position: 0, second_position: 2 })
        );
        let mut scratch = Vec::new();
        let writes_zero = HistoryEntry::new(3, vec![], vec![(1, 4), (2, 0)]);
        assert_eq!(
            check_writes(&writes_zero, &mut scratch),
            Err(Violation::InitialVersionWritten { id: 3, table: 0, key: 2 })
        );
        let writes_twice = HistoryEntry::new(3, vec![], vec![(1, 4), (2, 4), (1, 6)]);
        assert_eq!(
            check_writes(&writes_twice, &mut scratch),
            Err(Violation::KeyWrittenTwice { id: 3, table: 0, key: 1, first_version: 4, second_version: 6 })
        );
    }

    #[test]
    fn sorts_writes_and_names_both_writers_of_a_version() {
        let entries =
            [HistoryEntry::new(10, vec![], vec![(2, 5), (1, 3)]), HistoryEntry::new(20, vec![], vec![(1, 1)])];
        let order = VersionOrder::sort(writes_of(&entries), &entries).unwrap();
        let sorted: Vec<(u64, u64, u32)> = order.writes.iter().map(|w| (w.key, w.version, w.txn)).collect();
        assert_eq!(sorted, vec![(1, 1, 1), (1, 3, 0), (2, 5, 0)]);

        let twice = [HistoryEntry::new(10, vec![], vec![(2, 5)]), HistoryEntry::new(20, vec![], vec![(2, 5)])];
        assert_eq!(
            VersionOrder::sort(writes_of(&twice), &twice).unwrap_err(),
            Violation::DuplicateVersion { table: 0, key: 2, version: 5, first_id: 10, second_id: 20 }
        );
    }

    #[test]
    fn key_index_counts_absent_versions_and_finds_ranges() {
        // Key 1: inserted at 2, deleted at 5, inserted at 7 (absent: 0 and 5). Key 3: updated
        // (present at 0), deleted at 4 (absent: 4). Key 9 of table 1: only updated.
        let entries = [
            HistoryEntry::new(1, vec![], vec![]).insert(0, 1, 2).delete(0, 3, 4),
            HistoryEntry::new(2, vec![], vec![(3, 1)]).delete(0, 1, 5).update(1, 9, 3),
            HistoryEntry::new(3, vec![], vec![]).insert(0, 1, 7),
        ];
        let order = VersionOrder::sort(writes_of(&entries), &entries).unwrap();
        let index = KeyIndex::build(&order.writes);
        let summary: Vec<_> =
            index.keys.iter().map(|key| (key.table, key.key, key.absent_versions, key.sole_absent_version)).collect();
        assert_eq!(summary, vec![(0, 1, 2, 5), (0, 3, 1, 4), (1, 9, 0, 0)]);
        assert!(index.keys[0].initially_absent(&order.writes) && !index.keys[1].initially_absent(&order.writes));
        let keys_in = |table, low, high| index.range(table, low, high).iter().map(|key| key.key).collect::<Vec<_>>();
        assert_eq!(keys_in(0, 0, 100), vec![1, 3]);
        assert_eq!(keys_in(0, 2, 3), vec![3]);
        assert_eq!(keys_in(0, 4, 100), Vec::<u64>::new());
        assert_eq!(keys_in(1, 9, 9), vec![9]);
        assert_eq!(keys_in(0, 3, 1), Vec::<u64>::new());
    }
}
