//! The paper's micro-benchmark (§5.1): a table of `keys` objects; every transaction reads
//! `reads` objects and writes `writes` objects, all distinct except that `shared` of the reads
//! are also written (read-modify-write), keys drawn from Zipf(θ).
//!
//! Default: 100K keys, 5 reads, 5 writes, 1 shared, so each transaction touches 9 keys.
//!
//! The paper leaves values null. ordo gives them meaning so that a replay can check the final
//! database: a read-modify-written key gets its old value plus one, a blind write gets the sum
//! of everything the transaction read.

use crate::WorkloadRng;
use crate::error::WorkloadError;
use crate::procedure::{KEYS_MAX, Key, Step, Txn, Value, Workload};
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
        if self.keys > KEYS_MAX {
            return Err(WorkloadError::invalid("keys", format!("{}: at most {KEYS_MAX}", self.keys)));
        }
        if self.shared > self.reads.min(self.writes) {
            return Err(WorkloadError::invalid(
                "shared",
                format!("{} shared keys but only {} reads and {} writes", self.shared, self.reads, self.writes),
            ));
        }
        if self.distinct_keys() == 0 {
            return Err(WorkloadError::invalid("reads/writes", "a transaction must touch at least one key"));
        }
        if self.distinct_keys() > 64 {
            return Err(WorkloadError::invalid("reads/writes", "a transaction may touch at most 64 keys"));
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

/// The micro-benchmark workload.
#[derive(Debug, Clone)]
pub struct Micro {
    config: MicroConfig,
    zipf: Zipf,
}

impl Micro {
    pub fn new(config: MicroConfig) -> Result<Self, WorkloadError> {
        config.validate()?;
        Ok(Micro { config, zipf: Zipf::new(config.keys, config.theta)? })
    }

    pub fn config(&self) -> &MicroConfig {
        &self.config
    }

    /// Keys the transaction reads (`keys[..reads]`).
    pub fn read_keys<'t>(&self, txn: &'t Txn) -> &'t [Key] {
        &txn.keys[..self.config.reads]
    }

    /// Keys the transaction writes: the shared ones, then the write-only ones.
    pub fn write_keys<'t>(&self, txn: &'t Txn) -> impl Iterator<Item = Key> + 't {
        let MicroConfig { reads, shared, .. } = self.config;
        txn.keys[..shared].iter().chain(&txn.keys[reads..]).copied()
    }
}

impl Workload for Micro {
    fn name(&self) -> &'static str {
        "micro"
    }

    fn procedure_names(&self) -> &'static [&'static str] {
        &["ReadWrite"]
    }

    fn key_count(&self) -> u64 {
        self.config.keys
    }

    fn initial_value(&self, _key: Key) -> Value {
        0
    }

    /// Layout of `txn.keys`: `[shared | read-only | write-only]`, all distinct.
    /// Transactions are drawn from the random stream alone.
    fn replayable(&self) -> bool {
        true
    }

    fn generate(&self, rng: &mut WorkloadRng, txn: &mut Txn) {
        txn.procedure = 0;
        txn.amount = 0;
        txn.flags = 0;
        txn.keys.clear();
        while txn.keys.len() < self.config.distinct_keys() {
            let key = self.zipf.sample(rng);
            if !txn.keys.contains(&key) {
                txn.keys.push(key);
            }
        }
    }

    fn step(&self, txn: &Txn, values: &[Value], reads: &mut Vec<Key>, writes: &mut Vec<(Key, Value)>) -> Step {
        if values.is_empty() && self.config.reads > 0 {
            reads.extend_from_slice(self.read_keys(txn));
            return Step::Read;
        }
        let sum: Value = values.iter().fold(0, |a, &v| a.wrapping_add(v));
        let shared = self.config.shared;
        for (i, key) in self.write_keys(txn).enumerate() {
            let value = if i < shared { values[i].wrapping_add(1) } else { sum.wrapping_add(1) };
            writes.push((key, value));
        }
        Step::Commit
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<Key>, writes: &mut Vec<Key>) {
        reads.extend_from_slice(self.read_keys(txn));
        writes.extend(self.write_keys(txn));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedure::execute;
    use crate::rng_from_seed;

    #[test]
    fn transactions_have_the_paper_shape() {
        let micro = Micro::new(MicroConfig { theta: 0.99, ..MicroConfig::default() }).unwrap();
        let mut rng = rng_from_seed(3);
        let mut txn = Txn::default();
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        for _ in 0..1000 {
            micro.generate(&mut rng, &mut txn);
            reads.clear();
            writes.clear();
            micro.footprint(&txn, &mut reads, &mut writes);
            assert_eq!((reads.len(), writes.len()), (5, 5));
            let both = reads.iter().filter(|k| writes.contains(k)).count();
            assert_eq!(both, 1, "exactly one read-modify-write key: {txn:?}");
            let mut all: Vec<u64> = reads.iter().chain(&writes).copied().collect();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), 9);
        }
    }

    #[test]
    fn execution_reads_then_writes_the_footprint() {
        let micro = Micro::new(MicroConfig::default()).unwrap();
        let mut txn = Txn::default();
        micro.generate(&mut rng_from_seed(9), &mut txn);
        let (mut values, mut reads, mut writes) = (Vec::new(), Vec::new(), Vec::new());
        let outcome = execute(&micro, &txn, |key| key as Value, &mut values, &mut reads, &mut writes);
        assert_eq!(outcome, Step::Commit);
        let (mut declared_reads, mut declared_writes) = (Vec::new(), Vec::new());
        micro.footprint(&txn, &mut declared_reads, &mut declared_writes);
        assert_eq!(writes.iter().map(|w| w.0).collect::<Vec<_>>(), declared_writes);
        assert_eq!(writes[0].1, txn.keys[0] as Value + 1, "the shared key is incremented");
    }

    #[test]
    fn too_few_keys_is_an_error() {
        assert!(Micro::new(MicroConfig { keys: 8, ..MicroConfig::default() }).is_err());
        assert!(Micro::new(MicroConfig { shared: 6, ..MicroConfig::default() }).is_err());
    }
}
