//! Scripted phantoms against every protocol over tables (TicToc, `no_wait`, `wait_die`):
//! two attempts interleaved by hand on one thread through the `Tx` interface. T1 looks at
//! the range 30..=50 of `items` (a scan, or a get of the absent key 35) and writes elsewhere;
//! T2 inserts 35 or deletes 40. Each scenario first shows that both commit when run alone,
//! so a protocol that aborts everything cannot pass; interleaved, they must not both commit
//! (optimistic protocols fail T1's validation, locking ones stop T2 at its write). The
//! histories of what committed must check. Then the wait-die rules: age kept across
//! restarts, the younger dies, the older waits.
//!
//! T1 always begins first, so under wait-die it is the older and T2 dies rather than waits
//! (one thread cannot wait for itself).

mod common;

use std::time::{Duration, Instant};

use common::{Change, ITEMS, Look, OTHER, Preloaded, change, keys_in, look};
use ordo_harness::AbortCause;
use ordo_storage::TableSchema;
use ordo_threads::ProtocolKind;
use ordo_threads::tables::{Epochs, Index, TableProtocol, TicTocTables, TwoPhaseTables, WorkerOptions};
use ordo_workload::{Aborted, Tx};

/// `items` with keys 10, 20, ..., 100 (row: one value word); `other` with key 0.
fn items() -> Preloaded {
    let tables = [TableSchema::new("items").int("value"), TableSchema::new("other").int("value")];
    let rows = (1..=10).map(|i| (ITEMS, i * 10, vec![i])).chain([(OTHER, 0, vec![0])]);
    Preloaded::new("items", tables, rows)
}

/// Runs `body` as one attempt on `worker` and commits it: `Ok` if it committed.
fn attempt<P: TableProtocol>(
    protocol: &P,
    worker: &mut P::Worker,
    body: impl FnOnce(&mut dyn Tx) -> Result<(), Aborted>,
) -> Result<(), AbortCause> {
    let mut tx = protocol.begin(worker, false);
    match body(&mut tx) {
        Ok(()) => P::commit(tx).map(drop),
        Err(Aborted) => Err(P::abort(tx)),
    }
}

fn options(index: usize) -> WorkerOptions {
    WorkerOptions { index, workers: 2, record_history: true }
}

fn scenario<P: TableProtocol>(load: impl Fn() -> P, how: Look, what: Change) {
    // Alone, one after the other: both commit.
    let protocol = load();
    let name = protocol.kind();
    let (mut w1, mut w2) = (protocol.worker(options(0)), protocol.worker(options(1)));
    assert_eq!(attempt(&protocol, &mut w1, |tx| look(tx, how)), Ok(()), "{name}: {how:?} alone commits");
    assert_eq!(attempt(&protocol, &mut w2, |tx| change(tx, what)), Ok(()), "{name}: {what:?} alone commits");

    // Interleaved: T1 looks, T2 changes the range and tries to commit, then T1 tries.
    let protocol = load();
    let (mut w1, mut w2) = (protocol.worker(options(0)), protocol.worker(options(1)));
    let mut t1 = protocol.begin(&mut w1, false);
    look(&mut t1, how).expect("T1 alone so far");
    let mut t2 = protocol.begin(&mut w2, false);
    let t2_result = match change(&mut t2, what) {
        Ok(()) => P::commit(t2).map(drop),
        Err(Aborted) => Err(P::abort(t2)),
    };
    let t1_result = P::commit(t1).map(drop);
    assert!(
        t1_result.is_err() || t2_result.is_err(),
        "{name}: {how:?} racing {what:?}: both committed, a phantom went unnoticed"
    );
    if name == ProtocolKind::WaitDie {
        assert_eq!(t2_result, Err(AbortCause::Die), "{name}: the younger writer dies");
    }
    // Whoever failed runs again and commits, seeing the other's effect.
    let expected = match (what, t2_result.is_ok()) {
        (Change::Insert35, true) => vec![30, 35, 40, 50],
        (Change::Delete40, true) => vec![30, 50],
        (_, false) => vec![30, 40, 50],
    };
    let mut seen = Vec::new();
    let again = attempt(&protocol, &mut w1, |tx| {
        seen = keys_in(tx, 30, 50)?;
        Ok(())
    });
    assert_eq!(again, Ok(()));
    assert_eq!(seen, expected, "{name}: what T1's next attempt sees");
    if t2_result.is_err() {
        assert_eq!(attempt(&protocol, &mut w2, |tx| change(tx, what)), Ok(()), "{name}: T2 again commits");
    }
    let mut history = std::mem::take(P::history(&mut w1));
    history.append(P::history(&mut w2));
    if let Err(violation) = ordo_history::check(&history) {
        panic!("{name}: {how:?} racing {what:?}: history does not check: {violation:?}");
    }
}

fn every_scenario<P: TableProtocol>(load: impl Fn() -> P) {
    for (how, what) in
        [(Look::Scan, Change::Insert35), (Look::AbsentGet, Change::Insert35), (Look::Scan, Change::Delete40)]
    {
        scenario(&load, how, what);
    }
}

fn tictoc() -> TicTocTables {
    TicTocTables::load(&items(), Index::Tree, 1, Epochs::manual()).unwrap()
}

fn two_phase(kind: ProtocolKind) -> TwoPhaseTables {
    TwoPhaseTables::load(&items(), Index::Tree, 1, Epochs::manual(), kind).unwrap()
}

#[test]
fn tictoc_stops_phantoms_of_scans_and_absent_gets() {
    every_scenario(tictoc);
}

#[test]
fn no_wait_stops_phantoms_of_scans_and_absent_gets() {
    every_scenario(|| two_phase(ProtocolKind::NoWait));
}

#[test]
fn wait_die_stops_phantoms_of_scans_and_absent_gets() {
    every_scenario(|| two_phase(ProtocolKind::WaitDie));
}

/// Commits updates of `other[0]` until its `wts` is well above 1.
fn advance_other(protocol: &TicTocTables, worker: &mut <TicTocTables as TableProtocol>::Worker) {
    for i in 0..20 {
        assert_eq!(attempt(protocol, worker, |tx| tx.put(OTHER, 0, &[i]).map(drop)), Ok(()));
    }
    worker.history().clear();
}

#[test]
fn tictoc_orders_an_insert_after_a_scan_that_validated_first() {
    // T1 scans and commits before T2 inserts into the range: both commit, and T2's timestamp
    // is above the stamp T1 left on the leaf, so the timestamp order puts T1 (which did not
    // see 35) first. `other[0]` has been written often, so T1's timestamp is high and only the
    // leaf stamp lifts T2's above it.
    let protocol = tictoc();
    let (mut w1, mut w2) = (protocol.worker(options(0)), protocol.worker(options(1)));
    advance_other(&protocol, &mut w1);
    let t2 = protocol.begin(&mut w2, false);
    let mut t1 = protocol.begin(&mut w1, false);
    look(&mut t1, Look::Scan).unwrap();
    assert_eq!(TicTocTables::commit(t1).map(drop), Ok(()));
    let mut t2 = t2;
    change(&mut t2, Change::Insert35).unwrap();
    assert_eq!(TicTocTables::commit(t2).map(drop), Ok(()));
    let (scanner, inserter) = (w1.history()[0].ts.unwrap(), w2.history()[0].ts.unwrap());
    assert!(inserter > scanner, "the inserter commits above the scanner's leaf stamp");
    let mut history = std::mem::take(w1.history());
    history.append(w2.history());
    ordo_history::check_timestamp_order(&history).unwrap();

    // The same, but T2 first reads what T1 overwrites (T2 before T1) while T1's scan misses
    // T2's insert (T1 before T2): a cycle, so T2 must fail.
    let protocol = tictoc();
    let (mut w1, mut w2) = (protocol.worker(options(0)), protocol.worker(options(1)));
    advance_other(&protocol, &mut w1);
    let mut t2 = protocol.begin(&mut w2, false);
    assert!(t2.get(OTHER, 0, &mut [0], false).unwrap());
    let mut t1 = protocol.begin(&mut w1, false);
    look(&mut t1, Look::Scan).unwrap();
    assert_eq!(TicTocTables::commit(t1).map(drop), Ok(()));
    change(&mut t2, Change::Insert35).unwrap();
    assert!(TicTocTables::commit(t2).is_err(), "an insert below the scanner's stamp would close a cycle");
}

#[test]
fn wait_die_keeps_a_transactions_age_across_restarts() {
    let protocol = two_phase(ProtocolKind::WaitDie);
    let (mut old, mut young) = (protocol.worker(options(0)), protocol.worker(options(1)));
    let mut t_old = protocol.begin(&mut old, false);
    assert!(t_old.put(ITEMS, 40, &[4]).unwrap());
    // The younger transaction dies on the older one's lock, and keeps its timestamp.
    let mut t_young = protocol.begin(&mut young, false);
    assert_eq!(t_young.get(ITEMS, 40, &mut [0], false), Err(Aborted));
    assert_eq!(TwoPhaseTables::abort(t_young), AbortCause::Die);
    let young_ts = young.timestamp();
    let t_young = protocol.begin(&mut young, true);
    drop(t_young);
    assert_eq!(young.timestamp(), young_ts, "a restart keeps the transaction's age");
    let t_fresh = protocol.begin(&mut young, false);
    drop(t_fresh);
    assert!(young.timestamp() > young_ts, "a new transaction is younger");
    assert_eq!(TwoPhaseTables::commit(t_old).map(drop), Ok(()));
    assert_eq!(old.locks_held(), 0);
}

#[test]
fn wait_die_lets_the_older_transaction_wait_for_the_younger() {
    let protocol = two_phase(ProtocolKind::WaitDie);
    let (mut old, mut young) = (protocol.worker(options(0)), protocol.worker(options(1)));
    let hold = Duration::from_millis(50);
    let (began, locked) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    std::thread::scope(|scope| {
        let (protocol, began, locked) = (&protocol, &began, &locked);
        let waiter = scope.spawn(move || {
            let mut t_old = protocol.begin(&mut old, false);
            began.wait();
            locked.wait();
            let started = Instant::now();
            let mut row = [0];
            let found = t_old.get(ITEMS, 40, &mut row, false);
            let waited = started.elapsed();
            let committed = TwoPhaseTables::commit(t_old).map(drop);
            (found, row, waited, committed)
        });
        began.wait();
        let mut t_young = protocol.begin(&mut young, false);
        assert!(t_young.put(ITEMS, 40, &[400]).unwrap());
        locked.wait();
        std::thread::sleep(hold);
        assert_eq!(TwoPhaseTables::commit(t_young).map(drop), Ok(()));
        let (found, row, waited, committed) = waiter.join().unwrap();
        assert_eq!(found, Ok(true), "the older transaction waits instead of dying");
        assert_eq!(row, [400], "and reads what the younger committed");
        assert!(waited >= hold / 2, "it waited {waited:?}");
        assert_eq!(committed, Ok(()));
    });
}

#[test]
fn no_wait_aborts_at_once_on_a_busy_lock_and_releases_everything() {
    let protocol = two_phase(ProtocolKind::NoWait);
    let (mut w1, mut w2) = (protocol.worker(options(0)), protocol.worker(options(1)));
    let mut t1 = protocol.begin(&mut w1, false);
    assert!(t1.get(ITEMS, 40, &mut [0], true).unwrap(), "for_update takes the exclusive lock at once");
    let mut t2 = protocol.begin(&mut w2, false);
    assert!(t2.get(ITEMS, 30, &mut [0], false).unwrap());
    assert_eq!(t2.get(ITEMS, 40, &mut [0], false), Err(Aborted));
    assert_eq!(TwoPhaseTables::abort(t2), AbortCause::Conflict);
    assert_eq!(w2.locks_held(), 0);
    assert_eq!(TwoPhaseTables::commit(t1).map(drop), Ok(()));
    assert_eq!(attempt(&protocol, &mut w2, |tx| tx.put(ITEMS, 40, &[1]).map(drop)), Ok(()));
}
