//! # ordo-threads: the thread-per-worker engine (§5.6)
//!
//! The paper's second setting is the decentralized architecture of modern in-memory engines
//! (Silo, TicToc, Cicada, ERMIA): every worker thread runs its transactions from start to
//! finish against shared memory, with no central validator. This crate is that engine, with
//! the protocols the paper compares against, and the paper's `reorder` mode, which reorders
//! *before* execution by giving conflicting transactions to the same thread (§4.2).
//!
//! ```text
//!          workload (micro, smallbank, ycsb) ── generate / step / footprint / requests
//!                 │
//!   ┌─────────────┴──────────────┐      reorder mode only: BatchFront
//!   │ worker 0 ... worker t-1    │<──── batches, sticky ThreadAssigner (§4.2)
//!   │ begin/read/write/commit,   │
//!   │ or begin/run_requests      │
//!   └─────────────┬──────────────┘
//!                 │ Protocol (one interface, monomorphized per protocol)
//!   silo · tictoc · no_wait · wait_die     mvcc_si · ssi         serial
//!   └── Table: one version per record ──┘  └── Mvcc: version rings ┘
//! ```
//!
//! * [`store`]: the single-version store, a flat array of cache-line-aligned records indexed
//!   by the dense key (the "concurrent index" of a dense key space is its position), each with
//!   a protocol word, the value, a version counter and an inline payload copied on every
//!   access.
//! * [`protocol`]: the [`Protocol`] interface (`begin`, `read`, `write`, `commit`, `abort`,
//!   and `run_requests` for a one-shot transaction handed over whole, as DBx1000 runs YCSB)
//!   and the per-worker pieces every protocol shares (write buffer, history recording).
//! * [`kit`]: the lock-word moves the protocols share (seqlock read, sorted write locking,
//!   prefix unlock), written once.
//! * [`silo`]: Silo OCC with TID words, sorted write locking, read validation and epochs.
//! * [`tictoc`]: TicToc, data-driven commit timestamps from `wts`/`rts` intervals.
//! * [`two_phase`]: 2PL with `no_wait` or `wait_die` deadlock avoidance; a one-shot
//!   transaction takes each lock once, in its final mode, and installs from what it read.
//! * [`mvcc`]: multi-version SI (first committer wins) and SSI by ERMIA's Serial Safety Net,
//!   over bounded version rings (the garbage collector is the ring).
//! * [`serial`]: no concurrency control, one thread: the per-core bound.
//! * [`engine`]: the driver (load, workers, warm-up/measure/cool-down); within a step it asks
//!   for the next record while it works on the current one, so their cache misses overlap.
//! * [`batch_front`]: reorder mode's batches, shared by both drivers: sticky thread-aware
//!   assignment and the queues the threads take their shares from.
//! * [`config`]: protocol names and the engine's knobs, validated.
//! * [`pregenerate`]: each worker's transactions drawn before the clock starts, for both
//!   drivers, so drawing keys is not part of what a run measures.
//! * [`tables`]: the engine over `ordo-storage` for table workloads (TPC-C, the hybrid
//!   workload, key-value workloads through `KvTables`): Silo, TicToc, 2PL and serial, each
//!   with phantom protection, inserts, deletes, scans and epoch-based reclamation.
//!
//! Correctness is checked from the outside: workers can record each committed transaction's
//! reads and writes as `(key, version)` pairs for `ordo-history`'s serializability checker,
//! and the tests drive two transactions by hand through the isolation anomalies.
//!
//! All synchronization is on atomics (seqlock-style optimistic reads validated by re-reading
//! the protocol word, as Silo does). The crate has no `unsafe`: the prefetch hint and the
//! zeroed, huge-page arrays its stores sit on come from `ordo-storage`'s two small modules
//! that allow it (`prefetch`, `zeroed`).

pub mod batch_front;
pub mod config;
pub mod engine;
pub mod interleave;
pub mod kit;
pub mod mvcc;
pub mod pregenerate;
pub mod protocol;
pub mod serial;
pub mod silo;
pub mod store;
pub mod tables;
pub mod tictoc;
pub mod two_phase;

pub use batch_front::Assignment;
pub use config::{ConfigError, EngineConfig, ProtocolKind};
pub use engine::{RunReport, RunSpec, run};
pub use mvcc::{Isolation, Mvcc, VERSIONS_DEFAULT};
pub use protocol::{Abort, Protocol, WORKERS_MAX};
pub use serial::Serial;
pub use silo::Silo;
pub use tictoc::TicToc;
pub use two_phase::{Deadlock, TwoPhaseLocking};
