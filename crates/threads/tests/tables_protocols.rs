//! Every protocol over tables (TicToc, 2PL `no_wait` and `wait_die`, `serial`; Silo has its
//! own files) against the reference database and under real threads: one worker ends exactly
//! where `MemoryDb` ends, transaction by transaction, on TPC-C and on YCSB E (scans and
//! inserts); several workers keep TPC-C's consistency conditions 1-4 and SmallBank's conserved
//! total, and record histories that `ordo-history` checks serializable, scans and inserts
//! included (TicToc's also in its commit-timestamp order).
//!
//! The helpers are generic over `TableProtocol`. A seed fixes the workload, not the thread
//! schedule. A failing case prints its seed; rerun with
//! `ORDO_SEED=<seed> cargo test -p ordo-threads --test tables_protocols`.

use std::sync::Arc;
use std::time::Duration;

use ordo_storage::TableId;
use ordo_threads::ProtocolKind;
use ordo_threads::tables::driver::{Finished, check, run_transaction};
use ordo_threads::tables::{
    Epochs, Index, SerialTables, TableProtocol, TableRunSpec, TablesConfig, TicTocTables, TwoPhaseTables,
    WorkerOptions, run,
};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{
    Binding, KvTables, MemoryDb, Outcome, Scratch, SmallBank, SmallBankConfig, TableWorkload, Tpcc, TpccConfig,
    TpccScale, Txn, YcsbConfig, YcsbCore, YcsbMix, rng_from_seed,
};

/// Runs of this file go one at a time: each runs busy workers on a 2-core machine.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn seed() -> u64 {
    std::env::var("ORDO_SEED").map_or(7, |s| s.parse().expect("ORDO_SEED is a u64"))
}

/// Most attempts of one transaction when a single worker runs alone (an optimistic
/// protocol's own insert may split a leaf its node set holds; nothing else fails alone).
const ALONE_ATTEMPTS_MAX: u32 = 3;
/// TPC-C transactions run by one worker against the reference.
const TPCC_ALONE_TXNS: usize = 2_000;
/// YCSB E transactions run by one worker against the reference.
const YCSB_E_ALONE_TXNS: usize = 2_000;

fn tpcc(warehouses: u32) -> Tpcc {
    Tpcc::new(TpccConfig { warehouses, binding: Binding::Random, scale: TpccScale::SMALL, ..TpccConfig::default() })
        .unwrap()
}

fn ycsb_e() -> YcsbCore {
    YcsbCore::new(YcsbMix::E, YcsbConfig { records: 3_000, theta: 0.9, payload_bytes: 24, ..YcsbConfig::default() })
        .unwrap()
}

/// One worker runs `count` generated transactions on `protocol` and on `MemoryDb`: each
/// must end the same way (commit or user abort), and every table must end equal.
fn single_worker_matches_memory_db<P: TableProtocol>(protocol: &P, workload: &dyn TableWorkload, count: usize) {
    let seed = seed();
    let name = protocol.kind();
    let mut memory = MemoryDb::loaded(workload);
    let mut worker = protocol.worker(WorkerOptions { index: 0, workers: 1, record_history: true });
    let (mut rng, mut txn, mut scratch, mut row) =
        (rng_from_seed(seed), Txn::default(), Scratch::default(), Vec::new());
    let mut memory_scratch = Scratch::default();
    let mut commits = 0;
    for i in 0..count {
        workload.generate(&mut rng, i % 4, &mut txn);
        let expected = memory.run(workload, &txn, &mut memory_scratch);
        let (finished, restarts) =
            run_transaction(protocol, &mut worker, workload, &txn, &mut scratch, &mut row, |r, _| {
                r < ALONE_ATTEMPTS_MAX
            });
        let finished_as = match finished {
            Finished::Committed => Outcome::Commit,
            Finished::UserAborted => Outcome::UserAbort,
            Finished::Stopped => panic!("{name} seed {seed}: transaction {i} ({txn:?}) aborted alone {restarts} times"),
        };
        assert_eq!(finished_as, expected, "{name} seed {seed}: transaction {i} ({txn:?}) ended differently");
        commits += usize::from(expected == Outcome::Commit);
        if i % 500 == 0 {
            protocol.quiesce(&mut worker);
        }
    }
    assert!(commits > count / 2, "{name} seed {seed}: only {commits} of {count} committed");
    protocol.quiesce(&mut worker);
    for table in 0..workload.schema().tables().len() {
        let table = table as TableId;
        let table_name = workload.schema().table(table).name;
        let engine_rows = protocol.database().rows(table);
        let memory_rows = memory.table(table);
        assert_eq!(engine_rows.len(), memory_rows.len(), "{name} seed {seed}: table {table_name} row count");
        for (key, row) in memory_rows {
            assert_eq!(engine_rows.get(key), Some(row), "{name} seed {seed}: table {table_name} key {key} differs");
        }
    }
    let history = std::mem::take(P::history(&mut worker));
    assert_eq!(history.len(), commits);
    if let Err(violation) = ordo_history::check(&history) {
        panic!("{name} seed {seed}: a lone worker's history does not check: {violation:?}");
    }
    if name == ProtocolKind::TicToc
        && let Err(violation) = ordo_history::check_timestamp_order(&history)
    {
        panic!("{name} seed {seed}: a lone worker's timestamps are no serial order: {violation:?}");
    }
    check(protocol, workload).unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
}

fn alone_on_tpcc<P: TableProtocol>(load: impl Fn(&dyn TableWorkload, Epochs) -> P) {
    let workload = tpcc(2);
    single_worker_matches_memory_db(&load(&workload, Epochs::clock(1)), &workload, TPCC_ALONE_TXNS);
}

fn alone_on_ycsb_e<P: TableProtocol>(load: impl Fn(&dyn TableWorkload, Epochs) -> P) {
    let workload = ycsb_e();
    single_worker_matches_memory_db(&load(&workload, Epochs::clock(1)), &workload, YCSB_E_ALONE_TXNS);
}

fn tictoc(workload: &dyn TableWorkload, epochs: Epochs) -> TicTocTables {
    TicTocTables::load(workload, Index::Tree, 2, epochs).unwrap()
}

fn serial(workload: &dyn TableWorkload, epochs: Epochs) -> SerialTables {
    SerialTables::load(workload, Index::Tree, 2, epochs).unwrap()
}

fn no_wait(workload: &dyn TableWorkload, epochs: Epochs) -> TwoPhaseTables {
    TwoPhaseTables::load(workload, Index::Tree, 2, epochs, ProtocolKind::NoWait).unwrap()
}

fn wait_die(workload: &dyn TableWorkload, epochs: Epochs) -> TwoPhaseTables {
    TwoPhaseTables::load(workload, Index::Tree, 2, epochs, ProtocolKind::WaitDie).unwrap()
}

#[test]
fn tictoc_alone_matches_the_reference_on_tpcc_and_ycsb_e() {
    let _one = exclusive();
    alone_on_tpcc(tictoc);
    alone_on_ycsb_e(tictoc);
}

#[test]
fn serial_alone_matches_the_reference_on_tpcc_and_ycsb_e() {
    let _one = exclusive();
    alone_on_tpcc(serial);
    alone_on_ycsb_e(serial);
}

#[test]
fn no_wait_alone_matches_the_reference_on_tpcc_and_ycsb_e() {
    let _one = exclusive();
    alone_on_tpcc(no_wait);
    alone_on_ycsb_e(no_wait);
}

#[test]
fn wait_die_alone_matches_the_reference_on_tpcc_and_ycsb_e() {
    let _one = exclusive();
    alone_on_tpcc(wait_die);
    alone_on_ycsb_e(wait_die);
}

fn spec(record_history: bool) -> TableRunSpec {
    TableRunSpec {
        seed: seed(),
        warmup: Duration::ZERO,
        duration: Duration::from_millis(300),
        cooldown: Duration::ZERO,
        record_history,
    }
}

/// Runs `workload` on `protocol` with `threads` workers through the driver: something
/// commits, the consistency conditions hold, and the history is serializable (TicToc's in
/// timestamp order too).
fn run_and_check(protocol: ProtocolKind, workload: &Arc<dyn TableWorkload>, threads: usize) {
    let seed = seed();
    let config = TablesConfig { protocol, threads, epoch_ms: 5, ..TablesConfig::default() };
    let report = run(&config, workload, &spec(true), |_, _| {}).unwrap();
    let name = workload.name();
    assert!(report.recorder.commits() > 0, "{protocol} seed {seed}: nothing committed on {name}");
    let consistency = report.consistency.unwrap_or_else(|e| panic!("{protocol} seed {seed}: {name}: {e}"));
    assert!(!consistency.checked.is_empty());
    assert!(!report.history.is_empty());
    if let Err(violation) = ordo_history::check(&report.history) {
        panic!("{protocol} seed {seed}: {name} history on {threads} threads not serializable: {violation:?}");
    }
    if protocol == ProtocolKind::TicToc
        && let Err(violation) = ordo_history::check_timestamp_order(&report.history)
    {
        panic!("{protocol} seed {seed}: {name} on {threads} threads: timestamps are no serial order: {violation:?}");
    }
}

fn tpcc_under_threads(protocol: ProtocolKind) {
    let workload: Arc<dyn TableWorkload> = Arc::new(tpcc(2));
    for threads in [2, 4] {
        run_and_check(protocol, &workload, threads);
    }
}

fn smallbank_under_threads(protocol: ProtocolKind) {
    let bank = SmallBank::new(SmallBankConfig {
        customers: 50,
        theta: 0.8,
        mix: CONSERVED_MIX,
        seed: seed(),
        ..SmallBankConfig::default()
    })
    .unwrap();
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(Arc::new(bank), 24));
    run_and_check(protocol, &workload, 2);
}

fn ycsb_e_under_threads(protocol: ProtocolKind) {
    let workload: Arc<dyn TableWorkload> = Arc::new(ycsb_e());
    run_and_check(protocol, &workload, 2);
}

#[test]
fn tictoc_keeps_tpcc_smallbank_and_ycsb_e_serializable_under_threads() {
    let _one = exclusive();
    tpcc_under_threads(ProtocolKind::TicToc);
    smallbank_under_threads(ProtocolKind::TicToc);
    ycsb_e_under_threads(ProtocolKind::TicToc);
}

#[test]
fn no_wait_keeps_tpcc_smallbank_and_ycsb_e_serializable_under_threads() {
    let _one = exclusive();
    tpcc_under_threads(ProtocolKind::NoWait);
    smallbank_under_threads(ProtocolKind::NoWait);
    ycsb_e_under_threads(ProtocolKind::NoWait);
}

#[test]
fn wait_die_keeps_tpcc_smallbank_and_ycsb_e_serializable_under_threads() {
    let _one = exclusive();
    tpcc_under_threads(ProtocolKind::WaitDie);
    smallbank_under_threads(ProtocolKind::WaitDie);
    ycsb_e_under_threads(ProtocolKind::WaitDie);
}

#[test]
fn serial_runs_one_worker_whatever_the_thread_count() {
    let _one = exclusive();
    let workload: Arc<dyn TableWorkload> = Arc::new(tpcc(1));
    let config = TablesConfig { protocol: ProtocolKind::Serial, threads: 4, epoch_ms: 5, ..TablesConfig::default() };
    let report = run(&config, &workload, &spec(true), |_, _| {}).unwrap();
    assert_eq!(report.threads, 1);
    report.consistency.unwrap();
    ordo_history::check(&report.history).unwrap();
}
