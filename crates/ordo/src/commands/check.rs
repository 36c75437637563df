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
//! with two writers, a read of a version nobody committed) and exits with status 1.
//! `--timestamps` also requires the commit-timestamp order to be a valid serial order.

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
    let entries = read_entries(args)?;
    let report = check(&entries).map_err(|violation| anyhow!("not serializable: {violation}"))?;
    if args.timestamps {
        check_timestamp_order(&entries)
            .map_err(|violation| anyhow!("not serializable in timestamp order: {violation}"))?;
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
