//! # ordo-pipeline: the paper's OCC engine with batching and reordering
//!
//! The loosely coupled architecture of the paper's Figure 1 (Ding, Kot, Gehrke, PVLDB 12(2),
//! §2-3, §5.1, Appendix A): transaction clients, processors, versioned storage and a validator
//! exchange messages; batching and reordering happen at the storage and at the validator.
//!
//! ```text
//!   clients ──> processors ──reads──> storage partitions (versioned; batch: writes first)
//!                   │  ▲                     ▲
//!                   │  └──values, versions───┘      commit: writes tagged with the commit ts
//!                   └──validation request──> validator ──batch──> reorder workers (1..N)
//!                      (read set with versions,   │  ▲               FVS + order (ordo-reorder)
//!                       write keys)               │  └─────plan──────┘
//!                   <──commit ts / abort cause────┘ final validation in the planned order
//! ```
//!
//! Every component is a state machine with no I/O ([`node::Node`]: messages and an explicit
//! `now` in, messages out). Two drivers run them: [`driver::simulation`] on one thread in
//! virtual time, deterministic for a seed (tests), and [`driver::threaded`] on a fixed set of
//! OS threads (benchmarks). The [`config::Mode`]s are the paper's `base`, `batch`, `sr`, `vc`
//! and `srvc`.
//!
//! The batching points (the storage's and the validator's batch caps, and the threaded
//! runtime's flush interval) are `auto` by default: both drivers measure goodput per window and
//! let `ordo-batching`'s controller choose them while the engine runs ([`driver::tuning`]).
//!
//! Invariant: commit-timestamp order is a serial order of the committed transactions, and the
//! store converges to the serial replay of that order.
//!
//! With a write-ahead log ([`decision_log`], `PipelineConfig::decision_log`), the validator's
//! commit decisions are logged with their timestamps and written values, and reach their
//! processors only once durable; a pipeline started on the directory rebuilds storage from its
//! checkpoint plus that log.

pub mod assembly;
pub mod client;
pub mod component;
pub mod config;
pub mod decision_log;
pub mod driver;
pub mod message;
pub mod node;
pub mod processor;
pub mod reorder_worker;
pub mod replay;
pub mod storage;
pub mod validator;

pub use config::{
    BATCH_SIZE_MAX, BATCH_WAIT_US_MAX, COMPONENTS_MAX, CONCURRENCY_DEFAULT, CONCURRENCY_MAX, ConfigError,
    MESSAGES_PER_FLUSH_MAX, Mode, PLACEMENT_DEFAULT, PLACEMENT_ONE_THREAD, PipelineConfig, Placement, Role, Tuning,
};
pub use driver::simulation::{ServiceModel, SimulationConfig, SimulationError, SimulationReport, simulate};
pub use driver::threaded::{ThreadedReport, ThreadedRun, run_threaded};
pub use message::{CommitRecord, Ts};
pub use ordo_batching::BatchSize;
