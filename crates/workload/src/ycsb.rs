//! YCSB as the Cicada paper and the paper's §5.6 run it: one table of `records` keys, and
//! every transaction issues `ops` requests on distinct keys drawn from Zipf(θ); each request is
//! a read with probability `read_ratio`, otherwise a write.
//!
//! A write is a read-modify-write (`WriteKind::Rmw`, the default: read the record, write it
//! back incremented) or a blind write (`WriteKind::Blind`: overwrite without reading). Bit `i`
//! of [`Txn::flags`] is set when request `i` writes.
//!
//! ```text
//!   txn.keys  = [k0, k1, ..., k15]        distinct, Zipf(θ) ranks mapped to keys
//!   txn.flags = 0b..0110                  bit i: request i writes
//!   round 1   : read every key except blind writes
//!   commit    : rmw key -> old + 1, blind key -> txn.amount
//! ```
//!
//! Rank `r` maps to key `r` (the hottest keys are `0, 1, 2, ...`) or, with `scrambled`, to
//! `fnv1a64(r) mod records`, YCSB's *scrambled Zipfian*: the popular keys are spread over the
//! table instead of sitting next to each other. As in YCSB the hash is not a permutation, so a
//! few keys collect two ranks; the skew is practically unchanged.
//!
//! Values are `i64` counters. Engines that model record payloads carry `payload_bytes` of
//! payload beside the value and copy it on every read and write; the workload only records the
//! size.
//!
//! YCSB's core workloads A-F by name, on tables, are [`YcsbCore`] (module `core_workloads`):
//! A, B, C, F and custom mixes are this workload; D and E add inserts and scans.

use rand::{Rng, RngCore};

use crate::WorkloadRng;
use crate::error::WorkloadError;
use crate::procedure::{KEYS_MAX, Key, KeyFilter, REQUESTS_MAX, Requests, Step, Txn, Value, Workload, set_bits};
use crate::zipf::Zipf;

#[cfg(test)]
mod core_tests;
mod core_workloads;
pub use core_workloads::{INSERT_RATIO, KvFormError, SCAN_BUCKET_KEYS, SCAN_LENGTH_MAX, YcsbCore, YcsbMix};

/// Largest number of requests per transaction (one flag bit each; a transaction is a
/// one-shot [`Requests`]).
pub const YCSB_OPS_MAX: usize = REQUESTS_MAX;

/// What a non-read request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Read the record, then write it back modified.
    Rmw,
    /// Overwrite the record without reading it.
    Blind,
}

impl std::str::FromStr for WriteKind {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "rmw" => Ok(WriteKind::Rmw),
            "blind" => Ok(WriteKind::Blind),
            other => Err(WorkloadError::invalid("write-kind", format!("`{other}`: expected rmw or blind"))),
        }
    }
}

impl WriteKind {
    pub fn name(self) -> &'static str {
        match self {
            WriteKind::Rmw => "rmw",
            WriteKind::Blind => "blind",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YcsbConfig {
    pub records: u64,
    pub theta: f64,
    /// Requests per transaction.
    pub ops: usize,
    /// Probability that a request is a read, in `[0, 1]`.
    pub read_ratio: f64,
    pub write_kind: WriteKind,
    /// Payload bytes per record (carried by engines that model them).
    pub payload_bytes: usize,
    /// YCSB's scrambled Zipfian: ranks hashed over the table.
    pub scrambled: bool,
}

impl Default for YcsbConfig {
    fn default() -> Self {
        YcsbConfig {
            records: 10_000_000,
            theta: 0.99,
            ops: 16,
            read_ratio: 0.5,
            write_kind: WriteKind::Rmw,
            payload_bytes: 100,
            scrambled: false,
        }
    }
}

impl YcsbConfig {
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.ops == 0 || self.ops > YCSB_OPS_MAX {
            return Err(WorkloadError::invalid("ops", format!("{} requests: must be in 1..={YCSB_OPS_MAX}", self.ops)));
        }
        if self.records > KEYS_MAX {
            return Err(WorkloadError::invalid("records", format!("{}: at most {KEYS_MAX}", self.records)));
        }
        if (self.ops as u64) > self.records {
            return Err(WorkloadError::invalid(
                "records",
                format!("{} records cannot give {} distinct keys per transaction", self.records, self.ops),
            ));
        }
        if !(0.0..=1.0).contains(&self.read_ratio) {
            return Err(WorkloadError::invalid("read-ratio", format!("{} is outside [0, 1]", self.read_ratio)));
        }
        if self.payload_bytes > 4096 {
            return Err(WorkloadError::invalid("payload-bytes", "at most 4096 bytes per record"));
        }
        Ok(())
    }
}

/// The YCSB workload.
#[derive(Debug, Clone)]
pub struct Ycsb {
    config: YcsbConfig,
    zipf: Zipf,
    /// Whether a request writes: [`read_threshold`]'s test, drawing only the bits it needs.
    write_coin: WriteCoin,
}

/// `read_ratio · 2^53` rounded up: a request writes when the 53 high bits of a random `u64`
/// are at least this (exactly when `rng.random::<f64>() >= read_ratio`). Exact: scaling by a
/// power of two loses nothing, and `read_ratio` is in [0, 1].
fn read_threshold(read_ratio: f64) -> u64 {
    (read_ratio * (1u64 << 53) as f64).ceil() as u64
}

/// The write test `u >= threshold` on a uniform 53-bit `u`, drawing only the random bits that
/// can change its outcome. When the threshold's low `53 - bits` bits are zero, `u >= threshold`
/// exactly when `u`'s high `bits` bits are at least `threshold >> (53 - bits)`, and those are
/// a uniform `bits`-bit number of their own. So a request takes `bits` random bits instead of
/// a 64-bit draw: one bit at a read ratio of one half (one draw serves 64 requests), two at a
/// quarter, 53 at 0.95 (one draw each, as before). The probability is the same, exactly:
/// `(2^bits - at) / 2^bits = (2^53 - threshold) / 2^53`.
#[derive(Debug, Clone, Copy)]
struct WriteCoin {
    /// Random bits per request, at most 53 (0 when the outcome is certain).
    bits: u32,
    /// A request writes when its `bits` random bits, as an integer, are at least this.
    at: u64,
}

impl WriteCoin {
    fn new(threshold: u64) -> Self {
        let bits = 53 - threshold.trailing_zeros().min(53);
        WriteCoin { bits, at: threshold >> (53 - bits) }
    }

    /// The write flags of `requests` requests, bit `i` for request `i`, without a branch on
    /// any outcome (at a read ratio of one half each would mispredict half the time).
    #[inline]
    fn flags(self, rng: &mut impl RngCore, requests: usize) -> u64 {
        let mask = (1u64 << self.bits) - 1;
        let (mut word, mut left, mut flags) = (0u64, 0u32, 0u64);
        for i in 0..requests {
            if left < self.bits {
                (word, left) = (rng.next_u64(), u64::BITS);
            }
            flags |= u64::from(word & mask >= self.at) << i;
            word >>= self.bits;
            left -= self.bits;
        }
        flags
    }
}

/// FNV-1a over the 8 bytes of `x`, as YCSB's `Utils.fnvhash64`.
pub fn fnv1a64(x: u64) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    x.to_le_bytes().iter().fold(OFFSET, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(PRIME))
}

impl Ycsb {
    pub fn new(config: YcsbConfig) -> Result<Self, WorkloadError> {
        config.validate()?;
        let write_coin = WriteCoin::new(read_threshold(config.read_ratio));
        Ok(Ycsb { config, zipf: Zipf::new(config.records, config.theta)?, write_coin })
    }

    pub fn config(&self) -> &YcsbConfig {
        &self.config
    }

    /// The requests of `txn` that read the record first, a bit per request.
    #[inline]
    fn read_mask(&self, txn: &Txn) -> u64 {
        let all = u64::MAX.checked_shr(u64::BITS - txn.keys.len() as u32).unwrap_or(0);
        if self.config.write_kind == WriteKind::Rmw { all } else { !txn.flags & all }
    }

    fn key_of_rank(&self, rank: u64) -> Key {
        if self.config.scrambled { fnv1a64(rank) % self.config.records } else { rank }
    }
}

impl Workload for Ycsb {
    fn name(&self) -> &'static str {
        "ycsb"
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        &["Ycsb"]
    }

    fn key_count(&self) -> u64 {
        self.config.records
    }

    fn initial_value(&self, _key: Key) -> Value {
        0
    }

    /// Transactions are drawn from the random stream alone.
    fn replayable(&self) -> bool {
        true
    }

    fn generate(&self, rng: &mut WorkloadRng, txn: &mut Txn) {
        txn.procedure = 0;
        txn.keys.clear();
        // Only blind writes store the amount; a read-modify-write stores what it read, plus one.
        txn.amount = if self.config.write_kind == WriteKind::Blind { rng.random_range(0..1_000_000) } else { 0 };
        // The ranks are drawn as a batch (the same i.i.d. draws as one at a time); a rank
        // whose key is already taken is replaced by a fresh draw.
        let ops = self.config.ops;
        let mut ranks = [0u64; YCSB_OPS_MAX];
        self.zipf.sample_into(rng, &mut ranks[..ops]);
        let mut drawn = ranks[..ops].iter();
        // A bit per key's hash, set for every key taken: a clear bit proves a key new, so only a
        // key whose bit is already set (a repeat, or a key sharing its bit) scans the keys
        // taken. The keys and their order are what a scan of every key would give. They are
        // gathered in an array and appended at once (a push stores the length every time).
        let mut taken = KeyFilter::default();
        let (mut keys, mut len) = ([0; YCSB_OPS_MAX], 0);
        while len < ops {
            let rank = drawn.next().copied().unwrap_or_else(|| self.zipf.sample(rng));
            let key = self.key_of_rank(rank);
            if !taken.may_contain(key) || !keys[..len].contains(&key) {
                taken.add(key);
                keys[len] = key;
                len += 1;
            }
        }
        txn.keys.extend_from_slice(&keys[..ops]);
        // Request i writes when a uniform f64 in [0, 1) is at least the read ratio, compared
        // in integers (the f64 is its 53 high bits over 2^53), on only the bits that decide.
        txn.flags = self.write_coin.flags(rng, ops);
    }

    // The request kinds are random, so these walk the set bits of the kind masks rather than
    // branching on each request's kind (a branch a 50/50 mix mispredicts half the time).
    fn step(&self, txn: &Txn, values: &[Value], reads: &mut Vec<Key>, writes: &mut Vec<(Key, Value)>) -> Step {
        let read_mask = self.read_mask(txn);
        if values.is_empty() && read_mask != 0 {
            if is_prefix(read_mask) {
                // The first requests read (always, for read-modify-writes): one copy.
                reads.extend_from_slice(&txn.keys[..read_mask.count_ones() as usize]);
            } else {
                // Pushes into reserved room, one set bit at a time (an `extend` from the bit
                // iterator cannot know its length and checks for room through a call per key).
                reads.reserve(read_mask.count_ones() as usize);
                for i in set_bits(read_mask) {
                    reads.push(txn.keys[i]);
                }
            }
            return Step::Read;
        }
        // The values are in request order, one per reading request; when every request up to
        // the last reading one reads (always, for read-modify-writes), request i's value is
        // values[i].
        let reads_are_a_prefix = is_prefix(read_mask);
        writes.reserve(txn.flags.count_ones() as usize);
        for i in set_bits(txn.flags) {
            let value = if read_mask >> i & 1 == 1 {
                let position = if reads_are_a_prefix { i } else { (read_mask & ((1 << i) - 1)).count_ones() as usize };
                values[position].wrapping_add(1)
            } else {
                txn.amount
            };
            writes.push((txn.keys[i], value));
        }
        Step::Commit
    }

    fn written_reads(&self, txn: &Txn, values: &[Value]) -> Option<u64> {
        if !values.is_empty() {
            return Some(0);
        }
        // Bit j: the j-th reading request writes too.
        let read_mask = self.read_mask(txn);
        if is_prefix(read_mask) {
            return Some(txn.flags & read_mask);
        }
        Some(set_bits(read_mask).enumerate().fold(0, |mask, (j, i)| mask | (txn.flags >> i & 1) << j))
    }

    /// Every YCSB transaction is one-shot: its keys are drawn distinct, and a request's kind
    /// is its flag.
    fn requests<'t>(&self, txn: &'t Txn) -> Option<Requests<'t>> {
        Some(Requests { keys: &txn.keys, reads: self.read_mask(txn), writes: txn.flags, blind: txn.amount })
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<Key>, writes: &mut Vec<Key>) {
        reads.extend(set_bits(self.read_mask(txn)).map(|i| txn.keys[i]));
        writes.extend(set_bits(txn.flags).map(|i| txn.keys[i]));
    }
}

/// Whether `mask`'s set bits are its lowest ones (requests 0..n, none skipped).
#[inline]
fn is_prefix(mask: u64) -> bool {
    mask & mask.wrapping_add(1) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedure::execute;
    use crate::rng_from_seed;

    fn small(write_kind: WriteKind, scrambled: bool) -> Ycsb {
        Ycsb::new(YcsbConfig { records: 10_000, write_kind, scrambled, ..YcsbConfig::default() }).unwrap()
    }

    #[test]
    fn sixteen_distinct_keys_about_half_written() {
        let ycsb = small(WriteKind::Rmw, false);
        let mut rng = rng_from_seed(4);
        let mut txn = Txn::default();
        let mut written = 0;
        for _ in 0..1000 {
            ycsb.generate(&mut rng, &mut txn);
            let mut keys = txn.keys.clone();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), 16);
            written += txn.flags.count_ones();
        }
        assert!((7000..9000).contains(&written), "{written} of 16000 requests write");
    }

    /// What running `requests` means, spelled out: every read in request order (against
    /// `read`), then every write in request order.
    fn run_requests(requests: Requests<'_>, read: impl Fn(Key) -> Value) -> (Vec<Key>, Vec<(Key, Value)>) {
        let reads: Vec<Key> =
            (0..requests.keys.len()).filter(|&i| requests.reads(i)).map(|i| requests.keys[i]).collect();
        let writes =
            requests.written().map(|i| (requests.keys[i], requests.written_value(i, read(requests.keys[i])))).collect();
        (reads, writes)
    }

    #[test]
    fn a_transaction_as_requests_asks_for_what_its_procedure_asks_for() {
        let read = |key: Key| (key as Value).wrapping_mul(3) - 7;
        for kind in [WriteKind::Rmw, WriteKind::Blind] {
            for read_ratio in [0.0, 0.5, 0.95, 1.0] {
                let ycsb =
                    Ycsb::new(YcsbConfig { records: 1000, write_kind: kind, read_ratio, ..YcsbConfig::default() })
                        .unwrap();
                let mut rng = rng_from_seed(12);
                let mut txn = Txn::default();
                for _ in 0..300 {
                    ycsb.generate(&mut rng, &mut txn);
                    let requests = ycsb.requests(&txn).expect("ycsb transactions are one-shot");
                    assert!(requests.well_formed(), "{requests:?}");
                    let (mut values, mut reads, mut writes) = (Vec::new(), Vec::new(), Vec::new());
                    let mut asked = Vec::new();
                    let outcome = execute(
                        &ycsb,
                        &txn,
                        |k| {
                            asked.push(k);
                            read(k)
                        },
                        &mut values,
                        &mut reads,
                        &mut writes,
                    );
                    assert_eq!(outcome, Step::Commit);
                    assert_eq!(run_requests(requests, read), (asked, writes), "{kind:?} at {read_ratio}: {txn:?}");
                }
            }
        }
    }

    #[test]
    fn requests_that_repeat_a_key_or_flag_a_missing_one_are_not_well_formed() {
        let keys = [3, 5, 8];
        let fine = Requests { keys: &keys, reads: 0b111, writes: 0b010, blind: 0 };
        assert!(fine.well_formed());
        assert!(!Requests { keys: &[3, 5, 3], ..fine }.well_formed());
        assert!(!Requests { writes: 0b1010, ..fine }.well_formed());
        assert!(!Requests { reads: 0b1111, ..fine }.well_formed());
        let many: Vec<Key> = (0..65).collect();
        assert!(!Requests { keys: &many, reads: 0, writes: 0, blind: 0 }.well_formed());
        assert_eq!(fine.written().collect::<Vec<_>>(), vec![1]);
        assert_eq!(fine.written_value(1, 41), 42);
        assert_eq!(Requests { reads: 0b101, ..fine }.written_value(1, 41), 0);
    }

    #[test]
    fn rmw_increments_and_blind_overwrites() {
        for kind in [WriteKind::Rmw, WriteKind::Blind] {
            let ycsb = small(kind, true);
            let mut txn = Txn::default();
            ycsb.generate(&mut rng_from_seed(7), &mut txn);
            let (mut values, mut reads, mut writes) = (Vec::new(), Vec::new(), Vec::new());
            assert_eq!(execute(&ycsb, &txn, |k| k as Value, &mut values, &mut reads, &mut writes), Step::Commit);
            let (mut fr, mut fw) = (Vec::new(), Vec::new());
            ycsb.footprint(&txn, &mut fr, &mut fw);
            assert_eq!(writes.iter().map(|w| w.0).collect::<Vec<_>>(), fw);
            for &(key, value) in &writes {
                let expected = if kind == WriteKind::Rmw { key as Value + 1 } else { txn.amount };
                assert_eq!(value, expected);
            }
            assert_eq!(fr.len(), if kind == WriteKind::Rmw { 16 } else { 16 - fw.len() });
        }
    }

    #[test]
    fn written_reads_names_exactly_the_read_keys_the_transaction_writes() {
        for kind in [WriteKind::Rmw, WriteKind::Blind] {
            let ycsb = small(kind, true);
            let mut rng = rng_from_seed(11);
            let mut txn = Txn::default();
            let mut some_written = false;
            for _ in 0..200 {
                ycsb.generate(&mut rng, &mut txn);
                let (mut reads, mut writes) = (Vec::new(), Vec::new());
                assert_eq!(ycsb.step(&txn, &[], &mut reads, &mut writes), Step::Read);
                let (mut fr, mut fw) = (Vec::new(), Vec::new());
                ycsb.footprint(&txn, &mut fr, &mut fw);
                let expected =
                    reads.iter().enumerate().fold(0u64, |mask, (j, key)| mask | u64::from(fw.contains(key)) << j);
                assert_eq!(ycsb.written_reads(&txn, &[]), Some(expected), "{kind:?} {txn:?}");
                some_written |= expected != 0;
                // The commit step reads nothing more.
                let values = vec![0; reads.len()];
                assert_eq!(ycsb.written_reads(&txn, &values), Some(0));
            }
            assert_eq!(some_written, kind == WriteKind::Rmw, "{kind:?}");
        }
    }

    #[test]
    fn the_request_masks_cover_no_requests_and_all_sixty_four() {
        let empty = Txn::default();
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        assert_eq!(small(WriteKind::Rmw, false).step(&empty, &[], &mut reads, &mut writes), Step::Commit);
        assert!(reads.is_empty() && writes.is_empty());
        let ycsb = Ycsb::new(YcsbConfig { records: 10_000, ops: YCSB_OPS_MAX, ..YcsbConfig::default() }).unwrap();
        let mut txn = Txn::default();
        ycsb.generate(&mut rng_from_seed(3), &mut txn);
        let (mut values, mut reads, mut writes) = (Vec::new(), Vec::new(), Vec::new());
        assert_eq!(execute(&ycsb, &txn, |k| k as Value, &mut values, &mut reads, &mut writes), Step::Commit);
        assert_eq!(values.len(), YCSB_OPS_MAX);
        let written: Vec<Key> = (0..YCSB_OPS_MAX).filter(|&i| txn.flags >> i & 1 == 1).map(|i| txn.keys[i]).collect();
        assert_eq!(writes.iter().map(|w| w.0).collect::<Vec<_>>(), written);
        assert!(writes.iter().all(|&(key, value)| value == key as Value + 1));
    }

    #[test]
    fn the_integer_write_test_is_the_float_one() {
        for read_ratio in [0.0, 0.1, 0.5, 0.95, 1.0, 1.0 / 3.0] {
            let mut rng = rng_from_seed(1);
            for _ in 0..100_000 {
                let bits = rng.next_u64();
                let float = (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                assert_eq!(
                    bits >> 11 >= read_threshold(read_ratio),
                    float >= read_ratio,
                    "ratio {read_ratio}, bits {bits:#x}"
                );
            }
            // The boundary itself.
            let at = read_threshold(read_ratio);
            if at > 0 && at < 1 << 53 {
                assert!((at as f64) * (1.0 / (1u64 << 53) as f64) >= read_ratio);
                assert!(((at - 1) as f64) * (1.0 / (1u64 << 53) as f64) < read_ratio);
            }
        }
    }

    #[test]
    fn the_write_coin_has_the_threshold_tests_probability_exactly() {
        for read_ratio in [0.0, 0.1, 0.25, 0.5, 0.75, 0.95, 1.0, 1.0 / 3.0, 0.625] {
            let ycsb = Ycsb::new(YcsbConfig { records: 10_000, read_ratio, ..YcsbConfig::default() }).unwrap();
            let WriteCoin { bits, at } = ycsb.write_coin;
            // P(write) = (2^bits - at) / 2^bits, scaled to 2^53, is the threshold test's.
            assert_eq!(((1u64 << bits) - at) << (53 - bits), (1u64 << 53) - read_threshold(read_ratio), "{read_ratio}");
            // And the draws show it: 64,000 requests, within five standard deviations.
            let mut rng = rng_from_seed(7);
            let writes: u32 = (0..1000).map(|_| ycsb.write_coin.flags(&mut rng, 64).count_ones()).sum();
            let expected = 64_000.0 * (1.0 - read_ratio);
            let sigma = (64_000.0 * read_ratio * (1.0 - read_ratio)).sqrt();
            assert!((f64::from(writes) - expected).abs() <= 5.0 * sigma + 1e-9, "{read_ratio}: {writes} writes");
        }
    }

    #[test]
    fn the_write_coin_draws_only_the_bits_it_needs() {
        let coin = |read_ratio| {
            Ycsb::new(YcsbConfig { records: 10_000, read_ratio, ..YcsbConfig::default() }).unwrap().write_coin
        };
        assert_eq!((coin(0.5).bits, coin(0.75).bits, coin(0.625).bits), (1, 2, 3));
        assert_eq!((coin(0.0).bits, coin(1.0).bits), (0, 0));
        // 0.95 · 2^53 rounded up has one trailing zero: 52 bits, more than half a draw.
        assert!(coin(0.95).bits > 32);
        // One draw for 64 requests at one half, 16 for 16 requests at 0.95, none when certain.
        let draws = |read_ratio, requests| {
            let (mut rng, mut copy) = (rng_from_seed(3), rng_from_seed(3));
            coin(read_ratio).flags(&mut rng, requests);
            (1..=64).find(|_| {
                copy.next_u64();
                copy == rng
            })
        };
        assert_eq!(draws(0.5, 64), Some(1));
        assert_eq!(draws(0.95, 16), Some(16));
        assert_eq!(draws(1.0, 16), None);
        let (mut rng, mut flags) = (rng_from_seed(3), 0);
        assert_eq!(coin(0.0).flags(&mut rng, 64), u64::MAX);
        flags |= coin(1.0).flags(&mut rng, 64);
        assert_eq!(flags, 0);
    }

    #[test]
    fn bad_configurations_are_errors() {
        assert!(Ycsb::new(YcsbConfig { ops: 0, ..YcsbConfig::default() }).is_err());
        assert!(Ycsb::new(YcsbConfig { ops: 65, ..YcsbConfig::default() }).is_err());
        assert!(Ycsb::new(YcsbConfig { records: 8, ..YcsbConfig::default() }).is_err());
        assert!(Ycsb::new(YcsbConfig { read_ratio: 1.5, ..YcsbConfig::default() }).is_err());
        assert!("sideways".parse::<WriteKind>().is_err());
    }
}
