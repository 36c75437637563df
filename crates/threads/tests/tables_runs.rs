//! The table engine (Silo over `ordo-storage`) against the reference database and under real
//! threads: one worker ends exactly where `MemoryDb` ends on the same TPC-C transactions;
//! several workers keep TPC-C's consistency conditions 1-4, SmallBank's conserved total and
//! serializable histories (checked with `ordo-history`).
//!
//! A seed fixes the workload, not the thread schedule. A failing case prints its seed; rerun
//! with `ORDO_SEED=<seed> cargo test -p ordo-threads --test tables_runs`.

use std::sync::Arc;
use std::time::Duration;

use ordo_storage::TableId;
use ordo_threads::tables::Epochs;
use ordo_threads::tables::driver::{Finished, run_transaction};
use ordo_threads::tables::{Index, SiloTables, TableRunSpec, TablesConfig, run};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{
    Binding, HybridConfig, KvTables, MemoryDb, Outcome, Scratch, SmallBank, SmallBankConfig, TableWorkload, Tpcc,
    TpccConfig, TpccScale, Txn, Ycsb, YcsbConfig, rng_from_seed,
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

fn single_worker_matches_memory_db(workload: &Tpcc, count: usize) {
    let seed = seed();
    let mut memory = MemoryDb::loaded(workload);
    let silo = SiloTables::load(workload, Index::Tree, 2, Epochs::clock(1)).unwrap();
    let mut worker = silo.worker(0, false);
    let (mut rng, mut txn, mut scratch, mut row) =
        (rng_from_seed(seed), Txn::default(), Scratch::default(), Vec::new());
    let mut memory_scratch = Scratch::default();
    let mut outcomes = [0usize; 2];
    for i in 0..count {
        workload.generate(&mut rng, i % 4, &mut txn);
        let expected = memory.run(workload, &txn, &mut memory_scratch);
        let (finished, restarts) =
            run_transaction(&silo, &mut worker, workload, &txn, &mut scratch, &mut row, |r, _| r < ALONE_ATTEMPTS_MAX);
        let finished_as = match finished {
            Finished::Committed => Outcome::Commit,
            Finished::UserAborted => Outcome::UserAbort,
            Finished::Stopped => panic!("seed {seed}: transaction {i} ({txn:?}) aborted alone {restarts} times"),
        };
        assert_eq!(finished_as, expected, "seed {seed}: transaction {i} ({txn:?}) ended differently");
        outcomes[usize::from(expected == Outcome::UserAbort)] += 1;
        if i % 500 == 0 {
            silo.reclaim_all(&mut worker);
        }
    }
    assert!(outcomes[0] > count / 2, "seed {seed}: only {} of {count} committed", outcomes[0]);
    for table in 0..workload.schema().tables().len() {
        let table = table as TableId;
        let name = workload.schema().table(table).name;
        let engine_rows = silo.database().rows(table);
        let memory_rows = memory.table(table);
        assert_eq!(engine_rows.len(), memory_rows.len(), "seed {seed}: table {name} has a different row count");
        for (key, row) in memory_rows {
            assert_eq!(engine_rows.get(key), Some(row), "seed {seed}: table {name} key {key} differs");
        }
    }
    let report = ordo_threads::tables::driver::check(&silo, workload).unwrap();
    assert!(!report.checked.is_empty());
}

#[test]
fn one_worker_ends_where_the_reference_database_ends_on_tpcc() {
    let _one = exclusive();
    single_worker_matches_memory_db(&tpcc(2, None), 3_000);
}

#[test]
fn one_worker_ends_where_the_reference_database_ends_on_the_hybrid_mix() {
    let _one = exclusive();
    single_worker_matches_memory_db(&tpcc(1, Some(HybridConfig { analytic_range: 0.2, analytic_share: 0.2 })), 1_500);
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

fn run_and_check(workload: &Arc<dyn TableWorkload>, threads: usize, check_history: bool) {
    let seed = seed();
    let config = TablesConfig { threads, epoch_ms: 5, ..TablesConfig::default() };
    let report = run(&config, workload, &spec(check_history), |_, _| {}).unwrap();
    assert!(report.recorder.commits() > 0, "seed {seed}: nothing committed on {}", workload.name());
    let consistency = report.consistency.unwrap_or_else(|e| panic!("seed {seed}: {}: {e}", workload.name()));
    assert!(!consistency.checked.is_empty());
    if check_history {
        assert!(!report.history.is_empty());
        if let Err(violation) = ordo_history::check(&report.history) {
            panic!("seed {seed}: {} history not serializable: {violation:?}", workload.name());
        }
    }
}

#[test]
fn tpcc_keeps_conditions_one_to_four_under_threads() {
    let _one = exclusive();
    for threads in [2, 4] {
        run_and_check(&(Arc::new(tpcc(2, None)) as Arc<dyn TableWorkload>), threads, true);
    }
}

#[test]
fn the_hybrid_mix_keeps_conditions_one_to_four_under_threads() {
    let _one = exclusive();
    let workload: Arc<dyn TableWorkload> =
        Arc::new(tpcc(1, Some(HybridConfig { analytic_range: 0.2, analytic_share: 0.2 })));
    run_and_check(&workload, 2, true);
}

#[test]
fn smallbank_through_kv_tables_conserves_its_total_and_serializes() {
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
    for threads in [2, 4] {
        run_and_check(&workload, threads, true);
    }
}

#[test]
fn ycsb_through_kv_tables_serializes_on_both_indexes() {
    let _one = exclusive();
    let ycsb =
        Ycsb::new(YcsbConfig { records: 2_000, theta: 0.9, payload_bytes: 24, ..YcsbConfig::default() }).unwrap();
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(Arc::new(ycsb), 24));
    run_and_check(&workload, 2, true);
    let config = TablesConfig { threads: 2, index: Index::Array, ..TablesConfig::default() };
    let report = run(&config, &workload, &spec(true), |_, _| {}).unwrap();
    assert!(report.consistency.is_ok());
    ordo_history::check(&report.history).unwrap();
}

/// The distinct sets of keys a history's transactions accessed.
fn key_sets(history: &[ordo_history::HistoryEntry]) -> std::collections::BTreeSet<Vec<u64>> {
    history
        .iter()
        .map(|entry| {
            let mut keys: Vec<u64> = entry.reads.iter().chain(&entry.writes).map(|access| access.key).collect();
            keys.sort_unstable();
            keys.dedup();
            keys
        })
        .collect()
}

#[test]
fn replayable_workloads_replay_their_pools_and_the_others_draw_as_they_go() {
    let _one = exclusive();
    let seed = seed();
    // A pool of one transaction per worker: a replaying run commits at most two key sets.
    let config = TablesConfig { threads: 2, epoch_ms: 5, pregenerate: Some(1), ..TablesConfig::default() };
    let ycsb =
        Ycsb::new(YcsbConfig { records: 2_000, theta: 0.9, payload_bytes: 24, ..YcsbConfig::default() }).unwrap();
    let kv: Arc<dyn TableWorkload> = Arc::new(KvTables::new(Arc::new(ycsb), 24));
    assert!(kv.replayable());
    let report = run(&config, &kv, &spec(true), |_, _| {}).unwrap();
    assert!(report.recorder.commits() > 10, "seed {seed}: ycsb committed {}", report.recorder.commits());
    let sets = key_sets(&report.history);
    assert!(sets.len() <= 2, "seed {seed}: ycsb replayed {} key sets from pools of one", sets.len());
    ordo_history::check(&report.history).unwrap_or_else(|v| panic!("seed {seed}: not serializable: {v:?}"));
    // TPC-C binds transactions to warehouses and takes fresh order ids: never replayed.
    let tpcc: Arc<dyn TableWorkload> = Arc::new(tpcc(2, None));
    assert!(!tpcc.replayable());
    let report = run(&config, &tpcc, &spec(true), |_, _| {}).unwrap();
    report.consistency.unwrap_or_else(|e| panic!("seed {seed}: tpcc: {e}"));
    let sets = key_sets(&report.history);
    assert!(sets.len() > 10, "seed {seed}: tpcc committed only {} key sets", sets.len());
}

#[test]
fn the_array_index_refuses_tables_without_dense_keys() {
    let workload: Arc<dyn TableWorkload> = Arc::new(tpcc(1, None));
    let config = TablesConfig { threads: 1, index: Index::Array, ..TablesConfig::default() };
    let error = run(&config, &workload, &spec(false), |_, _| {}).unwrap_err();
    assert!(error.to_string().contains("dense"), "{error}");
}
