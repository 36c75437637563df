//! `ordo bench --engine pipeline`: the paper's OCC engine.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use indicatif::ProgressBar;
use ordo_harness::RunResult;
use ordo_pipeline::replay::check_serial_replay;
use ordo_pipeline::{
    BatchSize, CONCURRENCY_DEFAULT, Mode, PLACEMENT_DEFAULT, PipelineConfig, Placement, ThreadedRun, Tuning,
    run_threaded,
};
use ordo_reorder::{FvsConfig, Policy, SEARCH_NODE_BUDGET_DEFAULT};

use super::{BenchArgs, Options, Planned, RateMeter};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Pipeline engine")]
pub struct PipelineArgs {
    /// Live transactions in the system; a list sweeps.
    #[arg(long, value_delimiter = ',', default_values_t = [CONCURRENCY_DEFAULT])]
    pub concurrency: Vec<usize>,
    /// Transactions per validator batch: auto (chosen while the engine runs) or a number; a
    /// list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub batch_size: Vec<BatchSize>,
    /// Requests per storage batch: auto or a number; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub storage_batch_size: Vec<BatchSize>,
    /// A partial validator batch waits this long for more requests (µs); 0 closes it as soon
    /// as no more requests are queued.
    #[arg(long, default_value_t = 0)]
    pub batch_wait_us: u64,
    /// A partial storage batch waits this long for more requests (µs); 0 serves it as soon as
    /// no more requests are queued.
    #[arg(long, default_value_t = 0)]
    pub storage_batch_wait_us: u64,

    /// Reordering algorithm (`<name>[_k<k>][+min]`, see `ordo fvs --help`); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "greedy_sort")]
    pub algorithm: Vec<String>,
    /// Reordering policy: prod-degree (alias mc), rct, rdeg, ...; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "prod-degree")]
    pub policy: Vec<String>,
    /// Sort-based greedy's k.
    #[arg(long, default_value_t = 2)]
    pub multi_factor: usize,
    /// Run the minimality pass after the algorithm.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub minimize: bool,
    /// Client components.
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Processor components.
    #[arg(long, default_value_t = 1)]
    pub processors: usize,
    /// Storage partitions.
    #[arg(long, default_value_t = 1)]
    pub storage_workers: usize,
    /// Reorder workers; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub reorder_workers: Vec<usize>,
    /// Roles per thread: threads separated by `;`, roles by `,`; or `split` (the default, the
    /// paper's two threads) or `single` (every role on one thread). Give it more than once to
    /// sweep placements (`--placement split --placement single`).
    #[arg(long, action = clap::ArgAction::Append, default_value = PLACEMENT_DEFAULT)]
    pub placement: Vec<String>,
    /// Messages a runtime thread handles before flushing to the other threads: auto (chosen
    /// while the engine runs, starting from the mode's measured best: 256 for the batching
    /// modes; for base the largest power of two up to the concurrency, 64 at 100 and 256 at
    /// 300) or a number; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub flush_messages: Vec<BatchSize>,
}

/// Builds one planned run per distinct configuration of the sweep.
pub fn plan(args: &BenchArgs) -> Result<Vec<Planned>> {
    let p = &args.pipeline;
    let placements: Vec<Placement> = p.placement.iter().map(|s| s.parse()).collect::<Result<_, _>>()?;
    let modes: Vec<Mode> = if args.mode.is_empty() {
        vec![Mode::Srvc]
    } else {
        args.mode.iter().map(|m| m.parse()).collect::<Result<_, _>>()?
    };
    let mut reorders = Vec::new();
    for algorithm in &p.algorithm {
        for policy in &p.policy {
            let policy: Policy = policy.parse()?;
            let mut config = FvsConfig::from_label(algorithm, policy)?;
            if !algorithm.contains("_k") {
                config.multi_factor = p.multi_factor;
            }
            config.minimize = config.minimize || p.minimize;
            config.search_node_budget = SEARCH_NODE_BUDGET_DEFAULT;
            config.validate()?;
            reorders.push((algorithm.clone(), policy, config));
        }
    }
    // Which knobs vary, so the table shows them.
    let varies = |n: usize| n > 1;
    let mut planned = Vec::new();
    let mut seen = Vec::new();
    for &theta in &args.theta {
        // Validate the workload once per θ before anything runs.
        args.workload.build(theta, args.seed)?;
        for &mode in &modes {
            for &concurrency in &p.concurrency {
                for &batch_size in &p.batch_size {
                    for &storage_batch_size in &p.storage_batch_size {
                        for (algorithm, policy, reorder) in &reorders {
                            let workers_and_flushes =
                                p.reorder_workers.iter().flat_map(|w| std::iter::repeat(w).zip(&p.flush_messages));
                            let runtimes = placements
                                .iter()
                                .flat_map(|placement| std::iter::repeat(placement).zip(workers_and_flushes.clone()));
                            for (placement, (&reorder_workers, &messages_per_flush)) in runtimes {
                                let config = PipelineConfig {
                                    mode,
                                    concurrency,
                                    clients: p.clients,
                                    processors: p.processors,
                                    storage_workers: p.storage_workers,
                                    reorder_workers,
                                    storage_batch_size,
                                    storage_batch_wait_us_max: p.storage_batch_wait_us,
                                    validator_batch_size: batch_size,
                                    validator_batch_wait_us_max: p.batch_wait_us,
                                    reorder: *reorder,
                                    placement: placement.clone(),
                                    messages_per_flush,
                                    tuning: Tuning::default(),
                                };
                                config.validate()?;
                                // Knobs a mode ignores do not make a new configuration.
                                let key = (
                                    theta.to_bits(),
                                    mode,
                                    concurrency,
                                    mode.validator_batching().then_some(batch_size),
                                    mode.storage_batching().then_some(storage_batch_size),
                                    mode.validator_reordering().then(|| (algorithm.clone(), *policy, reorder_workers)),
                                    (config.placement.threads.len() > 1).then_some(messages_per_flush),
                                    placement.to_string(),
                                );
                                if seen.contains(&key) {
                                    continue;
                                }
                                seen.push(key);
                                let mut label = vec![
                                    ("mode".to_owned(), mode.name().to_owned()),
                                    ("theta".to_owned(), format!("{theta}")),
                                ];
                                let reorders_here = mode.validator_reordering();
                                if varies(p.concurrency.len()) {
                                    label.push(("concurrency".into(), concurrency.to_string()));
                                }
                                if varies(p.batch_size.len()) {
                                    label.push((
                                        "batch".into(),
                                        if mode.validator_batching() { batch_size.to_string() } else { "-".into() },
                                    ));
                                }
                                if varies(p.storage_batch_size.len()) {
                                    label.push((
                                        "storage_batch".into(),
                                        if mode.storage_batching() {
                                            storage_batch_size.to_string()
                                        } else {
                                            "-".into()
                                        },
                                    ));
                                }
                                if varies(p.algorithm.len()) {
                                    label.push((
                                        "algorithm".into(),
                                        if reorders_here { reorder.label() } else { "-".into() },
                                    ));
                                }
                                if varies(p.policy.len()) {
                                    label.push((
                                        "policy".into(),
                                        if reorders_here { policy.name().into() } else { "-".into() },
                                    ));
                                }
                                if varies(p.reorder_workers.len()) {
                                    label.push((
                                        "reorder_workers".into(),
                                        if reorders_here { reorder_workers.to_string() } else { "-".into() },
                                    ));
                                }
                                if varies(placements.len()) {
                                    label.push(("placement".into(), placement.to_string()));
                                }
                                if varies(p.flush_messages.len()) {
                                    label.push(("flush".into(), messages_per_flush.to_string()));
                                }
                                planned.push(planned_run(args, theta, config, label));
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(planned)
}

fn planned_run(args: &BenchArgs, theta: f64, config: PipelineConfig, label: Vec<(String, String)>) -> Planned {
    let mut knobs: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for (name, value) in args.workload.describe() {
        knobs.insert(name.into(), value);
    }
    knobs.insert("concurrency".into(), config.concurrency.into());
    knobs.insert("clients".into(), config.clients.into());
    knobs.insert("processors".into(), config.processors.into());
    knobs.insert("storage_workers".into(), config.storage_workers.into());
    knobs.insert("reorder_workers".into(), config.reorder_workers.into());
    let size = |size: BatchSize| serde_json::to_value(size).expect("a batch size serializes");
    knobs.insert("batch_size".into(), size(config.validator_batch_size));
    knobs.insert("storage_batch_size".into(), size(config.storage_batch_size));
    knobs.insert("batch_wait_us".into(), config.validator_batch_wait_us_max.into());
    knobs.insert("storage_batch_wait_us".into(), config.storage_batch_wait_us_max.into());
    knobs.insert("algorithm".into(), config.reorder.label().into());
    knobs.insert("policy".into(), config.reorder.policy.name().into());
    knobs.insert("placement".into(), config.placement.to_string().into());
    knobs.insert("messages_per_flush".into(), size(config.messages_per_flush));

    knobs.insert("threads".into(), config.placement.threads.len().into());
    let info = args.run_info("pipeline", args.workload.name(), config.mode.name().into(), theta, knobs);
    let workload_args = args.workload.clone();
    Planned {
        info: info.clone(),
        label,
        run: Box::new(move |options: &Options, seed: u64, bar: &ProgressBar| {
            let workload = workload_args.build(theta, seed)?;
            let run = ThreadedRun {
                seed,
                warmup: Duration::from_secs_f64(options.warmup_s),
                duration: Duration::from_secs_f64(options.duration_s),
                cooldown: Duration::from_secs_f64(options.cooldown_s),
                record_history: options.history.is_some() || options.verify,
                drain: options.verify,
            };
            let meter = RateMeter::new(bar);
            let report =
                run_threaded(&config, &workload, &run, |elapsed_s, finished| meter.update(elapsed_s, finished))?;
            if let Some(path) = &options.history {
                super::write_history(path, report.history.iter().map(ordo_pipeline::CommitRecord::history_entry))?;
            }
            if options.verify {
                let entries: Vec<_> = report.history.iter().map(ordo_pipeline::CommitRecord::history_entry).collect();
                let checked = ordo_history::check(&entries).map_err(|v| anyhow::anyhow!("not serializable: {v}"))?;
                ordo_history::check_timestamp_order(&entries)
                    .map_err(|v| anyhow::anyhow!("commit-timestamp order is not a serial order: {v}"))?;
                let store = report.store.as_ref().expect("a verified run is drained");
                if let Err(problem) = check_serial_replay(workload.as_ref(), &report.history, store) {
                    bail!("the final store differs from the serial replay: {problem}");
                }
                bar.suspend(|| {
                    eprintln!(
                        "verified: {} committed transactions serializable in commit-timestamp order ({} dependency edges); \
                         final store equals the serial replay",
                        checked.transactions,
                        checked.edges()
                    );
                });
            }
            let mut info = info.clone();
            info.seed = seed;
            let mut result =
                RunResult::from_recorder(info, &report.recorder, report.measured_s, workload.procedure_names());
            result.batch_sizes = report.batch_sizes;
            Ok(result)
        }),
    }
}
