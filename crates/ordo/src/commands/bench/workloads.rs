//! Building a workload from the command line.

use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;
use ordo_workload::smallbank::{CONSERVED_MIX, STANDARD_MIX};
use ordo_workload::tpcc::{Binding, HybridConfig, Tpcc, TpccConfig, parse_mix};
use ordo_workload::{
    KvTables, Micro, MicroConfig, SmallBank, SmallBankConfig, TableWorkload, Workload, Ycsb, YcsbConfig, YcsbCore,
    YcsbMix,
};

/// Workload knobs shared by every engine.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// Workload: micro (the paper's micro-benchmark), smallbank, ycsb, or (threads engine
    /// only) tpcc and tpcc-hybrid (TPC-C plus seed 003's analytic transaction); default micro
    /// (smallbank for the pg engine).
    #[arg(long)]
    pub workload: Option<String>,
    /// Keys (micro) or customers (smallbank); default 100000.
    #[arg(long)]
    pub keys: Option<u64>,
    /// micro: reads per transaction.
    #[arg(long, default_value_t = 5)]
    pub reads: usize,
    /// micro: writes per transaction.
    #[arg(long, default_value_t = 5)]
    pub writes: usize,
    /// micro: keys both read and written.
    #[arg(long, default_value_t = 1)]
    pub shared: usize,
    /// smallbank: `standard` (15/15/15/25/15/15), `conserved` (money-moving procedures only)
    /// or six weights for Amalgamate,Balance,DepositChecking,SendPayment,TransactSavings,WriteCheck.
    /// tpcc: `standard` (45/43/4/4/4), names (`new_order,payment`: equal weights) or five
    /// weights for NewOrder,Payment,OrderStatus,Delivery,StockLevel.
    #[arg(long, default_value = "standard")]
    pub mix: String,
    /// tpcc: warehouses.
    #[arg(long, default_value_t = 1)]
    pub warehouses: u32,
    /// tpcc: `fixed` (each worker has a home warehouse) or `random` (each transaction's
    /// warehouse drawn anew: seed 003's TPCC-random); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "fixed")]
    pub binding: Vec<String>,
    /// tpcc-hybrid: the fraction of a warehouse's customers the analytic transaction scans
    /// (seed 003's contention degree, 0.01 to 1); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "0.2")]
    pub analytic_range: Vec<f64>,
    /// tpcc-hybrid: the analytic transaction's share of the mix.
    #[arg(long, default_value_t = 0.2)]
    pub analytic_share: f64,
    /// ycsb: records in the table.
    #[arg(long, default_value_t = 10_000_000)]
    pub records: u64,
    /// ycsb: requests per transaction (at most 64).
    #[arg(long, default_value_t = 16)]
    pub ops: usize,
    /// ycsb: probability that a request is a read, in [0, 1].
    #[arg(long, default_value_t = 0.5)]
    pub read_ratio: f64,
    /// ycsb: whether the other requests are read-modify-writes (rmw) or blind writes (blind).
    #[arg(long, default_value = "rmw")]
    pub write_kind: String,
    /// ycsb: one of YCSB's core workloads by name: a (50/50 read/update), b (95/5), c
    /// (read-only), d (read-latest, 5% inserts), e (95% short scans, 5% inserts), f
    /// (read-modify-write); each transaction is `--ops` operations. d and e need tables
    /// (threads engine). Without it, --read-ratio and --write-kind make a custom mix.
    #[arg(long)]
    pub ycsb: Option<String>,
    /// ycsb: YCSB's scrambled Zipfian (ranks hashed over the table with FNV-1a).
    #[arg(long)]
    pub scrambled: bool,
    /// Payload bytes per record (threads engine: every workload; copied on each read and write).
    #[arg(long, default_value_t = 100)]
    pub payload_bytes: usize,
}

pub const KEYS_DEFAULT: u64 = 100_000;

impl WorkloadArgs {
    /// The workload's name: `--workload`, or micro when not given.
    pub fn name(&self) -> &str {
        self.workload.as_deref().unwrap_or("micro")
    }

    /// Whether the workload needs tables (inserts, deletes, scans, typed rows), which only the
    /// threads engine has.
    pub fn needs_tables(&self) -> bool {
        matches!(self.name(), "tpcc" | "tpcc-hybrid")
            || self.ycsb_mix().is_ok_and(|mix| matches!(mix, Some(YcsbMix::D | YcsbMix::E)))
    }

    /// Whether the workload is TPC-C (no Zipf skew; warehouses and bindings instead).
    pub fn is_tpcc(&self) -> bool {
        matches!(self.name(), "tpcc" | "tpcc-hybrid")
    }

    /// `--ycsb`, parsed (it needs `--workload ycsb`).
    fn ycsb_mix(&self) -> Result<Option<YcsbMix>> {
        match &self.ycsb {
            None => Ok(None),
            Some(_) if self.name() != "ycsb" => bail!("--ycsb picks a YCSB core workload: give --workload ycsb too"),
            Some(name) => Ok(Some(name.parse()?)),
        }
    }

    fn ycsb_config(&self, theta: f64) -> Result<YcsbConfig> {
        Ok(YcsbConfig {
            records: self.records,
            theta,
            ops: self.ops,
            read_ratio: self.read_ratio,
            write_kind: self.write_kind.parse()?,
            payload_bytes: self.payload_bytes,
            scrambled: self.scrambled,
        })
    }

    /// The workload over tables: TPC-C as itself, a key-value workload through [`KvTables`]
    /// (one table of `[value, payload]` rows). `analytic_range` is the hybrid's contention
    /// degree (ignored otherwise).
    pub fn build_tables(&self, theta: f64, seed: u64, analytic_range: f64) -> Result<Arc<dyn TableWorkload>> {
        if let Some(mix) = self.ycsb_mix()? {
            return Ok(Arc::new(YcsbCore::new(mix, self.ycsb_config(theta)?)?));
        }
        if !self.needs_tables() {
            return Ok(Arc::new(KvTables::new(self.build(theta, seed)?, self.payload_bytes)));
        }
        let [binding] = self.binding.as_slice() else {
            bail!("one --binding per run (the sweep gives each run its own)");
        };
        let binding: Binding = binding.parse()?;
        let hybrid = (self.name() == "tpcc-hybrid")
            .then_some(HybridConfig { analytic_range, analytic_share: self.analytic_share });
        Ok(Arc::new(Tpcc::new(TpccConfig {
            warehouses: self.warehouses,
            binding,
            mix: parse_mix(&self.mix)?,
            hybrid,
            seed,
            ..TpccConfig::default()
        })?))
    }

    /// The contention degrees to sweep: `--analytic-range` for tpcc-hybrid, none otherwise.
    pub fn analytic_ranges(&self) -> Vec<Option<f64>> {
        if self.name() == "tpcc-hybrid" { self.analytic_range.iter().map(|&r| Some(r)).collect() } else { vec![None] }
    }
}

impl WorkloadArgs {
    pub fn build(&self, theta: f64, seed: u64) -> Result<Arc<dyn Workload>> {
        self.ycsb_mix()?;
        let keys = self.keys.unwrap_or(KEYS_DEFAULT);
        Ok(match self.name() {
            "micro" => Arc::new(Micro::new(MicroConfig {
                keys,
                theta,
                reads: self.reads,
                writes: self.writes,
                shared: self.shared,
            })?),
            "smallbank" => {
                let mix = match self.mix.as_str() {
                    "standard" => STANDARD_MIX,
                    "conserved" => CONSERVED_MIX,
                    weights => {
                        let parsed: Vec<u32> =
                            weights.split(',').map(|w| w.trim().parse::<u32>()).collect::<Result<_, _>>().map_err(
                                |_| anyhow::anyhow!("--mix `{weights}`: expected standard, conserved or six weights"),
                            )?;
                        let Ok(mix) = <[u32; 6]>::try_from(parsed) else {
                            bail!("--mix `{weights}`: expected six weights (one per procedure)");
                        };
                        mix
                    }
                };
                Arc::new(SmallBank::new(SmallBankConfig {
                    customers: keys,
                    theta,
                    mix,
                    seed,
                    ..SmallBankConfig::default()
                })?)
            }
            "ycsb" => match self.ycsb_mix()? {
                Some(mix) => YcsbCore::new(mix, self.ycsb_config(theta)?)?.kv_form()?,
                None => Arc::new(Ycsb::new(self.ycsb_config(theta)?)?),
            },
            "tpcc" | "tpcc-hybrid" => bail!(
                "{}: TPC-C needs tables, inserts, deletes and scans, which this engine does not have (it runs \
                 micro, smallbank and ycsb); run it with --engine threads",
                self.name()
            ),
            other => bail!("unknown workload `{other}`; expected micro, smallbank, ycsb, tpcc or tpcc-hybrid"),
        })
    }

    /// Knobs worth recording with a result.
    pub fn describe(&self) -> Vec<(&'static str, serde_json::Value)> {
        if self.is_tpcc() {
            let mut knobs = vec![
                ("warehouses", self.warehouses.into()),
                ("binding", self.binding.join(",").into()),
                ("mix", self.mix.clone().into()),
            ];
            if self.name() == "tpcc-hybrid" {
                knobs.push(("analytic_share", self.analytic_share.into()));
            }
            return knobs;
        }
        if self.name() == "ycsb" {
            return vec![
                ("ycsb", self.ycsb.clone().map_or(serde_json::Value::Null, serde_json::Value::from)),
                ("records", self.records.into()),
                ("ops", self.ops.into()),
                ("read_ratio", self.read_ratio.into()),
                ("write_kind", self.write_kind.clone().into()),
                ("scrambled", self.scrambled.into()),
                ("payload_bytes", self.payload_bytes.into()),
            ];
        }
        let mut knobs = vec![("keys", self.keys.unwrap_or(KEYS_DEFAULT).into())];
        match self.name() {
            "micro" => {
                knobs.push(("reads", self.reads.into()));
                knobs.push(("writes", self.writes.into()));
                knobs.push(("shared", self.shared.into()));
            }
            "smallbank" => knobs.push(("mix", self.mix.clone().into())),
            _ => {}
        }
        knobs
    }
}
