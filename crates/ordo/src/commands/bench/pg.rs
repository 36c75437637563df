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
use ordo_pgtier::run::{BATCH_WAIT_US_DEFAULT, DEADLOCK_TIMEOUT_MS_DEFAULT, RECONNECT_TIMEOUT_MS_DEFAULT};
use ordo_pgtier::{
    BatchSize, Cluster, Dispatch, GroupForm, GroupRetry, Isolation, Mode, Placement, Procedures, RunSpec,
    SessionConfig, TierConfig, run_blocking,
};
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
    /// Transactions per middle-tier batch (batch, reorder): auto (chosen while the tier runs,
    /// starting at 50) or a number; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub pg_batch: Vec<BatchSize>,
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
    #[arg(long, default_value_t = BATCH_WAIT_US_DEFAULT)]
    pub pg_batch_wait_us: u64,
    /// Rolling dispatch: closed-loop clients in the tier (0: twice the batch size; with an auto
    /// batch size, twice where it starts); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub pg_clients: Vec<usize>,
    /// Rolling dispatch in reorder mode: on (send a planned queue to the connection already
    /// running transactions that write its keys) or off (to the shortest backlog); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "on")]
    pub pg_affinity: Vec<String>,
    /// Rolling reorder with affinity: prefer a connection for its keys only while fewer than
    /// this many transactions are queued or running there (0: no bound); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub pg_affinity_backlog: Vec<usize>,
    /// reorder: how a batch is placed on connections: components (conflict components, none
    /// shared between connections, including with what they still run; bridges deferred),
    /// thread-aware (the paper's equal shares, with a feedback vertex set of the cycles between
    /// them deferred), or auto (components with grouping, thread-aware without: the faster of
    /// the two as measured); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub pg_placement: Vec<String>,
    /// batch and reorder: transactions per server transaction: auto (chosen while the tier
    /// runs, starting at 16; always 1 for nobatch and statements) or a number (1: off, each its
    /// own; nobatch refuses more than 1); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub pg_group: Vec<BatchSize>,
    /// How a group is sent: function (one call of sb_group with arrays) or pipelined (BEGIN,
    /// one call per transaction, COMMIT); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "function")]
    pub pg_group_form: Vec<String>,
    /// Largest group a transaction may join after its group hit a serialization failure or
    /// deadlock: keep, halve or single; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "halve")]
    pub pg_group_retry: Vec<String>,
    /// deadlock_timeout of ordo's sessions in ms (0: the server's setting; a superuser setting,
    /// kept at the server's value where refused; results record the value in force).
    #[arg(long, default_value_t = DEADLOCK_TIMEOUT_MS_DEFAULT)]
    pub pg_deadlock_timeout_ms: u64,
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
    // None: auto, decided per configuration once its group size is known.
    let placements: Vec<Option<Placement>> = p
        .pg_placement
        .iter()
        .map(|s| match s.as_str() {
            "auto" => Ok(None),
            s => s
                .parse::<Placement>()
                .map(Some)
                .map_err(|_| anyhow::anyhow!("--pg-placement `{s}`: expected auto, components or thread-aware")),
        })
        .collect::<Result<_>>()?;
    let group_forms: Vec<GroupForm> = p
        .pg_group_form
        .iter()
        .map(|s| s.parse::<GroupForm>().map_err(|e| anyhow::anyhow!("--pg-group-form {e}")))
        .collect::<Result<_>>()?;
    let group_retries: Vec<GroupRetry> = p
        .pg_group_retry
        .iter()
        .map(|s| s.parse::<GroupRetry>().map_err(|e| anyhow::anyhow!("--pg-group-retry {e}")))
        .collect::<Result<_>>()?;
    if modes.contains(&Mode::NoBatch) && p.pg_group.iter().any(|g| g.get().is_some_and(|g| g > 1)) {
        bail!(
            "--pg-group groups transactions into one server transaction in batch and reorder modes; nobatch runs one \
             transaction at a time by definition (drop nobatch from --mode, or --pg-group)"
        );
    }
    for (flag, values) in [("--connections", &p.connections), ("--pipeline-depth", &p.pipeline_depth)] {
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

    // Every swept knob is set by `expand` below; these are the ones that are not swept.
    let base = TierConfig {
        reorder: FvsConfig::from_label("greedy_sort", Policy::ProdDegree)?,
        reconnect_timeout_ms: p.reconnect_timeout_ms,
        batch_wait_us_max: p.pg_batch_wait_us,
        ..TierConfig::new(SessionConfig {
            url: url.clone(),
            isolation,
            synchronous_commit,
            deadlock_timeout_ms: (p.pg_deadlock_timeout_ms > 0).then_some(p.pg_deadlock_timeout_ms),
        })
    };
    // Every combination of the swept knobs, the first knob slowest.
    let mut configs = vec![base];
    expand(&mut configs, &modes, |c, &mode| c.mode = mode);
    expand(&mut configs, &p.connections, |c, &n| c.connections = n);
    expand(&mut configs, &p.pg_batch, |c, &size| c.batch_size = size);
    expand(&mut configs, &p.pipeline_depth, |c, &n| c.pipeline_depth = n);
    expand(&mut configs, &procedures, |c, &procedures| c.procedures = procedures);
    expand(&mut configs, &dispatches, |c, &dispatch| c.dispatch = dispatch);
    expand(&mut configs, &p.pg_clients, |c, &n| c.clients = n);
    expand(&mut configs, &affinities, |c, &affinity| c.affinity = affinity);
    expand(&mut configs, &p.pg_affinity_backlog, |c, &n| c.affinity_backlog_max = n);
    expand(&mut configs, &p.pg_group, |c, &group| {
        // Nothing can be grouped in nobatch or with statements: a group size there means 1.
        let grouping = c.mode != Mode::NoBatch && c.procedures == Procedures::Functions;
        c.group_max = if grouping { group } else { BatchSize::fixed(1).expect("1 is a size") };
    });
    expand(&mut configs, &group_forms, |c, &form| c.group_form = form);
    expand(&mut configs, &group_retries, |c, &retry| c.group_retry = retry);
    expand(&mut configs, &placements, |c, &placement| {
        // Without grouping, components pins each hot component's transactions to one
        // connection, one commit flush each, and the paper's placement is faster (BENCHMARKS.md).
        // An auto group size starts at 16, so it groups.
        let grouped = c.group_max.is_auto() || c.effective_group_max() > 1;
        c.placement = placement.unwrap_or(if grouped { Placement::Components } else { Placement::ThreadAware });
    });

    let mut planned = Vec::new();
    for &theta in &args.theta {
        workload_args.build(theta, args.seed)?;
        let mut seen = Vec::new();
        let mut runs = Vec::new();
        for config in &configs {
            config.validate()?;
            let mode = config.mode;
            let batches = mode != Mode::NoBatch;
            let rolling_reorder = mode == Mode::Reorder && config.dispatch == Dispatch::Rolling;
            let group = config.effective_group_max();
            let group_setting = if config.group_max.is_auto() { BatchSize::Auto } else { group_size(group) };
            let key = (
                mode,
                config.connections,
                batches.then_some(config.batch_size),
                config.effective_pipeline_depth(),
                config.procedures,
                batches.then_some(config.dispatch),
                (batches && config.dispatch == Dispatch::Rolling).then_some(config.effective_clients()),
                rolling_reorder.then_some(config.affinity),
                (rolling_reorder && config.affinity).then_some(config.affinity_backlog_max),
                (mode == Mode::Reorder).then_some(config.placement),
                group_setting,
                (group > 1).then_some((config.group_form, config.group_retry)),
            );
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let mut label = vec![("mode".to_owned(), mode.name().to_owned())];
            if args.theta.len() > 1 {
                label.push(("theta".into(), format!("{theta}")));
            }
            label.push(("conns".into(), config.connections.to_string()));
            let dash = || "-".to_owned();
            if p.pg_batch.len() > 1 {
                label.push(("batch".into(), if batches { config.batch_size.to_string() } else { dash() }));
            }
            if p.pipeline_depth.len() > 1 {
                label.push(("depth".into(), config.effective_pipeline_depth().to_string()));
            }
            if procedures.len() > 1 {
                label.push(("procedures".into(), config.procedures.name().into()));
            }
            if dispatches.len() > 1 {
                label.push(("dispatch".into(), if batches { config.dispatch.name().into() } else { dash() }));
            }
            if p.pg_clients.len() > 1 {
                let rolling = batches && config.dispatch == Dispatch::Rolling;
                label.push(("clients".into(), if rolling { config.effective_clients().to_string() } else { dash() }));
            }
            let on_off = |on: bool| if on { "on" } else { "off" }.to_owned();
            if affinities.len() > 1 {
                label.push(("affinity".into(), if rolling_reorder { on_off(config.affinity) } else { dash() }));
            }
            if p.pg_affinity_backlog.len() > 1 {
                let bounded = rolling_reorder && config.affinity;
                label.push((
                    "backlog".into(),
                    if bounded { backlog_label(config.affinity_backlog_max) } else { dash() },
                ));
            }
            if placements.len() > 1 {
                let reorder = mode == Mode::Reorder;
                label.push(("placement".into(), if reorder { config.placement.name().into() } else { dash() }));
            }
            label.push(("group".into(), group_setting.to_string()));
            if group_forms.len() > 1 {
                label.push(("form".into(), if group > 1 { config.group_form.name().into() } else { dash() }));
            }
            if group_retries.len() > 1 {
                label.push(("retry".into(), if group > 1 { config.group_retry.name().into() } else { dash() }));
            }
            runs.push((config.clone(), label));
        }
        // The group column only when it differs between the configurations.
        let group_of = |c: &TierConfig| (c.group_max.is_auto(), c.effective_group_max());
        let groups_vary = runs.iter().any(|(c, _)| group_of(c) != group_of(&runs[0].0));
        for (config, mut label) in runs {
            if !groups_vary {
                label.retain(|(column, _)| column != "group");
            }
            planned.push(planned_run(args, &workload_args, theta, config, &settings, label));
        }
    }
    Ok(planned)
}

/// A fixed group size (at least 1).
fn group_size(group: usize) -> BatchSize {
    BatchSize::fixed(u32::try_from(group).unwrap_or(u32::MAX)).unwrap_or(BatchSize::Auto)
}

/// Replaces every configuration by one copy per value, set by `set`.
fn expand<T>(configs: &mut Vec<TierConfig>, values: &[T], set: impl Fn(&mut TierConfig, &T)) {
    *configs = configs
        .iter()
        .flat_map(|config| {
            values.iter().map(|value| {
                let mut config = config.clone();
                set(&mut config, value);
                config
            })
        })
        .collect();
}

fn backlog_label(backlog_max: usize) -> String {
    if backlog_max == 0 { "unbounded".into() } else { backlog_max.to_string() }
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
    let size = |size: BatchSize| serde_json::to_value(size).expect("a batch size serializes");
    knobs.insert("batch_size".into(), size(config.batch_size));
    knobs.insert("pipeline_depth".into(), config.effective_pipeline_depth().into());
    knobs.insert("procedures".into(), config.procedures.name().into());
    knobs.insert("isolation".into(), config.session.isolation.name().into());
    knobs.insert("algorithm".into(), config.reorder.label().into());
    if config.mode != Mode::NoBatch {
        knobs.insert("dispatch".into(), config.dispatch.name().into());
        if config.dispatch == Dispatch::Rolling {
            knobs.insert("batch_wait_us".into(), config.batch_wait_us_max.into());
            knobs.insert("clients".into(), config.effective_clients().into());
            let affinity = config.affinity && config.mode == Mode::Reorder;
            knobs.insert("affinity".into(), affinity.into());
            if affinity {
                knobs.insert("affinity_backlog_max".into(), config.affinity_backlog_max.into());
            }
        }
    }
    if config.mode == Mode::Reorder {
        knobs.insert("placement".into(), config.placement.name().into());
    }
    let group = config.effective_group_max();
    let grouping = config.mode != Mode::NoBatch && config.procedures == Procedures::Functions;
    knobs.insert("group".into(), if grouping { size(config.group_max) } else { 1.into() });
    if group > 1 {
        knobs.insert("group_form".into(), config.group_form.name().into());
        knobs.insert("group_retry".into(), config.group_retry.name().into());
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
                    "  {} conns={} group={}: 40001 {:.2}%, 40P01 {:.2}%, deferred {:.2}%, lost {} of attempts; \
                     groups sent {} (mean {:.1} transactions); in doubt resolved {} committed / {} rolled back; audit ok ({} committed writers, net {} cents)",
                    config.mode.name(),
                    config.connections,
                    if config.group_max.is_auto() { "auto".to_owned() } else { config.effective_group_max().to_string() },
                    rate(ordo_harness::AbortCause::Serialization),
                    rate(ordo_harness::AbortCause::Deadlock),
                    rate(ordo_harness::AbortCause::Reorder),
                    recorder.aborts(ordo_harness::AbortCause::ConnectionLost),
                    report.groups_sent,
                    report.grouped_attempts as f64 / report.groups_sent.max(1) as f64,
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
            // The settings in force in the run's sessions (session-level SETs included).
            for (name, value) in &report.settings {
                info.config.insert(name.clone(), value.clone().into());
            }
            let mut result =
                RunResult::from_recorder(info, &report.recorder, report.measured_s, workload.procedure_names());
            result.batch_sizes = report.batch_sizes;
            Ok(result)
        }),
    }
}
