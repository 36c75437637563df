//! The per-key version order: every committed write, sorted by `(key, version)`.
//!
//! Both checkers start here. Sorting puts the versions of one key next to each other in
//! increasing order, so "the writer of version v" and "the writer of the next version after v"
//! are neighbours, and a version with two writers shows up as two equal neighbours:
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

use crate::entry::{HistoryEntry, first_key_written_twice};
use crate::violation::Violation;

/// Position of a transaction in the checked slice of entries.
pub(crate) type TxnIndex = u32;

/// Largest number of transactions, and of reads plus writes, one check accepts (positions and
/// operation indexes are `u32`s). A history that large does not fit in memory anyway.
pub(crate) const OPERATIONS_MAX: usize = u32::MAX as usize;

/// One read or write: `(key, version)` by the transaction at position `txn`.
///
/// Ordered by key, then version, then transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Operation {
    pub key: u64,
    pub version: u64,
    pub txn: TxnIndex,
}

impl Operation {
    /// Whether this operation is on the same key and version as `other`.
    pub fn same_version(&self, other: &Operation) -> bool {
        self.key == other.key && self.version == other.version
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

/// Rejects a write of version 0 and a key written twice by one transaction. `scratch` is
/// reused across entries.
pub(crate) fn check_writes(entry: &HistoryEntry, scratch: &mut Vec<(u64, u64)>) -> Result<(), Violation> {
    if let Some(&(key, _)) = entry.writes.iter().find(|&&(_, version)| version == 0) {
        return Err(Violation::InitialVersionWritten { id: entry.id, key });
    }
    if let Some((key, first_version, second_version)) = first_key_written_twice(&entry.writes, scratch) {
        return Err(Violation::KeyWrittenTwice { id: entry.id, key, first_version, second_version });
    }
    Ok(())
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
                key: pair[0].key,
                version: pair[0].version,
                first_id: entries[pair[0].txn as usize].id,
                second_id: entries[pair[1].txn as usize].id,
            });
        }
        Ok(VersionOrder { writes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes_of(entries: &[HistoryEntry]) -> Vec<Operation> {
        let mut writes = Vec::new();
        for (entry, txn) in entries.iter().zip(0..) {
            writes.extend(entry.writes.iter().map(|&(key, version)| Operation { key, version, txn }));
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
        assert_eq!(check_writes(&writes_zero, &mut scratch), Err(Violation::InitialVersionWritten { id: 3, key: 2 }));
        let writes_twice = HistoryEntry::new(3, vec![], vec![(1, 4), (2, 4), (1, 6)]);
        assert_eq!(
            check_writes(&writes_twice, &mut scratch),
            Err(Violation::KeyWrittenTwice { id: 3, key: 1, first_version: 4, second_version: 6 })
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
            Violation::DuplicateVersion { key: 2, version: 5, first_id: 10, second_id: 20 }
        );
    }
}
