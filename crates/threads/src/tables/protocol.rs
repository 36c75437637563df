//! The interface every concurrency-control protocol over tables implements, so that one
//! driver, one simulator and one set of tests serve them all.
//!
//! ```text
//!   protocol.worker(i, ..)            per-worker state, reused by every attempt
//!   loop {
//!     let mut attempt = protocol.begin(&mut worker, restart)     the engine's Tx for one try
//!     workload.run(txn, &mut Maintained(attempt))                get · put · insert · delete · scan
//!     Ok(Commit)     -> P::commit(attempt)  -> Ok(Committed) | Err(cause): retry
//!     Ok(UserAbort)  -> P::abort(attempt)                         not retried
//!     Err(Aborted)   -> P::abort(attempt)   -> cause: retry
//!   }
//! ```
//!
//! An attempt borrows its worker mutably for its whole life, so a worker runs one attempt at a
//! time, and consuming the attempt in `commit` or `abort` ends it; dropping an attempt without
//! either must abort it (release whatever it holds). Writes are buffered in the worker and
//! installed only by a successful `commit`: an aborted or user-aborted attempt leaves no trace
//! in the database (placeholders it put into an index stay absent and are reclaimed).
//!
//! Every protocol records what its committed transactions observed and installed through the
//! worker's [`Trace`](super::trace::Trace), in the history format with tables, so the checker
//! can verify each protocol's isolation claim, phantoms included.

use ordo_harness::AbortCause;
use ordo_history::HistoryEntry;
use ordo_workload::Tx;

use super::database::Database;
use crate::config::ProtocolKind;

/// What a successful commit tells the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    /// The epoch the transaction serialized in: with a write-ahead log, the transaction may be
    /// acknowledged once this epoch is durable.
    pub epoch: u64,
}

/// How a worker's state is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerOptions {
    /// Which worker this is, in `0..workers`.
    pub index: usize,
    /// How many workers run (history ids interleave by worker).
    pub workers: usize,
    /// Record every committed transaction for the checker.
    pub record_history: bool,
}

/// A concurrency-control protocol over a [`Database`].
pub trait TableProtocol: Send + Sync {
    /// Per-worker state: read, write and node sets, buffers, trace, reclamation candidates.
    type Worker: Send;
    /// One attempt of a transaction: the engine's [`Tx`].
    type Attempt<'a>: Tx
    where
        Self: 'a;

    /// Whether transactions may run concurrently (`false`: one worker, no concurrency control).
    const CONCURRENT: bool = true;

    /// Which protocol this is.
    fn kind(&self) -> ProtocolKind;

    /// The tables.
    fn database(&self) -> &Database;

    /// State for one worker.
    fn worker(&self, options: WorkerOptions) -> Self::Worker;

    /// Starts an attempt; `restart` when the previous attempt of the same transaction aborted
    /// (wait-die keeps the transaction's age across restarts).
    fn begin<'a>(&'a self, worker: &'a mut Self::Worker, restart: bool) -> Self::Attempt<'a>;

    /// Validates and installs the attempt's writes; on `Err` nothing was installed and the
    /// cause says why.
    fn commit(attempt: Self::Attempt<'_>) -> Result<Committed, AbortCause>;

    /// Ends the attempt without installing anything, and returns why it failed (the cause of
    /// the abort one of its operations reported, or [`AbortCause::Conflict`]).
    fn abort(attempt: Self::Attempt<'_>) -> AbortCause;

    /// The worker's recorded history (the caller drains it).
    fn history(worker: &mut Self::Worker) -> &mut Vec<HistoryEntry>;

    /// Called once a run's workers have stopped: reclaim whatever the worker still holds for
    /// reclamation (tombstones, aborted placeholders), so the database is compact for dumps
    /// and checks.
    fn quiesce(&self, _worker: &mut Self::Worker) {}
}
