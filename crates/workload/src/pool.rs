//! Transactions drawn before a run's clock starts, then replayed in a cycle.
//!
//! Drawing a YCSB transaction costs about 80-160 ns (sixteen exact Zipfian draws and the
//! check that its keys are distinct). Against the B+tree that is 2-3% of a transaction, but
//! on the flat-array ablation a transaction takes 1-2 µs and drawing it became 8-10% of what
//! the worker did, a cost that says nothing about concurrency control. DBx1000 draws every
//! worker's queries before it starts the clock; a [`TxnPool`] does the same for ordo's
//! engines: each worker draws a fixed number of transactions from its own random stream once
//! the store is loaded and before the clock starts, and in the run hands out the next one where
//! it lies (a sequential read of a few cache lines) and wraps around at the end.
//!
//! What this changes: the run's key frequencies are those of the pool, a sample of the exact
//! distribution, repeated; at the default size (2^18 transactions per worker) the pool of
//! one worker holds about four million keys at sixteen requests (over three million distinct
//! ones when they are uniform over ten million records), so cycling it does not
//! turn a uniform workload over ten million records into a cached one. Only workloads whose
//! transactions depend on nothing but the random stream may be replayed (not YCSB D and E,
//! whose inserts take fresh keys, nor TPC-C, whose transactions are bound to a worker's
//! warehouse); engines ask `replayable` of [`crate::Workload`] and [`crate::TableWorkload`].
//!
//! Memory is bounded twice: a pool holds at most [`POOL_TRANSACTIONS_MAX`] transactions and
//! at most the words it was given room for (its keys, and [`HEADER_WORDS`] per transaction),
//! and stops drawing early when either is reached.

use ordo_storage::prefetch;

use crate::procedure::Txn;

/// Most transactions one pool may hold.
pub const POOL_TRANSACTIONS_MAX: usize = 1 << 24;
/// Most words all of a run's pools may hold together (1 GiB).
pub const POOL_WORDS_MAX: usize = 1 << 27;
/// Words a pool keeps per transaction besides its keys.
pub const HEADER_WORDS: usize = std::mem::size_of::<Txn>().div_ceil(8);
/// How many transactions ahead of the one it hands out a pool requests the keys of (a few
/// YCSB transactions' worth of lines).
const KEYS_AHEAD: usize = 4;
/// How many transactions ahead a pool requests the header of (its keys' address is read
/// there [`KEYS_AHEAD`] transactions later).
const HEADERS_AHEAD: usize = 8;

/// A worker's transactions, drawn ahead and replayed in order, round and round.
#[derive(Debug, Clone)]
pub struct TxnPool {
    /// Each with its keys in a buffer of their exact length, allocated in drawing order (so
    /// mostly next to each other).
    txns: Vec<Txn>,
    next: usize,
}

impl TxnPool {
    /// Draws up to `count` transactions with `generate`, stopping early (after at least one)
    /// once they take `words_max` words (keys and headers).
    ///
    /// # Panics
    /// When `count` is zero or above [`POOL_TRANSACTIONS_MAX`]: callers check the size.
    pub fn draw(count: usize, words_max: usize, mut generate: impl FnMut(&mut Txn)) -> TxnPool {
        assert!((1..=POOL_TRANSACTIONS_MAX).contains(&count), "a pool holds 1..={POOL_TRANSACTIONS_MAX} transactions");
        let mut txns = Vec::with_capacity(count.min(words_max / HEADER_WORDS).max(1));
        let (mut txn, mut words) = (Txn::default(), 0);
        while txns.len() < count && (txns.is_empty() || words < words_max) {
            generate(&mut txn);
            words += HEADER_WORDS + txn.keys.len();
            // A clone's keys take exactly their length; the buffer `generate` fills is reused.
            txns.push(txn.clone());
        }
        txns.shrink_to_fit();
        TxnPool { txns, next: 0 }
    }

    /// Transactions in the pool.
    pub fn len(&self) -> usize {
        self.txns.len()
    }

    /// Whether the pool is empty (never, once drawn).
    pub fn is_empty(&self) -> bool {
        self.txns.is_empty()
    }

    /// The next transaction, run where it lies (no copy), and the one the pool hands out after
    /// it (for a caller that looks one ahead); wraps at the end, and requests the pool's lines a
    /// few transactions ahead (see [`Self::request_ahead`]).
    #[inline]
    pub fn next_pair(&mut self) -> (&Txn, &Txn) {
        let at = self.next;
        self.next = if at + 1 == self.txns.len() { 0 } else { at + 1 };
        self.request_ahead(at);
        (&self.txns[at], &self.txns[self.next])
    }

    /// Copies the next transaction into `txn` (reusing its buffers), for a caller that keeps
    /// its own (a batch being reordered); otherwise as [`Self::next_pair`].
    #[inline]
    pub fn next_into(&mut self, txn: &mut Txn) {
        let (drawn, _) = self.next_pair();
        txn.procedure = drawn.procedure;
        txn.amount = drawn.amount;
        txn.flags = drawn.flags;
        txn.keys.clear();
        txn.keys.extend_from_slice(&drawn.keys);
    }

    /// Asks for the keys [`KEYS_AHEAD`] transactions past `at` and the header
    /// [`HEADERS_AHEAD`] past it. The pool is read in order, but a transaction's records come
    /// between two of its reads, and the hardware's stream prefetcher did not keep up: with a
    /// replayed pool on the flat array, reading the keys waited on their lines for about 3% of
    /// the worker's time (Silo, θ = 0, one thread, `perf record`). The first and the last key
    /// are asked for, which covers keys spanning two lines at most (a YCSB transaction's 16
    /// keys fill one 128-byte block of the allocator, on a line boundary); the middle lines of
    /// longer ones are read in order after the first, which the stream prefetcher follows.
    /// Nothing past the end of the pool is requested (the pool wraps to its start, which a run
    /// reaches once in hundreds of thousands of transactions).
    #[inline]
    fn request_ahead(&self, at: usize) {
        if let Some(ahead) = self.txns.get(at + KEYS_AHEAD)
            && let (Some(first), Some(last)) = (ahead.keys.first(), ahead.keys.last())
        {
            prefetch::line(first);
            prefetch::line(last);
        }
        // A header is shorter than a line, so requesting each one's first byte reaches every
        // line of the headers.
        if let Some(header) = self.txns.get(at + HEADERS_AHEAD) {
            prefetch::line(header);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedure::Workload;
    use crate::{Ycsb, YcsbConfig, rng_from_seed};

    #[test]
    fn a_pool_replays_what_the_workload_drew_in_order_then_wraps() {
        let ycsb = Ycsb::new(YcsbConfig { records: 1000, theta: 0.9, ..YcsbConfig::default() }).unwrap();
        let mut rng = rng_from_seed(7);
        let mut pool = TxnPool::draw(5, usize::MAX, |txn| ycsb.generate(&mut rng, txn));
        let mut again = rng_from_seed(7);
        let expected: Vec<Txn> = (0..5)
            .map(|_| {
                let mut txn = Txn::default();
                ycsb.generate(&mut again, &mut txn);
                txn
            })
            .collect();
        let mut txn = Txn { keys: vec![99; 40], ..Txn::default() };
        for round in 0..2 {
            for (i, want) in expected.iter().enumerate() {
                pool.next_into(&mut txn);
                assert_eq!(&txn, want, "round {round}, transaction {i}");
            }
        }
        // Handed out in place, each with the one after it (the first, after the last).
        for i in 0..2 * expected.len() {
            let (this, following) = pool.next_pair();
            assert_eq!(this, &expected[i % expected.len()], "in place, transaction {i}");
            assert_eq!(following, &expected[(i + 1) % expected.len()], "after transaction {i}");
        }
    }

    #[test]
    fn a_pool_stops_drawing_at_its_word_budget_but_holds_at_least_one() {
        let mut drawn = 0;
        let per_transaction = 4 + HEADER_WORDS;
        let pool = TxnPool::draw(100, 2 * per_transaction + 1, |txn| {
            drawn += 1;
            txn.keys = vec![drawn; 4];
        });
        assert_eq!(pool.len(), 3, "two transactions are under the budget, the third reaches it");
        // Transactions without keys still take their headers' room.
        let empty = TxnPool::draw(POOL_TRANSACTIONS_MAX, 10 * HEADER_WORDS, |txn| txn.keys.clear());
        assert_eq!(empty.len(), 10);
        let one = TxnPool::draw(100, 0, |txn| txn.keys = vec![1; 4]);
        assert_eq!(one.len(), 1);
        assert!(!one.is_empty());
    }
}
