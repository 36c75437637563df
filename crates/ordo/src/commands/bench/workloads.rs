//! Building a workload from the command line.

use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;
use ordo_workload::smallbank::{CONSERVED_MIX, STANDARD_MIX};
use ordo_workload::{Micro, MicroConfig, SmallBank, SmallBankConfig, Workload, WriteKind, Ycsb, YcsbConfig};

/// Workload knobs shared by every engine.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// Workload: micro (the paper's micro-benchmark), smallbank or ycsb; default micro
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
    #[arg(long, default_value = "standard")]
    pub mix: String,
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
}

impl WorkloadArgs {
    pub fn build(&self, theta: f64, seed: u64) -> Result<Arc<dyn Workload>> {
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
            "ycsb" => {
                let write_kind: WriteKind = self.write_kind.parse()?;
                Arc::new(Ycsb::new(YcsbConfig {
                    records: self.records,
                    theta,
                    ops: self.ops,
                    read_ratio: self.read_ratio,
                    write_kind,
                    payload_bytes: self.payload_bytes,
                    scrambled: self.scrambled,
                })?)
            }
            other => bail!("unknown workload `{other}`; expected micro, smallbank or ycsb"),
        })
    }

    /// Knobs worth recording with a result.
    pub fn describe(&self) -> Vec<(&'static str, serde_json::Value)> {
        if self.name() == "ycsb" {
            return vec![
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
