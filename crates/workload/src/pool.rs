//! Transactions drawn before a run's clock starts, then replayed in a cycle.
//!
//! Drawing a YCSB transaction costs about 80-160 ns (sixteen exact Zipfian draws and the
//! check that its keys are distinct). Against the B+tree that is 2-3% of a transaction, but
//! on the flat-array ablation a transaction takes 1-2 µs and drawing it became 8-10% of what
//! the worker did, a cost that says nothing about concurrency control. DBx1000 draws every
//! worker's queries before it starts the clock; a [`TxnPool`] does the same for ordo's
//! engines: each worker draws a fixed number of transactions from its own random stream
//! while the store loads, and in the run copies the next one out (a sequential read of a few
//! cache lines) and wraps around at the end.
//!
//! What this changes: the run's key frequencies are those of the pool, a sample of the exact
//! distribution, repeated; at the default size (2^18 transactions per worker) the pool of
//! one worker touches about four million keys at sixteen requests, so cycling it does not
//! turn a uniform workload over ten million records into a cached one. Only workloads whose
//! transactions depend on nothing but the random stream may be replayed (not YCSB D and E,
//! whose inserts take fresh keys, nor TPC-C, whose transactions are bound to a worker's
//! warehouse); engines ask [`crate::TableWorkload::replayable`].
//!
//! Memory is bounded twice: a pool holds at most [`POOL_TRANSACTIONS_MAX`] transactions and
//! at most the keys it was given room for, and stops drawing early when either is reached.

use crate::procedure::{Key, Txn};

/// Most transactions one pool may hold.
pub const POOL_TRANSACTIONS_MAX: usize = 1 << 24;
/// Most keys all of a run's pools may hold together (2 GiB of keys).
pub const POOL_KEYS_MAX: usize = 1 << 28;

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
    /// once they hold `keys_max` keys.
    ///
    /// # Panics
    /// When `count` is zero or above [`POOL_TRANSACTIONS_MAX`]: callers check the size.
    pub fn draw(count: usize, keys_max: usize, mut generate: impl FnMut(&mut Txn)) -> TxnPool {
        assert!((1..=POOL_TRANSACTIONS_MAX).contains(&count), "a pool holds 1..={POOL_TRANSACTIONS_MAX} transactions");
        let mut drawn = Vec::with_capacity(count);
        let mut keys = Vec::new();
        let mut txn = Txn::default();
        while drawn.len() < count && (drawn.is_empty() || keys.len() < keys_max) {
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

    /// Copies the next transaction into `txn` (reusing its buffers), wrapping at the end.
    #[inline]
    pub fn next_into(&mut self, txn: &mut Txn) {
        let drawn = self.drawn[self.next];
        self.next = if self.next + 1 == self.drawn.len() { 0 } else { self.next + 1 };
        txn.procedure = drawn.procedure;
        txn.amount = drawn.amount;
        txn.flags = drawn.flags;
        txn.keys.clear();
        txn.keys.extend_from_slice(&self.keys[drawn.start..drawn.end]);
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
    fn a_pool_stops_drawing_at_its_key_budget_but_holds_at_least_one() {
        let mut drawn = 0;
        let pool = TxnPool::draw(100, 10, |txn| {
            drawn += 1;
            txn.keys = vec![drawn; 4];
        });
        assert_eq!(pool.len(), 3, "4 + 4 keys are under 10, the third reaches it");
        let one = TxnPool::draw(100, 0, |txn| txn.keys = vec![1; 4]);
        assert_eq!(one.len(), 1);
        assert!(!one.is_empty());
    }
}
