//! The threaded runtime on real threads: short runs of every mode, drained, then checked like
//! the simulated ones (serializable in commit-timestamp order, store equal to the serial
//! replay, money conserved).

use std::sync::Arc;
use std::time::Duration;

use ordo_pipeline::replay::check_serial_replay;
use ordo_pipeline::{
    CommitRecord, Mode, PLACEMENT_DEFAULT, PLACEMENT_ONE_THREAD, PipelineConfig, ThreadedRun, run_threaded,
};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{Micro, MicroConfig, SmallBank, SmallBankConfig, Workload};

fn check(config: &PipelineConfig, workload: &Arc<dyn Workload>) {
    let run = ThreadedRun {
        seed: 7,
        warmup: Duration::from_millis(50),
        duration: Duration::from_millis(250),
        cooldown: Duration::ZERO,
        record_history: true,
        drain: true,
    };
    let report = run_threaded(config, workload, &run, |_, _| {}).unwrap();
    let context = format!("threaded {} on {} ({})", config.mode, workload.name(), config.placement);
    assert!(report.recorder.commits() > 0, "{context}: nothing committed");
    let entries: Vec<_> = report.history.iter().map(CommitRecord::history_entry).collect();
    ordo_history::check(&entries).unwrap_or_else(|v| panic!("{context}: not serializable: {v}"));
    ordo_history::check_timestamp_order(&entries).unwrap_or_else(|v| panic!("{context}: {v}"));
    let store = report.store.expect("drained runs report the store");
    check_serial_replay(workload.as_ref(), &report.history, &store).unwrap_or_else(|p| panic!("{context}: {p}"));
    if let Some(range) = workload.conserved_keys() {
        let initial: i64 = range.clone().map(|k| workload.initial_value(k)).sum();
        let total: i64 = store[range.start as usize..range.end as usize].iter().map(|&(v, _)| v).sum();
        assert_eq!(total, initial, "{context}: money was created or destroyed");
    }
}

#[test]
fn every_mode_is_serializable_on_threads() {
    let workloads: [Arc<dyn Workload>; 2] = [
        Arc::new(Micro::new(MicroConfig { keys: 1_000, theta: 0.9, ..MicroConfig::default() }).unwrap()),
        Arc::new(
            SmallBank::new(SmallBankConfig {
                customers: 200,
                theta: 0.9,
                mix: CONSERVED_MIX,
                ..SmallBankConfig::default()
            })
            .unwrap(),
        ),
    ];
    // The paper's two-thread split and the one-thread deployment, where batches fill because the
    // thread is never idle.
    for placement in [PLACEMENT_DEFAULT, PLACEMENT_ONE_THREAD] {
        for mode in Mode::ALL {
            for workload in &workloads {
                let config = PipelineConfig {
                    mode,
                    concurrency: 100,
                    storage_workers: 2,
                    reorder_workers: 2,
                    placement: placement.parse().unwrap(),
                    ..PipelineConfig::default()
                };
                check(&config, workload);
            }
        }
    }
}

#[test]
fn placements_with_more_threads_than_roles_work() {
    let workload: Arc<dyn Workload> =
        Arc::new(Micro::new(MicroConfig { keys: 500, ..MicroConfig::default() }).unwrap());
    for placement in ["client;processor;storage;validator;reorder", "client,processor,storage,validator,reorder"] {
        let config = PipelineConfig {
            placement: placement.parse().unwrap(),
            processors: 2,
            storage_workers: 3,
            ..PipelineConfig::default()
        };
        check(&config, &workload);
    }
}
