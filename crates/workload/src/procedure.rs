//! Transactions as stored procedures, the shape every engine executes.
//!
//! A transaction is a [`Txn`]: which procedure, and its parameters. Executing it is a
//! conversation between the engine and the workload's [`Workload::step`]:
//!
//! ```text
//!   engine                               workload
//!   step(txn, values = [])        ──>    push keys to read, Step::Read
//!   read them, append values
//!   step(txn, values = [v0..])    ──>    push more keys (may depend on v0..), Step::Read
//!   ...
//!   step(txn, values = [all])     ──>    push (key, new value) writes, Step::Commit
//!                                        or Step::UserAbort (e.g. insufficient funds)
//! ```
//!
//! `step` is a pure function of the transaction and the values read so far, so any engine
//! (asynchronous, thread-per-worker, a replay in a test) runs the same logic, and replaying the
//! committed transactions in serialization order reproduces the final database.
//!
//! Keys are dense: a workload's keys are `0..key_count()`, with each table a contiguous range,
//! so engines can store a table as a flat array. Values are `i64` (balances in cents,
//! counters); engines that model payload bytes carry them beside the value.

use crate::WorkloadRng;

/// A key: dense, in `0..Workload::key_count()`.
pub type Key = u64;

/// A 64-bit summary of a small set of keys: a bit per key's hash. A clear bit proves a key
/// absent, so a lookup scans its list only when the key, or one sharing its bit, is in it; a
/// transaction of 16 distinct keys then skips most of the scans its 16 lookups would make
/// (drawing a transaction's keys, and a protocol's lock list and write set).
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyFilter(u64);

impl KeyFilter {
    #[inline]
    fn bit(key: Key) -> u64 {
        1 << (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
    }

    /// Whether `key` may be in the set (`false`: it is not).
    #[inline]
    pub fn may_contain(self, key: Key) -> bool {
        self.0 & Self::bit(key) != 0
    }

    #[inline]
    pub fn add(&mut self, key: Key) {
        self.0 |= Self::bit(key);
    }

    #[inline]
    pub fn clear(&mut self) {
        self.0 = 0;
    }
}
/// Most keys a workload may have: every engine keeps at least a record of a cache line or two
/// per key, and a billion keys would exhaust memory before the first transaction.
pub const KEYS_MAX: u64 = 100_000_000;

/// A value: an integer (balance, counter).
pub type Value = i64;

/// One transaction request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txn {
    /// Index into [`Workload::procedure_names`].
    pub procedure: u8,
    /// Keys the procedure works on (their meaning depends on the procedure).
    pub keys: Vec<Key>,
    /// A scalar parameter (an amount of money, a value to write).
    pub amount: i64,
    /// Per-key flags (YCSB: bit `i` set when operation `i` writes).
    pub flags: u64,
}

/// What a procedure wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Read the keys just pushed, then call `step` again with their values appended.
    Read,
    /// Done: install the writes just pushed.
    Commit,
    /// The procedure's own logic refuses (e.g. insufficient funds): no writes, no retry.
    UserAbort,
}

/// A workload: a database (its keys and initial values) and a stream of transactions.
pub trait Workload: Send + Sync + std::fmt::Debug {
    /// Short name (`micro`, `smallbank`, `ycsb`).
    fn name(&self) -> &'static str;

    /// Names of the procedures, indexed by [`Txn::procedure`].
    fn procedure_names(&self) -> &'static [&'static str];

    /// Number of keys; keys are `0..key_count()`.
    fn key_count(&self) -> u64;

    /// The value loaded into `key` before any transaction runs.
    fn initial_value(&self, key: Key) -> Value;

    /// Draws the next transaction into `txn` (reusing its buffers).
    fn generate(&self, rng: &mut WorkloadRng, txn: &mut Txn);

    /// Advances `txn` given every value read so far (in the order the keys were requested).
    /// Pushes the next round's keys onto `reads` or the final writes onto `writes`.
    fn step(&self, txn: &Txn, values: &[Value], reads: &mut Vec<Key>, writes: &mut Vec<(Key, Value)>) -> Step;

    /// The keys `txn` will read and may write, known before it runs (for reordering before
    /// execution). Every key `step` can touch is included.
    fn footprint(&self, txn: &Txn, reads: &mut Vec<Key>, writes: &mut Vec<Key>);

    /// Keys whose values must keep a constant sum under every committed transaction, if the
    /// workload is configured to conserve one (SmallBank's money-moving mix).
    fn conserved_keys(&self) -> Option<std::ops::Range<Key>> {
        None
    }
}

/// Runs `txn` to completion against `read` (a synchronous store), returning its outcome and
/// leaving its writes in `writes`. Engines that execute synchronously and tests use this.
pub fn execute<W: Workload + ?Sized>(
    workload: &W,
    txn: &Txn,
    mut read: impl FnMut(Key) -> Value,
    values: &mut Vec<Value>,
    reads: &mut Vec<Key>,
    writes: &mut Vec<(Key, Value)>,
) -> Step {
    values.clear();
    writes.clear();
    loop {
        reads.clear();
        match workload.step(txn, values, reads, writes) {
            Step::Read => values.extend(reads.iter().map(|&key| read(key))),
            outcome => return outcome,
        }
    }
}
