//! `ordo headline`: the two-minute demonstration. The pipeline engine without any batching
//! (`base`) against batching and reordering at storage and validator (`srvc`), on the paper's
//! micro-benchmark at several skews, in one short table, on two deployments: the paper's
//! split of the components over the two cores, and all of them on one thread.
//!
//! Every point runs `--runs` times (3 by default), interleaved with the other points so a slow
//! spell of a shared machine hits them all alike; the table shows medians with the spread of
//! the runs, and the notes under it are computed from the table's own numbers.

use anyhow::Result;
use clap::Args;
use ordo_harness::RunResult;
use ordo_harness::output::Table;
use ordo_pipeline::{Mode, PLACEMENT_DEFAULT, PLACEMENT_ONE_THREAD, Placement};

use super::bench::Labelled;
use super::bench::pipeline::{PipelineBench, PipelineRun};
use super::bench::values::within;
use super::bench::workloads::WorkloadName;

#[derive(Debug, Args)]
pub struct HeadlineArgs {
    /// Zipf skews to compare, comma separated, each in [0, 1).
    #[arg(long, value_delimiter = ',', default_value = "0.6,0.7,0.8,0.9")]
    pub theta: Vec<f64>,
    /// Measured seconds per run (after 0.5 s of warm-up), at most 86400.
    #[arg(long, default_value_t = 2.0)]
    pub duration: f64,
    /// Runs per point (interleaved), 1..=1000; the table shows their medians and spread.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Live transactions, 1..=100000. 100 fully loads the pipeline on 2 cores; the paper's 300
    /// was chosen for its Java prototype and makes every mode thrash here (see BENCHMARKS.md).
    #[arg(long, default_value_t = 100)]
    pub concurrency: usize,
    /// Write the full results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// The two deployments, as `(threads, placement)`.
const DEPLOYMENTS: [(usize, &str); 2] = [(2, PLACEMENT_DEFAULT), (1, PLACEMENT_ONE_THREAD)];

/// Median throughput of a point, and its spread as the standard deviation over the runs.
fn median_tps(result: &RunResult<PipelineRun>) -> f64 {
    result.median.map_or(result.throughput_tps, |m| m.throughput_tps)
}

fn spread_percent(result: &RunResult<PipelineRun>) -> f64 {
    let std = result.std.map_or(0.0, |s| s.throughput_tps);
    100.0 * std / result.throughput_tps.max(1.0)
}

/// The result of `mode` at `theta` on `placement`.
fn find<'a>(
    results: &'a [Labelled<PipelineRun>],
    mode: Mode,
    theta: f64,
    placement: &Placement,
) -> Option<&'a RunResult<PipelineRun>> {
    results.iter().map(|(_, r)| r).find(|r| {
        let config = &r.info.run.config;
        config.mode == mode && r.info.theta == theta && config.placement == *placement
    })
}

/// The sweep behind the table: base and srvc at every θ on both deployments, validated.
pub fn sweep(args: &HeadlineArgs) -> Result<PipelineBench> {
    within("--runs", [args.runs], 1, super::bench::RUNS_MAX)?;
    let mut bench = PipelineBench::default();
    let common = &mut bench.common;
    common.workload.workload = Some(WorkloadName::Micro);
    common.theta.clone_from(&args.theta);
    common.duration = args.duration;
    common.warmup = 0.5;
    common.runs = args.runs;
    common.json.clone_from(&args.json);
    bench.engine.mode = vec![Mode::Base, Mode::Srvc];
    bench.engine.concurrency = vec![args.concurrency];
    bench.engine.placement = DEPLOYMENTS.iter().map(|(_, placement)| placement.parse()).collect::<Result<_, _>>()?;
    bench.validate()?;
    Ok(bench)
}

pub fn run(args: &HeadlineArgs) -> Result<()> {
    let bench = sweep(args)?;
    let results = bench.sweep()?;
    let deployments: Vec<(usize, Placement)> =
        DEPLOYMENTS.iter().map(|&(threads, placement)| Ok((threads, placement.parse()?))).collect::<Result<_>>()?;
    let mut table = Table::new(&[
        "theta",
        "threads",
        "base commits/s",
        "±",
        "srvc commits/s",
        "±",
        "srvc/base",
        "base aborts",
        "srvc aborts",
        "base p95 µs",
        "srvc p95 µs",
    ]);
    // Per mode and θ, which deployment had the higher median: (mode, θ, faster threads).
    let mut faster: Vec<(Mode, f64, usize)> = Vec::new();
    let mut ratios: Vec<(f64, usize, f64)> = Vec::new();
    for &theta in &args.theta {
        for (threads, placement) in &deployments {
            let threads = *threads;
            let (Some(base), Some(srvc)) =
                (find(&results, Mode::Base, theta, placement), find(&results, Mode::Srvc, theta, placement))
            else {
                continue;
            };
            let ratio = median_tps(srvc) / median_tps(base).max(1.0);
            ratios.push((theta, threads, ratio));
            table.row(vec![
                format!("{theta}"),
                threads.to_string(),
                format!("{:.0}", median_tps(base)),
                format!("{:.0}%", spread_percent(base)),
                format!("{:.0}", median_tps(srvc)),
                format!("{:.0}%", spread_percent(srvc)),
                format!("{ratio:.2}x"),
                format!("{:.1}%", 100.0 * base.abort_rate),
                format!("{:.1}%", 100.0 * srvc.abort_rate),
                format!("{:.0}", base.median.map_or(base.latency_us.p95, |m| m.latency_us_p95)),
                format!("{:.0}", srvc.median.map_or(srvc.latency_us.p95, |m| m.latency_us_p95)),
            ]);
        }
        for mode in [Mode::Base, Mode::Srvc] {
            let tps: Vec<(usize, f64)> = deployments
                .iter()
                .filter_map(|(threads, placement)| {
                    find(&results, mode, theta, placement).map(|r| (*threads, median_tps(r)))
                })
                .collect();
            if let Some(&(threads, _)) = tps.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
                faster.push((mode, theta, threads));
            }
        }
    }
    println!("{}", table.render());
    let config = &bench.engine;
    println!(
        "pipeline engine, micro-benchmark (100K keys, 5 reads + 5 writes), concurrency {}, batch {}, reordering \
         with {}; medians of {} interleaved runs of {} s after 0.5 s of warm-up; ± is the standard deviation of \
         the runs, in percent of the mean.",
        args.concurrency,
        config.batch_size[0],
        config.algorithm[0].config(config.policy[0], config.multi_factor, config.minimize)?.label(),
        args.runs,
        args.duration
    );
    println!(
        "2 threads: the paper's split (processor and storage on one core; client, validator and reorder worker on \
         the other). 1 thread: every component on one core."
    );
    for mode in [Mode::Base, Mode::Srvc] {
        let by_threads = |threads: usize| -> Vec<String> {
            faster
                .iter()
                .filter(|&&(m, _, t)| m == mode && t == threads)
                .map(|&(_, theta, _)| theta.to_string())
                .collect()
        };
        let (one, two) = (by_threads(1), by_threads(2));
        let say = |thetas: &[String], deployment: &str| {
            if thetas.is_empty() { String::new() } else { format!("{deployment} at θ = {}", thetas.join(", ")) }
        };
        let parts: Vec<String> =
            [say(&one, "one thread"), say(&two, "two threads")].into_iter().filter(|s| !s.is_empty()).collect();
        if !parts.is_empty() {
            println!("{mode} was faster on {} in this run.", parts.join(" and on "));
        }
    }
    if let (Some(low), Some(high)) =
        (ratios.iter().map(|r| r.2).min_by(f64::total_cmp), ratios.iter().map(|r| r.2).max_by(f64::total_cmp))
    {
        println!("srvc/base ranged from {low:.2}x to {high:.2}x over these skews and deployments.");
    }
    Ok(())
}
