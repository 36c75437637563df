//! Fuzzy checkpoints, taken while transactions run, and the segment deletion they allow.
//!
//! The engine picks a begin epoch `B` such that every transaction of an epoch `< B` is
//! installed, then streams rows `(table, key, version, row)` read one at a time, in
//! increasing `(table, key)` order (recovery merges them with the log as they stream), while
//! transactions keep committing, so a row may show a write of any epoch `>= B`. Once the
//! scan ends in epoch `E_end` and the log is durable through `E_end` (on an idle engine,
//! `Logger::want_durable(E_end)` makes the logger write a marker-only epoch), the
//! checkpoint is committed:
//!
//! ```text
//!  checkpoint.tmp: header(B) rows... end(rows, E_end)
//!     cut to length, sync(checkpoint.tmp) -> rename to checkpoint-B.ckpt -> sync_dir
//!     -> delete older checkpoints and every segment whose epochs are all < B -> sync_dir
//! ```
//!
//! Recovery loads the rows and replays the log on top of them, keeping per key the highest
//! version, so a row read before or after a concurrent write converges to the same state.
//! A crash before the rename leaves the previous checkpoint and all segments it needs;
//! a crash during deletion leaves a suffix of segments, all covered or still needed.

use crate::LogError;
use crate::device::Dir;
use crate::format::{self, FileHeader, FileKind, Record, RowRecord};
use crate::naming::{self, CHECKPOINT_TEMP_NAME, LogFile};

/// Rows are written to the file in chunks of about this many bytes, each with
/// [`Dir::append_synced`] (for a [`crate::FileDir`], one direct write: the checkpoint does not
/// pass through the page cache either, see [`crate::direct`]).
const CHUNK_BYTES: usize = 4 << 20;

/// A checkpoint being written into a directory `D` (a reference for a checkpoint taken in one
/// call, an `Arc` for one that a component writes a slice at a time).
#[derive(Debug)]
pub struct CheckpointWriter<D: Dir> {
    dir: D,
    begin_epoch: u64,
    rows: u64,
    /// Bytes appended to the file so far.
    bytes: u64,
    /// The last row's `(table, key)`: rows come in increasing order.
    last: Option<(u16, u64)>,
    chunk: Vec<u8>,
}

impl<D: Dir> CheckpointWriter<D> {
    /// Starts a checkpoint at `begin_epoch` (every transaction of an earlier epoch installed).
    pub fn begin(dir: D, begin_epoch: u64) -> Result<Self, LogError> {
        dir.create(CHECKPOINT_TEMP_NAME)?;
        let mut chunk = Vec::new();
        format::encode_header(
            &FileHeader { kind: FileKind::Checkpoint, number: begin_epoch, first_epoch: begin_epoch },
            &mut chunk,
        );
        Ok(Self { dir, begin_epoch, rows: 0, bytes: 0, last: None, chunk })
    }

    /// Adds one row as read now.
    pub fn row(&mut self, row: &RowRecord) -> Result<(), LogError> {
        self.row_words(row.table, row.key, row.version, &row.row)
    }

    /// Adds one row as read now, from its parts (no allocation). Rows must come in increasing
    /// `(table, key)` order.
    pub fn row_words(&mut self, table: u16, key: u64, version: u64, row: &[u64]) -> Result<(), LogError> {
        if let Some(previous) = self.last
            && previous >= (table, key)
        {
            return Err(LogError::CheckpointOrder { previous, next: (table, key) });
        }
        self.last = Some((table, key));
        format::encode_row(&mut self.chunk, table, key, version, row);
        self.rows += 1;
        if self.chunk.len() >= CHUNK_BYTES {
            self.write_chunk()?;
        }
        Ok(())
    }

    fn write_chunk(&mut self) -> Result<(), LogError> {
        self.dir.append_synced(CHECKPOINT_TEMP_NAME, std::slice::from_ref(&self.chunk))?;
        self.bytes += self.chunk.len() as u64;
        self.chunk.clear();
        Ok(())
    }

    /// Rows added so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes written so far (including rows still buffered).
    pub fn bytes(&self) -> u64 {
        self.bytes + self.chunk.len() as u64
    }

    /// The epoch the checkpoint began at.
    pub fn begin_epoch(&self) -> u64 {
        self.begin_epoch
    }

    /// Commits the checkpoint. `end_epoch` is the epoch the scan ended in, and the log must
    /// already be durable through it (`durable_epoch >= end_epoch`), so no row of the
    /// checkpoint shows a write that recovery could lose. Then deletes what it covers.
    pub fn finish(mut self, end_epoch: u64, durable_epoch: u64) -> Result<u64, LogError> {
        if durable_epoch < end_epoch {
            return Err(LogError::CheckpointAhead { end_epoch, durable_epoch });
        }
        format::encode_record(&Record::CheckpointEnd { rows: self.rows, end_epoch }, &mut self.chunk);
        self.write_chunk()?;
        // The file ends at its `CheckpointEnd` (recovery reads a checkpoint's last frame), not
        // at a direct write's padding.
        self.dir.truncate(CHECKPOINT_TEMP_NAME, self.bytes)?;
        self.dir.sync(CHECKPOINT_TEMP_NAME)?;
        self.dir.rename(CHECKPOINT_TEMP_NAME, &naming::checkpoint_name(self.begin_epoch))?;
        self.dir.sync_dir()?;
        delete_covered(&self.dir, self.begin_epoch)?;
        Ok(self.rows)
    }
}

/// Deletes older checkpoints and every segment whose epochs all precede `begin_epoch`
/// (a segment is covered when the next segment starts at or before `begin_epoch`).
/// Returns how many files were removed.
pub fn delete_covered(dir: &dyn Dir, begin_epoch: u64) -> Result<usize, LogError> {
    let mut segments = Vec::new();
    let mut removed = 0;
    for name in dir.list()? {
        match naming::parse(&name) {
            Some(LogFile::Checkpoint { begin_epoch: older }) if older < begin_epoch => {
                dir.remove(&name)?;
                removed += 1;
            }
            Some(LogFile::Segment { number }) => segments.push((number, name)),
            _ => {}
        }
    }
    segments.sort();
    let mut first_epochs = Vec::with_capacity(segments.len());
    let mut header = [0; format::HEADER_LEN];
    for (_, name) in &segments {
        // A segment being created may not have its header yet: it covers nothing.
        let read = dir.read_at(name, 0, &mut header)?;
        let first_epoch = format::decode_header(&header[..read]).map_or(u64::MAX, |header| header.first_epoch);
        first_epochs.push(first_epoch);
    }
    // Delete oldest first, so a crash part-way leaves a suffix of the log.
    for index in 0..segments.len().saturating_sub(1) {
        if first_epochs[index + 1] > begin_epoch {
            break;
        }
        dir.remove(&segments[index].1)?;
        dir.sync_dir()?;
        removed += 1;
    }
    if removed > 0 {
        dir.sync_dir()?;
    }
    Ok(removed)
}
