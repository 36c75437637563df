//! Result records: one per run, or one per configuration averaged over `--runs N`.
//!
//! The JSON field names are a contract shared by every engine and by later tooling (the
//! figure generator reads them back): `engine`, `workload`, `mode`, `config` {the knobs by
//! name}, `theta`, `commits`, `throughput_tps`, `abort_rate`, `latency_us` {`mean`, `p50`,
//! `p90`, `p95`, `p99`, `p999`, `max`}, plus the fields below. `abort_rate` is
//! concurrency-control aborts over attempts (commits + aborts); user aborts are counted apart
//! and are not in it.
//!
//! What was run is typed by the engine that ran it: a record is a `RunResult<C>` where `C`
//! (the pipeline's, the thread engine's or the PostgreSQL tier's description, defined by the
//! command line) converts to and from [`Description`], the shape every file shares. Code
//! that reads results of any engine uses `RunResult<Description>`, the default.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::{AbortCause, Recorder};

/// What one run was, in the shape every result file writes: the engine, the workload, the
/// mode, and every other knob by name (`config`). Engines describe their runs with their own
/// types and convert to and from this one (`#[serde(into = "Description", try_from =
/// "Description")]`), so files keep one layout while code reads typed fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Description {
    pub engine: String,
    pub workload: String,
    pub mode: String,
    /// Every other knob, as name -> value (batch sizes, algorithm, threads, ...).
    pub config: serde_json::Map<String, serde_json::Value>,
}

/// What was run (`run`: engine, workload, mode and knobs, typed by the engine), at which skew,
/// with which seed, for how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo<C = Description> {
    #[serde(flatten)]
    pub run: C,
    pub theta: f64,
    pub seed: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchSummary {
    pub count: u64,
    pub size_mean: f64,
    pub fvs_mean: f64,
    pub reorder_us_mean: f64,
    pub reorder_us_p99: f64,
}

/// The batch sizes an adaptive run's controller had chosen at `t_ms` (milliseconds since the
/// run started, warm-up included): one entry at the start and one after every round of the
/// controller, thinned evenly to a bounded length over long runs. Only the batching points the
/// engine has are present: the pipeline's `storage`, `validator` and `flush` (messages per
/// flush of the threaded runtime), the PostgreSQL tier's `batch` and `group`, the threads
/// engine's reorder `batch`. A fixed knob reports its fixed size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchSizeSample {
    pub t_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub storage: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub validator: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub flush: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub batch: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub group: Option<u32>,
}

/// Rows per second that committed transactions read, by how they read them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RowRates {
    /// Rows read by point reads (present keys).
    pub point_reads: f64,
    /// Rows returned by range scans.
    pub scan_rows: f64,
}

/// One statistic (standard deviation or median) of the main measurements over repeated runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub throughput_tps: f64,
    pub abort_rate: f64,
    pub latency_us_mean: f64,
    pub latency_us_p95: f64,
    pub latency_us_p99: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult<C = Description> {
    #[serde(flatten)]
    pub info: RunInfo<C>,
    /// How many runs this record averages (1 for a single run).
    pub runs: usize,
    pub commits: f64,
    pub throughput_tps: f64,
    pub abort_rate: f64,
    /// Concurrency-control aborts by cause (only causes that occurred).
    pub aborts: BTreeMap<String, f64>,
    pub user_aborts: f64,
    pub restarts_per_commit: f64,
    pub latency_us: LatencySummary,
    pub batches: BatchSummary,
    /// Commits per procedure name.
    pub commits_by_procedure: BTreeMap<String, f64>,
    /// Concurrency-control aborts per procedure name (engines that count them).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub aborts_by_procedure: BTreeMap<String, f64>,
    /// Rows per second committed transactions read (engines that count them: the engine over
    /// tables).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rows_per_s: Option<RowRates>,
    /// TPC-C's throughput metric: NewOrder commits per minute (TPC-C runs only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tpmc: Option<f64>,
    /// Standard deviations when `runs > 1`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub std: Option<Spread>,
    /// Medians when `runs > 1` (robust to one slow run on a shared machine).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub median: Option<Spread>,
    /// The sizes an adaptive (`auto`) run chose over time; empty when every knob was fixed.
    /// For several runs, those of the run with the median throughput.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub batch_sizes: Vec<BatchSizeSample>,
}

impl<C: Clone> RunResult<C> {
    /// Builds the record of one run from its merged recorder; `measured_s` is the length of
    /// the measurement window in seconds.
    pub fn from_recorder(info: RunInfo<C>, recorder: &Recorder, measured_s: f64, procedure_names: &[&str]) -> Self {
        let commits = recorder.commits() as f64;
        let aborted = recorder.total_aborts() as f64;
        let histogram = recorder.latency_us();
        let quantile = |q: f64| if histogram.is_empty() { 0.0 } else { histogram.value_at_quantile(q) as f64 };
        let latency_us = LatencySummary {
            mean: if histogram.is_empty() { 0.0 } else { histogram.mean() },
            p50: quantile(0.50),
            p90: quantile(0.90),
            p95: quantile(0.95),
            p99: quantile(0.99),
            p999: quantile(0.999),
            p9999: quantile(0.9999),
            max: if histogram.is_empty() { 0.0 } else { histogram.max() as f64 },
        };
        let batches = recorder.batches();
        let batch_summary = if batches == 0 {
            BatchSummary::default()
        } else {
            BatchSummary {
                count: batches,
                size_mean: recorder.batch_transactions() as f64 / batches as f64,
                fvs_mean: recorder.batch_aborted() as f64 / batches as f64,
                reorder_us_mean: recorder.reorder_ns().mean() / 1000.0,
                reorder_us_p99: recorder.reorder_ns().value_at_quantile(0.99) as f64 / 1000.0,
            }
        };
        let aborts = AbortCause::ALL
            .iter()
            .filter(|&&cause| recorder.aborts(cause) > 0)
            .map(|&cause| (cause.name().to_owned(), recorder.aborts(cause) as f64))
            .collect();
        let commits_by_procedure = recorder
            .commits_by_procedure()
            .iter()
            .enumerate()
            .filter(|&(_, &count)| count > 0)
            .map(|(i, &count)| {
                (procedure_names.get(i).map_or_else(|| format!("procedure_{i}"), |n| (*n).to_owned()), count as f64)
            })
            .collect();
        RunResult {
            info,
            runs: 1,
            commits,
            throughput_tps: if measured_s > 0.0 { commits / measured_s } else { 0.0 },
            abort_rate: if commits + aborted > 0.0 { aborted / (commits + aborted) } else { 0.0 },
            aborts,
            user_aborts: recorder.user_aborts() as f64,
            restarts_per_commit: if commits > 0.0 { recorder.restarts_of_commits() as f64 / commits } else { 0.0 },
            latency_us,
            batches: batch_summary,
            commits_by_procedure,
            aborts_by_procedure: BTreeMap::new(),
            rows_per_s: match recorder.rows_read() {
                (0, 0) => None,
                _ if measured_s <= 0.0 => None,
                (point_reads, scan_rows) => Some(RowRates {
                    point_reads: point_reads as f64 / measured_s,
                    scan_rows: scan_rows as f64 / measured_s,
                }),
            },
            tpmc: None,
            std: None,
            median: None,
            batch_sizes: Vec::new(),
        }
    }

    /// The mean of several runs of the same configuration, with standard deviations.
    pub fn aggregate(runs: &[RunResult<C>]) -> RunResult<C> {
        assert!(!runs.is_empty(), "aggregate of no runs");
        if runs.len() == 1 {
            return runs[0].clone();
        }
        let n = runs.len() as f64;
        let mean = |f: &dyn Fn(&RunResult<C>) -> f64| runs.iter().map(f).sum::<f64>() / n;
        let std = |f: &dyn Fn(&RunResult<C>) -> f64| {
            let m = mean(f);
            (runs.iter().map(|r| (f(r) - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        };
        let median_of = |f: &dyn Fn(&RunResult<C>) -> f64| median(runs.iter().map(f).collect()).unwrap_or(0.0);
        let median_run = {
            let mut by_throughput: Vec<&RunResult<C>> = runs.iter().collect();
            by_throughput.sort_by(|a, b| a.throughput_tps.total_cmp(&b.throughput_tps));
            by_throughput[by_throughput.len() / 2]
        };
        let mean_map = |f: &dyn Fn(&RunResult<C>) -> &BTreeMap<String, f64>| {
            let mut out: BTreeMap<String, f64> = BTreeMap::new();
            for run in runs {
                for (k, v) in f(run) {
                    *out.entry(k.clone()).or_default() += v / n;
                }
            }
            out
        };
        RunResult {
            info: runs[0].info.clone(),
            runs: runs.len(),
            commits: mean(&|r| r.commits),
            throughput_tps: mean(&|r| r.throughput_tps),
            abort_rate: mean(&|r| r.abort_rate),
            aborts: mean_map(&|r| &r.aborts),
            user_aborts: mean(&|r| r.user_aborts),
            restarts_per_commit: mean(&|r| r.restarts_per_commit),
            latency_us: LatencySummary {
                mean: mean(&|r| r.latency_us.mean),
                p50: mean(&|r| r.latency_us.p50),
                p90: mean(&|r| r.latency_us.p90),
                p95: mean(&|r| r.latency_us.p95),
                p99: mean(&|r| r.latency_us.p99),
                p999: mean(&|r| r.latency_us.p999),
                p9999: mean(&|r| r.latency_us.p9999),
                max: mean(&|r| r.latency_us.max),
            },
            batches: BatchSummary {
                count: mean(&|r| r.batches.count as f64).round() as u64,
                size_mean: mean(&|r| r.batches.size_mean),
                fvs_mean: mean(&|r| r.batches.fvs_mean),
                reorder_us_mean: mean(&|r| r.batches.reorder_us_mean),
                reorder_us_p99: mean(&|r| r.batches.reorder_us_p99),
            },
            commits_by_procedure: mean_map(&|r| &r.commits_by_procedure),
            aborts_by_procedure: mean_map(&|r| &r.aborts_by_procedure),
            rows_per_s: runs.iter().all(|r| r.rows_per_s.is_some()).then(|| RowRates {
                point_reads: mean(&|r| r.rows_per_s.unwrap_or_default().point_reads),
                scan_rows: mean(&|r| r.rows_per_s.unwrap_or_default().scan_rows),
            }),
            tpmc: runs[0].tpmc.is_some().then(|| mean(&|r| r.tpmc.unwrap_or(0.0))),
            std: Some(Spread {
                throughput_tps: std(&|r| r.throughput_tps),
                abort_rate: std(&|r| r.abort_rate),
                latency_us_mean: std(&|r| r.latency_us.mean),
                latency_us_p95: std(&|r| r.latency_us.p95),
                latency_us_p99: std(&|r| r.latency_us.p99),
            }),
            median: Some(Spread {
                throughput_tps: median_of(&|r| r.throughput_tps),
                abort_rate: median_of(&|r| r.abort_rate),
                latency_us_mean: median_of(&|r| r.latency_us.mean),
                latency_us_p95: median_of(&|r| r.latency_us.p95),
                latency_us_p99: median_of(&|r| r.latency_us.p99),
            }),
            batch_sizes: median_run.batch_sizes.clone(),
        }
    }

    /// The median throughput over the runs this record aggregates (the run's own for one).
    pub fn median_throughput_tps(&self) -> f64 {
        self.median.map_or(self.throughput_tps, |m| m.throughput_tps)
    }

    /// One flat row for CSV: `(column, value)` in a fixed order, the knobs last
    /// (`config_<name>`).
    pub fn flat(&self) -> Vec<(String, String)>
    where
        C: Into<Description>,
    {
        let described: Description = self.info.run.clone().into();
        let mut row: Vec<(String, String)> = vec![
            ("engine".into(), described.engine),
            ("workload".into(), described.workload),
            ("mode".into(), described.mode),
            ("theta".into(), self.info.theta.to_string()),
            ("seed".into(), self.info.seed.to_string()),
            ("duration_s".into(), self.info.duration_s.to_string()),
            ("warmup_s".into(), self.info.warmup_s.to_string()),
            ("runs".into(), self.runs.to_string()),
            ("commits".into(), format!("{:.0}", self.commits)),
            ("throughput_tps".into(), format!("{:.1}", self.throughput_tps)),
            ("abort_rate".into(), format!("{:.5}", self.abort_rate)),
            ("user_aborts".into(), format!("{:.0}", self.user_aborts)),
            ("restarts_per_commit".into(), format!("{:.4}", self.restarts_per_commit)),
        ];
        let l = &self.latency_us;
        for (name, value) in [
            ("mean", l.mean),
            ("p50", l.p50),
            ("p90", l.p90),
            ("p95", l.p95),
            ("p99", l.p99),
            ("p999", l.p999),
            ("p9999", l.p9999),
            ("max", l.max),
        ] {
            row.push((format!("latency_us_{name}"), format!("{value:.1}")));
        }
        for cause in AbortCause::ALL {
            row.push((
                format!("aborts_{}", cause.name()),
                format!("{:.0}", self.aborts.get(cause.name()).copied().unwrap_or(0.0)),
            ));
        }
        let b = &self.batches;
        row.push(("batches".into(), b.count.to_string()));
        row.push(("batch_size_mean".into(), format!("{:.2}", b.size_mean)));
        row.push(("batch_fvs_mean".into(), format!("{:.3}", b.fvs_mean)));
        row.push(("reorder_us_mean".into(), format!("{:.2}", b.reorder_us_mean)));
        row.push(("reorder_us_p99".into(), format!("{:.2}", b.reorder_us_p99)));
        if let Some(m) = &self.median {
            row.push(("throughput_tps_median".into(), format!("{:.1}", m.throughput_tps)));
        }
        if let Some(s) = &self.std {
            row.push(("throughput_tps_std".into(), format!("{:.1}", s.throughput_tps)));

            row.push(("abort_rate_std".into(), format!("{:.5}", s.abort_rate)));
            row.push(("latency_us_p99_std".into(), format!("{:.1}", s.latency_us_p99)));
        }
        for (key, value) in &described.config {
            row.push((format!("config_{key}"), value.to_string().trim_matches('"').to_owned()));
        }
        row
    }
}

/// Alias kept for readability at call sites that average runs.
pub type Aggregate = RunResult;

/// The middle value (the mean of the two middle ones for an even count); `None` for none.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[middle]),
        _ => Some(f64::midpoint(values[middle - 1], values[middle])),
    }
}

/// A distribution-free interval that holds the median of the population `values` were drawn
/// from with probability at least 95%: the `k`-th smallest and the `k`-th largest value, with
/// `k` as large as keeps the chance that the median lies outside them at most 5%. Each value
/// lies below the median with probability one half, so that chance is twice the probability
/// that a binomial count of `n` draws at one half is below `k`. `None` for fewer than 6
/// values, which cannot bound the median that surely (the whole range of 5 misses it with
/// probability 2/32).
pub fn median_interval_95(mut values: Vec<f64>) -> Option<(f64, f64)> {
    const MISS_MAX: f64 = 0.05;
    let n = values.len();
    values.sort_by(f64::total_cmp);
    // ln P(Bin(n, 1/2) = i), from i = 0 upward; the interval [x(k), x(n+1-k)] (one-based)
    // misses the median with probability 2 P(Bin <= k - 1).
    #[expect(clippy::cast_precision_loss, reason = "counts are far below 2^52")]
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let (mut ln_p, mut below, mut k) = (ln_half_n, 0.0_f64, 0_usize);
    while 2 * (k + 1) <= n {
        below += ln_p.exp();
        if 2.0 * below > MISS_MAX {
            break;
        }
        k += 1;
        #[expect(clippy::cast_precision_loss, reason = "counts are far below 2^52")]
        let step = ((n - (k - 1)) as f64).ln() - (k as f64).ln();
        ln_p += step;
    }
    (k > 0).then(|| (values[k - 1], values[n - k]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Window;

    #[test]
    fn the_median_interval_widens_with_fewer_values_and_needs_six() {
        let values = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        assert_eq!(median_interval_95(values(5)), None, "the range of 5 misses the median with p = 1/16");
        assert_eq!(median_interval_95(values(6)), Some((1.0, 6.0)), "the range of 6: p = 1/32");
        // n = 20: P(Bin(20, 1/2) <= 5) = 0.0207, <= 6 = 0.0577, so k = 6: the 6th and 15th.
        assert_eq!(median_interval_95(values(20)), Some((6.0, 15.0)));
        // n = 100: P(Bin <= 39) = 0.0176, <= 40 = 0.0284: k = 40, the 40th and 61st.
        assert_eq!(median_interval_95(values(100)), Some((40.0, 61.0)));
        // Unsorted input gives the same interval.
        let mut shuffled = values(20);
        shuffled.reverse();
        assert_eq!(median_interval_95(shuffled), Some((6.0, 15.0)));
        assert_eq!(median_interval_95(Vec::new()), None);
    }

    fn info() -> RunInfo {
        let run = Description {
            engine: "pipeline".into(),
            workload: "micro".into(),
            mode: "srvc".into(),
            config: serde_json::Map::from_iter([("batch_size".to_owned(), 40.into())]),
        };
        RunInfo { run, theta: 0.8, seed: 1, duration_s: 1.0, warmup_s: 0.0 }
    }

    #[test]
    fn contract_fields_are_in_the_json() {
        let mut recorder = Recorder::new(Window::ALL);
        for i in 0..100 {
            recorder.commit(1, 100 + i, 1, 0);
        }
        recorder.abort(1, AbortCause::Reorder);
        recorder.user_abort(1);
        let result = RunResult::from_recorder(info(), &recorder, 2.0, &["ReadWrite"]);
        let json = serde_json::to_value(&result).unwrap();
        for field in ["engine", "workload", "mode", "theta", "commits", "throughput_tps", "abort_rate", "latency_us"] {
            assert!(json.get(field).is_some(), "missing {field}");
        }
        for field in ["mean", "p50", "p95", "p99", "max"] {
            assert!(json["latency_us"].get(field).is_some(), "missing latency_us.{field}");
        }
        assert_eq!(json["throughput_tps"], 50.0);
        assert!((result.abort_rate - 1.0 / 101.0).abs() < 1e-12);
        assert_eq!(json["aborts"]["reorder"], 1.0);
        assert_eq!(json["commits_by_procedure"]["ReadWrite"], 100.0);
        assert_eq!(json["config"]["batch_size"], 40, "knobs under `config`");
        let back: RunResult = serde_json::from_value(json).unwrap();
        assert_eq!(back, result);
        let row = result.flat();
        assert_eq!(row[..3].iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(), ["pipeline", "micro", "srvc"]);
        assert_eq!(row.last().unwrap(), &("config_batch_size".to_owned(), "40".to_owned()));
    }

    #[test]
    fn batch_sizes_are_in_the_json_only_when_chosen() {
        let mut result = RunResult::from_recorder(info(), &Recorder::new(Window::ALL), 1.0, &[]);
        let json = serde_json::to_value(&result).unwrap();
        assert!(json.get("batch_sizes").is_none(), "fixed runs keep the JSON as it was");
        result.batch_sizes = vec![
            BatchSizeSample { t_ms: 0, storage: Some(40), validator: Some(40), flush: Some(256), ..Default::default() },
            BatchSizeSample { t_ms: 300, batch: Some(50), group: Some(16), ..Default::default() },
        ];
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(
            json["batch_sizes"][0],
            serde_json::json!({"t_ms": 0, "storage": 40, "validator": 40, "flush": 256})
        );
        assert_eq!(json["batch_sizes"][1], serde_json::json!({"t_ms": 300, "batch": 50, "group": 16}));
        let back: RunResult = serde_json::from_value(json).unwrap();
        assert_eq!(back, result);
    }

    #[test]
    fn aggregate_reports_mean_and_spread() {
        let mut runs = Vec::new();
        for commits in [300u64, 100, 200] {
            let mut recorder = Recorder::new(Window::ALL);
            for _ in 0..commits {
                recorder.commit(1, 10, 0, 0);
            }
            let mut run = RunResult::from_recorder(info(), &recorder, 1.0, &[]);
            run.batch_sizes = vec![BatchSizeSample { t_ms: commits, ..Default::default() }];
            runs.push(run);
        }
        let aggregate = RunResult::aggregate(&runs);
        assert_eq!(aggregate.runs, 3);
        assert_eq!(aggregate.batch_sizes[0].t_ms, 200, "the sizes of the median run");
        assert_eq!(aggregate.throughput_tps, 200.0);
        assert!((aggregate.std.unwrap().throughput_tps - 100.0).abs() < 1e-9);
    }

    #[test]
    fn row_rates_appear_only_when_counted_and_average_over_runs() {
        let plain = RunResult::from_recorder(info(), &Recorder::new(Window::ALL), 2.0, &[]);
        assert_eq!(plain.rows_per_s, None);
        assert!(!serde_json::to_string(&plain).unwrap().contains("rows_per_s"));
        let mut runs = Vec::new();
        for scanned in [100u64, 300] {
            let mut recorder = Recorder::new(Window::ALL);
            recorder.commit(1, 10, 0, 0);
            recorder.rows(1, 4, scanned);
            runs.push(RunResult::from_recorder(info(), &recorder, 2.0, &[]));
        }
        assert_eq!(runs[0].rows_per_s, Some(RowRates { point_reads: 2.0, scan_rows: 50.0 }));
        assert_eq!(RunResult::aggregate(&runs).rows_per_s, Some(RowRates { point_reads: 2.0, scan_rows: 100.0 }));
    }
}
