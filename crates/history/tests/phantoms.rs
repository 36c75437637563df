//! Scans, inserts and deletes: phantoms caught as cycles, their race-free versions passing,
//! absences the checker cannot place counted, and a scan that missed a row rejected.
//!
//! Table 1 holds the scanned rows; `Y` (key 2 of table 0) is a summary row the transactions
//! also touch. `T0` would be the initial load (version 0), which never appears in a history.

mod support;

use ordo_history::{DependencyKind, HistoryEntry, ScanRange, Violation, check, check_timestamp_order};
use support::assert_cycle_is_real;

const ROWS: u16 = 1;
const Y: u64 = 2;

fn txn(id: u64) -> HistoryEntry {
    HistoryEntry::new(id, vec![], vec![])
}

/// The cycle of `entries` (checked to be real) and its message.
fn cycle_of(entries: &[HistoryEntry]) -> (Vec<ordo_history::CycleStep>, String) {
    match check(entries) {
        Err(violation @ Violation::Cycle { .. }) => {
            let message = violation.to_string();
            let Violation::Cycle { transactions } = violation else { unreachable!() };
            assert_cycle_is_real(entries, &transactions);
            (transactions, message)
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
}

#[test]
fn the_classic_phantom_is_a_cycle() {
    // T1 counts the rows of [0, 100] (none) and writes the count to Y. T2 inserts row 5 into the
    // range and reads Y before T1's write. T1 missed T2's insert, T2 missed T1's write.
    let history = [txn(1).scan(ROWS, 0, 100, &[]).update(0, Y, 1), txn(2).insert(ROWS, 5, 2).read(0, Y, 0)];
    let (steps, message) = cycle_of(&history);
    assert_eq!(steps.len(), 2);
    let phantom = steps.iter().find(|step| step.from == 1).unwrap();
    assert_eq!((phantom.kind, phantom.table, phantom.key, phantom.to), (DependencyKind::ReadWrite, ROWS, 5, 2));
    assert_eq!(phantom.phantom, Some(ScanRange { low: 0, high: 100 }));
    assert!(
        message == "cycle: T1 -rw(phantom, scan of t1 [0,100], k=5)-> T2 -rw(k=2)-> T1"
            || message == "cycle: T2 -rw(k=2)-> T1 -rw(phantom, scan of t1 [0,100], k=5)-> T2",
        "{message}"
    );
}

#[test]
fn the_same_transactions_without_the_race_are_serializable() {
    // T2 after T1: it reads T1's Y.
    let after = [txn(1).scan(ROWS, 0, 100, &[]).update(0, Y, 1), txn(2).insert(ROWS, 5, 2).read(0, Y, 1)];
    let report = check(&after).unwrap();
    assert_eq!((report.scans, report.inserts, report.scanned_absences, report.ambiguous_absences), (1, 1, 1, 0));
    // T1 after T2: it sees the inserted row.
    let before = [txn(1).scan(ROWS, 0, 100, &[(5, 2)]).update(0, Y, 3), txn(2).insert(ROWS, 5, 2).read(0, Y, 0)];
    assert!(check(&before).is_ok());
    // An insert outside the scanned range is no conflict.
    let outside = [txn(1).scan(ROWS, 0, 4, &[]).update(0, Y, 1), txn(2).insert(ROWS, 5, 2).read(0, Y, 0)];
    let report = check(&outside).unwrap();
    assert_eq!(report.scanned_absences, 0);
}

#[test]
fn a_delete_racing_a_scan_is_a_cycle() {
    // Row 5 is loaded (its first write is a delete). T1 still lists it at version 0, T2 deleted
    // it having read Y before T1's write: T1 -rw(k=5)-> T2 -rw(Y)-> T1.
    let listed = [txn(1).scan(ROWS, 0, 100, &[(5, 0)]).update(0, Y, 1), txn(2).delete(ROWS, 5, 2).read(0, Y, 0)];
    let (steps, _) = cycle_of(&listed);
    assert!(steps.iter().any(|step| step.from == 1 && step.table == ROWS && step.key == 5 && step.phantom.is_none()));
    // T1 no longer sees row 5 (it read T2's tombstone), yet T2 read T1's Y.
    let unseen = [txn(1).scan(ROWS, 0, 100, &[]).update(0, Y, 1), txn(2).delete(ROWS, 5, 2).read(0, Y, 1)];
    let (steps, message) = cycle_of(&unseen);
    let phantom = steps.iter().find(|step| step.from == 2).unwrap();
    assert_eq!(
        (phantom.kind, phantom.key, phantom.phantom),
        (DependencyKind::WriteRead, 5, Some(ScanRange { low: 0, high: 100 }))
    );
    assert!(message.contains("-wr(phantom, scan of t1 [0,100], k=5)-> T1"), "{message}");
    // Without the race (T2 reads Y before T1 writes it, T1 sees the deletion) it passes.
    let serial = [txn(1).scan(ROWS, 0, 100, &[]).update(0, Y, 1), txn(2).delete(ROWS, 5, 2).read(0, Y, 0)];
    assert!(check(&serial).is_ok());
}

#[test]
fn a_point_read_of_an_absent_key_racing_its_insert_is_a_cycle() {
    // As a one-key scan with no rows.
    let empty_scan = [txn(1).scan(ROWS, 5, 5, &[]).update(0, Y, 1), txn(2).insert(ROWS, 5, 2).read(0, Y, 0)];
    let (_, message) = cycle_of(&empty_scan);
    assert!(message.contains("-rw(phantom, scan of t1 [5,5], k=5)-> T2"), "{message}");
    // As a read of the tombstone: row 5 deleted by T3 at 3, read absent by T1, re-inserted by T2.
    let tombstone =
        [txn(3).delete(ROWS, 5, 3), txn(1).read(ROWS, 5, 3).update(0, Y, 1), txn(2).insert(ROWS, 5, 4).read(0, Y, 0)];
    let (steps, _) = cycle_of(&tombstone);
    assert!(steps.iter().any(|step| step.from == 1 && step.to == 2 && step.kind == DependencyKind::ReadWrite));
}

#[test]
fn an_ambiguous_absence_is_counted_and_adds_no_edge() {
    // Row 5 is absent at version 0 and again after T3's delete at 4: T1 saw one of the two. Had
    // the checker guessed version 0, T1 -rw-> T2 and T2 -rw(Y)-> T1 would close a cycle.
    let history = [
        txn(1).scan(ROWS, 0, 100, &[]).update(0, Y, 1),
        txn(2).insert(ROWS, 5, 2).read(0, Y, 0),
        txn(3).delete(ROWS, 5, 4).read(0, Y, 1),
    ];
    let report = check(&history).unwrap();
    assert_eq!((report.scanned_absences, report.ambiguous_absences), (0, 1));
}

#[test]
fn a_scan_that_missed_an_always_present_row_is_a_violation() {
    // Row 7 is loaded and only ever updated, yet T1's scan of [0, 10] does not list it.
    let history = [txn(2).update(ROWS, 7, 2), txn(1).scan(ROWS, 0, 10, &[(3, 0)])];
    let violation = check(&history).unwrap_err();
    assert_eq!(violation, Violation::MissedRow { id: 1, table: ROWS, key: 7, low: 0, high: 10 });
    assert!(violation.to_string().starts_with("T1 scanned table 1 over [0, 10] and did not see key 7"));
}

#[test]
fn reads_of_unwritten_versions_name_their_table() {
    let history = [txn(1).scan(ROWS, 0, 10, &[(3, 4)])];
    let violation = check(&history).unwrap_err();
    assert_eq!(violation, Violation::PhantomRead { id: 1, table: ROWS, key: 3, version: 4 });
    assert!(violation.to_string().starts_with("T1 read version 4 of key 3 of table 1, which no committed"));
}

#[test]
fn the_timestamp_order_sees_a_scan_miss_an_insert() {
    // T2 inserted row 5 at ts 2; T1 committed at ts 3 and scanned without seeing it. Serializable
    // (T1 before T2) but not in timestamp order.
    let history = [txn(1).scan(ROWS, 0, 100, &[]).update(0, Y, 3).with_ts(3), txn(2).insert(ROWS, 5, 2).with_ts(2)];
    assert!(check(&history).is_ok());
    assert_eq!(
        check_timestamp_order(&history),
        Err(Violation::ScanMissedRow { id: 1, ts: 3, table: ROWS, low: 0, high: 100, key: 5, version: 2 })
    );
}
