//! `ordo check`: decide whether a recorded transaction history is serializable (or, with
//! `--isolation snapshot`, allowed by snapshot isolation).
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
//! commit-timestamp order to be a valid serial order. `--isolation snapshot` checks the weaker
//! promise of `mvcc_si`: every cycle must hold two anti-dependencies in a row (write skew
//! passes, a lost update does not), and the report also says whether the history happens to
//! be serializable. A UTF-8 byte-order mark is accepted. An empty history is an error (a run
//! that recorded nothing proves nothing) unless `--allow-empty`.
//!
//! Exit status: 0 the history satisfies the isolation checked; 1 it does not; 2 the input
//! could not be read or is not a history (a missing file, malformed JSON, an empty history),
//! or the flags contradict each other, as for clap's usage errors.

use std::io::BufReader;
use std::path::PathBuf;

use anyhow::{Result, anyhow};
use clap::{Args, ValueEnum};
use ordo_history::{
    CheckReport, HistoryEntry, check, check_snapshot_isolation_and_serializability, check_timestamp_order,
    read_history, read_history_file,
};
use serde::Serialize;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// History as JSON lines, one committed transaction per line; `-` for stdin.
    pub history: PathBuf,
    /// The isolation the history must satisfy.
    #[arg(long, value_enum, default_value_t = Isolation::Serializable)]
    pub isolation: Isolation,
    /// Also check that commit-timestamp (`ts`) order is a valid serial order; every entry
    /// needs a `ts` (serializable only).
    #[arg(long)]
    pub timestamps: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Accept a history with no transactions (otherwise an error: nothing was checked).
    #[arg(long)]
    pub allow_empty: bool,
}

/// What `ordo check` checks a history against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Conflict serializability: the dependency graph is acyclic.
    Serializable,
    /// Snapshot isolation: every cycle holds two anti-dependencies in a row.
    Snapshot,
}

/// Exit status of a history that does not satisfy the isolation checked.
pub const EXIT_VIOLATION: i32 = 1;
/// Exit status of input that could not be read, or is not a history.
pub const EXIT_UNREADABLE: i32 = 2;

/// What `ordo check` found, for `main` to turn into an exit status.
#[derive(Debug, thiserror::Error)]
pub enum CheckFailure {
    /// The input is unreadable or not a history.
    #[error(transparent)]
    Unreadable(anyhow::Error),
    /// The history does not satisfy the isolation checked.
    #[error("{0}")]
    Violation(String),
}

impl CheckFailure {
    pub fn exit_status(&self) -> i32 {
        match self {
            CheckFailure::Unreadable(_) => EXIT_UNREADABLE,
            CheckFailure::Violation(_) => EXIT_VIOLATION,
        }
    }
}

#[derive(Debug, Serialize)]
struct CheckOutput {
    isolation: Isolation,
    /// Whether the history is serializable (always, for `--isolation serializable`, which
    /// fails otherwise).
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
    if args.timestamps && args.isolation == Isolation::Snapshot {
        return Err(CheckFailure::Unreadable(anyhow!(
            "--timestamps checks that commit-timestamp order is a serial order, which snapshot isolation does not \
             promise; drop one of --timestamps and --isolation snapshot"
        ))
        .into());
    }
    let entries = read_entries(args).map_err(CheckFailure::Unreadable)?;
    if entries.is_empty() && !args.allow_empty {
        return Err(CheckFailure::Unreadable(anyhow!(
            "{}: the history holds no transactions, so nothing was checked (--allow-empty accepts that)",
            args.history.display()
        ))
        .into());
    }
    let (report, serializable) = match args.isolation {
        Isolation::Serializable => {
            let report = check(&entries)
                .map_err(|violation| CheckFailure::Violation(format!("not serializable: {violation}")))?;
            (report, Ok(()))
        }
        Isolation::Snapshot => check_snapshot_isolation_and_serializability(&entries)
            .map_err(|violation| CheckFailure::Violation(format!("not snapshot isolation: {violation}")))?,
    };
    if args.timestamps {
        check_timestamp_order(&entries).map_err(|violation| {
            CheckFailure::Violation(format!("not serializable in timestamp order: {violation}"))
        })?;
    }
    if args.json {
        let output = CheckOutput {
            isolation: args.isolation,
            serializable: serializable.is_ok(),
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
    let (verdict, cycles) = match (args.isolation, &serializable) {
        (Isolation::Serializable, _) => ("serializable", "no cycle".to_owned()),
        (Isolation::Snapshot, Ok(())) => {
            ("snapshot isolation", "no cycle (the history is also serializable)".to_owned())
        }
        (Isolation::Snapshot, Err(violation)) => (
            "snapshot isolation",
            format!("no cycle without two anti-dependencies in a row (not serializable: {violation})"),
        ),
    };
    println!(
        "{verdict}: {} transactions, {} operations ({} reads, {} writes); the dependency graph has {} edges \
         ({} ww, {} wr, {} rw) and {cycles}.{timestamps}",
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
