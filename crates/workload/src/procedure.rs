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
//! A one-shot transaction has nothing to decide between its reads and its writes: every
//! request (key, read, write) is known before it runs. Such a workload also describes it as
//! [`Requests`] ([`Workload::requests`]), and an engine may run that list directly, as
//! DBx1000 and CCBench run YCSB, instead of holding the conversation above. Both must ask
//! for the same reads and writes (a test in `ycsb` checks it).
//!
//! Keys are dense: a workload's keys are `0..key_count()`, with each table a contiguous range,
//! so engines can store a table as a flat array. Values are `i64` (balances in cents,
//! counters); engines that model payload bytes carry them beside the value.

use crate::WorkloadRng;

/// A key: dense, in `0..Workload::key_count()`.
pub type Key = u64;

/// A 256-bit summary of a small set of keys: a bit per key's hash. A clear bit proves a key
/// absent, so a lookup scans its list only when the key, or one sharing its bit, is in it; a
/// transaction of 16 distinct keys then skips most of the scans its 16 lookups would make
/// (drawing a transaction's keys, and a protocol's lock list and write set). With 16 keys in
/// 256 bits about one lookup in 32 finds its bit set by another key, where 64 bits made it one
/// in eight, and each of those is a scan and a mispredicted branch: drawing a ycsb transaction's
/// 16 keys took a quarter less time with the wider filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyFilter([u64; 4]);

impl KeyFilter {
    /// The word and the bit of `key`: the top 8 bits of a multiplicative hash.
    #[inline]
    fn slot(key: Key) -> (usize, u64) {
        let hash = key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56;
        ((hash >> 6) as usize, 1 << (hash & 63))
    }

    /// Whether `key` may be in the set (`false`: it is not).
    #[inline]
    pub fn may_contain(&self, key: Key) -> bool {
        let (word, bit) = Self::slot(key);
        self.0[word] & bit != 0
    }

    #[inline]
    pub fn add(&mut self, key: Key) {
        let (word, bit) = Self::slot(key);
        self.0[word] |= bit;
    }

    #[inline]
    pub fn clear(&mut self) {
        self.0 = [0; 4];
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

/// Most requests a one-shot transaction may make (a bit of a `u64` each).
pub const REQUESTS_MAX: usize = 64;

/// A one-shot transaction: one whose requests are all known before it runs (YCSB's request
/// model, and how DBx1000 and CCBench run YCSB). Request `i` works on `keys[i]`; it reads the
/// key when bit `i` of `reads` is set and writes it when bit `i` of `writes` is set. A request
/// that reads and writes stores what it read plus one (a read-modify-write); one that only
/// writes stores `blind`. The keys are distinct, and at most [`REQUESTS_MAX`].
///
/// It stands for the same reads and writes [`Workload::step`] asks for (the procedure asks
/// for every read, then every write). The keys being distinct, no request's read depends on
/// another's write, so an engine may issue them in any order that puts each request's read
/// before its write, and take the shorter way: nothing is left to ask between the reads and
/// the writes, no key is looked up twice, and every key's final access mode is known at its
/// first access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requests<'a> {
    pub keys: &'a [Key],
    pub reads: u64,
    pub writes: u64,
    pub blind: Value,
}

impl Requests<'_> {
    /// Whether request `i` reads its key.
    #[inline]
    pub fn reads(&self, i: usize) -> bool {
        self.reads >> i & 1 == 1
    }

    /// Whether request `i` writes its key.
    #[inline]
    pub fn writes(&self, i: usize) -> bool {
        self.writes >> i & 1 == 1
    }

    /// What request `i` writes, given what it read (ignored by a blind write).
    #[inline]
    pub fn written_value(&self, i: usize, read: Value) -> Value {
        if self.reads(i) { read.wrapping_add(1) } else { self.blind }
    }

    /// The requests that write, in order.
    #[inline]
    pub fn written(&self) -> impl Iterator<Item = usize> + use<> {
        set_bits(self.writes)
    }

    /// Whether the requests keep their promises: distinct keys, at most [`REQUESTS_MAX`] of
    /// them, and no kind bit past the last request.
    pub fn well_formed(&self) -> bool {
        let n = self.keys.len();
        let beyond = u64::MAX.checked_shl(n as u32).unwrap_or(0);
        n <= REQUESTS_MAX
            && (self.reads | self.writes) & beyond == 0
            && self.keys.iter().enumerate().all(|(i, key)| !self.keys[..i].contains(key))
    }
}

/// The positions of the set bits of `mask`, lowest first.
#[inline]
pub(crate) fn set_bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            i
        })
    })
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

    /// Which of the keys `step(txn, values, ..)` pushes to read `txn` also writes: bit `j` for
    /// the `j`-th key pushed (keys past the 64th count as not written). A locking protocol
    /// then takes such a key exclusively when it reads it instead of upgrading its lock at the
    /// write. `None` (the default) when the workload cannot tell cheaply, for any step: the
    /// engine then finds the written keys with [`Self::footprint`].
    fn written_reads(&self, _txn: &Txn, _values: &[Value]) -> Option<u64> {
        None
    }

    /// `txn` as a one-shot transaction, when it is one (see [`Requests`]): an engine may then
    /// run it without the conversation of [`Self::step`], which must ask for exactly the same
    /// reads and writes. `None` (the default) otherwise.
    fn requests<'t>(&self, _txn: &'t Txn) -> Option<Requests<'t>> {
        None
    }

    /// Keys whose values must keep a constant sum under every committed transaction, if the
    /// workload is configured to conserve one (SmallBank's money-moving mix).
    fn conserved_keys(&self) -> Option<std::ops::Range<Key>> {
        None
    }

    /// Whether a transaction drawn now may run unchanged at any later time: [`Self::generate`]
    /// depends on nothing but the random stream (no shared counter, no clock), so a worker may
    /// draw its transactions before the run and replay them (a [`crate::TxnPool`]). False
    /// unless a workload says so.
    fn replayable(&self) -> bool {
        false
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn a_key_filter_of_sixteen_keys_rarely_sends_a_lookup_to_the_scan() {
        // 16 random keys, then 10,000 lookups of other random keys: with 256 bits about 6% of
        // them find their bit set (16/256); a 64-bit filter would send about 22% to the scan.
        let mut rng = crate::rng_from_seed(5);
        let (mut passed, mut lookups) = (0u32, 0u32);
        for _ in 0..625 {
            let mut filter = KeyFilter::default();
            let keys: Vec<Key> = (0..16).map(|_| rng.next_u64()).collect();
            for &key in &keys {
                filter.add(key);
            }
            assert!(keys.iter().all(|&key| filter.may_contain(key)));
            for _ in 0..16 {
                lookups += 1;
                passed += u32::from(filter.may_contain(rng.next_u64()));
            }
            filter.clear();
            assert!(keys.iter().all(|&key| !filter.may_contain(key)));
        }
        let rate = f64::from(passed) / f64::from(lookups);
        assert!(rate < 0.1, "{passed} of {lookups} absent keys passed the filter");
    }
}
