//! `ordo bench --engine pg`: the middle tier in front of PostgreSQL (paper §5.7).
//!
//! Without `--url`, the local throwaway cluster of `ordo pg start` is used (and started if it
//! is not running). Every run reloads the bank, runs, drains, and audits the money.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::ProgressBar;
use ordo_harness::RunResult;
use ordo_pgtier::run::RECONNECT_TIMEOUT_MS_DEFAULT;
use ordo_pgtier::{Cluster, Dispatch, Isolation, Mode, Procedures, RunSpec, SessionConfig, TierConfig, run_blocking};
use ordo_reorder::{FvsConfig, Policy};

use super::{BenchArgs, Options, Planned, RateMeter};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "PostgreSQL engine (--engine pg; modes nobatch, batch, reorder)")]
pub struct PgBenchArgs {
    /// Connections to PostgreSQL; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "16")]
    pub connections: Vec<usize>,
    /// Any PostgreSQL-wire server (postgres://user:password@host:port/db); default: the local
    /// cluster of `ordo pg start`, started if needed.
    #[arg(long)]
    pub url: Option<String>,
    /// Port of the local cluster (without --url).
    #[arg(long, default_value_t = ordo_pgtier::cluster::PORT_DEFAULT)]
    pub pg_port: u16,
    /// serializable or repeatable-read.
    #[arg(long, default_value = "serializable")]
    pub isolation: String,
    /// Transactions per middle-tier batch (batch, reorder); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "50")]
    pub pg_batch: Vec<usize>,
    /// Requests in flight per connection in batch and reorder modes (1: no pipelining); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "8")]
    pub pipeline_depth: Vec<usize>,
    /// functions (PL/pgSQL, one round trip) or statements (plain SQL); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "functions")]
    pub procedures: Vec<String>,
    /// on or off: set synchronous_commit for ordo's sessions (default: the server's setting).
    #[arg(long)]
    pub synchronous_commit: Option<String>,
    /// batch and reorder: barrier (send a batch, wait for all of it) or rolling (keep the
    /// connections' queues fed while earlier batches run); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "rolling")]
    pub pg_dispatch: Vec<String>,
    /// Rolling dispatch: a partial batch goes out once its oldest transaction waited this long (µs).
    #[arg(long, default_value_t = 1000)]
    pub pg_batch_wait_us: u64,
    /// Rolling dispatch: closed-loop clients in the tier (0: twice the batch size).
    #[arg(long, default_value_t = 0)]
    pub pg_clients: usize,
    /// Rolling dispatch in reorder mode: on (send a planned queue to the connection already
    /// running transactions that write its keys) or off (to the shortest backlog); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "on")]
    pub pg_affinity: Vec<String>,
    /// How long a broken connection may take to come back (ms) before the run fails.
    #[arg(long, default_value_t = RECONNECT_TIMEOUT_MS_DEFAULT)]
    pub reconnect_timeout_ms: u64,
}

pub fn plan(args: &BenchArgs) -> Result<Vec<Planned>> {
    let p = &args.pg;
    if args.history.is_some() || args.verify {
        bail!("--history and --verify are for the in-memory engines; the pg engine audits the bank after every run");
    }
    let mut workload_args = args.workload.clone();
    let workload = workload_args.workload.get_or_insert_with(|| "smallbank".into());
    if workload != "smallbank" {
        bail!("--engine pg runs smallbank, not `{workload}`");
    }
    let modes: Vec<Mode> = if args.mode.is_empty() {
        vec![Mode::Reorder]
    } else {
        args.mode
            .iter()
            .map(|m| m.parse::<Mode>().map_err(|e| anyhow::anyhow!("--mode {e} (engine pg)")))
            .collect::<Result<_>>()?
    };
    let isolation: Isolation = p.isolation.parse()?;
    let synchronous_commit = match p.synchronous_commit.as_deref() {
        None => None,
        Some("on") => Some(true),
        Some("off") => Some(false),
        Some(other) => bail!("--synchronous-commit `{other}`: expected on or off"),
    };
    let procedures: Vec<Procedures> = p
        .procedures
        .iter()
        .map(|s| s.parse::<Procedures>().map_err(|e| anyhow::anyhow!("--procedures {e}")))
        .collect::<Result<_>>()?;
    let dispatches: Vec<Dispatch> = p
        .pg_dispatch
        .iter()
        .map(|s| s.parse::<Dispatch>().map_err(|e| anyhow::anyhow!("--pg-dispatch {e}")))
        .collect::<Result<_>>()?;
    let affinities: Vec<bool> = p
        .pg_affinity
        .iter()
        .map(|s| match s.as_str() {
            "on" => Ok(true),
            "off" => Ok(false),
            other => Err(anyhow::anyhow!("--pg-affinity `{other}`: expected on or off")),
        })
        .collect::<Result<_>>()?;
    for (flag, values) in
        [("--connections", &p.connections), ("--pg-batch", &p.pg_batch), ("--pipeline-depth", &p.pipeline_depth)]
    {
        if values.contains(&0) {
            bail!("{flag} must be at least 1");
        }
    }
    let url = match &p.url {
        Some(url) => url.clone(),
        None => {
            let cluster = Cluster::new(Cluster::default_local().data_dir, p.pg_port);
            if cluster.start().context("starting the local PostgreSQL (or pass --url)")? {
                eprintln!(
                    "started a local PostgreSQL in {} on port {}; stop it with `ordo pg stop`",
                    cluster.data_dir.display(),
                    cluster.port
                );
            }
            cluster.url()
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut settings = runtime.block_on(ordo_pgtier::run::probe_settings(&url))?;
    if let Some(on) = synchronous_commit {
        for (name, value) in &mut settings {
            if name == "synchronous_commit" {
                *value = if on { "on".into() } else { "off".into() };
            }
        }
    }

    let mut planned = Vec::new();
    let mut seen = Vec::new();
    for &theta in &args.theta {
        workload_args.build(theta, args.seed)?;
        for &mode in &modes {
            for &connections in &p.connections {
                for &batch_size in &p.pg_batch {
                    for &pipeline_depth in &p.pipeline_depth {
                        for &procedure in &procedures {
                            for &dispatch in &dispatches {
                                for &affinity in &affinities {
                                    let config = TierConfig {
                                        session: SessionConfig { url: url.clone(), isolation, synchronous_commit },
                                        mode,
                                        connections,
                                        batch_size,
                                        pipeline_depth,
                                        procedures: procedure,
                                        reorder: FvsConfig::from_label("greedy_sort", Policy::ProdDegree)?,
                                        reconnect_timeout_ms: p.reconnect_timeout_ms,
                                        load: true,
                                        dispatch,
                                        batch_wait_us_max: p.pg_batch_wait_us,
                                        clients: p.pg_clients,
                                        affinity,
                                    };
                                    config.validate()?;
                                    let batches = mode != Mode::NoBatch;
                                    let depth = config.effective_pipeline_depth();
                                    let key = (
                                        theta.to_bits(),
                                        mode,
                                        connections,
                                        batches.then_some(batch_size),
                                        depth,
                                        procedure,
                                        batches.then_some(dispatch),
                                        (mode == Mode::Reorder && dispatch == Dispatch::Rolling).then_some(affinity),
                                    );
                                    if seen.contains(&key) {
                                        continue;
                                    }
                                    seen.push(key);
                                    let mut label = vec![("mode".to_owned(), mode.name().to_owned())];
                                    if args.theta.len() > 1 {
                                        label.push(("theta".into(), format!("{theta}")));
                                    }
                                    label.push(("conns".into(), connections.to_string()));
                                    if p.pg_batch.len() > 1 {
                                        label.push((
                                            "batch".into(),
                                            if batches { batch_size.to_string() } else { "-".into() },
                                        ));
                                    }
                                    if p.pipeline_depth.len() > 1 {
                                        label.push(("depth".into(), depth.to_string()));
                                    }
                                    if procedures.len() > 1 {
                                        label.push(("procedures".into(), config.procedures.name().into()));
                                    }
                                    if dispatches.len() > 1 {
                                        label.push((
                                            "dispatch".into(),
                                            if batches { dispatch.name().into() } else { "-".into() },
                                        ));
                                    }
                                    if affinities.len() > 1 {
                                        let rolling = mode == Mode::Reorder && dispatch == Dispatch::Rolling;
                                        label.push((
                                            "affinity".into(),
                                            if rolling {
                                                if affinity { "on" } else { "off" }.into()
                                            } else {
                                                "-".into()
                                            },
                                        ));
                                    }
                                    planned.push(planned_run(args, &workload_args, theta, config, &settings, label));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(planned)
}

fn planned_run(
    args: &BenchArgs,
    workload_args: &super::workloads::WorkloadArgs,
    theta: f64,
    config: TierConfig,
    settings: &[(String, String)],
    label: Vec<(String, String)>,
) -> Planned {
    let mut knobs: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for (name, value) in workload_args.describe() {
        knobs.insert(name.into(), value);
    }
    knobs.insert("connections".into(), config.connections.into());
    knobs.insert("batch_size".into(), config.batch_size.into());
    knobs.insert("pipeline_depth".into(), config.effective_pipeline_depth().into());
    knobs.insert("procedures".into(), config.procedures.name().into());
    knobs.insert("isolation".into(), config.session.isolation.name().into());
    knobs.insert("algorithm".into(), config.reorder.label().into());
    if config.mode != Mode::NoBatch {
        knobs.insert("dispatch".into(), config.dispatch.name().into());
        if config.dispatch == Dispatch::Rolling {
            knobs.insert("batch_wait_us".into(), config.batch_wait_us_max.into());
            knobs.insert("clients".into(), config.effective_clients().into());
            knobs.insert("affinity".into(), (config.affinity && config.mode == Mode::Reorder).into());
        }
    }
    knobs.insert("url".into(), ordo_pgtier::connection::redact(&config.session.url).into());
    for (name, value) in settings {
        knobs.insert(name.clone(), value.clone().into());
    }
    let info = args.run_info("pg", workload_args.name(), config.mode.name().into(), theta, knobs);
    let workload_args = workload_args.clone();
    Planned {
        info: info.clone(),
        label,
        run: Box::new(move |options: &Options, seed: u64, bar: &ProgressBar| {
            let workload = workload_args.build(theta, seed)?;
            let spec = RunSpec {
                seed,
                warmup: Duration::from_secs_f64(options.warmup_s),
                duration: Duration::from_secs_f64(options.duration_s),
                cooldown: Duration::from_secs_f64(options.cooldown_s),
                record_ledger: false,
            };
            let meter = RateMeter::new(bar);
            let report = run_blocking(&config, workload.as_ref(), &spec, &|elapsed_s, finished| {
                meter.update(elapsed_s, finished);
            })?;
            let recorder = &report.recorder;
            let attempts = (recorder.commits() + recorder.total_aborts()).max(1) as f64;
            let rate = |cause| 100.0 * recorder.aborts(cause) as f64 / attempts;
            bar.suspend(|| {
                eprintln!(
                    "  {} conns={}: 40001 {:.2}%, 40P01 {:.2}%, deferred {:.2}%, lost {} of attempts; \
                     in doubt resolved {} committed / {} rolled back; audit ok ({} committed writers, net {} cents)",
                    config.mode.name(),
                    config.connections,
                    rate(ordo_harness::AbortCause::Serialization),
                    rate(ordo_harness::AbortCause::Deadlock),
                    rate(ordo_harness::AbortCause::Reorder),
                    recorder.aborts(ordo_harness::AbortCause::ConnectionLost),
                    report.in_doubt_resolved_committed,
                    report.in_doubt_resolved_rolled_back,
                    report.committed_writers,
                    report.committed_net_cents
                );
            });
            if report.failed > 0 {
                bail!("{} transactions failed (gave up after retries or still deferred at the end)", report.failed);
            }
            let mut info = info.clone();
            info.seed = seed;
            Ok(RunResult::from_recorder(info, &report.recorder, report.measured_s, workload.procedure_names()))
        }),
    }
}
