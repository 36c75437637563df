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

/// One edge of a dependency cycle: transaction `from` must precede transaction `to` because of
/// a `kind` dependency on `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CycleStep {
    pub from: u64,
    pub kind: DependencyKind,
    pub key: u64,
    pub to: u64,
}

/// A reason the history is not serializable (or, for the timestamp variants, not serializable
/// in commit-timestamp order).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Violation {
    #[error("transaction id {id} appears twice (entries {first_position} and {second_position}, counting from 0)")]
    DuplicateTransaction { id: u64, first_position: usize, second_position: usize },
    #[error("T{id} writes version 0 of key {key}, but version 0 is the initially loaded value and nobody writes it")]
    InitialVersionWritten { id: u64, key: u64 },
    #[error(
        "T{id} writes key {key} twice (versions {first_version} and {second_version}); a \
         transaction installs at most one version of each key"
    )]
    KeyWrittenTwice { id: u64, key: u64, first_version: u64, second_version: u64 },
    #[error(
        "version {version} of key {key} was installed by both T{first_id} and T{second_id}; \
         two committed writers of one version means one overwrote the other unseen (lost update)"
    )]
    DuplicateVersion { key: u64, version: u64, first_id: u64, second_id: u64 },
    #[error(
        "T{id} read version {version} of key {key}, which no committed transaction wrote \
         (a read of an aborted or uncommitted write, or of a version that never existed)"
    )]
    PhantomRead { id: u64, key: u64, version: u64 },
    #[error("cycle: {}", display_cycle(.transactions))]
    Cycle { transactions: Vec<CycleStep> },
    #[error("T{id} has no commit timestamp (`ts`), so the timestamp order is undefined")]
    MissingTimestamp { id: u64 },
    #[error("T{first_id} and T{second_id} both committed at ts {ts}; commit timestamps must be distinct")]
    DuplicateTimestamp { ts: u64, first_id: u64, second_id: u64 },
    #[error(
        "T{id} committed at ts {ts} but installed version {version} of key {key}; every write's version must be its ts"
    )]
    VersionNotTimestamp { id: u64, ts: u64, key: u64, version: u64 },
    #[error("T{id} committed at ts {ts} but read version {version} of key {key}, which is not older than its own ts")]
    ReadFromFuture { id: u64, ts: u64, key: u64, version: u64 },
    #[error(
        "T{id} committed at ts {ts} but read version {version} of key {key}; T{latest_writer} had \
         already installed version {latest_version} before ts {ts}, so the read was stale"
    )]
    StaleRead { id: u64, ts: u64, key: u64, version: u64, latest_version: u64, latest_writer: u64 },
}

fn display_cycle(steps: &[CycleStep]) -> String {
    let Some(first) = steps.first() else {
        return "(empty)".to_owned();
    };
    let mut out = format!("T{}", first.from);
    for step in steps {
        out.push_str(&format!(" -{}(k={})-> T{}", step.kind, step.key, step.to));
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
                CycleStep { from: 12, kind: DependencyKind::ReadWrite, key: 5, to: 40 },
                CycleStep { from: 40, kind: DependencyKind::WriteWrite, key: 9, to: 12 },
            ],
        };
        assert_eq!(cycle.to_string(), "cycle: T12 -rw(k=5)-> T40 -ww(k=9)-> T12");
    }
}
