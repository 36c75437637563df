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
use crate::procedure::{KEYS_MAX, Key, KeyFilter, Step, Txn, Value, Workload};
use crate::zipf::Zipf;

#[cfg(test)]
mod core_tests;
mod core_workloads;
pub use core_workloads::{INSERT_RATIO, KvFormError, SCAN_BUCKET_KEYS, SCAN_LENGTH_MAX, YcsbCore, YcsbMix};

/// Largest number of requests per transaction (one flag bit each).
pub const YCSB_OPS_MAX: usize = 64;

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
    /// `read_ratio · 2^53` rounded up: a request writes when the 53 high bits of a random
    /// `u64` are at least this (exactly when `rng.random::<f64>() >= read_ratio`).
    read_threshold: u64,
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
        // Exact: scaling by a power of two loses nothing, and `read_ratio` is in [0, 1].
        let read_threshold = (config.read_ratio * (1u64 << 53) as f64).ceil() as u64;
        Ok(Ycsb { config, zipf: Zipf::new(config.records, config.theta)?, read_threshold })
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

    fn generate(&self, rng: &mut WorkloadRng, txn: &mut Txn) {
        txn.procedure = 0;
        txn.keys.clear();
        txn.flags = 0;
        txn.amount = rng.random_range(0..1_000_000);
        // The ranks are drawn as a batch (the same i.i.d. draws as one at a time); a rank
        // whose key is already taken is replaced by a fresh draw.
        let ops = self.config.ops;
        let mut ranks = [0u64; YCSB_OPS_MAX];
        self.zipf.sample_into(rng, &mut ranks[..ops]);
        let mut drawn = ranks[..ops].iter();
        // A bit per key's hash, set for every key taken: a clear bit proves a key new, so only a
        // key whose bit is already set (a repeat, or one of 64 buckets shared) scans the keys
        // taken. The keys and their order are what a scan of every key would give.
        let mut taken = KeyFilter::default();
        while txn.keys.len() < ops {
            let rank = drawn.next().copied().unwrap_or_else(|| self.zipf.sample(rng));
            let key = self.key_of_rank(rank);
            if !taken.may_contain(key) || !txn.keys.contains(&key) {
                taken.add(key);
                txn.keys.push(key);
            }
        }
        // Request i writes when a uniform f64 in [0, 1) is at least the read ratio, compared
        // in integers (the f64 is its 53 high bits over 2^53), and without a branch, which at
        // a read ratio of one half would mispredict every other request.
        for i in 0..ops {
            let writes = rng.next_u64() >> 11 >= self.read_threshold;
            txn.flags |= u64::from(writes) << i;
        }
    }

    // The request kinds are random, so these walk the set bits of the kind masks rather than
    // branching on each request's kind (a branch a 50/50 mix mispredicts half the time).
    fn step(&self, txn: &Txn, values: &[Value], reads: &mut Vec<Key>, writes: &mut Vec<(Key, Value)>) -> Step {
        let read_mask = self.read_mask(txn);
        if values.is_empty() && read_mask != 0 {
            reads.extend(set_bits(read_mask).map(|i| txn.keys[i]));
            return Step::Read;
        }
        writes.extend(set_bits(txn.flags).map(|i| {
            // The values are in request order, one per reading request.
            let value = if read_mask >> i & 1 == 1 {
                values[(read_mask & ((1 << i) - 1)).count_ones() as usize].wrapping_add(1)
            } else {
                txn.amount
            };
            (txn.keys[i], value)
        }));
        Step::Commit
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<Key>, writes: &mut Vec<Key>) {
        reads.extend(set_bits(self.read_mask(txn)).map(|i| txn.keys[i]));
        writes.extend(set_bits(txn.flags).map(|i| txn.keys[i]));
    }
}

/// The positions of the set bits of `mask`, lowest first.
#[inline]
fn set_bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            i
        })
    })
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
            let ycsb = Ycsb::new(YcsbConfig { records: 10_000, read_ratio, ..YcsbConfig::default() }).unwrap();
            let mut rng = rng_from_seed(1);
            for _ in 0..100_000 {
                let bits = rng.next_u64();
                let float = (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                assert_eq!(
                    bits >> 11 >= ycsb.read_threshold,
                    float >= read_ratio,
                    "ratio {read_ratio}, bits {bits:#x}"
                );
            }
            // The boundary itself.
            let at = ycsb.read_threshold;
            if at > 0 && at < 1 << 53 {
                assert!((at as f64) * (1.0 / (1u64 << 53) as f64) >= read_ratio);
                assert!(((at - 1) as f64) * (1.0 / (1u64 << 53) as f64) < read_ratio);
            }
        }
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
