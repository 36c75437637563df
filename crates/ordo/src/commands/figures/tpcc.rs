//! TPC-C and hybrid results read by type, for `ordo figures tpcc` and `ordo figures hybrid`:
//! what each configuration of a sweep measured, as the median (and standard deviation) over its
//! runs.
//!
//! ```text
//!  <name>.json       one mean per configuration ──┐ configurations
//!  <name>.runs.jsonl every run ───────────────────┴─> its runs ──Measured::of──> one per run
//!                                                       ──medians, std──> TpccPoint
//! ```
//!
//! A result counts its transactions by type under the workload's own procedure names
//! (`commits_by_procedure`, `aborts_by_procedure`: `new_order` ... `analytic`). They are read
//! through [`ordo_workload::tpcc::PROCEDURE_NAMES`], never by a name typed here, and every
//! reading that could quietly come out empty is an error instead: a transaction type the
//! workload does not have, per-type commits that do not add up to the run's commits, a TPC-C
//! result without its tpmC, a hybrid one without its contention degree, a configuration whose
//! runs are not in the runs log. A renamed key therefore stops the figure with a message that
//! names it; it cannot turn a claim into "n/a".

use std::collections::BTreeMap;

use anyhow::{Context as _, Result, bail};
use ordo_harness::{RunInfo, RunResult};
use ordo_workload::tpcc::{ANALYTIC_TX, PROCEDURE_NAMES};

use super::series::Measure;
use crate::commands::bench::threads::{ThreadsProtocol, ThreadsRun};
use crate::commands::bench::workloads::{BindingArg, WorkloadKnobs};

/// Transaction types of the hybrid workload (TPC-C's five, then `analytic`).
const TRANSACTION_TYPES: usize = PROCEDURE_NAMES.len();

/// A count per transaction type, in the order of [`PROCEDURE_NAMES`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ByTransaction([f64; TRANSACTION_TYPES]);

impl ByTransaction {
    /// Reads one of a result's per-procedure maps (`field` names it in errors). Types that did
    /// not occur are absent from the map and count zero; a name that is not a transaction type
    /// of the workload is an error.
    pub fn read(field: &str, counts: &BTreeMap<String, f64>) -> Result<ByTransaction> {
        let mut by_type = [0.0; TRANSACTION_TYPES];
        for (name, &count) in counts {
            let Some(index) = PROCEDURE_NAMES.iter().position(|known| known == name) else {
                bail!(
                    "{field} has `{name}`, which is not a transaction type of TPC-C or its hybrid ({PROCEDURE_NAMES:?})"
                );
            };
            if !(count.is_finite() && count >= 0.0) {
                bail!("{field}.{name} is {count}, not a count");
            }
            by_type[index] = count;
        }
        Ok(ByTransaction(by_type))
    }

    /// The count of transaction type `tx` (`ordo_workload::tpcc::NEW_ORDER_TX` ... `ANALYTIC_TX`).
    pub fn get(&self, tx: u8) -> f64 {
        self.0[usize::from(tx)]
    }

    pub fn total(&self) -> f64 {
        self.0.iter().sum()
    }
}

/// What a TPC-C or hybrid configuration was, from the typed description of its result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Configuration {
    pub protocol: ThreadsProtocol,
    pub threads: usize,
    pub warehouses: u32,
    pub binding: BindingArg,
    /// The hybrid's contention degree (the fraction of a warehouse's customers its analytic
    /// transaction scans); `None` for plain TPC-C.
    pub analytic_range: Option<f64>,
}

impl Configuration {
    pub fn of(result: &RunResult<ThreadsRun>) -> Result<Configuration> {
        let run = &result.info.run;
        let WorkloadKnobs::Tpcc(workload) = &run.workload else {
            bail!("a result of workload {}, not tpcc or tpcc-hybrid", run.workload.name());
        };
        let hybrid = workload.analytic_share.is_some();
        if hybrid != run.knobs.analytic_range.is_some() {
            bail!(
                "a {} result {} a contention degree (config.analytic_range)",
                run.workload.name(),
                if hybrid { "without" } else { "with" }
            );
        }
        Ok(Configuration {
            protocol: run.knobs.protocol,
            threads: run.knobs.threads,
            warehouses: workload.warehouses,
            binding: workload.binding,
            analytic_range: run.knobs.analytic_range,
        })
    }

    /// `silo, fixed binding, 2 threads, range 0.2`, for errors.
    fn describe(&self) -> String {
        let binding = crate::commands::bench::value_name(&self.binding);
        let range = self.analytic_range.map_or_else(String::new, |range| format!(", analytic range {range}"));
        format!("{}, {binding} binding, {} threads{range}", self.protocol.name(), self.threads)
    }
}

/// What one run measured (or, in a [`TpccPoint`], the median or the standard deviation of the
/// runs of a configuration).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Measured {
    /// Committed transactions of every type per second.
    pub throughput_tps: f64,
    /// NewOrders committed per minute.
    pub tpmc: f64,
    /// Concurrency-control aborts over attempts, every type.
    pub abort_rate: f64,
    /// Committed analytic transactions per second (0 for plain TPC-C).
    pub analytic_tps: f64,
    /// The analytic transaction's aborts over its attempts (0 when it made none).
    pub analytic_abort_rate: f64,
}

impl Measured {
    /// Reads one run of configuration `config`.
    pub fn of(result: &RunResult<ThreadsRun>, config: &Configuration) -> Result<Measured> {
        let commits = ByTransaction::read("commits_by_procedure", &result.commits_by_procedure)?;
        let aborts = ByTransaction::read("aborts_by_procedure", &result.aborts_by_procedure)?;
        let tolerance = 1e-6 * result.commits.max(1.0);
        if (commits.total() - result.commits).abs() > tolerance {
            bail!(
                "commits_by_procedure adds up to {} commits, the result says {}: a transaction type is missing",
                commits.total(),
                result.commits
            );
        }
        let Some(tpmc) = result.tpmc else {
            bail!("a TPC-C result without tpmc (NewOrders per minute)");
        };
        let analytic = commits.get(ANALYTIC_TX);
        if config.analytic_range.is_none() && (analytic > 0.0 || aborts.get(ANALYTIC_TX) > 0.0) {
            bail!("a plain TPC-C result with analytic transactions");
        }
        let analytic_attempts = analytic + aborts.get(ANALYTIC_TX);
        Ok(Measured {
            throughput_tps: result.throughput_tps,
            tpmc,
            abort_rate: result.abort_rate,
            // The run's rate, split as its commits are.
            analytic_tps: if result.commits > 0.0 { result.throughput_tps * analytic / result.commits } else { 0.0 },
            analytic_abort_rate: if analytic_attempts > 0.0 {
                aborts.get(ANALYTIC_TX) / analytic_attempts
            } else {
                0.0
            },
        })
    }

    /// Applies `statistic` to each field over `runs`.
    fn over(runs: &[Measured], statistic: fn(&mut [f64]) -> f64) -> Measured {
        let field = |read: fn(&Measured) -> f64| statistic(&mut runs.iter().map(read).collect::<Vec<f64>>());
        Measured {
            throughput_tps: field(|m| m.throughput_tps),
            tpmc: field(|m| m.tpmc),
            abort_rate: field(|m| m.abort_rate),
            analytic_tps: field(|m| m.analytic_tps),
            analytic_abort_rate: field(|m| m.analytic_abort_rate),
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    ordo_harness::median(values.to_vec()).unwrap_or(0.0)
}

/// Sample standard deviation (0 for a single run).
fn std_dev(values: &mut [f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// One configuration of a TPC-C or hybrid sweep: the median of its runs (and their standard
/// deviation, for error bars).
#[derive(Debug, Clone, PartialEq)]
pub struct TpccPoint {
    pub config: Configuration,
    pub runs: usize,
    pub median: Measured,
    pub std: Measured,
}

/// The points of a sweep: each configuration of `results` (the sweep's mean records) with the
/// runs of it in `logged` (the sweep's runs log), read as the sweep used them: the first
/// `runs` of the log, in order.
pub fn points(results: &[RunResult<ThreadsRun>], logged: &[RunResult<ThreadsRun>]) -> Result<Vec<TpccPoint>> {
    let without_seed = |info: &RunInfo<ThreadsRun>| RunInfo { seed: 0, ..info.clone() };
    results
        .iter()
        .map(|result| {
            let config = Configuration::of(result)?;
            let wanted = without_seed(&result.info);
            let runs: Vec<&RunResult<ThreadsRun>> =
                logged.iter().filter(|run| without_seed(&run.info) == wanted).take(result.runs).collect();
            if runs.len() != result.runs {
                bail!(
                    "the runs log holds {} run(s) of {}, its result averages {}",
                    runs.len(),
                    config.describe(),
                    result.runs
                );
            }
            let measured = runs
                .iter()
                .map(|run| Measured::of(run, &config))
                .collect::<Result<Vec<_>>>()
                .with_context(|| config.describe())?;
            Ok(TpccPoint {
                config,
                runs: measured.len(),
                median: Measured::over(&measured, median),
                std: Measured::over(&measured, std_dev),
            })
        })
        .collect()
}

pub fn throughput() -> Measure<TpccPoint> {
    Measure {
        label: "Throughput (committed transactions/s)",
        value: |p| p.median.throughput_tps,
        std: Some(|p| p.std.throughput_tps),
    }
}

pub fn tpmc() -> Measure<TpccPoint> {
    Measure { label: "tpmC (NewOrders committed per minute)", value: |p| p.median.tpmc, std: Some(|p| p.std.tpmc) }
}

pub fn abort_rate() -> Measure<TpccPoint> {
    Measure {
        label: "Abort rate (% of attempts)",
        value: |p| 100.0 * p.median.abort_rate,
        std: Some(|p| 100.0 * p.std.abort_rate),
    }
}

pub fn analytic_throughput() -> Measure<TpccPoint> {
    Measure {
        label: "Analytic transactions committed per second",
        value: |p| p.median.analytic_tps,
        std: Some(|p| p.std.analytic_tps),
    }
}

pub fn analytic_abort_rate() -> Measure<TpccPoint> {
    Measure {
        label: "Analytic transaction's abort rate (% of its attempts)",
        value: |p| 100.0 * p.median.analytic_abort_rate,
        std: Some(|p| 100.0 * p.std.analytic_abort_rate),
    }
}

#[cfg(test)]
mod tests {
    use ordo_threads::ProtocolKind;

    use super::*;
    use crate::commands::bench::durability::DurabilityKnobs;
    use crate::commands::bench::threads::{IndexArg, ThreadsKnobs};
    use crate::commands::bench::workloads::TpccKnobs;

    /// A hybrid run as `ordo bench` records it: Silo, 2 threads, contention degree 0.2, 100
    /// commits of which 20 analytic, over one second.
    fn hybrid_run(seed: u64) -> RunResult<ThreadsRun> {
        let run = ThreadsRun {
            workload: WorkloadKnobs::Tpcc(TpccKnobs {
                warehouses: 1,
                binding: BindingArg::Fixed,
                mix: "standard".into(),
                analytic_share: Some(0.2),
            }),
            knobs: ThreadsKnobs {
                protocol: ThreadsProtocol::SILO,
                threads: 2,
                index: IndexArg::Tree,
                payload_bytes: None,
                prefetch: None,
                pregenerate: None,
                batch: None,
                assignment: None,
                versions: None,
                epoch_ms: Some(40),
                analytic_range: Some(0.2),
                log: DurabilityKnobs::default(),
            },
        };
        let json = serde_json::json!({
            "theta": 0.0, "seed": seed, "duration_s": 1.0, "warmup_s": 0.5, "runs": 1,
            "commits": 100.0, "throughput_tps": 100.0, "abort_rate": 0.1, "aborts": {}, "user_aborts": 0.0,
            "restarts_per_commit": 0.1,
            "latency_us": {"mean": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0, "p99": 1.0, "p999": 1.0, "p9999": 1.0, "max": 1.0},
            "batches": {"count": 0, "size_mean": 0.0, "fvs_mean": 0.0, "reorder_us_mean": 0.0, "reorder_us_p99": 0.0},
            "commits_by_procedure": {"new_order": 40.0, "payment": 30.0, "delivery": 10.0, "analytic": 20.0},
            "aborts_by_procedure": {"analytic": 5.0},
            "tpmc": 2400.0,
        });
        let mut value =
            serde_json::to_value(RunInfo { run, theta: 0.0, seed, duration_s: 1.0, warmup_s: 0.5 }).unwrap();
        value.as_object_mut().unwrap().extend(json.as_object().unwrap().clone());
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_run_reads_by_transaction_type() {
        let run = hybrid_run(1);
        let config = Configuration::of(&run).unwrap();
        assert_eq!(config.analytic_range, Some(0.2));
        assert_eq!(config.protocol.protocol, ProtocolKind::Silo);
        let measured = Measured::of(&run, &config).unwrap();
        assert!((measured.analytic_tps - 20.0).abs() < 1e-9, "{measured:?}");
        assert!((measured.analytic_abort_rate - 0.2).abs() < 1e-9, "{measured:?}");
        assert!((measured.tpmc - 2400.0).abs() < 1e-9);
    }

    /// The failure this module exists to prevent: a renamed or dropped key must stop the
    /// figure, not read as zero and print "n/a".
    #[test]
    fn renamed_or_missing_keys_are_errors() {
        let config = Configuration::of(&hybrid_run(1)).unwrap();
        let mut renamed = hybrid_run(1);
        let analytic = renamed.commits_by_procedure.remove("analytic").unwrap();
        renamed.commits_by_procedure.insert("analytics".into(), analytic);
        let error = format!("{:#}", Measured::of(&renamed, &config).unwrap_err());
        assert!(error.contains("`analytics`"), "{error}");

        let mut dropped = hybrid_run(1);
        dropped.commits_by_procedure.remove("analytic");
        let error = format!("{:#}", Measured::of(&dropped, &config).unwrap_err());
        assert!(error.contains("a transaction type is missing"), "{error}");

        let mut aborts_renamed = hybrid_run(1);
        aborts_renamed.aborts_by_procedure = BTreeMap::from([("Analytic".to_owned(), 5.0)]);
        assert!(Measured::of(&aborts_renamed, &config).is_err());

        let mut no_tpmc = hybrid_run(1);
        no_tpmc.tpmc = None;
        assert!(format!("{:#}", Measured::of(&no_tpmc, &config).unwrap_err()).contains("tpmc"));

        let mut no_range = hybrid_run(1);
        no_range.info.run.knobs.analytic_range = None;
        assert!(format!("{:#}", Configuration::of(&no_range).unwrap_err()).contains("contention degree"));
    }

    #[test]
    fn points_take_medians_over_the_logged_runs_of_each_configuration() {
        let mut runs: Vec<RunResult<ThreadsRun>> = (0..3).map(hybrid_run).collect();
        for (run, tps) in runs.iter_mut().zip([100.0, 300.0, 200.0]) {
            run.throughput_tps = tps;
        }
        let mut mean = RunResult::aggregate(&runs);
        mean.info.seed = 0;
        let points = points(&[mean.clone()], &runs).unwrap();
        assert_eq!(points.len(), 1);
        assert!((points[0].median.throughput_tps - 200.0).abs() < 1e-9);
        assert!((points[0].median.analytic_tps - 40.0).abs() < 1e-9, "20% of the median run's rate");
        assert!((points[0].std.throughput_tps - 100.0).abs() < 1e-9);
        // A configuration whose runs the log lacks is an error, not an empty point.
        let error = format!("{:#}", super::points(&[mean], &runs[..2]).unwrap_err());
        assert!(error.contains("holds 2 run(s) of silo, fixed binding, 2 threads, analytic range 0.2"), "{error}");
    }
}
