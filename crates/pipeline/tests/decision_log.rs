//! The validator's write-ahead log under the deterministic driver and a fault-injecting
//! directory: a clean run's log rebuilds exactly the store it ended with; a run whose log fails
//! (power cut, failed fsync) at a seeded moment stops, and what recovers holds every
//! transaction whose commit reached its processor, with the values the serial replay of the
//! commit order gives; a pipeline started on the directory continues from it.
//!
//! Replay one seed: `ORDO_SEED=<n> cargo test -p ordo-pipeline --test decision_log`.

use std::path::PathBuf;
use std::sync::Arc;

use ordo_log::{Dir, Durability, FaultyDir};
use ordo_pipeline::decision_log::DecisionLogConfig;
use ordo_pipeline::replay::check_serial_replay;
use ordo_pipeline::{
    BatchSize, CommitRecord, ConfigError, Mode, PipelineConfig, SimulationConfig, SimulationError, Ts, simulate,
};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{SmallBank, SmallBankConfig, Value, Workload};

fn seeds(count: u64) -> Vec<u64> {
    match std::env::var("ORDO_SEED") {
        Ok(seed) => vec![seed.parse().expect("ORDO_SEED is a u64")],
        Err(_) => (1..=count).collect(),
    }
}

fn bank() -> Arc<dyn Workload> {
    Arc::new(
        SmallBank::new(SmallBankConfig { customers: 40, theta: 0.8, mix: CONSERVED_MIX, ..SmallBankConfig::default() })
            .unwrap(),
    )
}

const CHECKPOINT_LOG_BYTES: u64 = 16 << 10;

fn config(mode: Mode, dir: &FaultyDir) -> PipelineConfig {
    PipelineConfig {
        mode,
        concurrency: 30,
        clients: 2,
        processors: 2,
        storage_workers: 2,
        reorder_workers: 2,
        // Fixed sizes: the controller's windows would make the seeded crash moments depend on it.
        validator_batch_size: BatchSize::fixed(8).expect("a positive size"),
        storage_batch_size: BatchSize::fixed(8).expect("a positive size"),
        decision_log: Some(DecisionLogConfig {
            dir: PathBuf::from("<faulty>"),
            device: Some(Arc::new(dir.clone()) as Arc<dyn Dir>),
            durability: Durability::Sync,
            epoch_ms: 1,
            manual: true,
            // Small, so that checkpoints begin, run and commit in the middle of these runs (and
            // of the faults below), and segments rotate every 4 KiB.
            checkpoint_log_bytes: CHECKPOINT_LOG_BYTES,
        }),
        ..PipelineConfig::default()
    }
}

/// Recovered `(value, version)` per key.
fn recovered(dir: &FaultyDir, keys: u64) -> Vec<(Value, Ts)> {
    let mut store = vec![(0, 0); keys as usize];
    ordo_log::recover(dir, |row| store[row.key as usize] = (row.row[0] as i64, row.version)).unwrap();
    store
}

#[test]
fn a_clean_run_rebuilds_its_store_and_the_next_run_continues_it() {
    let workload = bank();
    for seed in seeds(10) {
        let hint = format!("replay: ORDO_SEED={seed} cargo test -p ordo-pipeline --test decision_log");
        let dir = FaultyDir::new(seed);
        let mode = [Mode::Base, Mode::Batch, Mode::Srvc][seed as usize % 3];
        let mut history: Vec<CommitRecord> = Vec::new();
        for round in 0..2 {
            let simulation = SimulationConfig { seed: seed + round, transactions: 300, ..SimulationConfig::default() };
            let report = simulate(&config(mode, &dir), &workload, simulation).unwrap();
            history.extend(report.history);
            // Everything was released, so everything is durable: a crash now loses nothing.
            dir.crash(seed % 2 == 0);
            let store = recovered(&dir, workload.key_count());
            assert_eq!(store, report.store, "round {round}: the log does not rebuild the store; {hint}");
        }
        // Both rounds together are one serial history in timestamp order (the second run's
        // timestamps resumed after the first's).
        let store = recovered(&dir, workload.key_count());
        check_serial_replay(workload.as_ref(), &history, &store).unwrap_or_else(|e| panic!("{e}; {hint}"));
    }
}

#[test]
fn after_a_log_failure_every_released_commit_recovers() {
    let workload = bank();
    let mut stopped = 0;
    for seed in seeds(40) {
        let hint = format!("replay: ORDO_SEED={seed} cargo test -p ordo-pipeline --test decision_log");
        let dir = FaultyDir::new(seed);
        // The first checkpoint, then a fault at a seeded moment of the run.
        simulate(
            &config(Mode::Srvc, &dir),
            &workload,
            SimulationConfig { seed, transactions: 20, ..Default::default() },
        )
        .unwrap();
        if seed % 3 == 0 {
            dir.fail_sync_after(1 + seed % 7);
        } else {
            dir.power_cut_after(4 + seed % 23);
        }
        let simulation = SimulationConfig { seed, transactions: 2_000, ..SimulationConfig::default() };
        let released = match simulate(&config(Mode::Srvc, &dir), &workload, simulation) {
            Err(SimulationError::LogStopped { history, .. }) => {
                stopped += 1;
                history
            }
            Ok(report) => report.history,
            // The fault came while the pipeline opened its log: it never ran.
            Err(SimulationError::Config(ConfigError::Invalid { field: "wal", .. })) => Vec::new(),
            Err(other) => panic!("{other}; {hint}"),
        };
        dir.crash(seed % 2 == 1);
        let store = recovered(&dir, workload.key_count());
        // Every released commit is in: its writes at its timestamp or a later one.
        for record in &released {
            for &(key, _) in &record.writes {
                assert!(
                    store[key as usize].1 >= record.ts,
                    "commit {} at {} lost key {key}; {hint}",
                    record.id,
                    record.ts
                );
            }
        }
        // A key last written by a released commit holds exactly what that commit wrote.
        for record in &released {
            for &(key, value) in &record.writes {
                if store[key as usize].1 == record.ts {
                    assert_eq!(store[key as usize].0, value, "key {key} at {}; {hint}", record.ts);
                }
            }
        }
        // No commit is partly applied: the conserved mix's total holds in what recovered.
        let keys = workload.conserved_keys().unwrap();
        let total: i64 = keys.clone().map(|key| store[key as usize].0).sum();
        assert_eq!(total, keys.map(|key| workload.initial_value(key)).sum::<i64>(), "{hint}");
    }
    assert!(stopped > 0, "no seed's fault stopped its run");
}

#[test]
fn checkpoints_while_running_keep_the_directory_bounded() {
    let workload = bank();
    for seed in seeds(5) {
        let hint = format!("replay: ORDO_SEED={seed} cargo test -p ordo-pipeline --test decision_log");
        let dir = FaultyDir::new(seed);
        let simulation = SimulationConfig { seed, transactions: 3_000, ..SimulationConfig::default() };
        let report = simulate(&config(Mode::Srvc, &dir), &workload, simulation).unwrap();
        let mut checkpoints = Vec::new();
        let mut log_bytes = 0;
        for name in dir.list().unwrap() {
            match ordo_log::naming::parse(&name) {
                Some(ordo_log::naming::LogFile::Checkpoint { begin_epoch }) => checkpoints.push(begin_epoch),
                Some(ordo_log::naming::LogFile::Segment { .. }) => log_bytes += dir.len(&name).unwrap(),
                None => {}
            }
        }
        // The run logged far more than the checkpoint interval, yet only the newest checkpoint
        // and the segments after it remain.
        assert_eq!(checkpoints.len(), 1, "older checkpoints are deleted: {checkpoints:?}; {hint}");
        assert!(checkpoints[0] > 1, "no checkpoint was taken while the run went on; {hint}");
        assert!(log_bytes < 4 * CHECKPOINT_LOG_BYTES, "{log_bytes} bytes of log remain; {hint}");
        dir.crash(seed % 2 == 0);
        assert_eq!(recovered(&dir, workload.key_count()), report.store, "{hint}");
    }
}
