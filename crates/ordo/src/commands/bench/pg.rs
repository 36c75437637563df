//! `ordo bench pg`: the middle tier in front of PostgreSQL (paper §5.7).
//!
//! Without `--url`, the local throwaway cluster of `ordo pg start` is used (and started if it
//! is not running). Every run reloads the bank, runs, drains, and audits the money.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use ordo_harness::{Description, RunResult};
use ordo_pgtier::run::{
    BATCH_SIZE_MAX, BATCH_WAIT_US_DEFAULT, BATCH_WAIT_US_MAX, CONNECTIONS_MAX, DEADLOCK_TIMEOUT_MS_DEFAULT,
    DEADLOCK_TIMEOUT_MS_MAX, GROUP_MAX_LIMIT, PIPELINE_DEPTH_MAX, RECONNECT_TIMEOUT_MS_DEFAULT,
    RECONNECT_TIMEOUT_MS_MAX,
};
use ordo_pgtier::{
    Cluster, Dispatch, GroupForm, GroupRetry, Isolation, Mode, Placement, Procedures, RunSpec, SessionConfig,
    TierConfig, run_blocking,
};
use ordo_reorder::FvsConfig;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::values::{BatchSize, BatchSizeArg, Bound, ServerOrMs, not_empty, on_off, within};
use super::workloads::{BindingArg, WorkloadKnobs, WorkloadName};
use super::{CommonArgs, Described, Flags, Label, Labelled, Options, Planned, RateMeter, check_sweep_size};

/// `ordo bench pg`: the shared flags and the engine's own.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct PgBench {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub engine: PgArgs,
}

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "PostgreSQL engine")]
pub struct PgArgs {
    /// nobatch (one transaction at a time per client), batch (batches dealt over the
    /// connections) or reorder (conflicting transactions on one connection); a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "reorder")]
    pub mode: Vec<Mode>,
    /// Connections to PostgreSQL, 1..=1000 (and what the server takes); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "16")]
    pub connections: Vec<usize>,
    /// Any PostgreSQL-wire server (postgres://user:password@host:port/db); default: the local
    /// cluster of `ordo pg start`, started if needed.
    #[arg(long)]
    pub url: Option<String>,
    /// Port of the local cluster (without --url).
    #[arg(long, default_value_t = ordo_pgtier::cluster::PORT_DEFAULT)]
    pub pg_port: u16,
    /// Isolation level of every transaction.
    #[arg(long, value_enum, default_value = "serializable")]
    pub isolation: Isolation,
    /// Transactions per middle-tier batch (batch, reorder): auto (chosen while the tier runs,
    /// starting at 25 times the square root of the connections, searched between 8 and 100) or
    /// a number, 1..=100000; a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub pg_batch: Vec<BatchSize>,
    /// Requests in flight per connection in batch and reorder modes, 1..=1024 (1: no
    /// pipelining); a list sweeps.
    #[arg(long, value_delimiter = ',', default_values_t = [ordo_pgtier::run::PIPELINE_DEPTH_DEFAULT])]
    pub pipeline_depth: Vec<usize>,
    /// functions (PL/pgSQL, one round trip) or statements (plain SQL); a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "functions")]
    pub procedures: Vec<Procedures>,
    /// on or off: set synchronous_commit for ordo's sessions (default: the server's setting).
    #[arg(long, value_parser = super::values::on_off_parser())]
    pub synchronous_commit: Option<bool>,
    /// batch and reorder: barrier (send a batch, wait for all of it) or rolling (keep the
    /// connections' queues fed while earlier batches run); a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "rolling")]
    pub pg_dispatch: Vec<Dispatch>,
    /// Rolling dispatch: a partial batch goes out once its oldest transaction waited this long
    /// (µs, at most 1000000).
    #[arg(long, default_value_t = BATCH_WAIT_US_DEFAULT)]
    pub pg_batch_wait_us: u64,
    /// Rolling dispatch: closed-loop clients in the tier, 1..=100000; a list sweeps. Default:
    /// twice the batch size.
    #[arg(long, value_delimiter = ',')]
    pub pg_clients: Vec<usize>,
    /// Rolling dispatch in reorder mode: on (send a planned queue to the connection already
    /// running transactions that write its keys) or off (to the shortest backlog); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "on", value_parser = super::values::on_off_parser())]
    pub pg_affinity: Vec<bool>,
    /// Rolling reorder with affinity: prefer a connection for its keys only while fewer than
    /// this many transactions are queued or running there (1..=100000, or unbounded); a list
    /// sweeps.
    #[arg(long, value_delimiter = ',', default_value = "unbounded")]
    pub pg_affinity_backlog: Vec<Bound>,
    /// reorder: how a batch is placed on connections: components (conflict components, none
    /// shared between connections, including with what they still run; bridges deferred),
    /// thread-aware (the paper's equal shares, with a feedback vertex set of the cycles between
    /// them deferred), or auto (components with grouping, thread-aware without: the faster of
    /// the two as measured); a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "auto")]
    pub pg_placement: Vec<PlacementChoice>,
    /// batch and reorder: transactions per server transaction: auto (chosen while the tier
    /// runs, starting at 64; always 1 for nobatch and statements) or a number, 1..=1000 (1: off,
    /// each its own; nobatch refuses more than 1); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub pg_group: Vec<BatchSize>,
    /// How a group is sent: function (one call of sb_group with arrays) or pipelined (BEGIN,
    /// one call per transaction, COMMIT); a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "function")]
    pub pg_group_form: Vec<GroupForm>,
    /// Largest group a transaction may join after its group hit a serialization failure or
    /// deadlock: keep, halve or single; a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "halve")]
    pub pg_group_retry: Vec<GroupRetry>,
    /// deadlock_timeout of ordo's sessions in ms (1..=60000), or `server` to keep the server's
    /// (a superuser setting, kept at the server's value where refused; results record the
    /// value in force).
    #[arg(long, default_value_t = ServerOrMs::Ms(DEADLOCK_TIMEOUT_MS_DEFAULT.try_into().expect("positive")))]
    pub pg_deadlock_timeout_ms: ServerOrMs,
    /// How long a broken connection may take to come back (ms, at most 3600000) before the run
    /// fails.
    #[arg(long, default_value_t = RECONNECT_TIMEOUT_MS_DEFAULT)]
    pub reconnect_timeout_ms: u64,
}

impl Default for PgArgs {
    fn default() -> Self {
        super::defaults()
    }
}

impl Default for PgBench {
    fn default() -> Self {
        super::defaults()
    }
}

/// `--pg-placement`: a placement, or `auto` (components with grouping, thread-aware without).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum PlacementChoice {
    Auto,
    Components,
    ThreadAware,
}

/// What a run of the PostgreSQL tier was: the workload and the tier's knobs, with the server
/// settings in force. In results: `engine: "pg"`, `mode`, and under `config` the workload's
/// knobs, `connections`, `batch_size`, `pipeline_depth`, `procedures`, `isolation`,
/// `algorithm`, `group`, `url` (password redacted), where they apply `dispatch`,
/// `batch_wait_us`, `clients`, `affinity`, `affinity_backlog_max`, `placement`, `group_form`,
/// `group_retry`, and every server setting by its name (`synchronous_commit`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "Description", try_from = "Description")]
pub struct PgRun {
    pub workload: WorkloadKnobs,
    pub knobs: PgKnobs,
}

impl Described for PgRun {
    const ENGINE: &'static str = "pg";
}

#[derive(Debug, Clone, PartialEq)]
pub struct PgKnobs {
    pub mode: Mode,
    pub connections: usize,
    /// `auto` or the fixed size.
    pub batch_size: BatchSize,
    pub pipeline_depth: usize,
    pub procedures: Procedures,
    pub isolation: Isolation,
    pub reorder: FvsConfig,
    /// Batch and reorder modes only.
    pub dispatch: Option<Dispatch>,
    /// Rolling dispatch only.
    pub batch_wait_us: Option<u64>,
    /// Rolling dispatch only.
    pub clients: Option<usize>,
    /// Rolling dispatch only.
    pub affinity: Option<bool>,
    /// Rolling reorder with affinity only.
    pub affinity_backlog_max: Option<Bound>,
    /// Reorder mode only.
    pub placement: Option<Placement>,
    /// `auto` or the fixed size (1 where nothing can be grouped).
    pub group: BatchSize,
    /// Groups that may hold more than one only.
    pub group_form: Option<GroupForm>,
    pub group_retry: Option<GroupRetry>,
    /// The server's address, password redacted.
    pub url: String,
    /// Server settings in force, by name.
    pub settings: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
struct PgWire {
    connections: usize,
    batch_size: BatchSize,
    pipeline_depth: usize,
    procedures: String,
    isolation: String,
    algorithm: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    dispatch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    batch_wait_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    clients: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    affinity: Option<bool>,
    /// A number, or `"unbounded"` (results before the typed flags wrote 0 for it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    affinity_backlog_max: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    placement: Option<String>,
    group: BatchSize,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    group_form: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    group_retry: Option<String>,
    url: String,
    /// The server settings, and the workload's knobs (sorted out when read).
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl From<PgRun> for Description {
    fn from(run: PgRun) -> Description {
        let k = run.knobs;
        let backlog = k.affinity_backlog_max.map(|bound| match bound {
            Bound::Unbounded => Value::from("unbounded"),
            Bound::AtMost(n) => Value::from(n.get()),
        });
        let wire = PgWire {
            connections: k.connections,
            batch_size: k.batch_size,
            pipeline_depth: k.pipeline_depth,
            procedures: k.procedures.name().into(),
            isolation: k.isolation.name().into(),
            algorithm: k.reorder.label(),
            dispatch: k.dispatch.map(|d| d.name().into()),
            batch_wait_us: k.batch_wait_us,
            clients: k.clients,
            affinity: k.affinity,
            affinity_backlog_max: backlog,
            placement: k.placement.map(|p| p.name().into()),
            group: k.group,
            group_form: k.group_form.map(|f| f.name().into()),
            group_retry: k.group_retry.map(|r| r.name().into()),
            url: k.url,
            rest: k.settings.into_iter().map(|(name, value)| (name, Value::from(value))).collect(),
        };
        super::description(PgRun::ENGINE, &run.workload, k.mode.name(), &wire)
    }
}

impl TryFrom<Description> for PgRun {
    type Error = anyhow::Error;
    fn try_from(described: Description) -> Result<PgRun> {
        let (workload, wire, mode) = super::read_description::<PgWire>(PgRun::ENGINE, described)?;
        let parse_or = |what: &str, e: String| anyhow::anyhow!("{what} {e}");
        let backlog = match wire.affinity_backlog_max {
            None => None,
            Some(Value::Number(n)) if n.as_u64() == Some(0) => Some(Bound::Unbounded),
            Some(Value::Number(n)) => Some(Bound::AtMost(
                n.as_u64().and_then(|n| usize::try_from(n).ok()).and_then(std::num::NonZeroUsize::new).ok_or_else(
                    || anyhow::anyhow!("affinity_backlog_max {n}: expected unbounded or a positive number"),
                )?,
            )),
            Some(Value::String(s)) => Some(s.parse::<Bound>().map_err(|e| parse_or("affinity_backlog_max", e))?),
            Some(other) => bail!("affinity_backlog_max {other}: expected unbounded or a positive number"),
        };
        let workload_keys = workload.keys();
        let mut settings = BTreeMap::new();
        for (name, value) in wire.rest {
            if workload_keys.contains(&name) {
                continue;
            }
            let Value::String(value) = value else {
                bail!("server setting {name}: expected a string, not {value}");
            };
            settings.insert(name, value);
        }
        let knobs = PgKnobs {
            mode: mode.parse().map_err(|e| parse_or("mode", e))?,
            connections: wire.connections,
            batch_size: wire.batch_size,
            pipeline_depth: wire.pipeline_depth,
            procedures: wire.procedures.parse().map_err(|e| parse_or("procedures", e))?,
            isolation: wire.isolation.parse()?,
            reorder: FvsConfig::from_label(&wire.algorithm, FvsConfig::default().policy)?,
            dispatch: wire.dispatch.map(|d| d.parse()).transpose().map_err(|e| parse_or("dispatch", e))?,
            batch_wait_us: wire.batch_wait_us,
            clients: wire.clients,
            affinity: wire.affinity,
            affinity_backlog_max: backlog,
            placement: wire.placement.map(|p| p.parse()).transpose().map_err(|e| parse_or("placement", e))?,
            group: wire.group,
            group_form: wire.group_form.map(|f| f.parse()).transpose().map_err(|e| parse_or("group_form", e))?,
            group_retry: wire.group_retry.map(|r| r.parse()).transpose().map_err(|e| parse_or("group_retry", e))?,
            url: wire.url,
            settings,
        };
        Ok(PgRun { workload, knobs })
    }
}

impl PgBench {
    /// The workload: smallbank unless told otherwise (and nothing else runs here).
    fn workload(&self) -> super::workloads::WorkloadArgs {
        let mut workload = self.common.workload.clone();
        workload.workload = Some(workload.name_or(WorkloadName::Smallbank));
        workload
    }

    /// Checks every flag's range before anything runs (or connects).
    pub fn validate(&self) -> Result<()> {
        self.common.validate()?;
        let p = &self.engine;
        if self.common.history.is_some() || self.common.verify {
            bail!(
                "--history and --verify are for the in-memory engines; the pg engine audits the bank after every run"
            );
        }
        let workload = self.workload().name();
        if workload != WorkloadName::Smallbank {
            bail!("--engine pg runs smallbank, not `{}`", workload.name());
        }
        for (flag, empty) in [
            ("--mode", p.mode.is_empty()),
            ("--connections", p.connections.is_empty()),
            ("--pg-batch", p.pg_batch.is_empty()),
            ("--pipeline-depth", p.pipeline_depth.is_empty()),
            ("--procedures", p.procedures.is_empty()),
            ("--pg-dispatch", p.pg_dispatch.is_empty()),
            ("--pg-affinity", p.pg_affinity.is_empty()),
            ("--pg-affinity-backlog", p.pg_affinity_backlog.is_empty()),
            ("--pg-placement", p.pg_placement.is_empty()),
            ("--pg-group-form", p.pg_group_form.is_empty()),
            ("--pg-group-retry", p.pg_group_retry.is_empty()),
        ] {
            if empty {
                not_empty::<()>(flag, &[])?;
            }
        }
        within("--connections", p.connections.iter().copied(), 1, CONNECTIONS_MAX)?;
        within("--pg-port", [p.pg_port], 1, u16::MAX)?;
        for &batch in &p.pg_batch {
            batch.within("--pg-batch", BATCH_SIZE_MAX)?;
        }
        within("--pipeline-depth", p.pipeline_depth.iter().copied(), 1, PIPELINE_DEPTH_MAX)?;
        within("--pg-batch-wait-us", [p.pg_batch_wait_us], 0, BATCH_WAIT_US_MAX)?;
        within("--pg-clients", p.pg_clients.iter().copied(), 1, BATCH_SIZE_MAX)?;
        within("--pg-affinity-backlog", p.pg_affinity_backlog.iter().filter_map(|b| b.limit()), 1, BATCH_SIZE_MAX)?;
        for &group in &p.pg_group {
            group.within("--pg-group", GROUP_MAX_LIMIT)?;
        }
        if let Some(ms) = p.pg_deadlock_timeout_ms.ms() {
            within("--pg-deadlock-timeout-ms", [ms], 1, DEADLOCK_TIMEOUT_MS_MAX)?;
        }
        within("--reconnect-timeout-ms", [p.reconnect_timeout_ms], 0, RECONNECT_TIMEOUT_MS_MAX)?;
        if p.mode.contains(&Mode::NoBatch) && p.pg_group.iter().any(|g| g.get().is_some_and(|g| g > 1)) {
            bail!(
                "--pg-group groups transactions into one server transaction in batch and reorder modes; nobatch \
                 runs one transaction at a time by definition (drop nobatch from --mode, or --pg-group)"
            );
        }
        check_sweep_size(&[
            ("--theta", self.common.theta.len()),
            ("--mode", p.mode.len()),
            ("--connections", p.connections.len()),
            ("--pg-batch", p.pg_batch.len()),
            ("--pipeline-depth", p.pipeline_depth.len()),
            ("--procedures", p.procedures.len()),
            ("--pg-dispatch", p.pg_dispatch.len()),
            ("--pg-clients", p.pg_clients.len().max(1)),
            ("--pg-affinity", p.pg_affinity.len()),
            ("--pg-affinity-backlog", p.pg_affinity_backlog.len()),
            ("--pg-placement", p.pg_placement.len()),
            ("--pg-group", p.pg_group.len().max(1)),
            ("--pg-group-form", p.pg_group_form.len()),
            ("--pg-group-retry", p.pg_group_retry.len()),
        ])
    }

    /// Validates, checks the output files, connects, plans and runs the sweep.
    pub fn sweep(&self) -> Result<Vec<Labelled<PgRun>>> {
        self.validate()?;
        super::check_outputs(&self.common)?;
        let planned = self.plan()?;
        super::execute(&self.common, &planned)
    }

    /// The arguments as a command line (`--flag=value` for every flag off its default).
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Flags(self.common.flags());
        let (p, d) = (&self.engine, PgArgs::default());
        flags.named("--mode", &p.mode, &d.mode);
        flags.list("--connections", &p.connections, &d.connections);
        flags.optional("--url", p.url.as_ref());
        flags.one("--pg-port", &p.pg_port, &d.pg_port);
        flags.named("--isolation", &[p.isolation], &[d.isolation]);
        flags.list("--pg-batch", &p.pg_batch, &d.pg_batch);
        flags.list("--pipeline-depth", &p.pipeline_depth, &d.pipeline_depth);
        flags.named("--procedures", &p.procedures, &d.procedures);
        flags.optional("--synchronous-commit", p.synchronous_commit.map(on_off).as_ref());
        flags.named("--pg-dispatch", &p.pg_dispatch, &d.pg_dispatch);
        flags.one("--pg-batch-wait-us", &p.pg_batch_wait_us, &d.pg_batch_wait_us);
        flags.list("--pg-clients", &p.pg_clients, &d.pg_clients);
        if p.pg_affinity != d.pg_affinity {
            let shown: Vec<&str> = p.pg_affinity.iter().map(|&on| on_off(on)).collect();
            flags.0.push(format!("--pg-affinity={}", shown.join(",")));
        }
        flags.list("--pg-affinity-backlog", &p.pg_affinity_backlog, &d.pg_affinity_backlog);
        flags.named("--pg-placement", &p.pg_placement, &d.pg_placement);
        flags.list("--pg-group", &p.pg_group, &d.pg_group);
        flags.named("--pg-group-form", &p.pg_group_form, &d.pg_group_form);
        flags.named("--pg-group-retry", &p.pg_group_retry, &d.pg_group_retry);
        flags.one("--pg-deadlock-timeout-ms", &p.pg_deadlock_timeout_ms, &d.pg_deadlock_timeout_ms);
        flags.one("--reconnect-timeout-ms", &p.reconnect_timeout_ms, &d.reconnect_timeout_ms);
        flags.0
    }

    /// Every distinct configuration of the sweep on `session`, with its label. Touches no
    /// server. Assumes [`Self::validate`].
    pub fn configs(&self, session: SessionConfig) -> Result<Vec<(TierConfig, Label)>> {
        let p = &self.engine;
        let base = TierConfig {
            reconnect_timeout_ms: p.reconnect_timeout_ms,
            batch_wait_us_max: p.pg_batch_wait_us,
            ..TierConfig::new(session)
        };
        // `None`: the mode's default.
        let clients: Vec<Option<usize>> =
            if p.pg_clients.is_empty() { vec![None] } else { p.pg_clients.iter().map(|&n| Some(n)).collect() };
        // Every combination of the swept knobs, the first knob slowest.
        let mut configs = vec![base];
        expand(&mut configs, &p.mode, |c, &mode| c.mode = mode);
        expand(&mut configs, &p.connections, |c, &n| c.connections = n);
        expand(&mut configs, &p.pg_batch, |c, &size| c.batch_size = size);
        expand(&mut configs, &p.pipeline_depth, |c, &n| c.pipeline_depth = n);
        expand(&mut configs, &p.procedures, |c, &procedures| c.procedures = procedures);
        expand(&mut configs, &p.pg_dispatch, |c, &dispatch| c.dispatch = dispatch);
        expand(&mut configs, &clients, |c, &n| c.clients = n);
        expand(&mut configs, &p.pg_affinity, |c, &affinity| c.affinity = affinity);
        expand(&mut configs, &p.pg_affinity_backlog, |c, &bound| c.affinity_backlog_max = bound.limit());
        expand(&mut configs, &p.pg_group, |c, &group| {
            // Nothing can be grouped in nobatch or with statements: a group size there means 1.
            let grouping = c.mode != Mode::NoBatch && c.procedures == Procedures::Functions;
            c.group_max = if grouping { group } else { BatchSize::of(1) };
        });
        expand(&mut configs, &p.pg_group_form, |c, &form| c.group_form = form);
        expand(&mut configs, &p.pg_group_retry, |c, &retry| c.group_retry = retry);
        expand(&mut configs, &p.pg_placement, |c, &placement| {
            // Without grouping, components pins each hot component's transactions to one
            // connection, one commit flush each, and the paper's placement is faster (BENCHMARKS.md).
            // An auto group size starts at 64, so it groups.
            let grouped = c.group_max.is_auto() || c.effective_group_max() > 1;
            c.placement = match (placement, grouped) {
                (PlacementChoice::Components, _) | (PlacementChoice::Auto, true) => Placement::Components,
                (PlacementChoice::ThreadAware, _) | (PlacementChoice::Auto, false) => Placement::ThreadAware,
            };
        });

        let mut seen = std::collections::HashSet::new();
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
            if !seen.insert(key) {
                continue;
            }
            let mut label = vec![("mode".to_owned(), mode.name().to_owned())];
            label.push(("conns".into(), config.connections.to_string()));
            let dash = || "-".to_owned();
            if p.pg_batch.len() > 1 {
                label.push(("batch".into(), if batches { config.batch_size.to_string() } else { dash() }));
            }
            if p.pipeline_depth.len() > 1 {
                label.push(("depth".into(), config.effective_pipeline_depth().to_string()));
            }
            if p.procedures.len() > 1 {
                label.push(("procedures".into(), config.procedures.name().into()));
            }
            if p.pg_dispatch.len() > 1 {
                label.push(("dispatch".into(), if batches { config.dispatch.name().into() } else { dash() }));
            }
            if p.pg_clients.len() > 1 {
                let rolling = batches && config.dispatch == Dispatch::Rolling;
                label.push(("clients".into(), if rolling { config.effective_clients().to_string() } else { dash() }));
            }
            if p.pg_affinity.len() > 1 {
                label.push(("affinity".into(), if rolling_reorder { on_off(config.affinity).into() } else { dash() }));
            }
            if p.pg_affinity_backlog.len() > 1 {
                let bounded = rolling_reorder && config.affinity;
                let shown = config.affinity_backlog_max.map_or_else(|| "unbounded".to_owned(), |n| n.to_string());
                label.push(("backlog".into(), if bounded { shown } else { dash() }));
            }
            if p.pg_placement.len() > 1 {
                let reorder = mode == Mode::Reorder;
                label.push(("placement".into(), if reorder { config.placement.name().into() } else { dash() }));
            }
            label.push(("group".into(), group_setting.to_string()));
            if p.pg_group_form.len() > 1 {
                label.push(("form".into(), if group > 1 { config.group_form.name().into() } else { dash() }));
            }
            if p.pg_group_retry.len() > 1 {
                label.push(("retry".into(), if group > 1 { config.group_retry.name().into() } else { dash() }));
            }
            runs.push((config.clone(), label));
        }
        // The group column only when it differs between the configurations.
        let group_of = |c: &TierConfig| (c.group_max.is_auto(), c.effective_group_max());
        let groups_vary = runs.iter().any(|(c, _)| group_of(c) != group_of(&runs[0].0));
        if !groups_vary {
            for (_, label) in &mut runs {
                label.retain(|(column, _)| column != "group");
            }
        }
        Ok(runs)
    }

    /// Connects (starting the local cluster if needed), then plans every configuration.
    pub fn plan(&self) -> Result<Vec<Planned<PgRun>>> {
        let p = &self.engine;
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
        if let Some(on) = p.synchronous_commit {
            for (name, value) in &mut settings {
                if name == "synchronous_commit" {
                    *value = on_off(on).into();
                }
            }
        }
        let session = SessionConfig {
            url,
            isolation: p.isolation,
            synchronous_commit: p.synchronous_commit,
            deadlock_timeout_ms: p.pg_deadlock_timeout_ms.ms(),
        };
        let configs = self.configs(session)?;
        let workload = self.workload();
        let mut planned = Vec::new();
        for &theta in &self.common.theta {
            workload.build(theta, self.common.seed)?;
            for (config, label) in &configs {
                let mut label = label.clone();
                if self.common.theta.len() > 1 {
                    label.insert(1, ("theta".into(), format!("{theta}")));
                }
                planned.push(self.planned_run(&workload, theta, config.clone(), &settings, label));
            }
        }
        Ok(planned)
    }

    fn planned_run(
        &self,
        workload_args: &super::workloads::WorkloadArgs,
        theta: f64,
        config: TierConfig,
        settings: &[(String, String)],
        label: Vec<(String, String)>,
    ) -> Planned<PgRun> {
        let batches = config.mode != Mode::NoBatch;
        let rolling = batches && config.dispatch == Dispatch::Rolling;
        let affinity = rolling && config.affinity && config.mode == Mode::Reorder;
        let group = config.effective_group_max();
        let knobs = PgKnobs {
            mode: config.mode,
            connections: config.connections,
            batch_size: config.batch_size,
            pipeline_depth: config.effective_pipeline_depth(),
            procedures: config.procedures,
            isolation: config.session.isolation,
            reorder: config.reorder,
            dispatch: batches.then_some(config.dispatch),
            batch_wait_us: rolling.then_some(config.batch_wait_us_max),
            clients: rolling.then(|| config.effective_clients()),
            affinity: rolling.then_some(affinity),
            affinity_backlog_max: affinity.then(|| {
                config
                    .affinity_backlog_max
                    .and_then(std::num::NonZeroUsize::new)
                    .map_or(Bound::Unbounded, Bound::AtMost)
            }),
            placement: (config.mode == Mode::Reorder).then_some(config.placement),
            group: if config.group_max.is_auto() { BatchSize::Auto } else { group_size(group) },
            group_form: (group > 1).then_some(config.group_form),
            group_retry: (group > 1).then_some(config.group_retry),
            url: ordo_pgtier::connection::redact(&config.session.url),
            settings: settings.iter().cloned().collect(),
        };
        let info = self.common.run_info(PgRun { workload: workload_args.knobs(BindingArg::Fixed), knobs }, theta);
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
                        if config.group_max.is_auto() {
                            "auto".to_owned()
                        } else {
                            config.effective_group_max().to_string()
                        },
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
                info.run.knobs.settings.extend(report.settings.iter().cloned());
                let mut result =
                    RunResult::from_recorder(info, &report.recorder, report.measured_s, workload.procedure_names());
                result.batch_sizes = report.batch_sizes;
                Ok(result)
            }),
        }
    }
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
