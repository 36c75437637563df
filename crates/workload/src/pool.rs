//! Transactions drawn before a run's clock starts, then replayed in a cycle.
//!
//! Drawing a YCSB transaction costs about 80-160 ns (sixteen exact Zipfian draws and the
//! check that its keys are distinct). Against the B+tree that is 2-3% of a transaction, but
//! on the flat-array ablation a transaction takes 1-2 µs and drawing it became 8-10% of what
//! the worker did, a cost that says nothing about concurrency control. DBx1000 draws every
//! worker's queries before it starts the clock; a [`TxnPool`] does the same for ordo's
//! engines: each worker draws a fixed number of transactions from its own random stream once
//! the store is loaded and before the clock starts, and in the run copies the next one out (a
//! sequential read of a few cache lines) and wraps around at the end.
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
use ordo_storage::records::LINE_WORDS;

use crate::procedure::{Key, Txn};

/// Most transactions one pool may hold.
pub const POOL_TRANSACTIONS_MAX: usize = 1 << 24;
/// Most words all of a run's pools may hold together (1 GiB).
pub const POOL_WORDS_MAX: usize = 1 << 27;
/// Words a pool keeps per transaction besides its keys.
pub const HEADER_WORDS: usize = std::mem::size_of::<Drawn>().div_ceil(8);
/// How far ahead of the keys it hands out a pool requests the next ones, in words (eight
/// lines: a few YCSB transactions, more of SmallBank's).
const KEYS_AHEAD: usize = 64;
/// How many transactions ahead a pool requests the header of.
const HEADERS_AHEAD: usize = 8;

/// One drawn transaction, its keys at `keys[start..end]` of the pool.
#[derive(Debug, Clone, Copy)]
struct Drawn {
    procedure: u8,
    amount: i64,
    flags: u64,
    start: usize,
    end: usize,
}

/// A worker's transactions, drawn ahead and replayed in order, round and round.
#[derive(Debug, Clone)]
pub struct TxnPool {
    drawn: Vec<Drawn>,
    keys: Vec<Key>,
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
        let mut drawn = Vec::with_capacity(count.min(words_max / HEADER_WORDS).max(1));
        let mut keys = Vec::new();
        let mut txn = Txn::default();
        let words = |drawn: &Vec<Drawn>, keys: &Vec<Key>| drawn.len() * HEADER_WORDS + keys.len();
        while drawn.len() < count && (drawn.is_empty() || words(&drawn, &keys) < words_max) {
            generate(&mut txn);
            let start = keys.len();
            keys.extend_from_slice(&txn.keys);
            drawn.push(Drawn {
                procedure: txn.procedure,
                amount: txn.amount,
                flags: txn.flags,
                start,
                end: keys.len(),
            });
        }
        keys.shrink_to_fit();
        drawn.shrink_to_fit();
        TxnPool { drawn, keys, next: 0 }
    }

    /// Transactions in the pool.
    pub fn len(&self) -> usize {
        self.drawn.len()
    }

    /// Whether the pool is empty (never, once drawn).
    pub fn is_empty(&self) -> bool {
        self.drawn.is_empty()
    }

    /// Copies the next transaction into `txn` (reusing its buffers), wrapping at the end, and
    /// requests the pool's lines a few transactions ahead (see [`Self::request_ahead`]).
    #[inline]
    pub fn next_into(&mut self, txn: &mut Txn) {
        let drawn = self.drawn[self.next];
        self.request_ahead(drawn);
        self.next = if self.next + 1 == self.drawn.len() { 0 } else { self.next + 1 };
        txn.procedure = drawn.procedure;
        txn.amount = drawn.amount;
        txn.flags = drawn.flags;
        txn.keys.clear();
        txn.keys.extend_from_slice(&self.keys[drawn.start..drawn.end]);
    }

    /// Asks for the lines [`KEYS_AHEAD`] words past `drawn`'s keys and the header
    /// [`HEADERS_AHEAD`] transactions past the next. The pool is read in order, but a
    /// transaction's records come between two of its reads, and the hardware's stream
    /// prefetcher did not keep up: with a replayed pool on the flat array, copying the keys out
    /// waited on their lines for about 3% of the worker's time (Silo, θ = 0, one thread,
    /// `perf record`). A range reaching past the end of the pool is not requested (the pool
    /// wraps to its start, which a run reaches once in hundreds of thousands of transactions).
    /// Written as a plain loop: with the iterator chain it replaced, `next_into` ran 146
    /// instructions per transaction instead of 103 (callgrind).
    #[inline]
    fn request_ahead(&self, drawn: Drawn) {
        // Every line the shifted range touches: one per line's worth of words, and its last.
        if let Some(ahead) = self.keys.get(drawn.start + KEYS_AHEAD..drawn.end + KEYS_AHEAD) {
            let mut word = 0;
            while word < ahead.len() {
                prefetch::line(&ahead[word]);
                word += LINE_WORDS;
            }
            if let Some(last) = ahead.last() {
                prefetch::line(last);
            }
        }
        if let Some(header) = self.drawn.get(self.next + HEADERS_AHEAD) {
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
