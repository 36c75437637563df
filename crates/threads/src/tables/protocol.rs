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
//! worker's [`Trace`], in the history format with tables, so the checker can verify each
//! protocol's isolation claim, phantoms included. The same calls build the redo record a
//! write-ahead log needs: `installed` carries each written row's image, and the `epoch` a
//! commit returns is the one the record is tagged with, so durability needs nothing more from
//! a protocol.

use ordo_harness::AbortCause;
use ordo_history::HistoryEntry;
use ordo_workload::Tx;

use super::database::{Database, Layout};
use super::durable::CheckpointSource;
use super::trace::Trace;
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

    /// The meta word of a record loaded from the workload before the run (version 0); for a
    /// multi-version layout, the head's (0: unlocked).
    const INITIAL_META: u64;

    /// How the protocol lays out its records: one version per record (the default) or heads
    /// with version chains.
    const LAYOUT: Layout = Layout::SingleVersion { initial_meta: Self::INITIAL_META };

    /// The meta word of a record recovered from the log at `version` (a protocol whose
    /// timestamps are its versions, as TicToc's, starts the record's timestamps there).
    fn recovered_meta(_version: u64) -> u64 {
        Self::INITIAL_META
    }

    /// The protocol `kind` (for a family such as 2PL's variants) over `database`, whose
    /// records were loaded or recovered as [`Self::LAYOUT`] lays them out (with
    /// [`Self::INITIAL_META`], or [`Self::recovered_meta`]).
    fn over(database: Database, kind: ProtocolKind) -> Self
    where
        Self: Sized;

    /// Which protocol this is.
    fn kind(&self) -> ProtocolKind;

    /// The tables.
    fn database(&self) -> &Database;

    /// What a fuzzy checkpoint reads while transactions run: the database itself, unless the
    /// protocol must guard such reads (multi-version tables reuse trimmed versions at once, so
    /// MVCC reads at a snapshot it publishes).
    fn checkpoint_source(&self) -> &dyn CheckpointSource {
        self.database()
    }

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

    /// The worker's trace: its history and, with a write-ahead log, its redo records (the
    /// driver attaches the log and appends each committed record with its epoch).
    fn trace(worker: &mut Self::Worker) -> &mut Trace;

    /// The worker's recorded history (the caller drains it).
    fn history(worker: &mut Self::Worker) -> &mut Vec<HistoryEntry> {
        Self::trace(worker).entries()
    }

    /// Called once a run's workers have stopped: reclaim whatever the worker still holds for
    /// reclamation (tombstones, aborted placeholders), so the database is compact for dumps
    /// and checks.
    fn quiesce(&self, _worker: &mut Self::Worker) {}
}
