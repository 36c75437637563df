//! The table engine (Silo over `ordo-storage`) against the reference database and under real
//! threads: one worker ends exactly where `MemoryDb` ends on the same TPC-C transactions;
//! several workers keep TPC-C's consistency conditions 1-4, SmallBank's conserved total and
//! serializable histories (checked with `ordo-history`). The tests run one at a time
//! (`exclusive`): each runs busy workers on a 2-core machine.
//!
//! A seed fixes the workload, not the thread schedule. A failing case prints its seed; rerun
//! with `ORDO_SEED=<seed> cargo test -p ordo-threads --test tables_runs`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    HYBRID_MIX, History, conserved_smallbank, exclusive, run_and_check, run_spec, seed,
    single_worker_matches_memory_db, small_tpcc, ycsb_kv,
};
use ordo_threads::ProtocolKind;
use ordo_threads::tables::{Epochs, Index, SiloTables, TableRunSpec, TablesConfig, run};
use ordo_workload::{TableWorkload, Tpcc};

const SEED_DEFAULT: u64 = 7;
/// How long each run through the driver lasts.
const RUN: Duration = Duration::from_millis(400);

fn spec(record_history: bool) -> TableRunSpec {
    run_spec(seed(SEED_DEFAULT), RUN, record_history)
}

fn alone_on_silo(workload: &Tpcc, count: usize) {
    let silo = SiloTables::load(workload, Index::Tree, 2, Epochs::clock(1)).unwrap();
    single_worker_matches_memory_db(&silo, workload, seed(SEED_DEFAULT), count, History::Unrecorded);
}

#[test]
fn one_worker_ends_where_the_reference_database_ends_on_tpcc() {
    let _one = exclusive();
    alone_on_silo(&small_tpcc(2, None), 3_000);
}

#[test]
fn one_worker_ends_where_the_reference_database_ends_on_the_hybrid_mix() {
    let _one = exclusive();
    alone_on_silo(&small_tpcc(1, Some(HYBRID_MIX)), 1_500);
}

#[test]
fn tpcc_keeps_conditions_one_to_four_under_threads() {
    let _one = exclusive();
    for threads in [2, 4] {
        let workload: Arc<dyn TableWorkload> = Arc::new(small_tpcc(2, None));
        run_and_check(ProtocolKind::Silo, &workload, threads, Index::Tree, &spec(true));
    }
}

#[test]
fn the_hybrid_mix_keeps_conditions_one_to_four_under_threads() {
    let _one = exclusive();
    let workload: Arc<dyn TableWorkload> = Arc::new(small_tpcc(1, Some(HYBRID_MIX)));
    run_and_check(ProtocolKind::Silo, &workload, 2, Index::Tree, &spec(true));
}

#[test]
fn smallbank_through_kv_tables_conserves_its_total_and_serializes() {
    let _one = exclusive();
    let workload = conserved_smallbank(seed(SEED_DEFAULT));
    for threads in [2, 4] {
        run_and_check(ProtocolKind::Silo, &workload, threads, Index::Tree, &spec(true));
    }
}

#[test]
fn ycsb_through_kv_tables_serializes_on_both_indexes() {
    let _one = exclusive();
    let workload = ycsb_kv();
    run_and_check(ProtocolKind::Silo, &workload, 2, Index::Tree, &spec(true));
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
    let seed = seed(SEED_DEFAULT);
    // A pool of one transaction per worker: a replaying run commits at most two key sets.
    let config = TablesConfig { threads: 2, epoch_ms: 5, pregenerate: Some(1), ..TablesConfig::default() };
    let kv = ycsb_kv();
    assert!(kv.replayable());
    let report = run(&config, &kv, &spec(true), |_, _| {}).unwrap();
    assert!(report.recorder.commits() > 10, "seed {seed}: ycsb committed {}", report.recorder.commits());
    let sets = key_sets(&report.history);
    assert!(sets.len() <= 2, "seed {seed}: ycsb replayed {} key sets from pools of one", sets.len());
    ordo_history::check(&report.history).unwrap_or_else(|v| panic!("seed {seed}: not serializable: {v:?}"));
    // TPC-C binds transactions to warehouses and takes fresh order ids: never replayed.
    let tpcc: Arc<dyn TableWorkload> = Arc::new(small_tpcc(2, None));
    assert!(!tpcc.replayable());
    let report = run(&config, &tpcc, &spec(true), |_, _| {}).unwrap();
    report.consistency.unwrap_or_else(|e| panic!("seed {seed}: tpcc: {e}"));
    let sets = key_sets(&report.history);
    assert!(sets.len() > 10, "seed {seed}: tpcc committed only {} key sets", sets.len());
}

#[test]
fn the_array_index_refuses_tables_without_dense_keys() {
    let workload: Arc<dyn TableWorkload> = Arc::new(small_tpcc(1, None));
    let config = TablesConfig { threads: 1, index: Index::Array, ..TablesConfig::default() };
    let error = run(&config, &workload, &spec(false), |_, _| {}).unwrap_err();
    assert!(error.to_string().contains("dense"), "{error}");
}
