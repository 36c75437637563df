//! `ordo bench pipeline`: the paper's OCC engine.
//!
//! [`PipelineBench`] is the typed API (`ordo headline` and `ordo figures` build one in code);
//! [`PipelineRun`] is what each result records: the workload and the engine's own
//! [`PipelineConfig`].
//!
//! With `--wal DIR` the validator logs its commit decisions (group commit every `--epoch-ms`)
//! and releases them once durable (`--durability sync`, the default) or once logged (`async`);
//! a run started on a directory that holds a log rebuilds storage from it first
//! ([`ordo_pipeline::decision_log`], flags in [`super::durability`]).

use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use indicatif::ProgressBar;
use ordo_harness::{Description, RunInfo, RunResult};
use ordo_pipeline::replay::check_serial_replay;
use ordo_pipeline::{
    BATCH_SIZE_MAX, BATCH_WAIT_US_MAX, COMPONENTS_MAX, CONCURRENCY_DEFAULT, CONCURRENCY_MAX, MESSAGES_PER_FLUSH_MAX,
    Mode, PLACEMENT_DEFAULT, PipelineConfig, Placement, ThreadedRun, Tuning, run_threaded,
};
use ordo_reorder::{FvsConfig, Policy};
use serde::{Deserialize, Serialize};

use super::durability::{DurabilityArg, LogArgs};
use super::values::{BatchSize, BatchSizeArg, StorageBatch, not_empty, within};
use super::workloads::{BindingArg, WorkloadKnobs};
use super::{CommonArgs, Described, Flags, Labelled, Options, Planned, RateMeter, check_sweep_size};
use crate::commands::reorder_args::{self, AlgorithmLabel};

/// `ordo bench pipeline`: the shared flags and the engine's own.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct PipelineBench {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub engine: PipelineArgs,
}

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Pipeline engine")]
pub struct PipelineArgs {
    /// base (no batching), batch (batching, no reordering), sr (storage batching and
    /// reordering), vc (validator batching and reordering) or srvc (both); a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "srvc")]
    pub mode: Vec<Mode>,
    /// Live transactions in the system, 1..=100000; a list sweeps.
    #[arg(long, value_delimiter = ',', default_values_t = [CONCURRENCY_DEFAULT])]
    pub concurrency: Vec<usize>,
    /// Transactions per validator batch: auto (chosen while the engine runs) or a number,
    /// 1..=10000; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub batch_size: Vec<BatchSize>,
    /// Requests per storage batch: auto, a number (1..=10000), or `same` (each
    /// configuration's --batch-size, so one list of sizes sweeps both batches together); a
    /// list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub storage_batch_size: Vec<StorageBatch>,
    /// A partial validator batch waits this long for more requests (µs, at most 1000000); 0
    /// closes it as soon as no more requests are queued.
    #[arg(long, default_value_t = 0)]
    pub batch_wait_us: u64,
    /// A partial storage batch waits this long for more requests (µs, at most 1000000); 0
    /// serves it as soon as no more requests are queued.
    #[arg(long, default_value_t = 0)]
    pub storage_batch_wait_us: u64,
    /// Reordering algorithm (`<name>[_k<k>][+min]`, see `ordo fvs --help`); a list sweeps.
    #[arg(long, value_delimiter = ',', default_values_t = [AlgorithmLabel::default_label()])]
    pub algorithm: Vec<AlgorithmLabel>,
    /// Reordering policy (the algorithm's own where its name fixes one); a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [FvsConfig::default().policy])]
    pub policy: Vec<Policy>,
    /// Sort-based greedy's k, 1..=10000.
    #[arg(long, default_value_t = FvsConfig::default().multi_factor)]
    pub multi_factor: usize,
    /// Run the minimality pass after the algorithm.
    #[arg(long, default_value_t = FvsConfig::default().minimize, action = clap::ArgAction::Set)]
    pub minimize: bool,
    /// Client components, 1..=256 (at most the concurrency).
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Processor components, 1..=256.
    #[arg(long, default_value_t = 1)]
    pub processors: usize,
    /// Storage partitions, 1..=256.
    #[arg(long, default_value_t = 1)]
    pub storage_workers: usize,
    /// Reorder workers, 1..=256; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub reorder_workers: Vec<usize>,
    /// Roles per thread: threads separated by `;`, roles by `,`; or `split` (the default, the
    /// paper's two threads) or `single` (every role on one thread). Give it more than once to
    /// sweep placements (`--placement split --placement single`).
    #[arg(long, action = clap::ArgAction::Append, default_value = PLACEMENT_DEFAULT)]
    pub placement: Vec<Placement>,
    /// Messages a runtime thread handles before flushing to the other threads: auto (chosen
    /// while the engine runs, starting from the mode's measured best: 256 for the batching
    /// modes; for base the largest power of two up to the concurrency, 64 at 100 and 256 at
    /// 300) or a number, 1..=100000; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub flush_messages: Vec<BatchSize>,
    #[command(flatten)]
    pub log: LogArgs,
}

impl Default for PipelineArgs {
    fn default() -> Self {
        super::defaults()
    }
}

impl Default for PipelineBench {
    fn default() -> Self {
        super::defaults()
    }
}

/// What a pipeline run was: the workload and the engine's configuration. In results:
/// `engine: "pipeline"`, `mode`, and under `config` the workload's knobs and the engine's
/// (`concurrency`, `batch_size`, `storage_batch_size`, `algorithm`, `policy`, `placement`,
/// `messages_per_flush`, ...; with the validator's log `durability`, `wal` and `epoch_ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "Description", try_from = "Description")]
pub struct PipelineRun {
    pub workload: WorkloadKnobs,
    pub config: PipelineConfig,
}

impl Described for PipelineRun {
    const ENGINE: &'static str = "pipeline";
}

/// The engine's knobs as results name them.
#[derive(Serialize, Deserialize)]
struct PipelineKnobs {
    concurrency: usize,
    clients: usize,
    processors: usize,
    storage_workers: usize,
    reorder_workers: usize,
    batch_size: BatchSize,
    storage_batch_size: BatchSize,
    batch_wait_us: u64,
    storage_batch_wait_us: u64,
    algorithm: String,
    policy: String,
    placement: String,
    messages_per_flush: BatchSize,
    /// How many threads the placement has (written for readers; implied by `placement`).
    threads: usize,
    /// The validator's log (only with one).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    durability: Option<DurabilityArg>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    wal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    epoch_ms: Option<u64>,
}

impl From<PipelineRun> for Description {
    fn from(run: PipelineRun) -> Description {
        let c = &run.config;
        let knobs = PipelineKnobs {
            concurrency: c.concurrency,
            clients: c.clients,
            processors: c.processors,
            storage_workers: c.storage_workers,
            reorder_workers: c.reorder_workers,
            batch_size: c.validator_batch_size,
            storage_batch_size: c.storage_batch_size,
            batch_wait_us: c.validator_batch_wait_us_max,
            storage_batch_wait_us: c.storage_batch_wait_us_max,
            algorithm: c.reorder.label(),
            policy: c.reorder.policy.name().to_owned(),
            placement: c.placement.to_string(),
            messages_per_flush: c.messages_per_flush,
            threads: c.placement.threads.len(),
            durability: c.decision_log.as_ref().map(|log| log.durability.into()),
            wal: c.decision_log.as_ref().map(|log| log.dir.display().to_string()),
            epoch_ms: c.decision_log.as_ref().map(|log| log.epoch_ms),
        };
        super::description(PipelineRun::ENGINE, &run.workload, c.mode.name(), &knobs)
    }
}

impl TryFrom<Description> for PipelineRun {
    type Error = anyhow::Error;
    fn try_from(described: Description) -> Result<PipelineRun> {
        let (workload, knobs, mode) = super::read_description::<PipelineKnobs>(PipelineRun::ENGINE, described)?;
        let policy: Policy = knobs.policy.parse()?;
        let decision_log = match (knobs.wal, knobs.durability, knobs.epoch_ms) {
            (None, None, None) => None,
            (Some(dir), Some(durability), Some(epoch_ms)) => Some(ordo_pipeline::decision_log::DecisionLogConfig {
                dir: dir.into(),
                device: None,
                durability: durability.into(),
                epoch_ms,
                manual: false,
                checkpoint_log_bytes: ordo_pipeline::decision_log::CHECKPOINT_LOG_BYTES_DEFAULT,
            }),
            _ => bail!("a pipeline result with a write-ahead log records its wal, durability and epoch_ms"),
        };
        let config = PipelineConfig {
            mode: mode.parse()?,
            concurrency: knobs.concurrency,
            clients: knobs.clients,
            processors: knobs.processors,
            storage_workers: knobs.storage_workers,
            reorder_workers: knobs.reorder_workers,
            storage_batch_size: knobs.storage_batch_size,
            storage_batch_wait_us_max: knobs.storage_batch_wait_us,
            validator_batch_size: knobs.batch_size,
            validator_batch_wait_us_max: knobs.batch_wait_us,
            reorder: FvsConfig::from_label(&knobs.algorithm, policy)?,
            placement: knobs.placement.parse()?,
            messages_per_flush: knobs.messages_per_flush,
            decision_log,
            tuning: Tuning::default(),
        };
        Ok(PipelineRun { workload, config })
    }
}

/// A sweep's results with what produced them.
#[derive(Debug)]
pub struct SweepRuns {
    /// Each configuration's label and aggregated result.
    pub results: Vec<Labelled<PipelineRun>>,
    /// Every planned configuration (the `point` of `before_run`).
    pub infos: Vec<RunInfo<PipelineRun>>,
    /// Every run of every planned configuration, in round order.
    pub runs: super::Runs<PipelineRun>,
}

impl PipelineBench {
    /// Checks every flag's range before anything runs.
    pub fn validate(&self) -> Result<()> {
        self.common.validate()?;
        let p = &self.engine;
        not_empty("--mode", &p.mode)?;
        not_empty("--concurrency", &p.concurrency)?;
        not_empty("--batch-size", &p.batch_size)?;
        not_empty("--storage-batch-size", &p.storage_batch_size)?;
        not_empty("--algorithm", &p.algorithm)?;
        not_empty("--policy", &p.policy)?;
        not_empty("--reorder-workers", &p.reorder_workers)?;
        not_empty("--placement", &p.placement)?;
        within("--concurrency", p.concurrency.iter().copied(), 1, CONCURRENCY_MAX)?;
        not_empty("--flush-messages", &p.flush_messages)?;
        for &size in &p.batch_size {
            size.within("--batch-size", BATCH_SIZE_MAX)?;
        }
        for &size in &p.storage_batch_size {
            if let StorageBatch::Size(size) = size {
                size.within("--storage-batch-size", BATCH_SIZE_MAX)?;
            }
        }
        for &messages in &p.flush_messages {
            messages.within("--flush-messages", MESSAGES_PER_FLUSH_MAX)?;
        }
        within("--batch-wait-us", [p.batch_wait_us], 0, BATCH_WAIT_US_MAX)?;
        within("--storage-batch-wait-us", [p.storage_batch_wait_us], 0, BATCH_WAIT_US_MAX)?;
        reorder_args::check_ranges(p.multi_factor, FvsConfig::default().search_node_budget)?;
        within("--clients", [p.clients], 1, COMPONENTS_MAX)?;
        within("--processors", [p.processors], 1, COMPONENTS_MAX)?;
        within("--storage-workers", [p.storage_workers], 1, COMPONENTS_MAX)?;
        within("--reorder-workers", p.reorder_workers.iter().copied(), 1, COMPONENTS_MAX)?;
        p.log.validate()?;
        check_sweep_size(&[
            ("--theta", self.common.theta.len()),
            ("--mode", p.mode.len()),
            ("--concurrency", p.concurrency.len()),
            ("--batch-size", p.batch_size.len()),
            ("--storage-batch-size", p.storage_batch_size.len()),
            ("--algorithm", p.algorithm.len()),
            ("--policy", p.policy.len()),
            ("--reorder-workers", p.reorder_workers.len()),
            ("--placement", p.placement.len()),
            ("--flush-messages", p.flush_messages.len()),
        ])
    }

    /// Validates, checks the output files, plans and runs the sweep.
    pub fn sweep(&self) -> Result<Vec<Labelled<PipelineRun>>> {
        self.sweep_runs(|_, _| {}).map(|sweep| sweep.results)
    }

    /// As [`Self::sweep`], calling `before_run(point, round)` before each run (see
    /// [`super::execute_runs`]); returns the planned configurations and every run as well.
    pub fn sweep_runs(&self, before_run: impl FnMut(usize, usize)) -> Result<SweepRuns> {
        self.validate()?;
        super::check_outputs(&self.common)?;
        let planned = self.plan()?;
        let (results, runs) = super::execute_runs(&self.common, &planned, before_run)?;
        Ok(SweepRuns { results, infos: planned.into_iter().map(|point| point.info).collect(), runs })
    }

    /// The arguments as a command line (`--flag=value` for every flag off its default).
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Flags(self.common.flags());
        let (p, d) = (&self.engine, PipelineArgs::default());
        flags.named("--mode", &p.mode, &d.mode);
        flags.list("--concurrency", &p.concurrency, &d.concurrency);
        flags.list("--batch-size", &p.batch_size, &d.batch_size);
        flags.list("--storage-batch-size", &p.storage_batch_size, &d.storage_batch_size);
        flags.one("--batch-wait-us", &p.batch_wait_us, &d.batch_wait_us);
        flags.one("--storage-batch-wait-us", &p.storage_batch_wait_us, &d.storage_batch_wait_us);
        flags.list("--algorithm", &p.algorithm, &d.algorithm);
        flags.named("--policy", &p.policy, &d.policy);
        flags.one("--multi-factor", &p.multi_factor, &d.multi_factor);
        flags.one("--minimize", &p.minimize, &d.minimize);
        flags.one("--clients", &p.clients, &d.clients);
        flags.one("--processors", &p.processors, &d.processors);
        flags.one("--storage-workers", &p.storage_workers, &d.storage_workers);
        flags.list("--reorder-workers", &p.reorder_workers, &d.reorder_workers);
        flags.repeated("--placement", &p.placement, &d.placement);
        flags.list("--flush-messages", &p.flush_messages, &d.flush_messages);
        p.log.flags(&mut flags);
        flags.0
    }

    /// One planned run per distinct configuration of the sweep. Assumes [`Self::validate`].
    pub fn plan(&self) -> Result<Vec<Planned<PipelineRun>>> {
        let p = &self.engine;
        let mut reorders = Vec::new();
        for algorithm in &p.algorithm {
            for &policy in &p.policy {
                reorders.push((algorithm, policy, algorithm.config(policy, p.multi_factor, p.minimize)?));
            }
        }
        let flushes = &p.flush_messages;
        let decision_log = p.log.decision_log()?;
        // Which knobs vary, so the table shows them.
        let varies = |n: usize| n > 1;
        let mut planned = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &theta in &self.common.theta {
            // Validate the workload once per θ before anything runs.
            self.common.workload.build(theta, self.common.seed)?;
            for &mode in &p.mode {
                for &concurrency in &p.concurrency {
                    for &batch_size in &p.batch_size {
                        for &storage_batch in &p.storage_batch_size {
                            let storage_batch_size = storage_batch.resolve(batch_size);
                            for (algorithm, policy, reorder) in &reorders {
                                for placement in &p.placement {
                                    for &reorder_workers in &p.reorder_workers {
                                        for &flush in flushes {
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
                                                messages_per_flush: flush,
                                                tuning: Tuning::default(),
                                                decision_log: decision_log.clone(),
                                            };
                                            config.validate()?;
                                            // Knobs a mode ignores do not make a new configuration.
                                            let key = (
                                                theta.to_bits(),
                                                mode,
                                                concurrency,
                                                mode.validator_batching().then_some(batch_size),
                                                mode.storage_batching().then_some(storage_batch_size),
                                                mode.validator_reordering()
                                                    .then(|| (algorithm.to_string(), *policy, reorder_workers)),
                                                (config.placement.threads.len() > 1).then_some(flush),
                                                placement.to_string(),
                                            );
                                            if !seen.insert(key) {
                                                continue;
                                            }
                                            let reorders_here = mode.validator_reordering();
                                            let dash = || "-".to_owned();
                                            let mut label = vec![
                                                ("mode".to_owned(), mode.name().to_owned()),
                                                ("theta".to_owned(), format!("{theta}")),
                                            ];
                                            if varies(p.concurrency.len()) {
                                                label.push(("concurrency".into(), concurrency.to_string()));
                                            }
                                            if varies(p.batch_size.len()) {
                                                let shown = if mode.validator_batching() {
                                                    batch_size.to_string()
                                                } else {
                                                    dash()
                                                };
                                                label.push(("batch".into(), shown));
                                            }
                                            let paired = p.storage_batch_size.contains(&StorageBatch::Same);
                                            if varies(p.storage_batch_size.len())
                                                || (paired && varies(p.batch_size.len()))
                                            {
                                                let shown = if mode.storage_batching() {
                                                    storage_batch_size.to_string()
                                                } else {
                                                    dash()
                                                };
                                                label.push(("storage_batch".into(), shown));
                                            }
                                            if varies(p.algorithm.len()) {
                                                label.push((
                                                    "algorithm".into(),
                                                    if reorders_here { reorder.label() } else { dash() },
                                                ));
                                            }
                                            if varies(p.policy.len()) {
                                                label.push((
                                                    "policy".into(),
                                                    if reorders_here { policy.name().into() } else { dash() },
                                                ));
                                            }
                                            if varies(p.reorder_workers.len()) {
                                                let shown =
                                                    if reorders_here { reorder_workers.to_string() } else { dash() };
                                                label.push(("reorder_workers".into(), shown));
                                            }
                                            if varies(p.placement.len()) {
                                                label.push(("placement".into(), placement.to_string()));
                                            }
                                            if varies(flushes.len()) {
                                                label.push(("flush".into(), flush.to_string()));
                                            }
                                            planned.push(self.planned_run(theta, config, label));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        p.log.check_verify(self.common.verify, self.common.runs, planned.len())?;
        Ok(planned)
    }

    fn planned_run(&self, theta: f64, config: PipelineConfig, label: Vec<(String, String)>) -> Planned<PipelineRun> {
        let workload = self.common.workload.knobs(BindingArg::Fixed);
        let info = self.common.run_info(PipelineRun { workload, config: config.clone() }, theta);
        let workload_args = self.common.workload.clone();
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
                    let entries: Vec<_> =
                        report.history.iter().map(ordo_pipeline::CommitRecord::history_entry).collect();
                    let checked =
                        ordo_history::check(&entries).map_err(|v| anyhow::anyhow!("not serializable: {v}"))?;
                    ordo_history::check_timestamp_order(&entries)
                        .map_err(|v| anyhow::anyhow!("commit-timestamp order is not a serial order: {v}"))?;
                    let Some(store) = report.store.as_ref() else {
                        bail!("a verified run must be drained, and this one reported no final store");
                    };
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
}
