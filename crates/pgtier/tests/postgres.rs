//! Integration tests against a real PostgreSQL: each test starts its own throwaway cluster
//! (initdb into a temporary directory, a free loopback port) and stops it when done, even on
//! failure. Without PostgreSQL's programs the tests are skipped, except under CI (`CI=true`),
//! where that is a failure.
//!
//! Every run checks, inside the tier, that the bank's total equals the loaded total plus the
//! net of the transactions ordo reported committed; the tests add that each transaction is
//! reported exactly once and that the committed writers are exactly the ids in `ordo_txn`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ordo_pgtier::cluster::find_bin_dir;
use ordo_pgtier::run::{LedgerEntry, Outcome, TierReport};
use ordo_pgtier::{
    Cluster, Dispatch, Isolation, Mode, PgError, Procedures, RunSpec, SessionConfig, TierConfig, run_blocking,
};
use ordo_reorder::FvsConfig;
use ordo_workload::smallbank::{BALANCE, STANDARD_MIX};
use ordo_workload::{SmallBank, SmallBankConfig};

/// A cluster that is stopped and deleted when dropped.
struct TestCluster {
    cluster: Cluster,
}

impl TestCluster {
    /// Starts a cluster, or returns `None` (skip) when PostgreSQL is not installed outside CI.
    fn start(name: &str) -> Option<TestCluster> {
        if let Err(error) = find_bin_dir() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "PostgreSQL is required under CI: {error}");
            eprintln!("skipping {name}: {error}");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("ordo-pgtest-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let guard = TestCluster { cluster: Cluster::new(dir, port) };
        guard.cluster.start().expect("start a throwaway cluster");
        Some(guard)
    }

    fn url(&self) -> String {
        self.cluster.url()
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let _ = self.cluster.stop_with("immediate");
        let _ = std::fs::remove_dir_all(&self.cluster.data_dir);
    }
}

const CUSTOMERS: u64 = 2_000;

fn bank(seed: u64) -> SmallBank {
    SmallBank::new(SmallBankConfig {
        customers: CUSTOMERS,
        theta: 0.9,
        mix: STANDARD_MIX,
        seed,
        ..SmallBankConfig::default()
    })
    .unwrap()
}

fn config(url: &str, mode: Mode, procedures: Procedures, isolation: Isolation) -> TierConfig {
    TierConfig {
        session: SessionConfig { url: url.to_owned(), isolation, synchronous_commit: Some(false) },
        mode,
        connections: 4,
        batch_size: 20,
        pipeline_depth: 4,
        procedures,
        reorder: FvsConfig::default(),
        reconnect_timeout_ms: 30_000,
        load: true,
        dispatch: Dispatch::Rolling,
        batch_wait_us_max: 500,
        clients: 0,
        affinity: true,
    }
}

fn spec(seed: u64, duration_ms: u64) -> RunSpec {
    RunSpec {
        seed,
        warmup: Duration::ZERO,
        duration: Duration::from_millis(duration_ms),
        cooldown: Duration::ZERO,
        record_ledger: true,
    }
}

/// Each transaction is reported once; the committed writers are exactly `ordo_txn`'s rows.
fn check_exactly_once(report: &TierReport, what: &str) {
    let mut ids: Vec<i64> = report.ledger.iter().map(|e| e.txn_id).collect();
    ids.sort_unstable();
    let before = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), before, "{what}: a transaction was reported twice");
    let mut committed_writers: Vec<i64> = report
        .ledger
        .iter()
        .filter(|e| matches!(e.outcome, Outcome::Committed { .. }) && e.procedure != BALANCE)
        .map(|e: &LedgerEntry| e.txn_id)
        .collect();
    committed_writers.sort_unstable();
    assert_eq!(committed_writers, report.audit.run_txn_ids, "{what}: ordo's committed writers differ from ordo_txn");
    let net: i64 = report
        .ledger
        .iter()
        .map(|e| if let Outcome::Committed { net_cents } = e.outcome { net_cents } else { 0 })
        .sum();
    assert_eq!(report.audit.total_cents, report.loaded.loaded_total_cents + net, "{what}: money appeared or vanished");
    assert_eq!(report.failed, 0, "{what}: transactions gave up");
    assert!(report.committed > 0, "{what}: nothing committed");
}

fn run(config: &TierConfig, seed: u64, duration_ms: u64) -> Result<TierReport, PgError> {
    run_blocking(config, &bank(seed), &spec(seed, duration_ms), &|_, _| {})
}

#[test]
fn every_mode_conserves_money_and_reports_each_transaction_once() {
    let Some(cluster) = TestCluster::start("modes") else { return };
    let url = cluster.url();
    for (seed, mode, procedures, isolation) in [
        (1, Mode::NoBatch, Procedures::Functions, Isolation::Serializable),
        (2, Mode::Batch, Procedures::Functions, Isolation::Serializable),
        (3, Mode::Reorder, Procedures::Functions, Isolation::Serializable),
        (4, Mode::NoBatch, Procedures::Statements, Isolation::Serializable),
        (5, Mode::Reorder, Procedures::Statements, Isolation::RepeatableRead),
        (6, Mode::Batch, Procedures::Functions, Isolation::RepeatableRead),
    ] {
        for dispatch in [Dispatch::Rolling, Dispatch::Barrier] {
            if mode == Mode::NoBatch && dispatch == Dispatch::Barrier {
                continue;
            }
            let what =
                format!("{} {} {} {} (seed {seed})", mode.name(), dispatch.name(), procedures.name(), isolation.name());
            let mut config = config(&url, mode, procedures, isolation);
            config.dispatch = dispatch;
            let report = run(&config, seed, 500).unwrap_or_else(|e| panic!("{what}: {e}"));
            check_exactly_once(&report, &what);
        }
    }
}

#[test]
fn failures_are_clear_errors() {
    let Some(cluster) = TestCluster::start("errors") else { return };
    let url = cluster.url();
    let base = config(&url, Mode::NoBatch, Procedures::Functions, Isolation::Serializable);

    // Nothing listens on a fresh port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut unreachable = base.clone();
    unreachable.session.url = format!("postgres://ordo:ordo@127.0.0.1:{closed}/postgres");
    let error = run(&unreachable, 1, 100).unwrap_err();
    assert!(matches!(error, PgError::Unreachable { .. }), "{error}");
    assert!(!error.to_string().contains(":ordo@"), "the password is not printed: {error}");

    let mut wrong_password = base.clone();
    wrong_password.session.url = url.replace("ordo:ordo@", "ordo:wrong@");
    let error = run(&wrong_password, 1, 100).unwrap_err();
    assert!(matches!(error, PgError::Authentication { .. }), "{error}");

    let mut no_load = base.clone();
    no_load.load = false;
    let error = run(&no_load, 1, 100).unwrap_err();
    assert!(matches!(error, PgError::SchemaMissing), "{error}");

    // Load once, then pretend the schema came from another ordo.
    run(&base, 1, 100).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = ordo_pgtier::connection::connect_plain(&url).await.unwrap();
        client.execute("UPDATE ordo_meta SET value = 999 WHERE key = 'schema_version'", &[]).await.unwrap();
    });
    let error = run(&base, 1, 100).unwrap_err();
    assert!(matches!(error, PgError::SchemaVersion { found: 999, .. }), "{error}");
    let error = run(&no_load, 1, 100).unwrap_err();
    assert!(matches!(error, PgError::SchemaVersion { found: 999, .. }), "{error}");

    let mut bad = base.clone();
    bad.connections = 0;
    assert!(matches!(run(&bad, 1, 100).unwrap_err(), PgError::InvalidConfig { field: "connections", .. }));
}

/// Kills ordo's backends every `period` until `stop` is set.
fn kill_backends(url: String, period: Duration, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let client = ordo_pgtier::connection::connect_plain(&url).await.unwrap();
            let mut killed = 0;
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(period).await;
                // One victim per round among the busiest client backends, so batches are cut
                // in the middle.
                let rows = client
                    .query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' \
                         AND query LIKE 'SELECT sb_%' ORDER BY state = 'active' DESC, random() LIMIT 2",
                        &[],
                    )
                    .await
                    .unwrap();
                killed += rows.len() as u64;
            }
            killed
        })
    })
}

#[test]
fn connections_killed_mid_batch_lose_nothing() {
    let Some(cluster) = TestCluster::start("kill") else { return };
    let url = cluster.url();
    for (seed, mode, dispatch) in [
        (11, Mode::Reorder, Dispatch::Rolling),
        (12, Mode::NoBatch, Dispatch::Rolling),
        (13, Mode::Batch, Dispatch::Barrier),
    ] {
        let stop = Arc::new(AtomicBool::new(false));
        let killer = kill_backends(url.clone(), Duration::from_millis(60), Arc::clone(&stop));
        let what = format!("{} {} with killed connections (seed {seed})", mode.name(), dispatch.name());
        let mut config = config(&url, mode, Procedures::Functions, Isolation::Serializable);
        config.dispatch = dispatch;
        config.session.synchronous_commit = Some(true);
        let result = run(&config, seed, 2_000);
        stop.store(true, Ordering::Relaxed);
        let killed = killer.join().unwrap();
        let report = result.unwrap_or_else(|e| panic!("{what}: {e}"));
        check_exactly_once(&report, &what);
        assert!(killed > 0, "{what}: the killer found no backend to kill");
        let resolved = report.in_doubt_resolved_committed + report.in_doubt_resolved_rolled_back;
        assert!(resolved > 0, "{what}: {killed} kills but no transaction was in doubt");
        eprintln!(
            "{what}: {killed} backends killed, in doubt resolved: {} committed, {} rolled back",
            report.in_doubt_resolved_committed, report.in_doubt_resolved_rolled_back
        );
    }
}

#[test]
fn a_server_restart_mid_run_loses_nothing() {
    let Some(cluster) = TestCluster::start("restart") else { return };
    let url = cluster.url();
    for (seed, mode) in [(21, Mode::Reorder), (22, Mode::NoBatch)] {
        let what = format!("{} across a server crash and restart (seed {seed})", mode.name());
        let mut config = config(&url, mode, Procedures::Functions, Isolation::Serializable);
        config.session.synchronous_commit = Some(true);
        let restarter = {
            let cluster = cluster.cluster.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(1));
                cluster.stop_with("immediate").expect("crash the server");
                std::thread::sleep(Duration::from_millis(300));
                cluster.start().expect("restart the server");
            })
        };
        let result = run(&config, seed, 3_000);
        restarter.join().unwrap();
        let report = result.unwrap_or_else(|e| panic!("{what}: {e}"));
        check_exactly_once(&report, &what);
        let resolved = report.in_doubt_resolved_committed + report.in_doubt_resolved_rolled_back;
        assert!(resolved > 0, "{what}: the restart left nothing in doubt");
    }
}

#[test]
fn a_server_that_stays_down_is_a_clear_error() {
    let Some(cluster) = TestCluster::start("down") else { return };
    let url = cluster.url();
    let mut config = config(&url, Mode::NoBatch, Procedures::Functions, Isolation::Serializable);
    config.reconnect_timeout_ms = 1_000;
    let stopper = {
        let cluster = cluster.cluster.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            cluster.stop_with("fast").expect("stop the server");
        })
    };
    let error = run(&config, 31, 3_000).unwrap_err();
    stopper.join().unwrap();
    assert!(matches!(error, PgError::Restarting { .. } | PgError::InDoubt { .. }), "{error}");
}
