//! Errors of reading and writing history files: I/O and malformed lines, never a
//! serializability verdict (that is a [`Violation`](crate::Violation)).

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::entry::TableId;

#[derive(Debug, Error)]
pub enum HistoryError {
    #[error("cannot open history file {}: {source}", .path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot create history file {}: {source}", .path.display())]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot read the history at line {line}: {source}")]
    Read { line: usize, source: io::Error },
    #[error("cannot write the history (entries appended so far: {entries_written}): {source}")]
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
