//! `ordo bench pipeline|threads|pg`: run an engine on a workload and measure it.
//!
//! Each engine is a subcommand with its own flags, beside the flags every engine shares
//! ([`CommonArgs`]: the workload, θ, timing, seed, repetitions, output files, `--verify`).
//! `ordo bench --engine NAME ...`, the form before the subcommands, still works: [`compat`]
//! rewrites it (and `ordo bench ...` without an engine, which is the pipeline) before parsing.
//!
//! Every list-valued flag (`--theta 0.5,0.7,0.9 --mode base,srvc ...`) makes a sweep: one run
//! per combination (combinations that differ only in knobs the mode ignores are run once).
//! Each configuration runs `--runs` times; the table and the `--json` / `--csv` files hold the
//! mean (and, with several runs, the standard deviation and median). Files are rewritten after
//! every finished point, so an interrupted sweep keeps what it finished.
//!
//! ```text
//!  argv ──compat──> clap: CommonArgs + engine args ──validate (every range)──> check outputs
//!        ──plan (typed configs, one closure per point)──> execute: rounds of interleaved runs
//!        ──> RunResult<PipelineRun | ThreadsRun | PgRun> ──> table, JSON, CSV, runs log
//! ```
//!
//! The same typed API serves `ordo headline` and `ordo figures`: they build a
//! [`pipeline::PipelineBench`] (or threads, pg) in code and get typed results back.

pub mod compat;
pub mod durability;
pub mod pg;
pub mod pipeline;
pub mod threads;
pub mod values;
pub mod workloads;

use std::cell::Cell;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use indicatif::ProgressBar;
use ordo_harness::output::{Table, write_flat_csv, write_json};
use ordo_harness::{Description, RunInfo, RunResult};
use serde::Serialize;
use serde::de::DeserializeOwned;

use values::within;
use workloads::{WorkloadArgs, WorkloadKnobs, knobs_of};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub engine: EngineCommand,
}

/// The engines, one subcommand each.
#[derive(Debug, Subcommand)]
pub enum EngineCommand {
    /// The paper's pipelined OCC engine: modes base, batch, sr, vc, srvc (the default).
    Pipeline(Box<pipeline::PipelineBench>),
    /// The thread-per-worker engine: Silo, TicToc, 2PL, MVCC, SSI and thread-aware reordering
    /// (choose with --protocol).
    Threads(Box<threads::ThreadsBench>),
    /// The middle tier in front of PostgreSQL: modes nobatch, batch, reorder (the default).
    Pg(Box<pg::PgBench>),
}

/// The engines' names, as subcommands and as `--engine` values.
pub const ENGINES: [&str; 3] = ["pipeline", "threads", "pg"];

/// Flags every engine shares.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct CommonArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Zipf skew of key choice, in [0, 1); a list sweeps.
    #[arg(long, value_delimiter = ',', default_value = "0.8", help_heading = "Run")]
    pub theta: Vec<f64>,
    /// Measured seconds per run, more than 0 and at most 86400.
    #[arg(long, default_value_t = 10.0, help_heading = "Run")]
    pub duration: f64,
    /// Seconds run before measuring, at most 86400.
    #[arg(long, default_value_t = 2.0, help_heading = "Run")]
    pub warmup: f64,
    /// Seconds run after measuring (not counted), at most 86400.
    #[arg(long, default_value_t = 0.5, help_heading = "Run")]
    pub cooldown: f64,
    /// Seed of the workload; run i of `--runs` uses seed + i.
    #[arg(long, default_value_t = 1, help_heading = "Run")]
    pub seed: u64,
    /// Repeat every configuration this many times (1..=1000, interleaved) and report mean,
    /// standard deviation and median.
    #[arg(long, default_value_t = 1, help_heading = "Run")]
    pub runs: usize,
    /// Write results as JSON to this file (`-` or no value: stdout, instead of the table).
    #[arg(long, num_args = 0..=1, default_missing_value = "-", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Write results as CSV to this file (`-` or no value: stdout, instead of the table).
    #[arg(long, num_args = 0..=1, default_missing_value = "-", help_heading = "Output")]
    pub csv: Option<PathBuf>,
    /// Write every committed transaction as JSON lines (one configuration and run only; `-`:
    /// stdout, and the table goes to stderr).
    #[arg(long, help_heading = "Output")]
    pub history: Option<PathBuf>,
    /// Append every finished run to this JSON-lines file, and reuse the runs already in it
    /// for the same configurations: an interrupted sweep resumes where it stopped.
    #[arg(long, help_heading = "Output")]
    pub runs_log: Option<PathBuf>,
    /// After each run, let live transactions finish and check the recorded history with the
    /// serializability checker (and, for the pipeline, the serial replay of commit order).
    #[arg(long, help_heading = "Run")]
    pub verify: bool,
}

/// Longest warm-up, measurement or cool-down of one run, in seconds.
pub const PHASE_S_MAX: f64 = 86_400.0;
/// Most repetitions of one configuration.
pub const RUNS_MAX: usize = 1_000;
/// Most configurations in one sweep (the product of the lengths of the list flags): ten
/// thousand points of a second each already take three hours.
pub const SWEEP_POINTS_MAX: usize = 10_000;

/// Parses `T`'s flags from `argv` (after a program name), with nothing else around them.
#[derive(Debug, clap::Parser)]
struct Only<T: Args> {
    #[command(flatten)]
    args: T,
}

/// `T` as parsed from an empty command line: the defaults `--help` shows, in code.
pub fn defaults<T: Args>() -> T {
    use clap::Parser;
    Only::<T>::try_parse_from(["ordo"]).expect("every flag has a default").args
}

/// Parses `T`'s flags from `argv` (`argv[0]` is the program name).
#[cfg(test)]
pub fn parse<T: Args>(argv: &[String]) -> Result<T> {
    use clap::Parser;
    Ok(Only::<T>::try_parse_from(argv)?.args)
}

impl Default for CommonArgs {
    fn default() -> Self {
        defaults()
    }
}

impl CommonArgs {
    /// Checks every shared flag's range before anything runs.
    pub fn validate(&self) -> Result<()> {
        values::not_empty("--theta", &self.theta)?;
        for &theta in &self.theta {
            if !(0.0..1.0).contains(&theta) {
                bail!("--theta {theta}: must be in [0, 1)");
            }
        }
        if !(self.duration.is_finite() && self.duration > 0.0) {
            bail!("--duration must be a positive number of seconds");
        }
        for (flag, value) in [("--duration", self.duration), ("--warmup", self.warmup), ("--cooldown", self.cooldown)] {
            if !(value.is_finite() && value >= 0.0) {
                bail!("{flag} must be zero or a positive number of seconds");
            }
            if value > PHASE_S_MAX {
                bail!("{flag} {value}: at most {PHASE_S_MAX} seconds (one day) per phase of a run");
            }
        }
        within("--runs", [self.runs], 1, RUNS_MAX)?;
        self.workload.validate()
    }

    /// The timing and checks every run needs.
    fn options(&self) -> Options {
        Options {
            duration_s: self.duration,
            warmup_s: self.warmup,
            cooldown_s: self.cooldown,
            history: self.history.clone(),
            verify: self.verify,
        }
    }

    /// The description of one configuration of an engine's sweep.
    pub fn run_info<C>(&self, run: C, theta: f64) -> RunInfo<C> {
        RunInfo { run, theta, seed: self.seed, duration_s: self.duration, warmup_s: self.warmup }
    }

    /// The flags that differ from the defaults, as `--flag=value` (for a command line that
    /// reproduces these arguments).
    pub fn flags(&self) -> Vec<String> {
        let default = CommonArgs::default();
        let mut flags = Flags::default();
        flags.workload(&self.workload, &default.workload);
        flags.list("--theta", &self.theta, &default.theta);
        flags.one("--duration", &self.duration, &default.duration);
        flags.one("--warmup", &self.warmup, &default.warmup);
        flags.one("--cooldown", &self.cooldown, &default.cooldown);
        flags.one("--seed", &self.seed, &default.seed);
        flags.one("--runs", &self.runs, &default.runs);
        for (flag, path) in
            [("--json", &self.json), ("--csv", &self.csv), ("--history", &self.history), ("--runs-log", &self.runs_log)]
        {
            if let Some(path) = path {
                flags.0.push(format!("{flag}={}", path.display()));
            }
        }
        flags.switch("--verify", self.verify);
        flags.0
    }
}

/// Builds `--flag=value` arguments for the flags that differ from their defaults.
#[derive(Debug, Default)]
pub struct Flags(pub Vec<String>);

impl Flags {
    pub fn one<T: PartialEq + std::fmt::Display>(&mut self, flag: &str, value: &T, default: &T) {
        if value != default {
            self.0.push(format!("{flag}={value}"));
        }
    }

    pub fn list<T: PartialEq + std::fmt::Display>(&mut self, flag: &str, values: &[T], default: &[T]) {
        if values != default {
            let joined: Vec<String> = values.iter().map(ToString::to_string).collect();
            self.0.push(format!("{flag}={}", joined.join(",")));
        }
    }

    /// A list given as the flag repeated (values that contain commas).
    pub fn repeated<T: PartialEq + std::fmt::Display>(&mut self, flag: &str, values: &[T], default: &[T]) {
        if values != default {
            self.0.extend(values.iter().map(|v| format!("{flag}={v}")));
        }
    }

    pub fn optional<T: std::fmt::Display>(&mut self, flag: &str, value: Option<&T>) {
        if let Some(value) = value {
            self.0.push(format!("{flag}={value}"));
        }
    }

    pub fn switch(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.to_owned());
        }
    }

    /// A value-enum flag, by its command-line name.
    pub fn named<T: clap::ValueEnum + PartialEq>(&mut self, flag: &str, values: &[T], default: &[T]) {
        if values != default {
            let names: Vec<String> = values.iter().map(value_name).collect();
            self.0.push(format!("{flag}={}", names.join(",")));
        }
    }

    fn workload(&mut self, w: &WorkloadArgs, d: &WorkloadArgs) {
        if w.workload != d.workload {
            self.optional("--workload", w.workload.as_ref().map(value_name).as_ref());
        }
        if w.keys != d.keys {
            self.optional("--keys", w.keys.as_ref());
        }
        self.one("--reads", &w.reads, &d.reads);
        self.one("--writes", &w.writes, &d.writes);
        self.one("--shared", &w.shared, &d.shared);
        self.one("--mix", &w.mix, &d.mix);
        self.one("--warehouses", &w.warehouses, &d.warehouses);
        self.named("--binding", &w.binding, &d.binding);
        self.list("--analytic-range", &w.analytic_range, &d.analytic_range);
        self.one("--analytic-share", &w.analytic_share, &d.analytic_share);
        self.one("--records", &w.records, &d.records);
        self.one("--ops", &w.ops, &d.ops);
        self.one("--read-ratio", &w.read_ratio, &d.read_ratio);
        self.named("--write-kind", &[w.write_kind], &[d.write_kind]);
        if w.ycsb != d.ycsb {
            self.optional("--ycsb", w.ycsb.as_ref().map(value_name).as_ref());
        }
        self.switch("--scrambled", w.scrambled);
        self.one("--payload-bytes", &w.payload_bytes, &d.payload_bytes);
    }
}

/// The command-line name of a value-enum value.
pub fn value_name<T: clap::ValueEnum>(value: &T) -> String {
    value.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
}

/// What a run of one engine records about itself: a typed description that converts to and
/// from the shape every result file shares ([`Description`]).
pub trait Described:
    Clone + PartialEq + std::fmt::Debug + Serialize + DeserializeOwned + Into<Description> + 'static
{
    /// The engine's name in results (`engine`).
    const ENGINE: &'static str;
}

/// A run's description: the workload's knobs, then the engine's `knobs` (serialized flat beside
/// them).
pub fn description(engine: &str, workload: &WorkloadKnobs, mode: &str, knobs: &impl Serialize) -> Description {
    let mut config = workload.to_map();
    config.extend(to_map(knobs));
    Description { engine: engine.into(), workload: workload.name().into(), mode: mode.into(), config }
}

/// The workload's knobs, the engine's knobs and the mode of a description of a run of
/// `engine`; an error for another engine's run or knobs that do not parse.
pub fn read_description<K: DeserializeOwned>(
    engine: &str,
    described: Description,
) -> Result<(WorkloadKnobs, K, String)> {
    if described.engine != engine {
        bail!("a result of engine {}, not {engine}", described.engine);
    }
    let workload = knobs_of(&described.workload, &described.config)?;
    let knobs = serde_json::from_value(serde_json::Value::Object(described.config))?;
    Ok((workload, knobs, described.mode))
}

/// `knobs` as a JSON object.
pub fn to_map(knobs: &impl Serialize) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(knobs).expect("knobs serialize") {
        serde_json::Value::Object(map) => map,
        other => unreachable!("knobs serialize as an object, not {other}"),
    }
}

/// An engine's sweep as a typed API: what `ordo headline` and `ordo figures` build in code.
pub trait Bench {
    /// What each of its results records.
    type Run: Described;
    /// Its subcommand of `ordo bench`.
    const SUBCOMMAND: &'static str;
    fn common_mut(&mut self) -> &mut CommonArgs;
    /// Validates, checks the output files, plans and runs the sweep.
    fn sweep(&self) -> Result<Vec<Labelled<Self::Run>>>;
    /// The arguments as a command line (`--flag=value` for every flag off its default).
    fn flags(&self) -> Vec<String>;
    /// The command that reproduces this sweep.
    fn command(&self) -> String {
        let mut words = vec!["ordo".to_owned(), "bench".into(), Self::SUBCOMMAND.into()];
        words.extend(self.flags());
        words.join(" ")
    }
}

macro_rules! bench_api {
    ($bench:ty, $run:ty, $name:literal) => {
        impl Bench for $bench {
            type Run = $run;
            const SUBCOMMAND: &'static str = $name;
            fn common_mut(&mut self) -> &mut CommonArgs {
                &mut self.common
            }
            fn sweep(&self) -> Result<Vec<Labelled<$run>>> {
                <$bench>::sweep(self)
            }
            fn flags(&self) -> Vec<String> {
                <$bench>::flags(self)
            }
        }
    };
}

bench_api!(pipeline::PipelineBench, pipeline::PipelineRun, "pipeline");
bench_api!(threads::ThreadsBench, threads::ThreadsRun, "threads");
bench_api!(pg::PgBench, pg::PgRun, "pg");

/// One configuration of a sweep, ready to run.
pub struct Planned<C> {
    /// The configuration (its seed is the first run's).
    pub info: RunInfo<C>,
    /// Knobs that vary across the sweep, for the table.
    pub label: Label,
    pub run: RunFn<C>,
}

/// Runs one configuration once with the given seed, updating the progress bar.
pub type RunFn<C> = Box<dyn Fn(&Options, u64, &ProgressBar) -> Result<RunResult<C>>>;

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

/// Refuses a sweep of more than [`SWEEP_POINTS_MAX`] configurations before building it
/// (`lengths`: the number of values of each list flag).
pub fn check_sweep_size(lengths: &[(&str, usize)]) -> Result<()> {
    let points = lengths.iter().fold(1usize, |product, &(_, n)| product.saturating_mul(n));
    if points > SWEEP_POINTS_MAX {
        let named: Vec<String> =
            lengths.iter().filter(|(_, n)| *n > 1).map(|(flag, n)| format!("{n} {flag}")).collect();
        bail!("the sweep has {points} configurations ({}); at most {SWEEP_POINTS_MAX} per command", named.join(" x "));
    }
    Ok(())
}

fn stdout_only(path: Option<&PathBuf>) -> bool {
    path.is_some_and(|p| p.as_os_str() == "-")
}

/// The knobs that vary across a sweep, as `(column, value)` for the table.
pub type Label = Vec<(String, String)>;

/// A configuration's label and its result.
pub type Labelled<C> = (Label, RunResult<C>);

pub fn run(args: &BenchArgs) -> Result<()> {
    match &args.engine {
        EngineCommand::Pipeline(bench) => report(&bench.common, &bench.sweep()?),
        EngineCommand::Threads(bench) => report(&bench.common, &bench.sweep()?),
        EngineCommand::Pg(bench) => report(&bench.common, &bench.sweep()?),
    }
}

/// Prints a finished sweep (or writes it to standard output as JSON or CSV).
fn report<C: Described>(common: &CommonArgs, results: &[Labelled<C>]) -> Result<()> {
    if stdout_only(common.json.as_ref()) || stdout_only(common.csv.as_ref()) {
        write_files(common, results, true)?;
    } else if stdout_only(common.history.as_ref()) {
        // Standard output carries the history; the table goes beside the progress, on stderr.
        eprint!("{}", render(results));
    } else {
        print!("{}", render(results));
    }
    Ok(())
}

/// Checks the sweep's output files before anything is measured, so a typo cannot lose a run:
/// each can be written, no two share a path, and at most one is standard output (`-`).
pub fn check_outputs(common: &CommonArgs) -> Result<()> {
    let outputs = [
        ("--json", &common.json),
        ("--csv", &common.csv),
        ("--history", &common.history),
        ("--runs-log", &common.runs_log),
    ];
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
fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    }
}

/// Writes a run's committed transactions as a history: to standard output for `-`, otherwise
/// replacing the file atomically.
pub fn write_history(path: &Path, entries: impl IntoIterator<Item = ordo_history::HistoryEntry>) -> Result<()> {
    use ordo_history::HistoryWriter;
    if path.as_os_str() == "-" {
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
/// and averaged result (files are written as results come in). The caller has validated the
/// arguments and checked the outputs.
pub fn execute<C: Described>(common: &CommonArgs, planned: &[Planned<C>]) -> Result<Vec<Labelled<C>>> {
    execute_runs(common, planned, |_, _| {}).map(|(results, _)| results)
}

/// Every run of every configuration, in plan order (a configuration's runs in round order).
pub type Runs<C> = Vec<Vec<RunResult<C>>>;

/// As [`execute`], calling `before_run(point, round)` before each run it measures (with the
/// point's index in `planned`), and returning every run too, for ratios of runs measured in
/// the same round.
pub fn execute_runs<C: Described>(
    common: &CommonArgs,
    planned: &[Planned<C>],
    mut before_run: impl FnMut(usize, usize),
) -> Result<(Vec<Labelled<C>>, Runs<C>)> {
    if common.history.is_some() && (planned.len() > 1 || common.runs > 1) {
        bail!("--history records one run: give a single configuration and --runs 1");
    }
    let options = common.options();
    // Runs are interleaved (round 1 of every point, then round 2, ...), so a slow spell of a
    // shared machine hits every configuration alike instead of one of them.
    let total = planned.len();
    let mut runs: Vec<Vec<RunResult<C>>> = planned.iter().map(|_| Vec::new()).collect();
    if let Some(path) = &common.runs_log {
        let described: Vec<RunInfo> = planned.iter().map(|p| describe(&p.info)).collect();
        for logged in read_runs_log::<C>(path)? {
            if let Some(index) = described.iter().position(|d| same_configuration(d, &describe(&logged.info)))
                && runs[index].len() < common.runs
            {
                runs[index].push(logged);
            }
        }
    }
    for round in 0..common.runs {
        for (index, point) in planned.iter().enumerate() {
            if runs[index].len() > round {
                continue;
            }
            let label: Vec<String> = point.label.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let prefix = format!(
                "[{}/{total}{}] {}",
                index + 1,
                if common.runs > 1 { format!(" run {}/{}", round + 1, common.runs) } else { String::new() },
                label.join(" ")
            );
            before_run(index, round);
            let bar = ordo_harness::progress::timed(&prefix, common.warmup + common.duration + common.cooldown);
            let result = (point.run)(&options, common.seed.wrapping_add(round as u64), &bar)
                .with_context(|| format!("configuration {}", label.join(" ")))?;
            bar.finish_and_clear();
            if let Some(path) = &common.runs_log {
                append_run(path, &result)?;
            }
            runs[index].push(result);
            write_files(common, &aggregate(planned, &runs), false)?;
        }
    }
    let results = aggregate(planned, &runs);
    write_files(common, &results, false)?;
    Ok((results, runs))
}

/// The shared shape of a typed run description.
fn describe<C: Described>(info: &RunInfo<C>) -> RunInfo {
    RunInfo {
        run: info.run.clone().into(),
        theta: info.theta,
        seed: info.seed,
        duration_s: info.duration_s,
        warmup_s: info.warmup_s,
    }
}

/// The label and mean result of every configuration with at least one finished run.
fn aggregate<C: Described>(planned: &[Planned<C>], runs: &[Vec<RunResult<C>>]) -> Vec<Labelled<C>> {
    planned
        .iter()
        .zip(runs)
        .filter(|(_, done)| !done.is_empty())
        .map(|(point, done)| (point.label.clone(), RunResult::aggregate(done)))
        .collect()
}

/// Two runs measured the same configuration (everything but the seed agrees, as recorded).
fn same_configuration(a: &RunInfo, b: &RunInfo) -> bool {
    RunInfo { seed: 0, ..a.clone() } == RunInfo { seed: 0, ..b.clone() }
}

/// The runs of engine `C` in a runs log (runs of other engines are skipped).
pub fn read_runs_log<C: Described>(path: &Path) -> Result<Vec<RunResult<C>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut runs = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let not_a_run = || format!("{} line {}: not a run result", path.display(), i + 1);
        let value: serde_json::Value = serde_json::from_str(line).with_context(not_a_run)?;
        if value.get("engine").and_then(serde_json::Value::as_str) != Some(C::ENGINE) {
            continue;
        }
        runs.push(serde_json::from_value(value).with_context(not_a_run)?);
    }
    Ok(runs)
}

fn append_run<C: Described>(path: &Path, result: &RunResult<C>) -> Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    writeln!(file, "{}", serde_json::to_string(result)?).with_context(|| format!("cannot write {}", path.display()))
}

/// Writes the result files; stdout only once, at the end (`finished`), files after every run.
fn write_files<C: Described>(common: &CommonArgs, results: &[Labelled<C>], finished: bool) -> Result<()> {
    let records: Vec<&RunResult<C>> = results.iter().map(|(_, r)| r).collect();
    let due = |path: &PathBuf| (path.as_os_str() == "-") == finished;
    if let Some(path) = common.json.as_ref().filter(|p| due(p)) {
        write_json(path, &records)?;
    }
    if let Some(path) = common.csv.as_ref().filter(|p| due(p)) {
        let rows: Vec<_> = records.iter().map(|r| r.flat()).collect();
        write_flat_csv(path, &rows)?;
    }
    Ok(())
}

/// The result table: the sweep's varying knobs, then the measurements.
pub fn render<C: Described>(results: &[Labelled<C>]) -> String {
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
    let described: Description = first.info.run.clone().into();
    out.push_str(&format!(
        "engine {}, workload {}, {} s measured after {} s warm-up{}\n",
        described.engine,
        described.workload,
        first.info.duration_s,
        first.info.warmup_s,
        if several_runs { format!(", mean of {} runs", first.runs) } else { String::new() }
    ));
    out
}
