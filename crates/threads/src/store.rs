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
    #[inline]
    pub fn record(&self, key: Key) -> Record<'_> {
        Record { words: self.lines.record(key as usize * self.stride, self.stride), payload_words: self.payload_words }
    }

    /// Starts loading `key`'s record into the cache (see `prefetch`).
    #[inline]
    pub fn prefetch(&self, key: Key) {
        Lines::prefetch(self.record(key).words);
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
        let value = self.words[VALUE].load(Relaxed) as Value;
        let seq = self.words[SEQ].load(Relaxed);
        let words = self.payload();
        // A payload that fills its record's lines exactly (100 bytes in 128-byte records, the
        // default; 40 in 64) is copied by a loop whose length the compiler knows.
        match self.payload_words {
            TWO_LINE_PAYLOAD => copy_exactly::<TWO_LINE_PAYLOAD>(payload, words),
            ONE_LINE_PAYLOAD => copy_exactly::<ONE_LINE_PAYLOAD>(payload, words),
            _ => copy_words(payload, words),
        }
        (value, seq)
    }

    /// Installs `value` as the record's next version, with its payload, and returns that
    /// version's sequence number (relaxed; the caller holds the record's lock and publishes
    /// with the meta word).
    #[inline]
    pub fn install(self, value: Value) -> u64 {
        let seq = self.words[SEQ].load(Relaxed) + 1;
        self.words[VALUE].store(value as u64, Relaxed);
        self.words[SEQ].store(seq, Relaxed);
        let words = self.payload();
        match self.payload_words {
            TWO_LINE_PAYLOAD => fill_exactly::<TWO_LINE_PAYLOAD>(words, value),
            ONE_LINE_PAYLOAD => fill_exactly::<ONE_LINE_PAYLOAD>(words, value),
            _ => fill_words(words, value),
        }
        seq
    }
}

/// Payload words that fill a record of two lines exactly.
const TWO_LINE_PAYLOAD: usize = 2 * LINE_WORDS - PAYLOAD;
/// Payload words that fill a record of one line exactly.
const ONE_LINE_PAYLOAD: usize = LINE_WORDS - PAYLOAD;

#[inline]
fn copy_words(copy: &mut [u64], words: &[AtomicU64]) {
    for (copy, word) in copy.iter_mut().zip(words) {
        *copy = word.load(Relaxed);
    }
}

/// [`copy_words`] for exactly `N` words (the generic loop when a length differs).
#[inline]
fn copy_exactly<const N: usize>(copy: &mut [u64], words: &[AtomicU64]) {
    match (<&mut [u64; N]>::try_from(&mut *copy), <&[AtomicU64; N]>::try_from(words)) {
        // Through arrays, the inlined loop's length is the constant `N`.
        (Ok(copy), Ok(words)) => copy_words(copy, words),
        _ => copy_words(copy, words),
    }
}

#[inline]
fn fill_words(words: &[AtomicU64], value: Value) {
    for (i, word) in words.iter().enumerate() {
        word.store(payload_word(value, i), Relaxed);
    }
}

/// [`fill_words`] for exactly `N` words.
#[inline]
fn fill_exactly<const N: usize>(words: &[AtomicU64], value: Value) {
    match <&[AtomicU64; N]>::try_from(words) {
        Ok(words) => fill_words(words, value),
        Err(_) => fill_words(words, value),
    }
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
}
