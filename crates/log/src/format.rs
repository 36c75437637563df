//! The on-disk format: segment and checkpoint headers, and checksummed record frames.
//!
//! Every file starts with a fixed header carrying a magic number, the **format version** and
//! what the file holds; after it come frames, each a length, a CRC-32 of the payload and the
//! payload itself:
//!
//! ```text
//!  header (36 bytes)                                   frame               frame
//! +-------+---------+------+--------+-----------+----+----------------+----------------+--
//! | magic | version | kind | number | first_ep. | crc| len|crc|payload| len|crc|payload|...
//! | 8 B   | u32     | u32  | u64    | u64       | u32| u32|u32| len B  |
//! +-------+---------+------+--------+-----------+----+----------------+----------------+--
//! ```
//!
//! Payload kinds: `Transaction` (epoch, optional commit timestamp, writes
//! `(table u16, put|delete, key u64, version u64, row words)`), `EpochClosed(E)` (written after
//! every record of every epoch `<= E`), and, in checkpoint files, `Row` and `CheckpointEnd`.
//! All integers are little-endian.
//!
//! Invariant: decoding never panics and never allocates more than the bytes it was given
//! allow: every length is checked against a named limit and against the bytes that remain,
//! so garbage yields a [`DecodeError`], not a crash.

use thiserror::Error;

/// First bytes of every segment and checkpoint file.
pub const MAGIC: [u8; 8] = *b"ORDOLOG\0";
/// Version of the format this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes in a file header.
pub const HEADER_LEN: usize = 36;
/// Bytes in a frame's length and checksum fields.
pub const FRAME_HEADER_LEN: usize = 8;
/// Largest payload a frame may carry; longer lengths are treated as corruption.
pub const PAYLOAD_LEN_MAX: usize = 16 << 20;
/// Largest row, in 64-bit words.
pub const ROW_WORDS_MAX: usize = 1 << 16;

/// What a file holds, stored in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A log segment: transactions and epoch markers.
    Segment,
    /// A checkpoint: rows, then one `CheckpointEnd`.
    Checkpoint,
}

/// A decoded file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    pub kind: FileKind,
    /// Segment number, or for a checkpoint the epoch at which it began.
    pub number: u64,
    /// First epoch whose records the segment may hold (for a checkpoint: its begin epoch).
    pub first_epoch: u64,
}

/// Whether a write installs a row or deletes the key (a tombstone with a version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    Put,
    Delete,
}

/// One write of a committed transaction: the row image after the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub table: u16,
    pub kind: WriteKind,
    pub key: u64,
    /// Per-key version; recovery keeps, per key, the write with the highest version.
    pub version: u64,
    /// The row's words (empty for a delete).
    pub row: Vec<u64>,
}

/// The redo record of one committed transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxRecord {
    pub epoch: u64,
    pub commit_ts: Option<u64>,
    pub writes: Vec<Write>,
}

/// A row of a checkpoint: the version and image of one key at the moment it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowRecord {
    pub table: u16,
    pub key: u64,
    pub version: u64,
    pub row: Vec<u64>,
}

/// A decoded payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Transaction(TxRecord),
    /// Every record of every epoch `<= epoch` precedes this marker.
    EpochClosed {
        epoch: u64,
    },
    Row(RowRecord),
    /// The last frame of a complete checkpoint.
    CheckpointEnd {
        rows: u64,
        end_epoch: u64,
    },
}

const TAG_TRANSACTION: u8 = 1;
const TAG_EPOCH_CLOSED: u8 = 2;
const TAG_ROW: u8 = 3;
const TAG_CHECKPOINT_END: u8 = 4;

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("truncated: needed {needed} bytes, {available} remain")]
    Truncated { needed: usize, available: usize },
    #[error("bad magic number")]
    BadMagic,
    #[error("unsupported format version {found} (this build reads {FORMAT_VERSION})")]
    UnsupportedVersion { found: u32 },
    #[error("frame length {len} exceeds the limit {PAYLOAD_LEN_MAX}")]
    LengthTooLarge { len: usize },
    #[error("checksum mismatch")]
    ChecksumMismatch,
    #[error("unknown {what} tag {tag}")]
    UnknownTag { what: &'static str, tag: u32 },
    #[error("row of {words} words exceeds the limit {ROW_WORDS_MAX}")]
    RowTooLarge { words: usize },
    #[error("{extra} trailing bytes after the payload")]
    TrailingBytes { extra: usize },
}

/// Appends a file header.
pub fn encode_header(header: &FileHeader, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let kind: u32 = match header.kind {
        FileKind::Segment => 1,
        FileKind::Checkpoint => 2,
    };
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&header.number.to_le_bytes());
    out.extend_from_slice(&header.first_epoch.to_le_bytes());
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    debug_assert_eq!(out.len() - start, HEADER_LEN);
}

/// Decodes the header at the start of `bytes`.
pub fn decode_header(bytes: &[u8]) -> Result<FileHeader, DecodeError> {
    let mut reader = Reader { bytes, position: 0 };
    let body = reader.take(HEADER_LEN - 4)?;
    let crc = reader.u32()?;
    if body[..8] != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    if crc32fast::hash(body) != crc {
        return Err(DecodeError::ChecksumMismatch);
    }
    let mut fields = Reader { bytes: &body[8..], position: 0 };
    let version = fields.u32()?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion { found: version });
    }
    let kind = match fields.u32()? {
        1 => FileKind::Segment,
        2 => FileKind::Checkpoint,
        tag => return Err(DecodeError::UnknownTag { what: "file kind", tag }),
    };
    Ok(FileHeader { kind, number: fields.u64()?, first_epoch: fields.u64()? })
}

/// Appends one framed record.
pub fn encode_record(record: &Record, out: &mut Vec<u8>) {
    let frame_start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    let payload_start = out.len();
    match record {
        Record::Transaction(tx) => encode_transaction_payload(tx, out),
        Record::EpochClosed { epoch } => {
            out.push(TAG_EPOCH_CLOSED);
            put_u64(out, *epoch);
        }
        Record::Row(row) => {
            out.push(TAG_ROW);
            out.extend_from_slice(&row.table.to_le_bytes());
            put_u64(out, row.key);
            put_u64(out, row.version);
            put_row(out, &row.row);
        }
        Record::CheckpointEnd { rows, end_epoch } => {
            out.push(TAG_CHECKPOINT_END);
            put_u64(out, *rows);
            put_u64(out, *end_epoch);
        }
    }
    debug_assert_eq!(payload_start, frame_start + FRAME_HEADER_LEN);
    seal_frame(out, frame_start);
}

/// Appends one framed transaction record (the same bytes as `encode_record` of
/// `Record::Transaction`, without building a `Record`).
pub fn encode_transaction(tx: &TxRecord, out: &mut Vec<u8>) {
    let frame_start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    encode_transaction_payload(tx, out);
    seal_frame(out, frame_start);
}

fn encode_transaction_payload(tx: &TxRecord, out: &mut Vec<u8>) {
    out.push(TAG_TRANSACTION);
    put_u64(out, tx.epoch);
    match tx.commit_ts {
        Some(ts) => {
            out.push(1);
            put_u64(out, ts);
        }
        None => out.push(0),
    }
    put_u32(out, tx.writes.len() as u32);
    for write in &tx.writes {
        out.extend_from_slice(&write.table.to_le_bytes());
        out.push(match write.kind {
            WriteKind::Put => 1,
            WriteKind::Delete => 2,
        });
        put_u64(out, write.key);
        put_u64(out, write.version);
        put_row(out, &write.row);
    }
}

/// Fills in the length and checksum of the frame that starts at `frame_start`.
fn seal_frame(out: &mut [u8], frame_start: usize) {
    let payload_start = frame_start + FRAME_HEADER_LEN;
    let payload_len = out.len() - payload_start;
    assert!(payload_len <= PAYLOAD_LEN_MAX, "record of {payload_len} bytes exceeds PAYLOAD_LEN_MAX");
    let crc = crc32fast::hash(&out[payload_start..]);
    out[frame_start..frame_start + 4].copy_from_slice(&(payload_len as u32).to_le_bytes());
    out[frame_start + 4..payload_start].copy_from_slice(&crc.to_le_bytes());
}

/// Decodes the frame at the start of `bytes`, returning the record and the frame's length.
pub fn decode_frame(bytes: &[u8]) -> Result<(Record, usize), DecodeError> {
    let mut reader = Reader { bytes, position: 0 };
    let len = reader.u32()? as usize;
    let crc = reader.u32()?;
    if len > PAYLOAD_LEN_MAX {
        return Err(DecodeError::LengthTooLarge { len });
    }
    let payload = reader.take(len)?;
    if crc32fast::hash(payload) != crc {
        return Err(DecodeError::ChecksumMismatch);
    }
    Ok((decode_payload(payload)?, FRAME_HEADER_LEN + len))
}

fn decode_payload(payload: &[u8]) -> Result<Record, DecodeError> {
    let mut reader = Reader { bytes: payload, position: 0 };
    let record = match reader.u8()? {
        TAG_TRANSACTION => {
            let epoch = reader.u64()?;
            let commit_ts = match reader.u8()? {
                0 => None,
                1 => Some(reader.u64()?),
                tag => return Err(DecodeError::UnknownTag { what: "commit timestamp", tag: u32::from(tag) }),
            };
            let count = reader.u32()? as usize;
            // Each write takes at least 23 bytes, so the count is bounded by what remains.
            let write_len_min = 2 + 1 + 8 + 8 + 4;
            reader.need(count.saturating_mul(write_len_min))?;
            let mut writes = Vec::with_capacity(count);
            for _ in 0..count {
                let table = u16::from_le_bytes(reader.array()?);
                let kind = match reader.u8()? {
                    1 => WriteKind::Put,
                    2 => WriteKind::Delete,
                    tag => return Err(DecodeError::UnknownTag { what: "write kind", tag: u32::from(tag) }),
                };
                let key = reader.u64()?;
                let version = reader.u64()?;
                let row = reader.row()?;
                writes.push(Write { table, kind, key, version, row });
            }
            Record::Transaction(TxRecord { epoch, commit_ts, writes })
        }
        TAG_EPOCH_CLOSED => Record::EpochClosed { epoch: reader.u64()? },
        TAG_ROW => {
            let table = u16::from_le_bytes(reader.array()?);
            let key = reader.u64()?;
            let version = reader.u64()?;
            let row = reader.row()?;
            Record::Row(RowRecord { table, key, version, row })
        }
        TAG_CHECKPOINT_END => Record::CheckpointEnd { rows: reader.u64()?, end_epoch: reader.u64()? },
        tag => return Err(DecodeError::UnknownTag { what: "record", tag: u32::from(tag) }),
    };
    let extra = payload.len() - reader.position;
    if extra != 0 {
        return Err(DecodeError::TrailingBytes { extra });
    }
    Ok(record)
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_row(out: &mut Vec<u8>, row: &[u64]) {
    assert!(row.len() <= ROW_WORDS_MAX, "row of {} words exceeds ROW_WORDS_MAX", row.len());
    put_u32(out, row.len() as u32);
    for word in row {
        put_u64(out, *word);
    }
}

/// A bounds-checked cursor over a byte slice.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    fn need(&self, needed: usize) -> Result<(), DecodeError> {
        let available = self.bytes.len() - self.position;
        if needed > available {
            return Err(DecodeError::Truncated { needed, available });
        }
        Ok(())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        self.need(len)?;
        let slice = &self.bytes[self.position..self.position + len];
        self.position += len;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn row(&mut self) -> Result<Vec<u64>, DecodeError> {
        let words = self.u32()? as usize;
        if words > ROW_WORDS_MAX {
            return Err(DecodeError::RowTooLarge { words });
        }
        self.need(words * 8)?;
        (0..words).map(|_| self.u64()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample_tx() -> Record {
        Record::Transaction(TxRecord {
            epoch: 7,
            commit_ts: Some(99),
            writes: vec![
                Write { table: 2, kind: WriteKind::Put, key: 5, version: 3, row: vec![1, 2, 3] },
                Write { table: 0, kind: WriteKind::Delete, key: 9, version: 4, row: vec![] },
            ],
        })
    }

    #[test]
    fn records_round_trip() {
        let records = [
            sample_tx(),
            Record::EpochClosed { epoch: 7 },
            Record::Row(RowRecord { table: 1, key: 2, version: 3, row: vec![4] }),
            Record::CheckpointEnd { rows: 1, end_epoch: 8 },
        ];
        let mut bytes = Vec::new();
        for record in &records {
            encode_record(record, &mut bytes);
        }
        let mut alone = Vec::new();
        let Record::Transaction(tx) = &records[0] else { unreachable!() };
        encode_transaction(tx, &mut alone);
        assert_eq!(alone, bytes[..alone.len()]);
        let mut offset = 0;
        for record in &records {
            let (decoded, len) = decode_frame(&bytes[offset..]).unwrap();
            assert_eq!(&decoded, record);
            offset += len;
        }
        assert_eq!(offset, bytes.len());
    }

    #[test]
    fn header_round_trips_and_rejects_other_versions() {
        let header = FileHeader { kind: FileKind::Segment, number: 3, first_epoch: 11 };
        let mut bytes = Vec::new();
        encode_header(&header, &mut bytes);
        assert_eq!(decode_header(&bytes), Ok(header));
        let mut other = bytes.clone();
        other[8] = 2;
        assert!(decode_header(&other).is_err());
        assert!(matches!(decode_header(&bytes[..20]), Err(DecodeError::Truncated { .. })));
    }

    #[test]
    fn any_flipped_bit_is_detected() {
        let mut bytes = Vec::new();
        encode_record(&sample_tx(), &mut bytes);
        for bit in 0..bytes.len() * 8 {
            let mut corrupt = bytes.clone();
            corrupt[bit / 8] ^= 1 << (bit % 8);
            if let Ok((record, _)) = decode_frame(&corrupt) {
                panic!("bit {bit} flipped and still decoded as {record:?}");
            }
        }
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_header(&bytes);
            let _ = decode_frame(&bytes);
            let _ = decode_payload(&bytes);
        }

        #[test]
        fn garbage_payload_with_valid_checksum_never_panics(payload in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut frame = Vec::new();
            frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            frame.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
            frame.extend_from_slice(&payload);
            if let Ok((record, len)) = decode_frame(&frame) {
                prop_assert_eq!(len, frame.len());
                let mut again = Vec::new();
                encode_record(&record, &mut again);
                prop_assert_eq!(again, frame);
            }
        }
    }
}
