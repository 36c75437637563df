//! Errors of reading and writing history files: I/O and malformed lines, never a
//! serializability verdict (that is a [`Violation`](crate::Violation)). An I/O error is the
//! `source` of its variant and is not repeated in the message, so a caller that prints the
//! chain (`anyhow`'s `{:#}`) shows the operating system's error once.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::entry::TableId;

#[derive(Debug, Error)]
pub enum HistoryError {
    #[error("cannot open history file {}", .path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot create history file {}", .path.display())]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot read the history at line {line}")]
    Read { line: usize, source: io::Error },
    #[error("cannot write the history (entries appended so far: {entries_written})")]
    Write { entries_written: u64, source: io::Error },
    #[error("line {line}: {reason}")]
    Malformed { line: usize, reason: String },
    #[error(
        "line {line}: transaction {id} writes {} twice (versions {first_version} and \
         {second_version}); a transaction installs at most one version of each key",
        crate::violation::key_name(*.table, *.key)
    )]
    KeyWrittenTwice { line: usize, id: u64, table: TableId, key: u64, first_version: u64, second_version: u64 },
}
