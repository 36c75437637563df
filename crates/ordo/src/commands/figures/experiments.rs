//! The experiments: what each runs, which charts it draws, which of the paper's claims it
//! checks. Paper values are read off its figures (`~`) or quoted from its text; `tpcc` and
//! `hybrid` quote seed 003's text (ERMIA against Silo) instead.

use anyhow::{Context as _, Result, bail};
use ordo_figures::{Claim, ExperimentReport, LineChart, PercentileChart, Reference, render_line, render_percentiles};
use ordo_harness::RunResult;
use ordo_pipeline::Mode;
use ordo_reorder::{Algorithm, Policy};
use ordo_threads::ProtocolKind;

use super::series::{Measure, View, abort_rate, latency_max, latency_mean, latency_p99, mode_name, throughput};
use super::tpcc::{self, Configuration, TpccPoint, points};
use super::{Context, Timing, clear_runs, relative};
use crate::commands::bench::pg::{PgBench, PgRun};
use crate::commands::bench::pipeline::{PipelineBench, PipelineRun};
use crate::commands::bench::threads::{AssignmentArg, ThreadsBench, ThreadsProtocol, ThreadsRun};
use crate::commands::bench::workloads::WorkloadName;
use crate::commands::bench::workloads::{BindingArg, WorkloadKnobs};
use crate::commands::bench::{Bench, read_runs_log, value_name};
use crate::commands::fvs_bench::{FvsBenchArgs, FvsBenchRecord};

pub struct Experiment {
    pub name: &'static str,
    pub title: &'static str,
    pub run: fn(&Context) -> Result<ExperimentReport>,
    /// How long each point runs without `--quick`.
    pub timing: Timing,
    /// Whose claims it checks.
    pub reference: Reference,
}

/// The paper's experiments: its runs (60 s after 10 s of warm-up, 10 of them) scaled to this
/// machine.
const PAPER_TIMING: Timing = Timing { duration_s: 10.0, warmup_s: 2.0 };
/// Seed 003's experiments: TPC-C on the threads engine settles within a second, and 36 points of
/// 3 runs stay within minutes.
const SEED_003_TIMING: Timing = Timing { duration_s: 2.0, warmup_s: 1.0 };

/// The adaptive experiment: 70 configurations and 20 confirmation runs per round; 5 s runs
/// spread by 20-40% on this machine on a bad evening, 2 s runs more.
const ADAPTIVE_TIMING: Timing = Timing { duration_s: 5.0, warmup_s: 0.5 };

/// One of the paper's experiments.
const fn paper(name: &'static str, title: &'static str, run: fn(&Context) -> Result<ExperimentReport>) -> Experiment {
    Experiment { name, title, run, timing: PAPER_TIMING, reference: Reference::Paper }
}

pub const ALL: &[Experiment] = &[
    paper("fvs", "Figures 5-6: feedback vertex set algorithms", fvs),
    paper("greedy", "Figures 7-9: SCC-based against sort-based greedy, end to end", greedy),
    paper("modes", "Figures 10-12: batching and reordering at storage and validator", modes),
    paper("batch-size", "Batch size", batch_size),
    Experiment {
        name: "adaptive",
        title: "Adaptive batch sizes: srvc with auto against fixed sizes",
        run: super::adaptive::adaptive,
        timing: ADAPTIVE_TIMING,
        reference: Reference::Target,
    },
    paper("smallbank", "Figures 13-15: SmallBank", smallbank),
    paper("policies", "Figures 16-18: tail-latency policies", policies),
    paper("threads", "Figures 19-21: thread-per-worker engines and thread-aware reordering (YCSB)", threads),
    paper("postgres", "Figures 22-24: batching and reordering in front of PostgreSQL (SmallBank)", postgres),
    paper("reorder-workers", "Figures 26-28: parallel reorder workers", reorder_workers),
    Experiment {
        name: "tpcc",
        title: "Seed 003, TPC-C: fixed against random warehouse binding",
        run: tpcc,
        timing: SEED_003_TIMING,
        reference: Reference::Seed003,
    },
    Experiment {
        name: "hybrid",
        title: "Seed 003, the hybrid workload: TPC-C plus an analytic transaction, by contention degree",
        run: hybrid,
        timing: SEED_003_TIMING,
        reference: Reference::Seed003,
    },
];

pub(super) const THETAS: [f64; 5] = [0.5, 0.6, 0.7, 0.8, 0.9];
/// Live transactions in the pipeline experiments: the level that loads ordo's engine on two
/// cores. The paper's 300 loaded its Java prototype; here it makes every mode thrash (the
/// `modes` experiment shows both).
const CONCURRENCY: usize = 100;

/// Runs `bench` with the context's timing, logging runs for resumption; returns the results
/// as read back from the JSON file, and the command that reproduces them.
pub(super) fn sweep<B: Bench>(ctx: &Context, name: &str, mut bench: B) -> Result<(Vec<RunResult<B::Run>>, String)> {
    let log = clear_runs(ctx, name)?;
    let json = ctx.path(&format!("{name}.json"));
    let common = bench.common_mut();
    common.duration = ctx.duration_s;
    common.warmup = ctx.warmup_s;
    common.runs = ctx.runs;
    let command = bench.command();
    let common = bench.common_mut();
    common.json = Some(json.clone());
    common.csv = Some(ctx.path(&format!("{name}.csv")));
    common.runs_log = Some(log);
    bench.sweep()?;
    let text = std::fs::read_to_string(&json).with_context(|| format!("cannot read {}", json.display()))?;
    let results: Vec<RunResult<B::Run>> =
        serde_json::from_str(&text).with_context(|| format!("{} is not a list of results", json.display()))?;
    Ok((results, command))
}

/// A pipeline sweep over `THETAS` at `CONCURRENCY` live transactions, as `configure` sets it.
pub(super) fn pipeline(configure: impl FnOnce(&mut PipelineBench)) -> PipelineBench {
    let mut bench = PipelineBench::default();
    bench.common.theta = THETAS.to_vec();
    bench.engine.concurrency = vec![CONCURRENCY];
    configure(&mut bench);
    bench
}

pub(super) fn draw_line(ctx: &Context, report: &mut ExperimentReport, file: &str, chart: &LineChart) -> Result<()> {
    let (svg, png) = render_line(chart, &ctx.path(file))?;
    report.charts.push((chart.title.clone(), relative(&png), relative(&svg)));
    Ok(())
}

fn draw_percentiles(ctx: &Context, report: &mut ExperimentReport, file: &str, chart: &PercentileChart) -> Result<()> {
    let (svg, png) = render_percentiles(chart, &ctx.path(file))?;
    report.charts.push((chart.title.clone(), relative(&png), relative(&svg)));
    Ok(())
}

pub(super) fn theta<C>(r: &RunResult<C>) -> f64 {
    r.info.theta
}

fn theta_label(x: f64) -> String {
    format!("θ={x}")
}

fn find<C>(results: &[RunResult<C>], test: impl Fn(&RunResult<C>) -> bool) -> Option<&RunResult<C>> {
    results.iter().find(|r| test(r))
}

pub(super) fn ratio<R>(a: Option<&R>, b: Option<&R>, measure: &Measure<R>) -> Option<f64> {
    let (a, b) = (a?, b?);
    let denominator = (measure.value)(b);
    (denominator > 0.0).then(|| (measure.value)(a) / denominator)
}

pub(super) fn times(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.2}x"))
}

/// `0.4` → "60% lower"; a ratio above one reads as how many times higher.
fn percent_lower(value: Option<f64>) -> String {
    match value {
        None => "n/a".into(),
        Some(v) if v > 1.0 => format!("{v:.1}x higher"),
        Some(v) => format!("{:.0}% lower", 100.0 * (1.0 - v)),
    }
}

/// The smallest and largest of some values, if any.
pub(super) fn range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().filter(|v| v.is_finite()).fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((low, high)) => Some((low.min(v), high.max(v))),
    })
}

/// `a` to `b` as ratios (`1.10x to 1.85x`), or one ratio when they agree to two decimals.
fn ratio_range(range: Option<(f64, f64)>) -> String {
    match range {
        None => "n/a".into(),
        Some((low, high)) if format!("{low:.2}") == format!("{high:.2}") => format!("{low:.2}x"),
        Some((low, high)) => format!("{low:.2}x to {high:.2}x"),
    }
}

/// The pipeline's configuration of a result.
pub(super) fn pipeline_config(r: &RunResult<PipelineRun>) -> &ordo_pipeline::PipelineConfig {
    &r.info.run.config
}

/// Charts every pipeline experiment draws: throughput, average latency, abort rate and
/// percentile latency against θ.
fn standard_charts<C>(
    ctx: &Context,
    report: &mut ExperimentReport,
    name: &str,
    results: &[RunResult<C>],
    series: &dyn Fn(&RunResult<C>) -> String,
    what: &str,
) -> Result<()> {
    let view = View { results, series, x: &theta };
    draw_line(
        ctx,
        report,
        &format!("{name}_tps"),
        &view.line(&format!("Throughput, {what}"), "Zipf skew θ", &throughput()),
    )?;
    draw_line(
        ctx,
        report,
        &format!("{name}_latency"),
        &view.line(&format!("Average latency, {what}"), "Zipf skew θ", &latency_mean()),
    )?;
    draw_line(
        ctx,
        report,
        &format!("{name}_abort"),
        &view.line(&format!("Abort rate, {what}"), "Zipf skew θ", &abort_rate()),
    )?;
    draw_percentiles(
        ctx,
        report,
        &format!("{name}_percentiles"),
        &view.percentiles(&format!("Percentile latency, {what}"), &theta_label),
    )
}

pub(super) fn section(name: &str, command: String) -> ExperimentReport {
    let experiment = ALL.iter().find(|e| e.name == name).expect("known experiment");
    ExperimentReport {
        name: name.into(),
        title: experiment.title.into(),
        command,
        data_files: vec![format!("{name}.json"), format!("{name}.csv")],
        ..ExperimentReport::default()
    }
}

/// The paper's Fig. 5-6 at θ=0.9 (`paper-data/fvs`): (algorithm, mean FVS size per
/// 40-transaction batch, mean time per batch in ms). `greedy_sort` is the paper's
/// `greedy_simple`.
const PAPER_FVS_09: [(&str, f64, f64); 4] = [
    ("greedy_prod", 3.3537, 0.2899),
    ("greedy_sort", 3.4404, 0.0754),
    ("hybrid_20", 3.3068, 1.1966),
    ("random", 6.0806, 0.5038),
];

fn fvs(ctx: &Context) -> Result<ExperimentReport> {
    let batches = if ctx.quick { 2_000 } else { 10_000 };
    let command = format!("ordo fvs-bench --batches {batches} --runs {}", ctx.runs);
    let args = FvsBenchArgs { batches, runs: ctx.runs, ..FvsBenchArgs::defaults() };
    let records = crate::commands::fvs_bench::measure(&args, true)?;
    let json = ctx.path("fvs.json");
    ordo_harness::output::write_json(&json, &records)?;
    ordo_harness::output::write_csv(&ctx.path("fvs.csv"), &records)?;
    let records: Vec<FvsBenchRecord> = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    let mut report = section("fvs", command);
    let line = |title: &str, y_label: &str, value: fn(&FvsBenchRecord) -> f64| {
        let mut series: Vec<ordo_figures::Series> = Vec::new();
        for r in &records {
            let point = ordo_figures::Point { x: r.theta, y: value(r), error: None };
            match series.iter_mut().find(|s| s.name == r.algorithm) {
                Some(s) => s.points.push(point),
                None => series.push(ordo_figures::Series { name: r.algorithm.clone(), points: vec![point] }),
            }
        }
        LineChart { title: title.into(), x_label: "Zipf skew θ".into(), y_label: y_label.into(), series, log_y: None }
    };
    let mut size = line("Mean FVS size per 40-transaction batch", "Transactions aborted per batch", |r| r.fvs_mean);
    size.log_y = Some(false);
    draw_line(ctx, &mut report, "fvs_size", &size)?;
    let mut time = line("Median time per batch", "Time per batch (µs)", |r| r.time_us_median);
    time.log_y = Some(true);
    draw_line(ctx, &mut report, "fvs_time", &time)?;
    let at = |algorithm: &str| records.iter().find(|r| r.algorithm == algorithm && (r.theta - 0.9).abs() < 1e-9);
    for (algorithm, paper, _) in PAPER_FVS_09 {
        report.claims.push(Claim {
            quantity: format!("mean FVS size of {algorithm} at θ=0.9"),
            paper: format!("{paper:.2}"),
            ordo: at(algorithm).map_or_else(|| "n/a".into(), |r| format!("{:.2}", r.fvs_mean)),
            agrees: None,
        });
    }
    let random_over_prod = at("random").zip(at("greedy_prod")).map(|(r, g)| r.fvs_mean / g.fvs_mean);
    report.claims.push(Claim {
        quantity: "random / greedy_prod FVS size at θ=0.9".into(),
        paper: format!("{:.2}x", PAPER_FVS_09[3].1 / PAPER_FVS_09[0].1),
        ordo: times(random_over_prod),
        agrees: random_over_prod.map(|v| v > 1.2),
    });
    let saving = at("greedy_sort").zip(at("greedy_prod")).map(|(s, g)| 1.0 - s.time_us_mean / g.time_us_mean);
    report.claims.push(Claim {
        quantity: "greedy_sort's time saving over greedy_prod at θ=0.9".into(),
        paper: format!("{:.0}%", 100.0 * (1.0 - PAPER_FVS_09[1].2 / PAPER_FVS_09[0].2)),
        ordo: saving.map_or_else(|| "n/a".into(), |v| format!("{:.0}%", 100.0 * v)),
        agrees: saving.map(|v| v > 0.3),
    });
    let searched: Vec<&FvsBenchRecord> = records.iter().filter(|r| r.algorithm == "search").collect();
    let unfinished = searched.iter().map(|r| r.fell_back).sum::<usize>();
    let highest = searched.iter().map(|r| r.theta).fold(f64::NAN, f64::max);
    report.claims.push(Claim {
        quantity: format!("batches on which the exact search fell back to greedy, θ up to {highest}"),
        paper: "no result above θ=0.7".into(),
        ordo: format!("{unfinished} of {}", searched.iter().map(|r| r.batches).sum::<usize>()),
        agrees: None,
    });
    // How ordo's sizes, ranking and times at θ=0.9 compare with the paper's, from the data.
    // (algorithm, the paper's size, the paper's ms, ordo's record)
    let compared: Vec<(&str, f64, f64, &FvsBenchRecord)> =
        PAPER_FVS_09.iter().filter_map(|&(name, size, ms)| at(name).map(|r| (name, size, ms, r))).collect();
    if !compared.is_empty() {
        let sizes = range(compared.iter().map(|&(_, paper, _, r)| r.fvs_mean / paper));
        let rank = |size: fn(f64, &FvsBenchRecord) -> f64| {
            let mut ranked = compared.clone();
            ranked.sort_by(|a, b| size(a.1, a.3).total_cmp(&size(b.1, b.3)));
            ranked.iter().map(|c| c.0).collect::<Vec<_>>().join(" < ")
        };
        let (ours, papers) = (rank(|_, r| r.fvs_mean), rank(|paper, _| paper));
        let speedups = range(compared.iter().map(|&(_, _, ms, r)| 1000.0 * ms / r.time_us_mean.max(f64::MIN_POSITIVE)));
        report.notes.push(format!(
            "At θ=0.9 ordo's mean FVS sizes are {} the paper's for these algorithms. By size, ordo ranks them \
             {ours}; the paper, {papers}{}. ordo's mean time per batch is {} lower than the Java prototype's.",
            ratio_range(sizes),
            if ours == papers { " (the same order)" } else { "" },
            speedups.map_or_else(|| "n/a".into(), |(low, high)| format!("{low:.0} to {high:.0} times")),
        ));
    }
    Ok(report)
}

fn greedy(ctx: &Context) -> Result<ExperimentReport> {
    let bench = pipeline(|b| {
        b.engine.mode = vec![Mode::Base, Mode::Srvc];
        b.engine.algorithm =
            vec!["greedy_prod".parse().expect("a known algorithm"), "greedy_sort".parse().expect("a known algorithm")];
        b.engine.minimize = false;
    });
    let (results, command) = sweep(ctx, "greedy", bench)?;
    let mut report = section("greedy", command);
    let series = |r: &RunResult<PipelineRun>| {
        let config = pipeline_config(r);
        if config.mode == Mode::Base { mode_name(Mode::Base) } else { format!("srvc with {}", config.reorder.label()) }
    };
    standard_charts(
        ctx,
        &mut report,
        "greedy",
        &results,
        &series,
        "SCC-based (greedy_prod) and sort-based (greedy_sort) greedy",
    )?;
    let srvc_with = |algorithm: Algorithm, theta: f64| {
        find(&results, |r| {
            let config = pipeline_config(r);
            config.mode == Mode::Srvc
                && config.reorder.algorithm == algorithm
                && config.reorder.policy == Policy::ProdDegree
                && r.info.theta == theta
        })
    };
    for theta in [0.8, 0.9] {
        let value =
            ratio(srvc_with(Algorithm::GreedySort, theta), srvc_with(Algorithm::GreedyScc, theta), &throughput());
        report.claims.push(Claim {
            quantity: format!("greedy_sort / greedy_prod throughput at θ={theta}"),
            paper: "> 1, growing with skew".into(),
            ordo: times(value),
            agrees: value.map(|v| v >= 1.0),
        });
    }
    Ok(report)
}

/// The paper's Fig. 10, read off the figure: (θ, base, srvc) in thousands of commits/s.
const PAPER_MODES: [(f64, f64, f64); 5] =
    [(0.5, 120.0, 315.0), (0.6, 83.0, 220.0), (0.7, 40.0, 105.0), (0.8, 18.0, 50.0), (0.9, 10.0, 22.0)];

/// The paper's Fig. 12, read off the figure: (θ, base, srvc) abort rate in percent.
const PAPER_ABORTS: [(f64, f64, f64); 3] = [(0.6, 56.0, 50.0), (0.7, 83.0, 80.0), (0.8, 92.5, 91.0)];

/// The paper's `batch` mode against `base`, read off its Fig. 10 (throughput at θ=0.5).
const PAPER_BATCH_OVER_BASE: f64 = 2.4;

fn modes(ctx: &Context) -> Result<ExperimentReport> {
    let all_modes = |b: &mut PipelineBench| b.engine.mode = Mode::ALL.to_vec();
    let (results, command) = sweep(ctx, "modes", pipeline(all_modes))?;
    let paper_concurrency = 300;
    let at_300 = pipeline(|b| {
        all_modes(b);
        b.engine.concurrency = vec![paper_concurrency];
    });
    let (paper_setting, command_300) = sweep(ctx, "modes_c300", at_300)?;
    let mut report = section("modes", format!("{command}; {command_300}"));
    report.data_files.extend(["modes_c300.json".into(), "modes_c300.csv".into()]);
    let series = |r: &RunResult<PipelineRun>| mode_name(pipeline_config(r).mode);
    standard_charts(ctx, &mut report, "modes", &results, &series, &format!("concurrency {CONCURRENCY}"))?;
    let view = View { results: &paper_setting, series: &series, x: &theta };
    draw_line(
        ctx,
        &mut report,
        "modes_c300_tps",
        &view.line("Throughput at the paper's concurrency (300)", "Zipf skew θ", &throughput()),
    )?;
    let mode_at = |set: &[RunResult<PipelineRun>], mode: Mode, theta: f64| {
        find(set, |r| pipeline_config(r).mode == mode && r.info.theta == theta).cloned()
    };
    for (theta, base, srvc) in PAPER_MODES {
        let value = ratio(
            mode_at(&results, Mode::Srvc, theta).as_ref(),
            mode_at(&results, Mode::Base, theta).as_ref(),
            &throughput(),
        );
        let at_300 = ratio(
            mode_at(&paper_setting, Mode::Srvc, theta).as_ref(),
            mode_at(&paper_setting, Mode::Base, theta).as_ref(),
            &throughput(),
        );
        report.claims.push(Claim {
            quantity: format!("srvc / base throughput at θ={theta} (concurrency {CONCURRENCY}; {paper_concurrency})"),
            paper: format!("~{:.1}x", srvc / base),
            ordo: format!("{}; {}", times(value), times(at_300)),
            agrees: value.map(|v| v > 1.0),
        });
    }
    // The paper's own abort rates (its Fig. 12, concurrency 300) barely move between base and
    // srvc; its throughput gain is that of processing in batches. Set ordo's beside them.
    for (theta, paper_base, paper_srvc) in PAPER_ABORTS {
        let abort = |mode: Mode| mode_at(&paper_setting, mode, theta).map(|r| 100.0 * r.abort_rate);
        let ordo = match (abort(Mode::Base), abort(Mode::Srvc)) {
            (Some(base), Some(srvc)) => format!("{base:.0}% → {srvc:.0}%"),
            _ => "n/a".into(),
        };
        report.claims.push(Claim {
            quantity: format!("abort rate base → srvc at θ={theta} (concurrency {paper_concurrency})"),
            paper: format!("~{paper_base:.0}% → ~{paper_srvc:.0}%"),
            ordo,
            agrees: None,
        });
    }
    let p99 =
        ratio(mode_at(&results, Mode::Vc, 0.8).as_ref(), mode_at(&results, Mode::Batch, 0.8).as_ref(), &latency_p99());
    report.claims.push(Claim {
        quantity: "vc against batch, 99th percentile latency at θ=0.8".into(),
        paper: "up to 70% lower".into(),
        ordo: percent_lower(p99),
        agrees: p99.map(|v| v < 1.0),
    });
    // What the measurements say about where the gains come from, computed from them.
    let batch_over_base = range(THETAS.iter().filter_map(|&theta| {
        ratio(
            mode_at(&results, Mode::Batch, theta).as_ref(),
            mode_at(&results, Mode::Base, theta).as_ref(),
            &throughput(),
        )
    }));
    let srvc_over_batch = range(THETAS.iter().filter_map(|&theta| {
        ratio(
            mode_at(&results, Mode::Srvc, theta).as_ref(),
            mode_at(&results, Mode::Batch, theta).as_ref(),
            &throughput(),
        )
    }));
    let high_skew_aborts = range(paper_setting.iter().filter(|r| r.info.theta >= 0.8).map(|r| 100.0 * r.abort_rate));
    let placements: Vec<String> = {
        let mut names: Vec<String> = results.iter().map(|r| pipeline_config(r).placement.to_string()).collect();
        names.sort();
        names.dedup();
        names
    };
    report.notes.push(format!(
        "In the paper most of srvc's advantage over base comes from processing in batches: its `batch` mode \
         alone is ~{PAPER_BATCH_OVER_BASE}x `base`. Here, at concurrency {CONCURRENCY}, batch / base ranges over \
         {} across θ = {} to {}, and srvc / batch (what reordering adds to batching) over {}. At the paper's \
         concurrency of {paper_concurrency}, ordo's abort rates from θ=0.8 range from {} across the modes. \
         Every run used the placement {} (threads separated by `;`); BENCHMARKS.md compares placements.",
        ratio_range(batch_over_base),
        THETAS[0],
        THETAS[THETAS.len() - 1],
        ratio_range(srvc_over_batch),
        high_skew_aborts.map_or_else(|| "n/a".into(), |(low, high)| format!("{low:.0}% to {high:.0}%")),
        placements.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", "),
    ));
    Ok(report)
}

fn batch_size(ctx: &Context) -> Result<ExperimentReport> {
    use crate::commands::bench::values::{BatchSize, BatchSizeArg};
    let sizes = [20, 40, 60, 80];
    let bench = pipeline(|b| {
        b.engine.mode = vec![Mode::Srvc];
        b.engine.batch_size = sizes.iter().map(|&n| BatchSize::of(n)).collect();
    });
    let (results, command) = sweep(ctx, "batch-size", bench)?;
    let mut report = section("batch-size", command);
    let series = |r: &RunResult<PipelineRun>| format!("batch size {}", pipeline_config(r).validator_batch_size);
    standard_charts(ctx, &mut report, "batch-size", &results, &series, "srvc by validator batch size")?;
    for theta in [0.5, 0.8] {
        let best = results
            .iter()
            .filter(|r| r.info.theta == theta)
            .max_by(|a, b| a.throughput_tps.total_cmp(&b.throughput_tps))
            .map(|r| pipeline_config(r).validator_batch_size.to_string());
        report.claims.push(Claim {
            quantity: format!("best batch size at θ={theta}"),
            paper: "40 (80 is worst)".into(),
            ordo: best.unwrap_or_else(|| "n/a".into()),
            agrees: None,
        });
    }
    // How much latency a larger cap costs here, from the data.
    let (smallest, largest) = (sizes[0], sizes[sizes.len() - 1]);
    let with = |size: u32, theta: f64| {
        find(&results, |r| pipeline_config(r).validator_batch_size == BatchSize::of(size) && r.info.theta == theta)
    };
    let latency =
        range(THETAS.iter().filter_map(|&theta| ratio(with(largest, theta), with(smallest, theta), &latency_mean())));
    let filled = range(results.iter().map(|r| r.batches.size_mean));
    report.notes.push(format!(
        "ordo closes a partial batch as soon as no more requests are queued, so the batch size is a cap rather \
         than a wait: the mean validator batch held {} transactions across these runs, and mean latency with a \
         cap of {largest} was {} that with {smallest} across θ.",
        filled.map_or_else(|| "n/a".into(), |(low, high)| format!("{low:.1} to {high:.1}")),
        ratio_range(latency),
    ));
    Ok(report)
}

fn smallbank(ctx: &Context) -> Result<ExperimentReport> {
    let bench = pipeline(|b| {
        b.common.workload.workload = Some(WorkloadName::Smallbank);
        b.engine.mode = Mode::ALL.to_vec();
    });
    let (results, command) = sweep(ctx, "smallbank", bench)?;
    let mut report = section("smallbank", command);
    let series = |r: &RunResult<PipelineRun>| mode_name(pipeline_config(r).mode);
    standard_charts(ctx, &mut report, "smallbank", &results, &series, "SmallBank")?;
    let mode_at = |mode: Mode, theta: f64| find(&results, |r| pipeline_config(r).mode == mode && r.info.theta == theta);
    let best = THETAS
        .iter()
        .filter_map(|&theta| {
            ratio(mode_at(Mode::Srvc, theta), mode_at(Mode::Base, theta), &throughput()).map(|v| (theta, v))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    report.claims.push(Claim {
        quantity: "largest srvc / base throughput over θ".into(),
        paper: "up to 3.1x".into(),
        ordo: best.map_or_else(|| "n/a".into(), |(theta, v)| format!("{v:.2}x (θ={theta})")),
        agrees: best.map(|(_, v)| v > 1.0),
    });
    Ok(report)
}

fn policies(ctx: &Context) -> Result<ExperimentReport> {
    let bench = pipeline(|b| {
        b.engine.mode = vec![Mode::Base, Mode::Batch, Mode::Srvc];
        b.engine.policy = vec![Policy::ProdDegree, Policy::Rct, Policy::Rdeg];
    });
    let (results, command) = sweep(ctx, "policies", bench)?;
    let mut report = section("policies", command);
    let series = |r: &RunResult<PipelineRun>| {
        let config = pipeline_config(r);
        match (config.mode, config.reorder.policy) {
            (Mode::Srvc, Policy::ProdDegree) => "mc: most commits (prod-degree)".into(),
            (Mode::Srvc, Policy::Rct) => "rct: fewest restarts first".into(),
            (Mode::Srvc, Policy::Rdeg) => "rdeg: degree / 2^restarts".into(),
            (Mode::Srvc, other) => other.name().into(),
            (mode, _) => mode_name(mode),
        }
    };
    standard_charts(ctx, &mut report, "policies", &results, &series, "tail-latency policies")?;
    let srvc_with = |policy: Policy, theta: f64| {
        find(&results, |r| {
            let config = pipeline_config(r);
            config.mode == Mode::Srvc && config.reorder.policy == policy && r.info.theta == theta
        })
    };
    for theta in [0.7, 0.8, 0.9] {
        let (rdeg, mc) = (srvc_with(Policy::Rdeg, theta), srvc_with(Policy::ProdDegree, theta));
        let latency = ratio(rdeg, mc, &latency_max());
        let throughput = ratio(rdeg, mc, &throughput());
        report.claims.push(Claim {
            quantity: format!("rdeg against mc at θ={theta}: maximum latency; throughput"),
            paper: "up to 86% lower; negligible change".into(),
            ordo: format!("{}; {}", percent_lower(latency), times(throughput)),
            agrees: latency.map(|v| v < 1.0),
        });
    }
    Ok(report)
}

fn reorder_workers(ctx: &Context) -> Result<ExperimentReport> {
    let bench = pipeline(|b| {
        b.engine.mode = vec![Mode::Srvc];
        b.engine.reorder_workers = vec![1, 2, 3, 4];
        b.engine.placement =
            vec!["processor,storage,reorder;client,validator,reorder".parse().expect("a valid placement")];
    });
    let (results, command) = sweep(ctx, "reorder-workers", bench)?;
    let mut report = section("reorder-workers", command);
    let series = |r: &RunResult<PipelineRun>| {
        let workers = pipeline_config(r).reorder_workers;
        format!("{workers} reorder worker{}", if workers == 1 { "" } else { "s" })
    };
    standard_charts(ctx, &mut report, "reorder-workers", &results, &series, "srvc by number of reorder workers")?;
    let with = |workers: usize, theta: f64| {
        find(&results, |r| pipeline_config(r).reorder_workers == workers && r.info.theta == theta)
    };
    let ratios: Vec<(f64, f64)> = THETAS
        .iter()
        .filter_map(|&theta| ratio(with(4, theta), with(1, theta), &throughput()).map(|v| (theta, v)))
        .collect();
    let best = ratios.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
    report.claims.push(Claim {
        quantity: "largest 4-worker / 1-worker throughput over θ".into(),
        paper: "up to 2.6x".into(),
        ordo: best.map_or_else(|| "n/a".into(), |(theta, v)| format!("{v:.2}x (θ={theta})")),
        agrees: None,
    });
    // How long planning a batch takes here, against the time between batches, from the data.
    let one_worker: Vec<&RunResult<PipelineRun>> =
        results.iter().filter(|r| pipeline_config(r).reorder_workers == 1).collect();
    let plan_us = range(one_worker.iter().map(|r| r.batches.reorder_us_mean));
    let busy = range(one_worker.iter().filter(|r| r.info.duration_s > 0.0).map(|r| {
        let batches_per_s = r.batches.count as f64 / r.info.duration_s;
        100.0 * batches_per_s * r.batches.reorder_us_mean / 1e6
    }));
    report.notes.push(format!(
        "The paper's reordering was its bottleneck (Java, milliseconds per batch), so more workers helped. \
         Here one worker planned a batch in {} µs on average, busy planning for {} of the measured time; \
         4 workers against 1 ranged over {} across θ.",
        plan_us.map_or_else(|| "n/a".into(), |(low, high)| format!("{low:.1} to {high:.1}")),
        busy.map_or_else(|| "n/a".into(), |(low, high)| format!("{low:.1}% to {high:.1}%")),
        ratio_range(range(ratios.iter().map(|&(_, v)| v))),
    ));
    Ok(report)
}

/// Protocols of the thread-per-worker experiment, and the names the legends give them.
const PROTOCOLS: [(ThreadsProtocol, &str); 8] = [
    (ThreadsProtocol { protocol: ProtocolKind::Serial, reorder: false }, "serial: one thread, no concurrency control"),
    (ThreadsProtocol::SILO, "Silo OCC"),
    (ThreadsProtocol { protocol: ProtocolKind::TicToc, reorder: false }, "TicToc"),
    (ThreadsProtocol { protocol: ProtocolKind::NoWait, reorder: false }, "2PL no-wait"),
    (ThreadsProtocol { protocol: ProtocolKind::WaitDie, reorder: false }, "2PL wait-die"),
    (ThreadsProtocol { protocol: ProtocolKind::MvccSi, reorder: false }, "MVCC snapshot isolation"),
    (ThreadsProtocol { protocol: ProtocolKind::Ssi, reorder: false }, "serializable SI (SSN)"),
    (ThreadsProtocol { protocol: ProtocolKind::Silo, reorder: true }, "reorder: thread-aware batches over Silo"),
];

fn protocol_name(protocol: ThreadsProtocol) -> String {
    PROTOCOLS
        .iter()
        .find(|(p, _)| *p == protocol)
        .map_or_else(|| protocol.name().to_owned(), |(_, full)| (*full).to_owned())
}

/// The paper's Fig. 19-20 at θ=0.99 with 28 threads (`oltp_kernel/*.dat`), millions of tx/s.
const PAPER_YCSB_099: [(&str, f64); 5] =
    [("thread-aware reordering", 1.89), ("Cicada", 0.85), ("ERMIA", 0.57), ("Silo", 0.44), ("TicToc", 0.38)];
/// Worker threads of the paper's Fig. 19-21.
const PAPER_THREADS: usize = 28;

fn threads(ctx: &Context) -> Result<ExperimentReport> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let thread_counts: Vec<usize> = if cores >= 2 { vec![1, 2] } else { vec![1] };
    let most_threads = thread_counts[thread_counts.len() - 1];
    let configure = |bench: &mut ThreadsBench| {
        bench.common.workload.workload = Some(WorkloadName::Ycsb);
        // --quick loads a tenth of the paper's 10M records, so each point's load stays short.
        bench.common.workload.records = if ctx.quick { 1_000_000 } else { 10_000_000 };
        bench.engine.protocol = PROTOCOLS.iter().map(|(p, _)| *p).collect();
        // The paper's thread-aware assignment: each batch on its own, in equal shares.
        bench.engine.assignment = vec![AssignmentArg::Even];
    };
    let mut by_threads_bench = ThreadsBench::default();
    configure(&mut by_threads_bench);
    by_threads_bench.engine.threads.clone_from(&thread_counts);
    by_threads_bench.common.theta = vec![0.99];
    let thetas: &[f64] = if ctx.quick { &[0.0, 0.6, 0.8, 0.9, 0.99] } else { &[0.0, 0.4, 0.6, 0.8, 0.9, 0.95, 0.99] };
    let mut by_theta_bench = ThreadsBench::default();
    configure(&mut by_theta_bench);
    by_theta_bench.engine.threads = vec![most_threads];
    by_theta_bench.common.theta = thetas.to_vec();
    let (by_threads, command) = sweep(ctx, "threads", by_threads_bench)?;
    let (by_theta, command_theta) = sweep(ctx, "threads_theta", by_theta_bench)?;
    let mut report = section("threads", format!("{command}; {command_theta}"));
    report.data_files.extend(["threads_theta.json".into(), "threads_theta.csv".into()]);
    let series = |r: &RunResult<ThreadsRun>| protocol_name(r.info.run.knobs.protocol);
    let thread_count = |r: &RunResult<ThreadsRun>| r.info.run.knobs.threads as f64;
    let view = View { results: &by_threads, series: &series, x: &thread_count };
    draw_line(
        ctx,
        &mut report,
        "threads_tps",
        &view.line("Throughput at θ=0.99 (YCSB)", "Worker threads", &throughput()),
    )?;
    let view = View { results: &by_theta, series: &series, x: &theta };
    let with = format!("{most_threads} thread{}", if most_threads == 1 { "" } else { "s" });
    draw_line(
        ctx,
        &mut report,
        "threads_theta_tps",
        &view.line(&format!("Throughput with {with} (YCSB)"), "Zipf skew θ", &throughput()),
    )?;
    draw_line(
        ctx,
        &mut report,
        "threads_theta_p99",
        &view.line(&format!("99th percentile latency with {with} (YCSB)"), "Zipf skew θ", &latency_p99()),
    )?;
    draw_line(
        ctx,
        &mut report,
        "threads_theta_abort",
        &view.line(&format!("Abort rate with {with} (YCSB)"), "Zipf skew θ", &abort_rate()),
    )?;
    let skewed: Vec<RunResult<ThreadsRun>> = by_theta.iter().filter(|r| r.info.theta == 0.99).cloned().collect();
    let view = View { results: &skewed, series: &series, x: &theta };
    draw_percentiles(
        ctx,
        &mut report,
        "threads_percentiles",
        &view.percentiles(&format!("Percentile latency at θ=0.99, {with} (YCSB)"), &theta_label),
    )?;

    let at = |protocol: ThreadsProtocol, theta: f64| {
        find(&by_theta, |r| r.info.run.knobs.protocol == protocol && r.info.theta == theta)
    };
    let reorder = ThreadsProtocol { protocol: ProtocolKind::Silo, reorder: true };
    let baselines: Vec<ThreadsProtocol> =
        PROTOCOLS.iter().map(|(p, _)| *p).filter(|p| !p.reorder && p.protocol.concurrent()).collect();
    let best =
        baselines.iter().filter_map(|&p| at(p, 0.99)).max_by(|a, b| a.throughput_tps.total_cmp(&b.throughput_tps));
    let (reorder_mtps, cicada_mtps) = (PAPER_YCSB_099[0].1, PAPER_YCSB_099[1].1);
    let speedup = ratio(at(reorder, 0.99), best, &throughput());
    report.claims.push(Claim {
        quantity: format!(
            "reorder / best baseline throughput at θ=0.99 (ordo's best: {})",
            best.map_or_else(|| "n/a".into(), |r| protocol_name(r.info.run.knobs.protocol))
        ),
        paper: format!("{:.1}x (against Cicada)", reorder_mtps / cicada_mtps),
        ordo: times(speedup),
        agrees: speedup.map(|v| v > 1.0),
    });
    let p99 = ratio(at(reorder, 0.99), best, &latency_p99());
    report.claims.push(Claim {
        quantity: "reorder against the best baseline, 99th percentile latency at θ=0.99".into(),
        paper: "lower".into(),
        ordo: percent_lower(p99),
        agrees: p99.map(|v| v < 1.0),
    });
    let silo = PAPER_YCSB_099.iter().find(|(name, _)| *name == "Silo").map_or(f64::NAN, |p| p.1);
    let silo_speedup = ratio(at(reorder, 0.99), at(ThreadsProtocol::SILO, 0.99), &throughput());
    report.claims.push(Claim {
        quantity: "reorder / Silo throughput at θ=0.99".into(),
        paper: format!("{:.1}x", reorder_mtps / silo),
        ordo: times(silo_speedup),
        agrees: silo_speedup.map(|v| v > 1.0),
    });
    let serial = ThreadsProtocol { protocol: ProtocolKind::Serial, reorder: false };
    for theta in [0.0, 0.99] {
        let serial = at(serial, theta).map(|r| r.throughput_tps);
        let fraction = at(ThreadsProtocol::SILO, theta)
            .zip(serial)
            .map(|(silo, serial)| silo.throughput_tps / (most_threads as f64 * serial));
        report.claims.push(Claim {
            quantity: format!("Silo with {with} as a fraction of {most_threads} x serial at θ={theta}"),
            paper: "n/a (not reported)".into(),
            ordo: fraction.map_or_else(|| "n/a".into(), |f| format!("{:.0}%", 100.0 * f)),
            agrees: None,
        });
    }
    report.notes.push(format!(
        "The paper ran {PAPER_THREADS} threads on two 14-core Xeons; this machine has {cores} core{}, so the \
         thread axis stops at {most_threads} and every ratio is ordo's own, measured in the same sweep. The \
         paper's engines (Cicada, ERMIA, Silo, TicToc) are C++ systems; ordo's baselines are its own \
         implementations of their protocols on one store. The paper at θ=0.99: {}.",
        if cores == 1 { "" } else { "s" },
        PAPER_YCSB_099.iter().map(|(name, m)| format!("{name} {m}M tx/s")).collect::<Vec<_>>().join(", ")
    ));
    Ok(report)
}

/// The paper's Fig. 22-24 (`hekaton/*.dat`, DBMS-X, SmallBank θ=0.9, batch 50) at 30 clients:
/// (throughput K tx/s, average latency ms, abort rate %) for batch and reorder, and the peaks.
const PAPER_PG_BATCH_30: (f64, f64, f64) = (25.6, 57.5, 89.1);
const PAPER_PG_REORDER_30: (f64, f64, f64) = (71.1, 20.6, 34.4);
const PAPER_PG_PEAKS: [(&str, f64); 3] = [("nobatch", 47.3), ("batch", 58.6), ("reorder", 73.0)];

/// Attempts the server refused (40001 serialization failures, 40P01 deadlocks) per attempt sent
/// to it; unlike the abort rate, transactions the reorder tier held back are not counted.
fn server_failures() -> Measure<RunResult<PgRun>> {
    Measure {
        label: "Serialization failures and deadlocks (% of attempts sent)",
        value: |r| {
            let cause = |name: &str| r.aborts.get(name).copied().unwrap_or(0.0);
            let refused = cause("serialization") + cause("deadlock");
            let sent = r.commits + refused + cause("connection_lost");
            if sent > 0.0 { 100.0 * refused / sent } else { 0.0 }
        },
        std: None,
    }
}

fn pg_mode_name(mode: ordo_pgtier::Mode, batch: ordo_pgtier::BatchSize) -> String {
    match mode {
        ordo_pgtier::Mode::NoBatch => "nobatch: one transaction at a time per connection".into(),
        ordo_pgtier::Mode::Batch => format!("batch: batches of {batch}, no reordering"),
        ordo_pgtier::Mode::Reorder => format!("reorder: batches of {batch}, conflicts on one connection"),
    }
}

/// Stops the local cluster when dropped, if the experiment is what started it.
struct StopIfStarted(Option<ordo_pgtier::Cluster>);

impl Drop for StopIfStarted {
    fn drop(&mut self) {
        if let Some(cluster) = self.0.take()
            && let Err(error) = cluster.stop()
        {
            eprintln!("warning: could not stop the local PostgreSQL: {error:#}");
        }
    }
}

fn postgres(ctx: &Context) -> Result<ExperimentReport> {
    use crate::commands::bench::values::{BatchSize, BatchSizeArg};
    use ordo_pgtier::Mode as PgMode;
    // The sweep starts the local cluster of `ordo pg start` if none runs; leave things as found.
    let cluster = ordo_pgtier::Cluster::default_local();
    let _stop = StopIfStarted((!cluster.running().unwrap_or(true)).then_some(cluster));
    let connections = [1, 2, 4, 8, 16, 32];
    let mut bench = PgBench::default();
    bench.common.workload.workload = Some(WorkloadName::Smallbank);
    bench.common.theta = vec![0.9];
    bench.engine.mode = vec![PgMode::NoBatch, PgMode::Batch, PgMode::Reorder];
    bench.engine.connections = connections.to_vec();
    // Groups of 16 keep several server transactions in flight, where placing conflicting
    // transactions on one connection matters. `auto` starts at 64, one server transaction per
    // batch: the fastest setting for both batching modes on two cores, but a serial one, in
    // which reorder and batch tie (BENCHMARKS.md, "Groups as large as the batch").
    bench.engine.pg_group = vec![BatchSize::of(16)];
    let (results, command) = sweep(ctx, "postgres", bench)?;
    let mut report = section("postgres", command);
    let series = |r: &RunResult<PgRun>| pg_mode_name(r.info.run.knobs.mode, r.info.run.knobs.batch_size);
    let connection_count = |r: &RunResult<PgRun>| r.info.run.knobs.connections as f64;
    let view = View { results: &results, series: &series, x: &connection_count };
    let axis = "Connections to PostgreSQL";
    draw_line(ctx, &mut report, "postgres_tps", &view.line("Throughput, SmallBank θ=0.9", axis, &throughput()))?;
    draw_line(
        ctx,
        &mut report,
        "postgres_latency",
        &view.line("Average latency, SmallBank θ=0.9", axis, &latency_mean()),
    )?;
    draw_line(ctx, &mut report, "postgres_abort", &view.line("Abort rate, SmallBank θ=0.9", axis, &abort_rate()))?;
    draw_line(
        ctx,
        &mut report,
        "postgres_failures",
        &view.line("Serialization failures, SmallBank θ=0.9", axis, &server_failures()),
    )?;

    let peak = |mode: PgMode| {
        results
            .iter()
            .filter(|r| r.info.run.knobs.mode == mode)
            .max_by(|a, b| a.throughput_tps.total_cmp(&b.throughput_tps))
    };
    let best_other = [peak(PgMode::NoBatch), peak(PgMode::Batch)]
        .into_iter()
        .flatten()
        .max_by(|a, b| a.throughput_tps.total_cmp(&b.throughput_tps));
    let peak_ratio = ratio(peak(PgMode::Reorder), best_other, &throughput());
    let paper_best_other = PAPER_PG_PEAKS[0].1.max(PAPER_PG_PEAKS[1].1);
    report.claims.push(Claim {
        quantity: "peak reorder / peak of the best other mode, throughput".into(),
        paper: format!("{:.2}x", PAPER_PG_PEAKS[2].1 / paper_best_other),
        ordo: times(peak_ratio),
        agrees: peak_ratio.map(|v| v > 1.0),
    });
    let most = connections[connections.len() - 1];
    let at = |mode: PgMode, conns: usize| {
        find(&results, |r| r.info.run.knobs.mode == mode && r.info.run.knobs.connections == conns)
    };
    let throughput_ratio = ratio(at(PgMode::Reorder, most), at(PgMode::Batch, most), &throughput());
    report.claims.push(Claim {
        quantity: format!("reorder / batch throughput at the most connections (paper 30, ordo {most})"),
        paper: format!("{:.1}x", PAPER_PG_REORDER_30.0 / PAPER_PG_BATCH_30.0),
        ordo: times(throughput_ratio),
        agrees: throughput_ratio.map(|v| v > 1.0),
    });
    let latency = ratio(at(PgMode::Reorder, most), at(PgMode::Batch, most), &latency_mean());
    report.claims.push(Claim {
        quantity: "reorder against batch, average latency at the most connections".into(),
        paper: format!("{:.0}% lower", 100.0 * (1.0 - PAPER_PG_REORDER_30.1 / PAPER_PG_BATCH_30.1)),
        ordo: percent_lower(latency),
        agrees: latency.map(|v| v < 1.0),
    });
    let aborts = ratio(at(PgMode::Reorder, most), at(PgMode::Batch, most), &server_failures());
    report.claims.push(Claim {
        quantity: "reorder against batch, serialization failures and deadlocks per attempt sent to the server, \
                   at the most connections"
            .into(),
        paper: format!("{:.0}% lower", 100.0 * (1.0 - PAPER_PG_REORDER_30.2 / PAPER_PG_BATCH_30.2)),
        ordo: percent_lower(aborts),
        agrees: aborts.map(|v| v < 1.0),
    });
    let nobatch_16 = ratio(at(PgMode::Reorder, 16), at(PgMode::NoBatch, 16), &throughput());
    report.claims.push(Claim {
        quantity: "reorder / nobatch throughput at 16 connections".into(),
        paper: format!("{:.1}x (DBMS-X at 15 clients)", 64.0 / 36.2),
        ordo: times(nobatch_16),
        agrees: nobatch_16.map(|v| v > 1.0),
    });
    let mut settings: Vec<String> =
        results.iter().filter_map(|r| r.info.run.knobs.settings.get("synchronous_commit").cloned()).collect();
    settings.sort();
    settings.dedup();
    let local = results.iter().all(|r| {
        let url = &r.info.run.knobs.url;
        url.contains("@127.0.0.1") || url.contains("@localhost") || url.contains("host=/")
    });
    report.notes.push(format!(
        "The paper's DBMS-X is an optimistic engine; PostgreSQL's SERIALIZABLE is SSI over snapshots with row \
         locks for writes. Abort rates here count everything that did not commit at its attempt: serialization \
         failures and deadlocks from the server, and (reorder) transactions held back to the next batch; the \
         serialization-failure chart counts only what the server refused. The server {} and ran with \
         synchronous_commit {}{} (see BENCHMARKS.md for what limits throughput).",
        if local { "ran on this machine, on the cores ordo used," } else { "ran on another machine" },
        if settings.is_empty() { "unrecorded".to_owned() } else { settings.join(" and ") },
        if settings.iter().any(|s| s == "on") { ", so every commit waited for a WAL flush" } else { "" },
    ));
    Ok(report)
}

/// The thread counts of the thread-per-worker experiments: 1 and 2, or 1 on a single core.
fn thread_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cores >= 2 { vec![1, 2] } else { vec![1] }
}

fn threads_label(threads: usize) -> String {
    format!("{threads} thread{}", if threads == 1 { "" } else { "s" })
}

const MVCC_SI: ThreadsProtocol = ThreadsProtocol { protocol: ProtocolKind::MvccSi, reorder: false };
const SSI: ThreadsProtocol = ThreadsProtocol { protocol: ProtocolKind::Ssi, reorder: false };
const TICTOC: ThreadsProtocol = ThreadsProtocol { protocol: ProtocolKind::TicToc, reorder: false };
const NO_WAIT: ThreadsProtocol = ThreadsProtocol { protocol: ProtocolKind::NoWait, reorder: false };
const REORDER: ThreadsProtocol = ThreadsProtocol { protocol: ProtocolKind::Silo, reorder: true };

/// The points of a TPC-C sweep: each configuration of `results` with its runs from the sweep's
/// runs log, as medians.
fn tpcc_points(ctx: &Context, name: &str, results: &[RunResult<ThreadsRun>]) -> Result<Vec<TpccPoint>> {
    let log = ctx.path(&format!("{name}.runs.jsonl"));
    let logged = read_runs_log::<ThreadsRun>(&log)?;
    points(results, &logged)
        .with_context(|| format!("reading {} with {}", ctx.path(&format!("{name}.json")).display(), log.display()))
}

/// The point of `points` that `test` picks: the sweep made every point a claim asks for, so a
/// missing one is an error, never "n/a".
fn point<'a>(points: &'a [TpccPoint], what: &str, test: impl Fn(&Configuration) -> bool) -> Result<&'a TpccPoint> {
    points.iter().find(|p| test(&p.config)).with_context(|| format!("the sweep has no point for {what}"))
}

/// `a / b`, when `b` is positive.
fn over(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// A ratio as the claims show it, or why there is none (`denominator` names what was zero).
fn shown(value: Option<f64>, denominator: &str) -> String {
    value.map_or_else(|| format!("undefined: {denominator} is 0"), |v| format!("{v:.2}x"))
}

/// Warehouses of `ordo figures tpcc`, as in issue 15's TPC-C command: under fixed binding each
/// of up to four workers has its own, under random binding two workers draw the same warehouse
/// for a quarter of their transactions.
const TPCC_WAREHOUSES: u32 = 4;
/// Seed 003's protocols (Silo, ERMIA-SI, ERMIA-SSI), then ordo's others.
const TPCC_PROTOCOLS: [ThreadsProtocol; 6] = [ThreadsProtocol::SILO, MVCC_SI, SSI, TICTOC, NO_WAIT, REORDER];

/// Seed 003, §TPC-C (`eval:tpcc`), TPCC-fixed at peak throughput (24 threads): "ERMIA falls
/// behind Silo by 10% and 20%, with SI and SSI respectively". Throughput over Silo's.
const SEED_FIXED_OVER_SILO: [(ThreadsProtocol, &str, f64); 2] = [(MVCC_SI, "ERMIA-SI", 0.90), (SSI, "ERMIA-SSI", 0.80)];
/// Seed 003, §TPC-C, TPCC-random against TPCC-fixed: Silo's throughput "decreased by
/// approximately 30%", ERMIA's by 15% (the text does not tell SI and SSI apart here).
const SEED_RANDOM_OVER_FIXED: [(ThreadsProtocol, &str, f64); 3] = [
    (ThreadsProtocol::SILO, "Silo lost about 30%", 0.70),
    (MVCC_SI, "ERMIA lost 15%", 0.85),
    (SSI, "ERMIA lost 15%; SI and SSI not told apart", 0.85),
];

fn tpcc_bench(thread_counts: &[usize]) -> ThreadsBench {
    let mut bench = ThreadsBench::default();
    bench.common.workload.workload = Some(WorkloadName::Tpcc);
    bench.common.workload.warehouses = TPCC_WAREHOUSES;
    bench.common.workload.binding = vec![BindingArg::Fixed, BindingArg::Random];
    bench.engine.protocol = TPCC_PROTOCOLS.to_vec();
    bench.engine.threads = thread_counts.to_vec();
    bench
}

fn tpcc(ctx: &Context) -> Result<ExperimentReport> {
    let counts = thread_counts();
    let most = counts[counts.len() - 1];
    let (results, command) = sweep(ctx, "tpcc", tpcc_bench(&counts))?;
    let points = tpcc_points(ctx, "tpcc", &results)?;
    let mut report = section("tpcc", command);
    let series = |p: &TpccPoint| protocol_name(p.config.protocol);
    let thread_count = |p: &TpccPoint| p.config.threads as f64;
    for binding in [BindingArg::Fixed, BindingArg::Random] {
        let name = value_name(&binding);
        let bound: Vec<TpccPoint> = points.iter().filter(|p| p.config.binding == binding).cloned().collect();
        let view = View { results: &bound, series: &series, x: &thread_count };
        let what = format!("TPC-C, {name} binding, {TPCC_WAREHOUSES} warehouses");
        let chart = view.line(&format!("Throughput, {what}"), "Worker threads", &tpcc::throughput());
        draw_line(ctx, &mut report, &format!("tpcc_{name}_tps"), &chart)?;
        draw_line(
            ctx,
            &mut report,
            &format!("tpcc_{name}_tpmc"),
            &view.line(&format!("tpmC, {what}"), "Worker threads", &tpcc::tpmc()),
        )?;
        draw_line(
            ctx,
            &mut report,
            &format!("tpcc_{name}_abort"),
            &view.line(&format!("Abort rate, {what}"), "Worker threads", &tpcc::abort_rate()),
        )?;
    }

    let at = |protocol: ThreadsProtocol, binding: BindingArg, threads: usize| {
        let what = format!("{}, {} binding, {}", protocol.name(), value_name(&binding), threads_label(threads));
        point(&points, &what, |c| c.protocol == protocol && c.binding == binding && c.threads == threads)
            .map(|p| p.median.throughput_tps)
    };
    let with = threads_label(most);
    let silo = ThreadsProtocol::SILO;
    for (protocol, role, paper) in SEED_FIXED_OVER_SILO {
        let value = over(at(protocol, BindingArg::Fixed, most)?, at(silo, BindingArg::Fixed, most)?);
        report.claims.push(Claim {
            quantity: format!("{} / silo throughput, fixed binding, {with}", protocol.name()),
            paper: format!("{paper:.2}x ({role} {:.0}% below Silo at its peak)", 100.0 * (1.0 - paper)),
            ordo: shown(value, "silo's throughput"),
            agrees: value.map(|v| v < 1.0),
        });
    }
    for (protocol, role, paper) in SEED_RANDOM_OVER_FIXED {
        let value = over(at(protocol, BindingArg::Random, most)?, at(protocol, BindingArg::Fixed, most)?);
        report.claims.push(Claim {
            quantity: format!("{} random / fixed binding throughput, {with}", protocol.name()),
            paper: format!("~{paper:.2}x ({role})"),
            ordo: shown(value, &format!("{}'s fixed-binding throughput", protocol.name())),
            agrees: value.map(|v| v < 1.0),
        });
    }
    let gap = |binding| -> Result<Option<f64>> { Ok(over(at(MVCC_SI, binding, most)?, at(silo, binding, most)?)) };
    let (fixed_gap, random_gap) = (gap(BindingArg::Fixed)?, gap(BindingArg::Random)?);
    let (seed_si_fixed, seed_silo_random, seed_si_random) =
        (SEED_FIXED_OVER_SILO[0].2, SEED_RANDOM_OVER_FIXED[0].2, SEED_RANDOM_OVER_FIXED[1].2);
    report.claims.push(Claim {
        quantity: format!("mvcc_si / silo throughput, random binding, {with} (fixed: {})", shown(fixed_gap, "silo's")),
        paper: format!(
            "~{:.2}x (ERMIA catches up with Silo: {seed_si_fixed:.2} x {seed_si_random:.2} / {seed_silo_random:.2})",
            seed_si_fixed * seed_si_random / seed_silo_random
        ),
        ordo: shown(random_gap, "silo's throughput"),
        agrees: random_gap.zip(fixed_gap).map(|(random, fixed)| random > fixed),
    });
    if most > 1 {
        let mut scaling = Vec::new();
        for protocol in [silo, MVCC_SI, SSI] {
            scaling.push(over(at(protocol, BindingArg::Fixed, most)?, at(protocol, BindingArg::Fixed, 1)?));
        }
        report.claims.push(Claim {
            quantity: format!("{most} / 1 thread throughput, fixed binding: silo; mvcc_si; ssi"),
            paper: "> 1x (all scale reasonably to 24 threads)".into(),
            ordo: scaling.iter().map(|&v| shown(v, "one thread's throughput")).collect::<Vec<_>>().join("; "),
            agrees: scaling.iter().copied().collect::<Option<Vec<f64>>>().map(|v| v.iter().all(|&v| v > 1.0)),
        });
    }
    let mut others = Vec::new();
    for protocol in [TICTOC, NO_WAIT, REORDER] {
        others.push(shown(
            over(at(protocol, BindingArg::Random, most)?, at(protocol, BindingArg::Fixed, most)?),
            "the fixed-binding throughput",
        ));
    }
    report.claims.push(Claim {
        quantity: format!("random / fixed binding throughput, {with}: tictoc; no_wait; reorder"),
        paper: "not in seed 003".into(),
        ordo: others.join("; "),
        agrees: None,
    });
    let mut best: Option<(ThreadsProtocol, f64)> = None;
    for protocol in [silo, TICTOC, NO_WAIT, MVCC_SI] {
        let tps = at(protocol, BindingArg::Random, most)?;
        if best.is_none_or(|(_, best_tps)| tps > best_tps) {
            best = Some((protocol, tps));
        }
    }
    let (best_protocol, best_tps) = best.expect("four baselines");
    report.claims.push(Claim {
        quantity: format!(
            "reorder / the best of silo, tictoc, no_wait, mvcc_si ({}), random binding, {with}",
            best_protocol.name()
        ),
        paper: "not in seed 003 (issue 15's target: at least 1.20x)".into(),
        ordo: shown(over(at(REORDER, BindingArg::Random, most)?, best_tps), "the best baseline's throughput"),
        agrees: None,
    });
    let aborts = |binding: BindingArg| {
        range(
            points
                .iter()
                .filter(|p| p.config.binding == binding && p.config.threads == most)
                .map(|p| 100.0 * p.median.abort_rate),
        )
        .map_or_else(String::new, |(low, high)| format!("{low:.1}% to {high:.1}%"))
    };
    // A point whose runs saw a transaction wait this long stalled, which a short run cannot
    // average away: say which, so a ratio far from the others is read with it.
    let stall_us = 100_000.0;
    let stalled: Vec<String> = results
        .iter()
        .filter(|r| r.latency_us.max > stall_us)
        .map(|r| {
            let binding = match &r.info.run.workload {
                WorkloadKnobs::Tpcc(knobs) => value_name(&knobs.binding),
                other => other.name().to_owned(),
            };
            format!(
                "{} ({binding}, {}: {:.0} ms)",
                r.info.run.knobs.protocol.name(),
                threads_label(r.info.run.knobs.threads),
                r.latency_us.max / 1000.0
            )
        })
        .collect();
    if !stalled.is_empty() {
        report.notes.push(format!(
            "Points whose runs held a transaction for more than {:.0} ms (the mean over runs of the longest \
             latency): {}. A stall that long takes a large share of a short run; the medians over runs discount it \
             only when it hits a minority of the runs.",
            stall_us / 1000.0,
            stalled.join(", ")
        ));
    }
    report.notes.push(format!(
        "Seed 003 measured TPC-C up to 24 worker threads (its Figure \"TPCC-random (left); TPCC-fixed (right)\"), \
         one warehouse per worker under fixed binding and a non-uniform draw of the warehouse under random binding; \
         ordo draws it uniformly over {TPCC_WAREHOUSES} warehouses, on at most {most} workers, so the ratios at {with} \
         stand for seed 003's at its peak. With {with}, the protocols abort {} of attempts under fixed binding and \
         {} under random binding. tpmC counts committed NewOrders per minute (45% of the standard mix), so its charts \
         follow throughput; seed 003 reported throughput only.",
        aborts(BindingArg::Fixed),
        aborts(BindingArg::Random),
    ));
    Ok(report)
}

/// The contention degrees of seed 003's hybrid experiment: the share of the customers its
/// analytic transaction scans.
const ANALYTIC_RANGES: [f64; 4] = [0.01, 0.05, 0.2, 0.6];
/// Seed 003's share of the analytic transaction in the mix.
const ANALYTIC_SHARE: f64 = 0.2;
/// Workers of the hybrid experiment (seed 003 ran 24).
const HYBRID_THREADS: usize = 2;
/// One warehouse, every worker's home: the analytic transaction's scan reads the customers and
/// orders that every worker's Payments, NewOrders and Deliveries write, as seed 003's scan of a
/// customer account group met trade-results from every worker.
const HYBRID_WAREHOUSES: u32 = 1;
/// Seed 003's protocols: Silo, ERMIA-SSI, ERMIA-SI (the baseline every ratio divides by).
const HYBRID_PROTOCOLS: [ThreadsProtocol; 3] = [ThreadsProtocol::SILO, SSI, MVCC_SI];

/// Seed 003, §TPC-E (`eval:tpce`), TPCE-hybrid with 24 threads: Silo's total throughput over
/// ERMIA-SI's at each contention degree, as its text gives it ("similar" at 1%, lagging from
/// 5%, the gap growing, 59% at 60%); `None` where no number is given, with the words.
const SEED_HYBRID_SILO_TOTAL: [(f64, Option<f64>, &str); 4] = [
    (0.01, None, "~1x (similar performance)"),
    (0.05, None, "< 1x (Silo starts to lag behind)"),
    (0.2, None, "< 1x (the gap keeps growing)"),
    (0.6, Some(0.59), "0.59x (Silo's throughput is 59% of ERMIA-SI's)"),
];
/// Seed 003, §TPC-E: ERMIA-SSI "falls behind Silo by 26% at 5% contention degree".
const SEED_HYBRID_SSI_OVER_SILO_5: f64 = 0.74;
/// Seed 003, §TPC-E: "Even at the 1% contention degree, Silo only commits 65% as many queries
/// as ERMIA-SI".
const SEED_HYBRID_SILO_ANALYTIC_1: f64 = 0.65;

fn hybrid_bench() -> ThreadsBench {
    let mut bench = ThreadsBench::default();
    bench.common.workload.workload = Some(WorkloadName::TpccHybrid);
    bench.common.workload.warehouses = HYBRID_WAREHOUSES;
    bench.common.workload.analytic_range = ANALYTIC_RANGES.to_vec();
    bench.common.workload.analytic_share = ANALYTIC_SHARE;
    bench.engine.protocol = HYBRID_PROTOCOLS.to_vec();
    bench.engine.threads = vec![HYBRID_THREADS];
    bench
}

/// A hybrid point's total or analytic throughput over `mvcc_si`'s at the same contention
/// degree (seed 003 normalizes to ERMIA-SI).
struct Relative {
    protocol: ThreadsProtocol,
    percent: f64,
    value: f64,
}

fn hybrid(ctx: &Context) -> Result<ExperimentReport> {
    let (results, command) = sweep(ctx, "hybrid", hybrid_bench())?;
    let points = tpcc_points(ctx, "hybrid", &results)?;
    if points.iter().any(|p| p.config.analytic_range.is_none()) {
        bail!("hybrid.json holds a plain TPC-C result, without a contention degree");
    }
    let mut report = section("hybrid", command);
    let at = |protocol: ThreadsProtocol, range: f64| {
        point(&points, &format!("{} at contention degree {range}", protocol.name()), |c| {
            c.protocol == protocol && c.analytic_range == Some(range)
        })
    };
    let total = |p: &TpccPoint| p.median.throughput_tps;
    let analytic = |p: &TpccPoint| p.median.analytic_tps;
    let relative = |measure: fn(&TpccPoint) -> f64| -> Result<Vec<Relative>> {
        let mut relative = Vec::new();
        for p in &points {
            let range = p.config.analytic_range.context("a hybrid point without its contention degree")?;
            if let Some(value) = over(measure(p), measure(at(MVCC_SI, range)?)) {
                relative.push(Relative { protocol: p.config.protocol, percent: 100.0 * range, value });
            }
        }
        Ok(relative)
    };
    let x_label = "Contention degree (% of the warehouse's customers scanned)";
    let what = format!(
        "{}, {HYBRID_WAREHOUSES} warehouse{}",
        threads_label(HYBRID_THREADS),
        if HYBRID_WAREHOUSES == 1 { "" } else { "s" }
    );
    let relative_series = |r: &Relative| protocol_name(r.protocol);
    let relative_x = |r: &Relative| r.percent;
    for (file, title, label, measure) in [
        (
            "hybrid_total_relative",
            "Total throughput over mvcc_si's",
            "Throughput / mvcc_si's",
            total as fn(&TpccPoint) -> f64,
        ),
        ("hybrid_analytic_relative", "Analytic throughput over mvcc_si's", "Analytic commits / mvcc_si's", analytic),
    ] {
        let relative = relative(measure)?;
        let view = View { results: &relative, series: &relative_series, x: &relative_x };
        let chart = view.line(&format!("{title}, {what}"), x_label, &Measure { label, value: |r| r.value, std: None });
        draw_line(ctx, &mut report, file, &chart)?;
    }
    let series = |p: &TpccPoint| protocol_name(p.config.protocol);
    let percent = |p: &TpccPoint| 100.0 * p.config.analytic_range.unwrap_or_default();
    let view = View { results: &points, series: &series, x: &percent };
    draw_line(
        ctx,
        &mut report,
        "hybrid_tps",
        &view.line(&format!("Throughput, {what}"), x_label, &tpcc::throughput()),
    )?;
    draw_line(
        ctx,
        &mut report,
        "hybrid_analytic_tps",
        &view.line(&format!("Analytic throughput, {what}"), x_label, &tpcc::analytic_throughput()),
    )?;
    draw_line(
        ctx,
        &mut report,
        "hybrid_analytic_abort",
        &view.line(&format!("The analytic transaction's abort rate, {what}"), x_label, &tpcc::analytic_abort_rate()),
    )?;

    let silo = ThreadsProtocol::SILO;
    let ratio_at = |protocol, baseline, range, measure: fn(&TpccPoint) -> f64| -> Result<Option<f64>> {
        Ok(over(measure(at(protocol, range)?), measure(at(baseline, range)?)))
    };
    for (range, paper, words) in SEED_HYBRID_SILO_TOTAL {
        let value = ratio_at(silo, MVCC_SI, range, total)?;
        report.claims.push(Claim {
            quantity: format!("silo / mvcc_si total throughput at {:.0}%", 100.0 * range),
            paper: words.into(),
            ordo: shown(value, "mvcc_si's throughput"),
            // "Similar" has no direction; from 5% on Silo lags.
            agrees: if range < 0.05 && paper.is_none() { None } else { value.map(|v| v < 1.0) },
        });
    }
    let ssi_5 = ratio_at(SSI, silo, 0.05, total)?;
    report.claims.push(Claim {
        quantity: "ssi / silo total throughput at 5%".into(),
        paper: format!("{SEED_HYBRID_SSI_OVER_SILO_5:.2}x (ERMIA-SSI 26% behind Silo)"),
        ordo: shown(ssi_5, "silo's throughput"),
        agrees: ssi_5.map(|v| v < 1.0),
    });
    let ssi_20 = ratio_at(SSI, silo, 0.2, total)?;
    report.claims.push(Claim {
        quantity: "ssi / silo total throughput at 20%".into(),
        paper: "~1x (ERMIA-SSI catches up with Silo: the ratio rises from 5%)".into(),
        ordo: shown(ssi_20, "silo's throughput"),
        agrees: ssi_20.zip(ssi_5).map(|(at_20, at_5)| at_20 > at_5),
    });
    let ssi_over_si: Vec<String> = [0.01, 0.6]
        .into_iter()
        .map(|range| ratio_at(SSI, MVCC_SI, range, total).map(|v| shown(v, "mvcc_si's throughput")))
        .collect::<Result<_>>()?;
    report.claims.push(Claim {
        quantity: "ssi / mvcc_si total throughput at 1%; 60%".into(),
        paper: "no number (ERMIA-SSI does not collapse under contention)".into(),
        ordo: ssi_over_si.join("; "),
        agrees: None,
    });
    let analytic_1 = ratio_at(silo, MVCC_SI, 0.01, analytic)?;
    report.claims.push(Claim {
        quantity: "silo / mvcc_si analytic throughput at 1%".into(),
        paper: format!("{SEED_HYBRID_SILO_ANALYTIC_1:.2}x"),
        ordo: shown(analytic_1, "mvcc_si's analytic throughput"),
        agrees: analytic_1.map(|v| v < 1.0),
    });
    let analytic_60 = ratio_at(silo, MVCC_SI, 0.6, analytic)?;
    report.claims.push(Claim {
        quantity: "silo / mvcc_si analytic throughput at 60%".into(),
        paper: format!("below {SEED_HYBRID_SILO_ANALYTIC_1:.2}x (drops sharply as the range grows)"),
        ordo: shown(analytic_60, "mvcc_si's analytic throughput"),
        agrees: analytic_60.zip(analytic_1).map(|(at_60, at_1)| at_60 < at_1),
    });
    let abort_60 = |protocol| at(protocol, 0.6).map(|p| 100.0 * p.median.analytic_abort_rate);
    let (silo_abort, si_abort) = (abort_60(silo)?, abort_60(MVCC_SI)?);
    report.claims.push(Claim {
        quantity: "the analytic transaction's abort rate at 60%: silo; ssi; mvcc_si".into(),
        paper: "no number (Silo's queries abort massively; SI protects them from updaters)".into(),
        ordo: format!("{silo_abort:.1}%; {:.1}%; {si_abort:.1}%", abort_60(SSI)?),
        agrees: Some(silo_abort > si_abort),
    });
    let si_over_silo = |measure: fn(&TpccPoint) -> f64| -> Result<String> {
        Ok(shown(ratio_at(MVCC_SI, silo, 0.6, measure)?, "silo's"))
    };
    report.notes.push(format!(
        "Seed 003 ran TPC-E with its analytic transaction at 20% of the mix on 24 workers, and dropped aborted \
         queries rather than retrying them (it expected retries to widen Silo's gap). ordo retries every aborted \
         transaction until it commits, runs TPC-C's schema (the analytic transaction scans a contiguous share of \
         one warehouse's customers, sums their balances and their open orders' amounts, and inserts one \
         analytic_history row), on {}, so the scan meets one other worker's updates, not 23. Issue 15 asks, at \
         60%, for mvcc_si to commit at least 2x silo's analytic transactions and at least as many transactions in \
         all: here {} and {}.",
        what,
        si_over_silo(analytic)?,
        si_over_silo(total)?,
    ));
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every experiment's sweep is a valid command line that parses back to itself.
    #[test]
    fn experiment_sweeps_are_valid_and_print_their_commands() {
        let benches = [
            pipeline(|b| b.engine.mode = Mode::ALL.to_vec()),
            pipeline(|b| b.engine.algorithm = vec!["greedy_prod".parse().unwrap(), "greedy_sort".parse().unwrap()]),
        ];
        for bench in benches {
            bench.validate().unwrap();
            let command = Bench::command(&bench);
            let argv: Vec<String> = command.split(' ').skip(2).map(String::from).collect();
            let mut argv_with_name = vec!["ordo".to_owned()];
            argv_with_name.extend(argv.into_iter().skip(1));
            let parsed: PipelineBench = crate::commands::bench::parse(&argv_with_name).unwrap();
            assert_eq!(parsed, bench, "{command}");
        }
        // Every point a claim asks for is planned: 6 protocols x 2 bindings x 2 thread counts;
        // 3 protocols x 4 contention degrees.
        for (bench, points) in [(tpcc_bench(&[1, 2]), 24), (hybrid_bench(), 12)] {
            bench.validate().unwrap();
            let planned = bench.plan().unwrap();
            let command = Bench::command(&bench);
            let mut argv = vec!["ordo".to_owned()];
            argv.extend(command.split(' ').skip(3).map(String::from));
            let parsed: ThreadsBench = crate::commands::bench::parse(&argv).unwrap();
            assert_eq!(parsed, bench, "{command}");
            assert_eq!(planned.len(), points, "{command}");
        }
    }
}
