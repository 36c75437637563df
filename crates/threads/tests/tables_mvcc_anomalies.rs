//! Scripted isolation anomalies over tables, driven by hand through [`TableProtocol`]: two or
//! three attempts interleaved step by step on one thread. Every script first runs its
//! transactions one after the other, where each must commit (so a protocol that aborts
//! everything cannot pass), then interleaved.
//!
//! Expected: `mvcc_si` shows write skew, the phantom (predicate write skew, with the scanner
//! committing first or last) and the read-only anomaly, and no dirty read, lost update or
//! read skew; `ssi` shows none of them. The runner is generic over the protocol.
//!
//! Tables: `doctors` 1 and 2 (row: on call 1/0); `shifts` keyed `day * 100 + slot` (row: the
//! doctor), empty at first; `accounts` 1 (checking) and 2 (savings) of one customer.

mod common;

use std::collections::BTreeMap;

use common::Preloaded;
use ordo_storage::{TableId, TableSchema};
use ordo_threads::tables::{Epochs, Index, Isolation, MvccTables, TableProtocol, WorkerOptions};
use ordo_workload::{Direction, Tx};

const DOCTORS: TableId = 0;
const SHIFTS: TableId = 1;
const ACCOUNTS: TableId = 2;
const DAY: u64 = 7;

/// The ward the scripts run in: both doctors on call, one shift (not on day 7), both accounts
/// empty.
fn ward() -> Preloaded {
    let tables = [
        TableSchema::new("doctors").int("on_call"),
        TableSchema::new("shifts").int("doctor"),
        TableSchema::new("accounts").int("balance"),
    ];
    let rows = [
        (DOCTORS, 1, vec![1]),
        (DOCTORS, 2, vec![1]),
        (SHIFTS, 1, vec![0]),
        (ACCOUNTS, 1, vec![0]),
        (ACCOUNTS, 2, vec![0]),
    ];
    Preloaded::new("ward", tables, rows)
}

/// One step of a script: which transaction, and what it does.
#[derive(Debug, Clone, Copy)]
enum Op {
    Get(TableId, u64),
    /// Counts the rows in a key range.
    Scan(TableId, u64, u64),
    /// Writes `value` plus the sum of everything this transaction read so far.
    Put(TableId, u64, u64),
    Insert(TableId, u64, u64),
    Commit,
}

/// What a script produced.
#[derive(Debug)]
struct Ran {
    committed: Vec<bool>,
    /// Values (and scan counts) each transaction read, in order, while it was alive.
    seen: Vec<Vec<u64>>,
    tables: Vec<BTreeMap<u64, Vec<u64>>>,
}

fn run_script<P: TableProtocol>(protocol: &P, transactions: usize, script: &[(usize, Op)]) -> Ran {
    let mut workers: Vec<P::Worker> = (0..transactions)
        .map(|index| protocol.worker(WorkerOptions { index, workers: transactions, record_history: false }))
        .collect();
    let mut idle: Vec<Option<&mut P::Worker>> = workers.iter_mut().map(Some).collect();
    let mut attempts: Vec<Option<P::Attempt<'_>>> = (0..transactions).map(|_| None).collect();
    let mut finished = vec![false; transactions];
    let mut committed = vec![false; transactions];
    let mut seen: Vec<Vec<u64>> = vec![Vec::new(); transactions];
    let mut row = [0u64];
    for &(t, op) in script {
        if finished[t] {
            continue;
        }
        if attempts[t].is_none() {
            let worker = idle[t].take().expect("each transaction begins once");
            attempts[t] = Some(protocol.begin(worker, false));
        }
        let attempt = attempts[t].as_mut().expect("begun");
        let result = match op {
            Op::Get(table, key) => attempt.get(table, key, &mut row, false).map(|found| {
                seen[t].push(if found { row[0] } else { u64::MAX });
            }),
            Op::Scan(table, low, high) => attempt
                .scan(table, low, high, Direction::Ascending, usize::MAX, &mut |_, _| true)
                .map(|count| seen[t].push(count as u64)),
            Op::Put(table, key, value) => {
                let sum: u64 = seen[t].iter().filter(|&&v| v != u64::MAX).sum();
                attempt.put(table, key, &[value + sum]).map(|present| assert!(present, "{key} present"))
            }
            Op::Insert(table, key, value) => {
                attempt.insert(table, key, &[value]).map(|inserted| assert!(inserted, "{key} absent"))
            }
            Op::Commit => {
                let attempt = attempts[t].take().expect("begun");
                finished[t] = true;
                committed[t] = P::commit(attempt).is_ok();
                continue;
            }
        };
        if result.is_err() {
            P::abort(attempts[t].take().expect("begun"));
            finished[t] = true;
        }
    }
    drop(attempts);
    let tables = (0..3).map(|table| protocol.database().rows(table)).collect();
    Ran { committed, seen, tables }
}

/// Runs `script` one transaction after the other (each must commit), then interleaved.
fn serial_then_interleaved<P: TableProtocol>(
    build: &dyn Fn() -> P,
    transactions: usize,
    script: &[(usize, Op)],
) -> Ran {
    let mut serial = script.to_vec();
    serial.sort_by_key(|&(t, _)| t);
    let alone = run_script(&build(), transactions, &serial);
    assert!(alone.committed.iter().all(|&c| c), "{:?}: run alone, every transaction commits", build().kind());
    run_script(&build(), transactions, script)
}

/// Both doctors check that the other is on call and go off call.
fn write_skew<P: TableProtocol>(build: &dyn Fn() -> P) -> bool {
    let ran = serial_then_interleaved(
        build,
        2,
        &[
            (0, Op::Get(DOCTORS, 1)),
            (0, Op::Get(DOCTORS, 2)),
            (1, Op::Get(DOCTORS, 1)),
            (1, Op::Get(DOCTORS, 2)),
            // Each writes the number of on-call doctors it saw (0 + the sum of its reads).
            (0, Op::Put(DOCTORS, 1, 0)),
            (1, Op::Put(DOCTORS, 2, 0)),
            (0, Op::Commit),
            (1, Op::Commit),
        ],
    );
    // Each wrote the number of on-call doctors it saw: 2 in both means neither saw the other
    // go off call (run one after the other, the second sees 1 + 2 = 3).
    ran.committed == [true, true] && ran.tables[DOCTORS as usize][&1] == [2] && ran.tables[DOCTORS as usize][&2] == [2]
}

/// Both check that day 7 has no shift yet and book one (at most one shift a day).
fn phantom<P: TableProtocol>(build: &dyn Fn() -> P) -> bool {
    let ran = serial_then_interleaved(
        build,
        2,
        &[
            (0, Op::Scan(SHIFTS, DAY * 100, DAY * 100 + 99)),
            (1, Op::Scan(SHIFTS, DAY * 100, DAY * 100 + 99)),
            (0, Op::Insert(SHIFTS, DAY * 100 + 1, 1)),
            (0, Op::Commit),
            (1, Op::Insert(SHIFTS, DAY * 100 + 2, 2)),
            (1, Op::Commit),
        ],
    );
    ran.committed == [true, true] && ran.seen[1] == [0]
}

/// T1 sees no shift on day 7 and takes doctor 1 off call; T2 saw doctor 1 on call and books
/// them on day 7 after T1 committed. Only T1's scan knows about T2's insert: SSN needs the
/// leaf stamp T1 left to see the cycle (T2 -rw-> T1 on the doctor, T1 -rw-> T2 on the day).
fn phantom_after_the_scanner_committed<P: TableProtocol>(build: &dyn Fn() -> P) -> bool {
    let ran = serial_then_interleaved(
        build,
        2,
        &[
            (1, Op::Get(DOCTORS, 1)),
            (0, Op::Scan(SHIFTS, DAY * 100, DAY * 100 + 99)),
            (0, Op::Put(DOCTORS, 1, 0)),
            (0, Op::Commit),
            (1, Op::Insert(SHIFTS, DAY * 100 + 1, 1)),
            (1, Op::Commit),
        ],
    );
    ran.committed == [true, true] && ran.seen[1] == [1] && ran.tables[DOCTORS as usize][&1] == [0]
}

/// Fekete, O'Neil and O'Neil's read-only anomaly (SIGMOD Record 2004): T0 withdraws from
/// checking (1) judging by checking + savings, T1 deposits into savings (2), read-only T2
/// sees the deposit but not the withdrawal, though the withdrawal did not see the deposit.
/// `late_reader`: T2 reads after the withdrawal committed (caught by T2's own commit check)
/// rather than before (caught by the withdrawal's eta through T2's read-time pstamp).
fn read_only_anomaly<P: TableProtocol>(build: &dyn Fn() -> P, late_reader: bool) -> bool {
    let mut script = vec![
        (0, Op::Get(ACCOUNTS, 1)),
        (0, Op::Get(ACCOUNTS, 2)),
        (1, Op::Get(ACCOUNTS, 2)),
        (1, Op::Put(ACCOUNTS, 2, 20)),
        (1, Op::Commit),
        (2, Op::Get(ACCOUNTS, 2)),
    ];
    let withdraw = [(0, Op::Put(ACCOUNTS, 1, 10)), (0, Op::Commit)];
    let read = [(2, Op::Get(ACCOUNTS, 1)), (2, Op::Commit)];
    if late_reader {
        script.extend(withdraw);
        script.extend(read);
    } else {
        script.extend(read);
        script.extend(withdraw);
    }
    let ran = serial_then_interleaved(build, 3, &script);
    // The reader saw the deposit (20) and not the withdrawal (0 at checking).
    ran.committed == [true, true, true] && ran.seen[2] == [20, 0]
}

/// T1 reads what T0 wrote before T0 aborts (never commits: T0 has no commit step).
fn dirty_read<P: TableProtocol>(build: &dyn Fn() -> P) -> bool {
    let protocol = build();
    let ran = run_script(&protocol, 2, &[(0, Op::Put(DOCTORS, 1, 100)), (1, Op::Get(DOCTORS, 1)), (1, Op::Commit)]);
    assert!(ran.committed[1]);
    ran.seen[1] == [100]
}

/// Both increment doctor 1 from the same read; one increment is lost.
fn lost_update<P: TableProtocol>(build: &dyn Fn() -> P) -> bool {
    let ran = serial_then_interleaved(
        build,
        2,
        &[
            (0, Op::Get(DOCTORS, 1)),
            (1, Op::Get(DOCTORS, 1)),
            (0, Op::Put(DOCTORS, 1, 1)),
            (1, Op::Put(DOCTORS, 1, 1)),
            (0, Op::Commit),
            (1, Op::Commit),
        ],
    );
    ran.committed == [true, true] && ran.tables[DOCTORS as usize][&1] != [3]
}

/// T0 reads doctor 1 before and doctor 2 after T1 changes both.
fn read_skew<P: TableProtocol>(build: &dyn Fn() -> P) -> bool {
    let ran = serial_then_interleaved(
        build,
        2,
        &[
            (0, Op::Get(DOCTORS, 1)),
            (1, Op::Put(DOCTORS, 1, 4)),
            (1, Op::Put(DOCTORS, 2, 4)),
            (1, Op::Commit),
            (0, Op::Get(DOCTORS, 2)),
            (0, Op::Commit),
        ],
    );
    ran.committed[0] && ran.seen[0].len() == 2 && ran.seen[0][0] != ran.seen[0][1]
}

/// A named scenario: whether it observed its anomaly, on protocols `build` makes.
type Scenario<P> = (&'static str, fn(&dyn Fn() -> P) -> bool);

/// Every scenario; returns the anomalies observed, by name.
fn anomalies<P: TableProtocol>(build: &dyn Fn() -> P) -> Vec<&'static str> {
    let scenarios: [Scenario<P>; 8] = [
        ("dirty_read", dirty_read),
        ("lost_update", lost_update),
        ("read_skew", read_skew),
        ("write_skew", write_skew),
        ("phantom", phantom),
        ("phantom_after_the_scanner_committed", phantom_after_the_scanner_committed),
        ("read_only_anomaly", |b| read_only_anomaly(b, false)),
        ("read_only_anomaly_late_reader", |b| read_only_anomaly(b, true)),
    ];
    scenarios.into_iter().filter(|(_, scenario)| scenario(build)).map(|(name, _)| name).collect()
}

fn mvcc(isolation: Isolation) -> MvccTables {
    MvccTables::load(&ward(), Index::Tree, 1, Epochs::manual(), isolation, 8).unwrap()
}

#[test]
fn snapshot_isolation_shows_write_skew_phantoms_and_the_read_only_anomaly_and_nothing_else() {
    assert_eq!(
        anomalies(&|| mvcc(Isolation::Snapshot)),
        vec![
            "write_skew",
            "phantom",
            "phantom_after_the_scanner_committed",
            "read_only_anomaly",
            "read_only_anomaly_late_reader"
        ]
    );
}

#[test]
fn the_serial_safety_net_shows_no_anomaly() {
    assert_eq!(anomalies(&|| mvcc(Isolation::SerialSafetyNet)), Vec::<&str>::new());
}
