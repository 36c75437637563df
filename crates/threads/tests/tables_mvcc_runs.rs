//! The multi-version protocols over tables (`mvcc_si`, `ssi`) against the reference database
//! and under real threads: one worker ends exactly where `MemoryDb` ends on the same TPC-C
//! transactions; several workers keep TPC-C's consistency conditions 1-4 and SmallBank's
//! conserved total; `ssi`'s histories (with scans, inserts and deletes) pass the
//! serializability checker. The tests run one at a time (`exclusive`): each runs busy workers
//! on a 2-core machine.
//!
//! A seed fixes the workload, not the thread schedule. A failing case prints its seed; rerun
//! with `ORDO_SEED=<seed> cargo test -p ordo-threads --test tables_mvcc_runs`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    HYBRID_MIX, History, conserved_smallbank, exclusive, run_and_check, run_spec, seed,
    single_worker_matches_memory_db, small_tpcc, ycsb_e, ycsb_kv,
};
use ordo_threads::ProtocolKind;
use ordo_threads::tables::{Epochs, Index, Isolation, MvccTables, TableRunSpec, TablesConfig, run};
use ordo_workload::TableWorkload;

const SEED_DEFAULT: u64 = 7;
/// How long each run through the driver lasts.
const RUN: Duration = Duration::from_millis(400);
const PROTOCOLS: [ProtocolKind; 2] = [ProtocolKind::MvccSi, ProtocolKind::Ssi];

fn spec(record_history: bool) -> TableRunSpec {
    run_spec(seed(SEED_DEFAULT), RUN, record_history)
}

fn mvcc(workload: &dyn TableWorkload, isolation: Isolation) -> MvccTables {
    MvccTables::load(workload, Index::Tree, 2, Epochs::clock(1), isolation, 8).unwrap()
}

#[test]
fn one_worker_ends_where_the_reference_database_ends_on_tpcc() {
    let _one = exclusive();
    let workload = small_tpcc(2, None);
    for isolation in [Isolation::Snapshot, Isolation::SerialSafetyNet] {
        let protocol = mvcc(&workload, isolation);
        single_worker_matches_memory_db(&protocol, &workload, seed(SEED_DEFAULT), 3_000, History::Unrecorded);
    }
}

#[test]
fn one_worker_ends_where_the_reference_database_ends_on_the_hybrid_mix() {
    let _one = exclusive();
    let workload = small_tpcc(1, Some(HYBRID_MIX));
    for isolation in [Isolation::Snapshot, Isolation::SerialSafetyNet] {
        let protocol = mvcc(&workload, isolation);
        single_worker_matches_memory_db(&protocol, &workload, seed(SEED_DEFAULT), 1_500, History::Unrecorded);
    }
}

#[test]
fn tpcc_keeps_conditions_one_to_four_under_threads() {
    let _one = exclusive();
    let workload: Arc<dyn TableWorkload> = Arc::new(small_tpcc(2, None));
    for protocol in PROTOCOLS {
        for threads in [2, 4] {
            run_and_check(protocol, &workload, threads, Index::Tree, &spec(true));
        }
    }
}

#[test]
fn the_hybrid_mix_keeps_conditions_one_to_four_under_threads() {
    let _one = exclusive();
    let workload: Arc<dyn TableWorkload> = Arc::new(small_tpcc(1, Some(HYBRID_MIX)));
    for protocol in PROTOCOLS {
        run_and_check(protocol, &workload, 2, Index::Tree, &spec(true));
    }
}

#[test]
fn smallbank_through_kv_tables_conserves_its_total() {
    let _one = exclusive();
    let workload = conserved_smallbank(seed(SEED_DEFAULT));
    for protocol in PROTOCOLS {
        for threads in [2, 4] {
            run_and_check(protocol, &workload, threads, Index::Tree, &spec(true));
        }
        run_and_check(protocol, &workload, 2, Index::Array, &spec(true));
    }
}

#[test]
fn ycsb_e_scans_and_inserts_serialize_under_ssi() {
    let _one = exclusive();
    let workload: Arc<dyn TableWorkload> = Arc::new(ycsb_e(2_000));
    for protocol in PROTOCOLS {
        run_and_check(protocol, &workload, 2, Index::Tree, &spec(true));
    }
}

#[test]
fn ycsb_through_kv_tables_serializes_under_ssi_on_both_indexes() {
    let _one = exclusive();
    let workload = ycsb_kv();
    for index in [Index::Tree, Index::Array] {
        run_and_check(ProtocolKind::Ssi, &workload, 2, index, &spec(true));
    }
}

#[test]
fn bad_configurations_are_refused_before_anything_runs() {
    let workload: Arc<dyn TableWorkload> = Arc::new(small_tpcc(1, None));
    let config = TablesConfig { protocol: ProtocolKind::Ssi, threads: 65, ..TablesConfig::default() };
    let error = run(&config, &workload, &spec(false), |_, _| {}).unwrap_err();
    assert!(error.to_string().contains("at most 64"), "{error}");
    let config = TablesConfig { protocol: ProtocolKind::MvccSi, versions: 1, ..TablesConfig::default() };
    let error = run(&config, &workload, &spec(false), |_, _| {}).unwrap_err();
    assert!(error.to_string().contains("versions"), "{error}");
}
