//! `ordo bench threads`: the thread-per-worker engine (§5.6).
//!
//! `--protocol` picks the concurrency control, a list sweeps: `silo`, `tictoc`, `no_wait`,
//! `wait_die`, `mvcc_si`, `ssi`, `serial`, and `reorder` (thread-aware batch assignment before
//! execution, over Silo) or `reorder+<protocol>` over another protocol. `serial` always runs
//! one thread, so in a `--threads` sweep it runs once. Reordering's `--batch` is `auto` on
//! tables unless a number fixes it (a list sweeps; other protocols run once); an `auto` run's
//! result carries the sizes chosen over time as `batch_sizes`.
//!
//! Where a run's records live is `--index`: `tree` (the default: the storage engine, tables
//! behind the ordered B+tree, with inserts, deletes and scans) or `array`, an ablation: for the
//! key-value workloads the flat store whose positions are the keys, for table workloads with
//! dense keys the tables behind a dense array index. Every protocol runs on tables, `reorder`
//! included (`--versions` caps the versions an MVCC record keeps). Every result records its
//! index as `config.index`.
//!
//! With `--wal DIR` (and `--durability`, `--epoch-ms`, the checkpoint knobs: see
//! [`super::durability`]) a run on tables logs its commits and acknowledges them once durable;
//! a key-value workload then runs on tables whatever `--index` says, and `--index array` is
//! refused for it.
//!
//! The flags become the engine's own configuration in one place, [`engine_config`]; the runs
//! call `ordo_threads::run` (flat store) and `ordo_threads::tables::driver::run_with` (tables).

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use ordo_harness::{Description, RunResult};
use ordo_threads::config::{BATCH_MAX, VERSIONS_MAX};
use ordo_threads::protocol::WORKERS_MAX;
use ordo_threads::tables::{Index, TableRunSpec, TablesConfig};
use ordo_threads::{Assignment, EngineConfig, ProtocolKind, RunSpec, VERSIONS_DEFAULT};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::durability::{self, DurabilityArg, DurabilityArgs, DurabilityKnobs, HistoryStream};
use super::values::{BatchSize, BatchSizeArg, Pregenerate, not_empty, on_off, within};
use super::workloads::{BindingArg, WorkloadArgs, WorkloadKnobs};
use super::{CommonArgs, Described, Flags, Labelled, Options, Planned, RateMeter, check_sweep_size};

/// `ordo bench threads`: the shared flags and the engine's own.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct ThreadsBench {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub engine: ThreadsArgs,
}

#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Threads engine")]
pub struct ThreadsArgs {
    /// Concurrency control: silo, tictoc, no_wait, wait_die, mvcc_si, ssi, serial (one thread
    /// without concurrency control), reorder (thread-aware batches over silo) or
    /// reorder+<protocol>; a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "silo")]
    pub protocol: Vec<ThreadsProtocol>,
    /// Worker threads, 1..=256; a list sweeps (serial always runs one).
    #[arg(long, value_delimiter = ',', default_value = "2")]
    pub threads: Vec<usize>,
    /// reorder: transactions per batch: auto (the default on tables: tuned while the engine
    /// runs, from 8 per thread, between the threads and 32 per thread) or a number 1..=10000,
    /// at least the threads; a list sweeps. The flat store (--index array) takes numbers only
    /// (default 4 per thread).
    #[arg(long, value_delimiter = ',')]
    pub batch: Vec<BatchSize>,
    /// reorder: how each batch is split over the threads: sticky (the default: what conflicts
    /// with a thread's last share stays on that thread, and shares may be up to half again or
    /// half of even) or even (the paper's: each batch on its own, in equal shares); a list
    /// sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "sticky")]
    pub assignment: Vec<AssignmentArg>,
    /// mvcc_si, ssi: versions kept per record, 2..=64.
    #[arg(long, default_value_t = VERSIONS_DEFAULT)]
    pub versions: usize,
    /// Prefetch each transaction's footprint when it starts (on/off; a list sweeps). Off by
    /// default: no protocol's paper does it.
    #[arg(long, value_delimiter = ',', default_value = "off", value_parser = super::values::on_off_parser())]
    pub prefetch: Vec<bool>,
    /// Transactions each worker draws before the clock starts and then replays in a cycle, so
    /// that drawing keys (exact Zipf) is not part of what is measured, as DBx1000 does; or
    /// `off` to draw each transaction when it is needed. 1..=16777216; only for workloads that
    /// depend on nothing but the random stream (micro, smallbank, ycsb, and YCSB A, B, C and
    /// F): the others always draw as they go.
    #[arg(long, default_value = "262144")]
    pub pregenerate: Pregenerate,
    /// Where records live: `tree` (the default: tables behind the ordered B+tree, every
    /// protocol, inserts, deletes and scans) or `array` (an ablation: the flat store whose
    /// positions are the keys, for micro, smallbank and ycsb; `--prefetch` needs it).
    #[arg(long, value_enum)]
    pub index: Option<IndexArg>,
    /// The pipeline's and pg engine's `--mode`, refused here with a pointer to --protocol.
    #[arg(long, hide = true, num_args = 1, value_delimiter = ',')]
    pub mode: Vec<String>,
    #[command(flatten)]
    pub durability: DurabilityArgs,
}

impl Default for ThreadsArgs {
    fn default() -> Self {
        super::defaults()
    }
}

impl Default for ThreadsBench {
    fn default() -> Self {
        super::defaults()
    }
}

/// One `--protocol` value: a protocol, and whether thread-aware reordering runs in front of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadsProtocol {
    pub protocol: ProtocolKind,
    pub reorder: bool,
}

/// Every `--protocol` name: (name, protocol, reorder). `reorder` alone is reordering over Silo.
const PROTOCOL_NAMES: [(&str, ProtocolKind, bool); 13] = [
    ("silo", ProtocolKind::Silo, false),
    ("tictoc", ProtocolKind::TicToc, false),
    ("no_wait", ProtocolKind::NoWait, false),
    ("wait_die", ProtocolKind::WaitDie, false),
    ("mvcc_si", ProtocolKind::MvccSi, false),
    ("ssi", ProtocolKind::Ssi, false),
    ("serial", ProtocolKind::Serial, false),
    ("reorder", ProtocolKind::Silo, true),
    ("reorder+tictoc", ProtocolKind::TicToc, true),
    ("reorder+no_wait", ProtocolKind::NoWait, true),
    ("reorder+wait_die", ProtocolKind::WaitDie, true),
    ("reorder+mvcc_si", ProtocolKind::MvccSi, true),
    ("reorder+ssi", ProtocolKind::Ssi, true),
];

const PROTOCOLS: [ThreadsProtocol; 13] = {
    let mut all = [ThreadsProtocol { protocol: ProtocolKind::Silo, reorder: false }; 13];
    let mut i = 0;
    while i < PROTOCOL_NAMES.len() {
        all[i] = ThreadsProtocol { protocol: PROTOCOL_NAMES[i].1, reorder: PROTOCOL_NAMES[i].2 };
        i += 1;
    }
    all
};

impl ThreadsProtocol {
    pub const SILO: ThreadsProtocol = ThreadsProtocol { protocol: ProtocolKind::Silo, reorder: false };

    /// The name results carry as their mode: the protocol, `reorder` or `reorder+<protocol>`.
    pub fn name(self) -> &'static str {
        PROTOCOL_NAMES
            .iter()
            .find(|&&(_, protocol, reorder)| protocol == self.protocol && reorder == self.reorder)
            .map_or("reorder+serial", |&(name, _, _)| name)
    }
}

impl ValueEnum for ThreadsProtocol {
    fn value_variants<'a>() -> &'a [Self] {
        &PROTOCOLS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.name());
        Some(if *self == (ThreadsProtocol { protocol: ProtocolKind::Silo, reorder: true }) {
            value.alias("reorder+silo")
        } else {
            value
        })
    }
}

/// `--index`: where a run's records live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IndexArg {
    /// Tables behind the ordered B+tree (the storage engine).
    Tree,
    /// The flat store: keys are positions.
    Array,
}

/// `--assignment`: how reorder splits a batch over the threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AssignmentArg {
    /// Conflict clusters stay on their thread from batch to batch.
    Sticky,
    /// Each batch on its own, in equal shares (the paper's).
    Even,
}

impl From<AssignmentArg> for Assignment {
    fn from(assignment: AssignmentArg) -> Assignment {
        match assignment {
            AssignmentArg::Sticky => Assignment::Sticky,
            AssignmentArg::Even => Assignment::Even,
        }
    }
}

impl From<IndexArg> for Index {
    fn from(index: IndexArg) -> Index {
        match index {
            IndexArg::Tree => Index::Tree,
            IndexArg::Array => Index::Array,
        }
    }
}

/// What a threads-engine run was: the workload and the engine's knobs. In results:
/// `engine: "threads"`, `mode` (the protocol's name), and under `config` the workload's knobs
/// and `protocol`, `reorder`, `threads`, `index`, and where they apply `payload_bytes`,
/// `prefetch`, `pregenerate`, `batch`, `assignment`, `versions`, `epoch_ms`, `analytic_range`, `durability` (on tables),
/// `wal`, `checkpoint_ms` and `checkpoint_log_mib` (with a write-ahead log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "Description", try_from = "Description")]
pub struct ThreadsRun {
    pub workload: WorkloadKnobs,
    pub knobs: ThreadsKnobs,
}

impl Described for ThreadsRun {
    const ENGINE: &'static str = "threads";
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThreadsKnobs {
    pub protocol: ThreadsProtocol,
    /// Threads that ran.
    pub threads: usize,
    pub index: IndexArg,
    /// Inline payload per record (not for TPC-C, whose rows are typed).
    pub payload_bytes: Option<usize>,
    /// Footprint prefetch (flat store only).
    pub prefetch: Option<bool>,
    /// Transactions each worker drew before the run and replayed (`None`: drawn as needed,
    /// and in results older than the choice).
    pub pregenerate: Option<usize>,
    /// Reorder batch, `auto` or a number (reordering only).
    pub batch: Option<BatchSize>,
    /// How reorder batches are split (reordering only; `None` in results older than the
    /// choice, which split evenly).
    pub assignment: Option<AssignmentArg>,
    /// Versions per record (`mvcc_si` and `ssi` only).
    pub versions: Option<usize>,
    /// Epoch period (tables only).
    pub epoch_ms: Option<u64>,
    /// The hybrid's contention degree (tpcc-hybrid only).
    pub analytic_range: Option<f64>,
    /// The write-ahead log (tables only).
    pub log: DurabilityKnobs,
}

#[derive(Serialize, Deserialize)]
struct ThreadsWire {
    protocol: String,
    reorder: bool,
    threads: usize,
    /// Results from before the engine had tables ran on the flat store and do not say so.
    #[serde(default = "flat_store")]
    index: IndexArg,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    payload_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    prefetch: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pregenerate: Option<usize>,
    /// `"auto"` or a number.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    batch: Option<BatchSize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    assignment: Option<AssignmentArg>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    versions: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    epoch_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    analytic_range: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    durability: Option<DurabilityArg>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    wal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    checkpoint_ms: Option<u64>,
    /// A number of MiB, or `"unbounded"`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    checkpoint_log_mib: Option<Value>,
}

fn flat_store() -> IndexArg {
    IndexArg::Array
}

impl From<ThreadsRun> for Description {
    fn from(run: ThreadsRun) -> Description {
        let k = &run.knobs;
        let wire = ThreadsWire {
            protocol: k.protocol.protocol.name().into(),
            reorder: k.protocol.reorder,
            threads: k.threads,
            index: k.index,
            payload_bytes: k.payload_bytes,
            prefetch: k.prefetch,
            pregenerate: k.pregenerate,
            batch: k.batch,
            assignment: k.assignment,
            versions: k.versions,
            epoch_ms: k.epoch_ms,
            analytic_range: k.analytic_range,
            durability: k.log.durability,
            wal: k.log.wal.as_ref().map(|dir| dir.display().to_string()),
            checkpoint_ms: k.log.checkpoint_ms,
            checkpoint_log_mib: k.log.checkpoint_log_mib.map(durability::bound_to_json),
        };
        super::description(ThreadsRun::ENGINE, &run.workload, k.protocol.name(), &wire)
    }
}

impl TryFrom<Description> for ThreadsRun {
    type Error = anyhow::Error;
    fn try_from(described: Description) -> Result<ThreadsRun> {
        let (workload, wire, mode) = super::read_description::<ThreadsWire>(ThreadsRun::ENGINE, described)?;
        let protocol = ThreadsProtocol { protocol: wire.protocol.parse()?, reorder: wire.reorder };
        if protocol.name() != mode {
            bail!("mode {mode} does not match protocol {} (reorder {})", wire.protocol, wire.reorder);
        }
        let knobs = ThreadsKnobs {
            protocol,
            threads: wire.threads,
            index: wire.index,
            payload_bytes: wire.payload_bytes,
            prefetch: wire.prefetch,
            pregenerate: wire.pregenerate,
            batch: wire.batch,
            assignment: wire.assignment,
            versions: wire.versions,
            epoch_ms: wire.epoch_ms,
            analytic_range: wire.analytic_range,
            log: DurabilityKnobs {
                durability: wire.durability,
                wal: wire.wal.map(std::path::PathBuf::from),
                checkpoint_ms: wire.checkpoint_ms,
                checkpoint_log_mib: wire.checkpoint_log_mib.as_ref().map(durability::bound_from_json).transpose()?,
            },
        };
        Ok(ThreadsRun { workload, knobs })
    }
}

/// The engine's configuration for one point, from the flags: the flat store's
/// [`EngineConfig`], or with an index the tables' [`TablesConfig`].
#[derive(Debug, Clone, PartialEq)]
pub enum EngineChoice {
    Flat(EngineConfig),
    Tables(TablesConfig),
}

/// One point of a threads sweep, before it becomes the engine's configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub protocol: ThreadsProtocol,
    pub threads: usize,
    pub prefetch: bool,
    /// `Some`: on tables, behind this index.
    pub index: Option<Index>,
    /// The reorder batch (`None`: the engine's default, `auto` on tables, 4 per thread on the
    /// flat store).
    pub batch: Option<BatchSize>,
    /// How reorder batches are split (`None`: the default, sticky).
    pub assignment: Option<AssignmentArg>,
}

/// The one place the command line's flags become the thread engine's configuration.
pub fn engine_config(args: &ThreadsArgs, workload: &WorkloadArgs, point: Point) -> Result<EngineChoice> {
    match point.index {
        None => {
            let batch = match point.batch {
                Some(batch) if batch.is_auto() => return Err(flat_store_auto()),
                Some(batch) => Some(batch.fixed_only("--batch", BATCH_MAX)?),
                None => None,
            };
            let config = EngineConfig {
                protocol: point.protocol.protocol,
                reorder: point.protocol.reorder,
                threads: point.threads,
                // The engine's own default (4 per thread) when not given.
                batch: batch.unwrap_or(0),
                assignment: point.assignment.map_or_else(Assignment::default, Into::into),
                payload_bytes: workload.payload_bytes,
                versions: args.versions,
                prefetch: point.prefetch,
                pregenerate: args.pregenerate.0,
            };
            config.validate().map_err(|e| anyhow!("{e}"))?;
            Ok(EngineChoice::Flat(config))
        }
        Some(index) => {
            let mut config = TablesConfig {
                protocol: point.protocol.protocol,
                reorder: point.protocol.reorder,
                batch: point.batch.unwrap_or_default(),
                assignment: point.assignment.map_or_else(Assignment::default, Into::into),
                threads: point.threads,
                index,
                versions: args.versions,
                pregenerate: args.pregenerate.0,
                ..TablesConfig::default()
            };
            args.durability.apply(&mut config);
            config.validate().map_err(|e| anyhow!("{e}"))?;
            Ok(EngineChoice::Tables(config))
        }
    }
}

/// The flag's value for the engine's assignment.
fn assignment_arg(assignment: Assignment) -> AssignmentArg {
    match assignment {
        Assignment::Sticky => AssignmentArg::Sticky,
        Assignment::Even => AssignmentArg::Even,
    }
}

/// Why `--batch auto` is refused on the flat store.
fn flat_store_auto() -> anyhow::Error {
    anyhow!(
        "--batch auto: the flat store (--index array) runs fixed reorder batches; give a number of transactions, or \
         use --index tree, where auto batches are tuned"
    )
}

/// Share of the machine's memory a store may take before a run is refused.
const MEMORY_SHARE_MAX: f64 = 0.75;

/// The machine's memory in bytes (`MemTotal`), where the system says.
fn machine_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

/// Memory one TPC-C warehouse takes on tables at the default scale (measured: 147 MB of
/// resident memory per warehouse added, 1 against 4 warehouses; rounded up).
const TPCC_WAREHOUSE_BYTES: u64 = 160 << 20;
/// Memory a key-value record takes behind the ordered index, as a multiple of its flat-store
/// record (measured: 271 against 128 bytes per 100-byte record, 1M ycsb records; rounded up).
const TREE_RECORD_FACTOR: f64 = 2.5;

/// Bytes of one cache-line-padded flat-store record with `payload_bytes` of payload, `versions`
/// of them under MVCC (header words: lock or timestamps, value, version).
fn record_bytes(payload_bytes: usize, versions: Option<usize>) -> u64 {
    const WORD_BYTES: u64 = 8;
    const LINE_WORDS: u64 = 8;
    let payload_words = ordo_threads::store::payload_words(payload_bytes) as u64;
    let words = match versions {
        Some(versions) => versions as u64 * (6 + payload_words) + 1,
        None => 3 + payload_words,
    };
    words.next_multiple_of(LINE_WORDS) * WORD_BYTES
}

/// Refuses a database that would not fit in this machine's memory (`what` names it, `advice`
/// says which flags shrink it).
fn check_fits(what: &str, bytes: u64, advice: &str) -> Result<()> {
    if let Some(memory) = machine_memory_bytes()
        && bytes as f64 > MEMORY_SHARE_MAX * memory as f64
    {
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        bail!(
            "{what} would take about {:.1} GiB, more than {:.0}% of this machine's {:.1} GiB; {advice}",
            gib(bytes),
            100.0 * MEMORY_SHARE_MAX,
            gib(memory)
        );
    }
    Ok(())
}

/// Refuses a flat store that would not fit: `keys` records of the store `config` builds.
fn check_store_fits(config: &EngineConfig, keys: u64) -> Result<()> {
    let mvcc = matches!(config.protocol, ProtocolKind::MvccSi | ProtocolKind::Ssi);
    let record = record_bytes(config.payload_bytes, mvcc.then_some(config.versions));
    check_fits(
        &format!("{}: the store ({keys} records of {record} bytes)", config.label()),
        keys.saturating_mul(record),
        "use fewer --records or --keys, fewer --payload-bytes or fewer --versions",
    )
}

impl ThreadsBench {
    /// Checks every flag's range before anything runs.
    pub fn validate(&self) -> Result<()> {
        self.common.validate()?;
        let t = &self.engine;
        if !t.mode.is_empty() {
            bail!(
                "--mode is for the pipeline and pg engines; the threads engine takes --protocol (e.g. --protocol \
                 silo,reorder)"
            );
        }
        not_empty("--protocol", &t.protocol)?;
        not_empty("--threads", &t.threads)?;
        not_empty("--prefetch", &t.prefetch)?;
        not_empty("--assignment", &t.assignment)?;
        within("--threads", t.threads.iter().copied(), 1, WORKERS_MAX)?;
        within("--versions", [t.versions], 2, VERSIONS_MAX)?;
        for &batch in &t.batch {
            batch.within("--batch", BATCH_MAX)?;
        }
        if self.index().is_none() && t.batch.iter().any(|batch| batch.is_auto()) {
            return Err(flat_store_auto());
        }
        let log = &t.durability.log;
        if log.logs() && !self.common.workload.needs_tables() && t.index == Some(IndexArg::Array) {
            bail!("--wal runs on tables, not the flat store of --index array: use --index tree (the default)");
        }
        t.durability.validate(self.index().is_none())?;
        let w = &self.common.workload;
        check_sweep_size(&[
            ("--theta", self.common.theta.len()),
            ("--protocol", t.protocol.len()),
            ("--threads", t.threads.len()),
            ("--batch", t.batch.len()),
            ("--assignment", t.assignment.len()),
            ("--prefetch", t.prefetch.len()),
            ("--binding", if w.is_tpcc() { w.binding.len() } else { 1 }),
            ("--analytic-range", w.analytic_ranges().len()),
        ])
    }

    /// Validates, checks the output files, plans and runs the sweep.
    pub fn sweep(&self) -> Result<Vec<Labelled<ThreadsRun>>> {
        self.validate()?;
        super::check_outputs(&self.common)?;
        let planned = self.plan()?;
        super::execute(&self.common, &planned)
    }

    /// The arguments as a command line (`--flag=value` for every flag off its default).
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Flags(self.common.flags());
        let (t, d) = (&self.engine, ThreadsArgs::default());
        flags.named("--protocol", &t.protocol, &d.protocol);
        flags.list("--threads", &t.threads, &d.threads);
        flags.list("--batch", &t.batch, &d.batch);
        flags.named("--assignment", &t.assignment, &d.assignment);
        flags.one("--versions", &t.versions, &d.versions);
        flags.one("--pregenerate", &t.pregenerate, &d.pregenerate);
        if t.prefetch != d.prefetch {
            let shown: Vec<&str> = t.prefetch.iter().map(|&on| on_off(on)).collect();
            flags.0.push(format!("--prefetch={}", shown.join(",")));
        }
        if let Some(index) = &t.index {
            flags.0.push(format!("--index={}", super::value_name(index)));
        }
        t.durability.flags(&mut flags);
        flags.0
    }

    /// The `--index` of a run: whether it runs on tables (the storage engine) and with which index.
    fn index(&self) -> Option<Index> {
        // The log runs on tables.
        let tables = self.common.workload.needs_tables() || self.engine.durability.log.logs();
        match self.engine.index {
            None | Some(IndexArg::Tree) => Some(Index::Tree),
            Some(IndexArg::Array) if !tables => None,
            Some(IndexArg::Array) => Some(Index::Array),
        }
    }

    /// One planned run per distinct configuration of the sweep. Assumes [`Self::validate`].
    pub fn plan(&self) -> Result<Vec<Planned<ThreadsRun>>> {
        if let Some(index) = self.index() {
            return self.plan_tables(index);
        }
        let (t, common) = (&self.engine, &self.common);
        let mut planned = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &theta in &common.theta {
            let workload = common.workload.build(theta, common.seed)?;
            for &protocol in &t.protocol {
                for &threads in &t.threads {
                    for (&prefetch, (batch, assignment)) in
                        t.prefetch.iter().flat_map(|p| self.batches(protocol).into_iter().map(move |b| (p, b)))
                    {
                        let point = Point { protocol, threads, prefetch, index: None, batch, assignment };
                        let EngineChoice::Flat(mut config) = engine_config(t, &common.workload, point)? else {
                            unreachable!("a point without an index runs on the flat store");
                        };
                        // As on tables: results say pools only where the engine replays them.
                        config.pregenerate = config.pregenerate.filter(|_| workload.replayable());
                        check_store_fits(&config, workload.key_count())?;
                        let key =
                            (theta.to_bits(), config.label(), config.effective_threads(), prefetch, batch, assignment);
                        if !seen.insert(key) {
                            continue;
                        }
                        let mut label =
                            vec![("protocol".to_owned(), config.label()), ("theta".to_owned(), format!("{theta}"))];
                        if t.threads.len() > 1 {
                            label.push(("threads".into(), config.effective_threads().to_string()));
                        }
                        if t.prefetch.len() > 1 {
                            label.push(("prefetch".into(), on_off(prefetch).into()));
                        }
                        label.extend(self.batch_labels(batch, assignment));
                        planned.push(self.planned_run(theta, protocol, config, label));
                    }
                }
            }
        }
        Ok(planned)
    }

    /// The `--batch` and `--assignment` values a protocol runs with: each pair of the lists for
    /// reordering (no `--batch`: the engine's default), once with neither (nothing to batch)
    /// otherwise.
    fn batches(&self, protocol: ThreadsProtocol) -> Vec<(Option<BatchSize>, Option<AssignmentArg>)> {
        if !protocol.reorder {
            return vec![(None, None)];
        }
        let batches: Vec<Option<BatchSize>> = if self.engine.batch.is_empty() {
            vec![None]
        } else {
            self.engine.batch.iter().copied().map(Some).collect()
        };
        batches
            .into_iter()
            .flat_map(|batch| self.engine.assignment.iter().map(move |&assignment| (batch, Some(assignment))))
            .collect()
    }

    /// Labels for the reorder knobs a sweep varies.
    fn batch_labels(&self, batch: Option<BatchSize>, assignment: Option<AssignmentArg>) -> Vec<(String, String)> {
        let mut label = Vec::new();
        if self.engine.batch.len() > 1 {
            label.push(("batch".into(), batch.map_or_else(|| "-".to_owned(), |b| b.to_string())));
        }
        if self.engine.assignment.len() > 1 {
            label.push(("assignment".into(), assignment.map_or_else(|| "-".to_owned(), |a| super::value_name(&a))));
        }
        label
    }

    fn planned_run(
        &self,
        theta: f64,
        protocol: ThreadsProtocol,
        config: EngineConfig,
        label: Vec<(String, String)>,
    ) -> Planned<ThreadsRun> {
        let mvcc = matches!(config.protocol, ProtocolKind::MvccSi | ProtocolKind::Ssi);
        let knobs = ThreadsKnobs {
            protocol,
            threads: config.effective_threads(),
            index: IndexArg::Array,
            payload_bytes: Some(config.payload_bytes),
            prefetch: Some(config.prefetch),
            pregenerate: config.pregenerate,
            batch: config.reorder.then(|| BatchSize::of(config.effective_batch() as u32)),
            assignment: config.reorder.then(|| assignment_arg(config.assignment)),
            versions: mvcc.then_some(config.versions),
            epoch_ms: None,
            analytic_range: None,
            log: DurabilityKnobs::default(),
        };
        let run = ThreadsRun { workload: self.common.workload.knobs(BindingArg::Fixed), knobs };
        let info = self.common.run_info(run, theta);
        let workload_args = self.common.workload.clone();
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
                    record_history: options.history.is_some() || options.verify,
                };
                let meter = RateMeter::new(bar);
                let report =
                    ordo_threads::run(&config, &workload, &spec, |elapsed_s, commits| meter.update(elapsed_s, commits))
                        .map_err(|e| anyhow!("{e}"))?;
                bar.suspend(|| {
                    eprintln!(
                        "{}: loaded {} keys in {:.2} s on {} thread(s)",
                        config.label(),
                        workload.key_count(),
                        report.load_s,
                        report.threads
                    );
                });
                if let Some(path) = &options.history {
                    super::write_history(path, report.history.iter().cloned())?;
                }
                if options.verify {
                    let (checked, isolation) = verify_history(config.protocol, &report.history)?;
                    if let Some((initial, total)) = report.conserved
                        && initial != total
                    {
                        bail!("the conserved total changed from {initial} to {total}");
                    }
                    bar.suspend(|| {
                        eprintln!(
                            "verified: {} committed transactions {isolation} ({} dependency edges){}",
                            checked.transactions,
                            checked.edges(),
                            if report.conserved.is_some() { "; conserved total exact" } else { "" }
                        );
                    });
                }
                let mut info = info.clone();
                info.seed = seed;
                Ok(RunResult::from_recorder(info, &report.recorder, report.measured_s, workload.procedure_names()))
            }),
        }
    }

    /// The runs of a table sweep (TPC-C, or a key-value workload with `--index tree`): Silo
    /// over the storage engine, one run per thread count, binding and (tpcc-hybrid) contention
    /// degree.
    fn plan_tables(&self, index: Index) -> Result<Vec<Planned<ThreadsRun>>> {
        let (t, common) = (&self.engine, &self.common);
        if t.prefetch.iter().any(|&on| on) {
            bail!("--prefetch is for the flat store: add --index array");
        }
        let tpcc = common.workload.is_tpcc();
        let thetas: Vec<f64> = if tpcc {
            if common.theta.len() > 1 {
                bail!("{} has no Zipf skew: give no --theta list", common.workload.name().name());
            }
            vec![0.0]
        } else {
            common.theta.clone()
        };
        let bindings = common.workload.bindings();
        if tpcc {
            let warehouses = u64::from(common.workload.warehouses);
            check_fits(
                &format!("TPC-C with {warehouses} warehouses"),
                warehouses.saturating_mul(TPCC_WAREHOUSE_BYTES),
                "use fewer --warehouses",
            )?;
        } else {
            // YCSB's core workloads on tables grow from `--records` by their inserts.
            let keys = match common.workload.ycsb {
                Some(_) => common.workload.records,
                None => common.workload.build(thetas[0], common.seed)?.key_count(),
            };
            let record = record_bytes(common.workload.payload_bytes, None);
            let per_record = if index == Index::Tree { (record as f64 * TREE_RECORD_FACTOR) as u64 } else { record };
            check_fits(
                &format!("the tables ({keys} records behind the {} index)", index.name()),
                keys.saturating_mul(per_record),
                "use fewer --records or --keys, or fewer --payload-bytes",
            )?;
        }
        let mut planned = Vec::new();
        for &theta in &thetas {
            for range in common.workload.analytic_ranges() {
                for &binding in &bindings {
                    let replayable =
                        common.workload.build_tables(theta, common.seed, binding, range.unwrap_or(0.0))?.replayable();
                    let points = t.threads.iter().flat_map(|&threads| {
                        t.protocol.iter().flat_map(move |&protocol| {
                            self.batches(protocol).into_iter().map(move |batch| (threads, protocol, batch))
                        })
                    });
                    for (threads, protocol, (batch, assignment)) in points {
                        if protocol.protocol == ProtocolKind::Serial && threads != t.threads[0] {
                            continue; // serial runs one thread whatever the sweep says
                        }
                        let point = Point { protocol, threads, prefetch: false, index: Some(index), batch, assignment };
                        let EngineChoice::Tables(mut config) = engine_config(t, &common.workload, point)? else {
                            unreachable!("a point with an index runs on tables");
                        };
                        // Results say whether the run replayed pools: not for workloads that
                        // draw as they go.
                        config.pregenerate = config.pregenerate.filter(|_| replayable);
                        let mut label = vec![("protocol".to_owned(), config.label())];
                        if !tpcc {
                            label.push(("theta".into(), format!("{theta}")));
                        }
                        if bindings.len() > 1 {
                            label.push(("binding".into(), super::value_name(&binding)));
                        }
                        if let Some(range) = range.filter(|_| common.workload.analytic_range.len() > 1) {
                            label.push(("analytic_range".into(), format!("{range}")));
                        }
                        if t.threads.len() > 1 {
                            label.push(("threads".into(), threads.to_string()));
                        }
                        label.extend(self.batch_labels(batch, assignment));
                        planned.push(self.planned_table_run(theta, binding, range, config, label));
                    }
                }
            }
        }
        t.durability.log.check_verify(common.verify, common.runs, planned.len())?;
        Ok(planned)
    }

    fn planned_table_run(
        &self,
        theta: f64,
        binding: BindingArg,
        analytic_range: Option<f64>,
        config: TablesConfig,
        label: Vec<(String, String)>,
    ) -> Planned<ThreadsRun> {
        let workload_args = self.common.workload.clone();
        let index = if config.index == Index::Tree { IndexArg::Tree } else { IndexArg::Array };
        let knobs = ThreadsKnobs {
            protocol: ThreadsProtocol { protocol: config.protocol, reorder: config.reorder },
            threads: config.effective_threads(),
            index,
            payload_bytes: (!workload_args.is_tpcc()).then_some(workload_args.payload_bytes),
            prefetch: None,
            pregenerate: config.pregenerate,
            batch: config.reorder.then_some(config.batch),
            assignment: config.reorder.then(|| assignment_arg(config.assignment)),
            versions: matches!(config.protocol, ProtocolKind::MvccSi | ProtocolKind::Ssi).then_some(config.versions),
            epoch_ms: Some(config.epoch_ms),
            analytic_range,
            log: DurabilityArgs::knobs(&config),
        };
        let run = ThreadsRun { workload: workload_args.knobs(binding), knobs };
        let info = self.common.run_info(run, theta);
        let tpcc = workload_args.is_tpcc();
        let base_seed = self.common.seed;
        Planned {
            info: info.clone(),
            label,
            run: Box::new(move |options: &Options, seed: u64, bar: &ProgressBar| {
                // With a log, every run continues the database the directory holds: its initial
                // rows come from the seed that created it, not this run's.
                let data_seed = durability::data_seed(&config, &workload_args, base_seed, seed)?;
                let workload = workload_args.build_tables(theta, data_seed, binding, analytic_range.unwrap_or(0.0))?;
                let spec = TableRunSpec {
                    seed,
                    warmup: Duration::from_secs_f64(options.warmup_s),
                    duration: Duration::from_secs_f64(options.duration_s),
                    cooldown: Duration::from_secs_f64(options.cooldown_s),
                    record_history: options.history.is_some() || options.verify,
                };
                let meter = RateMeter::new(bar);
                // With a log, the history is appended as commits are acknowledged.
                let mut stream = match &options.history {
                    Some(path) if config.wal.is_some() => Some(HistoryStream::create(path, options.verify)?),
                    _ => None,
                };
                let mut append = |entries: &[ordo_history::HistoryEntry]| match &mut stream {
                    Some(stream) => stream.append(entries),
                    None => Ok(()),
                };
                let hooks = ordo_threads::tables::driver::RunHooks {
                    dir: None,
                    on_acknowledged: config.wal.is_some().then_some(&mut append as &mut _),
                };
                let mut report = ordo_threads::tables::driver::run_with(
                    &config,
                    &workload,
                    &spec,
                    |elapsed_s, commits| meter.update(elapsed_s, commits),
                    hooks,
                )
                .map_err(|e| anyhow!("{e}"))?;
                if let Some(stream) = stream {
                    report.history = stream.into_kept();
                }
                if let Some(line) = durability::summary(&report) {
                    bar.suspend(|| eprintln!("write-ahead log: {line}"));
                }
                let consistency = report.consistency.as_ref().map_err(|e| anyhow!("after the run: {e}"))?;
                bar.suspend(|| {
                    eprintln!(
                        "{} on tables ({} index): loaded in {:.2} s; after the run {} hold",
                        config.label(),
                        config.index.name(),
                        report.load_s,
                        consistency.checked.join(", ")
                    );
                });
                if let Some(path) = options.history.as_ref().filter(|_| config.wal.is_none()) {
                    super::write_history(path, report.history.iter().cloned())?;
                }
                if options.verify {
                    let (checked, isolation) = verify_history(config.protocol, &report.history)?;
                    bar.suspend(|| {
                        eprintln!(
                            "verified: {} committed transactions {isolation} ({} dependency edges; {} inserts, {} \
                             deletes, {} scans of {} rows, {} absences seen by scans and absent reads)",
                            checked.transactions,
                            checked.edges(),
                            checked.inserts,
                            checked.deletes,
                            checked.scans,
                            checked.scanned_rows,
                            checked.scanned_absences + checked.ambiguous_absences
                        );
                    });
                }
                let mut info = info.clone();
                info.seed = seed;
                let names = workload.procedure_names();
                let mut result = RunResult::from_recorder(info, &report.recorder, report.measured_s, names);
                result.aborts_by_procedure = report
                    .aborts_by_procedure
                    .iter()
                    .enumerate()
                    .filter(|&(_, &count)| count > 0)
                    .map(|(i, &count)| {
                        (names.get(i).map_or_else(|| format!("procedure_{i}"), |n| (*n).to_owned()), count as f64)
                    })
                    .collect();
                if tpcc && report.measured_s > 0.0 {
                    let new_orders = result.commits_by_procedure.get("new_order").copied().unwrap_or(0.0);
                    result.tpmc = Some(new_orders * 60.0 / report.measured_s);
                }
                result.batch_sizes = report.batch_sizes;
                Ok(result)
            }),
        }
    }
}

/// Checks a run's history against the isolation `protocol` promises: serializability, or
/// snapshot isolation for `mvcc_si`. Returns the checker's report and the isolation's name.
fn verify_history(
    protocol: ProtocolKind,
    history: &[ordo_history::HistoryEntry],
) -> Result<(ordo_history::CheckReport, &'static str)> {
    let isolation = protocol.isolation();
    let report = protocol.check_history(history).map_err(|v| anyhow!("{protocol}: not {isolation}: {v}"))?;
    Ok((report, isolation))
}
