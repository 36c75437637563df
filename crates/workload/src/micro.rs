//! The paper's micro-benchmark (§5.1): a table of `keys` objects; every transaction reads
//! `reads` objects and writes `writes` objects, all distinct except that one read and one
//! write fall on the same object (`shared`), keys drawn from Zipf(θ).
//!
//! Default: 100K keys, 5 reads, 5 writes, 1 shared, so each transaction touches 9 keys.

use rand::Rng;

use crate::error::WorkloadError;
use crate::zipf::Zipf;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MicroConfig {
    pub keys: u64,
    pub theta: f64,
    pub reads: usize,
    pub writes: usize,
    /// How many of the reads are also written (read-modify-write).
    pub shared: usize,
}

impl Default for MicroConfig {
    fn default() -> Self {
        MicroConfig { keys: 100_000, theta: 0.8, reads: 5, writes: 5, shared: 1 }
    }
}

impl MicroConfig {
    /// Distinct keys one transaction touches.
    pub fn distinct_keys(&self) -> usize {
        self.reads + self.writes - self.shared
    }

    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.shared > self.reads.min(self.writes) {
            return Err(WorkloadError::invalid(
                "shared",
                format!("{} shared keys but only {} reads and {} writes", self.shared, self.reads, self.writes),
            ));
        }
        if self.distinct_keys() == 0 {
            return Err(WorkloadError::invalid("reads/writes", "a transaction must touch at least one key"));
        }
        if self.distinct_keys() as u64 > self.keys {
            return Err(WorkloadError::invalid(
                "keys",
                format!(
                    "a transaction touches {} distinct keys but the table holds {}",
                    self.distinct_keys(),
                    self.keys
                ),
            ));
        }
        Ok(())
    }
}

/// One micro-benchmark transaction's keys. `writes[..shared]` are also in `reads`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MicroTxn {
    pub reads: Vec<u64>,
    pub writes: Vec<u64>,
}

/// Draws micro-benchmark transactions.
#[derive(Debug, Clone)]
pub struct MicroGenerator {
    config: MicroConfig,
    zipf: Zipf,
    scratch: Vec<u64>,
}

impl MicroGenerator {
    pub fn new(config: MicroConfig) -> Result<Self, WorkloadError> {
        config.validate()?;
        Ok(MicroGenerator { config, zipf: Zipf::new(config.keys, config.theta)?, scratch: Vec::new() })
    }

    pub fn config(&self) -> &MicroConfig {
        &self.config
    }

    /// Fills `txn` with a fresh transaction, reusing its buffers.
    pub fn fill(&mut self, rng: &mut impl Rng, txn: &mut MicroTxn) {
        let distinct = self.config.distinct_keys();
        self.scratch.clear();
        while self.scratch.len() < distinct {
            let key = self.zipf.sample(rng);
            if !self.scratch.contains(&key) {
                self.scratch.push(key);
            }
        }
        // Layout of `scratch`: [shared | read-only | write-only].
        let MicroConfig { reads, shared, .. } = self.config;
        txn.reads.clear();
        txn.reads.extend_from_slice(&self.scratch[..reads]);
        txn.writes.clear();
        txn.writes.extend_from_slice(&self.scratch[..shared]);
        txn.writes.extend_from_slice(&self.scratch[reads..]);
    }

    pub fn next_txn(&mut self, rng: &mut impl Rng) -> MicroTxn {
        let mut txn = MicroTxn::default();
        self.fill(rng, &mut txn);
        txn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn transactions_have_the_paper_shape() {
        let mut generator = MicroGenerator::new(MicroConfig { theta: 0.99, ..MicroConfig::default() }).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for _ in 0..1000 {
            let txn = generator.next_txn(&mut rng);
            assert_eq!((txn.reads.len(), txn.writes.len()), (5, 5));
            let both = txn.reads.iter().filter(|k| txn.writes.contains(k)).count();
            assert_eq!(both, 1, "exactly one read-modify-write key: {txn:?}");
            let mut all: Vec<u64> = txn.reads.iter().chain(&txn.writes).copied().collect();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), 9);
        }
    }

    #[test]
    fn too_few_keys_is_an_error() {
        let config = MicroConfig { keys: 8, ..MicroConfig::default() };
        assert!(MicroGenerator::new(config).is_err());
        let config = MicroConfig { shared: 6, ..MicroConfig::default() };
        assert!(MicroGenerator::new(config).is_err());
    }
}
