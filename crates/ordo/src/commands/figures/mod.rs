//! `ordo figures <name>`: each of the paper's experiments as one command, writing its data
//! (JSON, CSV), its charts (SVG, PNG) and a report that sets every chart beside the paper's
//! claim and the ratio ordo measured.
//!
//! ```text
//!  experiment ──ordo bench / fvs-bench (runs logged per run)──> <out>/<name>.json, .csv
//!                                                                    │ read back
//!                                         charts <── ordo-figures <──┤
//!                                   REPORT.md <── claims computed <──┘
//! ```
//!
//! Every run is appended to `<out>/<name>.runs.jsonl` as it finishes; running the same command
//! again at the same git revision reuses those runs, so an interrupted experiment resumes where
//! it stopped (`--fresh` starts over; runs of another revision are measured again). `--quick`
//! runs every experiment in under ten minutes on two cores; the default scales the paper's runs
//! (10 runs of 60 s after 10 s of warm-up, on a 16 GB Xeon) to this machine: 3 runs of 10 s
//! after 2 s of warm-up per point.

mod experiments;
mod series;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use ordo_figures::{ExperimentReport, Report};

#[derive(Debug, Args)]
pub struct FiguresArgs {
    /// The experiment, or all of them.
    #[arg(value_enum)]
    pub name: ExperimentName,
    /// A first look: short runs, every experiment in under ten minutes on two cores.
    #[arg(long)]
    pub quick: bool,
    /// Output folder (created if missing).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Runs per point (mean, standard deviation, error bars), 1..=1000; default 1 with
    /// --quick, else 3.
    #[arg(long)]
    pub runs: Option<usize>,
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
    /// Every experiment, in this order.
    All,
}

/// What every experiment needs.
#[derive(Debug, Clone)]
pub struct Context {
    pub out: PathBuf,
    pub quick: bool,
    pub runs: usize,
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
    Ok(runs)
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
    let ctx = Context {
        out: args.out.clone(),
        quick: args.quick,
        runs,
        fresh: args.fresh,
        duration_s: if args.quick { 1.0 } else { 10.0 },
        warmup_s: if args.quick { 0.3 } else { 2.0 },
    };
    let mut sections: Vec<ExperimentReport> = Vec::new();
    for name in names {
        let experiment = experiments::ALL.iter().find(|e| e.name == name).expect("known experiment");
        eprintln!("== {}: {}", experiment.name, experiment.title);
        let section = (experiment.run)(&ctx).with_context(|| format!("experiment {name}"))?;
        sections.push(section);
        write_report(args, &ctx, &sections)?;
    }
    eprintln!("wrote {}", args.out.join("REPORT.md").display());
    Ok(())
}

fn write_report(args: &FiguresArgs, ctx: &Context, sections: &[ExperimentReport]) -> Result<()> {
    let mut command = format!("ordo figures {}", super::bench::value_name(&args.name));
    if args.quick {
        command.push_str(" --quick");
    }
    if args.runs.is_some() {
        command.push_str(&format!(" --runs {}", ctx.runs));
    }
    command.push_str(&format!(" --out {}", args.out.display()));
    let report = Report {
        title: "ordo: the paper's experiments on this machine".into(),
        machine: machine_description(),
        date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
        revision: git_revision(),
        command,
        preamble: vec![format!(
            "Each point: {} s measured after {} s of warm-up, {} run{} per point{}. Ratios are ordo's own, \
             measured in the same sweep; the paper's values are read off its figures or quoted from its text \
             (Ding, Kot, Gehrke, PVLDB 12(2), 2018). Compare shapes and ratios, not absolute numbers: the \
             paper ran a Java prototype on a 16 GB Xeon E5-2630. The direction column says only whether \
             ordo's effect goes the paper's way; where its size falls short of the paper's, the notes and \
             BENCHMARKS.md say why.",
            ctx.duration_s,
            ctx.warmup_s,
            ctx.runs,
            if ctx.runs == 1 { "" } else { "s" },
            if ctx.runs > 1 { " (error bars: one standard deviation)" } else { "" },
        )],
        experiments: sections.to_vec(),
    };
    report.write(&ctx.out).with_context(|| format!("cannot write {}", ctx.out.join("REPORT.md").display()))
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
