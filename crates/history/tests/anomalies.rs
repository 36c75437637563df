//! One scripted history per anomaly, each caught as the right [`Violation`].
//!
//! Keys: x = 1, y = 2. Transactions are named by id; `T0` would be the initial load (version
//! 0), which never appears in a history.

mod support;

use ordo_history::{CycleStep, DependencyKind, HistoryEntry, Violation, check, check_timestamp_order};
use support::assert_cycle_is_real;

const X: u64 = 1;
const Y: u64 = 2;

fn txn(id: u64, reads: &[(u64, u64)], writes: &[(u64, u64)]) -> HistoryEntry {
    HistoryEntry::new(id, reads.to_vec(), writes.to_vec())
}

fn step(from: u64, kind: DependencyKind, key: u64, to: u64) -> CycleStep {
    CycleStep::on_key(from, kind, key, to)
}

/// The cycle of `entries`, checked to be real, as a set of steps (its rotation is free).
fn cycle_of(entries: &[HistoryEntry]) -> (Vec<CycleStep>, String) {
    match check(entries) {
        Err(violation @ Violation::Cycle { .. }) => {
            let message = violation.to_string();
            let Violation::Cycle { mut transactions } = violation else { unreachable!() };
            assert_cycle_is_real(entries, &transactions);
            transactions.sort_by_key(|step| (step.from, step.to));
            (transactions, message)
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
}

#[test]
fn lost_update_with_two_versions_is_a_cycle() {
    // Both read x@0 and increment it; T2's write lands on top of T1's without having seen it.
    let history = [txn(1, &[(X, 0)], &[(X, 1)]), txn(2, &[(X, 0)], &[(X, 2)])];
    let (steps, message) = cycle_of(&history);
    assert_eq!(steps, vec![step(1, DependencyKind::WriteWrite, X, 2), step(2, DependencyKind::ReadWrite, X, 1)]);
    assert!(message == "cycle: T1 -ww(k=1)-> T2 -rw(k=1)-> T1" || message == "cycle: T2 -rw(k=1)-> T1 -ww(k=1)-> T2");
}

#[test]
fn lost_update_installing_one_version_twice_is_a_duplicate_version() {
    let history = [txn(1, &[(X, 0)], &[(X, 1)]), txn(2, &[(X, 0)], &[(X, 1)])];
    let violation = check(&history).unwrap_err();
    assert_eq!(violation, Violation::DuplicateVersion { table: 0, key: X, version: 1, first_id: 1, second_id: 2 });
    assert_eq!(
        violation.to_string(),
        "version 1 of key 1 was installed by both T1 and T2; two committed writers of one version \
         means one overwrote the other unseen (lost update)"
    );
}

#[test]
fn write_skew_is_a_cycle_of_two_anti_dependencies() {
    // Both read x and y at their initial versions; T1 writes x, T2 writes y.
    let history = [txn(1, &[(X, 0), (Y, 0)], &[(X, 1)]), txn(2, &[(X, 0), (Y, 0)], &[(Y, 2)])];
    let (steps, _) = cycle_of(&history);
    assert_eq!(steps, vec![step(1, DependencyKind::ReadWrite, Y, 2), step(2, DependencyKind::ReadWrite, X, 1)]);
}

#[test]
fn read_skew_is_a_cycle() {
    // T1 moves money from x to y; T2 sees x before the transfer and y after it.
    let history = [txn(1, &[(X, 0), (Y, 0)], &[(X, 1), (Y, 1)]), txn(2, &[(X, 0), (Y, 1)], &[])];
    let (steps, _) = cycle_of(&history);
    assert_eq!(steps, vec![step(1, DependencyKind::WriteRead, Y, 2), step(2, DependencyKind::ReadWrite, X, 1)]);
}

#[test]
fn non_repeatable_read_is_a_cycle() {
    // T2 reads x twice and sees T1's commit in between (accepted by the reader, not the checker).
    let history = [txn(1, &[], &[(X, 1)]), txn(2, &[(X, 0), (X, 1)], &[])];
    let (steps, _) = cycle_of(&history);
    assert_eq!(steps, vec![step(1, DependencyKind::WriteRead, X, 2), step(2, DependencyKind::ReadWrite, X, 1)]);
}

#[test]
fn read_of_an_unwritten_version_is_a_phantom_read() {
    // T2 saw version 2 of x, written by a transaction that aborted (it is not in the history).
    let history = [txn(1, &[], &[(X, 1)]), txn(2, &[(X, 2)], &[])];
    let violation = check(&history).unwrap_err();
    assert_eq!(violation, Violation::PhantomRead { id: 2, table: 0, key: X, version: 2 });
    assert!(violation.to_string().starts_with("T2 read version 2 of key 1, which no committed transaction wrote"));
}

#[test]
fn a_version_written_twice_is_rejected_even_without_reads() {
    let history = [txn(5, &[], &[(Y, 3)]), txn(1, &[], &[(X, 1)]), txn(9, &[], &[(Y, 3), (X, 4)])];
    assert_eq!(
        check(&history),
        Err(Violation::DuplicateVersion { table: 0, key: Y, version: 3, first_id: 5, second_id: 9 })
    );
}

#[test]
fn malformed_version_orders_are_rejected() {
    assert_eq!(check(&[txn(3, &[], &[(X, 0)])]), Err(Violation::InitialVersionWritten { id: 3, table: 0, key: X }));
    assert_eq!(
        check(&[txn(3, &[], &[]), txn(3, &[], &[])]),
        Err(Violation::DuplicateTransaction { id: 3, first_position: 0, second_position: 1 })
    );
    assert_eq!(
        check(&[txn(3, &[], &[(X, 1), (X, 2)])]),
        Err(Violation::KeyWrittenTwice { id: 3, table: 0, key: X, first_version: 1, second_version: 2 })
    );
}

#[test]
fn serializable_but_not_in_timestamp_order() {
    // T1 commits at ts 2 but read x@0, although T2 installed x@1 at ts 1. The serial order
    // T1, T2 explains the history; the timestamp order T2, T1 does not.
    let history = [txn(1, &[(X, 0)], &[(Y, 2)]).with_ts(2), txn(2, &[], &[(X, 1)]).with_ts(1)];
    assert!(check(&history).is_ok());
    let violation = check_timestamp_order(&history).unwrap_err();
    assert_eq!(
        violation,
        Violation::StaleRead { id: 1, ts: 2, table: 0, key: X, version: 0, latest_version: 1, latest_writer: 2 }
    );
    assert_eq!(
        violation.to_string(),
        "T1 committed at ts 2 but read version 0 of key 1; T2 had already installed version 1 before ts 2, so the read was stale"
    );
}

#[test]
fn timestamp_order_needs_every_timestamp() {
    let history = [txn(1, &[], &[(X, 1)]).with_ts(1), txn(2, &[(X, 1)], &[])];
    assert!(check(&history).is_ok());
    assert_eq!(check_timestamp_order(&history), Err(Violation::MissingTimestamp { id: 2 }));
}

#[test]
fn long_cycles_do_not_overflow_the_stack() {
    // T_i reads key i at version 0 and writes key i+1 ... a ring of 200 000 anti-dependencies.
    let ring = 200_000u64;
    let history: Vec<HistoryEntry> = (0..ring).map(|i| txn(i, &[(i, 0)], &[((i + 1) % ring, 1)])).collect();
    let Err(Violation::Cycle { transactions }) = check(&history) else { panic!("ring not caught") };
    assert_eq!(transactions.len(), ring as usize);
    assert!(transactions.iter().all(|step| step.kind == DependencyKind::ReadWrite));
}
