//! `ordo check`: decide whether a recorded transaction history is serializable.
//!
//! Input (a file, or stdin when the path is `-`) is the JSON-lines history every ordo engine
//! writes, one committed transaction per line:
//!
//! ```json
//! {"id": 7, "reads": [[5, 3], [9, 0]], "writes": [[5, 12]], "ts": 12}
//! ```
//!
//! The history passes when its dependency graph (ww, wr and rw edges from the per-key version
//! order) is acyclic; otherwise the command names the problem (one concrete cycle, a version
//! with two writers, a read of a version nobody committed). `--timestamps` also requires the
//! commit-timestamp order to be a valid serial order. A UTF-8 byte-order mark is accepted. An
//! empty history is an error (a run that recorded nothing proves nothing) unless
//! `--allow-empty`.
//!
//! Exit status: 0 serializable; 1 not serializable; 2 the input could not be read or is not a
//! history (a missing file, malformed JSON, an empty history), as for clap's usage errors.

use std::io::BufReader;
use std::path::PathBuf;

use anyhow::{Result, anyhow};
use clap::Args;
use ordo_history::{CheckReport, HistoryEntry, check, check_timestamp_order, read_history, read_history_file};
use serde::Serialize;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// History as JSON lines, one committed transaction per line; `-` for stdin.
    pub history: PathBuf,
    /// Also check that commit-timestamp (`ts`) order is a valid serial order; every entry
    /// needs a `ts`.
    #[arg(long)]
    pub timestamps: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Accept a history with no transactions (otherwise an error: nothing was checked).
    #[arg(long)]
    pub allow_empty: bool,
}

/// Exit status of a history that is not serializable.
pub const EXIT_NOT_SERIALIZABLE: i32 = 1;
/// Exit status of input that could not be read, or is not a history.
pub const EXIT_UNREADABLE: i32 = 2;

/// What `ordo check` found, for `main` to turn into an exit status.
#[derive(Debug, thiserror::Error)]
pub enum CheckFailure {
    /// The input is unreadable or not a history.
    #[error(transparent)]
    Unreadable(anyhow::Error),
    /// The history is not serializable.
    #[error("{0}")]
    NotSerializable(String),
}

impl CheckFailure {
    pub fn exit_status(&self) -> i32 {
        match self {
            CheckFailure::Unreadable(_) => EXIT_UNREADABLE,
            CheckFailure::NotSerializable(_) => EXIT_NOT_SERIALIZABLE,
        }
    }
}

#[derive(Debug, Serialize)]
struct CheckOutput {
    serializable: bool,
    timestamp_order_checked: bool,
    operations: usize,
    edges: usize,
    #[serde(flatten)]
    report: CheckReport,
}

fn read_entries(args: &CheckArgs) -> Result<Vec<HistoryEntry>> {
    let entries = if args.history.as_os_str() == "-" {
        read_history(BufReader::new(std::io::stdin().lock()))?
    } else {
        read_history_file(&args.history)?
    };
    Ok(entries)
}

pub fn run(args: &CheckArgs) -> Result<()> {
    let entries = read_entries(args).map_err(CheckFailure::Unreadable)?;
    if entries.is_empty() && !args.allow_empty {
        return Err(CheckFailure::Unreadable(anyhow!(
            "{}: the history holds no transactions, so nothing was checked (--allow-empty accepts that)",
            args.history.display()
        ))
        .into());
    }
    let report =
        check(&entries).map_err(|violation| CheckFailure::NotSerializable(format!("not serializable: {violation}")))?;
    if args.timestamps {
        check_timestamp_order(&entries).map_err(|violation| {
            CheckFailure::NotSerializable(format!("not serializable in timestamp order: {violation}"))
        })?;
    }
    if args.json {
        let output = CheckOutput {
            serializable: true,
            timestamp_order_checked: args.timestamps,
            operations: report.operations(),
            edges: report.edges(),
            report,
        };
        println!("{}", serde_json::to_string(&output)?);
        return Ok(());
    }
    let timestamps = if args.timestamps { " Commit-timestamp order is a valid serial order." } else { "" };
    if report.inserts + report.deletes + report.scans > 0 {
        println!(
            "{} inserts, {} deletes; {} scans saw {} rows and {} absent keys ({} absences ambiguous, given no edge)",
            report.inserts,
            report.deletes,
            report.scans,
            report.scanned_rows,
            report.scanned_absences,
            report.ambiguous_absences
        );
    }
    println!(
        "serializable: {} transactions, {} operations ({} reads, {} writes); the dependency graph has {} edges \
         ({} ww, {} wr, {} rw) and no cycle.{timestamps}",
        report.transactions,
        report.operations(),
        report.reads,
        report.writes,
        report.edges(),
        report.write_write_edges,
        report.write_read_edges,
        report.read_write_edges,
    );
    Ok(())
}
