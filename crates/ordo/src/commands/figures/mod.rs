//! `ordo figures <name>`: each of the paper's experiments as one command, writing its data
//! (JSON, CSV), its charts (SVG, PNG) and a report that sets every chart beside the paper's
//! claim and the ratio ordo measured. Two more reproduce seed 003's comparisons of ERMIA
//! against Silo on ordo's thread-per-worker engine over its storage engine: `tpcc` (TPC-C with
//! fixed against random warehouse binding, at 1 and 2 threads) and `hybrid` (TPC-C plus the
//! analytic transaction, total and analytic throughput normalized to `mvcc_si` against the
//! contention degree). One checks a target of ordo's own: `adaptive` (the pipeline's `auto`
//! batch sizes against fixed ones, which the paper leaves to future work).
//!
//! ```text
//!  experiment ──ordo bench / fvs-bench (runs logged per run)──> <out>/<name>.json, .csv
//!                                                                    │ read back (typed;
//!                                         charts <── ordo-figures <──┤  tpcc, hybrid: medians
//!                                   REPORT.md <── claims computed <──┘  of the logged runs)
//! ```
//!
//! Every run is appended to `<out>/<name>.runs.jsonl` as it finishes; running the same command
//! again at the same git revision reuses those runs, so an interrupted experiment resumes where
//! it stopped (`--fresh` starts over; runs of another revision are measured again). `--quick`
//! runs every point for 1 s after 0.3 s of warm-up, once: every experiment in about ten
//! minutes on two cores, and two more for `adaptive`'s 70 points and 20 confirmation runs. Without it, the paper's
//! experiments scale its runs (10 runs of 60 s after 10 s of warm-up, on a 16 GB Xeon) to this
//! machine: 3 runs of 10 s after 2 s of warm-up per point; `tpcc` and `hybrid` run 3 runs of
//! 2 s after 1 s of warm-up (their 36 points then take about eight minutes; at 10 s they would
//! take half an hour), and `adaptive` 3 runs of 5 s after 0.5 s of warm-up (about 27
//! minutes with its confirmation rounds). `--duration` and `--warmup` override either. Each experiment prints its claims
//! table as it finishes; the report keeps them all.

mod adaptive;
mod experiments;
mod series;
mod tpcc;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use ordo_figures::{ExperimentReport, Reference, Report};

#[derive(Debug, Args)]
pub struct FiguresArgs {
    /// The experiment, or all of them.
    #[arg(value_enum)]
    pub name: ExperimentName,
    /// A first look: short runs, every experiment in about ten minutes on two cores.
    #[arg(long)]
    pub quick: bool,
    /// Output folder (created if missing).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Runs per point (error bars: one standard deviation; tpcc and hybrid plot medians),
    /// 1..=1000; default 1 with --quick, else 3.
    #[arg(long)]
    pub runs: Option<usize>,
    /// Measured seconds per point, more than 0 and at most 86400; default 1 with --quick, else
    /// the experiment's own (10; tpcc and hybrid 2).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Warm-up seconds per point, at most 86400; default 0.3 with --quick, else the
    /// experiment's own (2; tpcc and hybrid 1).
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Rounds of `adaptive`'s confirmation (auto against each cell's best fixed size),
    /// 1..=1000; default --runs. On a noisy host a 5% target takes tens of rounds to resolve:
    /// the report gives each cell's 95% interval, and calls a cell whose interval straddles
    /// the target unresolved.
    #[arg(long)]
    pub confirm_rounds: Option<usize>,
    /// Discard finished runs in the output folder and measure everything again.
    #[arg(long)]
    pub fresh: bool,
}

/// The experiments by name (`experiments::ALL` holds what each runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExperimentName {
    /// Figures 5-6: feedback vertex set algorithms.
    Fvs,
    /// Figures 7-9: SCC-based against sort-based greedy, end to end.
    Greedy,
    /// Figures 10-12: batching and reordering at storage and validator.
    Modes,
    /// The validator's batch size.
    BatchSize,
    /// srvc with auto batch sizes against fixed ones (ordo's own target).
    Adaptive,
    /// Figures 13-15: SmallBank.
    Smallbank,
    /// Figures 16-18: tail-latency policies.
    Policies,
    /// Figures 19-21: thread-per-worker engines and thread-aware reordering.
    Threads,
    /// Figures 22-24: batching and reordering in front of PostgreSQL.
    Postgres,
    /// Figures 26-28: parallel reorder workers.
    ReorderWorkers,
    /// Seed 003: TPC-C, fixed against random warehouse binding.
    Tpcc,
    /// Seed 003: TPC-C plus an analytic transaction, against the contention degree.
    Hybrid,
    /// Every experiment, in this order.
    All,
}

/// How long each point of an experiment runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Measured seconds.
    pub duration_s: f64,
    /// Seconds run before measuring.
    pub warmup_s: f64,
}

/// Every experiment with `--quick`.
const QUICK_TIMING: Timing = Timing { duration_s: 1.0, warmup_s: 0.3 };

/// What every experiment needs.
#[derive(Debug, Clone)]
pub struct Context {
    pub out: PathBuf,
    pub quick: bool,
    pub runs: usize,
    /// Rounds of `adaptive`'s confirmation.
    pub confirm_rounds: usize,
    pub fresh: bool,
    /// Measured and warm-up seconds per point.
    pub duration_s: f64,
    pub warmup_s: f64,
}

impl Context {
    pub fn path(&self, file: &str) -> PathBuf {
        self.out.join(file)
    }
}

/// Checks the flags before anything runs; the runs per point.
pub fn validate(args: &FiguresArgs) -> Result<usize> {
    let runs = args.runs.unwrap_or(if args.quick { 1 } else { 3 });
    super::bench::values::within("--runs", [runs], 1, super::bench::RUNS_MAX)?;
    if let Some(rounds) = args.confirm_rounds {
        super::bench::values::within("--confirm-rounds", [rounds], 1, super::bench::RUNS_MAX)?;
    }
    if let Some(duration) = args.duration
        && !(duration.is_finite() && duration > 0.0 && duration <= super::bench::PHASE_S_MAX)
    {
        bail!("--duration {duration}: must be more than 0 and at most {} seconds", super::bench::PHASE_S_MAX);
    }
    if let Some(warmup) = args.warmup
        && !(warmup.is_finite() && (0.0..=super::bench::PHASE_S_MAX).contains(&warmup))
    {
        bail!("--warmup {warmup}: must be from 0 to {} seconds", super::bench::PHASE_S_MAX);
    }
    Ok(runs)
}

/// The timing of `experiment`'s points under these flags.
fn timing(args: &FiguresArgs, experiment: &experiments::Experiment) -> Timing {
    let default = if args.quick { QUICK_TIMING } else { experiment.timing };
    Timing {
        duration_s: args.duration.unwrap_or(default.duration_s),
        warmup_s: args.warmup.unwrap_or(default.warmup_s),
    }
}

pub fn run(args: &FiguresArgs) -> Result<()> {
    let name = super::bench::value_name(&args.name);
    let names: Vec<&str> = if args.name == ExperimentName::All {
        experiments::ALL.iter().map(|e| e.name).collect()
    } else {
        let Some(experiment) = experiments::ALL.iter().find(|e| e.name == name) else {
            bail!("experiment `{name}` has no runner");
        };
        vec![experiment.name]
    };
    let runs = validate(args)?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut sections: Vec<Section> = Vec::new();
    for name in names {
        let experiment = experiments::ALL.iter().find(|e| e.name == name).expect("known experiment");
        let timing = timing(args, experiment);
        let ctx = Context {
            out: args.out.clone(),
            quick: args.quick,
            runs,
            confirm_rounds: args.confirm_rounds.unwrap_or(runs),
            fresh: args.fresh,
            duration_s: timing.duration_s,
            warmup_s: timing.warmup_s,
        };
        eprintln!("== {}: {}", experiment.name, experiment.title);
        let mut report = (experiment.run)(&ctx).with_context(|| format!("experiment {name}"))?;
        report.reference = experiment.reference;
        print_claims(&report);
        sections.push(Section { report, timing });
        write_report(args, runs, &sections)?;
    }
    eprintln!("wrote {}", args.out.join("REPORT.md").display());
    Ok(())
}

/// The claims of a finished experiment on stdout, as the report shows them.
fn print_claims(report: &ExperimentReport) {
    if report.claims.is_empty() {
        return;
    }
    let column = report.reference.column();
    println!("{}\n\n| quantity | {column} | ordo | direction |\n|---|---|---|---|", report.title);
    for claim in &report.claims {
        let direction = report.reference.verdict(claim.agrees);
        println!("| {} | {} | {} | {direction} |", claim.quantity, claim.paper, claim.ordo);
    }
    println!();
}

/// One finished experiment of a report, and how it ran.
struct Section {
    report: ExperimentReport,
    timing: Timing,
}

fn write_report(args: &FiguresArgs, runs: usize, sections: &[Section]) -> Result<()> {
    let mut command = format!("ordo figures {}", super::bench::value_name(&args.name));
    if args.quick {
        command.push_str(" --quick");
    }
    if args.runs.is_some() {
        command.push_str(&format!(" --runs {runs}"));
    }
    if let Some(rounds) = args.confirm_rounds {
        command.push_str(&format!(" --confirm-rounds {rounds}"));
    }
    if let Some(duration) = args.duration {
        command.push_str(&format!(" --duration {duration}"));
    }
    if let Some(warmup) = args.warmup {
        command.push_str(&format!(" --warmup {warmup}"));
    }
    command.push_str(&format!(" --out {}", args.out.display()));
    let report = Report {
        title: "ordo: the paper's experiments on this machine".into(),
        machine: machine_description(),
        date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
        revision: git_revision(),
        command,
        preamble: preamble(runs, sections),
        experiments: sections.iter().map(|s| s.report.clone()).collect(),
    };
    report.write(&args.out).with_context(|| format!("cannot write {}", args.out.join("REPORT.md").display()))
}

/// How the points ran (one sentence per timing, naming the experiments when they differ) and
/// whose claims the sections check.
fn preamble(runs: usize, sections: &[Section]) -> Vec<String> {
    let mut timings: Vec<(Timing, Vec<&str>)> = Vec::new();
    for section in sections {
        match timings.iter_mut().find(|(timing, _)| *timing == section.timing) {
            Some((_, names)) => names.push(&section.report.name),
            None => timings.push((section.timing, vec![&section.report.name])),
        }
    }
    let each = timings
        .iter()
        .map(|(timing, names)| {
            let which = if timings.len() > 1 { format!(" ({})", names.join(", ")) } else { String::new() };
            format!("{} s measured after {} s of warm-up{which}", timing.duration_s, timing.warmup_s)
        })
        .collect::<Vec<_>>()
        .join("; ");
    let spread = if runs > 1 { " (error bars: one standard deviation)" } else { "" };
    let mut paragraphs = vec![format!(
        "Each point: {each}, {runs} run{} per point{spread}. Ratios are ordo's own, measured in the same sweep. \
         Compare shapes and ratios, not absolute numbers. The direction column says only whether ordo's effect \
         goes the source's way (for a target of ordo's own, whether it is met); where its size falls short, the \
         notes and BENCHMARKS.md say why.",
        if runs == 1 { "" } else { "s" },
    )];
    if sections.iter().any(|s| s.report.reference == Reference::Paper) {
        paragraphs.push(
            "The paper's values are read off its figures (`~`) or quoted from its text (Ding, Kot, Gehrke, \
             PVLDB 12(2), 2018); it ran a Java prototype on a 16 GB Xeon E5-2630."
                .into(),
        );
    }
    if sections.iter().any(|s| s.report.reference == Reference::Seed003) {
        paragraphs.push(
            "The tpcc and hybrid sections compare with seed 003 instead, ERMIA against Silo (Kim, Wang, Johnson, \
             Pandis, SIGMOD 2016), whose numbers are quoted from its evaluation's text (24 worker threads on four \
             6-core Xeon E7-4807); their points are medians of the runs. ordo's `mvcc_si` plays ERMIA-SI and \
             `ssi` (the serial safety net over snapshot isolation) ERMIA-SSI, both on the same engine and \
             storage as its `silo`."
                .into(),
        );
    }
    if sections.iter().any(|s| s.report.reference == Reference::Target) {
        paragraphs.push(
            "The adaptive section checks a target of ordo's own instead: the paper leaves adaptive batching to \
             future work (§7), so its source column states what `auto` is to reach against the best fixed size, \
             and a cell is met, not met or unresolved by where the 95% interval of its paired ratio lies."
                .into(),
        );
    }
    paragraphs
}

/// `2 cores (AMD EPYC), 24 GiB`.
fn machine_description() -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or_else(String::new, |kb| format!(", {} GiB", (kb + (1 << 19)) >> 20));
    format!("{cores} cores ({cpu}){memory}")
}

fn git_revision() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".into(), |s| s.trim().to_owned())
}

/// The run log of an experiment, emptied when the user asked for a fresh start or when its runs
/// were measured at another revision (the report states one revision, so every run in it must
/// be of that revision). `<name>.runs.rev` records the log's revision.
fn clear_runs(ctx: &Context, name: &str) -> Result<PathBuf> {
    let log = ctx.path(&format!("{name}.runs.jsonl"));
    let stamp = ctx.path(&format!("{name}.runs.rev"));
    let revision = git_revision();
    let logged = std::fs::read_to_string(&stamp).map(|s| s.trim().to_owned()).unwrap_or_default();
    if log.exists() && (ctx.fresh || logged != revision) {
        if !ctx.fresh {
            let logged = if logged.is_empty() { "an unrecorded revision" } else { logged.as_str() };
            eprintln!("{name}: earlier runs are from {logged}, this is {revision}: measuring again");
        }
        std::fs::remove_file(&log).with_context(|| format!("cannot remove {}", log.display()))?;
    }
    std::fs::write(&stamp, format!("{revision}\n")).with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok(log)
}

/// File name relative to the report.
fn relative(path: &Path) -> String {
    path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}
