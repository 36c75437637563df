//! `ordo figures adaptive`: the pipeline's `auto` batch sizes against fixed ones, as one
//! command. srvc with both batches `auto`, then with both fixed at each of
//! [`FIXED_SIZES`], at every θ of the paper's sweep and at [`CONCURRENCIES`] live
//! transactions, all on one thread (so the host's placement of the two virtual CPUs cannot
//! favour one configuration over another).
//!
//! Two phases. The sweep runs every configuration, interleaved (round 1 of every
//! configuration, then round 2, ...), and picks each (concurrency, θ)'s best fixed size by
//! median throughput. The largest of six noisy medians overstates the size it picks (the
//! winner's curse: on this machine a configuration's runs spread by 20-40%), so the
//! confirmation then runs `auto` and that size again, alternating, for as many fresh rounds,
//! and the claim is decided on those runs alone: `auto`'s median over the size's median, and,
//! as a paired statistic that a slow spell of the machine divides out of, the median over
//! rounds of `auto`'s run over the size's run of the same round. The sweep's own ratio is
//! reported beside it. The verdict is the paired figure's: its distribution-free 95% interval
//! ([`median_interval_95`]) at or above the target is met, below it not met, and across it (or
//! under 6 rounds, which cannot bound a median that surely) unresolved. On the reference host
//! runs spread by a factor of two, and a cell within 5% of the target stayed unresolved after
//! a hundred rounds (`--confirm-rounds`, by default `--runs`). The target is ordo's own (the
//! paper names adaptive batching as future work, §7): `auto` at least [`AUTO_SHARE_MIN`] of
//! the best fixed size, and never below the fixed size that was the default before `auto`
//! ([`FIXED_DEFAULT_BEFORE`], from the sweep).

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};
use ordo_figures::{Claim, ExperimentReport, LineChart, Point, Series};
use ordo_harness::{RunResult, median, median_interval_95};
use ordo_pipeline::{Mode, PLACEMENT_ONE_THREAD};

use super::experiments::{draw_line, pipeline, pipeline_config, range, ratio, section, sweep, theta, times};
use super::series::{Measure, View, throughput};
use super::{Context, relative};
use crate::commands::bench::pipeline::PipelineRun;
use crate::commands::bench::read_runs_log;
use crate::commands::bench::values::{BatchSize, BatchSizeArg, StorageBatch};

/// The fixed sizes `auto` is compared with.
pub const FIXED_SIZES: [u32; 6] = [10, 20, 40, 60, 80, 150];
/// Live transactions: the contention `ordo headline` runs (100), and the paper's 300.
pub const CONCURRENCIES: [usize; 2] = [100, 300];
/// The share of the best fixed size's throughput `auto` is to reach.
pub const AUTO_SHARE_MIN: f64 = 0.95;
/// The fixed size that was every batch's default before `auto`.
pub const FIXED_DEFAULT_BEFORE: u32 = 40;

type Run = RunResult<PipelineRun>;

/// Median throughput over a configuration's runs: what the claims compare.
fn median_throughput() -> Measure<Run> {
    Measure { label: "Median throughput (committed transactions/s)", value: Run::median_throughput_tps, std: None }
}

/// How far a configuration's runs spread: the median and the largest, over configurations, of
/// each one's range of throughput over its median.
fn run_spread(runs: &[Run]) -> Option<(f64, f64)> {
    let mut by_configuration: BTreeMap<(usize, u64, String), Vec<f64>> = BTreeMap::new();
    for run in runs {
        let config = pipeline_config(run);
        let key = (config.concurrency, run.info.theta.to_bits(), config.validator_batch_size.to_string());
        by_configuration.entry(key).or_default().push(run.throughput_tps);
    }
    let spreads: Vec<f64> = by_configuration
        .into_values()
        .filter(|tps| tps.len() > 1)
        .filter_map(|tps| {
            let middle = median(tps.clone())?;
            let (low, high) = range(tps)?;
            (middle > 0.0).then(|| (high - low) / middle)
        })
        .collect();
    let (_, largest) = range(spreads.iter().copied())?;
    Some((median(spreads)?, largest))
}

/// Whether `r` ran at `concurrency` live transactions, θ = `at`, with both batches `size`.
fn is(r: &Run, concurrency: usize, at: f64, size: BatchSize) -> bool {
    let config = pipeline_config(r);
    config.concurrency == concurrency
        && r.info.theta == at
        && config.validator_batch_size == size
        && config.storage_batch_size == size
}

/// `auto` over the fixed size `size` in every round both ran (paired by their seed).
fn paired_ratios(runs: &[Run], concurrency: usize, at: f64, size: BatchSize) -> Vec<f64> {
    runs.iter()
        .filter(|auto| is(auto, concurrency, at, BatchSize::Auto))
        .filter_map(|auto| {
            let fixed = runs.iter().find(|f| is(f, concurrency, at, size) && f.info.seed == auto.info.seed)?;
            (fixed.throughput_tps > 0.0).then(|| auto.throughput_tps / fixed.throughput_tps)
        })
        .collect()
}

/// The sizes `auto` chose over time (its median run's), one series per θ.
fn sizes_over_time(results: &[Run], concurrency: usize) -> LineChart {
    let series = results
        .iter()
        .filter(|r| {
            let config = pipeline_config(r);
            config.concurrency == concurrency && config.validator_batch_size.is_auto()
        })
        .map(|r| Series {
            name: format!("θ={}", r.info.theta),
            points: r
                .batch_sizes
                .iter()
                .filter_map(|s| {
                    let size = s.validator.or(s.batch)?;
                    Some(Point { x: s.t_ms as f64 / 1000.0, y: f64::from(size), error: None })
                })
                .collect(),
        })
        .collect();
    LineChart {
        title: format!("Validator batch size auto chose, {concurrency} live transactions"),
        x_label: "Time since the run started (s)".into(),
        y_label: "Batch size (transactions)".into(),
        series,
        log_y: Some(false),
    }
}

/// The folder (under the output folder) of the confirmation runs.
const CONFIRMATIONS: &str = "adaptive_confirmations";

/// Fresh interleaved rounds of `auto` and the fixed `size` alone, at `concurrency` live
/// transactions and θ = `at`: their aggregated results, their runs and the command.
fn confirm(ctx: &Context, concurrency: usize, at: f64, size: BatchSize) -> Result<(Vec<Run>, Vec<Run>, String)> {
    let folder = ctx.path(CONFIRMATIONS);
    std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    let name = format!("{CONFIRMATIONS}/{concurrency}_{at}");
    let bench = pipeline(|b| {
        b.common.theta = vec![at];
        b.engine.mode = vec![Mode::Srvc];
        b.engine.concurrency = vec![concurrency];
        b.engine.batch_size = vec![BatchSize::Auto, size];
        b.engine.storage_batch_size = vec![StorageBatch::Same];
        b.engine.placement = vec![PLACEMENT_ONE_THREAD.parse().expect("a valid placement")];
    });
    let rounds = Context { runs: ctx.confirm_rounds, ..ctx.clone() };
    let (results, command) = sweep(&rounds, &name, bench)?;
    let runs = read_runs_log(&ctx.path(&format!("{name}.runs.jsonl")))?;
    Ok((results, runs, format!("`{command}`")))
}

pub fn adaptive(ctx: &Context) -> Result<ExperimentReport> {
    let sizes: Vec<BatchSize> =
        std::iter::once(BatchSize::Auto).chain(FIXED_SIZES.iter().map(|&n| BatchSize::of(n))).collect();
    let bench = pipeline(|b| {
        b.engine.mode = vec![Mode::Srvc];
        b.engine.concurrency = CONCURRENCIES.to_vec();
        b.engine.batch_size = sizes;
        b.engine.storage_batch_size = vec![StorageBatch::Same];
        b.engine.placement = vec![PLACEMENT_ONE_THREAD.parse().expect("a valid placement")];
    });
    let (results, command) = sweep(ctx, "adaptive", bench)?;
    let runs: Vec<Run> = read_runs_log(&ctx.path("adaptive.runs.jsonl"))?;
    let mut report = section("adaptive", command);
    for concurrency in CONCURRENCIES {
        let at: Vec<Run> = results.iter().filter(|r| pipeline_config(r).concurrency == concurrency).cloned().collect();
        let series = |r: &Run| match pipeline_config(r).validator_batch_size {
            BatchSize::Auto => "auto".to_owned(),
            size @ BatchSize::Fixed(_) => format!("fixed {size}"),
        };
        let view = View { results: &at, series: &series, x: &theta };
        let chart = view.line(
            &format!("Throughput, srvc by batch size, {concurrency} live transactions"),
            "Zipf skew θ",
            &throughput(),
        );
        draw_line(ctx, &mut report, &format!("adaptive_{concurrency}_tps"), &chart)?;
        draw_line(ctx, &mut report, &format!("adaptive_{concurrency}_sizes"), &sizes_over_time(&results, concurrency))?;
    }
    let mut shortfalls = Vec::new();
    let mut unresolved = Vec::new();
    let mut below_default = Vec::new();
    let mut confirmations = Vec::new();
    for concurrency in CONCURRENCIES {
        for &at in &super::experiments::THETAS {
            let here = |r: &&Run| pipeline_config(r).concurrency == concurrency && r.info.theta == at;
            let auto = results.iter().find(|r| is(r, concurrency, at, BatchSize::Auto));
            let best = results
                .iter()
                .filter(here)
                .filter(|r| !pipeline_config(r).validator_batch_size.is_auto())
                .max_by(|a, b| a.median_throughput_tps().total_cmp(&b.median_throughput_tps()));
            let old_default = results.iter().find(|r| is(r, concurrency, at, BatchSize::of(FIXED_DEFAULT_BEFORE)));
            let sweep_share = ratio(auto, best, &median_throughput());
            let over_default = ratio(auto, old_default, &median_throughput());
            if over_default.is_some_and(|s| s < 1.0) {
                below_default.push(format!("{concurrency} live at θ={at}"));
            }
            let best_size = best.map(|b| pipeline_config(b).validator_batch_size);
            let (share, paired) = match best_size {
                Some(size) => {
                    let (confirmed, runs, command) = confirm(ctx, concurrency, at, size)?;
                    confirmations.push(command);
                    let auto = confirmed.iter().find(|r| is(r, concurrency, at, BatchSize::Auto));
                    let best = confirmed.iter().find(|r| is(r, concurrency, at, size));
                    (ratio(auto, best, &median_throughput()), paired_ratios(&runs, concurrency, at, size))
                }
                None => (None, Vec::new()),
            };
            let rounds = paired.len();
            let interval = median_interval_95(paired.clone());
            // Met if the whole interval is at or above the target, not met if it is all below.
            let verdict = interval.and_then(|(low, high)| {
                if low >= AUTO_SHARE_MIN {
                    Some(true)
                } else if high < AUTO_SHARE_MIN {
                    Some(false)
                } else {
                    None
                }
            });
            let cell = format!("{concurrency} live at θ={at}");
            match verdict {
                Some(true) => {}
                Some(false) => shortfalls.push(cell),
                None => unresolved.push(cell),
            }
            let interval = interval.map_or_else(
                || format!("{rounds} rounds, too few for a 95% interval"),
                |(low, high)| format!("95% interval {low:.2}-{high:.2}x over {rounds} rounds"),
            );
            let best_size = best_size.map_or_else(|| "n/a".into(), |size| size.to_string());
            report.claims.push(Claim {
                quantity: format!("auto / best fixed size ({best_size}), {concurrency} live, θ={at}"),
                paper: format!("at least {AUTO_SHARE_MIN:.2}x"),
                ordo: format!(
                    "{} (paired by round: {}, {interval}; in the sweep: {}; over fixed {FIXED_DEFAULT_BEFORE}: {})",
                    times(share),
                    times(median(paired)),
                    times(sweep_share),
                    times(over_default)
                ),
                agrees: verdict,
            });
        }
    }
    report.notes.push(format!(
        "The sweep picks each cell's best fixed size by median over {runs} run{s}; the ratios are then measured on \
         {rounds} fresh round{rs} of auto and that size alone, alternating (the sweep's own ratio, which the pick \
         biases against auto, is shown beside them). The paired figure is the median over those rounds of auto's \
         run over the fixed size's run in the same round, and the verdict is its distribution-free 95% interval's: \
         met if the interval lies at or above {AUTO_SHARE_MIN:.2}x, not met if it lies below, unresolved if it \
         straddles the target or the rounds are too few (fewer than 6) to bound it (more rounds: \
         --confirm-rounds). Not met: {}. Unresolved: {}. Below the fixed {} that \
         was the default before auto (in the sweep): {}. {}",
        if shortfalls.is_empty() { "none".into() } else { shortfalls.join(", ") },
        if unresolved.is_empty() { "none".into() } else { unresolved.join(", ") },
        FIXED_DEFAULT_BEFORE,
        if below_default.is_empty() { "none".into() } else { below_default.join(", ") },
        run_spread(&runs).map_or_else(String::new, |(typical, largest)| format!(
            "In the sweep a configuration's runs spread by {:.0}% of their median (median over configurations; \
             {:.0}% at most): read a cell whose distance from the target is within that as a tie.",
            100.0 * typical,
            100.0 * largest
        )),
        runs = ctx.runs,
        s = if ctx.runs == 1 { "" } else { "s" },
        rounds = ctx.confirm_rounds,
        rs = if ctx.confirm_rounds == 1 { "" } else { "s" },
    ));
    report.notes.push(format!("The confirmations ran: {}.", confirmations.join("; ")));
    report.data_files.push(relative(&ctx.path("adaptive.runs.jsonl")));
    report.data_files.push(format!("{CONFIRMATIONS}/"));
    Ok(report)
}
