//! Multi-threaded runs of every protocol on every workload, many seeds: the recorded history
//! of every serializable protocol (and of reorder mode) must pass the serializability checker,
//! and SmallBank's conserved total must hold.
//!
//! Thread interleavings are up to the OS, so a seed fixes the workload, not the schedule. A
//! failing case prints its seed; rerun it (many times, if need be) with
//! `ORDO_SEED=<seed> cargo test -p ordo-threads --test serializability`.
//!
//! The tests run one at a time (`exclusive`): each already runs two busy workers, and a 2-core
//! machine oversubscribed with spinning workers measures the scheduler, not the protocols.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{exclusive, seeds};
use ordo_threads::{EngineConfig, ProtocolKind, RunSpec, run};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{Micro, MicroConfig, SmallBank, SmallBankConfig, Workload, WriteKind, Ycsb, YcsbConfig};

fn workloads(theta: f64, seed: u64) -> Vec<Arc<dyn Workload>> {
    vec![
        Arc::new(Micro::new(MicroConfig { keys: 200, theta, ..MicroConfig::default() }).unwrap()),
        Arc::new(
            SmallBank::new(SmallBankConfig { customers: 100, theta, seed, ..SmallBankConfig::default() }).unwrap(),
        ),
        Arc::new(
            SmallBank::new(SmallBankConfig {
                customers: 50,
                theta,
                mix: CONSERVED_MIX,
                seed,
                ..SmallBankConfig::default()
            })
            .unwrap(),
        ),
        // Run as one-shot transactions (`Workload::requests`): read-modify-writes on even
        // seeds, blind writes on odd ones.
        Arc::new(
            Ycsb::new(YcsbConfig {
                records: 2000,
                theta,
                payload_bytes: 24,
                write_kind: if seed.is_multiple_of(2) { WriteKind::Rmw } else { WriteKind::Blind },
                ..YcsbConfig::default()
            })
            .unwrap(),
        ),
    ]
}

fn engines() -> Vec<EngineConfig> {
    let mut configs: Vec<EngineConfig> = ProtocolKind::ALL
        .into_iter()
        .filter(|p| p.serializable())
        .map(|protocol| EngineConfig { protocol, threads: 2, payload_bytes: 24, ..EngineConfig::default() })
        .collect();
    for protocol in [ProtocolKind::Silo, ProtocolKind::TicToc, ProtocolKind::NoWait] {
        configs.push(EngineConfig {
            protocol,
            reorder: true,
            threads: 2,
            payload_bytes: 24,
            ..EngineConfig::default()
        });
    }
    // Prefetching is only a hint, but it runs code on every transaction: once per store kind.
    for (protocol, reorder) in [(ProtocolKind::Silo, true), (ProtocolKind::TicToc, false), (ProtocolKind::Ssi, false)] {
        configs.push(EngineConfig {
            protocol,
            reorder,
            threads: 2,
            payload_bytes: 24,
            prefetch: true,
            ..EngineConfig::default()
        });
    }
    // Replayed pools, small enough that a run goes round them many times.
    for (protocol, reorder) in [(ProtocolKind::NoWait, false), (ProtocolKind::Silo, true)] {
        configs.push(EngineConfig {
            protocol,
            reorder,
            threads: 2,
            payload_bytes: 24,
            pregenerate: Some(64),
            ..EngineConfig::default()
        });
    }
    configs
}

fn spec(seed: u64, duration_ms: u64) -> RunSpec {
    RunSpec {
        seed,
        warmup: Duration::ZERO,
        duration: Duration::from_millis(duration_ms),
        cooldown: Duration::ZERO,
        record_history: true,
    }
}

#[test]
fn serializable_protocols_produce_serializable_histories() {
    let _one_at_a_time = exclusive();
    for seed in seeds(1..=4) {
        for workload in workloads(0.9, seed) {
            for config in engines() {
                let context = format!(
                    "{}{}{} on {} seed {seed} (rerun: ORDO_SEED={seed} cargo test -p ordo-threads --test serializability)",
                    config.label(),
                    if config.prefetch { " with prefetch" } else { "" },
                    config.pregenerate.map_or_else(String::new, |n| format!(" replaying pools of {n}")),
                    workload.name()
                );
                let report = run_until(&config, &workload, seed, 200, 15);
                assert!(report.recorder.commits() > 0, "{context}: nothing committed");
                assert!(!report.history.is_empty(), "{context}: no history");
                if let Err(violation) = ordo_history::check(&report.history) {
                    panic!("{context}: not serializable: {violation}");
                }
                if let Some((initial, total)) = report.conserved {
                    assert_eq!(total, initial, "{context}: money was created or destroyed");
                }
            }
        }
    }
}

/// The distinct sets of keys a history's transactions read.
fn key_sets(history: &[ordo_history::HistoryEntry]) -> std::collections::BTreeSet<Vec<u64>> {
    history
        .iter()
        .map(|entry| {
            let mut keys: Vec<u64> = entry.reads.iter().map(|access| access.key).collect();
            keys.sort_unstable();
            keys
        })
        .collect()
}

/// A worker with a pool of one transaction runs that one over and over: with two workers a
/// history holds at most two sets of keys (without pools, hundreds).
#[test]
fn workers_with_pools_replay_them() {
    let _one_at_a_time = exclusive();
    let workload: Arc<dyn Workload> = Arc::new(
        Ycsb::new(YcsbConfig { records: 2000, theta: 0.9, payload_bytes: 24, ..YcsbConfig::default() }).unwrap(),
    );
    for pregenerate in [Some(1), None] {
        let config = EngineConfig { threads: 2, payload_bytes: 24, pregenerate, ..EngineConfig::default() };
        let report = run(&config, &workload, &spec(3, 100), |_, _| {}).unwrap();
        let sets = key_sets(&report.history);
        assert!(report.recorder.commits() > 10, "{pregenerate:?}: {} commits", report.recorder.commits());
        match pregenerate {
            Some(_) => assert!(sets.len() <= 2, "pools of one replayed {} key sets", sets.len()),
            None => assert!(sets.len() > 10, "drawing as it goes made only {} key sets", sets.len()),
        }
    }
}

/// YCSB, except that it does not let itself be replayed, and runs through its procedure's
/// steps (it does not hand its transactions over as requests).
#[derive(Debug)]
struct Fresh(Ycsb);

impl Workload for Fresh {
    fn name(&self) -> &'static str {
        "fresh"
    }
    fn procedure_names(&self) -> &'static [&'static str] {
        self.0.procedure_names()
    }
    fn key_count(&self) -> u64 {
        self.0.key_count()
    }
    fn initial_value(&self, key: u64) -> i64 {
        self.0.initial_value(key)
    }
    fn generate(&self, rng: &mut ordo_workload::WorkloadRng, txn: &mut ordo_workload::Txn) {
        self.0.generate(rng, txn);
    }
    fn step(
        &self,
        txn: &ordo_workload::Txn,
        values: &[i64],
        reads: &mut Vec<u64>,
        writes: &mut Vec<(u64, i64)>,
    ) -> ordo_workload::Step {
        self.0.step(txn, values, reads, writes)
    }
    fn footprint(&self, txn: &ordo_workload::Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
        self.0.footprint(txn, reads, writes);
    }
}

#[test]
fn a_workload_that_is_not_replayable_draws_as_it_goes_whatever_the_config() {
    let _one_at_a_time = exclusive();
    let ycsb = Ycsb::new(YcsbConfig { records: 2000, theta: 0.9, payload_bytes: 24, ..YcsbConfig::default() }).unwrap();
    let workload: Arc<dyn Workload> = Arc::new(Fresh(ycsb));
    assert!(!workload.replayable());
    let config = EngineConfig { threads: 2, payload_bytes: 24, pregenerate: Some(1), ..EngineConfig::default() };
    let report = run(&config, &workload, &spec(3, 100), |_, _| {}).unwrap();
    let sets = key_sets(&report.history);
    assert!(sets.len() > 10, "a workload that is not replayable was replayed: {} key sets", sets.len());
}

/// Snapshot isolation is not serializable (the anomaly tests show its write skew), so its
/// histories are checked for what it promises: every cycle holds two anti-dependencies in a
/// row. It must also run every workload and record every commit.
#[test]
fn snapshot_isolation_histories_are_snapshot_isolation() {
    let _one_at_a_time = exclusive();
    let config =
        EngineConfig { protocol: ProtocolKind::MvccSi, threads: 2, payload_bytes: 24, ..EngineConfig::default() };
    for workload in workloads(0.9, 1) {
        let report = run(&config, &workload, &spec(1, 40), |_, _| {}).unwrap();
        let name = workload.name();
        assert!(report.recorder.commits() > 0, "mvcc_si on {name}: nothing committed");
        assert!(report.history.len() as u64 >= report.recorder.commits());
        if let Err(violation) = ordo_history::check_snapshot_isolation(&report.history) {
            panic!("mvcc_si on {name}: not snapshot isolation: {violation}");
        }
    }
}

/// 2 threads x 100K SmallBank transactions at θ = 0.99: the total balance is exact for every
/// serializable protocol.
#[test]
fn stress_smallbank_conserves_money() {
    let _one_at_a_time = exclusive();
    const TRANSACTIONS: u64 = 100_000;
    let workload: Arc<dyn Workload> = Arc::new(
        SmallBank::new(SmallBankConfig {
            customers: 1000,
            theta: 0.99,
            mix: CONSERVED_MIX,
            ..SmallBankConfig::default()
        })
        .unwrap(),
    );
    for mut config in engines() {
        config.payload_bytes = 8;
        // Run long enough for 100K transactions: stop when the progress count passes it.
        let report = run_until(&config, &workload, 7, TRANSACTIONS, 300);
        let (initial, total) = report.conserved.expect("conserved mix");
        assert_eq!(total, initial, "{}: money was created or destroyed", config.label());
        assert!(
            report.recorder.commits() + report.recorder.user_aborts() >= TRANSACTIONS,
            "{}: only {} transactions finished",
            config.label(),
            report.recorder.commits() + report.recorder.user_aborts()
        );
    }
}

/// Runs for `duration_ms`, longer if fewer than `transactions` finished (a loaded machine),
/// up to 20 s.
fn run_until(
    config: &EngineConfig,
    workload: &Arc<dyn Workload>,
    seed: u64,
    transactions: u64,
    mut duration_ms: u64,
) -> ordo_threads::RunReport {
    loop {
        let report = run(config, workload, &spec(seed, duration_ms), |_, _| {}).unwrap();
        let finished = report.recorder.commits() + report.recorder.user_aborts();
        if finished >= transactions || duration_ms >= 20_000 {
            return report;
        }
        duration_ms = (duration_ms * transactions / finished.max(1) * 5 / 4).clamp(duration_ms + 100, 20_000);
    }
}
