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
            out.truncate(frame_start);
            encode_row(out, row.table, row.key, row.version, &row.row);
            return;
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
    encode_transaction_prefix(out, tx.epoch, tx.commit_ts, tx.writes.len() as u32);
    for write in &tx.writes {
        encode_write(out, write.table, write.kind, write.key, write.version, &write.row);
    }
}

fn encode_transaction_prefix(out: &mut Vec<u8>, epoch: u64, commit_ts: Option<u64>, writes: u32) {
    out.push(TAG_TRANSACTION);
    put_u64(out, epoch);
    match commit_ts {
        Some(ts) => {
            out.push(1);
            put_u64(out, ts);
        }
        None => out.push(0),
    }
    put_u32(out, writes);
}

/// Appends one write of a transaction payload, in the layout [`encode_transaction`] uses.
///
/// With [`encode_transaction_parts`] an engine encodes its writes as it installs them, into
/// a buffer it reuses, without building a [`TxRecord`] (no allocation per write).
pub fn encode_write(out: &mut Vec<u8>, table: u16, kind: WriteKind, key: u64, version: u64, row: &[u64]) {
    out.extend_from_slice(&table.to_le_bytes());
    out.push(match kind {
        WriteKind::Put => 1,
        WriteKind::Delete => 2,
    });
    put_u64(out, key);
    put_u64(out, version);
    put_row(out, row);
}

/// Appends one framed transaction record whose `writes` writes were encoded by
/// [`encode_write`] into `encoded_writes`: the same bytes as [`encode_transaction`].
pub fn encode_transaction_parts(
    out: &mut Vec<u8>,
    epoch: u64,
    commit_ts: Option<u64>,
    writes: u32,
    encoded_writes: &[u8],
) {
    let frame_start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    encode_transaction_prefix(out, epoch, commit_ts, writes);
    out.extend_from_slice(encoded_writes);
    seal_frame(out, frame_start);
}

/// Appends one framed checkpoint row (the same bytes as `encode_record` of `Record::Row`).
pub fn encode_row(out: &mut Vec<u8>, table: u16, key: u64, version: u64, row: &[u64]) {
    let frame_start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    out.push(TAG_ROW);
    out.extend_from_slice(&table.to_le_bytes());
    put_u64(out, key);
    put_u64(out, version);
    put_row(out, row);
    seal_frame(out, frame_start);
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
    let (view, len) = decode_frame_view(bytes)?;
    Ok((view.to_record(), len))
}

/// Decodes the frame at the start of `bytes` without copying: the record borrows its rows
/// from `bytes`. The whole payload is checked (checksum, tags, lengths, no trailing bytes)
/// before it is returned, so reading a view afterwards cannot fail.
pub fn decode_frame_view(bytes: &[u8]) -> Result<(RecordView<'_>, usize), DecodeError> {
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

/// A decoded record whose rows are still the bytes they were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordView<'a> {
    Transaction { epoch: u64, commit_ts: Option<u64>, writes: WritesView<'a> },
    EpochClosed { epoch: u64 },
    Row { table: u16, key: u64, version: u64, row: RowWords<'a> },
    CheckpointEnd { rows: u64, end_epoch: u64 },
}

impl RecordView<'_> {
    /// The owned record.
    pub fn to_record(&self) -> Record {
        match *self {
            RecordView::Transaction { epoch, commit_ts, writes } => Record::Transaction(TxRecord {
                epoch,
                commit_ts,
                writes: writes
                    .iter()
                    .map(|w| Write {
                        table: w.table,
                        kind: w.kind,
                        key: w.key,
                        version: w.version,
                        row: w.row.to_vec(),
                    })
                    .collect(),
            }),
            RecordView::EpochClosed { epoch } => Record::EpochClosed { epoch },
            RecordView::Row { table, key, version, row } => {
                Record::Row(RowRecord { table, key, version, row: row.to_vec() })
            }
            RecordView::CheckpointEnd { rows, end_epoch } => Record::CheckpointEnd { rows, end_epoch },
        }
    }
}

/// A row's words, borrowed as little-endian bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowWords<'a> {
    bytes: &'a [u8],
}

impl RowWords<'_> {
    /// Words in the row.
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The words, in order.
    pub fn words(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.bytes.chunks_exact(8).map(|chunk| u64::from_le_bytes(chunk.try_into().expect("chunks of 8 bytes")))
    }

    /// Writes the words over `out` (which must have [`RowWords::len`] words).
    pub fn copy_to(&self, out: &mut [u64]) {
        for (word, value) in out.iter_mut().zip(self.words()) {
            *word = value;
        }
    }

    pub fn to_vec(&self) -> Vec<u64> {
        self.words().collect()
    }
}

/// The writes of a transaction frame, checked when the frame was decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WritesView<'a> {
    count: usize,
    bytes: &'a [u8],
}

/// One write of a [`WritesView`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteView<'a> {
    pub table: u16,
    pub kind: WriteKind,
    pub key: u64,
    pub version: u64,
    pub row: RowWords<'a>,
}

impl<'a> WritesView<'a> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The writes, in the order the transaction logged them.
    pub fn iter(&self) -> impl Iterator<Item = WriteView<'a>> + 'a {
        let mut reader = Reader { bytes: self.bytes, position: 0 };
        // Checked when decoded, so reading again cannot fail; a failure would end the walk.
        (0..self.count).map_while(move |_| read_write(&mut reader).ok())
    }
}

/// Least bytes of one encoded write (an empty row).
const WRITE_LEN_MIN: usize = 2 + 1 + 8 + 8 + 4;

fn read_write<'a>(reader: &mut Reader<'a>) -> Result<WriteView<'a>, DecodeError> {
    let table = u16::from_le_bytes(reader.array()?);
    let kind = match reader.u8()? {
        1 => WriteKind::Put,
        2 => WriteKind::Delete,
        tag => return Err(DecodeError::UnknownTag { what: "write kind", tag: u32::from(tag) }),
    };
    let key = reader.u64()?;
    let version = reader.u64()?;
    let row = reader.row()?;
    Ok(WriteView { table, kind, key, version, row })
}

fn decode_payload(payload: &[u8]) -> Result<RecordView<'_>, DecodeError> {
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
            // Each write takes at least WRITE_LEN_MIN bytes, so the count is bounded by what
            // remains.
            reader.need(count.saturating_mul(WRITE_LEN_MIN))?;
            let start = reader.position;
            for _ in 0..count {
                read_write(&mut reader)?;
            }
            let writes = WritesView { count, bytes: &payload[start..reader.position] };
            RecordView::Transaction { epoch, commit_ts, writes }
        }
        TAG_EPOCH_CLOSED => RecordView::EpochClosed { epoch: reader.u64()? },
        TAG_ROW => {
            let table = u16::from_le_bytes(reader.array()?);
            let key = reader.u64()?;
            let version = reader.u64()?;
            let row = reader.row()?;
            RecordView::Row { table, key, version, row }
        }
        TAG_CHECKPOINT_END => RecordView::CheckpointEnd { rows: reader.u64()?, end_epoch: reader.u64()? },
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
    // One resize and fixed-size stores, which the compiler turns into a copy on little-endian
    // machines (a push per word checks the capacity every time).
    let start = out.len();
    out.resize(start + row.len() * 8, 0);
    for (bytes, word) in out[start..].chunks_exact_mut(8).zip(row) {
        bytes.copy_from_slice(&word.to_le_bytes());
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

    fn row(&mut self) -> Result<RowWords<'a>, DecodeError> {
        let words = self.u32()? as usize;
        if words > ROW_WORDS_MAX {
            return Err(DecodeError::RowTooLarge { words });
        }
        Ok(RowWords { bytes: self.take(words * 8)? })
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
    fn parts_encode_the_same_bytes_as_whole_records() {
        let Record::Transaction(tx) = sample_tx() else { unreachable!() };
        let mut whole = Vec::new();
        encode_transaction(&tx, &mut whole);
        let mut writes = Vec::new();
        for write in &tx.writes {
            encode_write(&mut writes, write.table, write.kind, write.key, write.version, &write.row);
        }
        let mut parts = vec![0xAA];
        encode_transaction_parts(&mut parts, tx.epoch, tx.commit_ts, tx.writes.len() as u32, &writes);
        assert_eq!(parts[1..], whole[..], "appended after what the buffer held");
        let row = RowRecord { table: 3, key: 4, version: 5, row: vec![6, 7] };
        let (mut whole_row, mut row_parts) = (Vec::new(), Vec::new());
        encode_record(&Record::Row(row.clone()), &mut whole_row);
        encode_row(&mut row_parts, row.table, row.key, row.version, &row.row);
        assert_eq!(whole_row, row_parts);
        let (view, len) = decode_frame_view(&whole).unwrap();
        assert_eq!(len, whole.len());
        let RecordView::Transaction { writes, .. } = view else { panic!("{view:?}") };
        let keys: Vec<(u64, Vec<u64>)> = writes.iter().map(|w| (w.key, w.row.to_vec())).collect();
        assert_eq!(keys, vec![(5, vec![1, 2, 3]), (9, vec![])]);
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
