//! The serializability check: is there a serial order of the committed transactions that
//! reads and writes exactly what the history recorded?
//!
//! ```text
//!  entries ──validate──> ids unique, no write of version 0, one write per key per txn
//!          ──sort──────> VersionOrder (writes by table, key, version): each version written once
//!          ──index─────> KeyIndex: each written key once, with its absent versions
//!          ──scans─────> listed rows are reads; unlisted written keys of the range were seen
//!                        absent: read at their one absent version (or a missed row, or ambiguous)
//!          ──merge─────> DependencyGraph (ww, wr, rw): every read's version was written
//!          ──DFS/BFS───> acyclic, or one shortest cycle
//! ```
//!
//! ## Scans and phantoms
//!
//! A scan of `low..=high` in table `t` reads every row it lists. Every key of `t` in the range
//! that the history writes but the scan does not list was observed *absent*. Its absent versions
//! are version 0 when its first write is an insert, and every delete. With exactly one, the scan
//! read that version: a wr edge from its deleter and an rw edge to the writer of the version
//! after it (the phantom anti-dependency: the scan precedes the insert it did not see). With
//! none, the key was present throughout, so the scan missed a row ([`Violation::MissedRow`]).
//! With several, which absence the scan saw is not recorded: no edge is added and the case is
//! counted in [`CheckReport::ambiguous_absences`], so a cycle through it can go unnoticed.
//! Keys the history never writes are never absent-then-present, so they need no look.
//!
//! Sorting dominates: `O(N log N)` for `N` operations, with flat vectors and no hashing; a scan
//! costs a binary search plus the written keys in its range. The first problem found is
//! returned; a history with several gets one [`Violation`] at a time.

use serde::Serialize;

use crate::entry::{HistoryEntry, Scan};
use crate::graph::{DependencyGraph, Edge};
use crate::versions::{
    Detail, KeyIndex, Operation, ScanIndex, VersionOrder, assert_within_limits, check_unique_ids, check_writes,
    gather_writes,
};
use crate::violation::{CycleStep, DependencyKind, ScanRange, Violation};

/// What a passing check looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CheckReport {
    pub transactions: usize,
    /// Point reads.
    pub reads: usize,
    /// Updates (in old-format histories, every write).
    pub writes: usize,
    pub inserts: usize,
    pub deletes: usize,
    pub scans: usize,
    /// Rows the scans listed.
    pub scanned_rows: usize,
    /// Written keys a scan saw absent and whose one absent version it therefore read.
    pub scanned_absences: usize,
    /// Written keys a scan saw absent that have several absent versions: no edge was added
    /// for them, so the check is blind to cycles through those observations.
    pub ambiguous_absences: usize,
    /// Writer of a version -> writer of the next version of the same key.
    pub write_write_edges: usize,
    /// Writer of a version -> a reader of it.
    pub write_read_edges: usize,
    /// Reader of a version -> writer of the next version (anti-dependencies, phantom ones
    /// included).
    pub read_write_edges: usize,
}

impl CheckReport {
    /// Point reads, writes of every effect, scans and scanned rows.
    pub fn operations(&self) -> usize {
        self.reads + self.writes + self.inserts + self.deletes + self.scans + self.scanned_rows
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
/// If the history holds more than `u32::MAX` transactions, operations or scans.
pub fn check(entries: &[HistoryEntry]) -> Result<CheckReport, Violation> {
    check_against(entries, Isolation::Serializable).map(|(report, _)| report)
}

/// Checks that the committed transactions of `entries` could have run under snapshot
/// isolation: the same dependency graph as [`check`], in which every cycle must hold two
/// anti-dependencies in a row (Cerone and Gotsman, "Analysing Snapshot Isolation", PODC
/// 2016: a history with a version order is allowed by SI exactly when that holds). Write skew
/// passes (`T1 -rw-> T2 -rw-> T1`); a lost update (`T1 -ww-> T2 -rw-> T1`) and a read that
/// saw part of another transaction's writes (`T1 -rw-> T2 -wr-> T1`) do not. A
/// [`Violation::Cycle`] here is a closed walk of the graph with no two anti-dependencies in a
/// row, which may pass a transaction twice. Transactions of one worker are not ordered by
/// their session: this is SI, not strong session SI.
///
/// The graph links a read only to the writer of the *next* version (Adya's edges), where
/// Cerone and Gotsman's anti-dependencies reach every later writer. The test is the same: a
/// cycle of theirs without two anti-dependencies in a row maps onto these edges by replacing
/// each far anti-dependency with the rw edge to the next writer and the ww chain after it,
/// which puts no two rw edges next to each other; and every cycle here is one of theirs.
///
/// # Panics
///
/// As [`check`].
pub fn check_snapshot_isolation(entries: &[HistoryEntry]) -> Result<CheckReport, Violation> {
    check_against(entries, Isolation::Snapshot).map(|(report, _)| report)
}

/// [`check_snapshot_isolation`], and on the same dependency graph (built once) whether the
/// history is also conflict-serializable: the second part of `Ok` is what [`check`] would
/// return, `Err` with its cycle when the history is not serializable.
///
/// # Panics
///
/// As [`check`].
pub fn check_snapshot_isolation_and_serializability(
    entries: &[HistoryEntry],
) -> Result<(CheckReport, Result<(), Violation>), Violation> {
    check_against(entries, Isolation::SnapshotNotingSerializability)
        .map(|(report, serializable)| (report, serializable.map_or(Ok(()), Err)))
}

/// What a history is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isolation {
    /// No cycle at all.
    Serializable,
    /// No cycle without two anti-dependencies in a row.
    Snapshot,
    /// As `Snapshot`, and a cycle of any kind is returned beside the report.
    SnapshotNotingSerializability,
}

/// The report when `entries` satisfy `isolation`, with the cycle that makes them not
/// serializable when `isolation` asks for it to be noted.
fn check_against(
    entries: &[HistoryEntry],
    isolation: Isolation,
) -> Result<(CheckReport, Option<Violation>), Violation> {
    check_unique_ids(entries)?;
    let mut report = CheckReport { transactions: entries.len(), ..CheckReport::default() };
    // One pass over the entries gathers writes, point reads and listed rows.
    let mut writes = Vec::with_capacity(entries.iter().map(|entry| entry.writes.len()).sum());
    let mut reads = Vec::with_capacity(entries.iter().map(|entry| entry.reads.len()).sum());
    let mut scans: ScanIndex = Vec::new();
    let mut scratch = Vec::new();
    for (entry, txn) in entries.iter().zip(0..) {
        check_writes(entry, &mut scratch)?;
        gather_writes(entry, txn, &mut writes);
        reads.extend(entry.reads.iter().map(|&access| Operation::new(access, txn, Detail::Read)));
        report.reads += entry.reads.len();
        report.writes += entry.writes.len();
        report.inserts += entry.inserts.len();
        report.deletes += entry.deletes.len();
        for (scan, position) in entry.scans.iter().zip(0..) {
            let index = u32::try_from(scans.len()).expect("at most u32::MAX scans");
            scans.push((txn, position));
            reads.extend(scan.rows.iter().map(|&(key, version)| Operation {
                table: scan.table,
                key,
                version,
                txn,
                detail: Detail::ScanRow(index),
            }));
            report.scanned_rows += scan.rows.len();
        }
    }
    report.scans = scans.len();
    assert_within_limits(entries.len(), writes.len() + reads.len());
    let order = VersionOrder::sort(writes, entries)?;
    let keys = KeyIndex::build(&order.writes);
    let mut listed = Vec::new();
    for (index, &(txn, position)) in (0u32..).zip(&scans) {
        let scan = &entries[txn as usize].scans[position as usize];
        listed.clear();
        listed.extend(scan.rows.iter().map(|&(key, _)| key));
        listed.sort_unstable();
        for written in keys.range(scan.table, scan.low, scan.high) {
            if listed.binary_search(&written.key).is_ok() {
                continue;
            }
            match written.absent_versions {
                0 => {
                    return Err(Violation::MissedRow {
                        id: entries[txn as usize].id,
                        table: scan.table,
                        key: written.key,
                        low: scan.low,
                        high: scan.high,
                    });
                }
                1 => {
                    reads.push(Operation {
                        table: written.table,
                        key: written.key,
                        version: written.sole_absent_version,
                        txn,
                        detail: Detail::ScanAbsent(index),
                    });
                    report.scanned_absences += 1;
                }
                _ => report.ambiguous_absences += 1,
            }
        }
    }
    assert_within_limits(entries.len(), order.writes.len() + reads.len());
    reads.sort_unstable();
    let graph = DependencyGraph::build(entries.len(), &order, &reads).map_err(|unwritten| {
        let read = reads[unwritten.0];
        Violation::PhantomRead {
            id: entries[read.txn as usize].id,
            table: read.table,
            key: read.key,
            version: read.version,
        }
    })?;
    let violation = |cycle: Vec<Edge>| {
        let id = |txn: u32| entries[txn as usize].id;
        let scan_of = |index: u32| -> &Scan {
            let (txn, position) = scans[index as usize];
            &entries[txn as usize].scans[position as usize]
        };
        let transactions = cycle
            .iter()
            .map(|edge| CycleStep {
                from: id(edge.from),
                kind: edge.kind,
                table: edge.via.table,
                key: edge.via.key,
                phantom: match edge.via.detail {
                    Detail::ScanAbsent(index) => {
                        let scan = scan_of(index);
                        Some(ScanRange { low: scan.low, high: scan.high })
                    }
                    _ => None,
                },
                to: id(edge.to),
            })
            .collect();
        Violation::Cycle { transactions }
    };
    // The cycle that refuses the history, and (when asked) the one that makes it not
    // serializable; an acyclic graph has no cycle of the snapshot kind either.
    let (refusing, noted) = match isolation {
        Isolation::Serializable => (graph.find_cycle(), None),
        Isolation::Snapshot => (graph.find_snapshot_cycle(), None),
        Isolation::SnapshotNotingSerializability => {
            let cycle = graph.find_cycle();
            (cycle.as_ref().and_then(|_| graph.find_snapshot_cycle()), cycle)
        }
    };
    if let Some(cycle) = refusing {
        return Err(violation(cycle));
    }
    let not_serializable = noted.map(violation);
    report.write_write_edges = graph.edge_count(DependencyKind::WriteWrite);
    report.write_read_edges = graph.edge_count(DependencyKind::WriteRead);
    report.read_write_edges = graph.edge_count(DependencyKind::ReadWrite);
    Ok((report, not_serializable))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, reads: &[(u64, u64)], writes: &[(u64, u64)]) -> HistoryEntry {
        HistoryEntry::new(id, reads.to_vec(), writes.to_vec())
    }

    /// One graph answers both questions as the two separate checks do: write skew is
    /// snapshot isolation but not serializable, a serial history is both, a lost update
    /// neither.
    #[test]
    fn snapshot_isolation_noting_serializability_agrees_with_both_checks() {
        let write_skew = [entry(1, &[(1, 0), (2, 0)], &[(1, 1)]), entry(2, &[(1, 0), (2, 0)], &[(2, 1)])];
        let serial = [entry(1, &[(1, 0)], &[(1, 1)]), entry(2, &[(1, 1)], &[(1, 2)])];
        let lost_update = [entry(1, &[(1, 0)], &[(1, 1)]), entry(2, &[(1, 0)], &[(1, 2)])];
        for history in [&write_skew[..], &serial, &lost_update] {
            let both = check_snapshot_isolation_and_serializability(history);
            match check_snapshot_isolation(history) {
                Ok(report) => assert_eq!(both, Ok((report, check(history).map(drop)))),
                Err(violation) => assert_eq!(both, Err(violation)),
            }
        }
        assert!(matches!(
            check_snapshot_isolation_and_serializability(&write_skew),
            Ok((_, Err(Violation::Cycle { .. })))
        ));
        assert!(matches!(check_snapshot_isolation_and_serializability(&serial), Ok((_, Ok(())))));
        assert!(check_snapshot_isolation_and_serializability(&lost_update).is_err());
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
                ..CheckReport::default()
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

    /// Both read x (key 10) and y (key 20) at their initial versions; each writes one.
    fn write_skew() -> [HistoryEntry; 2] {
        [entry(1, &[(10, 0), (20, 0)], &[(10, 1)]), entry(2, &[(10, 0), (20, 0)], &[(20, 2)])]
    }

    #[test]
    fn snapshot_isolation_allows_write_skew_and_serializability_does_not() {
        let history = write_skew();
        assert!(check(&history).is_err());
        let report = check_snapshot_isolation(&history).unwrap();
        assert_eq!(report.read_write_edges, 2);
    }

    #[test]
    fn snapshot_isolation_forbids_a_lost_update() {
        // Both read x@0; T1 installs x@1, T2 overwrites it with x@2: T1 -ww-> T2 -rw-> T1.
        let history = [entry(1, &[(10, 0)], &[(10, 1)]), entry(2, &[(10, 0)], &[(10, 2)])];
        let Err(violation) = check_snapshot_isolation(&history) else { panic!("lost update passed") };
        assert_eq!(violation.to_string(), "cycle: T2 -rw(k=10)-> T1 -ww(k=10)-> T2");
    }

    #[test]
    fn snapshot_isolation_forbids_reading_part_of_a_transaction() {
        // T2 installs x@1 and y@1; T1 reads x@0 (before T2) and y@1 (after it).
        let history = [entry(1, &[(10, 0), (20, 1)], &[]), entry(2, &[], &[(10, 1), (20, 1)])];
        let Err(violation) = check_snapshot_isolation(&history) else { panic!("read skew passed") };
        assert_eq!(violation.to_string(), "cycle: T1 -rw(k=10)-> T2 -wr(k=20)-> T1");
    }

    #[test]
    fn snapshot_isolation_counts_adjacency_around_the_cycle() {
        // A three-transaction cycle rw, wr, rw: the last rw and the first are adjacent around
        // the cycle, so SI allows it. T1 reads a@0, T2 writes a@1 and b@1, T3 reads b@1 and
        // c@0, T1 writes c@1: T1 -rw(a)-> T2 -wr(b)-> T3 -rw(c)-> T1.
        let history =
            [entry(1, &[(1, 0)], &[(3, 1)]), entry(2, &[], &[(1, 1), (2, 1)]), entry(3, &[(2, 1), (3, 0)], &[])];
        assert!(check(&history).is_err());
        check_snapshot_isolation(&history).unwrap();
        // Without the rw edge into T1 (T3 reads c@1 instead) the cycle is gone for both.
        let mut serial = history.clone();
        serial[2] = entry(3, &[(2, 1), (3, 1)], &[]);
        check(&serial).unwrap();
        check_snapshot_isolation(&serial).unwrap();
        // With a wr edge in place of the first rw (T1 writes a@1, which T2 reads), the only
        // anti-dependency (T3 -rw-> T1) has no neighbour of its kind:
        // T1 -wr(a)-> T2 -wr(b)-> T3 -rw(c)-> T1.
        let lone = [entry(1, &[], &[(1, 1), (3, 1)]), entry(2, &[(1, 1)], &[(2, 1)]), entry(3, &[(2, 1), (3, 0)], &[])];
        let Err(violation) = check_snapshot_isolation(&lone) else { panic!("a lone anti-dependency passed") };
        assert_eq!(violation.to_string(), "cycle: T2 -wr(k=2)-> T3 -rw(k=3)-> T1 -wr(k=1)-> T2");
    }

    #[test]
    fn snapshot_isolation_forbids_a_phantom_seen_halfway() {
        // T2 inserts keys 5 and 6 of table 1; T1's scan of 0..=9 lists 6 but not 5.
        let history = [
            HistoryEntry::new(1, Vec::new(), Vec::new()).scan(1, 0, 9, &[(6, 1)]),
            HistoryEntry::new(2, Vec::new(), Vec::new()).insert(1, 5, 1).insert(1, 6, 1),
        ];
        let Err(violation) = check_snapshot_isolation(&history) else { panic!("half a transaction passed") };
        assert!(violation.to_string().starts_with("cycle: "), "{violation}");
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
