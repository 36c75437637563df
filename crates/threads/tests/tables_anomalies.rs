//! One scripted scenario per isolation anomaly over tables, against every protocol on tables
//! through the `TableProtocol` interface: dirty read, lost update, read skew, write skew, and
//! phantoms (a predicate read racing an insert into its range, or a delete from it, or the
//! insert of a key read absent).
//!
//! Expected: serializable protocols show none (and the history of what they committed passes
//! the checker); `mvcc_si` shows write skew and the phantoms, which are write skew through a
//! predicate, and nothing else. Every scenario first runs each of its transactions alone on a
//! fresh database, where it must commit, so a protocol that aborts everything cannot pass.
//!
//! Each transaction runs on a thread of its own, one at a time (the simulator's `Turns`): the
//! script gives turns step by step. A step that does not finish within `BLOCKED_AFTER_POINTS`
//! yield points is waiting for the other transaction (a 2PL lock), so the script moves on and
//! resumes it after every later step, as a second session would. Protocols that do not run
//! transactions concurrently (`serial`) get each script's transactions one after the other.
//!
//! Adding a protocol is one line in `protocols!` at the bottom.

mod common;

use common::Preloaded;
use ordo_history::HistoryEntry;
use ordo_storage::{TableId, TableSchema};
use ordo_threads::ProtocolKind;
use ordo_threads::tables::mvcc::VERSIONS_DEFAULT;
use ordo_threads::tables::simulate::{Stop, Turns};
use ordo_threads::tables::{
    Epochs, Index, Isolation, MvccTables, SiloFaults, SiloTables, TableProtocol, TicTocTables, TwoPhaseTables,
    WorkerOptions,
};
use ordo_workload::{Aborted, Direction, TableWorkload, Tx};

const ITEMS: TableId = 0;
const X: u64 = 1;
const Y: u64 = 2;
/// The predicate range: keys 30, 40 and 50 are present.
const LOW: u64 = 30;
const HIGH: u64 = 50;
/// Rows the range starts with.
const IN_RANGE: usize = 3;
/// Yield points a step may take before it counts as waiting for the other transaction.
const BLOCKED_AFTER_POINTS: usize = 256;
/// Keys beyond the range for `no_false_phantom` (enough for many index leaves).
const FILLER: u64 = 10_000;
/// Turns the end of a script may take to finish every transaction.
const FINISH_TURNS_MAX: usize = 100_000;

/// `items`: x and y at 0, the range's keys at 1, and `filler` keys from 1000 on.
fn items(filler: u64) -> Preloaded {
    let ones = (LOW..=HIGH).step_by(10).chain(1000..1000 + filler).map(|key| (ITEMS, key, vec![1]));
    let rows = [(ITEMS, X, vec![0]), (ITEMS, Y, vec![0])].into_iter().chain(ones);
    Preloaded::new("anomalies", [TableSchema::new("items").int("value")], rows)
}

/// One step of a script's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Read a key; remembers its value (absent: nothing).
    Read(u64),
    /// Write the sum of every value read so far, plus a constant.
    Write(u64, i64),
    /// Read a key and write it back plus a delta.
    Add(u64, i64),
    /// Scan `LOW..=HIGH` and remember how many rows it holds.
    Count,
    /// Insert a key (value 1) if the last count was below the bound.
    InsertIfBelow(u64, usize),
    /// Delete a key if the last count was above the bound.
    DeleteIfAbove(u64, usize),
    /// Insert the first key (value 1) if the second is absent.
    InsertIfAbsent(u64, u64),
    Commit,
    Abort,
}

/// What a transaction of a script did.
#[derive(Debug, Default, Clone)]
struct TxnResult {
    committed: bool,
    /// Values read, in order, while it was alive.
    reads: Vec<i64>,
    /// Row counts of its scans.
    counts: Vec<usize>,
}

/// What a script left behind.
#[derive(Debug)]
struct ScriptOutcome {
    txns: [TxnResult; 2],
    /// The final rows of `items`.
    rows: std::collections::BTreeMap<u64, Vec<u64>>,
    history: Vec<HistoryEntry>,
}

impl ScriptOutcome {
    fn value(&self, key: u64) -> Option<i64> {
        self.rows.get(&key).map(|row| row[0] as i64)
    }

    fn in_range(&self) -> usize {
        self.rows.range(LOW..=HIGH).count()
    }

    fn both_committed(&self) -> bool {
        self.txns.iter().all(|t| t.committed)
    }
}

/// Runs one transaction's steps; the driver gives it one turn per step.
fn run_txn<P: TableProtocol>(
    protocol: &P,
    index: usize,
    ops: &[Op],
    seat: &ordo_threads::tables::simulate::Seat,
) -> (TxnResult, Vec<HistoryEntry>) {
    let mut worker = protocol.worker(WorkerOptions { index, workers: 2, record_history: true });
    let mut result = TxnResult::default();
    {
        let mut attempt = Some(protocol.begin(&mut worker, false));
        for &op in ops {
            if let Some(tx) = attempt.as_mut() {
                match step(tx, op, &mut result) {
                    Ok(Some(true)) => {
                        result.committed = P::commit(attempt.take().expect("alive")).is_ok();
                    }
                    Ok(Some(false)) | Err(Aborted) => {
                        P::abort(attempt.take().expect("alive"));
                    }
                    Ok(None) => {}
                }
            }
            seat.boundary();
        }
    }
    protocol.quiesce(&mut worker);
    (result, std::mem::take(P::history(&mut worker)))
}

/// Runs `op`; `Some(true)` to commit, `Some(false)` to abort, `None` to go on.
fn step(tx: &mut dyn Tx, op: Op, result: &mut TxnResult) -> Result<Option<bool>, Aborted> {
    let mut row = [0];
    match op {
        Op::Read(key) => {
            if tx.get(ITEMS, key, &mut row, false)? {
                result.reads.push(row[0] as i64);
            }
        }
        Op::Write(key, plus) => {
            let value = result.reads.iter().sum::<i64>() + plus;
            tx.put(ITEMS, key, &[value as u64])?;
        }
        Op::Add(key, delta) => {
            if tx.get(ITEMS, key, &mut row, true)? {
                result.reads.push(row[0] as i64);
                tx.put(ITEMS, key, &[(row[0] as i64 + delta) as u64])?;
            }
        }
        Op::Count => {
            let count = tx.scan(ITEMS, LOW, HIGH, Direction::Ascending, usize::MAX, &mut |_, _| true)?;
            result.counts.push(count);
        }
        Op::InsertIfBelow(key, bound) => {
            if result.counts.last().is_some_and(|&count| count < bound) {
                tx.insert(ITEMS, key, &[1])?;
            }
        }
        Op::DeleteIfAbove(key, bound) => {
            if result.counts.last().is_some_and(|&count| count > bound) {
                tx.delete(ITEMS, key)?;
            }
        }
        Op::InsertIfAbsent(key, absent) => {
            if !tx.get(ITEMS, absent, &mut row, false)? {
                tx.insert(ITEMS, key, &[1])?;
            }
        }
        Op::Commit => return Ok(Some(true)),
        Op::Abort => return Ok(Some(false)),
    }
    Ok(None)
}

/// Drives a script: each `(transaction, op)` in turn, on a fresh database.
fn run_script<P: TableProtocol>(
    build: &dyn Fn(&dyn TableWorkload) -> P,
    workload: &Preloaded,
    script: &[(usize, Op)],
) -> ScriptOutcome {
    let protocol = build(workload);
    let mut script = script.to_vec();
    if !P::CONCURRENT {
        script.sort_by_key(|&(t, _)| t);
    }
    let ops: [Vec<Op>; 2] = [0, 1].map(|t| script.iter().filter(|s| s.0 == t).map(|s| s.1).collect());
    let turns = Turns::new(2);
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let (protocol, ops) = (&protocol, &ops[t]);
                turns.spawn(scope, t, move |seat| run_txn(protocol, t, ops, seat))
            })
            .collect();
        // Steps issued to a transaction while it was waiting, and whether it is waiting.
        let mut owed = [0usize; 2];
        let mut waiting = [false; 2];
        // Runs transaction `t` until its step ends (true) or it turns out to wait (false).
        let advance = |t: usize| -> bool {
            for _ in 0..BLOCKED_AFTER_POINTS {
                match turns.resume(t) {
                    Stop::Boundary => return true,
                    Stop::Point => {}
                    Stop::Finished(result) => panic!("transaction {t} ended mid-script: {result:?}"),
                }
            }
            false
        };
        for &(t, _) in &script {
            owed[t] += 1;
            // This transaction first, then the other, which may have waited for this step.
            for u in [t, 1 - t] {
                loop {
                    if waiting[u] {
                        if !advance(u) {
                            break;
                        }
                        waiting[u] = false;
                    } else if owed[u] > 0 {
                        owed[u] -= 1;
                        waiting[u] = !advance(u);
                    } else {
                        break;
                    }
                }
            }
        }
        // Every step is issued: run whatever is left to its end.
        let mut turns_left = FINISH_TURNS_MAX;
        while let Some(t) = (0..2).find(|&t| !turns.finished(t)) {
            turns_left = turns_left.checked_sub(1).expect("the script's transactions deadlocked");
            for u in [t, 1 - t] {
                if !turns.finished(u) {
                    turns.resume(u);
                }
            }
        }
        handles.into_iter().map(|h| h.join().unwrap().expect("a script transaction finished")).collect::<Vec<_>>()
    });
    let mut history: Vec<HistoryEntry> = results.iter().flat_map(|(_, h)| h.iter().cloned()).collect();
    history.sort_by_key(|entry| entry.id);
    let txns = [results[0].0.clone(), results[1].0.clone()];
    ScriptOutcome { txns, rows: protocol.database().rows(ITEMS), history }
}

/// A scenario: its name, its script, and whether an outcome shows the anomaly.
struct Scenario {
    name: &'static str,
    script: &'static [(usize, Op)],
    anomaly: fn(&ScriptOutcome) -> bool,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        // T2 reads what T1 wrote, then T1 aborts.
        name: "dirty_read",
        script: &[(0, Op::Read(X)), (0, Op::Write(X, 100)), (1, Op::Read(X)), (0, Op::Abort), (1, Op::Commit)],
        anomaly: |o| o.txns[1].committed && o.txns[1].reads.contains(&100),
    },
    Scenario {
        // Both increment x from the same read: one increment is lost.
        name: "lost_update",
        script: &[
            (0, Op::Read(X)),
            (1, Op::Read(X)),
            (0, Op::Write(X, 1)),
            (1, Op::Write(X, 1)),
            (0, Op::Commit),
            (1, Op::Commit),
        ],
        anomaly: |o| o.both_committed() && o.value(X) != Some(2),
    },
    Scenario {
        // T1 reads x before and y after T2 moves 5 from x to y: x + y = 0 no longer holds in T1's view.
        name: "read_skew",
        script: &[
            (0, Op::Read(X)),
            (1, Op::Add(X, -5)),
            (1, Op::Add(Y, 5)),
            (1, Op::Commit),
            (0, Op::Read(Y)),
            (0, Op::Commit),
        ],
        anomaly: |o| o.txns[0].committed && o.txns[0].reads.len() == 2 && o.txns[0].reads.iter().sum::<i64>() != 0,
    },
    Scenario {
        // Both read x and y; each writes one of them as x + y + 1, neither seeing the other.
        name: "write_skew",
        script: &[
            (0, Op::Read(X)),
            (0, Op::Read(Y)),
            (1, Op::Read(X)),
            (1, Op::Read(Y)),
            (0, Op::Write(X, 1)),
            (1, Op::Write(Y, 1)),
            (0, Op::Commit),
            (1, Op::Commit),
        ],
        // One after the other, the second writes 0 + 1 + 1.
        anomaly: |o| o.both_committed() && (o.value(X), o.value(Y)) == (Some(1), Some(1)),
    },
    Scenario {
        // At most four rows in the range: both count three and insert one.
        name: "phantom",
        script: &[
            (0, Op::Count),
            (1, Op::Count),
            (0, Op::InsertIfBelow(45, IN_RANGE + 1)),
            (1, Op::InsertIfBelow(35, IN_RANGE + 1)),
            (0, Op::Commit),
            (1, Op::Commit),
        ],
        anomaly: |o| o.both_committed() && o.in_range() > IN_RANGE + 1,
    },
    Scenario {
        // At least two rows in the range: both count three and delete one.
        name: "phantom_delete",
        script: &[
            (0, Op::Count),
            (1, Op::Count),
            (0, Op::DeleteIfAbove(30, IN_RANGE - 1)),
            (1, Op::DeleteIfAbove(50, IN_RANGE - 1)),
            (0, Op::Commit),
            (1, Op::Commit),
        ],
        anomaly: |o| o.both_committed() && o.in_range() < IN_RANGE - 1,
    },
    Scenario {
        // Each inserts its key if the other's is absent: one after the other, only the first does.
        name: "phantom_absent_read",
        script: &[(0, Op::InsertIfAbsent(35, 45)), (1, Op::InsertIfAbsent(45, 35)), (0, Op::Commit), (1, Op::Commit)],
        anomaly: |o| o.both_committed() && o.value(35).is_some() && o.value(45).is_some(),
    },
];

/// What snapshot isolation is expected to show: write skew, plain and through predicates.
const SNAPSHOT_ANOMALIES: &[&str] = &["write_skew", "phantom", "phantom_delete", "phantom_absent_read"];

/// What a protocol promises, so which checker the histories of its runs must pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Promise {
    Serializable,
    SnapshotIsolation,
    /// A protocol broken on purpose: its histories are not checked.
    Nothing,
}

/// Runs every scenario on fresh databases of the protocol `build` makes; returns the anomalies
/// it showed. The history of every interleaved run must pass the checker of what the protocol
/// promises, and the history of a run that showed an anomaly must fail the serializability
/// check.
fn anomalies<P: TableProtocol>(build: impl Fn(&dyn TableWorkload) -> P, promise: Promise) -> Vec<&'static str> {
    let mut shown = Vec::new();
    for scenario in SCENARIOS {
        // Alone, each transaction commits (its Abort step aside).
        for t in 0..2 {
            let alone: Vec<(usize, Op)> = scenario.script.iter().copied().filter(|s| s.0 == t).collect();
            let outcome = run_script(&build, &items(0), &alone);
            let aborts_itself = alone.iter().any(|s| s.1 == Op::Abort);
            assert_eq!(outcome.txns[t].committed, !aborts_itself, "{}: transaction {t} alone", scenario.name);
        }
        let outcome = run_script(&build, &items(0), scenario.script);
        let anomaly = (scenario.anomaly)(&outcome);
        if anomaly {
            shown.push(scenario.name);
            assert!(
                ordo_history::check(&outcome.history).is_err(),
                "{}: the anomaly's history passed the serializability check: {:?}",
                scenario.name,
                outcome.history
            );
        }
        let checked = match promise {
            Promise::Serializable => ordo_history::check(&outcome.history).map(drop),
            Promise::SnapshotIsolation => ordo_history::check_snapshot_isolation(&outcome.history).map(drop),
            Promise::Nothing => Ok(()),
        };
        checked.unwrap_or_else(|violation| panic!("{}: {violation}: {:?}", scenario.name, outcome.history));
    }
    shown
}

/// Checks that the protocol `build` makes shows exactly the anomalies its isolation level
/// admits.
fn expect_anomalies<P: TableProtocol>(build: impl Fn(&dyn TableWorkload) -> P) {
    let (promise, expected): (_, &[&str]) = if build(&items(0)).kind().serializable() {
        (Promise::Serializable, &[])
    } else {
        (Promise::SnapshotIsolation, SNAPSHOT_ANOMALIES)
    };
    assert_eq!(anomalies(build, promise), expected);
}

/// Phantom protection is no table lock: with enough rows that the far end of the table is
/// another part of the index, an insert there while another transaction scans the range and
/// writes lets both commit.
fn no_false_phantom<P: TableProtocol>(build: impl Fn(&dyn TableWorkload) -> P) {
    let far = 1000 + FILLER + 10;
    let script =
        [(0, Op::Count), (1, Op::InsertIfAbsent(far, far + 1)), (1, Op::Commit), (0, Op::Write(X, 7)), (0, Op::Commit)];
    let outcome = run_script(&build, &items(FILLER), &script);
    assert!(outcome.both_committed(), "an insert far outside a scanned range aborted someone: {outcome:?}");
    assert_eq!((outcome.value(far), outcome.value(X)), (Some(1), Some(7)));
}

macro_rules! protocols {
    ($($name:ident => $build:expr,)*) => {
        $(
            #[test]
            fn $name() {
                expect_anomalies($build);
                no_false_phantom($build);
            }
        )*
    };
}

protocols! {
    silo => |workload: &dyn TableWorkload| SiloTables::load(workload, Index::Tree, 1, Epochs::manual()).unwrap(),
    tictoc => |workload: &dyn TableWorkload| TicTocTables::load(workload, Index::Tree, 1, Epochs::manual()).unwrap(),
    no_wait => |workload: &dyn TableWorkload| {
        TwoPhaseTables::load(workload, Index::Tree, 1, Epochs::manual(), ProtocolKind::NoWait).unwrap()
    },
    mvcc_si => |workload: &dyn TableWorkload| {
        MvccTables::load(workload, Index::Tree, 1, Epochs::manual(), Isolation::Snapshot, VERSIONS_DEFAULT).unwrap()
    },
    ssi => |workload: &dyn TableWorkload| {
        MvccTables::load(workload, Index::Tree, 1, Epochs::manual(), Isolation::SerialSafetyNet, VERSIONS_DEFAULT)
            .unwrap()
    },
}

/// The scenarios can fail: Silo with a validation step switched off shows the anomalies that
/// step prevents.
#[test]
fn silo_with_validation_switched_off_shows_anomalies() {
    let broken = |faults: SiloFaults| {
        move |workload: &dyn TableWorkload| {
            SiloTables::load(workload, Index::Tree, 1, Epochs::manual()).unwrap().with_faults(faults)
        }
    };
    let reads_off =
        anomalies(broken(SiloFaults { skip_read_validation: true, ..SiloFaults::default() }), Promise::Nothing);
    assert_eq!(reads_off, ["lost_update", "read_skew", "write_skew", "phantom_delete"]);
    let nodes_off =
        anomalies(broken(SiloFaults { skip_node_validation: true, ..SiloFaults::default() }), Promise::Nothing);
    assert_eq!(nodes_off, ["phantom"]);
    // A key read absent is protected twice: by the node set where it had no record, by the
    // read set where it had a placeholder.
    let both_off = anomalies(
        broken(SiloFaults { skip_node_validation: true, skip_read_validation: true, ..SiloFaults::default() }),
        Promise::Nothing,
    );
    assert_eq!(
        both_off,
        ["lost_update", "read_skew", "write_skew", "phantom", "phantom_delete", "phantom_absent_read"]
    );
}
