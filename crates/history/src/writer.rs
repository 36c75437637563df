//! Appending committed transactions to a history, one JSON line each.
//!
//! The writer buffers; nothing is guaranteed on disk until [`HistoryWriter::finish`] returns.
//! Engines call [`HistoryWriter::append`] from their commit path in commit order (or any
//! order: the checker does not depend on line order).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::entry::HistoryEntry;
use crate::error::HistoryError;

/// A buffered JSON-lines history writer.
#[derive(Debug)]
pub struct HistoryWriter<W: Write> {
    out: BufWriter<W>,
    entries_written: u64,
}

impl HistoryWriter<File> {
    /// Creates (or truncates) the history file at `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, HistoryError> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|source| HistoryError::Create { path: path.to_owned(), source })?;
        Ok(HistoryWriter::new(file))
    }
}

impl<W: Write> HistoryWriter<W> {
    /// Writes entries to `out` through a buffer.
    pub fn new(out: W) -> Self {
        HistoryWriter { out: BufWriter::new(out), entries_written: 0 }
    }

    /// Appends one committed transaction as one line.
    pub fn append(&mut self, entry: &HistoryEntry) -> Result<(), HistoryError> {
        debug_assert!(entry.key_written_twice().is_none(), "transaction {} writes a key twice", entry.id);
        let entries_written = self.entries_written;
        serde_json::to_writer(&mut self.out, entry)
            .map_err(|error| HistoryError::Write { entries_written, source: error.into() })?;
        self.out.write_all(b"\n").map_err(|source| HistoryError::Write { entries_written, source })?;
        self.entries_written += 1;
        Ok(())
    }

    /// Entries appended so far.
    pub fn entries_written(&self) -> u64 {
        self.entries_written
    }

    /// Flushes every buffered entry and returns the underlying writer.
    pub fn finish(self) -> Result<W, HistoryError> {
        let entries_written = self.entries_written;
        self.out.into_inner().map_err(|error| HistoryError::Write { entries_written, source: error.into_error() })
    }
}
