//! Recovery: the latest complete checkpoint plus the log, cut at the first torn or corrupt
//! frame, applied per key by highest version.
//!
//! ```text
//!  checkpoint-B (rows, end E_c)   segment 3          segment 4
//!  [r r r r r r r r | end]        [tx tx |E5| tx |E6| tx tx |E7| tx ##torn##]
//!                                                           ^ durable end  ^ cut
//!  state = rows + every tx of epochs <= 7, per key the highest version
//! ```
//!
//! Transactions are held back until the `EpochClosed` marker of their epoch is read; what
//! follows the last marker (an unfinished epoch, a torn write, corruption) is never applied,
//! so the recovered state is always a whole number of epochs. The log is then cut back to
//! the end of the last marker (later segments removed and the directory synced first, then
//! the segment truncated and synced), so a logger that resumes never makes the discarded
//! records part of a later epoch. Every step can be interrupted by a crash and redone:
//! recovering twice yields the same state.
//!
//! # Streaming
//!
//! A checkpoint can be larger than memory allows to hold twice (10M rows of 128 bytes), so
//! it is never held: the log is replayed first into a map of the keys it wrote (each key's
//! newest version and row, rows in one flat arena rewritten in place), the map is sorted, and
//! then the checkpoint is read in chunks, in the `(table, key)` order it was written in, and
//! merged with the sorted log keys on the way to the sink:
//!
//! ```text
//!  checkpoint rows (sorted, streamed)   k1 v3 | k2 v1 | k5 v2 | ...
//!  log keys (sorted, in memory)               | k2 v4 | k4 v1 (delete) | k5 v2
//!  sink                                 k1 v3 | k2 v4 |                | k5 v2 (log wins ties)
//! ```
//!
//! Memory is the log's distinct keys, not the checkpoint's rows. Which checkpoint is used is
//! decided by its header and its last frame (a `CheckpointEnd`, present only once the file
//! was complete before its rename); a checkpoint damaged in the middle is found while it
//! streams, and recovery then fails with [`LogError::DamagedCheckpoint`] naming the file and
//! offset: the segments it covered are gone, so no correct state can be rebuilt without it.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use crate::LogError;
use crate::device::Dir;
use crate::format::{self, FRAME_HEADER_LEN, FileKind, HEADER_LEN, RecordView, RowWords, WriteKind};
use crate::naming::{self, LogFile};

/// Where and why the log was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub file: String,
    pub offset: u64,
    pub reason: String,
}

/// Counts of what recovery read, for the report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecoveryStats {
    /// Log frames read before the cut.
    pub records: u64,
    /// Transactions applied (those of closed epochs).
    pub transactions: u64,
    /// Epoch markers read.
    pub epochs: u64,
    /// Log and checkpoint bytes read.
    pub bytes: u64,
    /// Log bytes read (segments).
    pub log_bytes: u64,
    /// Checkpoint bytes read.
    pub checkpoint_bytes: u64,
    /// Rows loaded from the checkpoint.
    pub checkpoint_rows: u64,
    /// Rows delivered to the sink.
    pub rows: u64,
    pub seconds: f64,
}

/// What recovery found; the logger resumes from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// Every epoch `<= durable_epoch` is in the recovered state; none after it.
    pub durable_epoch: u64,
    /// Number for the next segment the logger creates.
    pub next_segment: u64,
    /// Begin epoch of the checkpoint used, if any.
    pub checkpoint_epoch: Option<u64>,
    /// Where the log was cut, when a torn or corrupt frame was found.
    pub cut: Option<Cut>,
    /// Per table, the highest version recovery saw, deletes included: an engine that resumes
    /// must give a key it re-creates a higher version, or an older delete still in the log
    /// would win over it at the next recovery.
    pub versions_max: BTreeMap<u16, u64>,
    /// The highest commit timestamp of a recovered transaction (engines whose log carries
    /// timestamps resume after it).
    pub commit_ts_max: Option<u64>,
    pub stats: RecoveryStats,
}

/// One recovered row, delivered to the sink in `(table, key)` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveredRow<'a> {
    pub table: u16,
    pub key: u64,
    pub version: u64,
    pub row: &'a [u64],
}

/// Bytes read from a checkpoint at a time.
const CHECKPOINT_CHUNK_BYTES: usize = 4 << 20;
/// Bytes of a checkpoint's last frame (`CheckpointEnd`: tag, rows, end epoch).
const CHECKPOINT_END_FRAME_LEN: u64 = (FRAME_HEADER_LEN + 1 + 8 + 8) as u64;

/// The newest write of one key that the log holds: its version, and its row in the arena
/// (`None`: a delete).
#[derive(Debug, Clone, Copy)]
struct LogSlot {
    version: u64,
    row: Option<(usize, usize)>,
}

/// The keys the replayed log wrote, each with its newest write.
#[derive(Debug, Default)]
struct LogRows {
    slots: HashMap<(u16, u64), LogSlot, foldhash::fast::RandomState>,
    /// Row words of every slot; a slot's row is rewritten in place when its length allows.
    words: Vec<u64>,
}

impl LogRows {
    fn apply(&mut self, table: u16, key: u64, version: u64, kind: WriteKind, row: RowWords<'_>) {
        let slot = self.slots.entry((table, key)).or_insert(LogSlot { version: 0, row: None });
        if slot.version > version {
            return;
        }
        slot.version = version;
        slot.row = match kind {
            WriteKind::Delete => None,
            WriteKind::Put => {
                let at = match slot.row {
                    Some((at, len)) if len == row.len() => at,
                    _ => {
                        let at = self.words.len();
                        self.words.resize(at + row.len(), 0);
                        at
                    }
                };
                row.copy_to(&mut self.words[at..at + row.len()]);
                Some((at, row.len()))
            }
        };
    }
}

/// A transaction read before its epoch's marker: its frame's place in the segment being read
/// (or, if a segment ended before the marker, in `carried`).
#[derive(Debug, Clone, Copy)]
struct PendingTx {
    epoch: u64,
    start: usize,
    end: usize,
    carried: bool,
}

/// Recovers the directory: reads the checkpoint and the log, cuts the log's tail back to the
/// last closed epoch, and calls `sink` once per live row, in `(table, key)` order.
pub fn recover(dir: &dyn Dir, mut sink: impl FnMut(&RecoveredRow<'_>)) -> Result<Recovered, LogError> {
    let started = Instant::now();
    let mut stats = RecoveryStats::default();
    let mut versions_max = BTreeMap::new();
    let names = dir.list()?;
    let files: Vec<(LogFile, String)> =
        names.iter().filter_map(|name| Some((naming::parse(name)?, name.clone()))).collect();

    // The newest checkpoint whose header and last frame say it is complete.
    let mut checkpoint = None;
    let mut checkpoints: Vec<&(LogFile, String)> =
        files.iter().filter(|(file, _)| matches!(file, LogFile::Checkpoint { .. })).collect();
    checkpoints.sort_by_key(|(file, _)| std::cmp::Reverse(*file));
    for (file, name) in checkpoints {
        let LogFile::Checkpoint { begin_epoch } = *file else { unreachable!("filtered above") };
        if let Some((rows, end_epoch)) = checkpoint_ends(dir, name, begin_epoch)? {
            checkpoint = Some((name.clone(), begin_epoch, rows, end_epoch));
            break;
        }
    }

    let mut segments: Vec<(u64, &String)> = files
        .iter()
        .filter_map(|(file, name)| match file {
            LogFile::Segment { number } => Some((*number, name)),
            LogFile::Checkpoint { .. } => None,
        })
        .collect();
    segments.sort_unstable();
    let next_segment = segments.iter().map(|(number, _)| number + 1).max().unwrap_or(0);

    let mut log = LogRows::default();
    let mut commit_ts_max = None;
    let mut pending: Vec<PendingTx> = Vec::new();
    let mut carried: Vec<u8> = Vec::new();
    let mut log_durable_epoch: Option<u64> = None;
    // (index into segments, byte offset just past the last marker)
    let mut durable_end: Option<(usize, usize)> = None;
    let mut cut = None;
    'segments: for (index, (_, name)) in segments.iter().enumerate() {
        let bytes = dir.read(name)?;
        stats.log_bytes += bytes.len() as u64;
        let cut_at = |offset: usize, reason: String| Cut { file: (*name).clone(), offset: offset as u64, reason };
        match format::decode_header(&bytes) {
            Ok(header) if header.kind == FileKind::Segment => {}
            Ok(_) => {
                cut = Some(cut_at(0, "not a segment header".to_string()));
                break;
            }
            Err(error) => {
                cut = Some(cut_at(0, format!("header: {error}")));
                break;
            }
        }
        let mut offset = HEADER_LEN;
        while offset < bytes.len() {
            let (record, len) = match format::decode_frame_view(&bytes[offset..]) {
                Ok(decoded) => decoded,
                Err(error) => {
                    // Zeros to the end of the newest segment are the padding of a direct
                    // write (`crate::direct`), not damage: the log simply ends there.
                    let padding = bytes[offset..].iter().all(|&byte| byte == 0);
                    if !padding || index + 1 < segments.len() {
                        let reason =
                            if padding { "zeros before a later segment".to_string() } else { error.to_string() };
                        cut = Some(cut_at(offset, reason));
                    }
                    break 'segments;
                }
            };
            match record {
                RecordView::Transaction { epoch, .. } => {
                    if log_durable_epoch.is_some_and(|closed| epoch <= closed) {
                        cut = Some(cut_at(offset, format!("transaction of epoch {epoch} after its epoch closed")));
                        break 'segments;
                    }
                    pending.push(PendingTx { epoch, start: offset, end: offset + len, carried: false });
                }
                RecordView::EpochClosed { epoch } => {
                    if log_durable_epoch.is_some_and(|closed| epoch <= closed) {
                        cut = Some(cut_at(offset, format!("epoch {epoch} closed out of order")));
                        break 'segments;
                    }
                    for tx in pending.extract_if(.., |tx| tx.epoch <= epoch) {
                        let source = if tx.carried { &carried[tx.start..tx.end] } else { &bytes[tx.start..tx.end] };
                        let Ok((RecordView::Transaction { writes, commit_ts, .. }, _)) =
                            format::decode_frame_view(source)
                        else {
                            unreachable!("a pending frame decoded as a transaction when it was read")
                        };
                        stats.transactions += 1;
                        commit_ts_max = commit_ts_max.max(commit_ts);
                        for write in writes.iter() {
                            let max = versions_max.entry(write.table).or_insert(0);
                            *max = write.version.max(*max);
                            log.apply(write.table, write.key, write.version, write.kind, write.row);
                        }
                    }
                    if pending.is_empty() {
                        carried.clear();
                    }
                    stats.epochs += 1;
                    log_durable_epoch = Some(epoch);
                    durable_end = Some((index, offset + len));
                }
                RecordView::Row { .. } | RecordView::CheckpointEnd { .. } => {
                    cut = Some(cut_at(offset, "checkpoint record in a segment".to_string()));
                    break 'segments;
                }
            }
            stats.records += 1;
            offset += len;
        }
        // A flush is never split across segments, so this is rare; keep what is still open.
        for tx in pending.iter_mut().filter(|tx| !tx.carried) {
            let start = carried.len();
            carried.extend_from_slice(&bytes[tx.start..tx.end]);
            *tx = PendingTx { epoch: tx.epoch, start, end: carried.len(), carried: true };
        }
    }

    // Cut the log back to the end of the last closed epoch: later segments go first (and the
    // removal is made durable), then the tail of the last kept segment.
    let keep_segments = durable_end.map_or(0, |(index, _)| index + 1);
    let mut removed_any = false;
    for (_, name) in &segments[keep_segments..] {
        dir.remove(name)?;
        removed_any = true;
    }
    if removed_any {
        dir.sync_dir()?;
    }
    if let Some((index, end)) = durable_end {
        let name = segments[index].1;
        if dir.len(name)? > end as u64 {
            dir.truncate(name, end as u64)?;
            dir.sync(name)?;
        }
    }

    // The log's keys in order, merged with the checkpoint's stream.
    let mut log_keys: Vec<((u16, u64), LogSlot)> = log.slots.drain().collect();
    log_keys.sort_unstable_by_key(|(key, _)| *key);
    let mut log_keys = log_keys.into_iter().peekable();
    let mut deliver = |table: u16, key: u64, version: u64, row: &[u64], stats: &mut RecoveryStats| {
        stats.rows += 1;
        sink(&RecoveredRow { table, key, version, row });
    };
    let mut checkpoint_epoch = None;
    let mut checkpoint_end_epoch = 0;
    if let Some((name, begin_epoch, rows, end_epoch)) = checkpoint {
        let mut reader = CheckpointReader::new(dir, &name)?;
        let mut scratch = Vec::new();
        let mut previous: Option<(u16, u64)> = None;
        let damaged = |offset: u64, reason: String| LogError::DamagedCheckpoint { file: name.clone(), offset, reason };
        loop {
            let (record, offset) = reader.next().map_err(|(offset, reason)| damaged(offset, reason))?;
            match record {
                RecordView::Row { table, key, version, row } => {
                    if previous.is_some_and(|previous| previous >= (table, key)) {
                        return Err(damaged(offset, format!("row ({table}, {key}) out of order")));
                    }
                    previous = Some((table, key));
                    stats.checkpoint_rows += 1;
                    let max = versions_max.entry(table).or_insert(0);
                    *max = version.max(*max);
                    // Keys only the log has, before this row.
                    while let Some(&(log_key, slot)) = log_keys.peek()
                        && log_key < (table, key)
                    {
                        log_keys.next();
                        if let Some((at, len)) = slot.row {
                            deliver(log_key.0, log_key.1, slot.version, &log.words[at..at + len], &mut stats);
                        }
                    }
                    // A log write as new as the row read, or newer, wins: a fuzzy checkpoint
                    // may have read the row while that write was being installed.
                    let log_wins = match log_keys.peek() {
                        Some(&(log_key, slot)) if log_key == (table, key) => {
                            log_keys.next();
                            if slot.version >= version
                                && let Some((at, len)) = slot.row
                            {
                                deliver(table, key, slot.version, &log.words[at..at + len], &mut stats);
                            }
                            slot.version >= version
                        }
                        _ => false,
                    };
                    if !log_wins {
                        scratch.resize(row.len(), 0);
                        row.copy_to(&mut scratch);
                        deliver(table, key, version, &scratch, &mut stats);
                    }
                }
                RecordView::CheckpointEnd { rows: count, end_epoch: end } => {
                    if count != stats.checkpoint_rows || count != rows || end != end_epoch || !reader.at_end() {
                        return Err(damaged(offset, format!("ends after {} of {count} rows", stats.checkpoint_rows)));
                    }
                    break;
                }
                RecordView::Transaction { .. } | RecordView::EpochClosed { .. } => {
                    return Err(damaged(offset, "log record in a checkpoint".to_string()));
                }
            }
        }
        stats.checkpoint_bytes = reader.bytes_read;
        checkpoint_epoch = Some(begin_epoch);
        checkpoint_end_epoch = end_epoch;
    }
    for ((table, key), slot) in log_keys {
        if let Some((at, len)) = slot.row {
            deliver(table, key, slot.version, &log.words[at..at + len], &mut stats);
        }
    }
    stats.bytes = stats.log_bytes + stats.checkpoint_bytes;
    stats.seconds = started.elapsed().as_secs_f64();
    Ok(Recovered {
        durable_epoch: log_durable_epoch.unwrap_or(0).max(checkpoint_end_epoch),
        next_segment,
        checkpoint_epoch,
        cut,
        versions_max,
        commit_ts_max,
        stats,
    })
}

/// The row count and end epoch of a checkpoint whose header is intact and whose last frame is
/// its `CheckpointEnd`; `None` if it is not complete (its rows are checked as they stream).
fn checkpoint_ends(dir: &dyn Dir, name: &str, begin_epoch: u64) -> Result<Option<(u64, u64)>, LogError> {
    let len = dir.len(name)?;
    if len < HEADER_LEN as u64 + CHECKPOINT_END_FRAME_LEN {
        return Ok(None);
    }
    let mut header = [0; HEADER_LEN];
    let mut end = [0; CHECKPOINT_END_FRAME_LEN as usize];
    if dir.read_at(name, 0, &mut header)? != HEADER_LEN
        || dir.read_at(name, len - CHECKPOINT_END_FRAME_LEN, &mut end)? != end.len()
    {
        return Ok(None);
    }
    match format::decode_header(&header) {
        Ok(header) if header.kind == FileKind::Checkpoint && header.first_epoch == begin_epoch => {}
        _ => return Ok(None),
    }
    match format::decode_frame_view(&end) {
        Ok((RecordView::CheckpointEnd { rows, end_epoch }, _)) => Ok(Some((rows, end_epoch))),
        _ => Ok(None),
    }
}

/// Reads a checkpoint's frames in chunks.
struct CheckpointReader<'a> {
    dir: &'a dyn Dir,
    name: &'a str,
    len: u64,
    /// File offset of `buffer[start]`.
    offset: u64,
    buffer: Vec<u8>,
    start: usize,
    bytes_read: u64,
}

impl<'a> CheckpointReader<'a> {
    fn new(dir: &'a dyn Dir, name: &'a str) -> Result<Self, LogError> {
        let len = dir.len(name)?;
        let mut reader = CheckpointReader { dir, name, len, offset: 0, buffer: Vec::new(), start: 0, bytes_read: 0 };
        reader.fill(HEADER_LEN)?;
        reader.start = HEADER_LEN.min(reader.buffer.len());
        reader.offset = reader.start as u64;
        Ok(reader)
    }

    /// Reads until at least `wanted` bytes follow `start` (or the file ends).
    fn fill(&mut self, wanted: usize) -> Result<(), LogError> {
        if self.buffer.len() - self.start >= wanted {
            return Ok(());
        }
        self.buffer.drain(..self.start);
        self.start = 0;
        let file_end = self.offset + self.buffer.len() as u64;
        let mut remaining = self.len.saturating_sub(file_end);
        while self.buffer.len() < wanted && remaining > 0 {
            let chunk = (wanted.max(CHECKPOINT_CHUNK_BYTES) - self.buffer.len()).min(remaining as usize);
            let at = self.buffer.len();
            self.buffer.resize(at + chunk, 0);
            let read = self.dir.read_at(self.name, self.offset + at as u64, &mut self.buffer[at..])?;
            self.buffer.truncate(at + read);
            self.bytes_read += read as u64;
            if read == 0 {
                break;
            }
            remaining -= read as u64;
        }
        Ok(())
    }

    fn at_end(&self) -> bool {
        self.offset == self.len && self.start == self.buffer.len()
    }

    /// The next frame and its file offset, or the offset and reason it cannot be read.
    fn next(&mut self) -> Result<(RecordView<'_>, u64), (u64, String)> {
        let offset = self.offset;
        self.fill(FRAME_HEADER_LEN).map_err(|error| (offset, error.to_string()))?;
        let needed = match self.buffer.get(self.start..self.start + 4) {
            Some(len) => FRAME_HEADER_LEN + u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize,
            None => return Err((offset, "the file ends inside a frame header".to_string())),
        };
        if needed > FRAME_HEADER_LEN + format::PAYLOAD_LEN_MAX {
            return Err((offset, format!("frame of {needed} bytes exceeds the limit")));
        }
        self.fill(needed).map_err(|error| (offset, error.to_string()))?;
        let start = self.start;
        let (record, len) =
            format::decode_frame_view(&self.buffer[start..]).map_err(|error| (offset, error.to_string()))?;
        self.start += len;
        self.offset += len as u64;
        Ok((record, offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::FaultyDir;
    use crate::format::{FileHeader, Record, TxRecord, Write};
    use proptest::prelude::*;

    /// A key's version and row (`None`: deleted).
    type VersionedRow = (u64, Option<Vec<u64>>);
    /// A recovered row by `(table, key)`: version and row.
    type KeyedRow = ((u16, u64), (u64, Vec<u64>));

    /// A segment holding `epochs` epochs of one put each, its bytes, and where each epoch's
    /// marker ends.
    fn segment(epochs: u64) -> (Vec<u8>, Vec<usize>) {
        let mut bytes = Vec::new();
        format::encode_header(&FileHeader { kind: FileKind::Segment, number: 0, first_epoch: 1 }, &mut bytes);
        let mut ends = Vec::new();
        for epoch in 1..=epochs {
            let write = Write { table: 0, kind: WriteKind::Put, key: epoch, version: 1, row: vec![epoch] };
            format::encode_record(
                &Record::Transaction(TxRecord { epoch, commit_ts: None, writes: vec![write] }),
                &mut bytes,
            );
            format::encode_record(&Record::EpochClosed { epoch }, &mut bytes);
            ends.push(bytes.len());
        }
        (bytes, ends)
    }

    proptest! {
        /// Whatever damage a segment takes, recovery returns the epochs whose markers precede
        /// the first damaged byte, and never panics.
        #[test]
        fn damaged_segments_recover_to_the_epochs_before_the_damage(
            position in 0usize..2000,
            garbage in proptest::collection::vec(any::<u8>(), 1..64),
        ) {
            let (mut bytes, ends) = segment(20);
            let position = position % bytes.len();
            let mut changed_at = None;
            for (index, byte) in garbage.iter().enumerate() {
                if let Some(slot) = bytes.get_mut(position + index) {
                    if *slot != *byte && changed_at.is_none() {
                        changed_at = Some(position + index);
                    }
                    *slot = *byte;
                }
            }
            let dir = FaultyDir::new(0);
            let name = naming::segment_name(0);
            dir.create(&name).unwrap();
            dir.append(&name, &bytes).unwrap();
            let mut keys = Vec::new();
            let recovered = recover(&dir, |row| keys.push(row.key)).unwrap();
            let intact_epochs = match changed_at {
                None => 20,
                Some(offset) if offset < HEADER_LEN => 0,
                Some(offset) => ends.iter().filter(|end| **end <= offset).count() as u64,
            };
            // A frame damaged after its checksum-covered bytes cannot exist: every changed byte
            // is in a header, a frame header or a payload, all of which are checked.
            prop_assert_eq!(recovered.durable_epoch, intact_epochs);
            prop_assert_eq!(keys, (1..=intact_epochs).collect::<Vec<_>>());
        }

        /// The streamed merge of a checkpoint and a log equals applying both, per key, by
        /// highest version (the log winning ties), whatever the keys, versions and deletes.
        #[test]
        fn checkpoint_and_log_merge_by_highest_version(
            rows in proptest::collection::btree_map((0u16..3, 0u64..40), (0u64..6, 1usize..4), 0..60),
            writes in proptest::collection::vec(((0u16..3, 0u64..40), 0u64..6, any::<bool>()), 0..80),
        ) {
            let dir = FaultyDir::new(1);
            let mut model: BTreeMap<(u16, u64), VersionedRow> = BTreeMap::new();
            let mut checkpoint = crate::CheckpointWriter::begin(&dir, 1).unwrap();
            for (&(table, key), &(version, len)) in &rows {
                let row = vec![key * 100 + version; len];
                checkpoint.row_words(table, key, version, &row).unwrap();
                model.insert((table, key), (version, Some(row)));
            }
            let mut bytes = Vec::new();
            format::encode_header(&FileHeader { kind: FileKind::Segment, number: 0, first_epoch: 1 }, &mut bytes);
            for (index, &((table, key), version, delete)) in writes.iter().enumerate() {
                let (kind, row) = if delete { (WriteKind::Delete, vec![]) } else { (WriteKind::Put, vec![index as u64; 2]) };
                let write = Write { table, kind, key, version, row: row.clone() };
                format::encode_record(&Record::Transaction(TxRecord { epoch: 1, commit_ts: None, writes: vec![write] }), &mut bytes);
                if model.get(&(table, key)).is_none_or(|(current, _)| *current <= version) {
                    model.insert((table, key), (version, (!delete).then_some(row)));
                }
            }
            format::encode_record(&Record::EpochClosed { epoch: 1 }, &mut bytes);
            dir.create(&naming::segment_name(0)).unwrap();
            dir.append(&naming::segment_name(0), &bytes).unwrap();
            checkpoint.finish(1, 1).unwrap();
            let mut recovered = Vec::new();
            recover(&dir, |row| recovered.push(((row.table, row.key), (row.version, row.row.to_vec())))).unwrap();
            let expected: Vec<KeyedRow> =
                model.into_iter().filter_map(|(key, (version, row))| Some((key, (version, row?)))).collect();
            prop_assert_eq!(recovered, expected);
        }
    }

    #[test]
    fn zeros_after_the_newest_segment_are_its_end_but_zeros_before_a_later_segment_are_damage() {
        let (mut bytes, _) = segment(3);
        bytes.extend([0u8; 5000]);
        let dir = FaultyDir::new(0);
        let first = naming::segment_name(0);
        dir.create(&first).unwrap();
        dir.append(&first, &bytes).unwrap();
        let recovered = recover(&dir, |_| {}).unwrap();
        assert_eq!((recovered.durable_epoch, recovered.cut), (3, None), "a direct write's padding");
        assert_eq!(dir.len(&first).unwrap(), bytes.len() as u64 - 5000, "the padding is cut off");

        // The same padding in a segment that a later one follows was never truncated, which a
        // writer always does before it starts the next segment: the log ends there.
        dir.append(&first, &[0u8; 100]).unwrap();
        let mut later = Vec::new();
        format::encode_header(&FileHeader { kind: FileKind::Segment, number: 1, first_epoch: 4 }, &mut later);
        let second = naming::segment_name(1);
        dir.create(&second).unwrap();
        dir.append(&second, &later).unwrap();
        let recovered = recover(&dir, |_| {}).unwrap();
        assert_eq!(recovered.durable_epoch, 3);
        let cut = recovered.cut.expect("zeros before a later segment are a cut");
        assert_eq!((cut.file, cut.reason.as_str()), (first, "zeros before a later segment"));
    }

    #[test]
    fn a_checkpoint_damaged_in_the_middle_is_an_error_naming_it() {
        let dir = FaultyDir::new(2);
        let mut checkpoint = crate::CheckpointWriter::begin(&dir, 1).unwrap();
        for key in 0..100 {
            checkpoint.row_words(0, key, 1, &[key; 4]).unwrap();
        }
        checkpoint.finish(0, 0).unwrap();
        let name = naming::checkpoint_name(1);
        dir.corrupt(&name, HEADER_LEN + 50 * 60);
        let error = recover(&dir, |_| {}).unwrap_err();
        assert!(matches!(&error, LogError::DamagedCheckpoint { file, .. } if *file == name), "{error}");
    }
}
