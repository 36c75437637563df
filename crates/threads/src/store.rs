//! The single-version store: one flat array of fixed-size records, indexed by the dense key.
//!
//! Workload keys are dense (`0..key_count()`, one contiguous range per table), so the
//! "concurrent index" of a key is its position: a lookup is one multiply, needs no latch, and
//! never changes shape (workloads here neither insert nor delete). Every record is a run of
//! 64-bit atomic words, padded to whole cache lines so no two records share one:
//!
//! ```text
//!   record k:  [ meta | value | seq | payload word 0 .. payload word p-1 | pad ]
//!   meta     : the protocol's concurrency-control word (Silo TID, TicToc wts/rts, 2PL lock)
//!   value    : the workload's i64
//!   seq      : how many times the key was written (its version number in a history)
//!   payload  : payload_bytes rounded up to words, copied on every read and write
//! ```
//!
//! Data words are read and written with relaxed atomics; each protocol orders them with its
//! meta word (a seqlock for the optimistic protocols, the lock itself for 2PL), so the store
//! needs no `unsafe`.
//!
//! A protocol's loop over many records goes through a [`TableView`], the table's shape copied
//! into a value: after an atomic access the compiler must assume any memory it cannot see
//! into changed, so a loop that finds records through `&Table` reloads the shape on every
//! turn. [`records_ahead`] walks a one-shot transaction's keys, asking for the
//! records sixteen places ahead while the current one is used (walking the keys through a view:
//! callgrind, ycsb on 100K records, θ = 0, no_wait 3.69K → 3.20K instructions per transaction,
//! Silo 4.30K → 3.99K, with the array copies below).
//!
//! [`TableView::visit`] goes one step further for a loop over many records: when the records
//! have one of the two common shapes (a payload that fills one or two lines exactly) it hands
//! the loop a [`SizedView`], the words as arrays of the record's length, so the shape is checked
//! once per loop rather than per record and finding a record is one bounds check on its key.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ordo_storage::ZeroedWords;
use ordo_workload::{Key, Value, Workload};

/// Word offsets inside a record.
const META: usize = 0;
const VALUE: usize = 1;
const SEQ: usize = 2;
const PAYLOAD: usize = 3;

/// Words per cache line.
pub(crate) const LINE_WORDS: usize = 8;

/// Zeroed words whose first one starts a cache line, so a record whose stride is a whole
/// number of lines never shares a line with another. A record is one bounds-checked slice
/// (`record`), and its words are then walked without further checks. The words come from
/// the storage crate's [`ZeroedWords`]: fresh zero pages from the C library, on transparent
/// huge pages when the array spans one (a store of millions of records then costs no page
/// walk per record), as the table engine's arenas are.
#[derive(Debug)]
pub(crate) struct Lines {
    words: ZeroedWords,
    /// Index in `words` of the first word on a line boundary.
    start: usize,
}

impl Lines {
    /// `words` zeroed words (rounded up to whole lines), starting on a line boundary.
    pub(crate) fn zeroed(words: usize) -> Lines {
        let words = words.next_multiple_of(LINE_WORDS);
        let all = ZeroedWords::new(words + LINE_WORDS - 1);
        let start = all.first_aligned_word(LINE_WORDS * std::mem::size_of::<AtomicU64>());
        Lines { words: all, start }
    }

    /// The `len` words from word `first`.
    #[inline]
    pub(crate) fn record(&self, first: usize, len: usize) -> &[AtomicU64] {
        &self.words[self.start + first..self.start + first + len]
    }

    /// Every word from the first line boundary on.
    #[inline]
    pub(crate) fn all(&self) -> &[AtomicU64] {
        &self.words[self.start..]
    }

    /// Word `index`.
    #[inline]
    pub(crate) fn word(&self, index: usize) -> &AtomicU64 {
        &self.words[self.start + index]
    }

    /// Starts loading every line of `record` (see [`ordo_storage::prefetch`]).
    #[inline]
    pub(crate) fn prefetch(record: &[AtomicU64]) {
        ordo_storage::prefetch::lines(record);
    }
}

/// Payload words for `payload_bytes` bytes.
pub fn payload_words(payload_bytes: usize) -> usize {
    payload_bytes.div_ceil(8)
}

/// The payload a write of `value` installs: every word derived from the value, so a reader's
/// copy is real data.
#[inline]
pub(crate) fn payload_word(value: Value, index: usize) -> u64 {
    (value as u64) ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Runs `init(key)` for every key of `0..keys` on up to `threads` threads.
pub(crate) fn parallel_for(keys: u64, threads: usize, init: impl Fn(Key) + Sync) {
    let threads = threads.clamp(1, 64) as u64;
    let chunk = keys.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for start in (0..keys).step_by(chunk as usize) {
            let init = &init;
            scope.spawn(move || (start..(start + chunk).min(keys)).for_each(init));
        }
    });
}

/// Single-version records (see the module documentation).
#[derive(Debug)]
pub struct Table {
    lines: Lines,
    stride: usize,
    payload_words: usize,
    records: u64,
}

impl Table {
    /// Loads every key of `workload` with its initial value, sequence 0 and meta word
    /// `meta_initial`, on `load_threads` threads.
    pub fn load(workload: &dyn Workload, payload_bytes: usize, meta_initial: u64, load_threads: usize) -> Table {
        let payload_words = payload_words(payload_bytes);
        let stride = (PAYLOAD + payload_words).next_multiple_of(LINE_WORDS);
        let records = workload.key_count();
        let table = Table { lines: Lines::zeroed(records as usize * stride), stride, payload_words, records };
        parallel_for(records, load_threads, |key| {
            let value = workload.initial_value(key);
            let record = table.record(key);
            record.words[META].store(meta_initial, Relaxed);
            record.words[VALUE].store(value as u64, Relaxed);
            for (i, word) in record.payload().iter().enumerate() {
                word.store(payload_word(value, i), Relaxed);
            }
        });
        table
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn payload_words(&self) -> usize {
        self.payload_words
    }

    /// `key`'s record: one bounds-checked slice, which an access then uses for every word it
    /// touches (the meta word, the data, the install), so the key's position is computed once.
    /// A single access goes straight to the lines rather than through [`Self::view`], whose
    /// extra slice check cost the step path 3-7% of its instructions (callgrind, micro).
    #[inline]
    pub fn record(&self, key: Key) -> Record<'_> {
        Record { words: self.lines.record(key as usize * self.stride, self.stride), payload_words: self.payload_words }
    }

    /// Starts loading `key`'s record into the cache (see `prefetch`).
    #[inline]
    pub fn prefetch(&self, key: Key) {
        self.record(key).prefetch();
    }

    /// The table's shape as a value: a protocol's loop over many records finds them through
    /// it without reading the table again after each atomic access (which the compiler must
    /// otherwise assume changed it).
    #[inline]
    pub fn view(&self) -> TableView<'_> {
        TableView { words: self.lines.all(), stride: self.stride, payload_words: self.payload_words }
    }

    /// The protocol's word of `key` (one index, where [`Self::record`] checks a whole range:
    /// releasing a transaction's locks touches nothing else).
    #[inline]
    pub fn meta(&self, key: Key) -> &AtomicU64 {
        self.lines.word(key as usize * self.stride + META)
    }

    /// The committed value of `key` (for checks after a run, when no transaction is live).
    pub fn value(&self, key: Key) -> Value {
        self.record(key).words[VALUE].load(Relaxed) as Value
    }
}

/// One record of a [`Table`].
#[derive(Debug, Clone, Copy)]
pub struct Record<'t> {
    words: &'t [AtomicU64],
    payload_words: usize,
}

impl<'t> Record<'t> {
    /// Starts loading the record's lines into the cache. A record of one or two lines (the
    /// common sizes) asks for them directly rather than through a loop over its length.
    #[inline]
    pub fn prefetch(self) {
        match self.words.len() {
            LINE_WORDS => ordo_storage::prefetch::line(&self.words[0]),
            TWO_LINES => {
                ordo_storage::prefetch::line(&self.words[0]);
                ordo_storage::prefetch::line(&self.words[LINE_WORDS]);
            }
            _ => Lines::prefetch(self.words),
        }
    }

    /// The protocol's word.
    #[inline]
    pub fn meta(self) -> &'t AtomicU64 {
        &self.words[META]
    }

    /// The payload words.
    #[inline]
    fn payload(self) -> &'t [AtomicU64] {
        &self.words[PAYLOAD..PAYLOAD + self.payload_words]
    }

    /// Copies the value, sequence number and payload (relaxed; the caller orders the copy with
    /// the meta word).
    ///
    /// Always inlined, as are the optimistic protocols' reads and the kit's seqlock read
    /// around it: called from both ways a transaction runs (its procedure's steps and a
    /// one-shot request list), plain `#[inline]` left them as calls in one of them
    /// (callgrind: 5.4K instructions per one-shot Silo transaction against 4.9K).
    #[expect(clippy::inline_always, reason = "measured: see above")]
    #[inline(always)]
    pub fn read_data(self, payload: &mut [u64]) -> (Value, u64) {
        // A payload that fills its record's lines exactly (100 bytes in 128-byte records, the
        // default; 40 in 64) is copied through arrays of known length: no index is checked
        // and the loop is unrolled.
        match self.payload_words {
            TWO_LINE_PAYLOAD => read_exactly::<TWO_LINES, TWO_LINE_PAYLOAD>(self.words, payload),
            ONE_LINE_PAYLOAD => read_exactly::<LINE_WORDS, ONE_LINE_PAYLOAD>(self.words, payload),
            _ => read_words(self.words, payload, self.payload_words),
        }
    }

    /// Installs `value` as the record's next version, with its payload, and returns that
    /// version's sequence number (relaxed; the caller holds the record's lock and publishes
    /// with the meta word).
    ///
    /// Always inlined: with plain `#[inline]` Silo's commit called it (callgrind: 8 calls of
    /// about 55 instructions per transaction).
    #[expect(clippy::inline_always, reason = "measured: see above")]
    #[inline(always)]
    pub fn install(self, value: Value) -> u64 {
        match self.payload_words {
            TWO_LINE_PAYLOAD => install_exactly::<TWO_LINES>(self.words, value),
            ONE_LINE_PAYLOAD => install_exactly::<LINE_WORDS>(self.words, value),
            _ => install_words(&self.words[..PAYLOAD + self.payload_words], value),
        }
    }
}

/// A [`Table`]'s shape (see [`Table::view`]).
#[derive(Debug, Clone, Copy)]
pub struct TableView<'t> {
    words: &'t [AtomicU64],
    stride: usize,
    payload_words: usize,
}

impl<'t> TableView<'t> {
    /// `key`'s record (as [`Table::record`]).
    #[inline]
    pub fn record(self, key: Key) -> Record<'t> {
        let first = key as usize * self.stride;
        Record { words: &self.words[first..first + self.stride], payload_words: self.payload_words }
    }

    /// The protocol's word of `key` (as [`Table::meta`]).
    #[inline]
    pub fn meta(self, key: Key) -> &'t AtomicU64 {
        &self.words[key as usize * self.stride + META]
    }

    /// The records as arrays of `W` words with `P` payload words each, when that is their shape.
    #[inline]
    pub fn sized<const W: usize, const P: usize>(self) -> Option<SizedView<'t, W, P>> {
        if self.stride == W && self.payload_words == P {
            Some(SizedView { records: self.words.as_chunks::<W>().0 })
        } else {
            None
        }
    }

    /// Runs `visitor` over this table's records and `payload` (the buffer a read copies into),
    /// through a [`SizedView`] when the records have one of the common shapes (a payload that
    /// fills one or two lines exactly) and `payload` its length, or else through this view.
    /// The shape is then settled once for a whole loop instead of at every record: no record's
    /// length or payload is checked again, and a record is one bounds check on its key.
    #[inline]
    pub fn visit<V: VisitRecords<'t>>(self, payload: &mut [u64], visitor: V) -> V::Output {
        if let Some(sized) = self.sized::<TWO_LINES, TWO_LINE_PAYLOAD>()
            && let Ok(payload) = <&mut [u64; TWO_LINE_PAYLOAD]>::try_from(&mut *payload)
        {
            return visitor.visit(sized, payload);
        }
        if let Some(sized) = self.sized::<LINE_WORDS, ONE_LINE_PAYLOAD>()
            && let Ok(payload) = <&mut [u64; ONE_LINE_PAYLOAD]>::try_from(&mut *payload)
        {
            return visitor.visit(sized, payload);
        }
        visitor.visit(self, payload)
    }
}

/// A loop over records that works on any [`Records`] (see [`TableView::visit`]).
pub trait VisitRecords<'t> {
    type Output;
    fn visit<R: Records<'t>>(self, records: R, payload: &mut R::Payload) -> Self::Output;
}

/// How a loop reaches a table's records by key: a [`TableView`] for any shape, a [`SizedView`]
/// for records whose length is known when compiling.
pub trait Records<'t>: Copy {
    /// The buffer a read copies a payload into.
    type Payload: ?Sized + AsRef<[u64]>;
    type Record: RecordData<'t, Payload = Self::Payload>;
    fn record(self, key: Key) -> Self::Record;
}

/// What a loop does with one record.
pub trait RecordData<'t>: Copy {
    type Payload: ?Sized + AsRef<[u64]>;
    /// The protocol's word.
    fn meta(self) -> &'t AtomicU64;
    /// Starts loading the record's lines into the cache.
    fn prefetch(self);
    /// Copies the value, sequence number and payload (as [`Record::read_data`]).
    fn read_data(self, payload: &mut Self::Payload) -> (Value, u64);
    /// Installs `value` as the next version (as [`Record::install`]).
    fn install(self, value: Value) -> u64;
}

impl<'t> Records<'t> for TableView<'t> {
    type Payload = [u64];
    type Record = Record<'t>;
    #[inline]
    fn record(self, key: Key) -> Record<'t> {
        TableView::record(self, key)
    }
}

impl<'t> RecordData<'t> for Record<'t> {
    type Payload = [u64];
    #[inline]
    fn meta(self) -> &'t AtomicU64 {
        Record::meta(self)
    }
    #[inline]
    fn prefetch(self) {
        Record::prefetch(self);
    }
    #[expect(clippy::inline_always, reason = "as `Record::read_data`")]
    #[inline(always)]
    fn read_data(self, payload: &mut [u64]) -> (Value, u64) {
        Record::read_data(self, payload)
    }
    #[expect(clippy::inline_always, reason = "as `Record::install`")]
    #[inline(always)]
    fn install(self, value: Value) -> u64 {
        Record::install(self, value)
    }
}

/// A table whose records are `W` words with `P` payload words each (see [`TableView::sized`]).
#[derive(Debug, Clone, Copy)]
pub struct SizedView<'t, const W: usize, const P: usize> {
    records: &'t [[AtomicU64; W]],
}

/// One record of a [`SizedView`].
#[derive(Debug, Clone, Copy)]
pub struct SizedRecord<'t, const W: usize, const P: usize> {
    words: &'t [AtomicU64; W],
}

impl<'t, const W: usize, const P: usize> Records<'t> for SizedView<'t, W, P> {
    type Payload = [u64; P];
    type Record = SizedRecord<'t, W, P>;
    #[inline]
    fn record(self, key: Key) -> SizedRecord<'t, W, P> {
        SizedRecord { words: &self.records[key as usize] }
    }
}

impl<'t, const W: usize, const P: usize> RecordData<'t> for SizedRecord<'t, W, P> {
    type Payload = [u64; P];
    #[inline]
    fn meta(self) -> &'t AtomicU64 {
        &self.words[META]
    }
    #[inline]
    fn prefetch(self) {
        Record { words: self.words, payload_words: P }.prefetch();
    }
    #[expect(clippy::inline_always, reason = "as `Record::read_data`")]
    #[inline(always)]
    fn read_data(self, payload: &mut [u64; P]) -> (Value, u64) {
        read_array(self.words, payload)
    }
    #[expect(clippy::inline_always, reason = "as `Record::install`")]
    #[inline(always)]
    fn install(self, value: Value) -> u64 {
        install_words(self.words, value)
    }
}

/// The records of `keys` in `records`, in order, each with its key. The first
/// [`RECORDS_AHEAD`] are asked for at once, and handing out one asks for the one that many
/// places later, so the cache misses of a transaction's records overlap with each other and
/// with the work done on the records already in.
#[inline]
pub fn records_ahead<'t, R: Records<'t>>(records: R, keys: &'t [Key]) -> RecordsAhead<'t, R> {
    for &key in keys.iter().take(RECORDS_AHEAD) {
        records.record(key).prefetch();
    }
    RecordsAhead { records, keys, at: 0 }
}

/// How many records ahead of the one it hands out [`RecordsAhead`] asks for: sixteen, so a
/// transaction of up to sixteen requests (YCSB's) has all its records asked for before it
/// touches the first, as a tight loop that prefetches its whole footprint does. On 10M records
/// (ycsb, 16 requests, 2026-12-03, 4 interleaved rounds of 16 cells: four protocols, θ = 0 and
/// 0.99, one and two threads) sixteen ran 1.06-1.57x eight (medians per cell), and eight had
/// run about 1.3x one ahead (Silo, one thread, 2026-12-02): the misses of two-line records
/// overlap with each other and with the work done on the records already in.
const RECORDS_AHEAD: usize = 16;

/// The iterator of [`records_ahead`].
#[derive(Debug)]
pub struct RecordsAhead<'t, R> {
    records: R,
    keys: &'t [Key],
    at: usize,
}

impl<'t, R: Records<'t>> Iterator for RecordsAhead<'t, R> {
    type Item = (Key, R::Record);

    #[inline]
    fn next(&mut self) -> Option<(Key, R::Record)> {
        let &key = self.keys.get(self.at)?;
        if let Some(&ahead) = self.keys.get(self.at + RECORDS_AHEAD) {
            self.records.record(ahead).prefetch();
        }
        self.at += 1;
        Some((key, self.records.record(key)))
    }
}

/// Words in a record of two lines.
const TWO_LINES: usize = 2 * LINE_WORDS;
/// Payload words that fill a record of two lines exactly.
const TWO_LINE_PAYLOAD: usize = TWO_LINES - PAYLOAD;
/// Payload words that fill a record of one line exactly.
const ONE_LINE_PAYLOAD: usize = LINE_WORDS - PAYLOAD;

/// Copies the data words of `record` (`P` payload words in a record of `W` words) into
/// `payload`: through arrays, every index is a constant and the loop's length known. Any
/// other length takes the general loop.
#[expect(clippy::inline_always, reason = "inlined into `Record::read_data`, which is measured")]
#[inline(always)]
fn read_exactly<const W: usize, const P: usize>(record: &[AtomicU64], payload: &mut [u64]) -> (Value, u64) {
    match (<&[AtomicU64; W]>::try_from(record), <&mut [u64; P]>::try_from(&mut *payload)) {
        (Ok(record), Ok(payload)) => read_array(record, payload),
        _ => read_words(record, payload, P),
    }
}

/// [`read_exactly`] once the lengths are known: every index is a constant.
#[expect(clippy::inline_always, reason = "inlined into `Record::read_data`, which is measured")]
#[inline(always)]
fn read_array<const W: usize, const P: usize>(record: &[AtomicU64; W], payload: &mut [u64; P]) -> (Value, u64) {
    let (value, seq) = (record[VALUE].load(Relaxed) as Value, record[SEQ].load(Relaxed));
    for (copy, word) in payload.iter_mut().zip(&record[PAYLOAD..PAYLOAD + P]) {
        *copy = word.load(Relaxed);
    }
    (value, seq)
}

#[inline]
fn read_words(record: &[AtomicU64], payload: &mut [u64], payload_words: usize) -> (Value, u64) {
    let (value, seq) = (record[VALUE].load(Relaxed) as Value, record[SEQ].load(Relaxed));
    for (copy, word) in payload.iter_mut().zip(&record[PAYLOAD..PAYLOAD + payload_words]) {
        *copy = word.load(Relaxed);
    }
    (value, seq)
}

/// Installs `value` in a record of `W` words whose payload fills it (the array version of
/// [`install_words`]).
#[inline]
fn install_exactly<const W: usize>(record: &[AtomicU64], value: Value) -> u64 {
    match <&[AtomicU64; W]>::try_from(record) {
        Ok(record) => install_words(record, value),
        Err(_) => install_words(record, value),
    }
}

/// Installs `value` and its payload in `record`'s words after the meta word, and returns the
/// new sequence number.
#[inline]
fn install_words(record: &[AtomicU64], value: Value) -> u64 {
    let seq = record[SEQ].load(Relaxed) + 1;
    record[VALUE].store(value as u64, Relaxed);
    record[SEQ].store(seq, Relaxed);
    for (i, word) in record[PAYLOAD..].iter().enumerate() {
        word.store(payload_word(value, i), Relaxed);
    }
    seq
}

#[cfg(test)]
mod tests {
    use ordo_workload::{Micro, MicroConfig};

    use super::*;

    /// Every payload size, the unrolled ones and the generic loop, reads back what an
    /// install wrote, and nothing past the payload.
    #[test]
    fn installs_read_back_at_every_payload_size() {
        let micro = Micro::new(MicroConfig { keys: 4, theta: 0.0, reads: 1, writes: 1, shared: 0 }).unwrap();
        for payload_bytes in [0, 8, 39, 40, 41, 96, 100, 101, 200] {
            let table = Table::load(&micro, payload_bytes, 7, 1);
            let words = table.payload_words();
            let record = table.record(2);
            let mut copy = vec![u64::MAX; words];
            let (value, seq) = record.read_data(&mut copy);
            assert_eq!(seq, 0);
            assert!(copy.iter().enumerate().all(|(i, &w)| w == payload_word(value, i)), "{payload_bytes} bytes");
            assert_eq!(record.install(-5), 1);
            assert_eq!(record.install(9), 2);
            let (value, seq) = record.read_data(&mut copy);
            assert_eq!((value, seq), (9, 2));
            assert!(copy.iter().enumerate().all(|(i, &w)| w == payload_word(9, i)), "{payload_bytes} bytes");
            assert_eq!(table.value(1), micro.initial_value(1), "a neighbour is untouched");
            assert_eq!(table.meta(2).load(Relaxed), 7);
            assert_eq!(table.record(3).read_data(&mut copy).1, 0);
        }
    }

    /// A view finds the table's own records, and `records_ahead` hands out each key's record
    /// once, in the keys' order, at every record size (one line, two, more; each size has its
    /// own prefetch).
    #[test]
    fn a_view_and_records_ahead_find_the_tables_records() {
        let micro = Micro::new(MicroConfig { keys: 20, theta: 0.0, reads: 1, writes: 1, shared: 0 }).unwrap();
        for payload_bytes in [0, 40, 100, 200] {
            let table = Table::load(&micro, payload_bytes, 7, 1);
            let view = table.view();
            // More keys than are asked for ahead, so the window slides past its end.
            let keys = [4, 0, 5, 2, 19, 7, 11, 3, 16, 9, 1, 13, 6, 18, 8, 10, 14, 12, 17, 15];
            assert!(keys.len() > RECORDS_AHEAD);
            let mut handed = Vec::new();
            for (key, record) in records_ahead(view, &keys) {
                let own = table.record(key);
                assert!(std::ptr::eq(record.words, own.words), "{payload_bytes} bytes, key {key}");
                assert!(std::ptr::eq(view.record(key).words, own.words));
                assert!(std::ptr::eq(view.meta(key), table.meta(key)));
                record.prefetch();
                handed.push(key);
            }
            assert_eq!(handed, keys);
            assert_eq!(records_ahead(view, &[]).count(), 0);
        }
    }

    /// Reads every key through whatever `visit` hands over, and says whether that was a
    /// [`SizedView`].
    struct ReadAll<'k> {
        keys: &'k [Key],
    }

    impl<'t> VisitRecords<'t> for ReadAll<'t> {
        type Output = (bool, Vec<(Value, u64, Vec<u64>)>);

        fn visit<R: Records<'t>>(self, records: R, payload: &mut R::Payload) -> Self::Output {
            let sized = std::any::type_name::<R>().contains("SizedView");
            let read = records_ahead(records, self.keys)
                .map(|(_, record)| {
                    let (value, seq) = record.read_data(payload);
                    (value, seq, payload.as_ref().to_vec())
                })
                .collect();
            (sized, read)
        }
    }

    /// `visit` hands a loop a sized view exactly for the two shapes that have one (a payload
    /// filling one or two lines), and the loop reads what the table's own records hold.
    #[test]
    fn visit_reads_the_tables_records_through_a_sized_view_where_there_is_one() {
        let micro = Micro::new(MicroConfig { keys: 20, theta: 0.0, reads: 1, writes: 1, shared: 0 }).unwrap();
        for (payload_bytes, sized) in [(0, false), (40, true), (64, false), (100, true), (200, false)] {
            let table = Table::load(&micro, payload_bytes, 7, 1);
            let keys: Vec<Key> = (0..20).rev().collect();
            for key in [3, 11, 19] {
                table.record(key).install(key as Value * 10);
            }
            let mut payload = vec![0; table.payload_words()];
            let (was_sized, read) = table.view().visit(&mut payload, ReadAll { keys: &keys });
            assert_eq!(was_sized, sized, "{payload_bytes} bytes");
            for (&key, (value, seq, copy)) in keys.iter().zip(read) {
                let mut own = vec![0; table.payload_words()];
                assert_eq!(table.record(key).read_data(&mut own), (value, seq), "{payload_bytes} bytes, key {key}");
                assert_eq!(copy, own, "{payload_bytes} bytes, key {key}");
            }
            // A buffer of another length than the table's payload takes the general loop.
            let mut longer = vec![0; table.payload_words() + 1];
            assert!(!table.view().visit(&mut longer, ReadAll { keys: &keys }).0);
        }
    }
}
