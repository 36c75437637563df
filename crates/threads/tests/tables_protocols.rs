//! Every protocol over tables (TicToc, 2PL `no_wait` and `wait_die`, `serial`; Silo has its
//! own files) against the reference database and under real threads: one worker ends exactly
//! where `MemoryDb` ends, transaction by transaction, on TPC-C and on YCSB E (scans and
//! inserts); several workers keep TPC-C's consistency conditions 1-4 and SmallBank's conserved
//! total, and record histories that `ordo-history` checks serializable, scans and inserts
//! included (TicToc's also in its commit-timestamp order).
//!
//! The tests run one at a time (`exclusive`): each runs busy workers on a 2-core machine. A
//! seed fixes the workload, not the thread schedule. A failing case prints its seed; rerun
//! with `ORDO_SEED=<seed> cargo test -p ordo-threads --test tables_protocols`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    History, conserved_smallbank, exclusive, run_and_check, run_spec, seed, single_worker_matches_memory_db,
    small_tpcc, ycsb_e,
};
use ordo_threads::ProtocolKind;
use ordo_threads::tables::{
    Epochs, Index, SerialTables, TableProtocol, TableRunSpec, TablesConfig, TicTocTables, TwoPhaseTables, run,
};
use ordo_workload::TableWorkload;

const SEED_DEFAULT: u64 = 7;
/// How long each run through the driver lasts.
const RUN: Duration = Duration::from_millis(300);
/// TPC-C transactions run by one worker against the reference.
const TPCC_ALONE_TXNS: usize = 2_000;
/// YCSB E transactions run by one worker against the reference.
const YCSB_E_ALONE_TXNS: usize = 2_000;
/// Records of the YCSB E table.
const YCSB_E_RECORDS: u64 = 3_000;

fn spec(record_history: bool) -> TableRunSpec {
    run_spec(seed(SEED_DEFAULT), RUN, record_history)
}

fn alone_on_tpcc<P: TableProtocol>(load: impl Fn(&dyn TableWorkload, Epochs) -> P) {
    let workload = small_tpcc(2, None);
    let protocol = load(&workload, Epochs::clock(1));
    single_worker_matches_memory_db(&protocol, &workload, seed(SEED_DEFAULT), TPCC_ALONE_TXNS, History::Checked);
}

fn alone_on_ycsb_e<P: TableProtocol>(load: impl Fn(&dyn TableWorkload, Epochs) -> P) {
    let workload = ycsb_e(YCSB_E_RECORDS);
    let protocol = load(&workload, Epochs::clock(1));
    single_worker_matches_memory_db(&protocol, &workload, seed(SEED_DEFAULT), YCSB_E_ALONE_TXNS, History::Checked);
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

fn tpcc_under_threads(protocol: ProtocolKind) {
    let workload: Arc<dyn TableWorkload> = Arc::new(small_tpcc(2, None));
    for threads in [2, 4] {
        run_and_check(protocol, &workload, threads, Index::Tree, &spec(true));
    }
}

fn smallbank_under_threads(protocol: ProtocolKind) {
    run_and_check(protocol, &conserved_smallbank(seed(SEED_DEFAULT)), 2, Index::Tree, &spec(true));
}

fn ycsb_e_under_threads(protocol: ProtocolKind) {
    let workload: Arc<dyn TableWorkload> = Arc::new(ycsb_e(YCSB_E_RECORDS));
    run_and_check(protocol, &workload, 2, Index::Tree, &spec(true));
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
    let workload: Arc<dyn TableWorkload> = Arc::new(small_tpcc(1, None));
    let config = TablesConfig { protocol: ProtocolKind::Serial, threads: 4, epoch_ms: 5, ..TablesConfig::default() };
    let report = run(&config, &workload, &spec(true), |_, _| {}).unwrap();
    assert_eq!(report.threads, 1);
    report.consistency.unwrap();
    ordo_history::check(&report.history).unwrap();
}
