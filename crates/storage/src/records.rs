//! Records: an arena of fixed-stride records made of atomic 64-bit words, addressed by id.
//!
//! Every record of an arena has the same stride, a whole number of 64-byte cache lines, and
//! starts on a line of its own, so two records never share a line (no false sharing between
//! writers of neighbouring records). The words are `AtomicU64`: engines read records
//! optimistically while others write them, without `unsafe` and without tearing a word.
//!
//! ```text
//!   directory (fixed array, never moves)      chunk k holds records
//!   ┌──────────┬──────────┬──────────┬──     [first << (k-1), first << k)   (chunk 0: [0, first))
//!   │ chunk 0  │ chunk 1  │ chunk 2  │ ..
//!   └────┬─────┴────┬─────┴──────────┴──     id ─▶ (chunk, index) ─▶ words[offset + index * stride ..]
//!        ▼          ▼
//!   [r0|r1|..]  [r_first|..]                 each r = stride words = whole cache lines, line-aligned
//! ```
//!
//! Growth allocates a new chunk (as large as all chunks before it) and never moves an existing
//! one, so [`Records::words`] is O(1) and lock-free: a directory slot, a bounds-checked slice.
//! Memory is never returned to the allocator while the arena lives; retired ids are recycled.
//! Chunks come zeroed from the system allocator (calloc, module `zeroed`), so the pages of a
//! large chunk are mapped only when first written, and a chunk allocated mid-run writes
//! nothing, whatever the process allocated and freed before. A chunk of 2 MiB or more is
//! advised onto transparent huge pages, so loading pays one page fault per 2 MiB touched
//! instead of per 4 KiB, and a run reaches a record or an index node without a page walk.
//!
//! Allocation is sharded: each thread uses its own shard (see [`crate::shard`]), which holds
//! a free list of recycled ids and a block of fresh ids taken [`FRESH_BLOCK_RECORDS`] at a
//! time from the arena's bump counter. A thread whose shard is empty steals recycled ids from
//! other shards before it takes fresh ones, so ids retired on one thread are reused by
//! another. Retiring goes through an epoch ([`crate::epoch`]): the id returns to a free list
//! only once every thread pinned at the time of the retire has unpinned.
//!
//! A recycled record is *not* zeroed: the caller initializes it. Engines keep a version (TID)
//! word in each record, and an optimistic reader of a record that was recycled under it sees
//! that word change.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::epoch::Guard;
use crate::shard::{SHARDS, thread_shard};
use crate::zeroed::ZeroedWords;

/// Words in a cache line (64 bytes).
pub const LINE_WORDS: usize = 8;
/// Chunks in an arena's directory: with at least [`FIRST_CHUNK_RECORDS_MIN`] records in the
/// first chunk and doubling chunks, this addresses more records than memory can hold.
pub const CHUNKS_MAX: usize = 40;
/// Smallest first chunk, in records.
pub const FIRST_CHUNK_RECORDS_MIN: u64 = 64;
/// Fresh ids a shard takes from the bump counter at a time.
pub const FRESH_BLOCK_RECORDS: u64 = 64;
/// Most recycled ids a shard takes from another at a time.
pub const STEAL_RECORDS_MAX: usize = 256;

/// One chunk of records: the words, and where the first line-aligned record starts in them.
#[derive(Debug)]
struct Chunk {
    words: ZeroedWords,
    start_word: usize,
}

impl Chunk {
    fn new(records: u64, stride_words: usize) -> Chunk {
        let len = records as usize * stride_words + LINE_WORDS - 1;
        // Zeroed by the system allocator (calloc): a large chunk is mapped lazily, so a page
        // costs nothing until a record on it is first written.
        let words = ZeroedWords::new(len);
        let start_word = words.first_aligned_word(LINE_WORDS * 8);
        Chunk { words, start_word }
    }
}

/// A shard of the allocator: recycled ids, and the rest of a block of fresh ids.
#[derive(Debug, Default)]
struct Shard {
    free: Vec<u64>,
    fresh_next: u64,
    fresh_end: u64,
}

/// The free lists of an arena, shared with the deferred functions that recycle ids.
#[derive(Debug, Default)]
struct FreeLists {
    shards: [Mutex<Shard>; SHARDS],
}

/// An arena of fixed-stride records of atomic words (see the module docs).
#[derive(Debug)]
pub struct Records {
    stride_words: usize,
    first_chunk_len: u64,
    chunks: [OnceLock<Chunk>; CHUNKS_MAX],
    next_fresh: AtomicU64,
    free: Arc<FreeLists>,
}

impl Records {
    /// An arena of records of at least `stride_words` words (rounded up to whole cache lines;
    /// at least one line), whose first chunk holds `capacity_hint` records (at least
    /// [`FIRST_CHUNK_RECORDS_MIN`]). The first chunk is allocated on first use.
    pub fn new(stride_words: usize, capacity_hint: u64) -> Self {
        let stride_words = stride_words.max(1).next_multiple_of(LINE_WORDS);
        Records {
            stride_words,
            first_chunk_len: capacity_hint.max(FIRST_CHUNK_RECORDS_MIN),
            chunks: std::array::from_fn(|_| OnceLock::new()),
            next_fresh: AtomicU64::new(0),
            free: Arc::default(),
        }
    }

    /// Words in each record (a multiple of [`LINE_WORDS`]).
    pub fn stride_words(&self) -> usize {
        self.stride_words
    }

    /// The id of a free record: a recycled one (its words hold whatever its last owner left)
    /// or a fresh one (zero). The caller initializes it.
    pub fn alloc(&self) -> u64 {
        let own = thread_shard();
        let mut shard = self.free.shards[own].lock();
        if let Some(id) = shard.free.pop() {
            return id;
        }
        if shard.fresh_next < shard.fresh_end {
            let id = shard.fresh_next;
            shard.fresh_next += 1;
            return id;
        }
        for offset in 1..SHARDS {
            let other = (own + offset) % SHARDS;
            let Some(mut victim) = self.free.shards[other].try_lock() else { continue };
            if victim.free.is_empty() {
                continue;
            }
            let take = victim.free.len().min(STEAL_RECORDS_MAX);
            let from = victim.free.len() - take;
            shard.free.extend(victim.free.drain(from..));
            drop(victim);
            return shard.free.pop().expect("stole at least one id");
        }
        let start = self.next_fresh.fetch_add(FRESH_BLOCK_RECORDS, Ordering::Relaxed);
        let end = start + FRESH_BLOCK_RECORDS;
        self.ensure_chunks(start, end);
        shard.fresh_next = start + 1;
        shard.fresh_end = end;
        start
    }

    /// Allocates ids `0..count` in order, for bulk loading a dense table. The arena must not
    /// have allocated anything yet.
    pub fn alloc_dense(&self, count: u64) {
        let swapped = self.next_fresh.compare_exchange(0, count, Ordering::Relaxed, Ordering::Relaxed);
        assert!(swapped.is_ok(), "alloc_dense on an arena that already allocated records");
        self.ensure_chunks(0, count);
    }

    /// Retires record `id`: it is handed out again once every thread pinned now has unpinned.
    /// The caller must not retire an id twice or use it after retiring it.
    pub fn retire(&self, id: u64, guard: &Guard) {
        debug_assert!(id < self.allocated(), "retire of record {id} that was never allocated");
        let free = Arc::clone(&self.free);
        let shard = thread_shard();
        guard.defer(move || free.shards[shard].lock().free.push(id));
    }

    /// The words of record `id` (its stride). O(1), no locks.
    ///
    /// # Panics
    /// If `id` lies beyond every allocated chunk (it was never allocated).
    #[inline]
    pub fn words(&self, id: u64) -> &[AtomicU64] {
        match self.get(id) {
            Some(words) => words,
            None => panic!("record {id} was never allocated"),
        }
    }

    /// The words of record `id`, or `None` if its chunk was never allocated: for optimistic
    /// readers that may hold an id read from a slot being recycled.
    #[inline]
    pub fn get(&self, id: u64) -> Option<&[AtomicU64]> {
        let (chunk, index) = self.locate(id)?;
        let chunk = self.chunks[chunk].get()?;
        let start = chunk.start_word + index as usize * self.stride_words;
        chunk.words.get(start..start + self.stride_words)
    }

    /// A hint that record `id` will be read soon: asks for each of its cache lines (see
    /// [`crate::prefetch`]). An id beyond the arena is ignored, so a hint may come from an
    /// unvalidated read.
    #[inline]
    pub fn prefetch(&self, id: u64) {
        self.prefetch_from(id, 0);
    }

    /// [`Records::prefetch`] of record `id`'s lines from line `from_line` on (none if the
    /// record has fewer lines).
    #[inline]
    pub fn prefetch_from(&self, id: u64, from_line: usize) {
        if let Some(lines) = self.get(id).and_then(|words| words.get(from_line * LINE_WORDS..)) {
            crate::prefetch::lines(lines);
        }
    }

    /// The high-water mark of the arena: every id ever handed out is below it (ids taken in
    /// blocks by shards count, whether or not they were handed out yet).
    pub fn allocated(&self) -> u64 {
        self.next_fresh.load(Ordering::Relaxed)
    }

    /// Recycled ids waiting on free lists (exact when no thread allocates or recycles).
    pub fn free_len(&self) -> u64 {
        self.free.shards.iter().map(|shard| shard.lock().free.len() as u64).sum()
    }

    /// The chunk holding `id` and its index there, or `None` beyond the directory.
    #[inline]
    fn locate(&self, id: u64) -> Option<(usize, u64)> {
        if id < self.first_chunk_len {
            return Some((0, id));
        }
        let quotient = id / self.first_chunk_len;
        let chunk = (u64::BITS - quotient.leading_zeros()) as usize;
        if chunk >= CHUNKS_MAX {
            return None;
        }
        Some((chunk, id - (self.first_chunk_len << (chunk - 1))))
    }

    /// Records in chunk `chunk`.
    fn chunk_records(&self, chunk: usize) -> u64 {
        if chunk == 0 { self.first_chunk_len } else { self.first_chunk_len << (chunk - 1) }
    }

    /// Allocates every chunk that holds an id in `start..end`.
    fn ensure_chunks(&self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (first, _) = self.locate(start).expect("record arena exhausted its directory");
        let (last, _) = self.locate(end - 1).expect("record arena exhausted its directory");
        for chunk in first..=last {
            self.chunks[chunk].get_or_init(|| Chunk::new(self.chunk_records(chunk), self.stride_words));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_rounds_to_lines_and_records_are_line_aligned() {
        let records = Records::new(3, 10);
        assert_eq!(records.stride_words(), LINE_WORDS);
        let wide = Records::new(9, 10);
        assert_eq!(wide.stride_words(), 2 * LINE_WORDS);
        for _ in 0..300 {
            let id = wide.alloc();
            let words = wide.words(id);
            assert_eq!(words.len(), 16);
            assert_eq!(words.as_ptr().addr() % 64, 0, "record {id} not line-aligned");
        }
    }

    #[test]
    fn ids_cross_chunks_and_words_are_distinct() {
        let records = Records::new(8, 64);
        records.alloc_dense(64 * 20);
        for id in 0..64 * 20 {
            records.words(id)[0].store(id + 1, Ordering::Relaxed);
        }
        for id in 0..64 * 20 {
            assert_eq!(records.words(id)[0].load(Ordering::Relaxed), id + 1);
        }
        assert!(records.get(1 << 60).is_none());
    }

    #[test]
    fn retired_ids_come_back_after_the_epoch() {
        let records = Records::new(8, 64);
        let ids: Vec<u64> = (0..100).map(|_| records.alloc()).collect();
        let guard = crate::epoch::pin();
        for &id in &ids {
            records.retire(id, &guard);
        }
        drop(guard);
        for _ in 0..1000 {
            crate::epoch::flush();
            if records.free_len() == 100 {
                break;
            }
        }
        assert_eq!(records.free_len(), 100, "retired ids were not recycled");
        let high_water = records.allocated();
        let mut again: Vec<u64> = (0..100).map(|_| records.alloc()).collect();
        again.sort_unstable();
        let mut expected = ids.clone();
        expected.sort_unstable();
        assert_eq!(again, expected);
        assert_eq!(records.allocated(), high_water, "reused ids should not take fresh ones");
    }
}
