//! # ordo-workload: the transactions ordo's engines run
//!
//! Every engine (the pipeline OCC engine, the thread-per-worker engine, the PostgreSQL tier)
//! and the reorder benchmarks draw their transactions from here, so a workload means the same
//! thing everywhere.
//!
//! * [`procedure`]: transactions as stored procedures ([`Workload`], [`Txn`], [`Step`]),
//!   executed round by round by any engine; a one-shot transaction (every request known
//!   before it runs, as YCSB's are) can also be handed over whole ([`Requests`]).
//! * [`zipf`]: exact Zipfian key choice.
//! * [`pool`]: transactions drawn before a run and replayed ([`TxnPool`]), so drawing them
//!   is not part of what a run measures.
//! * [`micro`]: the paper's micro-benchmark (§5.1).
//! * [`smallbank`]: SmallBank (§5.4).
//! * [`ycsb`]: YCSB as in Cicada and §5.6 (16 requests, reads and read-modify-writes), and
//!   YCSB's core workloads A-F on tables ([`YcsbCore`]).
//! * [`tables`]: transactions over tables ([`TableWorkload`], [`Tx`]): typed rows, inserts,
//!   deletes, scans and secondary indexes; key-value workloads run on tables through
//!   [`KvTables`], and [`MemoryDb`] is the reference database workload tests run on.
//! * [`tpcc`]: TPC-C's nine tables and five transactions, and seed 003's hybrid analytic
//!   workload on the same schema.

mod error;
pub mod micro;
pub mod pool;
pub mod procedure;
pub mod smallbank;
pub mod tables;
pub mod tpcc;
pub mod ycsb;
pub mod zipf;

pub use error::WorkloadError;
pub use micro::{Micro, MicroConfig};
pub use pool::{POOL_TRANSACTIONS_MAX, POOL_WORDS_MAX, TxnPool};
pub use procedure::{KEYS_MAX, Key, KeyFilter, REQUESTS_MAX, Requests, Step, Txn, Value, Workload, execute};
pub use smallbank::{SmallBank, SmallBankConfig};
pub use tables::{
    Aborted, ConsistencyError, ConsistencyReport, Direction, KV_TABLE, KvTables, Maintained, MemoryDb, Outcome,
    Scratch, TableWorkload, Tx, footprint_key,
};
pub use tpcc::{Binding, HybridConfig, Tpcc, TpccConfig, TpccScale};
pub use ycsb::{KvFormError, WriteKind, Ycsb, YcsbConfig, YcsbCore, YcsbMix};
pub use zipf::{ALIAS_KEYS_MAX, Zipf};

/// The random number generator every workload uses: fast, seedable, and the same stream on
/// every platform for a given seed.
pub type WorkloadRng = rand_xoshiro::Xoshiro256PlusPlus;

/// A generator seeded from one `u64`.
pub fn rng_from_seed(seed: u64) -> WorkloadRng {
    use rand::SeedableRng;
    WorkloadRng::seed_from_u64(seed)
}
