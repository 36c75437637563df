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
use std::time::{Duration, Instant};

use ordo_pgtier::attempt::{self, Attempt};
use ordo_pgtier::cluster::find_bin_dir;
use ordo_pgtier::connection::Conn;
use ordo_pgtier::run::{LedgerEntry, Outcome, TierReport};
use ordo_pgtier::{
    BatchSize, Cluster, Dispatch, GroupForm, GroupRetry, Isolation, Mode, PgError, Placement, Procedures, RunSpec,
    SessionConfig, TierConfig, run_blocking,
};
use ordo_workload::smallbank::{BALANCE, DEPOSIT_CHECKING, SEND_PAYMENT, STANDARD_MIX};
use ordo_workload::{SmallBank, SmallBankConfig, Txn};

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
        mode,
        connections: 4,
        batch_size: fixed(20),
        pipeline_depth: 4,
        procedures,
        batch_wait_us_max: 500,
        group_max: fixed(1),
        ..TierConfig::new(SessionConfig {
            url: url.to_owned(),
            isolation,
            synchronous_commit: Some(false),
            deadlock_timeout_ms: Some(20),
        })
    }
}

fn fixed(size: u32) -> BatchSize {
    BatchSize::fixed(size).expect("a size from 1 to 100000")
}

/// `config` with groups of up to `group_max` transactions per server transaction.
fn grouped(url: &str, mode: Mode, group_max: u32, form: GroupForm, retry: GroupRetry) -> TierConfig {
    let mut config = config(url, mode, Procedures::Functions, Isolation::Serializable);
    config.group_max = fixed(group_max);
    config.group_form = form;
    config.group_retry = retry;
    config
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
fn grouped_runs_conserve_money_and_report_each_transaction_once() {
    let Some(cluster) = TestCluster::start("groups") else { return };
    let url = cluster.url();
    for (seed, mode, dispatch, form, retry) in [
        (41, Mode::Batch, Dispatch::Rolling, GroupForm::Function, GroupRetry::Halve),
        (42, Mode::Reorder, Dispatch::Rolling, GroupForm::Function, GroupRetry::Keep),
        (43, Mode::Batch, Dispatch::Barrier, GroupForm::Pipelined, GroupRetry::Single),
        (44, Mode::Reorder, Dispatch::Rolling, GroupForm::Pipelined, GroupRetry::Halve),
        (45, Mode::Reorder, Dispatch::Barrier, GroupForm::Function, GroupRetry::Halve),
    ] {
        let what = format!(
            "{} {} groups of 8, {} form, {} on retry (seed {seed})",
            mode.name(),
            dispatch.name(),
            form.name(),
            retry.name()
        );
        let mut config = grouped(&url, mode, 8, form, retry);
        config.dispatch = dispatch;
        // Seed 44 runs the paper's placement (and bounds affinity's backlog, which only that
        // placement consults); the others the default components placement.
        if seed == 44 {
            config.placement = Placement::ThreadAware;
            config.affinity_backlog_max = Some(6);
        }
        let report = run(&config, seed, 600).unwrap_or_else(|e| panic!("{what}: {e}"));
        check_exactly_once(&report, &what);
        assert!(report.groups_sent > 0, "{what}: no group of more than one transaction was sent");
        assert!(report.grouped_attempts > report.groups_sent, "{what}: groups of one are not groups");
        let user_aborts = report.ledger.iter().filter(|e| e.outcome == Outcome::UserAbort).count();
        assert!(user_aborts > 0, "{what}: the run had no user abort to check");
    }
    // Without grouping nothing is grouped.
    let report = run(&grouped(&url, Mode::Reorder, 1, GroupForm::Function, GroupRetry::Halve), 46, 300).unwrap();
    check_exactly_once(&report, "reorder, groups of 1");
    assert_eq!(report.groups_sent, 0);
}

/// `auto` batch and group sizes, with windows short enough that the controller changes both
/// several times in a short run: batches, plans, queues and groups formed under one size and
/// finished under another still report every transaction exactly once, in every dispatch.
#[test]
fn auto_sizes_change_mid_run_and_every_transaction_is_still_reported_once() {
    let Some(cluster) = TestCluster::start("auto") else { return };
    let url = cluster.url();
    for (seed, mode, dispatch) in [
        (61, Mode::Reorder, Dispatch::Rolling),
        (62, Mode::Batch, Dispatch::Rolling),
        (63, Mode::Reorder, Dispatch::Barrier),
    ] {
        let what = format!("{} {} with auto sizes (seed {seed})", mode.name(), dispatch.name());
        let mut config = grouped(&url, mode, 1, GroupForm::Function, GroupRetry::Halve);
        config.dispatch = dispatch;
        config.batch_size = BatchSize::Auto;
        config.group_max = BatchSize::Auto;
        config.tuning.window_us = 10_000;
        config.tuning.window_commits_min = 20;
        config.tuning.batch.windows_per_side = 1;
        config.tuning.group.windows_per_side = 1;
        let report = run(&config, seed, 1_500).unwrap_or_else(|e| panic!("{what}: {e}"));
        check_exactly_once(&report, &what);
        let batches: Vec<u32> = report.batch_sizes.iter().filter_map(|sample| sample.batch).collect();
        let groups: Vec<u32> = report.batch_sizes.iter().filter_map(|sample| sample.group).collect();
        assert!(batches.len() >= 4, "{what}: the controller decided too rarely: {:?}", report.batch_sizes);
        assert!(batches.windows(2).any(|pair| pair[0] != pair[1]), "{what}: the batch size never moved: {batches:?}");
        assert!(groups.windows(2).any(|pair| pair[0] != pair[1]), "{what}: the group size never moved: {groups:?}");
        assert!(report.groups_sent > 0, "{what}: no group was sent");
    }
}

/// Runs `future` on a fresh current-thread runtime.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
}

fn txn(procedure: u8, keys: Vec<u64>, amount: i64) -> Txn {
    Txn { procedure, keys, amount, flags: 0 }
}

#[test]
fn a_group_keeps_each_transaction_atomic() {
    let Some(cluster) = TestCluster::start("atomic") else { return };
    let url = cluster.url();
    // Load the bank (a short nobatch run), then drive groups by hand.
    run(&config(&url, Mode::NoBatch, Procedures::Functions, Isolation::Serializable), 51, 50).unwrap();
    let session = SessionConfig {
        url: url.clone(),
        isolation: Isolation::Serializable,
        synchronous_commit: None,
        deadlock_timeout_ms: None,
    };
    block_on(async {
        let conn = Conn::open(&session).await.unwrap();
        let other = ordo_pgtier::connection::connect_plain(&url).await.unwrap();
        let recorded = |ids: Vec<i64>| {
            let other = &other;
            async move {
                let rows =
                    other.query("SELECT id FROM ordo_txn WHERE id = ANY($1) ORDER BY id", &[&ids]).await.unwrap();
                rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<i64>>()
            }
        };
        let checking = |customer: i64| {
            let other = &other;
            async move {
                other
                    .query_one("SELECT bal FROM sb_checking WHERE custid = $1", &[&customer])
                    .await
                    .unwrap()
                    .get::<_, i64>(0)
            }
        };
        for (form, base) in [(GroupForm::Function, 1_000), (GroupForm::Pipelined, 2_000)] {
            // A deposit, a payment far beyond any balance (the procedure refuses), a deposit:
            // the refusal is that transaction's alone.
            let deposit = txn(DEPOSIT_CHECKING, vec![7], 130);
            let refused = txn(SEND_PAYMENT, vec![8, 9], 1 << 50);
            let group = [(base + 1, &deposit), (base + 2, &refused), (base + 3, &deposit)];
            let before = checking(7).await;
            let attempts = match form {
                GroupForm::Function => attempt::group_function(&conn, &group).await,
                GroupForm::Pipelined => attempt::group_pipelined(&conn, &group).await,
            };
            assert!(
                matches!(
                    attempts.as_slice(),
                    [Attempt::Committed { net_cents: 130 }, Attempt::UserAbort, Attempt::Committed { net_cents: 130 }]
                ),
                "{}: {attempts:?}",
                form.name()
            );
            assert_eq!(recorded(vec![base + 1, base + 2, base + 3]).await, vec![base + 1, base + 3]);
            assert_eq!(checking(7).await, before + 260, "{}: both deposits applied", form.name());

            // A serialization failure in the group's second transaction rolls back the first
            // too: another session updates customer 5 after the group took its snapshot.
            other.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE").await.unwrap();
            other.execute("UPDATE sb_checking SET bal = bal + 1 WHERE custid = 5", &[]).await.unwrap();
            let first = txn(DEPOSIT_CHECKING, vec![6], 130);
            let second = txn(DEPOSIT_CHECKING, vec![5], 130);
            let group = [(base + 11, &first), (base + 12, &second)];
            let before_6 = checking(6).await;
            let (attempts, ()) = tokio::join!(
                async {
                    match form {
                        GroupForm::Function => attempt::group_function(&conn, &group).await,
                        GroupForm::Pipelined => attempt::group_pipelined(&conn, &group).await,
                    }
                },
                async {
                    // The group blocks on customer 5's row lock; then the other session commits.
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    other.batch_execute("COMMIT").await.unwrap();
                }
            );
            assert!(
                attempts.len() == 2 && attempts.iter().all(|a| matches!(a, Attempt::Conflict(_))),
                "{}: {attempts:?}",
                form.name()
            );
            assert!(recorded(vec![base + 11, base + 12]).await.is_empty(), "{}: nothing recorded", form.name());
            assert_eq!(checking(6).await, before_6, "{}: the first deposit was rolled back", form.name());
        }
    });
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

    // Load once (`auto` is fine where nothing can be grouped: it stays 1 there), then pretend
    // the schema came from another ordo.
    let mut auto = base.clone();
    auto.group_max = BatchSize::Auto;
    check_exactly_once(&run(&auto, 1, 200).unwrap(), "nobatch with an auto group size");
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
    // nobatch runs one transaction at a time; statements cannot be grouped; groups are bounded.
    let mut bad = base.clone();
    bad.group_max = fixed(4);
    assert!(matches!(run(&bad, 1, 100).unwrap_err(), PgError::InvalidConfig { field: "group", .. }));
    let mut bad = config(&url, Mode::Reorder, Procedures::Statements, Isolation::Serializable);
    bad.group_max = fixed(4);
    assert!(matches!(run(&bad, 1, 100).unwrap_err(), PgError::InvalidConfig { field: "group", .. }));
    let bad = grouped(&url, Mode::Batch, 5_000, GroupForm::Function, GroupRetry::Halve);
    assert!(matches!(run(&bad, 1, 100).unwrap_err(), PgError::InvalidConfig { field: "group", .. }));
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
    for (seed, mode, dispatch, group_max, form) in [
        (11, Mode::Reorder, Dispatch::Rolling, 1, GroupForm::Function),
        (12, Mode::NoBatch, Dispatch::Rolling, 1, GroupForm::Function),
        (13, Mode::Batch, Dispatch::Barrier, 1, GroupForm::Function),
        (14, Mode::Reorder, Dispatch::Rolling, 8, GroupForm::Function),
        (15, Mode::Batch, Dispatch::Rolling, 8, GroupForm::Pipelined),
        (16, Mode::Reorder, Dispatch::Barrier, 8, GroupForm::Pipelined),
    ] {
        let stop = Arc::new(AtomicBool::new(false));
        let killer = kill_backends(url.clone(), Duration::from_millis(60), Arc::clone(&stop));
        let what = format!(
            "{} {} groups of {group_max} ({}) with killed connections (seed {seed})",
            mode.name(),
            dispatch.name(),
            form.name()
        );
        let mut config = config(&url, mode, Procedures::Functions, Isolation::Serializable);
        config.dispatch = dispatch;
        config.group_max = fixed(group_max);
        config.group_form = form;
        config.session.synchronous_commit = Some(true);
        let result = run(&config, seed, 2_000);
        stop.store(true, Ordering::Relaxed);
        let killed = killer.join().unwrap();
        let report = result.unwrap_or_else(|e| panic!("{what}: {e}"));
        check_exactly_once(&report, &what);
        assert!(killed > 0, "{what}: the killer found no backend to kill");
        let resolved = report.in_doubt_resolved_committed + report.in_doubt_resolved_rolled_back;
        assert!(resolved > 0, "{what}: {killed} kills but no transaction was in doubt");
        if group_max > 1 {
            assert!(report.in_doubt_groups > 0, "{what}: {killed} kills but no group was in doubt");
        }
        eprintln!(
            "{what}: {killed} backends killed, in doubt resolved: {} committed, {} rolled back, {} groups",
            report.in_doubt_resolved_committed, report.in_doubt_resolved_rolled_back, report.in_doubt_groups
        );
    }
}

/// A TCP proxy in front of the server that can lose a reply: when armed, the next reply chunk the
/// server sends on one of the tier's connections (one that prepared the `sb_` functions) is
/// dropped and the connection cut both ways (the tier's sessions are told apart by the
/// `SELECT sb_` statements they prepare; loading and auditing are left alone). The reply to a function call comes after its
/// COMMIT, so the transaction (or group) committed and the tier never hears of it: exactly the
/// in-doubt case the `ordo_txn` lookup must resolve as committed.
struct ReplyCutter {
    port: u16,
    armed: Arc<AtomicBool>,
}

impl ReplyCutter {
    fn start(server_port: u16) -> ReplyCutter {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let armed = Arc::new(AtomicBool::new(false));
        let armed_for_proxy = Arc::clone(&armed);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else { continue };
                let tier = Arc::new(AtomicBool::new(false));
                let (mut client_in, mut server_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let tier_in = Arc::clone(&tier);
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = client_in.read(&mut buf) {
                        if n == 0 || server_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        if buf[..n].windows(10).any(|w| w == b"SELECT sb_") {
                            tier_in.store(true, Ordering::Relaxed);
                        }
                    }
                    let _ = server_out.shutdown(Shutdown::Write);
                });
                let armed = Arc::clone(&armed_for_proxy);
                let (mut server_in, mut client_out) = (server, client);
                // A new session (a reconnection setting up, looking up its in-doubt
                // transactions) is left alone for a while, or reconnecting could never finish.
                let opened = std::time::Instant::now();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = server_in.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let settled = opened.elapsed() > Duration::from_millis(150);
                        if settled && tier.load(Ordering::Relaxed) && armed.swap(false, Ordering::Relaxed) {
                            let _ = client_out.shutdown(Shutdown::Both);
                            let _ = server_in.shutdown(Shutdown::Both);
                            return;
                        }
                        if client_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = client_out.shutdown(Shutdown::Write);
                });
            }
        });
        ReplyCutter { port, armed }
    }
}

/// The last run id drawn on the cluster (0 before any), read directly rather than through the
/// proxy.
fn last_run_id(direct_url: &str) -> i64 {
    block_on(async {
        let client = ordo_pgtier::connection::connect_plain(direct_url).await.unwrap();
        let drawn = client.query_one("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ordo_run_seq", &[]);
        drawn.await.map_or(0, |row| row.get(0))
    })
}

/// Waits (up to 30 s, or until `stop`) until a run with an id above `after` has committed a
/// transaction: by then the tier has loaded, set its sessions up and read the server's
/// settings, and a cut in any of those fails the run (clearly) by design.
fn wait_for_commits(direct_url: &str, after: i64, stop: &AtomicBool) {
    block_on(async {
        let client = ordo_pgtier::connection::connect_plain(direct_url).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            // Fails until the first load has created the table.
            let query = "SELECT EXISTS (SELECT 1 FROM ordo_txn WHERE id >= ($1::bigint + 1) << 32)";
            let found = client.query_one(query, &[&after]).await;
            if found.is_ok_and(|row| row.get(0)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
}

#[test]
fn replies_lost_after_commit_are_resolved_as_committed() {
    let Some(cluster) = TestCluster::start("lost-replies") else { return };
    let cutter = ReplyCutter::start(cluster.cluster.port);
    let url = cluster.url().replace(&format!(":{}/", cluster.cluster.port), &format!(":{}/", cutter.port));
    assert_ne!(url, cluster.url(), "the tier talks to the proxy");
    for (seed, mode, group_max, form) in [
        (61, Mode::NoBatch, 1, GroupForm::Function),
        (62, Mode::Reorder, 1, GroupForm::Function),
        (63, Mode::Reorder, 8, GroupForm::Function),
        (64, Mode::Batch, 8, GroupForm::Pipelined),
    ] {
        let what = format!("{} groups of {group_max} ({}) with lost replies (seed {seed})", mode.name(), form.name());
        let mut config = config(&url, mode, Procedures::Functions, Isolation::Serializable);
        config.group_max = fixed(group_max);
        config.group_form = form;
        let stop = Arc::new(AtomicBool::new(false));
        let arming = {
            let (stop, armed) = (Arc::clone(&stop), Arc::clone(&cutter.armed));
            let (direct, after) = (cluster.url(), last_run_id(&cluster.url()));
            std::thread::spawn(move || {
                wait_for_commits(&direct, after, &stop);
                while !stop.load(Ordering::Relaxed) {
                    armed.store(true, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(40));
                }
                armed.store(false, Ordering::Relaxed);
            })
        };
        let result = run(&config, seed, 2_000);
        stop.store(true, Ordering::Relaxed);
        arming.join().unwrap();
        let report = result.unwrap_or_else(|e| panic!("{what}: {e}"));
        check_exactly_once(&report, &what);
        eprintln!(
            "{what}: in doubt resolved: {} committed, {} rolled back, {} groups",
            report.in_doubt_resolved_committed, report.in_doubt_resolved_rolled_back, report.in_doubt_groups
        );
        assert!(report.in_doubt_resolved_committed > 0, "{what}: no lost reply was resolved as committed");
        if group_max > 1 {
            assert!(report.in_doubt_groups > 0, "{what}: no group was in doubt");
        }
    }
}

#[test]
fn a_server_restart_mid_run_loses_nothing() {
    let Some(cluster) = TestCluster::start("restart") else { return };
    let url = cluster.url();
    for (seed, mode, group_max, form) in [
        (21, Mode::Reorder, 1, GroupForm::Function),
        (22, Mode::NoBatch, 1, GroupForm::Function),
        (23, Mode::Reorder, 8, GroupForm::Function),
        (24, Mode::Batch, 8, GroupForm::Pipelined),
    ] {
        let what = format!(
            "{} groups of {group_max} ({}) across a server crash and restart (seed {seed})",
            mode.name(),
            form.name()
        );
        let mut config = config(&url, mode, Procedures::Functions, Isolation::Serializable);
        config.session.synchronous_commit = Some(true);
        config.group_max = fixed(group_max);
        config.group_form = form;
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
    // A stopped server refuses connections: it is unreachable, not "restarting" (which only a
    // server answering "cannot connect now" is).
    assert!(matches!(error, PgError::Unreachable { .. } | PgError::InDoubt { .. }), "{error}");
}
