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
//! Transactions are buffered until the `EpochClosed` marker of their epoch is read; what
//! follows the last marker (an unfinished epoch, a torn write, corruption) is never applied,
//! so the recovered state is always a whole number of epochs. The log is then cut back to
//! the end of the last marker (later segments removed and the directory synced first, then
//! the segment truncated and synced), so a logger that resumes never makes the discarded
//! records part of a later epoch. Every step can be interrupted by a crash and redone:
//! recovering twice yields the same state.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::LogError;
use crate::device::Dir;
use crate::format::{self, FileKind, HEADER_LEN, Record, WriteKind};
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
    pub stats: RecoveryStats,
}

/// One recovered row, delivered to the sink in `(table, key)` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredRow {
    pub table: u16,
    pub key: u64,
    pub version: u64,
    pub row: Vec<u64>,
}

/// Per key: the highest version seen and the row (`None` for a delete's tombstone).
type State = BTreeMap<(u16, u64), (u64, Option<Vec<u64>>)>;

fn apply(state: &mut State, table: u16, key: u64, version: u64, row: Option<Vec<u64>>) {
    match state.get(&(table, key)) {
        Some((current, _)) if *current > version => {}
        _ => {
            state.insert((table, key), (version, row));
        }
    }
}

/// Recovers the directory: reads the checkpoint and the log, cuts the log's tail back to the
/// last closed epoch, and calls `sink` once per live row.
pub fn recover(dir: &dyn Dir, mut sink: impl FnMut(RecoveredRow)) -> Result<Recovered, LogError> {
    let started = Instant::now();
    let mut stats = RecoveryStats::default();
    let mut state = State::new();
    let names = dir.list()?;
    let files: Vec<(LogFile, String)> =
        names.iter().filter_map(|name| Some((naming::parse(name)?, name.clone()))).collect();

    // The newest checkpoint that is complete and intact.
    let mut checkpoint_epoch = None;
    let mut checkpoint_end_epoch = 0;
    let mut checkpoints: Vec<&(LogFile, String)> =
        files.iter().filter(|(file, _)| matches!(file, LogFile::Checkpoint { .. })).collect();
    checkpoints.sort_by_key(|(file, _)| std::cmp::Reverse(*file));
    for (file, name) in checkpoints {
        let LogFile::Checkpoint { begin_epoch } = *file else { unreachable!("filtered above") };
        let bytes = dir.read(name)?;
        if let Some((rows, end_epoch)) = read_checkpoint(&bytes, begin_epoch) {
            stats.bytes += bytes.len() as u64;
            stats.checkpoint_rows = rows.len() as u64;
            for row in rows {
                apply(&mut state, row.table, row.key, row.version, Some(row.row));
            }
            checkpoint_epoch = Some(begin_epoch);
            checkpoint_end_epoch = end_epoch;
            break;
        }
    }

    let segments: Vec<(u64, &String)> = files
        .iter()
        .filter_map(|(file, name)| match file {
            LogFile::Segment { number } => Some((*number, name)),
            LogFile::Checkpoint { .. } => None,
        })
        .collect();
    let next_segment = segments.iter().map(|(number, _)| number + 1).max().unwrap_or(0);

    let mut pending: Vec<format::TxRecord> = Vec::new();
    let mut log_durable_epoch: Option<u64> = None;
    // (index into segments, byte offset just past the last marker)
    let mut durable_end: Option<(usize, usize)> = None;
    let mut cut = None;
    'segments: for (index, (_, name)) in segments.iter().enumerate() {
        let bytes = dir.read(name)?;
        stats.bytes += bytes.len() as u64;
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
            let (record, len) = match format::decode_frame(&bytes[offset..]) {
                Ok(decoded) => decoded,
                Err(error) => {
                    cut = Some(cut_at(offset, error.to_string()));
                    break 'segments;
                }
            };
            match record {
                Record::Transaction(tx) => {
                    if log_durable_epoch.is_some_and(|closed| tx.epoch <= closed) {
                        cut = Some(cut_at(offset, format!("transaction of epoch {} after its epoch closed", tx.epoch)));
                        break 'segments;
                    }
                    pending.push(tx);
                }
                Record::EpochClosed { epoch } => {
                    if log_durable_epoch.is_some_and(|closed| epoch <= closed) {
                        cut = Some(cut_at(offset, format!("epoch {epoch} closed out of order")));
                        break 'segments;
                    }
                    for tx in pending.extract_if(.., |tx| tx.epoch <= epoch) {
                        stats.transactions += 1;
                        for write in tx.writes {
                            let row = (write.kind == WriteKind::Put).then_some(write.row);
                            apply(&mut state, write.table, write.key, write.version, row);
                        }
                    }
                    stats.epochs += 1;
                    log_durable_epoch = Some(epoch);
                    durable_end = Some((index, offset + len));
                }
                Record::Row(_) | Record::CheckpointEnd { .. } => {
                    cut = Some(cut_at(offset, "checkpoint record in a segment".to_string()));
                    break 'segments;
                }
            }
            stats.records += 1;
            offset += len;
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
        if dir.read(name)?.len() > end {
            dir.truncate(name, end as u64)?;
            dir.sync(name)?;
        }
    }

    for ((table, key), (version, row)) in state {
        if let Some(row) = row {
            stats.rows += 1;
            sink(RecoveredRow { table, key, version, row });
        }
    }
    stats.seconds = started.elapsed().as_secs_f64();
    Ok(Recovered {
        durable_epoch: log_durable_epoch.unwrap_or(0).max(checkpoint_end_epoch),
        next_segment,
        checkpoint_epoch,
        cut,
        stats,
    })
}

/// The rows and end epoch of a complete, intact checkpoint; `None` if anything is wrong.
fn read_checkpoint(bytes: &[u8], begin_epoch: u64) -> Option<(Vec<format::RowRecord>, u64)> {
    let header = format::decode_header(bytes).ok()?;
    if header.kind != FileKind::Checkpoint || header.first_epoch != begin_epoch {
        return None;
    }
    let mut rows = Vec::new();
    let mut offset = HEADER_LEN;
    while offset < bytes.len() {
        let (record, len) = format::decode_frame(&bytes[offset..]).ok()?;
        offset += len;
        match record {
            Record::Row(row) => rows.push(row),
            Record::CheckpointEnd { rows: count, end_epoch } => {
                return (count == rows.len() as u64 && offset == bytes.len()).then_some((rows, end_epoch));
            }
            Record::Transaction(_) | Record::EpochClosed { .. } => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::FaultyDir;
    use crate::format::{FileHeader, TxRecord, Write};
    use proptest::prelude::*;

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
    }
}
