//! `ordo headline`: the two-minute demonstration. The pipeline engine without any batching
//! (`base`) against batching and reordering at storage and validator (`srvc`), on the paper's
//! micro-benchmark at several skews, in one short table, on two deployments: the paper's
//! split of the components over the two cores, and all of them on one thread.
//!
//! Every point runs `--runs` times (3 by default), interleaved with the other points so a slow
//! spell of a shared machine hits them all alike; the table shows medians with the spread of
//! the runs, and srvc/base as the median of ratios of runs measured in the same round, seconds
//! apart. Before each run the cross-core round trip of a cache line is measured
//! ([`ordo_harness::affinity::probe`]): on a virtual machine the host moves the virtual CPUs,
//! and the two-thread deployment slows severalfold while they are far apart; the notes say
//! how many runs that hit. The notes under the table are computed from its own numbers.

use std::time::Duration;

use anyhow::Result;
use clap::Args;
use ordo_harness::output::Table;
use ordo_harness::{RunInfo, RunResult, median};
use ordo_pipeline::{Mode, PLACEMENT_DEFAULT, PLACEMENT_ONE_THREAD, Placement};

use super::bench::Runs;
use super::bench::pipeline::{PipelineBench, PipelineRun, SweepRuns};
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

/// A point's spread, as the standard deviation of its throughput over the runs.
fn spread_percent(result: &RunResult<PipelineRun>) -> f64 {
    let std = result.std.map_or(0.0, |s| s.throughput_tps);
    100.0 * std / result.throughput_tps.max(1.0)
}

/// The index of the point measuring `mode` at `theta` on `placement`.
fn point(infos: &[RunInfo<PipelineRun>], mode: Mode, theta: f64, placement: &Placement) -> Option<usize> {
    infos.iter().position(|info| {
        let config = &info.run.config;
        config.mode == mode && info.theta == theta && config.placement == *placement
    })
}

/// srvc's throughput over base's in every round both ran (runs of a round are measured
/// seconds apart, so a slow spell of the machine divides out).
fn paired_ratios(base: &[RunResult<PipelineRun>], srvc: &[RunResult<PipelineRun>]) -> Vec<f64> {
    base.iter().zip(srvc).map(|(base, srvc)| srvc.throughput_tps / base.throughput_tps.max(1.0)).collect()
}

/// What the cross-core round trips measured before the runs say, as notes.
fn trip_notes(
    trips: &[(usize, usize, Duration)],
    infos: &[RunInfo<PipelineRun>],
    runs: &Runs<PipelineRun>,
) -> Vec<String> {
    let nanos = |trip: &Duration| trip.as_secs_f64() * 1e9;
    let mut sorted: Vec<f64> = trips.iter().map(|(_, _, trip)| nanos(trip)).collect();
    sorted.sort_by(f64::total_cmp);
    let (Some(&shortest), Some(&longest)) = (sorted.first(), sorted.last()) else {
        return Vec::new();
    };
    let all = median(sorted.clone()).unwrap_or(shortest);
    let mut notes = vec![format!(
        "Cross-core round trip of a cache line, measured before each run: median {all:.0} ns, {shortest:.0}-{longest:.0} ns."
    )];
    // Two-thread runs that followed a trip over twice the near placement's: the host had the
    // two virtual CPUs far apart. Compare each with the median of its point's other runs.
    let near_trip = near_trip_ns(&sorted);
    let two_threads = |point: usize| infos[point].run.config.placement.threads.len() > 1;
    let far = |trip: &Duration| nanos(trip) > 2.0 * near_trip;
    let measured: Vec<_> = trips.iter().filter(|(point, _, _)| two_threads(*point)).collect();
    let far_runs: Vec<_> = measured.iter().filter(|(_, _, trip)| far(trip)).collect();
    if far_runs.is_empty() {
        notes.push(format!(
            "No two-thread run followed a round trip over twice the lower quartile ({near_trip:.0} ns): every run \
             saw the same placement of the virtual CPUs."
        ));
        return notes;
    }
    let relative: Vec<f64> = far_runs
        .iter()
        .filter_map(|&&&(point, round, _)| {
            let near: Vec<f64> = measured
                .iter()
                .filter(|&&&(p, r, trip)| p == point && r != round && !far(&trip))
                .filter_map(|&&(p, r, _)| runs[p].get(r).map(|run| run.throughput_tps))
                .collect();
            Some(runs[point].get(round)?.throughput_tps / median(near)?.max(1.0))
        })
        .collect();
    let effect = median(relative)
        .map_or_else(String::new, |ratio| format!("; they ran at a median {ratio:.2}x of their point's other runs"));
    notes.push(format!(
        "{} of {} two-thread runs followed a round trip over twice the lower quartile, {near_trip:.0} ns (the host \
         had placed the two virtual CPUs far apart, and every message between the pipeline's threads pays for \
         it){effect}.",
        far_runs.len(),
        measured.len()
    ));
    notes
}

/// The round trip of the near placement of the virtual CPUs, from all the trips measured
/// (sorted, not empty): their lower quartile, not the shortest, which one lucky sample can put
/// at half the usual (a run whose trips were 29-322 ns with a median of 69 flagged all its
/// two-thread runs as far against the shortest).
fn near_trip_ns(sorted_ns: &[f64]) -> f64 {
    sorted_ns[sorted_ns.len() / 4]
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
    let mut trips: Vec<(usize, usize, Duration)> = Vec::new();
    let SweepRuns { infos, runs, .. } = bench.sweep_runs(|point, round| {
        if let Some(trip) = ordo_harness::affinity::probe() {
            trips.push((point, round, trip));
        }
    })?;
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
        "per round",
        "base aborts",
        "srvc aborts",
        "base p95 µs",
        "srvc p95 µs",
    ]);
    // Per mode and θ, which deployment had the higher median: (mode, θ, faster threads).
    let mut faster: Vec<(Mode, f64, usize)> = Vec::new();
    let mut ratios: Vec<f64> = Vec::new();
    // Each point's runs aggregated once (median, spread), for the table and the notes.
    let aggregated: Vec<Option<RunResult<PipelineRun>>> =
        runs.iter().map(|done| (!done.is_empty()).then(|| RunResult::aggregate(done))).collect();
    let result = |point: usize| aggregated[point].as_ref();
    for &theta in &args.theta {
        for (threads, placement) in &deployments {
            let (Some(base_point), Some(srvc_point)) =
                (point(&infos, Mode::Base, theta, placement), point(&infos, Mode::Srvc, theta, placement))
            else {
                continue;
            };
            let (Some(base), Some(srvc)) = (result(base_point), result(srvc_point)) else { continue };
            let paired = paired_ratios(&runs[base_point], &runs[srvc_point]);
            let Some(ratio) = median(paired.clone()) else { continue };
            ratios.push(ratio);
            let low = paired.iter().copied().fold(f64::INFINITY, f64::min);
            let high = paired.iter().copied().fold(0.0, f64::max);
            table.row(vec![
                format!("{theta}"),
                threads.to_string(),
                format!("{:.0}", RunResult::median_throughput_tps(base)),
                format!("{:.0}%", spread_percent(base)),
                format!("{:.0}", RunResult::median_throughput_tps(srvc)),
                format!("{:.0}%", spread_percent(srvc)),
                format!("{ratio:.2}x"),
                format!("{low:.2}-{high:.2}"),
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
                    let result = result(point(&infos, mode, theta, placement)?)?;
                    Some((*threads, RunResult::median_throughput_tps(result)))
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
         the runs, in percent of the mean; srvc/base is the median of the ratios of srvc's and base's runs in the \
         same round (seconds apart), and \"per round\" their range.",
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
        (ratios.iter().copied().min_by(f64::total_cmp), ratios.iter().copied().max_by(f64::total_cmp))
    {
        println!("srvc/base ranged from {low:.2}x to {high:.2}x over these skews and deployments.");
    }
    for note in trip_notes(&trips, &infos, &runs) {
        println!("{note}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::near_trip_ns;

    #[test]
    fn one_low_trip_does_not_make_every_run_far() {
        // One lucky 29 ns sample among trips of 60-80 ns, and two far spells at 300 ns.
        let mut trips = vec![29.0, 300.0, 310.0];
        trips.extend((0..21).map(|i| 60.0 + f64::from(i)));
        trips.sort_by(f64::total_cmp);
        let near = near_trip_ns(&trips);
        let far: Vec<f64> = trips.iter().copied().filter(|&trip| trip > 2.0 * near).collect();
        assert_eq!(far, [300.0, 310.0], "near trip {near} ns");
        // Against the shortest, every trip above 58 ns would have counted as far.
        assert_eq!(trips.iter().filter(|&&trip| trip > 2.0 * trips[0]).count(), 23);
    }
}
