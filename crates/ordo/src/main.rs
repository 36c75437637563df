//! `ordo`: the command line of the ordo transaction-processing system.
//!
//! Each subcommand lives in its own module under `commands/`; this file only rewrites the old
//! form `ordo bench --engine NAME` to the subcommand `ordo bench NAME` (`commands::bench::compat`),
//! parses the command line and reports errors (`error: ...` on stderr, exit status 1, or the command's
//! own status such as `ordo check`'s 2 for unreadable input; clap's own usage errors exit
//! with 2).

// The `///` comments on the command line's arguments are clap's `--help` text, read in a
// terminal: placeholders such as `hybrid_<m>` are meant literally there, not as HTML.
#![allow(rustdoc::invalid_html_tags)]

mod commands;
#[cfg(test)]
mod tests;

use clap::{Parser, Subcommand};

/// mimalloc: the pipeline engine allocates a message buffer per request and reply, often
/// freed on another thread; there it runs about 1.1x faster than glibc's allocator, and the
/// storage engine's tables, which allocate from their own arenas, run the same (BENCHMARKS.md,
/// "The global allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "ordo", version, about = "Transaction batching and reordering for optimistic concurrency control")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an engine on a workload and measure throughput, aborts and latency (sweeps with
    /// lists): `ordo bench pipeline|threads|pg ...` (or `ordo bench --engine NAME ...`).
    Bench(commands::bench::BenchArgs),
    /// The one-minute demonstration: base against srvc on the micro-benchmark at several skews.
    Headline(commands::headline::HeadlineArgs),
    /// Check that a recorded transaction history (JSON lines) is serializable (or, with
    /// `--isolation snapshot`, allowed by snapshot isolation).
    Check(commands::check::CheckArgs),
    /// Run one of the paper's experiments (or all) and write its data, charts and a report.
    Figures(commands::figures::FiguresArgs),
    /// Plan one batch: which transactions to abort and in which order to validate the rest.
    Fvs(commands::fvs::FvsArgs),
    /// Compare the feedback vertex set algorithms on micro-benchmark batches (paper Fig. 5-6).
    FvsBench(commands::fvs_bench::FvsBenchArgs),
    /// Run a throwaway local PostgreSQL for `ordo bench --engine pg` (start, stop, status, load).
    Pg(commands::pg::PgArgs),
    /// Recover a write-ahead log directory (`ordo bench --wal`) and report what it holds;
    /// --dump writes the recovered rows as JSON lines.
    Recover(commands::recover::RecoverArgs),
    /// Measure the Zipfian generator's speed (nanoseconds per draw).
    ZipfBench(commands::zipf_bench::ZipfBenchArgs),
}

fn main() {
    // Die quietly when a reader such as `head` closes the pipe, as Unix tools do, instead of
    // panicking in `println!` (Rust ignores SIGPIPE by default). Result files are written as
    // runs finish, so nothing measured is lost.
    sigpipe::reset();
    let args = match commands::bench::compat::rewrite(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    };
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        Command::Bench(args) => commands::bench::run(&args),
        Command::Check(args) => commands::check::run(&args),
        Command::Headline(args) => commands::headline::run(&args),
        Command::Figures(args) => commands::figures::run(&args),
        Command::Fvs(args) => commands::fvs::run(&args),
        Command::FvsBench(args) => commands::fvs_bench::run(&args),
        Command::Pg(args) => commands::pg::run(&args),
        Command::Recover(args) => commands::recover::run(&args),
        Command::ZipfBench(args) => commands::zipf_bench::run(&args),
    };
    if let Err(error) = result {
        eprintln!("error: {error:#}");
        let status =
            error.downcast_ref::<commands::check::CheckFailure>().map_or(1, commands::check::CheckFailure::exit_status);
        std::process::exit(status);
    }
}
