//! What a history can do wrong, in the words of the person reading the report.
//!
//! Transactions are named `T<id>` after the ids in the history. The first group of variants
//! says the history does not describe a version order at all (a version with two writers, a
//! read of a version nobody committed); [`Violation::Cycle`] says the version order exists
//! but admits no serial order; the last group is about commit timestamps
//! ([`check_timestamp_order`](crate::check_timestamp_order)).

use std::fmt;

use serde::Serialize;
use thiserror::Error;

use crate::entry::TableId;

/// Why one transaction must precede another in every equivalent serial order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum DependencyKind {
    /// Write-write: the source installed a version, the target installed the next one.
    #[serde(rename = "ww")]
    WriteWrite,
    /// Write-read: the target read the version the source installed.
    #[serde(rename = "wr")]
    WriteRead,
    /// Read-write (anti-dependency): the source read a version, the target installed the next
    /// one, so the source did not see the target's write.
    #[serde(rename = "rw")]
    ReadWrite,
}

impl DependencyKind {
    /// The usual two-letter name: `ww`, `wr` or `rw`.
    pub fn short_name(self) -> &'static str {
        match self {
            DependencyKind::WriteWrite => "ww",
            DependencyKind::WriteRead => "wr",
            DependencyKind::ReadWrite => "rw",
        }
    }
}

impl fmt::Display for DependencyKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.short_name())
    }
}

/// The range a scan covered, named in a cycle step that it justifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct ScanRange {
    pub low: u64,
    pub high: u64,
}

/// One edge of a dependency cycle: transaction `from` must precede transaction `to` because of
/// a `kind` dependency on `key` of `table`. `phantom` is set when the dependency comes from a
/// scan of `table` over that range that saw `key` absent (a phantom anti-dependency when the
/// kind is rw: the target made the key present or absent after the scan looked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CycleStep {
    pub from: u64,
    pub kind: DependencyKind,
    pub table: TableId,
    pub key: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phantom: Option<ScanRange>,
    pub to: u64,
}

impl CycleStep {
    /// A step on a key of table 0 not justified by a scan.
    pub fn on_key(from: u64, kind: DependencyKind, key: u64, to: u64) -> Self {
        CycleStep { from, kind, table: 0, key, phantom: None, to }
    }
}

/// `key 5` on table 0, `key 5 of table 2` elsewhere.
pub(crate) fn key_name(table: TableId, key: u64) -> String {
    if table == 0 { format!("key {key}") } else { format!("key {key} of table {table}") }
}

/// A reason the history is not serializable (or, for the timestamp variants, not serializable
/// in commit-timestamp order).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Violation {
    #[error("transaction id {id} appears twice (entries {first_position} and {second_position}, counting from 0)")]
    DuplicateTransaction { id: u64, first_position: usize, second_position: usize },
    #[error("T{id} writes version 0 of {}, but version 0 is the initial state and nobody writes it", key_name(*.table, *.key))]
    InitialVersionWritten { id: u64, table: TableId, key: u64 },
    #[error(
        "T{id} writes {} twice (versions {first_version} and {second_version}); a \
         transaction installs at most one version of each key", key_name(*.table, *.key)
    )]
    KeyWrittenTwice { id: u64, table: TableId, key: u64, first_version: u64, second_version: u64 },
    #[error(
        "version {version} of {} was installed by both T{first_id} and T{second_id}; \
         two committed writers of one version means one overwrote the other unseen (lost update)",
        key_name(*.table, *.key)
    )]
    DuplicateVersion { table: TableId, key: u64, version: u64, first_id: u64, second_id: u64 },
    #[error(
        "T{id} read version {version} of {}, which no committed transaction wrote \
         (a read of an aborted or uncommitted write, or of a version that never existed)",
        key_name(*.table, *.key)
    )]
    PhantomRead { id: u64, table: TableId, key: u64, version: u64 },
    #[error(
        "T{id} scanned table {table} over [{low}, {high}] and did not see key {key}, which was \
         present in every version the history records (a scan that missed a row)"
    )]
    MissedRow { id: u64, table: TableId, key: u64, low: u64, high: u64 },
    #[error("cycle: {}", display_cycle(.transactions))]
    Cycle { transactions: Vec<CycleStep> },
    #[error("T{id} has no commit timestamp (`ts`), so the timestamp order is undefined")]
    MissingTimestamp { id: u64 },
    #[error("T{first_id} and T{second_id} both committed at ts {ts}; commit timestamps must be distinct")]
    DuplicateTimestamp { ts: u64, first_id: u64, second_id: u64 },
    #[error(
        "T{id} committed at ts {ts} but installed version {version} of {}; every write's version must be its ts",
        key_name(*.table, *.key)
    )]
    VersionNotTimestamp { id: u64, ts: u64, table: TableId, key: u64, version: u64 },
    #[error(
        "T{id} committed at ts {ts} but read version {version} of {}, which is not older than its own ts",
        key_name(*.table, *.key)
    )]
    ReadFromFuture { id: u64, ts: u64, table: TableId, key: u64, version: u64 },
    #[error(
        "T{id} committed at ts {ts} but read version {version} of {}; T{latest_writer} had \
         already installed version {latest_version} before ts {ts}, so the read was stale",
        key_name(*.table, *.key)
    )]
    StaleRead { id: u64, ts: u64, table: TableId, key: u64, version: u64, latest_version: u64, latest_writer: u64 },
    #[error(
        "T{id} committed at ts {ts} and scanned table {table} over [{low}, {high}], but did not list \
         key {key}, which was present at ts {ts} (version {version})"
    )]
    ScanMissedRow { id: u64, ts: u64, table: TableId, low: u64, high: u64, key: u64, version: u64 },
}

fn display_cycle(steps: &[CycleStep]) -> String {
    let Some(first) = steps.first() else {
        return "(empty)".to_owned();
    };
    let mut out = format!("T{}", first.from);
    for step in steps {
        let key = if step.table == 0 { format!("k={}", step.key) } else { format!("t{} k={}", step.table, step.key) };
        match step.phantom {
            Some(range) => out.push_str(&format!(
                " -{}(phantom, scan of t{} [{},{}], k={})-> T{}",
                step.kind, step.table, range.low, range.high, step.key, step.to
            )),
            None => out.push_str(&format!(" -{}({key})-> T{}", step.kind, step.to)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_reads_as_a_chain_of_edges() {
        let cycle = Violation::Cycle {
            transactions: vec![
                CycleStep::on_key(12, DependencyKind::ReadWrite, 5, 40),
                CycleStep { table: 3, ..CycleStep::on_key(40, DependencyKind::WriteWrite, 9, 7) },
                CycleStep {
                    table: 2,
                    phantom: Some(ScanRange { low: 0, high: 100 }),
                    ..CycleStep::on_key(7, DependencyKind::ReadWrite, 9, 12)
                },
            ],
        };
        assert_eq!(
            cycle.to_string(),
            "cycle: T12 -rw(k=5)-> T40 -ww(t3 k=9)-> T7 -rw(phantom, scan of t2 [0,100], k=9)-> T12"
        );
    }
}
