//! The serializability check: is there a serial order of the committed transactions that
//! reads and writes exactly what the history recorded?
//!
//! ```text
//!  entries ──validate──> ids unique, no write of version 0, one write per key per txn
//!          ──sort──────> VersionOrder (writes by key, version): each version written once
//!          ──merge─────> DependencyGraph (ww, wr, rw): every read's version was written
//!          ──DFS/BFS───> acyclic, or one shortest cycle
//! ```
//!
//! Sorting dominates: `O(N log N)` for `N` operations, with flat vectors and no hashing.
//! The first problem found is returned; a history with several gets one [`Violation`] at a
//! time.

use serde::Serialize;

use crate::entry::HistoryEntry;
use crate::graph::DependencyGraph;
use crate::versions::{Operation, VersionOrder, assert_within_limits, check_unique_ids, check_writes};
use crate::violation::{CycleStep, DependencyKind, Violation};

/// What a passing check looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CheckReport {
    pub transactions: usize,
    pub reads: usize,
    pub writes: usize,
    /// Writer of a version -> writer of the next version of the same key.
    pub write_write_edges: usize,
    /// Writer of a version -> a reader of it.
    pub write_read_edges: usize,
    /// Reader of a version -> writer of the next version (anti-dependencies).
    pub read_write_edges: usize,
}

impl CheckReport {
    /// Reads plus writes.
    pub fn operations(&self) -> usize {
        self.reads + self.writes
    }

    /// Edges of every kind. A pair of transactions may be linked by several edges (one per
    /// key and kind); each is counted.
    pub fn edges(&self) -> usize {
        self.write_write_edges + self.write_read_edges + self.read_write_edges
    }
}

/// Checks that the committed transactions of `entries` are conflict-serializable, in any
/// order of entries.
///
/// # Panics
///
/// If the history holds more than `u32::MAX` transactions or operations.
pub fn check(entries: &[HistoryEntry]) -> Result<CheckReport, Violation> {
    check_unique_ids(entries)?;
    // One pass over the entries gathers both tables.
    let mut writes = Vec::with_capacity(entries.iter().map(|entry| entry.writes.len()).sum());
    let mut reads = Vec::with_capacity(entries.iter().map(|entry| entry.reads.len()).sum());
    let mut scratch = Vec::new();
    for (entry, txn) in entries.iter().zip(0..) {
        check_writes(entry, &mut scratch)?;
        writes.extend(entry.writes.iter().map(|&(key, version)| Operation { key, version, txn }));
        reads.extend(entry.reads.iter().map(|&(key, version)| Operation { key, version, txn }));
    }
    assert_within_limits(entries.len(), writes.len() + reads.len());
    let order = VersionOrder::sort(writes, entries)?;
    reads.sort_unstable();
    let graph = DependencyGraph::build(entries.len(), &order, &reads).map_err(|unwritten| {
        let read = reads[unwritten.0];
        Violation::PhantomRead { id: entries[read.txn as usize].id, key: read.key, version: read.version }
    })?;
    if let Some(cycle) = graph.find_cycle() {
        let id = |txn: u32| entries[txn as usize].id;
        let transactions = cycle
            .iter()
            .map(|edge| CycleStep { from: id(edge.from), kind: edge.kind, key: edge.key, to: id(edge.to) })
            .collect();
        return Err(Violation::Cycle { transactions });
    }
    Ok(CheckReport {
        transactions: entries.len(),
        reads: reads.len(),
        writes: order.writes.len(),
        write_write_edges: graph.edge_count(DependencyKind::WriteWrite),
        write_read_edges: graph.edge_count(DependencyKind::WriteRead),
        read_write_edges: graph.edge_count(DependencyKind::ReadWrite),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, reads: &[(u64, u64)], writes: &[(u64, u64)]) -> HistoryEntry {
        HistoryEntry::new(id, reads.to_vec(), writes.to_vec())
    }

    #[test]
    fn counts_each_kind_of_edge() {
        // T1 installs k1@1; T2 reads it and installs k1@2; T3 read k1@0 and is overwritten by T1.
        let history = [entry(1, &[], &[(1, 1)]), entry(2, &[(1, 1)], &[(1, 2)]), entry(3, &[(1, 0)], &[])];
        let report = check(&history).unwrap();
        assert_eq!(
            report,
            CheckReport {
                transactions: 3,
                reads: 2,
                writes: 2,
                write_write_edges: 1,
                write_read_edges: 1,
                read_write_edges: 1,
            }
        );
    }

    #[test]
    fn reading_your_own_write_is_not_a_cycle() {
        let history = [entry(1, &[(1, 0), (1, 4)], &[(1, 4)]), entry(2, &[(1, 4)], &[(1, 6)])];
        let report = check(&history).unwrap();
        assert_eq!(report.write_read_edges, 1);
        assert_eq!(report.read_write_edges, 1);
    }

    #[test]
    fn the_reported_cycle_is_the_shortest_through_its_vertex() {
        // A ww chain T1 -> T2 -> ... -> T50 on key 0, closed by T50 -rw(k=5)-> T1, and a chord
        // T1 -wr(k=7)-> T50. The depth-first search walks the chain first; the report must
        // still be the two-edge cycle.
        let mut history = vec![entry(1, &[], &[(0, 1), (5, 1), (7, 1)])];
        for id in 2..50 {
            history.push(entry(id, &[], &[(0, id)]));
        }
        history.push(entry(50, &[(5, 0), (7, 1)], &[(0, 50)]));
        let Err(violation) = check(&history) else { panic!("cycle not caught") };
        assert_eq!(violation.to_string(), "cycle: T1 -wr(k=7)-> T50 -rw(k=5)-> T1");
    }
}
