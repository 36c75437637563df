//! `ordo bench`: run an engine on a workload and measure it.
//!
//! Every list-valued flag (`--theta 0.5,0.7,0.9 --mode base,srvc ...`) makes a sweep: one run
//! per combination (combinations that differ only in knobs the mode ignores are run once).
//! Each configuration runs `--runs` times; the table and the `--json` / `--csv` files hold the
//! mean (and, with several runs, the standard deviation). Files are rewritten after every
//! finished point, so an interrupted sweep keeps what it finished.

mod pg;
mod pipeline;
mod threads;
pub mod workloads;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::ProgressBar;
use ordo_harness::output::{Table, write_flat_csv, write_json};
use ordo_harness::{RunInfo, RunResult};

use workloads::WorkloadArgs;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Engine: pipeline (the paper's OCC engine), threads (thread-per-worker: Silo, TicToc,
    /// 2PL, MVCC and thread-aware reordering; choose with --protocol) or pg (the middle tier in
    /// front of PostgreSQL).
    #[arg(long, default_value = "pipeline")]
    pub engine: String,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Zipf skew of key choice, in [0, 1); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "0.8")]
    pub theta: Vec<f64>,
    /// pipeline: base, batch, sr, vc, srvc (default srvc); pg: nobatch, batch, reorder (default
    /// reorder); a list sweeps. The threads engine picks its protocol with --protocol instead.
    #[arg(long, value_delimiter = ',')]
    pub mode: Vec<String>,
    /// Measured seconds per run.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds run before measuring.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Seconds run after measuring (not counted).
    #[arg(long, default_value_t = 0.5)]
    pub cooldown: f64,
    /// Seed of the workload; run i of `--runs` uses seed + i.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Repeat every configuration this many times and report mean and standard deviation.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Write results as JSON to this file (`-` or no value: stdout, instead of the table).
    #[arg(long, num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write results as CSV to this file (`-` or no value: stdout, instead of the table).
    #[arg(long, num_args = 0..=1, default_missing_value = "-")]
    pub csv: Option<PathBuf>,
    /// Write every committed transaction as JSON lines (one configuration and run only; `-`:
    /// stdout, and the table goes to stderr).
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Append every finished run to this JSON-lines file, and reuse the runs already in it
    /// for the same configurations: an interrupted sweep resumes where it stopped.
    #[arg(long)]
    pub runs_log: Option<PathBuf>,
    /// After each run, let live transactions finish and check the recorded history with the
    /// serializability checker (and, for the pipeline, the serial replay of commit order).
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub pipeline: pipeline::PipelineArgs,
    #[command(flatten)]
    pub threads: threads::ThreadsArgs,
    #[command(flatten)]
    pub pg: pg::PgBenchArgs,
}

/// One configuration of a sweep, ready to run.
pub struct Planned {
    /// The configuration (its seed is the first run's).
    pub info: RunInfo,
    /// Knobs that vary across the sweep, for the table: (column, value).
    pub label: Vec<(String, String)>,
    pub run: RunFn,
}

/// Runs one configuration once with the given seed, updating the progress bar.
pub type RunFn = Box<dyn Fn(&Options, u64, &ProgressBar) -> Result<RunResult>>;

impl BenchArgs {
    /// The description of one configuration of an engine's sweep (`config`: its knobs).
    pub fn run_info(
        &self,
        engine: &str,
        workload: &str,
        mode: String,
        theta: f64,
        config: BTreeMap<String, serde_json::Value>,
    ) -> RunInfo {
        RunInfo {
            engine: engine.into(),
            workload: workload.into(),
            mode,
            theta,
            seed: self.seed,
            duration_s: self.duration,
            warmup_s: self.warmup,
            config,
        }
    }
}

/// Shows a running benchmark on its progress bar: elapsed time as the position (ms), and the
/// rate of finished transactions since the last update as the message (updated at most every
/// half second, so the number is readable).
pub struct RateMeter<'a> {
    bar: &'a ProgressBar,
    last: Cell<(f64, u64)>,
}

impl<'a> RateMeter<'a> {
    pub fn new(bar: &'a ProgressBar) -> Self {
        RateMeter { bar, last: Cell::new((0.0, 0)) }
    }

    pub fn update(&self, elapsed_s: f64, finished: u64) {
        self.bar.set_position((elapsed_s * 1000.0) as u64);
        let (last_s, last_finished) = self.last.get();
        if elapsed_s - last_s >= 0.5 {
            let rate = finished.saturating_sub(last_finished) as f64 / (elapsed_s - last_s);
            self.bar.set_message(format!("{rate:.0} tx/s"));
            self.last.set((elapsed_s, finished));
        }
    }
}

/// What every run needs from the command line.
#[derive(Debug, Clone)]
pub struct Options {
    pub duration_s: f64,
    pub warmup_s: f64,
    pub cooldown_s: f64,
    pub history: Option<PathBuf>,
    pub verify: bool,
}

/// Longest warm-up, measurement or cool-down of one run, in seconds.
pub const PHASE_S_MAX: f64 = 86_400.0;
/// Most repetitions of one configuration.
pub const RUNS_MAX: usize = 1_000;

fn validate(args: &BenchArgs) -> Result<()> {
    for &theta in &args.theta {
        if !(0.0..1.0).contains(&theta) {
            bail!("--theta {theta}: must be in [0, 1)");
        }
    }
    if !(args.duration.is_finite() && args.duration > 0.0) {
        bail!("--duration must be a positive number of seconds");
    }
    for (flag, value) in [("--duration", args.duration), ("--warmup", args.warmup), ("--cooldown", args.cooldown)] {
        if !(value.is_finite() && value >= 0.0) {
            bail!("{flag} must be zero or a positive number of seconds");
        }
        if value > PHASE_S_MAX {
            bail!("{flag} {value}: at most {PHASE_S_MAX} seconds (one day) per phase of a run");
        }
    }
    if args.runs == 0 || args.runs > RUNS_MAX {
        bail!("--runs {}: must be in 1..={RUNS_MAX}", args.runs);
    }
    Ok(())
}

/// Lets other commands (headline, figures) reuse `ordo bench`'s parser and defaults.
#[derive(Debug, clap::Parser)]
struct BenchCommandLine {
    #[command(flatten)]
    bench: BenchArgs,
}

/// Parses `ordo bench` arguments (`argv[0]` is the program name).
pub fn parse_bench_args(argv: &[String]) -> Result<BenchArgs> {
    use clap::Parser;
    Ok(BenchCommandLine::try_parse_from(argv).context("building the benchmark")?.bench)
}

fn stdout_only(path: Option<&PathBuf>) -> bool {
    path.is_some_and(|p| p.as_os_str() == "-")
}

/// A configuration's label (its varying knobs, as `(column, value)`) and its result.
pub type Labelled = (Vec<(String, String)>, RunResult);

pub fn run(args: &BenchArgs) -> Result<()> {
    let results = execute(args)?;
    if stdout_only(args.json.as_ref()) || stdout_only(args.csv.as_ref()) {
        write_files(args, &results, true)?;
    } else if stdout_only(args.history.as_ref()) {
        // Standard output carries the history; the table goes beside the progress, on stderr.
        eprint!("{}", render(&results));
    } else {
        print!("{}", render(&results));
    }
    Ok(())
}

/// Checks the sweep's output files before anything is measured, so a typo cannot lose a run:
/// each can be written, no two share a path, and at most one is standard output (`-`).
fn check_outputs(args: &BenchArgs) -> Result<()> {
    let outputs =
        [("--json", &args.json), ("--csv", &args.csv), ("--history", &args.history), ("--runs-log", &args.runs_log)];
    let given: Vec<(&str, &PathBuf)> =
        outputs.iter().filter_map(|&(flag, path)| path.as_ref().map(|path| (flag, path))).collect();
    let to_stdout: Vec<&str> =
        given.iter().filter(|(_, path)| stdout_only(Some(path))).map(|&(flag, _)| flag).collect();
    if to_stdout.len() > 1 {
        bail!("{} all write to standard output (`-`); give at most one of them `-`", to_stdout.join(" and "));
    }
    for (index, &(flag, path)) in given.iter().enumerate() {
        if stdout_only(Some(path)) {
            if flag == "--runs-log" {
                bail!("--runs-log must name a file (finished runs are read back from it)");
            }
            continue;
        }
        if let Some((other, _)) = given[..index].iter().find(|(_, other)| same_path(path, other)) {
            bail!("{other} and {flag} both name {}; give each output its own file", path.display());
        }
        if flag == "--runs-log" {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("--runs-log: cannot open {}", path.display()))?;
        } else {
            ordo_harness::output::check_writable(path).with_context(|| flag.to_owned())?;
        }
    }
    Ok(())
}

/// Whether two paths name the same file (compared as absolute paths, and through symbolic
/// links where both exist).
fn same_path(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    }
}

/// Writes a run's committed transactions as a history: to standard output for `-`, otherwise
/// replacing the file atomically.
pub fn write_history(
    path: &std::path::Path,
    entries: impl IntoIterator<Item = ordo_history::HistoryEntry>,
) -> Result<()> {
    use ordo_history::HistoryWriter;
    if stdout_only(Some(&path.to_path_buf())) {
        let mut writer = HistoryWriter::new(std::io::stdout().lock());
        for entry in entries {
            writer.append(&entry)?;
        }
        drop(writer.finish()?);
        return Ok(());
    }
    ordo_harness::output::replace_atomically(path, |out| {
        let mut writer = HistoryWriter::new(out);
        for entry in entries {
            writer.append(&entry).map_err(std::io::Error::other)?;
        }
        writer.finish().map(drop).map_err(std::io::Error::other)
    })
}

/// Runs every configuration of the sweep `--runs` times; returns each configuration's label
/// and averaged result (files are written as results come in).
pub fn execute(args: &BenchArgs) -> Result<Vec<Labelled>> {
    validate(args)?;
    check_outputs(args)?;
    let planned = match args.engine.as_str() {
        "pipeline" => pipeline::plan(args)?,
        "threads" => threads::plan(args)?,
        "pg" => pg::plan(args)?,
        other => bail!("unknown engine `{other}`; expected pipeline, threads or pg"),
    };
    if args.history.is_some() && (planned.len() > 1 || args.runs > 1) {
        bail!("--history records one run: give a single configuration and --runs 1");
    }
    let options = Options {
        duration_s: args.duration,
        warmup_s: args.warmup,
        cooldown_s: args.cooldown,
        history: args.history.clone(),
        verify: args.verify,
    };
    // Runs are interleaved (round 1 of every point, then round 2, ...), so a slow spell of a
    // shared machine hits every configuration alike instead of one of them.
    let total = planned.len();
    let mut runs: Vec<Vec<RunResult>> = planned.iter().map(|_| Vec::new()).collect();
    if let Some(path) = &args.runs_log {
        for logged in read_runs_log(path)? {
            if let Some(index) = planned.iter().position(|p| same_configuration(&p.info, &logged.info))
                && runs[index].len() < args.runs
            {
                runs[index].push(logged);
            }
        }
    }
    for round in 0..args.runs {
        for (index, point) in planned.iter().enumerate() {
            if runs[index].len() > round {
                continue;
            }
            let label: Vec<String> = point.label.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let prefix = format!(
                "[{}/{total}{}] {}",
                index + 1,
                if args.runs > 1 { format!(" run {}/{}", round + 1, args.runs) } else { String::new() },
                label.join(" ")
            );
            let bar = ordo_harness::progress::timed(&prefix, args.warmup + args.duration + args.cooldown);
            let result = (point.run)(&options, args.seed + round as u64, &bar)
                .with_context(|| format!("configuration {}", label.join(" ")))?;
            bar.finish_and_clear();
            if let Some(path) = &args.runs_log {
                append_run(path, &result)?;
            }
            runs[index].push(result);
            write_files(args, &aggregate(&planned, &runs), false)?;
        }
    }
    let results = aggregate(&planned, &runs);
    write_files(args, &results, false)?;
    Ok(results)
}

/// The label and mean result of every configuration with at least one finished run.
fn aggregate(planned: &[Planned], runs: &[Vec<RunResult>]) -> Vec<Labelled> {
    planned
        .iter()
        .zip(runs)
        .filter(|(_, done)| !done.is_empty())
        .map(|(point, done)| (point.label.clone(), RunResult::aggregate(done)))
        .collect()
}

/// Two runs measured the same configuration (everything but the seed agrees).
fn same_configuration(a: &RunInfo, b: &RunInfo) -> bool {
    RunInfo { seed: 0, ..a.clone() } == RunInfo { seed: 0, ..b.clone() }
}

fn read_runs_log(path: &std::path::Path) -> Result<Vec<RunResult>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).with_context(|| format!("{} line {}: not a run result", path.display(), i + 1))
        })
        .collect()
}

fn append_run(path: &std::path::Path, result: &RunResult) -> Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    writeln!(file, "{}", serde_json::to_string(result)?).with_context(|| format!("cannot write {}", path.display()))
}

/// Writes the result files; stdout only once, at the end (`finished`), files after every run.
fn write_files(args: &BenchArgs, results: &[Labelled], finished: bool) -> Result<()> {
    let records: Vec<&RunResult> = results.iter().map(|(_, r)| r).collect();
    let due = |path: &PathBuf| (path.as_os_str() == "-") == finished;
    if let Some(path) = args.json.as_ref().filter(|p| due(p)) {
        write_json(path, &records)?;
    }
    if let Some(path) = args.csv.as_ref().filter(|p| due(p)) {
        let rows: Vec<_> = records.iter().map(|r| r.flat()).collect();
        write_flat_csv(path, &rows)?;
    }
    Ok(())
}

/// The result table: the sweep's varying knobs, then the measurements.
pub fn render(results: &[Labelled]) -> String {
    let Some((first_label, first)) = results.first() else {
        return String::new();
    };
    let several_runs = first.runs > 1;
    let mut header: Vec<String> = first_label.iter().map(|(k, _)| k.clone()).collect();
    header.extend(
        [
            "commits/s",
            "abort_rate",
            "user_aborts/s",
            "restarts/commit",
            "lat_mean_us",
            "p50_us",
            "p95_us",
            "p99_us",
            "max_us",
        ]
        .map(String::from),
    );
    if several_runs {
        header.insert(first_label.len() + 1, "± std".into());
        header.insert(first_label.len() + 2, "median".into());
    }
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&header_refs);
    for (label, r) in results {
        let mut row: Vec<String> = label.iter().map(|(_, v)| v.clone()).collect();
        row.push(format!("{:.0}", r.throughput_tps));
        if several_runs {
            row.push(format!("{:.0}", r.std.map_or(0.0, |s| s.throughput_tps)));
            row.push(format!("{:.0}", r.median.map_or(0.0, |s| s.throughput_tps)));
        }

        let measured_s = r.info.duration_s.max(f64::MIN_POSITIVE);
        row.extend([
            format!("{:.1}%", 100.0 * r.abort_rate),
            format!("{:.0}", r.user_aborts / measured_s),
            format!("{:.2}", r.restarts_per_commit),
            format!("{:.0}", r.latency_us.mean),
            format!("{:.0}", r.latency_us.p50),
            format!("{:.0}", r.latency_us.p95),
            format!("{:.0}", r.latency_us.p99),
            format!("{:.0}", r.latency_us.max),
        ]);
        table.row(row);
    }
    let mut out = table.render();
    out.push_str(&format!(
        "engine {}, workload {}, {} s measured after {} s warm-up{}\n",
        first.info.engine,
        first.info.workload,
        first.info.duration_s,
        first.info.warmup_s,
        if several_runs { format!(", mean of {} runs", first.runs) } else { String::new() }
    ));
    out
}
