//! The engine's driver with its write-ahead log under real threads: acknowledged transactions
//! (streamed as the driver acknowledges them) survive a power cut or a failed fsync at a
//! seeded moment, the run stops with a clear error and never acknowledges after it, a restarted
//! engine recovers and goes on, and SmallBank's total is conserved throughout; under
//! `mvcc_si` and `ssi` too, with checkpoints taken back to back while chains are trimmed.
//!
//! A seed fixes the faults, not the thread schedule. Replay one seed with
//! `ORDO_SEED=<n> cargo test -p ordo-threads --test durability_runs`. The tests run one at a
//! time (`exclusive`): each runs busy workers on a 2-core machine.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::{exclusive, run_spec, seeds};
use ordo_history::HistoryEntry;
use ordo_log::{Dir, Durability, FaultyDir, FileDir};
use ordo_threads::ProtocolKind;
use ordo_threads::tables::driver::{RunHooks, TableRunReport, TablesError, run_with};
use ordo_threads::tables::durable::CheckpointPolicy;
use ordo_threads::tables::{TableRunSpec, TablesConfig};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{KvTables, SmallBank, SmallBankConfig, TableWorkload, Workload};

fn bank() -> Arc<SmallBank> {
    Arc::new(
        SmallBank::new(SmallBankConfig {
            customers: 200,
            theta: 0.8,
            mix: CONSERVED_MIX,
            seed: 5,
            ..SmallBankConfig::default()
        })
        .unwrap(),
    )
}

fn config(durability: Durability) -> TablesConfig {
    TablesConfig {
        threads: 2,
        epoch_ms: 2,
        wal: Some(PathBuf::from("<faulty>")),
        durability,
        ..TablesConfig::default()
    }
}

fn spec(seed: u64, duration_ms: u64) -> TableRunSpec {
    run_spec(seed, Duration::from_millis(duration_ms), true)
}

/// Runs on `dir`, collecting the history entries as they are acknowledged.
fn run_on(
    dir: &FaultyDir,
    workload: &Arc<dyn TableWorkload>,
    durability: Durability,
    seed: u64,
    duration_ms: u64,
) -> (Result<TableRunReport, TablesError>, Vec<HistoryEntry>) {
    let mut acknowledged = Vec::new();
    let mut sink = |entries: &[HistoryEntry]| {
        acknowledged.extend_from_slice(entries);
        Ok(())
    };
    let hooks = RunHooks { dir: Some(Arc::new(dir.clone()) as Arc<dyn Dir>), on_acknowledged: Some(&mut sink) };
    let result = run_with(&config(durability), workload, &spec(seed, duration_ms), |_, _| {}, hooks);
    (result, acknowledged)
}

/// Recovered rows of `dir` by `(table, key)`: version and value.
fn recovered(dir: &dyn Dir) -> BTreeMap<(u16, u64), (u64, i64)> {
    let mut rows = BTreeMap::new();
    ordo_log::recover(dir, |row| {
        rows.insert((row.table, row.key), (row.version, row.row[0] as i64));
    })
    .expect("recovery");
    rows
}

/// Every acknowledged transaction's writes are in `rows` (at their version or a later one).
fn assert_acknowledged_present(rows: &BTreeMap<(u16, u64), (u64, i64)>, acknowledged: &[HistoryEntry], hint: &str) {
    for entry in acknowledged {
        for (access, _) in entry.all_writes() {
            let found = rows.get(&(access.table, access.key)).map(|(version, _)| *version);
            assert!(
                found.is_some_and(|version| version >= access.version),
                "transaction {} wrote ({}, {}) at version {} and was acknowledged, but recovery has {found:?}; {hint}",
                entry.id,
                access.table,
                access.key,
                access.version
            );
        }
    }
}

fn assert_conserved(rows: &BTreeMap<(u16, u64), (u64, i64)>, bank: &SmallBank, hint: &str) {
    let keys = bank.conserved_keys().expect("the conserved mix conserves");
    let initial: i64 = keys.clone().map(|key| bank.initial_value(key)).sum();
    let total: i64 = keys.map(|key| rows.get(&(0, key)).map_or(0, |(_, value)| *value)).sum();
    assert_eq!(total, initial, "the recovered total moved; {hint}");
}

#[test]
fn acknowledged_commits_survive_a_power_cut_or_a_failed_fsync_under_threads() {
    let _one = exclusive();
    let bank = bank();
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(bank.clone(), 16));
    let mut stopped = 0;
    for seed in seeds(0..8) {
        let hint = format!("replay: ORDO_SEED={seed} cargo test -p ordo-threads --test durability_runs");
        let dir = FaultyDir::new(seed);
        // A first run makes the log; the fault comes in the second, at a seeded moment.
        let (first, _) = run_on(&dir, &workload, Durability::Sync, seed, 100);
        assert!(first.is_ok(), "{first:?}; {hint}");
        // Opening takes a handful of operations; each flush two (append, fsync).
        if seed % 2 == 0 {
            dir.fail_sync_after(3 + seed * 5);
        } else {
            dir.power_cut_after(8 + seed * 9);
        }
        // Long enough for the fault to come whatever the schedule; the fault ends the run early.
        let (second, acknowledged) = run_on(&dir, &workload, Durability::Sync, seed, 10_000);
        match second {
            Err(TablesError::LogStopped(reason)) => {
                stopped += 1;
                assert!(
                    reason.contains("injected fsync failure") || reason.contains("simulated power cut"),
                    "{reason}; {hint}"
                );
            }
            other => panic!(
                "the injected fault did not stop the run: {:?} powered off {}; {hint}",
                other.map(|r| (r.recorder.commits(), r.durability)),
                dir.is_powered_off()
            ),
        }
        dir.crash(seed % 3 == 0);
        let rows = recovered(&dir);
        assert_acknowledged_present(&rows, &acknowledged, &hint);
        assert_conserved(&rows, &bank, &hint);
        // The engine restarts on what survived, and its own checks hold.
        let (third, _) = run_on(&dir, &workload, Durability::Sync, seed, 100);
        let report = third.unwrap_or_else(|error| panic!("restart: {error}; {hint}"));
        let durability = report.durability.expect("a logged run reports its log");
        assert!(durability.recovery.is_some(), "the restart recovered; {hint}");
        report.consistency.unwrap_or_else(|error| panic!("after recovery: {error}; {hint}"));
    }
    assert!(stopped > 0);
}

#[test]
fn async_acknowledges_at_once_and_still_recovers_whole_epochs() {
    let _one = exclusive();
    let bank = bank();
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(bank.clone(), 16));
    let dir = FaultyDir::new(1);
    let (run, acknowledged) = run_on(&dir, &workload, Durability::Async, 1, 200);
    let report = run.unwrap();
    assert!(report.recorder.commits() > 0 && !acknowledged.is_empty());
    // A clean stop makes everything durable.
    dir.crash(true);
    let rows = recovered(&dir);
    assert_acknowledged_present(&rows, &acknowledged, "async, clean stop");
    assert_conserved(&rows, &bank, "async");
}

#[test]
fn a_run_on_real_files_restarts_where_it_stopped() {
    let _one = exclusive();
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("wal");
    let bank = bank();
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(bank.clone(), 16));
    let config = TablesConfig { wal: Some(path.clone()), ..config(Durability::Sync) };
    let mut all = Vec::new();
    for round in 0..3 {
        let mut sink = |entries: &[HistoryEntry]| {
            all.extend_from_slice(entries);
            Ok(())
        };
        let hooks = RunHooks { dir: None, on_acknowledged: Some(&mut sink) };
        let report = run_with(&config, &workload, &spec(round, 150), |_, _| {}, hooks).unwrap();
        report.consistency.unwrap();
        let durability = report.durability.unwrap();
        assert_eq!(durability.recovery.is_some(), round > 0);
        assert!(durability.log_bytes > 0);
    }
    let dir = FileDir::open(&path).unwrap();
    let rows = recovered(&dir);
    assert_acknowledged_present(&rows, &all, "three runs on real files");
    assert_conserved(&rows, &bank, "real files");
    assert!(dir.list().unwrap().iter().any(|name| name == "manifest.json"));
}

#[test]
fn a_directory_of_another_workload_is_refused() {
    let _one = exclusive();
    let dir = FaultyDir::new(3);
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(bank(), 16));
    run_on(&dir, &workload, Durability::Sync, 1, 50).0.unwrap();
    let other: Arc<dyn TableWorkload> = Arc::new(KvTables::new(bank(), 24));
    let error = run_on(&dir, &other, Durability::Sync, 1, 50).0.unwrap_err();
    assert!(error.to_string().contains("differs"), "{error}");
    let config = TablesConfig { wal: None, ..config(Durability::Sync) };
    let error = run_with(&config, &workload, &spec(1, 10), |_, _| {}, RunHooks::default()).unwrap_err();
    assert!(error.to_string().contains("needs a write-ahead log"), "{error}");
}

#[test]
fn mvcc_checkpoints_taken_while_chains_are_trimmed_recover_every_acknowledged_commit() {
    let _one = exclusive();
    let bank = bank();
    let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(bank.clone(), 16));
    for (seed, protocol) in [(11, ProtocolKind::MvccSi), (12, ProtocolKind::Ssi)] {
        let hint = format!("{protocol}: replay: ORDO_SEED={seed} cargo test -p ordo-threads --test durability_runs");
        // Checkpoints back to back, and chains cut to their cap at once: the checkpoint reads
        // while workers trim and reuse versions.
        let config = TablesConfig {
            protocol,
            versions: 2,
            checkpoint: CheckpointPolicy { period_ms: Some(1), log_bytes: None },
            ..config(Durability::Sync)
        };
        let dir = FaultyDir::new(seed);
        let run = |duration_ms: u64| {
            let mut acknowledged = Vec::new();
            let mut sink = |entries: &[HistoryEntry]| {
                acknowledged.extend_from_slice(entries);
                Ok(())
            };
            let hooks = RunHooks { dir: Some(Arc::new(dir.clone()) as Arc<dyn Dir>), on_acknowledged: Some(&mut sink) };
            let result = run_with(&config, &workload, &spec(seed, duration_ms), |_, _| {}, hooks);
            (result, acknowledged)
        };
        let (first, acknowledged) = run(300);
        let report = first.unwrap_or_else(|error| panic!("{error}; {hint}"));
        report.consistency.unwrap_or_else(|error| panic!("{error}; {hint}"));
        assert!(report.durability.expect("logged").checkpoints > 0, "no checkpoint was taken; {hint}");
        dir.crash(false);
        let rows = recovered(&dir);
        assert_acknowledged_present(&rows, &acknowledged, &hint);
        assert_conserved(&rows, &bank, &hint);
        // The power goes while checkpoints are written and segments deleted.
        dir.power_cut_after(200);
        let (second, acknowledged) = run(10_000);
        assert!(matches!(second, Err(TablesError::LogStopped(_))), "the power cut did not stop the run; {hint}");
        dir.crash(false);
        let rows = recovered(&dir);
        assert_acknowledged_present(&rows, &acknowledged, &hint);
        assert_conserved(&rows, &bank, &hint);
        let (third, _) = run(100);
        let report = third.unwrap_or_else(|error| panic!("restart: {error}; {hint}"));
        assert!(report.durability.expect("logged").recovery.is_some(), "the restart recovered; {hint}");
        report.consistency.unwrap_or_else(|error| panic!("after recovery: {error}; {hint}"));
    }
}
