//! `ordo fvs-bench`: the paper's Fig. 5-6. Every algorithm solves the same micro-benchmark
//! batches at each Zipf θ; per algorithm and θ it reports the mean FVS size, the mean gap to
//! the exact search, and the time per batch.
//!
//! Time is the solver alone (trimming, the algorithm, the minimality pass where enabled) on a
//! graph built beforehand; building the graph is reported separately (`build_us_median`),
//! since it is the same work for every algorithm.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ordo_reorder::{DependencyGraph, FvsConfig, FvsOutcome, FvsSolver, GraphBuilder, Policy, TxnFootprint};
use ordo_workload::{Micro, MicroConfig, Txn, Workload, rng_from_seed};
use serde::Serialize;

use ordo_harness::output::{Table, write_csv, write_json};

use super::bench::RUNS_MAX;
use super::bench::values::within;
use super::reorder_args::{AlgorithmLabel, SEARCH_BUDGET_MAX};

/// The paper's algorithms (Fig. 5-6) followed by ordo's variants with the minimality pass.
const DEFAULT_ALGORITHMS: &str = "search,greedy_max,greedy_sum,greedy_prod,greedy_sort,hybrid_10,hybrid_15,hybrid_20,\
random,random_3,greedy_prod+min,greedy_sort+min,hybrid_sort_32";

#[derive(Debug, Args)]
pub struct FvsBenchArgs {
    /// Transactions per batch, 1..=10000.
    #[arg(long, default_value_t = 40)]
    pub batch_size: usize,
    /// Batches per θ, 1..=1000000.
    #[arg(long, default_value_t = 10_000)]
    pub batches: usize,
    /// Zipf skews to run, comma separated, each in [0, 1).
    #[arg(long, value_delimiter = ',', default_value = "0.5,0.6,0.7,0.8,0.9")]
    pub theta: Vec<f64>,
    /// Keys in the micro-benchmark table, at most 100000000.
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// Algorithms as `<name>[_k<k>][+min]`, comma separated (at most 64).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_ALGORITHMS)]
    pub algorithms: Vec<AlgorithmLabel>,
    /// Search-tree nodes the exact search may visit per batch before falling back,
    /// 1..=1000000000.
    #[arg(long, default_value_t = ordo_reorder::SEARCH_NODE_BUDGET_DEFAULT)]
    pub search_budget: u64,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Repeat the timing this many times (1..=1000) over the same batches and report the
    /// median of the per-run figures (FVS sizes do not change between runs).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Write the records as JSON to this file (`-` or no value: stdout, instead of the table).
    #[arg(long, num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write the records as CSV to this file (`-` or no value: stdout, instead of the table).
    #[arg(long, num_args = 0..=1, default_missing_value = "-")]
    pub csv: Option<PathBuf>,
}

impl FvsBenchArgs {
    /// The command's defaults, for callers that run it programmatically.
    pub fn defaults() -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct CommandLine {
            #[command(flatten)]
            args: FvsBenchArgs,
        }
        CommandLine::parse_from(["ordo"]).args
    }
}

/// One (algorithm, θ) cell of Fig. 5-6.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct FvsBenchRecord {
    pub algorithm: String,
    pub theta: f64,
    pub batch_size: usize,
    pub batches: usize,
    pub keys: u64,
    pub runs: usize,
    pub fvs_mean: f64,
    /// Mean of (this FVS size - exact FVS size) per batch; `None` without `search`.
    pub fvs_gap_mean: Option<f64>,
    /// Batches on which the exact search ran out of budget (its answer was greedy's).
    pub fell_back: usize,
    pub time_us_mean: f64,
    pub time_us_median: f64,
    pub time_us_p99: f64,
    pub build_us_median: f64,
}

struct Contender {
    label: String,
    solver: FvsSolver,
    sizes: Vec<usize>,
    times_ns: Vec<u64>,
    fell_back: usize,
}

pub fn run(args: &FvsBenchArgs) -> Result<()> {
    let records = measure(args, true)?;
    let to_stdout = |path: &Option<PathBuf>| path.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if let Some(path) = &args.json {
        write_json(path, &records)?;
    }
    if let Some(path) = &args.csv {
        write_csv(path, &records)?;
    }
    if !to_stdout(&args.json) && !to_stdout(&args.csv) {
        print!("{}", render(&records));
    }
    Ok(())
}

/// Largest batch: its dependency graph takes `n^2` bits.
const BATCH_SIZE_MAX: usize = 10_000;
/// Most batches per θ (every algorithm keeps a size and a time per batch).
const BATCHES_MAX: usize = 1_000_000;
/// Most algorithms compared at once.
const ALGORITHMS_MAX: usize = 64;
/// Most skews in one command.
const THETAS_MAX: usize = 1_000;

/// Checks every flag before anything is measured; the algorithms' configurations.
pub fn validate(args: &FvsBenchArgs) -> Result<Vec<FvsConfig>> {
    within("--batch-size", [args.batch_size], 1, BATCH_SIZE_MAX)?;
    within("--batches", [args.batches], 1, BATCHES_MAX)?;
    within("--runs", [args.runs], 1, RUNS_MAX)?;
    within("--theta count", [args.theta.len()], 1, THETAS_MAX)?;
    within("--algorithms count", [args.algorithms.len()], 1, ALGORITHMS_MAX)?;
    within("--search-budget", [args.search_budget], 1, SEARCH_BUDGET_MAX)?;
    let mut configs = Vec::new();
    for label in &args.algorithms {
        let mut config = label.config(Policy::ProdDegree, 2, false)?;
        config.search_node_budget = args.search_budget;
        configs.push(config);
    }
    for &theta in &args.theta {
        if !(0.0..1.0).contains(&theta) {
            bail!("--theta {theta}: must be in [0, 1)");
        }
        MicroConfig { keys: args.keys, theta, ..MicroConfig::default() }.validate()?;
        ordo_workload::Zipf::new(args.keys, theta)?;
    }
    Ok(configs)
}

/// Runs the benchmark `runs` times and returns one record per (θ, algorithm) with the
/// median of each timing over the runs.
pub fn measure(args: &FvsBenchArgs, progress: bool) -> Result<Vec<FvsBenchRecord>> {
    let configs = validate(args)?;
    let bar = if progress {
        let bar = ProgressBar::new((args.runs * args.theta.len() * args.batches) as u64);
        bar.set_style(ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} batches, {eta} left")?);
        bar
    } else {
        ProgressBar::hidden()
    };
    let runs: Vec<Vec<FvsBenchRecord>> =
        (0..args.runs).map(|_| measure_once(args, &configs, &bar)).collect::<Result<_>>()?;
    bar.finish_and_clear();
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let mut records = runs[0].clone();
    for (i, record) in records.iter_mut().enumerate() {
        let collect = |field: fn(&FvsBenchRecord) -> f64| runs.iter().map(|run| field(&run[i])).collect::<Vec<f64>>();
        record.runs = args.runs;
        record.time_us_mean = median(&mut collect(|r| r.time_us_mean));
        record.time_us_median = median(&mut collect(|r| r.time_us_median));
        record.time_us_p99 = median(&mut collect(|r| r.time_us_p99));
        record.build_us_median = median(&mut collect(|r| r.build_us_median));
    }
    Ok(records)
}

fn measure_once(args: &FvsBenchArgs, configs: &[FvsConfig], bar: &ProgressBar) -> Result<Vec<FvsBenchRecord>> {
    let mut records = Vec::new();
    for &theta in &args.theta {
        bar.set_message(format!("θ={theta}"));
        let micro = Micro::new(MicroConfig { keys: args.keys, theta, ..MicroConfig::default() })?;
        let mut rng = rng_from_seed(args.seed ^ theta.to_bits());
        let mut contenders: Vec<Contender> = configs
            .iter()
            .map(|&config| {
                Ok(Contender {
                    label: config.label(),
                    solver: FvsSolver::new(config)?,
                    sizes: Vec::with_capacity(args.batches),
                    times_ns: Vec::with_capacity(args.batches),
                    fell_back: 0,
                })
            })
            .collect::<Result<_>>()?;
        let mut builder = GraphBuilder::new();
        let mut graph = DependencyGraph::default();
        let mut batch: Vec<TxnFootprint> = vec![TxnFootprint::default(); args.batch_size];
        let mut txn = Txn::default();
        let mut outcome = FvsOutcome::default();
        let mut build_ns = Vec::with_capacity(args.batches);
        for batch_index in 0..args.batches {
            for footprint in &mut batch {
                micro.generate(&mut rng, &mut txn);
                footprint.reads.clear();
                footprint.writes.clear();
                micro.footprint(&txn, &mut footprint.reads, &mut footprint.writes);
            }
            let start = Instant::now();
            builder.build(&batch, &mut graph);
            build_ns.push(start.elapsed().as_nanos() as u64);
            // Rotate who goes first, so no algorithm always meets a cold cache.
            let count = contenders.len();
            for turn in 0..count {
                let contender = &mut contenders[(batch_index + turn) % count];
                let start = Instant::now();
                contender.solver.solve(&graph, &[], &mut outcome);
                contender.times_ns.push(start.elapsed().as_nanos() as u64);
                contender.sizes.push(outcome.fvs.len());
                contender.fell_back += usize::from(outcome.fell_back);
            }
            bar.inc(1);
        }
        let exact_sizes = contenders.iter().find(|c| c.label == "search").map(|c| c.sizes.clone());
        let build_us_median = percentile_us(&mut build_ns, 0.5);
        for contender in &mut contenders {
            let batches = contender.sizes.len() as f64;
            let fvs_mean = contender.sizes.iter().sum::<usize>() as f64 / batches;
            let fvs_gap_mean = exact_sizes.as_ref().map(|exact| {
                contender.sizes.iter().zip(exact).map(|(&s, &e)| s as f64 - e as f64).sum::<f64>() / batches
            });
            let time_us_mean = contender.times_ns.iter().sum::<u64>() as f64 / batches / 1000.0;
            records.push(FvsBenchRecord {
                algorithm: contender.label.clone(),
                theta,
                batch_size: args.batch_size,
                batches: args.batches,
                keys: args.keys,
                runs: 1,
                fvs_mean,
                fvs_gap_mean,
                fell_back: contender.fell_back,
                time_us_mean,
                time_us_median: percentile_us(&mut contender.times_ns, 0.5),
                time_us_p99: percentile_us(&mut contender.times_ns, 0.99),
                build_us_median,
            });
        }
    }
    Ok(records)
}

/// The `q` quantile (nearest rank) of nanosecond samples, in microseconds.
fn percentile_us(samples_ns: &mut [u64], q: f64) -> f64 {
    if samples_ns.is_empty() {
        return 0.0;
    }
    samples_ns.sort_unstable();
    let rank = ((q * samples_ns.len() as f64).ceil() as usize).clamp(1, samples_ns.len());
    samples_ns[rank - 1] as f64 / 1000.0
}

pub fn render(records: &[FvsBenchRecord]) -> String {
    let mut table = Table::new(&[
        "algorithm",
        "theta",
        "fvs_mean",
        "gap_to_search",
        "fell_back",
        "time_us_median",
        "time_us_p99",
        "time_us_mean",
    ]);
    for r in records {
        table.row(vec![
            r.algorithm.clone(),
            format!("{:.2}", r.theta),
            format!("{:.3}", r.fvs_mean),
            r.fvs_gap_mean.map_or_else(|| "-".into(), |g| format!("{g:+.3}")),
            r.fell_back.to_string(),
            format!("{:.2}", r.time_us_median),
            format!("{:.2}", r.time_us_p99),
            format!("{:.2}", r.time_us_mean),
        ]);
    }
    let mut out = table.render();
    if let Some(first) = records.first() {
        out.push_str(&format!(
            "{} batches of {} transactions per θ, {} keys; times are medians of {} runs; \
             graph build median {:.2} µs (not included above)\n",
            first.batches, first.batch_size, first.keys, first.runs, first.build_us_median
        ));
    }
    out
}
