//! The multi-version protocols over tables (`mvcc_si`, `ssi`) against the reference database
//! and under real threads: one worker ends exactly where `MemoryDb` ends on the same TPC-C
//! transactions; several workers keep TPC-C's consistency conditions 1-4 and SmallBank's
//! conserved total; `ssi`'s histories (with scans, inserts and deletes) pass the
//! serializability checker. The helpers are generic over [`TableProtocol`], so any protocol
//! over tables can run them.
//!
//! A seed fixes the workload, not the thread schedule. A failing case prints its seed; rerun
//! with `ORDO_SEED=<seed> cargo test -p ordo-threads --test tables_mvcc_runs`.

use std::sync::Arc;
use std::time::Duration;

use ordo_storage::TableId;
use ordo_threads::ProtocolKind;
use ordo_threads::tables::driver::{Finished, check, run_transaction};
use ordo_threads::tables::{
    Epochs, Index, Isolation, MvccTables, TableProtocol, TableRunSpec, TablesConfig, WorkerOptions, run,
};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{
    Binding, HybridConfig, KvTables, MemoryDb, Outcome, Scratch, SmallBank, SmallBankConfig, TableWorkload, Tpcc,
    TpccConfig, TpccScale, Txn, Ycsb, YcsbConfig, YcsbCore, YcsbMix, rng_from_seed,
};

/// Runs of this file go one at a time: each runs busy workers on a 2-core machine.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn seed() -> u64 {
    std::env::var("ORDO_SEED").map_or(7, |s| s.parse().expect("ORDO_SEED is a u64"))
}

/// Most attempts of one transaction when a single worker runs alone (it never conflicts).
const ALONE_ATTEMPTS_MAX: u32 = 3;
const PROTOCOLS: [ProtocolKind; 2] = [ProtocolKind::MvccSi, ProtocolKind::Ssi];

fn tpcc(warehouses: u32, hybrid: Option<HybridConfig>) -> Tpcc {
    Tpcc::new(TpccConfig {
        warehouses,
        binding: Binding::Random,
        hybrid,
        scale: TpccScale::SMALL,
        ..TpccConfig::default()
    })
    .unwrap()
}

fn mvcc(workload: &dyn TableWorkload, isolation: Isolation) -> MvccTables {
    MvccTables::load(workload, Index::Tree, 2, Epochs::clock(1), isolation, 8).unwrap()
}

/// Runs `count` transactions of `workload` one at a time on one worker of `protocol` and on
/// `MemoryDb`: every transaction must end alike, and so must every table.
fn single_worker_matches_memory_db<P: TableProtocol>(protocol: &P, workload: &Tpcc, count: usize) {
    let seed = seed();
    let name = protocol.kind();
    let mut memory = MemoryDb::loaded(workload);
    let mut worker = protocol.worker(WorkerOptions { index: 0, workers: 1, record_history: false });
    let (mut rng, mut txn, mut scratch, mut row) =
        (rng_from_seed(seed), Txn::default(), Scratch::default(), Vec::new());
    let mut memory_scratch = Scratch::default();
    let mut outcomes = [0usize; 2];
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
        outcomes[usize::from(expected == Outcome::UserAbort)] += 1;
        if i % 500 == 0 {
            protocol.quiesce(&mut worker);
        }
    }
    assert!(outcomes[0] > count / 2, "{name} seed {seed}: only {} of {count} committed", outcomes[0]);
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
    drop(worker);
    let report = check(protocol, workload).unwrap();
    assert!(!report.checked.is_empty());
}

#[test]
fn one_worker_ends_where_the_reference_database_ends_on_tpcc() {
    let _one = exclusive();
    let workload = tpcc(2, None);
    for isolation in [Isolation::Snapshot, Isolation::SerialSafetyNet] {
        single_worker_matches_memory_db(&mvcc(&workload, isolation), &workload, 3_000);
    }
}

#[test]
fn one_worker_ends_where_the_reference_database_ends_on_the_hybrid_mix() {
    let _one = exclusive();
    let workload = tpcc(1, Some(HybridConfig { analytic_range: 0.2, analytic_share: 0.2 }));
    for isolation in [Isolation::Snapshot, Isolation::SerialSafetyNet] {
        single_worker_matches_memory_db(&mvcc(&workload, isolation), &workload, 1_500);
    }
}

fn spec(record_history: bool) -> TableRunSpec {
    TableRunSpec {
        seed: seed(),
        warmup: Duration::ZERO,
        duration: Duration::from_millis(400),
        cooldown: Duration::ZERO,
        record_history,
    }
}

/// Runs `workload` on `threads` threads of `protocol`: something commits, the workload's
/// consistency conditions hold afterwards and, for serializable protocols, the history checks.
fn run_and_check(protocol: ProtocolKind, workload: &Arc<dyn TableWorkload>, threads: usize, index: Index) {
    let seed = seed();
    let config = TablesConfig { protocol, threads, index, epoch_ms: 5, ..TablesConfig::default() };
    let report = run(&config, workload, &spec(true), |_, _| {}).unwrap();
    let name = workload.name();
    assert!(report.recorder.commits() > 0, "{protocol} seed {seed}: nothing committed on {name}");
    let consistency = report.consistency.unwrap_or_else(|e| panic!("{protocol} seed {seed}: {name}: {e}"));
    assert!(!consistency.checked.is_empty());
    assert!(!report.history.is_empty());
    if protocol.serializable()
        && let Err(violation) = ordo_history::check(&report.history)
    {
        panic!("{protocol} seed {seed}: {name} history on {threads} threads not serializable: {violation:?}");
    }
}

#[test]
fn tpcc_keeps_conditions_one_to_four_under_threads() {
    let _one = exclusive();
    let workload: Arc<dyn TableWorkload> = Arc::new(tpcc(2, None));
    for protocol in PROTOCOLS {
        for threads in [2, 4] {
            run_and_check(protocol, &workload, threads, Index::Tree);
        }
    }
}

#[test]
fn the_hybrid_mix_keeps_conditions_one_to_four_under_threads() {
    let _one = exclusive();
    let workload: Arc<dyn TableWorkload> =
        Arc::new(tpcc(1, Some(HybridConfig { analytic_range: 0.2, analytic_share: 0.2 })));
    for protocol in PROTOCOLS {
        run_and_check(protocol, &workload, 2, Index::Tree);
    }
}

#[test]
fn smallbank_through_kv_tables_conserves_its_total() {
    let _one = exclusive();
    let bank = SmallBank::new(SmallBankConfig {
        customers: 50,
        theta: 0.8,
        mix: CONSERVED_MIX,
        seed: seed(),
        ..SmallBankConfig::default()
    })
    .unwrap();
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(Arc::new(bank), 24));
    for protocol in PROTOCOLS {
        for threads in [2, 4] {
            run_and_check(protocol, &workload, threads, Index::Tree);
        }
        run_and_check(protocol, &workload, 2, Index::Array);
    }
}

#[test]
fn ycsb_e_scans_and_inserts_serialize_under_ssi() {
    let _one = exclusive();
    let config = YcsbConfig { records: 2_000, theta: 0.9, payload_bytes: 24, ..YcsbConfig::default() };
    let ycsb = YcsbCore::new(YcsbMix::E, config).unwrap();
    let workload: Arc<dyn TableWorkload> = Arc::new(ycsb);
    for protocol in PROTOCOLS {
        run_and_check(protocol, &workload, 2, Index::Tree);
    }
}

#[test]
fn ycsb_through_kv_tables_serializes_under_ssi_on_both_indexes() {
    let _one = exclusive();
    let ycsb =
        Ycsb::new(YcsbConfig { records: 2_000, theta: 0.9, payload_bytes: 24, ..YcsbConfig::default() }).unwrap();
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(Arc::new(ycsb), 24));
    for index in [Index::Tree, Index::Array] {
        run_and_check(ProtocolKind::Ssi, &workload, 2, index);
    }
}

#[test]
fn bad_configurations_are_refused_before_anything_runs() {
    let workload: Arc<dyn TableWorkload> = Arc::new(tpcc(1, None));
    let config = TablesConfig { protocol: ProtocolKind::Ssi, threads: 65, ..TablesConfig::default() };
    let error = run(&config, &workload, &spec(false), |_, _| {}).unwrap_err();
    assert!(error.to_string().contains("at most 64"), "{error}");
    let config = TablesConfig { protocol: ProtocolKind::MvccSi, versions: 1, ..TablesConfig::default() };
    let error = run(&config, &workload, &spec(false), |_, _| {}).unwrap_err();
    assert!(error.to_string().contains("versions"), "{error}");
}
