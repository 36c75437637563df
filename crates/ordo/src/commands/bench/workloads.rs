//! Building a workload from the command line, and recording which one a run used.
//!
//! [`WorkloadArgs`] are the flags every engine shares; [`WorkloadKnobs`] is what a result
//! records of them (only the knobs of the workload that ran, under the keys result files have
//! always used: `config.keys`, `config.reads`, `config.mix`, `config.records`, ...).

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use ordo_workload::smallbank::{CONSERVED_MIX, STANDARD_MIX};
use ordo_workload::tpcc::{Binding, HybridConfig, Tpcc, TpccConfig, WAREHOUSES_MAX, parse_mix};
use ordo_workload::{
    KvTables, Micro, MicroConfig, SmallBank, SmallBankConfig, TableWorkload, Workload, WriteKind, Ycsb, YcsbConfig,
    YcsbCore, YcsbMix,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::values::within;

/// The workloads, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum WorkloadName {
    /// The paper's micro-benchmark.
    Micro,
    Smallbank,
    Ycsb,
    /// TPC-C (threads engine only).
    Tpcc,
    /// TPC-C plus seed 003's analytic transaction (threads engine only).
    TpccHybrid,
}

impl WorkloadName {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadName::Micro => "micro",
            WorkloadName::Smallbank => "smallbank",
            WorkloadName::Ycsb => "ycsb",
            WorkloadName::Tpcc => "tpcc",
            WorkloadName::TpccHybrid => "tpcc-hybrid",
        }
    }
}

/// TPC-C's binding of workers to warehouses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BindingArg {
    /// Each worker has a home warehouse.
    Fixed,
    /// Each transaction's warehouse is drawn anew (seed 003's TPCC-random).
    Random,
}

impl From<BindingArg> for Binding {
    fn from(binding: BindingArg) -> Binding {
        match binding {
            BindingArg::Fixed => Binding::Fixed,
            BindingArg::Random => Binding::Random,
        }
    }
}

/// What YCSB's non-read requests do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteKindArg {
    /// Read-modify-write.
    Rmw,
    /// Blind write.
    Blind,
}

impl From<WriteKindArg> for WriteKind {
    fn from(kind: WriteKindArg) -> WriteKind {
        match kind {
            WriteKindArg::Rmw => WriteKind::Rmw,
            WriteKindArg::Blind => WriteKind::Blind,
        }
    }
}

/// YCSB's core workloads by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum YcsbCoreArg {
    /// 50% reads, 50% updates.
    A,
    /// 95% reads, 5% updates.
    B,
    /// Read-only.
    C,
    /// Read-latest, 5% inserts (tables).
    D,
    /// 95% short scans, 5% inserts (tables).
    E,
    /// Read-modify-write.
    F,
}

impl From<YcsbCoreArg> for YcsbMix {
    fn from(core: YcsbCoreArg) -> YcsbMix {
        match core {
            YcsbCoreArg::A => YcsbMix::A,
            YcsbCoreArg::B => YcsbMix::B,
            YcsbCoreArg::C => YcsbMix::C,
            YcsbCoreArg::D => YcsbMix::D,
            YcsbCoreArg::E => YcsbMix::E,
            YcsbCoreArg::F => YcsbMix::F,
        }
    }
}

/// Most reads or writes of one micro-benchmark transaction (a transaction touches at most 64
/// keys).
pub const MICRO_OPS_MAX: usize = 64;
/// Keys (micro) or customers (smallbank) without `--keys`.
pub const KEYS_DEFAULT: u64 = 100_000;

/// Workload knobs shared by every engine.
#[derive(Debug, Clone, PartialEq, Args)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadArgs {
    /// Workload; default micro (smallbank for the pg engine). tpcc and tpcc-hybrid run on the
    /// threads engine only.
    #[arg(long, value_enum)]
    pub workload: Option<WorkloadName>,
    /// Keys (micro) or customers (smallbank), at most 100000000 (50000000 customers); default
    /// 100000.
    #[arg(long)]
    pub keys: Option<u64>,
    /// micro: reads per transaction, 0..=64.
    #[arg(long, default_value_t = 5)]
    pub reads: usize,
    /// micro: writes per transaction, 0..=64.
    #[arg(long, default_value_t = 5)]
    pub writes: usize,
    /// micro: keys both read and written, at most the reads and at most the writes.
    #[arg(long, default_value_t = 1)]
    pub shared: usize,
    /// smallbank: `standard` (15/15/15/25/15/15), `conserved` (money-moving procedures only)
    /// or six weights for Amalgamate,Balance,DepositChecking,SendPayment,TransactSavings,WriteCheck.
    /// tpcc: `standard` (45/43/4/4/4), names (`new_order,payment`: equal weights) or five
    /// weights for NewOrder,Payment,OrderStatus,Delivery,StockLevel.
    #[arg(long, default_value = "standard")]
    pub mix: String,
    /// tpcc: warehouses, 1..=1023.
    #[arg(long, default_value_t = 1)]
    pub warehouses: u32,
    /// tpcc: `fixed` (each worker has a home warehouse) or `random` (each transaction's
    /// warehouse drawn anew: seed 003's TPCC-random); a list sweeps.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fixed")]
    pub binding: Vec<BindingArg>,
    /// tpcc-hybrid: the fraction of a warehouse's customers the analytic transaction scans
    /// (seed 003's contention degree, 0.01 to 1); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "0.2")]
    pub analytic_range: Vec<f64>,
    /// tpcc-hybrid: the analytic transaction's share of the mix, in [0, 1).
    #[arg(long, default_value_t = 0.2)]
    pub analytic_share: f64,
    /// ycsb: records in the table, at most 100000000.
    #[arg(long, default_value_t = 10_000_000)]
    pub records: u64,
    /// ycsb: requests per transaction, 1..=64.
    #[arg(long, default_value_t = 16)]
    pub ops: usize,
    /// ycsb: probability that a request is a read, in [0, 1].
    #[arg(long, default_value_t = 0.5)]
    pub read_ratio: f64,
    /// ycsb: whether the other requests are read-modify-writes or blind writes.
    #[arg(long, value_enum, default_value = "rmw")]
    pub write_kind: WriteKindArg,
    /// ycsb: one of YCSB's core workloads by name: a (50/50 read/update), b (95/5), c
    /// (read-only), d (read-latest, 5% inserts), e (95% short scans, 5% inserts), f
    /// (read-modify-write); each transaction is `--ops` operations. d and e need tables
    /// (threads engine). Without it, --read-ratio and --write-kind make a custom mix.
    #[arg(long, value_enum)]
    pub ycsb: Option<YcsbCoreArg>,
    /// ycsb: YCSB's scrambled Zipfian (ranks hashed over the table with FNV-1a).
    #[arg(long)]
    pub scrambled: bool,
    /// Payload bytes per record, at most 4096 (threads engine: every workload; copied on each
    /// read and write).
    #[arg(long, default_value_t = 100)]
    pub payload_bytes: usize,
}

impl WorkloadArgs {
    /// The workload: `--workload`, or `default` when not given.
    pub fn name_or(&self, default: WorkloadName) -> WorkloadName {
        self.workload.unwrap_or(default)
    }

    /// The workload's name: `--workload`, or micro when not given.
    pub fn name(&self) -> WorkloadName {
        self.name_or(WorkloadName::Micro)
    }

    /// Checks the knobs every workload shares a bound on, before anything is built.
    pub fn validate(&self) -> Result<()> {
        within("--reads", [self.reads], 0, MICRO_OPS_MAX)?;
        within("--writes", [self.writes], 0, MICRO_OPS_MAX)?;
        within("--shared", [self.shared], 0, MICRO_OPS_MAX)?;
        within("--warehouses", [self.warehouses], 1, WAREHOUSES_MAX)?;
        within("--ops", [self.ops], 1, ordo_workload::ycsb::YCSB_OPS_MAX)?;
        within("--records", [self.records], 1, ordo_workload::KEYS_MAX)?;
        within("--keys", self.keys, 1, ordo_workload::KEYS_MAX)?;
        within("--payload-bytes", [self.payload_bytes], 0, ordo_threads::config::PAYLOAD_BYTES_MAX)?;
        within(
            "--analytic-range",
            self.analytic_range.iter().copied(),
            ordo_workload::tpcc::config::ANALYTIC_RANGE_MIN,
            1.0,
        )?;
        if !(0.0..1.0).contains(&self.analytic_share) {
            bail!("--analytic-share {}: must be at least 0 and below 1", self.analytic_share);
        }
        if !(0.0..=1.0).contains(&self.read_ratio) {
            bail!("--read-ratio {}: must be in [0, 1]", self.read_ratio);
        }
        if self.binding.is_empty() || self.analytic_range.is_empty() {
            bail!("--binding and --analytic-range need at least one value");
        }
        if self.ycsb.is_some() && self.name() != WorkloadName::Ycsb {
            bail!("--ycsb picks a YCSB core workload: give --workload ycsb too");
        }
        Ok(())
    }

    /// Whether the workload needs tables (inserts, deletes, scans, typed rows), which only the
    /// threads engine has.
    pub fn needs_tables(&self) -> bool {
        self.is_tpcc() || matches!(self.ycsb, Some(YcsbCoreArg::D | YcsbCoreArg::E))
    }

    /// Whether the workload is TPC-C (no Zipf skew; warehouses and bindings instead).
    pub fn is_tpcc(&self) -> bool {
        matches!(self.name(), WorkloadName::Tpcc | WorkloadName::TpccHybrid)
    }

    fn ycsb_config(&self, theta: f64) -> YcsbConfig {
        YcsbConfig {
            records: self.records,
            theta,
            ops: self.ops,
            read_ratio: self.read_ratio,
            write_kind: self.write_kind.into(),
            payload_bytes: self.payload_bytes,
            scrambled: self.scrambled,
        }
    }

    /// The workload over tables: TPC-C as itself (with `binding`), a key-value workload
    /// through [`KvTables`] (one table of `[value, payload]` rows). `analytic_range` is the
    /// hybrid's contention degree (ignored otherwise).
    pub fn build_tables(
        &self,
        theta: f64,
        seed: u64,
        binding: BindingArg,
        analytic_range: f64,
    ) -> Result<Arc<dyn TableWorkload>> {
        if let Some(core) = self.ycsb {
            return Ok(Arc::new(YcsbCore::new(core.into(), self.ycsb_config(theta))?));
        }
        if !self.needs_tables() {
            return Ok(Arc::new(KvTables::new(self.build(theta, seed)?, self.payload_bytes)));
        }
        let hybrid = (self.name() == WorkloadName::TpccHybrid)
            .then_some(HybridConfig { analytic_range, analytic_share: self.analytic_share });
        Ok(Arc::new(Tpcc::new(TpccConfig {
            warehouses: self.warehouses,
            binding: binding.into(),
            mix: parse_mix(&self.mix)?,
            hybrid,
            seed,
            ..TpccConfig::default()
        })?))
    }

    /// The contention degrees to sweep: `--analytic-range` for tpcc-hybrid, none otherwise.
    pub fn analytic_ranges(&self) -> Vec<Option<f64>> {
        if self.name() == WorkloadName::TpccHybrid {
            self.analytic_range.iter().map(|&r| Some(r)).collect()
        } else {
            vec![None]
        }
    }

    /// The bindings to sweep: `--binding` for TPC-C, one (unused) otherwise.
    pub fn bindings(&self) -> Vec<BindingArg> {
        if self.is_tpcc() { self.binding.clone() } else { vec![BindingArg::Fixed] }
    }

    /// The key-value workload (micro, smallbank, ycsb and YCSB's core workloads a, b, c, f).
    pub fn build(&self, theta: f64, seed: u64) -> Result<Arc<dyn Workload>> {
        let keys = self.keys.unwrap_or(KEYS_DEFAULT);
        Ok(match self.name() {
            WorkloadName::Micro => Arc::new(Micro::new(MicroConfig {
                keys,
                theta,
                reads: self.reads,
                writes: self.writes,
                shared: self.shared,
            })?),
            WorkloadName::Smallbank => Arc::new(SmallBank::new(SmallBankConfig {
                customers: keys,
                theta,
                mix: smallbank_mix(&self.mix)?,
                seed,
                ..SmallBankConfig::default()
            })?),
            WorkloadName::Ycsb => match self.ycsb {
                Some(core) => YcsbCore::new(core.into(), self.ycsb_config(theta))?.kv_form()?,
                None => Arc::new(Ycsb::new(self.ycsb_config(theta))?),
            },
            WorkloadName::Tpcc | WorkloadName::TpccHybrid => bail!(
                "{}: TPC-C needs tables, inserts, deletes and scans, which this engine does not have (it runs \
                 micro, smallbank and ycsb); run it with --engine threads",
                self.name().name()
            ),
        })
    }

    /// What a result records of the workload (`binding`: the run's, for TPC-C).
    pub fn knobs(&self, binding: BindingArg) -> WorkloadKnobs {
        let keys = self.keys.unwrap_or(KEYS_DEFAULT);
        match self.name() {
            WorkloadName::Micro => {
                WorkloadKnobs::Micro { keys, reads: self.reads, writes: self.writes, shared: self.shared }
            }
            WorkloadName::Smallbank => WorkloadKnobs::Smallbank { keys, mix: self.mix.clone() },
            WorkloadName::Ycsb => WorkloadKnobs::Ycsb(YcsbKnobs {
                ycsb: self.ycsb,
                records: self.records,
                ops: self.ops,
                read_ratio: self.read_ratio,
                write_kind: self.write_kind,
                scrambled: self.scrambled,
                payload_bytes: self.payload_bytes,
            }),
            name @ (WorkloadName::Tpcc | WorkloadName::TpccHybrid) => WorkloadKnobs::Tpcc(TpccKnobs {
                warehouses: self.warehouses,
                binding,
                mix: self.mix.clone(),
                analytic_share: (name == WorkloadName::TpccHybrid).then_some(self.analytic_share),
            }),
        }
    }
}

/// `--mix` of SmallBank: `standard`, `conserved` or six weights.
fn smallbank_mix(text: &str) -> Result<[u32; 6]> {
    Ok(match text {
        "standard" => STANDARD_MIX,
        "conserved" => CONSERVED_MIX,
        weights => {
            let parsed: Vec<u32> = weights
                .split(',')
                .map(|w| w.trim().parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|_| anyhow::anyhow!("--mix `{weights}`: expected standard, conserved or six weights"))?;
            let Ok(mix) = <[u32; 6]>::try_from(parsed) else {
                bail!("--mix `{weights}`: expected six weights (one per procedure)");
            };
            mix
        }
    })
}

/// What a run's result records of its workload: the workload's name (`workload`) and its
/// knobs (under `config`).
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadKnobs {
    Micro {
        keys: u64,
        reads: usize,
        writes: usize,
        shared: usize,
    },
    Smallbank {
        keys: u64,
        mix: String,
    },
    Ycsb(YcsbKnobs),
    /// TPC-C, and with `analytic_share` its hybrid.
    Tpcc(TpccKnobs),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct YcsbKnobs {
    /// The core workload by name, or none for a custom mix.
    pub ycsb: Option<YcsbCoreArg>,
    pub records: u64,
    pub ops: usize,
    pub read_ratio: f64,
    pub write_kind: WriteKindArg,
    pub scrambled: bool,
    pub payload_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpccKnobs {
    pub warehouses: u32,
    pub binding: BindingArg,
    pub mix: String,
    /// The hybrid's analytic share (tpcc-hybrid only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub analytic_share: Option<f64>,
}

#[derive(Serialize, Deserialize)]
struct MicroKnobs {
    keys: u64,
    reads: usize,
    writes: usize,
    shared: usize,
}

#[derive(Serialize, Deserialize)]
struct SmallbankKnobs {
    keys: u64,
    mix: String,
}

impl WorkloadKnobs {
    /// The workload's name, as results record it.
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadKnobs::Micro { .. } => "micro",
            WorkloadKnobs::Smallbank { .. } => "smallbank",
            WorkloadKnobs::Ycsb(_) => "ycsb",
            WorkloadKnobs::Tpcc(TpccKnobs { analytic_share: None, .. }) => "tpcc",
            WorkloadKnobs::Tpcc(TpccKnobs { analytic_share: Some(_), .. }) => "tpcc-hybrid",
        }
    }

    /// The knobs, by the names results use.
    pub fn to_map(&self) -> Map<String, Value> {
        let value = match self {
            &WorkloadKnobs::Micro { keys, reads, writes, shared } => {
                serde_json::to_value(MicroKnobs { keys, reads, writes, shared })
            }
            WorkloadKnobs::Smallbank { keys, mix } => {
                serde_json::to_value(SmallbankKnobs { keys: *keys, mix: mix.clone() })
            }
            WorkloadKnobs::Ycsb(knobs) => serde_json::to_value(knobs),
            WorkloadKnobs::Tpcc(knobs) => serde_json::to_value(knobs),
        };
        match value.expect("workload knobs serialize") {
            Value::Object(map) => map,
            other => unreachable!("workload knobs serialize as an object, not {other}"),
        }
    }

    /// Reads the knobs of workload `name` out of a result's `config` (other keys are left
    /// alone: they are the engine's).
    pub fn from_map(name: &str, config: &Map<String, Value>) -> Result<WorkloadKnobs> {
        let object = Value::Object(config.clone());
        let knobs = match name {
            "micro" => {
                let MicroKnobs { keys, reads, writes, shared } = serde_json::from_value(object)?;
                WorkloadKnobs::Micro { keys, reads, writes, shared }
            }
            "smallbank" => {
                let SmallbankKnobs { keys, mix } = serde_json::from_value(object)?;
                WorkloadKnobs::Smallbank { keys, mix }
            }
            "ycsb" => WorkloadKnobs::Ycsb(serde_json::from_value(object)?),
            "tpcc" | "tpcc-hybrid" => {
                let knobs: TpccKnobs = serde_json::from_value(object)?;
                if knobs.analytic_share.is_some() != (name == "tpcc-hybrid") {
                    bail!("workload {name}: analytic_share belongs to tpcc-hybrid only");
                }
                WorkloadKnobs::Tpcc(knobs)
            }
            other => bail!("unknown workload `{other}`"),
        };
        Ok(knobs)
    }

    /// The keys of [`WorkloadKnobs::to_map`], so an engine can tell its own knobs apart.
    pub fn keys(&self) -> Vec<String> {
        self.to_map().into_iter().map(|(key, _)| key).collect()
    }
}

/// Reads `workload`'s knobs from a result's config, naming the workload on error.
pub fn knobs_of(workload: &str, config: &Map<String, Value>) -> Result<WorkloadKnobs> {
    WorkloadKnobs::from_map(workload, config).with_context(|| format!("the knobs of workload {workload}"))
}
